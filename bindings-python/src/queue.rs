//! `Queue` (blocking, GIL released during every Redis call) and `AsyncQueue` (asyncio). Every
//! operation is written once, in `queue_methods!`, against a [`Mode`]: the two classes differ
//! only in how a core call is run (and in their constructors and context managers).

use crate::args::{LeaseArg, json_out, lease_args, nack_args, release_args, seconds, seed_args};
use crate::convert::{Int, Text, to_json};
use crate::errors::to_pyerr;
use crate::handle::{Awaiting, Blocking, CoreQueue, Handle, Mode};
use crate::runtime::{Convert, awaitable, block_on};
use crate::types::{Lease, SeedReport};
use crate::work::{AsyncLeased, AsyncWork, Leased, Work};
use crawlq::binding::progress::Reporter;
use crawlq::{Answer, Style, binding::json};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};
use serde_json::Value;
use std::sync::Arc;

/// A crawl frontier in Redis (blocking API; the GIL is released during every Redis call, so
/// threads run in parallel).
#[pyclass(frozen, module = "crawlq")]
pub struct Queue {
    pub handle: Arc<Handle>,
}

/// The asyncio twin of `Queue`: every method returns a coroutine. Constructing it does no
/// I/O; it connects on first use (or use `await AsyncQueue.connect(...)`).
#[pyclass(frozen, module = "crawlq")]
pub struct AsyncQueue {
    pub handle: Arc<Handle>,
}

/// ack / nack / extend / release of one lease or a sequence, answered by the core.
fn answer<M: Mode>(
    py: Python<'_>,
    handle: &Arc<Handle>,
    lease: &Bound<'_, PyAny>,
    answer: crawlq::Result<Answer>,
) -> PyResult<Py<PyAny>> {
    let arg = LeaseArg::extract(lease)?;
    let answer = answer.map_err(to_pyerr)?;
    let (handles, single) = (arg.handles(), arg.single);
    M::run(
        py,
        handle,
        move |q| async move { q.answer(&answer, &handles, single).await },
        Box::new(move |py, answers| arg.apply(py, &answers)),
    )
}

/// `(acked, report)` of an answer with links, `acked` set on the lease object as `ack` sets it.
fn acked_and_report(arg: LeaseArg) -> crate::runtime::Convert<(bool, crawlq::SeedReport)> {
    Box::new(move |py, (acked, report)| {
        let acked = page_acked(py, &arg, acked)?;
        let report = Py::new(py, SeedReport::new(py, report)?)?.into_any();
        Ok(PyTuple::new(py, [acked, report])?.into_any().unbind())
    })
}

/// A page's ack flag, its lease marked answered when it was.
fn page_acked(py: Python<'_>, arg: &LeaseArg, acked: bool) -> PyResult<Py<PyAny>> {
    let answers = crawlq::Answers {
        results: crawlq::AnswerResults::Flags(vec![acked]),
        single: true,
    };
    arg.apply(py, &answers)
}

/// A page answered with what it found (`found`: its links or crawl requests as seed items)
/// and the next items leased in the same call: `(acked, report, leases)`.
fn page_and_lease<M: Mode>(
    py: Python<'_>,
    handle: &Arc<Handle>,
    lease: &Bound<'_, PyAny>,
    opts: crawlq::SeedOptions,
    next: crawlq::LeaseOptions,
    found: impl FnOnce(&crawlq::ops::Ops, Option<&str>) -> crawlq::Result<Vec<crawlq::SeedItem>>
    + Send
    + 'static,
) -> PyResult<Py<PyAny>> {
    let (arg, lease) = LeaseArg::extract_one(lease)?;
    M::leasing(
        py,
        handle,
        move |q, stop| async move {
            let items = found(q.ops(), lease.url.as_deref())?;
            q.ack_with_links_and_lease_interruptible(&lease, &items, &opts, &next, stop)
                .await
        },
        |(_, _, leases)| leases,
        Box::new(move |py, (acked, report, leases)| {
            let acked = page_acked(py, &arg, acked)?;
            let report = Py::new(py, SeedReport::new(py, report)?)?.into_any();
            let leases = leases_out(py, leases)?;
            Ok(PyTuple::new(py, [acked, report, leases])?
                .into_any()
                .unbind())
        }),
    )
}

fn leases_out(py: Python<'_>, leases: Vec<crawlq::Lease>) -> PyResult<Py<PyAny>> {
    let objects = leases
        .into_iter()
        .map(|l| Py::new(py, Lease::new(py, l)?))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(objects.into_pyobject(py)?.into_any().unbind())
}

/// A named crawl's counts as the dict `CrawlStats`.
fn crawl_stats_out(py: Python<'_>, stats: crawlq::CrawlStats) -> PyResult<Py<PyAny>> {
    json_out(py, json::crawl_stats_to_json(&stats, Style::Snake))
}

/// A host's state as the dict `HostInfo`.
fn host_info_out(py: Python<'_>, info: crawlq::HostInfo) -> PyResult<Py<PyAny>> {
    json_out(py, json::host_info_to_json(&info, Style::Snake))
}

/// A crawl's deletion (or its totals so far) as the dict `CrawlDeletion`.
fn crawl_deletion_out(py: Python<'_>, gone: &crawlq::CrawlDeletion) -> PyResult<Py<PyAny>> {
    json_out(py, json::crawl_deletion_to_json(gone, Style::Snake))
}

/// A seed call's progress as the dict `SeedProgress`.
fn seed_progress_out(py: Python<'_>, so_far: &crawlq::SeedProgress) -> PyResult<Py<PyAny>> {
    json_out(py, json::seed_progress_to_json(so_far, Style::Snake))
}

/// A seed's report as the class `SeedReport`.
fn seed_report_out() -> Convert<crawlq::SeedReport> {
    Box::new(|py, r| Ok(Py::new(py, SeedReport::new(py, r)?)?.into_any()))
}

/// The core's reports of a seed's progress, sent to `reporter` (a `progress` callback's, or
/// nowhere without one; `Queue` notices Ctrl-C between them either way).
fn report_to(reporter: Reporter<crawlq::SeedProgress>) -> impl FnMut(crawlq::SeedProgress) + Send {
    move |p| {
        let _ = reporter.unbounded_send(p);
    }
}

/// A host's deletion (or its totals so far) as the dict `HostDeletion`.
fn host_deletion_out(py: Python<'_>, gone: &crawlq::HostDeletion) -> PyResult<Py<PyAny>> {
    json_out(py, json::host_deletion_to_json(gone, Style::Snake))
}

fn count_out(py: Python<'_>, n: &u64) -> PyResult<Py<PyAny>> {
    Ok(n.into_pyobject(py)?.into_any().unbind())
}

fn bool_out(py: Python<'_>, b: bool) -> PyResult<Py<PyAny>> {
    Ok(pyo3::types::PyBool::new(py, b)
        .to_owned()
        .into_any()
        .unbind())
}

/// The methods both classes share, for a class and its mode; `$extra` are the class's own.
macro_rules! queue_methods {
    ($class:ident, $mode:ty, { $($extra:tt)* }) => {
        #[pymethods]
        impl $class {
            $($extra)*

            /// The queue's name.
            #[getter]
            fn name(&self) -> &str {
                &self.handle.name
            }

            /// Seed URLs or hosts (str, or dict with url/host and optional priority, delay,
            /// payload, force). Returns a SeedReport; invalid items are reported, never raised.
            /// `crawl` names the crawl to seed into (None: the default crawl): de-duplication is
            /// per crawl, hosts are shared by every crawl, and crawls are leased from in turn.
            /// `progress`, when given, is called after each round trip with a SeedProgress dict
            /// (done, total, added, duplicates, invalid); if it raises, the seed stops there
            /// and the exception propagates (what was sent is seeded; seeding again is safe).
            #[pyo3(signature = (items, *, priority = Int::of(0), delay = 0.0, payload = None, force = false, crawl = None, progress = None), text_signature = "($self, /, items, *, priority=0, delay=0.0, payload=None, force=False, crawl=None, progress=None)")]
            #[allow(clippy::too_many_arguments)]
            fn seed(
                &self,
                py: Python<'_>,
                items: &Bound<'_, PyAny>,
                priority: Int,
                delay: f64,
                payload: Option<&Bound<'_, PyAny>>,
                force: bool,
                crawl: Option<String>,
                progress: Option<Py<PyAny>>,
            ) -> PyResult<Py<PyAny>> {
                let (items, opts) = seed_args(items, "items", priority, delay, payload, force, crawl)?;
                let seed = move |q: Arc<CoreQueue>, reporter| async move {
                    q.seed_with_progress(&items, &opts, report_to(reporter)).await
                };
                <$mode>::reporting(py, &self.handle, progress, seed, seed_progress_out, seed_report_out())
            }

            /// Seed crawl requests (dicts with url and optional method, headers, body,
            /// user_data, label, depth, retries, found_on, frameworks, and each one's priority,
            /// delay, force): stored in the request shape every framework adapter reads, known
            /// by their URL (a plain GET) or by method, URL and body. Returns a SeedReport.
            /// `progress`: as `seed`'s.
            #[pyo3(signature = (requests, *, priority = Int::of(0), delay = 0.0, force = false, crawl = None, progress = None), text_signature = "($self, /, requests, *, priority=0, delay=0.0, force=False, crawl=None, progress=None)")]
            #[allow(clippy::too_many_arguments)]
            fn seed_requests(
                &self,
                py: Python<'_>,
                requests: &Bound<'_, PyAny>,
                priority: Int,
                delay: f64,
                force: bool,
                crawl: Option<String>,
                progress: Option<Py<PyAny>>,
            ) -> PyResult<Py<PyAny>> {
                let requests = crate::args::requests_json(requests)?;
                let opts = crate::args::seed_options(priority, delay, None, force, crawl)?;
                let seed = move |q: Arc<CoreQueue>, reporter| async move {
                    let items = json::request_seed_items(&requests, Style::Snake, q.ops())?;
                    q.seed_with_progress(&items, &opts, report_to(reporter)).await
                };
                <$mode>::reporting(py, &self.handle, progress, seed, seed_progress_out, seed_report_out())
            }

            /// Lease up to `max` items, waiting up to `wait` seconds when none is ready.
            #[pyo3(signature = (max = Int::of(1), wait = 5.0, *, ttl = None), text_signature = "($self, /, max=1, wait=5.0, *, ttl=None)")]
            fn lease(&self, py: Python<'_>, max: Int, wait: f64, ttl: Option<f64>) -> PyResult<Py<PyAny>> {
                <$mode>::lease(py, &self.handle, lease_args(max, wait, ttl)?, Box::new(leases_out))
            }

            /// Ack a lease (or a sequence, in one round trip): True, or False when the lease
            /// was not live any more (nothing changed). `revisit_after` (seconds) queues the
            /// URL again that much later (a recrawl; 0: never; None: the queue's option), or
            /// `revisit_at` (epoch seconds) at that time.
            #[pyo3(signature = (lease, *, revisit_after = None, revisit_at = None))]
            fn ack(
                &self,
                py: Python<'_>,
                lease: &Bound<'_, PyAny>,
                revisit_after: Option<f64>,
                revisit_at: Option<f64>,
            ) -> PyResult<Py<PyAny>> {
                let mut options = serde_json::Map::new();
                if let Some(s) = revisit_after {
                    options.insert("revisit_after".into(), crawlq::config::number_value(s));
                }
                if let Some(t) = revisit_at {
                    options.insert("revisit_at".into(), crawlq::config::number_value(t));
                }
                let reply = json::ack_answer_from_json(&Value::Object(options), Style::Snake);
                answer::<$mode>(py, &self.handle, lease, reply)
            }

            /// Ack a lease (or a sequence) and lease up to `max` more items in one call (one
            /// round trip): `(acked, leases)`, `acked` as `ack` answers it (True/False, or a
            /// list), `leases` as `lease` answers (waiting up to `wait` seconds when none is
            /// ready). For a worker that answers each item and takes the next.
            #[pyo3(signature = (lease, max = Int::of(1), wait = 5.0, *, ttl = None), text_signature = "($self, /, lease, max=1, wait=5.0, *, ttl=None)")]
            fn ack_and_lease(
                &self,
                py: Python<'_>,
                lease: &Bound<'_, PyAny>,
                max: Int,
                wait: f64,
                ttl: Option<f64>,
            ) -> PyResult<Py<PyAny>> {
                let arg = LeaseArg::extract(lease)?;
                let opts = lease_args(max, wait, ttl)?;
                let acks = (arg.handles(), arg.single);
                <$mode>::ack_and_lease(
                    py,
                    &self.handle,
                    acks,
                    opts,
                    Box::new(move |py, (answers, leases)| {
                        let acked = arg.apply(py, &answers)?;
                        let leases = leases_out(py, leases)?;
                        Ok(PyTuple::new(py, [acked, leases])?.into_any().unbind())
                    }),
                )
            }

            /// Answer a fetched page and seed the links it found, in one round trip: the links
            /// are seeded as `seed` seeds them (with these options), then the lease is acked as
            /// `ack` acks it; links resolve against the page's URL as a browser resolves an
            /// `href`. `(acked, report)`: `acked` False when the lease was not live any
            /// more (its links are seeded all the same), `report` the links' SeedReport.
            #[pyo3(signature = (lease, links, *, priority = Int::of(0), delay = 0.0, payload = None, force = false, crawl = None), text_signature = "($self, /, lease, links, *, priority=0, delay=0.0, payload=None, force=False, crawl=None)")]
            #[allow(clippy::too_many_arguments)]
            fn ack_with_links(
                &self,
                py: Python<'_>,
                lease: &Bound<'_, PyAny>,
                links: &Bound<'_, PyAny>,
                priority: Int,
                delay: f64,
                payload: Option<&Bound<'_, PyAny>>,
                force: bool,
                crawl: Option<String>,
            ) -> PyResult<Py<PyAny>> {
                let (arg, handle) = LeaseArg::extract_one(lease)?;
                let (links, opts) = seed_args(links, "links", priority, delay, payload, force, crawl)?;
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.ack_with_links(&handle, &links, &opts).await },
                    acked_and_report(arg),
                )
            }

            /// `ack_with_links` for crawl requests (as `seed_requests` takes them): the page's
            /// lease acked and the requests found on it seeded, in one round trip.
            /// `(acked, report)` as `ack_with_links` answers.
            #[pyo3(signature = (lease, requests, *, priority = Int::of(0), delay = 0.0, force = false, crawl = None), text_signature = "($self, /, lease, requests, *, priority=0, delay=0.0, force=False, crawl=None)")]
            #[allow(clippy::too_many_arguments)]
            fn ack_with_requests(
                &self,
                py: Python<'_>,
                lease: &Bound<'_, PyAny>,
                requests: &Bound<'_, PyAny>,
                priority: Int,
                delay: f64,
                force: bool,
                crawl: Option<String>,
            ) -> PyResult<Py<PyAny>> {
                let (arg, handle) = LeaseArg::extract_one(lease)?;
                let requests = crate::args::requests_json(requests)?;
                let opts = crate::args::seed_options(priority, delay, None, force, crawl)?;
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move {
                        let items = json::page_request_seed_items(
                            &requests,
                            Style::Snake,
                            q.ops(),
                            handle.url.as_deref(),
                        )?;
                        q.ack_with_links(&handle, &items, &opts).await
                    },
                    acked_and_report(arg),
                )
            }

            /// `ack_with_links`, then lease up to `max` more items in the same call (one
            /// round trip per page): `(acked, report, leases)`, `leases` as `lease` answers
            /// (waiting up to `wait` seconds when none is ready; the lease runs whether or not
            /// `lease` was still live).
            #[pyo3(signature = (lease, links, max = Int::of(1), wait = 5.0, *, ttl = None, priority = Int::of(0), delay = 0.0, payload = None, force = false, crawl = None), text_signature = "($self, /, lease, links, max=1, wait=5.0, *, ttl=None, priority=0, delay=0.0, payload=None, force=False, crawl=None)")]
            #[allow(clippy::too_many_arguments)]
            fn ack_with_links_and_lease(
                &self,
                py: Python<'_>,
                lease: &Bound<'_, PyAny>,
                links: &Bound<'_, PyAny>,
                max: Int,
                wait: f64,
                ttl: Option<f64>,
                priority: Int,
                delay: f64,
                payload: Option<&Bound<'_, PyAny>>,
                force: bool,
                crawl: Option<String>,
            ) -> PyResult<Py<PyAny>> {
                let next = lease_args(max, wait, ttl)?;
                let (links, opts) = seed_args(links, "links", priority, delay, payload, force, crawl)?;
                page_and_lease::<$mode>(py, &self.handle, lease, opts, next, move |_, _| Ok(links))
            }

            /// `ack_with_requests`, then lease up to `max` more items in the same call, as
            /// `ack_with_links_and_lease` does (one round trip per page for a crawler of crawl
            /// requests): `(acked, report, leases)`.
            #[pyo3(signature = (lease, requests, max = Int::of(1), wait = 5.0, *, ttl = None, priority = Int::of(0), delay = 0.0, force = false, crawl = None), text_signature = "($self, /, lease, requests, max=1, wait=5.0, *, ttl=None, priority=0, delay=0.0, force=False, crawl=None)")]
            #[allow(clippy::too_many_arguments)]
            fn ack_with_requests_and_lease(
                &self,
                py: Python<'_>,
                lease: &Bound<'_, PyAny>,
                requests: &Bound<'_, PyAny>,
                max: Int,
                wait: f64,
                ttl: Option<f64>,
                priority: Int,
                delay: f64,
                force: bool,
                crawl: Option<String>,
            ) -> PyResult<Py<PyAny>> {
                let next = lease_args(max, wait, ttl)?;
                let requests = crate::args::requests_json(requests)?;
                let opts = crate::args::seed_options(priority, delay, None, force, crawl)?;
                page_and_lease::<$mode>(py, &self.handle, lease, opts, next, move |ops, page| {
                    json::page_request_seed_items(&requests, Style::Snake, ops, page)
                })
            }

            /// Fail a lease (or a sequence): "retried", "dead" or "lost". A `payload`
            /// replaces the item's stored payload (None keeps it). `retry_after` (the text of
            /// a Retry-After header, or seconds) holds the retry and the host that long, at
            /// most the queue's `retry_after_max`;
            /// `retry_after_header` is the header as a server sent it (one that is neither
            /// seconds nor an HTTP-date is ignored).
            #[pyo3(signature = (lease, *, retry = true, delay = None, reason = None, rate_limited = false, payload = None, retry_after = None, retry_after_header = None))]
            #[allow(clippy::too_many_arguments)]
            fn nack(
                &self,
                py: Python<'_>,
                lease: &Bound<'_, PyAny>,
                retry: bool,
                delay: Option<f64>,
                reason: Option<Text>,
                rate_limited: bool,
                payload: Option<&Bound<'_, PyAny>>,
                retry_after: Option<&Bound<'_, PyAny>>,
                retry_after_header: Option<String>,
            ) -> PyResult<Py<PyAny>> {
                let payload = payload.map(|p| to_json(p, "payload")).transpose()?;
                let retry_after = retry_after.map(|r| to_json(r, "retry_after")).transpose()?;
                let opts = nack_args(retry, delay, reason.map(|r| r.0), rate_limited, payload, retry_after, retry_after_header);
                answer::<$mode>(py, &self.handle, lease, opts.map(Answer::Nack))
            }

            /// Push a lease's deadline to now + `ttl` seconds. For one lease: the new
            /// `expires_at`, or LeaseLostError. For a sequence: one new `expires_at` or None
            /// per lease.
            fn extend(&self, py: Python<'_>, lease: &Bound<'_, PyAny>, ttl: f64) -> PyResult<Py<PyAny>> {
                answer::<$mode>(py, &self.handle, lease, seconds(ttl, "ttl").map(Answer::Extend))
            }

            /// Give a lease (or a sequence) back: front of its lane, attempt not counted. A
            /// `payload` replaces the item's stored payload (None keeps it).
            #[pyo3(signature = (lease, *, payload = None))]
            fn release(
                &self,
                py: Python<'_>,
                lease: &Bound<'_, PyAny>,
                payload: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<Py<PyAny>> {
                let payload = payload.map(|p| to_json(p, "payload")).transpose()?;
                answer::<$mode>(py, &self.handle, lease, release_args(payload).map(Answer::Release))
            }

            /// Recover up to `limit` expired leases now (lease calls also do this, bounded).
            #[pyo3(signature = (limit = Int::of(1000)), text_signature = "($self, /, limit=1000)")]
            fn reclaim(&self, py: Python<'_>, limit: Int) -> PyResult<Py<PyAny>> {
                let limit = crate::args::count(limit, "limit")?;
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.reclaim(limit).await },
                    Box::new(|py, r| json_out(py, json::reclaim_to_json(&r, Style::Snake))),
                )
            }

            /// Depth and counters (exact, O(1)).
            fn stats(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                <$mode>::run(
                    py,
                    &self.handle,
                    |q| async move { q.stats().await },
                    Box::new(|py, s| json_out(py, json::stats_to_json(&s, Style::Snake))),
                )
            }

            /// A page of dead letters, oldest first.
            #[pyo3(signature = (limit = Int::of(100), offset = Int::of(0)), text_signature = "($self, /, limit=100, offset=0)")]
            fn dead(&self, py: Python<'_>, limit: Int, offset: Int) -> PyResult<Py<PyAny>> {
                let (limit, offset) = (crate::args::count(limit, "limit")?, crate::args::count(offset, "offset")?);
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.dead(limit, offset).await },
                    Box::new(|py, page: crawlq::DeadPage| {
                        let items = page.items.iter().map(|d| json::dead_letter_to_json(d, Style::Snake));
                        json_out(py, Value::Array(items.collect()))
                    }),
                )
            }

            /// The leases workers hold now, soonest expiry first (an expired one until a lease
            /// call reclaims it), `limit` of them from the `offset`-th on, with their total:
            /// `{"total", "now", "items"}`, each item as its lease shows it (no `leased_at`).
            #[pyo3(signature = (limit = Int::of(100), offset = Int::of(0)), text_signature = "($self, /, limit=100, offset=0)")]
            fn leased_items(&self, py: Python<'_>, limit: Int, offset: Int) -> PyResult<Py<PyAny>> {
                let (limit, offset) = (crate::args::count(limit, "limit")?, crate::args::count(offset, "offset")?);
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.leased_items(limit, offset).await },
                    Box::new(|py, page: crawlq::LeasedPage| json_out(py, json::leased_page_to_json(&page, Style::Snake))),
                )
            }

            /// The dead letters with these ids, in the order given (None for an id that is not
            /// a dead letter: unknown, requeued or purged).
            fn dead_letters(&self, py: Python<'_>, ids: Vec<Text>) -> PyResult<Py<PyAny>> {
                let ids: Vec<String> = ids.into_iter().map(|t| t.0).collect();
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.dead_letters(&ids).await },
                    Box::new(|py, found: Vec<Option<crawlq::DeadLetter>>| {
                        let items = found.iter().map(|d| {
                            d.as_ref().map_or(Value::Null, |d| json::dead_letter_to_json(d, Style::Snake))
                        });
                        json_out(py, Value::Array(items.collect()))
                    }),
                )
            }

            /// Queue dead letters again (the given ids, or all); returns how many.
            #[pyo3(signature = (ids = None))]
            fn requeue_dead(&self, py: Python<'_>, ids: Option<Vec<Text>>) -> PyResult<Py<PyAny>> {
                let ids: Option<Vec<String>> = ids.map(|ids| ids.into_iter().map(|t| t.0).collect());
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.requeue_dead(ids.as_deref()).await },
                    Box::new(|py, n: u64| Ok(n.into_pyobject(py)?.into_any().unbind())),
                )
            }

            /// True when nothing is queued or leased anywhere in the queue: the crawl is over
            /// for every worker (done and dead items do not count).
            fn is_finished(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                <$mode>::run(
                    py,
                    &self.handle,
                    |q| async move { q.is_finished().await },
                    Box::new(|py, done: bool| {
                        Ok(pyo3::types::PyBool::new(py, done).to_owned().into_any().unbind())
                    }),
                )
            }

            /// Extend every lease this queue handed out and that was not answered yet, each to
            /// its lease time (what the `extend_every` option does in the background); returns
            /// how many were extended.
            fn extend_held(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                <$mode>::run(
                    py,
                    &self.handle,
                    |q| async move { q.extend_held().await },
                    Box::new(|py, n: usize| Ok(n.into_pyobject(py)?.into_any().unbind())),
                )
            }

            /// Release every lease this queue handed out and that was not answered yet (a
            /// worker stopping), so other workers take the items at once; returns how many.
            fn release_held(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                <$mode>::run(
                    py,
                    &self.handle,
                    |q| async move { q.release_held().await },
                    Box::new(|py, n: usize| Ok(n.into_pyobject(py)?.into_any().unbind())),
                )
            }

            /// Delete dead letters (the given ids, or all); returns how many.
            #[pyo3(signature = (ids = None))]
            fn purge_dead(&self, py: Python<'_>, ids: Option<Vec<Text>>) -> PyResult<Py<PyAny>> {
                let ids: Option<Vec<String>> = ids.map(|ids| ids.into_iter().map(|t| t.0).collect());
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { crawlq::binding::calls::purge_dead(&q, ids.as_deref()).await },
                    Box::new(|py, n: u64| Ok(n.into_pyobject(py)?.into_any().unbind())),
                )
            }

            /// Set a host's delay from its robots.txt Crawl-delay, in seconds (None: it has
            /// none), unless an operator set one; capped by `crawl_delay_max`.
            fn set_host_crawl_delay(&self, py: Python<'_>, host: Text, seconds: Option<f64>) -> PyResult<Py<PyAny>> {
                let delay = seconds
                    .map(|s| crate::args::seconds(s, "seconds"))
                    .transpose()
                    .map_err(to_pyerr)?;
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.set_host_crawl_delay(&host, delay).await },
                    Box::new(host_info_out),
                )
            }

            /// Set a host's politeness delay in seconds for every worker (None: back to the
            /// default).
            fn set_host_delay(&self, py: Python<'_>, host: Text, seconds: Option<f64>) -> PyResult<Py<PyAny>> {
                let delay = seconds
                    .map(|s| crate::args::seconds(s, "seconds"))
                    .transpose()
                    .map_err(to_pyerr)?;
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.set_host_delay(&host, delay).await },
                    Box::new(host_info_out),
                )
            }

            /// A named crawl's counts (pending, ready, delayed, leased, dead, done, seen,
            /// hosts, oldest_pending_age in seconds, seeded_total), exact, summed over the
            /// shards; zeros for a crawl never seeded; with its cap, whether it is paused or
            /// being deleted (deleting) and the hosts held for it (held_hosts).
            fn crawl_stats(&self, py: Python<'_>, crawl: Text) -> PyResult<Py<PyAny>> {
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.crawl_stats(&crawl).await },
                    Box::new(crawl_stats_out),
                )
            }

            /// Cap a named crawl: at most ``cap`` of its items leased at once by all workers
            /// together (None: no cap); other crawls on its hosts are leased meanwhile. With
            /// several shards the cap is split among them and must be at least the shard
            /// count. Returns the crawl's stats.
            fn set_crawl_cap(&self, py: Python<'_>, crawl: Text, cap: Option<Int>) -> PyResult<Py<PyAny>> {
                let cap = cap.map(|n| crate::args::count(n, "cap").map(|n| n as u64)).transpose()?;
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.set_crawl_cap(&crawl, cap).await },
                    Box::new(crawl_stats_out),
                )
            }

            /// Weigh a named crawl against the others on its hosts: each host's leases go to
            /// the crawls with due work there in proportion to their weights (None: the
            /// default, 1), for the items queued from now on. Returns the crawl's stats.
            fn set_crawl_weight(&self, py: Python<'_>, crawl: Text, weight: Option<Int>) -> PyResult<Py<PyAny>> {
                let weight = weight.map(|n| crate::args::count(n, "weight").map(|n| n as u64)).transpose()?;
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.set_crawl_weight(&crawl, weight).await },
                    Box::new(crawl_stats_out),
                )
            }

            /// Give a named crawl a host budget: each host may add at most ``urls`` new URLs
            /// to the crawl (None: no budget). New URLs past it are refused per item
            /// (``budget_exhausted``) and not marked seen; the host's own budget holds as well.
            /// Returns the crawl's stats.
            fn set_crawl_host_budget(&self, py: Python<'_>, crawl: Text, urls: Option<Int>) -> PyResult<Py<PyAny>> {
                let urls = urls.map(|n| crate::args::count(n, "urls").map(|n| n as u64)).transpose()?;
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.set_crawl_host_budget(&crawl, urls).await },
                    Box::new(crawl_stats_out),
                )
            }

            /// Limit a named crawl's rate: at most ``per_second`` of its items leased a second
            /// by all workers together, spaced evenly (None: no rate); other crawls are leased
            /// meanwhile. Returns the crawl's stats.
            fn set_crawl_rate(&self, py: Python<'_>, crawl: Text, per_second: Option<f64>) -> PyResult<Py<PyAny>> {
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.set_crawl_rate(&crawl, per_second).await },
                    Box::new(crawl_stats_out),
                )
            }

            /// Pause a named crawl: none of its items is leased until ``resume_crawl``; its
            /// leases in hand may be answered, seeds go on, other crawls are leased as before.
            fn pause_crawl(&self, py: Python<'_>, crawl: Text) -> PyResult<Py<PyAny>> {
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.pause_crawl(&crawl).await },
                    Box::new(|py, ()| Ok(py.None())),
                )
            }

            /// Resume a paused crawl: the hosts held for it go back to be leased.
            fn resume_crawl(&self, py: Python<'_>, crawl: Text) -> PyResult<Py<PyAny>> {
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.resume_crawl(&crawl).await },
                    Box::new(|py, ()| Ok(py.None())),
                )
            }

            /// Delete a named crawl: its items (its leases answer lost), counts, limits and
            /// listing, in bounded calls while workers run; other crawls are not touched.
            /// Afterwards the name starts a fresh crawl, to which its URLs are new.
            ///
            /// `progress`, when given, is called after each bounded step with the totals so
            /// far (a dict of the result's shape; the last call's totals are the result's). If
            /// it raises (or on Ctrl-C), the deletion stops after that step and the exception
            /// propagates: what was deleted stays deleted, and calling again finishes the job.
            #[pyo3(signature = (crawl, *, progress = None))]
            fn delete_crawl(
                &self,
                py: Python<'_>,
                crawl: Text,
                progress: Option<Py<PyAny>>,
            ) -> PyResult<Py<PyAny>> {
                <$mode>::reporting(
                    py,
                    &self.handle,
                    progress,
                    move |q, reporter| async move {
                        q.delete_crawl_with_progress(&crawl, |d| {
                            let _ = reporter.unbounded_send(d.clone());
                        })
                        .await
                    },
                    crawl_deletion_out,
                    Box::new(|py, gone| crawl_deletion_out(py, &gone)),
                )
            }

            /// The queue's named crawls, sorted: each that seeded an item or has a cap or pause.
            fn crawls(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.crawls().await },
                    Box::new(|py, names: Vec<String>| json_out(py, serde_json::json!(names))),
                )
            }

            /// Politeness state of a host.
            fn host_info(&self, py: Python<'_>, host: Text) -> PyResult<Py<PyAny>> {
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.host_info(&host).await },
                    Box::new(host_info_out),
                )
            }

            /// Pause the whole queue for every worker, for `seconds` (the Redis clock) or until
            /// resume (None); returns whether it was paused already.
            #[pyo3(signature = (seconds = None))]
            fn pause(&self, py: Python<'_>, seconds: Option<f64>) -> PyResult<Py<PyAny>> {
                let duration = seconds
                    .map(|s| crate::args::seconds(s, "seconds"))
                    .transpose()
                    .map_err(to_pyerr)?;
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move {
                        match duration {
                            Some(d) => q.pause_for(d).await,
                            None => q.pause().await,
                        }
                    },
                    Box::new(bool_out),
                )
            }

            /// Let a paused queue lease again (blocked lease calls wake); returns whether it was
            /// paused.
            fn resume(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                <$mode>::run(
                    py,
                    &self.handle,
                    |q| async move { q.resume().await },
                    Box::new(bool_out),
                )
            }

            /// Whether the queue is paused.
            fn is_paused(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                <$mode>::run(
                    py,
                    &self.handle,
                    |q| async move { q.is_paused().await },
                    Box::new(bool_out),
                )
            }

            /// Set the most items of a host leased at once, across every worker (0: no limit
            /// whatever `host_in_flight`; None: back to it).
            fn set_host_in_flight(&self, py: Python<'_>, host: Text, limit: Option<Int>) -> PyResult<Py<PyAny>> {
                let limit = limit.map(|n| crate::args::count(n, "limit").map(|n| n as u64)).transpose()?;
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.set_host_in_flight(&host, limit).await },
                    Box::new(host_info_out),
                )
            }

            /// Set when a host's delay is counted from, for every worker: "lease" or "answer"
            /// (with an optional factor: wait factor x the fetch time when longer); None: back
            /// to `host_delay_after` / `host_delay_factor`.
            #[pyo3(signature = (host, after, *, factor = None), text_signature = "($self, /, host, after, *, factor=None)")]
            fn set_host_delay_after(&self, py: Python<'_>, host: Text, after: Option<String>, factor: Option<f64>) -> PyResult<Py<PyAny>> {
                let pacing = crawlq::HostPacing::from_parts(after.as_deref(), factor).map_err(to_pyerr)?;
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.set_host_delay_after(&host, pacing).await },
                    Box::new(host_info_out),
                )
            }

            /// The known-seen cache's counters (option `seen_cache`): entries, hits (links
            /// answered from it), misses (links sent), resent, resets.
            fn seen_cache_stats(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                <$mode>::run(
                    py,
                    &self.handle,
                    |q| async move { Ok(q.seen_cache_stats()) },
                    Box::new(|py, s| json_out(py, json::seen_cache_stats_to_json(&s, Style::Snake))),
                )
            }

            /// Whether the Redis server holding the queue may evict its keys when its memory
            /// is full (every master holding a shard on a Redis Cluster): None when none may,
            /// else why, as the ConfigError a queue opened without `allow_eviction` raises. A
            /// monitor opened with `allow_eviction` shows it. Only reads.
            fn eviction_risk(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                <$mode>::run(
                    py,
                    &self.handle,
                    |q| async move { q.eviction_risk().await },
                    Box::new(|py, why: Option<String>| json_out(py, serde_json::json!(why))),
                )
            }

            /// Wait for a turn of the host of `url` for a request the frontier does not
            /// lease (a redirect the HTTP client follows while fetching `lease`): spaced from
            /// the host's leases and turns by its delay, across every worker; held while the
            /// host is at its in-flight limit (except for `lease`'s own host) or paused. True
            /// when the request may start now, False when its turn would come after `timeout`
            /// seconds.
            #[pyo3(signature = (url, *, lease = None, timeout = 30.0), text_signature = "($self, /, url, *, lease=None, timeout=30.0)")]
            fn wait_host_turn(&self, py: Python<'_>, url: Text, lease: Option<&Bound<'_, PyAny>>, timeout: f64) -> PyResult<Py<PyAny>> {
                let lease = match lease {
                    Some(l) => Some(LeaseArg::extract_one(l)?.1),
                    None => None,
                };
                let timeout = seconds(timeout, "timeout").map_err(to_pyerr)?;
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.wait_host_turn(&url, lease.as_ref(), timeout).await },
                    Box::new(bool_out),
                )
            }

            /// Set the most new URLs a host may add (None: back to the queue's default).
            fn set_host_budget(&self, py: Python<'_>, host: Text, urls: Option<Int>) -> PyResult<Py<PyAny>> {
                let urls = urls.map(|n| crate::args::count(n, "urls").map(|n| n as u64)).transpose()?;
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.set_host_budget(&host, urls).await },
                    Box::new(host_info_out),
                )
            }

            /// Set the budget of every host without its own (None: no default).
            fn set_default_host_budget(&self, py: Python<'_>, urls: Option<Int>) -> PyResult<Py<PyAny>> {
                let urls = urls.map(|n| crate::args::count(n, "urls").map(|n| n as u64)).transpose()?;
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.set_default_host_budget(urls).await },
                    Box::new(|py, ()| Ok(py.None())),
                )
            }

            /// The queue's default host budget, or None.
            fn default_host_budget(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                <$mode>::run(
                    py,
                    &self.handle,
                    |q| async move { q.default_host_budget().await },
                    Box::new(|py, n: Option<u64>| json_out(py, serde_json::json!(n))),
                )
            }

            /// Pause a host for every worker, for `seconds` (the Redis clock) or until
            /// resume_host (None).
            #[pyo3(signature = (host, seconds = None))]
            fn pause_host(&self, py: Python<'_>, host: Text, seconds: Option<f64>) -> PyResult<Py<PyAny>> {
                let duration = seconds
                    .map(|s| crate::args::seconds(s, "seconds"))
                    .transpose()
                    .map_err(to_pyerr)?;
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.pause_host(&host, duration).await },
                    Box::new(host_info_out),
                )
            }

            /// End a host's pause; blocked lease calls wake.
            fn resume_host(&self, py: Python<'_>, host: Text) -> PyResult<Py<PyAny>> {
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.resume_host(&host).await },
                    Box::new(host_info_out),
                )
            }

            /// A page of the hosts holding items, the most first, with their counts; pass the
            /// page's `cursor` for the next one (None after the last).
            #[pyo3(signature = (cursor = None, limit = Int::of(100)), text_signature = "($self, /, cursor=None, limit=100)")]
            fn list_hosts(&self, py: Python<'_>, cursor: Option<Text>, limit: Int) -> PyResult<Py<PyAny>> {
                let limit = crate::args::count(limit, "limit")?;
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.list_hosts(cursor.as_ref().map(|c| &c.0[..]), limit).await },
                    Box::new(|py, page: crawlq::HostPage| {
                        json_out(py, json::host_page_to_json(&page, Style::Snake))
                    }),
                )
            }

            /// Delete a host: its items, leases (they answer lost) and settings; its URLs stay
            /// seen unless `forget_seen`. Safe while workers run.
            /// `progress`: as `delete_crawl`'s, with the totals of this result's shape.
            #[pyo3(signature = (host, *, forget_seen = false, progress = None))]
            fn delete_host(
                &self,
                py: Python<'_>,
                host: Text,
                forget_seen: bool,
                progress: Option<Py<PyAny>>,
            ) -> PyResult<Py<PyAny>> {
                <$mode>::reporting(
                    py,
                    &self.handle,
                    progress,
                    move |q, reporter| async move {
                        q.delete_host_with_progress(&host, forget_seen, |d| {
                            let _ = reporter.unbounded_send(d.clone());
                        })
                        .await
                    },
                    host_deletion_out,
                    Box::new(|py, gone| host_deletion_out(py, &gone)),
                )
            }

            /// Delete the whole queue: every shard's items, dead letters, settings, counters
            /// and seen set. Refused while items are leased unless `even_if_leased`.
            /// `progress`, when given, is called after each bounded step with the number of
            /// keys deleted so far; if it raises (or on Ctrl-C) the removal stops there.
            #[pyo3(signature = (*, even_if_leased = false, progress = None))]
            fn remove_queue(
                &self,
                py: Python<'_>,
                even_if_leased: bool,
                progress: Option<Py<PyAny>>,
            ) -> PyResult<Py<PyAny>> {
                <$mode>::reporting(
                    py,
                    &self.handle,
                    progress,
                    move |q, reporter| async move {
                        q.remove_queue_with_progress(even_if_leased, |n| {
                            let _ = reporter.unbounded_send(n);
                        })
                        .await
                    },
                    count_out,
                    Box::new(|py, deleted| count_out(py, &deleted)),
                )
            }

            /// The next items lease would take (one per leasable host), without leasing them.
            #[pyo3(signature = (limit = Int::of(10)), text_signature = "($self, /, limit=10)")]
            fn peek(&self, py: Python<'_>, limit: Int) -> PyResult<Py<PyAny>> {
                let limit = crate::args::count(limit, "limit")?;
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.peek(limit).await },
                    Box::new(|py, items: Vec<crawlq::wire::StoredItem>| {
                        json_out(py, json::stored_items_to_json(&items, Style::Snake))
                    }),
                )
            }

            /// One host's ready items in the order its leases take them, from the offset-th on
            /// (paused or held or not; delayed items are not listed), without leasing them.
            #[pyo3(signature = (host, limit = Int::of(10), offset = Int::of(0)), text_signature = "($self, /, host, limit=10, offset=0)")]
            fn peek_host(&self, py: Python<'_>, host: Text, limit: Int, offset: Int) -> PyResult<Py<PyAny>> {
                let (host, limit, offset) = (host.0, crate::args::count(limit, "limit")?, crate::args::count(offset, "offset")?);
                <$mode>::run(
                    py,
                    &self.handle,
                    move |q| async move { q.peek_host(&host, limit, offset).await },
                    Box::new(|py, items: Vec<crawlq::wire::StoredItem>| {
                        json_out(py, json::stored_items_to_json(&items, Style::Snake))
                    }),
                )
            }

            /// Shut the queue's calls under way down and drop the connection: lease calls
            /// waiting on it (in other threads or tasks) return at once with no leases and
            /// `work()` loops end, the background extender stops; a later call connects again
            /// and keeps the leases still held (answer them or `release_held()`).
            fn close(&self) {
                self.handle.close();
            }

            /// Test only: pin the scripts' clock to `ms` since the epoch (None: the server's
            /// clock).
            fn _set_fixed_clock(&self, ms: Option<i64>) {
                self.handle.set_fixed_clock(ms);
            }

            fn __repr__(&self) -> String {
                self.handle.repr(stringify!($class))
            }
        }
    };
}

queue_methods!(Queue, Blocking, {
    /// Connect to Redis at `url` and open the queue `name`. Options (keyword arguments,
    /// seconds for durations) are listed in the README; an unknown one is a ConfigError.
    #[new]
    #[pyo3(signature = (url, name, **options))]
    fn new(
        py: Python<'_>,
        url: Text,
        name: Text,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Queue> {
        let handle = Handle::new(&url, &name, options)?;
        let h = handle.clone();
        block_on(py, async move { h.queue().await.map(drop) }).map_err(to_pyerr)?;
        Ok(Queue { handle })
    }

    /// `with q.leased() as lease:` acks when the block succeeds, nacks (with the exception as
    /// reason) when it raises, releases on KeyboardInterrupt. `lease` is None if nothing came
    /// within `wait` seconds.
    #[pyo3(signature = (wait = 5.0, *, ttl = None))]
    fn leased(&self, wait: f64, ttl: Option<f64>) -> PyResult<Leased> {
        Ok(Leased::new(
            self.handle.clone(),
            lease_args(crate::convert::Int::of(1), wait, ttl)?,
        ))
    }

    /// Iterate over leases (`max` per round trip) until interrupted, or until the queue stays
    /// empty for `wait` seconds when `stop_when_empty`. Leaving the loop releases what the
    /// iterator still holds: prefetched leases and the current one if it was not answered.
    #[pyo3(signature = (max = Int::of(10), wait = 5.0, *, ttl = None, stop_when_empty = false), text_signature = "($self, /, max=10, wait=5.0, *, ttl=None, stop_when_empty=False)")]
    fn work(&self, max: Int, wait: f64, ttl: Option<f64>, stop_when_empty: bool) -> PyResult<Work> {
        let opts = lease_args(max, wait, ttl)?;
        Ok(Work::new(self.handle.clone(), opts, stop_when_empty))
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, PyTuple>) -> bool {
        self.handle.close();
        false
    }
});

queue_methods!(AsyncQueue, Awaiting, {
    #[new]
    #[pyo3(signature = (url, name, **options))]
    fn new(url: Text, name: Text, options: Option<&Bound<'_, PyDict>>) -> PyResult<AsyncQueue> {
        Ok(AsyncQueue {
            handle: Handle::new(&url, &name, options)?,
        })
    }

    /// Create and connect (fails at once when Redis is unreachable).
    #[classmethod]
    #[pyo3(signature = (url, name, **options))]
    fn connect<'py>(
        _cls: &Bound<'py, PyType>,
        py: Python<'py>,
        url: Text,
        name: Text,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let handle = Handle::new(&url, &name, options)?;
        Awaiting::run(
            py,
            &handle.clone(),
            |_| async { Ok(()) },
            Box::new(move |py, ()| Ok(Py::new(py, AsyncQueue { handle })?.into_any())),
        )
    }

    /// `async with aq.leased() as lease:` (see Queue.leased).
    #[pyo3(signature = (wait = 5.0, *, ttl = None))]
    fn leased(&self, wait: f64, ttl: Option<f64>) -> PyResult<AsyncLeased> {
        Ok(AsyncLeased::new(
            self.handle.clone(),
            lease_args(crate::convert::Int::of(1), wait, ttl)?,
        ))
    }

    /// `async for lease in aq.work():` (see Queue.work); stops cleanly when the task is
    /// cancelled, releasing what it holds.
    #[pyo3(signature = (max = Int::of(10), wait = 5.0, *, ttl = None, stop_when_empty = false), text_signature = "($self, /, max=10, wait=5.0, *, ttl=None, stop_when_empty=False)")]
    fn work(
        &self,
        max: Int,
        wait: f64,
        ttl: Option<f64>,
        stop_when_empty: bool,
    ) -> PyResult<AsyncWork> {
        let opts = lease_args(max, wait, ttl)?;
        Ok(AsyncWork::new(self.handle.clone(), opts, stop_when_empty))
    }

    fn __aenter__<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let me = slf.clone().unbind();
        let done = Box::new(move |_py: Python<'_>, ()| Ok(me.into_any()));
        awaitable(slf.py(), async { Ok(()) }, done, None)
    }

    #[pyo3(signature = (*_exc))]
    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        _exc: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.handle.close();
        let done = Box::new(|py: Python<'_>, ()| {
            Ok(false.into_pyobject(py)?.to_owned().into_any().unbind())
        });
        awaitable(py, async { Ok(()) }, done, None)
    }
});
