"""Crawlee for Python (1.x) on a crawlq frontier: a storage client whose request queue is a
crawlq queue, so N crawler processes (and workers in other languages) share one frontier.

::

    from crawlee.crawlers import BeautifulSoupCrawler
    from crawlq.crawlee import CrawlqStorageClient

    storage = CrawlqStorageClient("redis://127.0.0.1:6379/0", "frontier", host_delay=1.0)
    crawler = BeautifulSoupCrawler(storage_client=storage, max_request_retries=3)

What it maps:

* A request is seeded under its ``unique_key`` (crawlq's de-duplication key: lifelong and
  shared by every process) with its fields as the payload (a binary body stays bytes). A
  duplicate is reported ``was_already_present``; a URL crawlq refuses is an unprocessed request
  and a warning. A URL seeded by a worker in another language becomes ``Request.from_url``
  with the item's payload as ``user_data`` (under ``"payload"`` unless it is a dict).
* Crawlee decides retries: a failed request comes back through ``reclaim_request`` as a nack
  that stores its new ``retry_count``; once Crawlee gives up (``max_request_retries``, a 4xx, a
  ``no_retry``) the request is a dead letter with the error's first line where Python lets the
  queue see it (it does not on 3.11, where Crawlee handles the error in a task of its own: then
  ``failed: Crawlee gave up after N retries`` or ``failed: not retried (...)``). A request the
  crawler skips (robots.txt) is a dead letter ``ignored: ...``. crawlq's ``max_attempts`` is a
  second limit (the lower one wins): the client sets it one above Crawlee's default of 3
  retries unless given.
* Politeness is crawlq's ``host_delay``, across processes. Leases are extended in the
  background (``extend_every``, a third of ``lease_ttl`` unless given); on SIGTERM call
  ``release_held()`` on ``storage.queue`` (see the README's "Use with Crawlee").
* ``is_finished`` is the whole frontier's: every process's crawler stops when the crawl is over.
* Datasets and key-value stores go to another storage client (memory unless given).
* A shared frontier is never purged or dropped from a crawler: ``purge`` and ``drop`` raise
  ``NotImplementedError`` (Crawlee then leaves a named queue alone); use the ``crawlq`` CLI.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import crawlq

try:
    from crawlee import Request, RequestState
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

# The payload of an item this client seeded: the request's fields, so any process rebuilds it.
RECORD = "crawlee"


def _record(request: Request) -> dict[str, Any]:
    # Crawlee's own serializer decodes a binary body as UTF-8 (and fails); crawlq keeps bytes.
    fields = request.model_dump(mode="json", by_alias=True, exclude={"payload"})
    return {RECORD: 1, "request": fields, "body": request.payload}


def _request(lease: Any) -> Request | None:
    """The Crawlee request of a lease; None for a host item (no URL)."""
    payload = lease.payload
    if isinstance(payload, dict) and payload.get(RECORD) == 1 and isinstance(payload.get("request"), dict):
        fields = dict(payload["request"])
        if payload.get("body") is not None:
            fields["payload"] = payload["body"]
        return Request.model_validate(fields)
    if lease.url is None:
        return None
    user_data = payload if isinstance(payload, dict) else ({} if payload is None else {"payload": payload})
    return Request.from_url(lease.url, user_data=user_data)


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

    def __init__(self, queue: crawlq.AsyncQueue, *, wait: float = 1.0, forefront_priority: int = 1, stats_cache: float = 0.25) -> None:
        self.queue = queue
        self._wait = wait
        self._forefront_priority = forefront_priority
        self._stats_cache = stats_cache
        self._stats: Any = None
        self._stats_at = 0.0
        self._in_flight: dict[str, Any] = {}
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
            item: dict[str, Any] = {"url": request.url, "key": request.unique_key, "payload": _record(request)}
            if forefront or request.forefront:
                item["priority"] = self._forefront_priority
            items.append(item)
        report = await self.queue.seed(items) if items else None
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
        return self._in_flight.get(request.unique_key)

    async def get_request(self, unique_key: str) -> Request | None:
        lease = self._in_flight.get(unique_key)
        return None if lease is None else _request(lease)

    async def fetch_next_request(self) -> Request | None:
        while True:
            leases = await self.queue.lease(1, wait=self._wait)
            if not leases:
                return None
            lease = leases[0]
            request = _request(lease)
            if request is None:
                await self.queue.nack(lease, retry=False, reason=f"not a Crawlee request: host item {lease.host} has no URL")
                continue
            self._in_flight[request.unique_key] = lease
            return request

    async def mark_request_as_handled(self, request: Request) -> ProcessedRequest | None:
        lease = self._in_flight.pop(request.unique_key, None)
        if lease is None:
            return None
        if request.state == RequestState.ERROR:
            reason = _error_line() or _gave_up(request)
            await self.queue.nack(lease, retry=False, reason=reason)
        elif request.state == RequestState.SKIPPED:
            await self.queue.nack(lease, retry=False, reason="ignored: skipped by the crawler (robots.txt)")
        elif not await self.queue.ack(lease):
            log.warning("%s: its lease expired before it was handled; another process may fetch it again", request.url)
        self._stats = None
        return ProcessedRequest(id=lease.id, unique_key=request.unique_key, was_already_present=True, was_already_handled=True)

    async def reclaim_request(self, request: Request, *, forefront: bool = False) -> ProcessedRequest | None:
        lease = self._in_flight.pop(request.unique_key, None)
        if lease is None:
            return None
        if request.state == RequestState.ERROR_HANDLER:
            outcome = await self.queue.nack(lease, reason=_error_line(), payload=_record(request))
            if outcome == "dead":
                log.warning("%s: a dead letter after %d attempts (the queue's max_attempts came before Crawlee's retries)", request.url, lease.attempt)
        else:
            await self.queue.release(lease, payload=_record(request))
        self._stats = None
        return ProcessedRequest(id=lease.id, unique_key=request.unique_key, was_already_present=True, was_already_handled=False)

    async def is_empty(self) -> bool:
        return (await self._read_stats())["pending"] == 0

    async def is_finished(self) -> bool:
        return await self.queue.is_finished()


class CrawlqStorageClient(StorageClient):
    """A Crawlee storage client whose request queues are crawlq queues on one Redis.

    ``queue`` names the crawlq queue of the crawler's default request queue (a named Crawlee
    queue uses its own name); other keyword options are :class:`crawlq.AsyncQueue` options.
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
        **queue_options: Any,
    ) -> None:
        self.url = url
        self.queue_name = queue
        self._other = other_storage or MemoryStorageClient()
        self._wait = wait
        self._forefront_priority = forefront_priority
        # Crawlee retries a request 3 times by default: 4 deliveries.
        queue_options.setdefault("max_attempts", 4)
        lease_ttl = queue_options.setdefault("lease_ttl", 120.0)
        queue_options.setdefault("extend_every", lease_ttl / 3)
        self._options = queue_options
        self._clients: dict[str, CrawlqRequestQueueClient] = {}

    @property
    def queue(self) -> crawlq.AsyncQueue:
        """The crawlq queue of the default request queue (``release_held()`` on SIGTERM)."""
        return self._client(self.queue_name).queue

    def _client(self, name: str) -> CrawlqRequestQueueClient:
        if name not in self._clients:
            queue = crawlq.AsyncQueue(self.url, name, **self._options)
            self._clients[name] = CrawlqRequestQueueClient(queue, wait=self._wait, forefront_priority=self._forefront_priority)
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
