#!/usr/bin/env python3
"""Run cargo's test binaries side by side instead of one after another.

`cargo test` runs a package's test binaries in turn. Most of crawlq's wait on Redis, on leases
that expire or on a host's delay rather than on the CPU, so several at once finish in the time of
the longest. This builds them once with `cargo test --no-run` and runs every binary of every
suite given, at most --jobs at a time, each in its package's directory as cargo would, with the
suite's environment. A suite's doc tests run through `cargo test --doc`.

    tools/cargo_tests.py [--jobs N] SUITE...

A SUITE is 'LABEL: [VAR=VALUE ...] CARGO ARGS': the environment of its binaries, then the args
cargo test takes (packages, --test, --target, --doc), e.g.

    tools/cargo_tests.py 'core: -p crawlq --target x86_64-unknown-linux-gnu' \\
        'shards: CRAWLQ_TEST_SHARDS=3 -p crawlq --test limits --test invariants'

Give every suite the same packages (`-p crawlq -p crawlq-cli`, with `--test` filters where
only some binaries should run): cargo unifies features per invocation, so another set of
packages builds the dependencies again.

Each binary's output is printed whole when it ends, then a table of times; the exit status is 1
if any binary failed.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path


def parse_suite(text):
    """'LABEL: [VAR=VALUE ...] CARGO ARGS' -> (label, env, args)."""
    label, sep, rest = text.partition(": ")
    if not sep:
        raise SystemExit(f"cargo_tests.py: a suite is 'LABEL: [VAR=VALUE ...] ARGS', got {text!r}")
    words = shlex.split(rest)
    env = {}
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    return label, env, words


def test_binaries(args, env):
    """Build the suite's test binaries; return (name, executable, package directory) for each."""
    cmd = ["cargo", "test", "--no-run", "--message-format=json-render-diagnostics", *args]
    proc = subprocess.run(cmd, env={**os.environ, **env}, stdout=subprocess.PIPE, check=False)
    if proc.returncode:
        raise SystemExit(f"cargo_tests.py: {shlex.join(cmd)} failed ({proc.returncode})")
    found = []
    for line in proc.stdout.decode().splitlines():
        msg = json.loads(line)
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
            continue
        if not msg["profile"]["test"]:
            continue
        target = msg["target"]
        kind = target["kind"][0]
        name = target["name"] if kind == "test" else f"{target['name']} ({kind} unit tests)"
        found.append((name, msg["executable"], str(Path(msg["manifest_path"]).parent)))
    return found


def run_job(job):
    label, name, cmd, cwd, env = job
    started = time.monotonic()
    proc = subprocess.run(
        cmd, cwd=cwd, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False
    )
    return label, name, proc.returncode, time.monotonic() - started, proc.stdout.decode(errors="replace")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=4, help="binaries at once (default 4)")
    parser.add_argument(
        "--first", default="", help="comma-separated binaries to start before the others (the longest ones)"
    )
    parser.add_argument("suites", nargs="+", metavar="SUITE")
    opts = parser.parse_args()

    build_started = time.monotonic()
    jobs = []
    for text in opts.suites:
        label, env, args = parse_suite(text)
        if "--doc" in args:
            jobs.append((label, "doc tests", ["cargo", "test", *args], os.getcwd(), env))
            continue
        for name, exe, cwd in test_binaries(args, env):
            jobs.append((label, name, [exe], cwd, env))

    print(f"--- test binaries built in {time.monotonic() - build_started:.1f} s", flush=True)
    first = [name for name in opts.first.split(",") if name]
    jobs.sort(key=lambda job: first.index(job[1]) if job[1] in first else len(first))

    started = time.monotonic()
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=opts.jobs) as pool:
        for label, name, code, took, output in (f.result() for f in concurrent.futures.as_completed(
            [pool.submit(run_job, job) for job in jobs]
        )):
            status = "ok" if code == 0 else f"FAILED (exit {code})"
            print(f"\n--- {label}: {name}: {status} in {took:.1f} s", flush=True)
            print(output.rstrip(), flush=True)
            results.append((label, name, code, took))

    failed = [r for r in results if r[2]]
    print(f"\n--- {len(results)} test binaries in {time.monotonic() - started:.1f} s, {opts.jobs} at a time")
    for label, name, code, took in sorted(results, key=lambda r: -r[3])[:8]:
        print(f"  {took:6.1f} s  {label}: {name}")
    for label, name, code, _ in failed:
        print(f"FAILED: {label}: {name} (exit {code})", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
