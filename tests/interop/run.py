#!/usr/bin/env python3
"""Interop scenarios: worker processes of every language on one redis-server at once, then the
guarantees of docs/PROTOCOL.md (section 8) checked from the ledgers the workers write.

Runs with the Python that has the crawlq wheel installed; with `--cluster URL`, on that Redis
Cluster, one queue of 8 shards, workers of every language but the WebAssembly build's. Environment:
  CRAWLQ_PHP_EXTENSION  path of crawlq.so
  CRAWLQ_RUST_WORKER    path of the built interop_worker example
  (the Node addon and the wasm package are taken from bindings-node/ and bindings-wasm/pkg/)

    python tests/interop/run.py
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WORKERS = Path(__file__).resolve().parent / "workers"
sys.path.insert(0, str(REPO / "bindings-python" / "tests"))

import crawlq  # noqa: E402
from conftest import RedisServer  # noqa: E402

HOST_DELAY_MS = 20  # the workers' politeness delay
LANGUAGES = ["python", "node", "wasm", "php", "rust"]
SHARDS = 1  # --cluster URL: one queue of 8 shards over that Redis Cluster


def command(lang: str, *args: str) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ)
    if lang == "python":
        return [sys.executable, str(WORKERS / "worker.py"), *args], env
    if lang in ("node", "wasm"):
        env["CRAWLQ_JS_MODULE"] = str(REPO / ("bindings-node" if lang == "node" else "bindings-wasm/pkg"))
        env["CRAWLQ_LANG"] = lang
        return ["node", str(WORKERS / "worker.js"), *args], env
    if lang == "php":
        return ["php", "-d", "extension=" + os.environ["CRAWLQ_PHP_EXTENSION"], str(WORKERS / "worker.php"), *args], env
    return [os.environ["CRAWLQ_RUST_WORKER"], *args], env


def check(condition: bool, message: str) -> None:
    if not condition:
        raise SystemExit(f"FAILED: {message}")
    print(f"  ok: {message}")


def read_ledger(path: Path) -> list[dict]:
    # a worker killed mid-write can leave a torn last line; everything before it counts
    entries = []
    if not path.exists():
        return entries
    for line in path.read_text().splitlines():
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return entries


def scenario_workers_of_every_language(redis: RedisServer, tmp: Path) -> None:
    print("scenario 1: Python seeds 20,000 URLs over 200 hosts; two workers per language, one of each killed mid-lease")
    name = f"interop-1-{os.getpid()}"
    q = crawlq.Queue(redis.url, name, lease_ttl=3.0, host_delay=HOST_DELAY_MS / 1000, shards=SHARDS)
    urls = [f"http://host{i % 200:03d}.interop.test/page/{i}" for i in range(20_000)]
    poison = [f"http://host{i:03d}.interop.test/poison" for i in range(0, 200, 10)]
    random.Random(7).shuffle(urls)
    report = q.seed(urls + poison)
    check(report.added == 20_020, f"seeded {report.added} items (20,000 URLs and 20 forced to fail)")

    procs: dict[str, subprocess.Popen] = {}
    ledgers: dict[str, Path] = {}
    for lang in LANGUAGES:
        for role, slow in (("survivor", "0"), ("victim", "150")):
            key = f"{lang}-{role}"
            ledgers[key] = tmp / f"{key}.jsonl"
            cmd, env = command(lang, "work", redis.url, name, str(ledgers[key]), slow)
            procs[key] = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    # kill each victim once it holds leases (it takes 150 ms per item)
    pending_victims = {f"{lang}-victim" for lang in LANGUAGES}
    deadline = time.monotonic() + 120
    while pending_victims and time.monotonic() < deadline:
        for key in sorted(pending_victims):
            entries = read_ledger(ledgers[key]) if ledgers[key].exists() else []
            leased = sum(e["ev"] == "lease" for e in entries)
            answered = sum(e["ev"] in ("ack", "nack") for e in entries)
            if leased >= 10 and leased > answered:
                procs[key].send_signal(signal.SIGKILL)
                procs[key].wait()
                pending_victims.discard(key)
                print(f"  killed {key} (SIGKILL) holding {leased - answered} leases")
        time.sleep(0.05)
    check(not pending_victims, "every victim was killed while holding leases")

    for key, proc in procs.items():
        if key.endswith("survivor"):
            try:
                out, err = proc.communicate(timeout=600)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise SystemExit(f"FAILED: {key} did not finish")
            check(proc.returncode == 0, f"{key} finished ({out.strip() or err.strip()[-200:]})")

    events = []
    per_lang = Counter()
    for key, path in ledgers.items():
        for e in read_ledger(path):
            e["worker"] = key
            events.append(e)
            if e["ev"] == "ack" and e["ok"]:
                per_lang[key.split("-")[0]] += 1
    leases = defaultdict(list)
    acks = defaultdict(list)
    nacks = defaultdict(list)
    url_of = {}
    for e in events:
        if e["ev"] == "lease":
            leases[e["id"]].append(e)
            url_of[e["id"]] = e["url"]
        elif e["ev"] == "ack":
            acks[e["id"]].append(e)
        else:
            nacks[e["id"]].append(e)

    stats = q.stats()
    print("  acked per language:", dict(sorted(per_lang.items())))
    check(all(per_lang[lang] > 0 for lang in LANGUAGES), "every language leased and acked items")
    check(stats["pending"] == 0 and stats["leased"] == 0, f"nothing pending or leased at the end ({stats['pending']}, {stats['leased']})")
    good = [i for i, u in url_of.items() if not u.endswith("/poison")]
    check(len(url_of) == 20_020, f"every seeded item was leased ({len(url_of)})")
    check(all(sum(a["ok"] for a in acks[i]) == 1 for i in good), "every URL was acked exactly once")
    check(stats["done"] == 20_000 == sum(sum(a["ok"] for a in acks[i]) for i in acks), f"stats done ({stats['done']}) equals the ledger's successful acks")
    dead = q.dead(limit=100)
    check(sorted(d["url"] for d in dead) == sorted(poison) and stats["dead"] == 20, "dead letters are exactly the 20 items the scenario forced")
    check(all(n["outcome"] == "dead" for i in nacks for n in nacks[i]), "every forced nack went to dead letters")

    redelivered = 0
    for i, ls in leases.items():
        ls.sort(key=lambda e: e["at"])
        for prev, nxt in zip(ls, ls[1:]):
            redelivered += 1
            if nxt["at"] < prev["exp"]:
                raise SystemExit(f"FAILED: item {i} re-leased at {nxt['at']} while leased until {prev['exp']}")
            if any(a["ok"] and a["token"] == prev["token"] for a in acks[i]):
                raise SystemExit(f"FAILED: item {i} re-leased after a successful ack")
    check(redelivered > 0, f"{redelivered} redeliveries, each only after the previous lease expired")
    check(stats["reclaimed_total"] >= redelivered, f"reclaimed_total ({stats['reclaimed_total']}) covers the redeliveries")
    check(stats["leased_total"] >= sum(len(ls) for ls in leases.values()), "leased_total covers every logged lease")

    gaps = []
    per_host = defaultdict(list)
    for ls in leases.values():
        for e in ls:
            per_host[e["host"]].append(e["at"])
    for times in per_host.values():
        times.sort()
        gaps.extend(b - a for a, b in zip(times, times[1:]))
    check(min(gaps) >= HOST_DELAY_MS, f"no host leased faster than its delay: smallest gap {min(gaps)} ms over {len(gaps)} pairs (delay {HOST_DELAY_MS} ms)")


def scenario_seeding_from_every_language(redis: RedisServer, tmp: Path) -> None:
    print("scenario 2: every language seeds overlapping batches at once; de-duplication holds across languages")
    name = f"interop-2-{os.getpid()}"
    crawlq.Queue(redis.url, name, shards=SHARDS)  # the count is fixed before anyone seeds
    base = [f"http://seed{i % 50}.interop.test/item/{i}" for i in range(3000)]
    # each language gets the same URLs, written differently (case, default port, fragment)
    variants = [
        lambda u: u,
        lambda u: u.replace("http://", "HTTP://"),
        lambda u: u.replace(".test/", ".test:80/"),
        lambda u: u + "#frag",
        lambda u: u.replace("seed", "SEED"),
    ]
    procs = []
    os.environ["CRAWLQ_START_AT"] = str(int(time.time() * 1000) + 3000)  # after every runtime has started
    for lang, variant in zip(LANGUAGES, variants):
        path = tmp / f"seed-{lang}.txt"
        shuffled = [variant(u) for u in base]
        random.Random(lang).shuffle(shuffled)
        path.write_text("\n".join(shuffled) + "\n")
        cmd, env = command(lang, "seed", redis.url, name, str(path))
        procs.append((lang, subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    added = 0
    for lang, proc in procs:
        out, err = proc.communicate(timeout=120)
        check(proc.returncode == 0, f"{lang} seeded ({err.strip()[-200:]})")
        report = json.loads(out.strip().splitlines()[-1])
        check(report["added"] + report["duplicates"] == 3000, f"{lang}: added {report['added']}, duplicates {report['duplicates']}")
        added += report["added"]
    del os.environ["CRAWLQ_START_AT"]
    stats = crawlq.Queue(redis.url, name).stats()
    check(added == 3000 and stats["seen"] == 3000 and stats["ready"] == 3000, f"3000 distinct items in all (added {added}, seen {stats['seen']})")


def scenario_bytes_across_languages(redis: RedisServer, tmp: Path) -> None:
    print("scenario 3: a byte-string payload written by one language is bytes in every other, and back")
    name = f"interop-3-{os.getpid()}"
    q = crawlq.Queue(redis.url, name, shards=SHARDS)
    body = bytes(range(256))
    q.seed([{"url": f"http://bytes{i}.interop.test/", "payload": {"body": body}} for i in range(len(LANGUAGES))])
    for lang in LANGUAGES:
        cmd, env = command(lang, "bytes", redis.url, name)
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        check(done.returncode == 0, f"{lang}: bytes worker failed ({done.stderr.strip()[-300:]})")
        check(json.loads(done.stdout.strip().splitlines()[-1]) == {"ok": True}, f"{lang}: the body arrived as the same bytes ({done.stdout.strip()})")
    dead = q.dead(limit=100)
    by = sorted(d["payload"]["by"] for d in dead)
    check(by == sorted(LANGUAGES), f"every language dead-lettered one item ({by})")
    check(all(d["payload"]["body"] == body[::-1] for d in dead), "every language's bytes read back as bytes in Python")
    q.close()


class ClusterTarget:
    """An existing Redis Cluster, given by the URL of one of its nodes."""

    def __init__(self, url: str) -> None:
        self.url = url

    def stop(self) -> None:
        pass


def main() -> None:
    global LANGUAGES, SHARDS
    started = time.monotonic()
    if "--cluster" in sys.argv:
        # the WebAssembly build drives one Redis server only (it refuses a cluster, typed)
        LANGUAGES = [lang for lang in LANGUAGES if lang != "wasm"]
        SHARDS = 8
        redis = ClusterTarget(sys.argv[sys.argv.index("--cluster") + 1])
        print(f"on the Redis Cluster at {redis.url}, one queue of {SHARDS} shards")
    else:
        redis = RedisServer()
    try:
        with tempfile.TemporaryDirectory(prefix="crawlq-interop-") as tmp:
            scenario_seeding_from_every_language(redis, Path(tmp))
            scenario_workers_of_every_language(redis, Path(tmp))
            scenario_bytes_across_languages(redis, Path(tmp))
    finally:
        redis.stop()
    print(f"interop: all scenarios passed in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
