//! The queue client: every operation over any [`Executor`] (the native Redis client, or a
//! JavaScript transport in the WebAssembly build). Chunking, shard routing, the blocking wait
//! and the per-lease bookkeeping live here once. The operations are grouped by domain in the
//! submodules (seed, lease, answer, dead letters, hosts, admin), each an `impl Queue` block.

use crate::binding::held::HeldLeases;
use crate::config::{Config, DelayAfter};
use crate::error::{Error, InvalidReason, Result};
use crate::model::*;
use crate::model::{AnswerResults, Answers};
use crate::ops::{
    CallState, DuePick, LeaseBatch, Ops, PreparedItem, Reply, ReportKind, ScriptCall, SeedOutcome,
    Seeded, ShardReport, split_report,
};
use crate::request::CrawlRequest;
use crate::shards::{Layout, Part, ShardTags, reassemble};
use crate::wire::StoredItem;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::Poll;
use std::time::Duration;

mod admin;
mod answer;
mod dead;
mod hosts;
mod lease;
mod pages;
mod seed;
mod stop;

pub use stop::{Interrupt, StopSignal};

/// `Send` on native targets, nothing on wasm32 (where JavaScript futures are not `Send`).
#[cfg(not(target_family = "wasm"))]
pub trait MaybeSend: Send {}
#[cfg(not(target_family = "wasm"))]
impl<T: Send> MaybeSend for T {}
/// `Send` on native targets, nothing on wasm32 (where JavaScript futures are not `Send`).
#[cfg(target_family = "wasm")]
pub trait MaybeSend {}
#[cfg(target_family = "wasm")]
impl<T> MaybeSend for T {}

/// What a transport must provide: run one script call, and block on the wake key.
pub trait Executor {
    /// Run one operation: as a function (FCALL of [`crate::scripts::Script::function_name`],
    /// loading [`crate::scripts::library`] when the server does not have it), or as a script
    /// (EVALSHA with the call's SHA-1, falling back to EVAL with the source on NOSCRIPT). Both
    /// give the same result (docs/PROTOCOL.md, section 4).
    fn eval(&self, call: ScriptCall) -> impl Future<Output = Result<Reply>> + MaybeSend;

    /// Wait up to `timeout` for a marker on the list `key` (BLPOP on a connection of its own:
    /// a blocking command would stall every other command sharing its connection). Returns
    /// whether a marker was taken.
    fn wait(&self, key: &str, timeout: Duration) -> impl Future<Output = Result<bool>> + MaybeSend;

    /// Milliseconds on a local monotonic clock; only differences are used, to bound waits and to
    /// tell when a held lease expires. Readings of two executors of one process must compare.
    fn monotonic_ms(&self) -> u64;

    /// Whether calls go to a Redis Cluster (scripts then check their slot is not being
    /// migrated before they write).
    fn in_cluster(&self) -> bool {
        false
    }

    /// Which of `keys` (shards' meta keys) one script call may read together: a group number per
    /// key, the keys of one group being served by one node (docs/PROTOCOL.md section 9,
    /// "Readings"). The default: one group off a cluster, each key alone in one.
    ///
    /// ```
    /// # use crawlq::queue::Executor;
    /// # async fn demo(exec: impl Executor) {
    /// let keys = ["crawlq:{a}:meta".to_string(), "crawlq:{b}:meta".to_string()];
    /// let groups = exec.node_groups(&keys).await;
    /// assert_eq!(groups.len(), 2);
    /// # }
    /// ```
    fn node_groups(&self, keys: &[String]) -> impl Future<Output = Vec<usize>> + MaybeSend {
        let groups = if self.in_cluster() {
            (0..keys.len()).collect()
        } else {
            vec![0; keys.len()]
        };
        std::future::ready(groups)
    }

    /// Wait `duration` without holding a thread: how a page's answer lingers for others
    /// ([`Config::answer_linger`]). The default does not wait, so an executor without a
    /// timer sends each page's call at once, as with no linger.
    ///
    /// ```
    /// # use crawlq::queue::Executor;
    /// # use std::time::Duration;
    /// # async fn demo(exec: impl Executor) {
    /// exec.sleep(Duration::from_millis(2)).await; // other pages' answers may join meanwhile
    /// # }
    /// ```
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + MaybeSend {
        let _ = duration;
        std::future::ready(())
    }

    /// Let the runtime run its other ready tasks before the calling task goes on. A seed calls
    /// it after handing a chunk to [`Executor::eval`] and before normalizing the next one: a
    /// connection whose writer is a task of its own (the `redis` crate's) has then sent the
    /// chunk, and Redis runs it while the client works. Without it, a task that woke the
    /// writer on a tokio worker keeps its thread until it next waits, and the writer waits
    /// with it (a task woken that way sits in a slot other workers do not take from); on a
    /// current-thread runtime nothing else runs at all. The default wakes the task and returns
    /// pending once, which any executor schedules.
    ///
    /// ```
    /// # use crawlq::queue::Executor;
    /// # async fn demo(exec: impl Executor) {
    /// exec.yield_now().await; // the connection's writer has had its turn
    /// # }
    /// ```
    fn yield_now(&self) -> impl Future<Output = ()> + MaybeSend {
        let mut yielded = false;
        std::future::poll_fn(move |cx| {
            if yielded {
                Poll::Ready(())
            } else {
                yielded = true;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        })
    }
}

/// Several queues can share one executor (one connection per process, as PHP workers want).
impl<E: Executor + Sync> Executor for std::sync::Arc<E> {
    fn eval(&self, call: ScriptCall) -> impl Future<Output = Result<Reply>> + MaybeSend {
        (**self).eval(call)
    }

    fn wait(&self, key: &str, timeout: Duration) -> impl Future<Output = Result<bool>> + MaybeSend {
        (**self).wait(key, timeout)
    }

    fn monotonic_ms(&self) -> u64 {
        (**self).monotonic_ms()
    }

    fn in_cluster(&self) -> bool {
        (**self).in_cluster()
    }

    fn node_groups(&self, keys: &[String]) -> impl Future<Output = Vec<usize>> + MaybeSend {
        (**self).node_groups(keys)
    }

    fn yield_now(&self) -> impl Future<Output = ()> + MaybeSend {
        (**self).yield_now()
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + MaybeSend {
        (**self).sleep(duration)
    }
}

/// How to lease.
///
/// ```
/// let opts = crawlq::LeaseOptions { max: 100, ..Default::default() };
/// assert_eq!(opts.wait, std::time::Duration::from_secs(5));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseOptions {
    /// Most items returned (1..=10000).
    pub max: usize,
    /// How long to wait when nothing is ready (zero: answer at once).
    pub wait: Duration,
    /// Lease time of these leases (default: the queue's `lease_ttl`).
    pub ttl: Option<Duration>,
}

impl Default for LeaseOptions {
    fn default() -> LeaseOptions {
        LeaseOptions {
            max: 1,
            wait: Duration::from_secs(5),
            ttl: None,
        }
    }
}

// Work per script call is bounded so that no call holds Redis (single-threaded: every other
// client waits) for long; larger requests are split into several calls by the client. The
// figures keep each call under about 25 ms on a slow 2-vCPU machine (bench/README.md, "Longest
// single call").
/// Largest number of leases sent in one ack/nack/extend/release call.
const LEASES_PER_CALL: usize = 500;
/// Largest number of items seeded by one call (a `seed_batch` chunk is split into calls of at
/// most this many, sent together).
pub const SEED_PER_CALL: usize = 250;
/// Largest number of items one lease call hands out.
pub const LEASE_PER_CALL: usize = 250;
/// Largest number of due delayed items (and of due held hosts) one lease call promotes: a
/// promoted item is queued again in its lane, about as much work as taking back an expired
/// lease. As many as a call hands out, so a call that promotes due items can lease them all.
pub const PROMOTE_PER_CALL: usize = LEASE_PER_CALL;
/// Largest number of expired leases one call takes back (`reclaim`, and the bounded recovery
/// at the start of every lease call): each goes back to its lane or to dead letters, about ten
/// commands.
pub const RECLAIM_PER_CALL: usize = 250;
/// Dead letters requeued per call by `requeue_dead`.
const REQUEUE_PER_CALL: usize = 125;
/// Dead letters removed per call by `purge_dead`: each leaves its host's counts.
const PURGE_PER_CALL: usize = 500;
/// Hosts whose head one `peek` call reads.
const PEEK_PER_CALL: usize = 250;
/// Dead letters one call of a `dead` listing reads.
const DEAD_LIST_PER_CALL: usize = 500;
/// Leases per `leased_list` call (each reads its record).
const LEASED_LIST_PER_CALL: usize = 500;
/// The longest blocking wait a lease call accepts.
const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);
/// How often [`Queue::wait_host_turn`] asks again for a host at its in-flight limit or paused.
const HOST_TURN_POLL: Duration = Duration::from_millis(200);

/// With several shards: how often (for the whole queue, whichever client's lease call comes
/// first) every shard's state is read again into the queue's index, so work a client seeded
/// and then died before reporting is found within this long (docs/PROTOCOL.md section 9).
pub const SWEEP_EVERY: Duration = Duration::from_secs(5);
/// With several shards: how long a lease call reuses the index's last answer while the shards
/// it named keep handing out leases, so a worker draining a busy shard asks the index about
/// once per this long, not once per lease; work that came due in other shards meanwhile waits
/// at most this long for it (a blocked lease is woken at once).
const VIEW_FOR: u64 = 100;
/// How long [`Queue::lease_interruptible`] blocks at a time: how quickly it notices a stop
/// request (Ctrl-C, an `AbortSignal`, a closed iterator).
pub const WAIT_SLICE: Duration = Duration::from_millis(250);

/// A crawl frontier in Redis: one queue, split in shards by host when it was created with
/// `shards` > 1 (each shard in a Redis Cluster slot of its own). Every operation routes to the
/// shards it concerns and puts their answers back together; callers see one queue.
///
/// ```no_run
/// # async fn demo() -> crawlq::Result<()> {
/// use crawlq::{Queue, SeedOptions, NackOptions};
/// let q = Queue::connect("redis://127.0.0.1:6379/0", "frontier", Default::default()).await?;
/// q.seed(&["https://example.com/".into()], &SeedOptions::default()).await?;
/// for lease in q.lease(10, std::time::Duration::from_secs(5)).await? {
///     match lease.url.as_deref() {
///         Some(_url) => { q.ack(&[lease.handle()]).await?; }
///         None => { q.nack(&[(lease.handle(), NackOptions::default())]).await?; }
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Queue<E> {
    name: String,
    config: Config,
    /// The queue's own base `<prefix>:{<queue>}`: where its shard count is kept and, with
    /// several shards, the wake list of all of them. The only shard of a one-shard queue.
    home: Ops,
    /// The shards, learnt from Redis on first use ([`Queue::layout`]).
    layout: OnceLock<Layout>,
    /// Set by [`Queue::remove_queue`], and by an addition after a seed reply whose seen epoch
    /// moved ([`crate::shards::EpochWatch`]): the queue's home, where its shard count is kept,
    /// is read (or, by a client that asks for a count or adds items, written) again before the
    /// layout is used.
    recheck_home: AtomicBool,
    /// The seen epochs of the shards' seed replies.
    epochs: crate::shards::EpochWatch,
    state: Arc<CallState>,
    exec: E,
    jitter_nonce: AtomicU64,
    /// Where the next lease call starts, so no shard is starved.
    next_shard: AtomicUsize,
    /// Leases handed out and not answered yet ([`Queue::extend_held`], [`Queue::release_held`]).
    held: Arc<HeldLeases>,
    /// With several shards: shard reports not yet sent to the queue's index (docs/PROTOCOL.md
    /// section 9, "Index"); sent by the call that made them, kept for the next one when that
    /// failed.
    reports: std::sync::Mutex<Vec<ShardReport>>,
    /// With several shards: the index's last answer and when it came (monotonic ms), reused
    /// for [`VIEW_FOR`] while its shards keep handing out leases.
    view: std::sync::Mutex<Option<(u64, DuePick)>>,
    /// The known-seen cache ([`Config::seen_cache`]; off at 0).
    seen: crate::seen_cache::SeenCache,
    /// Pages answered while a call carrying pages is on its way: sent together next
    /// (`pages.rs`).
    pages: pages::PageLines,
    /// Given by [`Queue::close`]: the waits of the lease calls under way end, and later ones
    /// lease nothing.
    closing: StopSignal,
}

impl<E: Executor> Queue<E> {
    /// A queue named `name` over an executor. No I/O: the shard count is read (or, for a new
    /// queue, fixed) by the first call.
    pub fn with_executor(exec: E, name: &str, config: Config) -> Result<Queue<E>> {
        config.validate()?;
        let state = CallState::new(config.fixed_clock_ms);
        state.set_cluster(exec.in_cluster());
        let home = Ops::with_keys(
            crate::keys::Keys::new(&config.key_prefix, name)?,
            config.clone(),
            state.clone(),
        );
        Ok(Queue {
            name: name.to_string(),
            seen: crate::seen_cache::SeenCache::new(config.seen_cache),
            config,
            home,
            layout: OnceLock::new(),
            recheck_home: AtomicBool::new(false),
            epochs: crate::shards::EpochWatch::default(),
            state,
            exec,
            jitter_nonce: AtomicU64::new(0),
            next_shard: AtomicUsize::new(0),
            held: Arc::default(),
            reports: std::sync::Mutex::default(),
            view: std::sync::Mutex::default(),
            pages: pages::PageLines::default(),
            closing: StopSignal::new(),
        })
    }

    /// Close the queue for leasing, to shut a worker down: every lease call waiting on it now
    /// (a `lease`, an `ack_and_lease`, a page answered with the next lease, a worker loop's
    /// fetch) returns at once with no leases, worker loops end, a lease call made later
    /// leases nothing (its answers still stand: an `ack_and_lease` acks), and the background
    /// extender of its held leases stops. A script call under way finishes first and its
    /// leases are returned, as for a [`StopSignal`]. Answers and every other operation keep
    /// working, so a worker can still answer what it holds (the bindings' `close()` call
    /// this, and then let go of the connection or not, as each says).
    ///
    /// ```no_run
    /// # async fn demo(q: std::sync::Arc<crawlq::Queue<crawlq::RedisExecutor>>) -> crawlq::Result<()> {
    /// use std::time::Duration;
    /// let worker = q.clone();
    /// let waiting = tokio::spawn(async move { worker.lease(1, Duration::from_secs(60)).await });
    /// q.close(); // the lease call above returns at once, with no leases
    /// assert!(waiting.await.unwrap()?.is_empty());
    /// assert!(q.is_closed() && q.lease(1, Duration::ZERO).await?.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn close(&self) {
        self.closing.stop();
        self.held.close();
    }

    /// Whether [`Queue::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.closing.is_stopped()
    }

    /// Whether a lease call listening to `until` stops waiting: given, or the queue closed.
    pub(crate) fn stop_given(&self, until: Option<&StopSignal>) -> bool {
        self.is_closed() || until.is_some_and(StopSignal::is_stopped)
    }

    /// This queue keeping its held leases in `held`, another queue's: a binding that extends
    /// leases from a thread of its own opens a second queue (its own connection) over the same
    /// bookkeeping.
    pub fn with_held(mut self, held: Arc<HeldLeases>) -> Queue<E> {
        self.held = held;
        self
    }

    /// The leases this queue handed out and that were not answered through it yet.
    pub fn held(&self) -> &Arc<HeldLeases> {
        &self.held
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The counters of this queue's known-seen cache ([`Config::seen_cache`]): entries held,
    /// links answered from it (hits) and sent (misses), links sent again after the seen epoch
    /// changed under their hit, and resets.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let s = q.seen_cache_stats();
    /// println!("{} links answered from the cache, {} sent", s.hits, s.misses);
    /// # Ok(()) }
    /// ```
    pub fn seen_cache_stats(&self) -> crate::seen_cache::SeenCacheStats {
        self.seen.stats()
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The sans-IO operations on the queue's own base (`<prefix>:{<queue>}`; the only shard of
    /// a one-shard queue).
    pub fn ops(&self) -> &Ops {
        &self.home
    }

    pub fn executor(&self) -> &E {
        &self.exec
    }

    /// Test only: pin the scripts' clock (ms since epoch), or return to the server's clock.
    pub fn set_fixed_clock(&self, ms: Option<i64>) {
        self.state.set_fixed_clock(ms);
    }

    /// The queue's shards: read from Redis on first use, or fixed there for a new queue (to
    /// `config.shards`, else 1). A queue created with another count than `config.shards` is an
    /// [`Error::Config`].
    pub async fn layout(&self) -> Result<&Layout> {
        self.layout_as(false).await
    }

    /// [`Queue::layout`] for a call that adds items (a seed, a page's links): after
    /// [`Queue::remove_queue`] this client writes its shard count back in the queue's home
    /// whether it asked for one or not, so the items it adds to its shards are found by every
    /// client.
    pub(crate) async fn layout_to_add(&self) -> Result<&Layout> {
        self.layout_as(true).await
    }

    async fn layout_as(&self, adding: bool) -> Result<&Layout> {
        if let Some(layout) = self.layout.get() {
            // (the home may have lost its count with the writes the epoch says were lost; the
            // `shards` script writes spread tags, so a queue of protocol 4's numbered tags is
            // left as it is)
            if adding && self.epochs.take_moved() && layout.tags() == ShardTags::Spread {
                self.recheck_home.store(true, Ordering::Release);
            }
            if self.recheck_home.load(Ordering::Acquire) {
                return self.make_again(layout, adding).await;
            }
            return Ok(layout);
        }
        let asked = self.config.shards.unwrap_or(0);
        // (the first call of this client: whether the server may evict the queue's keys is
        // checked here, once, on every node that holds a shard)
        let check_eviction = !self.config.allow_eviction;
        // (a new queue of several shards on a cluster: its count is written only once every
        // node it spreads over passed the check, so a refused open writes nothing)
        let check_first = check_eviction && asked > 1 && self.exec.in_cluster();
        let first_asked = if check_first { 0 } else { asked };
        let reply = self
            .exec
            .eval(self.home.shards(first_asked, check_eviction))
            .await?;
        let (mut stored, mut tags) = self.home.decode_shards(reply)?;
        let mut checked_elsewhere = None;
        if check_first && stored == 0 {
            // (a new queue of several shards gets the spread tags: the `shards` script)
            let planned = Layout::new(
                &self.name,
                &self.config,
                asked,
                ShardTags::Spread,
                &self.state,
            )?;
            self.check_eviction_elsewhere(&planned).await?;
            checked_elsewhere = Some((asked, ShardTags::Spread));
            let reply = self.exec.eval(self.home.shards(asked, false)).await?;
            (stored, tags) = self.home.decode_shards(reply)?;
        }
        let count = match (self.config.shards, stored) {
            (Some(asked), stored) if stored != 0 && stored != asked => {
                return Err(Error::Config(format!(
                    "queue {:?} has {stored} shards; this client asks for {asked} (leave \
                     `shards` unset to use the queue's)",
                    self.name
                )));
            }
            (_, 0) => 1,
            (_, stored) => stored,
        };
        let layout = Layout::new(&self.name, &self.config, count, tags, &self.state)?;
        if check_eviction && count > 1 && checked_elsewhere != Some((count, tags)) {
            self.check_eviction_elsewhere(&layout).await?;
        }
        Ok(self.layout.get_or_init(|| layout))
    }

    /// Whether the Redis server holding the queue may evict its keys when its memory is full
    /// (on a Redis Cluster, every master holding one of its shards): an [`Error::Config`]
    /// naming the policy when one may, the check a client's first call makes to refuse such a
    /// server unless [`crate::Config::allow_eviction`] is set. It only reads. A monitor opened
    /// with `allow_eviction` calls it to show the risk rather than refuse to show the queue.
    ///
    /// ```no_run
    /// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// match q.check_eviction().await {
    ///     Err(crawlq::Error::Config(why)) => eprintln!("warning: {why}"),
    ///     other => other?,
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn check_eviction(&self) -> Result<()> {
        match self.eviction_risk().await? {
            Some(why) => Err(Error::Config(why)),
            None => Ok(()),
        }
    }

    /// [`Queue::check_eviction`] as a value: `None` when no server holding the queue may evict
    /// its keys, else the reason (the policy and memory limit, as the refusal names them). Any
    /// other failure (the connection, a layout this client cannot use) is an error. It only
    /// reads; the bindings' `eviction_risk` / `evictionRisk`.
    ///
    /// ```no_run
    /// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// if let Some(why) = q.eviction_risk().await? {
    ///     eprintln!("warning: {why}");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn eviction_risk(&self) -> Result<Option<String>> {
        // (the layout first: its own errors are errors; after it, the only refusal the
        // read-only checks answer is the eviction one)
        let layout = self.layout().await?;
        let checked = match self.exec.eval(self.home.shards(0, true)).await {
            Ok(_) if layout.count() > 1 => self.check_eviction_elsewhere(layout).await,
            other => other.map(|_| ()),
        };
        match checked {
            Ok(()) => Ok(None),
            Err(Error::Config(why)) => Ok(Some(why)),
            Err(e) => Err(e),
        }
    }

    /// The first call checked the server of the queue's home for eviction (`shards`, ARGV 4);
    /// a queue of several shards on a Redis Cluster has shards on other nodes too, each with
    /// its own `maxmemory-policy`: one read-only `shards` call on a shard of each other node
    /// checks it (none on one server). An error leaves the layout unread, so the next call
    /// checks again.
    async fn check_eviction_elsewhere(&self, layout: &Layout) -> Result<()> {
        let mut metas = vec![self.home.keys().script_keys()[0].clone()];
        metas.extend(
            layout
                .all()
                .iter()
                .map(|ops| ops.keys().script_keys()[0].clone()),
        );
        let groups = self.exec.node_groups(&metas).await;
        let mut checked = vec![groups[0]];
        let mut others = Vec::new();
        for (shard, group) in groups.iter().skip(1).enumerate() {
            if !checked.contains(group) {
                checked.push(*group);
                others.push(layout.shard(shard));
            }
        }
        futures_util::future::try_join_all(
            others
                .into_iter()
                .map(|ops| self.exec.eval(ops.shards(0, true))),
        )
        .await?;
        Ok(())
    }

    /// A call after [`Queue::remove_queue`] on a queue of several shards (or an addition after
    /// a shard's seen epoch moved, [`crate::shards::EpochWatch`]): as on a new queue, a
    /// client that asks for a shard count (`config.shards`), or that adds items (`adding`),
    /// writes its count back in the queue's home at once, so other clients find its shards;
    /// another call only reads it (a monitor's reads do not make the queue appear again),
    /// until a client makes the queue again. Its count and tags must be this client's
    /// layout's, or the call is refused.
    async fn make_again<'a>(&'a self, layout: &'a Layout, adding: bool) -> Result<&'a Layout> {
        if layout.count() > 1 {
            let writes = adding || self.config.shards.is_some();
            let asked = if writes { layout.count() as u32 } else { 0 };
            let reply = self.exec.eval(self.home.shards(asked, false)).await?;
            let (stored, tags) = self.home.decode_shards(reply)?;
            if stored == 0 {
                // (not made again yet: its shards read as empty until it is)
                return Ok(layout);
            }
            if stored as usize != layout.count() || tags != layout.tags() {
                return Err(Error::Config(format!(
                    "queue {:?} has {stored} shards now (it was removed and made again, or its \
                     home lost its writes and another client made it again); this client had \
                     {}: open the queue again",
                    self.name,
                    layout.count()
                )));
            }
        }
        self.recheck_home.store(false, Ordering::Release);
        Ok(layout)
    }

    /// A seed reply of `shard` (at `epoch`) for `items`: the known-seen cache learns it, and its
    /// epoch is watched ([`crate::shards::EpochWatch`]).
    pub(crate) fn learn_seeded(
        &self,
        shard: usize,
        epoch: Option<&str>,
        items: &[crate::ops::PreparedItem],
        seeded: &[crate::ops::Seeded],
    ) {
        self.epochs.note(shard, epoch);
        self.seen.learn(shard, epoch, items, seeded);
    }

    /// Number of shards (reads the layout).
    pub async fn shard_count(&self) -> Result<usize> {
        Ok(self.layout().await?.count())
    }

    /// Run a call of `ops` (a shard's), keeping the report a shard of several appends to its
    /// reply for [`Queue::flush_reports`], and answer the reply the script's decoder reads.
    async fn eval_on(&self, ops: &Ops, call: ScriptCall) -> Result<Reply> {
        let shard = ops.shard_index();
        let kind = call.report;
        let reply = self.exec.eval(call).await?;
        let Some(kind) = kind else {
            return Ok(reply);
        };
        let (reply, report) = split_report(reply, kind, shard)?;
        if let Some(report) = report {
            self.pending_reports().push(report);
        }
        Ok(reply)
    }

    fn pending_reports(&self) -> std::sync::MutexGuard<'_, Vec<ShardReport>> {
        self.reports.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Send the pending shard reports to the queue's index (one `due` call on its own base),
    /// pushing `markers` wake markers if one made a shard due now, so lease calls blocked on the
    /// queue wake. Like the wake of a one-shard queue's scripts, this follows a call that was
    /// applied: if it fails, the reports wait for the next call's, and a sweep (at most
    /// [`SWEEP_EVERY`] later) reads what a client that died here left out.
    async fn flush_reports(&self, layout: &Layout, markers: u64) {
        if layout.count() <= 1 {
            return;
        }
        let reports = std::mem::take(&mut *self.pending_reports());
        if reports.is_empty() {
            return;
        }
        let call = self.home.due(&reports, markers, 0, Duration::ZERO);
        if self.exec.eval(call).await.is_err() {
            self.pending_reports().extend(reports);
        }
    }

    /// The list blocked lease calls wait on.
    fn wake_key<'a>(&'a self, layout: &'a Layout) -> &'a str {
        if layout.count() > 1 {
            self.home.keys().wake()
        } else {
            layout.shard(0).keys().wake()
        }
    }

    /// Run one call per part, concurrently, and return each part's positions with its result.
    async fn each_part<T, R, F, Fut>(
        &self,
        parts: Vec<Part<T>>,
        call: F,
    ) -> Result<Vec<(Vec<usize>, R)>>
    where
        F: Fn(usize, Vec<T>) -> Fut,
        Fut: Future<Output = Result<R>>,
    {
        let calls = parts.into_iter().map(|p| {
            let fut = call(p.shard, p.items);
            async move { Ok::<_, Error>((p.positions, fut.await?)) }
        });
        futures_util::future::try_join_all(calls).await
    }
}

/// Poll a future once, in the calling task's context.
async fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *future).poll(cx))).await
}

fn check_ttl(ttl: Duration) -> Result<()> {
    if ttl < Duration::from_millis(1) {
        return Err(Error::InvalidArgument("ttl must be at least 1 ms".into()));
    }
    if ttl > crate::config::MAX_DURATION {
        return Err(Error::InvalidArgument(
            "ttl must be at most 100 years".into(),
        ));
    }
    Ok(())
}

fn with_context(error: Error, context: &str) -> Error {
    match error {
        Error::Unavailable(m) => Error::Unavailable(format!("{m} ({context})")),
        Error::Timeout(m) => Error::Timeout(format!("{m} ({context})")),
        Error::Server(m) => Error::Server(format!("{m} ({context})")),
        Error::Corrupt(m) => Error::Corrupt(format!("{m} ({context})")),
        other => other,
    }
}

/// The offsets a [`Queue::list_hosts`] cursor names, one per shard: `<o0>.<o1>...`.
fn parse_host_cursor(cursor: Option<&str>, shards: usize) -> Result<Vec<u64>> {
    let Some(cursor) = cursor.filter(|c| !c.is_empty()) else {
        return Ok(vec![0; shards]);
    };
    let offsets: Vec<u64> = cursor
        .split('.')
        .map(str::parse)
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| Error::InvalidArgument(format!("not a list_hosts cursor: {cursor:?}")))?;
    if offsets.len() != shards {
        return Err(Error::InvalidArgument(format!(
            "not a list_hosts cursor of this queue ({shards} shards): {cursor:?}"
        )));
    }
    Ok(offsets)
}

/// Up to `limit` entries from the `start`-th on, read in calls of at most `per_call` that page
/// with an offset, so that no call holds Redis for long. `fetch(want, offset)` makes one call
/// and answers its entries and a figure of the whole (the last call's is returned). An entry
/// that moved between two calls (the same `id`) is kept once.
async fn paged<T, Fut>(
    start: usize,
    limit: usize,
    per_call: usize,
    id: impl Fn(&T) -> String,
    fetch: impl Fn(usize, usize) -> Fut,
) -> Result<(Vec<T>, u64)>
where
    Fut: Future<Output = Result<(Vec<T>, u64)>>,
{
    let (mut items, mut listed, mut at) = (Vec::new(), std::collections::HashSet::new(), start);
    loop {
        let want = (limit - items.len()).min(per_call);
        let (part, whole) = fetch(want, at).await?;
        let last = want == 0 || part.len() < want;
        at += want;
        for item in part {
            if listed.insert(id(&item)) {
                items.push(item);
            }
        }
        if last || items.len() == limit {
            return Ok((items, whole));
        }
    }
}
