#!/usr/bin/env python3
"""The mixed-language demo crawl: a Python, a Node.js and a PHP crawler share one crawlq frontier.

Serves a generated website on loopback addresses (one virtual host per address, 127.0.0.2 to
127.0.0.7), seeds its front page, runs the three crawlers in demo/crawlers/ at once until the
frontier is empty, then prints what each language fetched, the politeness the web server saw
and the queue's final stats. Nothing leaves the machine.

Run it through tools/demo.sh, which installs and builds everything first. Run directly, it needs:
  REDIS_URL             a redis-server it may use (the queue "demo" is deleted first)
  CRAWLQ_PHP_EXTENSION  path of the built crawlq.so
  CRAWLQ_JS_MODULE      the Node.js module (default: bindings-node)
The crawlers get REDIS_URL, CRAWLQ_QUEUE (the queue's name) and SITE_ORIGINS.
and a Python with the crawlq wheel installed (the one running this file).
"""

from __future__ import annotations

import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import crawlq

REPO = Path(__file__).resolve().parents[1]
CRAWLERS = Path(__file__).resolve().parent / "crawlers"
HOSTS = [f"127.0.0.{i}" for i in range(2, 8)]
PAGES_PER_HOST = 60
HOST_DELAY_S = 0.1  # the crawlers' politeness delay (each opens the queue with it)
QUEUE = f"demo-{int(time.time())}"  # a fresh queue per run, so a shared redis-server is fine too


class Site:
    """A deterministic website: PAGES_PER_HOST pages per host, links within and across hosts,
    a few links to pages that do not exist (404) and a few pages that fail once with 503."""

    def __init__(self, port: int, seed: int = 1) -> None:
        rng = random.Random(seed)
        self.port = port
        self.links: dict[tuple[str, str], list[str]] = {}
        self.flaky = {(HOSTS[2], f"/page/{i}") for i in range(5, PAGES_PER_HOST, 12)}
        self.failed_once: set[tuple[str, str]] = set()
        self.lock = threading.Lock()
        # (host, path, status, monotonic time of the request, lease time the crawler sent in ms)
        self.log: list[tuple[str, str, int, float, int]] = []
        for h, host in enumerate(HOSTS):
            for i in range(PAGES_PER_HOST):
                path = "/" if i == 0 else f"/page/{i}"
                # a chain through every page of the host, so every page is reachable
                links = [f"/page/{i + 1}"] if i + 1 < PAGES_PER_HOST else []
                links += [f"/page/{rng.randrange(1, PAGES_PER_HOST)}" for _ in range(3)]
                other = HOSTS[rng.randrange(len(HOSTS))]
                links.append(f"{self.origin(other)}/page/{rng.randrange(1, PAGES_PER_HOST)}")
                if i == 0:
                    links += [f"{self.origin(o)}/" for o in HOSTS if o != host]
                if rng.random() < 0.04:
                    links.append(f"/missing/{h}-{i}")
                self.links[(host, path)] = links

    def origin(self, host: str) -> str:
        return f"http://{host}:{self.port}"

    def respond(self, host: str, path: str, leased_at: int) -> tuple[int, str]:
        key = (host, path)
        with self.lock:
            status = 200
            if key not in self.links:
                status = 404
            elif key in self.flaky and key not in self.failed_once:
                self.failed_once.add(key)
                status = 503
            self.log.append((host, path, status, time.monotonic(), leased_at))
        if status != 200:
            return status, f"<html><body><h1>{status}</h1></body></html>"
        anchors = "".join(f'<li><a href="{link}">{link}</a></li>' for link in self.links[key])
        return 200, f"<html><head><title>{host}{path}</title></head><body><ul>{anchors}</ul></body></html>"


def serve(site: Site) -> list[ThreadingHTTPServer]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            leased_at = int(self.headers.get("X-Crawlq-Leased-At", "0"))
            status, body = site.respond(self.server.server_address[0], self.path, leased_at)
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    servers = []
    for host in HOSTS:
        server = ThreadingHTTPServer((host, site.port), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    return servers


def free_port() -> int:
    """A port that is free on every demo address."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind((HOSTS[0], 0))
            port = probe.getsockname()[1]
        try:
            for host in HOSTS:
                with socket.socket() as s:
                    s.bind((host, port))
            return port
        except OSError:
            continue
    raise SystemExit("no port is free on all of " + ", ".join(HOSTS))


def crawler_commands() -> dict[str, list[str]]:
    return {
        "python": [sys.executable, str(CRAWLERS / "crawl.py")],
        "node": ["node", str(CRAWLERS / "crawl.mjs")],
        "php": ["php", "-d", "extension=" + os.environ["CRAWLQ_PHP_EXTENSION"], str(CRAWLERS / "crawl.php")],
    }


def main() -> None:
    redis_url = os.environ["REDIS_URL"]
    port = free_port()
    site = Site(port)
    servers = serve(site)
    origins = [site.origin(h) for h in HOSTS]
    q = crawlq.Queue(redis_url, QUEUE, host_delay=HOST_DELAY_S)
    print(f"site: {len(site.links)} pages on {len(HOSTS)} hosts ({origins[0]} ... {origins[-1]})")
    report = q.seed([origins[0] + "/"])
    print(f"seeded the front page: added {report.added}")

    env = dict(os.environ, SITE_ORIGINS=",".join(origins), CRAWLQ_QUEUE=QUEUE)
    env.setdefault("CRAWLQ_JS_MODULE", str(REPO / "bindings-node"))
    started = time.monotonic()
    procs = {
        lang: subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for lang, cmd in crawler_commands().items()
    }
    results = {}
    failed = False
    for lang, proc in procs.items():
        out, err = proc.communicate(timeout=600)
        if proc.returncode != 0:
            print(f"{lang} crawler failed (exit {proc.returncode}):\n{err}", file=sys.stderr)
            failed = True
            continue
        results[lang] = json.loads(out.strip().splitlines()[-1])
    elapsed = time.monotonic() - started
    for server in servers:
        server.shutdown()
    if failed:
        raise SystemExit(1)

    print(f"\ncrawl finished in {elapsed:.1f} s")
    print(f"{'crawler':<10}{'fetched':>9}{'failed':>8}")
    for lang, r in results.items():
        print(f"{lang:<10}{r['fetched']:>9}{r['failed']:>8}")

    requests = Counter(entry[2] for entry in site.log)
    print(f"\nweb server: {len(site.log)} requests ({', '.join(f'{n} x {s}' for s, n in sorted(requests.items()))})")
    # Two views of politeness per host: the gaps between the lease times the queue gave out
    # (Redis clock, what crawlq guarantees) and between the requests the server received
    # (which adds each crawler's own latency from lease to request).
    print(f"{'host':<12}{'requests':>9}{'min lease gap':>15}{'min request gap':>17}{'median request gap':>20}")
    lease_gaps: list[float] = []
    request_gaps: list[float] = []
    for host in HOSTS:
        entries = [e for e in site.log if e[0] == host]
        leased = sorted(e[4] for e in entries)
        received = sorted(e[3] for e in entries)
        host_lease_gaps = [float(b - a) for a, b in zip(leased, leased[1:])]
        host_request_gaps = [(b - a) * 1000 for a, b in zip(received, received[1:])]
        lease_gaps += host_lease_gaps
        request_gaps += host_request_gaps
        print(
            f"{host:<12}{len(entries):>9}{min(host_lease_gaps):>13.0f}ms{min(host_request_gaps):>15.1f}ms"
            f"{statistics.median(host_request_gaps):>18.1f}ms"
        )
    print(
        f"politeness: no host was leased twice within {min(lease_gaps):.0f} ms (host delay {HOST_DELAY_S * 1000:.0f} ms);"
        f" requests to one host arrived at least {min(request_gaps):.1f} ms apart"
    )

    stats = q.stats()
    print("\nfinal stats:", json.dumps({k: stats[k] for k in ("pending", "leased", "done", "dead", "seen", "hosts")}))
    for item in q.dead(limit=3):
        print(f"  dead: {item['url']} ({item['last_error']})")

    # the demo checks itself: every page fetched once, every broken link dead, nothing left over
    fetched = sum(r["fetched"] for r in results.values())
    missing = {(e[0], e[1]) for e in site.log if e[2] == 404}
    problems = []
    if fetched != len(site.links) or stats["done"] != len(site.links):
        problems.append(f"{fetched} pages fetched, {stats['done']} done, {len(site.links)} exist")
    if stats["dead"] != len(missing):
        problems.append(f"{stats['dead']} dead letters for {len(missing)} broken links")
    if min(lease_gaps) < HOST_DELAY_S * 1000:
        problems.append(f"a host was leased again after {min(lease_gaps):.0f} ms")
    if stats["pending"] or stats["leased"]:
        problems.append("work left in the queue")
    if problems:
        raise SystemExit("demo FAILED: " + "; ".join(problems))
    print(f"\nok: all {len(site.links)} pages crawled once by {len(results)} languages, {len(missing)} broken links in dead letters")


if __name__ == "__main__":
    main()
