"""Scrapy's side of the adapter round trip (tests/frameworks/roundtrip.py), through
crawlq.scrapy.Scheduler only:

    python roundtrip_side.py seed|take|check REDIS_URL QUEUE[,QUEUE...]   (ROUNDTRIP_SPEC: JSON)

`seed` enqueues a Scrapy request per queue (callback ``parse_detail`` and ``cb_kwargs``: what
only Scrapy understands); `take` gets the request another framework seeded and retries it as the
downloader middleware does for a 503; `check` gets a request Scrapy seeded after another
framework retried it, and answers it as handled. Prints one JSON line per queue: what Scrapy
sees of the request."""

from __future__ import annotations

import base64
import json
import os
import sys
import time

import scrapy
from scrapy.utils.test import get_crawler

from crawlq.scrapy import Scheduler


class RoundtripSpider(scrapy.Spider):
    name = "roundtrip"

    def parse(self, response):  # pragma: no cover - nothing is downloaded
        yield None

    def parse_detail(self, response, k):  # pragma: no cover - nothing is downloaded
        yield None


def open_scheduler(redis_url: str, queue: str) -> tuple[Scheduler, RoundtripSpider]:
    settings = {
        "CRAWLQ_URL": redis_url,
        "CRAWLQ_QUEUE": queue,
        "CRAWLQ_OPTIONS": {"backoff_base": 0.001, "backoff_jitter": 0.0, "sort_query": True},
        "SPIDER_MIDDLEWARES": {"crawlq.scrapy.SpiderMiddleware": 60},
        "DOWNLOADER_MIDDLEWARES": {"crawlq.scrapy.DownloaderMiddleware": 10},
    }
    spider = RoundtripSpider()
    scheduler = Scheduler.from_crawler(get_crawler(RoundtripSpider, settings))
    scheduler.open(spider)
    return scheduler, spider


def next_request(scheduler: Scheduler) -> scrapy.Request:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        request = scheduler.next_request()
        if request is not None:
            return request
        time.sleep(0.05)
    raise SystemExit("nothing to lease")


def view(request: scrapy.Request) -> dict:
    return {
        "url": request.url,
        "method": request.method,
        "headers": [[k.decode().lower(), v.decode()] for k, values in request.headers.items() for v in values],
        "body_b64": base64.b64encode(request.body).decode(),
        "user_data": request.meta.get("user_data", {}),
        "label": request.meta.get("label"),
        "depth": request.meta.get("depth", 0),
        "retries": request.meta.get("retry_times", 0),
    }


def main() -> None:
    phase, redis_url, queues = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    spec = json.loads(os.environ.get("ROUNDTRIP_SPEC", "{}"))
    for queue in queues:
        scheduler, spider = open_scheduler(redis_url, queue)
        try:
            if phase == "seed":
                request = scrapy.Request(
                    spec["urls"][queue],
                    method=spec["method"],
                    headers={name: value for name, value in spec["headers"]},
                    body=base64.b64decode(spec["body_b64"]),
                    meta={"user_data": spec["user_data"], "label": spec["label"], "depth": spec["depth"]},
                    callback=spider.parse_detail,
                    cb_kwargs={"k": 1},
                )
                out = {"seeded": scheduler.enqueue_request(request)}
            elif phase == "take":
                request = next_request(scheduler)
                out = view(request)
                scheduler.finish(request, retry=True, reason="HTTP 503")
            else:
                request = next_request(scheduler)
                out = view(request)
                out["own"] = {"callback": request.callback.__name__, "cb_kwargs": request.cb_kwargs}
                scheduler.finish(request)
                # (an ack goes from the answerer's threads; bounded, so a lost one fails here)
                answered_by = time.monotonic() + 10
                while scheduler.answers_on_their_way():
                    if time.monotonic() > answered_by:
                        raise SystemExit("the ack was still on its way after 10 s")
                    time.sleep(0.01)
            stats = scheduler.queue.stats()
            out["answer"] = {"retried": stats["retried_total"], "done": stats["done"]}
        finally:
            scheduler.close("finished")
        print(json.dumps({"queue": queue, **out}), flush=True)


if __name__ == "__main__":
    main()
