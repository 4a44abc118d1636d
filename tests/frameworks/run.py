#!/usr/bin/env python3
"""Framework tests: real crawlers crawl the local test site (tests/frameworks/testsite.py) through
one crawlq frontier on a real redis-server, and the server's log is checked: every page fetched
exactly once, the pages that fail once with 503 retried, the 404s dead-lettered, no host
fetched faster than its politeness delay.

Runs (all by default):
  scrapy   3 `scrapy runspider` processes sharing one queue (crawlq.scrapy.Scheduler)
  crawlee  2 Node.js CheerioCrawler processes sharing one queue (crawlq/crawlee)
  crawlee-python  2 Crawlee for Python BeautifulSoupCrawler processes (crawlq.crawlee)
  laravel  2 `php artisan queue:work crawlq` workers of a minimal Laravel app (crawlq/laravel)
  roundtrip   a request through every ordered pair of adapters and back (roundtrip.py)
  mixed       one process of each framework on ONE queue over the variant site (trailing-dot
              hosts, paths differing in case, query orders): each page once, every framework
              fetching pages the others seeded, politeness across all four
  mixed-kill  the same, the Crawlee process killed (SIGKILL) mid-crawl: nothing lost
  redirects   2 Crawlee and 2 Crawlee for Python processes on the redirect site
              (testsite.RedirectSite): each redirect followed after its host's turn (JS) or
              seeded into the frontier (Python); every request to a host its delay apart
  polite      3 Scrapy processes on the politeness site (testsite.PoliteSite): a host answering
              in 1.5 s, one answering 429 with Retry-After, one with a robots.txt Crawl-delay;
              in-flight limit 1 and the delay after the answer: the site's log shows one
              request at a time per host, each at least the delay after the previous answer
  held        2 Crawlee and 2 Crawlee for Python processes reading robots.txt on the held site
              (testsite.HeldSite): a host whose robots.txt answers in 1.5 s; the requests
              leased meanwhile reach it spaced by its delay, not in a burst when it arrives

Runs with the Python that has the crawlq wheel and Scrapy installed, after the Node.js addon is
built in bindings-node/ (with its dev dependencies, Crawlee among them), with Debian's
php-laravel-framework installed and CRAWLQ_PHP_EXTENSION naming the built crawlq.so:

    python tests/frameworks/run.py [scrapy] [crawlee] [crawlee-python] [laravel] [roundtrip] [mixed] [mixed-kill] [polite] [redirects] [held]
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
from testsite import (  # noqa: E402
    CRAWL_DELAY,
    FLAKY,
    HELD_HOST,
    PAGES,
    RATE_HOST,
    ROBOTS_HOST,
    SLOW_HOST,
    HeldSite,
    PoliteSite,
    RedirectSite,
    Site,
    after_startup,
    check_fetches,
    check_held,
    check_politeness,
    check_redirects,
    expected_fetches,
    expected_missing,
    host_gaps,
    lease_to_request,
)

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
            proc = subprocess.Popen(command, env=worker_env(env, worker), cwd=tmp, stdout=log, stderr=subprocess.STDOUT)
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
        check_log(framework, text, expected_errors, log_problems)
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


def check_log(framework: str, text: str, expected_errors: re.Pattern[str] | None, log_problems: re.Pattern[str] | None) -> None:
    """A crawler's log has no traceback (but those `expected_errors` matches the exception line
    of), no line `log_problems` matches, and no request it could not read."""
    if expected_errors is None:
        check("Traceback" not in text, f"{framework}: a crawler logged a traceback:\n{text[-3000:]}")
    else:
        raised = [line for line in text.splitlines() if EXCEPTION_LINE.match(line)]
        unexpected = [line for line in raised if not expected_errors.search(line)]
        check(not unexpected, f"{framework}: a crawler logged an unexpected error:\n" + "\n".join(unexpected[:5]))
    bad = [line for line in text.splitlines() if (log_problems and log_problems.search(line)) or "undecodable" in line]
    check(not bad, f"{framework}: a crawler logged a problem:\n" + "\n".join(bad[:5]))


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


def worker_env(env: dict[str, str], worker: int) -> dict[str, str]:
    """The environment of crawler process number `worker`: WORKER set, and a Crawlee storage
    directory of its own (two Crawlee processes purging one directory at start race on it)."""
    own = {**env, "WORKER": str(worker)}
    if "CRAWLEE_STORAGE_DIR" in own:
        own["CRAWLEE_STORAGE_DIR"] = f"{own['CRAWLEE_STORAGE_DIR']}-{worker}"
    return own


def crawler_process(framework: str, tmp: Path) -> dict:
    """How one crawler process of a framework runs: its command, its environment (besides
    CRAWLQ_URL, CRAWLQ_QUEUE, START_URL and WORKER), the User-Agent prefix it fetches with, the
    dead-letter reason it gives a 404, and what its log may contain."""
    node_package = REPO / "bindings-node"
    if framework == "scrapy":
        return {
            "command": [sys.executable, "-m", "scrapy", "runspider", str(HERE / "scrapy" / "site_spider.py")],
            "env": {"HOST_DELAY": str(HOST_DELAY), "PYTHONPATH": str(HERE / "scrapy")},
            "agent": "site-spider/",
            "reason_404": "HTTP 404",
        }
    if framework == "crawlee":
        return {
            "command": ["node", str(HERE / "crawlee" / "site_crawler.js")],
            "env": {
                "HOST_DELAY_MS": str(round(HOST_DELAY * 1000)),
                "CRAWLQ_NODE": str(node_package),
                "NODE_PATH": str(node_package / "node_modules"),
                "CRAWLEE_STORAGE_DIR": str(tmp / "crawlee-storage"),
            },
            "agent": "site-crawler/",
            "reason_404": "HTTP 404",
        }
    if framework == "crawlee-python":
        # Crawlee does not hand a 404's error to its queue on Python 3.11 (see crawlq.crawlee).
        reason = "failed: not retried (a client error status, no_retry, or max_request_retries 0)"
        if sys.version_info >= (3, 12):
            reason = "Client error status code returned (status code: 404)."
        return {
            "command": [sys.executable, str(HERE / "crawlee_python" / "site_crawler.py")],
            "env": {"HOST_DELAY": str(HOST_DELAY), "CRAWLEE_STORAGE_DIR": str(tmp / "crawlee-python-storage")},
            "agent": "site-crawler-py/",
            "reason_404": reason,
            # Crawlee logs the traceback of each 404 it gives up on and each 503 it retries.
            "expected_errors": re.compile(r"^crawlee\.errors\.Http(Client)?StatusCodeError: .*\(status code: (404|503)\)\.$"),
        }
    extension = check_laravel_installed()
    artisan = ["php", "-d", f"extension={extension}", str(HERE / "laravel" / "artisan")]
    return {
        # --sleep=0: a worker that found no due host waits in Redis (block_for), not in a sleep.
        "command": [*artisan, "queue:work", "crawlq", "--sleep=0", "--tries=3", "--timeout=30"],
        "env": {"HOST_DELAY": str(HOST_DELAY), "LARAVEL_STORAGE": str(tmp / "laravel-storage")},
        "agent": "site-worker/",
        "reason_404": "HTTP 404",
        "seed": [*artisan, "crawl:seed", "{START_URL}"],
        # a worker runs until stopped, as under a process supervisor
        "stop_when_finished": True,
        # Laravel reports each exception a job raised: only the 503s may be there.
        "log_problems": re.compile(r"PHP (Fatal|Warning|Notice|Deprecated)|\.(ERROR|CRITICAL|WARNING): (?!HTTP 503 )|crawlq: "),
    }


def run_scrapy(redis: RedisServer, tmp: Path) -> None:
    spider = crawler_process("scrapy", tmp)
    crawl_site("scrapy", redis, tmp, [spider["command"]] * 3, spider["env"], spider["reason_404"])


def run_crawlee(redis: RedisServer, tmp: Path) -> None:
    crawler = crawler_process("crawlee", tmp)
    # The requests a crawler process leases before its first one to a host arrives leave
    # 30-200 ms after their lease (Crawlee loads its HTTP client on first use and opens the
    # connection; later requests leave 2-15 ms after theirs), so they are not checked for
    # lateness; their lease times are still checked.
    crawl_site("crawlee", redis, tmp, [crawler["command"]] * 2, crawler["env"], crawler["reason_404"], startup_lag=True)


def run_crawlee_python(redis: RedisServer, tmp: Path) -> None:
    crawler = crawler_process("crawlee-python", tmp)
    # Start-up lag as for Crawlee (JavaScript): up to ~75 ms on a busy machine.
    crawl_site(
        "crawlee-python", redis, tmp, [crawler["command"]] * 2, crawler["env"], crawler["reason_404"], startup_lag=True,
        expected_errors=crawler["expected_errors"],
    )


def check_laravel_installed() -> str:
    """The built PHP extension's path, once Laravel and it are there."""
    extension = os.environ.get("CRAWLQ_PHP_EXTENSION", "")
    check(Path(extension).is_file(), f"laravel: CRAWLQ_PHP_EXTENSION={extension!r} is not the built crawlq.so")
    check(Path("/usr/share/php/Illuminate/autoload.php").is_file(), "laravel: apt-get install php-laravel-framework (tools/setup.sh does)")
    return extension


def run_laravel(redis: RedisServer, tmp: Path) -> None:
    worker = crawler_process("laravel", tmp)
    crawl_site(
        "laravel", redis, tmp, [worker["command"]] * 2, worker["env"], worker["reason_404"],
        seed=worker["seed"], stop_when_finished=True, log_problems=worker["log_problems"],
    )
    # Laravel's failed-job commands on the finished frontier (the driver's failed-job store):
    # the 404s are listed as the app's job, and one retried is queued again
    artisan = worker["seed"][:4]
    env = {**os.environ, **worker["env"], "CRAWLQ_URL": redis.url, "CRAWLQ_QUEUE": "laravel-site"}
    q = crawlq.Queue(redis.url, "laravel-site")
    dead = q.dead(limit=1000)
    listed = subprocess.run([*artisan, "queue:failed"], env=env, cwd=tmp, capture_output=True, text=True, timeout=60)
    rows = [line for line in listed.stdout.splitlines() if "App\\Jobs\\FetchPage" in line]
    check(listed.returncode == 0 and len(rows) == len(dead) > 0 and all(any(f"| {d['id']} " in r for r in rows) for d in dead),
          f"laravel: queue:failed lists the {len(dead)} dead letters:\n{listed.stdout}{listed.stderr}")
    retried = subprocess.run([*artisan, "queue:retry", dead[0]["id"]], env=env, cwd=tmp, capture_output=True, text=True, timeout=60)
    stats = q.stats()
    check(retried.returncode == 0 and (stats["ready"], stats["dead"]) == (1, len(dead) - 1),
          f"laravel: queue:retry queued the dead letter again ({stats}):\n{retried.stdout}{retried.stderr}")
    print(f"laravel: queue:failed listed the {len(dead)} dead letters; queue:retry queued one again")
    q.close()


MIXED = ["scrapy", "crawlee", "crawlee-python", "laravel"]


def framework_of(agent: str, processes: dict[str, dict]) -> str:
    return next(name for name, p in processes.items() if agent.startswith(p["agent"]))


def mixed_crawl(redis: RedisServer, tmp: Path, victim: str | None = None) -> None:
    """All four frameworks at once on ONE queue (sort_query on) over the variant site: links
    spell hosts with a trailing dot, pages differ only in the case of their paths, query pages are
    linked in both parameter orders. Each link carries who seeded it (an X-Seeded-By header in
    its request, which the site logs with the fetcher's User-Agent). With `victim`, that
    framework's process is killed (SIGKILL) mid-crawl: its leases come back when they expire
    (a short lease time for this run) and nothing is lost."""
    name = "mixed" if victim is None else f"mixed-kill-{victim}"
    site = Site(tmp / f"{name}-site.log", variants=True).start()
    queue = f"{name}-site"
    lease_ttl = 30.0 if victim is None else 2.0
    processes = {framework: crawler_process(framework, tmp) for framework in MIXED}
    seeder = crawlq.Queue(redis.url, queue, sort_query=True)
    seeder.seed([site.url(0)])  # the start page: every crawler's own seed of it is a duplicate
    started = time.monotonic()
    running: dict[str, tuple[subprocess.Popen, Path]] = {}
    for framework, spec in processes.items():
        env = {**os.environ, **spec["env"], "CRAWLQ_URL": redis.url, "CRAWLQ_QUEUE": queue,
               "START_URL": site.url(0), "WORKER": "0", "LEASE_TTL": str(lease_ttl)}
        log_path = tmp / f"{name}-{framework}.log"
        with open(log_path, "w") as log:
            running[framework] = (subprocess.Popen(spec["command"], env=env, cwd=tmp, stdout=log, stderr=subprocess.STDOUT), log_path)
    killed_at = None
    try:
        confirmed = 0
        while confirmed < 2:
            check(time.monotonic() - started < TIMEOUT, f"{name}: the frontier was not finished in {TIMEOUT} s ({seeder.stats()})")
            if victim is not None and killed_at is None:
                # once it has fetched a while and waits for a slow page: it holds that lease
                mine = [r for r in site.requests() if r["agent"].startswith(processes[victim]["agent"])]
                waiting = sum(n for agent, n in site.in_flight.items() if agent.startswith(processes[victim]["agent"]))
                if len(mine) >= 30 and waiting:
                    running[victim][0].kill()
                    running[victim][0].wait()
                    killed_at = time.time()
                    print(f"{name}: killed the {victim} process (SIGKILL) after {len(mine)} fetches, waiting for "
                          f"{waiting} answer(s); {seeder.stats()['leased']} lease(s) held by all processes")
            for framework, (proc, log_path) in running.items():
                if framework != victim and not processes[framework].get("stop_when_finished"):
                    continue  # a crawler ends by itself once the frontier is finished
                if framework != victim:
                    check(proc.poll() is None, f"{name}: the {framework} worker ended before the crawl did:\n{log_path.read_text()[-3000:]}")
            confirmed = confirmed + 1 if seeder.is_finished() else 0
            time.sleep(0.5)
        elapsed = time.monotonic() - started
        for framework, (proc, _) in running.items():
            if processes[framework].get("stop_when_finished") and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for framework, (proc, log_path) in running.items():
            try:
                code = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                raise SystemExit(f"FAILED: {name}: {framework} did not end after the crawl; its log:\n{log_path.read_text()[-3000:]}")
            text = log_path.read_text()
            if framework == victim:
                check(code == -signal.SIGKILL, f"{name}: the {victim} process was killed ({code})")
                continue
            check(code == 0, f"{name}: {framework} exited with {code}:\n{text[-3000:]}")
            check_log(f"{name} {framework}", text, processes[framework].get("expected_errors"), processes[framework].get("log_problems"))
    finally:
        for proc, _ in running.values():
            if proc.poll() is None:
                proc.kill()
        site.stop()

    requests = site.requests()
    if victim is None:
        problems = check_fetches(requests, HOST_DELAY, JITTER, startup_lag=True, variants=True)
        check(not problems, f"{name}: " + "; ".join(problems[:10]))
        again: list[str] = []
    else:
        # at least once: every page fetched with its final status, a page fetched twice only when
        # the killed process had fetched it (its answer never came) and it came back after the kill
        check(killed_at is not None, f"{name}: the {victim} process was never seen waiting for a page to kill it")
        victim_fetched = {f"{r['host']}{r['path']}" for r in requests if r["agent"].startswith(processes[victim]["agent"])}
        by_url: dict[str, list[dict]] = {}
        for r in requests:
            by_url.setdefault(f"{r['host']}{r['path']}", []).append(r)
        expected = expected_fetches(variants=True)
        for url, want in expected.items():
            got = [r["status"] for r in by_url.get(url, [])]
            check(got[-1:] == want[-1:], f"{name}: {url} fetched {got}, wanted {want} (at least once)")
            if len(got) > len(want):
                check(url in victim_fetched, f"{name}: {url} fetched {got} though the killed process never had it")
        check(not set(by_url) - set(expected), f"{name}: fetched what no page links: {sorted(set(by_url) - set(expected))[:5]}")
        again = [url for url, rs in by_url.items() if len(rs) > len(expected.get(url, []))]
        check(again, f"{name}: the page the killed process was fetching was fetched again (its lease came back)")
        lease_problems = [p for p in check_fetches(requests, HOST_DELAY, 1e9, variants=True) if "leases" in p]
        check(not lease_problems, f"{name}: " + "; ".join(lease_problems[:5]))

    # the frontier: finished, nothing lost, dead letters only the 404s, none undecodable
    stats = seeder.stats()
    pages = [url for url, statuses in expected_fetches(variants=True).items() if statuses[-1] == 200]
    check(stats["done"] == len(pages), f"{name}: {stats['done']} items done, wanted {len(pages)}")
    dead = seeder.dead(limit=1000)
    missing = {f"{urlsplit(d['url']).hostname}{urlsplit(d['url']).path}" for d in dead}
    check(missing == expected_missing(), f"{name}: dead letters {sorted(missing)}")
    reasons = Counter(d["last_error"] for d in dead)
    allowed = {p["reason_404"] for p in processes.values()}
    check(set(reasons) <= allowed, f"{name}: dead-letter reasons {reasons}, wanted some of {allowed}")
    check(stats["retried_total"] >= len(FLAKY), f"{name}: the 503 pages were retried ({stats})")
    seeder.close()

    # who seeded what, who fetched it
    pairs = Counter((r["seeded_by"], framework_of(r["agent"], processes)) for r in requests)
    per_framework = Counter(framework_of(r["agent"], processes) for r in requests)
    check(set(per_framework) == set(MIXED), f"{name}: every framework fetched pages ({dict(per_framework)})")
    if victim is None:
        # Who fetches a page is chance: a framework that fetches 1 page in 10 misses all 27
        # pages of a seeder in about 1 run of 20. Each framework must fetch pages others
        # seeded and see its own seeds fetched by others; that every pair reads every other's
        # requests is the round trip's deterministic check (roundtrip.py, all 12 pairs).
        others_fetched = [b for b in MIXED if not any(pairs[(a, b)] for a in MIXED if a != b)]
        check(not others_fetched, f"{name}: {others_fetched} fetched no page another framework seeded ({dict(pairs)})")
        unread = [a for a in MIXED if not any(pairs[(a, b)] for b in MIXED if b != a)]
        check(not unread, f"{name}: no page {unread} seeded was fetched by another framework ({dict(pairs)})")
    lease_gaps = host_gaps(requests, "leased_at")
    table = ", ".join(f"{a}->{b} {pairs[(a, b)]}" for a in MIXED for b in MIXED if a != b)
    print(
        f"{name}: 4 frameworks crawled {len(requests)} URLs in {elapsed:.1f} s (fetched by {dict(per_framework)}); "
        + (f"each page once" if victim is None else f"{len(again)} page(s) fetched again after the kill, none lost")
        + f"; {stats['retried_total']} retried, {stats['dead']} dead (404: {dict(reasons)}); seeded by -> fetched by: {table}; "
        f"smallest gap per host between leases {', '.join(f'{g[0] * 1000:.0f}' for g in lease_gaps.values())} ms (delay {HOST_DELAY * 1000:.0f} ms)"
    )


def run_mixed(redis: RedisServer, tmp: Path) -> None:
    mixed_crawl(redis, tmp)


def run_mixed_kill(redis: RedisServer, tmp: Path) -> None:
    mixed_crawl(redis, tmp, victim="crawlee")


def run_to_the_end(name: str, tmp: Path, runs: list[tuple[list[str], dict[str, str]]]) -> list[str]:
    """Run each (command, environment) as a process in `tmp` at once, each logging to
    `<name>-<i>.log`, and wait for all of them (TIMEOUT in all); fail on one that exits with an
    error or does not finish (the others are killed). Returns their logs."""
    started = time.monotonic()
    crawlers = []
    try:
        for i, (command, env) in enumerate(runs):
            log_path = tmp / f"{name}-{i}.log"
            with open(log_path, "w") as log:
                proc = subprocess.Popen(command, env=env, cwd=tmp, stdout=log, stderr=subprocess.STDOUT)
            crawlers.append((proc, log_path))
        logs = []
        for proc, log_path in crawlers:
            try:
                code = proc.wait(timeout=max(1.0, TIMEOUT - (time.monotonic() - started)))
            except subprocess.TimeoutExpired:
                raise SystemExit(f"FAILED: {name}: a crawler did not finish in {TIMEOUT} s; its log:\n{log_path.read_text()[-3000:]}")
            text = log_path.read_text()
            check(code == 0, f"{name}: a crawler exited with {code}:\n{text[-3000:]}")
            logs.append(text)
        return logs
    finally:
        for proc, _ in crawlers:
            if proc.poll() is None:
                proc.kill()


def run_polite(redis: RedisServer, tmp: Path) -> None:
    """3 Scrapy processes crawl the politeness site with an in-flight limit of 1 per host and
    the delay counted after the answer, obeying robots.txt."""
    site = PoliteSite(tmp / "polite-site.log").start()
    queue = "polite-site"
    spider = crawler_process("scrapy", tmp)
    env = {**os.environ, **spider["env"], "CRAWLQ_URL": redis.url, "CRAWLQ_QUEUE": queue, "START_URL": site.start_url(),
           "POLITE": "1"}
    started = time.monotonic()
    try:
        logs = run_to_the_end("polite", tmp, [(spider["command"], worker_env(env, w)) for w in range(3)])
    finally:
        site.stop()
    for text in logs:
        check_log("polite", text, None, None)
    elapsed = time.monotonic() - started
    requests = site.requests()
    problems, figures = check_politeness(requests, HOST_DELAY)
    check(not problems, "polite: " + "; ".join(problems[:10]))
    q = crawlq.Queue(redis.url, queue)
    robots = q.host_info(ROBOTS_HOST)
    check((robots["delay"], robots["delay_from_robots"]) == (float(CRAWL_DELAY), True),
          f"polite: the robots.txt Crawl-delay became the host's delay ({robots})")
    stats = q.stats()
    check(q.is_finished() and stats["leased"] == 0, f"polite: finished ({stats})")
    q.close()
    agents = Counter(r["agent"] for r in requests)
    print(
        f"polite: 3 Scrapy processes crawled {len(requests)} URLs in {elapsed:.1f} s (per process {dict(sorted(agents.items()))}); "
        f"one request at a time per host; smallest gap from an answer to the next request: "
        f"{SLOW_HOST} (1.5 s pages) {figures[f'{SLOW_HOST} smallest gap'] * 1000:.0f} ms (delay {HOST_DELAY * 1000:.0f} ms), "
        f"{RATE_HOST} {figures[f'{RATE_HOST} smallest gap'] * 1000:.0f} ms, "
        f"{ROBOTS_HOST} {figures[f'{ROBOTS_HOST} smallest gap'] * 1000:.0f} ms (robots.txt Crawl-delay {CRAWL_DELAY} s); "
        f"after the 429 {figures['after the 429']:.2f} s (Retry-After 2 s)"
    )


def crawl_with_two_crawlees(name: str, site: Site, redis: RedisServer, tmp: Path, env: dict[str, str]) -> tuple[list[dict], float]:
    """2 Crawlee (JavaScript) and 2 Crawlee for Python processes crawl the started `site` on the
    queue `<name>-site` (with `env` besides theirs) until it is finished with no dead letter;
    the site's log and how long it took."""
    queue = f"{name}-site"
    js, py = crawler_process("crawlee", tmp), crawler_process("crawlee-python", tmp)
    started = time.monotonic()
    runs = [(spec["command"], worker_env({**os.environ, **spec["env"], "CRAWLQ_URL": redis.url, "CRAWLQ_QUEUE": queue,
                                          "START_URL": site.start_url(), **env}, i)) for i, spec in enumerate([js, js, py, py])]
    try:
        run_to_the_end(name, tmp, runs)
    finally:
        site.stop()
    elapsed = time.monotonic() - started
    q = crawlq.Queue(redis.url, queue)
    stats = q.stats()
    check(q.is_finished() and stats["dead"] == 0, f"{name}: finished with no dead letter ({stats})")
    q.close()
    return site.requests(), elapsed


def run_redirects(redis: RedisServer, tmp: Path) -> None:
    """2 Crawlee (JavaScript) and 2 Crawlee for Python processes on one queue crawl the redirect
    site: the JavaScript crawlers' HTTP client follows each redirect after its host's turn
    (requestQueue.preNavigationHook), the Python ones seed its target into the frontier
    (storage.post_navigation_hook, a client that does not follow)."""
    js = crawler_process("crawlee", tmp)
    requests, elapsed = crawl_with_two_crawlees("redirects", RedirectSite(tmp / "redirects-site.log").start(), redis, tmp, {})
    problems, figures = check_redirects(requests, HOST_DELAY, js["agent"])
    check(not problems, "redirects: " + "; ".join(problems[:10]))
    redirected_by = Counter("crawlee" if r["agent"].startswith(js["agent"]) else "crawlee-python"
                            for r in requests if r["path"].startswith("/go/"))
    print(
        f"redirects: 2 Crawlee + 2 Crawlee for Python processes crawled {len(requests)} URLs in {elapsed:.1f} s; "
        f"redirects fetched by {dict(sorted(redirected_by.items()))}, {figures['hops']:.0f} followed as hops after their "
        f"host's turn, the others seeded; smallest gap between two requests to a host "
        f"{min(v for k, v in figures.items() if k.endswith('smallest gap')) * 1000:.0f} ms (delay {HOST_DELAY * 1000:.0f} ms)"
    )


def run_held(redis: RedisServer, tmp: Path) -> None:
    """2 Crawlee (JavaScript) and 2 Crawlee for Python processes that read robots.txt
    (respectRobotsTxtFile, respect_robots_txt_file) crawl the held site: the requests each
    process leased while a host's slow robots.txt was on its way leave spaced by the host's
    delay (the adapters' pre-navigation hooks take a turn for them), not all at once."""
    js = crawler_process("crawlee", tmp)
    requests, elapsed = crawl_with_two_crawlees("held", HeldSite(tmp / "held-site.log").start(), redis, tmp, {"ROBOTS": "1"})
    problems, figures = check_held(requests, HOST_DELAY)
    check(not problems, "held: " + "; ".join(problems[:10]))
    fetched_by = Counter("crawlee" if r["agent"].startswith(js["agent"]) else "crawlee-python"
                         for r in requests if r["host"] == HELD_HOST and r["path"] != "/robots.txt")
    print(
        f"held: 2 Crawlee + 2 Crawlee for Python processes reading robots.txt crawled {len(requests)} URLs in {elapsed:.1f} s; "
        f"{HELD_HOST}'s pages fetched by {dict(sorted(fetched_by.items()))} after {figures['robots.txt fetches']:.0f} "
        f"slow robots.txt fetches; smallest gap between two of its requests {figures['smallest gap'] * 1000:.0f} ms "
        f"(delay {HOST_DELAY * 1000:.0f} ms)"
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
    "mixed": run_mixed,
    "mixed-kill": run_mixed_kill,
    "polite": run_polite,
    "redirects": run_redirects,
    "held": run_held,
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
