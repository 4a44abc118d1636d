"""A local web site for the framework tests: PAGES pages on six hosts (127.0.0.1, .2, .3, .11,
.12 and .13, one port), linked in cycles, a few pages that answer 503 the first time, and links to pages
that do not exist (404). Every request is logged with its arrival time, so a test can check
that each page was fetched exactly once and that a host was never fetched faster than its
politeness delay.

    site = Site(log_path); site.start(); ...; site.stop(); site.requests()
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

PAGES = 330
# six hosts: a crawl paced per host takes half the time it would on three, with the same delay
# (on twelve, 3 Scrapy processes sent more requests late after their lease than the lateness
# check allows a host of ~30 requests)
HOSTS = ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.11", "127.0.0.12", "127.0.0.13"]
FLAKY = {i for i in range(PAGES) if i % 37 == 5}  # 503 on the first fetch, 200 after
MISSING = 20  # /missing/0 .. /missing/19 answer 404
# The spellings a shared frontier must take for one page or tell apart (Site(variants=True)):
CASE_TWINS = {i for i in range(PAGES) if i % 5 == 0}  # /P/<i> is a page of its own, besides /p/<i>
QUERY_PAGES = 30  # /q/<k>?a=1&b=2, linked in both parameter orders: one page
TRAILING_DOT = {i for i in range(PAGES) if i % 7 == 1}  # links to <i + 2> spell its host "127.0.0.x."
SLOW = {i for i in range(PAGES) if i % 13 == 4}  # answered after 0.5 s: a crawler holds their leases a while


def host_of(page: int) -> str:
    return HOSTS[page % len(HOSTS)]


def links_of(page: int) -> list[int]:
    """Pages linked from a page: the next one (a cycle through every page), two others, and
    itself (a self-link)."""
    return sorted({(page + 1) % PAGES, (page * 7 + 3) % PAGES, page // 2, page})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Site:
    """`variants`: the site of a mixed crawl, whose links also spell hosts with a trailing dot,
    link pages whose paths differ only in case, and link query pages in both parameter orders."""

    def __init__(self, log_path: Path, port: int = 0, variants: bool = False) -> None:
        self.variants = variants
        self.port = port or free_port()
        self.log_path = log_path
        self._lock = threading.Lock()
        self._fetched: set[str] = set()
        self._servers: list[ThreadingHTTPServer] = []
        self._log = open(log_path, "a", buffering=1)
        # requests being answered now, by User-Agent
        self.in_flight: dict[str, int] = {}

    def url(self, page: int) -> str:
        return f"http://{host_of(page)}:{self.port}/p/{page}"

    def start(self) -> Site:
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                arrived = time.time()
                agent = self.headers.get("User-Agent", "")
                with site._lock:
                    site.in_flight[agent] = site.in_flight.get(agent, 0) + 1
                try:
                    status, body = site.answer(self.path)
                finally:
                    with site._lock:
                        site.in_flight[agent] -= 1
                leased_at = float(self.headers.get("X-Crawlq-Leased-At", "nan"))
                site.record(self.server.server_address[0], self.path, status, agent, leased_at,
                            self.headers.get("X-Seeded-By", "start"), arrived)
                data = body.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "text/html; charset=utf-8")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the crawler went away (a process killed mid-crawl); it is logged all the same

            def log_message(self, *args: Any) -> None:
                pass

        for host in HOSTS:
            server = ThreadingHTTPServer((host, self.port), Handler)
            server.daemon_threads = True
            threading.Thread(target=server.serve_forever, daemon=True).start()
            self._servers.append(server)
        return self

    def answer(self, path: str) -> tuple[int, str]:
        if self.variants:
            variant = self.answer_variant(path)
            if variant is not None:
                return variant
        parts = path.strip("/").split("/")
        if len(parts) == 2 and parts[0] == "p" and parts[1].isdigit() and int(parts[1]) < PAGES:
            page = int(parts[1])
            with self._lock:
                first = path not in self._fetched
                self._fetched.add(path)
            if page in FLAKY and first:
                return 503, "try again"
            if self.variants and page in SLOW:
                time.sleep(0.5)
            links = [f'<a href="{self.url(n)}">page {n}</a>' for n in links_of(page)]
            if page % 11 == 0:
                links.append(f'<a href="http://{host_of(page)}:{self.port}/missing/{page % MISSING}">gone</a>')
            links.append(f'<a href="/p/{page}#top">top</a>')  # the same page again, by another spelling
            if self.variants:
                links.extend(self.variant_links(page))
            return 200, f"<html><body><h1>Page {page}</h1>{''.join(links)}</body></html>"
        return 404, "not found"

    def variant_links(self, page: int) -> list[str]:
        links = []
        if page in CASE_TWINS:
            links.append(f'<a href="http://{host_of(page)}:{self.port}/P/{page}">twin</a>')
        k = page % QUERY_PAGES
        order = "b=2&a=1" if page % 2 else "a=1&b=2"
        links.append(f'<a href="http://{host_of(k)}:{self.port}/q/{k}?{order}">query</a>')
        if page in TRAILING_DOT:
            target = (page + 2) % PAGES
            links.append(f'<a href="http://{host_of(target)}.:{self.port}/p/{target}">dot</a>')
        return links

    def answer_variant(self, path: str) -> tuple[int, str] | None:
        """The pages only the variant site has: /P/<i> (a case twin), /q/<k>?a=1&b=2."""
        route, _, query = path.partition("?")
        parts = route.strip("/").split("/")
        if len(parts) != 2 or not parts[1].isdigit():
            return None
        n = int(parts[1])
        if parts[0] == "P" and n in CASE_TWINS:
            return 200, f'<html><body><h1>Twin {n}</h1><a href="{self.url((n + 1) % PAGES)}">next</a></body></html>'
        if parts[0] == "q" and n < QUERY_PAGES and sorted(query.split("&")) == ["a=1", "b=2"]:
            return 200, f'<html><body><h1>Query {n}</h1><a href="{self.url(n)}">page</a></body></html>'
        return None

    def record(self, host: str, path: str, status: int, agent: str, leased_at: float, seeded_by: str, arrived: float) -> None:
        fields = {"t": arrived, "host": host, "path": path, "status": status, "agent": agent, "seeded_by": seeded_by}
        if leased_at == leased_at:  # not NaN: the crawler said when it leased the request
            fields["leased_at"] = leased_at
        line = json.dumps(fields)
        with self._lock:
            self._log.write(line + "\n")

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        self._log.close()

    def requests(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log_path.read_text().splitlines() if line]


def expected_missing() -> set[str]:
    """The 404 URLs' paths, per host, that some page links to."""
    return {f"{host_of(p)}/missing/{p % MISSING}" for p in range(PAGES) if p % 11 == 0}


def expected_fetches(variants: bool = False) -> dict[str, list[int]]:
    """What a crawl of the whole site fetches, by host and path: the statuses in order (a flaky
    page 503 then 200). With `variants`, the case twins and the query pages (in the sorted order
    of their parameters, the frontier's canonical form) too."""
    out = {f"{host_of(page)}/p/{page}": [503, 200] if page in FLAKY else [200] for page in range(PAGES)}
    out.update({missing: [404] for missing in expected_missing()})
    if variants:
        out.update({f"{host_of(page)}/P/{page}": [200] for page in CASE_TWINS})
        out.update({f"{host_of(k)}/q/{k}?a=1&b=2": [200] for k in range(QUERY_PAGES)})
    return out


def check_fetches(requests: list[dict[str, Any]], host_delay: float, jitter: float, startup_lag: bool = False,
                  variants: bool = False) -> list[str]:
    """What is wrong with a crawl of the whole site, judged from the server's log (empty: all
    good): every page fetched exactly once with 200 (flaky ones once with 503 first), every
    linked 404 fetched exactly once; per host, no two leases closer than `host_delay` (by the
    Redis clock, from the X-Crawlq-Leased-At header the crawler sends); no request reaching the
    site before its lease; and the crawler fetching what it leased at once: per host, at least
    95% of the requests reach the site within `jitter` of their lease.

    Two fetches of a host are as far apart as their leases plus the difference of their
    lease-to-request times, so with the lease gaps exact, what a crawler adds is how late it
    sends what it leased. A crawler that leased ahead of its fetches (a buffer of leases)
    would send most requests late and fail; a rare late one is the machine's scheduler (an
    event loop or process that did not run for ~100 ms on a loaded 2-core machine) and makes
    one fetch gap shorter by as much: run.py prints the smallest fetch gaps and the late
    requests. With `startup_lag`, the requests a process leased before its first request to
    that host reached it are not checked for lateness (they also waited for the crawler's
    start-up and for its first connection to the host); their lease gaps still are."""
    problems: list[str] = []
    by_url: dict[str, list[int]] = {}
    for r in requests:
        by_url.setdefault(f"{r['host']}{r['path']}", []).append(r["status"])
    for url, want in expected_fetches(variants).items():
        got = by_url.pop(url, [])
        if got != want:
            problems.append(f"{url}: fetched {got}, wanted {want}")
    for url, got in sorted(by_url.items()):
        problems.append(f"{url}: fetched {got}, never linked")
    if any("leased_at" not in r for r in requests):
        problems.append("a request came without its X-Crawlq-Leased-At header")
        return problems
    for host, gaps in host_gaps(requests, "leased_at").items():
        if gaps and gaps[0] < host_delay - 0.0005:  # lease times are whole milliseconds
            problems.append(f"{host}: two leases {gaps[0] * 1000:.1f} ms apart, delay {host_delay * 1000:.0f} ms")
    for r in requests:
        # One clock (Redis and the site run on this machine); lease times are whole milliseconds.
        if r["t"] < r["leased_at"] - 0.002:
            problems.append(f"{r['host']}{r['path']}: reached the site {(r['leased_at'] - r['t']) * 1000:.1f} ms before its lease")
    checked = after_startup(requests) if startup_lag else requests
    for host in HOSTS:
        latencies = sorted(lease_to_request(r) for r in checked if r["host"] == host)
        late = [x for x in latencies if x > jitter]
        if len(late) > 0.05 * len(latencies):
            problems.append(
                f"{host}: {len(late)} of {len(latencies)} requests reached the site more than {jitter * 1000:.0f} ms "
                f"after their lease (median {latencies[len(latencies) // 2] * 1000:.1f} ms)"
            )
    return problems


def lease_to_request(request: dict[str, Any]) -> float:
    """Seconds from a request's lease (Redis clock) to its arrival at the site."""
    return float(request["t"] - request["leased_at"])


def after_startup(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The requests each process leased after its first request to the same host reached it.
    A process that has just started sends its first request to a host 30-200 ms after the
    lease (the HTTP client loads, the connection opens); later ones leave within ~15 ms."""
    first_arrival: dict[tuple[str, str], float] = {}
    for r in requests:
        key = (r["agent"], r["host"])
        first_arrival[key] = min(r["t"], first_arrival.get(key, r["t"]))
    return [r for r in requests if r.get("leased_at", r["t"]) > first_arrival[(r["agent"], r["host"])]]


def host_gaps(requests: list[dict[str, Any]], field: str) -> dict[str, list[float]]:
    """Per host, the sorted gaps between consecutive requests' `field` (t: arrival at the site,
    leased_at: lease time by the Redis clock)."""
    out = {}
    for host in HOSTS:
        times = sorted(r[field] for r in requests if r["host"] == host and field in r)
        out[host] = sorted(b - a for a, b in zip(times, times[1:]))
    return out


# The politeness site (PoliteSite): three hosts of their own, five pages each.
SLOW_HOST, RATE_HOST, ROBOTS_HOST = "127.0.0.4", "127.0.0.5", "127.0.0.6"
POLITE_PAGES = 5
SLOW_SECONDS = 1.5  # every page of the slow host answers after this long
RETRY_AFTER = 2  # seconds: the rate-limited host's 429 asks for this
CRAWL_DELAY = 1  # seconds: the robots host's robots.txt Crawl-delay


def serve(site: Site, hosts: tuple[str, ...], answer: Any) -> None:
    """Serve `answer(host, path) -> (status, headers, body)` on each of `hosts` at the site's
    port, logging each request: its arrival (`t`), when its answer was sent (`done`), host,
    path, status, User-Agent and X-Crawlq-Leased-At (`leased`, None without one)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            arrived = time.time()
            host = self.server.server_address[0]
            status, headers, body = answer(host, self.path)
            data = body.encode()
            try:
                self.send_response(status)
                for name, value in {"Content-Type": "text/html; charset=utf-8", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
            leased = self.headers.get("X-Crawlq-Leased-At")
            line = {"t": arrived, "done": time.time(), "host": host, "path": self.path, "status": status,
                    "agent": self.headers.get("User-Agent", ""), "leased": float(leased) if leased else None}
            with site._lock:
                site._log.write(json.dumps(line) + "\n")

        def log_message(self, *args: Any) -> None:
            pass

    for host in hosts:
        server = ThreadingHTTPServer((host, site.port), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        site._servers.append(server)


class PoliteSite(Site):
    """A site that tests the politeness of the load: /s/<i> on SLOW_HOST answers after
    SLOW_SECONDS and links /s/<i + 1>, /r/<i> and /c/<i>; /r/1 on RATE_HOST answers 429 with
    `Retry-After: RETRY_AFTER` the first time; ROBOTS_HOST's robots.txt has `Crawl-delay:
    CRAWL_DELAY`. Each request is logged as `serve` logs it."""

    def __init__(self, log_path: Path) -> None:
        super().__init__(log_path)

    def start_url(self) -> str:
        return f"http://{SLOW_HOST}:{self.port}/s/0"

    def answer_polite(self, host: str, path: str) -> tuple[int, dict[str, str], str]:
        if path == "/robots.txt":
            delay = f"Crawl-delay: {CRAWL_DELAY}\n" if host == ROBOTS_HOST else ""
            return 200, {"Content-Type": "text/plain"}, f"User-agent: *\n{delay}"
        parts = path.strip("/").split("/")
        if len(parts) != 2 or not parts[1].isdigit() or int(parts[1]) >= POLITE_PAGES:
            return 404, {}, "not found"
        kind, page = parts[0], int(parts[1])
        if (kind, host) == ("s", SLOW_HOST):
            time.sleep(SLOW_SECONDS)
            links = [f"http://{RATE_HOST}:{self.port}/r/{page}", f"http://{ROBOTS_HOST}:{self.port}/c/{page}"]
            if page + 1 < POLITE_PAGES:
                links.append(f"http://{SLOW_HOST}:{self.port}/s/{page + 1}")
            body = "".join(f'<a href="{link}">{link}</a>' for link in links)
            return 200, {}, f"<html><body>{body}</body></html>"
        if (kind, host) == ("r", RATE_HOST):
            with self._lock:
                first = path not in self._fetched
                self._fetched.add(path)
            if page == 1 and first:
                return 429, {"Retry-After": str(RETRY_AFTER)}, "slow down"
            return 200, {}, "<html><body>rate</body></html>"
        if (kind, host) == ("c", ROBOTS_HOST):
            return 200, {}, "<html><body>robots</body></html>"
        return 404, {}, "not found"

    def start(self) -> PoliteSite:
        serve(self, (SLOW_HOST, RATE_HOST, ROBOTS_HOST), self.answer_polite)
        return self



HUB_HOST, LANDING_HOST = "127.0.0.7", "127.0.0.8"
REDIRECT_PAGES = 6


class RedirectSite(Site):
    """A site of redirects: /p/<i> on HUB_HOST links /p/<i + 1>, /go/<i> and /l/<i> on
    LANDING_HOST; /go/<i> answers 302 to /land/<i> on LANDING_HOST, which nothing else links
    (so the landing host's own pages and the redirects' targets compete for its turns). Each
    request is logged as `serve` logs it."""

    def start_url(self) -> str:
        return f"http://{HUB_HOST}:{self.port}/p/0"

    def answer_redirect(self, host: str, path: str) -> tuple[int, dict[str, str], str]:
        parts = path.strip("/").split("/")
        if len(parts) != 2 or not parts[1].isdigit() or int(parts[1]) >= REDIRECT_PAGES:
            return 404, {}, "not found"
        kind, page = parts[0], int(parts[1])
        if (kind, host) == ("p", HUB_HOST):
            links = [f"http://{HUB_HOST}:{self.port}/go/{page}", f"http://{LANDING_HOST}:{self.port}/l/{page}"]
            if page + 1 < REDIRECT_PAGES:
                links.append(f"http://{HUB_HOST}:{self.port}/p/{page + 1}")
            body = "".join(f'<a href="{link}">{link}</a>' for link in links)
            return 200, {}, f"<html><body>{body}</body></html>"
        if (kind, host) == ("go", HUB_HOST):
            return 302, {"Location": f"http://{LANDING_HOST}:{self.port}/land/{page}"}, "moved"
        if kind in ("land", "l") and host == LANDING_HOST:
            return 200, {}, "<html><body>landed</body></html>"
        return 404, {}, "not found"

    def start(self) -> RedirectSite:
        serve(self, (HUB_HOST, LANDING_HOST), self.answer_redirect)
        return self


GATE_HOST, HELD_HOST = "127.0.0.9", "127.0.0.10"
HELD_PAGES = 12
ROBOTS_SECONDS = 1.5  # HELD_HOST's robots.txt answers after this long


class HeldSite(Site):
    """A site whose robots.txt keeps crawlers waiting: /h/0 on GATE_HOST links HELD_PAGES pages
    /c/<i> on HELD_HOST, whose robots.txt (allowing everything) answers after ROBOTS_SECONDS. A
    crawler that reads robots.txt before each host's first request holds the requests of
    HELD_HOST it leased meanwhile; they must not leave at once when robots.txt arrives. Each
    request is logged as `serve` logs it."""

    def start_url(self) -> str:
        return f"http://{GATE_HOST}:{self.port}/h/0"

    def answer_held(self, host: str, path: str) -> tuple[int, dict[str, str], str]:
        if path == "/robots.txt":
            if host == HELD_HOST:
                time.sleep(ROBOTS_SECONDS)
            return 200, {"Content-Type": "text/plain"}, "User-agent: *\nAllow: /\n"
        if (host, path) == (GATE_HOST, "/h/0"):
            links = [f"http://{HELD_HOST}:{self.port}/c/{i}" for i in range(HELD_PAGES)]
            return 200, {}, "<html><body>" + "".join(f'<a href="{link}">{link}</a>' for link in links) + "</body></html>"
        parts = path.strip("/").split("/")
        if host == HELD_HOST and len(parts) == 2 and parts[0] == "c" and parts[1].isdigit() and int(parts[1]) < HELD_PAGES:
            return 200, {}, "<html><body>held</body></html>"
        return 404, {}, "not found"

    def start(self) -> HeldSite:
        serve(self, (GATE_HOST, HELD_HOST), self.answer_held)
        return self


def check_held(requests: list[dict[str, Any]], delay: float) -> tuple[list[str], dict[str, float]]:
    """What is wrong with a crawl of the HeldSite by crawlers paced `delay` per host, from the
    site's log, and the figures checked: every page fetched once with 200; the page requests to
    HELD_HOST (robots.txt, which each crawler process fetches itself, left out) start at least
    `delay` apart (a turn each, or a lease: one started within the adapters' held turn, 50 ms, of
    its lease goes at once) and arrive a little after they start: on two busy cores a Crawlee for
    Python request once arrived about 90 ms after its turn, so two turns 200 ms apart reached
    the site 118 ms apart. So each gap must be at least half the delay (requests that leave
    together arrive within a few ms of each other), and the requests together must span their
    delays less 150 ms (the adapters' 50 ms and one request's lateness)."""
    problems: list[str] = []
    pages = [r for r in requests if r["path"] != "/robots.txt"]
    want = {f"{GATE_HOST}/h/0": [200], **{f"{HELD_HOST}/c/{i}": [200] for i in range(HELD_PAGES)}}
    got: dict[str, list[int]] = {}
    for r in pages:
        got.setdefault(f"{r['host']}{r['path']}", []).append(r["status"])
    for url in sorted(set(want) | set(got)):
        if got.get(url, []) != want.get(url):
            problems.append(f"{url}: fetched {got.get(url, [])}, wanted {want.get(url)}")
    held = sorted((r for r in pages if r["host"] == HELD_HOST), key=lambda r: r["t"])
    gaps = [(b["t"] - a["t"], a, b) for a, b in zip(held, held[1:])]
    for gap, a, b in gaps:
        if gap < delay / 2:
            problems.append(f"{HELD_HOST}: {b['path']} ({b['agent']}) arrived {gap * 1000:.0f} ms after {a['path']} ({a['agent']}), "
                            f"wanted >= {delay * 500:.0f} ms (delay {delay * 1000:.0f} ms)")
    span, wanted_span = sum(g for g, _, _ in gaps), len(gaps) * delay - 0.15
    if span < wanted_span:
        problems.append(f"{HELD_HOST}: its {len(held)} page requests arrived within {span * 1000:.0f} ms, wanted >= {wanted_span * 1000:.0f} ms")
    figures = {"smallest gap": min((g for g, _, _ in gaps), default=0.0),
               "robots.txt fetches": float(sum(1 for r in requests if r["host"] == HELD_HOST and r["path"] == "/robots.txt"))}
    return problems, figures


def check_redirects(requests: list[dict[str, Any]], delay: float, hop_agent: str) -> tuple[list[str], dict[str, float]]:
    """What is wrong with a crawl of the RedirectSite by crawlers paced `delay` per host, from
    the site's log, and the figures checked: every page, redirect and landing page fetched once;
    per host, each request starts at least `delay` after the previous one. A request starts when
    it was leased (its X-Crawlq-Leased-At) or, for a redirect hop the HTTP client followed (a
    landing page fetched by `hop_agent` with the agent and lease time of its redirect), when
    it arrived; a lease after a hop may come up to 60 ms sooner (the hop arrives a little after
    its turn)."""
    problems: list[str] = []
    figures: dict[str, float] = {}
    want = {f"{HUB_HOST}/p/{i}": [200] for i in range(REDIRECT_PAGES)}
    want.update({f"{HUB_HOST}/go/{i}": [302] for i in range(REDIRECT_PAGES)})
    want.update({f"{LANDING_HOST}/land/{i}": [200] for i in range(REDIRECT_PAGES)})
    want.update({f"{LANDING_HOST}/l/{i}": [200] for i in range(REDIRECT_PAGES)})
    got: dict[str, list[int]] = {}
    for r in requests:
        got.setdefault(f"{r['host']}{r['path']}", []).append(r["status"])
    for url in sorted(set(want) | set(got)):
        if got.get(url, []) != want.get(url):
            problems.append(f"{url}: fetched {got.get(url, [])}, wanted {want.get(url)}")
    # a hop carries the headers of the redirect it followed, its lease time included
    redirects = {(r["agent"], r["path"].split("/")[-1], r["leased"]) for r in requests if r["path"].startswith("/go/")}
    starts = []
    for r in requests:
        hop = (r["path"].startswith("/land/") and r["agent"].startswith(hop_agent)
               and (r["agent"], r["path"].split("/")[-1], r["leased"]) in redirects)
        if not hop and r["leased"] is None:
            problems.append(f"{r['host']}{r['path']}: no lease time")
            continue
        starts.append({**r, "hop": hop, "start": r["t"] if hop else r["leased"]})
    figures["hops"] = sum(1 for r in starts if r["hop"])
    for host in (HUB_HOST, LANDING_HOST):
        mine = sorted((r for r in starts if r["host"] == host), key=lambda r: r["start"])
        for a, b in zip(mine, mine[1:]):
            gap = b["start"] - a["start"]
            slack = 0.06 if a["hop"] else 0.002
            key = f"{host} smallest gap"
            figures[key] = min(figures.get(key, gap), gap)
            if gap < delay - slack:
                problems.append(f"{host}: {b['path']} ({'hop' if b['hop'] else 'lease'}) started {gap * 1000:.0f} ms after "
                                f"{a['path']} ({'hop' if a['hop'] else 'lease'}), wanted >= {delay * 1000:.0f} ms")
    return problems, figures


def check_politeness(requests: list[dict[str, Any]], delay: float) -> tuple[list[str], dict[str, float]]:
    """What is wrong with a crawl of the PoliteSite (its hosts paced after the answer with
    `delay` and an in-flight limit of 1), from the site's log, and the figures checked: every
    page fetched once with 200 (/r/1 first with 429); per host, the page requests (robots.txt,
    which each crawler process fetches itself, left out) never overlap, and each starts at
    least the host's delay after the previous one was answered (SLOW_HOST: `delay`;
    ROBOTS_HOST: its Crawl-delay); the request after the 429 comes no sooner than its
    Retry-After."""
    problems: list[str] = []
    figures: dict[str, float] = {}
    pages = [r for r in requests if r["path"] != "/robots.txt"]
    by_url: dict[str, list[int]] = {}
    for r in pages:
        by_url.setdefault(f"{r['host']}{r['path']}", []).append(r["status"])
    want = {f"{SLOW_HOST}/s/{i}": [200] for i in range(POLITE_PAGES)}
    want.update({f"{RATE_HOST}/r/{i}": [429, 200] if i == 1 else [200] for i in range(POLITE_PAGES)})
    want.update({f"{ROBOTS_HOST}/c/{i}": [200] for i in range(POLITE_PAGES)})
    for url in sorted(set(want) | set(by_url)):
        if by_url.get(url, []) != want.get(url):
            problems.append(f"{url}: fetched {by_url.get(url, [])}, wanted {want.get(url)}")
    for host, gap_wanted in ((SLOW_HOST, delay), (RATE_HOST, delay), (ROBOTS_HOST, float(CRAWL_DELAY))):
        mine = sorted((r for r in pages if r["host"] == host), key=lambda r: r["t"])
        gaps = [b["t"] - a["done"] for a, b in zip(mine, mine[1:])]
        if not gaps:
            continue
        figures[f"{host} smallest gap"] = min(gaps)
        # (lease times are whole milliseconds of the Redis clock, the site's are this machine's)
        if min(gaps) < gap_wanted - 0.002:
            overlap = " (two requests in flight at once)" if min(gaps) < 0 else ""
            problems.append(f"{host}: a request {min(gaps) * 1000:.0f} ms after the previous answer, wanted "
                            f">= {gap_wanted * 1000:.0f} ms{overlap}")
    limited = [r for r in pages if r["status"] == 429]
    later = [r for r in pages if r["host"] == RATE_HOST and limited and r["t"] > limited[0]["t"]]
    if limited and later:
        waited = min(r["t"] for r in later) - limited[0]["done"]
        figures["after the 429"] = waited
        if waited < RETRY_AFTER - 0.002:
            problems.append(f"{RATE_HOST}: next request {waited:.3f} s after the 429, Retry-After {RETRY_AFTER} s")
    return problems, figures
