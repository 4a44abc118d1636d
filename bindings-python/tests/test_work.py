"""The conveniences: leased() and work()."""

from __future__ import annotations

import pytest

import crawlq
from conftest import RedisServer


def test_leased_acks_on_success_and_nacks_on_error(q: crawlq.Queue) -> None:
    q.seed(["http://a.com/1", "http://a.com/2"])
    with q.leased(wait=1) as lease:
        assert lease is not None and lease.url == "http://a.com/1"
    with pytest.raises(ValueError, match="boom"):
        with q.leased(wait=1) as lease:
            raise ValueError("boom")
    stats = q.stats()
    assert (stats["done"], stats["delayed"], stats["nacked_total"]) == (1, 1, 1)
    assert q.lease(1, wait=0) == [], "the failed one waits for its backoff"


def test_leased_reason_is_the_exception_text(redis_server: RedisServer, name: str) -> None:
    q = crawlq.Queue(redis_server.url, name, max_attempts=1)
    q.seed(["http://a.com/"])
    with pytest.raises(ConnectionResetError):
        with q.leased(wait=1):
            raise ConnectionResetError("peer reset")
    assert q.dead()[0]["last_error"] == "ConnectionResetError: peer reset"


def test_leased_releases_on_keyboard_interrupt(q: crawlq.Queue) -> None:
    q.seed(["http://a.com/"])
    with pytest.raises(KeyboardInterrupt):
        with q.leased(wait=1):
            raise KeyboardInterrupt
    stats = q.stats()
    assert (stats["ready"], stats["leased"], stats["released_total"], stats["nacked_total"]) == (1, 0, 1, 0)


def test_leased_respects_an_explicit_answer(q: crawlq.Queue) -> None:
    q.seed(["http://a.com/"])
    with q.leased(wait=1) as lease:
        assert lease is not None
        q.nack(lease, retry=False, reason="robots.txt")
    assert q.stats()["dead"] == 1 and q.stats()["done"] == 0
    with q.leased(wait=0) as nothing:
        assert nothing is None


def test_work_until_empty(q: crawlq.Queue) -> None:
    q.seed([f"http://h{i % 3}.com/{i}" for i in range(25)])
    urls = []
    for lease in q.work(max=4, wait=0.1, stop_when_empty=True):
        urls.append(lease.url)
        q.ack(lease)
    assert len(urls) == 25 and len(set(urls)) == 25
    assert q.stats()["done"] == 25


def test_leaving_work_early_releases_prefetched_and_unanswered(q: crawlq.Queue) -> None:
    q.seed([f"http://a.com/{i}" for i in range(6)])
    with q.work(max=6, wait=0.1) as work:
        first = next(work)
        q.ack(first)
        second = next(work)
        assert second.url == "http://a.com/1"
    stats = q.stats()
    assert (stats["done"], stats["leased"], stats["ready"], stats["released_total"]) == (1, 0, 5, 5)
    assert next(work, None) is None, "a closed iterator stays finished"


def test_breaking_out_of_the_loop_releases_too(q: crawlq.Queue) -> None:
    q.seed([f"http://a.com/{i}" for i in range(4)])
    for lease in q.work(max=4, wait=0.1):
        q.ack(lease)
        break
    stats = q.stats()
    assert (stats["done"], stats["leased"], stats["ready"]) == (1, 0, 3)
