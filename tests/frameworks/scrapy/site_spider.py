"""The spider of the Scrapy framework test: follows every link of the local test site. Run as
`scrapy runspider site_spider.py` by tests/frameworks/run.py, several processes at once on one
crawlq frontier (CRAWLQ_URL, CRAWLQ_QUEUE, START_URL and WORKER come from the environment)."""

import os

import scrapy

# The politeness run (run.py polite): robots.txt obeyed, each host one request at a time and
# paced after its answers.
POLITE = os.environ.get("POLITE") == "1"

from crawlq.scrapy import LEASE_META


class LeaseTimeHeader:
    """Tells the test site when crawlq leased each request, so it can check politeness by the
    Redis clock as well as by arrival times."""

    def process_request(self, request, spider=None):
        lease = request.meta.get(LEASE_META)
        if lease is not None:
            request.headers["X-Crawlq-Leased-At"] = repr(lease.leased_at)


class SiteSpider(scrapy.Spider):
    name = "site"
    start_urls = [os.environ["START_URL"]]
    custom_settings = {
        "SCHEDULER": "crawlq.scrapy.Scheduler",
        "SPIDER_MIDDLEWARES": {"crawlq.scrapy.SpiderMiddleware": 60},
        "DOWNLOADER_MIDDLEWARES": {"crawlq.scrapy.DownloaderMiddleware": 10, "site_spider.LeaseTimeHeader": 20},
        "RETRY_ENABLED": False,
        "DOWNLOAD_DELAY": 0,
        "ROBOTSTXT_OBEY": POLITE,
        "CONCURRENT_REQUESTS": 8,
        "CRAWLQ_URL": os.environ["CRAWLQ_URL"],
        "CRAWLQ_QUEUE": os.environ["CRAWLQ_QUEUE"],
        "CRAWLQ_OPTIONS": {
            "host_delay": float(os.environ["HOST_DELAY"]),
            "max_attempts": 3,
            "backoff_base": 0.2,
            # ?a=1&b=2 and ?b=2&a=1 are one page, as for every crawler of the test
            "sort_query": True,
            "lease_ttl": float(os.environ.get("LEASE_TTL", "30")),
            **({"host_in_flight": 1, "host_delay_after": "answer"} if POLITE else {}),
        },
        "CRAWLQ_IDLE_POLL": 0.2,
        "USER_AGENT": f"site-spider/{os.environ['WORKER']}",
        "LOG_LEVEL": "INFO",
        # Three spiders start at once: their telnet consoles race for the same port range.
        "TELNETCONSOLE_ENABLED": False,
    }

    def parse(self, response):
        yield {"url": response.url, "title": response.css("h1::text").get()}
        for href in response.css("a::attr(href)").getall():
            # who seeded a link rides in its request, for whichever framework fetches it
            yield response.follow(href, callback=self.parse, headers={"X-Seeded-By": "scrapy"})
