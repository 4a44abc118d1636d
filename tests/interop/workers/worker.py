"""Interop worker (Python).

work: lease, log every lease and answer to the ledger (one JSON line each, written before the
next step), ack; URLs ending in /poison are nacked without retry; exit when the queue stays
empty. seed: seed the URLs of a file (one per line) in one call and print the report.

    worker.py work <redis-url> <queue> <ledger-path> <slow-ms>
    worker.py seed <redis-url> <queue> <urls-file>
    worker.py bytes <redis-url> <queue>   (lease one item whose payload body is the bytes
        0..255, check they arrive as bytes, dead-letter it with them reversed; print the check)"""

import json
import os
import random
import sys
import time

import crawlq

mode, url, name = sys.argv[1], sys.argv[2], sys.argv[3]
q = crawlq.Queue(url, name, lease_ttl=3.0, host_delay=0.02)
if mode == "seed":
    # every language starts seeding at the same moment (CRAWLQ_START_AT, ms since the epoch)
    time.sleep(max(0.0, int(os.environ.get("CRAWLQ_START_AT", "0")) / 1000 - time.time()))
    report = q.seed(open(sys.argv[4]).read().split("\n")[:-1])
    print(json.dumps({"added": report.added, "duplicates": report.duplicates}))
    sys.exit(0)
if mode == "bytes":
    [lease] = q.lease(1, wait=2.0)
    body = lease.payload["body"]
    q.nack(lease, retry=False, payload={"body": bytes(reversed(range(256))), "by": "python"})
    print(json.dumps({"ok": isinstance(body, bytes) and body == bytes(range(256))}))
    sys.exit(0)
ledger_path, slow_ms = sys.argv[4], int(sys.argv[5])
ledger = open(ledger_path, "a", buffering=1)
idle = 0
while True:
    leases = q.lease(5, wait=1.0)
    if not leases:
        stats = q.stats()
        idle += 1
        if idle >= 2 and stats["pending"] == 0 and stats["leased"] == 0:
            break
        continue
    idle = 0
    for lease in leases:
        ledger.write(json.dumps({"ev": "lease", "id": lease.id, "url": lease.url, "token": lease.token, "host": lease.host,
                                 "at": round(lease.leased_at * 1000), "exp": round(lease.expires_at * 1000)}) + "\n")
    for lease in leases:
        time.sleep((slow_ms + random.random() * 3) / 1000)
        if lease.url and lease.url.endswith("/poison"):
            outcome = q.nack(lease, retry=False, reason="forced by the scenario")
            ledger.write(json.dumps({"ev": "nack", "id": lease.id, "token": lease.token, "outcome": outcome}) + "\n")
        else:
            ok = q.ack(lease)
            ledger.write(json.dumps({"ev": "ack", "id": lease.id, "token": lease.token, "ok": ok}) + "\n")
ledger.close()
print(f"python worker {os.getpid()} done")
