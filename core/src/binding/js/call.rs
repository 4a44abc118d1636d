//! The `Queue` methods' arguments checked ([`JsCall::prepare`]) and their calls run
//! ([`JsCall::run`]).

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{ArgError, JsArg, JsReply, ProgressTx};
use crate::binding::calls;
use crate::binding::defaults;
use crate::binding::json::{self as j};
use crate::binding::progress::{Reporter, forward_reports};
use crate::error::{Error, Result};
use crate::ops::Ops;
use crate::queue::Executor;
use crate::{
    Answer, HostPacing, LeaseHandle, LeaseOptions, Queue, SeedItem, SeedOptions, StopSignal, Style,
};

/// A method with its arguments checked: what [`JsCall::run`] sends.
#[derive(Debug)]
#[allow(missing_docs)]
pub enum JsCall {
    Seed {
        items: Vec<SeedItem>,
        opts: SeedOptions,
    },
    Lease {
        opts: LeaseOptions,
    },
    Answer {
        answer: Answer,
        handles: Vec<LeaseHandle>,
        single: bool,
    },
    AckAndLease {
        handles: Vec<LeaseHandle>,
        single: bool,
        opts: LeaseOptions,
    },
    AckWithLinks {
        lease: LeaseHandle,
        links: Vec<SeedItem>,
        opts: SeedOptions,
    },
    AckWithLinksAndLease {
        lease: LeaseHandle,
        links: Vec<SeedItem>,
        opts: SeedOptions,
        next: LeaseOptions,
    },
    Reclaim {
        limit: usize,
    },
    Stats,
    Dead {
        limit: usize,
        offset: usize,
    },
    DeadLetters {
        ids: Vec<String>,
    },
    LeasedItems {
        limit: usize,
        offset: usize,
    },
    RequeueDead {
        ids: Option<Vec<String>>,
    },
    PurgeDead {
        ids: Option<Vec<String>>,
    },
    IsFinished,
    ExtendHeld,
    ReleaseHeld,
    SeenCacheStats,
    SetHostDelay {
        host: String,
        delay: Option<Duration>,
    },
    SetHostCrawlDelay {
        host: String,
        delay: Option<Duration>,
    },
    SetHostInFlight {
        host: String,
        limit: Option<u64>,
    },
    SetHostDelayAfter {
        host: String,
        pacing: Option<HostPacing>,
    },
    WaitHostTurn {
        url: String,
        lease: Option<LeaseHandle>,
        timeout: Duration,
    },
    SetHostBudget {
        host: String,
        urls: Option<u64>,
    },
    SetDefaultHostBudget {
        urls: Option<u64>,
    },
    DefaultHostBudget,
    Pause {
        duration: Option<Duration>,
    },
    Resume,
    IsPaused,
    EvictionRisk,
    PauseHost {
        host: String,
        duration: Option<Duration>,
    },
    ResumeHost {
        host: String,
    },
    HostInfo {
        host: String,
    },
    CrawlStats {
        crawl: String,
    },
    SetCrawlCap {
        crawl: String,
        cap: Option<u64>,
    },
    SetCrawlWeight {
        crawl: String,
        weight: Option<u64>,
    },
    SetCrawlHostBudget {
        crawl: String,
        urls: Option<u64>,
    },
    SetCrawlRate {
        crawl: String,
        per_second: Option<f64>,
    },
    PauseCrawl {
        crawl: String,
    },
    ResumeCrawl {
        crawl: String,
    },
    Crawls,
    DeleteCrawl {
        crawl: String,
    },
    ListHosts {
        cursor: Option<String>,
        limit: usize,
    },
    DeleteHost {
        host: String,
        forget_seen: bool,
    },
    RemoveQueue {
        even_if_leased: bool,
    },
    Peek {
        limit: usize,
    },
    PeekHost {
        host: String,
        limit: usize,
        offset: usize,
    },
}

/// The arguments of one call, taken by position.
struct Args(Vec<JsArg>);

impl Args {
    /// The JSON argument at `i` (absent: null).
    fn json(&self, i: usize) -> &Value {
        match self.0.get(i) {
            Some(JsArg::Json(v)) => v,
            _ => &Value::Null,
        }
    }

    /// A string argument, or a type error naming it.
    fn string(&self, i: usize, name: &str) -> std::result::Result<String, ArgError> {
        match self.json(i) {
            Value::String(s) => Ok(s.clone()),
            other => Err(ArgError::Type(format!(
                "{name} must be a string, got {}",
                j::json_kind(other)
            ))),
        }
    }

    /// The leases at `i` (the list names that argument `lease`).
    fn leases(&mut self, i: usize) -> std::result::Result<(Vec<LeaseHandle>, bool), ArgError> {
        match self.0.get_mut(i) {
            Some(JsArg::Leases { handles, single }) => Ok((std::mem::take(handles), *single)),
            _ => Err(ArgError::Core(Error::InvalidArgument(format!(
                "argument {i} must be leases"
            )))),
        }
    }

    /// One lease at `i` (an array is a type error).
    fn lease(&mut self, i: usize) -> std::result::Result<LeaseHandle, ArgError> {
        match self.leases(i)? {
            (mut handles, true) if handles.len() == 1 => Ok(handles.remove(0)),
            _ => Err(ArgError::Type("lease must be one Lease".into())),
        }
    }

    /// Seed items at `i`, the argument `name` (a value that is not a list of items is a type
    /// error), with the seed options at `options` (none: the defaults).
    fn seed(
        &self,
        i: usize,
        name: &str,
        options: Option<usize>,
    ) -> std::result::Result<(Vec<SeedItem>, SeedOptions), ArgError> {
        if let Some(problem) = j::seed_items_type_error(self.json(i), name, j::TypeWords::JS) {
            return Err(ArgError::Type(problem));
        }
        let opts = j::seed_options_from_json(
            options.map_or(&Value::Null, |o| self.json(o)),
            Style::Camel,
        )?;
        Ok((j::seed_items_from_json(self.json(i), Style::Camel)?, opts))
    }

    /// Crawl requests at `i` as seed items (found on the page at `page_url`, when given),
    /// with the seed options at `i + 1`.
    fn requests(
        &self,
        i: usize,
        ops: &Ops,
        page_url: Option<&str>,
    ) -> std::result::Result<(Vec<SeedItem>, SeedOptions), ArgError> {
        self.request_list(i)?;
        let opts = j::request_options_from_json(self.json(i + 1), Style::Camel)?;
        Ok((
            j::page_request_seed_items(self.json(i), Style::Camel, ops, page_url)?,
            opts,
        ))
    }

    /// The array of crawl requests at `i` (anything else is a TypeError).
    fn request_list(&self, i: usize) -> std::result::Result<&Value, ArgError> {
        let requests = self.json(i);
        if !requests.is_array() {
            return Err(ArgError::Type(
                "requests must be an array of request objects".into(),
            ));
        }
        Ok(requests)
    }

    fn ids(&self, i: usize) -> std::result::Result<Option<Vec<String>>, ArgError> {
        j::ids_from_json(self.json(i)).map_err(ArgError::Type)
    }
}

impl JsCall {
    /// The call `method` (its JavaScript name) with `args` (in the list's order; absent ones
    /// null), checked; `ops` are the queue's (crawl requests are keyed by them). An unknown
    /// method name is an argument error.
    pub fn prepare(
        method: &str,
        args: Vec<JsArg>,
        ops: &Ops,
    ) -> std::result::Result<JsCall, ArgError> {
        let camel = Style::Camel;
        let mut a = Args(args);
        let ms = |a: &Args, i: usize, name: &str| j::optional_duration_arg(a.json(i), name, camel);
        let count = |a: &Args, i: usize, name: &str| j::optional_count_arg(a.json(i), name);
        let answer =
            |a: &mut Args, answer: Result<Answer>| -> std::result::Result<JsCall, ArgError> {
                let (handles, single) = a.leases(0)?;
                Ok(JsCall::Answer {
                    answer: answer?,
                    handles,
                    single,
                })
            };
        Ok(match method {
            "seed" => {
                let (items, opts) = a.seed(0, "items", Some(1))?;
                JsCall::Seed { items, opts }
            }
            "seedRequests" => {
                let (items, opts) = a.requests(0, ops, None)?;
                JsCall::Seed { items, opts }
            }
            "lease" => JsCall::Lease {
                opts: j::lease_options_from_json(a.json(0), camel)?,
            },
            "ack" => {
                let ack = j::ack_answer_from_json(a.json(1), camel);
                answer(&mut a, ack)?
            }
            "nack" => {
                let nack = j::nack_options_from_json(a.json(1), camel).map(Answer::Nack);
                answer(&mut a, nack)?
            }
            "extend" => {
                let ttl = j::duration_arg(a.json(1), "ttlMs", camel).map(Answer::Extend);
                answer(&mut a, ttl)?
            }
            "release" => {
                let release = j::release_options_from_json(a.json(1), camel).map(Answer::Release);
                answer(&mut a, release)?
            }
            "ackAndLease" => {
                let (handles, single) = a.leases(0)?;
                let opts = j::lease_options_from_json(a.json(1), camel)?;
                JsCall::AckAndLease {
                    handles,
                    single,
                    opts,
                }
            }
            "ackWithLinks" => {
                let lease = a.lease(0)?;
                let (links, opts) = a.seed(1, "links", Some(2))?;
                JsCall::AckWithLinks { lease, links, opts }
            }
            "ackWithRequests" => {
                let lease = a.lease(0)?;
                let (links, opts) = a.requests(1, ops, lease.url.as_deref())?;
                JsCall::AckWithLinks { lease, links, opts }
            }
            "ackWithLinksAndLease" => {
                let lease = a.lease(0)?;
                let (links, _) = a.seed(1, "links", None)?;
                let (opts, next) =
                    j::seed_and_lease_options_from_json(a.json(2), camel, j::Found::Links)?;
                JsCall::AckWithLinksAndLease {
                    lease,
                    links,
                    opts,
                    next,
                }
            }
            "ackWithRequestsAndLease" => {
                let lease = a.lease(0)?;
                let requests = a.request_list(1)?;
                let (opts, next) =
                    j::seed_and_lease_options_from_json(a.json(2), camel, j::Found::Requests)?;
                let links =
                    j::page_request_seed_items(requests, Style::Camel, ops, lease.url.as_deref())?;
                JsCall::AckWithLinksAndLease {
                    lease,
                    links,
                    opts,
                    next,
                }
            }
            "reclaim" => {
                let [limit] =
                    j::counts_from_json(a.json(0), &[("limit", defaults::RECLAIM_LIMIT)])?;
                JsCall::Reclaim { limit }
            }
            "stats" => JsCall::Stats,
            "dead" => {
                let [limit, offset] = j::counts_from_json(
                    a.json(0),
                    &[("limit", defaults::DEAD_PAGE), ("offset", 0)],
                )?;
                JsCall::Dead { limit, offset }
            }
            "deadLetters" => JsCall::DeadLetters {
                ids: a
                    .ids(0)?
                    .ok_or_else(|| ArgError::Type("ids must be an array of strings".into()))?,
            },
            "leasedItems" => {
                let [limit, offset] = j::counts_from_json(
                    a.json(0),
                    &[("limit", defaults::LEASED_PAGE), ("offset", 0)],
                )?;
                JsCall::LeasedItems { limit, offset }
            }
            "requeueDead" => JsCall::RequeueDead { ids: a.ids(0)? },
            "purgeDead" => JsCall::PurgeDead { ids: a.ids(0)? },
            "isFinished" => JsCall::IsFinished,
            "extendHeld" => JsCall::ExtendHeld,
            "releaseHeld" => JsCall::ReleaseHeld,
            "seenCacheStats" => JsCall::SeenCacheStats,
            "setHostDelay" => JsCall::SetHostDelay {
                host: a.string(0, "host")?,
                delay: ms(&a, 1, "delayMs")?,
            },
            "setHostCrawlDelay" => JsCall::SetHostCrawlDelay {
                host: a.string(0, "host")?,
                delay: ms(&a, 1, "delayMs")?,
            },
            "setHostInFlight" => JsCall::SetHostInFlight {
                host: a.string(0, "host")?,
                limit: count(&a, 1, "limit")?,
            },
            "setHostDelayAfter" => JsCall::SetHostDelayAfter {
                host: a.string(0, "host")?,
                pacing: j::pacing_arg(a.json(1), a.json(2))?,
            },
            "waitHostTurn" => {
                let url = a.string(0, "url")?;
                let (lease, timeout) = j::host_turn_options_from_json(a.json(1), camel)?;
                JsCall::WaitHostTurn {
                    url,
                    lease,
                    timeout,
                }
            }
            "setHostBudget" => JsCall::SetHostBudget {
                host: a.string(0, "host")?,
                urls: count(&a, 1, "urls")?,
            },
            "setDefaultHostBudget" => JsCall::SetDefaultHostBudget {
                urls: count(&a, 0, "urls")?,
            },
            "defaultHostBudget" => JsCall::DefaultHostBudget,
            "pause" => JsCall::Pause {
                duration: ms(&a, 0, "durationMs")?,
            },
            "resume" => JsCall::Resume,
            "isPaused" => JsCall::IsPaused,
            "evictionRisk" => JsCall::EvictionRisk,
            "pauseHost" => JsCall::PauseHost {
                host: a.string(0, "host")?,
                duration: ms(&a, 1, "durationMs")?,
            },
            "resumeHost" => JsCall::ResumeHost {
                host: a.string(0, "host")?,
            },
            "hostInfo" => JsCall::HostInfo {
                host: a.string(0, "host")?,
            },
            "crawlStats" => JsCall::CrawlStats {
                crawl: a.string(0, "crawl")?,
            },
            "setCrawlCap" => JsCall::SetCrawlCap {
                crawl: a.string(0, "crawl")?,
                cap: count(&a, 1, "cap")?,
            },
            "setCrawlWeight" => JsCall::SetCrawlWeight {
                crawl: a.string(0, "crawl")?,
                weight: count(&a, 1, "weight")?,
            },
            "setCrawlHostBudget" => JsCall::SetCrawlHostBudget {
                crawl: a.string(0, "crawl")?,
                urls: count(&a, 1, "urls")?,
            },
            "setCrawlRate" => JsCall::SetCrawlRate {
                crawl: a.string(0, "crawl")?,
                per_second: j::optional_number_arg(a.json(1), "perSecond")?,
            },
            "pauseCrawl" => JsCall::PauseCrawl {
                crawl: a.string(0, "crawl")?,
            },
            "resumeCrawl" => JsCall::ResumeCrawl {
                crawl: a.string(0, "crawl")?,
            },
            "crawls" => JsCall::Crawls,
            "deleteCrawl" => {
                // its one option, onProgress, is the package's JavaScript's to take out
                j::only_known_options(a.json(1), &["onProgress"])?;
                JsCall::DeleteCrawl {
                    crawl: a.string(0, "crawl")?,
                }
            }
            "listHosts" => {
                let (cursor, limit) = j::host_page_args(a.json(0))?;
                JsCall::ListHosts { cursor, limit }
            }
            "deleteHost" => JsCall::DeleteHost {
                host: a.string(0, "host")?,
                forget_seen: j::delete_host_options(a.json(1), camel)?,
            },
            "removeQueue" => JsCall::RemoveQueue {
                even_if_leased: j::remove_queue_options(a.json(0), camel)?,
            },
            "peek" => {
                let [limit] = j::counts_from_json(a.json(0), &[("limit", defaults::PEEK_LIMIT)])?;
                JsCall::Peek { limit }
            }
            "peekHost" => {
                let host = a.string(0, "host")?;
                let [limit, offset] = j::counts_from_json(
                    a.json(1),
                    &[("limit", defaults::PEEK_LIMIT), ("offset", 0)],
                )?;
                JsCall::PeekHost {
                    host,
                    limit,
                    offset,
                }
            }
            other => {
                return Err(ArgError::Core(Error::InvalidArgument(format!(
                    "no queue method {other:?}"
                ))));
            }
        })
    }

    /// Run the call on `q`.
    pub async fn run<E: Executor>(self, q: &Queue<E>) -> Result<JsReply> {
        self.run_until(q, None).await
    }

    /// Run the call on `q` as [`JsCall::run_until`] does; a long call (`deleteCrawl`,
    /// `deleteHost`, `removeQueue`, `seed`, `seedRequests`) given `progress` (its options held
    /// `onProgress`) reports its totals so far there after each bounded step (a seed: after
    /// each round trip, how far it is), waiting for each report to be handled, and resolves
    /// `undefined` when the reader stopped it (the package's JavaScript then rejects with the
    /// callback's error). Other calls ignore `progress`.
    pub async fn run_with<E: Executor>(
        self,
        q: &Queue<E>,
        until: Option<StopSignal>,
        progress: Option<ProgressTx>,
    ) -> Result<JsReply> {
        let camel = Style::Camel;
        let json = match self {
            JsCall::DeleteCrawl { crawl } => {
                let to_json = |d: &crate::CrawlDeletion| j::crawl_deletion_to_json(d, camel);
                let call = |reporter: Reporter<crate::CrawlDeletion>| async move {
                    q.delete_crawl_with_progress(&crawl, |d| {
                        let _ = reporter.unbounded_send(d.clone());
                    })
                    .await
                };
                reported(progress, to_json, call)
                    .await?
                    .map(|d| to_json(&d))
            }
            JsCall::DeleteHost { host, forget_seen } => {
                let to_json = |d: &crate::HostDeletion| j::host_deletion_to_json(d, camel);
                let call = |reporter: Reporter<crate::HostDeletion>| async move {
                    q.delete_host_with_progress(&host, forget_seen, |d| {
                        let _ = reporter.unbounded_send(d.clone());
                    })
                    .await
                };
                reported(progress, to_json, call)
                    .await?
                    .map(|d| to_json(&d))
            }
            // a seed reports how far it is after each round trip (its result is its report)
            JsCall::Seed { items, opts } if progress.is_some() => {
                let to_json = |p: &crate::SeedProgress| j::seed_progress_to_json(p, camel);
                let call = |reporter: Reporter<crate::SeedProgress>| async move {
                    q.seed_with_progress(&items, &opts, |p| {
                        let _ = reporter.unbounded_send(p);
                    })
                    .await
                };
                reported(progress, to_json, call)
                    .await?
                    .map(|r| j::seed_report_to_json(&r, camel))
            }
            JsCall::RemoveQueue { even_if_leased } => {
                let to_json = |n: &u64| json!(n);
                let call = |reporter: Reporter<u64>| async move {
                    q.remove_queue_with_progress(even_if_leased, |n| {
                        let _ = reporter.unbounded_send(n);
                    })
                    .await
                };
                reported(progress, to_json, call)
                    .await?
                    .map(|n| to_json(&n))
            }
            other => return other.run_until(q, until).await,
        };
        Ok(json.map_or(JsReply::Undefined, JsReply::Json))
    }

    /// Run the call on `q`; a leasing call (`lease`, `ackAndLease`, `ackWithLinksAndLease`,
    /// `ackWithRequestsAndLease`) given `until` ends its wait when the signal is given (an
    /// `AbortSignal` in the call's options), and stops at its wait, never mid-script: leases a
    /// script under way took are in the reply, for the caller to release. Other calls ignore
    /// `until`.
    pub async fn run_until<E: Executor>(
        self,
        q: &Queue<E>,
        until: Option<StopSignal>,
    ) -> Result<JsReply> {
        let camel = Style::Camel;
        let info = |h: crate::HostInfo| j::host_info_to_json(&h, camel);
        let page = |acked: bool, report: &crate::SeedReport| {
            let mut head = Map::new();
            head.insert("acked".into(), json!(acked));
            head.insert("links".into(), j::seed_report_to_json(report, camel));
            head
        };
        let json = match self {
            JsCall::Seed { items, opts } => {
                j::seed_report_to_json(&q.seed(&items, &opts).await?, camel)
            }
            JsCall::Lease { opts } => {
                let leases = match until {
                    None => q.lease_with(&opts).await?,
                    Some(signal) => q.lease_interruptible(&opts, signal).await?,
                };
                return Ok(JsReply::Leases(leases));
            }
            JsCall::Answer {
                answer,
                handles,
                single,
            } => q.answer(&answer, &handles, single).await?.to_json(camel),
            JsCall::AckAndLease {
                handles,
                single,
                opts,
            } => {
                let (answers, leases) = q
                    .ack_and_lease_answers(&handles, single, &opts, until.unwrap_or_default())
                    .await?;
                let mut head = Map::new();
                head.insert("acked".into(), answers.to_json(camel));
                return Ok(JsReply::WithLeases { head, leases });
            }
            JsCall::AckWithLinks { lease, links, opts } => {
                let (acked, report) = q.ack_with_links(&lease, &links, &opts).await?;
                Value::Object(page(acked, &report))
            }
            JsCall::AckWithLinksAndLease {
                lease,
                links,
                opts,
                next,
            } => {
                let (acked, report, leases) = match until {
                    None => {
                        q.ack_with_links_and_lease(&lease, &links, &opts, &next)
                            .await?
                    }
                    Some(signal) => {
                        q.ack_with_links_and_lease_interruptible(
                            &lease, &links, &opts, &next, signal,
                        )
                        .await?
                    }
                };
                return Ok(JsReply::WithLeases {
                    head: page(acked, &report),
                    leases,
                });
            }
            JsCall::Reclaim { limit } => j::reclaim_to_json(&q.reclaim(limit).await?, camel),
            JsCall::Stats => j::stats_to_json(&q.stats().await?, camel),
            JsCall::Dead { limit, offset } => {
                let page = q.dead(limit, offset).await?;
                Value::Array(
                    page.items
                        .iter()
                        .map(|d| j::dead_letter_to_json(d, camel))
                        .collect(),
                )
            }
            JsCall::DeadLetters { ids } => Value::Array(
                q.dead_letters(&ids)
                    .await?
                    .iter()
                    .map(|d| {
                        d.as_ref()
                            .map_or(Value::Null, |d| j::dead_letter_to_json(d, camel))
                    })
                    .collect(),
            ),
            JsCall::LeasedItems { limit, offset } => {
                j::leased_page_to_json(&q.leased_items(limit, offset).await?, camel)
            }
            JsCall::RequeueDead { ids } => json!(q.requeue_dead(ids.as_deref()).await?),
            JsCall::PurgeDead { ids } => json!(calls::purge_dead(q, ids.as_deref()).await?),
            JsCall::IsFinished => json!(q.is_finished().await?),
            JsCall::ExtendHeld => json!(q.extend_held().await?),
            JsCall::ReleaseHeld => json!(q.release_held().await?),
            JsCall::SeenCacheStats => j::seen_cache_stats_to_json(&q.seen_cache_stats(), camel),
            JsCall::SetHostDelay { host, delay } => info(q.set_host_delay(&host, delay).await?),
            JsCall::SetHostCrawlDelay { host, delay } => {
                info(q.set_host_crawl_delay(&host, delay).await?)
            }
            JsCall::SetHostInFlight { host, limit } => {
                info(q.set_host_in_flight(&host, limit).await?)
            }
            JsCall::SetHostDelayAfter { host, pacing } => {
                info(q.set_host_delay_after(&host, pacing).await?)
            }
            JsCall::WaitHostTurn {
                url,
                lease,
                timeout,
            } => {
                json!(q.wait_host_turn(&url, lease.as_ref(), timeout).await?)
            }
            JsCall::SetHostBudget { host, urls } => info(q.set_host_budget(&host, urls).await?),
            JsCall::SetDefaultHostBudget { urls } => {
                q.set_default_host_budget(urls).await?;
                return Ok(JsReply::Undefined);
            }
            JsCall::DefaultHostBudget => json!(q.default_host_budget().await?),
            JsCall::Pause { duration } => json!(match duration {
                Some(d) => q.pause_for(d).await?,
                None => q.pause().await?,
            }),
            JsCall::Resume => json!(q.resume().await?),
            JsCall::IsPaused => json!(q.is_paused().await?),
            JsCall::EvictionRisk => json!(q.eviction_risk().await?),
            JsCall::PauseHost { host, duration } => info(q.pause_host(&host, duration).await?),
            JsCall::ResumeHost { host } => info(q.resume_host(&host).await?),
            JsCall::HostInfo { host } => info(q.host_info(&host).await?),
            JsCall::CrawlStats { crawl } => {
                j::crawl_stats_to_json(&q.crawl_stats(&crawl).await?, camel)
            }
            JsCall::SetCrawlCap { crawl, cap } => {
                j::crawl_stats_to_json(&q.set_crawl_cap(&crawl, cap).await?, camel)
            }
            JsCall::SetCrawlWeight { crawl, weight } => {
                j::crawl_stats_to_json(&q.set_crawl_weight(&crawl, weight).await?, camel)
            }
            JsCall::SetCrawlHostBudget { crawl, urls } => {
                j::crawl_stats_to_json(&q.set_crawl_host_budget(&crawl, urls).await?, camel)
            }
            JsCall::SetCrawlRate { crawl, per_second } => {
                j::crawl_stats_to_json(&q.set_crawl_rate(&crawl, per_second).await?, camel)
            }
            JsCall::PauseCrawl { crawl } => {
                q.pause_crawl(&crawl).await?;
                return Ok(JsReply::Undefined);
            }
            JsCall::ResumeCrawl { crawl } => {
                q.resume_crawl(&crawl).await?;
                return Ok(JsReply::Undefined);
            }
            JsCall::Crawls => json!(q.crawls().await?),
            JsCall::DeleteCrawl { crawl } => {
                j::crawl_deletion_to_json(&q.delete_crawl(&crawl).await?, camel)
            }
            JsCall::ListHosts { cursor, limit } => {
                j::host_page_to_json(&q.list_hosts(cursor.as_deref(), limit).await?, camel)
            }
            JsCall::DeleteHost { host, forget_seen } => {
                j::host_deletion_to_json(&q.delete_host(&host, forget_seen).await?, camel)
            }
            JsCall::RemoveQueue { even_if_leased } => {
                json!(q.remove_queue(even_if_leased).await?)
            }
            JsCall::Peek { limit } => j::stored_items_to_json(&q.peek(limit).await?, camel),
            JsCall::PeekHost {
                host,
                limit,
                offset,
            } => j::stored_items_to_json(&q.peek_host(&host, limit, offset).await?, camel),
        };
        Ok(JsReply::Json(json))
    }
}

/// A long call with its reports going to `progress` when the caller gave one: its result, or
/// None when the reader stopped it.
async fn reported<D, R, C, F>(
    progress: Option<ProgressTx>,
    to_json: impl Fn(&R) -> Value,
    call: C,
) -> Result<Option<D>>
where
    C: FnOnce(Reporter<R>) -> F,
    F: std::future::Future<Output = Result<D>>,
{
    match progress {
        // no reader: the reports go nowhere
        None => call(crate::binding::progress::unread()).await.map(Some),
        Some(progress) => forward_reports(call, |d| progress.report(to_json(&d)))
            .await
            .transpose(),
    }
}
