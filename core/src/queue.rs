//! The queue client: every operation over any [`Executor`] (the native Redis client, or a
//! JavaScript transport in the WebAssembly build). Chunking, the blocking wait and the
//! per-lease bookkeeping live here once.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::model::*;
use crate::model::{AnswerResults, Answers};
use crate::ops::{LeaseBatch, Ops, Reply, ScriptCall};
use crate::wire::StoredItem;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
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
    /// Run a script: EVALSHA with the call's SHA-1, falling back to EVAL with the source when
    /// the server answers NOSCRIPT.
    fn eval(&self, call: ScriptCall) -> impl Future<Output = Result<Reply>> + MaybeSend;

    /// Wait up to `timeout` for a marker on the list `key` (BLPOP on a connection of its own:
    /// a blocking command would stall every other command sharing its connection). Returns
    /// whether a marker was taken.
    fn wait(&self, key: &str, timeout: Duration) -> impl Future<Output = Result<bool>> + MaybeSend;

    /// Milliseconds on a local monotonic clock; only differences are used, to bound waits.
    fn monotonic_ms(&self) -> u64;
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

/// Largest number of leases sent in one ack/nack/extend/release round trip.
const LEASES_PER_CALL: usize = 1000;
/// Dead letters requeued per round trip by `requeue_dead(None)`.
const REQUEUE_PER_CALL: usize = 1000;
/// The longest blocking wait a lease call accepts.
const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);
/// How long [`Queue::lease_interruptible`] blocks at a time: how quickly it notices a stop
/// request (Ctrl-C, an `AbortSignal`, a closed iterator).
pub const WAIT_SLICE: Duration = Duration::from_millis(250);

/// A crawl frontier in Redis.
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
    ops: Ops,
    exec: E,
    jitter_nonce: AtomicU64,
}

impl<E: Executor> Queue<E> {
    /// A queue named `name` over an executor.
    pub fn with_executor(exec: E, name: &str, config: Config) -> Result<Queue<E>> {
        Ok(Queue {
            name: name.to_string(),
            ops: Ops::new(name, config)?,
            exec,
            jitter_nonce: AtomicU64::new(0),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn config(&self) -> &Config {
        self.ops.config()
    }

    /// The sans-IO operations of this queue.
    pub fn ops(&self) -> &Ops {
        &self.ops
    }

    pub fn executor(&self) -> &E {
        &self.exec
    }

    /// Test only: pin the scripts' clock (ms since epoch), or return to the server's clock.
    pub fn set_fixed_clock(&self, ms: Option<i64>) {
        self.ops.set_fixed_clock(ms);
    }

    /// Seed URLs or hosts. Invalid items are reported with their index and never stop the
    /// rest; each chunk of `seed_batch` items is one round trip.
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
        let defaults = self.ops.seed_defaults(opts)?;
        let chunk_len = self.config().seed_batch.max(1);
        let mut report = SeedReport::default();
        let mut done = 0;
        // One chunk in flight while the next one is normalized: the client's work overlaps
        // Redis's, and chunks still run in order (ids follow the caller's order).
        let mut in_flight = None;
        let mut offset = 0;
        loop {
            let next = if offset < items.len() {
                let end = (offset + chunk_len).min(items.len());
                let (prepared, invalid) =
                    self.ops
                        .prepare_with(&items[offset..end], offset, opts, &defaults);
                offset = end;
                Some((prepared, invalid))
            } else {
                None
            };
            if let Some((flight, sent)) = in_flight.take() {
                let reply = match flight {
                    Flight::Sent(reply) => reply.await,
                    Flight::Answered(reply) => reply,
                };
                let reply = reply.map_err(|e| {
                    with_context(
                        e,
                        &format!(
                            "after {} of {} items were seeded",
                            report.added + report.duplicates,
                            items.len()
                        ),
                    )
                })?;
                let (added, duplicates) = self.ops.decode_seed(reply, sent)?;
                report.added += added;
                report.duplicates += duplicates;
                done += sent;
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
            let mut reply = Box::pin(self.exec.eval(self.ops.seed(&prepared)));
            // Poll once so the executor sends the call now, before the next chunk is prepared.
            let flight = match poll_once(&mut reply).await {
                Poll::Ready(answered) => Flight::Answered(answered),
                Poll::Pending => Flight::Sent(reply),
            };
            in_flight = Some((flight, prepared.len()));
        }
        Ok(report)
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
        let ttl = opts.ttl.unwrap_or(self.config().lease_ttl);
        check_ttl(ttl)?;
        let wait_ms = opts.wait.as_millis() as u64;
        let started = self.exec.monotonic_ms();
        loop {
            let batch = self.lease_once(opts.max, ttl).await?;
            let buried = self.bury_undecodable(&batch.undecodable).await?;
            if !batch.leases.is_empty() {
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
            self.exec
                .wait(self.ops.keys().wake(), Duration::from_millis(sleep))
                .await?;
        }
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

    /// One lease script call, without waiting: the raw batch with reclaim counts and the time
    /// something next becomes due. Undecodable records are in the batch's `undecodable` (see
    /// [`Queue::bury_undecodable`]).
    pub async fn lease_once(&self, max: usize, ttl: Duration) -> Result<LeaseBatch> {
        let reply = self.exec.eval(self.ops.lease(max, ttl)).await?;
        self.ops.decode_lease(reply, ttl)
    }

    /// Ack leases (the work is done). One flag per lease: `false` when the lease was not live
    /// any more (expired and reclaimed, or already answered): nothing changed for it.
    pub async fn ack(&self, leases: &[LeaseHandle]) -> Result<Vec<bool>> {
        let mut out = Vec::with_capacity(leases.len());
        for chunk in leases.chunks(LEASES_PER_CALL) {
            let reply = self.exec.eval(self.ops.ack(chunk)).await?;
            out.extend(self.ops.decode_flags(reply, chunk.len())?);
        }
        Ok(out)
    }

    /// Fail leases: retry (backoff or explicit delay) or dead-letter each one.
    pub async fn nack(&self, leases: &[(LeaseHandle, NackOptions)]) -> Result<Vec<NackOutcome>> {
        let mut out = Vec::with_capacity(leases.len());
        for chunk in leases.chunks(LEASES_PER_CALL) {
            let randoms: Vec<f64> = chunk
                .iter()
                .map(|(l, _)| self.jitter_random(l.token))
                .collect();
            let reply = self.exec.eval(self.ops.nack(chunk, &randoms)).await?;
            out.extend(self.ops.decode_nack(reply, chunk.len())?);
        }
        Ok(out)
    }

    /// Push the deadline of leases to now + `ttl`. `None` for a lease that is not live.
    pub async fn extend(&self, leases: &[LeaseHandle], ttl: Duration) -> Result<Vec<Option<i64>>> {
        check_ttl(ttl)?;
        let mut out = Vec::with_capacity(leases.len());
        for chunk in leases.chunks(LEASES_PER_CALL) {
            let reply = self.exec.eval(self.ops.extend(chunk, ttl)).await?;
            out.extend(self.ops.decode_extend(reply, chunk.len())?);
        }
        Ok(out)
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
            Answer::Release => AnswerResults::Flags(self.release(leases).await?),
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
        let mut out = Vec::with_capacity(leases.len());
        for chunk in leases.chunks(LEASES_PER_CALL) {
            let reply = self.exec.eval(self.ops.release(chunk)).await?;
            out.extend(self.ops.decode_flags(reply, chunk.len())?);
        }
        Ok(out)
    }

    /// Recover up to `limit` expired leases now (lease calls also do this, bounded).
    pub async fn reclaim(&self, limit: usize) -> Result<ReclaimReport> {
        if limit == 0 {
            return Err(Error::InvalidArgument("limit must be at least 1".into()));
        }
        let reply = self.exec.eval(self.ops.reclaim(limit)).await?;
        self.ops.decode_reclaim(reply)
    }

    /// Depth and counters, exact and O(1).
    pub async fn stats(&self) -> Result<Stats> {
        let reply = self.exec.eval(self.ops.stats()).await?;
        self.ops.decode_stats(reply)
    }

    /// A page of dead letters, oldest first.
    pub async fn dead(&self, limit: usize, offset: usize) -> Result<DeadPage> {
        let reply = self.exec.eval(self.ops.dead_list(limit, offset)).await?;
        self.ops.decode_dead_list(reply)
    }

    /// Queue dead letters again with fresh attempts: the given ids, or all of them (`None`).
    /// Returns how many were requeued (unknown ids are skipped).
    pub async fn requeue_dead(&self, ids: Option<&[String]>) -> Result<u64> {
        match ids {
            Some(ids) => {
                let mut total = 0;
                for chunk in ids.chunks(REQUEUE_PER_CALL) {
                    let reply = self
                        .exec
                        .eval(self.ops.dead_requeue(Some(chunk), chunk.len()))
                        .await?;
                    total += self.ops.decode_dead_requeue(reply)?.0;
                }
                Ok(total)
            }
            None => {
                let mut total = 0;
                loop {
                    let reply = self
                        .exec
                        .eval(self.ops.dead_requeue(None, REQUEUE_PER_CALL))
                        .await?;
                    let (requeued, remaining, _) = self.ops.decode_dead_requeue(reply)?;
                    total += requeued;
                    if remaining == 0 || requeued == 0 {
                        return Ok(total);
                    }
                }
            }
        }
    }

    /// Delete every dead letter; returns how many. They stay seen (re-seeding needs `force`).
    pub async fn purge_dead(&self) -> Result<u64> {
        let reply = self.exec.eval(self.ops.dead_purge()).await?;
        self.ops.decode_count(reply)
    }

    /// Set the politeness delay of one host for every worker (`None`: back to each worker's
    /// `host_delay`). `host` may be a host or a URL.
    pub async fn set_host_delay(&self, host: &str, delay: Option<Duration>) -> Result<HostInfo> {
        if delay.is_some_and(|d| d > crate::config::MAX_DURATION) {
            return Err(Error::InvalidArgument(
                "a host delay must be at most 100 years".into(),
            ));
        }
        let key = self.ops.host_key_of(host)?;
        let reply = self
            .exec
            .eval(self.ops.host_config(&key, Some(delay)))
            .await?;
        let mut info = self.ops.decode_host_config(reply, &key)?;
        info.delay_override_ms = delay.map(|d| d.as_millis() as u64);
        Ok(info)
    }

    /// Politeness state of one host.
    pub async fn host_info(&self, host: &str) -> Result<HostInfo> {
        let key = self.ops.host_key_of(host)?;
        let reply = self.exec.eval(self.ops.host_config(&key, None)).await?;
        self.ops.decode_host_config(reply, &key)
    }

    /// The items the next lease calls would take (one per leasable host), without leasing.
    pub async fn peek(&self, limit: usize) -> Result<Vec<StoredItem>> {
        let reply = self.exec.eval(self.ops.peek(limit)).await?;
        self.ops.decode_peek(reply)
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

/// A call handed to the executor: still on its way, or already answered.
enum Flight<F> {
    Sent(F),
    Answered(Result<Reply>),
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
