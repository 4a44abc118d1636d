"""crawlq.crawlee: the Crawlee for Python storage client on a real redis-server, by its methods
and under a real BasicCrawler (the multi-process crawl of a local site is tests/frameworks/)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest

import crawlq
from conftest import RedisServer

pytest.importorskip("crawlee", reason="pip install 'crawlee>=1,<2' (tools/setup.sh does)")

from crawlee import Request, RequestState  # noqa: E402
from crawlee.crawlers import BasicCrawler, BasicCrawlingContext  # noqa: E402

from crawlq.crawlee import CrawlqStorageClient  # noqa: E402


def storage(redis_server: RedisServer, name: str, **options: object) -> CrawlqStorageClient:
    return CrawlqStorageClient(redis_server.url, name, wait=0.2, backoff_base=0.001, backoff_jitter=0.0, **options)


def test_requests_are_known_by_crawlqs_identity_and_rebuilt_whole(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        client = await storage(redis_server, name).create_rq_client()
        body = bytes(range(256))
        post = Request.from_url("http://a.com/form", method="POST", payload=body, user_data={"label": "form"}, headers={"x-a": "1"})
        response = await client.add_batch_of_requests(
            [Request.from_url("http://a.com/1"), Request.from_url("http://a.com/1#frag"), post, Request.from_url("http://b.com/")]
        )
        assert [p.was_already_present for p in response.processed_requests] == [False, True, False, False]
        assert response.unprocessed_requests == []
        assert (await client.get_metadata()).pending_request_count == 3
        fetched = {}
        for _ in range(3):
            request = await client.fetch_next_request()
            assert request is not None
            fetched[request.url] = request
        again = fetched["http://a.com/form"]
        assert (again.method, again.payload, again.label, again.headers["x-a"]) == ("POST", body, "form", "1")
        assert again.unique_key.startswith("request:"), "a POST's identity: method, URL and body"
        assert fetched["http://a.com/1"].unique_key == "http://a.com/1", "a GET's identity: its canonical URL"
        assert await client.get_request(again.unique_key) == again
        assert not await client.is_finished()
        for request in fetched.values():
            await client.mark_request_as_handled(request)
        assert await client.is_finished()
        metadata = await client.get_metadata()
        assert (metadata.handled_request_count, metadata.total_request_count) == (3, 3)
        with pytest.raises(NotImplementedError, match="shared frontier"):
            await client.purge()

    asyncio.run(main())


def test_the_crawl_option_seeds_into_a_named_crawl(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        crawlq.Queue(redis_server.url, name).seed(["http://a.com/1"])
        client = await storage(redis_server, name, crawl="shop").create_rq_client()
        response = await client.add_batch_of_requests([Request.from_url("http://a.com/1"), Request.from_url("http://a.com/1")])
        # de-duplicated within its crawl: the default crawl's item is another
        assert [p.was_already_present for p in response.processed_requests] == [False, True]
        leases = crawlq.Queue(redis_server.url, name).lease(10, wait=0)
        assert sorted(lease.crawl or "" for lease in leases) == ["", "shop"]

    asyncio.run(main())


def test_lease_crawls_makes_the_client_fetch_only_its_crawls(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        q = crawlq.Queue(redis_server.url, name)
        q.seed([f"http://a.com/default/{i}" for i in range(3)])
        q.seed([f"http://a.com/news/{i}" for i in range(3)], crawl="news")
        client = await storage(redis_server, name, crawl="shop", lease_crawls=["shop"]).create_rq_client()
        await client.add_batch_of_requests([Request.from_url(f"http://b.com/shop/{i}") for i in range(2)])
        fetched = []
        while (request := await client.fetch_next_request()) is not None:
            fetched.append(request.url)
            await client.mark_request_as_handled(request)
        assert sorted(fetched) == ["http://b.com/shop/0", "http://b.com/shop/1"], "its crawl's requests only"
        assert q.crawl_stats("news")["pending"] == 3 and q.stats()["pending"] == 6

    asyncio.run(main())


def test_retry_count_travels_with_the_request_and_a_release_keeps_it(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        first = await storage(redis_server, name).create_rq_client()
        second = await storage(redis_server, name).create_rq_client()  # another process
        await first.add_batch_of_requests([Request.from_url("http://a.com/flaky")])
        request = await first.fetch_next_request()
        request.retry_count += 1
        request.state = RequestState.ERROR_HANDLER
        await first.reclaim_request(request)
        await asyncio.sleep(0.05)
        again = await second.fetch_next_request()
        assert again is not None and again.retry_count == 1
        again.state = RequestState.REQUEST_HANDLER
        await second.reclaim_request(again)  # not a failure: released, attempt not counted
        stats = await second.queue.stats()
        assert (stats["released_total"], stats["retried_total"]) == (1, 1)
        assert await first.reclaim_request(request) is None, "a request this process does not hold"

    asyncio.run(main())


def test_items_of_other_languages_and_host_items(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        client = await storage(redis_server, name).create_rq_client()
        plain = crawlq.Queue(redis_server.url, name)
        plain.seed([{"url": "http://p.com/1", "payload": {"from": "node"}}, {"url": "http://q.com/2", "payload": [1, 2]}, "host.example"])
        got = {}
        while (request := await client.fetch_next_request()) is not None:
            got[request.url] = dict(request.user_data)
            await client.mark_request_as_handled(request)
        for user_data in got.values():
            user_data.pop("__crawlee", None)
        assert got == {"http://p.com/1": {"from": "node"}, "http://q.com/2": {"payload": [1, 2]}}
        [dead] = plain.dead()
        assert dead["last_error"].startswith("undecodable: ") and "host item" in dead["last_error"]

    asyncio.run(main())


def test_invalid_urls_are_unprocessed_and_the_rest_seeded(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        client = await storage(redis_server, name, max_payload_bytes=4096).create_rq_client()
        big = Request.from_url("http://a.com/big", user_data={"blob": "x" * 5000})
        response = await client.add_batch_of_requests([Request.from_url("http://a.com/ok"), big])
        assert [p.unique_key for p in response.processed_requests] == ["http://a.com/ok"]
        assert [u.url for u in response.unprocessed_requests] == ["http://a.com/big"]

    asyncio.run(main())


def test_a_basic_crawler_retries_until_max_request_retries_then_dead_letters(redis_server: RedisServer, name: str) -> None:
    attempts: Counter[str] = Counter()

    async def main() -> None:
        store = storage(redis_server, name, max_attempts=10)
        crawler = BasicCrawler(storage_client=store, max_request_retries=2, configure_logging=False)

        @crawler.router.default_handler
        async def handle(context: BasicCrawlingContext) -> None:
            attempts[context.request.url] += 1
            if context.request.url.endswith("/broken"):
                raise RuntimeError("always fails")
            if context.request.url.endswith("/start"):
                await context.add_requests(["http://a.com/broken", "http://a.com/ok", "http://a.com/start"])

        await crawler.run(["http://a.com/start"])
        stats = await store.queue.stats()
        assert (stats["done"], stats["dead"], stats["retried_total"], await store.queue.is_finished()) == (2, 1, 2, True)
        [dead] = await store.queue.dead()
        assert (dead["url"], dead["attempts"]) == ("http://a.com/broken", 3)
        # The error's text where Python shows it to the queue (not on 3.11: Crawlee handles it
        # in a task of its own), what is known otherwise.
        assert dead["last_error"] in ("always fails", "failed: Crawlee gave up after 2 retries")

    asyncio.run(main())
    assert attempts == {"http://a.com/start": 1, "http://a.com/broken": 3, "http://a.com/ok": 1}


def test_links_crawlee_would_fold_together_all_reach_the_frontier(redis_server: RedisServer, name: str) -> None:
    from crawlee.storages import RequestQueue

    async def main() -> None:
        rq = await RequestQueue.open(name=name, storage_client=storage(redis_server, name))
        # Crawlee's unique_key lower-cases the whole URL: /Docs/Intro and /docs/intro would be one
        await rq.add_requests(["http://a.com/docs/intro", "http://a.com/Docs/Intro", "http://A.com/docs/intro#top"])
        stats = await crawlq.AsyncQueue(redis_server.url, name).stats()
        assert (stats["pending"], stats["duplicates_total"]) == (2, 1), "two pages; crawlq's identity folds the third"

    asyncio.run(main())


def test_a_429_with_retry_after_holds_the_retry_and_the_host_through_the_hook(redis_server: RedisServer, name: str) -> None:
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from crawlee.crawlers import HttpCrawler, HttpCrawlingContext

    log: list[dict[str, object]] = []
    busy = [0]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            at = time.time()
            first = self.path == "/busy" and busy[0] == 0
            if self.path == "/busy":
                busy[0] += 1
            self.send_response(429 if first else 200)
            if first:
                self.send_header("Retry-After", "2")
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
            log.append({"path": self.path, "at": at, "done": time.time()})

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"

    async def main() -> None:
        # one request of the host at a time: the next one is leased after the 429 is answered
        store = storage(redis_server, name, host_in_flight=1)
        crawler = HttpCrawler(storage_client=store, max_request_retries=2, configure_logging=False)
        crawler.post_navigation_hook(store.post_navigation_hook)

        @crawler.router.default_handler
        async def handle(context: HttpCrawlingContext) -> None:
            pass

        await crawler.run([f"{base}/busy", f"{base}/other"])
        stats = await store.queue.stats()
        assert (stats["done"], stats["dead"], stats["retried_total"]) == (2, 0, 1)
        info = await store.queue.host_info("127.0.0.1")
        assert info["adaptive_extra"] > 0, "a 429 is a rate limit: the host slows down"

    try:
        asyncio.run(main())
    finally:
        server.shutdown()
        server.server_close()
    busy_fetches = [r for r in log if r["path"] == "/busy"]
    assert len(busy_fetches) == 2
    limited = busy_fetches[0]
    after = [r["at"] for r in log if r["at"] > limited["at"]]  # type: ignore[operator]
    assert after and min(after) - limited["done"] >= 2 - 0.005, log  # type: ignore[operator]


def test_redirects_are_seeded_into_the_frontier_with_a_client_that_does_not_follow_them(
    redis_server: RedisServer, name: str
) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from crawlee.crawlers import HttpCrawler, HttpCrawlingContext
    from crawlee.http_clients import ImpitHttpClient

    fetched: list[str] = []
    port = [0]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            host = self.headers["Host"].split(":")[0]
            fetched.append(f"{host}{self.path}")
            moves = {
                "/start": "/middle",
                "/middle": f"http://127.0.0.2:{port[0]}/landing",
                "/also": f"http://127.0.0.2:{port[0]}/landing",
                "/self": "/self",
            }
            if self.path in moves:
                self.send_response(302 if self.path != "/middle" else 301)
                self.send_header("Location", moves[self.path])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("0.0.0.0", 0), Handler)
    port[0] = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    a, b = f"http://127.0.0.1:{port[0]}", f"http://127.0.0.2:{port[0]}"
    handled: list[str] = []

    async def main() -> None:
        store = storage(redis_server, name, host_delay=0.05)
        crawler = HttpCrawler(
            storage_client=store,
            http_client=ImpitHttpClient(follow_redirects=False),
            max_request_retries=1,
            configure_logging=False,
        )
        crawler.post_navigation_hook(store.post_navigation_hook)

        @crawler.router.default_handler
        async def handle(context: HttpCrawlingContext) -> None:
            handled.append(context.request.url)

        await crawler.run(
            [Request.from_url(f"{a}/start", label="page", user_data={"from": "seed"}), f"{a}/also", f"{a}/other", f"{b}/one", f"{a}/self"]
        )
        stats = await store.queue.stats()
        # start, middle and also are done (their targets queued), landing once for both
        # (the second seed of landing is answered by Redis or by the adapter's known-seen cache,
        # which the queue counts as a duplicate too)
        assert (stats["done"], stats["dead"], stats["duplicates_total"]) == (6, 1, 1), stats
        dead = await store.queue.dead()
        # (the error's own line where Python lets the queue see it; not on 3.11)
        assert dead[0]["url"] == f"{a}/self" and (dead[0]["last_error"] or "").startswith("failed"), dead

    try:
        asyncio.run(main())
    finally:
        server.shutdown()
        server.server_close()
    # Crawlee's handler saw only the pages; each URL was fetched once (the self-redirect twice)
    assert sorted(handled) == sorted([f"{a}/other", f"{b}/one", f"{b}/landing"]), handled
    counts = Counter(fetched)
    assert counts.pop("127.0.0.1/self") == 2, fetched
    assert set(counts.values()) == {1}, fetched
    assert len(counts) == 6, fetched


def test_a_request_held_past_held_turn_waits_for_its_hosts_turn_and_fails_without_one(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        store = storage(redis_server, name, held_turn=0.05)
        client = await store.create_rq_client()
        await client.add_batch_of_requests([Request.from_url("http://a.com/1"), Request.from_url("http://a.com/2")])
        prompt, late = await client.fetch_next_request(), await client.fetch_next_request()
        assert prompt is not None and late is not None
        # as if the crawler had waited a second for a.com's robots.txt before starting `late`
        lease, crawl, handed_at = client._in_flight[late.unique_key]
        client._in_flight[late.unique_key] = (lease, crawl, handed_at - 1.0)
        await client.queue.pause_host("a.com")
        # the prompt request started in its lease's turn (as if handed over just now, however
        # slow this machine is): no new turn, the pause is not consulted
        lease, crawl, _ = client._in_flight[prompt.unique_key]
        client._in_flight[prompt.unique_key] = (lease, crawl, time.monotonic())
        assert await client.hold_late_start(prompt, 0.05, timeout=0.15)
        with pytest.raises(RuntimeError, match=r"no turn of the host of http://a\.com/2 within 0\.15 s after the crawler held it"):
            await client.hold_late_start(late, 0.05, timeout=0.15)
        await client.queue.resume_host("a.com")
        # the hook Crawlee calls: a turn now comes
        await store.pre_navigation_hook(_Context(late))
        # a request this process does not hold is left alone
        assert not await client.hold_late_start(Request.from_url("http://a.com/3"), 0.05, timeout=0.15)
        await client.mark_request_as_handled(prompt)
        await client.mark_request_as_handled(late)
        assert await client.is_finished()

    asyncio.run(main())


class _Context:
    """What pre_navigation_hook reads of a Crawlee context."""

    def __init__(self, request: Request) -> None:
        self.request = request


def test_links_kept_for_an_answer_that_fails_are_kept_for_the_next_one(private_redis: RedisServer, name: str) -> None:
    async def main() -> None:
        client = await CrawlqStorageClient(private_redis.url, name, wait=0.2).create_rq_client()
        await client.add_batch_of_requests([Request.from_url("http://a.com/"), Request.from_url("http://b.com/")])
        first, second = await client.fetch_next_request(), await client.fetch_next_request()
        assert first is not None and second is not None
        # found while both pages are held: kept for the next answer
        await client.add_batch_of_requests([Request.from_url("http://x.com/found")])
        # another program's value where the queue keeps x.com's lane: the answer fails whole
        lane = f"crawlq:{{{name}}}:l:0:x.com"
        private_redis.cli("SET", lane, "not a list")
        with pytest.raises(crawlq.CorruptError):
            await client.mark_request_as_handled(first)
        stats = await client.queue.stats()
        assert (stats["done"], stats["seen"]) == (0, 2), "nothing acked or seeded by the failed answer"
        private_redis.cli("DEL", lane)
        # the next answer carries the kept link: found on a page of this process, it is not lost
        await client.mark_request_as_handled(second)
        stats = await client.queue.stats()
        assert (stats["done"], stats["seen"], stats["ready"]) == (1, 3, 1), "the second page acked with the kept link"
        (lease,) = await client.queue.lease(1, wait=0)
        assert lease.url == "http://x.com/found"

    asyncio.run(main())


def test_links_added_while_a_page_is_held_go_with_its_ack_in_one_call(private_redis: RedisServer, name: str) -> None:
    async def main() -> None:
        client = await CrawlqStorageClient(private_redis.url, name, wait=0.2, max_payload_bytes=4096).create_rq_client()
        # nothing held: seeded at once (the start URLs)
        await client.add_batch_of_requests([Request.from_url("http://a.com/")])
        page = await client.fetch_next_request()
        assert page is not None
        calls = lambda: sum(int(line.split("calls=")[1].split(",")[0])  # noqa: E731
                            for line in private_redis.cli("INFO", "commandstats").splitlines() if line.startswith(("cmdstat_fcall:", "cmdstat_evalsha:")))
        before = calls()
        links = [Request.from_url("http://a.com/1"), Request.from_url("http://b.com/"), Request.from_url("http://a.com/")]
        too_big = Request.from_url("http://a.com/big", user_data={"blob": "x" * 5000})
        response = await client.add_batch_of_requests(links + [too_big])
        assert [p.unique_key for p in response.processed_requests][:3] == [r.unique_key for r in links]
        assert response.unprocessed_requests == []
        assert calls() == before, "kept until the page's answer"
        await client.mark_request_as_handled(page)
        assert calls() == before + 1, "the ack and its links: one call"
        stats = await client.queue.stats()
        assert (stats["done"], stats["pending"], stats["seen"]) == (1, 2, 3), "the page's own URL was seen; the one too big refused"
        # a page that fails: its answer sends what is kept on its own first
        second = await client.fetch_next_request()
        assert second is not None
        await client.add_batch_of_requests([Request.from_url("http://c.com/")])
        second.state = RequestState.ERROR_HANDLER
        await client.reclaim_request(second)
        assert (await client.queue.stats())["seen"] == 4

    asyncio.run(main())
