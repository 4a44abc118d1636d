"""Fault-suite worker (Python): lease, log, ack, and keep going through every error until the
stop file exists. One JSON line per event in the ledger, written before the next step.

    worker.py <redis-url> <queue> <ledger-path> <stop-file> <slow-ms>

With CRAWLQ_FAULT_CRAWL set (`{"items": N, "hosts": H, "seeds": S, "tasks": T}`) it crawls instead: T
threads share one queue, and each answers every page it holds with the page's links (`links`
below) and leases the next in the same call (`ack_with_links_and_lease`), so the pages the
threads answer meanwhile go together in one call."""

import json
import os
import sys
import threading
import time
from urllib.parse import urlsplit

import crawlq

url, name, ledger_path, stop_file, slow_ms = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
options = json.loads(os.environ["CRAWLQ_FAULT_OPTIONS"])
crawl = json.loads(os.environ.get("CRAWLQ_FAULT_CRAWL") or "null")
ledger = open(ledger_path, "a", buffering=1)
ledger_lock = threading.Lock()


def log(**entry: object) -> None:
    with ledger_lock:
        ledger.write(json.dumps(entry) + "\n")


def log_error(err: "crawlq.CrawlqError", during: str) -> None:
    """An error the worker goes on after (a short pause first)."""
    log(ev="error", code=err.code, during=during, message=str(err)[:200])
    time.sleep(0.1)


def log_leases(leases: list) -> None:
    for lease in leases:
        log(ev="lease", id=lease.id, url=lease.url, token=lease.token,
            at=round(lease.leased_at * 1000), exp=round(lease.expires_at * 1000))


def links(page_url: str) -> list[str]:
    """The links of page i of the crawl (the same in every worker language): its two children
    2i+1 and 2i+2, the one link to each page past the seeded ones (0 to seeds - 1) (so a link lost is a page
    never crawled), and five links to seeded pages, seen before."""
    n, hosts, s = crawl["items"], crawl["hosts"], crawl["seeds"]
    i = int(page_url.rsplit("/", 1)[1])
    domain = urlsplit(page_url).hostname.split(".", 1)[1]
    found = [2 * i + 1, 2 * i + 2, 0, s - 1, i % s, (i + 3) % s, (i * 5) % s]
    return [f"http://h{k % hosts}.{domain}/page/{k}" for k in found if k < n]


def drain() -> None:
    q = None
    while not os.path.exists(stop_file):
        try:
            if q is None:
                q = crawlq.Queue(url, name, **options)
            leases = q.lease(5, wait=0.5)
        except crawlq.CrawlqError as err:
            log_error(err, "lease")
            continue
        log_leases(leases)
        for lease in leases:
            time.sleep(slow_ms / 1000)
            try:
                log(ev="ack", id=lease.id, token=lease.token, ok=q.ack(lease))
            except crawlq.CrawlqError as err:
                log(ev="ack", id=lease.id, token=lease.token, ok=None, code=err.code)


def crawl_task(q: "crawlq.Queue") -> None:
    held = None
    while not os.path.exists(stop_file):
        if held is None:
            try:
                leases = q.lease(1, wait=0.5)
            except crawlq.CrawlqError as err:
                log_error(err, "lease")
                continue
            log_leases(leases)
            held = leases[0] if leases else None
            continue
        time.sleep(slow_ms / 1000)
        try:
            acked, _, leases = q.ack_with_links_and_lease(held, links(held.url), max=1, wait=0.5)
        except crawlq.CrawlqError as err:
            # the page, its links and the next lease may or may not have been applied
            log(ev="ack", id=held.id, token=held.token, ok=None, code=err.code)
            held = None
            time.sleep(0.1)
            continue
        log(ev="ack", id=held.id, token=held.token, ok=acked)
        log_leases(leases)
        held = leases[0] if leases else None


if crawl is None:
    drain()
else:
    queue = None
    while queue is None and not os.path.exists(stop_file):
        try:
            queue = crawlq.Queue(url, name, **options)
        except crawlq.CrawlqError as err:
            log_error(err, "connect")
    tasks = [threading.Thread(target=crawl_task, args=(queue,)) for _ in range(crawl["tasks"])]
    for t in tasks:
        t.start()
    for t in tasks:
        t.join()
