"""The adapter round trip: a request seeded by one framework (Scrapy, Crawlee for JavaScript,
Crawlee for Python, Laravel) is fetched and retried by each other one, then fetched again by
the first, through the adapters only. Every ordered pair has its own queue. Checked:

* what the second framework sees (method, canonical URL, headers, body bytes, user data, label,
  depth) is what the first seeded;
* after its retry, the stored request counts one retry and keeps the first framework's own
  fields (a Scrapy callback, Crawlee's unique key and session rotation count, a Laravel job)
  exactly as seeded;
* the first framework then gets its own request back whole (its callback, session rotation count
  or job) with the retry counted, and answers it as handled.

Run by tests/frameworks/run.py (`run.py roundtrip`); each side is a small program per framework
(scrapy/roundtrip_side.py, crawlee/roundtrip_side.js, crawlee_python/roundtrip_side.py, the
Laravel app's `crawl:roundtrip` command)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import crawlq

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FRAMEWORKS = ["scrapy", "crawlee", "crawlee-python", "laravel"]

BODY = b"\x00\xffq=crawl&lang=\xc3\xa9"
SHARED = {
    "method": "POST",
    "headers": [["X-Roundtrip", "yes"], ["Accept", "text/html"]],
    "body_b64": base64.b64encode(BODY).decode(),
    "user_data": {"page": 3, "tags": ["a", "é"], "nested": {"ok": True}},
    "label": "DETAIL",
    "depth": 2,
}


def queue_of(seeder: str, taker: str) -> str:
    return f"roundtrip-{seeder}-to-{taker}"


def url_of(seeder: str, taker: str) -> str:
    # the query in an order the sorted canonical form changes
    return f"http://rt.example/{seeder}/to/{taker}?b=2&a=1"


def command(framework: str, phase: str, redis_url: str, queues: list[str]) -> list[str]:
    joined = ",".join(queues)
    if framework == "scrapy":
        return [sys.executable, str(HERE / "scrapy" / "roundtrip_side.py"), phase, redis_url, joined]
    if framework == "crawlee":
        return ["node", str(HERE / "crawlee" / "roundtrip_side.js"), phase, redis_url, joined]
    if framework == "crawlee-python":
        return [sys.executable, str(HERE / "crawlee_python" / "roundtrip_side.py"), phase, redis_url, joined]
    extension = os.environ["CRAWLQ_PHP_EXTENSION"]
    return ["php", "-d", f"extension={extension}", str(HERE / "laravel" / "artisan"), "crawl:roundtrip", phase, joined]


def run_phase(phase: str, redis_url: str, tmp: Path, jobs: dict[str, tuple[list[str], dict]], check: Callable[[bool, str], None]) -> dict[str, dict]:
    """Run each framework's side of one phase at once (their queues differ); the views by queue."""
    node_package = REPO / "bindings-node"
    procs = {}
    for framework, (queues, spec) in jobs.items():
        env = {
            **os.environ,
            "ROUNDTRIP_SPEC": json.dumps(spec),
            "CRAWLQ_URL": redis_url,
            "CRAWLQ_NODE": str(node_package),
            "NODE_PATH": str(node_package / "node_modules"),
            "CRAWLEE_STORAGE_DIR": str(tmp / f"roundtrip-{framework}-storage"),
            "LARAVEL_STORAGE": str(tmp / "roundtrip-laravel-storage"),
            "HOST_DELAY": "0",
        }
        procs[framework] = subprocess.Popen(
            command(framework, phase, redis_url, queues), env=env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    views = {}
    for framework, proc in procs.items():
        out, err = proc.communicate(timeout=120)
        check(proc.returncode == 0, f"roundtrip: {framework} {phase} exited with {proc.returncode}:\n{out}\n{err[-3000:]}")
        for line in out.splitlines():
            if line.startswith("{"):
                view = json.loads(line)
                views[view.pop("queue")] = {"by": framework, **view}
    return views


def expected_view(seeder: str, taker: str, retries: int) -> dict:
    view = {k: v for k, v in SHARED.items() if k != "headers"}
    view["url"] = crawlq.normalize(url_of(seeder, taker).replace("?b=2&a=1", "?a=1&b=2"))["canonical"]
    view["headers"] = sorted([name.lower(), value] for name, value in SHARED["headers"])
    view["retries"] = retries
    return view


def shared_of(view: dict) -> dict:
    out = {k: view[k] for k in ("url", "method", "body_b64", "user_data", "label", "depth", "retries")}
    out["headers"] = sorted(view["headers"])
    return out


def stored_request(q: crawlq.Queue) -> dict:
    """The stored crawl request of the queue's one item, read with a lease that is released
    (a release is no attempt and changes nothing)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        leases = q.lease(1, wait=1.0)
        if leases:
            request = crawlq.request_of(leases[0])
            q.release(leases[0])
            return request
    raise SystemExit("FAILED: roundtrip: no item to read")


def run_roundtrip(redis_url: str, tmp: Path, check: Callable[[bool, str], None]) -> None:
    started = time.monotonic()
    pairs = [(a, b) for a in FRAMEWORKS for b in FRAMEWORKS if a != b]
    queues = {queue_of(a, b): crawlq.Queue(redis_url, queue_of(a, b), sort_query=True) for a, b in pairs}

    # 1. each framework seeds one request per other framework
    jobs = {}
    for a in FRAMEWORKS:
        mine = [b for b in FRAMEWORKS if b != a]
        jobs[a] = ([queue_of(a, b) for b in mine], {**SHARED, "urls": {queue_of(a, b): url_of(a, b) for b in mine}})
    seeded = run_phase("seed", redis_url, tmp, jobs, check)
    check(len(seeded) == len(pairs) and all(v["seeded"] for v in seeded.values()), f"roundtrip: seeds {seeded}")
    own_fields = {}
    for a, b in pairs:
        request = stored_request(queues[queue_of(a, b)])
        own_fields[(a, b)] = request["frameworks"]
        check(shared_of({**request, "body_b64": base64.b64encode(request["body"] or b"").decode(),
                         "headers": [[n.lower(), v] for n, v in request["headers"]]}) == expected_view(a, b, 0),
              f"roundtrip: {a} stored {request}")

    # 2. each framework takes and retries what the others seeded for it
    jobs = {b: ([queue_of(a, b) for a in FRAMEWORKS if a != b], {}) for b in FRAMEWORKS}
    taken = run_phase("take", redis_url, tmp, jobs, check)
    for a, b in pairs:
        view = taken[queue_of(a, b)]
        check(shared_of(view) == expected_view(a, b, 0), f"roundtrip: {b} read {a}'s request as {shared_of(view)}, wanted {expected_view(a, b, 0)}")
        request = stored_request(queues[queue_of(a, b)])
        check(request["retries"] == 1, f"roundtrip: {b}'s retry of {a}'s request stored retries {request['retries']}")
        kept = {name: fields for name, fields in request["frameworks"].items() if name in own_fields[(a, b)]}
        check(kept == own_fields[(a, b)] or _crawlee_pair(a, b, kept, own_fields[(a, b)]),
              f"roundtrip: {b}'s retry changed {a}'s own fields: {own_fields[(a, b)]} -> {kept}")
        check(request["method"] == "POST" and request["body"] == BODY and request["user_data"] == SHARED["user_data"],
              f"roundtrip: {b}'s retry changed {a}'s request: {request}")
        stats = queues[queue_of(a, b)].stats()
        check(stats["retried_total"] == 1, f"roundtrip: {b}'s retry of {a}'s request was a retry ({stats})")

    # 3. each framework gets its own request back after the other's retry
    jobs = {a: ([queue_of(a, b) for b in FRAMEWORKS if b != a], {}) for a in FRAMEWORKS}
    checked = run_phase("check", redis_url, tmp, jobs, check)
    own_expected = {
        "scrapy": {"callback": "parse_detail", "cb_kwargs": {"k": 1}},
        "crawlee": {"sessionRotationCount": 2},
        "crawlee-python": {"session_rotation_count": 2},
        "laravel": {"job": "App\\Jobs\\RoundtripPage", "note": "laravel only", "attempts": 2},
    }
    for a, b in pairs:
        view = checked[queue_of(a, b)]
        check(shared_of(view) == expected_view(a, b, 1), f"roundtrip: {a} got its request back from {b} as {shared_of(view)}")
        check(view["own"] == own_expected[a], f"roundtrip: {a}'s own fields after {b}'s retry: {view['own']}, wanted {own_expected[a]}")
        stats = queues[queue_of(a, b)].stats()
        check((stats["done"], stats["pending"], stats["leased"]) == (1, 0, 0), f"roundtrip: {a}'s answer after {b} ({stats})")
    for q in queues.values():
        q.close()
    print(f"roundtrip: {len(pairs)} ordered pairs of adapters (seed, fetch and retry by the other, fetch and ack by the "
          f"first): method, URL, headers, body, user data, label, depth and each framework's own fields kept, "
          f"in {time.monotonic() - started:.1f} s")


def _crawlee_pair(a: str, b: str, kept: dict, seeded: dict) -> bool:
    """Crawlee for JavaScript and for Python share the `crawlee` namespace: one's retry of the
    other's request updates what Crawlee keeps there (its error messages), nothing else."""
    if {a, b} != {"crawlee", "crawlee-python"}:
        return False
    strip = lambda fields: {k: {f: v for f, v in fs.items() if f != "error_messages"} if k == "crawlee" else fs for k, fs in fields.items()}  # noqa: E731
    return strip(kept) == strip(seeded)
