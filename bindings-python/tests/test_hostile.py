"""The hostile-input table shared by every binding (tests/vectors/hostile.json): each case's
answer, and a refused call leaves the data unchanged (DEBUG DIGEST)."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import pytest

import crawlq

TABLE = json.loads((Path(__file__).resolve().parents[2] / "tests" / "vectors" / "hostile.json").read_text())
CASES = TABLE["cases"]
_names = itertools.count()


def value(v: Any) -> Any:
    """A tagged value of the table as Python's own."""
    if isinstance(v, dict):
        if "$nan" in v:
            return math.nan
        if "$inf" in v:
            return math.inf * v["$inf"]
        if "$int" in v:
            return int(v["$int"])
        if "$object" in v:
            return object()
        if "$bad_text" in v:
            return v["$bad_text"] + "\ud800"
        return {k: value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [value(x) for x in v]
    return v


def run(q: crawlq.Queue, lease: crawlq.Lease, case: dict[str, Any], url: str) -> Any:
    c = {k: value(v) for k, v in case.items()}
    call = c["call"]
    if call == "seed":
        options = c.get("options", {})
        return q.seed(c["items"], **options)
    if call == "ack_with_links":
        return q.ack_with_links(lease, c["items"])
    if call == "lease":
        kwargs = {"max": c["max"], "wait": c["wait"]}
        if "ttl" in c:
            kwargs["ttl"] = c["ttl"]
        return q.lease(**kwargs)
    if call == "nack":
        return q.nack(lease, reason=c.get("reason"), delay=c.get("delay"))
    if call == "extend":
        return q.extend(lease, c["ttl"])
    if call in ("set_host_delay", "pause_host"):
        return getattr(q, call)(c["host"], c["seconds"])
    if call in ("resume_host", "host_info"):
        return getattr(q, call)(c["host"])
    if call == "delete_host":
        return q.delete_host(c["host"])
    if call == "set_host_budget":
        return q.set_host_budget(c["host"], c["urls"])
    if call == "list_hosts":
        return q.list_hosts(cursor=c.get("cursor"), limit=c["limit"])
    if call == "dead":
        return q.dead(limit=c["limit"], offset=c["offset"])
    if call == "reclaim":
        return q.reclaim(c["limit"])
    if call == "open":
        return crawlq.Queue(url, c["queue"], **c["options"])
    raise AssertionError(f"no call {call}")


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_hostile_input(redis_server, case: dict[str, Any]) -> None:
    q = crawlq.Queue(redis_server.url, f"hostile-{next(_names)}")
    q.seed(["http://held.example/1", "http://queued.example/1"])
    [lease] = q.lease(max=1, wait=0)
    assert lease.host == "held.example"
    before = redis_server.cli("DEBUG", "DIGEST")
    expect = case.get("expect_python", case["expect"])
    if "error" in expect or "type_error" in expect:
        wanted = TypeError if "type_error" in expect else crawlq.CrawlqError
        with pytest.raises(wanted) as raised:
            run(q, lease, case, redis_server.url)
        if "error" in expect:
            assert raised.value.code == expect["error"], raised.value
        else:
            assert not isinstance(raised.value, crawlq.CrawlqError)
        assert redis_server.cli("DEBUG", "DIGEST") == before, "a refused call changed nothing"
        return
    answer = run(q, lease, case, redis_server.url)
    if case["call"] == "ack_with_links":
        acked, answer = answer
        assert acked is expect["acked"]
    if case["call"] in ("seed", "ack_with_links"):
        assert answer.added == expect["added"]
        assert [[i.index, i.code] for i in answer.invalid] == expect["invalid"]
    if "host" in expect:
        assert answer["host"] == expect["host"]
    if "outcome" in expect:
        assert answer == expect["outcome"]
