"""What the side benchmarks (cluster.py, replicas.py, shards.py, seen_cache_memory.py) share: the
URL workload they seed (~95-char URLs over 1,000 hosts, written once to a temporary file for the
Rust bench runner to read) and a private redis-server on a free port."""

import atexit
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def scratch_dir(prefix: str) -> str:
    """A new temporary directory, removed when this process ends (a redis-server's files, a
    workload file)."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    return path


def write_urls(n: int) -> Path:
    """A file of `n` URLs, one per line, spread over 1,000 hosts."""
    path = Path(scratch_dir("crawlq-bench-urls-")) / "urls.txt"
    path.write_text("".join(
        f"https://host{i % 1000}.example.com/articles/2026/11/{i}/a-page-title-of-some-length?ref=bench\n"
        for i in range(n)))
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis(*args: str) -> tuple[subprocess.Popen, int]:
    """A redis-server without persistence on a free port of 127.0.0.1 (in a temporary
    directory, with `args` added to its command line), answering PING; the caller kills it."""
    port = free_port()
    # (the caller kills the server; its directory goes when this process ends)
    workdir = scratch_dir("crawlq-bench-")
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", workdir, *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True,
                         text=True).stdout.strip() != "PONG":
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit("redis-server did not start")
        time.sleep(0.02)
    return proc, port
