#!/usr/bin/env python3
"""Framework tests: real crawlers crawl the local test site (tests/frameworks/testsite.py) through
one crawlq frontier on a real redis-server, and the server's log is checked: every page fetched
exactly once, the pages that fail once with 503 retried, the 404s dead-lettered, no host
fetched faster than its politeness delay.

Frameworks (all by default):
  scrapy   3 `scrapy runspider` processes sharing one queue (crawlq.scrapy.Scheduler)

Runs with the Python that has the crawlq wheel and Scrapy installed:

    python tests/frameworks/run.py [scrapy]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "bindings-python" / "tests"))
sys.path.insert(0, str(HERE))

import crawlq  # noqa: E402
from conftest import RedisServer  # noqa: E402
from testsite import PAGES, Site, check_fetches, expected_missing, host_gaps  # noqa: E402

HOST_DELAY = 0.2  # seconds between two leases of one host, across every process
JITTER = 0.06  # how much closer two fetches may reach the site (lease-to-request time varies)
TIMEOUT = 240


def check(condition: bool, message: str) -> None:
    if not condition:
        raise SystemExit(f"FAILED: {message}")


def check_frontier(redis: RedisServer, queue: str, framework: str) -> dict:
    q = crawlq.Queue(redis.url, queue)
    stats = q.stats()
    check(q.is_finished(), f"{framework}: the frontier is finished ({stats})")
    check(stats["done"] == PAGES, f"{framework}: {stats['done']} items done, wanted {PAGES}")
    dead = q.dead(limit=1000)
    missing = {f"{urlsplit(d['url']).hostname}{urlsplit(d['url']).path}" for d in dead if d["url"]}
    check(missing == expected_missing(), f"{framework}: dead letters {sorted(missing)}")
    reasons = Counter(d["last_error"] for d in dead)
    check(set(reasons) == {"HTTP 404"}, f"{framework}: dead-letter reasons {reasons}")
    check(stats["retried_total"] >= 1, f"{framework}: the 503 pages were retried ({stats})")
    q.close()
    return stats


def run_scrapy(redis: RedisServer, tmp: Path) -> None:
    processes = 3
    site = Site(tmp / "scrapy-site.log").start()
    queue = "scrapy-site"
    env = {
        **os.environ,
        "CRAWLQ_URL": redis.url,
        "CRAWLQ_QUEUE": queue,
        "START_URL": site.url(0),
        "HOST_DELAY": str(HOST_DELAY),
        "PYTHONPATH": str(HERE / "scrapy"),
    }
    started = time.monotonic()
    spiders = []
    for worker in range(processes):
        log = open(tmp / f"scrapy-{worker}.log", "w")
        spiders.append(
            (
                subprocess.Popen(
                    [sys.executable, "-m", "scrapy", "runspider", str(HERE / "scrapy" / "site_spider.py")],
                    env={**env, "WORKER": str(worker)},
                    cwd=tmp,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                ),
                tmp / f"scrapy-{worker}.log",
            )
        )
    codes = []
    for proc, log in spiders:
        try:
            codes.append(proc.wait(timeout=TIMEOUT - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            for p, _ in spiders:
                p.kill()
            raise SystemExit(f"FAILED: scrapy: a spider did not finish in {TIMEOUT} s; its log:\n{log.read_text()[-3000:]}")
    elapsed = time.monotonic() - started
    site.stop()
    for (proc, log), code in zip(spiders, codes):
        text = log.read_text()
        check(code == 0, f"scrapy: a spider exited with {code}:\n{text[-3000:]}")
        check("Traceback" not in text, f"scrapy: a spider logged a traceback:\n{text[-3000:]}")
    requests = site.requests()
    problems = check_fetches(requests, HOST_DELAY, JITTER)
    check(not problems, "scrapy: " + "; ".join(problems[:10]))
    per_worker = Counter(r["agent"] for r in requests)
    check(len(per_worker) == processes, f"scrapy: every process fetched pages ({dict(per_worker)})")
    stats = check_frontier(redis, queue, "scrapy")
    fetch_gaps = host_gaps(requests, "t")
    lease_gaps = host_gaps(requests, "leased_at")
    print(
        f"scrapy: {processes} spider processes crawled {len(requests)} URLs in {elapsed:.1f} s "
        f"(per process {dict(sorted(per_worker.items()))}); each page once, "
        f"{stats['retried_total']} retried, {stats['dead']} dead (404); "
        f"smallest gap per host between leases {', '.join(f'{g[0] * 1000:.0f}' for g in lease_gaps.values())} ms, "
        f"between fetches {', '.join(f'{g[0] * 1000:.0f}' for g in fetch_gaps.values())} ms "
        f"(median {', '.join(f'{g[len(g) // 2] * 1000:.0f}' for g in fetch_gaps.values())} ms; delay {HOST_DELAY * 1000:.0f} ms)"
    )


FRAMEWORKS = {"scrapy": run_scrapy}


def main() -> None:
    wanted = sys.argv[1:] or list(FRAMEWORKS)
    for name in wanted:
        check(name in FRAMEWORKS, f"unknown framework {name}; one of {', '.join(FRAMEWORKS)}")
    redis = RedisServer()
    tmp = Path(tempfile.mkdtemp(prefix="crawlq-frameworks-"))
    try:
        for name in wanted:
            FRAMEWORKS[name](redis, tmp)
    except BaseException:
        print(f"frameworks: logs kept in {tmp}", file=sys.stderr)
        raise
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    finally:
        redis.stop()
    print("frameworks: all passed")


if __name__ == "__main__":
    main()
