"""Uses every part of the API with full annotations; `mypy --strict` checks it against the
stubs and the test suite runs it against a real Redis (REDIS_URL)."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import TYPE_CHECKING, Optional

import crawlq

if TYPE_CHECKING:
    from crawlq import DeadLetter, HostInfo, NackOutcome, Stats


def blocking(url: str, name: str) -> None:
    with crawlq.Queue(url, name, lease_ttl=60.0, max_attempts=3, host_delay=0.0, backoff="exponential") as q:
        report: crawlq.SeedReport = q.seed(
            ["https://example.com/", {"url": "https://example.org/", "priority": 5, "payload": {"depth": 1}}],
            delay=0.0,
        )
        bad: list[crawlq.InvalidInput] = report.invalid
        assert report.added == 2 and not bad
        leases: list[crawlq.Lease] = q.lease(2, wait=1.0)
        first: crawlq.Lease = leases[0]
        deadline: float = q.extend(first, 30.0)
        assert deadline > first.leased_at
        acked: bool = q.ack(first)
        outcome: NackOutcome = q.nack(leases[1], reason="HTTP 503", delay=0.0)
        assert acked and outcome == "retried"
        flags: list[bool] = q.release(q.lease(1, wait=1.0))
        assert flags == [True]
        with q.leased(wait=1.0) as lease:
            assert lease is not None and lease.url == "https://example.com/"  # org (priority 5) went first
        stats: Stats = q.stats()
        age: Optional[float] = stats["oldest_pending_age"]
        info: HostInfo = q.set_host_delay("example.com", 0.5)
        dead: list[DeadLetter] = q.dead(limit=10)
        assert stats["done"] == 2 and age is None and info["delay"] == 0.5 and dead == []
        for item in q.work(max=5, wait=0.1, stop_when_empty=True):
            q.ack(item)
        assert q.requeue_dead() == 0 and q.purge_dead() == 0
        assert q.reclaim(limit=10)["requeued"] == 0
        q.seed(["https://example.com/old"], crawl="old-run")
        removed: list[int] = []
        gone: crawlq.CrawlDeletion = q.delete_crawl("old-run", progress=lambda d: removed.append(d["removed"]))
        assert gone["removed"] == 1 and removed[-1] == 1


async def asynchronous(url: str, name: str) -> None:
    aq = await crawlq.AsyncQueue.connect(url, name, host_delay=0.0)
    report = await aq.seed(["https://example.net/a", "https://example.net/b"])
    assert report.added == 2
    async with aq.leased(wait=1.0) as lease:
        assert lease is not None
    async for item in aq.work(max=5, wait=0.1, stop_when_empty=True):
        acked: bool = await aq.ack(item)
        assert acked
    stats: Stats = await aq.stats()
    assert stats["done"] == 2
    try:
        await aq.extend(item, 1.0)
    except crawlq.LeaseLostError as lost:
        token: int = lost.token
        assert token == item.token
    keys: list[int] = []
    assert await aq.remove_queue(progress=keys.append) == keys[-1]


if __name__ == "__main__":
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    blocking(redis_url, f"typed-{os.getpid()}")
    asyncio.run(asynchronous(redis_url, f"typed-async-{os.getpid()}"))
    print("typed_usage: ok", file=sys.stderr)
