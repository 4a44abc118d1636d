"""Named crawls: seed into a crawl, de-duplication per crawl, one host shared by every crawl."""

from __future__ import annotations

import asyncio
import threading

import pytest

import crawlq
from conftest import T0, RedisServer


def test_a_url_is_one_item_in_each_crawl(q: crawlq.Queue) -> None:
    for crawl in (None, "red", "blue"):
        assert q.seed(["http://a.com/x"], crawl=crawl).added == 1
        assert q.seed(["http://a.com/x"], crawl=crawl).duplicates == 1
    leased = q.lease(10, wait=0)
    assert sorted(lease.crawl or "" for lease in leased) == ["", "blue", "red"]
    stats = q.crawl_stats("red")
    # (its one seed of this minute, or of the minute before weighed by what is left of it)
    assert 0 < stats.pop("seeded_per_second") <= 0.016667 and stats.pop("done_per_second") == 0.0
    assert stats == {"pending": 0, "ready": 0, "delayed": 0, "leased": 1, "dead": 0, "done": 0,
                                    "seen": 1, "hosts": 0, "oldest_pending_age": None, "seeded_total": 1, "cap": None, "paused": False, "deleting": False, "held_hosts": 0, "weight": 1, "rate": None, "host_budget": None}
    assert q.ack(leased) == [True, True, True]
    assert q.stats()["done"] == 3
    assert (q.crawl_stats("red")["done"], q.crawl_stats("blue")["done"]) == (1, 1)
    assert q.crawl_stats("never")["seen"] == 0
    with pytest.raises(crawlq.InvalidArgumentError):
        q.crawl_stats("a:b")


def test_a_crawls_hosts_and_oldest_pending_age_in_seconds(redis_server: RedisServer, name: str) -> None:
    q = crawlq.Queue(redis_server.url, name, host_delay=0.0, fixed_clock=T0 / 1000)
    q.seed(["http://a.com/1", "http://a.com/2", "http://b.com/1"], crawl="red")
    q._set_fixed_clock(T0 + 2500)
    stats = q.crawl_stats("red")
    assert (stats["hosts"], stats["oldest_pending_age"]) == (2, 2.5)
    # its rates over the last minute, a second: T0 starts a minute of the clock
    assert (stats["done_per_second"], stats["seeded_per_second"]) == (0.0, 0.05)
    q.ack(q.lease(10, wait=0))
    stats = q.crawl_stats("red")
    assert (stats["hosts"], stats["oldest_pending_age"], stats["done"]) == (0, None, 3)
    assert (stats["done_per_second"], stats["seeded_per_second"]) == (0.05, 0.05)
    # 30 s into the next minute, half of that minute is still within the last 60 s
    q._set_fixed_clock(T0 + 90_000)
    stats = q.crawl_stats("red")
    assert (stats["done_per_second"], stats["seeded_per_second"]) == (0.025, 0.025)
    q.close()


def test_two_crawls_on_one_host_take_turns_at_its_delay(redis_server: RedisServer, name: str) -> None:
    q = crawlq.Queue(redis_server.url, name, host_delay=1.0, fixed_clock=T0 / 1000)
    q.seed([f"http://a.com/{i}" for i in range(3)], crawl="one")
    q.seed([f"http://a.com/{i}" for i in range(3)], crawl="two")
    order = []
    for step in range(6):
        q._set_fixed_clock(T0 + step * 1000 - 1)
        assert step == 0 or q.lease(10, wait=0) == []
        q._set_fixed_clock(T0 + step * 1000)
        [lease] = q.lease(10, wait=0)
        order.append(lease.crawl)
        q.ack(lease)
    assert order == ["one", "two"] * 3
    q.close()


def test_a_pages_links_go_into_its_crawl(q: crawlq.Queue) -> None:
    q.seed(["http://a.com/"], crawl="site")
    [page] = q.lease(1, wait=0)
    acked, report = q.ack_with_links(page, ["http://a.com/next"])
    assert (acked, report.added) == (True, 1)
    [link] = q.lease(1, wait=0)
    assert (link.url, link.crawl) == ("http://a.com/next", "site")
    acked, report, more = q.ack_with_links_and_lease(link, ["http://b.com/"], wait=0, crawl="other")
    assert (acked, report.added, [lease.crawl for lease in more]) == (True, 1, ["other"])


@pytest.mark.parametrize("crawl", ["", "a:b", "{tag}", "two words", "x" * 65])
def test_a_crawl_name_out_of_its_rules_is_refused(q: crawlq.Queue, crawl: str) -> None:
    with pytest.raises(crawlq.InvalidArgumentError, match="crawl name"):
        q.seed(["http://a.com/"], crawl=crawl)
    assert q.stats()["seen"] == 0


def test_async_crawls(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        aq = crawlq.AsyncQueue(redis_server.url, name)
        assert (await aq.seed(["http://c.com/1"], crawl="jobs")).added == 1
        assert (await aq.seed(["http://c.com/1"], crawl="jobs")).duplicates == 1
        [page] = await aq.lease(1, wait=0)
        assert page.crawl == "jobs"
        acked, report, [link] = await aq.ack_with_links_and_lease(page, ["http://c.com/2"], wait=1)
        assert (acked, report.added, link.crawl) == (True, 1, "jobs")
        await aq.ack(link)
        assert await aq.is_finished() is True
        assert (await aq.crawl_stats("jobs"))["done"] == 2
        aq.close()

    asyncio.run(main())


def _spread(prefix: str, hosts: int, per_host: int) -> list[str]:
    return [f"http://h{h}.com/{prefix}{i}" for i in range(per_host) for h in range(hosts)]


def test_a_crawls_cap_holds_under_sixteen_async_workers(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        aq = crawlq.AsyncQueue(redis_server.url, name, host_delay=0.0)
        await aq.seed(_spread("big", 30, 8), crawl="big")
        await aq.seed(_spread("small", 30, 2), crawl="small")
        stats = await aq.set_crawl_cap("big", 3)
        assert (stats["cap"], stats["paused"]) == (3, False)
        in_hand, most, done = 0, 0, 0

        async def worker() -> None:
            nonlocal in_hand, most, done
            idle = 0
            while idle < 10:
                leases = await aq.lease(1, wait=0.05)
                if not leases:
                    idle += 1
                    continue
                idle = 0
                big = leases[0].crawl == "big"
                if big:
                    in_hand += 1
                    most = max(most, in_hand)
                await asyncio.sleep(0.003)
                if big:
                    in_hand -= 1
                await aq.ack(leases)
                done += 1

        await asyncio.gather(*(worker() for _ in range(16)))
        assert done == 300
        assert 2 <= most <= 3, most
        big = await aq.crawl_stats("big")
        assert (big["done"], big["leased"], big["held_hosts"]) == (240, 0, 0)
        aq.close()

    asyncio.run(main())


def test_a_paused_crawl_waits_while_the_others_are_leased(redis_server: RedisServer, name: str) -> None:
    q = crawlq.Queue(redis_server.url, name, host_delay=0.0)
    q.seed(_spread("p", 4, 2), crawl="paused")
    q.seed(_spread("o", 4, 1), crawl="other")
    assert q.pause_crawl("paused") is None
    leased = q.lease(20, wait=0)
    assert sorted({lease.crawl for lease in leased}) == ["other"]
    q.ack(leased)
    stats = q.crawl_stats("paused")
    assert (stats["paused"], stats["ready"], stats["held_hosts"], stats["hosts"]) == (True, 8, 4, 4)
    assert q.crawls() == ["other", "paused"]
    q.resume_crawl("paused")
    assert [lease.crawl for lease in q.lease(20, wait=0)] == ["paused"] * 8
    assert q.crawl_stats("paused")["held_hosts"] == 0
    q.close()


def test_a_crawls_cap_is_checked(q: crawlq.Queue) -> None:
    with pytest.raises(crawlq.InvalidArgumentError, match="at least 1"):
        q.set_crawl_cap("c", 0)
    with pytest.raises(crawlq.InvalidArgumentError):
        q.set_crawl_cap("c", -1)
    with pytest.raises(crawlq.InvalidArgumentError, match="crawl name"):
        q.pause_crawl("a b")
    assert q.set_crawl_rate("c", 2.5)["rate"] == 2.5
    with pytest.raises(crawlq.InvalidArgumentError, match="rate"):
        q.set_crawl_rate("c", 0.0)
    assert q.set_crawl_rate("c", None)["rate"] is None
    assert q.set_crawl_weight("c", 4)["weight"] == 4
    with pytest.raises(crawlq.InvalidArgumentError, match="weight"):
        q.set_crawl_weight("c", 0)
    assert q.set_crawl_weight("c", None)["weight"] == 1
    assert q.set_crawl_cap("c", 5)["cap"] == 5
    assert q.set_crawl_cap("c", None)["cap"] is None


def test_a_crawls_host_budget_refuses_per_item_and_counts_only_its_own_urls(q: crawlq.Queue) -> None:
    assert q.set_crawl_host_budget("trial", 2)["host_budget"] == 2
    urls = [f"http://a.com/{i}" for i in range(4)] + ["http://b.com/0"]
    report = q.seed(urls, crawl="trial")
    assert report.added == 3
    assert [(bad.index, bad.code) for bad in report.invalid] == [(2, "budget_exhausted"), (3, "budget_exhausted")]
    assert report.ids[2:4] == [None, None]
    # another crawl on the same host is not counted; the refused URLs were not marked seen
    assert q.seed(urls, crawl="full").added == 5
    assert q.set_crawl_host_budget("trial", 3)["host_budget"] == 3
    report = q.seed(urls, crawl="trial")
    assert (report.added, report.duplicates, [bad.index for bad in report.invalid]) == (1, 3, [3])
    assert q.crawl_stats("trial")["seeded_total"] == 4
    assert q.set_crawl_host_budget("trial", None)["host_budget"] is None
    assert q.seed(urls, crawl="trial").added == 1
    with pytest.raises(crawlq.InvalidArgumentError, match="urls"):
        q.set_crawl_host_budget("trial", -1)
    with pytest.raises(crawlq.InvalidArgumentError, match="crawl name"):
        q.set_crawl_host_budget("a b", 1)


def test_async_crawl_host_budget(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        aq = crawlq.AsyncQueue(redis_server.url, name)
        stats = await aq.set_crawl_host_budget("trial", 1)
        assert stats["host_budget"] == 1
        report = await aq.seed(["http://a.com/1", "http://a.com/2"], crawl="trial")
        assert (report.added, [bad.code for bad in report.invalid]) == (1, ["budget_exhausted"])
        aq.close()

    asyncio.run(main())


def test_deleting_a_crawl_mid_drain_leaves_the_others_whole(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        aq = crawlq.AsyncQueue(redis_server.url, name, host_delay=0.0)
        await aq.seed(_spread("doomed", 10, 20), crawl="doomed")
        await aq.seed(_spread("kept", 10, 10), crawl="kept")
        done: dict[str, int] = {"doomed": 0, "kept": 0}
        lost = 0

        async def worker() -> None:
            nonlocal lost
            idle = 0
            while idle < 10:
                leases = await aq.lease(2, wait=0.05)
                if not leases:
                    idle += 1
                    continue
                idle = 0
                await asyncio.sleep(0.002)
                for lease in leases:
                    try:
                        acked = await aq.ack(lease)
                    except crawlq.LeaseLostError:
                        acked = False
                    if acked:
                        done[lease.crawl] += 1
                    else:
                        assert lease.crawl == "doomed"
                        lost += 1

        async def delete_when_started() -> crawlq.CrawlDeletion:
            while sum(done.values()) < 30:
                await asyncio.sleep(0.002)
            return await aq.delete_crawl("doomed")

        results = await asyncio.gather(delete_when_started(), *(worker() for _ in range(8)))
        gone = results[0]
        assert gone["crawl"] == "doomed" and gone["removed"] > 0
        assert done["doomed"] + gone["ready"] + gone["leased"] == 200
        assert gone["leased"] == lost
        assert done["kept"] == 100
        assert (await aq.crawl_stats("kept"))["done"] == 100
        assert (await aq.crawl_stats("doomed"))["seeded_total"] == 0
        assert await aq.crawls() == ["kept"]
        assert (await aq.stats())["pending"] == 0
        aq.close()

    asyncio.run(main())


def test_a_worker_leases_from_its_chosen_crawls_only(redis_server: RedisServer, name: str) -> None:
    q = crawlq.Queue(redis_server.url, name, host_delay=0.0)
    q.seed(_spread("big", 50, 2), crawl="big")
    q.seed(["http://h49.com/small1", "http://h48.com/small2"], crawl="small")
    worker = crawlq.Queue(redis_server.url, name, host_delay=0.0, lease_crawls="small")
    leased = worker.lease(10, wait=0.5)
    assert sorted(lease.crawl for lease in leased) == ["small", "small"]
    assert q.crawl_stats("big")["leased"] == 0
    with pytest.raises(crawlq.ConfigError, match="lease_crawls"):
        crawlq.Queue(redis_server.url, name, lease_crawls="a:b")
    # a list of names as well as one string of them; a name with a space in a list is refused
    listed = crawlq.Queue(redis_server.url, name, host_delay=0.0, lease_crawls=["small", "none-yet"])
    worker.release(leased)
    assert sorted(lease.crawl for lease in listed.lease(10, wait=0.5)) == ["small", "small"]
    with pytest.raises(crawlq.ConfigError, match='got "sm all"'):
        crawlq.Queue(redis_server.url, name, lease_crawls=["sm all"])
    listed.close()
    worker.close()
    q.close()


def test_long_deletions_report_their_progress_and_a_raising_callback_stops_them(
    redis_server: RedisServer, name: str
) -> None:
    q = crawlq.Queue(redis_server.url, name, host_delay=0.0)
    q.seed(_spread("a", 40, 30), crawl="big")
    reports: list[int] = []
    gone = q.delete_crawl("big", progress=lambda so_far: reports.append(so_far["removed"]))
    assert gone["removed"] == 1200
    assert len(reports) >= 3, "one report per bounded step"
    assert reports == sorted(reports) and reports[-1] == 1200

    # a callback that raises stops the deletion after its step; calling again finishes it
    q.seed(_spread("b", 40, 30), crawl="big")

    def stop(so_far: crawlq.CrawlDeletion) -> None:
        if so_far["removed"] > 0:
            raise LookupError(so_far["removed"])

    with pytest.raises(LookupError) as stopped:
        q.delete_crawl("big", progress=stop)
    stopped_at = stopped.value.args[0]
    assert 0 < stopped_at < 1200
    stats = q.crawl_stats("big")
    left = stats["ready"]
    assert left == 1200 - stopped_at
    assert (stats["deleting"], stats["paused"]) == (True, True), "shown as being deleted"
    # a stopped deletion still holds the crawl: seeds are refused until it is deleted again
    with pytest.raises(crawlq.InvalidArgumentError, match="deleted again"):
        q.seed(["http://h1.com/late"], crawl="big")
    assert q.delete_crawl("big")["removed"] == left
    assert (q.crawl_stats("big")["deleting"], q.crawl_stats("big")["paused"]) == (False, False)
    assert q.seed(["http://h1.com/late"], crawl="big").added == 1
    assert q.delete_crawl("big")["removed"] == 1

    q.seed([f"http://one.example/p{i}" for i in range(1200)])
    host_reports: list[crawlq.HostDeletion] = []
    assert q.delete_host("one.example", forget_seen=True, progress=host_reports.append)["removed"] == 1200
    assert len(host_reports) >= 3 and host_reports[-1]["removed"] == 1200
    assert host_reports[-1]["forgotten"] == 1200

    with pytest.raises(TypeError, match="progress must be callable, got int"):
        q.delete_crawl("big", progress=5)  # type: ignore[arg-type]
    q.seed(_spread("c", 10, 30))
    keys: list[int] = []
    deleted = q.remove_queue(progress=keys.append)
    assert keys and keys[-1] == deleted and keys == sorted(keys)
    assert q.stats()["pending"] == 0
    q.close()


def test_async_deletions_report_on_the_event_loop_and_a_raising_callback_stops_them(
    redis_server: RedisServer, name: str
) -> None:
    async def main() -> None:
        aq = crawlq.AsyncQueue(redis_server.url, name, host_delay=0.0)
        await aq.seed(_spread("a", 40, 30), crawl="big")
        loop_thread = threading.get_ident()
        reports: list[tuple[int, int]] = []
        gone = await aq.delete_crawl(
            "big", progress=lambda d: reports.append((d["removed"], threading.get_ident()))
        )
        assert gone["removed"] == 1200
        assert len(reports) >= 3 and reports[-1][0] == 1200
        assert [r for r, _ in reports] == sorted(r for r, _ in reports)
        assert {thread for _, thread in reports} == {loop_thread}

        await aq.seed(_spread("b", 40, 30), crawl="big")

        def stop(so_far: crawlq.CrawlDeletion) -> None:
            if so_far["removed"] > 0:
                raise LookupError(so_far["removed"])

        with pytest.raises(LookupError) as stopped:
            await aq.delete_crawl("big", progress=stop)
        stopped_at = stopped.value.args[0]
        assert 0 < stopped_at < 1200
        # each step waits for its report's callback: the deletion stopped there
        await asyncio.sleep(0.1)
        left = (await aq.crawl_stats("big"))["ready"]
        assert left == 1200 - stopped_at
        assert (await aq.delete_crawl("big"))["removed"] == left

        keys: list[int] = []
        await aq.seed(_spread("c", 10, 30))
        deleted = await aq.remove_queue(progress=keys.append)
        assert keys and keys[-1] == deleted
        aq.close()

    asyncio.run(main())
