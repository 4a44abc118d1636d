"""RQ, for bench/run.py: `rq_seed.py seed <redis-url> <queue> <file>` enqueues every URL with
enqueue_many (1000 jobs per call, one pipeline each). Same output as crawlq-bench. RQ has no
de-duplication by content (a job_id that exists is overwritten), so none is asked for."""

import json
import sys
import time
from pathlib import Path

from redis import Redis
from rq import Queue


def main() -> None:
    _, op, url, name, file = sys.argv
    assert op == "seed"
    urls = Path(file).read_text().splitlines()
    q = Queue(name, connection=Redis.from_url(url))
    started = time.perf_counter()
    for i in range(0, len(urls), 1000):
        q.enqueue_many([Queue.prepare_data("bench_jobs.crawl", args=(u,)) for u in urls[i : i + 1000]])
    seconds = time.perf_counter() - started
    print(json.dumps({"items": q.count, "seconds": seconds}))


if __name__ == "__main__":
    main()
