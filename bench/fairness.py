#!/usr/bin/env python3
"""Named crawls sharing hosts: ten small crawls with and without a large crawl on the same
hosts (and, with --fifo, the same items without crawl names: arrival order), on one Redis and
on a local 3-master Redis Cluster with the queue in 8 shards. `crawlq-bench fairness` does the
work (bench/src/fairness.rs); this starts the servers and prints the figures.

    python bench/fairness.py [--large 1000000] [--smalls 10] [--small-size 1000] [--hosts 1000]
                             [--workers 16] [--delay-ms 250] [--fetch-ms 10] [--fifo] [--no-cluster]
    (CRAWLQ_BENCH_BIN: crawlq-bench, release)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess

from cluster import cli, free_ports, start_cluster
from workload import scratch_dir


def start_server() -> tuple[subprocess.Popen, int]:
    port = free_ports(1)[0]
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", scratch_dir("crawlq-bench-fair-")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            if cli(port, "ping").strip() == "PONG":
                return proc, port
        except subprocess.CalledProcessError:
            pass


def run(bench: str, url: str, shards: int | None, args: argparse.Namespace) -> dict:
    env = dict(os.environ)
    if shards:
        env["CRAWLQ_BENCH_SHARDS"] = str(shards)
    command = [bench, "fairness", url, "fair", str(args.large), str(args.smalls), str(args.small_size),
               str(args.hosts), str(args.workers), str(args.delay_ms), str(args.fetch_ms)]
    if args.fifo:
        command.append("fifo")
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def report(where: str, r: dict) -> None:
    print(f"\n{where}: {r['smalls']} crawls of {r['small_size']:,} URLs over {r['hosts']:,} hosts, "
          f"{r['workers']} workers, host delay {r['delay_ms']} ms, fetch {r['fetch_ms']} ms")
    print(f"| small crawl | without the large crawl (s) | beside {r['large']:,} URLs (s) | ratio |"
          + (" arrival order, no names (s) |" if "fifo_seconds" in r else ""))
    print("|---|---:|---:|---:|" + ("---:|" if "fifo_seconds" in r else ""))
    for k, (a, b, ratio) in enumerate(zip(r["alone_seconds"], r["beside_seconds"], r["ratios"])):
        row = f"| s{k} | {a:.2f} | {b:.2f} | {ratio:.2f} |"
        if "fifo_seconds" in r:
            f = r["fifo_seconds"][k]
            row += f" {'not done at ' if f >= r['fifo_limit_seconds'] else ''}{f:.1f} |"
        print(row)
    print(f"worst ratio: {r['worst_ratio']:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--large", type=int, default=1_000_000)
    ap.add_argument("--smalls", type=int, default=10)
    ap.add_argument("--small-size", type=int, default=1000)
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--delay-ms", type=int, default=250)
    ap.add_argument("--fetch-ms", type=int, default=10)
    ap.add_argument("--fifo", action="store_true", help="also the same items without crawl names")
    ap.add_argument("--no-cluster", action="store_true", help="only the one-server run")
    args = ap.parse_args()
    bench = os.environ.get("CRAWLQ_BENCH_BIN", "crawlq-bench")

    proc, port = start_server()
    try:
        report("one Redis, one shard", run(bench, f"redis://127.0.0.1:{port}", None, args))
    finally:
        proc.kill()
    if args.no_cluster:
        return
    procs, ports = start_cluster(3)
    try:
        report("Redis Cluster of 3 masters, 8 shards", run(bench, f"redis://127.0.0.1:{ports[0]}", 8, args))
    finally:
        for p in procs:
            p.kill()


if __name__ == "__main__":
    main()
