"""Seed 100,000 URLs and drain them with 16 asyncio tasks through the Python binding, next to
the same workload through the Rust API (core/examples/workload.rs), interleaved on one
private redis-server. Prints medians and the binding/Rust ratio.

    python bench/bench_binding.py [N] [ROUNDS]
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import crawlq  # noqa: E402
from conftest import RedisServer  # noqa: E402

REPO = HERE.parent.parent
WORKERS, BATCH = 16, 100


def url(i: int) -> str:
    return f"https://www.host{i % 1000:04d}.example.com/articles/2026/11/{i:07d}/a-long-slug-for-the-title?ref=seed"


async def python_run(redis_url: str, queue: str, n: int) -> dict[str, float]:
    aq = await crawlq.AsyncQueue.connect(redis_url, queue)
    urls = [url(i) for i in range(n)]
    started = time.perf_counter()
    report = await aq.seed(urls)
    seed_s = time.perf_counter() - started
    assert report.added == n

    async def worker() -> int:
        done = 0
        while leases := await aq.lease(BATCH, wait=0):
            done += len(await aq.ack(leases))
        return done

    started = time.perf_counter()
    drained = sum(await asyncio.gather(*(worker() for _ in range(WORKERS))))
    drain_s = time.perf_counter() - started
    assert drained == n
    return {"seed_per_s": n / seed_s, "drain_per_s": n / drain_s}


def rust_run(redis_url: str, queue: str, n: int) -> dict[str, float]:
    out = subprocess.run(
        ["cargo", "run", "-q", "--release", "-p", "crawlq", "--example", "workload", "--",
         redis_url, queue, str(n), str(WORKERS), str(BATCH)],
        cwd=REPO, capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    subprocess.run(["cargo", "build", "-q", "--release", "-p", "crawlq", "--example", "workload"], cwd=REPO, check=True)
    server = RedisServer()
    try:
        results: dict[str, list[dict[str, float]]] = {"rust": [], "python": []}
        for r in range(rounds):  # interleaved: rust, python, rust, python, ...
            results["rust"].append(rust_run(server.url, f"bench-rust-{r}", n))
            results["python"].append(asyncio.run(python_run(server.url, f"bench-py-{r}", n)))
            server.cli("FLUSHALL")
        print(f"N = {n} URLs over 1000 hosts, drain with {WORKERS} concurrent workers x lease {BATCH} + batch ack, "
              f"{rounds} interleaved rounds, medians (min-max)")
        print(f"| {'through':<8} | {'seed items/s':>26} | {'drain items/s':>26} |")
        print(f"|{'-' * 10}|{'-' * 28}|{'-' * 28}|")
        med = {}
        for name, runs in results.items():
            cells = []
            for key in ("seed_per_s", "drain_per_s"):
                values = [run[key] for run in runs]
                med[(name, key)] = statistics.median(values)
                cells.append(f"{statistics.median(values):>9.0f} ({min(values):.0f}-{max(values):.0f})")
            print(f"| {name:<8} | {cells[0]:>26} | {cells[1]:>26} |")
        for key in ("seed_per_s", "drain_per_s"):
            print(f"python/rust {key}: {med[('python', key)] / med[('rust', key)]:.2f}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
