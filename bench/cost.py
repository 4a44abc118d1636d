#!/usr/bin/env python3
"""Redis CPU per item, per script: what each crawlq operation costs the server, read from
`INFO commandstats` (EVAL + EVALSHA + FCALL µs) around each phase of `crawlq-bench cost`
(bench/src/cost.rs), with 8 tasks keeping the server busy. Server-side µs do not depend on the
client's speed; they do follow the machine's speed (a shared VM can be 2x slower one day than
the next), so compare builds within one run: `--against OTHER_BIN` runs another build of
crawlq-bench (say, the previous release) interleaved with this one, round by round, on the same
server, and the table gives both medians and their ratio.

    python bench/cost.py [--runs 5] [--n 20000] [--against /path/to/old/crawlq-bench]
                         [--phases core,crawl,crawls,nack,empty,single,priorities,memory,layouts,longest,floor]
                         [--callgrind [--profile 25]] [--redis-server PATH]

`--callgrind` runs the server under `valgrind --tool=callgrind`, counting only the instructions
run inside script calls: each figure is then thousands of instructions per item instead of µs,
the same from run to run within about 1% whatever else the machine does (timing figures and
the longest-call phase are left out; a run takes a few minutes at --n 5000). Use it to compare
two builds (`--against`) on a noisy machine; report µs from a normal run.

`--profile K` (with `--callgrind`) also prints, for each phase of the last run, where its
instructions went: the K functions that ran the most instructions themselves, and the share of
a few parts of a script call (its arguments made into Lua strings, `redis.call` with and
without the command it runs, the Lua garbage collector, string building). Function names
need a redis-server built with symbols, named by `--redis-server` (Debian's is stripped; the
same version builds from `apt-get source redis` with `make USE_SYSTEM_JEMALLOC=yes`).

(CRAWLQ_BENCH_BIN: the crawlq-bench binary, release build; bench/run.sh builds it.)

Phases (95-character URLs over 1,000 hosts unless said otherwise):
  seed                    N URLs in batches of 1,000                       µs per URL
  lease(100), ack(100)    lease N in calls of 100, then ack them            µs per item
  nack(100)               nack with a retry (backoff), N leased items       µs per item
  lease(1), empty queue   2,000 calls                                       µs per call
  lease(1) + ack(1)       2,000 items, and the same in PING round trips of one client
  one host, P = 10/10000  lease(1) + ack(1) from one host holding 10,000 items over P priorities
  bytes per ...           used_memory growth (client buffers left out) per pending URL:
                          1,000 hosts, and 1 and 10 URLs per host (bench/run.py measures the
                          bytes per done URL); for 1 URL per host, also what deleting each part
                          of the layout (lanes, priority sets, ready, heads, hostitems, seen and
                          live sets) gives back, per URL
  layout bytes per ...    one-URL hosts in other layouts: N one-URL hosts seeded, then each
                          structure a layout could keep a host's record, schedule, head age or
                          count in, built from those records alone (one sorted set of all hosts;
                          small listpack sorted sets of at most 128 hosts; a list, a string or a
                          hash field per record), bytes per host; and the smallest sum found
                          that keeps every figure crawlq answers
  longest call            the slowest single script call (SLOWLOG) of seed of 10,000 with
                          seed_batch 10,000, lease(10,000), reclaim of 10,000 expired leases,
                          requeue of 10,000 dead letters, purge of 10,000 dead letters of
                          10,000 hosts (ms)
  floor: ...              the floor of the layout: only the per-item commands of seed,
                          lease(100) and ack(100), from Lua with every key, member and record
                          computed by the client (bench/src/floor.lua), same URLs and tasks
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import glob
import io
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def start_redis(callgrind_out: str | None = None, server: str = "redis-server") -> tuple[subprocess.Popen, int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    workdir = tempfile.mkdtemp(prefix="crawlq-cost-")
    # (the caller stops the server; its directory goes when this process ends)
    atexit.register(shutil.rmtree, workdir, True)
    command = [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", "--dir", workdir]
    if callgrind_out:
        # instructions counted only inside script calls (and the commands they make)
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={callgrind_out}",
                   "--toggle-collect=fcallCommand", "--toggle-collect=evalShaCommand",
                   "--toggle-collect=evalCommand"] + command
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(3000 if callgrind_out else 500):
        ping = subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True)
        if ping.stdout.strip() == "PONG":
            return proc, port
        time.sleep(0.02)
    raise SystemExit("redis-server did not start")


# Parts of a script call, by the function that runs them (names of Redis 7.0's source), for
# --profile: inclusive instructions, as a share of the phase's.
CALL_PARTS = [
    ("script call in all", "luaCallFunction"),
    ("arguments made into Lua strings (KEYS, ARGV)", "luaCreateArray"),
    ("redis.call, everything included", "luaRedisGenericCommand"),
    ("the commands redis.call ran", "call'2"),
    ("Lua garbage collector", "luaC_step"),
    ("string concatenation (..)", "luaV_concat"),
    ("string.format", "str_format"),
    ("new Lua strings (interning)", "luaS_newlstr"),
    ("number parsing (strtod)", "strtod"),
    ("score replies formatted (%.17g)", "addReplyDouble"),
]


def profile(dump: str, top: int) -> None:
    """Print where the instructions of one callgrind dump went (see --profile)."""
    phase = "?"
    with open(dump) as f:
        for line in f:
            if line.startswith("desc: Trigger: dump "):
                phase = line[len("desc: Trigger: dump "):].strip()
                break
    def annotate(inclusive: bool) -> list[tuple[int, str]]:
        out = subprocess.run(["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}",
                              "--threshold=100", "--auto=no", dump], capture_output=True, text=True).stdout
        rows = []
        for line in out.splitlines():
            # "1,234,567 (12.34%)  file:function [object]"
            m = re.match(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S.*)$", line)
            if m and ":" in m.group(2):
                rows.append((int(m.group(1).replace(",", "")), m.group(2)))
        return rows
    total = next((int(line.split()[1]) for line in open(dump)
                  if line.startswith(("summary:", "totals:"))), 0)
    if not total:
        return
    print(f"\n{phase}: {total:,} instructions")
    inclusive = annotate(True)
    for label, function in CALL_PARTS:
        share = max((n for n, name in inclusive
                     if name.split(" [")[0].rsplit(":", 1)[-1] == function), default=0)
        print(f"  {share / total:6.1%}  {label} ({function})")
    print("  functions that ran the most instructions themselves:")
    for n, name in [row for row in annotate(False) if "PROGRAM TOTALS" not in row[1]
                    and "libc-start" not in row[1] and "(below main)" not in row[1]
                    and ":main " not in row[1] and "0x000000000001ab70" not in row[1]][:top]:
        print(f"  {n / total:6.1%}  {name.split(' [')[0]}")


def one_run(binary: str, port: int, n: int) -> dict[str, float]:
    out = subprocess.run([binary, "cost", f"redis://127.0.0.1:{port}", str(n), "8"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{binary} cost failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--against", help="another crawlq-bench build, run interleaved with this one")
    ap.add_argument("--phases", help="only these phases (comma-separated): core (seed, lease(100), "
                    "ack(100)), crawl (a page leased and answered with 30 links, 90 or 50 percent seen), crawls (lease(1) + "
                    "ack(1) of named crawls' items: one crawl, 100 crawls), nack, empty, single, "
                    "priorities, memory, layouts, longest, floor")
    ap.add_argument("--callgrind", action="store_true",
                    help="count instructions inside script calls (valgrind) instead of timing them")
    ap.add_argument("--profile", type=int, metavar="K",
                    help="with --callgrind: print where each phase's instructions went (K functions)")
    ap.add_argument("--redis-server", default="redis-server",
                    help="the redis-server to run (one built with symbols for --profile)")
    args = ap.parse_args()
    if args.profile and not args.callgrind:
        ap.error("--profile needs --callgrind")
    if args.phases:
        os.environ["CRAWLQ_COST_PHASES"] = args.phases
    elif args.callgrind:
        os.environ["CRAWLQ_COST_PHASES"] = "core,nack,empty,single,priorities,floor"
    this = str(Path(os.environ.get("CRAWLQ_BENCH_BIN", "crawlq-bench")).resolve())
    builds = {"this build": this}
    if args.against:
        builds = {"other build": str(Path(args.against).resolve()), "this build": this}
    callgrind_dir = tempfile.mkdtemp(prefix="crawlq-callgrind-") if args.callgrind else None
    callgrind_out = os.path.join(callgrind_dir, "callgrind.out") if callgrind_dir else None
    proc, port = start_redis(callgrind_out, args.redis_server)
    if callgrind_out:
        # valgrind runs redis-server in its own process: the pid callgrind_control needs
        os.environ["CRAWLQ_COST_CALLGRIND"] = f"{proc.pid}:{callgrind_out}"
    runs: dict[str, list[dict[str, float]]] = {label: [] for label in builds}
    profiles = io.StringIO()
    try:
        dumps: list[str] = []
        for _ in range(args.runs):
            for label, binary in builds.items():
                before = set(glob.glob(f"{callgrind_out}.*")) if callgrind_out else set()
                runs[label].append(one_run(binary, port, args.n))
                if callgrind_out:
                    # the dumps of this run, one per phase, in the order they were written
                    dumps = sorted(set(glob.glob(f"{callgrind_out}.*")) - before,
                                   key=lambda f: int(f.rsplit(".", 1)[1]))
        version = subprocess.run(["redis-cli", "-p", str(port), "info", "server"], capture_output=True,
                                 text=True).stdout
        if args.profile:
            with contextlib.redirect_stdout(profiles):
                print(f"\nWhere the instructions of the last run ({label}) went, by phase:")
                for dump in dumps:
                    profile(dump, args.profile)
    finally:
        proc.terminate()
        proc.wait()
        if callgrind_dir:
            shutil.rmtree(callgrind_dir, ignore_errors=True)
    redis_version = next((line.split(":", 1)[1].strip() for line in version.splitlines()
                          if line.startswith("redis_version:")), "?")
    unit = "thousands of instructions inside script calls (callgrind)" if args.callgrind else "µs of Redis time"
    print(f"Redis {redis_version}, N = {args.n:,}, {args.runs} interleaved runs; median (min-max); {unit}\n")
    labels = list(builds)
    header = " | ".join(f"{label}" for label in labels)
    print(f"| figure | {header} |" + (" ratio |" if len(labels) == 2 else ""))
    print("|---|" + "---:|" * len(labels) + ("---:|" if len(labels) == 2 else ""))
    for key in runs[labels[-1]][0]:
        cells, medians = [], []
        for label in labels:
            vals = [run[key] for run in runs[label] if key in run]
            if not vals:
                cells.append("-")
                continue
            med = statistics.median(vals)
            medians.append(med)
            cells.append(f"{med:,.2f} ({min(vals):,.2f}-{max(vals):,.2f})")
        ratio = f" {medians[1] / medians[0]:.2f} |" if len(medians) == 2 and medians[0] else ""
        print(f"| {key} | " + " | ".join(cells) + " |" + ratio)
    print(profiles.getvalue(), end="")


if __name__ == "__main__":
    main()
