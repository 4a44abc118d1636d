"""Crawlee for Python (1.x) on a crawlq frontier: a storage client whose request queue is a
crawlq queue, so N crawler processes (and workers in other languages) share one frontier.

::

    from crawlee.crawlers import BeautifulSoupCrawler
    from crawlq.crawlee import CrawlqStorageClient

    storage = CrawlqStorageClient("redis://127.0.0.1:6379/0", "frontier", host_delay=1.0)
    crawler = BeautifulSoupCrawler(storage_client=storage, max_request_retries=3)

What it maps:

* A request is seeded as the crawl request every framework reads (docs/PROTOCOL.md section 10):
  method, headers, body (bytes), ``user_data``, label, depth, retries, and under
  ``frameworks["crawlee"]`` what only Crawlee understands. Its identity in the frontier is
  crawlq's (the canonical URL of a GET, else its method, URL and body), not Crawlee's
  ``unique_key`` (which lower-cases the whole URL): a leased request's ``unique_key`` is that
  identity. A duplicate is reported ``was_already_present``; a URL crawlq refuses is an
  unprocessed request and a warning. Links added while the process holds pages (Crawlee adds a
  page's links right before it marks the page handled) go with the next answer: an ack that
  carries them (``ack_with_requests``), one call per page; they are reported added (Crawlee
  only logs it) and a refused one is a warning then. A request seeded by Scrapy, Crawlee for JavaScript or
  Laravel comes back with its method, headers, body, user data and label; one seeded through
  the plain API is a GET of its URL with its payload as ``user_data``; an item that is no
  request (a host item, a newer format) is a dead letter ``undecodable: ...``, never handed to
  Crawlee.
* Crawlee decides retries: a failed request comes back through ``reclaim_request`` as a nack
  that stores its new ``retry_count`` (the other frameworks' fields kept); once Crawlee gives up
  (``max_request_retries``, a 4xx, a ``no_retry``) the request is a dead letter with the error's
  first line where Python lets the queue see it (it does not on 3.11, where Crawlee handles the
  error in a task of its own: then ``failed: Crawlee gave up after N retries`` or ``failed: not
  retried (...)``). A request the crawler skips (robots.txt) is a dead letter ``ignored: ...``.
  crawlq's ``max_attempts`` (the queue's) is a second limit: the lower one wins (set it to
  ``max_request_retries`` + 1 to let Crawlee decide).
* A 429 or 503 with ``Retry-After``: register ``crawler.post_navigation_hook(storage.post_navigation_hook)``
  and a retried 429 is a rate limit (the host's adaptive slow-down) and both kinds hold the
  retry and the host at least the Retry-After, across processes (without the hook Crawlee's
  own backoff decides, and the host is not told).
* Redirects: give the crawler an HTTP client that does not follow them
  (``http_client=ImpitHttpClient(follow_redirects=False)``) and register the same
  post-navigation hook: a 301, 302, 303, 307 or 308 then seeds its ``Location`` into the
  frontier as a request of its own (label, user data, headers and depth kept; the method and
  body kept for 307 and 308, else a GET; credentials not sent to another origin), found on
  the redirecting URL, and the redirecting request is acked (Crawlee's handler does not see
  it). The target is fetched as any request:
  leased when its host's delay and in-flight limit allow, and only once however many URLs
  redirect to it. A redirect to the same page (the same canonical URL) is an error Crawlee
  retries. An HTTP client that follows redirects itself fetches each hop outside the frontier.
* Politeness is crawlq's ``host_delay``, across processes. Leases are extended in the
  background by the queue (``extend_every``, a third of the queue's ``lease_ttl`` unless
  given); on SIGTERM call
  ``release_held()`` on ``storage.queue`` (see the section "Crawlee" of docs/frameworks.md).
* Links Crawlee would drop as repeats within one ``add_requests`` call (its ``unique_key``
  lower-cases the whole URL) all reach a crawlq queue, which de-duplicates them by its own
  identity: ``/Docs/Intro`` and ``/docs/intro`` are two pages.
* ``is_finished`` is the whole frontier's: every process's crawler stops when the crawl is over.
* Datasets and key-value stores go to another storage client (memory unless given).
* A shared frontier is never purged or dropped from a crawler: ``purge`` and ``drop`` raise
  ``NotImplementedError`` (Crawlee then leaves a named queue alone); use the ``crawlq`` CLI.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Awaitable, Sequence
from datetime import datetime, timezone
from typing import Any, TypeVar
from urllib.parse import urljoin, urlsplit

import crawlq

T = TypeVar("T")

try:
    from crawlee import Request, RequestState
    from crawlee.errors import ContextPipelineInterruptedError
    from crawlee.storages import RequestQueue
    from crawlee.configuration import Configuration
    from crawlee.storage_clients import MemoryStorageClient, StorageClient
    from crawlee.storage_clients._base import RequestQueueClient
    from crawlee.storage_clients.models import (
        AddRequestsResponse,
        ProcessedRequest,
        RequestQueueMetadata,
        UnprocessedRequest,
    )
except ImportError:  # the message is the point; the original error stays its __context__
    raise ImportError("crawlq.crawlee needs Crawlee for Python 1.x: pip install 'crawlee>=1,<2'")

__all__ = ["CrawlqRequestQueueClient", "CrawlqStorageClient"]

log = logging.getLogger("crawlq.crawlee")

# The redirects whose Location is seeded as a request of its own (post_navigation_hook).
_REDIRECTS = (301, 302, 303, 307, 308)
# Headers a redirect's target does not get from its source: credentials on another origin, the
# body's description when it becomes a GET (as HTTP clients that follow redirects do).
_CROSS_ORIGIN_HEADERS = ("authorization", "cookie", "proxy-authorization")
_BODY_HEADERS = ("content-type", "content-length", "content-encoding", "transfer-encoding")


def _crawl_request(request: Request, kept: dict[str, Any] | None = None) -> dict[str, Any]:
    """The crawl request (docs/PROTOCOL.md section 10) a Crawlee request is seeded and stored as:
    method, headers, body (bytes), user data (without ``label`` and ``__crawlee``), label,
    depth, retries; what only Crawlee understands under ``frameworks["crawlee"]`` (snake_case,
    shared with Crawlee for JavaScript); ``kept``: the crawl request it was read from, whose
    other frameworks' fields and page found on are kept."""
    user_data = {k: v for k, v in request.user_data.items() if k not in ("label", "__crawlee")}
    user_data = json.loads(json.dumps(user_data, default=str))
    crawlee = request.crawlee_data
    kept = kept or {}
    frameworks = dict(kept.get("frameworks") or {})
    # the key Crawlee gave the request when it was seeded (a read request's unique key is
    # crawlq's identity, so the seeder's own key is kept as it was)
    seeded_key = (frameworks.get("crawlee") or {}).get("unique_key")
    fields: dict[str, Any] = {"unique_key": seeded_key or request.unique_key}
    if request.no_retry:
        fields["no_retry"] = True
    if crawlee.session_rotation_count:
        fields["session_rotation_count"] = crawlee.session_rotation_count
    if crawlee.max_retries is not None:
        fields["max_retries"] = crawlee.max_retries
    frameworks["crawlee"] = {**(frameworks.get("crawlee") or {}), **fields}
    return {
        "url": request.url,
        "method": request.method,
        "headers": [[k, v] for k, v in request.headers.items()],
        "body": request.payload,
        "user_data": user_data,
        "label": request.label,
        "depth": crawlee.crawl_depth,
        "retries": request.retry_count,
        "found_on": kept.get("found_on"),
        "frameworks": frameworks,
    }


def _changes(request: Request, kept: dict[str, Any]) -> dict[str, Any]:
    """What a retry or release of a Crawlee request changes in its stored crawl request (the core
    applies it to the request as stored: ``crawlq.request_update``): the shared fields Crawlee may
    have changed and its own namespace; the URL, the page it was found on and other frameworks'
    fields stay as stored."""
    changes = _crawl_request(request, kept)
    for field in ("url", "found_on"):
        del changes[field]
    changes["frameworks"] = {"crawlee": changes["frameworks"]["crawlee"]}
    return changes


def _request(lease: Any) -> tuple[Request, dict[str, Any]]:
    """The Crawlee request of a lease: its crawl request (``crawlq.request_of``; raises
    ``crawlq.ProtocolError`` for an item that is not one), with that crawl request. Its unique
    key is the item's identity
    in the frontier (the key of a non-GET, else the canonical URL), whatever Crawlee's own
    computation would say, so every framework agrees on what one request is."""
    crawl: dict[str, Any] = dict(crawlq.request_of(lease))
    crawlee = crawl["frameworks"].get("crawlee") or {}
    crawlee_data: dict[str, Any] = {"crawlDepth": crawl["depth"]}
    if crawlee.get("session_rotation_count"):
        crawlee_data["sessionRotationCount"] = crawlee["session_rotation_count"]
    if crawlee.get("max_retries") is not None:
        crawlee_data["maxRetries"] = crawlee["max_retries"]
    headers: dict[str, str] = {}
    for name, value in crawl["headers"]:
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    request = Request.from_url(
        crawl["url"],
        method=crawl["method"],  # any method crawlq stored, as Crawlee sends it
        headers=headers,
        payload=crawl["body"],
        label=crawl["label"],
        unique_key=lease.key or lease.url,
        user_data={**crawl["user_data"], "__crawlee": crawlee_data},
        retry_count=crawl["retries"],
        no_retry=bool(crawlee.get("no_retry")),
    )
    return request, crawl


def _error_line() -> str | None:
    """The first line of the error Crawlee is handling while it marks a request failed."""
    error = sys.exc_info()[1]
    while isinstance(inner := getattr(error, "wrapped_exception", None), BaseException):
        error = inner
    if error is None:
        return None
    text = str(error).strip().split("\n")[0]
    return text or type(error).__name__


def _gave_up(request: Request) -> str:
    # Crawlee does not hand the error to the queue, and handles it in a task of its own on
    # Python 3.11 (where the error above is out of sight): say what is known.
    if request.retry_count:
        return f"failed: Crawlee gave up after {request.retry_count} retries"
    return "failed: not retried (a client error status, no_retry, or max_request_retries 0)"


class CrawlqRequestQueueClient(RequestQueueClient):
    """A Crawlee request queue client on a crawlq queue (made by :class:`CrawlqStorageClient`)."""

    def __init__(self, queue: crawlq.AsyncQueue, *, wait: float = 1.0, forefront_priority: int = 1, stats_cache: float = 0.25,
                 crawl: str | None = None) -> None:
        self.queue = queue
        self._crawl = crawl
        self._wait = wait
        self._forefront_priority = forefront_priority
        self._stats_cache = stats_cache
        self._stats: Any = None
        self._stats_at = 0.0
        self._in_flight: dict[str, Any] = {}
        # (status, Retry-After) of the responses of held requests (post_navigation_hook)
        self._responses: dict[str, tuple[int, str | None]] = {}
        # requests whose redirect target was seeded: acked when Crawlee marks them handled
        self._redirected: set[str] = set()
        # links added while pages are held, with their URLs: sent with the next answer
        self._links: list[tuple[Any, str]] = []
        self._opened = datetime.now(timezone.utc)

    async def _read_stats(self) -> Any:
        if self._stats is None or time.monotonic() - self._stats_at > self._stats_cache:
            self._stats = await self.queue.stats()
            self._stats_at = time.monotonic()
        return self._stats

    async def get_metadata(self) -> RequestQueueMetadata:
        stats = await self._read_stats()
        now = datetime.now(timezone.utc)
        handled = stats["done"] + stats["dead"]
        pending = stats["pending"] + stats["leased"]
        return RequestQueueMetadata(
            id=self.queue.name,
            name=self.queue.name,
            accessed_at=now,
            created_at=self._opened,
            modified_at=now,
            had_multiple_clients=True,
            handled_request_count=handled,
            pending_request_count=pending,
            total_request_count=handled + pending,
        )

    async def drop(self) -> None:
        raise NotImplementedError("crawlq: a shared frontier is not dropped from a crawler (use the crawlq CLI)")

    async def purge(self) -> None:
        raise NotImplementedError("crawlq: a shared frontier is not purged from a crawler (use the crawlq CLI)")

    async def add_batch_of_requests(self, requests: Sequence[Request], *, forefront: bool = False) -> AddRequestsResponse:
        items: list[Any] = []
        for request in requests:
            item = _crawl_request(request)
            if forefront or request.forefront:
                item["priority"] = self._forefront_priority
            items.append(item)
        if items and self._in_flight:
            # Links found while this process holds pages: Crawlee adds a page's links right
            # before it marks the page handled, so they go with the next answer of this process
            # (an ack carrying them: one call per page). Every answer sends all that is kept,
            # so what is kept belongs to pages not answered yet: a crash loses nothing a new
            # lease of those pages would not find again. Crawlee only logs this reply.
            self._links.extend(zip(items, (request.url for request in requests)))
            kept = [ProcessedRequest(id=None, unique_key=r.unique_key, was_already_present=False, was_already_handled=False) for r in requests]
            return AddRequestsResponse(processed_requests=kept, unprocessed_requests=[])
        report = await self.queue.seed_requests(items, crawl=self._crawl) if items else None
        refused = {entry.index: entry for entry in (report.invalid if report else [])}
        processed, unprocessed = [], []
        for index, request in enumerate(requests):
            if index in refused:
                log.warning("crawlq refused %s: %s", request.url, refused[index].reason)
                unprocessed.append(UnprocessedRequest(unique_key=request.unique_key, url=request.url, method=request.method))
                continue
            item_id = report.ids[index] if report else None
            processed.append(
                ProcessedRequest(id=item_id, unique_key=request.unique_key, was_already_present=item_id is None, was_already_handled=False)
            )
        self._stats = None
        return AddRequestsResponse(processed_requests=processed, unprocessed_requests=unprocessed)

    def lease_of(self, request: Request) -> Any:
        """The crawlq lease behind a request this process fetched (None when it holds none)."""
        held = self._in_flight.get(request.unique_key)
        return held[0] if held else None

    async def get_request(self, unique_key: str) -> Request | None:
        held = self._in_flight.get(unique_key)
        return None if held is None else _request(held[0])[0]

    async def fetch_next_request(self) -> Request | None:
        while True:
            leases = await self.queue.lease(1, wait=self._wait)
            if not leases:
                return None
            lease = leases[0]
            try:
                request, crawl = _request(lease)
            except (crawlq.CrawlqError, ValueError, TypeError) as exc:
                # not something Crawlee can fetch: a dead letter, never thrown at it or held
                await self.queue.nack(lease, retry=False, reason=f"undecodable: {exc}")
                log.warning("dead-lettered %s: not a crawl request Crawlee can fetch: %s", lease.url or lease.host, exc)
                continue
            self._in_flight[request.unique_key] = (lease, crawl, time.monotonic())
            return request

    async def hold_late_start(self, request: Request, held_turn: float, timeout: float) -> bool:
        """Wait for a turn of the host of a request this process holds when the crawler starts
        it more than ``held_turn`` seconds after its lease (it waited for the host's robots.txt);
        whether it is held here. Raises when no turn comes within ``timeout``."""
        held = self._in_flight.get(request.unique_key)
        if held is None:
            return False
        held_for = time.monotonic() - held[2]
        if held_for > held_turn and not await self.queue.wait_host_turn(request.url, lease=held[0], timeout=timeout):
            raise RuntimeError(
                f"crawlq: no turn of the host of {request.url} within {timeout} s after the crawler held it "
                f"{held_for:.1f} s: it is paused or at its in-flight limit"
            )
        return True

    def note_response(self, request: Request, status: int, retry_after: str | None) -> bool:
        """Note a held request's response status and Retry-After; whether it is held here."""
        if request.unique_key not in self._in_flight:
            return False
        self._responses[request.unique_key] = (status, retry_after)
        return True

    async def seed_redirect(self, request: Request, status: int, location: str) -> str | None:
        """Seed the target of a held request's redirect as a request of its own (see the module
        notes); the target URL, or None when this client does not hold the request. Raises
        ValueError for a redirect to the same page or a target crawlq refuses."""
        if request.unique_key not in self._in_flight:
            return None
        target = urljoin(request.url, location)
        if crawlq.normalize(target)["canonical"] == crawlq.normalize(request.url)["canonical"]:
            raise ValueError(f"HTTP {status}: {request.url} redirects to itself ({location})")
        keeps_body = status in (307, 308)
        dropped = set() if keeps_body else set(_BODY_HEADERS)
        source, moved_to = urlsplit(request.url), urlsplit(target)
        if (source.scheme, source.netloc) != (moved_to.scheme, moved_to.netloc):
            dropped.update(_CROSS_ORIGIN_HEADERS)
        user_data = {k: v for k, v in request.user_data.items() if k not in ("label", "__crawlee")}
        moved = Request.from_url(
            target,
            method=request.method if keeps_body or request.method == "HEAD" else "GET",
            headers={k: v for k, v in request.headers.items() if k.lower() not in dropped},
            payload=request.payload if keeps_body else None,
            label=request.label,
            user_data={**user_data, "__crawlee": {"crawlDepth": request.crawl_depth}},
        )
        item: Any = _crawl_request(moved)
        item["found_on"] = request.url
        report = await self.queue.seed_requests([item], crawl=self._crawl)
        if report.invalid:
            raise ValueError(f"HTTP {status}: crawlq refused the redirect target {target}: {report.invalid[0].reason}")
        self._redirected.add(request.unique_key)
        self._stats = None
        return target

    async def _nack_for_retry(self, lease: Any, key: str, **options: Any) -> str:
        """A nack for a retry; after a 429 or 503 (noted by the storage client's
        post_navigation_hook) a rate limit (429) with the host's Retry-After (ignored when it is
        neither seconds nor an HTTP-date)."""
        status, retry_after = self._responses.pop(key, (0, None))
        if status not in (429, 503):
            return await self.queue.nack(lease, **options)
        return await self.queue.nack(lease, rate_limited=status == 429, retry_after_header=retry_after, **options)

    def _take_links(self) -> list[tuple[Any, str]]:
        kept, self._links = self._links, []
        return kept

    async def _kept_unless_sent(self, kept: list[tuple[Any, str]], send: Awaitable[T]) -> T:
        """The call `send` of kept links taken out (`kept`); if it fails they are kept again,
        ahead of those found meanwhile, for the next answer: some belong to pages other calls
        answer, which would lose them (sent again after a call that went in after all, they
        are duplicates)."""
        try:
            return await send
        except BaseException:
            self._links[:0] = kept
            raise

    @staticmethod
    def _warn_refused(report: Any, urls: list[str]) -> None:
        for entry in report.invalid:
            log.warning("crawlq refused %s: %s", urls[entry.index], entry.reason)

    async def _send_links(self) -> None:
        """Seed the kept links on their own (before an answer that is not an ack)."""
        kept = self._take_links()
        if kept:
            items = [item for item, _ in kept]
            report = await self._kept_unless_sent(kept, self.queue.seed_requests(items, crawl=self._crawl))
            self._warn_refused(report, [url for _, url in kept])

    async def _ack(self, lease: Any) -> bool:
        """Ack a page with the kept links: one call."""
        kept = self._take_links()
        if not kept:
            return bool(await self.queue.ack(lease))
        items = [item for item, _ in kept]
        acked, report = await self._kept_unless_sent(kept, self.queue.ack_with_requests(lease, items))
        self._warn_refused(report, [url for _, url in kept])
        return bool(acked)

    async def mark_request_as_handled(self, request: Request) -> ProcessedRequest | None:
        self._responses.pop(request.unique_key, None)
        redirected = request.unique_key in self._redirected
        self._redirected.discard(request.unique_key)
        held = self._in_flight.pop(request.unique_key, None)
        if held is None:
            return None
        lease = held[0]
        if redirected:
            # its target is queued in the frontier: this request's work is done
            if not await self._ack(lease):
                log.warning("%s: its lease expired before it was handled; another process may fetch it again", request.url)
        elif request.state in (RequestState.ERROR, RequestState.ERROR_HANDLER):
            reason = _error_line() or _gave_up(request)
            await self._send_links()
            await self.queue.nack(lease, retry=False, reason=reason)
        elif request.state == RequestState.SKIPPED:
            await self._send_links()
            await self.queue.nack(lease, retry=False, reason="ignored: skipped by the crawler (robots.txt)")
        elif not await self._ack(lease):
            log.warning("%s: its lease expired before it was handled; another process may fetch it again", request.url)
        self._stats = None
        return ProcessedRequest(id=lease.id, unique_key=request.unique_key, was_already_present=True, was_already_handled=True)

    async def reclaim_request(self, request: Request, *, forefront: bool = False) -> ProcessedRequest | None:
        self._redirected.discard(request.unique_key)
        held = self._in_flight.pop(request.unique_key, None)
        if held is None:
            return None
        lease, crawl, _ = held
        await self._send_links()  # every answer sends the kept links
        payload = crawlq.request_update(lease, _changes(request, crawl))
        if request.state == RequestState.ERROR_HANDLER:
            outcome = await self._nack_for_retry(lease, request.unique_key, reason=_error_line(), payload=payload)
            if outcome == "dead":
                log.warning("%s: a dead letter after %d attempts (the queue's max_attempts came before Crawlee's retries)", request.url, lease.attempt)
        else:
            self._responses.pop(request.unique_key, None)
            await self.queue.release(lease, payload=payload)
        self._stats = None
        return ProcessedRequest(id=lease.id, unique_key=request.unique_key, was_already_present=True, was_already_handled=False)

    async def is_empty(self) -> bool:
        return (await self._read_stats())["pending"] == 0

    async def is_finished(self) -> bool:
        return await self.queue.is_finished()


def _keep_every_link_for_crawlq() -> None:
    """Crawlee's RequestQueue drops, within one ``add_requests`` call, requests whose Crawlee
    ``unique_key`` repeats; that key lower-cases the whole URL, so a page's links to
    ``/Docs/Intro`` and ``/docs/intro`` (two pages) would lose one before the queue sees it.
    On a crawlq queue every request goes through, and crawlq de-duplicates them by its own
    identity (the same in every framework). Other queues keep Crawlee's behaviour."""
    crawlee_transform = RequestQueue._transform_requests

    def transform_requests(self: Any, requests: Sequence[str | Request]) -> list[Request]:
        if not isinstance(getattr(self, "_client", None), CrawlqRequestQueueClient):
            return crawlee_transform(self, requests)
        return [self._transform_request(request) for request in requests]

    RequestQueue._transform_requests = transform_requests  # type: ignore[method-assign]


_keep_every_link_for_crawlq()


class CrawlqStorageClient(StorageClient):
    """A Crawlee storage client whose request queues are crawlq queues on one Redis.

    ``queue`` names the crawlq queue of the crawler's default request queue (a named Crawlee
    queue uses its own name); ``held_turn`` is how late (seconds after its lease) a request may
    start before :meth:`pre_navigation_hook` makes it take a turn of its host; ``crawl`` names
    the crawl the requests it seeds go into (docs/crawls.md: de-duplicated within it, its hosts
    shared with every other crawl; links sent with a page's answer go into the page's crawl;
    leases come from every crawl, or with ``lease_crawls=["shop"]``, a queue option, only from
    those crawls); other keyword options are :class:`crawlq.AsyncQueue` options.
    ``other_storage`` keeps datasets and key-value stores (default: in memory).
    """

    def __init__(
        self,
        url: str,
        queue: str = "default",
        *,
        other_storage: StorageClient | None = None,
        wait: float = 1.0,
        forefront_priority: int = 1,
        held_turn: float = 0.05,
        crawl: str | None = None,
        **queue_options: Any,
    ) -> None:
        self.url = url
        self._crawl = crawl
        self._held_turn = held_turn
        self.queue_name = queue
        self._other = other_storage or MemoryStorageClient()
        self._wait = wait
        self._forefront_priority = forefront_priority
        # leases in flight are extended by the queue's extender (the core's rule for adapters:
        # a third of the lease time unless given); bad options fail here, not at first use
        self._options = crawlq.framework_options(queue_options)
        self._clients: dict[str, CrawlqRequestQueueClient] = {}

    @property
    def queue(self) -> crawlq.AsyncQueue:
        """The crawlq queue of the default request queue (``release_held()`` on SIGTERM)."""
        return self._client(self.queue_name).queue

    def get_storage_client_cache_key(self, configuration: Configuration) -> Any:
        """Crawlee caches the storages it opens per storage client class and this key: two
        clients on other Redis servers or queues must not share a request queue."""
        return (type(self).__name__, self.url, self.queue_name)

    async def pre_navigation_hook(self, context: Any) -> None:
        """A Crawlee pre-navigation hook (``crawler.pre_navigation_hook(storage.pre_navigation_hook)``):
        a request the crawler starts more than ``held_turn`` seconds (default 0.05) after its
        lease, because it waited for the host's robots.txt (``respect_robots_txt_file``), first
        waits for a turn of its host (``wait_host_turn``), so the requests of a host leased
        during that fetch leave spaced by its delay instead of all at once when it arrives. A
        request with no turn within 30 s fails (Crawlee retries it)."""
        for client in self._clients.values():
            if await client.hold_late_start(context.request, self._held_turn, 30.0):
                return

    async def post_navigation_hook(self, context: Any) -> None:
        """A Crawlee post-navigation hook (``crawler.post_navigation_hook(storage.post_navigation_hook)``)
        that notes each response's status and Retry-After: a 429 or 503 that Crawlee retries is
        then a rate limit (429) holding the retry and the host at least its Retry-After
        (seconds or an HTTP-date), across processes. With an HTTP client that does not follow
        redirects, a redirect's ``Location`` is seeded as a request of its own and the
        redirecting request ends quietly (acked)."""
        response = getattr(context, "http_response", None)
        if response is None:
            return
        status = getattr(response, "status_code", 0)
        headers = getattr(response, "headers", {}) or {}
        location = headers.get("location") or headers.get("Location")
        if status in _REDIRECTS and location:
            for client in self._clients.values():
                target = await client.seed_redirect(context.request, status, location)
                if target is not None:
                    # ends the request quietly: Crawlee marks it handled (an ack)
                    raise ContextPipelineInterruptedError(f"redirected to {target}, queued in the frontier")
        retry_after = headers.get("retry-after") or headers.get("Retry-After")
        for client in self._clients.values():
            if client.note_response(context.request, status, retry_after):
                return

    def _client(self, name: str) -> CrawlqRequestQueueClient:
        if name not in self._clients:
            queue = crawlq.AsyncQueue(self.url, name, **self._options)
            self._clients[name] = CrawlqRequestQueueClient(queue, wait=self._wait, forefront_priority=self._forefront_priority,
                                                           crawl=self._crawl)
        return self._clients[name]

    async def create_rq_client(
        self,
        *,
        id: str | None = None,
        name: str | None = None,
        alias: str | None = None,
        configuration: Configuration | None = None,
    ) -> CrawlqRequestQueueClient:
        # Never purged on start: the frontier is shared with other processes.
        return self._client(name or id or self.queue_name)

    async def create_dataset_client(self, *, id: str | None = None, name: str | None = None, alias: str | None = None, configuration: Configuration | None = None) -> Any:
        return await self._other.create_dataset_client(id=id, name=name, alias=alias, configuration=configuration)

    async def create_kvs_client(self, *, id: str | None = None, name: str | None = None, alias: str | None = None, configuration: Configuration | None = None) -> Any:
        return await self._other.create_kvs_client(id=id, name=name, alias=alias, configuration=configuration)
