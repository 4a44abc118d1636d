#!/usr/bin/env python3
"""Pages that come back one by one: what `answer_linger` saves Redis, and what it costs.

The crawl phase of run.py answers each page the moment it is leased, so the workers of a process
answer in step and their pages go together. A real crawler's pages come back at the pace of their
fetches, spread out, and each then tends to go alone in its call. This runs the crawl phase's
workload (the pool of 1,000 pages over 50 hosts, pages of 30 links, --seen % of them seen
before, the known-seen cache on) through the Rust runner with each page held for a simulated
fetch of 0.5-1.5x --fetch-ms before its answer, once per --lingers value of the queue's
`answer_linger` (ms), the values interleaved round by round on one private redis-server, and
prints per value the medians over the rounds: pages/s, Redis main-thread CPU µs per page (INFO
cpu) and pages per script call (INFO commandstats).

    python bench/linger.py [--pages 6000] [--concurrency 64] [--fetch-ms 20] [--lingers 0,2,5] [--rounds 3]

(CRAWLQ_BENCH_BIN: crawlq-bench, release build; bench/run.sh builds it.)
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

from run import CRAWL_POOL, Redis, bench_bin, page_links, pool_url


def crawl(redis: Redis, queue: str, pool: Path, pages: Path, args: argparse.Namespace, linger: int) -> tuple[float, float, float]:
    """One crawl of the pages file on a new queue: (pages/s, CPU µs per page, pages per call)."""
    bench = bench_bin()
    subprocess.run([bench, "crawlq", "seed", redis.url, queue, str(pool)], check=True, capture_output=True)
    redis.cli("CONFIG", "RESETSTAT")
    cpu = redis.main_thread_cpu_seconds()
    env = dict(os.environ, CRAWLQ_BENCH_FETCH_MS=str(args.fetch_ms), CRAWLQ_BENCH_ANSWER_LINGER_MS=str(linger))
    out = subprocess.run([bench, "crawlq", "crawl", redis.url, queue, str(args.concurrency), str(pages)],
                         env=env, check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    cpu_us = (redis.main_thread_cpu_seconds() - cpu) * 1e6 / args.pages
    if result["items"] != args.pages:
        raise SystemExit(f"linger {linger} ms: {result['items']} of {args.pages} pages answered")
    return args.pages / result["seconds"], cpu_us, args.pages / max(redis.script_stat("calls"), 1)


def interleaved(lingers: list[int], rounds: int, crawl_one: Callable[[int, int], tuple[float, float, float]]
                ) -> dict[int, list[tuple[float, float, float]]]:
    """crawl_one(linger, round) for each linger value, the values interleaved round by round (so
    the machine's drift falls on all of them alike): each value's results in round order."""
    runs: dict[int, list[tuple[float, float, float]]] = {v: [] for v in lingers}
    for round_ in range(rounds):
        for linger in lingers:
            runs[linger].append(crawl_one(linger, round_))
    return runs


def print_medians(runs: dict[int, list[tuple[float, float, float]]], third: str, third_digits: int) -> None:
    """The table of each linger value's medians: pages/s, Redis CPU µs per page and `third`."""
    print(f"| answer_linger | pages/s | Redis CPU µs per page | {third} |")
    print("|---:|---:|---:|---:|")
    for linger, results in runs.items():
        rate, cpu, other = (statistics.median(r[i] for r in results) for i in range(3))
        print(f"| {linger} ms | {rate:,.0f} | {cpu:.1f} | {other:.{third_digits}f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=6000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--fetch-ms", type=int, default=20)
    ap.add_argument("--seen", type=int, default=90, help="percent of a page's links seen before")
    ap.add_argument("--lingers", default="0,2,5", help="answer_linger values (ms), comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    lingers = [int(v) for v in args.lingers.split(",")]
    if any(not 0 <= v <= 1000 for v in lingers) or args.fetch_ms < 0:
        raise SystemExit("--lingers must be within 0..1000 ms and --fetch-ms at least 0")
    with tempfile.TemporaryDirectory(prefix="crawlq-linger-") as tmp:
        work = Path(tmp)
        pool, pages = work / "pool.txt", work / "pages.txt"
        pool.write_text("".join(pool_url(i) + "\n" for i in range(CRAWL_POOL)))
        pages.write_text("".join("\t".join(page_links(k, args.seen)) + "\n" for k in range(args.pages)))
        redis = Redis()
        try:
            runs = interleaved(lingers, args.rounds,
                               lambda linger, round_: crawl(redis, f"linger-{linger}-{round_}", pool, pages, args, linger))
        finally:
            redis.stop()
    print(f"{args.pages:,} pages, {args.seen} % of links seen, {args.concurrency} workers, fetches of "
          f"{args.fetch_ms // 2}-{args.fetch_ms * 3 // 2} ms; medians of {args.rounds} rounds")
    print_medians(runs, "pages per call", 2)


if __name__ == "__main__":
    main()
