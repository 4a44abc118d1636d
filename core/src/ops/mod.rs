//! Sans-IO operations: each builds one script call ([`ScriptCall`]) and decodes its reply
//! ([`Reply`]). Any transport that can run FCALL or EVALSHA/EVAL can drive a queue with these;
//! the native client ([`crate::redis_exec`], functions first) and the WebAssembly build
//! (scripts) both do. The calls are grouped by domain in the submodules (seed, lease, answer,
//! dead letters, hosts, admin), each an `impl Ops` block; the shared types are here.

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

mod admin;
mod answer;
mod dead;
mod hosts;
mod lease;
mod seed;

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
    /// (shared with the link memo, [`crate::link_memo`], as is `url`)
    pub host: Arc<str>,
    pub priority: i16,
    pub delay_ms: u64,
    pub force: bool,
    /// Its canonical URL (`None`: a host item), its caller key and its payload as canonical
    /// JSON: its live member and its record are made of them only when it is sent
    /// ([`PreparedItem::live`], [`PreparedItem::tail`]), not for the links the known-seen
    /// cache answers.
    pub url: Option<Arc<str>>,
    pub key: Option<String>,
    pub payload: Option<String>,
    /// The named crawl the item is seeded into (`None`: the default crawl); the same for every
    /// item of a call.
    pub crawl: Option<std::sync::Arc<str>>,
}

impl PreparedItem {
    /// The item's member in the live set (queued or leased items).
    pub fn live(&self) -> LiveMember {
        let identity = self.key.as_deref().or(self.url.as_deref());
        LiveMember::of(&normalize::scoped_identity(
            self.crawl.as_deref(),
            identity.unwrap_or(&self.host),
        ))
    }

    /// The record after its `ts`: see [`crate::wire::record_after_ts`].
    pub fn tail(&self) -> String {
        let crawl = self.crawl.as_deref();
        let (url, key) = (self.url.as_deref(), self.key.as_deref());
        let payload = self.payload.as_deref();
        let mut tail =
            wire::record_after_ts(&self.host, self.priority, 0, crawl, url, key, None, payload);
        if let Some(crawl) = crawl {
            // the item's tag, given by the script, goes after the crawl: a NUL byte marks its
            // place (docs/PROTOCOL.md, `seed`); the first `"crawl"` is the field, as nothing
            // before it holds a quote
            let field = format!(r#","crawl":"{crawl}""#);
            let at = tail.find(&field).expect("the tail has its crawl") + field.len();
            tail.insert_str(at, ",\"tag\":\0");
        }
        tail
    }
}

/// A seed call's batch options, checked once ([`Ops::seed_defaults`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SeedDefaults {
    priority: i16,
    /// The batch payload as canonical JSON (`Some(None)`: an explicit null).
    payload: Option<Option<String>>,
    /// The batch's crawl, checked ([`crate::normalize::check_crawl`]).
    crawl: Option<std::sync::Arc<str>>,
    /// The URL of the page whose links these are: they resolve against it
    /// ([`crate::normalize::normalize_link`]).
    page: Option<url::Url>,
}

impl SeedDefaults {
    /// These defaults for the links found on the page at `page_url` (a lease's URL; `None`
    /// for a host item, whose links are inputs as `seed` takes them).
    pub fn for_page(self, page_url: Option<&str>) -> SeedDefaults {
        SeedDefaults {
            page: page_url.and_then(|u| url::Url::parse(u).ok()),
            ..self
        }
    }
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
    /// The canonical forms of absolute links met before (on with the known-seen cache).
    links: crate::link_memo::LinkMemo,
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
        let links = crate::link_memo::LinkMemo::new(
            config.seen_cache.min(crate::link_memo::LINK_MEMO_ENTRIES),
        );
        Ops {
            keys,
            config,
            state,
            reporting: false,
            shard: 0,
            split: 1,
            links,
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
                | "pause" | "host_config" | "crawl_config" | "crawl_delete" => {
                    Some(ReportKind::Lower)
                }
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
    /// the queue's own base. With `check_eviction` the call first refuses a server that may
    /// evict the queue's keys ([`crate::Config::allow_eviction`]).
    pub fn shards(&self, asked: u32, check_eviction: bool) -> ScriptCall {
        let mut call = self.call(&scripts::SHARDS, 2);
        call.args.push(asked.to_string().into_bytes());
        if check_eviction {
            call.args.push(b"1".to_vec());
        }
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
