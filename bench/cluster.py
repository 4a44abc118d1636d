#!/usr/bin/env python3
"""One queue over a Redis Cluster: the same seed and concurrency-16 drain with the queue in one
shard (S = 1: one node does all the work) and in three (S = 3: spread over the three masters),
interleaved round by round, on a local 3-master cluster. Reports items/s and the Redis CPU
spent per item summed over the nodes (INFO commandstats: EVALSHA/EVAL µs), and projects what 1,
3 and 16 nodes give from the per-node cost.

    python bench/cluster.py [--n 50000] [--rounds 3]     (CRAWLQ_BENCH_BIN: crawlq-bench, release)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import time

from workload import scratch_dir, write_urls


def free_ports(count: int) -> list[int]:
    ports: list[int] = []
    port = 21000 + os.getpid() % 10000
    while len(ports) < count:
        port += 1
        ok = True
        for p in (port, port + 10000):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
        if ok:
            ports.append(port)
    return ports


def cli(port: int, *args: str) -> str:
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True, check=True).stdout


def start_cluster(masters: int) -> tuple[list[subprocess.Popen], list[int]]:
    ports = free_ports(masters)
    procs = []
    for port in ports:
        d = scratch_dir("crawlq-bench-cluster-")
        procs.append(subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                                       "--cluster-config-file", "nodes.conf", "--save", "", "--appendonly", "no", "--dir", d],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for port in ports:
        while True:
            try:
                if cli(port, "ping").strip() == "PONG":
                    break
            except subprocess.CalledProcessError:
                pass
            time.sleep(0.05)
    subprocess.run(["redis-cli", "--cluster", "create", *[f"127.0.0.1:{p}" for p in ports], "--cluster-yes"],
                   capture_output=True, check=True)
    for port in ports:
        while "cluster_state:ok" not in cli(port, "cluster", "info"):
            time.sleep(0.1)
    return procs, ports


def script_usec(ports: list[int]) -> float:
    """Script µs (FCALL, EVALSHA, EVAL and their read-only forms) since the last reset, summed
    over the nodes."""
    total = 0.0
    for port in ports:
        for line in cli(port, "info", "commandstats").splitlines():
            m = re.match(r"cmdstat_(fcall|fcall_ro|evalsha|evalsha_ro|eval|eval_ro):calls=\d+,usec=(\d+),", line)
            if m:
                total += int(m.group(2))
    return total


def shards_per_node(ports: list[int], queue: str) -> list[int]:
    """How many of the queue's shards each node holds (their meta keys, found on the node)."""
    counts = []
    for port in ports:
        found = cli(port, "--scan", "--pattern", f"crawlq:{{{queue}:*}}:meta").split()
        counts.append(len(found))
    return counts


def cpu_usec(ports: list[int]) -> float:
    """Redis CPU time (user + system) in µs, summed over the nodes: unlike commandstats it does
    not count the time a node waited for a core (three servers and the client share two here)."""
    total = 0.0
    for port in ports:
        info = cli(port, "info", "cpu")
        for field in ("used_cpu_user", "used_cpu_sys"):
            total += float(re.search(rf"^{field}:([\d.]+)", info, re.M).group(1)) * 1e6
    return total


def run(bench: str, args: list[str], shards: int) -> float:
    env = dict(os.environ, CRAWLQ_BENCH_SHARDS=str(shards))
    out = subprocess.run([bench, *args], env=env, capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["items"] / result["seconds"]


def start_standalone() -> tuple[list[subprocess.Popen], list[int]]:
    [port] = free_ports(1)
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", scratch_dir("crawlq-bench-")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            if cli(port, "ping").strip() == "PONG":
                return [proc], [port]
        except subprocess.CalledProcessError:
            time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--standalone", action="store_true",
                        help="one plain redis-server instead (S = 3 is then three slots on one server)")
    args = parser.parse_args()
    bench = os.environ["CRAWLQ_BENCH_BIN"]
    procs, ports = start_standalone() if args.standalone else start_cluster(3)
    try:
        url = f"redis://127.0.0.1:{ports[0]}/0"
        urls = write_urls(args.n)
        rows: dict[tuple[str, int], list[float]] = {}
        for r in range(args.rounds):
            for shards in (1, 3):
                queue = f"cluster-{r}-{shards}-{os.getpid()}"
                for port in ports:
                    cli(port, "config", "resetstat")
                cpu = cpu_usec(ports)
                rows.setdefault(("seed items/s", shards), []).append(run(bench, ["crawlq", "seed", url, queue, str(urls)], shards))
                rows.setdefault(("seed Redis CPU µs/item", shards), []).append((cpu_usec(ports) - cpu) / args.n)
                rows.setdefault(("seed script µs/item (commandstats)", shards), []).append(script_usec(ports) / args.n)
                if shards > 1 and not args.standalone:
                    # per-node figures mean something only with one shard on each master
                    placed = shards_per_node(ports, queue)
                    if sorted(placed) != [1] * len(ports):
                        raise SystemExit(f"S = {shards}: shards per master {placed}, not one each")
                    if r == 0:
                        print(f"placement: shards per master {placed}")
                for port in ports:
                    cli(port, "config", "resetstat")
                cpu = cpu_usec(ports)
                rows.setdefault(("drain c16 items/s", shards), []).append(
                    run(bench, ["crawlq", "drain", url, queue, "16", "100", "0", str(args.n)], shards))
                rows.setdefault(("lease+ack Redis CPU µs/item", shards), []).append((cpu_usec(ports) - cpu) / args.n)
                rows.setdefault(("lease+ack script µs/item (commandstats)", shards), []).append(script_usec(ports) / args.n)
        print("| measure | S = 1 | S = 3 | S = 3 / S = 1 |")
        print("|---|---:|---:|---:|")
        for name in dict.fromkeys(k for k, _ in rows):
            a, b = statistics.median(rows[(name, 1)]), statistics.median(rows[(name, 3)])
            fmt = "{:,.0f}" if "items/s" in name else "{:.2f}"
            print(f"| {name} | {fmt.format(a)} | {fmt.format(b)} | {b / a:.2f} |")
        seed_us = statistics.median(rows[("seed Redis CPU µs/item", 3)])
        drain_us = statistics.median(rows[("lease+ack Redis CPU µs/item", 3)])
        print()
        print("projection from the S = 3 per-item cost (each node one core, spending all of it on crawlq):")
        for nodes in (1, 3, 16):
            print(f"  {nodes:>2} nodes: seed {nodes * 1e6 / seed_us:,.0f} items/s, lease+ack {nodes * 1e6 / drain_us:,.0f} items/s")
    finally:
        for p in procs:
            p.kill()


if __name__ == "__main__":
    main()
