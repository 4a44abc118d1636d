"""AsyncQueue: every operation awaited, concurrency, cancellation."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter

import pytest

import crawlq
from conftest import T0, RedisServer


def script_calls(server: RedisServer) -> int:
    """The script calls (FCALL, EVALSHA) `server` has run."""
    return sum(int(line.split("calls=")[1].split(",")[0])
               for line in server.cli("INFO", "commandstats").splitlines()
               if line.startswith(("cmdstat_fcall:", "cmdstat_evalsha:")))


def test_a_page_answered_with_its_links_leases_the_next(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        aq = crawlq.AsyncQueue(redis_server.url, name)
        await aq.seed(["http://c.com/1"])
        [page] = await aq.lease(1, wait=0)
        acked, report, [link] = await aq.ack_with_links_and_lease(page, ["http://c.com/2"], wait=1)
        assert (acked, report.added, link.url) == (True, 1, "http://c.com/2")
        acked, report, nothing = await aq.ack_with_links_and_lease(link, ["http://c.com/1"], wait=0)
        assert (acked, report.duplicates, nothing) == (True, 1, [])
        assert await aq.is_finished() is True
        aq.close()

    asyncio.run(main())


def test_a_page_answered_with_its_crawl_requests_leases_the_next(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        aq = crawlq.AsyncQueue(redis_server.url, name)
        await aq.seed(["http://c.com/1"])
        [page] = await aq.lease(1, wait=0)
        acked, report, [link] = await aq.ack_with_requests_and_lease(page, [{"url": "http://c.com/2", "label": "detail"}], wait=1)
        assert (acked, report.added, link.url) == (True, 1, "http://c.com/2")
        assert dict(crawlq.request_of(link))["label"] == "detail"
        acked, report, nothing = await aq.ack_with_requests_and_lease(link, [{"url": "http://c.com/1"}], wait=0)
        assert (acked, report.duplicates, nothing) == (True, 1, [])
        assert await aq.is_finished() is True
        aq.close()

    asyncio.run(main())


def test_pages_answered_by_many_tasks_at_once_go_together_each_with_its_own_answer(private_redis: RedisServer, name: str) -> None:
    async def main() -> None:
        aq = crawlq.AsyncQueue(private_redis.url, name)
        await aq.seed([f"http://p{i}.com/" for i in range(32)])
        pages = await aq.lease(32, wait=0)
        before = script_calls(private_redis)
        answers = await asyncio.gather(*(
            aq.ack_with_links_and_lease(page, [f"http://n{i}.com/", "http://shared.com/", "http://not a host/"], wait=0)
            for i, page in enumerate(pages)))
        # the pages answered while a call was on its way went in fewer calls than pages
        assert script_calls(private_redis) - before < 32
        assert all(acked for acked, _, _ in answers)
        assert [len(report.invalid) for _, report, _ in answers] == [1] * 32
        assert [report.invalid[0].index for _, report, _ in answers] == [2] * 32
        # each page's report is its own: one page added the shared link, the others found it
        assert sorted(report.added for _, report, _ in answers) == [1] * 31 + [2]
        leased = [lease.url for _, _, more in answers for lease in more]
        assert len(leased) == len(set(leased)) == 32
        stats = await aq.stats()
        assert (stats["done"], stats["leased"], stats["ready"]) == (32, 32, 1)
        aq.close()

    asyncio.run(main())


def test_with_answer_linger_pages_answered_one_after_another_go_in_one_call(private_redis: RedisServer, name: str) -> None:
    async def main() -> None:
        aq = crawlq.AsyncQueue(private_redis.url, name, answer_linger=0.4, shards=1)
        await aq.seed([f"http://p{i}.com/" for i in range(6)])
        pages = await aq.lease(3, wait=0)
        loop = asyncio.get_running_loop()
        started = loop.time()

        async def answer(i: int, page: crawlq.Lease) -> tuple[bool, int, float]:
            await asyncio.sleep(0.05 * i)  # fetches that end one after another
            acked, report, more = await aq.ack_with_links_and_lease(page, [f"http://n{i}.com/"], wait=0)
            return acked and len(more) == 1, report.added, loop.time() - started

        before = script_calls(private_redis)
        answers = await asyncio.gather(*(answer(i, page) for i, page in enumerate(pages)))
        assert script_calls(private_redis) - before == 1, "the first page waited for the two answered after it"
        assert [(ok, added) for ok, added, _ in answers] == [(True, 1)] * 3
        assert min(took for _, _, took in answers) >= 0.39, "no page went before the first had lingered"
        aq.close()

    asyncio.run(main())
    with pytest.raises(crawlq.ConfigError, match="answer_linger"):
        crawlq.AsyncQueue(private_redis.url, name, answer_linger=2)


def test_every_operation(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        aq = crawlq.AsyncQueue(redis_server.url, name, fixed_clock=T0 / 1000, lease_ttl=30, max_attempts=2)
        report = await aq.seed(["http://a.com/1", "http://a.com/2", "http://b.com/1", "bad url"], payload={"d": 1})
        assert (report.added, len(report.invalid)) == (3, 1)
        leases = await aq.lease(3, wait=0)
        assert [l.url for l in leases] == ["http://a.com/1", "http://a.com/2", "http://b.com/1"]
        assert leases[0].payload == {"d": 1}
        assert await aq.ack(leases[0]) is True
        await aq.seed(["http://c.com/1"])
        [c1] = await aq.lease(1, wait=0)
        acked, nothing = await aq.ack_and_lease(c1, wait=0)
        assert (acked, nothing) == (True, [])
        assert await aq.extend(leases[1], 60) == (T0 + 60_000) / 1000
        assert await aq.release([leases[1]]) == [True]
        assert await aq.nack(leases[2], retry=False, reason="gone") == "dead"
        assert await aq.nack([leases[2]]) == ["lost"]
        stats = await aq.stats()
        assert (stats["done"], stats["ready"], stats["dead"]) == (2, 1, 1)
        dead = await aq.dead()
        assert dead[0]["last_error"] == "gone"
        assert await aq.dead_letters([dead[0]["id"], "nope"]) == [dead[0], None]
        assert (await aq.leased_items())["total"] == 0
        assert await aq.requeue_dead() == 1
        assert await aq.dead_letters([dead[0]["id"]]) == [None], "requeued: not a dead letter now"
        assert [p["url"] for p in await aq.peek()] == ["http://a.com/2", "http://b.com/1"]
        again = await aq.lease(2, wait=0)
        aq._set_fixed_clock(T0 + 31_000)
        assert await aq.reclaim() == {"requeued": 2, "dead": 0, "remaining": 0}
        assert await aq.purge_dead() == 0
        assert await aq.is_finished() is False  # two items are leased
        info = await aq.set_host_delay("a.com", 1.5)
        assert info["delay"] == 1.5 and (await aq.host_info("a.com"))["delay"] == 1.5
        assert (await aq.pause_host("a.com"))["paused"] is True
        assert (await aq.pause_host("a.com", 2.5))["paused_until"] == (T0 + 33_500) / 1000
        assert (await aq.resume_host("a.com"))["paused"] is False
        assert await aq.pause(1.0) is False and await aq.is_paused() is True
        assert await aq.resume() is True and await aq.is_paused() is False
        assert (await aq.set_host_budget("b.com", 1))["budget_remaining"] == 1
        await aq.set_default_host_budget(5)
        assert await aq.default_host_budget() == 5
        report = await aq.seed(["http://b.com/new1", "http://b.com/new2"])
        assert [(i.index, i.code) for i in report.invalid] == [(1, "budget_exhausted")]
        with pytest.raises(crawlq.LeaseLostError):
            await aq.extend(again[0], 5)
        page = await aq.list_hosts(limit=1)
        assert [(h["host"], h["items"]) for h in page["hosts"]] == [("b.com", 2)] and page["total"] == 2
        page = await aq.list_hosts(page["cursor"], 1)
        assert ([h["host"] for h in page["hosts"]], page["cursor"]) == (["a.com"], None)
        gone = await aq.delete_host("b.com")
        assert (gone["host"], gone["removed"], gone["left"]) == ("b.com", 2, 0)
        assert [h["host"] for h in (await aq.list_hosts())["hosts"]] == ["a.com"]
        assert repr(aq).startswith("AsyncQueue(")
        aq.close()

    asyncio.run(main())


def test_connect_classmethod_and_context(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        async with await crawlq.AsyncQueue.connect(redis_server.url, name) as aq:
            assert (await aq.seed(["http://a.com/"])).added == 1
        with pytest.raises(crawlq.UnavailableError):
            await crawlq.AsyncQueue.connect("redis://127.0.0.1:1/0", name, connect_timeout=0.3, command_timeout=0.3)
        lazy = crawlq.AsyncQueue("redis://127.0.0.1:1/0", name, connect_timeout=0.3, command_timeout=0.3)  # no I/O yet
        with pytest.raises(crawlq.UnavailableError):
            await lazy.stats()

    asyncio.run(main())


def test_many_tasks_never_share_a_live_item(redis_server: RedisServer, name: str) -> None:
    total = 3000

    async def main() -> Counter[str]:
        aq = crawlq.AsyncQueue(redis_server.url, name)
        await aq.seed([f"https://h{i % 30}.example/{i}" for i in range(total)])
        seen: Counter[str] = Counter()

        async def worker() -> None:
            async for lease in aq.work(max=7, wait=0.2, stop_when_empty=True):
                seen[lease.id] += 1
                if lease.id.endswith("3"):
                    await asyncio.sleep(0)  # interleave with other tasks while holding
                assert await aq.ack(lease)

        await asyncio.gather(*(worker() for _ in range(50)))
        stats = await aq.stats()
        assert (stats["done"], stats["leased"], stats["pending"]) == (total, 0, 0)
        return seen

    seen = asyncio.run(main())
    assert len(seen) == total and set(seen.values()) == {1}


def test_cancelling_a_waiting_lease_leaves_nothing_behind(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        aq = crawlq.AsyncQueue(redis_server.url, name)
        waiting = asyncio.ensure_future(aq.lease(1, wait=30))
        await asyncio.sleep(0.3)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await aq.seed(["http://a.com/"])
        await asyncio.sleep(0.3)
        stats = await aq.stats()
        assert (stats["leased"], stats["ready"]) == (0, 1), "the cancelled call leased nothing"
        assert stats["released_total"] == 0, "its wait ended at the cancellation: nothing leased to go back"

    asyncio.run(main())


def test_a_cancellation_timed_at_the_lease_script_leaves_no_lease_held(redis_server: RedisServer, name: str) -> None:
    """Cancelled while its script runs in Redis, a call finishes that script and its leases go
    back: none is left held until its lease time passes (60 s here)."""

    async def main() -> None:
        aq = crawlq.AsyncQueue(redis_server.url, name, lease_ttl=60)
        rounds = 40
        await aq.seed([f"http://h{i}.com/" for i in range(rounds)])
        for i in range(rounds):
            # cancelled from 0 to 4 ms after the call starts: on the way, in Redis, or back
            if i % 3 == 0:
                call = aq.lease(1, wait=5)
            elif i % 3 == 1:
                call = aq.ack_and_lease([], 1, wait=5)
            else:  # a page answered (done) and the next leased
                [page] = await aq.lease(1, wait=0)
                call = aq.ack_with_links_and_lease(page, [], wait=5)
            waiting = asyncio.ensure_future(call)
            await asyncio.sleep((i % 9) / 2000)
            if waiting.cancel():
                with pytest.raises(asyncio.CancelledError):
                    await waiting
            else:  # it had its answer before the cancellation
                await aq.release(waiting.result()[-1] if i % 3 else waiting.result())
        for _ in range(100):
            stats = await aq.stats()
            if stats["leased"] == 0:
                break
            await asyncio.sleep(0.05)
        assert (stats["leased"], stats["ready"], stats["done"]) == (0, rounds - rounds // 3, rounds // 3), stats
        aq.close()

    asyncio.run(main())


def test_a_cancelled_seed_stops_between_its_calls_and_seeding_again_adds_the_rest(
    redis_server: RedisServer, name: str
) -> None:
    """A chunk of `seed_batch` items goes as script calls of at most 250 items
    (`SEED_PER_CALL`), each whole or not at all: a cancelled seed has seeded the calls sent
    before the cancellation, sends none after it, and the same items seeded again add exactly
    the rest."""

    async def main() -> None:
        aq = crawlq.AsyncQueue(redis_server.url, name, seed_batch=500)
        urls = [f"http://h{i % 100}.com/{i}" for i in range(60_000)]
        seeding = asyncio.ensure_future(aq.seed(urls))
        await asyncio.sleep(0.05)
        cancelled = seeding.cancel()
        if cancelled:
            with pytest.raises(asyncio.CancelledError):
                await seeding
        seen = (await aq.stats())["seen"]
        await asyncio.sleep(0.5)
        assert (await aq.stats())["seen"] == seen, "nothing is sent after the cancellation"
        assert seen % 250 == 0 and seen <= len(urls), seen
        assert not cancelled or seen < len(urls), "a seed cancelled mid-way stopped short"
        report = await aq.seed(urls)
        assert (report.added, report.duplicates, report.invalid) == (len(urls) - seen, seen, [])
        assert (await aq.stats())["seen"] == len(urls)
        aq.close()

    asyncio.run(main())


def test_an_async_seed_reports_its_progress_on_the_loop(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        aq = crawlq.AsyncQueue(redis_server.url, name, seed_batch=400)
        loop_thread = threading.get_ident()
        reports: list[tuple[int, int]] = []

        def note(so_far: crawlq.SeedProgress) -> None:
            assert threading.get_ident() == loop_thread, "called on the event loop's thread"
            reports.append((so_far["done"], so_far["added"]))

        report = await aq.seed([f"http://a{i % 9}.example/{i}" for i in range(1_000)], progress=note)
        assert report.added == 1000
        assert reports == [(400, 400), (800, 800), (1000, 1000)]

        def stop(so_far: crawlq.SeedProgress) -> None:
            raise ValueError(f"stop at {so_far['done']}")

        with pytest.raises(ValueError, match="stop at 400"):
            await aq.seed([f"http://b{i % 9}.example/{i}" for i in range(1_000)], progress=stop)
        await asyncio.sleep(0.3)
        seen = (await aq.stats())["seen"] - 1000
        assert seen in (400, 650, 800), seen  # reported, and at most the calls sent after it
        aq.close()

    asyncio.run(main())


def test_cancelled_work_releases_what_it_holds(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        aq = crawlq.AsyncQueue(redis_server.url, name)
        await aq.seed([f"http://a.com/{i}" for i in range(5)])
        got = asyncio.Event()

        async def consume() -> None:
            async for lease in aq.work(max=5, wait=1):
                got.set()
                await asyncio.sleep(30)  # cancelled here, holding one lease and four prefetched

        task = asyncio.ensure_future(consume())
        await got.wait()
        assert (await aq.stats())["leased"] == 5
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        del task
        await asyncio.sleep(0.2)
        stats = await aq.stats()
        assert (stats["leased"], stats["ready"], stats["released_total"]) == (0, 5, 5)

    asyncio.run(main())


def test_closing_work_ends_the_wait_of_a_pending_anext(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        aq = crawlq.AsyncQueue(redis_server.url, name)
        work = aq.work(max=5, wait=30)
        pending = asyncio.ensure_future(work.__anext__())
        await asyncio.sleep(0.3)
        await work.aclose()
        # seeded right after the close: the pending fetch's wait has already ended, so it
        # leases nothing it would have to give back
        await aq.seed(["http://a.com/"])
        with pytest.raises(StopAsyncIteration):
            await asyncio.wait_for(pending, 5)
        stats = await aq.stats()
        assert (stats["leased"], stats["ready"], stats["released_total"]) == (0, 1, 0)
        aq.close()

    asyncio.run(main())


def test_an_anext_ended_by_aclose_returns_once_what_the_loop_held_went_back(
    redis_server: RedisServer, name: str
) -> None:
    async def main() -> None:
        aq = crawlq.AsyncQueue(redis_server.url, name)
        await aq.seed(["http://a.com/1"])
        work = aq.work(max=5, wait=30)
        first = await work.__anext__()
        assert first.url == "http://a.com/1"
        pending = asyncio.ensure_future(work.__anext__())
        await asyncio.sleep(0.3)
        closing = asyncio.ensure_future(work.aclose())  # another task closes the loop
        with pytest.raises(StopAsyncIteration):
            await asyncio.wait_for(pending, 5)
        # left by the close: the lease handed out last went back before the loop ended
        stats = await aq.stats()
        assert (stats["leased"], stats["ready"], stats["released_total"]) == (0, 1, 1)
        await closing
        aq.close()

    asyncio.run(main())


def test_async_leased_context(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        aq = crawlq.AsyncQueue(redis_server.url, name)
        await aq.seed(["http://a.com/1", "http://a.com/2"])
        async with aq.leased(wait=1) as lease:
            assert lease is not None and lease.url == "http://a.com/1"
        with pytest.raises(RuntimeError):
            async with aq.leased(wait=1) as lease:
                raise RuntimeError("fetch failed")
        async with aq.leased(wait=0) as nothing:
            assert nothing is None
        stats = await aq.stats()
        assert (stats["done"], stats["delayed"]) == (1, 1)
        assert (await aq.peek()) == []

    asyncio.run(main())


def test_methods_return_real_coroutines(redis_server: RedisServer, name: str) -> None:
    """asyncio.create_task and TaskGroup take only coroutines: every async method returns one."""
    import inspect

    async def main() -> None:
        aq = crawlq.AsyncQueue(redis_server.url, name, fixed_clock=T0 / 1000)
        seeding = aq.seed([f"http://a{i}.com/" for i in range(5)])
        assert inspect.iscoroutine(seeding) and asyncio.iscoroutine(seeding)
        report = await asyncio.create_task(seeding)
        assert report.added == 5
        async with asyncio.TaskGroup() as group:
            leasing = [group.create_task(aq.lease(1, wait=0)) for _ in range(5)]
            stats = group.create_task(aq.stats())
        leases = [l for task in leasing for l in task.result()]
        assert sorted(l.url for l in leases) == sorted(f"http://a{i}.com/" for i in range(5))
        assert stats.result()["seen"] == 5
        acking = [aq.ack(l) for l in leases]
        assert all(inspect.iscoroutine(c) for c in acking)
        assert await asyncio.gather(*acking) == [True] * 5
        done = await asyncio.create_task(aq.stats())
        assert (done["done"], done["leased"]) == (5, 0)
        # a cancelled task's coroutine aborts its call: a lease waiting on an empty queue
        waiting = asyncio.create_task(aq.lease(1, wait=5))
        await asyncio.sleep(0.05)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert (await aq.stats())["leased"] == 0
        aq.close()

    asyncio.run(main())
