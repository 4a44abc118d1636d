"""crawlq through the Python binding (asyncio), for bench/run.py. Same commands and output as
crawlq-bench (bench/src/main.rs):

    crawlq_python.py seed  <redis-url> <queue> <file>
    crawlq_python.py drain <redis-url> <queue> <concurrency> <batch> <host-delay-ms> <expected>
    crawlq_python.py drain-next ...   the same, each ack sent with the next lease (ack_and_lease)
    crawlq_python.py crawl <redis-url> <queue> <concurrency> <pages-file>   (bench/src/crawl.rs)
"""

import asyncio
import json
import sys
import time
from pathlib import Path

import crawlq

IDLE_WAIT = 0.3  # an idle worker's last wait; the reported time ends at the last item
SEEN_CACHE = 100_000  # entries of the known-seen cache (every crawlq runner the same)


async def seed(url: str, queue: str, file: str) -> tuple[int, float]:
    urls = Path(file).read_text().splitlines()
    aq = await crawlq.AsyncQueue.connect(url, queue)
    started = time.perf_counter()
    report = await aq.seed(urls)
    return report.added, time.perf_counter() - started


async def drain(url: str, queue: str, concurrency: int, batch: int, delay_ms: int, expected: int,
                ack_with_next: bool = False) -> tuple[int, float]:
    aq = await crawlq.AsyncQueue.connect(url, queue, host_delay=delay_ms / 1000)
    done, last = 0, 0.0
    started = time.perf_counter()

    async def worker() -> None:
        nonlocal done, last
        leases = await aq.lease(batch, wait=IDLE_WAIT)
        while leases:
            final = done + len(leases) >= expected  # the last items: a plain ack, no wait after them
            # each answer is awaited before `done` is read: no lost update
            if ack_with_next and not final:
                flags, leases = await aq.ack_and_lease(leases, batch, wait=IDLE_WAIT)
                acked = sum(flags)
            else:
                acked = sum(await aq.ack(leases))
            done += acked
            last = time.perf_counter() - started
            if not ack_with_next or final:
                leases = [] if final else await aq.lease(batch, wait=IDLE_WAIT)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done, last


async def crawl(url: str, queue: str, concurrency: int, file: str) -> tuple[int, float]:
    """Worker w of c answers pages w, w + c, ... (a line each: the page's links), each with
    ack_with_links_and_lease (links seeded, lease acked, next page leased: one call), the last
    with ack_with_links."""
    pages = [line.split("\t") for line in Path(file).read_text().splitlines()]
    aq = await crawlq.AsyncQueue.connect(url, queue, seen_cache=SEEN_CACHE)
    done, last = 0, 0.0
    started = time.perf_counter()

    async def worker(w: int) -> None:
        nonlocal done, last
        mine = pages[w::concurrency]
        [lease] = await aq.lease(1, wait=IDLE_WAIT)
        for i, links in enumerate(mine):
            if i + 1 == len(mine):
                acked, _ = await aq.ack_with_links(lease, links)
            else:
                acked, _, [lease] = await aq.ack_with_links_and_lease(lease, links, 1, wait=IDLE_WAIT)
            done += acked
            last = time.perf_counter() - started

    await asyncio.gather(*(worker(w) for w in range(concurrency)))
    return done, last


def main() -> None:
    op, *args = sys.argv[1:]
    if op == "seed":
        items, seconds = asyncio.run(seed(*args))
    elif op == "crawl":
        url, queue, concurrency, file = args
        items, seconds = asyncio.run(crawl(url, queue, int(concurrency), file))
    else:
        url, queue, *numbers = args
        items, seconds = asyncio.run(drain(url, queue, *map(int, numbers), ack_with_next=op == "drain-next"))
    print(json.dumps({"items": items, "seconds": seconds}))


if __name__ == "__main__":
    main()
