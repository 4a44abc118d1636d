#!/usr/bin/env python3
"""Writes normalize.json, records.json, keys.json, shards.json (the shard of a host, the tags of a
shard) and requests.json: the vectors every runtime checks.

The expected values come from models written here, independently of the Rust code: a small
model of WHATWG URL canonicalization for the systematic URL combinations, Python's IDNA codec
for punycode, the `xxhash` package for fingerprints, and the record format of
docs/PROTOCOL.md for stored bytes. A runtime agreeing with these files agrees with the spec,
not merely with itself. scenarios.json is written by hand.

    pip install xxhash && python3 tests/vectors/generate.py        (rewrites the files)
    python3 tests/vectors/generate.py --check                       (fails if they are stale)
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sys
from pathlib import Path

import xxhash

HERE = Path(__file__).resolve().parent
T0 = 1_800_000_000_000
MAX_ITEM_BYTES = 8192


# ---------------------------------------------------------------- canonical forms (model)

DEFAULT_PORT = {"http": 80, "https": 443}
# WHATWG path percent-encode set (beyond C0 controls): space " # < > ? ` { }
PATH_ENCODE = {" ": "%20", '"': "%22", "<": "%3C", ">": "%3E", "`": "%60", "{": "%7B", "}": "%7D"}
QUERY_ENCODE = {" ": "%20", '"': "%22", "<": "%3C", ">": "%3E"}


def remove_dot_segments(path: str) -> str:
    out: list[str] = []
    segments = path.split("/")[1:]
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == ".":
            if last:
                out.append("")
        elif seg == "..":
            if out:
                out.pop()
            if last:
                out.append("")
        else:
            out.append(seg)
    return "/" + "/".join(out)


def fingerprint(canonical: str) -> str:
    return xxhash.xxh3_128_hexdigest(canonical.encode())


def url_case(scheme: str, host: str, port: int | None, path: str, query: str, fragment: str) -> dict:
    raw = f"{scheme}://{host}" + (f":{port}" if port is not None else "") + path + query + fragment
    s = scheme.lower()
    h = host.lower().rstrip(".")
    keep_port = port is not None and port != DEFAULT_PORT[s]
    p = remove_dot_segments(path or "/")
    p = "".join(PATH_ENCODE.get(c, c) for c in p)
    q = "".join(QUERY_ENCODE.get(c, c) for c in query)
    canonical = f"{s}://{h}" + (f":{port}" if keep_port else "") + p + q
    return {"input": raw, "kind": "url", "canonical": canonical, "host": h, "fingerprint": fingerprint(canonical)}


def systematic_urls() -> list[dict]:
    schemes = ["http", "HTTP", "https", "HtTpS"]
    hosts = ["Example.COM", "example.com.", "WWW.Example.ORG", "127.0.0.1", "sub.Domain.co.uk", "x-y.example"]
    ports = [None, "default", 8080]
    paths = ["", "/", "/a/b", "/a/./b/../c", "/a/b/..", "/a%20b/~x", "/a b", "/%7Euser/"]
    queries = ["", "?q=1&r=two", "?x=a b", "?"]
    fragments = ["", "#frag", "#"]
    rng = random.Random(20261121)
    cases, seen = [], set()
    while len(cases) < 240:
        scheme = rng.choice(schemes)
        port = rng.choice(ports)
        if port == "default":
            port = DEFAULT_PORT[scheme.lower()]
        case = url_case(scheme, rng.choice(hosts), port, rng.choice(paths), rng.choice(queries), rng.choice(fragments))
        if case["input"] not in seen:
            seen.add(case["input"])
            cases.append(case)
    return cases


def host_case(raw: str, host: str) -> dict:
    return {"input": raw, "kind": "host", "canonical": host, "host": host, "fingerprint": fingerprint(host)}


def url(raw: str, canonical: str, host: str) -> dict:
    return {"input": raw, "kind": "url", "canonical": canonical, "host": host, "fingerprint": fingerprint(canonical)}


def invalid(raw: str, code: str) -> dict:
    return {"input": raw, "error": code}


def puny(label: str) -> str:
    return label.encode("idna").decode()


def hand_written() -> list[dict]:
    b = puny("bücher")
    e = puny("éxample")
    return [
        # bare hosts: trimmed, lowercased, trailing dot stripped, IDNA to punycode
        host_case("Example.COM.", "example.com"),
        host_case("  example.com  ", "example.com"),
        host_case("\texample.com\n", "example.com"),
        host_case("EXAMPLE.org", "example.org"),
        host_case("sub.example.co.uk", "sub.example.co.uk"),
        host_case("a_b.example", "a_b.example"),
        host_case("localhost", "localhost"),
        host_case("bücher.de", f"{b}.de"),
        host_case("BÜCHER.de.", f"{b}.de"),
        host_case("ÉXAMPLE.com", f"{e}.com"),
        host_case("xn--bcher-kva.de", "xn--bcher-kva.de"),
        host_case("192.168.0.1", "192.168.0.1"),
        host_case("127.0.0.1", "127.0.0.1"),
        host_case("[::1]", "[::1]"),
        host_case("[2001:DB8::1]", "[2001:db8::1]"),
        host_case("a" * 63 + ".com", "a" * 63 + ".com"),
        # URLs: case, ports, fragments, trailing dots, IDNA, percent-encoding, dot segments
        url("HTTP://Example.COM", "http://example.com/", "example.com"),
        url("https://example.com:443/a", "https://example.com/a", "example.com"),
        url("http://example.com:443/a", "http://example.com:443/a", "example.com"),
        url("https://example.com:80/", "https://example.com:80/", "example.com"),
        url("http://example.com:08080/", "http://example.com:8080/", "example.com"),
        url("http://example.com/a#top", "http://example.com/a", "example.com"),
        url("http://example.com/a?b=1#c=2", "http://example.com/a?b=1", "example.com"),
        url("http://example.com./a", "http://example.com/a", "example.com"),
        url("http://bücher.de/ü", f"http://{b}.de/%C3%BC", f"{b}.de"),
        url("http://BÜCHER.de/", f"http://{b}.de/", f"{b}.de"),
        url("http://example.com/a/./b/../c", "http://example.com/a/c", "example.com"),
        url("http://example.com/../../x", "http://example.com/x", "example.com"),
        url("http://example.com/a%2fb", "http://example.com/a%2fb", "example.com"),
        url("http://example.com/%7e", "http://example.com/%7e", "example.com"),
        url("http://example.com/a b?c d", "http://example.com/a%20b?c%20d", "example.com"),
        url("http://example.com/é?é", "http://example.com/%C3%A9?%C3%A9", "example.com"),
        url("http://example.com\\a\\b", "http://example.com/a/b", "example.com"),
        url("  http://example.com/x  ", "http://example.com/x", "example.com"),
        url("http://user:pass@example.com/", "http://user:pass@example.com/", "example.com"),
        url("http://[::1]:8080/", "http://[::1]:8080/", "[::1]"),
        url("http://192.168.0.1/", "http://192.168.0.1/", "192.168.0.1"),
        url("http://0x7f.1/", "http://127.0.0.1/", "127.0.0.1"),
        url("http://example.com?", "http://example.com/?", "example.com"),
        url("HTTPS://WWW.Example.COM/Path/Keeps/Case", "https://www.example.com/Path/Keeps/Case", "www.example.com"),
        # refused inputs, with their reason code
        invalid("", "empty"),
        invalid("   ", "empty"),
        invalid("\t\n", "empty"),
        invalid("ftp://example.com/file", "unsupported_scheme"),
        invalid("file:///etc/passwd", "unsupported_scheme"),
        invalid("ws://example.com/", "unsupported_scheme"),
        invalid("javascript://alert(1)", "unsupported_scheme"),
        invalid("http://", "invalid_url"),
        invalid("http://exa mple.com/", "invalid_url"),
        invalid("http://example.com:99999/", "invalid_url"),
        invalid("http://[::1/", "invalid_url"),
        invalid("example.com/path", "invalid_url"),
        invalid("example.com:8080", "invalid_url"),
        # a scheme other than HTTP's without "//": refused for its scheme, as a page's link is
        invalid("mailto:someone@example.com", "unsupported_scheme"),
        invalid("JavaScript:void(0)", "unsupported_scheme"),
        invalid("tel:+1-555-0100", "unsupported_scheme"),
        invalid("data:text/plain,hi", "unsupported_scheme"),
        # a host and port, a host and not a port, HTTP's scheme without "//": no scheme
        invalid("localhost:3000/x", "invalid_url"),
        invalid("example.com:x", "invalid_url"),
        invalid("http:example.com", "invalid_url"),
        invalid("user@example.com", "invalid_url"),
        invalid("example.com?q", "invalid_url"),
        invalid("exa mple.com", "invalid_host"),
        invalid("-bad.example.com", "invalid_host"),
        invalid("bad-.example.com", "invalid_host"),
        invalid("a..b", "invalid_host"),
        invalid("a" * 64 + ".com", "invalid_host"),
        invalid(("a" * 60 + ".") * 5 + "com", "invalid_host"),
        invalid("http://-bad.example.com/", "invalid_host"),
        invalid("http://a..b/", "invalid_host"),
        invalid("http://ex!ample.com/", "invalid_host"),
        invalid("http://example.com/" + "a" * MAX_ITEM_BYTES, "too_long"),
        invalid("a" * (MAX_ITEM_BYTES + 1), "too_long"),
    ]


# ------------------------------------------------------------- stored records (model)

def json_string(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def canonical_json(value) -> str:
    """The canonical payload JSON of docs/PROTOCOL.md."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2**53:
            return str(int(value))
        return repr(value)
    if isinstance(value, str):
        return json_string(value)
    if isinstance(value, list):
        return "[" + ",".join(canonical_json(v) for v in value) + "]"
    items = sorted(value.items(), key=lambda kv: kv[0].encode())
    return "{" + ",".join(json_string(k) + ":" + canonical_json(v) for k, v in items) + "}"


def url_host(url_: str) -> str | None:
    """The host a record without "host" is scheduled under: its URL between :// and / or :."""
    m = re.match(r"https?://([^/:]+)", url_)
    return m.group(1) if m else None


def record(id_: int, host: str, url_: str | None, priority: int = 0, payload=None, key: str | None = None) -> str:
    s = f'{{"v":1,"id":"{id_}","ts":{T0}'
    if url_ is None or url_host(url_) != host:
        s += f',"host":{json_string(host)}'
    if priority:
        s += f',"priority":{priority}'
    if url_ is not None:
        s += f',"url":{json_string(url_)}'
    if key is not None:
        s += f',"key":{json_string(key)}'
    if payload is not None:
        s += f',"payload":{canonical_json(payload)}'
    return s + "}"


def records() -> list[dict]:
    b = puny("bücher")
    return [
        {
            "name": "urls and hosts, default options",
            "items": ["https://Example.COM:443/a/../b?x=1#frag", "Example.ORG.", "http://bücher.de/ü"],
            "options": {},
            "expect": [
                record(1, "example.com", "https://example.com/b?x=1"),
                record(2, "example.org", None),
                record(3, f"{b}.de", f"http://{b}.de/%C3%BC"),
            ],
        },
        {
            "name": "priorities and payloads, per item and per batch",
            "items": [
                {"url": "http://p.example/1", "priority": 7, "payload": {"z": 1.0, "a": ["é", None, True], "n": -2.5}},
                {"url": "http://p.example/2", "priority": -3},
                "http://p.example/3",
                {"host": "h.example", "payload": "plain \"quoted\"\n"},
            ],
            "options": {"priority": 2, "payload": {"batch": True, "depth": 0}},
            "expect": [
                record(1, "p.example", "http://p.example/1", 7, {"z": 1.0, "a": ["é", None, True], "n": -2.5}),
                record(2, "p.example", "http://p.example/2", -3, {"batch": True, "depth": 0}),
                record(3, "p.example", "http://p.example/3", 2, {"batch": True, "depth": 0}),
                record(4, "h.example", None, 2, "plain \"quoted\"\n"),
            ],
        },
        {
            "name": "duplicates and invalid items take no id; delayed items are stored alike",
            "items": ["http://d.example/a", "http://D.EXAMPLE:80/a#x", "not a host", {"url": "http://d.example/later", "delay_ms": 60000}],
            "options": {},
            "expect": [
                record(1, "d.example", "http://d.example/a"),
                record(2, "d.example", "http://d.example/later"),
            ],
        },
        {
            "name": "floats, big integers and unicode in payloads",
            "items": [{"url": "http://f.example/", "payload": {"f": 0.1, "big": 9007199254740991, "neg": -0.0, "e": 1e300, "u": "日本\u2028"}}],
            "options": {},
            "expect": [
                record(1, "f.example", "http://f.example/", 0, {"f": 0.1, "big": 9007199254740991, "neg": 0, "e": 1e300, "u": "日本\u2028"}),
            ],
        },
        {
            "name": "caller keys: stored after the url, one item per key, invalid keys refused",
            "items": [
                {"url": "http://c.example/form", "key": 'POST http://c.example/form {"q":"a\\b"} é'},
                {"url": "http://c.example/other", "key": 'POST http://c.example/form {"q":"a\\b"} é'},
                {"host": "c.example", "key": "host-key", "payload": [1]},
                {"url": "http://c.example/bad", "key": "tab\tkey"},
                {"url": "http://c.example/alias", "key": "http://c.example/form"},
                "http://c.example/form",
            ],
            "options": {},
            "expect": [
                record(1, "c.example", "http://c.example/form", key='POST http://c.example/form {"q":"a\\b"} é'),
                record(2, "c.example", None, 0, [1], key="host-key"),
                record(3, "c.example", "http://c.example/alias", key="http://c.example/form"),
            ],
        },
        {
            "name": "the host is left out where the URL spells it, kept where it does not",
            "items": ["https://p.example:8443/x", "http://127.0.0.1/x", "http://user:pw@u.example/x", "http://[::1]:8080/x"],
            "options": {},
            "expect": [
                record(1, "p.example", "https://p.example:8443/x"),
                record(2, "127.0.0.1", "http://127.0.0.1/x"),
                record(3, "u.example", "http://user:pw@u.example/x"),
                record(4, "[::1]", "http://[::1]:8080/x"),
            ],
        },
    ]


def live(identity: str) -> tuple[int, int]:
    """The live-set member and bucket hash of an item (docs/PROTOCOL.md, "Live set")."""
    digest = hashlib.sha1(identity.encode()).hexdigest()
    return int(digest[:13], 16), int(digest[13:21], 16)


def invalid_text() -> list[dict]:
    """Inputs that are not valid Unicode: a lone UTF-16 surrogate (Python, JavaScript) or a byte
    that is not UTF-8 (PHP). Every runtime replaces each bad unit by one U+FFFD, as JavaScript
    does, so the same input gives the same item everywhere. `utf16` is the input as a JSON string
    body (\\uXXXX escapes allowed), `utf8_hex` the PHP input's bytes; the expected result is that
    of the input with U+FFFD."""
    cases = [
        ("http://a.com/\\ud800x", b"http://a.com/\xffx", url("http://a.com/\ufffdx", "http://a.com/%EF%BF%BDx", "a.com")),
        ("http://a.com/?q=\\udc00", b"http://a.com/?q=\x80", url("http://a.com/?q=\ufffd", "http://a.com/?q=%EF%BF%BD", "a.com")),
        ("\\ud83d.example", b"\xf0.example", invalid("\ufffd.example", "invalid_host")),
    ]
    out = []
    for utf16, raw, expect in cases:
        expect = dict(expect)
        expect["utf16"] = utf16
        expect["utf8_hex"] = raw.hex()
        out.append(expect)
    return out


def shards() -> list[dict]:
    """Which shard a host (given as a host or a URL) belongs to: XXH3-64 of its host key, modulo
    the shard count (docs/PROTOCOL.md, "Shards")."""
    inputs = [
        ("example.com", "example.com"),
        ("https://www.example.com/a?b=c", "www.example.com"),
        ("HTTP://Bücher.de./x", puny("bücher") + ".de"),
        ("http://192.168.0.1:8080/", "192.168.0.1"),
        ("[2001:DB8::1]", "[2001:db8::1]"),
        ("a_b.example", "a_b.example"),
    ] + [(f"h{i}.shard.test", f"h{i}.shard.test") for i in range(20)]
    cases = []
    for raw, host in inputs:
        for count in (1, 2, 3, 8, 1024):
            cases.append({"input": raw, "host": host, "shards": count, "shard": xxhash.xxh3_64_intdigest(host.encode()) % count})
    return cases


def spread_tag(queue: str, shard: int, count: int) -> str:
    """The hash tag of a shard in the spread layout (docs/PROTOCOL.md section 9): `<queue>:<shard>~<k>`,
    k the first whose CRC16 slot falls in the middle three quarters of the shard's share of the
    slot space."""
    import binascii

    lo, hi = shard * 16384 // count, (shard + 1) * 16384 // count
    margin = (hi - lo) // 8
    k = 0
    while True:
        tag = f"{queue}:{shard}~{k}"
        # binascii.crc_hqx with initial value 0 is CRC-16/XMODEM, Redis Cluster's checksum
        if lo + margin <= binascii.crc_hqx(tag.encode(), 0) % 16384 < hi - margin:
            return tag
        k += 1


def shard_tags() -> list[dict]:
    """Which tags the shards of a queue have in the spread layout, for a few names and counts."""
    cases = []
    for queue in ("frontier", "jobs", "crawl:news", "bücher"):
        for count in (2, 3, 8, 24):
            cases.append({"queue": queue, "shards": count, "tags": [spread_tag(queue, s, count) for s in range(count)]})
        cases.append({"queue": queue, "shards": 1024, "first": [spread_tag(queue, s, 1024) for s in range(8)]})
    return cases


def keys() -> list[dict]:
    """The keys that exist after seeding one URL (placeholder {prefix} for a prefix per run)."""
    url_ = "http://k.example/page"
    fp = bytes.fromhex(fingerprint(url_))
    bucket = int.from_bytes(fp[8:12], "big") % 1024
    base = "{prefix}:{frontier}"
    live_member, live_bucket = live(url_)
    return [{
        "queue": "frontier",
        "items": [url_, {"url": "http://k.example/urgent", "priority": 5}],
        "expect": sorted(set([
            f"{base}:meta", f"{base}:ready", f"{base}:heads", f"{base}:wake", f"{base}:hostitems",
            f"{base}:hp:k.example", f"{base}:l:0:k.example", f"{base}:l:5:k.example",
            f"{base}:s:0:{bucket}",
            f"{base}:s:0:{int.from_bytes(bytes.fromhex(fingerprint('http://k.example/urgent'))[8:12], 'big') % 1024}",
            f"{base}:v:0:{live_bucket % 1024}",
            f"{base}:v:0:{live('http://k.example/urgent')[1] % 1024}",
        ])),
        "seen_member": str(int.from_bytes(fp[0:8], "big", signed=True)),
        "live_key": f"{base}:v:0:{live_bucket % 1024}",
        "live_member": str(live_member),
    }, keyed_keys()]


def keyed_keys() -> dict:
    """The same for an item seeded with a caller key: the key, not the URL, is fingerprinted and
    is the live identity (docs/PROTOCOL.md, "Caller keys")."""
    key = 'POST http://k.example/page {"a":"\\"}'
    fp = bytes.fromhex(fingerprint(key))
    bucket = int.from_bytes(fp[8:12], "big") % 1024
    base = "{prefix}:{keyed}"
    live_member, live_bucket = live(key)
    return {
        "queue": "keyed",
        "items": [{"url": "http://k.example/page", "key": key}],
        "expect": sorted(set([
            f"{base}:meta", f"{base}:ready", f"{base}:heads", f"{base}:wake", f"{base}:hostitems",
            f"{base}:l:0:k.example",
            f"{base}:s:0:{bucket}", f"{base}:v:0:{live_bucket % 1024}",
        ])),
        "seen_member": str(int.from_bytes(fp[0:8], "big", signed=True)),
        "live_key": f"{base}:v:0:{live_bucket % 1024}",
        "live_member": str(live_member),
    }


# ------------------------------------------------------------ crawl requests (model)

def b64(data: bytes) -> dict:
    import base64
    return {"$bytes": base64.b64encode(data).decode()}


def request_payload(req: dict) -> dict:
    """The stored payload of a crawl request (docs/PROTOCOL.md section 10): the mark, then every
    field that is not at its default."""
    out: dict = {"$request": 1}
    method = req.get("method", "GET").upper()
    if method != "GET":
        out["method"] = method
    if req.get("headers"):
        out["headers"] = [list(pair) for pair in req["headers"]]
    if req.get("body") is not None:
        body = req["body"]
        out["body"] = b64(body.encode()) if isinstance(body, str) else body
    for name in ("user_data", "frameworks"):
        if req.get(name):
            out[name] = req[name]
    for name in ("label", "found_on"):
        if req.get(name) is not None:
            out[name] = req[name]
    for name in ("depth", "retries"):
        if req.get(name):
            out[name] = req[name]
    return out


def request_read(url_: str, payload: dict) -> dict:
    """What request_of answers for an item of that URL and payload (every field, defaults in)."""
    return {
        "url": url_,
        "method": payload.get("method", "GET"),
        "headers": payload.get("headers", []),
        "body": payload.get("body"),
        "user_data": payload.get("user_data", {}),
        "label": payload.get("label"),
        "depth": payload.get("depth", 0),
        "retries": payload.get("retries", 0),
        "found_on": payload.get("found_on"),
        "frameworks": payload.get("frameworks", {}),
    }


def request_key(method: str, canonical: str, body: bytes | None) -> str | None:
    if method == "GET" and body is None:
        return None
    data = method.encode() + b"\n" + canonical.encode() + b"\n" + (body or b"")
    return "request:" + xxhash.xxh3_128_hexdigest(data)


def sort_query(canonical: str) -> str:
    if "?" not in canonical:
        return canonical
    before, query = canonical.split("?", 1)
    params = query.split("&")
    params.sort(key=lambda p: tuple(x.encode() for x in (p.split("=", 1) + [""])[:2]))
    return before + "?" + "&".join(params)


def requests_vectors() -> dict:
    import base64
    cases_in = [
        ("a plain GET", {"url": "http://r.example/a"}, "http://r.example/a"),
        ("a POST with a bytes body and headers in order, a name repeated",
         {"url": "http://r.example/search", "method": "post",
          "headers": [["Content-Type", "application/x-www-form-urlencoded"], ["Accept", "text/html"], ["Accept", "*/*"]],
          "body": b64(b"q=crawl&page=2\x00\xff")},
         "http://r.example/search"),
        ("a text body is its UTF-8 bytes", {"url": "http://r.example/api", "method": "PUT", "body": "{\"ü\": 1}"},
         "http://r.example/api"),
        ("user data, a label, depth, retries and the page it was found on",
         {"url": "http://r.example/item/7", "user_data": {"category": "bücher", "ids": [1, 2.5, None, True], "nested": {"z": 1, "a": "€"}},
          "label": "DETAIL", "depth": 3, "retries": 2, "found_on": "http://r.example/list?page=1"},
         "http://r.example/item/7"),
        ("framework-only fields of every framework, kept as they are",
         {"url": "http://r.example/job", "frameworks": {
             "scrapy": {"callback": "parse_item", "errback": None, "meta": {"download_timeout": 5}, "cb_kwargs": {"n": 1}, "priority": 3, "flags": ["x"]},
             "crawlee": {"unique_key": "http://R.example/JOB", "session_rotation_count": 2, "no_retry": False, "error_messages": ["timeout"]},
             "laravel": {"job": "Illuminate\\Queue\\CallQueuedHandler@call", "data": {"commandName": "App\\Jobs\\FetchPage", "command": "O:8:\"stdClass\":0:{}"}, "maxTries": 3},
         }},
         "http://r.example/job"),
        ("a GET with a body is known by its key", {"url": "http://r.example/odd", "body": "x"}, "http://r.example/odd"),
        ("a DELETE without a body, unicode in its URL", {"url": "http://R.example/Ünï?b=2&a=1", "method": "delete"},
         "http://r.example/%C3%9Cn%C3%AF?b=2&a=1"),
    ]
    cases = []
    for name, req, canonical in cases_in:
        payload = request_payload(req)
        body = payload.get("body")
        body_bytes = base64.b64decode(body["$bytes"]) if body else None
        cases.append({
            "name": name,
            "request": req,
            "payload": payload,
            "stored": canonical_json(payload),
            "key": request_key(payload.get("method", "GET"), canonical, body_bytes),
            "key_sorted_query": request_key(payload.get("method", "GET"), sort_query(canonical), body_bytes),
            "read": request_read(canonical, payload),
        })
    reads = [
        {"name": "a plain item with an object payload: a GET, the payload as user data",
         "url": "http://p.example/1", "payload": {"depth": 9, "k": "v"},
         "read": request_read("http://p.example/1", {"user_data": {"depth": 9, "k": "v"}})},
        {"name": "a plain item with another payload: under \"payload\"",
         "url": "http://p.example/2", "payload": [1, 2],
         "read": request_read("http://p.example/2", {"user_data": {"payload": [1, 2]}})},
        {"name": "a plain item without a payload", "url": "http://p.example/3", "payload": None,
         "read": request_read("http://p.example/3", {})},
        {"name": "a request of a newer format is not read", "url": "http://p.example/4",
         "payload": {"$request": 2, "method": "GET"}, "error": "PROTOCOL"},
        {"name": "a request whose headers are not pairs of text is not read", "url": "http://p.example/5",
         "payload": {"$request": 1, "headers": [["a"]]}, "error": "PROTOCOL"},
        {"name": "a host item is not a request", "url": None, "payload": None, "error": "PROTOCOL"},
    ]
    sorted_urls = [
        ("http://q.example/p?b=2&a=1", "http://q.example/p?a=1&b=2"),
        ("http://q.example/p?a=2&a=1&b", "http://q.example/p?a=1&a=2&b"),
        ("http://q.example/p?a1=1&a=2", "http://q.example/p?a=2&a1=1"),
        ("http://q.example/p?z=%20&Z=1&y", "http://q.example/p?Z=1&y&z=%20"),
        ("http://q.example/p", "http://q.example/p"),
        ("http://q.example/p?", "http://q.example/p?"),
    ]
    updates_in = [
        ("a retry counted; every framework's fields as stored, empty objects included",
         "http://u.example/form",
         {"$request": 1, "method": "POST", "body": b64(b"q=1\xff"), "headers": [["Accept", "*/*"]],
          "frameworks": {"scrapy": {"meta": {}, "cb_kwargs": {}, "callback": "parse"}, "crawlee": {"unique_key": "own"}}},
         {"retries": 1}),
        ("a framework's namespace replaced, the others kept; shared fields changed",
         "http://u.example/item",
         {"$request": 1, "retries": 1, "user_data": {"n": 1},
          "frameworks": {"laravel": {"job": "X", "data": {"tags": []}}, "crawlee": {"unique_key": "own", "session_rotation_count": 1}}},
         {"retries": 2, "user_data": {"n": 2}, "label": "DETAIL", "frameworks": {"crawlee": {"unique_key": "own", "error_messages": ["boom"]}}}),
        ("an empty list where an object is expected is an empty object (PHP's [])",
         "http://u.example/empty",
         {"$request": 1, "user_data": {"a": 1}, "frameworks": {"scrapy": {"meta": {}}}},
         {"user_data": [], "frameworks": []}),
        ("an item seeded through the plain API becomes a request",
         "http://u.example/plain", {"k": "v"}, {"retries": 1}),
        ("no changes: the stored request as it is", "http://u.example/same",
         {"$request": 1, "method": "DELETE", "depth": 2}, None),
    ]
    updates = []
    for name, url_, stored, changes in updates_in:
        read = request_read(url_, stored if "$request" in stored else {"user_data": stored})
        for field, value in (changes or {}).items():
            if field == "frameworks":
                read["frameworks"] = {**read["frameworks"], **(value or {})}
            elif field == "user_data":
                read["user_data"] = value or {}
            else:
                read[field] = value
        result = request_payload(read)
        updates.append({"name": name, "url": url_, "payload": stored, "payload_json": canonical_json(stored),
                        "changes": changes, "result": result, "stored": canonical_json(result)})
    for name, url_, stored, changes, error in [
        ("the URL is the item's", "http://u.example/bad/1", {"$request": 1}, {"url": "http://u.example/y"}, "INVALID_ARGUMENT"),
        ("a field of the wrong type", "http://u.example/bad/2", {"$request": 1}, {"depth": -1}, "INVALID_ARGUMENT"),
        ("a field no request has", "http://u.example/bad/3", {"$request": 1}, {"priority": 3}, "INVALID_ARGUMENT"),
        ("a request of a newer format is not changed", "http://u.example/bad/4", {"$request": 2}, {"retries": 1}, "PROTOCOL"),
    ]:
        updates.append({"name": name, "url": url_, "payload": stored, "payload_json": canonical_json(stored),
                        "changes": changes, "error": error})
    return {
        "cases": cases,
        "reads": reads,
        "updates": updates,
        "sort_query": [{"input": i, "canonical": c} for i, c in sorted_urls],
    }


def main() -> None:
    files = {
        "normalize.json": {"cases": hand_written() + systematic_urls(), "invalid_text": invalid_text()},
        "records.json": {"clock": T0, "cases": records()},
        "keys.json": {"cases": keys()},
        "shards.json": {"cases": shards(), "tags": shard_tags()},
        "requests.json": requests_vectors(),
    }
    stale = []
    for name, content in files.items():
        text = json.dumps(content, indent=1, ensure_ascii=False) + "\n"
        path = HERE / name
        if "--check" in sys.argv:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        sys.exit(f"stale vectors (run tests/vectors/generate.py): {', '.join(stale)}")


if __name__ == "__main__":
    main()
