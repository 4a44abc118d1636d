#!/usr/bin/env python3
"""`answer_linger` in a real Scrapy crawl: what it saves Redis, and what it costs.

bench/linger.py measures the option with the Rust runner and simulated fetches. This runs a
Scrapy spider (bench/runners/scrapy_spider.py: crawlq's scheduler and middlewares, as a Scrapy
user sets them up) over a local site served on --hosts loopback addresses: --pages pages of 30
links each, 3 to pages not linked before (a tree) and 27 to the site's navigation (the first 27
pages): 90 % of a page's links seen before. One `scrapy runspider` process per crawl, started
from the site's first page and closed by crawlq once the frontier is finished; the queue's
`answer_linger` values interleaved round by round on one private redis-server. Per value, the
medians over the rounds: pages/s (from the site's first request to its last), Redis
main-thread CPU µs per page (INFO cpu) and script calls per page (INFO commandstats; a Scrapy
page is a lease call and its answer).

    python bench/scrapy_linger.py [--pages 3000] [--hosts 20] [--concurrency 32] [--lingers 0,2,5] [--rounds 3]
                                  [--encode 10000]

`--encode N` also times crawlq.scrapy.encode_request (what the adapter does to each request a
page yields before its answer) over N requests as the spider yields them, µs per request.

It needs a Python with the crawlq wheel and Scrapy (tools/test.sh's target/test-venv, or
bench/run.sh's target/bench-venv).
"""

import argparse
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from linger import interleaved, print_medians
from run import Redis

import crawlq

SPIDER = Path(__file__).resolve().parent / "runners" / "scrapy_spider.py"
NAVIGATION = 27  # links every page has to the site's first pages
NEW_LINKS = 3  # links to pages not linked before (page i: 3i + 1 .. 3i + 3)


class Site:
    """The bench's site on 127.0.0.1 .. 127.0.0.<hosts>, one port: page i on host i % hosts."""

    def __init__(self, pages: int, hosts: int) -> None:
        self.pages, self.hosts = pages, hosts
        self.server = ThreadingHTTPServer(("0.0.0.0", 0), self.handler())
        self.port = self.server.server_address[1]
        self.lock = threading.Lock()
        self.times: list[float] = []

    def url(self, page: int) -> str:
        return f"http://127.0.0.{1 + page % self.hosts}:{self.port}/p/{page}"

    def body(self, page: int) -> bytes:
        found = [page * NEW_LINKS + k for k in range(1, NEW_LINKS + 1)] + list(range(NAVIGATION))
        links = "".join(f'<a href="{self.url(n)}">{n}</a>' for n in found if n < self.pages)
        return f"<html><body><h1>Page {page}</h1>{links}</body></html>".encode()

    def handler(self) -> type:
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                tail = self.path.rsplit("/", 1)[1]
                page = int(tail) if self.path.startswith("/p/") and tail.isdigit() else -1
                found = 0 <= page < site.pages
                with site.lock:
                    site.times.append(time.monotonic())
                body = site.body(page) if found else b"not found"
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        return Handler

    def start(self) -> None:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def take_times(self) -> list[float]:
        with self.lock:
            times, self.times = self.times, []
        return times


def crawl(redis: Redis, site: Site, queue: str, args: argparse.Namespace, linger_ms: int) -> tuple[float, float, float]:
    """One crawl of the whole site on a new queue: (pages/s, CPU µs per page, script calls per page)."""
    crawlq.Queue(redis.url, queue).seed([site.url(0)])
    site.take_times()
    redis.cli("CONFIG", "RESETSTAT")
    cpu = redis.main_thread_cpu_seconds()
    env = dict(os.environ, CRAWLQ_URL=redis.url, CRAWLQ_QUEUE=queue, START_URL=site.url(0),
               CONCURRENT=str(args.concurrency), ANSWER_LINGER=str(linger_ms / 1000))
    subprocess.run([sys.executable, "-m", "scrapy", "runspider", str(SPIDER)], env=env, check=True,
                   capture_output=True, timeout=600)
    cpu_us = (redis.main_thread_cpu_seconds() - cpu) * 1e6
    times = site.take_times()
    stats = crawlq.Queue(redis.url, queue).stats()
    if len(times) != args.pages or stats["done"] != args.pages:
        raise SystemExit(f"linger {linger_ms} ms: {len(times)} requests, {stats['done']} pages done of {args.pages}")
    seconds = max(times) - min(times)
    return args.pages / seconds, cpu_us / args.pages, redis.script_stat("calls") / args.pages


def encode_cost(count: int) -> float:
    """µs per crawlq.scrapy.encode_request of a request as the bench's spider yields them."""
    import scrapy
    from crawlq.scrapy import FOUND_ON_META, encode_request

    class Spider(scrapy.Spider):
        name = "encode"

        def parse(self, response: object) -> None:  # pragma: no cover - never called
            return None

    spider = Spider()
    requests = [scrapy.Request(f"http://127.0.0.{1 + i % 20}:8000/p/{i}", callback=spider.parse,
                               meta={"depth": 1, FOUND_ON_META: "http://127.0.0.1:8000/p/0"}) for i in range(count)]
    started = time.perf_counter()
    for request in requests:
        encode_request(request, spider)
    return (time.perf_counter() - started) / count * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=3000)
    ap.add_argument("--hosts", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=32, help="Scrapy's CONCURRENT_REQUESTS")
    ap.add_argument("--lingers", default="0,2,5", help="answer_linger values (ms), comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--encode", type=int, default=0, help="also time encode_request over this many requests")
    args = ap.parse_args()
    lingers = [int(v) for v in args.lingers.split(",")]
    if any(not 0 <= v <= 1000 for v in lingers) or not 1 <= args.hosts <= 254 or args.pages < 1:
        raise SystemExit("--lingers must be within 0..1000 ms, --hosts within 1..254, --pages at least 1")
    site = Site(args.pages, args.hosts)
    site.start()
    redis = Redis()
    try:
        runs = interleaved(lingers, args.rounds,
                           lambda linger, round_: crawl(redis, site, f"scrapy-linger-{linger}-{round_}", args, linger))
    finally:
        redis.stop()
        site.server.shutdown()
    print(f"Scrapy, {args.pages:,} pages over {args.hosts} hosts, 30 links a page (90 % seen before), "
          f"CONCURRENT_REQUESTS {args.concurrency}; medians of {args.rounds} rounds")
    print_medians(runs, "script calls per page", 2)
    if args.encode > 0:
        print(f"encode_request: {encode_cost(args.encode):.1f} µs per request ({args.encode:,} requests)")


if __name__ == "__main__":
    main()
