"""crawlq.scrapy: the request codec and the scheduler's settings checks. The crawl itself (3
spider processes on the local test site) is tests/frameworks/run.py."""

from __future__ import annotations

import email.utils
import re
import time
from typing import Any

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


def test_a_request_survives_its_crawl_request(q: crawlq.Queue) -> None:
    spider = Spider()
    request = scrapy.FormRequest(
        "http://a.example/search?q=1",
        formdata={"q": "crawl", "page": "2"},
        headers={"X-Token": b"\xff\x00binary"},
        callback=spider.parse_item,
        errback=spider.parse,
        cb_kwargs={"depth": 3},
        meta={"raw": b"\x00\x01", "pairs": {1: "one", (2, 3): "tuple key"}, "nested": [{"$bytes": "not bytes"}],
              "depth": 2, "label": "SEARCH", "user_data": {"k": [1, 2]}, "retry_times": 1,
              LEASE_META: object()},
        priority=7,
        dont_filter=True,
    )
    crawl = encode_request(request, spider)
    assert (crawl["method"], crawl["label"], crawl["depth"], crawl["retries"], crawl["user_data"]) == (
        "POST", "SEARCH", 2, 1, {"k": [1, 2]}), "the shared fields are the crawl request's own"
    # Through crawlq and back, as another process would lease it.
    report = q.seed_requests([crawl])
    assert report.added == 1
    [lease] = q.lease(1, wait=0)
    assert lease.key is not None and lease.key.startswith("request:"), "a POST is known by method, URL and body"
    back = decode_request(crawlq.request_of(lease), spider)
    assert (back.url, back.method, back.body, back.priority, back.dont_filter) == (
        request.url, "POST", request.body, 7, True)
    assert back.headers.getlist("X-Token") == [b"\xff\x00binary"]
    assert back.callback == spider.parse_item and back.errback == spider.parse
    assert back.cb_kwargs == {"depth": 3}
    assert back.meta["raw"] == b"\x00\x01"
    assert back.meta["pairs"] == {1: "one", (2, 3): "tuple key"}
    assert back.meta["nested"] == [{"$bytes": "not bytes"}], "a dict that looks like an encoding stays a dict"
    assert (back.meta["depth"], back.meta["label"], back.meta["user_data"], back.meta["retry_times"]) == (
        2, "SEARCH", {"k": [1, 2]}, 1)
    assert LEASE_META not in back.meta, "the lease is never stored"


class Subclassed(scrapy.Request):
    attributes = (*scrapy.Request.attributes, "note")

    def __init__(self, *args: Any, note: str = "", **kwargs: Any) -> None:
        self.note = note
        super().__init__(*args, **kwargs)


class Aliased(Spider):
    name = "aliased"
    parse_again = Spider.parse_item


def _callback_named_otherwise() -> Any:
    def made(self, response):  # pragma: no cover - never called
        return None

    return made


class Renamed(Spider):
    name = "renamed"
    # (its function's name, "made", is no attribute of the spider)
    parse_renamed = _callback_named_otherwise()


class NotASpider:
    def parse(self, response):  # pragma: no cover - never called
        return None


def test_a_request_is_read_as_scrapy_reads_it() -> None:
    """encode_request reads a request's fields as Request.to_dict does, without its search of
    every member of the spider: the same fields for each kind of callback and request."""
    from crawlq.scrapy import _request_fields

    spider = Spider()
    requests = [
        scrapy.Request("http://a.example/"),
        scrapy.Request("http://a.example/p", callback=spider.parse, errback=spider.parse_item, priority=-3,
                       meta={"k": 1}, cb_kwargs={"a": [1]}, flags=["f"], cookies={"c": "1"}, dont_filter=True),
        scrapy.FormRequest("http://a.example/f", formdata={"q": "1"}, callback=spider.parse_item),
        Subclassed("http://a.example/s", note="kept", callback=spider.parse),
    ]
    for request in requests:
        assert _request_fields(request, spider) == request.to_dict(spider=spider), request
    # a method the spider has under two names: either names it (to_dict takes the first in
    # alphabetical order, the fast path its own)
    aliased = Aliased()
    for callback in (aliased.parse_again, aliased.parse_item):
        fields = _request_fields(scrapy.Request("http://a.example/", callback=callback), aliased)
        assert getattr(aliased, fields["callback"]).__func__ is Spider.parse_item
    # a method found only under another name than its own: to_dict's own search names it
    renamed = Renamed()
    request = scrapy.Request("http://a.example/", callback=renamed.parse_renamed)
    assert _request_fields(request, renamed)["callback"] == "parse_renamed" == request.to_dict(spider=renamed)["callback"]
    # a method of another object, a function, no spider: to_dict's refusal
    for callback, on in [(NotASpider().parse, spider), (lambda r: None, spider), (spider.parse, None)]:
        with pytest.raises(ValueError):
            _request_fields(scrapy.Request("http://a.example/", callback=callback), on)


def test_what_json_cannot_hold_is_refused_by_name() -> None:
    spider = Spider()
    with pytest.raises(TypeError, match=r"meta\.when holds a datetime"):
        import datetime

        encode_request(scrapy.Request("http://a.example/", meta={"when": datetime.datetime.now()}), spider)
    with pytest.raises(ValueError):
        encode_request(scrapy.Request("http://a.example/", callback=lambda r: None), spider)


def test_requests_of_other_frameworks_and_plain_items(q: crawlq.Queue) -> None:
    q.seed([{"url": "http://a.example/x", "payload": {"from": "node"}}])
    q.seed_requests([{"url": "http://a.example/post", "method": "POST", "body": b"a=1", "label": "FORM",
                      "user_data": {"n": 1}, "headers": [["Accept", "text/html"]],
                      "frameworks": {"crawlee": {"session_rotation_count": 2}}}])
    spider = Spider()
    requests = {}
    for lease in q.lease(2, wait=0):
        r = decode_request(crawlq.request_of(lease), spider)
        requests[r.url] = r
    plain = requests["http://a.example/x"]
    assert (plain.method, plain.callback, plain.meta["user_data"]) == ("GET", None, {"from": "node"})
    post = requests["http://a.example/post"]
    assert (post.method, post.body, post.meta["label"], post.meta["user_data"]) == ("POST", b"a=1", "FORM", {"n": 1})
    assert post.headers.getlist("Accept") == [b"text/html"]
    assert post.meta["crawlq_request"]["frameworks"]["crawlee"] == {"session_rotation_count": 2}, "kept for the answer"


def _open(settings: dict, redis: RedisServer) -> Scheduler:
    crawler = get_crawler(Spider, {"CRAWLQ_URL": redis.url, **settings})
    scheduler = Scheduler.from_crawler(crawler)
    scheduler.open(Spider())
    return scheduler


def test_the_frontier_is_logged_without_its_password(redis_server: RedisServer, name: str,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    redis_server.cli("ACL", "SETUSER", "spider", "on", ">s3cret", "~*", "&*", "+@all")
    url = f"redis://spider:s3cret@127.0.0.1:{redis_server.port}/0"
    settings = {"CRAWLQ_URL": url, "CRAWLQ_QUEUE": name, "SPIDER_MIDDLEWARES": {"crawlq.scrapy.SpiderMiddleware": 60},
                "DOWNLOADER_MIDDLEWARES": {"crawlq.scrapy.DownloaderMiddleware": 10}}
    with caplog.at_level("INFO", logger="crawlq.scrapy"):
        scheduler = Scheduler.from_crawler(get_crawler(Spider, settings))
        scheduler.open(Spider())
        scheduler.close("finished")
    assert f"crawlq frontier {name} at redis://***@127.0.0.1:{redis_server.port}/0" in caplog.text
    assert "s3cret" not in caplog.text


def test_redis_url_of_scrapy_redis_serves_when_crawlq_url_is_unset(redis_server: RedisServer, name: str) -> None:
    middlewares = {"CRAWLQ_QUEUE": name, "SPIDER_MIDDLEWARES": {"crawlq.scrapy.SpiderMiddleware": 60},
                   "DOWNLOADER_MIDDLEWARES": {"crawlq.scrapy.DownloaderMiddleware": 10}}
    scheduler = Scheduler.from_crawler(get_crawler(Spider, {"REDIS_URL": redis_server.url, **middlewares}))
    scheduler.open(Spider())
    try:
        assert scheduler.redis_url == redis_server.url
        assert scheduler.enqueue_request(scrapy.Request("http://redis-url.example/")) is True
        assert crawlq.Queue(redis_server.url, name).stats()["seeded_total"] == 1, "in the queue of REDIS_URL"
    finally:
        scheduler.close("finished")
    both = Scheduler.from_crawler(get_crawler(Spider, {"CRAWLQ_URL": redis_server.url, "REDIS_URL": "redis://127.0.0.1:1/0"}))
    assert both.redis_url == redis_server.url, "CRAWLQ_URL first"


def test_the_scheduler_refuses_settings_that_would_lose_answers(redis_server: RedisServer) -> None:
    with pytest.raises(NotConfigured, match="SpiderMiddleware in SPIDER_MIDDLEWARES"):
        _open({}, redis_server)
    with pytest.raises(NotConfigured, match="must come after HttpErrorMiddleware"):
        _open({"SPIDER_MIDDLEWARES": {"crawlq.scrapy.SpiderMiddleware": 10},
               "DOWNLOADER_MIDDLEWARES": {"crawlq.scrapy.DownloaderMiddleware": 10}}, redis_server)
    with pytest.raises(NotConfigured, match="CRAWLQ_KEY"):
        Scheduler.from_crawler(get_crawler(Spider, {"CRAWLQ_KEY": "body"}))
    with pytest.raises(crawlq.UnavailableError):
        _open({"CRAWLQ_URL": "redis://127.0.0.1:1/0", "CRAWLQ_OPTIONS": {"connect_timeout": 0.3, "command_timeout": 0.3},
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
        assert scheduler.enqueue_request(post) is True, "a POST is its own item (keyed by method, URL and body)"
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
    assert sorted((crawlq.request_of(l)["method"], l.key is None) for l in leases) == [("GET", True), ("POST", False)]
    assert all(l.attempt == 1 for l in leases), "a release is not an attempt"


def test_crawlq_crawl_seeds_into_a_named_crawl(redis_server: RedisServer, name: str) -> None:
    settings = {"CRAWLQ_QUEUE": name, "CRAWLQ_CRAWL": "news", "SPIDER_MIDDLEWARES": {"crawlq.scrapy.SpiderMiddleware": 60},
                "DOWNLOADER_MIDDLEWARES": {"crawlq.scrapy.DownloaderMiddleware": 10}}
    crawlq.Queue(redis_server.url, name).seed(["http://a.example/1"])
    scheduler = _open(settings, redis_server)
    try:
        # de-duplicated within its crawl: the URL the default crawl holds is another item
        assert scheduler.enqueue_request(scrapy.Request("http://a.example/1")) is True
        assert scheduler.enqueue_request(scrapy.Request("http://a.example/1")) is False
    finally:
        scheduler.close("shutdown")
    leases = crawlq.Queue(redis_server.url, name).lease(10, wait=0)
    assert sorted(lease.crawl or "" for lease in leases) == ["", "news"]


@pytest.mark.parametrize("chosen", [
    {"CRAWLQ_OPTIONS": {"lease_crawls": "news", "host_delay": 0}},
    {"CRAWLQ_OPTIONS": {"host_delay": 0}, "CRAWLQ_LEASE_CRAWLS": ["news"]},
    {"CRAWLQ_OPTIONS": {"host_delay": 0}, "CRAWLQ_LEASE_CRAWLS": "news"},
], ids=["crawlq_options", "setting_list", "setting_string"])
def test_lease_crawls_makes_the_spider_take_only_its_crawls(redis_server: RedisServer, name: str,
                                                            chosen: dict) -> None:
    q = crawlq.Queue(redis_server.url, name)
    q.seed([f"http://a.example/default/{i}" for i in range(3)])
    q.seed([f"http://a.example/shop/{i}" for i in range(3)], crawl="shop")
    q.seed([f"http://b.example/news/{i}" for i in range(2)], crawl="news")
    settings = {"CRAWLQ_QUEUE": name, "CRAWLQ_CRAWL": "news", **chosen,
                "SPIDER_MIDDLEWARES": {"crawlq.scrapy.SpiderMiddleware": 60},
                "DOWNLOADER_MIDDLEWARES": {"crawlq.scrapy.DownloaderMiddleware": 10}}
    scheduler = _open(settings, redis_server)
    try:
        assert scheduler.enqueue_request(scrapy.Request("http://c.example/news/found")) is True
        # (None from next_request only says nothing is at hand: its fetch-ahead thread may
        # hold a lease for a moment, so each request is waited for, then a while for any more)
        taken = [_next(scheduler) for _ in range(3)]
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            if (request := scheduler.next_request()) is not None:
                taken.append(request)
            time.sleep(0.01)
        assert sorted(r.url for r in taken) == ["http://b.example/news/0", "http://b.example/news/1",
                                                "http://c.example/news/found"], "its crawl's requests only"
        assert {r.meta[LEASE_META].crawl for r in taken} == {"news"}
    finally:
        scheduler.close("shutdown")
    assert {c: q.crawl_stats(c)["pending"] for c in ("shop", "news")} == {"shop": 3, "news": 3}, "released on close"
    assert q.stats()["pending"] == 9, "the default crawl's 3 were not taken"


def test_crawlq_lease_crawls_takes_several_names_and_refuses_what_is_not_a_crawl_list(
    redis_server: RedisServer, name: str
) -> None:
    def scheduler(**settings: Any) -> Scheduler:
        return Scheduler.from_crawler(get_crawler(Spider, {"CRAWLQ_URL": redis_server.url, "CRAWLQ_QUEUE": name,
                                                          **settings}))

    assert scheduler(CRAWLQ_LEASE_CRAWLS=("news", "shop")).options["lease_crawls"] == ["news", "shop"]
    for value, why in [
        (["news", "sh op"], 'got "sh op"'),
        (["news", ""], 'got ""'),
        (["a:b"], "lease_crawls: crawl name \"a:b\" holds ':'"),
        (7, "a string of names separated by spaces, or a list of names"),
    ]:
        with pytest.raises(crawlq.ConfigError, match=re.escape(why)):
            scheduler(CRAWLQ_LEASE_CRAWLS=value)
    with pytest.raises(NotConfigured, match="both set: set one of them"):
        scheduler(CRAWLQ_LEASE_CRAWLS=["news"], CRAWLQ_OPTIONS={"lease_crawls": "news"})


def test_leases_in_flight_are_kept_alive_by_the_queue_and_an_undecodable_item_is_never_held(
    redis_server: RedisServer, name: str
) -> None:
    import time

    settings = {"CRAWLQ_QUEUE": name, "CRAWLQ_OPTIONS": {"lease_ttl": 0.3},
                "SPIDER_MIDDLEWARES": {"crawlq.scrapy.SpiderMiddleware": 60},
                "DOWNLOADER_MIDDLEWARES": {"crawlq.scrapy.DownloaderMiddleware": 10}}
    scheduler = _open(settings, redis_server)
    q = crawlq.Queue(redis_server.url, name)
    try:
        assert scheduler.options["extend_every"] == pytest.approx(0.1), "the core's rule: a third of lease_ttl"
        # a payload of a newer request format: no framework of this version can run it
        q.seed([{"url": "http://a.example/newer", "payload": {"$request": 99}}])
        deadline = time.monotonic() + 5
        while q.stats()["dead"] == 0 and time.monotonic() < deadline:
            assert scheduler.next_request() is None, "never handed to Scrapy"
        [dead] = q.dead()
        assert dead["last_error"].startswith("undecodable: ") and "newer" in dead["last_error"]
        scheduler.enqueue_request(scrapy.Request("http://a.example/slow"))
        request = None
        while request is None and time.monotonic() < deadline:
            request = scheduler.next_request()
        assert request is not None and request.url == "http://a.example/slow"
        time.sleep(0.7)  # more than twice the lease time, the request still in flight
        q.reclaim()
        assert (q.stats()["leased"], q.stats()["reclaimed_total"]) == (1, 0), "nothing expired"
        scheduler.finish(request)
        _answered(scheduler)  # (an ack goes from the answerer's threads)
        assert (q.stats()["done"], q.stats()["reclaimed_total"]) == (1, 0), "acked by its own lease"
    finally:
        scheduler.close("finished")


def test_a_429_with_retry_after_holds_the_request_and_its_host(redis_server: RedisServer, name: str) -> None:
    import time

    from scrapy.exceptions import IgnoreRequest
    from scrapy.http import Response

    from crawlq.scrapy import DownloaderMiddleware

    settings = {"CRAWLQ_QUEUE": name, "SPIDER_MIDDLEWARES": {"crawlq.scrapy.SpiderMiddleware": 60},
                "DOWNLOADER_MIDDLEWARES": {"crawlq.scrapy.DownloaderMiddleware": 10},
                "CRAWLQ_OPTIONS": {"retry_after_max": 600}}
    scheduler = _open(settings, redis_server)
    try:
        for url in ("http://busy.example/1", "http://busy.example/2", "http://odd.example/1", "http://date.example/1"):
            scheduler.enqueue_request(scrapy.Request(url))
        middleware = DownloaderMiddleware(scheduler.crawler)
        got = {}
        while len(got) < 3:
            request = scheduler.next_request()
            if request is not None:
                got[request.url.split("/")[2]] = request
        q = crawlq.Queue(redis_server.url, name)
        asked = time.time()
        with pytest.raises(IgnoreRequest):
            middleware.process_response(got["busy.example"], Response(got["busy.example"].url, status=429,
                                                                     headers={"Retry-After": "120"}))
        info = q.host_info("busy.example")
        assert info["held_until"] == pytest.approx(asked + 120, abs=5), "the host waits out its Retry-After"
        assert info["adaptive_extra"] > 0, "and a 429 is a rate limit"
        # a header that is neither seconds nor a date: the retry goes on without it
        with pytest.raises(IgnoreRequest):
            middleware.process_response(got["odd.example"], Response(got["odd.example"].url, status=503,
                                                                    headers={"Retry-After": "later"}))
        # an HTTP-date ten years on: held for retry_after_max (CRAWLQ_OPTIONS), not ten years
        years_on = email.utils.formatdate(time.time() + 10 * 365 * 86400, usegmt=True)
        asked = time.time()
        with pytest.raises(IgnoreRequest):
            middleware.process_response(got["date.example"], Response(got["date.example"].url, status=503,
                                                                     headers={"Retry-After": years_on}))
        assert q.host_info("date.example")["held_until"] == pytest.approx(asked + 600, abs=5)
        assert q.stats()["retried_total"] == 3
        q.close()
    finally:
        scheduler.close("shutdown")


def test_robots_txt_feeds_the_crawl_delay_and_holds_no_burst(redis_server: RedisServer, name: str) -> None:
    from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
    from scrapy.exceptions import IgnoreRequest
    from scrapy.robotstxt import ProtegoRobotParser
    from scrapy.utils.misc import build_from_crawler
    from twisted.internet.defer import Deferred

    from crawlq.scrapy import DownloaderMiddleware

    settings = {"CRAWLQ_QUEUE": name, "SPIDER_MIDDLEWARES": {"crawlq.scrapy.SpiderMiddleware": 60},
                "DOWNLOADER_MIDDLEWARES": {"crawlq.scrapy.DownloaderMiddleware": 10},
                "ROBOTSTXT_OBEY": True, "USER_AGENT": "site-spider/1"}
    scheduler = _open(settings, redis_server)
    q = crawlq.Queue(redis_server.url, name)
    try:
        for url in ("http://r.example/1", "http://r.example/2", "http://op.example/1"):
            scheduler.enqueue_request(scrapy.Request(url))
        middleware = DownloaderMiddleware(scheduler.crawler)
        robots = RobotsTxtMiddleware(scheduler.crawler)
        middleware._robots = robots  # the crawler's robots.txt middleware (no engine in this test)
        # (the fetch-ahead thread may lease r.example/1 a moment before this asks: then this is /2)
        r1 = _next(scheduler)
        assert r1.url in ("http://r.example/1", "http://r.example/2")

        # the first request of r.example passes (Scrapy's robots.txt middleware, after ours, then
        # fetches robots.txt and holds it); while robots.txt is being fetched a further request of
        # r.example goes back to the frontier and the host is paused
        assert middleware.process_request(r1) is None
        robots._parsers["r.example"] = Deferred()
        q.set_host_delay("op.example", 5.0)
        held = None
        while held is None or "r.example" not in held.url:
            held = scheduler.next_request()
        assert held.url in ("http://r.example/1", "http://r.example/2") and held.url != r1.url
        with pytest.raises(IgnoreRequest):
            middleware.process_request(held)
        assert LEASE_META not in held.meta, "its lease was answered: no middleware answers it again"
        info = q.host_info("r.example")
        assert info["paused"] and info["ready"] == 1, "given back, the host paused while robots.txt is fetched"
        assert q.stats()["released_total"] == 1

        # robots.txt read: its Crawl-delay for our agent becomes the host's delay; the host resumes
        body = b"User-agent: *\nCrawl-delay: 1.5\n\nUser-agent: other\nCrawl-delay: 9\n"
        parser = build_from_crawler(ProtegoRobotParser, scheduler.crawler, body)
        scheduler._on_robots_parsed(parser, r1)
        info = q.host_info("r.example")
        assert (info["delay"], info["delay_from_robots"], info["paused"]) == (1.5, True, False)
        # an operator's delay is never overridden
        scheduler._on_robots_parsed(parser, scrapy.Request("http://op.example/robots.txt"))
        assert q.host_info("op.example")["delay"] == 5.0
        # a robots.txt without a Crawl-delay removes the one robots.txt set
        scheduler._on_robots_parsed(build_from_crawler(ProtegoRobotParser, scheduler.crawler, b"User-agent: *\n"), r1)
        assert q.host_info("r.example")["delay"] is None
    finally:
        q.close()
        scheduler.close("shutdown")


def _next(scheduler: Scheduler) -> scrapy.Request:
    """The scheduler's next request (its fetch-ahead thread may hold it for a moment)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        request = scheduler.next_request()
        if request is not None:
            return request
        time.sleep(0.01)
    raise AssertionError("no request within 5 s")


def _answered(scheduler: Any) -> None:
    """Wait until the scheduler's answers on their way are back and read."""
    deadline = time.monotonic() + 10
    while scheduler.answers_on_their_way():
        assert time.monotonic() < deadline, "an answer never came back"
        time.sleep(0.01)


def test_a_page_is_acked_with_the_requests_its_callback_yields_in_one_call(redis_server: RedisServer, name: str) -> None:
    from scrapy import signals
    from scrapy.exceptions import IgnoreRequest
    from scrapy.http import HtmlResponse

    from crawlq.scrapy import SpiderMiddleware

    settings = {"CRAWLQ_QUEUE": name, "SPIDER_MIDDLEWARES": {"crawlq.scrapy.SpiderMiddleware": 60},
                "DOWNLOADER_MIDDLEWARES": {"crawlq.scrapy.DownloaderMiddleware": 10}}
    scheduler = _open(settings, redis_server)
    crawler = scheduler.crawler
    dropped: list[str] = []

    def ignore_some(request, spider):
        if "ignored" in request.url:
            raise IgnoreRequest("not this one")

    crawler.signals.connect(ignore_some, signal=signals.request_scheduled)
    crawler.signals.connect(lambda request, spider: dropped.append(request.url), signal=signals.request_dropped, weak=False)
    middleware = SpiderMiddleware.from_crawler(crawler)
    q = crawlq.Queue(redis_server.url, name)
    try:
        scheduler.enqueue_request(scrapy.Request("http://a.example/"))
        page = _next(scheduler)
        response = HtmlResponse(page.url, request=page, body=b"<html></html>")
        yielded = [scrapy.Request("http://a.example/new"), {"title": "kept"}, scrapy.Request("http://a.example/"),
                   scrapy.Request("http://a.example/ignored")]
        calls: list[str] = []
        real = scheduler.queue

        class Counting:
            def __getattr__(self, method: str):
                if method not in ("lease", "release"):  # (the fetch-ahead thread's)
                    calls.append(method)
                return getattr(real, method)

        scheduler.queue = Counting()  # type: ignore[assignment]
        out = list(middleware.process_spider_output(response, iter(yielded), None))
        scheduler.queue = real
        assert out == [{"title": "kept"}], "items pass, requests are the frontier's"
        assert calls == ["ack_with_requests"], "the page's ack and its links: one call"
        # the answer went from a thread: the spider waits for it, and its report is read on
        # the reactor's thread once it is back
        assert scheduler.has_pending_requests()
        _answered(scheduler)
        assert dropped == ["http://a.example/"], "the page itself was seen; the ignored one never scheduled"
        assert (scheduler.stats.get_value("crawlq/seeded"), scheduler.stats.get_value("crawlq/duplicates")) == (2, 1)
        stats = q.stats()
        assert (stats["done"], stats["seen"], stats["pending"] + stats["leased"]) == (1, 2, 1)
        # a callback that raises: what it yielded before is seeded, the page nacked for a retry
        page = _next(scheduler)
        assert page.url == "http://a.example/new"
        assert page.meta["crawlq_found_on"] == "http://a.example/"

        def failing():
            yield scrapy.Request("http://a.example/deeper")
            raise ValueError("parse failed")

        response = HtmlResponse(page.url, request=page, body=b"")
        with pytest.raises(ValueError):
            list(middleware.process_spider_output(response, failing(), None))
        stats = q.stats()
        # (the scheduler's fetch-ahead thread may hold one of the two by now)
        assert (stats["done"], stats["seen"], stats["pending"] + stats["leased"], stats["retried_total"]) == (1, 3, 2, 1)
    finally:
        scheduler.close("finished")


def test_answers_go_from_threads_and_closing_waits_for_them(redis_server: RedisServer, name: str) -> None:
    from scrapy.http import HtmlResponse

    from crawlq.scrapy import SpiderMiddleware

    base = {"SPIDER_MIDDLEWARES": {"crawlq.scrapy.SpiderMiddleware": 60},
            "DOWNLOADER_MIDDLEWARES": {"crawlq.scrapy.DownloaderMiddleware": 10}}
    with pytest.raises(NotConfigured, match="CRAWLQ_ANSWER_THREADS"):
        _open({**base, "CRAWLQ_QUEUE": name, "CRAWLQ_ANSWER_THREADS": -1}, redis_server)
    q = crawlq.Queue(redis_server.url, name)
    for threads, queue_name in [(8, name), (0, name + "-on-reactor")]:
        scheduler = _open({**base, "CRAWLQ_QUEUE": queue_name, "CRAWLQ_ANSWER_THREADS": threads}, redis_server)
        middleware = SpiderMiddleware.from_crawler(scheduler.crawler)
        scheduler.enqueue_request(scrapy.Request("http://t.example/"))
        page = _next(scheduler)
        response = HtmlResponse(page.url, request=page, body=b"")
        list(middleware.process_spider_output(response, iter([scrapy.Request("http://t.example/next")]), None))
        if threads == 0:
            # answered on this thread before the output was consumed
            assert scheduler.answers_on_their_way() == 0
            assert scheduler.stats.get_value("crawlq/acked") == 1
        # closing at once: the answer on its way goes in first, then what is held is released
        scheduler.close("finished")
        assert scheduler.stats.get_value("crawlq/acked") == 1
        assert scheduler.stats.get_value("crawlq/seeded") == 2, "the page, then its link"
        stats = crawlq.Queue(redis_server.url, queue_name).stats()
        assert (stats["done"], stats["seen"], stats["pending"], stats["leased"]) == (1, 2, 1, 0), (threads, stats)
    q.close()
