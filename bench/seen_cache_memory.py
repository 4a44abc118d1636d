#!/usr/bin/env python3
"""What the known-seen cache (option `seen_cache`) costs a client process in memory.

Each size runs in a fresh Python process against a private redis-server: it seeds the same
--urls new URLs (1,000 hosts, batches of 10,000) through `crawlq.Queue` with that cache size and
reports how much its resident memory grew while seeding (after its first batch). The difference
to the run without a cache (size 0), divided by the cache size, is what a configured entry costs
(with --urls equal to the largest size, each cache ends full: a full cache drops its older half
when one more fingerprint comes).

    python bench/seen_cache_memory.py [--urls 300000] [--sizes 0,100000,300000]

It needs the Python that has the crawlq wheel installed and `redis-server` on PATH.
"""

import argparse
import json
import subprocess
import sys

from workload import start_redis

CHILD = r"""
import json, sys, crawlq

def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])

url, urls, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
q = crawlq.Queue(url, "memory", seen_cache=size)
def batch(start):
    return [f"http://h{i % 1000}.example.com/{i}" for i in range(start, min(urls, start + 10_000))]

q.seed(batch(0))  # the connection, the scripts and the first batch, before the reading
before = rss_kib()
for start in range(10_000, urls, 10_000):
    q.seed(batch(start))
grown = rss_kib() - before
print(json.dumps({"grown_kib": grown, "entries": q.seen_cache_stats()["entries"]}))
"""


def run(urls: int, size: int) -> dict:
    server, port = start_redis()
    try:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, f"redis://127.0.0.1:{port}", str(urls), str(size)],
            check=True, capture_output=True, text=True,
        )
        return json.loads(out.stdout)
    finally:
        server.kill()
        server.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--urls", type=int, default=300_000)
    ap.add_argument("--sizes", default="0,100000,300000", help="cache sizes, comma-separated (0 first)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if sizes[0] != 0:
        sizes.insert(0, 0)
    base = None
    print(f"{args.urls:,} new URLs seeded; resident memory grown while seeding")
    print("| seen_cache | entries held | grown | more than without | per entry of the size |")
    print("|---:|---:|---:|---:|---:|")
    for size in sizes:
        got = run(args.urls, size)
        # the bound holds, and a full cache keeps at least the newer half
        if not min(size, args.urls) // 2 <= got["entries"] <= size:
            raise SystemExit(f"seen_cache={size}: {got['entries']} entries held after {args.urls} new URLs")
        if base is None:
            base = got["grown_kib"]
        extra = got["grown_kib"] - base
        per = f"{extra * 1024 / size:.1f} B" if size else "-"
        print(f"| {size:,} | {got['entries']:,} | {got['grown_kib'] / 1024:.1f} MiB | "
              f"{extra / 1024:.1f} MiB | {per} |")


if __name__ == "__main__":
    main()
