//! The methods of the JavaScript `Queue` class, declared once for the native addon and the
//! WebAssembly build: [`js_queue_methods!`](crate::js_queue_methods) lists them (Rust name,
//! JavaScript name, argument names, TypeScript types, doc lines), each package expands the
//! list into methods of its class, and every method's body is [`JsCall::prepare`] (the
//! arguments, checked before any I/O) then [`JsCall::run`]. A method is added here alone: a row
//! in the list and an arm in each of those two functions. An argument named `lease` is a lease
//! or an array of leases, which each package reads from its own objects ([`JsArg::Leases`]);
//! every other argument is JSON. Results are JSON, or leases ([`JsReply`]), which the addon
//! hands to JavaScript without JSON.
//!
//! The package's functions (`normalize`, `shardOf`, the crawl request helpers,
//! `defaultOptions`, `frameworkOptions`) are listed the same way
//! ([`js_functions!`](crate::js_functions), bodies in [`call_function`]). What stays in each
//! package: opening a queue (a Redis URL in the addon, a JavaScript transport in the WebAssembly
//! build), `close`, `work()` and its iterator, and the `extendEveryMs` getter.
//!
//! ```
//! use crawlq::binding::js::{JsArg, JsCall};
//! use serde_json::json;
//! let ops = crawlq::ops::Ops::new("q", crawlq::Config::default()).unwrap();
//! let args = vec![JsArg::Json(json!("example.com")), JsArg::Json(json!(1500))];
//! let call = JsCall::prepare("setHostDelay", args, &ops).unwrap();
//! assert!(matches!(call, JsCall::SetHostDelay { .. }));
//! assert!(JsCall::prepare("setHostDelay", vec![JsArg::Json(json!(7))], &ops).is_err());
//! ```

mod call;
mod lists;

pub use call::JsCall;

use serde_json::{Map, Value, json};

use super::json::{self as j};
use crate::Style;
use crate::error::Error;
use crate::{Lease, LeaseHandle, StopSignal};

/// Why a method's arguments were refused before any I/O: a value of the wrong type (a
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

/// An argument as a package read it.
#[derive(Debug)]
pub enum JsArg {
    /// Any argument but `lease`, as JSON (`undefined`: null).
    Json(Value),
    /// The `lease` argument: one lease (`single`) or an array of them.
    Leases {
        /// The leases, in order.
        handles: Vec<LeaseHandle>,
        /// Whether one lease was given rather than an array.
        single: bool,
    },
}

/// The signal the next method call of a JavaScript queue listens to. A leasing call whose
/// options hold an `AbortSignal` is made by the package's JavaScript (protocol.js) as: arm
/// this (the queue's hidden `_armNextCall()`, which hands the signal to JavaScript as an
/// object with `stop()`, called on abort), then make the call, which takes it
/// ([`JsCall::run_until`]). JavaScript runs one thing at a time, so nothing comes between.
///
/// ```
/// let next = crawlq::binding::js::NextCallSignal::default();
/// let given_on_abort = next.arm();
/// let listened_to = next.take().unwrap();
/// given_on_abort.stop();
/// assert!(listened_to.is_stopped() && next.take().is_none());
/// ```
#[derive(Debug, Default)]
pub struct NextCallSignal(std::sync::Mutex<Option<StopSignal>>);

impl NextCallSignal {
    /// A new signal for the next call (replacing one armed and not taken).
    pub fn arm(&self) -> StopSignal {
        let signal = StopSignal::new();
        *self.slot() = Some(signal.clone());
        signal
    }

    /// The armed signal, if any (every method call takes it, so it never outlives its call).
    pub fn take(&self) -> Option<StopSignal> {
        self.slot().take()
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<StopSignal>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The progress of the next long call of a JavaScript queue (`deleteCrawl`, `deleteHost`,
/// `removeQueue`) whose options hold an `onProgress` callback. The package's JavaScript
/// (protocol.js) arms this (the queue's hidden `_armNextProgress()`, which hands the
/// [`ProgressFeed`] to JavaScript), then makes the call, which takes the other end
/// ([`ProgressTx`]) as it takes [`NextCallSignal`]'s; then it reads the feed, calling
/// `onProgress` with each report and asking for the next once the callback has returned (or
/// its promise settled). The call waits meanwhile, so a callback that throws stops it right
/// after the step it reported (`stop()`).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use crawlq::binding::js::NextCallProgress;
/// use serde_json::json;
/// let next = NextCallProgress::default();
/// let feed = next.arm();
/// let tx = next.take().unwrap();
/// assert!(next.take().is_none());
/// let handled = tx.report(json!({"removed": 500})); // the call waits on this
/// assert_eq!(feed.next().await, Some(json!({"removed": 500})));
/// feed.stop(); // the callback threw
/// assert!(!handled.await);
/// # });
/// ```
#[derive(Debug, Default)]
pub struct NextCallProgress(std::sync::Mutex<Option<ProgressTx>>);

impl NextCallProgress {
    /// A new feed for the next call (replacing one armed and not taken).
    pub fn arm(&self) -> std::sync::Arc<ProgressFeed> {
        let (tx, reports) = futures_channel::mpsc::unbounded();
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(ProgressTx(tx));
        std::sync::Arc::new(ProgressFeed(std::sync::Mutex::new(FeedState {
            reports: Some(reports),
            handled: None,
        })))
    }

    /// The armed feed's sending end, if any (every method call takes it, so it never outlives
    /// its call; dropped, the feed ends).
    pub fn take(&self) -> Option<ProgressTx> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

type Handled = futures_channel::oneshot::Sender<bool>;

/// The end of a [`ProgressFeed`] a long call reports to.
#[derive(Debug)]
pub struct ProgressTx(futures_channel::mpsc::UnboundedSender<(Value, Handled)>);

impl ProgressTx {
    /// Hand `report` to the feed's reader: true once the reader has handled it and asked for
    /// the next, false when it stopped the call (or is gone).
    pub fn report(&self, report: Value) -> impl std::future::Future<Output = bool> + use<> {
        let (handled, answer) = futures_channel::oneshot::channel();
        let sent = self.0.unbounded_send((report, handled)).is_ok();
        async move { sent && answer.await.unwrap_or(false) }
    }
}

/// The reports of one long call, read by the package's JavaScript (see [`NextCallProgress`]).
#[derive(Debug)]
pub struct ProgressFeed(std::sync::Mutex<FeedState>);

#[derive(Debug)]
struct FeedState {
    reports: Option<futures_channel::mpsc::UnboundedReceiver<(Value, Handled)>>,
    /// The report handed out last, its call waiting for the word to go on.
    handled: Option<Handled>,
}

impl ProgressFeed {
    fn state(&self) -> std::sync::MutexGuard<'_, FeedState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Let the call go on past the report handed out last, and wait for its next report (a
    /// JSON snapshot of its totals so far, camelCase); None once the call has ended or was
    /// stopped.
    pub async fn next(&self) -> Option<Value> {
        let mut reports = {
            let mut state = self.state();
            if let Some(handled) = state.handled.take() {
                let _ = handled.send(true);
            }
            state.reports.take()?
        };
        let next = futures_util::StreamExt::next(&mut reports).await;
        let mut state = self.state();
        let (report, handled) = next?;
        state.reports = Some(reports);
        state.handled = Some(handled);
        Some(report)
    }

    /// Stop the call right after the step it reported last (its callback failed): it ends
    /// without further steps.
    pub fn stop(&self) {
        let mut state = self.state();
        if let Some(handled) = state.handled.take() {
            let _ = handled.send(false);
        }
        state.reports = None;
    }
}

/// What a method resolves with.
#[derive(Debug)]
pub enum JsReply {
    /// A JSON value (camelCase, ms).
    Json(Value),
    /// `undefined` (a `Promise<void>`).
    Undefined,
    /// Leases (`lease`).
    Leases(Vec<Lease>),
    /// An object with `leases` besides the fields of `head` (`ackAndLease`,
    /// `ackWithLinksAndLease`).
    WithLeases {
        /// The other fields of the object.
        head: Map<String, Value>,
        /// The value of its `leases`.
        leases: Vec<Lease>,
    },
}

impl JsReply {
    /// The reply as one JSON value, leases included (what the WebAssembly build resolves with).
    pub fn into_json(self) -> Option<Value> {
        let leases = |l: Vec<Lease>| {
            Value::Array(
                l.iter()
                    .map(|l| j::lease_to_json(l, Style::Camel))
                    .collect(),
            )
        };
        match self {
            JsReply::Json(v) => Some(v),
            JsReply::Undefined => None,
            JsReply::Leases(l) => Some(leases(l)),
            JsReply::WithLeases {
                mut head,
                leases: l,
            } => {
                head.insert("leases".into(), leases(l));
                Some(Value::Object(head))
            }
        }
    }
}

/// The body of every function of [`js_functions!`](crate::js_functions): `name` (its
/// JavaScript name) with `args` (JSON, in the list's order; absent ones null).
///
/// ```
/// use crawlq::binding::js::call_function;
/// use serde_json::json;
/// assert_eq!(call_function("shardOf", &[json!("a.com"), json!(1)]).unwrap(), json!(0));
/// assert!(call_function("normalize", &[json!(7)]).is_err());
/// ```
pub fn call_function(name: &str, args: &[Value]) -> std::result::Result<Value, ArgError> {
    let camel = Style::Camel;
    let a = |i: usize| args.get(i).unwrap_or(&Value::Null);
    let string = |i: usize, name: &str| match a(i) {
        Value::String(s) => Ok(s.as_str()),
        other => Err(ArgError::Type(format!(
            "{name} must be a string, got {}",
            j::json_kind(other)
        ))),
    };
    let lease_url = || a(0).get("url").and_then(Value::as_str);
    Ok(match name {
        "shardOf" => {
            let input = string(0, "input")?;
            let shards = a(1).as_f64().ok_or_else(|| {
                ArgError::Type(format!(
                    "shards must be a number, got {}",
                    j::json_kind(a(1))
                ))
            })?;
            json!(j::shard_of_input(input, shards as i64)?)
        }
        "normalize" => j::normalized_to_json(string(0, "input")?)?,
        "requestOf" => j::request_of_item(lease_url(), a(0).get("payload"), camel)?,
        "requestPayload" => j::request_from_json(a(0), camel)?.payload(),
        "requestUpdate" => j::request_update(lease_url(), a(0).get("payload"), a(1), camel)?,
        "defaultOptions" => Value::Object(crate::Config::default().to_options(camel)),
        "frameworkOptions" => j::framework_options_json(a(0), camel)?,
        "redactedUrl" => json!(crate::config::redacted_url(string(0, "url")?)),
        other => {
            return Err(ArgError::Core(Error::InvalidArgument(format!(
                "no function {other:?}"
            ))));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Ops;

    macro_rules! rows {
        ($( $name:ident $js:tt $(<$gen:tt>)? ($($arg:ident),*) $ts_args:tt $ts_ret:tt $($doc:literal)*; )*) => {
            [$(($js, vec![$(stringify!($arg)),*])),*]
        };
    }

    #[test]
    fn every_listed_method_has_a_call_and_takes_its_listed_arguments() {
        let ops = Ops::new("q", crate::Config::default()).unwrap();
        let lease = LeaseHandle {
            token: 1,
            host: "a.com".into(),
            id: "1".into(),
            url: None,
            key: None,
            crawl: None,
        };
        for (js, names) in crate::js_queue_methods!(rows) {
            let args = names
                .iter()
                .map(|&n| match n {
                    "lease" => JsArg::Leases {
                        handles: vec![lease.clone()],
                        single: true,
                    },
                    // what a call needs to be prepared with every other argument absent
                    "ttlMs" => JsArg::Json(json!(1000)),
                    "host" | "url" => JsArg::Json(json!("a.com")),
                    "crawl" => JsArg::Json(json!("jobs")),
                    "items" | "links" | "requests" | "ids" => JsArg::Json(json!([])),
                    _ => JsArg::Json(Value::Null),
                })
                .collect();
            if let Err(e) = JsCall::prepare(js, args, &ops) {
                panic!("{js} is listed, and refused its listed arguments: {e:?}");
            }
        }
        assert!(matches!(
            JsCall::prepare("noSuchMethod", vec![], &ops),
            Err(ArgError::Core(Error::InvalidArgument(_)))
        ));
    }

    #[test]
    fn every_listed_function_has_a_body() {
        for (js, names) in crate::js_functions!(rows) {
            let args: Vec<Value> = names
                .iter()
                .map(|&n| match n {
                    "input" => json!("a.com"),
                    "shards" => json!(1),
                    "lease" => json!({"url": "http://a.com/", "payload": null}),
                    "request" => json!({"url": "http://a.com/"}),
                    "url" => json!("redis://u:p@h:1/0"),
                    _ => Value::Null,
                })
                .collect();
            if let Err(e) = call_function(js, &args) {
                panic!("{js} is listed, and refused its listed arguments: {e:?}");
            }
        }
        assert!(matches!(
            call_function("noSuchFunction", &[]),
            Err(ArgError::Core(_))
        ));
    }

    #[test]
    fn a_lease_argument_that_is_an_array_where_one_lease_is_taken_is_a_type_error() {
        let ops = Ops::new("q", crate::Config::default()).unwrap();
        let args = vec![
            JsArg::Leases {
                handles: vec![],
                single: false,
            },
            JsArg::Json(json!([])),
        ];
        assert!(
            matches!(JsCall::prepare("ackWithLinks", args, &ops), Err(ArgError::Type(m)) if m == "lease must be one Lease")
        );
    }
}
