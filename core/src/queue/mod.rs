//! The queue client: every operation over any [`Executor`] (the native Redis client, or a
//! JavaScript transport in the WebAssembly build). Chunking, shard routing, the blocking wait
//! and the per-lease bookkeeping live here once.

use crate::config::{Config, DelayAfter};
use crate::error::{Error, InvalidReason, Result};
use crate::held::HeldLeases;
use crate::model::*;
use crate::model::{AnswerResults, Answers};
use crate::ops::{
    CallState, DuePick, LeaseBatch, Ops, PreparedItem, Reply, ReportKind, ScriptCall, SeedOutcome,
    Seeded, ShardReport, split_report,
};
use crate::request::CrawlRequest;
use crate::shards::{Layout, Part, reassemble};
use crate::wire::StoredItem;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::Poll;
use std::time::Duration;

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
            state,
            exec,
            jitter_nonce: AtomicU64::new(0),
            next_shard: AtomicUsize::new(0),
            held: Arc::default(),
            reports: std::sync::Mutex::default(),
            view: std::sync::Mutex::default(),
        })
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
        if let Some(layout) = self.layout.get() {
            return Ok(layout);
        }
        let asked = self.config.shards.unwrap_or(0);
        let reply = self.exec.eval(self.home.shards(asked)).await?;
        let (stored, tags) = self.home.decode_shards(reply)?;
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
        Ok(self.layout.get_or_init(|| layout))
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

    /// Seed URLs or hosts. Invalid items are reported with their index and never stop the
    /// rest; each chunk of `seed_batch` items is one round trip (per shard it touches, sent
    /// concurrently).
    ///
    /// If Redis fails part-way the error says how many items were already seeded; seeding the
    /// same batch again is safe (those come back as duplicates).
    pub async fn seed(&self, items: &[SeedItem], opts: &SeedOptions) -> Result<SeedReport> {
        self.seed_with_progress(items, opts, |_| {}).await
    }

    /// [`Queue::seed`], calling `progress` after each round trip.
    pub async fn seed_with_progress<F>(
        &self,
        items: &[SeedItem],
        opts: &SeedOptions,
        mut progress: F,
    ) -> Result<SeedReport>
    where
        F: FnMut(SeedProgress) + MaybeSend,
    {
        let layout = self.layout().await?;
        let defaults = self.home.seed_defaults(opts)?;
        let chunk_len = self.config.seed_batch.max(1);
        let mut report = SeedReport {
            ids: vec![None; items.len()],
            ..SeedReport::default()
        };
        let mut done = 0;
        // One chunk in flight while the next one is normalized: the client's work overlaps
        // Redis's, and chunks still run in order (ids follow the caller's order).
        let mut in_flight: Option<Flight<_, ChunkSeeded>> = None;
        let mut offset = 0;
        loop {
            let next = if offset < items.len() {
                let end = (offset + chunk_len).min(items.len());
                let (prepared, invalid) =
                    self.home
                        .prepare_with(&items[offset..end], offset, opts, &defaults);
                offset = end;
                Some((prepared, invalid))
            } else {
                None
            };
            if let Some(flight) = in_flight.take() {
                let chunk: ChunkSeeded = match flight {
                    Flight::Sent(outcome) => outcome.await,
                    Flight::Answered(outcome) => outcome,
                };
                let ChunkSeeded {
                    sent: sent_items,
                    counts,
                    items: seeded_items,
                    error,
                } = chunk;
                report.added += counts.added;
                report.duplicates += counts.duplicates;
                report_seeded(&mut report, items, &sent_items, seeded_items);
                if let Some((shard, error)) = error {
                    // what the other calls queued may be leased at once
                    self.flush_reports(layout, counts.added_ready).await;
                    let whereabouts = if layout.count() > 1 {
                        format!(
                            "in shard {shard} of {}, the other shards' calls applied; ",
                            layout.count()
                        )
                    } else {
                        String::new()
                    };
                    return Err(with_context(
                        error,
                        &format!(
                            "{whereabouts}{} of {} items were seeded before this failure (added \
                             or found duplicate); seeding the batch again is safe",
                            report.added + report.duplicates,
                            items.len()
                        ),
                    ));
                }
                self.flush_reports(layout, counts.added_ready).await;
                done += sent_items.len();
                progress(SeedProgress::of(&report, done, items.len()));
            }
            let Some((prepared, invalid)) = next else {
                break;
            };
            done += invalid.len();
            report.invalid.extend(invalid);
            if prepared.is_empty() {
                progress(SeedProgress::of(&report, done, items.len()));
                continue;
            }
            let mut outcome = Box::pin(self.seed_chunk(layout, prepared));
            // Poll once so the executor sends the calls now, before the next chunk is prepared,
            // and give its writer a turn (on a tokio worker it would wait for this task).
            let flight = match poll_once(&mut outcome).await {
                Poll::Ready(answered) => Flight::Answered(answered),
                Poll::Pending => {
                    self.exec.yield_now().await;
                    Flight::Sent(outcome)
                }
            };
            in_flight = Some(flight);
        }
        // budget refusals are known after the invalid items of later chunks
        report.invalid.sort_by_key(|i| i.index);
        Ok(report)
    }

    /// Seed one chunk of prepared items: split by shard, each shard's part in calls of
    /// [`SEED_PER_CALL`] sent together (one round trip per shard, the shards concurrently). Every
    /// call is answered, so a failed one does not hide what the others applied: the counts and
    /// items are those of the calls that succeeded, with the first error and its shard.
    async fn seed_chunk(&self, layout: &Layout, prepared: Vec<PreparedItem>) -> ChunkSeeded {
        let len = prepared.len();
        // one shard (the usual queue): the chunk as it is; several: a copy per shard
        let parts: Vec<(usize, Vec<usize>, std::borrow::Cow<'_, [PreparedItem]>)> =
            if layout.count() == 1 {
                vec![(
                    0,
                    (0..len).collect(),
                    std::borrow::Cow::Borrowed(&prepared[..]),
                )]
            } else {
                let mut by_shard: Vec<(usize, Vec<usize>, Vec<PreparedItem>)> = Vec::new();
                for (position, item) in prepared.iter().enumerate() {
                    let shard = layout.of_host(&item.host);
                    match by_shard.iter_mut().find(|(s, _, _)| *s == shard) {
                        Some((_, positions, items)) => {
                            positions.push(position);
                            items.push(item.clone());
                        }
                        None => by_shard.push((shard, vec![position], vec![item.clone()])),
                    }
                }
                by_shard
                    .into_iter()
                    .map(|(s, positions, items)| (s, positions, std::borrow::Cow::Owned(items)))
                    .collect()
            };
        let per_shard = futures_util::future::join_all(parts.iter().map(
            |(shard, positions, part)| async move {
                let shard = *shard;
                let (known, epoch_used) = self.seen.known(shard, part);
                if !known.contains(&true) {
                    let (counts, items, error) = self.seed_calls(layout, shard, part).await;
                    return (positions.clone(), counts, items, error);
                }
                // the cache knows some as seen: send the others (at least one call, whose
                // reply says whether the cache's epoch still holds)
                let (send, hits) = split_known(part, &known);
                let (counts, sent, error) = self.seed_calls(layout, shard, &send).await;
                let (counts, items, error) = self
                    .settle_known(
                        layout, shard, &known, &hits, epoch_used, counts, sent, error,
                    )
                    .await;
                (positions.clone(), counts, items, error)
            },
        ))
        .await;
        drop(parts);
        let mut chunk = ChunkSeeded {
            sent: Vec::new(),
            counts: SeedOutcome::default(),
            items: Vec::new(),
            error: None,
        };
        let mut placed = Vec::with_capacity(per_shard.len());
        for (positions, counts, items, error) in per_shard {
            chunk.counts = chunk.counts.then(counts);
            if chunk.error.is_none() {
                chunk.error = error;
            }
            placed.push((positions, items));
        }
        chunk.items = reassemble(len, placed);
        chunk.sent = prepared;
        chunk
    }

    /// Send `items` (of one shard) in seed calls of [`SEED_PER_CALL`], together (one round
    /// trip; at least one call, even for no items: its reply carries the shard's seen epoch),
    /// and teach the known-seen cache what they answer. The counts and items of the calls that
    /// succeeded (`None` for the items of one that failed), with the first error.
    async fn seed_calls(
        &self,
        layout: &Layout,
        shard: usize,
        items: &[PreparedItem],
    ) -> (SeedOutcome, Vec<Option<ItemSeeded>>, Option<(usize, Error)>) {
        let ops = layout.shard(shard);
        let chunks: Vec<&[PreparedItem]> = if items.is_empty() {
            vec![items]
        } else {
            items.chunks(SEED_PER_CALL).collect()
        };
        let calls = chunks.iter().map(|chunk| async move {
            let reply = self.eval_on(ops, ops.seed(chunk)).await?;
            ops.decode_seed(reply, chunk.len())
        });
        let answers = futures_util::future::join_all(calls).await;
        let mut counts = SeedOutcome::default();
        let mut seeded = Vec::with_capacity(items.len());
        let mut error = None;
        for (answer, chunk) in answers.into_iter().zip(chunks) {
            match answer {
                Ok(outcome) => {
                    self.seen
                        .learn(shard, outcome.epoch.as_deref(), chunk, &outcome.ids);
                    seeded.extend(seeded_items(layout, shard, &outcome.ids));
                    counts = counts.then(SeedOutcome {
                        ids: Vec::new(),
                        ..outcome
                    });
                }
                Err(e) => {
                    seeded.extend(std::iter::repeat_n(None, chunk.len()));
                    error.get_or_insert((shard, e));
                }
            }
        }
        (counts, seeded, error)
    }

    /// Seed crawl requests (docs/PROTOCOL.md, section 10): each is stored as the one request
    /// shape every framework adapter reads, known by its canonical URL when it is a plain GET
    /// and by its method, URL and body otherwise. `items` are the requests' seed items with
    /// their own options (priority, delay, force), made by [`Queue::request_items`]; the
    /// report is [`Queue::seed`]'s.
    ///
    /// ```no_run
    /// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let mut request = crawlq::CrawlRequest::get("https://example.com/next");
    /// request.label = Some("listing".into());
    /// request.depth = 1;
    /// let items = q.request_items(&[request]);
    /// q.seed(&items, &crawlq::SeedOptions::default()).await?;
    /// # Ok(()) }
    /// ```
    pub fn request_items(&self, requests: &[CrawlRequest]) -> Vec<SeedItem> {
        requests.iter().map(|r| self.home.request_item(r)).collect()
    }

    /// Lease up to `max` items, waiting up to `wait` when nothing is ready.
    pub async fn lease(&self, max: usize, wait: Duration) -> Result<Vec<Lease>> {
        self.lease_with(&LeaseOptions {
            max,
            wait,
            ttl: None,
        })
        .await
    }

    /// Lease with all options. Returns an empty list when `wait` passes with nothing ready.
    pub async fn lease_with(&self, opts: &LeaseOptions) -> Result<Vec<Lease>> {
        let ttl = self.lease_ttl(opts)?;
        self.lease_from(opts, ttl, self.exec.monotonic_ms(), None)
            .await
    }

    /// The lease time of `opts`, after checking them.
    fn lease_ttl(&self, opts: &LeaseOptions) -> Result<Duration> {
        if !(1..=10_000).contains(&opts.max) {
            return Err(Error::InvalidArgument(format!(
                "max must be within 1..=10000, got {}",
                opts.max
            )));
        }
        if opts.wait > MAX_WAIT {
            return Err(Error::InvalidArgument(
                "wait must be at most one day".into(),
            ));
        }
        let ttl = opts.ttl.unwrap_or(self.config.lease_ttl);
        check_ttl(ttl)?;
        let every = self.config.extend_every;
        if !every.is_zero() && ttl <= every {
            return Err(Error::InvalidArgument(format!(
                "a lease time of {} ms would expire before the next extension (extend_every is {} ms)",
                ttl.as_millis(),
                every.as_millis()
            )));
        }
        Ok(ttl)
    }

    /// The lease loop of [`Queue::lease_with`] (checked options, lease time `ttl`), started at
    /// `started` (monotonic ms), its first batch `first` when a call already took one.
    async fn lease_from(
        &self,
        opts: &LeaseOptions,
        ttl: Duration,
        started: u64,
        mut first: Option<LeaseBatch>,
    ) -> Result<Vec<Lease>> {
        let layout = self.layout().await?;
        let wait_ms = opts.wait.as_millis() as u64;
        loop {
            let batch = match first.take() {
                Some(batch) => batch,
                None => self.lease_once(opts.max, ttl).await?,
            };
            let buried = self.bury_undecodable(&batch.undecodable).await?;
            if !batch.leases.is_empty() {
                self.held
                    .record(&batch.leases, ttl, self.exec.monotonic_ms());
                return Ok(batch.leases);
            }
            if buried > 0 {
                // the batch was only poison: ask again at once
                continue;
            }
            let waited = self.exec.monotonic_ms().saturating_sub(started);
            if waited >= wait_ms {
                return Ok(Vec::new());
            }
            let mut sleep = wait_ms - waited;
            if let Some(due) = batch.next_due_ms {
                sleep = sleep.min((due - batch.now_ms).max(1) as u64);
            }
            if layout.count() > 1 {
                // work the index never heard of (its writer died before reporting) is found
                // by the next sweep: look again at least that often
                sleep = sleep.min(SWEEP_EVERY.as_millis() as u64);
            }
            self.exec
                .wait(self.wake_key(layout), Duration::from_millis(sleep))
                .await?;
        }
    }

    /// Ack `acks` and lease up to `opts.max` more items, in one script call (one round trip)
    /// when the acked leases are of one shard (always, with one shard): for a worker that
    /// answers each item and takes the next. The acks are applied first, exactly as
    /// [`Queue::ack`] applies them (the queue's `revisit_after` included), then the lease runs
    /// as [`Queue::lease_with`] (waiting up to `opts.wait` when nothing is ready). Returns one
    /// ack flag per lease (`false`: it was not live any more) and the new leases. Leases of
    /// several shards, or more than 500 of them, are acked by their own calls first.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// use crawlq::LeaseOptions;
    /// use std::time::Duration;
    /// let opts = LeaseOptions { max: 1, wait: Duration::from_secs(2), ttl: None };
    /// let mut leases = q.lease_with(&opts).await?;
    /// while let Some(lease) = leases.pop() {
    ///     // ... fetch lease.url ...
    ///     let (_acked, next) = q.ack_and_lease(&[lease.handle()], &opts).await?;
    ///     leases = next;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn ack_and_lease(
        &self,
        acks: &[LeaseHandle],
        opts: &LeaseOptions,
    ) -> Result<(Vec<bool>, Vec<Lease>)> {
        let ttl = self.lease_ttl(opts)?;
        let started = self.exec.monotonic_ms();
        let layout = self.layout().await?;
        let parts = layout.route(acks)?;
        if acks.is_empty() || acks.len() > LEASES_PER_CALL || parts.len() != 1 {
            let flags = self.ack(acks).await?;
            return Ok((flags, self.lease_from(opts, ttl, started, None).await?));
        }
        let part = parts.into_iter().next().expect("one part");
        let s = part.shard;
        let ops = layout.shard(s);
        let ask = opts.max.min(LEASE_PER_CALL);
        let revisit = Revisit::After(self.config.revisit_after);
        let reply = self
            .eval_on(ops, ops.ack_lease(&part.items, revisit, ask, ttl))
            .await?;
        let (flags, mut batch) = ops.decode_ack_lease(reply, acks.len(), ttl)?;
        self.held.forget(acks);
        layout.name_ids(&mut batch, s);
        self.drop_still_due(&[s], &mut batch);
        self.flush_reports(layout, batch.reclaimed.saturating_sub(batch.reclaimed_dead))
            .await;
        // the rest of `max`, from the other shards or past one call's share, as lease_once
        // would have asked for it
        let got = batch.leases.len() + batch.undecodable.len();
        if got < opts.max && (got == ask || layout.count() > 1) {
            let more = self.lease_once(opts.max - got, ttl).await?;
            batch = batch.merge(more);
        }
        Ok((
            flags,
            self.lease_from(opts, ttl, started, Some(batch)).await?,
        ))
    }

    /// [`Queue::ack_and_lease`] for the bindings: the acks as [`Answers`] (one flag for a
    /// single lease, `single`, or a list), the wait in slices of at most [`WAIT_SLICE`] that
    /// stop early (with no leases) as soon as `stop()` returns true between slices, as
    /// [`Queue::lease_interruptible`] does.
    ///
    /// ```no_run
    /// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>, lease: crawlq::Lease) -> crawlq::Result<()> {
    /// let opts = crawlq::LeaseOptions { max: 1, wait: std::time::Duration::ZERO, ttl: None };
    /// let (acked, next) = q.ack_and_lease_answers(&[lease.handle()], true, &opts, || false).await?;
    /// assert_eq!(acked.to_json(crawlq::Style::Camel), serde_json::json!(true));
    /// # Ok(()) }
    /// ```
    pub async fn ack_and_lease_answers<S>(
        &self,
        acks: &[LeaseHandle],
        single: bool,
        opts: &LeaseOptions,
        mut stop: S,
    ) -> Result<(Answers, Vec<Lease>)>
    where
        S: FnMut() -> bool + MaybeSend,
    {
        // checked whole here: the first call sees only a slice of the wait
        self.lease_ttl(opts)?;
        let started = self.exec.monotonic_ms();
        let total = opts.wait.as_millis() as u64;
        let slice = LeaseOptions {
            wait: opts.wait.min(WAIT_SLICE),
            ..*opts
        };
        let (flags, leases) = self.ack_and_lease(acks, &slice).await?;
        let answers = Answers {
            results: AnswerResults::Flags(flags),
            single,
        };
        let waited = self.exec.monotonic_ms().saturating_sub(started);
        if !leases.is_empty() || waited >= total || stop() {
            return Ok((answers, leases));
        }
        let rest = LeaseOptions {
            wait: Duration::from_millis(total - waited),
            ..*opts
        };
        Ok((answers, self.lease_interruptible(&rest, stop).await?))
    }

    /// [`Queue::lease_with`], waiting in slices of at most [`WAIT_SLICE`] and giving up early
    /// (with an empty list) as soon as `stop()` returns true between slices.
    pub async fn lease_interruptible<S>(
        &self,
        opts: &LeaseOptions,
        mut stop: S,
    ) -> Result<Vec<Lease>>
    where
        S: FnMut() -> bool + MaybeSend,
    {
        // checked whole here: each call below sees only a slice of the wait
        self.lease_ttl(opts)?;
        let started = self.exec.monotonic_ms();
        let total = opts.wait.as_millis() as u64;
        let slice_ms = WAIT_SLICE.as_millis() as u64;
        loop {
            let remaining = total.saturating_sub(self.exec.monotonic_ms().saturating_sub(started));
            let slice = LeaseOptions {
                wait: Duration::from_millis(remaining.min(slice_ms)),
                ..*opts
            };
            let leases = self.lease_with(&slice).await?;
            if !leases.is_empty() || remaining <= slice_ms || stop() {
                return Ok(leases);
            }
        }
    }

    /// Send leased records that cannot be decoded to dead letters (reason `undecodable: ...`),
    /// so one poison record never fails a lease call or sinks its batch-mates. Returns how many.
    pub async fn bury_undecodable(&self, undecodable: &[Undecodable]) -> Result<usize> {
        if undecodable.is_empty() {
            return Ok(0);
        }
        let nacks: Vec<(LeaseHandle, NackOptions)> = undecodable
            .iter()
            .map(|u| {
                let salvaged = crate::wire::salvage_record(u.raw.as_bytes());
                let handle = LeaseHandle {
                    token: u.token,
                    id: u.id.clone(),
                    host: salvaged.host,
                    url: salvaged.url,
                    key: salvaged.key,
                };
                let opts = NackOptions {
                    retry: false,
                    reason: Some(format!("undecodable: {}", u.error)),
                    ..NackOptions::default()
                };
                (handle, opts)
            })
            .collect();
        self.nack(&nacks).await?;
        Ok(undecodable.len())
    }

    /// Lease calls without waiting: the leases, reclaim counts and when something next becomes
    /// due. With several shards, the queue's index names the shards that may have something
    /// leasable now (one call on the queue's own base, which also sends the reports pending
    /// here); they are asked in turn, from a start that rotates with every call (so none is
    /// starved), until `max` leases came, and their reports go back to the index in one more
    /// call only when a shard's state changed from what the index said. An empty queue costs
    /// one call whatever its shard count. Each lease's id names its shard. Undecodable records
    /// are in the batch's `undecodable` (see [`Queue::bury_undecodable`]).
    pub async fn lease_once(&self, max: usize, ttl: Duration) -> Result<LeaseBatch> {
        let layout = self.layout().await?;
        let count = layout.count();
        if count == 1 {
            return self.lease_shard(layout.shard(0), max, ttl).await;
        }
        let viewed = {
            let view = self.view.lock().unwrap_or_else(|e| e.into_inner());
            view.as_ref()
                .filter(|(at, _)| self.exec.monotonic_ms().saturating_sub(*at) < VIEW_FOR)
                .map(|(_, pick)| pick.clone())
        };
        if let Some(pick) = viewed {
            let batch = self.lease_due(layout, &pick, max, ttl).await?;
            if !batch.leases.is_empty() || !batch.undecodable.is_empty() {
                return Ok(batch);
            }
            // the shards it named ran dry: ask the index again
        }
        let pick = self.due_pick(layout, count).await?;
        *self.view.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((self.exec.monotonic_ms(), pick.clone()));
        self.lease_due(layout, &pick, max, ttl).await
    }

    /// Lease from the shards `pick` names as due, in turn from a start that rotates with every
    /// call, until `max` leases came; then send the reports that changed something. A shard
    /// that had nothing leasable ends the reuse of `pick`.
    async fn lease_due(
        &self,
        layout: &Layout,
        pick: &DuePick,
        max: usize,
        ttl: Duration,
    ) -> Result<LeaseBatch> {
        let start = self.next_shard.fetch_add(1, Ordering::Relaxed);
        let mut batch = LeaseBatch {
            now_ms: pick.now_ms,
            next_due_ms: pick.next_ms,
            reclaimed: 0,
            reclaimed_dead: 0,
            leases: Vec::new(),
            undecodable: Vec::new(),
        };
        let due = pick.shards.len();
        let mut dry = false;
        for k in 0..due {
            let got = batch.leases.len() + batch.undecodable.len();
            if got >= max {
                break;
            }
            let s = pick.shards[(start + k) % due];
            let mut part = self.lease_shard(layout.shard(s), max - got, ttl).await?;
            dry |= part.leases.is_empty() && part.undecodable.is_empty();
            layout.name_ids(&mut part, s);
            batch = batch.merge(part);
        }
        let changed = self.drop_still_due(&pick.shards, &mut batch);
        if dry || changed {
            *self.view.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
        self.flush_reports(layout, batch.reclaimed.saturating_sub(batch.reclaimed_dead))
            .await;
        Ok(batch)
    }

    /// A shard of `due` (which the index has as due now) whose lease found it still leasable
    /// changes nothing there: its report is dropped, so a busy shard costs no index call. The
    /// other reports stay for [`Queue::flush_reports`]; those that come due later bring the
    /// batch's `next_due_ms` forward. Returns whether a report stayed (something changed).
    fn drop_still_due(&self, due: &[usize], batch: &mut LeaseBatch) -> bool {
        let mut reports = self.pending_reports();
        reports.retain(|r| {
            !(r.kind == ReportKind::Set
                && r.at >= 0
                && r.at <= batch.now_ms
                && due.contains(&r.shard))
        });
        for r in reports.iter().filter(|r| r.at > batch.now_ms) {
            batch.next_due_ms = Some(batch.next_due_ms.map_or(r.at, |n| n.min(r.at)));
        }
        !reports.is_empty()
    }

    /// The shards of a queue of several that the index says may have something leasable now,
    /// sending the reports pending here in the same call. The caller that the index picks for
    /// a sweep (one per [`SWEEP_EVERY`] for the whole queue) first reads every shard's state
    /// and sends it: that repairs an index a client left behind when it died between a write
    /// and its report, and builds the index of a queue made before it had one.
    async fn due_pick(&self, layout: &Layout, count: usize) -> Result<DuePick> {
        let reports = std::mem::take(&mut *self.pending_reports());
        let call = self.home.due(&reports, 0, count, SWEEP_EVERY);
        let pick = match self.exec.eval(call).await {
            Ok(reply) => self.home.decode_due(reply)?,
            Err(e) => {
                self.pending_reports().extend(reports);
                return Err(e);
            }
        };
        if !pick.sweep {
            return Ok(pick);
        }
        let (states, _) = self
            .read_by_node(
                layout,
                Ops::shard_state_shards,
                Ops::shard_state,
                Ops::decode_shard_state,
            )
            .await?;
        let reply = self
            .exec
            .eval(self.home.due(&states, 0, count, Duration::ZERO))
            .await?;
        self.home.decode_due(reply)
    }

    /// Up to `max` leases from one shard, in calls of at most [`LEASE_PER_CALL`]: more calls
    /// only while each one hands out all it was asked for.
    async fn lease_shard(&self, ops: &Ops, max: usize, ttl: Duration) -> Result<LeaseBatch> {
        let mut batch: Option<LeaseBatch> = None;
        loop {
            let got = batch
                .as_ref()
                .map_or(0, |b| b.leases.len() + b.undecodable.len());
            let ask = (max - got).min(LEASE_PER_CALL);
            let reply = self.eval_on(ops, ops.lease(ask, ttl)).await?;
            let part = ops.decode_lease(reply, ttl)?;
            let full = part.leases.len() + part.undecodable.len() == ask;
            let sum = match batch {
                None => part,
                Some(sum) => sum.merge(part),
            };
            let done = !full || sum.leases.len() + sum.undecodable.len() >= max;
            batch = Some(sum);
            if done {
                return Ok(batch.expect("set above"));
            }
        }
    }

    /// One call per shard the leases belong to (chunks of [`LEASES_PER_CALL`]), concurrently;
    /// the results in the leases' order.
    async fn per_lease<'a, T, R, F, Fut>(
        &'a self,
        leases: &[T],
        route: impl Fn(&T) -> &LeaseHandle,
        call: F,
    ) -> Result<Vec<R>>
    where
        T: Clone,
        F: Fn(&'a Ops, Vec<(T, LeaseHandle)>) -> Fut,
        Fut: Future<Output = Result<Vec<R>>>,
    {
        let layout = self.layout().await?;
        let parts = layout.group(leases, |item| {
            let handle = route(item);
            let routed = layout.route(std::slice::from_ref(handle))?;
            let part = routed.into_iter().next().expect("one handle, one part");
            Ok((
                part.shard,
                (
                    item.clone(),
                    part.items.into_iter().next().expect("one handle"),
                ),
            ))
        })?;
        let results = self
            .each_part(parts, |s, items: Vec<(T, LeaseHandle)>| {
                let ops = layout.shard(s);
                let call = &call;
                async move {
                    let mut out = Vec::with_capacity(items.len());
                    for chunk in items.chunks(LEASES_PER_CALL) {
                        out.extend(call(ops, chunk.to_vec()).await?);
                    }
                    Ok(out)
                }
            })
            .await;
        Ok(reassemble(leases.len(), results?))
    }

    /// [`Queue::per_lease`] for leases that each come with their options: `call` gets the
    /// routed handles paired with their options.
    async fn per_lease_with<'a, O, R, F, Fut>(
        &'a self,
        leases: &[(LeaseHandle, O)],
        call: F,
    ) -> Result<Vec<R>>
    where
        O: Clone,
        F: Fn(&'a Ops, Vec<(LeaseHandle, O)>) -> Fut,
        Fut: Future<Output = Result<Vec<R>>>,
    {
        self.per_lease(
            leases,
            |(h, _)| h,
            |ops, chunk| {
                call(
                    ops,
                    chunk
                        .into_iter()
                        .map(|((_, opts), routed)| (routed, opts))
                        .collect(),
                )
            },
        )
        .await
    }

    /// [`Queue::per_lease`] for calls that take the routed handles only.
    async fn per_handle<'a, R, F, Fut>(&'a self, leases: &[LeaseHandle], call: F) -> Result<Vec<R>>
    where
        F: Fn(&'a Ops, Vec<LeaseHandle>) -> Fut,
        Fut: Future<Output = Result<Vec<R>>>,
    {
        self.per_lease(
            leases,
            |h| h,
            |ops, chunk| call(ops, chunk.into_iter().map(|(_, routed)| routed).collect()),
        )
        .await
    }

    /// Ack leases (the work is done). One flag per lease: `false` when the lease was not live
    /// any more (expired and reclaimed, or already answered): nothing changed for it.
    pub async fn ack(&self, leases: &[LeaseHandle]) -> Result<Vec<bool>> {
        self.ack_revisit(leases, self.config.revisit_after).await
    }

    /// Ack leases and queue each item again `after` from now (by the Redis clock; zero: never):
    /// a recrawl. Until then the URL stays known (seeding it is a duplicate) and waits in
    /// `delayed` (counted in `stats().revisits` too); it comes back with its attempt count
    /// reset, its payload and priority kept.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>, lease: crawlq::Lease) -> crawlq::Result<()> {
    /// // fetched: look again in a day
    /// q.ack_revisit(&[lease.handle()], std::time::Duration::from_secs(86_400)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn ack_revisit(&self, leases: &[LeaseHandle], after: Duration) -> Result<Vec<bool>> {
        if after > crate::config::MAX_DURATION {
            return Err(Error::InvalidArgument(
                "a revisit must be at most 100 years away".into(),
            ));
        }
        self.ack_with(leases, Revisit::After(after)).await
    }

    /// [`Queue::ack_revisit`] at a time (ms since the epoch, by the Redis clock; a time already
    /// past: the items are due at once).
    pub async fn ack_revisit_at(&self, leases: &[LeaseHandle], at_ms: i64) -> Result<Vec<bool>> {
        if !(0..=crate::config::MAX_TIMESTAMP_MS).contains(&at_ms) {
            return Err(Error::InvalidArgument(format!(
                "a revisit time must be in ms since the epoch, got {at_ms}"
            )));
        }
        self.ack_with(leases, Revisit::At(at_ms)).await
    }

    async fn ack_with(&self, leases: &[LeaseHandle], after: Revisit) -> Result<Vec<bool>> {
        let flags = self
            .per_handle(leases, |ops, handles| async move {
                let reply = self.eval_on(ops, ops.ack(&handles, after)).await?;
                ops.decode_flags(reply, handles.len())
            })
            .await?;
        self.held.forget(leases);
        // An ack reports when it freed a host's in-flight slot (the host is leasable now) or
        // queued a revisit: the index hears it at once, and blocked leases wake.
        if !self.pending_reports().is_empty() {
            self.flush_reports(self.layout().await?, 1).await;
        }
        Ok(flags)
    }

    /// Answer a fetched page and seed the links it found, in one round trip: the links are
    /// seeded as [`Queue::seed`] seeds them (with `opts`), then the lease is acked as
    /// [`Queue::ack`] acks it (the queue's `revisit_after` included), in one script call, so
    /// the frontier never looks finished in between. Returns whether the lease was still live
    /// and the links' report (per link: its id, a duplicate, or invalid with its index in
    /// `links`). The links are seeded even when the lease is no longer live (it expired and
    /// was reclaimed, or was answered): nothing found is lost, and whoever fetches the page
    /// again finds them duplicates.
    ///
    /// One call when the queue has one shard and the valid links fit one call (250); otherwise
    /// the links are seeded first (as [`Queue::seed`]) and the ack follows.
    /// [`Queue::ack_with_links_and_lease`] also leases the next items in the same call.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// use std::time::Duration;
    /// let lease = q.lease(1, Duration::from_secs(5)).await?.remove(0);
    /// // ... fetch lease.url, parse its links ...
    /// let links: Vec<crawlq::SeedItem> = ["https://example.com/a", "https://example.com/b"].map(Into::into).into();
    /// let (acked, report) = q.ack_with_links(&lease.handle(), &links, &crawlq::SeedOptions::default()).await?;
    /// println!("acked: {acked}, {} new links", report.added);
    /// # Ok(()) }
    /// ```
    pub async fn ack_with_links(
        &self,
        lease: &LeaseHandle,
        links: &[SeedItem],
        opts: &SeedOptions,
    ) -> Result<(bool, SeedReport)> {
        let (acked, report, _) = self.answer_page(lease, links, opts, None).await?;
        Ok((acked, report))
    }

    /// [`Queue::ack_with_links`], then lease the next items as [`Queue::lease_with`] does
    /// (`next`): a worker's whole turn on a page (its links, its ack, the next page) in one
    /// round trip. The lease waits as `lease_with` waits when nothing is due; it runs whether
    /// or not the answered lease was still live. One call when the queue has one shard and
    /// the valid links fit one call (250); otherwise the links are seeded first and the ack
    /// and lease follow as [`Queue::ack_and_lease`].
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// use std::time::Duration;
    /// let next = crawlq::LeaseOptions { max: 1, wait: Duration::from_secs(5), ttl: None };
    /// let mut leases = q.lease_with(&next).await?;
    /// while let Some(lease) = leases.pop() {
    ///     // ... fetch lease.url, parse its links ...
    ///     let links: Vec<crawlq::SeedItem> = vec!["https://example.com/a".into()];
    ///     let (_acked, _report, more) = q
    ///         .ack_with_links_and_lease(&lease.handle(), &links, &crawlq::SeedOptions::default(), &next)
    ///         .await?;
    ///     leases = more;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn ack_with_links_and_lease(
        &self,
        lease: &LeaseHandle,
        links: &[SeedItem],
        opts: &SeedOptions,
        next: &LeaseOptions,
    ) -> Result<(bool, SeedReport, Vec<Lease>)> {
        self.answer_page(lease, links, opts, Some(next)).await
    }

    /// [`Queue::ack_with_links_and_lease`] for the bindings: the wait in slices of at most
    /// [`WAIT_SLICE`] that stop early (with no leases) as soon as `stop()` returns true between
    /// slices, as [`Queue::lease_interruptible`] does.
    pub async fn ack_with_links_and_lease_interruptible<S>(
        &self,
        lease: &LeaseHandle,
        links: &[SeedItem],
        opts: &SeedOptions,
        next: &LeaseOptions,
        mut stop: S,
    ) -> Result<(bool, SeedReport, Vec<Lease>)>
    where
        S: FnMut() -> bool + MaybeSend,
    {
        // checked whole here: the first call sees only a slice of the wait
        self.lease_ttl(next)?;
        let started = self.exec.monotonic_ms();
        let total = next.wait.as_millis() as u64;
        let slice = LeaseOptions {
            wait: next.wait.min(WAIT_SLICE),
            ..*next
        };
        let (acked, report, leases) = self.answer_page(lease, links, opts, Some(&slice)).await?;
        let waited = self.exec.monotonic_ms().saturating_sub(started);
        if !leases.is_empty() || waited >= total || stop() {
            return Ok((acked, report, leases));
        }
        let rest = LeaseOptions {
            wait: Duration::from_millis(total - waited),
            ..*next
        };
        Ok((acked, report, self.lease_interruptible(&rest, stop).await?))
    }

    /// [`Queue::ack_with_links`], and with `next` [`Queue::ack_with_links_and_lease`].
    async fn answer_page(
        &self,
        lease: &LeaseHandle,
        links: &[SeedItem],
        opts: &SeedOptions,
        next: Option<&LeaseOptions>,
    ) -> Result<(bool, SeedReport, Vec<Lease>)> {
        let ttl = next.map(|n| self.lease_ttl(n)).transpose()?;
        let started = self.exec.monotonic_ms();
        let layout = self.layout().await?;
        let defaults = self.home.seed_defaults(opts)?;
        let (prepared, invalid) = self.home.prepare_with(links, 0, opts, &defaults);
        let answered = std::slice::from_ref(lease);
        let routed = layout.route(answered)?;
        if layout.count() > 1 || prepared.len() > SEED_PER_CALL {
            let report = self.seed(links, opts).await?;
            return Ok(match next {
                None => (self.ack(answered).await?[0], report, Vec::new()),
                Some(next) => {
                    let (acked, leases) = self.ack_and_lease(answered, next).await?;
                    (acked[0], report, leases)
                }
            });
        }
        let ops = layout.shard(0);
        let revisit = Revisit::After(self.config.revisit_after);
        // links the known-seen cache holds are not sent, unless the reply's epoch says the
        // seen set may have shrunk since
        let (known, epoch_used) = self.seen.known(0, &prepared);
        let (send, hits) = split_known(&prepared, &known);
        let (outcome, acked, batch) = match (next, ttl) {
            (Some(next), Some(ttl)) => {
                let ask = next.max.min(LEASE_PER_CALL);
                let call = ops.ack_seed_lease(&routed[0].items, revisit, &send, ask, ttl);
                let reply = self.eval_on(ops, call).await?;
                let (outcome, flags, batch) =
                    ops.decode_ack_seed_lease(reply, 1, send.len(), ttl)?;
                (outcome, flags[0], Some((next, ttl, ask, batch)))
            }
            _ => {
                let reply = self
                    .eval_on(ops, ops.ack_seed(&routed[0].items, revisit, &send))
                    .await?;
                let (outcome, flags) = ops.decode_ack_seed(reply, 1, send.len())?;
                (outcome, flags[0], None)
            }
        };
        self.held.forget(answered);
        self.seen
            .learn(0, outcome.epoch.as_deref(), &send, &outcome.ids);
        let sent = seeded_items(layout, 0, &outcome.ids).collect();
        let counts = SeedOutcome {
            ids: Vec::new(),
            ..outcome
        };
        let (counts, seeded, error) = self
            .settle_known(layout, 0, &known, &hits, epoch_used, counts, sent, None)
            .await;
        if let Some((_, e)) = error {
            return Err(with_context(
                e,
                "the page was answered (and any next items leased, which go back when their \
                 lease expires) and its links seeded except some the client knew as seen; \
                 seeding those again is safe",
            ));
        }
        let mut report = SeedReport {
            added: counts.added,
            duplicates: counts.duplicates,
            invalid,
            ids: vec![None; links.len()],
        };
        report_seeded(&mut report, links, &prepared, seeded);
        report.invalid.sort_by_key(|i| i.index);
        let Some((next, ttl, ask, mut batch)) = batch else {
            return Ok((acked, report, Vec::new()));
        };
        layout.name_ids(&mut batch, 0);
        self.drop_still_due(&[0], &mut batch);
        // the rest of `max`, past one call's share, as ack_and_lease asks for it
        let got = batch.leases.len() + batch.undecodable.len();
        if got < next.max && got == ask {
            let more = self.lease_once(next.max - got, ttl).await?;
            batch = batch.merge(more);
        }
        let leases = self.lease_from(next, ttl, started, Some(batch)).await?;
        Ok((acked, report, leases))
    }

    /// The counts and items, in the part's order (`known`: which of its items the known-seen
    /// cache held), of a part whose other items were sent (`counts`, `sent`: their calls'
    /// answers, `error`: a failed one) and whose cache hits (`hits`) were not: the hits are
    /// duplicates while the epoch the calls answered is the one the cache knew them under
    /// (`epoch_used`); otherwise the seen set may have shrunk since, and they go to Redis too.
    #[allow(clippy::too_many_arguments)]
    async fn settle_known(
        &self,
        layout: &Layout,
        shard: usize,
        known: &[bool],
        hits: &[PreparedItem],
        epoch_used: Option<String>,
        mut counts: SeedOutcome,
        sent: Vec<Option<ItemSeeded>>,
        mut error: Option<(usize, Error)>,
    ) -> (SeedOutcome, Vec<Option<ItemSeeded>>, Option<(usize, Error)>) {
        let mut again = None;
        let moved = counts.epoch != epoch_used;
        if !hits.is_empty() && error.is_none() && moved {
            self.seen.count_resent(hits.len());
            let (more, items, more_error) = self.seed_calls(layout, shard, hits).await;
            counts = counts.then(more);
            error = more_error;
            again = Some(items.into_iter());
        } else {
            counts.duplicates += hits.len() as u64;
        }
        let mut sent = sent.into_iter();
        let items = known
            .iter()
            .map(|k| match (k, again.as_mut()) {
                (false, _) => sent.next().flatten(),
                (true, Some(again)) => again.next().flatten(),
                (true, None) => Some(ItemSeeded::Duplicate),
            })
            .collect();
        (counts, items, error)
    }

    /// Fail leases: retry (backoff or explicit delay) or dead-letter each one.
    ///
    /// A payload in the options replaces the item's stored payload (checked for every lease
    /// before anything is sent: a payload that is not valid is an error for the whole call).
    pub async fn nack(&self, leases: &[(LeaseHandle, NackOptions)]) -> Result<Vec<NackOutcome>> {
        for (_, opts) in leases {
            self.home.payload_update(opts.payload.as_ref())?;
        }
        let outcomes = self
            .per_lease_with(
                leases,
                |ops, pairs: Vec<(LeaseHandle, NackOptions)>| async move {
                    let randoms: Vec<f64> = pairs
                        .iter()
                        .map(|(l, _)| self.jitter_random(l.token))
                        .collect();
                    let reply = self.eval_on(ops, ops.nack(&pairs, &randoms)?).await?;
                    ops.decode_nack(reply, pairs.len())
                },
            )
            .await?;
        self.held.forget(leases.iter().map(|(l, _)| l));
        let retried = outcomes
            .iter()
            .filter(|o| **o == NackOutcome::Retried)
            .count();
        // (a nack that freed a host's in-flight slot wakes a blocked lease even when its item
        // went to dead letters: markers are pushed only for a report of work due now)
        self.flush_reports(self.layout().await?, (retried as u64).max(1))
            .await;
        Ok(outcomes)
    }

    /// Push the deadline of leases to now + `ttl`. `None` for a lease that is not live.
    pub async fn extend(&self, leases: &[LeaseHandle], ttl: Duration) -> Result<Vec<Option<i64>>> {
        check_ttl(ttl)?;
        let started = self.exec.monotonic_ms();
        let deadlines = self
            .per_handle(leases, |ops, handles| async move {
                let reply = self.exec.eval(ops.extend(&handles, ttl)).await?;
                ops.decode_extend(reply, handles.len())
            })
            .await?;
        for (lease, deadline) in leases.iter().zip(&deadlines) {
            match deadline {
                // counted from before the call: the local deadline is never later than Redis's
                Some(_) => self.held.extended(lease, ttl, started),
                None => self.held.forget([lease]),
            }
        }
        Ok(deadlines)
    }

    /// Extend every lease this queue handed out and that was not answered yet, each to the
    /// lease time it was taken for; one round trip per lease time. What the `extend_every`
    /// option runs in the background in every binding; call it yourself from a long job's
    /// loop otherwise. Returns how many were extended (a lease found lost is forgotten: its
    /// answer will report it lost).
    ///
    /// ```no_run
    /// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let leases = q.lease(10, std::time::Duration::ZERO).await?;
    /// assert_eq!(q.extend_held().await?, leases.len());
    /// # Ok(()) }
    /// ```
    pub async fn extend_held(&self) -> Result<usize> {
        let mut extended = 0;
        for (ttl, handles) in self.held.due(self.exec.monotonic_ms()) {
            extended += self
                .extend(&handles, ttl)
                .await?
                .iter()
                .filter(|d| d.is_some())
                .count();
        }
        Ok(extended)
    }

    /// Release every lease this queue handed out and that was not answered yet (a worker
    /// stopping: SIGTERM, shutdown), so other workers take the items at once. Returns how many
    /// were released.
    ///
    /// ```no_run
    /// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let leases = q.lease(10, std::time::Duration::ZERO).await?;
    /// assert_eq!(q.release_held().await?, leases.len());
    /// assert_eq!(q.release_held().await?, 0);
    /// # Ok(()) }
    /// ```
    pub async fn release_held(&self) -> Result<usize> {
        let handles = self.held.take_all(self.exec.monotonic_ms());
        if handles.is_empty() {
            return Ok(0);
        }
        Ok(self
            .release(&handles)
            .await?
            .iter()
            .filter(|ok| **ok)
            .count())
    }
    /// Answer leases a caller hands back, the way every binding's `ack`, `nack`, `extend` and
    /// `release` do: one round trip per chunk, the results per lease, and which leases are
    /// finished. For a single lease (`single`), an extend that finds it lost is
    /// [`Error::LeaseLost`] (its holder should stop working on it); the other answers report a
    /// lost lease in their result (`false`, `lost`).
    ///
    /// ```no_run
    /// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>, lease: crawlq::Lease) -> crawlq::Result<()> {
    /// use crawlq::{Answer, Style};
    /// let answers = q.answer(&Answer::Ack, &[lease.handle()], true).await?;
    /// assert_eq!(answers.to_json(Style::Camel), serde_json::json!(true));
    /// # Ok(()) }
    /// ```
    pub async fn answer(
        &self,
        answer: &Answer,
        leases: &[LeaseHandle],
        single: bool,
    ) -> Result<Answers> {
        let results = match answer {
            Answer::Ack => AnswerResults::Flags(self.ack(leases).await?),
            Answer::Revisit(after) => AnswerResults::Flags(self.ack_revisit(leases, *after).await?),
            Answer::RevisitAt(at) => AnswerResults::Flags(self.ack_revisit_at(leases, *at).await?),
            Answer::Release(opts) => {
                let pairs: Vec<_> = leases.iter().map(|l| (l.clone(), opts.clone())).collect();
                AnswerResults::Flags(self.release_with(&pairs).await?)
            }
            Answer::Nack(opts) => {
                let pairs: Vec<_> = leases.iter().map(|l| (l.clone(), opts.clone())).collect();
                AnswerResults::Outcomes(self.nack(&pairs).await?)
            }
            Answer::Extend(ttl) => {
                let deadlines = self.extend(leases, *ttl).await?;
                if single && let (Some(None), Some(lease)) = (deadlines.first(), leases.first()) {
                    return Err(Error::LeaseLost {
                        id: lease.id.clone(),
                        token: lease.token,
                    });
                }
                AnswerResults::Deadlines(deadlines)
            }
        };
        Ok(Answers { results, single })
    }

    /// [`Queue::answer`] for one lease that must still be live: [`Error::LeaseLost`] when it was
    /// not (expired and reclaimed, or answered already), so its holder learns the work may be
    /// done twice.
    pub async fn answer_one(&self, answer: &Answer, lease: &LeaseHandle) -> Result<()> {
        let answers = self
            .answer(answer, std::slice::from_ref(lease), true)
            .await?;
        if answers.finished().first() == Some(&true) || answers.deadlines().is_some() {
            return Ok(());
        }
        Err(Error::LeaseLost {
            id: lease.id.clone(),
            token: lease.token,
        })
    }

    /// Give leases back untouched: each goes to the front of its lane and its attempt is not
    /// counted. `false` for a lease that was not live.
    pub async fn release(&self, leases: &[LeaseHandle]) -> Result<Vec<bool>> {
        let pairs: Vec<_> = leases
            .iter()
            .map(|l| (l.clone(), ReleaseOptions::default()))
            .collect();
        self.release_with(&pairs).await
    }

    /// [`Queue::release`], storing a new payload with the items that have one in their options
    /// (the next attempt sees it; a payload that is not valid is an error for the whole call).
    ///
    /// ```no_run
    /// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>, lease: crawlq::Lease) -> crawlq::Result<()> {
    /// let progress = crawlq::ReleaseOptions { payload: Some(serde_json::json!({"page": 7})) };
    /// assert_eq!(q.release_with(&[(lease.handle(), progress)]).await?, vec![true]);
    /// # Ok(()) }
    /// ```
    pub async fn release_with(
        &self,
        leases: &[(LeaseHandle, ReleaseOptions)],
    ) -> Result<Vec<bool>> {
        for (_, opts) in leases {
            self.home.payload_update(opts.payload.as_ref())?;
        }
        let flags = self
            .per_lease_with(
                leases,
                |ops, pairs: Vec<(LeaseHandle, ReleaseOptions)>| async move {
                    let reply = self.eval_on(ops, ops.release(&pairs)?).await?;
                    ops.decode_flags(reply, pairs.len())
                },
            )
            .await?;
        self.held.forget(leases.iter().map(|(l, _)| l));
        let released = flags.iter().filter(|ok| **ok).count();
        self.flush_reports(self.layout().await?, released as u64)
            .await;
        Ok(flags)
    }

    /// Recover up to `limit` expired leases now, in every shard (lease calls also do this,
    /// bounded).
    pub async fn reclaim(&self, limit: usize) -> Result<ReclaimReport> {
        if limit == 0 {
            return Err(Error::InvalidArgument("limit must be at least 1".into()));
        }
        let layout = self.layout().await?;
        let mut total = ReclaimReport::default();
        for report in self
            .each_shard(layout, |ops| async move {
                // calls of RECLAIM_PER_CALL until `limit` are handled or none are left
                let mut sum = ReclaimReport::default();
                loop {
                    let handled = (sum.requeued + sum.dead) as usize;
                    let ask = (limit - handled).min(RECLAIM_PER_CALL);
                    let reply = self.eval_on(ops, ops.reclaim(ask)).await?;
                    let part = ops.decode_reclaim(reply)?;
                    sum.requeued += part.requeued;
                    sum.dead += part.dead;
                    sum.remaining = part.remaining;
                    let handled = (sum.requeued + sum.dead) as usize;
                    if part.remaining == 0 || part.requeued + part.dead == 0 || handled >= limit {
                        return Ok(sum);
                    }
                }
            })
            .await?
        {
            total.requeued += report.requeued;
            total.dead += report.dead;
            total.remaining += report.remaining;
        }
        self.flush_reports(layout, total.requeued).await;
        Ok(total)
    }

    /// One call per shard, concurrently; the results in shard order.
    async fn each_shard<'a, R, F, Fut>(&'a self, layout: &'a Layout, call: F) -> Result<Vec<R>>
    where
        F: Fn(&'a Ops) -> Fut,
        Fut: Future<Output = Result<R>>,
    {
        futures_util::future::try_join_all(layout.all().iter().map(call)).await
    }

    /// Depth and counters, exact and O(1) per shard: the sums over the shards, and (with
    /// several shards) each shard's own in [`Stats::shards`].
    pub async fn stats(&self) -> Result<Stats> {
        let layout = self.layout().await?;
        Ok(Stats::total(self.read_stats(layout).await?.0))
    }

    /// The queue's shards grouped by the node that serves them ([`Executor::node_groups`]),
    /// in shard order within a group.
    async fn shards_by_node(&self, layout: &Layout) -> Vec<Vec<usize>> {
        let metas: Vec<String> = layout
            .all()
            .iter()
            .map(|ops| ops.keys().script_keys()[0].clone())
            .collect();
        let groups = self.exec.node_groups(&metas).await;
        let mut by_node: Vec<(usize, Vec<usize>)> = Vec::new();
        for (shard, group) in groups.into_iter().enumerate() {
            match by_node.iter_mut().find(|(g, _)| *g == group) {
                Some((_, shards)) => shards.push(shard),
                None => by_node.push((group, vec![shard])),
            }
        }
        by_node.into_iter().map(|(_, shards)| shards).collect()
    }

    /// Each shard's stats, read with one call per node that serves some of them (one call on
    /// one server, whatever the shard count), and whether that was one atomic reading of
    /// them all (one call). A node's call that fails (a slot moved since the node map was
    /// read) is made again shard by shard.
    async fn read_stats(&self, layout: &Layout) -> Result<(Vec<Stats>, bool)> {
        self.read_by_node(layout, Ops::stats_shards, Ops::stats, |ops, reply, _| {
            ops.decode_stats(reply)
        })
        .await
    }

    /// One reading of every shard: `together` (a script that reads several shards of one node,
    /// docs/PROTOCOL.md section 9, "Readings") once per node, or `alone` once per shard of a
    /// node whose call failed (a shard moved away since the node map was read); `decode` reads
    /// one shard's reply. Also answers whether every shard was read by one call (one atomic
    /// reading).
    async fn read_by_node<T>(
        &self,
        layout: &Layout,
        together: fn(&Ops, &[&Ops]) -> ScriptCall,
        alone: fn(&Ops) -> ScriptCall,
        decode: fn(&Ops, Reply, usize) -> Result<T>,
    ) -> Result<(Vec<T>, bool)> {
        let one = |s: usize| async move {
            let ops = layout.shard(s);
            decode(ops, self.exec.eval(alone(ops)).await?, s)
        };
        if layout.count() == 1 {
            return Ok((vec![one(0).await?], true));
        }
        let by_node = self.shards_by_node(layout).await;
        let one_reading = by_node.len() == 1;
        let readings =
            futures_util::future::try_join_all(by_node.iter().map(|shards| async move {
                let first = layout.shard(shards[0]);
                let others: Vec<&Ops> = shards[1..].iter().map(|s| layout.shard(*s)).collect();
                let read = match self.exec.eval(together(first, &others)).await {
                    Ok(reply) => reply.array().and_then(|replies| {
                        if replies.len() != shards.len() {
                            return Err(Error::Protocol(format!(
                                "a reading of {} shards answered {}",
                                shards.len(),
                                replies.len()
                            )));
                        }
                        replies
                            .into_iter()
                            .zip(shards)
                            .map(|(reply, s)| decode(layout.shard(*s), reply, *s))
                            .collect::<Result<Vec<T>>>()
                    }),
                    Err(e) => Err(e),
                };
                match read {
                    Ok(values) => Ok::<_, Error>(shards.iter().copied().zip(values).collect()),
                    Err(e) if matches!(e.code(), "UNAVAILABLE" | "TIMEOUT") => Err(e),
                    Err(_) => {
                        futures_util::future::try_join_all(
                            shards
                                .iter()
                                .map(|s| async move { Ok((*s, one(*s).await?)) }),
                        )
                        .await
                    }
                }
            }))
            .await?;
        let mut read: Vec<(usize, T)> = readings.into_iter().flatten().collect();
        read.sort_by_key(|(s, _)| *s);
        Ok((
            read.into_iter().map(|(_, value)| value).collect(),
            one_reading,
        ))
    }

    /// The crawl is finished: nothing is queued or leased anywhere in the queue (done and dead
    /// items do not count). Every worker of every language can ask; a worker that seeds
    /// what it finds before it acks the page it came from keeps the queue unfinished until
    /// its children are queued, so `true` stays true until someone seeds again.
    ///
    /// The shards a node serves are read atomically by one script (on one server: all of
    /// them). Over several nodes the readings are not one moment, so a second reading
    /// confirms: idle twice on every shard with nothing seeded, leased or requeued in between. An expired lease of a dead worker counts as leased
    /// until a lease call or [`Queue::reclaim`] takes it back.
    ///
    /// ```no_run
    /// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// while !q.is_finished().await? {
    ///     for lease in q.lease(10, std::time::Duration::from_secs(1)).await? {
    ///         q.ack(&[lease.handle()]).await?;
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn is_finished(&self) -> Result<bool> {
        let layout = self.layout().await?;
        let (shards, one_reading) = self.read_stats(layout).await?;
        let first = Stats::total(shards);
        if !first.is_idle() {
            return Ok(false);
        }
        if one_reading {
            return Ok(true);
        }
        let second = Stats::total(self.read_stats(layout).await?.0);
        Ok(first.idle_across(&second))
    }

    /// A page of dead letters, oldest first (across shards: each shard's oldest `offset +
    /// limit`, merged by when they died). A page of more than 500 is read in calls of 500, so
    /// that none holds Redis for long (a dead letter that moved meanwhile is listed once).
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let page = q.dead(100, 0).await?;
    /// for d in &page.items {
    ///     println!("{} {:?}", d.id, d.last_error);
    /// }
    /// println!("{} dead letters in all", page.total);
    /// # Ok(()) }
    /// ```
    pub async fn dead(&self, limit: usize, offset: usize) -> Result<DeadPage> {
        let layout = self.layout().await?;
        let pages = self
            .each_shard(layout, |ops| async move {
                let (limit, offset) = if layout.count() == 1 {
                    (limit, offset)
                } else {
                    (offset + limit, 0)
                };
                let (items, total) = paged(
                    offset,
                    limit,
                    DEAD_LIST_PER_CALL,
                    |d: &DeadLetter| d.id.clone(),
                    |want, at| async move {
                        let reply = self.exec.eval(ops.dead_list(want, at)).await?;
                        let page = ops.decode_dead_list(reply)?;
                        Ok((page.items, page.total))
                    },
                )
                .await?;
                Ok(DeadPage { total, items })
            })
            .await?;
        let mut total = 0;
        let mut items = Vec::new();
        for (s, page) in pages.into_iter().enumerate() {
            total += page.total;
            items.extend(page.items.into_iter().map(|mut d| {
                d.id = layout.public_id(std::mem::take(&mut d.id), s);
                d
            }));
        }
        if layout.count() > 1 {
            items.sort_by(|a, b| (a.died_at_ms, &a.id).cmp(&(b.died_at_ms, &b.id)));
            items = items.into_iter().skip(offset).take(limit).collect();
        }
        Ok(DeadPage { total, items })
    }

    /// Queue dead letters again with fresh attempts: the given ids, or all of them (`None`).
    /// Returns how many were requeued (unknown ids are skipped).
    pub async fn requeue_dead(&self, ids: Option<&[String]>) -> Result<u64> {
        let layout = self.layout().await?;
        let requeued: Vec<u64> = match ids {
            Some(ids) => {
                return Ok(self
                    .requeue_dead_ids(ids)
                    .await?
                    .into_iter()
                    .filter(|&requeued| requeued)
                    .count() as u64);
            }
            None => {
                self.each_shard(layout, |ops| async move {
                    // dead letters that stay (their item was queued again by a forced seed) keep
                    // their place at the head: the next call looks past them
                    let (mut total, mut staying) = (0, 0);
                    loop {
                        let reply = self
                            .eval_on(ops, ops.dead_requeue(None, REQUEUE_PER_CALL, staying))
                            .await?;
                        let (requeued, remaining, looked) = ops.decode_dead_requeue(reply)?;
                        total += requeued;
                        staying += looked.len() - requeued as usize;
                        if looked.len() < REQUEUE_PER_CALL || remaining as usize <= staying {
                            return Ok(total);
                        }
                    }
                })
                .await?
            }
        };
        let total = requeued.iter().sum();
        self.flush_reports(layout, total).await;
        Ok(total)
    }

    /// Queue these dead letters again; one flag per id, in the order given: `true` when it was
    /// a dead letter and is queued again, `false` when it is not a dead letter (unknown, already
    /// requeued or purged, or its item was queued again meanwhile by a forced seed).
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let flags = q.requeue_dead_ids(&["251".into(), "9999".into()]).await?;
    /// let unknown: Vec<_> = flags.iter().zip(["251", "9999"]).filter(|(ok, _)| !**ok).collect();
    /// # Ok(()) }
    /// ```
    pub async fn requeue_dead_ids(&self, ids: &[String]) -> Result<Vec<bool>> {
        let layout = self.layout().await?;
        let parts = layout.group(ids, |id| layout.split_id(id))?;
        let answered = self
            .each_part(parts, |s, ids: Vec<String>| async move {
                let ops = layout.shard(s);
                let mut flags = Vec::with_capacity(ids.len());
                for chunk in ids.chunks(REQUEUE_PER_CALL) {
                    let reply = self
                        .eval_on(ops, ops.dead_requeue(Some(chunk), chunk.len(), 0))
                        .await?;
                    flags.extend(ops.decode_dead_requeue(reply)?.2);
                }
                Ok(flags)
            })
            .await?;
        let flags = reassemble(ids.len(), answered);
        self.flush_reports(layout, flags.iter().filter(|&&f| f).count() as u64)
            .await;
        Ok(flags)
    }

    /// The dead letters with these ids, in the order given; `None` for an id that is not a
    /// dead letter. One round trip per shard the ids name (per 4,000 ids).
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// if let [Some(letter)] = q.dead_letters(&["251".into()]).await?.as_slice() {
    ///     println!("{} died after {} attempts: {:?}", letter.id, letter.attempts, letter.last_error);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn dead_letters(&self, ids: &[String]) -> Result<Vec<Option<DeadLetter>>> {
        let layout = self.layout().await?;
        let parts = layout.group(ids, |id| layout.split_id(id))?;
        let answered = self
            .each_part(parts, |s, ids: Vec<String>| async move {
                let ops = layout.shard(s);
                let mut found = Vec::with_capacity(ids.len());
                for chunk in ids.chunks(REQUEUE_PER_CALL) {
                    let reply = self.exec.eval(ops.dead_list_ids(chunk)).await?;
                    found.extend(ops.decode_dead_list_ids(reply)?.into_iter().map(|d| {
                        d.map(|mut d| {
                            d.id = layout.public_id(std::mem::take(&mut d.id), s);
                            d
                        })
                    }));
                }
                Ok(found)
            })
            .await?;
        Ok(reassemble(ids.len(), answered))
    }

    /// Pause the whole queue for every worker: lease calls hand out nothing (blocking ones keep
    /// waiting) until [`Queue::resume`]; seeding, answering leases already handed out, stats
    /// and dead letters go on. Returns whether it was paused already.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// q.pause().await?;
    /// assert!(q.is_paused().await?);
    /// q.resume().await?; // blocked lease calls wake now
    /// # Ok(()) }
    /// ```
    pub async fn pause(&self) -> Result<bool> {
        self.set_paused(Some(true), None).await
    }

    /// Pause the whole queue for `duration` (by the Redis clock), as [`Queue::pause`] does
    /// until resumed: blocked lease calls take work again when it ends. Pausing a paused
    /// queue sets the new end. Returns whether it was paused already.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// q.pause_for(std::time::Duration::from_secs(300)).await?; // a maintenance window
    /// # Ok(()) }
    /// ```
    pub async fn pause_for(&self, duration: Duration) -> Result<bool> {
        if duration > crate::config::MAX_DURATION {
            return Err(Error::InvalidArgument(
                "a pause must be at most 100 years".into(),
            ));
        }
        self.set_paused(Some(true), Some(duration)).await
    }

    /// Let a paused queue lease again and wake the lease calls waiting on it. Returns whether
    /// it was paused.
    pub async fn resume(&self) -> Result<bool> {
        self.set_paused(Some(false), None).await
    }

    /// Whether the queue is paused (a timed pause is over once its end has passed).
    pub async fn is_paused(&self) -> Result<bool> {
        self.set_paused(None, None).await
    }

    /// Every shard's state changes, so no shard leases while paused; the answer is whether
    /// any shard was paused before (for a read: is paused now).
    async fn set_paused(&self, pause: Option<bool>, duration: Option<Duration>) -> Result<bool> {
        let layout = self.layout().await?;
        let states = self
            .each_shard(layout, |ops| async move {
                let reply = self.eval_on(ops, ops.pause(pause, duration)).await?;
                ops.decode_pause(reply)
            })
            .await?;
        if pause == Some(false) && states.iter().any(|(before, _)| *before) {
            self.flush_reports(layout, 32).await;
        }
        Ok(states.iter().any(|(before, _)| *before))
    }

    /// Delete every dead letter; returns how many. They stay seen (re-seeding needs `force`).
    /// Runs as calls of at most 500 dead letters each, so that none holds Redis for long; if
    /// one fails, the dead letters it did not reach are still there (purge again).
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let purged = q.purge_dead().await?;
    /// println!("{purged} dead letters purged");
    /// # Ok(()) }
    /// ```
    pub async fn purge_dead(&self) -> Result<u64> {
        let layout = self.layout().await?;
        let counts = self
            .each_shard(layout, |ops| async move {
                let mut total = 0;
                loop {
                    let reply = self.exec.eval(ops.dead_purge(PURGE_PER_CALL)).await?;
                    let (purged, left) = ops.decode_dead_purge(reply)?;
                    total += purged;
                    if left == 0 || purged == 0 {
                        return Ok(total);
                    }
                }
            })
            .await?;
        Ok(counts.iter().sum())
    }

    /// Set the politeness delay of one host for every worker (`None`: back to each worker's
    /// `host_delay`). `host` may be a host or a URL.
    pub async fn set_host_delay(&self, host: &str, delay: Option<Duration>) -> Result<HostInfo> {
        if delay.is_some_and(|d| d > crate::config::MAX_DURATION) {
            return Err(Error::InvalidArgument(
                "a host delay must be at most 100 years".into(),
            ));
        }
        // (host_config answers the override in force after the call)
        self.host_config(
            host,
            HostChange {
                delay: Some(delay),
                ..HostChange::default()
            },
        )
        .await
    }

    /// Set the in-flight limit of one host for every worker: the most of its items leased at
    /// once (`Some(0)`: no limit, whatever the workers' `host_in_flight`; `None`: back to it).
    /// A host that has as many items leased as its limit allows is held (`full` in
    /// [`HostInfo`]) until an ack, nack, release or expiry of one of them frees a slot; raising
    /// the limit frees it at once. Items leased while no limit applied are not counted.
    /// `host` may be a host or a URL.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let info = q.set_host_in_flight("slow.example", Some(1)).await?;
    /// assert_eq!(info.in_flight_limit, Some(1));
    /// # Ok(()) }
    /// ```
    pub async fn set_host_in_flight(&self, host: &str, limit: Option<u64>) -> Result<HostInfo> {
        let limit = match limit {
            Some(n) if n > crate::config::MAX_IN_FLIGHT as u64 => {
                return Err(Error::InvalidArgument(format!(
                    "an in-flight limit must be at most {}, got {n}",
                    crate::config::MAX_IN_FLIGHT
                )));
            }
            other => other.map(|n| n as u32),
        };
        let info = self
            .host_config(
                host,
                HostChange {
                    in_flight: Some(limit),
                    ..HostChange::default()
                },
            )
            .await?;
        if !info.full && info.ready > 0 {
            self.flush_reports(self.layout().await?, 1).await;
        }
        Ok(info)
    }

    /// Set when one host's delay is counted from, for every worker (`None`: back to the
    /// workers' `host_delay_after` and `host_delay_factor`). With [`DelayAfter::Answer`] its
    /// next lease waits its delay after the previous item's answer (ack, nack, release or
    /// expiry), or `factor` times how long that item was leased when longer (within the
    /// workers' `host_delay_max`; `None`: their `host_delay_factor`), and it has at most
    /// `max(limit, 1)` items in flight. Setting it back to [`DelayAfter::Lease`] or `None`
    /// frees a host held for an answer at once. `host` may be a host or a URL.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// use crawlq::{DelayAfter, HostPacing};
    /// let slow = HostPacing { after: DelayAfter::Answer, factor: Some(2.0) };
    /// let info = q.set_host_delay_after("slow.example", Some(slow)).await?;
    /// assert_eq!(info.pacing, Some(slow));
    /// # Ok(()) }
    /// ```
    pub async fn set_host_delay_after(
        &self,
        host: &str,
        pacing: Option<HostPacing>,
    ) -> Result<HostInfo> {
        if let Some(p) = pacing {
            match p.factor {
                Some(f) if p.after == DelayAfter::Lease => {
                    return Err(Error::InvalidArgument(format!(
                        "a delay factor ({f}) applies only after the answer, not after the lease"
                    )));
                }
                Some(f)
                    if !f.is_finite() || !(0.0..=crate::config::MAX_DELAY_FACTOR).contains(&f) =>
                {
                    return Err(Error::InvalidArgument(format!(
                        "a delay factor must be within 0..=1000, got {f}"
                    )));
                }
                _ => {}
            }
        }
        let info = self
            .host_config(
                host,
                HostChange {
                    pacing: Some(pacing),
                    ..HostChange::default()
                },
            )
            .await?;
        if !info.full && info.ready > 0 {
            self.flush_reports(self.layout().await?, 1).await;
        }
        Ok(info)
    }

    /// Set a host's delay from its robots.txt `Crawl-delay` (`None`: its robots.txt has none
    /// now), for every worker, unless an operator set one with [`Queue::set_host_delay`]: an
    /// operator's delay stays, and replaces one from robots.txt. A delay above the queue's
    /// `crawl_delay_max` (default 300 s) is taken as that. `host` may be a host or a URL.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// use std::time::Duration;
    /// // robots.txt of example.com says "Crawl-delay: 2"
    /// let info = q.set_host_crawl_delay("example.com", Some(Duration::from_secs(2))).await?;
    /// assert!(info.delay_from_robots || info.delay_override_ms.is_some());
    /// # Ok(()) }
    /// ```
    pub async fn set_host_crawl_delay(
        &self,
        host: &str,
        delay: Option<Duration>,
    ) -> Result<HostInfo> {
        let delay = delay.map(|d| d.min(self.config.crawl_delay_max));
        self.host_config(
            host,
            HostChange {
                robots_delay: Some(delay),
                ..HostChange::default()
            },
        )
        .await
    }

    /// Wait for a turn of the host of `url` for a request the frontier does not lease: a
    /// redirect that an HTTP client follows while it fetches a leased item. A turn is spaced
    /// from the host's leases and other turns by its delay, as a lease is, across every worker
    /// and shard: it waits until the host's politeness time, takes it, and moves the host's
    /// next lease to the turn + its delay. It waits while the host has as many items leased
    /// as its in-flight limit allows, or is paused. `lease` is the lease being fetched: a
    /// request to that lease's own host runs in its in-flight slot, and for a host paced after
    /// the answer it waits the delay from now (the answer that led to it). A turn counts in
    /// no in-flight slot. The whole queue being paused does not stop a turn (it is part of a
    /// fetch already under way).
    ///
    /// Returns `true` when the turn is taken and its time has come (start the request now),
    /// `false` when it would come later than `timeout` (nothing is taken then). A timeout
    /// over one day is refused.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// use std::time::Duration;
    /// let lease = q.lease(1, Duration::ZERO).await?.remove(0);
    /// // the fetch of lease.url answered 301 Location: https://www.example.com/
    /// if q.wait_host_turn("https://www.example.com/", Some(&lease.handle()), Duration::from_secs(30)).await? {
    ///     // follow the redirect now
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn wait_host_turn(
        &self,
        url: &str,
        lease: Option<&LeaseHandle>,
        timeout: Duration,
    ) -> Result<bool> {
        if timeout > MAX_WAIT {
            return Err(Error::InvalidArgument(
                "timeout must be at most one day".into(),
            ));
        }
        let key = self.home.host_key_of(url)?;
        let own = lease.is_some_and(|l| l.host == key);
        let started = self.exec.monotonic_ms();
        let timeout_ms = timeout.as_millis() as u64;
        loop {
            let layout = self.layout().await?;
            let ops = layout.shard(layout.of_host(&key));
            let left = timeout_ms.saturating_sub(self.exec.monotonic_ms().saturating_sub(started));
            let call = ops.host_turn(&key, own, Duration::from_millis(left));
            let turn = ops.decode_host_turn(self.eval_on(ops, call).await?)?;
            let probe = format!("{}:probe", ops.keys().base());
            match turn {
                HostTurn::Taken(wait) => {
                    if !wait.is_zero() {
                        // a key nobody pushes to: BLPOP is the executor's sleep
                        self.exec.wait(&probe, wait).await?;
                    }
                    return Ok(true);
                }
                HostTurn::TooFar(_) => return Ok(false),
                HostTurn::Full | HostTurn::Paused(_) => {
                    if left == 0 {
                        return Ok(false);
                    }
                    // (not the wake list: its markers are for blocked lease calls)
                    let poll = left.min(HOST_TURN_POLL.as_millis() as u64);
                    self.exec.wait(&probe, Duration::from_millis(poll)).await?;
                }
            }
        }
    }

    /// Politeness state of one host: its delay, ready items, hold and pause.
    pub async fn host_info(&self, host: &str) -> Result<HostInfo> {
        self.host_config(host, HostChange::default()).await
    }

    /// Pause one host for every worker: no lease takes its items until `duration` has passed
    /// (by the Redis clock) or, with `None`, until [`Queue::resume_host`]. Seeding it, and
    /// answering its leases already handed out, go on. Pausing a paused host sets the new end.
    /// `host` may be a host or a URL.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// use std::time::Duration;
    /// q.pause_host("example.com", Some(Duration::from_secs(600))).await?; // a 429 storm
    /// let info = q.host_info("https://example.com/a").await?;
    /// assert!(info.paused && info.paused_until_ms.is_some());
    /// q.resume_host("example.com").await?; // blocked lease calls wake now
    /// # Ok(()) }
    /// ```
    pub async fn pause_host(&self, host: &str, duration: Option<Duration>) -> Result<HostInfo> {
        if duration.is_some_and(|d| d > crate::config::MAX_DURATION) {
            return Err(Error::InvalidArgument(
                "a host pause must be at most 100 years".into(),
            ));
        }
        self.host_config(
            host,
            HostChange {
                pause: HostPause::Pause(duration),
                ..HostChange::default()
            },
        )
        .await
    }

    /// End a host's pause: it is leasable again once what was left of its politeness delay
    /// has passed, and blocked lease calls wake. A host that is not paused is left as it is.
    pub async fn resume_host(&self, host: &str) -> Result<HostInfo> {
        let info = self
            .host_config(
                host,
                HostChange {
                    pause: HostPause::Resume,
                    ..HostChange::default()
                },
            )
            .await?;
        if info.ready > 0 {
            self.flush_reports(self.layout().await?, 1).await;
        }
        Ok(info)
    }

    /// Set the most new URLs one host may add (`None`: back to the queue's default budget).
    /// Seeds of new URLs past it are refused, each reported in the seed report's `invalid`
    /// list with the code `budget_exhausted` (the rest of the batch is seeded); they are not
    /// marked seen, so they come in once the budget grows. Duplicates and forced re-adds are
    /// not counted. `host` may be a host or a URL.
    ///
    /// Usage is counted while the queue has any budget (a default or a host's): URLs added
    /// before the first budget was set do not count.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let info = q.set_host_budget("example.com", Some(10_000)).await?;
    /// assert_eq!(info.budget_remaining(), Some(10_000 - info.budget_used.min(10_000)));
    /// # Ok(()) }
    /// ```
    pub async fn set_host_budget(&self, host: &str, urls: Option<u64>) -> Result<HostInfo> {
        let key = self.home.host_key_of(host)?;
        let layout = self.layout().await?;
        let ops = layout.shard(layout.of_host(&key));
        // the host's state is read first: a foreign value at one of its keys fails the call
        // before the budget is written
        let mut info = self.host_info(&key).await?;
        let reply = self
            .exec
            .eval(ops.host_budget(Some(&key), Some(urls)))
            .await?;
        let (own, default, used) = ops.decode_host_budget(reply)?;
        info.budget = own.or(default);
        info.budget_used = used;
        Ok(info)
    }

    /// Set the budget of every host that has none of its own ([`Queue::set_host_budget`];
    /// `None`: no default).
    pub async fn set_default_host_budget(&self, urls: Option<u64>) -> Result<()> {
        let layout = self.layout().await?;
        self.each_shard(layout, |ops| async move {
            let reply = self.exec.eval(ops.host_budget(None, Some(urls))).await?;
            ops.decode_host_budget(reply)
        })
        .await?;
        Ok(())
    }

    /// The queue's default host budget, if any.
    pub async fn default_host_budget(&self) -> Result<Option<u64>> {
        let layout = self.layout().await?;
        let ops = layout.shard(0);
        let reply = self.exec.eval(ops.host_budget(None, None)).await?;
        Ok(ops.decode_host_budget(reply)?.1)
    }

    /// A page of the queue's hosts, those holding at least one item (queued, leased or dead):
    /// the most items first, then by host key, with each one's ready, delayed, leased and dead
    /// counts, pause and next due time. Pass the previous page's `cursor` for the next one.
    /// Each script call is bounded whatever the number of hosts: a page (`limit` hosts, at most
    /// 1,000) is read from each shard in calls of at most 250 hosts and 1,250 lanes (a host's
    /// lanes are read in one call). Hosts whose counts change between two calls may move
    /// between pages, or within a page between its calls.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let busiest = q.list_hosts(None, 10).await?;
    /// for h in &busiest.hosts {
    ///     println!("{}: {} items, {} ready", h.host, h.items, h.ready);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_hosts(&self, cursor: Option<&str>, limit: usize) -> Result<HostPage> {
        const MAX_LIMIT: usize = 1_000;
        // per script call: a few ms of Redis time on a slow machine (bench/README.md)
        const CALL_HOSTS: usize = 250;
        const CALL_LANES: usize = 1_250;
        if limit == 0 || limit > MAX_LIMIT {
            return Err(Error::InvalidArgument(format!(
                "list_hosts limit must be 1..={MAX_LIMIT}, got {limit}"
            )));
        }
        let layout = self.layout().await?;
        let offsets = parse_host_cursor(cursor, layout.count())?;
        let offsets = &offsets;
        // one shard's page alone, in calls of CALL_HOSTS
        let one_shard = |s: usize| async move {
            let ops = layout.shard(s);
            let (mut offset, mut page) = (offsets[s], Vec::new());
            loop {
                let want = (limit - page.len()).min(CALL_HOSTS);
                let reply = self
                    .exec
                    .eval(ops.hosts_list(offset, want, CALL_LANES))
                    .await?;
                let (total, hosts) = ops.decode_hosts_list(reply)?;
                offset += hosts.len() as u64;
                let none = hosts.is_empty();
                page.extend(hosts);
                // (a call answers fewer hosts than asked when it read its lanes' worth:
                // the next call goes on)
                if none || page.len() >= limit || offset >= total {
                    return Ok::<_, Error>((total, page));
                }
            }
        };
        let by_node = self.shards_by_node(layout).await;
        let pages = futures_util::future::try_join_all(by_node.iter().map(|shards| async move {
            if shards.len() == 1 {
                return Ok(vec![(shards[0], one_shard(shards[0]).await?)]);
            }
            // the node's shards in calls of at most CALL_HOSTS hosts and CALL_LANES lanes in
            // all (what one shard's call reads), each shard asked for the rest of its page
            // until it has `limit` hosts or answered its last
            let mut state: Vec<(usize, u64, Option<u64>, Vec<HostCounts>)> = shards
                .iter()
                .map(|s| (*s, offsets[*s], None, Vec::new()))
                .collect();
            loop {
                let asks: Vec<(usize, u64, usize)> = state
                    .iter()
                    .enumerate()
                    .filter(|(_, (_, offset, total, page))| {
                        total.is_none_or(|t| *offset < t) && page.len() < limit
                    })
                    .map(|(n, (_, offset, _, page))| (n, *offset, limit - page.len()))
                    .collect();
                if asks.is_empty() {
                    break;
                }
                let first = layout.shard(state[asks[0].0].0);
                let call: Vec<(&Ops, u64, usize)> = asks
                    .iter()
                    .map(|(n, offset, want)| (layout.shard(state[*n].0), *offset, *want))
                    .collect();
                let replies = match self
                    .exec
                    .eval(first.hosts_list_shards(CALL_HOSTS, CALL_LANES, &call))
                    .await
                {
                    Ok(reply) => first.decode_hosts_list_shards(reply, asks.len()),
                    Err(e) => Err(e),
                };
                let replies =
                    match replies {
                        Ok(replies) => replies,
                        Err(e) if matches!(e.code(), "UNAVAILABLE" | "TIMEOUT") => return Err(e),
                        Err(_) => {
                            // the node map was stale: each shard alone
                            return futures_util::future::try_join_all(shards.iter().map(
                                |s| async move { Ok::<_, Error>((*s, one_shard(*s).await?)) },
                            ))
                            .await;
                        }
                    };
                for ((n, _, _), (total, hosts)) in asks.iter().zip(replies) {
                    let (_, offset, known, page) = &mut state[*n];
                    *known = Some(total);
                    if hosts.is_empty() {
                        // nothing more answered (hosts left meanwhile): the shard's page ends
                        *offset = (*offset).max(total);
                    }
                    *offset += hosts.len() as u64;
                    page.extend(hosts);
                }
            }
            Ok(state
                .into_iter()
                .map(|(s, _, total, page)| (s, (total.unwrap_or(0), page)))
                .collect())
        }))
        .await?;
        let mut per_shard: Vec<(u64, Vec<HostCounts>)> = vec![(0, Vec::new()); layout.count()];
        for (s, page) in pages.into_iter().flatten() {
            per_shard[s] = page;
        }
        // Merge the shards' pages in order; stop where a shard that has more hosts ran out of
        // answered ones (its next host may sort before the others' rest).
        let mut next = offsets.clone();
        let mut taken = vec![0usize; per_shard.len()];
        let mut hosts = Vec::new();
        while hosts.len() < limit {
            let mut best: Option<usize> = None;
            let mut blocked = false;
            for (s, (total, page)) in per_shard.iter().enumerate() {
                match page.get(taken[s]) {
                    Some(h) => {
                        let better = best.is_none_or(|b| {
                            let o = &per_shard[b].1[taken[b]];
                            (std::cmp::Reverse(h.items), &h.host)
                                < (std::cmp::Reverse(o.items), &o.host)
                        });
                        if better {
                            best = Some(s);
                        }
                    }
                    None => blocked |= next[s] < *total,
                }
            }
            let Some(s) = best.filter(|_| !blocked) else {
                break;
            };
            hosts.push(per_shard[s].1[taken[s]].clone());
            taken[s] += 1;
            next[s] += 1;
        }
        let total: u64 = per_shard.iter().map(|(t, _)| t).sum();
        let more = per_shard.iter().zip(&next).any(|((t, _), n)| n < t);
        Ok(HostPage {
            hosts,
            total,
            cursor: more.then(|| {
                next.iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(".")
            }),
        })
    }

    /// Delete a host from the queue: its ready, delayed, leased and dead items, its lanes, its
    /// settings (delay override, adaptive delay, pause, budget and its count). Runs as bounded
    /// calls (at most 500 entries each) while workers go on: the host is paused first, so none
    /// of its items is leased meanwhile; the leases removed answer lost when acked, so no
    /// deleted item is acked as done. Its URLs stay in the seen set (seeding one again is a
    /// duplicate unless forced) unless `forget_seen`: then the removed items' fingerprints
    /// leave it too, so they can be seeded again (URLs of the host acked before are not
    /// forgotten: the queue keeps no record of them). Every counter stays exact. `host` may
    /// be a host or a URL.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let gone = q.delete_host("spam.example", false).await?;
    /// println!("removed {} items", gone.removed());
    /// # Ok(()) }
    /// ```
    pub async fn delete_host(&self, host: &str, forget_seen: bool) -> Result<HostDeletion> {
        const STEP_LIMIT: usize = 500;
        let key = self.home.host_key_of(host)?;
        let layout = self.layout().await?;
        let ops = layout.shard(layout.of_host(&key));
        let mut total = HostDeletion {
            host: key.clone(),
            ..Default::default()
        };
        let (mut step, mut cursor) = ("leases".to_string(), "0".to_string());
        let deletion = Ops::deletion_id(self.exec.monotonic_ms());
        loop {
            let reply = self
                .exec
                .eval(ops.host_delete(&key, &step, &cursor, STEP_LIMIT, forget_seen, &deletion))
                .await?;
            let (next, removed, identities) = ops.decode_host_delete(reply)?;
            if !identities.is_empty() {
                let reply = self.exec.eval(ops.seen_forget(&identities)).await?;
                total.forgotten += ops.decode_count(reply)?;
            }
            total.add_step(&removed);
            match next {
                Some((s, c)) => (step, cursor) = (s, c),
                None => break,
            }
        }
        if total.left > 0 {
            self.flush_reports(layout, 1).await;
        }
        Ok(total)
    }

    async fn host_config(&self, host: &str, change: HostChange) -> Result<HostInfo> {
        let key = self.home.host_key_of(host)?;
        let layout = self.layout().await?;
        let ops = layout.shard(layout.of_host(&key));
        let reply = self.eval_on(ops, ops.host_config(&key, &change)).await?;
        ops.decode_host_config(reply, &key)
    }

    /// The items the next lease calls would take (one per leasable host, higher priority and
    /// older first across shards), without leasing. A limit over 250 is read in calls of 250
    /// hosts, so that none holds Redis for long; a lease between two of them can shift the
    /// hosts, so a long peek is a close look rather than a snapshot (no item is listed twice).
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// for item in q.peek(10).await? {
    ///     println!("{} {}", item.host, item.url.as_deref().unwrap_or(""));
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn peek(&self, limit: usize) -> Result<Vec<StoredItem>> {
        let layout = self.layout().await?;
        let per_shard = self
            .each_shard(layout, |ops| async move {
                let (items, _) = paged(
                    0,
                    limit,
                    PEEK_PER_CALL,
                    |i: &StoredItem| i.id.clone(),
                    |want, at| async move {
                        let reply = self.exec.eval(ops.peek(want, at)).await?;
                        Ok((ops.decode_peek(reply)?, 0))
                    },
                )
                .await?;
                Ok(items)
            })
            .await?;
        let mut items: Vec<StoredItem> = Vec::new();
        for (s, shard_items) in per_shard.into_iter().enumerate() {
            items.extend(shard_items.into_iter().map(|mut i| {
                i.id = layout.public_id(std::mem::take(&mut i.id), s);
                i
            }));
        }
        if layout.count() > 1 {
            items.sort_by(|a, b| {
                (-i32::from(a.priority), a.ts).cmp(&(-i32::from(b.priority), b.ts))
            });
            items.truncate(limit);
        }
        Ok(items)
    }

    /// A number in [0, 1) that differs per lease and per call, for backoff jitter. It needs
    /// no entropy, only spread, and stays available on wasm32 without a random source.
    fn jitter_random(&self, token: u64) -> f64 {
        let nonce = self.jitter_nonce.fetch_add(1, Ordering::Relaxed);
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&token.to_le_bytes());
        bytes[8..].copy_from_slice(&nonce.to_le_bytes());
        (xxhash_rust::xxh3::xxh3_64(&bytes) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A part's items split by the known-seen cache's answer (`known`): those to send, and those
/// it knew as seen.
fn split_known(part: &[PreparedItem], known: &[bool]) -> (Vec<PreparedItem>, Vec<PreparedItem>) {
    let (mut send, mut hits) = (Vec::new(), Vec::new());
    for (item, k) in part.iter().zip(known) {
        if *k { &mut hits } else { &mut send }.push(item.clone());
    }
    (send, hits)
}

/// What became of each item of a seed call of `shard`, as its reply says.
fn seeded_items<'a>(
    layout: &'a Layout,
    shard: usize,
    ids: &'a [Seeded],
) -> impl Iterator<Item = Option<ItemSeeded>> + 'a {
    ids.iter().map(move |s| {
        Some(match s {
            Seeded::OverBudget => ItemSeeded::OverBudget,
            Seeded::Duplicate => ItemSeeded::Duplicate,
            // record ids are numbered per shard: the public id names it
            Seeded::Added(id) => ItemSeeded::Queued(Some(layout.public_id(id.to_string(), shard))),
        })
    })
}

/// Put what became of the `sent` items (prepared from `items`) into `report`: the ids of those
/// queued; those refused by their host's budget as invalid items.
fn report_seeded(
    report: &mut SeedReport,
    items: &[SeedItem],
    sent: &[PreparedItem],
    seeded: Vec<Option<ItemSeeded>>,
) {
    for (item, seeded) in sent.iter().zip(seeded) {
        match seeded {
            Some(ItemSeeded::Queued(id)) => report.ids[item.index] = id,
            Some(ItemSeeded::Duplicate) | None => {}
            Some(ItemSeeded::OverBudget) => report.invalid.push(InvalidInput {
                index: item.index,
                input: items[item.index].input.clone(),
                reason: InvalidReason::BudgetExhausted(item.host.clone()),
            }),
        }
    }
}

/// What became of one item of a seed chunk.
#[derive(Debug, Clone)]
enum ItemSeeded {
    /// Queued, with its public id (`None` only where the report keeps none).
    Queued(Option<String>),
    Duplicate,
    /// Refused by its host's budget.
    OverBudget,
}

/// A seed chunk's result: the counts and items of the calls that succeeded (`None` for the
/// items of a call that failed), and the first failure with its shard.
struct ChunkSeeded {
    /// The chunk's items, handed back.
    sent: Vec<PreparedItem>,
    counts: SeedOutcome,
    items: Vec<Option<ItemSeeded>>,
    error: Option<(usize, Error)>,
}

/// A call handed to the executor: still on its way, or already answered.
enum Flight<F, T> {
    Sent(F),
    Answered(T),
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
