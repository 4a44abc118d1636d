"""One queue of 8 shards over a Redis Cluster (CRAWLQ_CLUSTER_URL, started by tools/test.sh):
seeded, drained by work() loops (blocking and asyncio), dead letters across shards,
per-shard stats."""

from __future__ import annotations

import asyncio
import os

import pytest

import crawlq

URL = os.environ.get("CRAWLQ_CLUSTER_URL")
pytestmark = pytest.mark.skipif(not URL, reason="CRAWLQ_CLUSTER_URL is not set (tools/test.sh sets it)")


def test_one_queue_of_eight_shards_over_a_cluster(name: str) -> None:
    assert URL
    q = crawlq.Queue(URL, name, shards=8)
    urls = [f"http://h{i % 50}.cluster.example/{i}" for i in range(500)]
    assert q.seed(urls).added == 500
    done = 0
    for lease in q.work(max=20, wait=0.3, stop_when_empty=True):
        assert lease.id.rsplit("@", 1)[1].isdigit()
        if lease.url.endswith("/7"):
            q.nack(lease, retry=False, reason="gone")
        elif q.ack(lease):
            done += 1
    stats = q.stats()
    assert (stats["done"], stats["dead"], stats["pending"], stats["leased"]) == (499, 1, 0, 0)
    assert len(stats["shards"]) == 8 and sum(s["done"] for s in stats["shards"]) == 499
    assert done == 499
    [dead] = q.dead()
    assert dead["url"] == "http://h7.cluster.example/7"
    assert crawlq.shard_of(dead["url"], 8) == int(dead["id"].split("@")[1])
    assert q.requeue_dead([dead["id"]]) == 1
    # a client that leaves `shards` unset uses the queue's; another count is refused
    assert crawlq.Queue(URL, name).stats()["ready"] == 1
    with pytest.raises(crawlq.ConfigError):
        crawlq.Queue(URL, name, shards=4)


def test_asyncio_workers_on_a_cluster(name: str) -> None:
    assert URL

    async def main() -> int:
        q = await crawlq.AsyncQueue.connect(URL, name, shards=8)
        await q.seed([f"http://a{i % 30}.cluster.example/{i}" for i in range(300)])

        async def worker() -> int:
            n = 0
            async for lease in q.work(max=10, wait=0.3, stop_when_empty=True):
                n += await q.ack(lease)
            return n

        counts = await asyncio.gather(*(worker() for _ in range(4)))
        return sum(counts)

    assert asyncio.run(main()) == 300
