"""crawlq: a Redis-backed crawl frontier shared by Python, Node.js, PHP and Rust workers.

Everything here comes from the compiled extension `crawlq.crawlq`; `crawlq.scrapy` is the
Scrapy scheduler (it needs Scrapy installed, and is imported only when asked for).
"""

from .crawlq import *  # noqa: F401,F403
from .crawlq import __all__, __version__  # noqa: F401
