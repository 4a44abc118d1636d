"""Fault-suite worker (Python): lease, log, ack, and keep going through every error until the
stop file exists. One JSON line per event in the ledger, written before the next step.

    worker.py <redis-url> <queue> <ledger-path> <stop-file> <slow-ms>"""

import json
import os
import sys
import time

import crawlq

url, name, ledger_path, stop_file, slow_ms = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
options = json.loads(os.environ["CRAWLQ_FAULT_OPTIONS"])
ledger = open(ledger_path, "a", buffering=1)


def log(**entry: object) -> None:
    ledger.write(json.dumps(entry) + "\n")


q = None
while not os.path.exists(stop_file):
    try:
        if q is None:
            q = crawlq.Queue(url, name, **options)
        leases = q.lease(5, wait=0.5)
    except crawlq.CrawlqError as err:
        log(ev="error", code=err.code, during="lease", message=str(err)[:200])
        time.sleep(0.1)
        continue
    for lease in leases:
        log(ev="lease", id=lease.id, url=lease.url, token=lease.token,
            at=round(lease.leased_at * 1000), exp=round(lease.expires_at * 1000))
    for lease in leases:
        time.sleep(slow_ms / 1000)
        try:
            log(ev="ack", id=lease.id, token=lease.token, ok=q.ack(lease))
        except crawlq.CrawlqError as err:
            log(ev="ack", id=lease.id, token=lease.token, ok=None, code=err.code)
