"""Scrapy on a crawlq frontier: N spider processes (and workers in other languages) share one
queue, each page is fetched once, retries and politeness are crawlq's.

Settings (``settings.py`` or ``custom_settings``)::

    SCHEDULER = "crawlq.scrapy.Scheduler"
    SPIDER_MIDDLEWARES = {"crawlq.scrapy.SpiderMiddleware": 60}   # just after HttpErrorMiddleware
    DOWNLOADER_MIDDLEWARES = {"crawlq.scrapy.DownloaderMiddleware": 10}
    RETRY_ENABLED = False              # crawlq retries (max_attempts, backoff); see below
    DOWNLOAD_DELAY = 0                 # crawlq's host_delay holds across every process
    CRAWLQ_URL = "redis://127.0.0.1:6379/0"   # unset: REDIS_URL (scrapy-redis's), then this
    CRAWLQ_QUEUE = "%(spider)s"        # the queue's name; %(spider)s is the spider's name
    CRAWLQ_OPTIONS = {"host_delay": 1.0, "max_attempts": 3}   # crawlq.Queue keyword options
    CRAWLQ_CRAWL = None                # a named crawl to seed into (docs/crawls.md); None: none
    CRAWLQ_LEASE_CRAWLS = None         # the named crawls to lease from, e.g. ["news"]; None: all
    CRAWLQ_ANSWER_THREADS = 8          # pages answered at once off the reactor (0: on it)

What happens to a request:

* ``enqueue_request`` seeds it: the URL, a JSON payload holding the whole request (method,
  headers, body and bytes in meta kept as bytes, callback and errback by name, cb_kwargs, flags),
  Scrapy's priority (clamped to -32768..32767). A GET without a body is known by its URL, as
  every crawlq worker knows it; any other request by its Scrapy fingerprint (``key``), so two
  POSTs to one URL are two items. A request seen before (by any process, ever) is dropped
  (``request_dropped``), ``dont_filter`` included unless ``CRAWLQ_FORCE_DONT_FILTER`` is set
  (then it is seeded with ``force``: queued again once finished, never while queued or leased).
* With ``CRAWLQ_CRAWL`` set, the requests it seeds go into that named crawl (de-duplicated
  within it, its hosts shared with every other crawl of the queue); the requests a page yields
  go into the page's crawl. Leases come from every crawl of the queue, or, with
  ``CRAWLQ_LEASE_CRAWLS`` (a list of crawl names, or one string of names separated by spaces),
  only from those crawls (the queue option ``lease_crawls``; the default crawl is not among
  them).
* ``next_request`` leases one item (``lease(1, wait=0)``) and rebuilds the request; a URL
  seeded by a worker in another language (no payload) becomes ``Request(url)`` for
  ``parse``. The lease rides in ``request.meta["crawlq_lease"]``.
* The request ends when its callback's output has been consumed: the spider middleware
  gathers the requests the callback yields and seeds them with the page's ack in one call
  (``Queue.ack_with_requests``), so a page costs one round trip however many links it has and
  the frontier never looks empty while they are on their way (``request_scheduled`` is sent
  as each is yielded, ``request_dropped`` for those the frontier had seen, once the answer is
  back). The answer goes from one of ``CRAWLQ_ANSWER_THREADS`` threads, so the reactor never
  waits for Redis and the pages answered meanwhile go to Redis together in one call; the
  spider does not close while an answer is on its way, and closing waits for them (0: each
  answer is sent on the reactor thread, as it returns). A callback that
  raises seeds what it yielded so far and nacks the page (retried with crawlq's backoff, dead
  after ``max_attempts``). A response
  that ``HttpErrorMiddleware`` refuses (404, 410, ...) is a dead letter at once (reason
  ``HTTP 404``); a status in ``CRAWLQ_RETRY_HTTP_CODES`` (default: Scrapy's
  ``RETRY_HTTP_CODES``) and a download error (DNS, timeout, refused) are nacked for a retry
  and never reach the callback (429 also slows the host down, and a ``Retry-After``, seconds
  or an HTTP-date, holds the retry and the host, at most ``retry_after_max``). A redirect
  seeds the target and acks the original.
* robots.txt (``ROBOTSTXT_OBEY``): the ``Crawl-delay`` of each robots.txt Scrapy reads becomes
  the host's delay for every worker (``set_host_crawl_delay``: never over an operator's
  ``set_host_delay``; capped by ``crawl_delay_max``), for ``ROBOTSTXT_USER_AGENT`` (else
  ``USER_AGENT``). While a host's robots.txt is being fetched, a further request of that host
  goes back to the frontier (its lease released, the host paused until robots.txt is read, at
  most ``DOWNLOAD_TIMEOUT``) instead of waiting in Scrapy's robots.txt middleware and leaving
  with the others in a burst once it arrives; such a request ends with ``IgnoreRequest`` (its
  errback, if any, sees it) and is fetched again from the frontier.
* One owner of retries: crawlq's. With ``RETRY_ENABLED`` left on, a retry that Scrapy's
  RetryMiddleware makes of a leased request becomes a nack of that lease, so the count that
  matters is crawlq's ``max_attempts`` either way.
* Leases are extended by the queue while their request is in flight (``extend_every``: a
  third of the lease time unless ``CRAWLQ_OPTIONS`` sets it; ``crawlq.framework_options``),
  and the leases a process still holds are released once when it closes (Ctrl-C, SIGTERM,
  CLOSESPIDER_*), so another process takes them at once.
* The spider closes when the whole frontier is finished (``Queue.is_finished``: nothing
  queued or leased in any process), not when this process runs dry; with
  ``CRAWLQ_CLOSE_WHEN_FINISHED = False`` it stays open and waits for new seeds.
"""

from __future__ import annotations

import inspect
import logging
import math
import queue as queue_module
import threading
import time
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Optional

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider, IgnoreRequest, NotConfigured
from scrapy.utils.request import request_from_dict
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

import crawlq

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = [
    "LEASE_META",
    "Scheduler",
    "SpiderMiddleware",
    "DownloaderMiddleware",
    "encode_request",
    "decode_request",
]

logger = logging.getLogger(__name__)

LEASE_META = "crawlq_lease"
"""The ``request.meta`` key that holds the request's :class:`crawlq.Lease`."""

REQUEST_META = "crawlq_request"
"""The ``request.meta`` key that holds the crawl request a leased request was read from
(``crawlq.request_of``), whose other frameworks' fields a retry stores back."""

_BYTES = "$bytes"
_PAIRS = "$pairs"
_PRIORITY_MIN, _PRIORITY_MAX = -32768, 32767

# The scheduler of each running crawler, for its middlewares (they are built before it opens).
_SCHEDULERS: weakref.WeakKeyDictionary[Any, Scheduler] = weakref.WeakKeyDictionary()


def _to_json(value: Any, where: str) -> Any:
    """A payload value for one of a request's fields: bytes as bytes (crawlq stores them as
    ``{"$bytes": base64}`` and reads them back as bytes), a dict with keys that are not strings
    (or that could be mistaken for an encoding) as ``{"$pairs": [[key, value], ...]}``.
    Anything else that JSON cannot hold is refused."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (list, tuple)):
        return [_to_json(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and not ({_BYTES, _PAIRS} & value.keys()):
            return {k: _to_json(v, f"{where}.{k}") for k, v in value.items()}
        return {_PAIRS: [[_to_json(k, where), _to_json(v, f"{where}[{k!r}]")] for k, v in value.items()]}
    raise TypeError(f"request {where} holds a {type(value).__name__}, which crawlq cannot store (JSON and bytes only)")


def _from_json(value: Any) -> Any:
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    if isinstance(value, dict):
        if len(value) == 1 and _PAIRS in value:
            return {_hashable(_from_json(k)): _from_json(v) for k, v in value[_PAIRS]}
        return {k: _from_json(v) for k, v in value.items()}
    return value


def _hashable(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key


FOUND_ON_META = "crawlq_found_on"
"""The ``request.meta`` key of the URL of the page a request was found on (the spider
middleware sets it for the requests a callback yields)."""

# meta keys the crawl request carries in its own fields (docs/PROTOCOL.md section 10)
_SHARED_META = ("depth", "user_data", "label", "retry_times", FOUND_ON_META)
# Request.to_dict fields the crawl request carries in its own fields
_SHARED_FIELDS = ("url", "method", "headers", "body", "meta")


_NOT_FOUND = object()


def _callback_name(spider: Optional[Spider], func: Any) -> Any:
    """The name ``Request.to_dict`` writes for a callback or errback, when it is a method of the
    spider under its own name (or not a function: as is); ``_NOT_FOUND`` otherwise."""
    if not callable(func):
        return func
    name = getattr(func, "__name__", None)
    method = getattr(spider, name, None) if spider is not None and isinstance(name, str) else None
    if inspect.ismethod(method) and method.__func__ is getattr(func, "__func__", None):
        return name
    return _NOT_FOUND


def _request_fields(request: Request, spider: Optional[Spider]) -> dict[str, Any]:
    """``request.to_dict(spider=spider)``, without its search of every member of the spider for
    each callback and errback (``inspect.getmembers``: about a tenth of a Scrapy process's CPU on
    pages of 30 links). A callback found otherwise (a method under another name) or not at all
    goes through ``to_dict`` itself, which names it or raises."""
    callback, errback = _callback_name(spider, request.callback), _callback_name(spider, request.errback)
    if callback is _NOT_FOUND or errback is _NOT_FOUND:
        return request.to_dict(spider=spider)
    fields = {"url": request.url, "callback": callback, "errback": errback, "headers": dict(request.headers)}
    for attr in request.attributes:
        fields.setdefault(attr, getattr(request, attr))
    if type(request) is not Request:
        fields["_class"] = request.__module__ + "." + request.__class__.__name__
    return fields


def encode_request(request: Request, spider: Optional[Spider] = None) -> dict[str, Any]:
    """The crawl request a Scrapy request is seeded as (docs/PROTOCOL.md section 10): method,
    headers, body, and from ``meta`` the shared ``user_data``, ``label``, ``depth``,
    ``retry_times`` (as ``retries``) and the page it was found on; what only Scrapy understands
    (callback and errback by name, the rest of meta, cb_kwargs, flags, priority, cookies,
    encoding, dont_filter) under ``frameworks["scrapy"]``, kept intact by other frameworks.
    Raises TypeError naming the field that JSON cannot hold, and ValueError for a callback that
    is not a method of the spider."""
    fields = _request_fields(request, spider)
    meta = dict(fields.get("meta") or {})
    meta.pop(LEASE_META, None)
    shared = {k: meta.pop(k) for k in _SHARED_META if k in meta}
    kept = meta.pop(REQUEST_META, None) or {}
    scrapy_fields = {k: _to_json(v, k) for k, v in fields.items() if k not in _SHARED_FIELDS}
    scrapy_fields["meta"] = _to_json(meta, "meta")
    frameworks = dict(kept.get("frameworks") or {})
    frameworks["scrapy"] = scrapy_fields
    headers = [[k.decode("latin-1"), v.decode("latin-1")] for k, values in request.headers.items() for v in values]
    user_data = shared.get("user_data") or {}
    if not isinstance(user_data, dict):
        raise TypeError(f"request meta['user_data'] must be a dict, not {type(user_data).__name__}")
    return {
        "url": request.url,
        "method": request.method,
        "headers": headers,
        "body": request.body or None,
        "user_data": _to_json(user_data, "meta['user_data']"),
        "label": shared.get("label"),
        "depth": int(shared.get("depth") or 0),
        "retries": int(shared.get("retry_times") or 0),
        "found_on": shared.get(FOUND_ON_META),
        "frameworks": frameworks,
    }


def decode_request(crawl_request: dict[str, Any], spider: Optional[Spider] = None) -> Request:
    """The Scrapy request of a crawl request (``crawlq.request_of``): its ``frameworks["scrapy"]``
    fields when Scrapy seeded it (callbacks by name), else a request for the spider's ``parse``;
    the shared fields go to ``meta`` (``user_data``, ``label``, ``depth``, ``retry_times``), and
    the crawl request itself rides in ``meta["crawlq_request"]`` so a retry stores it back with
    every other framework's fields."""
    fields = dict(crawl_request["frameworks"].get("scrapy") or {})
    meta = _from_json(fields.pop("meta", None) or {})
    meta[REQUEST_META] = crawl_request
    if crawl_request["user_data"]:
        meta["user_data"] = crawl_request["user_data"]
    if crawl_request["label"] is not None:
        meta["label"] = crawl_request["label"]
    if crawl_request["depth"]:
        meta["depth"] = crawl_request["depth"]
    if crawl_request["retries"]:
        meta["retry_times"] = crawl_request["retries"]
    if crawl_request["found_on"] is not None:
        meta[FOUND_ON_META] = crawl_request["found_on"]
    # header text is latin-1 (each byte one character), as encode_request writes it
    headers: dict[bytes, list[bytes]] = {}
    for name, value in crawl_request["headers"]:
        headers.setdefault(_header_bytes(name), []).append(_header_bytes(value))
    fields.update(
        url=crawl_request["url"],
        method=crawl_request["method"],
        headers=headers,
        body=crawl_request["body"] or b"",
        meta=meta,
    )
    fields = {k: _from_json(v) if k in ("cb_kwargs", "cookies") else v for k, v in fields.items()}
    return request_from_dict(fields, spider=spider)


def _header_bytes(text: str) -> bytes:
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:  # text another framework wrote beyond latin-1
        return text.encode("utf-8")


def _retry_after(response: Response) -> Optional[str]:
    """The response's Retry-After as sent (the core parses seconds and HTTP-dates)."""
    value = response.headers.get(b"Retry-After")
    return value.decode("latin-1").strip() or None if value else None


class Scheduler:
    """A Scrapy scheduler whose queue is a crawlq frontier (see the module's documentation)."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.stats = crawler.stats
        # scrapy-redis's REDIS_URL when CRAWLQ_URL is not set: a project moving over keeps its Redis
        self.redis_url: str = settings.get("CRAWLQ_URL") or settings.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
        self.queue_name: str = settings.get("CRAWLQ_QUEUE", "%(spider)s")
        # the core's rule for adapters: leases in flight are extended by the queue's own
        # extender (a third of the lease time unless CRAWLQ_OPTIONS sets extend_every)
        options = dict(settings.getdict("CRAWLQ_OPTIONS"))
        lease_crawls = settings.get("CRAWLQ_LEASE_CRAWLS")
        if lease_crawls is not None:
            if "lease_crawls" in options:
                raise NotConfigured("CRAWLQ_LEASE_CRAWLS and CRAWLQ_OPTIONS' lease_crawls are both set: set one of them")
            # (a list of names or one string of them; the queue's option checks them)
            options["lease_crawls"] = list(lease_crawls) if isinstance(lease_crawls, tuple) else lease_crawls
        self.options: dict[str, Any] = crawlq.framework_options(options)
        self.force_dont_filter: bool = settings.getbool("CRAWLQ_FORCE_DONT_FILTER", False)
        self.close_when_finished: bool = settings.getbool("CRAWLQ_CLOSE_WHEN_FINISHED", True)
        self.idle_poll: float = settings.getfloat("CRAWLQ_IDLE_POLL", 0.5)
        self.crawl: Optional[str] = settings.get("CRAWLQ_CRAWL") or None
        if settings.get("CRAWLQ_KEY") is not None:
            raise NotConfigured(
                "CRAWLQ_KEY is gone: every framework now knows a request the same way (its URL for "
                "a GET, its method, URL and body otherwise; docs/PROTOCOL.md section 10)"
            )
        codes = settings.getlist("CRAWLQ_RETRY_HTTP_CODES", settings.getlist("RETRY_HTTP_CODES"))
        self.retry_http_codes: set[int] = {int(c) for c in codes}
        self.queue: Optional[crawlq.Queue] = None
        self.spider: Optional[Spider] = None
        self._in_flight: dict[str, crawlq.Lease] = {}
        # One lease fetched ahead by a thread that waits in a blocking lease, so a process
        # with nothing to do is woken as soon as any host is due (and processes share fairly).
        self._ahead: list[crawlq.Lease] = []
        self._ahead_lock = threading.Lock()
        self._ahead_taken = threading.Event()
        self._stopping = threading.Event()
        self._fetcher: Optional[threading.Thread] = None
        self._finished_at = 0.0
        self._finished = False
        # robots.txt: whose Crawl-delay to read, and the hosts this process paused while their
        # robots.txt is fetched (netloc -> a URL of the host)
        self.robots_user_agent: str = settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT") or "*"
        self.robots_hold: float = settings.getfloat("DOWNLOAD_TIMEOUT", 180.0)
        self._robots_held: dict[str, str] = {}
        # pages answered from threads (CRAWLQ_ANSWER_THREADS): how many are on their way, and
        # those back, whose reports are read on the reactor thread (_read_answers)
        self.answer_threads: int = settings.getint("CRAWLQ_ANSWER_THREADS", 8)
        if self.answer_threads < 0:
            raise NotConfigured(f"CRAWLQ_ANSWER_THREADS must be 0 or more, got {self.answer_threads}")
        self._answerer: Optional[ThreadPoolExecutor] = None
        self._answering = 0
        self._answered: queue_module.SimpleQueue[tuple[crawlq.Lease, Optional[str], list[Request], Future[Any]]] = (
            queue_module.SimpleQueue()
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Scheduler:
        return cls(crawler)

    # -- engine interface --------------------------------------------------------------

    def open(self, spider: Spider) -> None:
        self.spider = spider
        self._check_middlewares()
        name = self.queue_name % {"spider": spider.name}
        self.queue = crawlq.Queue(self.redis_url, name, **self.options)
        self.queue.stats()  # connect now: a wrong CRAWLQ_URL fails the crawl at its start
        _SCHEDULERS[self.crawler] = self
        self.crawler.signals.connect(self._on_idle, signal=signals.spider_idle)
        robots_parsed = getattr(signals, "robots_parsed", None)
        if robots_parsed is not None:
            self.crawler.signals.connect(self._on_robots_parsed, signal=robots_parsed)
        self._fetcher = threading.Thread(target=self._fetch_ahead, name="crawlq-fetch-ahead", daemon=True)
        self._fetcher.start()
        if self.answer_threads > 0:
            self._answerer = ThreadPoolExecutor(self.answer_threads, thread_name_prefix="crawlq-answer")
        logger.info("crawlq frontier %s at %s", name, crawlq.redacted_url(self.redis_url), extra={"spider": spider})

    def close(self, reason: str) -> None:
        _SCHEDULERS.pop(self.crawler, None)
        self._stopping.set()
        self._ahead_taken.set()
        if self._fetcher is not None:
            self._fetcher.join(timeout=5)
        if self._answerer is not None:
            # the answers on their way go in before anything is released or closed
            self._answerer.shutdown(wait=True)
            self._read_answers()
        if self.queue is None:
            return
        with self._ahead_lock:
            self._ahead.clear()
        self._in_flight.clear()
        for netloc in list(self._robots_held):
            self.robots_done(netloc)
        # one release of everything this process still holds (in flight, fetched ahead)
        released = self.queue.release_held()
        if released:
            self.stats.inc_value("crawlq/released", released)
            logger.info("crawlq: released %d held lease(s) on close (%s)", released, reason)
        self.queue.close()

    def has_pending_requests(self) -> bool:
        """True until the whole frontier is finished (read at most every CRAWLQ_IDLE_POLL s)."""
        if self._ahead:
            return True
        if self._answering:
            self._read_answers()
            if self._answering:
                return True  # the links of an answer on its way may be all that is left
        if self._in_flight:
            # The engine asks only when nothing is downloading or being scraped here, so a
            # lease still held belongs to a request that ended where no middleware of ours saw
            # it (a third-party middleware dropped it): retry it rather than hold it forever.
            for lease in list(self._in_flight.values()):
                self._answer(lease, lease.url, retry=True, reason="the request ended without an answer")
        now = time.monotonic()
        if now - self._finished_at >= self.idle_poll:
            assert self.queue is not None
            self._finished = self.queue.is_finished()
            self._finished_at = now
        return not self._finished

    def enqueue_request(self, request: Request) -> bool:
        assert self.queue is not None
        lease = request.meta.get(LEASE_META)
        if lease is not None:
            return self._enqueue_copy_of_leased(request, lease)
        return self._seed(request)

    def next_request(self) -> Optional[Request]:
        assert self.queue is not None
        while True:
            with self._ahead_lock:
                leases = [self._ahead.pop()] if self._ahead else []
            if leases:
                self._ahead_taken.set()
            else:
                leases = self.queue.lease(1, wait=0)
            if not leases:
                return None
            lease = leases[0]
            try:
                request = decode_request(dict(crawlq.request_of(lease)), self.spider)
            except Exception as exc:  # no request comes from it: a dead letter, never held
                self.queue.nack(lease, retry=False, reason=f"undecodable: {exc}")
                self.stats.inc_value("crawlq/dead")
                logger.error("crawlq: item %s is not a crawl request Scrapy can run (%s); dead-lettered", lease.id, exc)
                continue
            request.meta[LEASE_META] = lease
            self._in_flight[lease.id] = lease
            self._finished = False
            self.stats.inc_value("crawlq/leased")
            return request

    def __len__(self) -> int:
        assert self.queue is not None
        return int(self.queue.stats()["pending"])

    # -- ends of a request (called by the middlewares) ----------------------------------

    def finish(
        self,
        request: Request,
        *,
        retry: Optional[bool] = None,
        reason: Optional[str] = None,
        delay: Optional[float] = None,
        rate_limited: bool = False,
        retry_after: Optional[str] = None,
        found: Iterable[Request] = (),
    ) -> None:
        """Answer a request's lease once: ack (``retry`` None), nack for a retry (True) or
        to dead letters (False); ``retry_after`` (a Retry-After header's text) holds the retry
        and the host that long. Later calls for the same request change nothing. ``found``:
        the requests its callback yielded, seeded with the ack in one call (before a nack).
        With ``CRAWLQ_ANSWER_THREADS`` above 0 an ack is sent from the answerer's threads and
        may still be on its way when this returns (``answers_on_their_way()``)."""
        found = list(found)
        lease = request.meta.get(LEASE_META)
        if lease is not None and retry is None and (found or self._answerer is not None) and lease.id in self._in_flight:
            self._ack_with_found(lease, request.url, found)
            return
        if found:
            try:
                self._seed_found(found)
            except crawlq.CrawlqError as exc:
                logger.error("crawlq: could not seed the %d request(s) found on %s: %s", len(found), request.url, exc)
                self.stats.inc_value("crawlq/seed_errors")
        if lease is not None:
            self._answer(lease, request.url, retry=retry, reason=reason, delay=delay, rate_limited=rate_limited,
                         retry_after=retry_after, crawl_request=request.meta.get(REQUEST_META))

    def _ack_with_found(self, lease: crawlq.Lease, url: Optional[str], found: list[Request]) -> None:
        """Ack a page and seed the requests found on it (none, maybe), in one call: from a
        thread of the answerer when there is one (its report is read on the reactor thread,
        _read_answers)."""
        del self._in_flight[lease.id]
        assert self.queue is not None
        encoded, kept = self._encode_found(found)
        if self._answerer is None:
            try:
                acked, report = self.queue.ack_with_requests(lease, encoded)  # type: ignore[arg-type]
            except crawlq.CrawlqError as exc:
                self._answer_failed(url, exc)
                return
            self._read_report(kept, report, lease, acked)
            return
        self._answering += 1

        def back(future: Future[Any]) -> None:
            self._answered.put((lease, url, kept, future))
            reactor.callFromThread(self._read_answers)

        # (a page without links too: its ack then goes with the others answered meanwhile)
        answer = self._answerer.submit(self.queue.ack_with_requests, lease, encoded)  # type: ignore[arg-type]
        answer.add_done_callback(back)

    def answers_on_their_way(self) -> int:
        """How many pages' answers are on their way from the answerer's threads
        (``CRAWLQ_ANSWER_THREADS``); the reports of those back are read first."""
        self._read_answers()
        return self._answering

    def _read_answers(self) -> None:
        """Reactor thread: the reports of the answers that came back from the answerer's
        threads (stats, ``request_dropped``, waking the engine for the links added)."""
        while True:
            try:
                lease, url, kept, future = self._answered.get_nowait()
            except queue_module.Empty:
                return
            self._answering -= 1
            try:
                acked, report = future.result()
            except crawlq.CrawlqError as exc:
                self._answer_failed(url, exc)
                continue
            self._read_report(kept, report, lease, acked)

    def _answer_failed(self, url: Optional[str], exc: Exception) -> None:
        # The page is still leased: it comes back (and its links with it) when its lease
        # expires.
        logger.error("crawlq: could not answer the lease of %s: %s", url, exc)
        self.stats.inc_value("crawlq/answer_errors")

    def _encode_found(self, found: list[Request]) -> tuple[list[dict[str, Any]], list[Request]]:
        """The crawl requests of the requests found on a page, and those requests;
        ``request_dropped`` for each one that cannot be one."""
        encoded, kept = [], []
        for request in found:
            crawl_request = self._encode(request)
            if crawl_request is None:
                self._dropped(request)
                continue
            encoded.append(crawl_request)
            kept.append(request)
        return encoded, kept

    def _seed_found(self, found: list[Request]) -> None:
        """Seed the requests found on a page without answering it: one call; ``request_dropped``
        for each one the frontier had seen or refused."""
        assert self.queue is not None
        encoded, kept = self._encode_found(found)
        report = self.queue.seed_requests(encoded, crawl=self.crawl)  # type: ignore[arg-type]
        self._read_report(kept, report, None, True)

    def _read_report(
        self, kept: list[Request], report: crawlq.SeedReport, lease: Optional[crawlq.Lease], acked: bool
    ) -> None:
        """What a seed of the requests `kept` answered (with the ack of `lease`, if any):
        stats, ``request_dropped`` for each one the frontier had seen or refused."""
        if lease is not None:
            self.stats.inc_value("crawlq/acked" if acked else "crawlq/lost")
            if not acked:
                logger.warning("crawlq: lease of %s was lost before its ack (expired and taken back)", lease.url)
        refused = {i.index: i.code for i in report.invalid}
        for index, request in enumerate(kept):
            if index in refused:
                logger.error("crawlq: refused %s: %s", request.url, refused[index], extra={"spider": self.spider})
                self.stats.inc_value(f"crawlq/invalid/{refused[index]}")
            if report.ids[index] is None:
                self._dropped(request)
        if report.added:
            self._finished = False
            self.stats.inc_value("crawlq/seeded", report.added)
            self._wake_engine()
        if report.duplicates:
            self.stats.inc_value("crawlq/duplicates", report.duplicates)

    def _dropped(self, request: Request) -> None:
        self.crawler.signals.send_catch_log(signals.request_dropped, request=request, spider=self.spider)

    def _answer(
        self,
        lease: crawlq.Lease,
        url: Optional[str],
        *,
        retry: Optional[bool] = None,
        reason: Optional[str] = None,
        delay: Optional[float] = None,
        rate_limited: bool = False,
        retry_after: Optional[str] = None,
        crawl_request: Optional[dict[str, Any]] = None,
    ) -> None:
        if self._in_flight.pop(lease.id, None) is None:
            return
        assert self.queue is not None
        try:
            if retry is None:
                acked = self.queue.ack(lease)
                self.stats.inc_value("crawlq/acked" if acked else "crawlq/lost")
                if not acked:
                    logger.warning("crawlq: lease of %s was lost before its ack (expired and taken back)", url)
                return
            payload = None
            if retry and crawl_request is not None and not rate_limited:
                # the stored request counts the retry, every framework's fields kept
                payload = crawlq.request_update(lease, {"retries": crawl_request["retries"] + 1})
            # (the header as the server sent it: one that is neither seconds nor a date is ignored)
            outcome = self.queue.nack(lease, retry=retry, reason=reason, delay=delay, rate_limited=rate_limited,
                                      payload=payload, retry_after_header=retry_after)
            self.stats.inc_value(f"crawlq/{outcome}")
            level = logging.INFO if outcome == "retried" else logging.WARNING
            logger.log(level, "crawlq: %s %s (%s)", outcome, url, reason)
        except crawlq.CrawlqError as exc:
            # The item is still leased: it comes back when its lease expires.
            logger.error("crawlq: could not answer the lease of %s: %s", url, exc)
            self.stats.inc_value("crawlq/answer_errors")

    def hold_for_robots(self, request: Request) -> bool:
        """A leased request that would wait for its host's robots.txt: its lease goes back to
        the frontier and the host is paused until robots.txt is read (robots_done), so the
        host's requests are leased again one by one at its delay rather than leaving at once.
        Returns whether the request was given back (False: it goes on as it is)."""
        lease = request.meta.get(LEASE_META)
        if lease is None or lease.id not in self._in_flight:
            return False
        assert self.queue is not None
        netloc = urlparse_cached(request).netloc
        try:
            if netloc not in self._robots_held:
                self.queue.pause_host(lease.url, self.robots_hold)
                self._robots_held[netloc] = lease.url
            self.queue.release(lease)
        except crawlq.CrawlqError as exc:
            logger.warning("crawlq: could not give %s back while robots.txt is fetched: %s", lease.url, exc)
            return False
        self._in_flight.pop(lease.id, None)
        request.meta.pop(LEASE_META, None)
        self.stats.inc_value("crawlq/robots_held")
        return True

    def robots_done(self, netloc: str) -> None:
        """The robots.txt of `netloc` was read or failed: a host paused for it is resumed."""
        url = self._robots_held.pop(netloc, None)
        if url is not None and self.queue is not None:
            try:
                self.queue.resume_host(url)
            except crawlq.CrawlqError as exc:
                logger.warning("crawlq: could not resume %s after its robots.txt: %s", netloc, exc)

    def _on_robots_parsed(self, robotparser: Any, request: Request) -> None:
        """Scrapy read a host's robots.txt: its Crawl-delay (None when it has none) becomes the
        host's delay for every worker, unless an operator set one."""
        assert self.queue is not None
        delay = _crawl_delay(robotparser, self.robots_user_agent)
        try:
            self.queue.set_host_crawl_delay(request.url, delay)
            if delay is not None:
                self.stats.inc_value("crawlq/robots_crawl_delay")
        except crawlq.CrawlqError as exc:
            logger.warning("crawlq: could not set the Crawl-delay of %s: %s", request.url, exc)
        self.robots_done(urlparse_cached(request).netloc)

    def is_retry_status(self, status: int) -> bool:
        return status in self.retry_http_codes

    # -- internals ----------------------------------------------------------------------

    def _encode(self, request: Request) -> Optional[dict[str, Any]]:
        """The crawl request a Scrapy request is seeded as (None, logged, if it cannot be)."""
        try:
            crawl_request = encode_request(request, self.spider)
        except (TypeError, ValueError) as exc:
            logger.error("crawlq: cannot queue %s: %s", request, exc, extra={"spider": self.spider})
            self.stats.inc_value("crawlq/unencodable")
            return None
        crawl_request["priority"] = min(max(request.priority, _PRIORITY_MIN), _PRIORITY_MAX)
        if request.dont_filter and self.force_dont_filter:
            crawl_request["force"] = True
        return crawl_request

    def _seed(self, request: Request) -> bool:
        assert self.queue is not None
        crawl_request = self._encode(request)
        if crawl_request is None:
            return False
        report = self.queue.seed_requests([crawl_request], crawl=self.crawl)  # type: ignore[list-item]
        if report.invalid:
            invalid = report.invalid[0]
            logger.error("crawlq: refused %s: %s", request.url, invalid.code, extra={"spider": self.spider})
            self.stats.inc_value(f"crawlq/invalid/{invalid.code}")
            return False
        if report.added:
            self._finished = False
            self.stats.inc_value("crawlq/seeded")
            return True
        self.stats.inc_value("crawlq/duplicates")
        return False

    def _enqueue_copy_of_leased(self, request: Request, lease: crawlq.Lease) -> bool:
        """A request the engine got back that still carries a lease: Scrapy's own retry of the
        same request (a nack: crawlq retries) or a redirect (seed the target, ack the page)."""
        if lease.id not in self._in_flight:
            return False  # its lease was answered already; queueing it again would duplicate
        leased = request.meta.pop(REQUEST_META, None) or {}
        request.meta.pop(LEASE_META, None)  # the copy's own meta (Request.replace copies it)
        same = (request.url in (leased.get("url"), lease.url) and request.method == leased.get("method", "GET")
                and (request.body or None) == leased.get("body"))
        if same:
            reason = f"retried by Scrapy (retry_times={request.meta.get('retry_times')})"
            self._answer(lease, lease.url, retry=True, reason=reason, crawl_request=leased or None)
            return True
        seeded = self._seed(request)
        self._answer(lease, lease.url)
        return seeded

    def _check_middlewares(self) -> None:
        settings = self.crawler.settings
        for setting, name in (
            ("SPIDER_MIDDLEWARES", "crawlq.scrapy.SpiderMiddleware"),
            ("DOWNLOADER_MIDDLEWARES", "crawlq.scrapy.DownloaderMiddleware"),
        ):
            enabled = {
                (k if isinstance(k, str) else f"{k.__module__}.{k.__qualname__}"): v
                for k, v in settings.getwithbase(setting).items()
            }
            if enabled.get(name) is None:
                raise NotConfigured(
                    f"crawlq.scrapy.Scheduler needs {name} in {setting} "
                    f"(it answers each request's lease when the request really ends)"
                )
            if setting == "SPIDER_MIDDLEWARES":
                http_error = enabled.get("scrapy.spidermiddlewares.httperror.HttpErrorMiddleware")
                if http_error is not None and enabled[name] <= http_error:
                    raise NotConfigured(
                        f"{name} must come after HttpErrorMiddleware ({http_error}) in "
                        f"SPIDER_MIDDLEWARES, e.g. 60: it must see the HttpError of a 404 "
                        f"before HttpErrorMiddleware swallows it"
                    )

    def _fetch_ahead(self) -> None:
        """Thread: while nothing is fetched ahead, wait in a blocking lease (server-side, no
        polling) and wake the engine when one comes."""
        assert self.queue is not None
        while not self._stopping.is_set():
            if self._ahead:
                self._ahead_taken.wait(timeout=1.0)
                self._ahead_taken.clear()
                continue
            try:
                leases = self.queue.lease(1, wait=self.idle_poll * 4)
            except crawlq.CrawlqError as exc:
                logger.warning("crawlq: lease failed, trying again: %s", exc)
                self._stopping.wait(timeout=1.0)
                continue
            if not leases:
                continue
            with self._ahead_lock:
                if self._stopping.is_set():
                    self.queue.release(leases)
                    return
                self._ahead.extend(leases)
            reactor.callFromThread(self._wake_engine)

    def _wake_engine(self) -> None:
        """Let the engine ask for a request now: the fetcher has one for it."""
        try:
            engine = self.crawler.engine
        except RuntimeError:  # no engine yet (a scheduler opened outside a crawl)
            return
        slot = getattr(engine, "_slot", None)
        nextcall = getattr(slot, "nextcall", None)
        if nextcall is not None:
            nextcall.schedule()

    def _on_idle(self, spider: Spider) -> None:
        if not self.close_when_finished:
            raise DontCloseSpider("crawlq: CRAWLQ_CLOSE_WHEN_FINISHED is off; waiting for new seeds")


def _crawl_delay(robotparser: Any, user_agent: str) -> Optional[float]:
    """The Crawl-delay (seconds) a parsed robots.txt gives `user_agent`, read from the parser
    Scrapy's RobotParser wraps (Protego, the default, and Python's robotparser answer it);
    None when it has none or the parser cannot say."""
    ask = getattr(getattr(robotparser, "rp", None), "crawl_delay", None)
    if ask is None:
        return None
    try:
        value = ask(user_agent)
        delay = None if value is None else float(value)
    except (TypeError, ValueError):
        return None
    return delay if delay is not None and math.isfinite(delay) and delay >= 0 else None


def _scheduler_of(crawler: Crawler) -> Optional[Scheduler]:
    return _SCHEDULERS.get(crawler)


class SpiderMiddleware:
    """Queues the requests a callback yields, then answers the page's lease (ack, or a nack
    when the callback raised or HttpErrorMiddleware refused the response)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SpiderMiddleware:
        return cls(crawler)

    def _split(self, out: Any, response: Response, found: list[Request]) -> bool:
        """Take a yielded request (noting the page it was found on): a new one is gathered in
        `found` for the page's answer once ``request_scheduled`` lets it through; a copy of a
        leased request goes to the engine (its scheduler answers that lease). True if `out`
        was a request."""
        if not isinstance(out, Request):
            return False
        out.meta.setdefault(FOUND_ON_META, response.url)
        if LEASE_META in out.meta:
            assert self.crawler.engine is not None
            self.crawler.engine.crawl(out)
            return True
        # as the engine schedules a request: a handler of request_scheduled may ignore it
        scheduler = _scheduler_of(self.crawler)
        results = self.crawler.signals.send_catch_log(
            signals.request_scheduled, request=out, spider=None if scheduler is None else scheduler.spider, dont_log=IgnoreRequest
        )
        if not any(isinstance(r, Failure) and isinstance(r.value, IgnoreRequest) for _, r in results):
            found.append(out)
        return True

    def process_spider_output(self, response: Response, result: Iterable[Any], spider: Any = None) -> Iterator[Any]:
        scheduler = _scheduler_of(self.crawler)
        if scheduler is None or LEASE_META not in response.request.meta:  # type: ignore[union-attr]
            yield from result
            return
        found: list[Request] = []
        try:
            for out in result:
                if not self._split(out, response, found):
                    yield out
        except Exception as exc:
            scheduler.finish(response.request, retry=True, reason=_reason(exc), found=found)  # type: ignore[arg-type]
            raise
        scheduler.finish(response.request, found=found)  # type: ignore[arg-type]

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any], spider: Any = None
    ) -> AsyncIterator[Any]:
        scheduler = _scheduler_of(self.crawler)
        if scheduler is None or LEASE_META not in response.request.meta:  # type: ignore[union-attr]
            async for out in result:
                yield out
            return
        found: list[Request] = []
        try:
            async for out in result:
                if not self._split(out, response, found):
                    yield out
        except Exception as exc:
            scheduler.finish(response.request, retry=True, reason=_reason(exc), found=found)  # type: ignore[arg-type]
            raise
        scheduler.finish(response.request, found=found)  # type: ignore[arg-type]

    def process_spider_exception(self, response: Response, exception: BaseException, spider: Any = None) -> None:
        scheduler = _scheduler_of(self.crawler)
        if scheduler is None:
            return None
        from scrapy.spidermiddlewares.httperror import HttpError

        if isinstance(exception, HttpError):
            status = response.status
            retry = scheduler.is_retry_status(status) and not response.meta.get("dont_retry")
            scheduler.finish(response.request, retry=retry, reason=f"HTTP {status}")  # type: ignore[arg-type]
        else:
            scheduler.finish(response.request, retry=True, reason=_reason(exception))  # type: ignore[arg-type]
        return None


class DownloaderMiddleware:
    """Nacks what failed to download (retry statuses, network errors) before the spider sees
    it, so crawlq owns the retry; dead-letters what a downloader middleware ignored."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.robots_obey = crawler.settings.getbool("ROBOTSTXT_OBEY")
        # Scrapy's robots.txt middleware of this crawler (found on first use; None: none)
        self._robots: Any = None if self.robots_obey else False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DownloaderMiddleware:
        return cls(crawler)

    def process_request(self, request: Request, spider: Any = None) -> None:
        """A leased request whose host's robots.txt is being fetched goes back to the frontier
        (Scheduler.hold_for_robots) rather than waiting for it with the others."""
        if not self.robots_obey or LEASE_META not in request.meta or request.meta.get("dont_obey_robotstxt"):
            return None
        scheduler = _scheduler_of(self.crawler)
        if scheduler is None or not self._robots_pending(request):
            return None
        if scheduler.hold_for_robots(request):
            raise IgnoreRequest("crawlq: given back to the frontier while the host's robots.txt is fetched")
        return None

    def _robots_pending(self, request: Request) -> bool:
        """Whether Scrapy's robots.txt middleware is fetching the robots.txt of the request's
        host now (a request of that host would wait for it)."""
        if self._robots is None:
            from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware

            middlewares = getattr(getattr(getattr(self.crawler.engine, "downloader", None), "middleware", None),
                                  "middlewares", ())
            self._robots = next((m for m in middlewares if isinstance(m, RobotsTxtMiddleware)), False)
        parsers = getattr(self._robots, "_parsers", None)
        return isinstance(parsers, dict) and isinstance(parsers.get(urlparse_cached(request).netloc), Deferred)

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Response:
        scheduler = _scheduler_of(self.crawler)
        if scheduler is None or LEASE_META not in request.meta or request.meta.get("dont_retry"):
            return response
        if scheduler.is_retry_status(response.status):
            scheduler.finish(
                request,
                retry=True,
                reason=f"HTTP {response.status}",
                rate_limited=response.status == 429,
                retry_after=_retry_after(response),
            )
            raise IgnoreRequest(f"HTTP {response.status}: crawlq retries it")
        return response

    def process_exception(self, request: Request, exception: BaseException, spider: Any = None) -> None:
        scheduler = _scheduler_of(self.crawler)
        if scheduler is not None and request.meta.get("dont_obey_robotstxt") and request.url.endswith("/robots.txt"):
            # a robots.txt that could not be fetched is never parsed: its host goes on
            scheduler.robots_done(urlparse_cached(request).netloc)
        if scheduler is None or LEASE_META not in request.meta:
            return None
        if isinstance(exception, IgnoreRequest):
            scheduler.finish(request, retry=False, reason=f"ignored: {exception}")
        else:
            scheduler.finish(request, retry=True, reason=_reason(exception))
        return None


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]
