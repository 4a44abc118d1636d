"""crawlq.scrapy: the request codec and the scheduler's settings checks. The crawl itself (3
spider processes on the local test site) is tests/frameworks/run.py."""

from __future__ import annotations

import pytest

scrapy = pytest.importorskip("scrapy")

from scrapy.exceptions import NotConfigured  # noqa: E402
from scrapy.utils.test import get_crawler  # noqa: E402

import crawlq  # noqa: E402
from crawlq.scrapy import LEASE_META, Scheduler, decode_request, encode_request  # noqa: E402
from conftest import RedisServer  # noqa: E402


class Spider(scrapy.Spider):
    name = "codec"

    def parse(self, response):  # pragma: no cover - never called
        yield None

    def parse_item(self, response):  # pragma: no cover - never called
        yield None


def test_a_request_survives_its_payload(q: crawlq.Queue) -> None:
    spider = Spider()
    request = scrapy.FormRequest(
        "http://a.example/search?q=1",
        formdata={"q": "crawl", "page": "2"},
        headers={"X-Token": b"\xff\x00binary"},
        callback=spider.parse_item,
        errback=spider.parse,
        cb_kwargs={"depth": 3},
        meta={"raw": b"\x00\x01", "pairs": {1: "one", (2, 3): "tuple key"}, "nested": [{"$bytes": "not bytes"}],
              LEASE_META: object()},
        priority=7,
        dont_filter=True,
    )
    # Through crawlq and back, as another process would lease it.
    q.seed([{"url": request.url, "key": "k", "payload": encode_request(request, spider)}])
    [lease] = q.lease(1, wait=0)
    back = decode_request(lease.payload, lease.url, spider)
    assert (back.url, back.method, back.body, back.priority, back.dont_filter) == (
        request.url, "POST", request.body, 7, True)
    assert back.headers.getlist("X-Token") == [b"\xff\x00binary"]
    assert back.callback == spider.parse_item and back.errback == spider.parse
    assert back.cb_kwargs == {"depth": 3}
    assert back.meta["raw"] == b"\x00\x01"
    assert back.meta["pairs"] == {1: "one", (2, 3): "tuple key"}
    assert back.meta["nested"] == [{"$bytes": "not bytes"}], "a dict that looks like an encoding stays a dict"
    assert LEASE_META not in back.meta, "the lease is never stored"


def test_what_json_cannot_hold_is_refused_by_name() -> None:
    spider = Spider()
    with pytest.raises(TypeError, match=r"meta\.when holds a datetime"):
        import datetime

        encode_request(scrapy.Request("http://a.example/", meta={"when": datetime.datetime.now()}), spider)
    with pytest.raises(ValueError):
        encode_request(scrapy.Request("http://a.example/", callback=lambda r: None), spider)


def test_a_url_seeded_by_another_worker_is_a_plain_request() -> None:
    assert decode_request(None, "http://a.example/x", Spider()).url == "http://a.example/x"
    assert decode_request({"from": "node"}, "http://a.example/y", Spider()).method == "GET"
    with pytest.raises(ValueError, match="host item"):
        decode_request(None, None, Spider())


def _open(settings: dict, redis: RedisServer) -> Scheduler:
    crawler = get_crawler(Spider, {"CRAWLQ_URL": redis.url, **settings})
    scheduler = Scheduler.from_crawler(crawler)
    scheduler.open(Spider())
    return scheduler


def test_the_scheduler_refuses_settings_that_would_lose_answers(redis_server: RedisServer) -> None:
    with pytest.raises(NotConfigured, match="SpiderMiddleware in SPIDER_MIDDLEWARES"):
        _open({}, redis_server)
    with pytest.raises(NotConfigured, match="must come after HttpErrorMiddleware"):
        _open({"SPIDER_MIDDLEWARES": {"crawlq.scrapy.SpiderMiddleware": 10},
               "DOWNLOADER_MIDDLEWARES": {"crawlq.scrapy.DownloaderMiddleware": 10}}, redis_server)
    with pytest.raises(NotConfigured, match="CRAWLQ_KEY"):
        Scheduler.from_crawler(get_crawler(Spider, {"CRAWLQ_KEY": "body"}))
    with pytest.raises(crawlq.UnavailableError):
        _open({"CRAWLQ_URL": "redis://127.0.0.1:1/0", "CRAWLQ_OPTIONS": {"connect_timeout": 0.3},
               "SPIDER_MIDDLEWARES": {"crawlq.scrapy.SpiderMiddleware": 60},
               "DOWNLOADER_MIDDLEWARES": {"crawlq.scrapy.DownloaderMiddleware": 10}}, redis_server)


def test_seed_dedupe_keys_and_release_on_close(redis_server: RedisServer, name: str) -> None:
    settings = {"CRAWLQ_QUEUE": name, "SPIDER_MIDDLEWARES": {"crawlq.scrapy.SpiderMiddleware": 60},
                "DOWNLOADER_MIDDLEWARES": {"crawlq.scrapy.DownloaderMiddleware": 10}}
    scheduler = _open(settings, redis_server)
    try:
        assert scheduler.enqueue_request(scrapy.Request("http://a.example/1")) is True
        assert scheduler.enqueue_request(scrapy.Request("http://A.example/1#frag")) is False, "same URL"
        assert scheduler.enqueue_request(scrapy.Request("http://a.example/1", dont_filter=True)) is False
        post = scrapy.FormRequest("http://a.example/1", formdata={"q": "x"})
        assert scheduler.enqueue_request(post) is True, "a POST is its own item (keyed by fingerprint)"
        assert scheduler.enqueue_request(post.replace()) is False
        assert scheduler.enqueue_request(scrapy.Request("ftp://a.example/")) is False, "refused, logged"
        assert scheduler.has_pending_requests()
        first = scheduler.next_request()
        assert first is not None and isinstance(first.meta[LEASE_META], crawlq.Lease)
        assert scheduler.stats.get_value("crawlq/seeded") == 2
        assert scheduler.stats.get_value("crawlq/invalid/unsupported_scheme") == 1
    finally:
        scheduler.close("shutdown")
    q = crawlq.Queue(redis_server.url, name)
    stats = q.stats()
    assert (stats["leased"], stats["pending"]) == (0, 2), "what the scheduler held went back on close"
    leases = q.lease(10, wait=0)
    assert sorted((l.payload["method"], l.key is None) for l in leases) == [("GET", True), ("POST", False)]
    assert all(l.attempt == 1 for l in leases), "a release is not an attempt"
