"""Crawlee for Python's side of the adapter round trip (tests/frameworks/roundtrip.py), through
crawlq.crawlee's request queue client only:

    python roundtrip_side.py seed|take|check REDIS_URL QUEUE[,QUEUE...]   (ROUNDTRIP_SPEC: JSON)

`seed` adds a Crawlee request per queue (its own unique key and a session rotation count: what
only Crawlee understands); `take` fetches the request another framework seeded and reclaims it
after a failure, as the crawler does before a retry; `check` fetches a request Crawlee seeded
after another framework retried it and marks it handled. Prints one JSON line per queue: what
Crawlee sees of the request."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import time

from crawlee import Request, RequestState

from crawlq.crawlee import CrawlqStorageClient


def view(request: Request) -> dict:
    payload = request.payload or b""
    return {
        "url": request.url,
        "method": request.method,
        "headers": [[k.lower(), v] for k, v in request.headers.items()],
        "body_b64": base64.b64encode(payload if isinstance(payload, bytes) else payload.encode()).decode(),
        "user_data": {k: v for k, v in request.user_data.items() if k not in ("label", "__crawlee")},
        "label": request.label,
        "depth": request.crawl_depth,
        "retries": request.retry_count,
    }


async def fetch_one(client) -> Request:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        request = await client.fetch_next_request()
        if request is not None:
            return request
    raise SystemExit("nothing to fetch")


async def main() -> None:
    phase, redis_url, queues = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    spec = json.loads(os.environ.get("ROUNDTRIP_SPEC", "{}"))
    for queue in queues:
        storage = CrawlqStorageClient(redis_url, queue, wait=0.5, backoff_base=0.001, backoff_jitter=0.0, sort_query=True)
        client = await storage.create_rq_client()
        if phase == "seed":
            request = Request.from_url(
                spec["urls"][queue],
                method=spec["method"],
                headers=dict(spec["headers"]),
                payload=base64.b64decode(spec["body_b64"]),
                user_data=spec["user_data"],
                label=spec["label"],
                unique_key=f"crawlee-python-own-key:{queue}",
            )
            request.crawl_depth = spec["depth"]
            request.session_rotation_count = 2
            response = await client.add_batch_of_requests([request])
            out = {"seeded": not response.processed_requests[0].was_already_present}
        elif phase == "take":
            request = await fetch_one(client)
            out = view(request)
            # what the crawler does with a failed request it will retry
            request.state = RequestState.ERROR_HANDLER
            request.retry_count += 1
            await client.reclaim_request(request)
        else:
            request = await fetch_one(client)
            out = view(request)
            out["own"] = {"session_rotation_count": request.session_rotation_count}
            await client.mark_request_as_handled(request)
        stats = await storage.queue.stats()
        out["answer"] = {"retried": stats["retried_total"], "done": stats["done"]}
        storage.queue.close()
        print(json.dumps({"queue": queue, **out}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
