#!/usr/bin/env python3
"""What a queue split in S shards costs where not every shard has work, on one redis-server,
for S = 1, 8, 64 and 256: script calls (INFO commandstats: FCALL/EVALSHA/EVAL), Redis µs and
wall time of an empty lease, of a lease from a queue whose work is all in one shard, of one
second of a blocked lease and of stats() and is_finished(); Redis CPU of 50 idle workers; how
soon a blocked lease sees a seed; list_hosts(); the drain of one busy shard (one host) and of
every shard (100,000 URLs over 1,000 hosts); Redis memory per pending and per done URL. With `--against
PYTHON` (an interpreter with another crawlq build), both builds are measured in the same run,
interleaved, each on a fresh redis-server, so the ratios hold on a noisy machine.

    python bench/shards.py [--shards 1,8,64,256] [--urls 100000] [--against /path/to/python]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from workload import start_redis

HERE = Path(__file__).resolve().parent
SCRIPT_COMMANDS = ("fcall", "fcall_ro", "evalsha", "evalsha_ro", "eval", "eval_ro")


class Server:
    def __init__(self) -> None:
        self.proc, self.port = start_redis()
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def cli(self, *args: str) -> str:
        return subprocess.run(["redis-cli", "-p", str(self.port), *args], capture_output=True, text=True).stdout

    def info(self, section: str) -> dict[str, str]:
        out = {}
        for line in self.cli("INFO", section).splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                out[k] = v.strip()
        return out

    def scripts(self) -> tuple[int, float]:
        """Script calls and their µs so far."""
        calls, usec = 0, 0.0
        for k, v in self.info("commandstats").items():
            if k.removeprefix("cmdstat_") in SCRIPT_COMMANDS:
                fields = dict(f.split("=") for f in v.split(","))
                calls += int(fields["calls"])
                usec += float(fields["usec"])
        return calls, usec

    def cpu(self) -> float:
        info = self.info("cpu")
        return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])

    def memory(self) -> int:
        return int(self.info("memory")["used_memory"])

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def measure(server: Server, fn, repeat: int) -> dict[str, float]:
    """Median calls, Redis µs and wall ms of `fn` over `repeat` runs."""
    calls, usecs, walls = [], [], []
    for _ in range(repeat):
        c0, u0 = server.scripts()
        t0 = time.perf_counter()
        fn()
        walls.append((time.perf_counter() - t0) * 1000)
        c1, u1 = server.scripts()
        calls.append(c1 - c0)
        usecs.append(u1 - u0)
    return {"calls": statistics.median(calls), "usec": statistics.median(usecs), "ms": statistics.median(walls)}


def run_one(shards: int, urls: int) -> dict:
    """Every figure for one S, with the crawlq this interpreter imports, on a fresh server."""
    import crawlq

    server = Server()
    try:
        url = server.url
        out: dict = {"shards": shards}
        q = crawlq.Queue(url, "bench", shards=shards, host_delay=0.0)
        q.stats()  # connected, shards created
        out["empty_lease"] = measure(server, lambda: q.lease(1, wait=0), 21)
        out["stats"] = measure(server, q.stats, 11)
        out["is_finished"] = measure(server, q.is_finished, 11)
        out["blocked_1s"] = measure(server, lambda: q.lease(1, wait=1.0), 3)

        # idle workers: 50 threads, each in a blocking lease of 2 s, for 6 s
        stop = threading.Event()

        def idle() -> None:
            own = crawlq.Queue(url, "bench")
            while not stop.is_set():
                own.lease(1, wait=2.0)

        threads = [threading.Thread(target=idle, daemon=True) for _ in range(50)]
        for t in threads:
            t.start()
        time.sleep(1.0)
        cpu0, t0 = server.cpu(), time.monotonic()
        time.sleep(6.0)
        out["idle_50_cpu_pct"] = 100 * (server.cpu() - cpu0) / (time.monotonic() - t0)
        stop.set()
        for t in threads:
            t.join()

        # wake latency: a blocked lease (wait 5 s) and a seed into a random shard
        latencies = []
        seeder = crawlq.Queue(url, "bench")
        for i in range(20):
            got: list[float] = []

            def wait_one() -> None:
                leases = q.lease(1, wait=5.0)
                got.append(time.perf_counter())
                if leases:
                    q.ack(leases[0])

            t = threading.Thread(target=wait_one)
            t.start()
            time.sleep(0.3)
            sent = time.perf_counter()
            seeder.seed([f"http://wake{i}.example/"])
            t.join()
            latencies.append((got[0] - sent) * 1000)
        latencies.sort()
        out["wake_ms"] = {"p50": latencies[len(latencies) // 2], "max": latencies[-1]}

        # one shard has all the work: lease(1) + ack, one host
        seeder.seed([f"http://one.example/{i}" for i in range(200)])
        leased: list = []
        out["one_shard_lease"] = measure(server, lambda: leased.extend(q.lease(1, wait=0)), 50)
        out["list_hosts"] = measure(server, lambda: q.list_hosts(limit=100), 11)
        q.ack(leased)
        while q.lease(100, wait=0):
            pass

        # one shard has all the work: 2,000 URLs of one host drained by lease(10) + ack
        seeder.seed([f"http://busy.example/{i}" for i in range(2_000)])
        c0, u0 = server.scripts()
        t0 = time.perf_counter()
        drained = 0
        while True:
            leases = q.lease(10, wait=0)
            if not leases:
                break
            q.ack(leases)
            drained += len(leases)
        c1, u1 = server.scripts()
        out["one_shard_drain"] = {"ms_per_item": (time.perf_counter() - t0) * 1000 / drained,
                                  "usec_per_item": (u1 - u0) / drained, "calls_per_item": (c1 - c0) / drained}

        # memory per URL: 100,000 URLs over 1,000 hosts, pending then done
        mem_q = crawlq.Queue(url, "memory", shards=shards, host_delay=0.0)
        mem_q.stats()
        m0 = server.memory()
        batch = [f"http://host{i % 1000}.example/page/{i}" for i in range(urls)]
        for k in range(0, urls, 10_000):
            mem_q.seed(batch[k:k + 10_000])
        m1 = server.memory()
        c0, u0 = server.scripts()
        t0 = time.perf_counter()
        while True:
            leases = mem_q.lease(1000, wait=0)
            if not leases:
                break
            mem_q.ack(leases)
        c1, u1 = server.scripts()
        out["drain"] = {"s": time.perf_counter() - t0, "usec_per_item": (u1 - u0) / urls}
        m2 = server.memory()
        out["bytes_per_pending"] = (m1 - m0) / urls
        out["bytes_per_done"] = (m2 - m0) / urls
        return out
    finally:
        server.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shards", default="1,8,64,256")
    ap.add_argument("--urls", type=int, default=100_000)
    ap.add_argument("--against", help="another Python whose crawlq is measured side by side")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one is not None:
        print(json.dumps(run_one(args.one, args.urls)))
        return
    builds = [("now", sys.executable)] + ([("before", args.against)] if args.against else [])
    results: dict = {}
    for s in [int(x) for x in args.shards.split(",")]:
        for name, python in builds:
            done = subprocess.run([python, __file__, "--one", str(s), "--urls", str(args.urls)],
                                  capture_output=True, text=True, env=dict(os.environ))
            if done.returncode != 0:
                raise SystemExit(f"S = {s} ({name}): {done.stderr[-2000:]}")
            results[(s, name)] = json.loads(done.stdout)
            print(f"S = {s} {name}: {done.stdout.strip()}", file=sys.stderr)
    rows = [
        ("empty lease: calls", lambda r: r["empty_lease"]["calls"], "{:.0f}"),
        ("empty lease: Redis µs", lambda r: r["empty_lease"]["usec"], "{:.0f}"),
        ("empty lease: wall ms", lambda r: r["empty_lease"]["ms"], "{:.2f}"),
        ("lease(1) of a one-shard queue: calls", lambda r: r["one_shard_lease"]["calls"], "{:.0f}"),
        ("lease(1) of a one-shard queue: Redis µs", lambda r: r["one_shard_lease"]["usec"], "{:.0f}"),
        ("lease(1) of a one-shard queue: wall ms", lambda r: r["one_shard_lease"]["ms"], "{:.2f}"),
        ("1 s of a blocked lease: calls", lambda r: r["blocked_1s"]["calls"], "{:.0f}"),
        ("1 s of a blocked lease: Redis µs", lambda r: r["blocked_1s"]["usec"], "{:.0f}"),
        ("50 idle workers: Redis CPU %", lambda r: r["idle_50_cpu_pct"], "{:.1f}"),
        ("seed to blocked lease: median ms", lambda r: r["wake_ms"]["p50"], "{:.1f}"),
        ("seed to blocked lease: max ms", lambda r: r["wake_ms"]["max"], "{:.1f}"),
        ("stats(): calls", lambda r: r["stats"]["calls"], "{:.0f}"),
        ("stats(): Redis µs", lambda r: r["stats"]["usec"], "{:.0f}"),
        ("is_finished(): calls", lambda r: r["is_finished"]["calls"], "{:.0f}"),
        ("list_hosts(limit=100), one host: calls", lambda r: r["list_hosts"]["calls"], "{:.0f}"),
        ("drain of one busy shard, lease(10) + ack: wall ms per item", lambda r: r["one_shard_drain"]["ms_per_item"], "{:.3f}"),
        ("drain of one busy shard: Redis µs per item", lambda r: r["one_shard_drain"]["usec_per_item"], "{:.1f}"),
        ("drain of one busy shard: calls per item", lambda r: r["one_shard_drain"]["calls_per_item"], "{:.2f}"),
        ("drain of every shard, lease(1000) + ack: Redis µs per item", lambda r: r["drain"]["usec_per_item"], "{:.1f}"),
        ("drain of every shard: wall s", lambda r: r["drain"]["s"], "{:.1f}"),
        ("bytes per pending URL", lambda r: r["bytes_per_pending"], "{:.1f}"),
        ("bytes per done URL", lambda r: r["bytes_per_done"], "{:.1f}"),
    ]
    shard_counts = sorted({s for s, _ in results})
    header = "| measure | " + " | ".join(
        f"S = {s}" + (f" {n}" if args.against else "") for s in shard_counts for n, _ in builds) + " |"
    print(header)
    print("|---|" + "---:|" * (len(shard_counts) * len(builds)))
    for label, get, fmt in rows:
        cells = [fmt.format(get(results[(s, n)])) for s in shard_counts for n, _ in builds]
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
