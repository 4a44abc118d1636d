//! Sans-IO operations: each builds one script call ([`ScriptCall`]) and decodes its reply
//! ([`Reply`]). Any transport that can run FCALL or EVALSHA/EVAL can drive a queue with these;
//! the native client ([`crate::redis_exec`], functions first) and the WebAssembly build
//! (scripts) both do.

use crate::config::{BackoffKind, Config};
use crate::error::{Error, InvalidReason, Result};
use crate::keys::Keys;
use crate::model::*;
use crate::normalize::{self, ItemKind, LiveMember};
use crate::request::CrawlRequest;
use crate::scripts::{self, Script};
use crate::wire::{self, StoredItem};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

/// A reply from Redis, independent of any client library.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Nil,
    Int(i64),
    Data(Vec<u8>),
    Array(Vec<Reply>),
}

impl Reply {
    fn int(&self) -> Result<i64> {
        match self {
            Reply::Int(i) => Ok(*i),
            Reply::Data(d) => std::str::from_utf8(d)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| bad_reply("an integer", self)),
            _ => Err(bad_reply("an integer", self)),
        }
    }

    fn uint(&self) -> Result<u64> {
        let i = self.int()?;
        u64::try_from(i).map_err(|_| bad_reply("a non-negative integer", self))
    }

    fn data(&self) -> Result<&[u8]> {
        match self {
            Reply::Data(d) => Ok(d),
            _ => Err(bad_reply("a string", self)),
        }
    }

    fn text(&self) -> Result<String> {
        String::from_utf8(self.data()?.to_vec()).map_err(|_| bad_reply("UTF-8 text", self))
    }

    pub(crate) fn array(self) -> Result<Vec<Reply>> {
        match self {
            Reply::Array(a) => Ok(a),
            other => Err(bad_reply("an array", &other)),
        }
    }
}

fn bad_reply(what: &str, got: &Reply) -> Error {
    let mut shown = format!("{got:?}");
    shown.truncate(120);
    Error::Protocol(format!("expected {what} in the script reply, got {shown}"))
}

fn expect_len(items: &[Reply], min: usize, script: &str) -> Result<()> {
    if items.len() < min {
        return Err(Error::Protocol(format!(
            "{script} reply has {} elements, expected at least {min}",
            items.len()
        )));
    }
    Ok(())
}

/// One operation's invocation: the script (its function name for FCALL, its SHA-1 for
/// EVALSHA, its source for the NOSCRIPT fallback), keys and arguments.
#[derive(Debug, Clone)]
pub struct ScriptCall {
    pub script: &'static Script,
    pub keys: Arc<[String]>,
    pub args: Vec<Vec<u8>>,
    /// Set when the queue asks for `min_replicas`: after a script that changes data, the
    /// executor waits (Redis `WAIT`, pipelined after the script) until that many replicas have
    /// it, and fails with [`Error::Timeout`] when they do not within the timeout.
    pub replicas: Option<Replicas>,
    /// The call goes to a shard of a queue of several shards and asks it to report to the
    /// queue's index (the call flag `r`): its reply ends with the report ([`split_report`]).
    pub report: Option<ReportKind>,
}

/// What a shard's report says (docs/PROTOCOL.md section 9, "Index"): `Lower`, the earliest
/// time something the call added or moved becomes leasable (a writer: seed, nack, release, ...);
/// `Set`, the shard's whole state after the call (a lease).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportKind {
    Lower,
    Set,
}

/// One shard's report to its queue's index: sent with the `due` script on the queue's own base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardReport {
    pub kind: ReportKind,
    pub shard: usize,
    /// The shard's epoch after the call (`meta.ep`).
    pub epoch: u64,
    /// When (ms) something is next leasable there, by `kind`'s rule; -1: nothing (`Set`: the
    /// shard holds nothing queued or leased).
    pub at: i64,
}

/// The report at the end of a reply of a call made with [`ScriptCall::report`], taken off:
/// the reply as the script's decoder reads it, and the report (`None` for a writer that moved
/// nothing earlier).
///
/// ```
/// use crawlq::ops::{split_report, Reply, ReportKind};
/// let reply = Reply::Array(vec![Reply::Int(1), Reply::Int(7), Reply::Int(1_700_000_000_000)]);
/// let (rest, report) = split_report(reply, ReportKind::Lower, 3).unwrap();
/// assert_eq!(rest, Reply::Array(vec![Reply::Int(1)]));
/// assert_eq!((report.unwrap().shard, report.unwrap().epoch), (3, 7));
/// ```
pub fn split_report(
    reply: Reply,
    kind: ReportKind,
    shard: usize,
) -> Result<(Reply, Option<ShardReport>)> {
    let mut items = reply.array()?;
    if items.len() < 2 {
        return Err(Error::Protocol(
            "a shard's reply has no report at its end".into(),
        ));
    }
    let at = items.pop().expect("two or more").int()?;
    let epoch = items.pop().expect("one or more").uint()?;
    let report = (epoch > 0).then_some(ShardReport {
        kind,
        shard,
        epoch,
        at,
    });
    Ok((Reply::Array(items), report))
}

/// The home's answer to a `due` call: the server's time, whether this caller sweeps, when the
/// next shard comes due after now, and the shards due now (earliest first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuePick {
    pub now_ms: i64,
    pub sweep: bool,
    pub next_ms: Option<i64>,
    pub shards: Vec<usize>,
}

/// How many replicas must acknowledge a call's change, and for how long to wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replicas {
    pub count: u32,
    pub timeout: Duration,
}

impl Replicas {
    /// The error for a `WAIT` that answered `acknowledged` replicas.
    pub fn check(&self, acknowledged: i64, script: &str) -> Result<()> {
        if acknowledged >= i64::from(self.count) {
            return Ok(());
        }
        Err(Error::Timeout(format!(
            "{script} was applied on the primary but only {acknowledged} of {} replicas \
             acknowledged it within {} ms (min_replicas)",
            self.count,
            self.timeout.as_millis()
        )))
    }
}

/// An item that passed normalization, ready for the seed script.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedItem {
    /// Position in the caller's batch.
    pub index: usize,
    pub seen_member: i64,
    pub bucket_hash: u32,
    pub host: String,
    pub priority: i16,
    pub delay_ms: u64,
    pub force: bool,
    /// The item's member in the live set (queued or leased items).
    pub live: LiveMember,
    /// The record after its `ts`: see [`crate::wire::record_after_ts`].
    pub tail: String,
}

/// A seed call's batch options, checked once ([`Ops::seed_defaults`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SeedDefaults {
    priority: i16,
    /// The batch payload as canonical JSON (`Some(None)`: an explicit null).
    payload: Option<Option<String>>,
}

/// The result of one lease script call.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseBatch {
    pub now_ms: i64,
    /// When something may become leasable (only when nothing was leased).
    pub next_due_ms: Option<i64>,
    pub reclaimed: u64,
    pub reclaimed_dead: u64,
    pub leases: Vec<Lease>,
    /// Leased records that could not be decoded; [`crate::Queue`] dead-letters them.
    pub undecodable: Vec<Undecodable>,
}

impl LeaseBatch {
    /// Two calls' results as one: leases in order, counts summed, the later clock, the
    /// earlier due time.
    pub fn merge(mut self, other: LeaseBatch) -> LeaseBatch {
        self.now_ms = self.now_ms.max(other.now_ms);
        self.next_due_ms = match (self.next_due_ms, other.next_due_ms) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.reclaimed += other.reclaimed;
        self.reclaimed_dead += other.reclaimed_dead;
        self.leases.extend(other.leases);
        self.undecodable.extend(other.undecodable);
        self
    }
}

/// How calls are made, shared by every shard of a queue: the fixed clock of the tests, and
/// whether Redis is a cluster (scripts then probe their slot before any write).
#[derive(Debug, Default)]
pub struct CallState {
    /// Fixed clock in ms, or `i64::MIN` for the server's clock.
    clock: AtomicI64,
    cluster: AtomicBool,
}

impl CallState {
    pub fn new(fixed_clock_ms: Option<i64>) -> Arc<CallState> {
        Arc::new(CallState {
            clock: AtomicI64::new(fixed_clock_ms.unwrap_or(i64::MIN)),
            cluster: AtomicBool::new(false),
        })
    }

    /// Test only: pin the scripts' clock to `ms` (or back to the server's clock with `None`).
    pub fn set_fixed_clock(&self, ms: Option<i64>) {
        self.clock.store(ms.unwrap_or(i64::MIN), Ordering::Relaxed);
    }

    /// Calls go to a Redis Cluster.
    pub fn set_cluster(&self, cluster: bool) {
        self.cluster.store(cluster, Ordering::Relaxed);
    }

    /// `ARGV[2]` of every script: `c` in a cluster, then the fixed clock's digits (if any).
    fn arg(&self) -> Vec<u8> {
        let mut arg = Vec::new();
        if self.cluster.load(Ordering::Relaxed) {
            arg.push(b'c');
        }
        let clock = self.clock.load(Ordering::Relaxed);
        if clock != i64::MIN {
            arg.extend(clock.to_string().into_bytes());
        }
        arg
    }
}

/// What a seed call did for its items.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeedOutcome {
    pub added: u64,
    pub duplicates: u64,
    /// Added and leasable now (not delayed): what blocked lease calls wake for.
    pub added_ready: u64,
    /// Per item of the call, in order: what became of it.
    pub ids: Vec<Seeded>,
    /// The seen epoch the call answered (docs/PROTOCOL.md, `seed`); `None` from a script that
    /// does not answer one.
    pub epoch: Option<String>,
}

/// What one seeded item became.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seeded {
    /// Queued under this record id.
    Added(u64),
    /// Seen before (or queued or leased now): not queued.
    Duplicate,
    /// A new URL of a host whose budget is used up: not queued, not marked seen.
    OverBudget,
}

impl Seeded {
    /// The record id, for an added item.
    pub fn id(self) -> Option<u64> {
        match self {
            Seeded::Added(id) => Some(id),
            _ => None,
        }
    }
}

impl SeedOutcome {
    /// This outcome followed by `later`, the outcome of the next call of the same batch.
    pub fn then(mut self, later: SeedOutcome) -> SeedOutcome {
        self.added += later.added;
        self.duplicates += later.duplicates;
        self.added_ready += later.added_ready;
        self.ids.extend(later.ids);
        if later.epoch.is_some() {
            self.epoch = later.epoch;
        }
        self
    }
}

/// Builds the calls of one queue (or one shard of a queue) and decodes their replies.
///
/// ```
/// let ops = crawlq::ops::Ops::new("jobs", crawlq::Config::default()).unwrap();
/// let call = ops.stats();
/// assert_eq!(call.script.name, "stats");
/// assert_eq!(call.keys[0], "crawlq:{jobs}:meta");
/// ```
#[derive(Debug)]
pub struct Ops {
    keys: Keys,
    config: Config,
    state: Arc<CallState>,
    /// A shard of several: calls that may change what is leasable report (see `call`).
    reporting: bool,
    /// Its number among its queue's shards (0 for a one-shard queue or a queue's own base).
    shard: usize,
    /// A shard of a queue of this many shards with spread tags: a new shard's seen set has
    /// 1/`split` of the buckets (docs/PROTOCOL.md section 2, "Seen set"); 1 otherwise.
    split: u32,
}

impl Ops {
    /// The operations of a queue of one shard (base `<prefix>:{<queue>}`).
    pub fn new(queue: &str, config: Config) -> Result<Ops> {
        config.validate()?;
        let keys = Keys::new(&config.key_prefix, queue)?;
        let state = CallState::new(config.fixed_clock_ms);
        Ok(Ops::with_keys(keys, config, state))
    }

    /// The operations on the keys `keys` (one shard, or a queue's own base).
    pub fn with_keys(keys: Keys, config: Config, state: Arc<CallState>) -> Ops {
        Ops {
            keys,
            config,
            state,
            reporting: false,
            shard: 0,
            split: 1,
        }
    }

    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Test only: pin the scripts' clock to `ms` (or back to the server's clock with `None`).
    pub fn set_fixed_clock(&self, ms: Option<i64>) {
        self.state.set_fixed_clock(ms);
    }

    fn call(&self, script: &'static Script, extra: usize) -> ScriptCall {
        let mut args: Vec<Vec<u8>> = Vec::with_capacity(2 + extra);
        args.push(self.keys.base().as_bytes().to_vec());
        args.push(self.state.arg());
        let writes = !script.flags.contains("no-writes");
        let report = if self.reporting {
            match script.name {
                "lease" | "ack_lease" | "ack_seed_lease" => Some(ReportKind::Set),
                "seed" | "ack_seed" | "nack" | "ack" | "release" | "dead_requeue" | "reclaim"
                | "pause" | "host_config" => Some(ReportKind::Lower),
                _ => None,
            }
        } else {
            None
        };
        if report.is_some() {
            args[1].insert(0, b'r');
        }
        if self.split > 1 {
            let flag = format!("s{}.", self.split);
            args[1].splice(0..0, flag.into_bytes());
        }
        ScriptCall {
            script,
            keys: self.keys.script_keys().clone(),
            args,
            replicas: (writes && self.config.min_replicas > 0).then_some(Replicas {
                count: self.config.min_replicas,
                timeout: self.config.replica_timeout,
            }),
            report,
        }
    }

    /// These operations are those of shard `shard` of a queue of several shards: the calls
    /// that may change what is leasable report to the queue's index (docs/PROTOCOL.md section
    /// 9).
    pub fn reporting(mut self, shard: usize) -> Ops {
        self.reporting = true;
        self.shard = shard;
        self
    }

    /// These operations are those of a shard of a queue of `count` shards with spread tags,
    /// whose seen set is split `count` ways (docs/PROTOCOL.md section 2, "Seen set").
    pub fn split(mut self, count: u32) -> Ops {
        self.split = count;
        self
    }

    /// The shard these operations are for (0 for a one-shard queue).
    pub fn shard_index(&self) -> usize {
        self.shard
    }

    /// The queue's shard count, fixing it to `asked` for a new queue (0: only read). Sent on
    /// the queue's own base.
    pub fn shards(&self, asked: u32) -> ScriptCall {
        let mut call = self.call(&scripts::SHARDS, 1);
        call.args.push(asked.to_string().into_bytes());
        // the count is fixed once and read back by every client: no replica wait for it
        call.replicas = None;
        call
    }

    /// The index of a queue of several shards, on its own base: apply `reports`, push `markers`
    /// wake markers when one made a shard due now, and answer up to `pick` shards due now (0:
    /// none) and, with `sweep` (a period), whether this caller sweeps.
    pub fn due(
        &self,
        reports: &[ShardReport],
        markers: u64,
        pick: usize,
        sweep: Duration,
    ) -> ScriptCall {
        let mut call = self.call(&scripts::DUE, 3 + 4 * reports.len());
        call.args.push(markers.to_string().into_bytes());
        call.args.push(pick.to_string().into_bytes());
        call.args.push(sweep.as_millis().to_string().into_bytes());
        for r in reports {
            call.args.push(match r.kind {
                ReportKind::Lower => b"l".to_vec(),
                ReportKind::Set => b"s".to_vec(),
            });
            call.args.push(r.shard.to_string().into_bytes());
            call.args.push(r.epoch.to_string().into_bytes());
            call.args.push(r.at.to_string().into_bytes());
        }
        // the index and wake markers are not queue data: a replica rebuilds the index by sweeps
        call.replicas = None;
        call
    }

    pub fn decode_due(&self, reply: Reply) -> Result<DuePick> {
        let items = reply.array()?;
        expect_len(&items, 3, "due")?;
        let next = items[2].int()?;
        Ok(DuePick {
            now_ms: items[0].int()?,
            sweep: items[1].int()? == 1,
            next_ms: (next >= 0).then_some(next),
            shards: items[3..]
                .iter()
                .map(|r| {
                    r.uint()
                        .map(|s| s as usize)
                        .map_err(|_| bad_reply("a shard number", r))
                })
                .collect::<Result<_>>()?,
        })
    }

    /// A shard's state for a sweep (read-only): `{epoch, when next leasable}`.
    pub fn shard_state(&self) -> ScriptCall {
        self.call(&scripts::SHARD_STATE, 0)
    }

    /// The states of this shard and of `others` (shards of the same queue on the same node)
    /// in one call: one `shard_state` reply each, in order.
    pub fn shard_state_shards(&self, others: &[&Ops]) -> ScriptCall {
        self.with_other_bases(&scripts::SHARD_STATE_SHARDS, others)
    }

    pub fn decode_shard_state(&self, reply: Reply, shard: usize) -> Result<ShardReport> {
        let items = reply.array()?;
        expect_len(&items, 2, "shard_state")?;
        Ok(ShardReport {
            kind: ReportKind::Set,
            shard,
            epoch: items[0].uint()?,
            at: items[1].int()?,
        })
    }

    /// The count and tags a `shards` reply carries.
    pub fn decode_shards(&self, reply: Reply) -> Result<(u32, crate::shards::ShardTags)> {
        let items = reply.array()?;
        expect_len(&items, 2, "shards")?;
        let count = u32::try_from(items[0].uint()?)
            .map_err(|_| Error::Protocol("shard count out of range".into()))?;
        let tags = match items[1].text()?.as_str() {
            "spread" => crate::shards::ShardTags::Spread,
            "" => crate::shards::ShardTags::Numbered,
            other => {
                return Err(Error::Protocol(format!(
                    "shard tags {other:?} of a newer protocol: upgrade this client"
                )));
            }
        };
        Ok((count, tags))
    }

    // ---- seed ----

    /// Normalize a batch. Invalid items are returned with their index; valid ones are ready
    /// for [`Ops::seed`]. Batch options out of range are an error for the whole call.
    pub fn prepare(
        &self,
        items: &[SeedItem],
        opts: &SeedOptions,
    ) -> Result<(Vec<PreparedItem>, Vec<InvalidInput>)> {
        let defaults = self.seed_defaults(opts)?;
        Ok(self.prepare_with(items, 0, opts, &defaults))
    }

    /// Check a seed call's batch options once, before its items are prepared chunk by chunk.
    pub fn seed_defaults(&self, opts: &SeedOptions) -> Result<SeedDefaults> {
        let priority = i16::try_from(opts.priority).map_err(|_| {
            Error::InvalidArgument(format!(
                "priority {} is outside -32768..=32767",
                opts.priority
            ))
        })?;
        let payload = match &opts.payload {
            Some(p) => Some(
                self.payload_json(p)
                    .map_err(|r| Error::InvalidArgument(format!("payload: {r}")))?,
            ),
            None => None,
        };
        Ok(SeedDefaults { priority, payload })
    }

    /// Normalize `items`, the part of a batch that starts at index `offset`; indexes in the
    /// result are positions in the whole batch.
    pub fn prepare_with(
        &self,
        items: &[SeedItem],
        offset: usize,
        opts: &SeedOptions,
        defaults: &SeedDefaults,
    ) -> (Vec<PreparedItem>, Vec<InvalidInput>) {
        let mut prepared = Vec::with_capacity(items.len());
        let mut invalid = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let index = offset + i;
            match self.prepare_one(index, item, opts, defaults) {
                Ok(p) => prepared.push(p),
                Err(reason) => invalid.push(InvalidInput {
                    index,
                    input: item.input.clone(),
                    reason,
                }),
            }
        }
        (prepared, invalid)
    }

    fn payload_json(&self, payload: &serde_json::Value) -> Result<Option<String>, InvalidReason> {
        if payload.is_null() {
            return Ok(None);
        }
        let json = wire::canonical_json(payload)?;
        if json.len() > self.config.max_payload_bytes {
            return Err(InvalidReason::PayloadTooLarge {
                len: json.len(),
                max: self.config.max_payload_bytes,
            });
        }
        Ok(Some(json))
    }

    fn prepare_one(
        &self,
        index: usize,
        item: &SeedItem,
        opts: &SeedOptions,
        defaults: &SeedDefaults,
    ) -> Result<PreparedItem, InvalidReason> {
        if let Some(reason) = &item.refused {
            return Err(reason.clone());
        }
        let mut normalized = normalize::normalize(&item.input)?;
        if self.config.sort_query {
            normalized = normalized.with_sorted_query();
        }
        let priority = match item.priority {
            Some(p) => {
                i16::try_from(p).map_err(|_| InvalidReason::InvalidPriority(p.to_string()))?
            }
            None => defaults.priority,
        };
        let own_payload;
        let payload = match &item.payload {
            Some(p) => {
                own_payload = self.payload_json(p)?;
                own_payload.as_deref()
            }
            None => defaults.payload.as_ref().and_then(|p| p.as_deref()),
        };
        let key = item.key.as_deref();
        if let Some(key) = key {
            normalize::check_key(key)?;
        }
        // a caller's key replaces the canonical form as the item's identity
        let fingerprint = match key {
            Some(key) => normalize::Fingerprint::of(key),
            None => normalized.fingerprint(),
        };
        let url = (normalized.kind == ItemKind::Url).then_some(normalized.canonical.as_str());
        let host = normalize::host_key(&normalized.host, self.config.host_key);
        let delay = item.delay.unwrap_or(opts.delay);
        if delay > crate::config::MAX_DURATION {
            return Err(InvalidReason::InvalidDelay(format!(
                "{} s is longer than the longest delay ({} s)",
                delay.as_secs(),
                crate::config::MAX_DURATION.as_secs()
            )));
        }
        Ok(PreparedItem {
            index,
            seen_member: fingerprint.seen_member(),
            bucket_hash: fingerprint.bucket_hash(),
            live: LiveMember::of(key.or(url).unwrap_or(&host)),
            tail: wire::record_after_ts(&host, priority, 0, url, key, None, payload),
            host,
            priority,
            delay_ms: delay.as_millis() as u64,
            force: item.force.unwrap_or(opts.force),
        })
    }

    /// The seed call for one chunk of prepared items.
    pub fn seed(&self, items: &[PreparedItem]) -> ScriptCall {
        let mut call = self.call(&scripts::SEED, 1 + items.len() * 9);
        call.args.push(items.len().to_string().into_bytes());
        for item in items {
            call.args.push(item.seen_member.to_string().into_bytes());
            call.args.push(item.bucket_hash.to_string().into_bytes());
            call.args.push(item.host.as_bytes().to_vec());
            call.args.push(item.priority.to_string().into_bytes());
            call.args.push(item.delay_ms.to_string().into_bytes());
            call.args.push(if item.force {
                b"1".to_vec()
            } else {
                b"0".to_vec()
            });
            call.args.push(item.live.member.to_string().into_bytes());
            call.args
                .push(item.live.bucket_hash.to_string().into_bytes());
            call.args.push(item.tail.as_bytes().to_vec());
        }
        call
    }

    /// Decode a seed reply for a chunk of `n` items.
    pub fn decode_seed(&self, reply: Reply, n: usize) -> Result<SeedOutcome> {
        let items = reply.array()?;
        expect_len(&items, 3, "seed")?;
        let status = items[0].data()?;
        if status.len() != n {
            return Err(Error::Protocol(format!(
                "seed status covers {} items, sent {n}",
                status.len()
            )));
        }
        // added items took consecutive ids from first_id, in the call's order
        let mut next_id = match items.get(3) {
            Some(first) => first.uint()?,
            None => {
                return Err(Error::Protocol(
                    "seed reply has no first id (a script of an older version?)".into(),
                ));
            }
        };
        let (mut duplicates, mut over_budget) = (0, 0);
        let ids = status
            .iter()
            .map(|c| match *c {
                b'd' => {
                    duplicates += 1;
                    Seeded::Duplicate
                }
                b'b' => {
                    over_budget += 1;
                    Seeded::OverBudget
                }
                _ => {
                    next_id += 1;
                    Seeded::Added(next_id - 1)
                }
            })
            .collect();
        let epoch = match items.get(4) {
            Some(Reply::Data(d)) => Some(String::from_utf8_lossy(d).into_owned()),
            _ => None,
        };
        Ok(SeedOutcome {
            added: n as u64 - duplicates - over_budget,
            duplicates,
            added_ready: items[1].uint()?,
            ids,
            epoch,
        })
    }

    // ---- lease ----

    /// The lease call for up to `max` items with lease time `ttl`.
    pub fn lease(&self, max: usize, ttl: Duration) -> ScriptCall {
        let mut call = self.call(&scripts::LEASE, 6);
        self.push_lease_args(&mut call, max, ttl);
        call
    }

    /// Ack `leases` (as [`Ops::ack`]) and lease up to `max` items (as [`Ops::lease`]) in one
    /// call: the `ack_lease` script. Decode with [`Ops::decode_ack_lease`].
    pub fn ack_lease(
        &self,
        leases: &[LeaseHandle],
        revisit: Revisit,
        max: usize,
        ttl: Duration,
    ) -> ScriptCall {
        let mut call = self.call(&scripts::ACK_LEASE, 8 + leases.len() * 4);
        self.push_ack_args(&mut call, leases);
        call.args.push(match revisit {
            Revisit::After(d) => millis(d).into_bytes(),
            Revisit::At(ms) => format!("@{ms}").into_bytes(),
        });
        self.push_lease_args(&mut call, max, ttl);
        call
    }

    /// The ack flags and the lease batch of an `ack_lease` reply for `n` leases.
    pub fn decode_ack_lease(
        &self,
        reply: Reply,
        n: usize,
        ttl: Duration,
    ) -> Result<(Vec<bool>, LeaseBatch)> {
        let mut items = reply.array()?;
        expect_len(&items, 5 + n, "ack_lease")?;
        if items[4].uint()? != n as u64 {
            return Err(Error::Protocol(format!(
                "ack_lease answered for {} leases, expected {n}",
                items[4].uint()?
            )));
        }
        let flags = items
            .drain(4..5 + n)
            .skip(1)
            .map(|r| Ok(r.int()? == 1))
            .collect::<Result<Vec<bool>>>()?;
        Ok((flags, self.decode_lease(Reply::Array(items), ttl)?))
    }

    /// The lease script's arguments from its ARGV 3: max, ttl and the queue's lease options.
    fn push_lease_args(&self, call: &mut ScriptCall, max: usize, ttl: Duration) {
        let c = &self.config;
        call.args.push(max.to_string().into_bytes());
        call.args.push(millis(ttl).into_bytes());
        call.args.push(millis(c.host_delay).into_bytes());
        call.args.push(c.max_attempts.to_string().into_bytes());
        let reclaim = c.reclaim_batch.min(crate::queue::RECLAIM_PER_CALL);
        call.args.push(reclaim.to_string().into_bytes());
        call.args.push(
            max.clamp(100, crate::queue::PROMOTE_PER_CALL)
                .to_string()
                .into_bytes(),
        );
        call.args.push(c.host_in_flight.to_string().into_bytes());
        call.args.push(self.pacing_arg());
    }

    pub fn decode_lease(&self, reply: Reply, ttl: Duration) -> Result<LeaseBatch> {
        let items = reply.array()?;
        expect_len(&items, 4, "lease")?;
        let now_ms = items[0].int()?;
        let next_due = items[1].int()?;
        let expires_at_ms = now_ms + ttl.as_millis() as i64;
        let mut leases = Vec::with_capacity((items.len() - 4) / 2);
        let mut undecodable = Vec::new();
        for pair in items[4..].chunks(2) {
            let [lease_key, record] = pair else {
                return Err(Error::Protocol(
                    "lease reply has an odd number of fields".into(),
                ));
            };
            let (token, id) = parse_lease_key(lease_key)?;
            let bytes = record.data()?;
            match wire::decode_record(bytes) {
                Ok(stored) => leases.push(Lease {
                    id: stored.id,
                    url: stored.url,
                    host: stored.host,
                    key: stored.key,
                    payload: stored.payload,
                    priority: stored.priority,
                    attempt: stored.attempt + 1,
                    token,
                    leased_at_ms: now_ms,
                    expires_at_ms,
                    enqueued_at_ms: stored.ts,
                    last_error: stored.last_error,
                }),
                // a record of a newer format is a version mismatch, not a poison record
                Err(e) if wire::is_newer_format(bytes) => return Err(e),
                Err(e) => undecodable.push(Undecodable {
                    token,
                    id,
                    raw: String::from_utf8_lossy(bytes).into_owned(),
                    error: e.to_string(),
                }),
            }
        }
        Ok(LeaseBatch {
            now_ms,
            next_due_ms: (next_due >= 0).then_some(next_due),
            reclaimed: items[2].uint()?,
            reclaimed_dead: items[3].uint()?,
            leases,
            undecodable,
        })
    }

    // ---- ack / extend / release / nack ----

    /// The ack call; a revisit queues each acked item again when it is due.
    pub fn ack(&self, leases: &[LeaseHandle], revisit: Revisit) -> ScriptCall {
        let mut call = self.call(&scripts::ACK, 2 + leases.len() * 4);
        self.push_ack_args(&mut call, leases);
        match revisit {
            Revisit::After(d) if d.is_zero() => {}
            Revisit::After(d) => call.args.push(millis(d).into_bytes()),
            Revisit::At(ms) => call.args.push(format!("@{ms}").into_bytes()),
        }
        call
    }

    /// Seed `links` (one call's worth, as [`Ops::seed`]) and ack `leases` (as [`Ops::ack`]) in
    /// one call: the `ack_seed` script. Decode with [`Ops::decode_ack_seed`].
    pub fn ack_seed(
        &self,
        leases: &[LeaseHandle],
        revisit: Revisit,
        links: &[PreparedItem],
    ) -> ScriptCall {
        let mut call = self.call(&scripts::ACK_SEED, 3 + leases.len() * 4 + links.len() * 9);
        self.push_ack_args(&mut call, leases);
        call.args.push(match revisit {
            Revisit::After(d) => millis(d).into_bytes(),
            Revisit::At(ms) => format!("@{ms}").into_bytes(),
        });
        let seed = self.seed(links);
        call.args.extend(seed.args.into_iter().skip(2));
        call
    }

    /// The reply of [`Ops::ack_seed`] for `n` leases and `links` links: the links' outcome and
    /// the ack flags.
    pub fn decode_ack_seed(
        &self,
        reply: Reply,
        n: usize,
        links: usize,
    ) -> Result<(SeedOutcome, Vec<bool>)> {
        let mut items = reply.array()?;
        expect_len(&items, 5 + n, "ack_seed")?;
        let flags = items
            .split_off(5)
            .iter()
            .map(|r| Ok(r.int()? == 1))
            .collect::<Result<Vec<bool>>>()?;
        let outcome = self.decode_seed(Reply::Array(items), links)?;
        Ok((outcome, flags))
    }

    /// Seed `links` (as [`Ops::ack_seed`]), ack `leases` and lease up to `max` items (as
    /// [`Ops::lease`]) in one call: the `ack_seed_lease` script. Decode with
    /// [`Ops::decode_ack_seed_lease`].
    pub fn ack_seed_lease(
        &self,
        leases: &[LeaseHandle],
        revisit: Revisit,
        links: &[PreparedItem],
        max: usize,
        ttl: Duration,
    ) -> ScriptCall {
        let mut call = self.ack_seed(leases, revisit, links);
        call.script = &scripts::ACK_SEED_LEASE;
        self.push_lease_args(&mut call, max, ttl);
        call
    }

    /// The reply of [`Ops::ack_seed_lease`] for `n` leases and `links` links: the links'
    /// outcome, the ack flags and the lease batch.
    pub fn decode_ack_seed_lease(
        &self,
        reply: Reply,
        n: usize,
        links: usize,
        ttl: Duration,
    ) -> Result<(SeedOutcome, Vec<bool>, LeaseBatch)> {
        let mut items = reply.array()?;
        expect_len(&items, 6 + n + 4, "ack_seed_lease")?;
        if items[5].uint()? != n as u64 {
            return Err(Error::Protocol(format!(
                "ack_seed_lease answered for {} leases, expected {n}",
                items[5].uint()?
            )));
        }
        let leased = items.split_off(6 + n);
        let flags = items
            .split_off(5)
            .iter()
            .skip(1)
            .map(|r| Ok(r.int()? == 1))
            .collect::<Result<Vec<bool>>>()?;
        let outcome = self.decode_seed(Reply::Array(items), links)?;
        Ok((
            outcome,
            flags,
            self.decode_lease(Reply::Array(leased), ttl)?,
        ))
    }

    /// The ack script's arguments from its ARGV 3: the count, then per lease its key, host and
    /// live member.
    fn push_ack_args(&self, call: &mut ScriptCall, leases: &[LeaseHandle]) {
        call.args.push(leases.len().to_string().into_bytes());
        for l in leases {
            let live = LiveMember::of(l.identity());
            call.args.push(l.lease_key().into_bytes());
            call.args.push(l.host.as_bytes().to_vec());
            call.args.push(live.member.to_string().into_bytes());
            call.args.push(live.bucket_hash.to_string().into_bytes());
        }
    }

    /// Decode a per-lease 1/0 reply (ack, release).
    pub fn decode_flags(&self, reply: Reply, n: usize) -> Result<Vec<bool>> {
        let items = reply.array()?;
        expect_len(&items, n, "ack/release")?;
        items.iter().map(|r| Ok(r.int()? == 1)).collect()
    }

    pub fn extend(&self, leases: &[LeaseHandle], ttl: Duration) -> ScriptCall {
        let mut call = self.call(&scripts::EXTEND, 1 + leases.len() * 2);
        call.args.push(leases.len().to_string().into_bytes());
        for l in leases {
            call.args.push(l.lease_key().into_bytes());
            call.args.push(millis(ttl).into_bytes());
        }
        call
    }

    /// New deadlines (ms) per lease, `None` where the lease was not live.
    pub fn decode_extend(&self, reply: Reply, n: usize) -> Result<Vec<Option<i64>>> {
        let items = reply.array()?;
        expect_len(&items, n, "extend")?;
        items
            .iter()
            .map(|r| Ok(Some(r.int()?).filter(|d| *d >= 0)))
            .collect()
    }

    pub fn release(&self, leases: &[(LeaseHandle, ReleaseOptions)]) -> Result<ScriptCall> {
        let mut call = self.call(&scripts::RELEASE, 1 + leases.len() * 2);
        call.args.push(leases.len().to_string().into_bytes());
        for (l, opts) in leases {
            call.args.push(l.lease_key().into_bytes());
            call.args
                .push(self.payload_update(opts.payload.as_ref())?.into_bytes());
        }
        Ok(call)
    }

    /// The argument a nack or release sends for a payload update: '' keeps the stored payload
    /// (no update, or JSON null), else the new payload's canonical JSON, which must fit
    /// `max_payload_bytes`.
    ///
    /// ```
    /// let ops = crawlq::ops::Ops::new("jobs", crawlq::Config::default()).unwrap();
    /// assert_eq!(ops.payload_update(None).unwrap(), "");
    /// assert_eq!(ops.payload_update(Some(&serde_json::json!({"b": 1, "a": 2}))).unwrap(), r#"{"a":2,"b":1}"#);
    /// ```
    pub fn payload_update(&self, payload: Option<&serde_json::Value>) -> Result<String> {
        match payload {
            None => Ok(String::new()),
            // the reason names the payload already
            Some(p) => Ok(self
                .payload_json(p)
                .map_err(|r| Error::InvalidArgument(r.to_string()))?
                .unwrap_or_default()),
        }
    }

    /// The nack call. `randoms` (one per lease, in `[0, 1)`) feed the backoff jitter.
    pub fn nack(
        &self,
        leases: &[(LeaseHandle, NackOptions)],
        randoms: &[f64],
    ) -> Result<ScriptCall> {
        let c = &self.config;
        let mut call = self.call(&scripts::NACK, 9 + leases.len() * 8);
        call.args.push(c.max_attempts.to_string().into_bytes());
        call.args.push(
            match c.backoff.kind {
                BackoffKind::Fixed => "fixed",
                BackoffKind::Exponential => "exponential",
            }
            .into(),
        );
        call.args.push(millis(c.backoff.base).into_bytes());
        call.args.push(millis(c.backoff.max).into_bytes());
        call.args.push(c.backoff.jitter.to_string().into_bytes());
        call.args.push(millis(c.host_delay).into_bytes());
        call.args.push(millis(c.adaptive_delay_step).into_bytes());
        call.args.push(millis(c.adaptive_delay_max).into_bytes());
        call.args.push(leases.len().to_string().into_bytes());
        for (i, (lease, opts)) in leases.iter().enumerate() {
            call.args.push(lease.lease_key().into_bytes());
            call.args.push(if opts.retry {
                b"1".to_vec()
            } else {
                b"0".to_vec()
            });
            call.args.push(match opts.delay {
                Some(d) => millis(d).into_bytes(),
                None => b"-1".to_vec(),
            });
            call.args.push(match &opts.reason {
                Some(r) => wire::json_string(r).into_bytes(),
                None => Vec::new(),
            });
            call.args.push(if opts.rate_limited {
                b"1".to_vec()
            } else {
                b"0".to_vec()
            });
            call.args.push(
                randoms
                    .get(i)
                    .copied()
                    .unwrap_or(0.0)
                    .to_string()
                    .into_bytes(),
            );
            call.args
                .push(self.payload_update(opts.payload.as_ref())?.into_bytes());
            call.args.push(
                opts.retry_after
                    .map_or_else(String::new, |r| r.script_arg())
                    .into_bytes(),
            );
        }
        Ok(call)
    }

    pub fn decode_nack(&self, reply: Reply, n: usize) -> Result<Vec<NackOutcome>> {
        let items = reply.array()?;
        expect_len(&items, n, "nack")?;
        items
            .iter()
            .map(|r| match r.data()? {
                b"retried" => Ok(NackOutcome::Retried),
                b"dead" => Ok(NackOutcome::Dead),
                b"lost" => Ok(NackOutcome::Lost),
                _ => Err(bad_reply("retried, dead or lost", r)),
            })
            .collect()
    }

    // ---- recovery, depth, dead letters, hosts ----

    pub fn reclaim(&self, limit: usize) -> ScriptCall {
        let mut call = self.call(&scripts::RECLAIM, 2);
        call.args.push(limit.to_string().into_bytes());
        call.args
            .push(self.config.max_attempts.to_string().into_bytes());
        call
    }

    pub fn decode_reclaim(&self, reply: Reply) -> Result<ReclaimReport> {
        let items = reply.array()?;
        expect_len(&items, 3, "reclaim")?;
        Ok(ReclaimReport {
            requeued: items[0].uint()?,
            dead: items[1].uint()?,
            remaining: items[2].uint()?,
        })
    }

    pub fn stats(&self) -> ScriptCall {
        self.call(&scripts::STATS, 0)
    }

    /// Stats of this shard and of `others` (shards of the same queue on the same node) in one
    /// atomic call (docs/PROTOCOL.md section 9, "Readings").
    pub fn stats_shards(&self, others: &[&Ops]) -> ScriptCall {
        self.with_other_bases(&scripts::STATS_SHARDS, others)
    }

    /// A call of `script` on this shard with the bases of `others` as its arguments.
    fn with_other_bases(&self, script: &'static scripts::Script, others: &[&Ops]) -> ScriptCall {
        let mut call = self.call(script, others.len());
        call.args
            .extend(others.iter().map(|o| o.keys.base().as_bytes().to_vec()));
        call
    }

    pub fn decode_stats(&self, reply: Reply) -> Result<Stats> {
        let items = reply.array()?;
        expect_len(&items, 21, "stats")?;
        let u = |i: usize| items[i].uint();
        let now_ms = items[0].int()?;
        let oldest = items[8].int()?;
        let (ready, delayed) = (u(1)?, u(5)?);
        Ok(Stats {
            now_ms,
            pending: ready + delayed,
            ready,
            hosts: u(2)?,
            done: u(3)?,
            seen: u(4)?,
            delayed,
            leased: u(6)?,
            dead: u(7)?,
            oldest_pending_age_ms: (oldest >= 0).then(|| (now_ms - oldest).max(0) as u64),
            seeded_total: u(9)?,
            duplicates_total: u(10)?,
            leased_total: u(11)?,
            acked_total: u(12)?,
            nacked_total: u(13)?,
            retried_total: u(14)?,
            reclaimed_total: u(15)?,
            released_total: u(16)?,
            dead_total: u(17)?,
            hosts_waiting: u(18)?,
            over_budget_total: u(19)?,
            revisits: u(20)?,
            shards: Vec::new(),
        })
    }

    pub fn dead_list(&self, limit: usize, offset: usize) -> ScriptCall {
        let mut call = self.call(&scripts::DEAD_LIST, 2);
        call.args.push(offset.to_string().into_bytes());
        call.args.push(limit.to_string().into_bytes());
        call
    }

    /// `dead_list` for given ids (at most a few thousand: one argument each).
    pub fn dead_list_ids(&self, ids: &[String]) -> ScriptCall {
        let mut call = self.dead_list(0, 0);
        call.args
            .extend(ids.iter().map(|id| id.clone().into_bytes()));
        call
    }

    /// The reply of [`Ops::dead_list_ids`]: one entry per id asked, `None` where the id is not
    /// a dead letter.
    pub fn decode_dead_list_ids(&self, reply: Reply) -> Result<Vec<Option<DeadLetter>>> {
        let page = self.decode_dead_list(reply)?;
        Ok(page
            .items
            .into_iter()
            .map(|d| (d.died_at_ms >= 0).then_some(d))
            .collect())
    }

    pub fn decode_dead_list(&self, reply: Reply) -> Result<DeadPage> {
        let items = reply.array()?;
        expect_len(&items, 1, "dead_list")?;
        let total = items[0].uint()?;
        let mut page = Vec::new();
        for triple in items[1..].chunks(3) {
            let [id, died_at, record] = triple else {
                return Err(Error::Protocol("dead_list reply is not in triples".into()));
            };
            // a dead letter that does not decode is shown raw, never fails the listing
            let bytes = record.data()?;
            let (stored, raw) = match wire::decode_record(bytes) {
                Ok(stored) => (stored, None),
                Err(_) => {
                    // a record no script could read keeps the reason of the nack that buried
                    // it after a newline (which no stored record holds)
                    let (bytes, reason) = match bytes.iter().rposition(|&b| b == b'\n') {
                        Some(at) => (
                            &bytes[..at],
                            serde_json::from_slice::<String>(&bytes[at + 1..]).ok(),
                        ),
                        None => (bytes, None),
                    };
                    let mut stored = wire::salvage_record(bytes);
                    if reason.is_some() {
                        stored.last_error = reason;
                    }
                    (stored, Some(String::from_utf8_lossy(bytes).into_owned()))
                }
            };
            page.push(DeadLetter {
                id: id.text()?,
                url: stored.url,
                key: stored.key,
                host: stored.host,
                payload: stored.payload,
                priority: stored.priority,
                attempts: stored.attempt,
                last_error: stored.last_error,
                died_at_ms: died_at.int()?,
                raw,
            });
        }
        Ok(DeadPage { total, items: page })
    }

    /// Requeue the dead letters `ids`, or (`None`) the `limit` oldest after the first
    /// `offset` (the ones earlier calls left where they are).
    pub fn dead_requeue(&self, ids: Option<&[String]>, limit: usize, offset: usize) -> ScriptCall {
        let mut call = self.call(&scripts::DEAD_REQUEUE, 3 + ids.map_or(0, <[String]>::len));
        call.args.push(if ids.is_some() {
            b"ids".to_vec()
        } else {
            b"all".to_vec()
        });
        call.args.push(limit.to_string().into_bytes());
        match ids {
            Some(ids) => call
                .args
                .extend(ids.iter().map(|id| id.as_bytes().to_vec())),
            None => call.args.push(offset.to_string().into_bytes()),
        }
        call
    }

    /// (requeued, remaining dead, per-id found flags).
    pub fn decode_dead_requeue(&self, reply: Reply) -> Result<(u64, u64, Vec<bool>)> {
        let items = reply.array()?;
        expect_len(&items, 2, "dead_requeue")?;
        let flags = items[2..]
            .iter()
            .map(|r| Ok(r.int()? == 1))
            .collect::<Result<_>>()?;
        Ok((items[0].uint()?, items[1].uint()?, flags))
    }

    /// Pause (`Some(true)`: until resumed, or for `duration`), resume (`Some(false)`) or only
    /// read (`None`) the queue's state.
    pub fn pause(&self, pause: Option<bool>, duration: Option<Duration>) -> ScriptCall {
        let mut call = self.call(&scripts::PAUSE, 2);
        call.args.push(match pause {
            Some(true) => b"1".to_vec(),
            Some(false) => b"0".to_vec(),
            None => Vec::new(),
        });
        if let (Some(true), Some(d)) = (pause, duration) {
            call.args.push(millis(d).into_bytes());
        }
        call
    }

    /// The reply of [`Ops::pause`]: (paused before, paused now).
    pub fn decode_pause(&self, reply: Reply) -> Result<(bool, bool)> {
        let items = reply.array()?;
        expect_len(&items, 3, "pause")?;
        Ok((items[0].int()? == 1, items[1].int()? == 1))
    }

    /// Remove at most `limit` dead letters, oldest first.
    pub fn dead_purge(&self, limit: usize) -> ScriptCall {
        let mut call = self.call(&scripts::DEAD_PURGE, 1);
        call.args.push(limit.to_string().into_bytes());
        call
    }

    /// The reply of [`Ops::dead_purge`]: (removed, dead letters left).
    pub fn decode_dead_purge(&self, reply: Reply) -> Result<(u64, u64)> {
        let items = reply.array()?;
        expect_len(&items, 2, "dead_purge")?;
        Ok((items[0].uint()?, items[1].uint()?))
    }

    pub fn decode_count(&self, reply: Reply) -> Result<u64> {
        reply.uint()
    }

    /// Change what `change` names of a host (nothing: only read it).
    pub fn host_config(&self, host: &str, change: &HostChange) -> ScriptCall {
        let mut call = self.call(&scripts::HOST_CONFIG, 8);
        let duration_arg = |d: Option<Option<Duration>>| match d {
            Some(Some(d)) => millis(d).into_bytes(),
            Some(None) => Vec::new(),
            None => b"-".to_vec(),
        };
        call.args.push(host.as_bytes().to_vec());
        call.args.push(duration_arg(change.delay));
        call.args.push(match change.pause {
            HostPause::Keep => b"-".to_vec(),
            HostPause::Resume => Vec::new(),
            HostPause::Pause(None) => b"*".to_vec(),
            HostPause::Pause(Some(d)) => millis(d).into_bytes(),
        });
        call.args.push(match change.in_flight {
            Some(Some(n)) => n.to_string().into_bytes(),
            Some(None) => Vec::new(),
            None => b"-".to_vec(),
        });
        call.args
            .push(self.config.host_in_flight.to_string().into_bytes());
        call.args.push(duration_arg(change.robots_delay));
        call.args.push(match change.pacing {
            Some(Some(p)) => p.to_string().into_bytes(),
            Some(None) => Vec::new(),
            None => b"-".to_vec(),
        });
        call.args.push(self.pacing_arg());
        call
    }

    /// Take a turn of a host for a request that is not the fetch of one of its items (a
    /// redirect hop), `own` when the caller holds a lease of that host. Decode with
    /// [`Ops::decode_host_turn`].
    pub fn host_turn(&self, host: &str, own: bool, max_wait: Duration) -> ScriptCall {
        let mut call = self.call(&scripts::HOST_TURN, 6);
        call.args.push(host.as_bytes().to_vec());
        call.args.push(millis(self.config.host_delay).into_bytes());
        call.args
            .push(self.config.host_in_flight.to_string().into_bytes());
        call.args.push(self.pacing_arg());
        call.args
            .push(if own { b"1".to_vec() } else { b"0".to_vec() });
        call.args.push(millis(max_wait).into_bytes());
        call
    }

    /// The reply of [`Ops::host_turn`].
    pub fn decode_host_turn(&self, reply: Reply) -> Result<HostTurn> {
        let items = reply.array()?;
        expect_len(&items, 2, "host_turn")?;
        let at = items[1].int()?;
        let wait = || Duration::from_millis(at.max(0) as u64);
        match items[0].int()? {
            0 => Ok(HostTurn::Taken(wait())),
            1 => Ok(HostTurn::Full),
            2 => Ok(HostTurn::Paused((at >= 0).then_some(at))),
            3 => Ok(HostTurn::TooFar(wait())),
            other => Err(Error::Protocol(format!(
                "host_turn answered an unknown state {other}"
            ))),
        }
    }

    /// The workers' pacing as `lease` and `host_config` take it: `<mode>:<factor>:<max ms>`.
    fn pacing_arg(&self) -> Vec<u8> {
        let c = &self.config;
        format!(
            "{}:{}:{}",
            c.host_delay_after.as_str(),
            c.host_delay_factor,
            millis(c.host_delay_max)
        )
        .into_bytes()
    }

    pub fn decode_host_config(&self, reply: Reply, host: &str) -> Result<HostInfo> {
        let items = reply.array()?;
        expect_len(&items, 14, "host_config")?;
        let held = items[3].int()?;
        let paused = items[4].int()?;
        let budget = items[5].int()?;
        let own_limit = items[8].int()?;
        let override_now = items[11].int()?;
        Ok(HostInfo {
            host: host.to_string(),
            delay_override_ms: (override_now >= 0).then_some(override_now as u64),
            adaptive_extra_ms: items[1].uint()?,
            ready: items[2].uint()?,
            held_until_ms: (held >= 0).then_some(held),
            paused: paused >= 0,
            paused_until_ms: (paused > 0).then_some(paused),
            budget: (budget >= 0).then_some(budget as u64),
            budget_used: items[6].uint()?,
            deleting: items[7].int()? == 1,
            in_flight_limit: (own_limit >= 0).then_some(own_limit as u32),
            in_flight: items[9].uint()?,
            full: items[10].int()? == 1,
            delay_from_robots: items[12].int()? == 1,
            pacing: match items[13].text()? {
                own if own.is_empty() => None,
                own => Some(own.parse()?),
            },
        })
    }

    /// Set (`Some(Some(n))`), remove (`Some(None)`) or only read (`None`) the budget of one
    /// host, or with `host` `None` the queue's default budget.
    pub fn host_budget(&self, host: Option<&str>, budget: Option<Option<u64>>) -> ScriptCall {
        let mut call = self.call(&scripts::HOST_BUDGET, 2);
        call.args.push(host.unwrap_or("").as_bytes().to_vec());
        call.args.push(match budget {
            Some(Some(n)) => n.to_string().into_bytes(),
            Some(None) => Vec::new(),
            None => b"-".to_vec(),
        });
        call
    }

    /// The reply of [`Ops::host_budget`]: (own budget, default budget, used).
    pub fn decode_host_budget(&self, reply: Reply) -> Result<(Option<u64>, Option<u64>, u64)> {
        let items = reply.array()?;
        expect_len(&items, 3, "host_budget")?;
        let own = items[0].int()?;
        let default = items[1].int()?;
        Ok((
            (own >= 0).then_some(own as u64),
            (default >= 0).then_some(default as u64),
            items[2].uint()?,
        ))
    }

    /// A page of the shard's hosts by item count, from `offset`; `lane_budget` bounds the
    /// lanes read (at least one host is answered).
    pub fn hosts_list(&self, offset: u64, limit: usize, lane_budget: usize) -> ScriptCall {
        let mut call = self.call(&scripts::HOSTS_LIST, 3);
        call.args.push(offset.to_string().into_bytes());
        call.args.push(limit.to_string().into_bytes());
        call.args.push(lane_budget.to_string().into_bytes());
        call
    }

    /// Pages of hosts of this shard and of others of the same queue on the same node, in one
    /// call (docs/PROTOCOL.md section 9, "Readings"): `(ops, offset, limit)` per shard, this
    /// one's first; at most `hosts` hosts answered and `lanes` lanes read in all.
    pub fn hosts_list_shards(
        &self,
        hosts: usize,
        lanes: usize,
        pages: &[(&Ops, u64, usize)],
    ) -> ScriptCall {
        let mut call = self.call(&scripts::HOSTS_LIST_SHARDS, 2 + pages.len() * 3);
        call.args.push(hosts.to_string().into_bytes());
        call.args.push(lanes.to_string().into_bytes());
        for (n, (ops, offset, limit)) in pages.iter().enumerate() {
            if n > 0 {
                call.args.push(ops.keys.base().as_bytes().to_vec());
            }
            call.args.push(offset.to_string().into_bytes());
            call.args.push(limit.to_string().into_bytes());
        }
        call
    }

    /// The replies of [`Ops::hosts_list_shards`] for the first shards asked (at least one; at
    /// most `asked`: the budgets ran out before the others), in the order asked.
    pub fn decode_hosts_list_shards(
        &self,
        reply: Reply,
        asked: usize,
    ) -> Result<Vec<(u64, Vec<HostCounts>)>> {
        let replies = reply.array()?;
        expect_len(&replies, 1, "hosts_list_shards")?;
        if replies.len() > asked {
            return Err(Error::Protocol(format!(
                "hosts_list_shards answered {} shards, {asked} asked",
                replies.len()
            )));
        }
        replies
            .into_iter()
            .map(|r| self.decode_hosts_list(r))
            .collect()
    }

    /// The reply of [`Ops::hosts_list`]: the shard's host count and the page.
    pub fn decode_hosts_list(&self, reply: Reply) -> Result<(u64, Vec<HostCounts>)> {
        let items = reply.array()?;
        expect_len(&items, 2, "hosts_list")?;
        let total = items[1].uint()?;
        let mut hosts = Vec::new();
        for row in items[2..].chunks(7) {
            let [host, count, ready, delayed, dead, due, paused] = row else {
                return Err(Error::Protocol("hosts_list reply is not in sevens".into()));
            };
            let (count, ready, delayed, dead) =
                (count.uint()?, ready.uint()?, delayed.uint()?, dead.uint()?);
            let (due, paused) = (due.int()?, paused.int()?);
            hosts.push(HostCounts {
                host: host.text()?,
                items: count,
                ready,
                delayed,
                leased: count.saturating_sub(ready + delayed + dead),
                dead,
                next_due_ms: (due >= 0).then_some(due),
                paused: paused >= 0,
                paused_until_ms: (paused > 0).then_some(paused),
            });
        }
        Ok((total, hosts))
    }

    /// One bounded step of deleting a host (see `core/scripts/host_delete.lua`).
    /// With `identities`, the reply also names each removed item (for [`Ops::seen_forget`]).
    /// `deletion` names this deletion in each of its calls ([`Ops::deletion_id`]): a deletion
    /// of the same host begun meanwhile by another client is then the one that finishes.
    pub fn host_delete(
        &self,
        host: &str,
        step: &str,
        cursor: &str,
        limit: usize,
        identities: bool,
        deletion: &str,
    ) -> ScriptCall {
        let mut call = self.call(&scripts::HOST_DELETE, 6);
        call.args.push(host.as_bytes().to_vec());
        call.args.push(step.as_bytes().to_vec());
        call.args.push(cursor.as_bytes().to_vec());
        call.args.push(limit.to_string().into_bytes());
        call.args.push(if identities {
            b"1".to_vec()
        } else {
            b"0".to_vec()
        });
        call.args.push(deletion.as_bytes().to_vec());
        call
    }

    /// A name for one host deletion, unique to it in practice: the process's random hash keys,
    /// the monotonic clock and a per-process count (no random source is needed, so it works on
    /// wasm32 too).
    ///
    /// ```
    /// let (a, b) = (crawlq::ops::Ops::deletion_id(5), crawlq::ops::Ops::deletion_id(5));
    /// assert_ne!(a, b);
    /// ```
    pub fn deletion_id(monotonic_ms: u64) -> String {
        use std::hash::{BuildHasher, Hasher};
        static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        static KEYS: std::sync::OnceLock<std::collections::hash_map::RandomState> =
            std::sync::OnceLock::new();
        let mut h = KEYS.get_or_init(Default::default).build_hasher();
        h.write_u64(monotonic_ms);
        h.write_u64(COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        h.write_usize(&COUNT as *const _ as usize);
        format!("{:016x}", h.finish())
    }

    /// The reply of [`Ops::host_delete`]: the next step (`None`: done) and cursor, what this
    /// step removed (`left`: the host's items now) and, when asked, the removed items'
    /// identities.
    #[allow(clippy::type_complexity)]
    pub fn decode_host_delete(
        &self,
        reply: Reply,
    ) -> Result<(Option<(String, String)>, HostDeletion, Vec<String>)> {
        let items = reply.array()?;
        expect_len(&items, 7, "host_delete")?;
        let identities = items[7..]
            .iter()
            .map(Reply::text)
            .collect::<Result<Vec<_>>>()?;
        let step = items[0].text()?;
        let removed = HostDeletion {
            host: String::new(),
            ready: items[2].uint()?,
            delayed: items[3].uint()?,
            leased: items[4].uint()?,
            dead: items[5].uint()?,
            left: items[6].uint()?,
            forgotten: 0,
        };
        let next = (!step.is_empty()).then(|| items[1].text().map(|c| (step, c)));
        Ok((next.transpose()?, removed, identities))
    }

    /// Remove the fingerprints of these identities (keys, canonical URLs or host keys) from
    /// the seen set.
    pub fn seen_forget(&self, identities: &[String]) -> ScriptCall {
        let mut call = self.call(&scripts::SEEN_FORGET, identities.len() * 2);
        for identity in identities {
            let fp = normalize::Fingerprint::of(identity);
            call.args.push(fp.seen_member().to_string().into_bytes());
            call.args.push(fp.bucket_hash().to_string().into_bytes());
        }
        call
    }

    /// The heads of at most `limit` leasable hosts, skipping the first `offset`.
    pub fn peek(&self, limit: usize, offset: usize) -> ScriptCall {
        let mut call = self.call(&scripts::PEEK, 2);
        call.args.push(limit.to_string().into_bytes());
        call.args.push(offset.to_string().into_bytes());
        call
    }

    pub fn decode_peek(&self, reply: Reply) -> Result<Vec<StoredItem>> {
        reply
            .array()?
            .iter()
            .map(|r| {
                let bytes = r.data()?;
                Ok(wire::decode_record(bytes).unwrap_or_else(|_| wire::salvage_record(bytes)))
            })
            .collect()
    }

    /// The politeness key of a host or URL given by a user (for `set_host_delay`).
    /// The seed item of a crawl request: its URL, its payload ([`CrawlRequest::payload`]) and,
    /// unless it is a plain GET, its identity key ([`CrawlRequest::identity_key`], of the URL's
    /// canonical form under this queue's options). A URL that is not valid is left to the seed
    /// to refuse, with its index.
    ///
    /// ```
    /// let ops = crawlq::ops::Ops::new("q", crawlq::Config::default()).unwrap();
    /// let mut request = crawlq::CrawlRequest::get("HTTP://A.com/x");
    /// request.method = "POST".into();
    /// let item = ops.request_item(&request);
    /// assert_eq!(item.key, request.identity_key("http://a.com/x"));
    /// ```
    pub fn request_item(&self, request: &CrawlRequest) -> SeedItem {
        let key = normalize::normalize(&request.url).ok().and_then(|mut n| {
            if self.config.sort_query {
                n = n.with_sorted_query();
            }
            request.identity_key(&n.canonical)
        });
        SeedItem {
            input: request.url.clone(),
            payload: Some(request.payload()),
            key,
            ..SeedItem::default()
        }
    }

    pub fn host_key_of(&self, input: &str) -> Result<String> {
        let normalized = normalize::normalize(input).map_err(|reason| Error::InvalidItem {
            index: 0,
            input: input.to_string(),
            reason,
        })?;
        Ok(normalize::host_key(&normalized.host, self.config.host_key))
    }
}

/// `<token>:<id>` as the lease script answers it.
fn parse_lease_key(reply: &Reply) -> Result<(u64, String)> {
    let text = reply.text()?;
    text.split_once(':')
        .and_then(|(token, id)| Some((token.parse().ok()?, id.to_string())))
        .ok_or_else(|| bad_reply("a lease key <token>:<id>", reply))
}

fn millis(d: Duration) -> String {
    d.as_millis().to_string()
}
