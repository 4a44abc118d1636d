"""The spider of bench/scrapy_linger.py: follows every link of the bench's local site through
crawlq's Scrapy scheduler and middlewares, as a Scrapy user sets them up. Run as `scrapy
runspider scrapy_spider.py`; CRAWLQ_URL, CRAWLQ_QUEUE, START_URL, CONCURRENT and ANSWER_LINGER
(seconds) come from the environment."""

import os

import scrapy


class BenchSpider(scrapy.Spider):
    name = "bench"
    start_urls = [os.environ["START_URL"]]
    custom_settings = {
        "SCHEDULER": "crawlq.scrapy.Scheduler",
        "SPIDER_MIDDLEWARES": {"crawlq.scrapy.SpiderMiddleware": 60},
        "DOWNLOADER_MIDDLEWARES": {"crawlq.scrapy.DownloaderMiddleware": 10},
        "RETRY_ENABLED": False,
        "DOWNLOAD_DELAY": 0,
        "ROBOTSTXT_OBEY": False,
        "CONCURRENT_REQUESTS": int(os.environ["CONCURRENT"]),
        "CONCURRENT_REQUESTS_PER_DOMAIN": int(os.environ["CONCURRENT"]),
        "CRAWLQ_URL": os.environ["CRAWLQ_URL"],
        "CRAWLQ_QUEUE": os.environ["CRAWLQ_QUEUE"],
        "CRAWLQ_OPTIONS": {"host_delay": 0.0, "answer_linger": float(os.environ["ANSWER_LINGER"])},
        "CRAWLQ_IDLE_POLL": 0.05,
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
    }

    def parse(self, response):
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, callback=self.parse)
