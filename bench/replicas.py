#!/usr/bin/env python3
"""What `min_replicas` costs: the same seed and drains on a primary with one replica, without
and with `min_replicas = 1` (every change waits for the replica's WAIT acknowledgement),
interleaved round by round; medians and the ratio within one run.

    python bench/replicas.py [--n 20000] [--rounds 3]     (CRAWLQ_BENCH_BIN: crawlq-bench, release)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time

from workload import start_redis, write_urls


def run(*args: str, min_replicas: int) -> float:
    env = dict(os.environ, CRAWLQ_BENCH_MIN_REPLICAS=str(min_replicas))
    out = subprocess.run([os.environ["CRAWLQ_BENCH_BIN"], *args], env=env, capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["items"] / result["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    primary, port = start_redis("--repl-diskless-sync-delay", "0")
    replica, _ = start_redis("--replicaof", "127.0.0.1", str(port))
    try:
        while "state=online" not in subprocess.run(["redis-cli", "-p", str(port), "info", "replication"], capture_output=True, text=True).stdout:
            time.sleep(0.05)
        url = f"redis://127.0.0.1:{port}/0"
        urls = write_urls(args.n)
        results: dict[tuple[str, int], list[float]] = {}
        for r in range(args.rounds):
            for mr in (0, 1):
                for kind, concurrency, batch in (("drain c16 (lease 100 + ack 100)", 16, 100), ("drain c1 (lease 1 + ack 1)", 1, 1)):
                    queue = f"rep-{r}-{mr}-{concurrency}"
                    seeded = run("crawlq", "seed", url, queue, str(urls), min_replicas=mr)
                    results.setdefault(("seed (1,000 per call)", mr), []).append(seeded)
                    n = args.n if concurrency > 1 else min(args.n, 3000)
                    drained = run("crawlq", "drain", url, queue, str(concurrency), str(batch), "0", str(n), min_replicas=mr)
                    results.setdefault((kind, mr), []).append(drained)
        print(f"| operation | min_replicas 0, items/s | min_replicas 1, items/s | ratio |")
        print("|---|---:|---:|---:|")
        for kind in dict.fromkeys(k for k, _ in results):
            a, b = statistics.median(results[(kind, 0)]), statistics.median(results[(kind, 1)])
            print(f"| {kind} | {a:,.0f} | {b:,.0f} | {b / a:.2f} |")
    finally:
        for p in (primary, replica):
            p.kill()


if __name__ == "__main__":
    main()
