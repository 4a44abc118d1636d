//! The queue methods of the JavaScript packages whose arguments and results are plain JSON,
//! declared once for the native addon and the WebAssembly build: [`js_json_methods!`] lists
//! them (Rust name, JavaScript name, argument names, TypeScript types, doc comment), each
//! package expands the list into methods of its `Queue` class, and every method's body is
//! [`JsCall::prepare`] (the arguments, checked before any I/O) then [`JsCall::run`]. A method of
//! this kind is added here alone: a row in the list and an arm in each of those two functions.
//!
//! The calls that take leases or return them (lease, the answers, seed) keep hand-written
//! methods in each package: the native addon reads and writes lease objects without JSON.
//!
//! ```
//! use crawlq::binding::js::JsCall;
//! use serde_json::json;
//! let call = JsCall::prepare("setHostDelay", &[json!("example.com"), json!(1500)]).unwrap();
//! assert!(matches!(call, JsCall::SetHostDelay { .. }));
//! assert!(JsCall::prepare("setHostDelay", &[json!(7), json!(1500)]).is_err());
//! ```

use std::time::Duration;

use serde_json::{Value, json};

use super::calls;
use super::defaults;
use super::json::{self as j};
use crate::error::{Error, Result};
use crate::queue::Executor;
use crate::{HostPacing, LeaseHandle, Queue, Style};

/// The list of JSON methods, handed to the macro `$expand` of a JavaScript package. Each row:
/// the Rust name, the JavaScript name, the argument names in parentheses (camelCase: they name
/// the argument in error messages), the TypeScript argument list, the TypeScript return type
/// and the lines of the method's doc comment (plain string literals: napi copies them into
/// index.d.ts as they are spelled).
#[doc(hidden)]
#[macro_export]
macro_rules! js_json_methods {
    ($expand:ident) => {
        $expand! {
            reclaim "reclaim" (options) "options?: { limit?: number }" "Promise<ReclaimReport>"
                "Recover up to `limit` (default 1000) expired leases now; lease calls also do this.";
            stats "stats" () "" "Promise<Stats>"
                "Depth and counters, exact and O(1).";
            dead "dead" (options) "options?: { limit?: number; offset?: number }" "Promise<DeadLetter[]>"
                "A page of dead letters, oldest first.";
            requeue_dead "requeueDead" (ids) "ids?: string[]" "Promise<number>"
                "Queue dead letters again (the given ids, or all); resolves with how many.";
            purge_dead "purgeDead" (ids) "ids?: string[]" "Promise<number>"
                "Delete the dead letters with these ids, or every one (they stay seen), in calls of"
                "at most 500; resolves with how many were deleted.";
            is_finished "isFinished" () "" "Promise<boolean>"
                "Resolves with true when nothing is queued or leased anywhere in the queue: the crawl"
                "is over for every worker (done and dead items do not count).";
            extend_held "extendHeld" () "" "Promise<number>"
                "Extend every lease this queue handed out and that was not answered yet, each to its"
                "lease time (what `extendEveryMs` does from a timer); resolves with how many.";
            release_held "releaseHeld" () "" "Promise<number>"
                "Release every lease this queue handed out and that was not answered yet (a worker"
                "stopping: SIGTERM), so other workers take the items at once; resolves with how many.";
            seen_cache_stats "seenCacheStats" () "" "Promise<SeenCacheStats>"
                "The known-seen cache's counters (option `seenCache`): `{ entries, hits, misses,"
                "resent, resets }` (hits: links answered from it; misses: links sent).";
            set_host_delay "setHostDelay" (host, delayMs) "host: string, delayMs: number | null" "Promise<HostInfo>"
                "Set a host's politeness delay in ms for every worker (`null`: back to the default).";
            set_host_crawl_delay "setHostCrawlDelay" (host, delayMs) "host: string, delayMs: number | null" "Promise<HostInfo>"
                "Set a host's delay from its robots.txt Crawl-delay in ms (`null`: it has none),"
                "unless an operator set one (`setHostDelay`); capped by `crawlDelayMaxMs`.";
            set_host_in_flight "setHostInFlight" (host, limit) "host: string, limit: number | null" "Promise<HostInfo>"
                "Set the most items of a host leased at once, across every worker (`0`: no limit"
                "whatever `hostInFlight`; `null`: back to it).";
            set_host_delay_after "setHostDelayAfter" (host, after, factor) "host: string, after: 'lease' | 'answer' | null, factor?: number | null" "Promise<HostInfo>"
                "Set when a host's delay is counted from, for every worker: `'lease'` or `'answer'`"
                "(with an optional `factor`: wait factor x the fetch time when longer); `null`: back"
                "to `hostDelayAfter` / `hostDelayFactor`. Applies to the items leased from then on.";
            wait_host_turn "waitHostTurn" (url, options) "url: string, options?: HostTurnOptions" "Promise<boolean>"
                "Wait for a turn of the host of `url` for a request the frontier does not lease (a"
                "redirect the HTTP client follows while fetching a lease): spaced from the host's"
                "leases and turns by its delay, across every worker; held while the host is at its"
                "in-flight limit (except for `lease`'s own host) or paused. Resolves `true` when the"
                "request may start now, `false` when its turn would come after `timeoutMs` (default"
                "30000).";
            set_host_budget "setHostBudget" (host, urls) "host: string, urls: number | null" "Promise<HostInfo>"
                "Set the most new URLs a host may add (`null`: back to the queue's default). Seeds of"
                "new URLs past it are reported in the seed report's `invalid` with code"
                "`budget_exhausted`.";
            set_default_host_budget "setDefaultHostBudget" (urls) "urls: number | null" "Promise<void>"
                "Set the budget of every host without its own (`null`: no default).";
            default_host_budget "defaultHostBudget" () "" "Promise<number | null>"
                "The queue's default host budget, or `null`.";
            pause "pause" (durationMs) "durationMs?: number | null" "Promise<boolean>"
                "Pause the whole queue for every worker: lease calls hand out nothing (blocking ones"
                "keep waiting) for `durationMs` (the Redis clock) or, without it, until `resume`."
                "Resolves with whether it was paused already.";
            resume "resume" () "" "Promise<boolean>"
                "Let a paused queue lease again (blocked lease calls wake); resolves with whether it"
                "was paused.";
            is_paused "isPaused" () "" "Promise<boolean>"
                "Whether the queue is paused.";
            pause_host "pauseHost" (host, durationMs) "host: string, durationMs?: number | null" "Promise<HostInfo>"
                "Pause a host for every worker: no lease takes its items for `durationMs` (the Redis"
                "clock) or, without it (or `null`), until `resumeHost`.";
            resume_host "resumeHost" (host) "host: string" "Promise<HostInfo>"
                "End a host's pause (what is left of its politeness delay still applies); blocked"
                "lease calls wake.";
            host_info "hostInfo" (host) "host: string" "Promise<HostInfo>"
                "Politeness state of a host.";
            list_hosts "listHosts" (options) "options?: { cursor?: string | null; limit?: number }" "Promise<HostPage>"
                "A page of the hosts holding items (queued, leased or dead), the most items first,"
                "with their ready, delayed, leased and dead counts. Pass the page's `cursor` for the"
                "next one (`null` after the last). Each call is bounded (`limit` at most 1000,"
                "default 100).";
            delete_host "deleteHost" (host, options) "host: string, options?: { forgetSeen?: boolean }" "Promise<HostDeletion>"
                "Delete a host: its ready, delayed, leased and dead items and its settings (delay,"
                "pause, budget). Its leases answer lost. Its URLs stay seen unless `forgetSeen` (then"
                "the removed items can be seeded again). Safe while workers run.";
            peek "peek" (options) "options?: { limit?: number }" "Promise<QueuedItem[]>"
                "The next items lease would take (one per leasable host), without leasing them.";
            peek_host "peekHost" (host, options) "host: string, options?: { limit?: number, offset?: number }" "Promise<QueuedItem[]>"
                "One host's ready items in the order its leases take them, from `offset` on (paused"
                "or held or not; delayed items are not listed; at most 250 a call), without leasing"
                "them.";
        }
    };
}

/// Why a JSON method's arguments were refused before any I/O: a value of the wrong type (a
/// `TypeError` in JavaScript) or a value the core refuses (its error, with its code).
#[derive(Debug)]
pub enum ArgError {
    /// A value of the wrong type; the message names the argument.
    Type(String),
    /// A value of the right type that the core refuses.
    Core(Error),
}

impl From<Error> for ArgError {
    fn from(e: Error) -> ArgError {
        ArgError::Core(e)
    }
}

/// A JSON method with its arguments checked: what [`JsCall::run`] sends.
#[derive(Debug)]
#[allow(missing_docs)]
pub enum JsCall {
    Reclaim {
        limit: usize,
    },
    Stats,
    Dead {
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
    ListHosts {
        cursor: Option<String>,
        limit: usize,
    },
    DeleteHost {
        host: String,
        forget_seen: bool,
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

/// The argument at `i` (absent: null).
fn arg(args: &[Value], i: usize) -> &Value {
    args.get(i).unwrap_or(&Value::Null)
}

/// A string argument, or a type error naming it.
fn string(args: &[Value], i: usize, name: &str) -> std::result::Result<String, ArgError> {
    match arg(args, i) {
        Value::String(s) => Ok(s.clone()),
        other => Err(ArgError::Type(format!(
            "{name} must be a string, got {}",
            j::json_kind(other)
        ))),
    }
}

fn ids(value: &Value) -> std::result::Result<Option<Vec<String>>, ArgError> {
    j::ids_from_json(value).map_err(ArgError::Type)
}

impl JsCall {
    /// The call `method` (its JavaScript name) with `args` (in the list's order, JSON; absent
    /// ones null), checked. An unknown method name is an argument error.
    pub fn prepare(method: &str, args: &[Value]) -> std::result::Result<JsCall, ArgError> {
        let camel = Style::Camel;
        let ms = |i: usize, name: &str| j::optional_duration_arg(arg(args, i), name, camel);
        let count = |i: usize, name: &str| j::optional_count_arg(arg(args, i), name);
        Ok(match method {
            "reclaim" => {
                let [limit] =
                    j::counts_from_json(arg(args, 0), &[("limit", defaults::RECLAIM_LIMIT)])?;
                JsCall::Reclaim { limit }
            }
            "stats" => JsCall::Stats,
            "dead" => {
                let [limit, offset] = j::counts_from_json(
                    arg(args, 0),
                    &[("limit", defaults::DEAD_PAGE), ("offset", 0)],
                )?;
                JsCall::Dead { limit, offset }
            }
            "requeueDead" => JsCall::RequeueDead {
                ids: ids(arg(args, 0))?,
            },
            "purgeDead" => JsCall::PurgeDead {
                ids: ids(arg(args, 0))?,
            },
            "isFinished" => JsCall::IsFinished,
            "extendHeld" => JsCall::ExtendHeld,
            "releaseHeld" => JsCall::ReleaseHeld,
            "seenCacheStats" => JsCall::SeenCacheStats,
            "setHostDelay" => JsCall::SetHostDelay {
                host: string(args, 0, "host")?,
                delay: ms(1, "delayMs")?,
            },
            "setHostCrawlDelay" => JsCall::SetHostCrawlDelay {
                host: string(args, 0, "host")?,
                delay: ms(1, "delayMs")?,
            },
            "setHostInFlight" => JsCall::SetHostInFlight {
                host: string(args, 0, "host")?,
                limit: count(1, "limit")?,
            },
            "setHostDelayAfter" => JsCall::SetHostDelayAfter {
                host: string(args, 0, "host")?,
                pacing: j::pacing_arg(arg(args, 1), arg(args, 2))?,
            },
            "waitHostTurn" => {
                let url = string(args, 0, "url")?;
                let (lease, timeout) = j::host_turn_options_from_json(arg(args, 1), camel)?;
                JsCall::WaitHostTurn {
                    url,
                    lease,
                    timeout,
                }
            }
            "setHostBudget" => JsCall::SetHostBudget {
                host: string(args, 0, "host")?,
                urls: count(1, "urls")?,
            },
            "setDefaultHostBudget" => JsCall::SetDefaultHostBudget {
                urls: count(0, "urls")?,
            },
            "defaultHostBudget" => JsCall::DefaultHostBudget,
            "pause" => JsCall::Pause {
                duration: ms(0, "durationMs")?,
            },
            "resume" => JsCall::Resume,
            "isPaused" => JsCall::IsPaused,
            "pauseHost" => JsCall::PauseHost {
                host: string(args, 0, "host")?,
                duration: ms(1, "durationMs")?,
            },
            "resumeHost" => JsCall::ResumeHost {
                host: string(args, 0, "host")?,
            },
            "hostInfo" => JsCall::HostInfo {
                host: string(args, 0, "host")?,
            },
            "listHosts" => {
                let (cursor, limit) = j::host_page_args(arg(args, 0))?;
                JsCall::ListHosts { cursor, limit }
            }
            "deleteHost" => JsCall::DeleteHost {
                host: string(args, 0, "host")?,
                forget_seen: j::delete_host_options(arg(args, 1), camel)?,
            },
            "peek" => {
                let [limit] =
                    j::counts_from_json(arg(args, 0), &[("limit", defaults::PEEK_LIMIT)])?;
                JsCall::Peek { limit }
            }
            "peekHost" => {
                let host = string(args, 0, "host")?;
                let [limit, offset] = j::counts_from_json(
                    arg(args, 1),
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

    /// Run the call on `q`: its JSON result (camelCase, ms), `None` for a method that resolves
    /// with `undefined`.
    pub async fn run<E: Executor>(self, q: &Queue<E>) -> Result<Option<Value>> {
        let camel = Style::Camel;
        let info = |h: crate::HostInfo| Some(j::host_info_to_json(&h, camel));
        Ok(match self {
            JsCall::Reclaim { limit } => Some(j::reclaim_to_json(&q.reclaim(limit).await?, camel)),
            JsCall::Stats => Some(j::stats_to_json(&q.stats().await?, camel)),
            JsCall::Dead { limit, offset } => {
                let page = q.dead(limit, offset).await?;
                Some(Value::Array(
                    page.items
                        .iter()
                        .map(|d| j::dead_letter_to_json(d, camel))
                        .collect(),
                ))
            }
            JsCall::RequeueDead { ids } => Some(json!(q.requeue_dead(ids.as_deref()).await?)),
            JsCall::PurgeDead { ids } => Some(json!(calls::purge_dead(q, ids.as_deref()).await?)),
            JsCall::IsFinished => Some(json!(q.is_finished().await?)),
            JsCall::ExtendHeld => Some(json!(q.extend_held().await?)),
            JsCall::ReleaseHeld => Some(json!(q.release_held().await?)),
            JsCall::SeenCacheStats => {
                Some(j::seen_cache_stats_to_json(&q.seen_cache_stats(), camel))
            }
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
            } => Some(json!(
                q.wait_host_turn(&url, lease.as_ref(), timeout).await?
            )),
            JsCall::SetHostBudget { host, urls } => info(q.set_host_budget(&host, urls).await?),
            JsCall::SetDefaultHostBudget { urls } => {
                q.set_default_host_budget(urls).await?;
                None
            }
            JsCall::DefaultHostBudget => Some(json!(q.default_host_budget().await?)),
            JsCall::Pause { duration } => Some(json!(match duration {
                Some(d) => q.pause_for(d).await?,
                None => q.pause().await?,
            })),
            JsCall::Resume => Some(json!(q.resume().await?)),
            JsCall::IsPaused => Some(json!(q.is_paused().await?)),
            JsCall::PauseHost { host, duration } => info(q.pause_host(&host, duration).await?),
            JsCall::ResumeHost { host } => info(q.resume_host(&host).await?),
            JsCall::HostInfo { host } => info(q.host_info(&host).await?),
            JsCall::ListHosts { cursor, limit } => Some(j::host_page_to_json(
                &q.list_hosts(cursor.as_deref(), limit).await?,
                camel,
            )),
            JsCall::DeleteHost { host, forget_seen } => Some(j::host_deletion_to_json(
                &q.delete_host(&host, forget_seen).await?,
                camel,
            )),
            JsCall::Peek { limit } => Some(j::stored_items_to_json(&q.peek(limit).await?, camel)),
            JsCall::PeekHost {
                host,
                limit,
                offset,
            } => Some(j::stored_items_to_json(
                &q.peek_host(&host, limit, offset).await?,
                camel,
            )),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! names {
        ($( $name:ident $js:tt ($($arg:ident),*) $ts_args:tt $ts_ret:tt $($doc:literal)*; )*) => {
            [$(($js, <[&str]>::len(&[$(stringify!($arg)),*]))),*]
        };
    }

    #[test]
    fn every_listed_method_has_a_call_and_takes_its_listed_arguments() {
        for (js, argc) in js_json_methods!(names) {
            // Every argument absent: a method either is prepared or refuses a missing host or
            // url with a type error, never as an unknown method.
            match JsCall::prepare(js, &vec![Value::Null; argc]) {
                Ok(_) | Err(ArgError::Type(_)) => {}
                Err(ArgError::Core(Error::InvalidArgument(m)))
                    if m.starts_with("no queue method") =>
                {
                    panic!("{js} is listed but has no call")
                }
                Err(ArgError::Core(_)) => {}
            }
        }
        assert!(matches!(
            JsCall::prepare("noSuchMethod", &[]),
            Err(ArgError::Core(Error::InvalidArgument(_)))
        ));
    }
}
