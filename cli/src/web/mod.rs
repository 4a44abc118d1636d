//! `crawlq web`: a web console of the queues under a key prefix.
//!
//! Server-rendered pages over the same core calls as the other subcommands, each page a
//! bounded number of them (stats, one page of hosts or dead letters, a peek): no request walks
//! the key space. The queue list comes from `--queue`, or from a discovery (SCAN) that runs in
//! the background at most every `--discover-every` seconds. A sampler reads every queue's
//! stats every `--sample-every` seconds and keeps the last hour in memory for the charts.
//!
//! Actions (pause, resume, host delay and budget, host deletion, requeue and purge of dead
//! letters) are POSTed forms answered first by a confirmation page; each one done is logged on
//! standard output. Deletions run in tasks of their own: one that outlasts
//! `--background-after` is answered at once and goes on, shown with its progress on every page
//! (`deletions.rs`). `--read-only` refuses them all; `--token` (required on any address but
//! loopback) is asked for by every page.

mod actions;
mod deletions;
mod history;
mod pages;
mod prometheus;

use crate::connection::LazyConnection;
use crate::error::CliError;
use clap::Args;
use crawlq::{Config, Queue, RedisExecutor};
use history::{History, Sample};
use pages::Frame;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CSS: &str = include_str!("console.css");
const COOKIE: &str = "crawlq_web_token";
/// The most queues the list page reads (each one stats call).
const LIST_LIMIT: usize = 200;
const HOSTS_PAGE: usize = 50;
/// The largest hosts ranked by the hosts page's other orders (slowest, paused, budget).
const HOST_SCAN: usize = 500;
const DEAD_PAGE: usize = 100;
/// Leases per page of the leased listing.
const LEASED_PAGE: usize = 100;
/// A host's ready items listed on its page.
const HOST_ITEMS_PAGE: usize = 50;
/// Dead letters read to requeue those of one reason.
const REASON_SCAN: usize = 1000;
/// Named crawls on a page of the crawls page, and the most of a queue's crawls (the first by
/// name) the sampler reads for their rates and charts: each one a call.
const CRAWLS_PAGE: usize = 100;

#[derive(Debug, Args)]
pub struct WebArgs {
    /// Address to serve on (port 0 picks a free port; the address is printed). Any address
    /// but loopback needs --token.
    #[arg(long, default_value = "127.0.0.1:9470")]
    listen: String,
    /// Access token every page asks for (a login form sets it as a cookie; scripts send
    /// `Authorization: Bearer TOKEN`).
    #[arg(long, env = "CRAWLQ_WEB_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Show everything, change nothing: every action is refused.
    #[arg(long)]
    read_only: bool,
    /// Show the queues under the key prefix whose name matches PATTERN (`*` any characters,
    /// `?` one), found with SCAN in the background. The default when no --queue is given.
    #[arg(long, value_name = "PATTERN", num_args = 0..=1, default_missing_value = "*")]
    discover: Option<String>,
    /// Seconds between two discoveries (SCAN walks the whole key space).
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0)]
    discover_every: f64,
    /// A Prometheus that scrapes `crawlq exporter` (http://host:port): the queue pages then
    /// chart the exporter's history over 5 minutes to 7 days (one range query per line).
    #[arg(long, env = "CRAWLQ_PROMETHEUS_URL", value_name = "URL")]
    prometheus: Option<String>,
    /// Seconds between two readings of every queue's figures for the charts and rates (the
    /// last hour of them is kept in memory).
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    sample_every: f64,
    /// Seconds a deletion (of a crawl, a host or the queue) is waited for before its page is
    /// answered; one that takes longer goes on in the background, and every page shows its
    /// progress until it ends.
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    background_after: f64,
}

struct Console {
    /// The options every page reads queues with: `allow_eviction` set, so that a queue on a
    /// server that may evict its keys is shown (with the risk above it) rather than refused.
    config: Config,
    /// The options given, which actions change queues with (refused on such a server unless
    /// they allow eviction).
    change_config: Config,
    named: Vec<String>,
    discover: Option<String>,
    token: Option<String>,
    read_only: bool,
    prometheus: Option<prometheus::Prometheus>,
    connection: LazyConnection,
    /// Queues found by the last discovery, and why the last one failed.
    found: Mutex<(Vec<String>, Option<String>)>,
    history: Mutex<History>,
    /// The deletions started here, which run in tasks of their own.
    deletions: deletions::Deletions,
    background_after: Duration,
}

/// A request as the pages see it.
struct Request {
    method: String,
    /// Path segments, percent-decoded.
    path: Vec<String>,
    query: Vec<(String, String)>,
    form: Vec<(String, String)>,
    authorization: Option<String>,
    cookie: Option<String>,
    origin: Option<String>,
    host: Option<String>,
    remote: String,
    /// The body was longer than [`MAX_FORM_BYTES`]: the request is refused, not cut.
    too_large: bool,
}

/// The longest form body read (a seed's lines are the long ones); a longer one is refused
/// whole with 413, so no line of it is dropped unseen.
const MAX_FORM_BYTES: u64 = 1024 * 1024;

impl Request {
    fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    /// The `offset` of a paged listing (0 when absent or not a number).
    fn offset(&self) -> usize {
        self.query("offset")
            .and_then(|o| o.parse().ok())
            .unwrap_or(0)
    }
    fn field(&self, name: &str) -> Option<&str> {
        self.form
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

struct Response {
    status: u16,
    content_type: &'static str,
    body: String,
    headers: Vec<(&'static str, String)>,
}

impl Response {
    fn html(status: u16, body: String) -> Response {
        Response {
            status,
            content_type: "text/html; charset=utf-8",
            body,
            headers: Vec::new(),
        }
    }
    fn redirect(to: &str) -> Response {
        Response {
            status: 303,
            content_type: "text/plain; charset=utf-8",
            body: String::new(),
            headers: vec![("Location", to.to_string())],
        }
    }
}

/// Whether two strings are equal, in a time that does not depend on where they differ.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Whether an address (`host`, `host:port`, `[v6]:port`) names this machine's loopback.
fn is_loopback(address: &str) -> bool {
    let host = match address.rsplit_once(':') {
        // a bare IPv6 address has colons of its own
        Some((h, port))
            if !h.is_empty()
                && port.bytes().all(|b| b.is_ascii_digit())
                && (!h.contains(':') || h.ends_with(']')) =>
        {
            h
        }
        _ => address,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A local path to go back to after an action (never another site).
fn local_path(path: Option<&str>) -> String {
    match path {
        Some(p) if p.starts_with('/') && !p.starts_with("//") && !p.contains('\\') => p.to_string(),
        _ => "/".into(),
    }
}

fn with_flash(path: &str, message: &str) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    let encoded: String = form_urlencoded::byte_serialize(message.as_bytes()).collect();
    format!("{path}{sep}done={encoded}")
}

impl Console {
    async fn executor(&self) -> crawlq::Result<Arc<RedisExecutor>> {
        self.connection.get().await
    }

    /// The queues shown: those named, then those discovered, without repeats.
    fn queues(&self) -> Vec<String> {
        let mut queues = self.named.clone();
        let found = self.found.lock().expect("not poisoned");
        queues.extend(found.0.iter().filter(|n| !self.named.contains(n)).cloned());
        queues
    }

    /// A queue removed through the console: not listed until a discovery finds it again (a
    /// queue named on the command line stays listed), its readings dropped.
    fn forget_queue(&self, name: &str) {
        self.found
            .lock()
            .expect("not poisoned")
            .0
            .retain(|n| n != name);
        self.history.lock().expect("not poisoned").forget(name);
    }

    /// An open queue, if the console shows it (a name it does not show is not found: the
    /// console never reads a queue it was not started for).
    async fn queue(&self, name: &str) -> Result<Queue<Arc<RedisExecutor>>, Response> {
        self.open_queue(name, &self.config).await
    }

    /// [`Console::queue`] for an action: opened with the options given, so that a change is
    /// refused on a server that may evict the queue's keys, as the CLI's commands are.
    async fn queue_to_change(&self, name: &str) -> Result<Queue<Arc<RedisExecutor>>, Response> {
        self.open_queue(name, &self.change_config).await
    }

    async fn open_queue(
        &self,
        name: &str,
        config: &Config,
    ) -> Result<Queue<Arc<RedisExecutor>>, Response> {
        if !self.queues().iter().any(|q| q == name) {
            return Err(self.not_found(&format!("No queue {name:?} here.")));
        }
        let exec = self.executor().await.map_err(|e| self.failed(&e))?;
        Queue::with_executor(exec, name, config.clone()).map_err(|e| self.failed(&e))
    }

    /// The warning above a queue's page when its Redis may evict its keys
    /// (`Queue::eviction_risk`; a failed check shows none: the page's own reads report it).
    async fn eviction_warning(&self, q: &Queue<Arc<RedisExecutor>>) -> Option<String> {
        let why = q.eviction_risk().await.ok().flatten()?;
        Some(if self.change_config.allow_eviction {
            why
        } else {
            format!(
                "{why}. Actions on this queue are refused unless the console runs with -o allow_eviction=true."
            )
        })
    }

    /// [`Console::frame`] of a page of queue `q`, with the warning when its Redis may evict
    /// its keys: every page of a queue at risk shows it.
    async fn queue_frame<'a>(
        &self,
        request: &'a Request,
        refresh: Option<u32>,
        q: &Queue<Arc<RedisExecutor>>,
    ) -> Frame<'a> {
        let mut frame = self.frame(request, refresh);
        frame.warning = self.eviction_warning(q).await;
        frame
    }

    /// The frame of a page that shows no message of an action and never reloads.
    fn plain_frame(&self) -> Frame<'static> {
        Frame {
            read_only: self.read_only,
            flash: None,
            warning: None,
            refresh: None,
            deletions: self.deletions.lines(),
            deletions_running: self.deletions.any_running(),
        }
    }

    fn frame<'a>(&self, request: &'a Request, refresh: Option<u32>) -> Frame<'a> {
        Frame {
            read_only: self.read_only,
            flash: request.query("done"),
            warning: None,
            refresh,
            deletions: self.deletions.lines(),
            deletions_running: self.deletions.any_running(),
        }
    }

    /// The deletions page: every deletion of the last minutes, reloading itself while one runs
    /// (the list every page shows is left out: the page is that list).
    fn deletions_page(&self) -> Response {
        let running = self.deletions.any_running();
        let frame = Frame {
            read_only: self.read_only,
            flash: None,
            warning: None,
            refresh: running.then_some(pages::DELETIONS_REFRESH),
            deletions: Vec::new(),
            deletions_running: false,
        };
        Response::html(200, pages::deletions(&frame, &self.deletions.all_lines()))
    }

    fn not_found(&self, text: &str) -> Response {
        let frame = self.plain_frame();
        Response::html(404, pages::message(&frame, "Not found", text))
    }

    fn failed(&self, e: &crawlq::Error) -> Response {
        let frame = self.plain_frame();
        let status = match e {
            crawlq::Error::InvalidArgument(_) | crawlq::Error::Config(_) => 400,
            _ => 502,
        };
        let title = if status == 400 {
            "Not done"
        } else {
            "Redis error"
        };
        Response::html(status, pages::message(&frame, title, &e.to_string()))
    }

    /// One reading of every queue (and a discovery, when due), for the charts and rates.
    async fn sample(&self, last_discovery: &mut Option<Instant>, discover_every: Duration) {
        if let Some(pattern) = &self.discover
            && last_discovery.is_none_or(|at| at.elapsed() >= discover_every)
        {
            let found = match self.executor().await {
                Ok(exec) => crawlq::catalog::list_queues(&exec, &self.config.key_prefix)
                    .await
                    .map(|entries| {
                        entries
                            .into_iter()
                            .map(|e| e.name)
                            .filter(|n| crate::exporter::glob_match(pattern, n))
                            .collect::<Vec<_>>()
                    }),
                Err(e) => Err(e),
            };
            let mut slot = self.found.lock().expect("not poisoned");
            match found {
                Ok(names) => *slot = (names, None),
                Err(e) => slot.1 = Some(format!("finding queues: {e}")),
            }
            *last_discovery = Some(Instant::now());
        }
        let queues = self.queues();
        let Ok(exec) = self.executor().await else {
            return;
        };
        for name in queues.iter().take(LIST_LIMIT) {
            let Ok(q) = Queue::with_executor(exec.clone(), name, self.config.clone()) else {
                continue;
            };
            let Ok(stats) = q.stats().await else {
                continue;
            };
            self.history
                .lock()
                .expect("not poisoned")
                .record(name, Sample::of(&stats));
            // the named crawls' readings, at the Redis time of the queue's
            let Ok(mut crawls) = q.crawls().await else {
                continue;
            };
            crawls.truncate(CRAWLS_PAGE);
            for crawl in &crawls {
                if let Ok(c) = q.crawl_stats(crawl).await {
                    self.history.lock().expect("not poisoned").record(
                        &history::crawl_key(name, crawl),
                        Sample::of_crawl(&c, stats.now_ms),
                    );
                }
            }
            self.history
                .lock()
                .expect("not poisoned")
                .retain_crawls(name, &crawls);
        }
        self.history.lock().expect("not poisoned").retain(&queues);
    }

    fn authorized(&self, request: &Request) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let bearer = request
            .authorization
            .as_deref()
            .and_then(|a| a.strip_prefix("Bearer "));
        let cookie = request.cookie.as_deref().and_then(|c| {
            c.split(';').find_map(|part| {
                let (name, value) = part.trim().split_once('=')?;
                (name == COOKIE).then(|| {
                    percent_encoding::percent_decode_str(value)
                        .decode_utf8_lossy()
                        .into_owned()
                })
            })
        });
        bearer.is_some_and(|b| same_secret(b, token))
            || cookie.is_some_and(|c| same_secret(&c, token))
    }

    /// A form posted from another site (a page the operator visits posting to the console)
    /// is refused: its Origin is not the console's own.
    fn same_origin(&self, request: &Request) -> bool {
        match (&request.origin, &request.host) {
            (Some(origin), Some(host)) => {
                origin == &format!("http://{host}") || origin == &format!("https://{host}")
            }
            (Some(_), None) => false,
            (None, _) => true,
        }
    }

    /// Without a token the console answers only requests addressed to a loopback name: a page
    /// of another site whose name was made to resolve to 127.0.0.1 (DNS rebinding) would
    /// otherwise be "same origin" with it.
    fn host_allowed(&self, request: &Request) -> bool {
        self.token.is_some() || request.host.as_deref().is_none_or(is_loopback)
    }

    async fn handle(self: &Arc<Self>, request: &Request) -> Response {
        if !self.host_allowed(request) {
            log_line(
                &request.remote,
                "request",
                "-",
                "refused: Host is not a loopback name (start with --token to serve other names)",
            );
            let frame = self.plain_frame();
            return Response::html(
                403,
                pages::message(
                    &frame,
                    "Refused",
                    "Without an access token this console answers only at a loopback address (127.0.0.1, [::1], localhost).",
                ),
            );
        }
        let path: Vec<&str> = request.path.iter().map(String::as_str).collect();
        match (request.method.as_str(), path.as_slice()) {
            ("GET", ["console.css"]) => {
                return Response {
                    status: 200,
                    content_type: "text/css; charset=utf-8",
                    body: CSS.into(),
                    headers: vec![("Cache-Control", "max-age=3600".into())],
                };
            }
            ("GET", ["healthz"]) => {
                return Response {
                    status: 200,
                    content_type: "text/plain; charset=utf-8",
                    body: "ok\n".into(),
                    headers: Vec::new(),
                };
            }
            ("POST", ["login"]) => return self.login(request),
            _ => {}
        }
        if !self.authorized(request) {
            let frame = self.plain_frame();
            let next = format!(
                "/{}",
                request
                    .path
                    .iter()
                    .map(|s| pages::segment(s))
                    .collect::<Vec<_>>()
                    .join("/")
            );
            return Response::html(401, pages::login(&frame, &next, false));
        }
        match (request.method.as_str(), path.as_slice()) {
            ("GET", []) => self.queues_page(request).await,
            ("GET", ["deletions"]) => self.deletions_page(),
            ("GET", ["q", queue]) => self.queue_page(request, queue).await,
            ("GET", ["q", queue, "hosts"]) => self.hosts_page(request, queue).await,
            ("GET", ["q", queue, "host", host]) => self.host_page(request, queue, host).await,
            ("GET", ["q", queue, "crawls"]) => self.crawls_page(request, queue).await,
            ("GET", ["q", queue, "crawl", crawl]) => self.crawl_page(request, queue, crawl).await,
            ("GET", ["q", queue, "leased"]) => self.leased_page(request, queue).await,
            ("GET", ["q", queue, "dead"]) => self.dead_page(request, queue).await,
            ("GET", ["q", queue, "dead", id]) => self.dead_letter_page(request, queue, id).await,
            ("POST", ["q", queue, "action"]) => self.action(request, queue).await,
            _ => self.not_found("No such page."),
        }
    }

    fn login(&self, request: &Request) -> Response {
        let next = local_path(request.field("next"));
        let given = request.field("token").unwrap_or("");
        match &self.token {
            Some(token) if same_secret(given, token) => {
                let mut response = Response::redirect(&next);
                let value: String = percent_encoding::utf8_percent_encode(
                    token,
                    percent_encoding::NON_ALPHANUMERIC,
                )
                .to_string();
                response.headers.push((
                    "Set-Cookie",
                    format!("{COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict"),
                ));
                response
            }
            None => Response::redirect(&next),
            Some(_) => {
                log_line(&request.remote, "login", "-", "refused: wrong token");
                let frame = self.plain_frame();
                Response::html(401, pages::login(&frame, &next, true))
            }
        }
    }

    async fn queues_page(&self, request: &Request) -> Response {
        let exec = match self.executor().await {
            Ok(exec) => exec,
            Err(e) => return self.failed(&e),
        };
        let names = self.queues();
        let mut rows = Vec::new();
        // (the queues whose Redis may evict their keys, with the first reason given)
        let mut at_risk: Vec<&str> = Vec::new();
        let mut risk = None;
        for name in names.iter().take(LIST_LIMIT) {
            let figures = match Queue::with_executor(exec.clone(), name, self.config.clone()) {
                Ok(q) => match (q.stats().await, q.is_paused().await) {
                    (Ok(s), Ok(p)) => {
                        if let Ok(Some(why)) = q.eviction_risk().await {
                            at_risk.push(name);
                            risk.get_or_insert(why);
                        }
                        Ok((s, p))
                    }
                    (Err(e), _) | (_, Err(e)) => Err(e.to_string()),
                },
                Err(e) => Err(e.to_string()),
            };
            let rates = self
                .history
                .lock()
                .expect("not poisoned")
                .recent_rates(name, 60_000);
            rows.push(pages::QueueRow {
                name: name.clone(),
                figures,
                rates,
            });
        }
        let mut note = self.found.lock().expect("not poisoned").1.clone();
        if names.len() > LIST_LIMIT {
            note = Some(format!(
                "{} queues match; the first {LIST_LIMIT} are shown (narrow them with --discover PATTERN)",
                names.len()
            ));
        }
        let refresh = request.query("live").map(|_| 10);
        let mut frame = self.frame(request, refresh);
        frame.warning = risk.map(|why| {
            let actions = if self.change_config.allow_eviction {
                ""
            } else {
                " Actions on them are refused unless the console runs with -o allow_eviction=true."
            };
            format!("Queues at risk ({}): {why}.{actions}", at_risk.join(", "))
        });
        Response::html(200, pages::queues(&frame, &rows, note.as_deref()))
    }

    async fn queue_page(&self, request: &Request, name: &str) -> Response {
        let q = match self.queue(name).await {
            Ok(q) => q,
            Err(r) => return r,
        };
        let read = async {
            let stats = q.stats().await?;
            let paused = q.is_paused().await?;
            let next = q.peek(10).await?;
            let nodes = if stats.shards.len() > 1 {
                q.shard_nodes().await?
            } else {
                Vec::new()
            };
            let crawls = q.crawls().await?.len();
            crawlq::Result::Ok((stats, paused, next, nodes, crawls))
        };
        let (stats, paused, next, nodes, crawls) = match read.await {
            Ok(read) => read,
            Err(e) => return self.failed(&e),
        };
        let (samples, rates) = {
            let mut history = self.history.lock().expect("not poisoned");
            history.record(name, Sample::of(&stats));
            (history.samples(name), history.recent_rates(name, 60_000))
        };
        let history = self.history_of(request, Charted::Queue(name), &samples);
        let view = pages::QueueView {
            name,
            stats: &stats,
            paused,
            rates,
            history: &history,
            next: &next,
            shard_nodes: &nodes,
            crawls,
        };
        let refresh = request.query("live").map(|_| 10);
        let frame = self.queue_frame(request, refresh, &q).await;
        Response::html(200, pages::queue(&frame, &view))
    }

    /// A queue's or a named crawl's charts: from Prometheus over the window asked for (an
    /// hour by default) when the console has its address, else (or when it fails) the
    /// console's own.
    fn history_of<'a>(
        &self,
        request: &'a Request,
        charted: Charted<'_>,
        samples: &[Sample],
    ) -> pages::History<'a> {
        let (depth, throughput) = match charted {
            Charted::Queue(_) => pages::History::of_samples(samples),
            Charted::Crawl(..) => pages::History::of_crawl_samples(samples),
        };
        let own = "The console's own readings, every few seconds since it started (at most the last hour).";
        let Some(prometheus) = &self.prometheus else {
            return pages::History {
                depth,
                throughput,
                source: own.into(),
                windows: &[],
                window: None,
            };
        };
        let asked = request.query("range");
        let Some(&(window, seconds)) = prometheus::WINDOWS
            .iter()
            .find(|(w, _)| Some(*w) == asked)
            .or((asked.is_none()).then_some(&prometheus::WINDOWS[1]))
        else {
            return pages::History {
                depth,
                throughput,
                source: own.into(),
                windows: &prometheus::WINDOWS,
                window: None,
            };
        };
        // (the exporter's series of the queue, or of the crawl: crawlq exporter --max-crawls)
        let selector = match charted {
            Charted::Queue(name) => format!("{{queue={}}}", prometheus::quoted(name)),
            Charted::Crawl(name, crawl) => format!(
                "{{queue={},crawl={}}}",
                prometheus::quoted(name),
                prometheus::quoted(crawl)
            ),
        };
        let rate_window = (4.0 * prometheus::Prometheus::step(seconds))
            .max(60.0)
            .round();
        let read = || -> Result<_, String> {
            let gauge = |metric: &str| prometheus.range(&format!("{metric}{selector}"), seconds);
            // (a crawl's done is a gauge that only falls when the crawl is deleted, which
            // rate() reads as the reset it is)
            let rate = |metric: &str| {
                prometheus.range(
                    &format!("rate({metric}{selector}[{rate_window}s])"),
                    seconds,
                )
            };
            let (gauges, rates): (&[ChartLine], &[ChartLine]) = match charted {
                Charted::Queue(_) => (
                    &[
                        ("pending", pages::PENDING, "crawlq_pending"),
                        ("leased", pages::LEASED, "crawlq_leased"),
                        ("dead", pages::DEAD, "crawlq_dead"),
                    ],
                    &[
                        ("acked", pages::LEASED, "crawlq_acked_total"),
                        ("seeded", pages::PENDING, "crawlq_seeded_total"),
                        ("nacked", pages::DEAD, "crawlq_nacked_total"),
                    ],
                ),
                Charted::Crawl(..) => (
                    &[
                        ("pending", pages::PENDING, "crawlq_crawl_pending"),
                        ("leased", pages::LEASED, "crawlq_crawl_leased"),
                        ("dead", pages::DEAD, "crawlq_crawl_dead"),
                    ],
                    &[
                        ("done", pages::LEASED, "crawlq_crawl_done"),
                        ("seeded", pages::PENDING, "crawlq_crawl_seeded_total"),
                    ],
                ),
            };
            let lines = |lines: &[ChartLine], read: &dyn Fn(&str) -> _| {
                lines
                    .iter()
                    .map(|&(label, colour, metric)| Ok((label, colour, read(metric)?)))
                    .collect::<Result<Vec<_>, String>>()
            };
            Ok((lines(gauges, &gauge)?, lines(rates, &rate)?))
        };
        match read() {
            Ok((depth, throughput)) => pages::History {
                depth,
                throughput,
                source: format!("The exporter's figures in Prometheus, last {window}."),
                windows: &prometheus::WINDOWS,
                window: Some(window),
            },
            Err(e) => pages::History {
                depth,
                throughput,
                source: format!("{own} (Prometheus could not be read: {e})"),
                windows: &prometheus::WINDOWS,
                window: None,
            },
        }
    }

    async fn hosts_page(&self, request: &Request, name: &str) -> Response {
        let q = match self.queue(name).await {
            Ok(q) => q,
            Err(r) => return r,
        };
        if let Some(host) = request
            .query("host")
            .map(str::trim)
            .filter(|h| !h.is_empty())
        {
            return Response::redirect(&pages::host_path(name, host));
        }
        let order = ["slowest", "paused", "budget"]
            .into_iter()
            .find(|o| request.query("order") == Some(*o))
            .unwrap_or("largest");
        // by size: a page of the largest, and a cursor to the next; the other orders rank the
        // HOST_SCAN largest hosts (bounded work whatever the number of hosts) and show the top
        let read = async {
            let mut page = q
                .list_hosts(
                    request.query("cursor").filter(|_| order == "largest"),
                    HOSTS_PAGE,
                )
                .await?;
            if order != "largest" {
                let mut cursor = page.cursor.take();
                while let Some(at) = cursor.filter(|_| page.hosts.len() < HOST_SCAN) {
                    let next = q.list_hosts(Some(&at), HOSTS_PAGE).await?;
                    page.hosts.extend(next.hosts);
                    cursor = next.cursor;
                }
            }
            let now_ms = q.stats().await?.now_ms;
            let mut rows = Vec::with_capacity(page.hosts.len());
            for counts in &page.hosts {
                // the paused view needs no setting: its rows' settings are read once chosen
                let info = if order == "paused" {
                    None
                } else {
                    q.host_info(&counts.host).await.ok()
                };
                rows.push(pages::HostRow {
                    counts: counts.clone(),
                    info,
                });
            }
            crawlq::Result::Ok((page, rows, now_ms))
        };
        let (page, mut rows, now_ms) = match read.await {
            Ok(read) => read,
            Err(e) => return self.failed(&e),
        };
        let delay = |r: &pages::HostRow| {
            r.info.as_ref().map_or(0, |i| {
                i.delay_override_ms
                    .unwrap_or(self.config.host_delay.as_millis() as u64)
                    + i.adaptive_extra_ms
            })
        };
        match order {
            "slowest" => rows.sort_by_key(|r| std::cmp::Reverse(delay(r))),
            "paused" => rows.retain(|r| r.counts.paused),
            "budget" => {
                rows.retain(|r| r.info.as_ref().is_some_and(|i| i.budget.is_some()));
                rows.sort_by_key(|r| {
                    std::cmp::Reverse(r.info.as_ref().map_or(0, |i| i.budget_used))
                })
            }
            _ => {}
        }
        let scanned = page.hosts.len();
        rows.truncate(HOSTS_PAGE);
        if order == "paused" {
            for row in &mut rows {
                row.info = q.host_info(&row.counts.host).await.ok();
            }
        }
        let view = pages::HostsView {
            queue: name,
            rows: &rows,
            total: page.total,
            next_cursor: page.cursor.as_deref(),
            order,
            scanned,
            now_ms,
            default_delay: self.config.host_delay,
        };
        Response::html(
            200,
            pages::hosts(&self.queue_frame(request, None, &q).await, &view),
        )
    }

    async fn host_page(&self, request: &Request, name: &str, host: &str) -> Response {
        let q = match self.queue(name).await {
            Ok(q) => q,
            Err(r) => return r,
        };
        let offset = request.offset();
        let read = async {
            let info = q.host_info(host).await?;
            let items = q.peek_host(host, HOST_ITEMS_PAGE, offset).await?;
            crawlq::Result::Ok((info, items, q.stats().await?.now_ms))
        };
        match read.await {
            Ok((info, items, now_ms)) => {
                let view = pages::HostView {
                    queue: name,
                    info: &info,
                    items: &items,
                    offset,
                    page_size: HOST_ITEMS_PAGE,
                    now_ms,
                    default_delay: self.config.host_delay,
                };
                let frame = self.queue_frame(request, None, &q).await;
                Response::html(200, pages::host(&frame, &view))
            }
            Err(e) => self.failed(&e),
        }
    }

    async fn crawls_page(&self, request: &Request, name: &str) -> Response {
        let q = match self.queue(name).await {
            Ok(q) => q,
            Err(r) => return r,
        };
        let offset = request.offset();
        let read = async {
            let names = q.crawls().await?;
            let mut rows = Vec::new();
            for crawl in names.iter().skip(offset).take(CRAWLS_PAGE) {
                rows.push((crawl.clone(), q.crawl_stats(crawl).await?));
            }
            crawlq::Result::Ok((names.len(), rows))
        };
        let (total, read) = match read.await {
            Ok(read) => read,
            Err(e) => return self.failed(&e),
        };
        let rows: Vec<pages::CrawlRow> = read
            .into_iter()
            .map(|(crawl, stats)| pages::CrawlRow { name: crawl, stats })
            .collect();
        let view = pages::CrawlsView {
            queue: name,
            rows: &rows,
            total,
            offset,
            page_size: CRAWLS_PAGE,
        };
        let refresh = request.query("live").map(|_| 10);
        let frame = self.queue_frame(request, refresh, &q).await;
        Response::html(200, pages::crawls(&frame, &view))
    }

    async fn crawl_page(&self, request: &Request, name: &str, crawl: &str) -> Response {
        let q = match self.queue(name).await {
            Ok(q) => q,
            Err(r) => return r,
        };
        let read = async {
            let listed = q.crawls().await?.iter().any(|c| c == crawl);
            let stats = q.crawl_stats(crawl).await?;
            crawlq::Result::Ok((listed, stats, q.stats().await?.now_ms))
        };
        let (stats, now_ms) = match read.await {
            Ok((true, stats, now_ms)) => (stats, now_ms),
            Ok((false, ..)) => {
                return self.not_found(&format!("No crawl {crawl:?} in {name}."));
            }
            Err(e) => return self.failed(&e),
        };
        let key = history::crawl_key(name, crawl);
        let samples = {
            let mut history = self.history.lock().expect("not poisoned");
            history.record(&key, Sample::of_crawl(&stats, now_ms));
            history.samples(&key)
        };
        let history = self.history_of(request, Charted::Crawl(name, crawl), &samples);
        let view = pages::CrawlView {
            queue: name,
            crawl,
            stats: &stats,
            history: &history,
        };
        let refresh = request.query("live").map(|_| 10);
        let frame = self.queue_frame(request, refresh, &q).await;
        Response::html(200, pages::crawl(&frame, &view))
    }

    async fn leased_page(&self, request: &Request, name: &str) -> Response {
        let q = match self.queue(name).await {
            Ok(q) => q,
            Err(r) => return r,
        };
        let offset = request.offset();
        match q.leased_items(LEASED_PAGE, offset).await {
            Ok(page) => {
                let frame = self.queue_frame(request, None, &q).await;
                Response::html(200, pages::leased(&frame, name, &page, offset, LEASED_PAGE))
            }
            Err(e) => self.failed(&e),
        }
    }

    async fn dead_page(&self, request: &Request, name: &str) -> Response {
        let q = match self.queue(name).await {
            Ok(q) => q,
            Err(r) => return r,
        };
        let offset = request.offset();
        let reason = request.query("reason");
        // the reasons are counted over the oldest REASON_SCAN letters (bounded work however
        // many there are); a reason's letters, and a page within them, are taken from those
        let read = async {
            let oldest = q.dead(REASON_SCAN, 0).await?;
            let within = offset + DEAD_PAGE <= oldest.items.len()
                || oldest.items.len() as u64 == oldest.total;
            let letters: Vec<crawlq::DeadLetter> = match reason {
                Some(reason) => oldest
                    .items
                    .iter()
                    .filter(|d| pages::reason_of(d) == reason)
                    .take(DEAD_PAGE)
                    .cloned()
                    .collect(),
                None if within => oldest
                    .items
                    .iter()
                    .skip(offset)
                    .take(DEAD_PAGE)
                    .cloned()
                    .collect(),
                None => q.dead(DEAD_PAGE, offset).await?.items,
            };
            crawlq::Result::Ok((oldest, letters, q.stats().await?.now_ms))
        };
        let (oldest, letters, now_ms) = match read.await {
            Ok(read) => read,
            Err(e) => return self.failed(&e),
        };
        let mut reasons: Vec<(String, usize)> = Vec::new();
        for letter in &oldest.items {
            let reason = pages::reason_of(letter);
            match reasons.iter_mut().find(|(r, _)| *r == reason) {
                Some((_, n)) => *n += 1,
                None => reasons.push((reason, 1)),
            }
        }
        reasons.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let view = pages::DeadView {
            queue: name,
            total: oldest.total,
            offset,
            page_size: DEAD_PAGE,
            letters: &letters,
            reasons: &reasons,
            reasons_of: oldest.items.len(),
            reason,
            now_ms,
        };
        let frame = self.queue_frame(request, None, &q).await;
        Response::html(200, pages::dead(&frame, &view))
    }

    async fn dead_letter_page(&self, request: &Request, name: &str, id: &str) -> Response {
        let q = match self.queue(name).await {
            Ok(q) => q,
            Err(r) => return r,
        };
        let read = async {
            let found = q.dead_letters(&[id.to_string()]).await?;
            crawlq::Result::Ok((found.into_iter().next().flatten(), q.stats().await?.now_ms))
        };
        match read.await {
            Ok((Some(letter), now_ms)) => {
                let frame = self.queue_frame(request, None, &q).await;
                Response::html(200, pages::dead_letter(&frame, name, &letter, now_ms))
            }
            Ok((None, _)) => self.not_found(&format!(
                "No dead letter {id:?} in {name} (requeued or purged?)."
            )),
            Err(e) => self.failed(&e),
        }
    }

    /// An action: refused in read-only mode or from another site; confirmed first; then done,
    /// logged, and answered with a redirect back to the page it came from.
    async fn action(self: &Arc<Self>, request: &Request, name: &str) -> Response {
        let frame = self.plain_frame();
        // a refusal is logged like an action, and answered 403 with why
        let refuse = |why: &str, title: &str, text: &str| {
            let action = request.field("action").unwrap_or("?");
            log_line(&request.remote, action, name, &format!("refused: {why}"));
            Response::html(403, pages::message(&frame, title, text))
        };
        if self.read_only {
            return refuse(
                "read-only",
                "Read-only",
                "This console was started with --read-only: it changes nothing.",
            );
        }
        if !self.same_origin(request) {
            return refuse(
                "posted from another site",
                "Refused",
                "This form was posted from another site.",
            );
        }
        if request.too_large {
            log_line(&request.remote, "?", name, "refused: form over 1 MiB");
            return Response::html(
                413,
                pages::message(
                    &frame,
                    "Too large",
                    "A form of at most 1 MiB is read, and this one is longer: nothing was done. Seed long lists with crawlq seed FILE.",
                ),
            );
        }
        let q = match self.queue_to_change(name).await {
            Ok(q) => q,
            Err(r) => return r,
        };
        let back = local_path(request.field("back"));
        let action = request.field("action").unwrap_or("");
        let host = request.field("host").unwrap_or("");
        let what = match actions::describe(action, request, name) {
            Ok(what) => what,
            Err(text) => return Response::html(400, pages::message(&frame, "Bad action", &text)),
        };
        if request.field("confirm") != Some("yes") {
            return Response::html(
                200,
                pages::confirm(&frame, name, &what, &request.form, &back),
            );
        }
        let mut target = name.to_string();
        if !host.is_empty() {
            target.push_str(&format!(" host={host}"));
        }
        if let Some(crawl) = request.field("crawl").filter(|c| !c.is_empty()) {
            target.push_str(&format!(" crawl={crawl}"));
        }
        if let Some(delete) = actions::Delete::of(action, request) {
            return self.delete(q, delete, request, &target, &back).await;
        }
        let done = actions::perform(&q, action, request, host).await;
        match done {
            Ok(outcome) => {
                log_line(&request.remote, action, &target, &outcome);
                Response::redirect(&with_flash(&back, &outcome))
            }
            Err(e) => {
                log_line(&request.remote, action, &target, &format!("failed: {e}"));
                self.failed(&e)
            }
        }
    }

    /// A confirmed deletion: run in a task of its own (so that a request given up on never
    /// stops it part-way), answered as the other actions when it ends within
    /// `--background-after`, else at once, with its progress shown on every page until it ends.
    async fn delete(
        self: &Arc<Self>,
        q: Queue<Arc<RedisExecutor>>,
        delete: actions::Delete,
        request: &Request,
        target: &str,
        back: &str,
    ) -> Response {
        let action = request.field("action").unwrap_or("").to_string();
        let what = delete.what(q.name());
        let deletion = match self.deletions.begin(q.name(), &what) {
            Ok(deletion) => deletion,
            Err(why) => {
                log_line(&request.remote, &action, target, &format!("refused: {why}"));
                let frame = self.plain_frame();
                return Response::html(409, pages::message(&frame, "Not done", &why));
            }
        };
        let mut task = {
            let (console, deletion) = (self.clone(), deletion.clone());
            let (remote, target) = (request.remote.clone(), target.to_string());
            tokio::spawn(async move {
                // (a task that stops before its end, a panic or the console's own stop, leaves
                // the deletion marked as stopped, not running)
                let _ends = deletions::EndsIfStopped(deletion.clone());
                let done = delete.run(&q, &deletion).await;
                match &done {
                    Ok(outcome) => {
                        if matches!(delete, actions::Delete::Queue) {
                            console.forget_queue(q.name());
                        }
                        log_line(&remote, &action, &target, outcome);
                    }
                    Err(e) => log_line(&remote, &action, &target, &format!("failed: {e}")),
                }
                deletion.end(done.as_ref().cloned().map_err(|e| e.to_string()));
                done
            })
        };
        match tokio::time::timeout(self.background_after, &mut task).await {
            Ok(Ok(done)) => {
                deletion.answered();
                match done {
                    Ok(outcome) => Response::redirect(&with_flash(back, &outcome)),
                    Err(e) => self.failed(&e),
                }
            }
            Ok(Err(stopped)) => {
                deletion.answered();
                let frame = self.plain_frame();
                let text = format!(
                    "The deletion of {what} stopped part-way ({stopped}): delete it again to end it."
                );
                Response::html(500, pages::message(&frame, "Not done", &text))
            }
            Err(_) => {
                let so_far = deletion.so_far();
                let outcome = format!(
                    "deleting {what} in the background{}{so_far}: every page shows its progress until it ends",
                    if so_far.is_empty() { "" } else { ", " }
                );
                Response::redirect(&with_flash(back, &outcome))
            }
        }
    }
}

/// One line per action on standard output: when, who, what, on what, and how it ended.
/// A chart's line read from Prometheus: its label, its colour, the exporter's series.
type ChartLine = (&'static str, &'static str, &'static str);

/// What a page charts: a queue, or a named crawl of it (queue, crawl).
#[derive(Clone, Copy)]
enum Charted<'a> {
    Queue(&'a str),
    Crawl(&'a str, &'a str),
}

fn log_line(remote: &str, action: &str, target: &str, outcome: &str) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    println!(
        "crawlq web: t={}.{:03} from={remote} action={action} queue={target}: {outcome}",
        now.as_secs(),
        now.subsec_millis()
    );
    let _ = std::io::stdout().flush();
}

fn read_request(request: &mut tiny_http::Request) -> Request {
    let url = request.url().to_string();
    let (path, query) = url.split_once('?').unwrap_or((&url, ""));
    let path = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        })
        .collect();
    let query = form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let header = |name: &'static str| {
        request
            .headers()
            .iter()
            .find(|h| h.field.equiv(name))
            .map(|h| h.value.as_str().to_string())
    };
    let (authorization, cookie, origin, host) = (
        header("Authorization"),
        header("Cookie"),
        header("Origin"),
        header("Host"),
    );
    let mut body = Vec::new();
    let _ = request
        .as_reader()
        .take(MAX_FORM_BYTES + 1)
        .read_to_end(&mut body);
    let too_large = body.len() as u64 > MAX_FORM_BYTES;
    let form = if too_large {
        Vec::new()
    } else {
        form_urlencoded::parse(&body).into_owned().collect()
    };
    Request {
        method: request.method().as_str().to_ascii_uppercase(),
        path,
        query,
        form,
        authorization,
        cookie,
        origin,
        host,
        remote: request.remote_addr().map_or("-".into(), |a| a.to_string()),
        too_large,
    }
}

pub async fn run(
    redis_url: &str,
    queues: &[String],
    config: Config,
    args: WebArgs,
) -> Result<u8, CliError> {
    for queue in queues {
        crawlq::keys::check_queue_name(&config.key_prefix, queue)?;
    }
    let token = args.token.filter(|t| !t.is_empty());
    if token.is_none() && !is_loopback(&args.listen) {
        return Err(CliError::Usage(format!(
            "--listen {} is not a loopback address: pass --token (or set CRAWLQ_WEB_TOKEN) so that only those who have it can use the console",
            args.listen
        )));
    }
    let discover_every = crate::seconds(args.discover_every, "--discover-every")?;
    let sample_every = crate::seconds(args.sample_every, "--sample-every")?;
    let background_after = crate::seconds(args.background_after, "--background-after")?;
    if sample_every < Duration::from_millis(100) {
        return Err(CliError::Usage(
            "--sample-every must be at least 0.1 seconds".into(),
        ));
    }
    let prometheus = args
        .prometheus
        .as_deref()
        .map(prometheus::Prometheus::parse)
        .transpose()
        .map_err(CliError::Usage)?;
    let discover = match (args.discover, queues.is_empty()) {
        (Some(pattern), _) => Some(pattern),
        (None, true) => Some("*".to_string()),
        (None, false) => None,
    };
    let (server, address) = crate::serve::listen(&args.listen)?;

    let console = Arc::new(Console {
        connection: LazyConnection::new(redis_url, &config),
        config: Config {
            allow_eviction: true,
            ..config.clone()
        },
        change_config: config,
        named: queues.to_vec(),
        discover,
        token,
        read_only: args.read_only,
        prometheus,
        found: Mutex::new((Vec::new(), None)),
        history: Mutex::new(History::new(3_600_000)),
        deletions: deletions::Deletions::default(),
        background_after,
    });
    // the first reading (and discovery) before the first page, so that it lists the queues
    let mut last_discovery = None;
    console.sample(&mut last_discovery, discover_every).await;
    println!(
        "serving the crawlq console on http://{address}/{}{}",
        if console.token.is_some() {
            " (token required)"
        } else {
            ""
        },
        if args.read_only { " (read-only)" } else { "" }
    );
    let _ = std::io::stdout().flush();
    let sampler = {
        let console = console.clone();
        tokio::spawn(async move {
            let mut tick =
                tokio::time::interval_at(tokio::time::Instant::now() + sample_every, sample_every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                console.sample(&mut last_discovery, discover_every).await;
            }
        })
    };
    let runtime = tokio::runtime::Handle::current();
    let serving = server.clone();
    let deletions_under_way = console.clone();
    // tiny_http is blocking: requests are served by a few threads of their own, each page read
    // on the async runtime, so that a slow page (a Prometheus that does not answer) holds one
    // thread and not the console.
    let worker = tokio::task::spawn_blocking(move || {
        std::thread::scope(|scope| {
            for _ in 0..SERVING_THREADS {
                scope.spawn(|| serve_requests(&serving, &runtime, &console));
            }
        })
    });
    // Ctrl-C or SIGTERM ends the console with status 0.
    let ended = crate::serve::until_stopped(&server, worker, SERVING_THREADS).await;
    sampler.abort();
    for what in deletions_under_way.deletions.running() {
        // each step is atomic: what it removed is gone, the rest stays, marked as deleting
        log_line(
            "-",
            "stop",
            "-",
            &format!("the deletion of {what} stopped part-way: delete it again to end it"),
        );
    }
    ended
}

/// The threads that serve the console's requests: this many pages are answered at once, a
/// request past them waits for one to end.
const SERVING_THREADS: usize = 4;

/// One serving thread: answer requests until the server is unblocked. A thread that ends (a
/// panic included) unblocks the others, so the console stops whole rather than serving on
/// with fewer threads.
fn serve_requests(
    server: &tiny_http::Server,
    runtime: &tokio::runtime::Handle,
    console: &Arc<Console>,
) {
    struct StopOthers<'a>(&'a tiny_http::Server);
    impl Drop for StopOthers<'_> {
        fn drop(&mut self) {
            for _ in 1..SERVING_THREADS {
                self.0.unblock();
            }
        }
    }
    let _stop_others = StopOthers(server);
    for mut request in server.incoming_requests() {
        let parsed = read_request(&mut request);
        let answer = runtime.block_on(console.handle(&parsed));
        let mut response = tiny_http::Response::from_string(answer.body)
            .with_status_code(answer.status)
            .with_header(crate::serve::header("Content-Type", answer.content_type))
            .with_header(crate::serve::header("X-Frame-Options", "DENY"))
            .with_header(crate::serve::header(
                "Content-Security-Policy",
                "default-src 'self'; style-src 'self'; img-src 'self' data:",
            ))
            .with_header(crate::serve::header("Referrer-Policy", "same-origin"));
        for (name, value) in &answer.headers {
            response = response.with_header(crate::serve::header(name, value));
        }
        let _ = request.respond(response);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_go_without_a_token() {
        assert!(is_loopback("127.0.0.1:9470"));
        assert!(is_loopback("[::1]:9470"));
        assert!(is_loopback("localhost:0"));
        assert!(!is_loopback("0.0.0.0:9470"));
        assert!(!is_loopback("192.168.1.5:80"));
        assert!(!is_loopback("[::]:9470"));
        assert!(is_loopback("127.0.0.1"));
        assert!(is_loopback("localhost"));
        assert!(is_loopback("[::1]"));
        assert!(!is_loopback("evil.example:9470"));
        assert!(!is_loopback("localhost.evil.example"));
    }

    #[test]
    fn actions_go_back_only_to_local_paths() {
        assert_eq!(local_path(Some("/q/a/hosts")), "/q/a/hosts");
        assert_eq!(local_path(Some("//evil.example/x")), "/");
        assert_eq!(local_path(Some("https://evil.example/")), "/");
        assert_eq!(local_path(Some("/\\evil.example")), "/");
        assert_eq!(local_path(None), "/");
        assert_eq!(
            with_flash("/q/a", "paused host b"),
            "/q/a?done=paused+host+b"
        );
        assert_eq!(with_flash("/q/a?x=1", "ok"), "/q/a?x=1&done=ok");
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "abcd"));
        assert!(!same_secret("", "a"));
    }
}
