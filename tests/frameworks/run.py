#!/usr/bin/env python3
"""Framework tests: real crawlers crawl the local test site (tests/frameworks/testsite.py) through
one crawlq frontier on a real redis-server, and the server's log is checked: every page fetched
exactly once, the pages that fail once with 503 retried, the 404s dead-lettered, no host
fetched faster than its politeness delay.

Frameworks (all by default):
  scrapy   3 `scrapy runspider` processes sharing one queue (crawlq.scrapy.Scheduler)
  crawlee  2 Node.js CheerioCrawler processes sharing one queue (crawlq/crawlee)
  crawlee-python  2 Crawlee for Python BeautifulSoupCrawler processes (crawlq.crawlee)
  laravel  2 `php artisan queue:work crawlq` workers of a minimal Laravel app (crawlq/laravel)

Runs with the Python that has the crawlq wheel and Scrapy installed, after the Node.js addon is
built in bindings-node/ (with its dev dependencies, Crawlee among them), with Debian's
php-laravel-framework installed and CRAWLQ_PHP_EXTENSION naming the built crawlq.so:

    python tests/frameworks/run.py [scrapy] [crawlee] [crawlee-python] [laravel]
"""

from __future__ import annotations

import os
import re
import shutil
import signal
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
from testsite import PAGES, Site, after_startup, check_fetches, expected_missing, host_gaps, lease_to_request  # noqa: E402

HOST_DELAY = 0.2  # seconds between two leases of one host, across every process
JITTER = 0.06  # how late after its lease a request may reach the site (all but 5% per host)
TIMEOUT = 240
# The last line of a Python traceback: `package.module.SomeError: message`.
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception)(: |$)")


def check(condition: bool, message: str) -> None:
    if not condition:
        raise SystemExit(f"FAILED: {message}")


def check_frontier(redis: RedisServer, queue: str, framework: str, reason: str) -> dict:
    q = crawlq.Queue(redis.url, queue)
    stats = q.stats()
    check(q.is_finished(), f"{framework}: the frontier is finished ({stats})")
    check(stats["done"] == PAGES, f"{framework}: {stats['done']} items done, wanted {PAGES}")
    dead = q.dead(limit=1000)
    missing = {f"{urlsplit(d['url']).hostname}{urlsplit(d['url']).path}" for d in dead if d["url"]}
    check(missing == expected_missing(), f"{framework}: dead letters {sorted(missing)}")
    reasons = Counter(d["last_error"] for d in dead)
    check(set(reasons) == {reason}, f"{framework}: dead-letter reasons {reasons}, wanted {reason!r}")
    check(stats["retried_total"] >= 1, f"{framework}: the 503 pages were retried ({stats})")
    q.close()
    return stats


def crawl_site(
    framework: str,
    redis: RedisServer,
    tmp: Path,
    commands: list[list[str]],
    env: dict[str, str],
    dead_reason: str,
    seed: list[str] | None = None,
    startup_lag: bool = False,
    stop_when_finished: bool = False,
    log_problems: re.Pattern[str] | None = None,
    expected_errors: re.Pattern[str] | None = None,
) -> None:
    """Serve the test site, run one crawler process per command (WORKER=0, 1, ... and the
    site's START_URL in the environment), wait for all of them and check the site's log and
    the frontier. `seed` (a command; `{START_URL}` in it is replaced) runs first, to
    completion, when the crawlers do not seed the start page themselves.
    `stop_when_finished`: the crawlers are workers that run until stopped, as under a process
    supervisor; once the frontier is finished they get SIGTERM and must exit with 0.
    `startup_lag`: see testsite.check_fetches. `log_problems`: a crawler's log line that
    matches it fails the test. A Python traceback fails it too, unless `expected_errors` is
    given and matches the exception line of every traceback (a framework that logs the
    tracebacks of the 404s and 503s it handles)."""
    site = Site(tmp / f"{framework}-site.log").start()
    queue = f"{framework}-site"
    env = {**os.environ, **env, "CRAWLQ_URL": redis.url, "CRAWLQ_QUEUE": queue, "START_URL": site.url(0)}
    started = time.monotonic()
    if seed:
        seed = [arg.replace("{START_URL}", site.url(0)) for arg in seed]
        done = subprocess.run(seed, env=env, cwd=tmp, capture_output=True, text=True, timeout=60)
        check(done.returncode == 0, f"{framework}: seeding failed:\n{done.stdout}{done.stderr}")
    crawlers = []
    for worker, command in enumerate(commands):
        log_path = tmp / f"{framework}-{worker}.log"
        with open(log_path, "w") as log:
            proc = subprocess.Popen(command, env={**env, "WORKER": str(worker)}, cwd=tmp, stdout=log, stderr=subprocess.STDOUT)
        crawlers.append((proc, log_path))
    if stop_when_finished:
        stop_at_finish(framework, redis, queue, [proc for proc, _ in crawlers], started)
    codes = []
    for proc, log_path in crawlers:
        try:
            codes.append(proc.wait(timeout=max(1.0, TIMEOUT - (time.monotonic() - started))))
        except subprocess.TimeoutExpired:
            for p, _ in crawlers:
                p.kill()
            site.stop()
            raise SystemExit(f"FAILED: {framework}: a crawler did not finish in {TIMEOUT} s; its log:\n{log_path.read_text()[-3000:]}")
    elapsed = time.monotonic() - started
    site.stop()
    for (proc, log_path), code in zip(crawlers, codes):
        text = log_path.read_text()
        check(code == 0, f"{framework}: a crawler exited with {code}:\n{text[-3000:]}")
        if expected_errors is None:
            check("Traceback" not in text, f"{framework}: a crawler logged a traceback:\n{text[-3000:]}")
        else:
            raised = [line for line in text.splitlines() if EXCEPTION_LINE.match(line)]
            unexpected = [line for line in raised if not expected_errors.search(line)]
            check(not unexpected, f"{framework}: a crawler logged an unexpected error:\n" + "\n".join(unexpected[:5]))
        bad = [line for line in text.splitlines() if log_problems and log_problems.search(line)]
        check(not bad, f"{framework}: a crawler logged a problem:\n" + "\n".join(bad[:5]))
    requests = site.requests()
    problems = check_fetches(requests, HOST_DELAY, JITTER, startup_lag)
    check(not problems, f"{framework}: " + "; ".join(problems[:10]))
    per_worker = Counter(r["agent"] for r in requests)
    check(len(per_worker) == len(commands), f"{framework}: every process fetched pages ({dict(per_worker)})")
    stats = check_frontier(redis, queue, framework, dead_reason)
    checked = after_startup(requests) if startup_lag else requests
    fetch_gaps = host_gaps(checked, "t")
    lease_gaps = host_gaps(requests, "leased_at")
    latencies = sorted(lease_to_request(r) for r in checked)
    late = sum(1 for x in latencies if x > JITTER)
    print(
        f"{framework}: {len(commands)} processes crawled {len(requests)} URLs in {elapsed:.1f} s "
        f"(per process {dict(sorted(per_worker.items()))}); each page once, "
        f"{stats['retried_total']} retried, {stats['dead']} dead (404); "
        f"smallest gap per host between leases {', '.join(f'{g[0] * 1000:.0f}' for g in lease_gaps.values())} ms, "
        f"between fetches {', '.join(f'{g[0] * 1000:.0f}' for g in fetch_gaps.values())} ms "
        f"(median {', '.join(f'{g[len(g) // 2] * 1000:.0f}' for g in fetch_gaps.values())} ms; delay {HOST_DELAY * 1000:.0f} ms); "
        f"lease to request median {latencies[len(latencies) // 2] * 1000:.1f} ms, "
        f"99th percentile {latencies[int(len(latencies) * 0.99)] * 1000:.1f} ms, "
        f"{late} later than {JITTER * 1000:.0f} ms"
        f"{' (requests a process leased before its first one to the host arrived left out)' if startup_lag else ''}"
    )


def stop_at_finish(framework: str, redis: RedisServer, queue: str, procs: list[subprocess.Popen], started: float) -> None:
    """Wait until the frontier is finished (two readings 0.5 s apart agree), then SIGTERM every
    process; a process that ends before that has failed."""
    q = crawlq.Queue(redis.url, queue)
    try:
        confirmed = 0
        while confirmed < 2:
            check(time.monotonic() - started < TIMEOUT, f"{framework}: the frontier was not finished in {TIMEOUT} s ({q.stats()})")
            check(all(p.poll() is None for p in procs), f"{framework}: a worker ended before the crawl did")
            confirmed = confirmed + 1 if q.is_finished() else 0
            time.sleep(0.5)
    finally:
        q.close()
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)


def run_scrapy(redis: RedisServer, tmp: Path) -> None:
    spider = [sys.executable, "-m", "scrapy", "runspider", str(HERE / "scrapy" / "site_spider.py")]
    env = {"HOST_DELAY": str(HOST_DELAY), "PYTHONPATH": str(HERE / "scrapy")}
    crawl_site("scrapy", redis, tmp, [spider] * 3, env, "HTTP 404")


def run_crawlee(redis: RedisServer, tmp: Path) -> None:
    node_package = REPO / "bindings-node"
    crawler = ["node", str(HERE / "crawlee" / "site_crawler.js")]
    env = {
        "HOST_DELAY_MS": str(round(HOST_DELAY * 1000)),
        "CRAWLQ_NODE": str(node_package),
        "NODE_PATH": str(node_package / "node_modules"),
        "CRAWLEE_STORAGE_DIR": str(tmp / "crawlee-storage"),
    }
    # The requests a crawler process leases before its first one to a host arrives leave
    # 30-200 ms after their lease (Crawlee loads its HTTP client on first use and opens the
    # connection; later requests leave 2-15 ms after theirs), so they are not checked for
    # lateness; their lease times are still checked.
    crawl_site("crawlee", redis, tmp, [crawler] * 2, env, "HTTP 404", startup_lag=True)


def run_crawlee_python(redis: RedisServer, tmp: Path) -> None:
    crawler = [sys.executable, str(HERE / "crawlee_python" / "site_crawler.py")]
    env = {"HOST_DELAY": str(HOST_DELAY), "CRAWLEE_STORAGE_DIR": str(tmp / "crawlee-python-storage")}
    # Start-up lag as for Crawlee (JavaScript): up to ~75 ms on a busy machine.
    # Crawlee does not hand a 404's error to its queue on Python 3.11 (see crawlq.crawlee).
    reason = "failed: not retried (a client error status, no_retry, or max_request_retries 0)"
    if sys.version_info >= (3, 12):
        reason = "Client error status code returned (status code: 404)."
    crawl_site(
        "crawlee-python", redis, tmp, [crawler] * 2, env, reason, startup_lag=True,
        # Crawlee logs the traceback of each 404 it gives up on and each 503 it retries.
        expected_errors=re.compile(r"^crawlee\.errors\.Http(Client)?StatusCodeError: .*\(status code: (404|503)\)\.$"),
    )


def check_laravel_installed() -> str:
    """The built PHP extension's path, once Laravel and it are there."""
    extension = os.environ.get("CRAWLQ_PHP_EXTENSION", "")
    check(Path(extension).is_file(), f"laravel: CRAWLQ_PHP_EXTENSION={extension!r} is not the built crawlq.so")
    check(Path("/usr/share/php/Illuminate/autoload.php").is_file(), "laravel: apt-get install php-laravel-framework (tools/setup.sh does)")
    return extension


def run_laravel(redis: RedisServer, tmp: Path) -> None:
    extension = check_laravel_installed()
    artisan = ["php", "-d", f"extension={extension}", str(HERE / "laravel" / "artisan")]
    env = {"HOST_DELAY": str(HOST_DELAY), "LARAVEL_STORAGE": str(tmp / "laravel-storage")}
    # --sleep=0: a worker that found no due host waits in Redis (block_for), not in a sleep.
    worker = [*artisan, "queue:work", "crawlq", "--sleep=0", "--tries=3", "--timeout=30"]
    crawl_site(
        "laravel", redis, tmp, [worker] * 2, env, "HTTP 404",
        seed=[*artisan, "crawl:seed", "{START_URL}"], stop_when_finished=True,
        # Laravel reports each exception a job raised: only the 503s may be there.
        log_problems=re.compile(r"PHP (Fatal|Warning|Notice|Deprecated)|\.(ERROR|CRITICAL|WARNING): (?!HTTP 503 )|crawlq: "),
    )


def run_adapter_roundtrip(redis: RedisServer, tmp: Path) -> None:
    from roundtrip import run_roundtrip

    check_laravel_installed()
    run_roundtrip(redis.url, tmp, check)


FRAMEWORKS = {
    "scrapy": run_scrapy,
    "crawlee": run_crawlee,
    "crawlee-python": run_crawlee_python,
    "laravel": run_laravel,
    "roundtrip": run_adapter_roundtrip,
}


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
