#!/usr/bin/env python3
"""The fault suite: worker processes of several languages drain one queue while the harness
breaks things on purpose, then checks that nothing was lost, no item was acked twice within a
live lease, no lease token was handed out twice, and every counter equals the structures it
counts.

    python tests/faults/run.py            # the short run (tools/test.sh)
    python tests/faults/run.py --full     # the long run whose figures are in README.md
    python tests/faults/run.py --only sigstop,client_kill

Runs with the Python that has the crawlq wheel and redis-py installed. Environment:
  CRAWLQ_PHP_EXTENSION  path of crawlq.so (the PHP workers)
  (the Node addon and the wasm package are taken from bindings-node/ and bindings-wasm/pkg/)

Scenarios (each on redis-server processes of its own):
  workers_killed     workers SIGKILLed mid-lease again and again, and restarted
  aof_always         Redis killed with kill -9 (AOF fsync always) and restarted, twice
  aof_everysec       the same with AOF fsync everysec, and the AOF's unflushed tail lost as in a
                     machine crash: Redis forgets its last writes
  sigstop            Redis stopped (SIGSTOP) for longer than the lease TTL, then continued
  client_kill        every client connection killed (CLIENT KILL) again and again
  maxmemory          Redis full (maxmemory, noeviction): seeds refused while workers drain
  replica_promotion  a replica promoted while the old primary still takes writes, which are
                     then lost with it; workers follow through an address that moves
  cluster_home_failover  an 8-shard queue on a Redis Cluster (3 masters, 3 replicas): the master
                     holding the queue's own base (the wake list waiting leases block on) is
                     killed mid-drain and its replica takes over; idle workers then log no error
  cluster_home_lost  the same, and the replica that takes over holds none of its master's keys
                     (emptied once master, as a replica that had not synced would be): the home
                     (with the shard count) and its master's shards are lost; the harness seeds
                     again through its first client, which writes the count back, and a client
                     opened afterwards without a count must find the 8 shards
  cluster_client_kill  the same queue on 3 masters: every client of every master killed again
                     and again; a call cut after it ran is reported, never sent again
  crawl_workers_killed, crawl_aof_everysec, crawl_sigstop, crawl_client_kill, crawl_cluster_client_kill
                     the same faults while the workers crawl: only page 0-7 are seeded, every
                     page is found as the one link to it (page i links to 2i+1 and 2i+2, and to
                     five seeded pages, seen before), and each page is answered with its links
                     and the next lease in one call (ack_with_links_and_lease; the Python and
                     Node.js workers run 2 tasks on one queue, so pages go together): no link of
                     an answered page may be lost, so every page must be crawled; the workers
                     use the known-seen cache, which must not answer for links Redis lost
                     (crawl_aof_everysec)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

import redis
import redis.cluster

import crawlq

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
from run import read_ledger  # noqa: E402  (one reader for both suites' ledgers)

REPO = Path(__file__).resolve().parents[2]
WORKERS = Path(__file__).resolve().parent / "workers"
# Short leases and timeouts, so faults play out in seconds; many attempts, so no item dies of
# the faults themselves (a dead letter would hide a loss).
OPTIONS = {"lease_ttl": 2.0, "command_timeout": 1.0, "connect_timeout": 1.0, "max_attempts": 100}
LANGUAGES = ["python", "node", "wasm", "php"]
# crawl scenarios: the pages seeded (every other one is found as a link), and the tasks each
# Python or Node.js worker runs on its one queue
CRAWL_SEEDS, CRAWL_TASKS = 8, 2
# (the `answer_linger`, seconds, of the crawl scenarios' even-numbered workers that are not PHP:
# their pages wait for each other's before going, so the faults also meet pages lingering)
CRAWL_LINGER = 0.003


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A redis-server on a fixed port and directory: it can be killed, stopped and restarted."""

    def __init__(self, *args: str, port: int | None = None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="crawlq-fault-"))
        self.port = port or free_port()
        self.args = ["--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
                     "--save", "", "--enable-debug-command", "yes", *args]
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(["redis-server", *self.args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if self.client().ping():
                    return
            except redis.exceptions.BusyLoadingError:
                pass
            except redis.exceptions.ConnectionError:
                pass
            time.sleep(0.02)
        raise SystemExit(f"redis-server on {self.port} did not start")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=5)

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Proxy:
    """A TCP address whose backend can move (as a cloud endpoint or a Sentinel-aware proxy
    moves after a failover): switching closes every open connection."""

    def __init__(self, backend: int) -> None:
        self.backend = backend
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.pairs: list[tuple[socket.socket, socket.socket]] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _accept(self) -> None:
        while True:
            client, _ = self.listener.accept()
            try:
                upstream = socket.create_connection(("127.0.0.1", self.backend), timeout=2)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.pairs.append((client, upstream))
            threading.Thread(target=self._pipe, args=(client, upstream), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                ready, _, _ = select.select([a, b], [], [], 1.0)
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        raise OSError
                    (b if s is a else a).sendall(data)
        except OSError:
            for s in (a, b):
                try:
                    s.close()
                except OSError:
                    pass

    def switch(self, backend: int) -> None:
        with self.lock:
            self.backend = backend
            for a, b in self.pairs:
                for s in (a, b):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
            self.pairs.clear()


def port_pair_free(port: int) -> bool:
    """A cluster node also listens on its port + 10000 (the cluster bus): both must be free."""
    for p in (port, port + 10000):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                return False
    return True


class Cluster:
    """A private Redis Cluster of `masters` primaries with `replicas` replicas each, on ports
    below the kernel's ephemeral range (the bus port included)."""

    def __init__(self, masters: int, replicas: int) -> None:
        self.nodes: list[Server] = []
        port = 20000 + random.randrange(0, 2000)
        while len(self.nodes) < masters * (1 + replicas):
            port += 1
            if port + 10000 >= 32768:
                raise SystemExit("no free ports for the cluster")
            if not port_pair_free(port):
                continue
            self.nodes.append(Server("--cluster-enabled", "yes", "--cluster-node-timeout", "1000",
                                     "--cluster-config-file", "nodes.conf",
                                     "--repl-diskless-sync-delay", "0", port=port))
        addrs = [f"127.0.0.1:{n.port}" for n in self.nodes]
        subprocess.run(["redis-cli", "--cluster", "create", *addrs, "--cluster-replicas", str(replicas),
                        "--cluster-yes"], check=True, capture_output=True, timeout=120)
        self.wait_ok(self.nodes)
        # a replica that has not synced yet cannot take over: wait until every one has
        deadline = time.monotonic() + 60
        for node in self.nodes:
            while True:
                info = node.client().info("replication")
                if info["role"] == "slave" and info.get("master_link_status") != "up":
                    pass
                elif info["role"] == "master" and sum(
                        1 for k, v in info.items() if k.startswith("slave") and isinstance(v, dict)
                        and v.get("state") == "online") < replicas:
                    pass
                else:
                    break
                if time.monotonic() > deadline:
                    raise SystemExit(f"cluster node {node.port}: replication did not come up")
                time.sleep(0.1)

    @staticmethod
    def wait_ok(nodes: list[Server]) -> None:
        deadline = time.monotonic() + 60
        for node in nodes:
            while b"cluster_state:ok" not in node.client().execute_command("CLUSTER", "INFO"):
                if time.monotonic() > deadline:
                    raise SystemExit(f"cluster node {node.port} did not settle")
                time.sleep(0.1)

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def alive(self) -> list[Server]:
        return [n for n in self.nodes if n.proc.poll() is None]

    def client(self) -> redis.cluster.RedisCluster:
        node = self.alive()[0]
        return redis.cluster.RedisCluster(host="127.0.0.1", port=node.port, socket_timeout=5)

    def master_of(self, key: str) -> Server:
        node = self.alive()[0].client()
        slot = int(node.execute_command("CLUSTER", "KEYSLOT", key))
        for line in node.execute_command("CLUSTER", "NODES").decode().splitlines():
            fields = line.split()
            if "master" not in fields[2] or "fail" in fields[2]:
                continue
            for span in fields[8:]:
                lo, _, hi = span.partition("-")
                if lo.isdigit() and int(lo) <= slot <= int(hi or lo):
                    port = int(fields[1].split("@")[0].rsplit(":", 1)[1])
                    return next(n for n in self.nodes if n.port == port)
        raise SystemExit(f"no master serves {key}")

    def replica_of(self, master: Server) -> Server:
        info = master.client().info("replication")
        port = int(info["slave0"]["port"])
        return next(n for n in self.nodes if n.port == port)

    def close(self) -> None:
        for n in self.nodes:
            n.close()


@dataclass
class Run:
    name: str
    url: str
    queue: str
    urls: list[str]
    tmp: Path
    slow_ms: int
    languages: list[str]
    procs: dict[int, subprocess.Popen] = field(default_factory=dict)
    worker_lang: dict[int, str] = field(default_factory=dict)
    restarts: int = 0
    figures: dict[str, object] = field(default_factory=dict)
    # a queue split in this many shards (over a Redis Cluster), 1: unsharded
    shards: int = 1
    # the workers crawl `urls` (found as links from the seeded first 8) instead of draining them
    crawl: bool = False
    # what was seeded (a crawl: its first pages; otherwise `urls`)
    seeds: list[str] = field(default_factory=list)

    def ledger(self, i: int) -> Path:
        return self.tmp / f"worker-{i}.jsonl"

    def ledgers(self) -> list[tuple[Path, bool]]:
        """Every ledger written, and whether its worker was killed (an ack it sent just before
        may have reached Redis without reaching its ledger)."""
        live = [(self.ledger(i), False) for i in self.procs]
        return live + [(p, True) for p in sorted(self.tmp.glob("killed-*.jsonl"))]

    def start_worker(self, i: int, lang: str) -> None:
        env = dict(os.environ, CRAWLQ_FAULT_OPTIONS=json.dumps(OPTIONS))
        if self.crawl:
            # as the framework adapters open their queues: with the known-seen cache
            options = {**OPTIONS, "seen_cache": 100_000}
            if i % 2 == 0 and lang != "php":
                options["answer_linger"] = CRAWL_LINGER
            env["CRAWLQ_FAULT_OPTIONS"] = json.dumps(options)
            hosts = len({urlsplit(u).hostname for u in self.urls})
            env["CRAWLQ_FAULT_CRAWL"] = json.dumps({"items": len(self.urls), "hosts": hosts, "seeds": CRAWL_SEEDS,
                                                     "tasks": CRAWL_TASKS})
        args = [self.url, self.queue, str(self.ledger(i)), str(self.tmp / "stop"), str(self.slow_ms)]
        if lang == "python":
            cmd = [sys.executable, str(WORKERS / "worker.py"), *args]
        elif lang in ("node", "wasm"):
            env["CRAWLQ_JS_MODULE"] = str(REPO / ("bindings-node" if lang == "node" else "bindings-wasm/pkg"))
            cmd = ["node", str(WORKERS / "worker.js"), *args]
        else:
            cmd = ["php", "-d", "extension=" + os.environ["CRAWLQ_PHP_EXTENSION"], str(WORKERS / "worker.php"), *args]
        self.procs[i] = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=open(self.tmp / f"worker-{i}.err", "a"))
        self.worker_lang[i] = lang

    def holding(self, i: int) -> int:
        entries = read_ledger(self.ledger(i))
        return sum(e["ev"] == "lease" for e in entries) - sum(e["ev"] == "ack" for e in entries)


def check(condition: bool, message: str) -> None:
    if not condition:
        raise SystemExit(f"FAILED: {message}")
    print(f"    ok: {message}")


_seeders: dict[tuple[str, str], crawlq.Queue] = {}


def seed_all(url: str, queue: str, urls: list[str], deadline: float, shards: int = 1) -> int:
    """Seed every URL, chunk by chunk, retrying each chunk Redis refused or could not take
    (seeding is idempotent: what got in comes back as duplicates). Returns the refusals. The
    first seed creates the queue with `shards` shards (workers read the count from Redis); every
    later seed of the queue goes through that first client, as a crawler's seeder would, so its
    layout is the one it learnt then (after a home that lost its count, it writes it back)."""
    refused = 0
    for start in range(0, len(urls), 500):
        chunk = urls[start:start + 500]
        while True:
            try:
                if (url, queue) not in _seeders:
                    _seeders[(url, queue)] = crawlq.Queue(url, queue, **OPTIONS, **({"shards": shards} if shards > 1 else {}))
                _seeders[(url, queue)].seed(chunk)
                break
            except crawlq.CrawlqError as err:
                refused += 1
                if time.monotonic() > deadline:
                    raise SystemExit(f"FAILED: could not seed before the deadline: {err}")
                time.sleep(0.2)
    return refused


_observers: dict[tuple[str, str], crawlq.Queue] = {}


def stats_of(url: str, queue: str) -> dict | None:
    try:
        if (url, queue) not in _observers:
            _observers[(url, queue)] = crawlq.Queue(url, queue, **OPTIONS)
        return _observers[(url, queue)].stats()
    except crawlq.CrawlqError:
        return None


def shard_bases(client: redis.Redis, queue: str) -> dict[int, str]:
    """Each shard's key base, found by its meta hash: new sharded queues tag shard s as
    `{<queue>:<s>~<k>}`, queues of protocol 4 as `{<queue>:<s>}` (docs/PROTOCOL.md section 9)."""
    bases = {}
    for meta in client.scan_iter(match=f"crawlq:{{{queue}:*}}:meta", count=1000):
        base = meta.decode().removesuffix(":meta")
        shard = base[len(f"crawlq:{{{queue}:"):-1].split("~", 1)[0]
        if shard.isdigit():
            bases[int(shard)] = base
    return bases


def check_structures(client: redis.Redis, base: str, stats: dict) -> None:
    """The invariant checker (as core/tests/common) for one queue or shard base
    (`crawlq:{<queue>}`): every counter against the structures it counts, every lease with its
    deadline, every record in one place, the live set. `client` may be a cluster client."""
    key = lambda k: f"{base}:{k}"  # noqa: E731
    esc = base.replace("{", "\\{").replace("}", "\\}")
    places: dict[str, str] = {}

    def place(item_id: str, where: str) -> None:
        assert item_id not in places, f"record {item_id} in {places[item_id]} and {where}"
        places[item_id] = where

    def record_id(raw: bytes) -> str:
        return json.loads(raw)["id"]

    ready, hosts = 0, set()
    for lane in client.scan_iter(match=f"{esc}:l:*", count=1000):
        records = client.lrange(lane, 0, -1)
        assert records, f"empty lane {lane}"
        for r in records:
            place(record_id(r), "a lane")
        ready += len(records)
        hosts.add(lane.decode().split(":", 4)[-1])
    delayed = client.zrange(key("delayed"), 0, -1)
    for r in delayed:
        place(record_id(r), "delayed")
    leases = client.hgetall(key("leases"))
    leased = set(client.zrange(key("leased"), 0, -1))
    assert len(leases) == len(leased) and set(leases) == leased, "every lease has a deadline"
    for lease_key, r in leases.items():
        assert lease_key.decode().split(":", 1)[1] == record_id(r), "lease key names its item"
        place(record_id(r), "a lease")
    dead = client.zrange(key("dead"), 0, -1)
    assert len(dead) == client.hlen(key("deadrec")), "dead ids and records"
    for d in dead:
        place(d.decode(), "dead letters")
    seen = sum(client.scard(k) for k in client.scan_iter(match=f"{esc}:s:*", count=1000))
    live = sum(client.scard(k) for k in client.scan_iter(match=f"{esc}:v:*", count=1000))
    truth = {"ready": ready, "hosts": len(hosts), "delayed": len(delayed), "leased": len(leases),
             "dead": len(dead), "seen": seen}
    for name, value in truth.items():
        assert stats[name] == value, f"stats {name} = {stats[name]}, structures say {value}"
    assert live == ready + len(delayed) + len(leases), f"live set {live} vs {ready + len(delayed) + len(leases)}"


def analyse(run: Run, lost_writes: bool, client: redis.Redis) -> None:
    events = []
    unanswered_by_killed = set()
    for n, (path, killed) in enumerate(run.ledgers()):
        entries = read_ledger(path)
        for e in entries:
            e["worker"] = n
            events.append(e)
        if killed:
            answered = {(e["token"], e["id"]) for e in entries if e["ev"] == "ack"}
            unanswered_by_killed |= {e["url"] for e in entries if e["ev"] == "lease" and (e["token"], e["id"]) not in answered}
    leases = {(e["token"], e["id"]): e for e in events if e["ev"] == "lease"}
    # tokens are unique per shard (docs/PROTOCOL.md section 9): a sharded id names its shard
    tokens = [(e["token"], e["id"].rpartition("@")[2]) for e in events if e["ev"] == "lease"]
    acks = [e for e in events if e["ev"] == "ack"]
    ok_acks = [e for e in acks if e["ok"] is True]
    by_url: dict[str, list[dict]] = defaultdict(list)
    for a in ok_acks:
        lease = leases[(a["token"], a["id"])]
        assert lease["worker"] == a["worker"], "an ack answers the worker's own lease"
        by_url[lease["url"]].append(lease)

    stats = stats_of(run.url, run.queue)
    check(stats is not None, "Redis answers after the faults")
    check((stats["pending"], stats["leased"]) == (0, 0), f"the queue drained (pending {stats['pending']}, leased {stats['leased']})")
    check(stats["done"] + stats["dead"] == len(run.urls), f"0 lost: done {stats['done']} + dead {stats['dead']} = {len(run.urls)} "
          + ("pages of the crawl" if run.crawl else "seeded"))
    missing = [u for u in run.urls if u not in by_url]
    dead_urls = {d["url"] for d in crawlq.Queue(run.url, run.queue, **OPTIONS).dead(limit=len(run.urls) + 1)}
    missing = [u for u in missing if u not in dead_urls]
    # an ack whose connection dropped in flight (ok null: "may or may not have been applied"),
    # or one a worker sent just before it was killed, may have been applied
    unknown = unanswered_by_killed | {leases[(a["token"], a["id"])]["url"] for a in acks if a["ok"] is None}
    in_flight = [u for u in missing if u in unknown]
    missing = [u for u in missing if u not in unknown]
    check(not missing, f"every URL was acked by a worker, or is a dead letter, or its ack's outcome was unknown to its worker ({len(in_flight)}) ({len(missing)} not: {missing[:3]})")
    check(len(tokens) == len(set(tokens)), f"{len(tokens)} lease tokens, none handed out twice (per shard)")
    overlapping = 0
    redelivered = 0
    for url, acked in by_url.items():
        acked.sort(key=lambda e: e["at"])
        for first, second in zip(acked, acked[1:]):
            redelivered += 1
            if second["at"] < first["exp"]:
                overlapping += 1
    if lost_writes:
        # Redis forgot those leases and acks: the work is done again (at least once), but no
        # stale token answered for a lease made after the loss (tokens above are unique)
        print(f"    note: {redelivered} items done again after Redis lost writes ({overlapping} while the lost lease would still have been live)")
    else:
        check(overlapping == 0, f"0 items acked twice within a live lease ({redelivered} acked again after their lease expired)")
    if run.shards > 1:
        # a client that asks for no count finds the queue's (its home may have lost it: the
        # seeder, which knew the layout, wrote it back)
        fresh = crawlq.Queue(run.url, run.queue, **OPTIONS).stats()
        check(len(fresh.get("shards", [])) == run.shards and fresh["done"] + fresh["dead"] == len(run.urls),
              f"a client opened now without a shard count finds {len(fresh.get('shards', [])) or 1} shards, "
              f"{fresh['done']} done and {fresh['dead']} dead")
        bases = shard_bases(client, run.queue)
        check(sorted(bases) == list(range(run.shards)), f"{run.shards} shard bases found: {sorted(bases)}")
        for shard in range(run.shards):
            check_structures(client, bases[shard], stats["shards"][shard])
    else:
        check_structures(client, "crawlq:{" + run.queue + "}", stats)
    check(True, "counters equal the structures they count (ready, hosts, delayed, leased, dead, seen, live set)"
          + (f", in each of {run.shards} shards" if run.shards > 1 else ""))
    errors = defaultdict(int)
    for e in events:
        if e["ev"] == "error" or (e["ev"] == "ack" and e["ok"] is None):
            errors[e.get("code")] += 1
    stale = sum(1 for a in acks if a["ok"] is False)
    run.figures.update(items=len(run.urls), leases=len(tokens), acks=len(ok_acks), stale_acks=stale,
                       redelivered=redelivered, errors=dict(errors), worker_restarts=run.restarts,
                       done=stats["done"], dead=stats["dead"])


def errors_logged(run: Run) -> list[dict]:
    return [e for path, _ in run.ledgers() for e in read_ledger(path) if e["ev"] == "error"]


def scenario(name: str, server_args: list[str], fault: Callable[[Run, dict], None], lost_writes: bool,
             size: dict, replica: bool = False, cluster: tuple[int, int] | None = None, crawl: bool = False) -> dict:
    """One scenario: a redis-server (with a replica behind a movable address, or a Redis
    Cluster of (masters, replicas) holding an 8-shard queue), workers of every language, the
    fault, the drain (or with `crawl`, the crawl: only the first pages are seeded, the workers
    find the others as links), then the checks. On a cluster the workers then stay idle on the empty
    queue for 2 s, which must log no error (a waiting lease never fails for a node that went
    away)."""
    print(f"scenario {name}")
    tmp = Path(tempfile.mkdtemp(prefix=f"crawlq-{name}-"))
    if cluster:
        nodes = Cluster(*cluster)
        servers: dict = {"cluster": nodes}
        server = nodes.nodes[0]
    else:
        server = Server(*server_args)
        servers = {"primary": server}
    proxy = None
    if replica:
        servers["replica"] = Server("--replicaof", "127.0.0.1", str(server.port))
        deadline = time.monotonic() + 10
        while server.client().info("replication").get("slave0", {}).get("state") != "online":
            assert time.monotonic() < deadline, "replica did not sync"
            time.sleep(0.05)
        proxy = Proxy(server.port)
        servers["proxy"] = proxy
    url = proxy.url if proxy else server.url
    urls = [f"http://h{i % size['hosts']}.{name}.test/page/{i}" for i in range(size["items"])]
    random.Random(name).shuffle(urls)
    # (the WebAssembly build drives one Redis server, not a cluster)
    languages = [lang for lang in LANGUAGES if lang != "wasm"] if cluster else LANGUAGES
    # (a crawl seeds its first pages: page i is h<i % hosts>, /page/<i>)
    seeds = [u for u in urls if int(u.rsplit("/", 1)[1]) < CRAWL_SEEDS] if crawl else urls
    run = Run(name, url, f"fault-{name}", urls, tmp, size["slow_ms"], languages, shards=8 if cluster else 1, crawl=crawl,
              seeds=seeds)
    started = time.monotonic()
    try:
        run.figures["refused_seeds"] = seed_all(url, run.queue, seeds, time.monotonic() + 60, run.shards)
        for i in range(size["workers"]):
            run.start_worker(i, languages[i % len(languages)])
        fault(run, servers)
        deadline = time.monotonic() + size["drain_s"]
        while True:
            stats = stats_of(url, run.queue)
            if stats and stats["pending"] == 0 and stats["leased"] == 0:
                if stats["done"] + stats["dead"] >= len(urls):
                    break
                # nothing queued or leased, and pages never found: links of answered pages lost
                check(not crawl, f"the crawl found every page ({stats['done'] + stats['dead']} of {len(urls)} done or dead)")
                # Redis lost seeds with its writes: seed again (idempotent), as a crawler would,
                # with the shard count: a home that lost its `shards` field would otherwise be
                # made a queue of one shard, out of sight of the workers' 8 shards
                run.figures["reseeded"] = run.figures.get("reseeded", 0) + 1
                seed_all(url, run.queue, seeds, deadline, run.shards)
            if time.monotonic() > deadline:
                raise SystemExit(f"FAILED: {name} did not drain: {stats}")
            time.sleep(0.2)
        if cluster:
            before = len(errors_logged(run))
            time.sleep(2.0)
            idle = errors_logged(run)[before:]
            run.figures["idle_errors"] = len(idle)
            check(not idle, f"idle workers on the drained queue logged {len(idle)} errors in 2 s "
                  + "".join(f"; {e.get('code')}: {e.get('message')}" for e in idle[:3]))
        (tmp / "stop").touch()
        for p in run.procs.values():
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        if cluster:
            client = servers["cluster"].client()
        else:
            client = (servers.get("replica") if replica and run.figures.get("promoted") else server).client()
        analyse(run, lost_writes, client)
        run.figures["seconds"] = round(time.monotonic() - started, 1)
        print(f"    figures: {json.dumps(run.figures)}")
        return run.figures
    finally:
        (tmp / "stop").touch()
        for p in run.procs.values():
            if p.poll() is None:
                p.kill()
        for s in servers.values():
            if isinstance(s, (Server, Cluster)):
                s.close()
        shutil.rmtree(tmp, ignore_errors=True)


def wait_progress(run: Run, fraction: float, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stats = stats_of(run.url, run.queue)
        if stats and stats["done"] >= fraction * len(run.urls):
            return
        time.sleep(0.05)
    raise SystemExit(f"FAILED: no progress in {run.name}")


def kill_workers(times: int) -> Callable[[Run, dict], None]:
    def fault(run: Run, servers: dict) -> None:
        rng = random.Random(1)
        for k in range(times):
            wait_progress(run, (k + 1) / (times + 2))
            holders = [i for i in run.procs if run.procs[i].poll() is None and run.holding(i) > 0] or list(run.procs)
            i = rng.choice(holders)
            run.procs[i].send_signal(signal.SIGKILL)
            run.procs[i].wait()
            run.ledger(i).rename(run.tmp / f"killed-{run.restarts}.jsonl")
            run.restarts += 1
            run.start_worker(i, run.worker_lang[i])
        run.figures["kills"] = times
    return fault


def lose_aof_tail(server: Server) -> int:
    """What a machine crash does to an AOF written with fsync everysec: the last writes the OS
    had not flushed are gone (here: the last quarter of the incremental file, at most 64 KB),
    and the torn tail is repaired with redis-check-aof, as an operator would."""
    incr = next((server.dir / "appendonlydir").glob("*.incr.aof"))
    size = incr.stat().st_size
    cut = min(size // 4, 64 * 1024)
    with open(incr, "r+b") as f:
        f.truncate(size - cut)
    manifest = next((server.dir / "appendonlydir").glob("*.manifest"))
    subprocess.run(["redis-check-aof", "--fix", str(manifest)], input=b"y\n", capture_output=True, check=True)
    return cut


def kill_redis(times: int, lost_writes: bool) -> Callable[[Run, dict], None]:
    def fault(run: Run, servers: dict) -> None:
        for k in range(times):
            wait_progress(run, (k + 1) / (times + 2))
            servers["primary"].kill9()
            if lost_writes:
                run.figures["aof_bytes_lost"] = run.figures.get("aof_bytes_lost", 0) + lose_aof_tail(servers["primary"])
            time.sleep(0.3)
            servers["primary"].start()
            if lost_writes:
                seed_all(run.url, run.queue, run.seeds, time.monotonic() + 60)
        run.figures["redis_kills"] = times
    return fault


def stop_redis(times: int) -> Callable[[Run, dict], None]:
    def fault(run: Run, servers: dict) -> None:
        for k in range(times):
            wait_progress(run, (k + 1) / (times + 2))
            servers["primary"].signal(signal.SIGSTOP)
            time.sleep(OPTIONS["lease_ttl"] + 1.5)  # every lease held expires meanwhile
            servers["primary"].signal(signal.SIGCONT)
        run.figures["redis_stops"] = times
    return fault


def kill_clients(times: int) -> Callable[[Run, dict], None]:
    def fault(run: Run, servers: dict) -> None:
        wait_progress(run, 0.1)
        killed = 0
        for _ in range(times):
            killed += servers["primary"].client().client_kill_filter(_type="normal", skipme=True)
            time.sleep(0.3)
        run.figures["client_kills"] = times
        run.figures["connections_killed"] = killed
    return fault


def fill_redis(run: Run, servers: dict) -> None:
    # Redis is full (noeviction): a second wave of seeds is refused whole, while the workers
    # keep draining (their scripts may run when memory is full); once memory is added, the
    # refused seeds go through
    client = servers["primary"].client()
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", int(client.info("memory")["used_memory"]) // 2)
    extra = [f"http://x{i % 17}.{run.name}.test/more/{i}" for i in range(len(run.urls) // 2)]
    q = crawlq.Queue(run.url, run.queue, **OPTIONS)
    refused = 0
    for start in range(0, len(extra), 100):
        try:
            q.seed(extra[start:start + 100])
        except crawlq.ServerError as err:
            assert "OOM" in str(err), err
            refused += 1
    check(refused == (len(extra) + 99) // 100, f"Redis full: all {refused} seed calls refused whole")
    wait_progress(run, 1.0)
    check(q.stats()["seen"] == len(run.urls), "nothing of the refused calls was applied; the workers drained the queue meanwhile")
    client.config_set("maxmemory", 0)
    run.urls.extend(extra)
    seed_all(run.url, run.queue, extra, time.monotonic() + 60)
    run.figures["refused_seeds"] = refused


def promote_replica(run: Run, servers: dict) -> None:
    wait_progress(run, 0.3)
    primary, replica, proxy = servers["primary"], servers["replica"], servers["proxy"]
    replica.client().execute_command("REPLICAOF", "NO", "ONE")
    time.sleep(0.5)  # the old primary still takes leases and acks, which the new one never sees
    primary.kill9()
    proxy.switch(replica.port)
    run.figures["promoted"] = True
    seed_all(run.url, run.queue, run.urls, time.monotonic() + 60)


def fail_over_home(empty: bool) -> Callable[[Run, dict], None]:
    """kill -9 the master holding the queue's own base (its wake list, where every waiting
    lease blocks), mid-drain; its replica takes over (cluster-node-timeout 1 s). With `empty`
    the replica that takes over holds none of its master's keys (FLUSHALL once it is master,
    as a replica that had not synced yet would): the queue's home, with its shard count, and
    the shards on that master are lost."""
    def fault(run: Run, servers: dict) -> None:
        cluster: Cluster = servers["cluster"]
        wait_progress(run, 0.3)
        home = cluster.master_of("crawlq:{" + run.queue + "}:wake")
        replica = cluster.replica_of(home)
        # what the replica held when its master died: a run that loses writes then says how many
        run.figures["home_keys"] = home.client().dbsize()
        run.figures["replica_keys"] = replica.client().dbsize()
        home.kill9()
        deadline = time.monotonic() + 30
        while True:
            try:
                role = replica.client().execute_command("ROLE")[0]
                if role == b"master" and b"cluster_state:ok" in replica.client().execute_command("CLUSTER", "INFO"):
                    break
            except redis.exceptions.ConnectionError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("FAILED: the home master's replica did not take over: "
                                 f"{replica.client().execute_command('ROLE')} "
                                 f"{replica.client().execute_command('CLUSTER', 'INFO')[:120]}")
            time.sleep(0.1)
        if empty:
            replica.client().flushall()
        run.figures["failovers"] = 1
        run.figures["promoted_keys"] = replica.client().dbsize()
        run.figures["failover_s"] = round(30 - (deadline - time.monotonic()), 1)
    return fault


def kill_cluster_clients(times: int) -> Callable[[Run, dict], None]:
    """CLIENT KILL of every client of every master, again and again: calls cut after Redis ran
    them must be reported (UNAVAILABLE), never sent again by the cluster client."""
    def fault(run: Run, servers: dict) -> None:
        cluster: Cluster = servers["cluster"]
        wait_progress(run, 0.1)
        killed = 0
        for _ in range(times):
            for node in cluster.alive():
                if node.client().execute_command("ROLE")[0] == b"master":
                    killed += node.client().client_kill_filter(_type="normal", skipme=True)
            time.sleep(0.3)
        run.figures["client_kills"] = times
        run.figures["connections_killed"] = killed
    return fault


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="the long run (README.md figures)")
    parser.add_argument("--only", default="", help="comma-separated scenario names")
    args = parser.parse_args()
    full = args.full
    size = ({"items": 20_000, "hosts": 200, "workers": 8, "slow_ms": 2, "drain_s": 600} if full
            else {"items": 800, "hosts": 40, "workers": 4, "slow_ms": 5, "drain_s": 120})
    repeat = 5 if full else 2
    aof = ["--appendonly", "yes", "--appendfilename", "crawlq.aof"]
    scenarios = {
        "workers_killed": lambda: scenario("workers_killed", [], kill_workers(3 * repeat), False, size),
        "aof_always": lambda: scenario("aof_always", [*aof, "--appendfsync", "always"], kill_redis(repeat, False), False, size),
        "aof_everysec": lambda: scenario("aof_everysec", [*aof, "--appendfsync", "everysec"], kill_redis(repeat, True), True, size),
        "sigstop": lambda: scenario("sigstop", [], stop_redis(repeat), False, size),
        "client_kill": lambda: scenario("client_kill", [], kill_clients(5 * repeat), False, size),
        "maxmemory": lambda: scenario("maxmemory", [], fill_redis, False, size),
        "replica_promotion": lambda: scenario("replica_promotion", ["--repl-diskless-sync-delay", "0"], promote_replica, True, size, replica=True),
        "cluster_home_failover": lambda: scenario("cluster_home_failover", [], fail_over_home(False), True, size, cluster=(3, 1)),
        "cluster_home_lost": lambda: scenario("cluster_home_lost", [], fail_over_home(True), True, size, cluster=(3, 1)),
        "cluster_client_kill": lambda: scenario("cluster_client_kill", [], kill_cluster_clients(5 * repeat), False, size, cluster=(3, 0)),
        "crawl_workers_killed": lambda: scenario("crawl_workers_killed", [], kill_workers(3 * repeat), False, size, crawl=True),
        "crawl_aof_everysec": lambda: scenario("crawl_aof_everysec", [*aof, "--appendfsync", "everysec"], kill_redis(repeat, True), True, size,
                                               crawl=True),
        "crawl_sigstop": lambda: scenario("crawl_sigstop", [], stop_redis(repeat), False, size, crawl=True),
        "crawl_client_kill": lambda: scenario("crawl_client_kill", [], kill_clients(5 * repeat), False, size, crawl=True),
        "crawl_cluster_client_kill": lambda: scenario("crawl_cluster_client_kill", [], kill_cluster_clients(5 * repeat), False, size,
                                                      cluster=(3, 0), crawl=True),
    }
    chosen = [s for s in args.only.split(",") if s] or list(scenarios)
    started = time.monotonic()
    results = {}
    for name in chosen:
        results[name] = scenarios[name]()
    print(f"fault suite: {len(results)} scenarios passed in {time.monotonic() - started:.0f} s")
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
