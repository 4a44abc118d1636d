"""Processes and threads: fork, many threads on one Queue, Ctrl-C while waiting or working."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter

import crawlq
from conftest import RedisServer


def test_fork_child_reconnects_and_parent_keeps_working(q: crawlq.Queue) -> None:
    q.seed([f"http://a.com/{i}" for i in range(10)])
    assert len(q.lease(2, wait=0)) == 2  # the parent's runtime and connection are in use
    pid = os.fork()
    if pid == 0:  # child: same object, its own runtime and connection
        code = 1
        try:
            leases = q.lease(3, wait=1)
            code = 0 if len(leases) == 3 and all(q.ack(leases)) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    leases = q.lease(10, wait=0)
    assert len(leases) == 5
    stats = q.stats()
    assert (stats["done"], stats["leased"]) == (3, 7)


def test_many_threads_share_one_queue(q: crawlq.Queue) -> None:
    total = 2000
    q.seed([f"http://h{i % 20}.com/{i}" for i in range(total)])
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def worker() -> None:
        while leases := q.lease(5, wait=0.2):
            with lock:
                seen.update(l.id for l in leases)
            assert all(q.ack(leases))

    threads = [threading.Thread(target=worker) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == total and set(seen.values()) == {1}
    assert q.stats()["done"] == total


def run_script(body: str, url: str, name: str) -> subprocess.CompletedProcess[str]:
    # (Ctrl-C raises KeyboardInterrupt in the child as at a terminal even when this run was
    # started in the background: a shell starts a background job with SIGINT ignored, and a
    # Python started so never installs its handler)
    script = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    script += textwrap.dedent(body).format(url=url, name=name)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)


def test_ctrl_c_while_waiting_for_work_interrupts_promptly(redis_server: RedisServer, name: str) -> None:
    result = run_script(
        """
        import crawlq, os, signal, threading, time
        q = crawlq.Queue("{url}", "{name}")
        threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        started = time.monotonic()
        try:
            q.lease(1, wait=30)
        except KeyboardInterrupt:
            print("interrupted after %.1f s" % (time.monotonic() - started))
        """,
        redis_server.url,
        name,
    )
    assert result.returncode == 0, result.stderr
    seconds = float(result.stdout.split()[2])
    assert seconds < 5, result.stdout


def test_ctrl_c_in_a_work_loop_releases_held_leases(redis_server: RedisServer, name: str) -> None:
    q = crawlq.Queue(redis_server.url, name)
    q.seed([f"http://a.com/{i}" for i in range(5)])
    result = run_script(
        """
        import crawlq, os, signal
        q = crawlq.Queue("{url}", "{name}")
        for lease in q.work(max=5, wait=1):
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while working on the first item
            sum(range(10**6))
        """,
        redis_server.url,
        name,
    )
    assert "KeyboardInterrupt" in result.stderr
    stats = q.stats()
    assert (stats["leased"], stats["ready"], stats["released_total"]) == (0, 5, 5)


def test_ctrl_c_stops_a_long_deletion_between_its_calls(redis_server: RedisServer, name: str) -> None:
    q = crawlq.Queue(redis_server.url, name, host_delay=0.0)
    q.seed([f"http://h{i % 50}.com/{i}" for i in range(30_000)], crawl="big")
    result = run_script(
        """
        import crawlq, os, signal, threading
        q = crawlq.Queue("{url}", "{name}")
        threading.Timer(0.05, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        try:
            q.delete_crawl("big")  # no callback: Ctrl-C is noticed between its calls all the same
        except KeyboardInterrupt:
            print("interrupted")
        """,
        redis_server.url,
        name,
    )
    assert result.stdout.strip() == "interrupted", result.stderr
    left = q.crawl_stats("big")["ready"]
    assert 0 < left <= 30_000  # stopped before the end (or before its first lane)
    assert q.delete_crawl("big")["removed"] == left
    q.close()


def test_ctrl_c_stops_a_long_seed_between_its_round_trips(redis_server: RedisServer, name: str) -> None:
    result = run_script(
        """
        import crawlq, os, signal, threading
        q = crawlq.Queue("{url}", "{name}", seed_batch=1000)
        urls = ["http://h%d.com/%d" % (i % 50, i) for i in range(400_000)]
        # the first report comes once the items are read and a round trip is answered
        threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        try:
            q.seed(urls)  # no callback: Ctrl-C is noticed between its round trips all the same
            print("finished")
        except KeyboardInterrupt:
            print("interrupted")
        """,
        redis_server.url,
        name,
    )
    assert result.stdout.strip() == "interrupted", result.stderr
    seen = crawlq.Queue(redis_server.url, name).stats()["seen"]
    # the round trips answered, and at most the one sent after the last of them
    assert seen < 400_000 and seen % 250 == 0, seen
