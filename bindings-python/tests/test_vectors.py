"""The shared vectors of tests/vectors/, checked through the Python binding."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import crawlq
from conftest import RedisServer

VECTORS = Path(__file__).resolve().parents[2] / "tests" / "vectors"
TIME_FIELDS = {"leased_at", "expires_at", "enqueued_at", "died_at", "held_until", "paused_until", "next_due", "now", "oldest_pending_age", "delay", "adaptive_extra"}


def load(name: str) -> Any:
    return json.loads((VECTORS / name).read_text())


def to_python(value: Any) -> Any:
    """Vector names (`_ms` milliseconds) as Python's (seconds); payloads left alone."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k.endswith("_ms"):
                out[k[:-3]] = None if v is None else v / 1000
            else:
                out[k] = v if k == "payload" else to_python(v)
        return out
    if isinstance(value, list):
        return [to_python(v) for v in value]
    return value


def to_vector(value: Any) -> Any:
    """Results in vector units: seconds -> milliseconds for the time fields."""
    if isinstance(value, dict):
        return {k: (round(v * 1000) if k in TIME_FIELDS and isinstance(v, float) else v if k == "payload" else to_vector(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [to_vector(v) for v in value]
    return value


def lease_dict(lease: crawlq.Lease) -> dict[str, Any]:
    return to_vector({name: getattr(lease, name) for name in
                      ("id", "url", "host", "key", "payload", "priority", "attempt", "token", "leased_at", "expires_at", "enqueued_at", "last_error", "crawl")})


def report_dict(report: crawlq.SeedReport) -> dict[str, Any]:
    return {"added": report.added, "duplicates": report.duplicates,
            "invalid": [{"index": i.index, "input": i.input, "code": i.code, "reason": i.reason} for i in report.invalid],
            "ids": report.ids}


def matches(expected: Any, actual: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and matches(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and all(matches(e, a) for e, a in zip(expected, actual))
    return bool(expected == actual)


def test_normalization_and_fingerprints() -> None:
    cases = load("normalize.json")["cases"]
    assert len(cases) >= 300
    for case in cases:
        if "error" in case:
            with pytest.raises(crawlq.InvalidItemError) as err:
                crawlq.normalize(case["input"])
            assert err.value.reason == case["error"], case["input"]
        else:
            got = crawlq.normalize(case["input"])
            assert {k: got[k] for k in ("kind", "canonical", "host", "fingerprint")} == {k: case[k] for k in ("kind", "canonical", "host", "fingerprint")}, case["input"]


def test_lone_surrogates_are_replaced_as_in_every_language() -> None:
    fields = ("kind", "canonical", "host", "fingerprint")
    for case in load("normalize.json")["invalid_text"]:
        text = json.loads('"' + case["utf16"] + '"')  # keeps the lone surrogate
        if "error" in case:
            with pytest.raises(crawlq.InvalidItemError) as err:
                crawlq.normalize(text)
            assert err.value.reason == case["error"], case["utf16"]
        else:
            got = crawlq.normalize(text)
            assert {k: got[k] for k in fields} == {k: case[k] for k in fields}, case["utf16"]


def lines(text: str) -> list[str]:
    # not str.splitlines(): records may hold a raw U+2028, which JSON leaves unescaped
    return [line for line in text.split("\n") if line]


def stored_records(redis: RedisServer, base: str) -> list[str]:
    lanes = lines(redis.cli("--scan", "--pattern", f"{base}:l:*"))
    records = [r for lane in lanes for r in lines(redis.cli("LRANGE", lane, "0", "-1"))]
    records += lines(redis.cli("ZRANGE", f"{base}:delayed", "0", "-1"))
    return sorted(records, key=lambda r: int(json.loads(r)["id"]))


def test_stored_records(redis_server: RedisServer, name: str) -> None:
    file = load("records.json")
    for i, case in enumerate(file["cases"]):
        q = crawlq.Queue(redis_server.url, f"{name}-{i}", fixed_clock=file["clock"] / 1000)
        q.seed(to_python(case["items"]), **to_python(case["options"]))
        assert stored_records(redis_server, f"crawlq:{{{name}-{i}}}") == case["expect"], case["name"]


def test_key_names(redis_server: RedisServer, name: str) -> None:
    for case in load("keys.json")["cases"]:
        prefix = f"vec-{name}-{case['queue']}"
        q = crawlq.Queue(redis_server.url, case["queue"], key_prefix=prefix)
        q.seed(to_python(case["items"]))
        keys = sorted(lines(redis_server.cli("--scan", "--pattern", f"{prefix}:*")))
        assert keys == [k.replace("{prefix}", prefix) for k in case["expect"]]


def test_scenarios(redis_server: RedisServer, name: str) -> None:
    file = load("scenarios.json")
    for n, scenario in enumerate(file["scenarios"]):
        q = crawlq.Queue(redis_server.url, f"{name}-{n}", fixed_clock=file["clock"] / 1000, **to_python(scenario["options"]))
        leases: list[crawlq.Lease] = []
        for i, step in enumerate(scenario["steps"]):
            where = f"{scenario['name']}, step {i} ({step['op']})"
            arg: Any = None
            if "lease" in step:
                arg = leases[step["lease"]]
            elif "leases" in step:
                arg = [leases[j] for j in step["leases"]]
            op = step["op"]
            try:
                if op == "clock":
                    q._set_fixed_clock(step["ms"])
                    got: Any = None
                elif op == "seed":
                    got = report_dict(q.seed(to_python(step["items"]), **to_python(step.get("options", {}))))
                elif op == "lease":
                    new = q.lease(step["max"], wait=step["wait_ms"] / 1000)
                    leases.extend(new)
                    got = [lease_dict(l) for l in new]
                elif op == "ack":
                    got = q.ack(arg, **to_python(step.get("options", {})))
                elif op == "ack_and_lease":
                    acked, new = q.ack_and_lease(arg, step["max"], wait=step["wait_ms"] / 1000)
                    leases.extend(new)
                    got = {"acked": acked, "leases": [lease_dict(l) for l in new]}
                elif op == "nack":
                    got = q.nack(arg, **to_python(step.get("options", {})))
                elif op == "extend":
                    deadline = q.extend(arg, step["ttl_ms"] / 1000)
                    got = [None if t is None else round(t * 1000) for t in deadline] if isinstance(deadline, list) else round(deadline * 1000)
                elif op == "release":
                    got = q.release(arg, **to_python(step.get("options", {})))
                elif op == "reclaim":
                    got = q.reclaim(step["limit"])
                elif op == "stats":
                    got = to_vector(q.stats())
                elif op == "dead":
                    got = to_vector(q.dead(step["limit"], step["offset"]))
                elif op == "requeue_dead":
                    got = q.requeue_dead(step["ids"])
                elif op == "is_finished":
                    got = q.is_finished()
                elif op == "purge_dead":
                    got = q.purge_dead(step.get("ids"))
                elif op == "set_host_delay":
                    got = to_vector(q.set_host_delay(step["host"], None if step["delay_ms"] is None else step["delay_ms"] / 1000))
                elif op == "host_info":
                    got = to_vector(q.host_info(step["host"]))
                elif op == "ack_with_links":
                    acked, report = q.ack_with_links(arg, to_python(step["links"]), **to_python(step.get("options", {})))
                    got = {"acked": acked, "links": report_dict(report)}
                elif op == "ack_with_links_and_lease":
                    acked, report, new = q.ack_with_links_and_lease(
                        arg, to_python(step["links"]), step["max"], wait=step["wait_ms"] / 1000, **to_python(step.get("options", {}))
                    )
                    leases.extend(new)
                    got = {"acked": acked, "links": report_dict(report), "leases": [lease_dict(l) for l in new]}
                elif op == "wait_host_turn":
                    got = q.wait_host_turn(step["url"], lease=arg, timeout=step["timeout_ms"] / 1000)
                elif op == "set_host_crawl_delay":
                    got = to_vector(q.set_host_crawl_delay(step["host"], None if step["delay_ms"] is None else step["delay_ms"] / 1000))
                elif op == "set_host_delay_after":
                    got = to_vector(q.set_host_delay_after(step["host"], step["after"], factor=step["factor"]))
                elif op == "set_host_in_flight":
                    got = to_vector(q.set_host_in_flight(step["host"], step["limit"]))
                elif op == "set_host_budget":
                    got = to_vector(q.set_host_budget(step["host"], step["urls"]))
                elif op == "set_default_host_budget":
                    got = q.set_default_host_budget(step["urls"])
                elif op == "default_host_budget":
                    got = q.default_host_budget()
                elif op == "pause":
                    got = q.pause(None if step["duration_ms"] is None else step["duration_ms"] / 1000)
                elif op == "resume":
                    got = q.resume()
                elif op == "is_paused":
                    got = q.is_paused()
                elif op == "list_hosts":
                    got = to_vector(q.list_hosts(step["cursor"], step["limit"]))
                elif op == "remove_queue":
                    got = q.remove_queue(even_if_leased=step.get("even_if_leased", False))
                elif op == "delete_host":
                    got = to_vector(q.delete_host(step["host"], forget_seen=step.get("forget_seen", False)))
                elif op == "pause_host":
                    got = to_vector(q.pause_host(step["host"], None if step["duration_ms"] is None else step["duration_ms"] / 1000))
                elif op == "resume_host":
                    got = to_vector(q.resume_host(step["host"]))
                elif op == "peek":
                    got = to_vector(q.peek(step["limit"]))
                elif op == "peek_host":
                    got = to_vector(q.peek_host(step["host"], step["limit"], step["offset"]))
                elif op == "crawl_stats":
                    got = to_vector(q.crawl_stats(step["crawl"]))
                elif op == "set_crawl_cap":
                    got = to_vector(q.set_crawl_cap(step["crawl"], step["cap"]))
                elif op == "set_crawl_weight":
                    got = to_vector(q.set_crawl_weight(step["crawl"], step["weight"]))
                elif op == "set_crawl_host_budget":
                    got = to_vector(q.set_crawl_host_budget(step["crawl"], step["urls"]))
                elif op == "pause_crawl":
                    got = q.pause_crawl(step["crawl"])
                elif op == "resume_crawl":
                    got = q.resume_crawl(step["crawl"])
                elif op == "crawls":
                    got = q.crawls()
                elif op == "delete_crawl":
                    got = to_vector(q.delete_crawl(step["crawl"]))
                else:
                    raise AssertionError(f"unknown op {op}")
            except crawlq.CrawlqError as e:
                assert step.get("expect_error") == e.code, f"{where}: {e!r}"
                continue
            assert "expect_error" not in step, f"{where}: no error, got {got!r}"
            if "expect" in step:
                assert matches(step["expect"], got), f"{where}: expected {step['expect']!r}, got {got!r}"


def test_shard_vectors() -> None:
    cases = load("shards.json")["cases"]
    assert len(cases) >= 100
    for case in cases:
        assert crawlq.shard_of(case["input"], case["shards"]) == case["shard"], case


def native_bytes(value: Any) -> Any:
    """A vector value with {"$bytes": base64} objects as Python bytes (as the binding reads them)."""
    import base64

    if isinstance(value, dict):
        if set(value) == {"$bytes"}:
            return base64.b64decode(value["$bytes"])
        return {k: native_bytes(v) for k, v in value.items()}
    if isinstance(value, list):
        return [native_bytes(v) for v in value]
    return value


def test_crawl_requests_store_read_and_key_as_the_vectors_say(redis_server: RedisServer, name: str) -> None:
    file = load("requests.json")
    q = crawlq.Queue(redis_server.url, name, fixed_clock=1_800_000_000)
    for case in file["cases"]:
        request = native_bytes(case["request"])
        assert crawlq.request_payload(request) == native_bytes(case["payload"]), case["name"]
        report = q.seed_requests([request])
        assert report.added == 1, case["name"]
        [lease] = q.lease(1, wait=0)
        assert lease.key == case["key"], case["name"]
        read = crawlq.request_of(lease)
        assert read == native_bytes(case["read"]), case["name"]
        base = "crawlq:{" + name + "}"
        record = redis_server.cli("HGET", f"{base}:leases", f"{lease.token}:{lease.id}")
        assert '"payload":' + case["stored"] + "}" in record, case["name"]
        assert q.ack(lease)
    for case in file["reads"]:
        if case["url"] is None:
            continue  # a host item: no lease of one carries a URL to read
        q.seed([{"url": case["url"], "payload": case["payload"]}])
        [lease] = q.lease(1, wait=0)
        if "error" in case:
            with pytest.raises(crawlq.ProtocolError):
                crawlq.request_of(lease)
        else:
            assert crawlq.request_of(lease) == native_bytes(case["read"]), case["name"]
        q.ack(lease)
    for case in file["updates"]:
        # seeded as stored (a plain seed keeps the payload as it is), changed, stored by a release
        q.seed([{"url": case["url"], "payload": native_bytes(case["payload"])}])
        [lease] = q.lease(1, wait=0)
        if "error" in case:
            error = crawlq.ProtocolError if case["error"] == "PROTOCOL" else crawlq.InvalidArgumentError
            with pytest.raises(error):
                crawlq.request_update(lease, case["changes"])
            q.ack(lease)
            continue
        payload = crawlq.request_update(lease, case["changes"])
        assert payload == native_bytes(case["result"]), case["name"]
        assert q.release(lease, payload=payload)
        [lease] = q.lease(1, wait=0)
        base = "crawlq:{" + name + "}"
        record = redis_server.cli("HGET", f"{base}:leases", f"{lease.token}:{lease.id}")
        assert '"payload":' + case["stored"] + "}" in record, case["name"]
        q.ack(lease)
    sorting = crawlq.Queue(redis_server.url, name + "-sorted", sort_query=True)
    for case in file["sort_query"]:
        report = sorting.seed([case["input"]])
        if report.added:
            [lease] = sorting.lease(1, wait=0)
            assert lease.url == case["canonical"], case["input"]
            sorting.ack(lease)
