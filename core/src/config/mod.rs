//! Queue options: their defaults, validation, and their names in each language style.
//!
//! Python and PHP spell options in snake_case with durations in seconds; JavaScript in
//! camelCase with durations in milliseconds (`leaseTtlMs`). The table lives here once, so an
//! unknown or mistyped option is the same error everywhere.

use crate::error::{Error, Result};
use crate::normalize::HostKeyMode;
use serde_json::{Map, Value};
use std::time::Duration;

mod options;
mod redis_url;
mod values;

use options::{Parsed, SPECS, name_in, parse_value, unknown_option};
pub use redis_url::{
    auth_refused, check_redis_url_scheme, handshake_refusal, not_redis_protocol, redacted_url,
    why_url_unread,
};
pub use values::*;

/// The largest in-flight limit per host (`host_in_flight`, `set_host_in_flight`).
pub const MAX_IN_FLIGHT: u32 = 1_000_000;

/// The largest delay factor (`host_delay_factor`, `set_host_delay_after`).
pub const MAX_DELAY_FACTOR: f64 = 1000.0;

/// When a host's politeness delay is counted from: the lease of its previous item (the
/// default) or that item's answer (ack, nack, release or expiry).
///
/// ```
/// use crawlq::DelayAfter;
/// assert_eq!(DelayAfter::parse("answer"), Some(DelayAfter::Answer));
/// assert_eq!(DelayAfter::Lease.as_str(), "lease");
/// assert_eq!(DelayAfter::parse("response"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DelayAfter {
    /// A host's next lease waits its delay after the previous lease.
    #[default]
    Lease,
    /// A host's next lease waits its delay (or the delay factor times how long the previous
    /// item was leased) after the previous item's answer; the host has one item in flight at
    /// a time unless its in-flight limit allows more.
    Answer,
}

impl DelayAfter {
    /// `"lease"` or `"answer"`.
    pub fn as_str(self) -> &'static str {
        match self {
            DelayAfter::Lease => "lease",
            DelayAfter::Answer => "answer",
        }
    }

    /// The mode a name spells (`"lease"`, `"answer"`), or `None`.
    pub fn parse(name: &str) -> Option<DelayAfter> {
        match name {
            "lease" => Some(DelayAfter::Lease),
            "answer" => Some(DelayAfter::Answer),
            _ => None,
        }
    }
}

/// The longest [`Config::answer_linger`]: a page's answer waits this long at most.
pub const MAX_ANSWER_LINGER: Duration = Duration::from_secs(1);

/// The longest duration any option or argument accepts (100 years): delays, lease times and
/// politeness delays beyond it are refused rather than overflowing a score.
pub const MAX_DURATION: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Naming and unit convention of a binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// snake_case names, durations and timestamps in seconds (Python, PHP).
    Snake,
    /// camelCase names, durations (suffix `Ms`) and timestamps in milliseconds (JavaScript).
    Camel,
}

/// How a retried item waits before it is leasable again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackoffKind {
    /// Always `base`.
    Fixed,
    /// `base * 2^(failures - 1)`, capped at `max`.
    Exponential,
}

/// Retry delay policy used by nack when no explicit delay is given.
///
/// ```
/// use crawlq::config::{Backoff, BackoffKind};
/// use std::time::Duration;
/// let b = Backoff { kind: BackoffKind::Exponential, base: Duration::from_secs(1),
///                   max: Duration::from_secs(60), jitter: 0.0 };
/// assert_eq!(b.delay(3, 0.0), Duration::from_secs(4));
/// assert_eq!(b.delay(10, 0.0), Duration::from_secs(60));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    pub kind: BackoffKind,
    pub base: Duration,
    pub max: Duration,
    /// Fraction (0..=1) of the delay that is randomly taken off, so retries of many items
    /// spread out.
    pub jitter: f64,
}

impl Backoff {
    /// The delay after `failures` failed attempts with a random number `random` in `[0, 1)`.
    /// The nack script computes the same; this mirror documents and tests the formula.
    pub fn delay(&self, failures: u32, random: f64) -> Duration {
        let base = self.base.as_millis() as f64;
        let mut d = match self.kind {
            BackoffKind::Fixed => base,
            BackoffKind::Exponential => base * 2f64.powi(failures.saturating_sub(1) as i32),
        };
        d = d.min(self.max.as_millis() as f64);
        Duration::from_millis((d * (1.0 - self.jitter * random)).floor() as u64)
    }
}

/// Options of a queue handle. Workers sharing a queue should use the same values: politeness
/// and retry decisions are taken with the options of the worker that makes them.
///
/// ```
/// use crawlq::config::{Config, Style};
/// let opts = serde_json::json!({"lease_ttl": 30, "max_attempts": 5});
/// let config = Config::from_options(opts.as_object().unwrap(), Style::Snake).unwrap();
/// assert_eq!(config.lease_ttl.as_secs(), 30);
/// let err = Config::from_options(serde_json::json!({"lease_tll": 1}).as_object().unwrap(), Style::Snake);
/// assert!(err.unwrap_err().to_string().contains("did you mean \"lease_ttl\""));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// How long a lease lasts before it may be reclaimed (default 120 s).
    pub lease_ttl: Duration,
    /// Deliveries before an item goes to dead letters (default 3).
    pub max_attempts: u32,
    /// Retry delay after a failed attempt (default exponential from 1 s, at most 300 s,
    /// jitter 0.1).
    pub backoff: Backoff,
    /// Default politeness delay between two leases of one host (default 0: plain priority
    /// FIFO). Per-host overrides set with `set_host_delay` are stored in Redis.
    pub host_delay: Duration,
    /// Default in-flight limit per host: the most items of one host leased at once, across
    /// every worker (default 0: no limit). A lease never takes more; an answer (ack, nack,
    /// release, expiry) or the host's deletion frees a slot and wakes blocked leases. Per-host
    /// limits set with `set_host_in_flight` are stored in Redis and come first. Workers sharing
    /// a queue should use the same value (like `host_delay`).
    pub host_in_flight: u32,
    /// When a host's delay is counted from (default [`DelayAfter::Lease`]); with
    /// [`DelayAfter::Answer`] a host's next lease waits its delay after the previous item's
    /// answer, and the host has at most `max(host_in_flight, 1)` items in flight. A host's own
    /// mode set with [`crate::Queue::set_host_delay_after`] comes first.
    pub host_delay_after: DelayAfter,
    /// After the answer, wait this many times how long the answered item was leased (its
    /// fetch time), when that is longer than the host's delay (default 0: the delay alone),
    /// at most `host_delay_max`; as Heritrix's `delay-factor`. 0..=1000.
    pub host_delay_factor: f64,
    /// The longest wait the delay factor gives (default 30 s; 0: no cap). Never shortens a
    /// host's own delay.
    pub host_delay_max: Duration,
    /// The longest host delay a robots.txt `Crawl-delay` sets
    /// ([`crate::Queue::set_host_crawl_delay`]; default 300 s, as Heritrix): a longer one is
    /// taken as this.
    pub crawl_delay_max: Duration,
    /// After an ack, queue the URL again this much later (default 0: never), for recrawls;
    /// [`crate::Queue::ack_revisit`] chooses per call.
    pub revisit_after: Duration,
    /// What a politeness key is: the host (default) or its registrable domain.
    pub host_key: HostKeyMode,
    /// Prefix of every key (default `crawlq`).
    pub key_prefix: String,
    /// Time allowed to establish a connection (default 5 s).
    pub connect_timeout: Duration,
    /// Time allowed for one command's reply (default 10 s). Blocking waits add their own wait.
    pub command_timeout: Duration,
    /// Largest serialized payload per item (default 16 KiB).
    pub max_payload_bytes: usize,
    /// Items per seed round trip (default 1000); sent as script calls of at most
    /// [`crate::SEED_PER_CALL`] each, so a large batch never holds Redis long.
    pub seed_batch: usize,
    /// Fingerprints this client keeps of URLs Redis confirmed seen, so that seeding one of
    /// them again answers "duplicate" without sending it (default 0: no cache). The bound is
    /// the client's, all shards of the queue together. Exact: the cache is dropped whenever the
    /// queue's seen set may have shrunk (a seen epoch every seed answers: a member forgotten,
    /// the queue made again, and the server restarted or replaced by a replica, which may have
    /// lost writes); a full cache drops the older half of what it holds, and a fingerprint
    /// met again is kept as new (a site's navigation stays while links met once go). An entry
    /// costs the process about 20-30 bytes (100,000 entries: about 2 MB). With the cache on,
    /// the client also keeps the canonical forms of up to
    /// [`crate::link_memo::LINK_MEMO_ENTRIES`] absolute links it met (about 2.5 MiB when
    /// full), so a link met again is not parsed again ([`crate::link_memo`]). Where
    /// scripts run by EVAL (a server without Redis Functions, a user refused them, a
    /// WebAssembly transport that runs scripts alone) the epoch cannot tell a restart, and the
    /// cache keeps nothing.
    pub seen_cache: usize,
    /// How long a page's answer ([`crate::Queue::ack_with_links_and_lease`] and the other
    /// page answers) may wait for the answers of other pages this client's tasks are about to
    /// send, so that they go to Redis in one call (default 0: a page goes at once when no call
    /// of the queue is on its way; pages answered meanwhile go together in the next call).
    /// Most of what a page's call costs Redis is done once per call whatever it carries: where
    /// pages come back from their fetches one by one (real fetch times), each otherwise goes
    /// alone and pays all of it. A few milliseconds make most pages go together (bench/README.md,
    /// "Pages that come back one by one") at that much more time per page; at most 1 s. On a
    /// queue of several shards a page whose links go to other shards waits it twice: once
    /// with the calls of those shards, then with its own. An executor without a timer
    /// ([`crate::queue::Executor::sleep`]) does not linger.
    pub answer_linger: Duration,
    /// Expired leases reclaimed at most per lease call (default 100; values above
    /// [`crate::RECLAIM_PER_CALL`] act as that).
    pub reclaim_batch: usize,
    /// First extra delay a rate-limited nack adds to its host (default 1 s); each further one
    /// doubles it.
    pub adaptive_delay_step: Duration,
    /// Cap of the adaptive extra delay (default 60 s).
    pub adaptive_delay_max: Duration,
    /// The longest a server's `Retry-After` ([`crate::NackOptions::retry_after`]) holds its
    /// host and the retried item (default 1 day; 0: no cap): a longer one, in seconds or as an
    /// HTTP-date, is taken as this, so a broken or hostile header (`Retry-After: 315360000`)
    /// cannot stop a host for years.
    pub retry_after_max: Duration,
    /// PEM file of the CA that signed the server's certificate, for `rediss://` with a private
    /// CA (default: the system's trust store).
    pub tls_ca_file: Option<String>,
    /// After each call that changes the queue, wait until this many replicas have the change
    /// (Redis `WAIT`; default 0: do not wait). A call whose change did not reach them within
    /// `replica_timeout` fails with [`Error::Timeout`]; the change is on the primary.
    pub min_replicas: u32,
    /// How long a call waits for `min_replicas` (default 1 s).
    pub replica_timeout: Duration,
    /// The named crawls this worker leases from (empty, the default: every crawl and the
    /// default crawl). As an option, a list of names or one string of them separated by
    /// spaces. A worker that names crawls leases only their items, looking at each crawl's
    /// hosts in turn (docs/crawls.md, "Workers that lease from chosen crawls").
    pub lease_crawls: Vec<String>,
    /// Shards the queue is split in, 1..=1024, by host (default: what the queue was created
    /// with, 1 for a new one). Fixed when the queue is created; opening it with another value
    /// is an [`Error::Config`]. Each shard has its own hash tag, so a Redis Cluster spreads them
    /// over its nodes.
    pub shards: Option<u32>,
    /// How often the leases this queue handed out and that are not answered yet are extended
    /// in the background, each to its lease time (default 0: never). For jobs that may run
    /// longer than `lease_ttl`; must be shorter than every lease time used (a third of it is
    /// a good choice). A job that never ends keeps its lease while its process lives.
    pub extend_every: Duration,
    /// Sort each URL's query parameters before it is compared and stored (default false), so
    /// `?a=1&b=2` and `?b=2&a=1` are one item, as Scrapy's duplicate filter and many crawl
    /// frontiers take them. Workers sharing a queue must use the same value (like `host_key`).
    pub sort_query: bool,
    /// Open the queue on a server that evicts any key when its memory is full (default false).
    /// A queue's items, leases and seen set must outlive memory pressure: a server whose
    /// `maxmemory-policy` is an `allkeys-*` one, with a `maxmemory` set, could drop them without
    /// a trace, so the queue's first call refuses such a server with an [`Error::Config`]
    /// (`noeviction`, the default, and the `volatile-*` policies are fine: the queue's lasting
    /// keys have no expiry). Set this only where losing queued URLs is acceptable.
    pub allow_eviction: bool,
    /// Test only: use this fixed time (ms since epoch) instead of the Redis server's clock.
    pub fixed_clock_ms: Option<i64>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            lease_ttl: Duration::from_secs(120),
            max_attempts: 3,
            backoff: Backoff {
                kind: BackoffKind::Exponential,
                base: Duration::from_secs(1),
                max: Duration::from_secs(300),
                jitter: 0.1,
            },
            host_delay: Duration::ZERO,
            host_in_flight: 0,
            host_delay_after: DelayAfter::Lease,
            host_delay_factor: 0.0,
            host_delay_max: Duration::from_secs(30),
            crawl_delay_max: Duration::from_secs(300),
            revisit_after: Duration::ZERO,
            host_key: HostKeyMode::Host,
            key_prefix: "crawlq".into(),
            connect_timeout: Duration::from_secs(5),
            command_timeout: Duration::from_secs(10),
            max_payload_bytes: 16 * 1024,
            seed_batch: 1000,
            seen_cache: 0,
            answer_linger: Duration::ZERO,
            reclaim_batch: 100,
            adaptive_delay_step: Duration::from_secs(1),
            adaptive_delay_max: Duration::from_secs(60),
            retry_after_max: Duration::from_secs(24 * 3600),
            tls_ca_file: None,
            min_replicas: 0,
            replica_timeout: Duration::from_secs(1),
            lease_crawls: Vec::new(),
            shards: None,
            extend_every: Duration::ZERO,
            sort_query: false,
            allow_eviction: false,
            fixed_clock_ms: None,
        }
    }
}

impl Config {
    /// Parse an options object spelled in `style`. `null` values keep the default; unknown
    /// names, wrong types and out-of-range values are [`Error::Config`].
    pub fn from_options(options: &Map<String, Value>, style: Style) -> Result<Config> {
        let mut config = Config::default();
        for (name, value) in options {
            if value.is_null() {
                continue;
            }
            let spec = SPECS
                .iter()
                .find(|s| name_in(s, style) == *name)
                .ok_or_else(|| unknown_option(name, style))?;
            let parsed = parse_value(spec, value, style)?;
            config.apply(spec.snake, parsed);
        }
        config.validate()?;
        Ok(config)
    }

    fn apply(&mut self, snake: &str, value: Parsed) {
        match (snake, value) {
            ("lease_ttl", Parsed::Duration(d)) => self.lease_ttl = d,
            ("max_attempts", Parsed::Count(n)) => self.max_attempts = n as u32,
            ("backoff", Parsed::Text(k)) => {
                self.backoff.kind = if k == "fixed" {
                    BackoffKind::Fixed
                } else {
                    BackoffKind::Exponential
                }
            }
            ("backoff_base", Parsed::Duration(d)) => self.backoff.base = d,
            ("backoff_max", Parsed::Duration(d)) => self.backoff.max = d,
            ("backoff_jitter", Parsed::Fraction(f)) => self.backoff.jitter = f,
            ("host_delay", Parsed::Duration(d)) => self.host_delay = d,
            ("host_in_flight", Parsed::Count(n)) => self.host_in_flight = n as u32,
            ("host_delay_after", Parsed::Text(m)) => {
                self.host_delay_after = DelayAfter::parse(&m).unwrap_or_default()
            }
            ("host_delay_factor", Parsed::Fraction(f)) => self.host_delay_factor = f,
            ("host_delay_max", Parsed::Duration(d)) => self.host_delay_max = d,
            ("crawl_delay_max", Parsed::Duration(d)) => self.crawl_delay_max = d,
            ("host_key", Parsed::Text(k)) => {
                self.host_key = if k == "domain" {
                    HostKeyMode::Domain
                } else {
                    HostKeyMode::Host
                }
            }
            ("key_prefix", Parsed::Text(p)) => self.key_prefix = p,
            ("connect_timeout", Parsed::Duration(d)) => self.connect_timeout = d,
            ("command_timeout", Parsed::Duration(d)) => self.command_timeout = d,
            ("max_payload_bytes", Parsed::Count(n)) => self.max_payload_bytes = n as usize,
            ("seed_batch", Parsed::Count(n)) => self.seed_batch = n as usize,
            ("seen_cache", Parsed::Count(n)) => self.seen_cache = n as usize,
            ("answer_linger", Parsed::Duration(d)) => self.answer_linger = d,
            ("reclaim_batch", Parsed::Count(n)) => self.reclaim_batch = n as usize,
            ("adaptive_delay_step", Parsed::Duration(d)) => self.adaptive_delay_step = d,
            ("adaptive_delay_max", Parsed::Duration(d)) => self.adaptive_delay_max = d,
            ("retry_after_max", Parsed::Duration(d)) => self.retry_after_max = d,
            ("tls_ca_file", Parsed::Text(p)) => self.tls_ca_file = Some(p),
            ("min_replicas", Parsed::Count(n)) => self.min_replicas = n as u32,
            ("replica_timeout", Parsed::Duration(d)) => self.replica_timeout = d,
            ("lease_crawls", Parsed::Names(names)) => self.lease_crawls = names,
            ("shards", Parsed::Count(n)) => self.shards = Some(n as u32),
            ("extend_every", Parsed::Duration(d)) => self.extend_every = d,
            ("revisit_after", Parsed::Duration(d)) => self.revisit_after = d,
            ("fixed_clock", Parsed::Timestamp(t)) => self.fixed_clock_ms = Some(t),
            ("sort_query", Parsed::Flag(on)) => self.sort_query = on,
            ("allow_eviction", Parsed::Flag(on)) => self.allow_eviction = on,
            (name, _) => unreachable!("option {name} parsed to the wrong kind"),
        }
    }

    /// Check cross-field and range rules (also run by [`Config::from_options`]).
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Config(m));
        if self.lease_ttl < Duration::from_millis(1) {
            return bad("lease_ttl must be at least 1 ms".into());
        }
        if self.max_attempts == 0 {
            return bad("max_attempts must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&self.backoff.jitter) {
            return bad(format!(
                "backoff_jitter must be within 0..=1, got {}",
                self.backoff.jitter
            ));
        }
        if self.backoff.max < self.backoff.base {
            return bad("backoff_max must not be smaller than backoff_base".into());
        }
        if self.adaptive_delay_max < self.adaptive_delay_step {
            return bad("adaptive_delay_max must not be smaller than adaptive_delay_step".into());
        }
        if self.command_timeout.is_zero() || self.connect_timeout.is_zero() {
            return bad("connect_timeout and command_timeout must be positive".into());
        }
        if self.shards.is_some_and(|s| !(1..=1024).contains(&s)) {
            return bad("shards must be within 1..=1024".into());
        }
        if !self.extend_every.is_zero() && self.extend_every >= self.lease_ttl {
            return bad(format!(
                "extend_every ({} ms) must be shorter than lease_ttl ({} ms), or the lease expires first",
                self.extend_every.as_millis(),
                self.lease_ttl.as_millis()
            ));
        }
        for name in &self.lease_crawls {
            crate::normalize::check_crawl(name)
                .map_err(|why| Error::Config(format!("lease_crawls: {why}")))?;
        }
        if self.answer_linger > MAX_ANSWER_LINGER {
            return bad(format!(
                "answer_linger must be at most 1 s (a page's answer waits that long for others), got {} ms",
                self.answer_linger.as_millis()
            ));
        }
        if self.min_replicas > 0 && self.replica_timeout.is_zero() {
            return bad("replica_timeout must be positive when min_replicas is set".into());
        }
        for (name, d) in [
            ("lease_ttl", self.lease_ttl),
            ("backoff_max", self.backoff.max),
            ("host_delay", self.host_delay),
            ("crawl_delay_max", self.crawl_delay_max),
            ("host_delay_max", self.host_delay_max),
            ("adaptive_delay_max", self.adaptive_delay_max),
            ("retry_after_max", self.retry_after_max),
            ("connect_timeout", self.connect_timeout),
            ("command_timeout", self.command_timeout),
            ("replica_timeout", self.replica_timeout),
            ("extend_every", self.extend_every),
            ("revisit_after", self.revisit_after),
        ] {
            if d > MAX_DURATION {
                return bad(format!("{name} must be at most 100 years"));
            }
        }
        if !(self.host_delay_factor.is_finite()
            && (0.0..=MAX_DELAY_FACTOR).contains(&self.host_delay_factor))
        {
            return bad(format!(
                "host_delay_factor must be within 0..=1000, got {}",
                self.host_delay_factor
            ));
        }
        if !(1..=10_000).contains(&self.seed_batch) || !(1..=10_000).contains(&self.reclaim_batch) {
            return bad("seed_batch and reclaim_batch must be within 1..=10000".into());
        }
        if self.host_key == HostKeyMode::Domain && !cfg!(feature = "registrable-domain") {
            return bad(
                "host_key \"domain\" needs the Public Suffix List, which this build leaves out \
                        (cargo feature registrable-domain)"
                    .into(),
            );
        }
        crate::keys::check_queue_name(&self.key_prefix, "q")?;
        Ok(())
    }

    /// Every option name in `style`, in documentation order. Each binding's type stubs and
    /// README list exactly these (a test checks them).
    pub fn option_names(style: Style) -> Vec<String> {
        SPECS.iter().map(|s| name_in(s, style)).collect()
    }

    /// These options as an object spelled in `style` (durations in its unit), every option of
    /// the table but the test-only `fixed_clock`; an unset one (`tls_ca_file`, `shards`) is
    /// null. `Config::default().to_options(style)` is the default of each, which framework
    /// adapters read instead of keeping defaults of their own.
    ///
    /// ```
    /// use crawlq::{Config, Style};
    /// let defaults = Config::default().to_options(Style::Camel);
    /// assert_eq!(defaults["leaseTtlMs"], 120_000);
    /// let parsed = Config::from_options(&Config::default().to_options(Style::Snake), Style::Snake).unwrap();
    /// assert_eq!(parsed.lease_ttl, Config::default().lease_ttl);
    /// ```
    pub fn to_options(&self, style: Style) -> Map<String, Value> {
        let duration = |d: Duration| match style {
            Style::Snake => Value::from(d.as_secs_f64()),
            Style::Camel => Value::from(d.as_millis() as u64),
        };
        let mut out = Map::new();
        for spec in SPECS {
            let value = match spec.snake {
                "lease_ttl" => duration(self.lease_ttl),
                "max_attempts" => Value::from(self.max_attempts),
                "backoff" => Value::from(match self.backoff.kind {
                    BackoffKind::Fixed => "fixed",
                    BackoffKind::Exponential => "exponential",
                }),
                "backoff_base" => duration(self.backoff.base),
                "backoff_max" => duration(self.backoff.max),
                "backoff_jitter" => Value::from(self.backoff.jitter),
                "host_delay" => duration(self.host_delay),
                "host_in_flight" => Value::from(self.host_in_flight),
                "host_delay_after" => Value::from(self.host_delay_after.as_str()),
                "host_delay_factor" => Value::from(self.host_delay_factor),
                "host_delay_max" => duration(self.host_delay_max),
                "crawl_delay_max" => duration(self.crawl_delay_max),
                "host_key" => Value::from(match self.host_key {
                    HostKeyMode::Host => "host",
                    HostKeyMode::Domain => "domain",
                }),
                "key_prefix" => Value::from(self.key_prefix.clone()),
                "connect_timeout" => duration(self.connect_timeout),
                "command_timeout" => duration(self.command_timeout),
                "max_payload_bytes" => Value::from(self.max_payload_bytes),
                "seed_batch" => Value::from(self.seed_batch),
                "seen_cache" => Value::from(self.seen_cache),
                "answer_linger" => duration(self.answer_linger),
                "reclaim_batch" => Value::from(self.reclaim_batch),
                "adaptive_delay_step" => duration(self.adaptive_delay_step),
                "adaptive_delay_max" => duration(self.adaptive_delay_max),
                "retry_after_max" => duration(self.retry_after_max),
                "tls_ca_file" => self.tls_ca_file.clone().map_or(Value::Null, Value::from),
                "min_replicas" => Value::from(self.min_replicas),
                "replica_timeout" => duration(self.replica_timeout),
                "lease_crawls" => {
                    if self.lease_crawls.is_empty() {
                        Value::Null
                    } else {
                        Value::from(self.lease_crawls.join(" "))
                    }
                }
                "shards" => self.shards.map_or(Value::Null, Value::from),
                "extend_every" => duration(self.extend_every),
                "revisit_after" => duration(self.revisit_after),
                "sort_query" => Value::from(self.sort_query),
                "allow_eviction" => Value::from(self.allow_eviction),
                "fixed_clock" => continue,
                other => unreachable!("option {other} has no value here"),
            };
            out.insert(name_in(spec, style), value);
        }
        out
    }
    /// The options a framework adapter (Scrapy, Crawlee, Laravel) opens its queue with: the
    /// caller's `options` spelled in `style`, checked, plus `extend_every` at a third of the
    /// lease time and `seen_cache` at [`ADAPTER_SEEN_CACHE`] entries when they do not set
    /// them. A framework holds a lease for as long as its request runs, so every adapter keeps
    /// it alive through the core's extender, with this one rule, instead of a timer and
    /// defaults of its own; and a crawler's pages link mostly to pages seen before, which the
    /// known-seen cache answers without sending them (exact: see [`Config::seen_cache`]). An
    /// explicit value (0 included: none) is kept.
    ///
    /// ```
    /// use crawlq::{Config, Style};
    /// use serde_json::json;
    /// let options = json!({"leaseTtlMs": 30_000});
    /// let adapter = Config::framework_options(options.as_object().unwrap(), Style::Camel).unwrap();
    /// assert_eq!(adapter["extendEveryMs"], 10_000);
    /// assert_eq!(adapter["seenCache"], crawlq::config::ADAPTER_SEEN_CACHE);
    /// assert_eq!(adapter["leaseTtlMs"], 30_000);
    /// let bad = json!({"leaseTtlMs": 0});
    /// assert!(Config::framework_options(bad.as_object().unwrap(), Style::Camel).is_err());
    /// ```
    pub fn framework_options(
        options: &Map<String, Value>,
        style: Style,
    ) -> Result<Map<String, Value>> {
        let config = Config::from_options(options, style)?;
        let mut out = options.clone();
        let spec = SPECS
            .iter()
            .find(|s| s.snake == "extend_every")
            .expect("extend_every is an option");
        let name = name_in(spec, style);
        if out.get(&name).is_none_or(Value::is_null) {
            let every = config.lease_ttl / 3;
            let value = match style {
                Style::Snake => Value::from(every.as_secs_f64()),
                Style::Camel => Value::from(every.as_millis() as u64),
            };
            out.insert(name, value);
        }
        let name = crate::binding::json::field_name("seen_cache", false, style);
        if out.get(&name).is_none_or(Value::is_null) {
            out.insert(name, Value::from(ADAPTER_SEEN_CACHE));
        }
        Ok(out)
    }
}

/// The known-seen cache of a framework adapter's queue unless its options set one
/// ([`Config::framework_options`]): 100,000 fingerprints per shard, about 2 MB each.
pub const ADAPTER_SEEN_CACHE: usize = 100_000;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value, style: Style) -> Result<Config> {
        Config::from_options(v.as_object().unwrap(), style)
    }

    #[test]
    fn both_styles_reach_the_same_config() {
        let a = parse(
            json!({"lease_ttl": 2.5, "host_delay": 0.25, "backoff": "fixed"}),
            Style::Snake,
        )
        .unwrap();
        let b = parse(
            json!({"leaseTtlMs": 2500, "hostDelayMs": 250, "backoff": "fixed"}),
            Style::Camel,
        )
        .unwrap();
        assert_eq!(a, b);
        assert_eq!(a.lease_ttl, Duration::from_millis(2500));
    }

    #[test]
    fn lease_crawls_is_a_string_of_names_or_a_list_of_them() {
        for v in [
            json!({"lease_crawls": "news  shop"}),
            json!({"lease_crawls": ["news", "shop"]}),
        ] {
            assert_eq!(
                parse(v.clone(), Style::Snake).unwrap().lease_crawls,
                ["news", "shop"],
                "{v}"
            );
        }
        let camel = parse(json!({"leaseCrawls": ["news"]}), Style::Camel).unwrap();
        assert_eq!(camel.lease_crawls, ["news"]);
        // (an empty string or list: every crawl, as without the option)
        for v in [json!({"lease_crawls": ""}), json!({"lease_crawls": []})] {
            assert!(
                parse(v.clone(), Style::Snake)
                    .unwrap()
                    .lease_crawls
                    .is_empty(),
                "{v}"
            );
        }
        let spaced = parse(json!({"lease_crawls": ["a", "b c"]}), Style::Snake).unwrap_err();
        assert!(
            spaced
                .to_string()
                .contains("got \"b c\" in [\"a\",\"b c\"]"),
            "{spaced}"
        );
    }

    #[test]
    fn bad_options_are_config_errors() {
        for (v, style) in [
            (json!({"leaseTtlMs": 5}), Style::Snake),
            (json!({"lease_ttl": "5"}), Style::Snake),
            (json!({"max_attempts": 0}), Style::Snake),
            (json!({"backoffJitter": 2}), Style::Camel),
            (json!({"hostKey": "tld"}), Style::Camel),
            (json!({"key_prefix": "a{b"}), Style::Snake),
            (json!({"backoff_base": 10, "backoff_max": 1}), Style::Snake),
            (json!({"lease_crawls": 7}), Style::Snake),
            (json!({"leaseCrawls": ["a", "b c"]}), Style::Camel),
            (json!({"lease_crawls": ["a", ""]}), Style::Snake),
            (json!({"lease_crawls": ["a", 1]}), Style::Snake),
            (json!({"lease_crawls": ["a:b"]}), Style::Snake),
        ] {
            assert!(
                matches!(parse(v.clone(), style), Err(Error::Config(_))),
                "{v}"
            );
        }
    }
}
