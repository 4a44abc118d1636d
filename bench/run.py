#!/usr/bin/env python3
"""crawlq side by side with its peers, on one private redis-server, in one run.

Every system runs the same workload, interleaved round by round (A B C ... A B C ...), and the
table reports medians, spreads (min-max over the rounds) and ratios computed within this run:

  seed      N distinct URLs over 1,000 hosts, at two lengths (~35 and ~95 characters), with
            de-duplication on where the system has it; items/s and Redis used_memory growth
            per queued URL
  drain     lease + ack every item with a no-op handler at each concurrency (crawlq: lease 100
            and ack them in one call; "single": lease 1 + ack 1, and the same with each ack sent
            with the next lease in one call, ack_and_lease); items/s, and for crawlq the
            memory left per done URL (only its de-duplication record)
  crawl     the crawl-shaped workload at the highest concurrency: N / 20 pages, each leased and
            answered with the 30 links found on it, 90 % (then 50 %) of them to pages seen before
            (a pool of 1,000 seeded pages over 50 hosts), the rest new; pages/s and Redis CPU µs
            per page (its main thread: commands, scripts and client I/O). crawlq: ack_with_links_and_lease (one call per page) with the
            known-seen cache; BullMQ: a Worker whose processor adds the links with addBulk (jobId
            dedupe, completed jobs kept); scrapy-redis pattern: RPOP, SADD of each link's
            fingerprint (pipelined) and LPUSH of the new ones. For crawlq's Rust API, at 90 % seen,
            the same pages also go through the three-call loop a page's one call replaces (lease,
            seed the links, ack; no cache; as many workers) in the same round: the crawl target
            is a page's share of that loop's Redis work (bench/README.md, "Targets")
  ceilings  redis-benchmark: pipelined LPUSH of 95-byte values, pipelined EVALSHA of a no-op
            script, and the round trip of one PING

Use bench/run.sh, which builds everything in release mode first. Run directly, it needs (from
the environment): CRAWLQ_BENCH_BIN (the crawlq-bench binary), CRAWLQ_PHP_EXTENSION, and a
Python with the crawlq wheel and rq installed (the one running this file); the Node.js addon
is taken from bindings-node/, the wasm package from bindings-wasm/pkg/, BullMQ from
bench/node_modules/.

    python bench/run.py [--n 100000] [--rounds 3] [--concurrency 1,16] [--only crawlq-rust,bullmq]
                        [--against OLD_CRAWLQ_BENCH]
                        [--phases queue,crawl] [--redis-config 'zset-max-listpack-entries 64'] [--pin-redis]
    python bench/run.py --smoke        N = 1,000, one round: checks every runner; no timing is judged
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RUNNERS = HERE / "runners"
HOSTS = 1000
LENGTHS = (35, 95)
DRAIN_LENGTH = 95
SINGLE_ITEMS = 5000  # items of the lease 1 + ack 1 drain
SMALL_DRAIN_ITEMS = 20_000  # items of the drains at lower concurrency (capped by N)
POLITE_DELAY_MS = 5  # the politeness row: 1,000 hosts x 5 ms allows 200,000 leases/s
CRAWL_POOL = 1000  # pages seeded before the crawl phase, over CRAWL_HOSTS hosts
CRAWL_HOSTS = 50
LINKS_PER_PAGE = 30
CRAWL_SEEN = (90, 50)  # percent of a page's links to pages seen before
# The crawl target: Redis work per page at TARGET_SEEN % seen at most 40 µs where the loop it
# replaces (lease, seed the page's links, ack: three calls) took LOOP_US_WHEN_SET µs; judged as
# that share of the loop measured in the same run, since this figure moves with the machine's
# speed (bench/README.md, "Targets")
TARGET_SEEN = 90
LOOP_US_WHEN_SET = 91


def pool_url(i: int) -> str:
    return f"https://www.host{i % CRAWL_HOSTS:02d}.example.com/pool/{i:05d}"


def page_links(page: int, seen_percent: int) -> list[str]:
    """The links found on the `page`-th page answered: the first `seen_percent` % to pool pages
    (seen before), the others new."""
    seen = round(LINKS_PER_PAGE * seen_percent / 100)
    return [pool_url((page * 7 + k * 131) % CRAWL_POOL) if k < seen
            else f"https://new{page % CRAWL_HOSTS:02d}.example.com/p/{page}/{k}" for k in range(LINKS_PER_PAGE)]


def backlog_url(i: int, hosts: int) -> str:
    """The i-th URL queued before the crawl's pool with --crawl-backlog: ~85 characters on `hosts`
    hosts other than the pool's and the pages' new ones."""
    return f"https://www.site{i % hosts:05d}.example.org/articles/2026/{i:07d}/a-long-slug-for-the-title?ref=rss"


def url(i: int, length: int) -> str:
    """A URL of about `length` characters on host i % 1000 (distinct for every i)."""
    if length < 60:
        return f"https://host{i % HOSTS:03d}.example.com/{i:07d}"
    return f"https://www.host{i % HOSTS:04d}.example.com/articles/2026/11/{i:07d}/a-long-slug-for-the-title-of?ref=rss"


@dataclass
class System:
    name: str
    label: str
    seed: list[str] | None  # the command prefix; None if the system has no seed of its own
    drain: list[str] | None
    env: dict[str, str] = field(default_factory=dict)
    crawlq: bool = False
    # the crawl phase: the command prefix (its `seed` op seeds the pool, its `crawl` op crawls)
    crawl: list[str] | None = None
    crawl_seed_op: str = "seed"


def bench_bin() -> str:
    """The crawlq-bench binary (bench/src/main.rs)."""
    return str(Path(os.environ.get("CRAWLQ_BENCH_BIN", "crawlq-bench")).resolve())


def systems(against: str | None = None) -> list[System]:
    bench = bench_bin()
    php = ["php", "-d", "extension=" + str(Path(os.environ.get("CRAWLQ_PHP_EXTENSION", "crawlq.so")).resolve()), str(RUNNERS / "crawlq_php.php")]
    node = ["node", str(RUNNERS / "crawlq_js.mjs")]
    python = [sys.executable, str(RUNNERS / "crawlq_python.py")]
    bullmq = ["node", str(RUNNERS / "bullmq.mjs")]
    return [
        System("crawlq-rust", "crawlq (Rust API)", [bench, "crawlq"], [bench, "crawlq"], crawlq=True,
               crawl=[bench, "crawlq"]),
        System("crawlq-python", "crawlq (Python, asyncio)", python, python, crawlq=True, crawl=python),
        System("crawlq-node", "crawlq (Node.js addon)", node, node,
               env={"CRAWLQ_JS_MODULE": str(REPO / "bindings-node")}, crawlq=True, crawl=node),
        System("crawlq-php", "crawlq (PHP, processes)", php, php, crawlq=True, crawl=php),
        System("crawlq-wasm", "crawlq (WebAssembly, node-redis)", node, node,
               env={"CRAWLQ_JS_MODULE": str(REPO / "bindings-wasm" / "pkg")}, crawlq=True, crawl=node),
        System("bullmq", "BullMQ 6 (addBulk, jobId dedupe; Worker)", bullmq, bullmq, crawl=bullmq,
               crawl_seed_op="seed-kept"),
        System("scrapy-redis", "scrapy-redis pattern (RPOP; SADD fingerprints + LPUSH, pipelined)", None, None,
               crawl=[bench, "scrapy-redis"]),
        System("list", "list: LPUSH / BRPOPLPUSH + LREM", [bench, "list"], [bench, "list"]),
        System("list-pipelined", "list: LPUSH pipelined x1000", [bench, "list"], None),
        System("rq", "RQ enqueue_many", [sys.executable, str(RUNNERS / "rq_seed.py")], None),
    ] + ([System("crawlq-against", f"crawlq (Rust API), {Path(against).name}", [against, "crawlq"],
                 [against, "crawlq"], crawlq=True, crawl=[against, "crawlq"])] if against else [])


@dataclass
class Workload:
    n: int
    small: int  # items of the drains at lower concurrency
    single: int  # items of the lease 1 + ack 1 drain
    files: dict[object, Path]
    pages: int = 0  # pages of the crawl phase
    backlog: int = 0  # URLs queued before the crawl phase's pool (--crawl-backlog)


class Redis:
    """A private redis-server on a free TCP port, no persistence; `config`: more of its
    settings, each as `name value` (redis-server's command line takes them as `--name value`)."""

    def __init__(self, config: list[str] | None = None, cpus: set[int] | None = None) -> None:
        self.dir = tempfile.mkdtemp(prefix="crawlq-bench-")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        # (`cpus`: the server's threads run only there, taskset's affinity kept as it daemonizes)
        pin = ["taskset", "-c", ",".join(map(str, sorted(cpus)))] if cpus else []
        started = subprocess.run(
            [*pin, "redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--daemonize", "yes", "--dir", self.dir, "--pidfile", f"{self.dir}/redis.pid",
             "--logfile", f"{self.dir}/redis.log",
             *[arg for setting in config or [] for arg in ("--" + setting.split()[0], *setting.split()[1:])]],
            capture_output=True, text=True,
        )
        if started.returncode != 0:
            # (a setting redis-server refuses is said on its output, before it daemonizes)
            raise SystemExit(f"redis-server did not start: {(started.stdout + started.stderr).strip()}")
        for _ in range(100):
            if self.cli("PING") == "PONG":
                break
            time.sleep(0.05)
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def cli(self, *args: str) -> str:
        out = subprocess.run(["redis-cli", "-p", str(self.port), *args], capture_output=True, text=True)
        return out.stdout.strip()

    def used_memory(self) -> int:
        info = self.cli("INFO", "memory")
        return int(next(line.split(":")[1] for line in info.splitlines() if line.startswith("used_memory:")))

    def flush(self) -> None:
        self.cli("FLUSHALL")
        self.cli("SCRIPT", "FLUSH")
        self.cli("MEMORY", "PURGE")

    def version(self) -> str:
        info = self.cli("INFO", "server")
        return next(line.split(":")[1] for line in info.splitlines() if line.startswith("redis_version:"))

    def script_stat(self, field: str) -> int:
        """A field of `INFO commandstats` (`usec`, `calls`) summed over the script calls (FCALL,
        EVALSHA, EVAL) since the last CONFIG RESETSTAT."""
        total = 0
        for line in self.cli("INFO", "commandstats").splitlines():
            name, _, fields = line.partition(":")
            if name in ("cmdstat_fcall", "cmdstat_evalsha", "cmdstat_eval"):
                total += int(dict(f.split("=") for f in fields.split(","))[field])
        return total

    def script_seconds(self) -> float:
        """Redis's time in script calls since the last CONFIG RESETSTAT."""
        return self.script_stat("usec") / 1e6

    def main_thread_cpu_seconds(self) -> float:
        """The CPU time Redis's main thread has run so far (user + system): every command, script
        and client read and write. Not `INFO commandstats` summed over every command: a script's
        time there includes the commands it runs, which are counted again under their own names,
        and its wall-clock durations grow whenever the server is preempted mid-command, as it is
        beside 16 busy clients on two cores."""
        info = dict(line.split(":", 1) for line in self.cli("INFO", "cpu").splitlines() if ":" in line)
        # (servers before Redis 6.2 report only the process's CPU, which is the main thread's
        # unless I/O threads are on)
        if "used_cpu_user_main_thread" not in info:
            return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
        return float(info["used_cpu_user_main_thread"]) + float(info["used_cpu_sys_main_thread"])

    def stop(self) -> None:
        self.cli("SHUTDOWN", "NOSAVE")
        shutil.rmtree(self.dir, ignore_errors=True)


def run_runner(cmd: list[str], env: dict[str, str], expect_items: int) -> float:
    """Run one runner command; returns items/s after checking it handled every item."""
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env}, cwd=HERE, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"runner failed: {' '.join(cmd)}\n{out.stderr[-2000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if result["items"] != expect_items:
        raise SystemExit(f"runner handled {result['items']} items, expected {expect_items}: {' '.join(cmd)}")
    return result["items"] / max(result["seconds"], 1e-9)


def redis_benchmark(redis: Redis, *args: str) -> float:
    out = subprocess.run(["redis-benchmark", "-p", str(redis.port), "-q", *args], capture_output=True, text=True, check=True)
    # the last line reads "NAME: 123456.78 requests per second, p50=..."
    return float(out.stdout.strip().splitlines()[-1].split("requests per second")[0].rsplit(":", 1)[1].split()[-1])


def ceilings(redis: Redis, n: int) -> dict[str, float]:
    sha = redis.cli("SCRIPT", "LOAD", "return 1")
    pings = max(n // 20, 1000)
    results = {
        "ping_client_us": 1e6 / run_runner([bench_bin(), "ping", redis.url, str(pings)], {}, pings),
        "lpush_pipelined": redis_benchmark(redis, "-t", "lpush", "-P", "100", "-d", "95", "-n", str(max(n * 10, 100_000))),
        "evalsha_pipelined": redis_benchmark(redis, "-P", "100", "-n", str(max(n * 5, 100_000)), "EVALSHA", sha, "0"),
        "ping_rtt_us": 1e6 / redis_benchmark(redis, "-c", "1", "-t", "ping_mbulk", "-n", str(max(n // 5, 20_000))),
    }
    redis.flush()
    return results


def one_round(redis: Redis, chosen: list[System], w: Workload, concurrency: list[int],
              results: dict[tuple[str, str], list[float]], log, phases: list[str]) -> None:
    def seed(s: System, queue: str, file: Path, count: int, op: str = "seed") -> float:
        return run_runner([*s.seed, op, redis.url, queue, str(file)], s.env, count)

    for length in LENGTHS if "queue" in phases else ():
        for s in chosen:
            if s.seed is None:
                continue
            queue = f"bench-{s.name}"
            redis.flush()
            redis.cli("CONFIG", "RESETSTAT")
            before = redis.used_memory()
            rate = seed(s, queue, w.files[length], w.n, "seed-pipelined" if s.name == "list-pipelined" else "seed")
            results[(s.name, f"seed{length}")].append(rate)
            if s.crawlq:
                # the client's time that Redis's did not cover: what a binding adds to a seed
                results[(s.name, f"client{length}")].append((w.n / rate - redis.script_seconds()) / w.n * 1e6)
            results[(s.name, f"mem{length}")].append((redis.used_memory() - before) / w.n)
            log(f"{s.name}: seed {length} chars {rate:,.0f}/s")
            if length != DRAIN_LENGTH or s.drain is None:
                continue
            # drain what was just seeded at the highest concurrency, then smaller runs
            for i, c in enumerate(sorted(concurrency, reverse=True)):
                count = w.n if i == 0 else w.small
                if i > 0:
                    redis.flush()
                    seed(s, queue, w.files["small"], count)
                rate = run_runner(drain_cmd(s, redis.url, queue, c, 100, 0, count), s.env, count)
                results[(s.name, f"drain_c{c}")].append(rate)
                log(f"{s.name}: drain at concurrency {c} {rate:,.0f}/s")
                if i == 0 and s.crawlq:
                    results[(s.name, "mem_done")].append((redis.used_memory() - before) / w.n)
            if s.crawlq:
                redis.flush()
                seed(s, queue, w.files["single"], w.single)
                rate = run_runner(drain_cmd(s, redis.url, queue, 1, 1, 0, w.single), s.env, w.single)
                results[(s.name, "single")].append(rate)
                log(f"{s.name}: lease 1 + ack 1 {rate:,.0f}/s")
                redis.flush()
                seed(s, queue, w.files["single"], w.single)
                rate = run_runner(drain_cmd(s, redis.url, queue, 1, 1, 0, w.single, "drain-next"), s.env, w.single)
                results[(s.name, "single_next")].append(rate)
                log(f"{s.name}: ack + lease 1 in one call {rate:,.0f}/s")
            if s.name == "crawlq-rust":
                redis.flush()
                seed(s, queue, w.files[DRAIN_LENGTH], w.n)
                c = max(concurrency)
                rate = run_runner(drain_cmd(s, redis.url, queue, c, 100, POLITE_DELAY_MS, w.n), s.env, w.n)
                results[(s.name, "polite")].append(rate)
                log(f"{s.name}: drain with politeness {rate:,.0f}/s")

    # the crawl-shaped workload, at the highest concurrency
    c = max(concurrency)
    for seen in CRAWL_SEEN if "crawl" in phases else ():
        for s in chosen:
            if s.crawl is None:
                continue
            queue = f"crawl-{s.name}"
            redis.flush()
            if w.backlog:
                # (a large frontier first: its hosts in the host sets, its URLs in the seen set)
                run_runner([*s.crawl, s.crawl_seed_op, redis.url, queue, str(w.files["backlog"])], s.env, w.backlog)
            run_runner([*s.crawl, s.crawl_seed_op, redis.url, queue, str(w.files["pool"])], s.env, CRAWL_POOL)
            redis.cli("CONFIG", "RESETSTAT")
            cpu_before = redis.main_thread_cpu_seconds()
            rate = run_runner([*s.crawl, "crawl", redis.url, queue, str(c), str(w.files[f"pages{seen}"])], s.env, w.pages)
            results[(s.name, f"crawl{seen}")].append(rate)
            results[(s.name, f"crawl{seen}_us")].append((redis.main_thread_cpu_seconds() - cpu_before) / w.pages * 1e6)
            if s.crawlq:
                # how many pages went together in a call: a call's own work (its checks, reads of
                # meta, the lease's scan) is shared by its pages (bench/README.md)
                results[(s.name, f"crawl{seen}_per_call")].append(w.pages / max(redis.script_stat("calls"), 1))
                results[(s.name, f"crawl{seen}_script_us")].append(redis.script_seconds() / w.pages * 1e6)
            log(f"{s.name}: crawl, {seen} % of links seen: {rate:,.0f} pages/s")
            if s.name == "crawlq-rust" and seen == TARGET_SEEN:
                # the yardstick of the target, in the same round: the same pages through the
                # three-call loop it was set against (lease, seed the links, ack; no known-seen
                # cache), on the same queue made again, with as many workers (the target was set
                # with one, whose loop costs Redis more a page: this yardstick is the stricter)
                redis.flush()
                if w.backlog:
                    run_runner([*s.crawl, s.crawl_seed_op, redis.url, queue, str(w.files["backlog"])], s.env,
                               w.backlog)
                run_runner([*s.crawl, s.crawl_seed_op, redis.url, queue, str(w.files["pool"])], s.env, CRAWL_POOL)
                redis.cli("CONFIG", "RESETSTAT")
                cpu_before = redis.main_thread_cpu_seconds()
                run_runner([*s.crawl, "crawl-loop", redis.url, queue, str(c), str(w.files[f"pages{seen}"])], s.env,
                           w.pages)
                results[(s.name, f"loop{seen}_us")].append(
                    (redis.main_thread_cpu_seconds() - cpu_before) / w.pages * 1e6)
                results[(s.name, f"loop{seen}_script_us")].append(redis.script_seconds() / w.pages * 1e6)
                # this round's page against this round's loop, by the larger of two ratios: the
                # loop's three calls a page also cost Redis their clients' reads and writes,
                # which script time leaves out
                results[(s.name, f"loop{seen}_share")].append(max(
                    results[(s.name, f"crawl{seen}_us")][-1] / results[(s.name, f"loop{seen}_us")][-1],
                    results[(s.name, f"crawl{seen}_script_us")][-1] / results[(s.name, f"loop{seen}_script_us")][-1]))
                log(f"{s.name}: the three-call loop, {seen} % of links seen, done")


def drain_cmd(s: System, redis_url: str, queue: str, concurrency: int, batch: int, delay_ms: int, expected: int,
              mode: str = "drain") -> list[str]:
    if s.crawlq:
        return [*s.drain, mode, redis_url, queue, str(concurrency), str(batch), str(delay_ms), str(expected)]
    return [*s.drain, "drain", redis_url, queue, str(concurrency), str(expected)]


def fmt(value: float, unit: str) -> str:
    if unit == "B":
        return f"{value:,.1f}"
    if unit in ("µs", "x"):
        return f"{value:,.2f}"
    return f"{value:,.0f}"


def report(results: dict[tuple[str, str], list[float]], chosen: list[System], ceil: dict[str, list[float]],
           n: int, rounds: int, concurrency: list[int], redis_version: str, redis_config: list[str],
           backlog: int = 0, pinned: str = "") -> str:
    med = {k: statistics.median(v) for k, v in results.items()}
    lines = [
        f"N = {n:,} URLs over {HOSTS:,} hosts, {rounds} interleaved round(s), Redis {redis_version}"
        + "".join(f", {setting}" for setting in redis_config)
        + (f", {pinned}" if pinned else "")
        + (f"; the crawl on a queue of {backlog:,} URLs over {max(1, backlog // 50):,} hosts queued before its pool"
           if backlog else "")
        + "; median (min-max); ratio = this row / crawlq (Rust API) in the same run",
        "",
    ]

    def table(title: str, metric: str, unit: str, ratio_to: str | None = "crawlq-rust") -> None:
        rows = [s for s in chosen if (s.name, metric) in results]
        if not rows:
            return
        lines.append(f"| {title} | median | min-max | ratio |")
        lines.append("|---|---:|---:|---:|")
        base = med.get((ratio_to, metric)) if ratio_to else None
        for s in rows:
            values = results[(s.name, metric)]
            ratio = f"{med[(s.name, metric)] / base:.2f}" if base else ""
            lines.append(f"| {s.label} | {fmt(med[(s.name, metric)], unit)} | "
                         f"{fmt(min(values), unit)}-{fmt(max(values), unit)} | {ratio} |")
        lines.append("")

    for length in LENGTHS:
        table(f"seed, ~{length}-char URLs (items/s)", f"seed{length}", "/s")
    for length in LENGTHS:
        table(f"seed, ~{length}-char URLs: the seed's time beyond Redis's script time (µs per URL)",
              f"client{length}", "µs")
    for length in LENGTHS:
        table(f"Redis memory per queued URL, ~{length} chars (bytes)", f"mem{length}", "B")
    table("Redis memory per done URL (bytes)", "mem_done", "B")
    for c in sorted(concurrency, reverse=True):
        table(f"drain, concurrency {c} (items/s; crawlq leases 100, acks in one call)", f"drain_c{c}", "/s")
    table("drain, lease 1 + ack 1, concurrency 1 (items/s)", "single", "/s")
    table("drain, ack + lease 1 in one call (ack_and_lease), concurrency 1 (items/s)", "single_next", "/s")
    table(f"drain with politeness ({POLITE_DELAY_MS} ms per host), concurrency {max(concurrency)} (items/s)", "polite", "/s", None)
    for seen in CRAWL_SEEN:
        table(f"crawl, {seen} % of links seen before, concurrency {max(concurrency)} (pages/s)", f"crawl{seen}", "/s")
        table(f"crawl, {seen} % of links seen before: Redis CPU µs per page (main thread)", f"crawl{seen}_us", "µs")
        table(f"crawl, {seen} % of links seen before: pages per script call (crawlq)", f"crawl{seen}_per_call", "x")
        table(f"crawl, {seen} % of links seen before: the three-call loop (lease, seed, ack; no cache), concurrency "
              f"{max(concurrency)}, Redis CPU µs per page (main thread)", f"loop{seen}_us", "µs")
        table(f"crawl, {seen} % of links seen before: Redis per page / the three-call loop's, same round "
              "(the larger of main-thread CPU and script time)", f"loop{seen}_share", "x", None)

    c = {k: statistics.median(v) for k, v in ceil.items()}
    lines.append("| ceiling (redis-benchmark) | median |")
    lines.append("|---|---:|")
    lines.append(f"| LPUSH, 95-byte values, pipelined 100, 50 clients (ops/s) | {c['lpush_pipelined']:,.0f} |")
    lines.append(f"| EVALSHA of `return 1`, pipelined 100, 50 clients (ops/s) | {c['evalsha_pipelined']:,.0f} |")
    lines.append(f"| PING round trip, 1 client (µs) | {c['ping_rtt_us']:.1f} |")
    lines.append(f"| PING round trip through crawlq's Rust client, redis-rs (µs) | {c['ping_client_us']:.1f} |")
    lines.append("")

    def get(name: str, metric: str) -> float | None:
        return med.get((name, metric))

    targets = []

    def target(text: str, value: float | None, goal: float, at_most: bool = False, unit: str = "x") -> None:
        if value is None:
            targets.append(f"- {text}: not measured in this run")
            return
        met = value <= goal if at_most else value >= goal
        shown = f"{value:.2f}{unit}" if unit == "x" else f"{value:.1f} {unit}"
        targets.append(f"- {text}: {shown} (target {'<=' if at_most else '>='} {goal:g}{unit if unit == 'x' else ' ' + unit}) "
                       f"{'met' if met else 'MISSED'}")

    rust = "crawlq-rust"
    seed, bull = get(rust, "seed95"), get("bullmq", "seed95")
    target("seed, crawlq vs BullMQ addBulk with dedupe (~95 chars)", seed / bull if seed and bull else None, 10)
    target("seed, crawlq URLs/s vs pipelined LPUSH ops/s", seed / c["lpush_pipelined"] if seed else None, 0.25)
    for cc in sorted(concurrency):
        d, b = get(rust, f"drain_c{cc}"), get("bullmq", f"drain_c{cc}")
        target(f"drain at concurrency {cc}, crawlq vs BullMQ Worker", d / b if d and b else None, 6)
    single = get(rust, "single")
    if single:
        per_item = 1e6 / single
        target(f"lease 1 + ack 1: {per_item:.0f} µs per item, in round trips of the same client ({c['ping_client_us']:.0f} µs)",
               per_item / c["ping_client_us"], 2.5, at_most=True)
    single_next = get(rust, "single_next")
    if single_next:
        per_item = 1e6 / single_next
        target(f"ack + lease 1 in one call (ack_and_lease): {per_item:.0f} µs per item, in round trips of the same "
               f"client ({c['ping_client_us']:.0f} µs)", per_item / c["ping_client_us"], 2.5, at_most=True)
    crawl, bull_crawl = get(rust, "crawl90"), get("bullmq", "crawl90")
    target(f"crawl at concurrency {max(concurrency)}, 90 % of links seen, crawlq vs BullMQ (pages/s)",
           crawl / bull_crawl if crawl and bull_crawl else None, 3)
    page_us, loop_us = get(rust, f"crawl{TARGET_SEEN}_us"), get(rust, f"loop{TARGET_SEEN}_us")
    share = get(rust, f"loop{TARGET_SEEN}_share")
    shown = (f" ({page_us:.1f} µs of Redis CPU a page, the loop {loop_us:.1f} µs; the target is 40 µs where that loop "
             f"took {LOOP_US_WHEN_SET} µs)") if page_us and loop_us else ""
    target(f"crawl, {TARGET_SEEN} % of links seen: Redis per page against the three-call loop in the same round{shown}",
           share, 40 / LOOP_US_WHEN_SET, at_most=True)
    m, mb = get(rust, "mem95"), get("bullmq", "mem95")
    target("Redis bytes per queued URL, crawlq / BullMQ (~95 chars)", m / mb if m and mb else None, 1 / 3, at_most=True)
    target("Redis bytes per done URL", get(rust, "mem_done"), 40, at_most=True, unit="B")
    for s in chosen:
        if s.crawlq and s.name not in (rust, "crawlq-against"):
            for metric in ("seed95", f"drain_c{max(concurrency)}", "crawl90"):
                v, r = get(s.name, metric), get(rust, metric)
                target(f"{s.label} / Rust, {metric}", v / r if v and r else None, 0.8)
    lines.append("Targets (ratios from this run):")
    lines.extend(targets)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", default="1,16", help="comma-separated, e.g. 1,16,50")
    parser.add_argument("--only", default="", help="comma-separated system names")
    parser.add_argument("--phases", default="queue,crawl",
                        help="comma-separated: queue (seed, drain), crawl (the crawl-shaped workload)")
    parser.add_argument("--smoke", action="store_true", help="N = 1,000, one round: checks every runner; no timing is judged")
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    parser.add_argument("--against", help="another build of crawlq-bench, run as the system crawlq-against "
                        "(its Rust API) beside this one's, round by round")
    parser.add_argument("--crawl-backlog", type=int, default=0, metavar="URLS",
                        help="the crawl phase on a large frontier: queue this many other URLs (50 per host) "
                        "before its pool, with the runner's own seed (default 0)")
    parser.add_argument("--redis-config", action="append", default=[], metavar="'NAME VALUE'",
                        help="a setting of the private redis-server, as redis.conf spells it (repeatable; "
                        "default: Redis's own defaults)")
    parser.add_argument("--pin-redis", action="store_true",
                        help="run redis-server on a CPU of its own (the first this process may use) and every "
                        "client on the others, as on a server whose Redis has a core to itself (default: "
                        "the scheduler places both)")
    args = parser.parse_args()
    args.redis_config = [setting for setting in args.redis_config if setting.split()]
    redis_cpus, pinned = None, ""
    if args.pin_redis:
        allowed = sorted(os.sched_getaffinity(0))
        if len(allowed) < 2:
            raise SystemExit(f"--pin-redis needs two CPUs or more; this process may use {len(allowed)}")
        redis_cpus, clients = {allowed[0]}, set(allowed[1:])
        # (every runner, peer and redis-benchmark this process starts inherits the clients' CPUs)
        os.sched_setaffinity(0, clients)
        pinned = f"redis-server on CPU {allowed[0]}, the clients on CPU {','.join(map(str, sorted(clients)))}"
    if args.smoke:
        args.n, args.rounds = 1000, 1
    concurrency = [int(c) for c in args.concurrency.split(",")]
    against = str(Path(args.against).resolve()) if args.against else None
    chosen = [s for s in systems(against) if not args.only or s.name in args.only.split(",")]

    def log(message: str) -> None:
        print(f"  {message}", file=sys.stderr, flush=True)

    redis = Redis(args.redis_config, redis_cpus)
    try:
        with tempfile.TemporaryDirectory(prefix="crawlq-bench-") as tmp:
            w = Workload(args.n, min(args.n, SMALL_DRAIN_ITEMS), min(args.n, SINGLE_ITEMS), {}, max(200, args.n // 20))
            if args.smoke:
                w.single = 200
            w.backlog = max(0, args.crawl_backlog)
            if w.backlog:
                w.files["backlog"] = Path(tmp) / "crawl-backlog.txt"
                hosts = max(1, w.backlog // 50)
                w.files["backlog"].write_text("".join(backlog_url(i, hosts) + "\n" for i in range(w.backlog)))
            w.files["pool"] = Path(tmp) / "crawl-pool.txt"
            w.files["pool"].write_text("".join(pool_url(i) + "\n" for i in range(CRAWL_POOL)))
            for seen in CRAWL_SEEN:
                w.files[f"pages{seen}"] = Path(tmp) / f"crawl-pages-{seen}.txt"
                w.files[f"pages{seen}"].write_text("".join("\t".join(page_links(k, seen)) + "\n" for k in range(w.pages)))
            for key, length, count in [(35, 35, w.n), (95, 95, w.n), ("small", DRAIN_LENGTH, w.small),
                                       ("single", DRAIN_LENGTH, w.single)]:
                w.files[key] = Path(tmp) / f"urls-{key}.txt"
                w.files[key].write_text("".join(url(i, length) + "\n" for i in range(count)))
            average = {length: sum(len(url(i, length)) for i in range(1000)) / 1000 for length in LENGTHS}
            log(f"URL lengths: {', '.join(f'{a:.1f}' for a in average.values())} characters on average")

            results: dict[tuple[str, str], list[float]] = defaultdict(list)
            ceil: dict[str, list[float]] = defaultdict(list)
            started = time.monotonic()
            for r in range(args.rounds):
                log(f"round {r + 1} of {args.rounds}")
                for k, v in ceilings(redis, args.n).items():
                    ceil[k].append(v)
                one_round(redis, chosen, w, concurrency, results, log, args.phases.split(","))
            log(f"done in {time.monotonic() - started:.0f} s")
        text = report(results, chosen, ceil, args.n, args.rounds, concurrency, redis.version(), args.redis_config,
                      w.backlog, pinned)
        if args.smoke:
            print(f"bench smoke run: every runner handled every item ({len(results)} measurements)")
        else:
            print(text)
        if args.json:
            args.json.write_text(json.dumps({f"{k[0]}/{k[1]}": v for k, v in results.items()} | {"ceilings": ceil}, indent=1))
    finally:
        redis.stop()


if __name__ == "__main__":
    main()
