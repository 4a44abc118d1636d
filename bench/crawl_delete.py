#!/usr/bin/env python3
"""What deleting a small named crawl from a large queue costs Redis.

A private redis-server holds a queue of --hosts hosts, one item each of a crawl "big"; each
round seeds a crawl "small" of --crawl-hosts hosts (among the big crawl's) with --per-host
items each, deletes it with `delete_crawl` and reports the deletion's script calls and their
Redis time (`INFO commandstats`, reset before it) and its wall time. Every round checks that
the small crawl's items all went and the big crawl's all stayed.

    python bench/crawl_delete.py [--hosts 100000] [--crawl-hosts 10] [--per-host 10] [--rounds 3]
                                 [--delayed 0]

With --delayed N the big crawl also has N items waiting for a delay (an hour) and each round's
small crawl one more delayed item, so the deletion walks the queue's `delayed` set too, until it
meets that item: the calls a round takes depend on where the scan finds it, so compare the
Redis µs per call.

It needs the Python that has the crawlq wheel installed and `redis-server` on PATH.
"""

import argparse
import subprocess
import time

import crawlq
from workload import start_redis

SCRIPT_CALLS = ("fcall", "fcall_ro", "evalsha", "evalsha_ro", "eval", "eval_ro")


def script_stats(port: int) -> tuple[int, int]:
    """Script calls and their µs since the last reset."""
    out = subprocess.run(["redis-cli", "-p", str(port), "INFO", "commandstats"],
                         capture_output=True, text=True, check=True).stdout
    calls = usec = 0
    for line in out.splitlines():
        name, _, rest = line.partition(":")
        if name.removeprefix("cmdstat_") in SCRIPT_CALLS:
            fields = dict(kv.split("=") for kv in rest.strip().split(","))
            calls += int(fields["calls"])
            usec += int(fields["usec"])
    return calls, usec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=100_000)
    ap.add_argument("--crawl-hosts", type=int, default=10)
    ap.add_argument("--per-host", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--delayed", type=int, default=0)
    args = ap.parse_args()
    if not 0 < args.crawl_hosts <= args.hosts:
        raise SystemExit("--crawl-hosts must be between 1 and --hosts")
    server, port = start_redis()
    try:
        q = crawlq.Queue(f"redis://127.0.0.1:{port}", "crawl-delete", shards=1)
        for start in range(0, args.hosts, 10_000):
            q.seed([f"http://h{h}.example/big" for h in range(start, min(args.hosts, start + 10_000))],
                   crawl="big")
        for start in range(0, args.delayed, 10_000):
            q.seed([f"http://h{h % args.hosts}.example/later{h}"
                    for h in range(start, min(args.delayed, start + 10_000))],
                   crawl="big", delay=3600.0)
        small = args.crawl_hosts * args.per_host
        print(f"a crawl of {small:,} items on {args.crawl_hosts:,} hosts"
              f"{' (and 1 delayed)' if args.delayed else ''} deleted from a queue of "
              f"{args.hosts:,} hosts{f' and {args.delayed:,} delayed items' if args.delayed else ''}")
        print("| round | script calls | Redis µs | Redis µs per call | wall ms |")
        print("|---:|---:|---:|---:|---:|")
        for round_ in range(args.rounds):
            q.seed([f"http://h{h}.example/small{round_}-{i}"
                    for h in range(args.crawl_hosts) for i in range(args.per_host)], crawl="small")
            if args.delayed:
                q.seed([f"http://h0.example/small{round_}-later"], crawl="small", delay=3600.0)
            subprocess.run(["redis-cli", "-p", str(port), "CONFIG", "RESETSTAT"], check=True,
                           capture_output=True)
            started = time.perf_counter()
            gone = q.delete_crawl("small")
            wall_ms = (time.perf_counter() - started) * 1000
            calls, usec = script_stats(port)
            if gone["ready"] != small or q.crawl_stats("small")["ready"] != 0:
                raise SystemExit(f"round {round_}: removed {gone['ready']} of {small}")
            if args.delayed and gone["delayed"] != 1:
                raise SystemExit(f"round {round_}: removed {gone['delayed']} delayed items of 1")
            big = q.crawl_stats("big")
            if big["ready"] != args.hosts or big["delayed"] != args.delayed:
                raise SystemExit(f"round {round_}: the big crawl lost items")
            print(f"| {round_ + 1} | {calls:,} | {usec:,} | {usec / max(calls, 1):,.0f} | {wall_ms:,.1f} |")
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
