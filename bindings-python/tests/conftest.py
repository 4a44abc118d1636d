"""Test harness: a private redis-server (free port, no persistence) started by the tests."""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import crawlq


class RedisServer:
    """A redis-server process owned by the test run."""

    def __init__(self, *extra: str, binary: str = "redis-server") -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="crawlq-py-"))
        for _ in range(20):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                self.port = s.getsockname()[1]
            self.proc = subprocess.Popen(
                [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", str(self.dir), *extra],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            if self._wait_ready():
                return
        raise RuntimeError("could not start redis-server (apt-get install redis-server)")

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return True
            except OSError:
                time.sleep(0.02)
        self.proc.kill()
        return False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def cli(self, *args: str) -> str:
        out = subprocess.run(["redis-cli", "-p", str(self.port), *args], capture_output=True, text=True, check=True)
        return out.stdout.strip()

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    yield server
    server.stop()


@pytest.fixture
def private_redis() -> Iterator[RedisServer]:
    """A server of its own, for tests that pause, fill or stop it."""
    server = RedisServer()
    yield server
    server.stop()


_names = itertools.count()


@pytest.fixture
def name() -> str:
    return f"py-{os.getpid()}-{next(_names)}"


@pytest.fixture
def q(redis_server: RedisServer, name: str) -> Iterator[crawlq.Queue]:
    queue = crawlq.Queue(redis_server.url, name)
    yield queue
    queue.close()


T0 = 1_800_000_000_000
"""A fixed clock (ms) for tests that move time by hand."""
