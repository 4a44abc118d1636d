"""The crawler of the Crawlee for Python framework test: a BeautifulSoupCrawler that follows every
link of the local test site through crawlq.crawlee.CrawlqStorageClient. Run by
tests/frameworks/run.py, several processes at once on one frontier (CRAWLQ_URL, CRAWLQ_QUEUE,
START_URL, HOST_DELAY and WORKER come from the environment)."""

from __future__ import annotations

import asyncio
import os

from crawlee import ConcurrencySettings, HttpHeaders, RequestOptions
from crawlee.crawlers import BeautifulSoupCrawler, BeautifulSoupCrawlingContext, BasicCrawlingContext
from crawlee.http_clients import ImpitHttpClient

from crawlq.crawlee import CrawlqStorageClient


def seeded_by_us(options: RequestOptions) -> RequestOptions:
    options["headers"] = HttpHeaders({**(options.get("headers") or {}), "x-seeded-by": "crawlee-python"})
    return options


async def main() -> None:
    storage = CrawlqStorageClient(
        os.environ["CRAWLQ_URL"],
        os.environ["CRAWLQ_QUEUE"],
        host_delay=float(os.environ["HOST_DELAY"]),
        backoff_base=0.2,
        # ?a=1&b=2 and ?b=2&a=1 are one page, as for every crawler of the test
        sort_query=True,
        lease_ttl=float(os.environ.get("LEASE_TTL", "30")),
        held_turn=float(os.environ.get("HELD_TURN", "0.05")),
    )
    crawler = BeautifulSoupCrawler(
        storage_client=storage,
        # a redirect's target is seeded into the frontier (storage.post_navigation_hook)
        http_client=ImpitHttpClient(follow_redirects=False),
        max_request_retries=3,
        use_session_pool=False,
        concurrency_settings=ConcurrencySettings(max_concurrency=8, desired_concurrency=8),
        # the held site: robots.txt read before each host's first request
        respect_robots_txt_file=os.environ.get("ROBOTS") == "1",
    )
    # a request held for robots.txt takes its host's turn before it leaves
    crawler.pre_navigation_hook(storage.pre_navigation_hook)
    crawler.post_navigation_hook(storage.post_navigation_hook)
    queue_client = await storage.create_rq_client()
    agent = f"site-crawler-py/{os.environ['WORKER']}"

    @crawler.pre_navigation_hook
    async def tag(context: BasicCrawlingContext) -> None:
        # When crawlq leased the request (seconds, the Redis clock), so the test site can check
        # politeness by lease times as well as by arrival times.
        lease = queue_client.lease_of(context.request)
        context.request.headers = context.request.headers | HttpHeaders({"user-agent": agent, "x-crawlq-leased-at": str(lease.leased_at)})

    @crawler.router.default_handler
    async def handle(context: BeautifulSoupCrawlingContext) -> None:
        # who seeded a link rides in its request, for whichever framework fetches it
        await context.enqueue_links(strategy="all", transform_request_function=seeded_by_us)

    await crawler.run([os.environ["START_URL"]])


if __name__ == "__main__":
    asyncio.run(main())
