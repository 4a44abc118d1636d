"""Named crawls: seed into a crawl, de-duplication per crawl, one host shared by every crawl."""

from __future__ import annotations

import asyncio

import pytest

import crawlq
from conftest import T0, RedisServer


def test_a_url_is_one_item_in_each_crawl(q: crawlq.Queue) -> None:
    for crawl in (None, "red", "blue"):
        assert q.seed(["http://a.com/x"], crawl=crawl).added == 1
        assert q.seed(["http://a.com/x"], crawl=crawl).duplicates == 1
    leased = q.lease(10, wait=0)
    assert sorted(lease.crawl or "" for lease in leased) == ["", "blue", "red"]
    assert q.crawl_stats("red") == {"pending": 0, "ready": 0, "delayed": 0, "leased": 1, "dead": 0, "done": 0,
                                    "seen": 1, "seeded_total": 1}
    assert q.ack(leased) == [True, True, True]
    assert q.stats()["done"] == 3
    assert (q.crawl_stats("red")["done"], q.crawl_stats("blue")["done"]) == (1, 1)
    assert q.crawl_stats("never")["seen"] == 0
    with pytest.raises(crawlq.InvalidArgumentError):
        q.crawl_stats("a:b")


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
