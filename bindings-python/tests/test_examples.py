"""The README's Python worker and the typed example run for real; the stubs are checked."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import RedisServer

HERE = Path(__file__).resolve().parent.parent
REPO = HERE.parent

SITE = {
    "/": '<a href="/a">a</a> <a href="/b#top">b</a>',
    "/a": '<a href="/b">b</a> <a href="c">c</a>',
    "/b": '<a href="/">home</a>',
    "/c": '<a href="/missing">gone</a>',
}


@pytest.fixture
def site() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = SITE.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.end_headers()
            self.wfile.write((body or "not found").encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def readme_python_block(heading: str = "## Python", doc: str = "README.md") -> str:
    """The first python block of `doc`'s section under `heading` (to the next `## `)."""
    readme = (REPO / doc).read_text()
    section = readme.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, f"the {heading!r} section of {doc} has a python block"
    return blocks[0]


def test_readme_worker_crawls_the_site(private_redis: RedisServer, site: str) -> None:
    code = readme_python_block()
    assert len([l for l in code.splitlines() if l.strip() and not l.startswith(("import", "from"))]) <= 12
    env = dict(os.environ, REDIS_URL=private_redis.url, START_URL=site)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # /, /a, /b, /c crawled (each once, though linked several times); /missing (404) retried, then dead
    assert out.stdout.strip() == "4 pages crawled, 1 dead"


def test_readme_named_crawls_take_turns(private_redis: RedisServer) -> None:
    code = readme_python_block("## Many crawls on one queue")
    env = dict(os.environ, REDIS_URL=private_redis.url)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    # the comments in the block say what it prints, line by line
    expected = re.findall(r"# (\[.*\])", code)
    assert out.stdout.strip().splitlines() == expected


def test_readme_crawlee_crawler_crawls_the_site_and_gives_back_its_leases_on_sigterm(
    private_redis: RedisServer, site: str, tmp_path: Path
) -> None:
    pytest.importorskip("crawlee", reason="pip install 'crawlee>=1,<2' (tools/setup.sh does)")
    import signal
    import time

    import crawlq

    code = readme_python_block("## Crawlee", "docs/frameworks.md")
    env = dict(os.environ, REDIS_URL=private_redis.url, START_URL=site, CRAWLEE_STORAGE_DIR=str(tmp_path))
    q = crawlq.Queue(private_redis.url, "frontier")
    # stopped by SIGTERM mid-crawl (host_delay 1.0: the 5 fetches take 4 s): it ends cleanly
    # and leaves nothing leased
    first = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while q.stats()["done"] < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    first.send_signal(signal.SIGTERM)
    out, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    stats = q.stats()
    assert stats["leased"] == 0 and stats["done"] < 4, stats
    # run again: it finishes the crawl
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    stats = q.stats()
    # /, /a, /b, /c once each; /missing (404): Crawlee does not retry it, a dead letter
    assert (stats["done"], stats["dead"], stats["leased"], stats["pending"]) == (4, 1, 0, 0), stats


def test_readme_scrapy_settings_run_a_spider(private_redis: RedisServer, site: str, tmp_path: Path) -> None:
    pytest.importorskip("scrapy")
    import crawlq

    settings = readme_python_block("## Scrapy", "docs/frameworks.md")
    (tmp_path / "readme_settings.py").write_text(settings)
    (tmp_path / "spider.py").write_text(
        "import os, scrapy\n"
        "class Site(scrapy.Spider):\n"
        "    name = 'site'\n"
        "    start_urls = [os.environ['START_URL']]\n"
        "    def parse(self, response):\n"
        "        yield from response.follow_all(css='a', callback=self.parse)\n"
    )
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="readme_settings", PYTHONPATH=str(tmp_path), START_URL=site)
    # the settings as docs/frameworks.md gives them; only the Redis URL is this test's
    out = subprocess.run([sys.executable, "-m", "scrapy", "runspider", "spider.py", "-s", f"CRAWLQ_URL={private_redis.url}",
                          "-s", "TELNETCONSOLE_ENABLED=0"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    stats = crawlq.Queue(private_redis.url, "site").stats()
    # /, /a, /b, /c once each; /missing (404) a dead letter at once
    assert (stats["done"], stats["dead"], stats["leased"], stats["pending"]) == (4, 1, 0, 0), stats


def test_typed_example_passes_mypy_strict_and_runs(redis_server: RedisServer) -> None:
    example = HERE / "examples" / "typed_usage.py"
    mypy = subprocess.run([sys.executable, "-m", "mypy", "--strict", str(example)], capture_output=True, text=True)
    assert mypy.returncode == 0, mypy.stdout
    for _ in range(3):  # also proves a clean interpreter exit after asyncio use
        run = subprocess.run([sys.executable, str(example)], env=dict(os.environ, REDIS_URL=redis_server.url),
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0 and "typed_usage: ok" in run.stderr, run.stderr


def test_stubs_match_the_module() -> None:
    stubtest = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "crawlq", "--allowlist", str(HERE / "stubtest-allowlist.txt")],
        capture_output=True, text=True, cwd="/",
    )
    assert stubtest.returncode == 0, stubtest.stdout
