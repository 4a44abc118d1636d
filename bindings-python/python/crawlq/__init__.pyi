"""crawlq: a Redis-backed crawl frontier shared by Python, Node.js, PHP and Rust workers.

Durations are seconds (float); timestamps are seconds since the epoch, by the Redis server's
clock.
"""

import builtins
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from types import TracebackType
from typing import Any, Literal, Optional, TypedDict, Union, final, overload

__version__: str
__all__ = [
    "__version__",
    "normalize",
    "shard_of",
    "request_of",
    "request_payload",
    "request_update",
    "default_options",
    "framework_options",
    "redacted_url",
    "Queue",
    "AsyncQueue",
    "Lease",
    "SeedReport",
    "InvalidInput",
    "Leased",
    "AsyncLeased",
    "Work",
    "AsyncWork",
    "CrawlqError",
    "InvalidItemError",
    "ConfigError",
    "InvalidArgumentError",
    "UnavailableError",
    "TimeoutError",
    "ProtocolError",
    "LeaseLostError",
    "ServerError",
    "CorruptError",
]

JSON = Any
"""A payload value: dict[str, JSON], list, tuple, str, int, float, bool, None, or bytes
(stored as ``{"$bytes": base64}``, read back as bytes by every language)."""

class SeedItemDict(TypedDict, total=False):
    url: str
    host: str
    priority: int
    delay: float
    payload: JSON
    force: bool
    key: str
    """The item's identity for de-duplication instead of its canonical URL (1..2048 bytes, no control characters)."""

SeedInput = Union[str, SeedItemDict]

class CrawlRequest(TypedDict):
    """A crawl request in the one shape every framework adapter reads and writes
    (docs/PROTOCOL.md section 10), as ``request_of`` returns it."""
    url: str
    """The URL to fetch: the item's canonical URL."""
    method: str
    """Upper case; ``GET`` unless the request says otherwise."""
    headers: list[tuple[str, str]]
    """In order, a name repeated for each of its values (pairs come back as lists)."""
    body: Optional[bytes]
    user_data: dict[str, JSON]
    """Free JSON from the page that found the request to its handler."""
    label: Optional[str]
    depth: int
    retries: int
    """Times a crawler retried it (Crawlee's retry_count); crawlq's attempt counts deliveries."""
    found_on: Optional[str]
    frameworks: dict[str, JSON]
    """What only one framework understands, under its name (scrapy, crawlee, laravel)."""

class CrawlRequestInput(TypedDict, total=False):
    """A crawl request to seed (``seed_requests``) or store (``request_payload``): a url and any
    of CrawlRequest's fields, plus, to seed, the item's own options."""
    url: str
    method: str
    headers: Union[Sequence[Sequence[str]], dict[str, Union[str, list[str]]]]
    body: Union[bytes, str, None]
    user_data: dict[str, JSON]
    label: Optional[str]
    depth: int
    retries: int
    found_on: Optional[str]
    frameworks: dict[str, JSON]
    priority: int
    delay: float
    force: bool
NackOutcome = Literal["retried", "dead", "lost"]

class ShardStats(TypedDict):
    pending: int
    ready: int
    delayed: int
    leased: int
    dead: int
    done: int
    seen: int
    hosts: int
    hosts_waiting: int
    oldest_pending_age: Optional[float]
    seeded_total: int
    duplicates_total: int
    leased_total: int
    acked_total: int
    nacked_total: int
    retried_total: int
    reclaimed_total: int
    released_total: int
    dead_total: int
    over_budget_total: int
    """New URLs refused by a host budget."""
    revisits: int
    """Acked URLs scheduled to come back (ack's revisit_after); also counted in delayed."""
    seen_cache_hits_total: int
    """Seeded URLs that clients' known-seen caches answered as duplicates without sending them
    (option seen_cache); also counted in duplicates_total."""
    now: float

class Stats(ShardStats, total=False):
    shards: list[ShardStats]
    """Each shard's own figures (a queue of several shards only)."""

class SeenCacheStats(TypedDict):
    entries: int
    hits: int
    misses: int
    resent: int
    resets: int


class DeadLetter(TypedDict):
    id: str
    url: Optional[str]
    host: str
    key: Optional[str]
    payload: JSON
    priority: int
    attempts: int
    last_error: Optional[str]
    died_at: float
    raw: Optional[str]
    """The stored record, when it could not be decoded (the other fields are what could be read)."""

class LeasedItem(TypedDict):
    """A lease a worker holds now (``leased_items``), with the fields its ``Lease`` has but
    ``leased_at``."""
    id: str
    url: Optional[str]
    host: str
    key: Optional[str]
    payload: JSON
    priority: int
    attempt: int
    """1 on the first delivery, as the worker's lease has it."""
    token: int
    expires_at: float
    enqueued_at: float
    last_error: Optional[str]
    crawl: Optional[str]

class LeasedPage(TypedDict):
    """The leases held now (``leased_items``), soonest expiry first."""
    total: int
    """Leases held in the queue (not only on this page), expired ones not reclaimed yet included."""
    now: float
    """The Redis clock when the page was read: an item whose ``expires_at`` is before it expired."""
    items: list[LeasedItem]

class CrawlStats(TypedDict):
    """A named crawl's counts (``crawl_stats``), exact."""
    pending: int
    ready: int
    delayed: int
    leased: int
    dead: int
    done: int
    seen: int
    """URLs of the crawl in the seen set (less those a host deletion forgot)."""
    hosts: int
    """Hosts with at least one ready item of the crawl."""
    oldest_pending_age: Optional[float]
    """Seconds since the oldest item at the front of one of the crawl's lanes was queued; None: none ready."""
    seeded_total: int
    cap: Optional[int]
    """The most of its items leased at once (``set_crawl_cap``); None: no cap."""
    paused: bool
    """Paused by ``pause_crawl``, or being deleted."""
    deleting: bool
    """Being deleted (``delete_crawl``): under way, or stopped part-way (its seeds and limit
    changes are refused until a deletion of it runs to the end)."""
    held_hosts: int
    """Hosts held back because their ready items are all of crawls paused or at their cap."""
    weight: int
    """Its share of each host against the other crawls there (``set_crawl_weight``); 1 by default."""
    rate: Optional[float]
    """The most of its items leased a second (``set_crawl_rate``); None: no rate."""
    host_budget: Optional[int]
    """The most new URLs each host may add to it (``set_crawl_host_budget``); None: none."""
    done_per_second: float
    """Its items acked over the last minute of the Redis clock, a second (the current minute's
    count and the part of the minute before that the last 60 seconds still cover)."""
    seeded_per_second: float
    """Its items seeded (added) over the last minute, a second, reckoned the same way."""

class HostInfo(TypedDict):
    host: str
    delay: Optional[float]
    adaptive_extra: float
    ready: int
    held_until: Optional[float]
    """Not leasable before this time (epoch seconds, the Redis clock), if held back by its
    politeness delay or a timed pause (None while paused until resumed)."""
    paused: bool
    paused_until: Optional[float]
    """When a timed pause ends (epoch seconds); None when not paused or paused until resumed."""
    budget: Optional[int]
    """The most new URLs the host may add (its own budget, else the queue's default); None: no budget."""
    budget_used: int
    """New URLs the host added while the queue had any budget."""
    budget_remaining: Optional[int]
    deleting: bool
    """A deletion of the host (delete_host) is running: it holds the host paused, and pausing or
    resuming it changes nothing until it ends."""
    in_flight_limit: Optional[int]
    """The host's own in-flight limit (set_host_in_flight; 0: none whatever the default); None:
    the workers' host_in_flight applies."""
    in_flight: int
    """Items of the host counted in flight: leased while a limit applied, not answered yet."""
    full: bool
    """Held because it has as many items leased as its limit allows, until an answer frees a slot."""
    delay_from_robots: bool
    """The delay override came from the host's robots.txt Crawl-delay (set_host_crawl_delay)."""
    delay_after: Optional[Literal["lease", "answer"]]
    """The host's own pacing (set_host_delay_after); None: the workers' host_delay_after applies."""
    delay_factor: Optional[float]
    """The host's own delay factor after the answer; None: the workers' host_delay_factor."""

class HostCounts(TypedDict):
    host: str
    items: int
    """Items the host holds: ready + delayed + leased + dead."""
    ready: int
    delayed: int
    leased: int
    dead: int
    next_due: Optional[float]
    """When its next ready item may be leased (epoch seconds, the Redis clock); None when it
    has no ready item or is paused until resumed."""
    paused: bool
    paused_until: Optional[float]

class HostPage(TypedDict):
    hosts: list[HostCounts]
    """The most items first, then by host name."""
    total: int
    """Hosts holding at least one item, in the whole queue."""
    cursor: Optional[str]
    """Pass it to list_hosts for the next page; None after the last one."""

class SeedProgress(TypedDict):
    """How far a seed call is, after one of its round trips."""

    done: int
    """Items handled so far (seeded, found duplicate or refused), of ``total``."""
    total: int
    added: int
    duplicates: int
    invalid: int
    """Items refused so far (the report lists them)."""

class CrawlDeletion(TypedDict):
    crawl: str
    ready: int
    delayed: int
    leased: int
    """Leases removed: their acks raise LeaseLostError."""
    dead: int
    removed: int

class HostDeletion(TypedDict):
    host: str
    ready: int
    delayed: int
    leased: int
    """Leases removed: their acks raise LeaseLostError."""
    dead: int
    removed: int
    left: int
    """Items of the host that arrived while it was being deleted; they stay."""
    forgotten: int
    """Removed items whose URLs left the seen set (forget_seen)."""

class ReclaimReport(TypedDict):
    requeued: int
    dead: int
    remaining: int

class QueuedItem(TypedDict):
    id: str
    url: Optional[str]
    host: str
    key: Optional[str]
    payload: JSON
    priority: int
    attempt: int
    enqueued_at: float
    last_error: Optional[str]

@final
class Lease:
    """A leased item. Pass it back to ack, nack, extend or release."""

    @property
    def id(self) -> str: ...
    @property
    def url(self) -> Optional[str]: ...
    @property
    def host(self) -> str: ...
    @property
    def key(self) -> Optional[str]:
        """The de-duplication key the item was seeded with, or None."""
    @property
    def crawl(self) -> Optional[str]:
        """The named crawl the item was seeded into, or None (the default crawl)."""
    @property
    def payload(self) -> JSON: ...
    @property
    def priority(self) -> int: ...
    @property
    def attempt(self) -> int: ...
    @property
    def token(self) -> int: ...
    @property
    def leased_at(self) -> float: ...
    @property
    def expires_at(self) -> float: ...
    @property
    def enqueued_at(self) -> float: ...
    @property
    def last_error(self) -> Optional[str]: ...
    @property
    def answered(self) -> bool: ...

@final
class InvalidInput:
    """An item a seed call refused."""

    @property
    def index(self) -> int: ...
    @property
    def input(self) -> str: ...
    @property
    def code(self) -> str: ...
    @property
    def reason(self) -> str: ...

@final
class SeedReport:
    """What a seed call did."""

    @property
    def added(self) -> int: ...
    @property
    def duplicates(self) -> int: ...
    @property
    def invalid(self) -> list[InvalidInput]: ...
    @property
    def ids(self) -> list[Optional[str]]:
        """One entry per item, in order: the id it was queued under (its lease's `id`), or None."""

@final
class Leased:
    """`with q.leased() as lease:` acks on success, nacks on exception, releases on interrupt."""

    def __enter__(self) -> Optional[Lease]: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

@final
class AsyncLeased:
    """`async with aq.leased() as lease:` (see Leased)."""

    async def __aenter__(self) -> Optional[Lease]: ...
    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

@final
class Work(Iterator[Lease]):
    """Iterator over leases; leaving it releases what it still holds."""

    def __iter__(self) -> Work: ...
    def __next__(self) -> Lease: ...
    def close(self) -> None: ...
    def __enter__(self) -> Work: ...
    def __exit__(self, *exc: object) -> bool: ...

@final
class AsyncWork(AsyncIterator[Lease]):
    """Async iterator over leases; cancellation releases what it still holds."""

    def __aiter__(self) -> AsyncWork: ...
    def __anext__(self) -> Any: ...
    def aclose(self) -> Any: ...

@final
class Queue:
    """A crawl frontier in Redis. Blocking; the GIL is released during every Redis call."""

    def __new__(
        cls,
        url: str,
        name: str,
        *,
        lease_ttl: float = ...,
        max_attempts: int = ...,
        backoff: Literal["fixed", "exponential"] = ...,
        backoff_base: float = ...,
        backoff_max: float = ...,
        backoff_jitter: float = ...,
        host_delay: float = ...,
        host_in_flight: int = ...,
        host_delay_after: Literal["lease", "answer"] = ...,
        host_delay_factor: float = ...,
        host_delay_max: float = ...,
        crawl_delay_max: float = ...,
        host_key: Literal["host", "domain"] = ...,
        key_prefix: str = ...,
        connect_timeout: float = ...,
        command_timeout: float = ...,
        max_payload_bytes: int = ...,
        seed_batch: int = ...,
        seen_cache: int = ...,
        answer_linger: float = ...,
        reclaim_batch: int = ...,
        adaptive_delay_step: float = ...,
        adaptive_delay_max: float = ...,
        retry_after_max: float = ...,
        tls_ca_file: str = ...,
        min_replicas: int = ...,
        replica_timeout: float = ...,
        lease_crawls: str | Sequence[str] = ...,
        shards: int = ...,
        extend_every: float = ...,
        revisit_after: float = ...,
        sort_query: bool = ...,
        allow_eviction: bool = ...,
        fixed_clock: float = ...,
    ) -> Queue: ...
    @property
    def name(self) -> str: ...
    def seed(
        self,
        items: Union[str, Iterable[SeedInput]],
        *,
        priority: int = 0,
        delay: float = 0.0,
        payload: JSON = None,
        force: bool = False,
        crawl: Optional[str] = None,
        progress: Optional[Callable[[SeedProgress], object]] = None,
    ) -> SeedReport: ...
    def seed_requests(
        self,
        requests: Iterable[CrawlRequestInput],
        *,
        priority: int = 0,
        delay: float = 0.0,
        force: bool = False,
        crawl: Optional[str] = None,
        progress: Optional[Callable[[SeedProgress], object]] = None,
    ) -> SeedReport:
        """Seed crawl requests in the shape every framework adapter reads; a plain GET is known
        by its URL, any other request by its method, URL and body."""
    def lease(self, max: int = 1, wait: float = 5.0, *, ttl: Optional[float] = None) -> list[Lease]: ...
    @overload
    def ack(self, lease: Lease, *, revisit_after: Optional[float] = None, revisit_at: Optional[float] = None) -> bool:
        """Ack; with ``revisit_after`` (seconds) the URL comes back that much later (a recrawl),
        with ``revisit_at`` (epoch seconds, the Redis clock) at that time."""
    @overload
    def ack(self, lease: Sequence[Lease], *, revisit_after: Optional[float] = None, revisit_at: Optional[float] = None) -> list[bool]: ...
    @overload
    def ack_and_lease(
        self, lease: Lease, max: int = 1, wait: float = 5.0, *, ttl: Optional[float] = None
    ) -> tuple[bool, list[Lease]]:
        """Ack and lease the next items in one round trip: ``(acked, leases)``."""
    @overload
    def ack_and_lease(
        self, lease: Sequence[Lease], max: int = 1, wait: float = 5.0, *, ttl: Optional[float] = None
    ) -> tuple[list[bool], list[Lease]]: ...
    def ack_with_links(
        self, lease: Lease, links: Iterable[SeedInput], *, priority: int = 0, delay: float = 0.0, payload: JSON = None, force: bool = False, crawl: Optional[str] = None
    ) -> tuple[bool, SeedReport]:
        """Answer a fetched page and seed the links it found, in one round trip: the links are
        seeded as ``seed`` seeds them, then the lease is acked as ``ack`` acks it. Links resolve
        against the page's URL as a browser resolves an ``href`` (``next.html``, ``/about``,
        ``?page=2``; ``mailto:`` and the like are refused per link). ``acked`` is False when the
        lease was not live any more (its links are seeded all the same)."""
    def ack_with_requests(
        self, lease: Lease, requests: Iterable[CrawlRequestInput], *, priority: int = 0, delay: float = 0.0, force: bool = False, crawl: Optional[str] = None
    ) -> tuple[bool, SeedReport]:
        """``ack_with_links`` for crawl requests (as ``seed_requests`` takes them): the page's
        lease acked and the requests found on it seeded, in one round trip."""
    def ack_with_links_and_lease(
        self,
        lease: Lease,
        links: Iterable[SeedInput],
        max: int = 1,
        wait: float = 5.0,
        *,
        ttl: Optional[float] = None,
        priority: int = 0,
        delay: float = 0.0,
        payload: JSON = None,
        force: bool = False,
        crawl: Optional[str] = None,
    ) -> tuple[bool, SeedReport, list[Lease]]:
        """``ack_with_links``, then lease up to ``max`` more items in the same round trip
        (waiting up to ``wait`` seconds when none is ready): ``(acked, report, leases)``. A
        worker's whole turn on a page in one call; the lease runs even when ``lease`` was not
        live any more. Pages other threads or tasks answer through this queue while such a
        call is on its way go together in the next call (each still gets its own answer)."""
    def ack_with_requests_and_lease(
        self,
        lease: Lease,
        requests: Iterable[CrawlRequestInput],
        max: int = 1,
        wait: float = 5.0,
        *,
        ttl: Optional[float] = None,
        priority: int = 0,
        delay: float = 0.0,
        force: bool = False,
        crawl: Optional[str] = None,
    ) -> tuple[bool, SeedReport, list[Lease]]:
        """``ack_with_requests``, then lease up to ``max`` more items in the same round trip, as
        ``ack_with_links_and_lease`` does: ``(acked, report, leases)``, one call per page for a
        crawler of crawl requests."""
    @overload
    def nack(
        self,
        lease: Lease,
        *,
        retry: bool = True,
        delay: Optional[float] = None,
        reason: Optional[str] = None,
        rate_limited: bool = False,
        payload: JSON = None,
        retry_after: Union[str, float, None] = None,
        retry_after_header: Optional[str] = None,
    ) -> NackOutcome: ...
    @overload
    def nack(
        self,
        lease: Sequence[Lease],
        *,
        retry: bool = True,
        delay: Optional[float] = None,
        reason: Optional[str] = None,
        rate_limited: bool = False,
        payload: JSON = None,
        retry_after: Union[str, float, None] = None,
        retry_after_header: Optional[str] = None,
    ) -> list[NackOutcome]: ...
    @overload
    def extend(self, lease: Lease, ttl: float) -> float: ...
    @overload
    def extend(self, lease: Sequence[Lease], ttl: float) -> list[Optional[float]]: ...
    @overload
    def release(self, lease: Lease, *, payload: JSON = None) -> bool: ...
    @overload
    def release(self, lease: Sequence[Lease], *, payload: JSON = None) -> list[bool]: ...
    def reclaim(self, limit: int = 1000) -> ReclaimReport: ...
    def stats(self) -> Stats: ...
    def dead(self, limit: int = 100, offset: int = 0) -> list[DeadLetter]: ...
    def leased_items(self, limit: int = 100, offset: int = 0) -> LeasedPage:
        """The leases workers hold now, soonest expiry first (an expired one until a lease call
        reclaims it), ``limit`` of them from the ``offset``-th on, with their total: what is in
        flight, for an operator."""
    def dead_letters(self, ids: Sequence[str]) -> list[Optional[DeadLetter]]:
        """The dead letters with these ids, in the order given (None for an id that is not a
        dead letter: unknown, requeued or purged). One round trip per shard the ids name."""
    def requeue_dead(self, ids: Optional[Sequence[str]] = None) -> int: ...
    def extend_held(self) -> int:
        """Extend every lease this queue handed out and that was not answered yet, each to its
        lease time (what ``extend_every`` does in the background); returns how many."""
    def release_held(self) -> int:
        """Release every lease this queue handed out and that was not answered yet (a worker
        stopping: SIGTERM), so other workers take the items at once; returns how many."""
    def is_finished(self) -> bool:
        """Nothing queued or leased anywhere in the queue: the crawl is over for every worker."""
    def purge_dead(self, ids: Optional[Sequence[str]] = None) -> int:
        """Delete the dead letters with these ids, or every one (they stay seen), in calls of at
        most 500 so that none holds Redis for long; returns how many were deleted."""
    def set_host_delay(self, host: str, seconds: Optional[float]) -> HostInfo: ...
    def crawl_stats(self, crawl: str) -> CrawlStats:
        """A named crawl's counts, summed over the shards; zeros for a crawl never seeded."""
    def set_crawl_cap(self, crawl: str, cap: Optional[int]) -> CrawlStats:
        """Cap a named crawl: at most ``cap`` of its items leased at once by all workers
        together (None: no cap). With several shards, ``cap`` must be at least the shard count."""
    def set_crawl_weight(self, crawl: str, weight: Optional[int]) -> CrawlStats:
        """Weigh a named crawl against the others on its hosts: leases in proportion to the
        weights (None: the default, 1), for the items queued from now on."""
    def set_crawl_host_budget(self, crawl: str, urls: Optional[int]) -> CrawlStats:
        """Give a named crawl a host budget: each host may add at most ``urls`` new URLs to it
        (None: no budget). New URLs past it are refused per item (``budget_exhausted``) and not
        marked seen; the host's own budget holds as well."""
    def set_crawl_rate(self, crawl: str, per_second: Optional[float]) -> CrawlStats:
        """Limit a named crawl's rate: at most ``per_second`` of its items leased a second by all
        workers together, spaced evenly (None: no rate)."""
    def pause_crawl(self, crawl: str) -> None:
        """Pause a named crawl: none of its items is leased until ``resume_crawl``."""
    def resume_crawl(self, crawl: str) -> None:
        """Resume a paused crawl: the hosts held for it go back to be leased."""
    def crawls(self) -> list[str]:
        """The queue's named crawls, sorted."""
    def delete_crawl(
        self, crawl: str, *, progress: Optional[Callable[[CrawlDeletion], object]] = None
    ) -> CrawlDeletion:
        """Delete a named crawl: its items (its leases answer lost), counts, limits and
        listing, in bounded calls while workers run; other crawls are not touched.
        Afterwards the name starts a fresh crawl, to which its URLs are new.

        ``progress``, when given, is called after each bounded step with the totals so far
        (the last call's totals are the result's). If it raises (or on Ctrl-C) the deletion
        stops after that step and the exception propagates: what was deleted stays deleted,
        and calling again finishes the job."""
    def host_info(self, host: str) -> HostInfo: ...
    def set_host_crawl_delay(self, host: str, seconds: Optional[float]) -> HostInfo:
        """Set a host's delay from its robots.txt Crawl-delay (None: it has none now),
        unless an operator set one with set_host_delay; capped by ``crawl_delay_max``."""
    def set_host_in_flight(self, host: str, limit: Optional[int]) -> HostInfo:
        """Set the most items of a host leased at once across every worker (0: no limit
        whatever ``host_in_flight``; None: back to it). A full host is leasable again once an
        ack, nack, release or expiry frees a slot."""
    def set_host_delay_after(
        self, host: str, after: Optional[Literal["lease", "answer"]], *, factor: Optional[float] = None
    ) -> HostInfo:
        """Set when a host's delay is counted from, for every worker: "lease" (its next lease
        waits its delay after the previous lease) or "answer" (after the previous item's ack,
        nack, release or expiry; one item in flight unless its in-flight limit allows more),
        with ``factor``: wait factor x how long the answered item was leased when that is
        longer than the delay, at most ``host_delay_max``. None: back to ``host_delay_after``
        and ``host_delay_factor``. Applies to the items leased from then on."""
    def seen_cache_stats(self) -> SeenCacheStats:
        """The known-seen cache's counters (option ``seen_cache``): fingerprints held, links
        answered from it (hits) and sent (misses), links sent after all because the seen epoch
        changed under their hit (resent), and resets."""
    def wait_host_turn(self, url: str, *, lease: Optional[Lease] = None, timeout: float = 30.0) -> bool:
        """Wait for a turn of the host of ``url`` for a request the frontier does not lease:
        a redirect the HTTP client follows while fetching ``lease``. A turn is spaced from the
        host's leases and other turns by its delay, across every worker; it waits while the
        host is at its in-flight limit (a request to ``lease``'s own host runs in its slot) or
        paused. True when the request may start now; False when its turn would come after
        ``timeout`` seconds (nothing is taken then)."""
    def set_host_budget(self, host: str, urls: Optional[int]) -> HostInfo:
        """Set the most new URLs a host may add (None: back to the queue's default). Seeds of
        new URLs past it are reported in ``SeedReport.invalid`` with code ``budget_exhausted``
        and are not marked seen; duplicates and forced re-adds are not counted."""
    def set_default_host_budget(self, urls: Optional[int]) -> None:
        """Set the budget of every host without its own (None: no default)."""
    def default_host_budget(self) -> Optional[int]: ...
    def pause(self, seconds: Optional[float] = None) -> bool:
        """Pause the whole queue for every worker: lease calls hand out nothing (blocking ones
        keep waiting) for ``seconds`` (the Redis clock) or, with None, until ``resume``. Seeding,
        answering leases and stats go on. Returns whether it was paused already."""
    def resume(self) -> bool:
        """Let a paused queue lease again; blocked lease calls wake. Returns whether it was paused."""
    def is_paused(self) -> bool: ...
    def eviction_risk(self) -> Optional[str]:
        """Whether the Redis server holding the queue may evict its keys when its memory is
        full (on a Redis Cluster, every master holding a shard): None when none may, else why
        (the policy and memory limit), as the ConfigError a queue opened without
        ``allow_eviction`` raises. A monitor opened with ``allow_eviction`` shows it. Only
        reads."""
    def pause_host(self, host: str, seconds: Optional[float] = None) -> HostInfo:
        """Pause a host for every worker: no lease takes its items for ``seconds`` (the Redis
        clock) or, with None, until ``resume_host``. Seeding it and answering its leases go on."""
    def resume_host(self, host: str) -> HostInfo:
        """End a host's pause (what was left of its politeness delay still applies); blocked
        lease calls wake."""
    def list_hosts(self, cursor: Optional[str] = None, limit: int = 100) -> HostPage:
        """A page of the hosts holding items (queued, leased or dead), the most items first, with
        their ready, delayed, leased and dead counts. Pass the page's ``cursor`` for the next one.
        Each call is bounded (``limit`` at most 1000) whatever the number of hosts."""
    def delete_host(
        self,
        host: str,
        *,
        forget_seen: bool = False,
        progress: Optional[Callable[[HostDeletion], object]] = None,
    ) -> HostDeletion:
        """Delete a host: its ready, delayed, leased and dead items and its settings (delay,
        pause, budget). Its leases answer lost. Its URLs stay seen unless ``forget_seen`` (then
        the removed items can be seeded again; URLs acked before stay seen). Safe while workers
        run. ``progress``: as ``delete_crawl``'s."""
    def remove_queue(
        self, *, even_if_leased: bool = False, progress: Optional[Callable[[int], object]] = None
    ) -> int:
        """Delete the whole queue (every shard's items, dead letters, host and crawl settings,
        counters and seen set); returns how many Redis keys were deleted. Refused
        (``InvalidArgumentError``) while items are leased unless ``even_if_leased``: stop the
        workers first, as a worker still running makes parts of the queue again. The queue
        opened again under its name is a new one: its URLs can be seeded again. This handle
        goes on with its shards: its next seed (or, opened with ``shards``, its next call)
        makes the queue again with them; its reads before that make nothing again.
        ``progress``, when given, is called after each bounded step with the number of keys
        deleted so far; if it raises (or on Ctrl-C) the removal stops there, leaving the queue
        part-removed: remove it again before using its name."""
    def peek(self, limit: int = 10) -> list[QueuedItem]: ...
    def peek_host(self, host: str, limit: int = 10, offset: int = 0) -> list[QueuedItem]:
        """One host's ready items in the order its leases take them, from the offset-th on
        (paused or held or not; delayed items are not listed; at most 250 a call)."""
    def leased(self, wait: float = 5.0, *, ttl: Optional[float] = None) -> Leased: ...
    def work(
        self, max: int = 10, wait: float = 5.0, *, ttl: Optional[float] = None, stop_when_empty: bool = False
    ) -> Work: ...
    def close(self) -> None:
        """Shut down the calls under way and drop the connection: lease calls waiting in other
        threads return ``[]`` at once and ``work()`` loops end; a later call connects again
        and keeps the leases still held (answer them or ``release_held()``)."""
    def __enter__(self) -> Queue: ...
    def __exit__(self, *exc: object) -> bool: ...
    def _set_fixed_clock(self, ms: Optional[int]) -> None: ...

@final
class AsyncQueue:
    """The asyncio twin of Queue; connects on first use (or `await AsyncQueue.connect(...)`)."""

    def __new__(
        cls,
        url: str,
        name: str,
        *,
        lease_ttl: float = ...,
        max_attempts: int = ...,
        backoff: Literal["fixed", "exponential"] = ...,
        backoff_base: float = ...,
        backoff_max: float = ...,
        backoff_jitter: float = ...,
        host_delay: float = ...,
        host_in_flight: int = ...,
        host_delay_after: Literal["lease", "answer"] = ...,
        host_delay_factor: float = ...,
        host_delay_max: float = ...,
        crawl_delay_max: float = ...,
        host_key: Literal["host", "domain"] = ...,
        key_prefix: str = ...,
        connect_timeout: float = ...,
        command_timeout: float = ...,
        max_payload_bytes: int = ...,
        seed_batch: int = ...,
        seen_cache: int = ...,
        answer_linger: float = ...,
        reclaim_batch: int = ...,
        adaptive_delay_step: float = ...,
        adaptive_delay_max: float = ...,
        retry_after_max: float = ...,
        tls_ca_file: str = ...,
        min_replicas: int = ...,
        replica_timeout: float = ...,
        lease_crawls: str | Sequence[str] = ...,
        shards: int = ...,
        extend_every: float = ...,
        revisit_after: float = ...,
        sort_query: bool = ...,
        allow_eviction: bool = ...,
        fixed_clock: float = ...,
    ) -> AsyncQueue: ...
    @classmethod
    async def connect(cls, url: str, name: str, **options: Any) -> AsyncQueue: ...
    @property
    def name(self) -> str: ...
    async def seed(
        self,
        items: Union[str, Iterable[SeedInput]],
        *,
        priority: int = 0,
        delay: float = 0.0,
        payload: JSON = None,
        force: bool = False,
        crawl: Optional[str] = None,
        progress: Optional[Callable[[SeedProgress], object]] = None,
    ) -> SeedReport: ...
    async def seed_requests(
        self,
        requests: Iterable[CrawlRequestInput],
        *,
        priority: int = 0,
        delay: float = 0.0,
        force: bool = False,
        crawl: Optional[str] = None,
        progress: Optional[Callable[[SeedProgress], object]] = None,
    ) -> SeedReport: ...
    async def lease(self, max: int = 1, wait: float = 5.0, *, ttl: Optional[float] = None) -> list[Lease]: ...
    @overload
    async def ack(self, lease: Lease, *, revisit_after: Optional[float] = None, revisit_at: Optional[float] = None) -> bool: ...
    @overload
    async def ack(self, lease: Sequence[Lease], *, revisit_after: Optional[float] = None, revisit_at: Optional[float] = None) -> list[bool]: ...
    @overload
    async def ack_and_lease(
        self, lease: Lease, max: int = 1, wait: float = 5.0, *, ttl: Optional[float] = None
    ) -> tuple[bool, list[Lease]]: ...
    @overload
    async def ack_and_lease(
        self, lease: Sequence[Lease], max: int = 1, wait: float = 5.0, *, ttl: Optional[float] = None
    ) -> tuple[list[bool], list[Lease]]: ...
    async def ack_with_links(
        self, lease: Lease, links: Iterable[SeedInput], *, priority: int = 0, delay: float = 0.0, payload: JSON = None, force: bool = False, crawl: Optional[str] = None
    ) -> tuple[bool, SeedReport]: ...
    async def ack_with_requests(
        self, lease: Lease, requests: Iterable[CrawlRequestInput], *, priority: int = 0, delay: float = 0.0, force: bool = False, crawl: Optional[str] = None
    ) -> tuple[bool, SeedReport]: ...
    async def ack_with_links_and_lease(
        self,
        lease: Lease,
        links: Iterable[SeedInput],
        max: int = 1,
        wait: float = 5.0,
        *,
        ttl: Optional[float] = None,
        priority: int = 0,
        delay: float = 0.0,
        payload: JSON = None,
        force: bool = False,
        crawl: Optional[str] = None,
    ) -> tuple[bool, SeedReport, list[Lease]]: ...
    async def ack_with_requests_and_lease(
        self,
        lease: Lease,
        requests: Iterable[CrawlRequestInput],
        max: int = 1,
        wait: float = 5.0,
        *,
        ttl: Optional[float] = None,
        priority: int = 0,
        delay: float = 0.0,
        force: bool = False,
        crawl: Optional[str] = None,
    ) -> tuple[bool, SeedReport, list[Lease]]: ...
    @overload
    async def nack(
        self,
        lease: Lease,
        *,
        retry: bool = True,
        delay: Optional[float] = None,
        reason: Optional[str] = None,
        rate_limited: bool = False,
        payload: JSON = None,
        retry_after: Union[str, float, None] = None,
        retry_after_header: Optional[str] = None,
    ) -> NackOutcome: ...
    @overload
    async def nack(
        self,
        lease: Sequence[Lease],
        *,
        retry: bool = True,
        delay: Optional[float] = None,
        reason: Optional[str] = None,
        rate_limited: bool = False,
        payload: JSON = None,
        retry_after: Union[str, float, None] = None,
        retry_after_header: Optional[str] = None,
    ) -> list[NackOutcome]: ...
    @overload
    async def extend(self, lease: Lease, ttl: float) -> float: ...
    @overload
    async def extend(self, lease: Sequence[Lease], ttl: float) -> list[Optional[float]]: ...
    @overload
    async def release(self, lease: Lease, *, payload: JSON = None) -> bool: ...
    @overload
    async def release(self, lease: Sequence[Lease], *, payload: JSON = None) -> list[bool]: ...
    async def reclaim(self, limit: int = 1000) -> ReclaimReport: ...
    async def stats(self) -> Stats: ...
    async def dead(self, limit: int = 100, offset: int = 0) -> list[DeadLetter]: ...
    async def leased_items(self, limit: int = 100, offset: int = 0) -> LeasedPage: ...
    async def dead_letters(self, ids: Sequence[str]) -> list[Optional[DeadLetter]]: ...
    async def requeue_dead(self, ids: Optional[Sequence[str]] = None) -> int: ...
    async def extend_held(self) -> int: ...
    async def release_held(self) -> int: ...
    async def is_finished(self) -> bool: ...
    async def purge_dead(self, ids: Optional[Sequence[str]] = None) -> int:
        """Delete the dead letters with these ids, or every one (they stay seen), in calls of at
        most 500; returns how many were deleted."""
    async def set_host_delay(self, host: str, seconds: Optional[float]) -> HostInfo: ...
    async def crawl_stats(self, crawl: str) -> CrawlStats: ...
    async def set_crawl_cap(self, crawl: str, cap: Optional[int]) -> CrawlStats: ...
    async def set_crawl_weight(self, crawl: str, weight: Optional[int]) -> CrawlStats: ...
    async def set_crawl_host_budget(self, crawl: str, urls: Optional[int]) -> CrawlStats: ...
    async def set_crawl_rate(self, crawl: str, per_second: Optional[float]) -> CrawlStats: ...
    async def pause_crawl(self, crawl: str) -> None: ...
    async def resume_crawl(self, crawl: str) -> None: ...
    async def crawls(self) -> list[str]: ...
    async def delete_crawl(
        self, crawl: str, *, progress: Optional[Callable[[CrawlDeletion], object]] = None
    ) -> CrawlDeletion:
        """As ``Queue.delete_crawl``; ``progress`` is called on the event loop's thread."""
    async def host_info(self, host: str) -> HostInfo: ...
    async def set_host_crawl_delay(self, host: str, seconds: Optional[float]) -> HostInfo: ...
    async def set_host_in_flight(self, host: str, limit: Optional[int]) -> HostInfo: ...
    async def set_host_delay_after(
        self, host: str, after: Optional[Literal["lease", "answer"]], *, factor: Optional[float] = None
    ) -> HostInfo: ...
    async def seen_cache_stats(self) -> SeenCacheStats: ...
    async def wait_host_turn(self, url: str, *, lease: Optional[Lease] = None, timeout: float = 30.0) -> bool: ...
    async def set_host_budget(self, host: str, urls: Optional[int]) -> HostInfo: ...
    async def set_default_host_budget(self, urls: Optional[int]) -> None: ...
    async def default_host_budget(self) -> Optional[int]: ...
    async def pause(self, seconds: Optional[float] = None) -> bool: ...
    async def resume(self) -> bool: ...
    async def is_paused(self) -> bool: ...
    async def eviction_risk(self) -> Optional[str]: ...
    async def pause_host(self, host: str, seconds: Optional[float] = None) -> HostInfo: ...
    async def list_hosts(self, cursor: Optional[str] = None, limit: int = 100) -> HostPage: ...
    async def delete_host(
        self,
        host: str,
        *,
        forget_seen: bool = False,
        progress: Optional[Callable[[HostDeletion], object]] = None,
    ) -> HostDeletion: ...
    async def resume_host(self, host: str) -> HostInfo: ...
    async def remove_queue(
        self, *, even_if_leased: bool = False, progress: Optional[Callable[[int], object]] = None
    ) -> int: ...
    async def peek(self, limit: int = 10) -> list[QueuedItem]: ...
    async def peek_host(self, host: str, limit: int = 10, offset: int = 0) -> list[QueuedItem]: ...
    def leased(self, wait: float = 5.0, *, ttl: Optional[float] = None) -> AsyncLeased: ...
    def work(
        self, max: int = 10, wait: float = 5.0, *, ttl: Optional[float] = None, stop_when_empty: bool = False
    ) -> AsyncWork: ...
    def close(self) -> None:
        """Shut down the calls under way and drop the connection: awaited lease calls return
        ``[]`` at once and ``work()`` loops end; a later call connects again and keeps the
        leases still held (answer them or ``release_held()``)."""
    async def __aenter__(self) -> AsyncQueue: ...
    async def __aexit__(self, *exc: object) -> bool: ...
    def _set_fixed_clock(self, ms: Optional[int]) -> None: ...

class Normalized(TypedDict):
    kind: Literal["url", "host"]
    canonical: str
    host: str
    fingerprint: str

def shard_of(input: str, shards: int) -> int:
    """The shard an input (URL or host) belongs to in a queue of `shards` shards (1..1024)."""

def default_options() -> dict[str, Any]:
    """The default of every queue option (seconds for durations; None: unset)."""
def framework_options(options: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """The options a framework adapter opens its queue with: ``options`` (queue keyword
    options), checked, with ``extend_every`` a third of ``lease_ttl`` unless given (0 given: no
    extension). Raises ConfigError for an unknown or out-of-range option."""
def redacted_url(url: str) -> str:
    """A Redis URL without its user info (``redis://***@host:6379/0``), as connect errors name
    it: for logging where a queue is without its password."""
def request_of(lease: Lease) -> CrawlRequest:
    """The crawl request of a lease; an item seeded through the plain API is a GET of its URL
    with its payload as user_data. Raises ProtocolError for a host item or a request this
    version cannot read."""
def request_payload(request: CrawlRequestInput) -> dict[str, JSON]:
    """The payload a crawl request is stored as (to seed or store a request built whole)."""
def request_update(lease: Lease, changes: Optional[dict[str, Any]] = None) -> dict[str, JSON]:
    """The payload that stores a leased crawl request again with ``changes`` (request_of's
    fields; a ``frameworks`` change replaces that framework's namespace only), read from the
    item as stored: what a retry's nack stores (``{"retries": request["retries"] + 1}``).
    ProtocolError for an item that is not a crawl request; InvalidArgumentError for a bad
    change or a change of its URL."""
def normalize(input: str) -> Normalized:
    """The canonical form crawlq gives an input; InvalidItemError for one it would refuse."""

class CrawlqError(Exception):
    """Base class of every crawlq error; `code` names the kind."""

    code: Optional[str]

class InvalidItemError(CrawlqError, ValueError):
    index: int
    input: str
    reason: str
    """The refusal code (`invalid_host`, ...), as InvalidInput.code; str(error) is the text."""

class ConfigError(CrawlqError, ValueError): ...
class InvalidArgumentError(CrawlqError, ValueError): ...
class UnavailableError(CrawlqError, ConnectionError): ...
class TimeoutError(UnavailableError, builtins.TimeoutError): ...
class ProtocolError(CrawlqError): ...

class LeaseLostError(CrawlqError):
    lease_id: str
    token: int

class ServerError(CrawlqError): ...
class CorruptError(CrawlqError):
    """A key of the queue holds a value of the wrong type; the call changed nothing."""
