"""The conveniences: leased() and work()."""

from __future__ import annotations

import time

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


def test_extend_every_keeps_leases_alive_while_python_code_runs(redis_server: RedisServer, name: str) -> None:
    q = crawlq.Queue(redis_server.url, name, lease_ttl=0.6, extend_every=0.15)
    q.seed(["http://a.com/1", "http://b.com/2", "http://c.com/3"])
    leases = q.lease(3, wait=0)
    assert q.ack(leases[2]) is True
    # Three lease times of pure-Python work that holds the GIL: the extension runs anyway.
    end = time.monotonic() + 1.8
    while time.monotonic() < end:
        pass
    assert q.reclaim()["requeued"] == 0
    assert q.stats()["leased"] == 2
    assert q.ack(leases[0]) is True
    assert q.release_held() == 1, "the one still held is released"
    assert q.release_held() == 0
    stats = q.stats()
    assert (stats["leased"], stats["ready"], stats["reclaimed_total"]) == (0, 1, 0)
    q.close()


def test_extend_every_must_be_shorter_than_the_lease_time(redis_server: RedisServer, name: str) -> None:
    with pytest.raises(crawlq.ConfigError, match="extend_every"):
        crawlq.Queue(redis_server.url, name, lease_ttl=1.0, extend_every=1.0)
    q = crawlq.Queue(redis_server.url, name, extend_every=1.0)
    with pytest.raises(crawlq.InvalidArgumentError, match="extend_every"):
        q.lease(1, wait=0, ttl=0.5)
    assert q.extend_held() == 0


def test_adapters_take_their_defaults_from_the_core(redis_server: RedisServer, name: str) -> None:
    defaults = crawlq.default_options()
    assert (defaults["lease_ttl"], defaults["max_attempts"], defaults["extend_every"], defaults["shards"]) == (
        120.0, 3, 0.0, None)
    q = crawlq.Queue(redis_server.url, name, **defaults)  # the table reads back as options
    assert q.stats()["pending"] == 0
    assert crawlq.framework_options() == {"extend_every": 40.0, "seen_cache": 100_000}, "a third of the default lease time; a known-seen cache"
    assert crawlq.framework_options({"lease_ttl": 3}) == {"lease_ttl": 3, "extend_every": 1.0, "seen_cache": 100_000}
    assert crawlq.framework_options({"extend_every": 0, "seen_cache": 0}) == {"extend_every": 0, "seen_cache": 0}, "an explicit 0 is kept"
    with pytest.raises(crawlq.ConfigError, match="unknown option"):
        crawlq.framework_options({"lease_tll": 3})
    with pytest.raises(crawlq.ConfigError, match="extend_every"):
        crawlq.framework_options({"lease_ttl": 3, "extend_every": 3})


def test_sigterm_releases_held_leases_with_the_documented_handler(redis_server: RedisServer, name: str) -> None:
    import signal
    import subprocess
    import sys

    q = crawlq.Queue(redis_server.url, name)
    q.seed(["http://a.com/1", "http://b.com/2", "http://c.com/3"])
    child = subprocess.Popen([sys.executable, "-c", f"""
import faulthandler, signal, sys, time, crawlq
faulthandler.register(signal.SIGUSR1)  # (the test asks for the stacks if this never exits)
q = crawlq.Queue({redis_server.url!r}, {name!r})
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))   # SIGTERM unwinds like Ctrl-C
try:
    leases = q.lease(2, wait=0)
    print("holding", flush=True)
    time.sleep(60)
finally:
    print("released", q.release_held(), flush=True)
"""], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = child.stdout.readline().strip()
    if first != "holding":
        # (it failed before holding its leases: say how, from its stderr)
        child.kill()
        out, err = child.communicate()
        pytest.fail(f"the worker did not start holding; its output: {first + out!r}; its stderr:\n{err}")
    assert q.stats()["leased"] == 2
    child.send_signal(signal.SIGTERM)
    try:
        out, err = child.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGUSR1)
        time.sleep(1)
        child.kill()
        out, err = child.communicate()
        pytest.fail(f"the worker did not exit after SIGTERM; its output: {out!r}; its threads:\n{err}")
    assert (child.returncode, out.strip()) == (0, "released 2"), err
    stats = q.stats()
    assert (stats["leased"], stats["ready"], stats["released_total"]) == (0, 3, 2)


def test_close_ends_the_waits_of_other_threads_and_a_later_call_connects_again(q: crawlq.Queue) -> None:
    import threading

    got: dict[str, object] = {}

    def leasing() -> None:
        got["lease"] = q.lease(1, wait=30)

    def working() -> None:
        got["work"] = [lease.url for lease in q.work(max=2, wait=30)]

    threads = [threading.Thread(target=leasing), threading.Thread(target=working)]
    for thread in threads:
        thread.start()
    time.sleep(0.3)
    started = time.monotonic()
    q.close()
    for thread in threads:
        thread.join(timeout=10)
    assert not any(thread.is_alive() for thread in threads), "ended by close(), not the 30 s waits"
    assert time.monotonic() - started < 10
    assert got == {"lease": [], "work": []}
    # the next call connects again and leases as before
    q.seed(["http://after-close.example/"])
    [lease] = q.lease(1, wait=1)
    assert lease.url == "http://after-close.example/"
    assert q.ack(lease) is True


def test_leases_still_held_at_close_are_released_by_a_later_release_held(q: crawlq.Queue) -> None:
    q.seed(["http://a.example/1", "http://b.example/2", "http://c.example/3"])
    leases = q.lease(3, wait=1)
    assert len(leases) == 3
    q.close()
    # the calls after close() connect again and still know what the process holds
    assert q.ack(leases[0]) is True
    assert q.release_held() == 2
    assert q.release_held() == 0
    stats = q.stats()
    assert (stats["leased"], stats["ready"], stats["done"], stats["released_total"]) == (0, 2, 1, 2)


def test_close_ends_awaited_waits_and_work_loops(redis_server: RedisServer, name: str) -> None:
    import asyncio

    async def main() -> None:
        aq = crawlq.AsyncQueue(redis_server.url, name)

        async def working() -> list[str]:
            return [lease.url async for lease in aq.work(max=2, wait=30)]

        waiting = asyncio.gather(aq.lease(1, wait=30), working())
        await asyncio.sleep(0.3)
        aq.close()
        leases, worked = await asyncio.wait_for(waiting, timeout=10)
        assert (leases, worked) == ([], [])
        await aq.seed(["http://after-close.example/"])
        [lease] = await aq.lease(1, wait=1)
        assert await aq.ack(lease) is True
        aq.close()

    asyncio.run(main())
