//! The console's HTML: one function per page, from figures already read. Server-rendered,
//! no script: every action is a form that the server answers with a confirmation page first.

use super::history::{Rates, Sample, Series, chart, escape};
use crate::format::{ago, clip, count, duration};
use crawlq::wire::StoredItem;
use crawlq::{CrawlStats, DeadLetter, HostCounts, HostInfo, LeasedPage, Stats};
use std::fmt::Write;
use std::time::Duration;

/// A path segment, percent-encoded (queue names and hosts may hold any character).
pub fn segment(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, SEGMENT).to_string()
}

const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

pub fn queue_path(queue: &str) -> String {
    format!("/q/{}", segment(queue))
}

pub fn host_path(queue: &str, host: &str) -> String {
    format!("/q/{}/host/{}", segment(queue), segment(host))
}

pub fn crawl_path(queue: &str, crawl: &str) -> String {
    format!("/q/{}/crawl/{}", segment(queue), segment(crawl))
}

/// What every page shares: the header, the read-only mark, a message of the last action.
pub struct Frame<'a> {
    pub read_only: bool,
    pub flash: Option<&'a str>,
    /// A risk to the queue shown above the page (its Redis may evict its keys).
    pub warning: Option<String>,
    /// Seconds between reloads of a live page (`None`: no reload).
    pub refresh: Option<u32>,
    /// The console's deletions under way and lately ended, a line each (shown on every page).
    pub deletions: Vec<String>,
    /// Whether one of them is under way (the list then links to the deletions page).
    pub deletions_running: bool,
}

pub fn layout(frame: &Frame, title: &str, crumbs: &[(String, String)], body: &str) -> String {
    let mut html = String::from("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(
        html,
        "<meta name=\"viewport\" content=\"width=device-width\"><title>{} · crawlq</title>",
        escape(title)
    );
    if let Some(seconds) = frame.refresh {
        let _ = write!(html, "<meta http-equiv=\"refresh\" content=\"{seconds}\">");
    }
    html.push_str("<link rel=\"stylesheet\" href=\"/console.css\"></head><body><header>");
    html.push_str("<a class=\"brand\" href=\"/\">crawlq</a>");
    for (href, label) in crumbs {
        let _ = write!(
            html,
            "<a href=\"{}\">{}</a>",
            escape(href),
            escape(&clip(label, 60))
        );
    }
    if frame.read_only {
        html.push_str("<span class=\"mode\">read-only</span>");
    }
    html.push_str("</header><main>");
    if let Some(flash) = frame.flash {
        let _ = write!(
            html,
            "<div class=\"flash\" role=\"status\">{}</div>",
            escape(flash)
        );
    }
    if let Some(warning) = &frame.warning {
        let _ = write!(
            html,
            "<div class=\"warning\" id=\"warning\" role=\"alert\">{}</div>",
            escape(warning)
        );
    }
    if !frame.deletions.is_empty() {
        html.push_str("<ul class=\"deletions\" id=\"deletions\" role=\"status\">");
        for line in &frame.deletions {
            let _ = write!(html, "<li>{}</li>", escape(line));
        }
        html.push_str("</ul>");
        if frame.deletions_running {
            // (a page of its own reloads itself: reloading this one could lose a form being
            // filled in)
            let _ = write!(
                html,
                "<p class=\"muted\"><a id=\"follow-deletions\" href=\"{DELETIONS_PATH}\">Follow the progress</a> on a page that reloads itself every {DELETIONS_REFRESH} s until the deletion ends.</p>"
            );
        }
    }
    let _ = write!(
        html,
        "<h1>{}</h1>{body}</main></body></html>",
        escape(title)
    );
    html
}

/// Rows of a two-column table: a label, and its value in a cell of that id.
fn field_rows<const N: usize>(out: &mut String, rows: [(&str, String, &str); N]) {
    for (label, value, id) in rows {
        let _ = write!(
            out,
            "<tr><th>{}</th><td id=\"{id}\">{}</td></tr>",
            escape(label),
            escape(&value)
        );
    }
}

fn card(out: &mut String, label: &str, value: &str, id: &str) {
    let _ = write!(
        out,
        "<div class=\"card\"><div class=\"label\">{}</div><div class=\"value\" id=\"{id}\">{}</div></div>",
        escape(label),
        escape(value)
    );
}

/// A button that posts an action of a queue; nothing in read-only mode.
pub fn action_button(
    frame: &Frame,
    queue: &str,
    action: &str,
    fields: &[(&str, &str)],
    label: &str,
    back: &str,
) -> String {
    if frame.read_only {
        return String::new();
    }
    let mut form = format!(
        "<form class=\"inline\" method=\"post\" action=\"{}/action\"><input type=\"hidden\" name=\"action\" value=\"{}\"><input type=\"hidden\" name=\"back\" value=\"{}\">",
        escape(&queue_path(queue)),
        escape(action),
        escape(back)
    );
    for (name, value) in fields {
        let _ = write!(
            form,
            "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
            escape(name),
            escape(value)
        );
    }
    let class = if is_destructive(action) {
        " class=\"danger\""
    } else {
        ""
    };
    let _ = write!(
        form,
        "<button type=\"submit\"{class} data-action=\"{}\">{}</button></form>",
        escape(action),
        escape(label)
    );
    form
}

/// A form of an action that takes one typed value (a delay, a budget, a cap) for what
/// `target` names (`("host", name)` or `("crawl", name)`).
fn value_input(
    frame: &Frame,
    queue: &str,
    (target, name): (&str, &str),
    action: &str,
    field: &str,
    (placeholder, label): (&str, &str),
    back: &str,
) -> String {
    if frame.read_only {
        return String::new();
    }
    format!(
        "<form class=\"inline\" method=\"post\" action=\"{}/action\"><input type=\"hidden\" name=\"action\" value=\"{action}\"><input type=\"hidden\" name=\"{target}\" value=\"{}\"><input type=\"hidden\" name=\"back\" value=\"{}\"><input type=\"text\" name=\"{field}\" placeholder=\"{}\" size=\"10\"><button type=\"submit\" data-action=\"{action}\">{}</button></form>",
        escape(&queue_path(queue)),
        escape(name),
        escape(back),
        escape(placeholder),
        escape(label)
    )
}

/// The form that seeds URLs typed or pasted in, one per line, into the queue (a crawl named
/// in the form, or none) or into `crawl`; nothing in read-only mode.
fn seed_form(frame: &Frame, queue: &str, crawl: Option<&str>, back: &str) -> String {
    if frame.read_only {
        return String::new();
    }
    let crawl_field = match crawl {
        Some(crawl) => format!(
            "<input type=\"hidden\" name=\"crawl\" value=\"{}\">",
            escape(crawl)
        ),
        None => "<input type=\"text\" name=\"crawl\" placeholder=\"crawl (none)\" size=\"14\">"
            .to_string(),
    };
    format!(
        "<h2>Seed</h2><form class=\"seed\" method=\"post\" action=\"{}/action\"><input type=\"hidden\" name=\"action\" value=\"seed\"><input type=\"hidden\" name=\"back\" value=\"{}\"><textarea name=\"urls\" rows=\"4\" placeholder=\"one URL or host per line (blank lines and # comments skipped)\"></textarea><div class=\"seed-options\">{crawl_field}<input type=\"text\" name=\"priority\" placeholder=\"priority 0\" size=\"10\"><button type=\"submit\" data-action=\"seed\">Seed</button></div></form>",
        escape(&queue_path(queue)),
        escape(back)
    )
}

fn is_destructive(action: &str) -> bool {
    matches!(
        action,
        "delete-host" | "delete-crawl" | "purge-dead" | "purge-reason" | "remove-queue"
    )
}

/// The confirmation an action asks for: what it will do, and the same form again with
/// `confirm=yes`.
pub fn confirm(
    frame: &Frame,
    queue: &str,
    what: &str,
    fields: &[(String, String)],
    back: &str,
) -> String {
    let mut body = format!(
        "<div class=\"confirm\"><p id=\"confirm-what\">{}</p><form method=\"post\" action=\"{}/action\">",
        escape(what),
        escape(&queue_path(queue))
    );
    for (name, value) in fields {
        if name != "confirm" {
            let _ = write!(
                body,
                "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
                escape(name),
                escape(value)
            );
        }
    }
    let _ = write!(
        body,
        "<input type=\"hidden\" name=\"confirm\" value=\"yes\"><button type=\"submit\" id=\"confirm\">Yes, do it</button> <a href=\"{}\" id=\"cancel\">Cancel</a></form></div>",
        escape(back)
    );
    layout(
        frame,
        "Confirm",
        &[(queue_path(queue), queue.to_string())],
        &body,
    )
}

/// One row of the queue list.
pub struct QueueRow {
    pub name: String,
    pub figures: Result<(Stats, bool), String>,
    pub rates: Option<Rates>,
}

/// What the console says of a queue that holds nothing and has no record of an item (a name no
/// client has used under this key prefix, a misspelt `--queue`, or a queue removed since).
pub const NO_RECORD: &str = "holds nothing and has no record of an item under this key prefix: \
     not used yet, removed, or a misspelt --queue (crawlq queue ls lists the queues)";

pub fn queues(frame: &Frame, rows: &[QueueRow], note: Option<&str>) -> String {
    let mut body = String::new();
    if let Some(note) = note {
        let _ = write!(body, "<div class=\"error\">{}</div>", escape(note));
    }
    if rows.is_empty() {
        body.push_str("<p class=\"muted\">No queue found under this key prefix yet.</p>");
    }
    body.push_str("<table id=\"queues\"><tr><th>queue</th><th class=\"n\">pending</th><th class=\"n\">ready</th><th class=\"n\">delayed</th><th class=\"n\">leased</th><th class=\"n\">dead</th><th class=\"n\">done</th><th class=\"n\">acked/s</th><th class=\"n\">seeded/s</th><th>state</th></tr>");
    for row in rows {
        let _ = write!(
            body,
            "<tr data-queue=\"{}\"><td><a href=\"{}\">{}</a></td>",
            escape(&row.name),
            escape(&queue_path(&row.name)),
            escape(&row.name)
        );
        match &row.figures {
            Ok((s, paused)) => {
                for v in [s.pending, s.ready, s.delayed, s.leased, s.dead, s.done] {
                    let _ = write!(body, "<td class=\"n\">{}</td>", count(v));
                }
                let (acked, seeded) = row.rates.map_or(("-".into(), "-".into()), |r| {
                    (per_second(r.acked), per_second(r.seeded))
                });
                let _ = write!(
                    body,
                    "<td class=\"n\">{acked}</td><td class=\"n\">{seeded}</td><td>{}{}</td></tr>",
                    if *paused {
                        "<span class=\"badge\">paused</span>"
                    } else {
                        ""
                    },
                    if crate::inspect::no_record_of_an_item(s) {
                        format!(
                            "<span class=\"badge\" title=\"{}\">no record</span>",
                            escape(NO_RECORD)
                        )
                    } else {
                        String::new()
                    }
                );
            }
            Err(e) => {
                let _ = write!(
                    body,
                    "<td colspan=\"9\"><span class=\"badge bad\">unreadable</span> {}</td></tr>",
                    escape(e)
                );
            }
        }
    }
    let _ = write!(
        body,
        "</table><p class=\"muted\">Rates are over the last minute of the console's own readings. {}</p>",
        live_link(frame, "/")
    );
    layout(frame, "Queues", &[], &body)
}

/// A link that turns the page's reload every 10 seconds on or off.
fn live_link(frame: &Frame, path: &str) -> String {
    if frame.refresh.is_some() {
        format!(
            "<a id=\"live\" href=\"{}\">Stop reloading</a>",
            escape(path)
        )
    } else {
        format!(
            "<a id=\"live\" href=\"{}?live=1\">Reload every 10 s</a>",
            escape(path)
        )
    }
}

/// The Previous and Next links of a listing paged by offset (`path` takes `?offset=`):
/// `shown` items from `offset`, `more` when there are others after them; nothing for a single
/// page.
fn pager(path: &str, offset: usize, shown: usize, page_size: usize, more: bool) -> String {
    let mut links = Vec::new();
    if offset > 0 {
        links.push(format!(
            "<a href=\"{}?offset={}\">Previous</a>",
            escape(path),
            offset.saturating_sub(page_size)
        ));
    }
    if more {
        links.push(format!(
            "<a id=\"next-page\" href=\"{}?offset={}\">Next</a>",
            escape(path),
            offset + shown
        ));
    }
    if links.is_empty() {
        String::new()
    } else {
        format!("<p>{}</p>", links.join(" · "))
    }
}

/// A rate a second: whole from 10, one decimal from 1, two significant digits below (a crawl
/// acking one item a minute shows 0.017, not 0.0).
fn per_second(v: f64) -> String {
    if v >= 10.0 {
        count(v.round() as u64)
    } else if v >= 1.0 || v <= 0.0 {
        format!("{v:.1}")
    } else {
        let decimals = (1 - v.log10().floor() as i32).max(2) as usize;
        format!("{v:.decimals$}")
    }
}

/// What a queue page's charts show, and where it came from.
pub struct History<'a> {
    pub depth: Vec<Series<'a>>,
    pub throughput: Vec<Series<'a>>,
    /// A sentence saying where the figures come from (and why not Prometheus, if it failed).
    pub source: String,
    /// The Prometheus windows offered (none without --prometheus), and the one shown.
    pub windows: &'a [(&'a str, u64)],
    pub window: Option<&'a str>,
}

impl History<'_> {
    /// The charts of the console's own readings.
    pub fn of_samples(samples: &[Sample]) -> (Vec<Series<'static>>, Vec<Series<'static>>) {
        let series = |f: fn(&Sample) -> u64| -> Vec<(i64, f64)> {
            samples.iter().map(|x| (x.at_ms, f(x) as f64)).collect()
        };
        let rate_series = |f: fn(&Rates) -> f64| -> Vec<(i64, f64)> {
            samples
                .windows(2)
                .filter_map(|w| Rates::between(&w[0], &w[1]).map(|r| (w[1].at_ms, f(&r))))
                .collect()
        };
        (
            vec![
                ("pending", PENDING, series(|x| x.pending)),
                ("leased", LEASED, series(|x| x.leased)),
                ("dead", DEAD, series(|x| x.dead)),
            ],
            vec![
                ("acked", LEASED, rate_series(|r| r.acked)),
                ("seeded", PENDING, rate_series(|r| r.seeded)),
                ("nacked", DEAD, rate_series(|r| r.nacked)),
            ],
        )
    }

    /// A named crawl's charts of the console's own readings: the queue's lines, but a crawl
    /// counts no nacks, and its acks are its done.
    pub fn of_crawl_samples(samples: &[Sample]) -> (Vec<Series<'static>>, Vec<Series<'static>>) {
        let (depth, mut throughput) = History::of_samples(samples);
        throughput.retain(|(name, _, _)| *name != "nacked");
        for line in &mut throughput {
            if line.0 == "acked" {
                line.0 = "done";
            }
        }
        (depth, throughput)
    }
}

/// A page's "History": where the figures come from, the Prometheus windows to pick from
/// (`?range=`), then the depth and throughput charts; `trailing` ends the sentence (a link).
fn history_section(body: &mut String, path: &str, history: &History, trailing: &str) {
    let _ = write!(
        body,
        "<h2>History</h2><p class=\"muted\" id=\"history-source\">{}",
        escape(&history.source)
    );
    if !history.windows.is_empty() {
        body.push_str(" · from Prometheus:");
        for (window, _) in history.windows {
            if Some(*window) == history.window {
                let _ = write!(body, " <b>{window}</b>");
            } else {
                let _ = write!(body, " <a href=\"{path}?range={window}\">{window}</a>");
            }
        }
        if history.window.is_some() {
            let _ = write!(
                body,
                " · <a href=\"{path}?range=console\">the console's own</a>"
            );
        }
    }
    if !trailing.is_empty() {
        let _ = write!(body, " {trailing}");
    }
    body.push_str("</p><div class=\"charts\">");
    body.push_str(&chart("Depth", &history.depth));
    body.push_str(&chart("Throughput per second", &history.throughput));
    body.push_str("</div>");
}

/// The colours of the charts' lines.
pub const PENDING: &str = "#2357c6";
pub const LEASED: &str = "#1c7c3c";
pub const DEAD: &str = "#b3261e";

/// The queue page: figures, rates, charts of the last hour, shards, next items, actions.
pub struct QueueView<'a> {
    pub name: &'a str,
    pub stats: &'a Stats,
    pub paused: bool,
    pub rates: Option<Rates>,
    pub history: &'a History<'a>,
    pub next: &'a [StoredItem],
    pub shard_nodes: &'a [String],
    /// How many named crawls the queue has.
    pub crawls: usize,
}

pub fn queue(frame: &Frame, v: &QueueView) -> String {
    let s = v.stats;
    let path = queue_path(v.name);
    let mut body = String::new();
    if crate::inspect::no_record_of_an_item(s) {
        let _ = write!(
            body,
            "<p class=\"muted\" id=\"no-record\">Queue {} {}.</p>",
            escape(v.name),
            escape(NO_RECORD)
        );
    }
    body.push_str("<div class=\"cards\">");
    for (label, value, id) in [
        ("pending", s.pending, "pending"),
        ("ready", s.ready, "ready"),
        ("delayed", s.delayed, "delayed"),
        ("leased", s.leased, "leased"),
        ("dead", s.dead, "dead"),
        ("done", s.done, "done"),
        ("seen", s.seen, "seen"),
        ("hosts", s.hosts, "hosts"),
        ("hosts waiting", s.hosts_waiting, "hosts-waiting"),
    ] {
        card(&mut body, label, &count(value), id);
    }
    let oldest = s
        .oldest_pending_age_ms
        .map_or("-".to_string(), |ms| duration(Duration::from_millis(ms)));
    card(&mut body, "oldest pending", &oldest, "oldest-pending");
    let (acked, seeded, nacked) = v.rates.map_or(("-".into(), "-".into(), "-".into()), |r| {
        (
            per_second(r.acked),
            per_second(r.seeded),
            per_second(r.nacked),
        )
    });
    card(&mut body, "acked/s", &acked, "acked-rate");
    card(&mut body, "seeded/s", &seeded, "seeded-rate");
    card(&mut body, "nacked/s", &nacked, "nacked-rate");
    body.push_str("</div>");

    let _ = write!(
        body,
        "<h2>State</h2><div class=\"actions\"><span id=\"queue-state\">{}</span> ",
        if v.paused {
            "<span class=\"badge\">paused</span> leases hand out nothing"
        } else {
            "running"
        }
    );
    body.push_str(&if v.paused {
        action_button(frame, v.name, "resume-queue", &[], "Resume queue", &path)
    } else {
        action_button(frame, v.name, "pause-queue", &[], "Pause queue", &path)
    });
    // (back to the list of queues: this page is gone once it is done)
    body.push_str(&action_button(
        frame,
        v.name,
        "remove-queue",
        &[],
        "Remove queue",
        "/",
    ));
    let crawls = if v.crawls > 0 {
        format!(
            " · <a href=\"{path}/crawls\" id=\"crawls-link\">Crawls ({})</a>",
            count(v.crawls as u64)
        )
    } else {
        String::new()
    };
    let _ = write!(
        body,
        " <a href=\"{path}/hosts\">Hosts ({})</a> · <a href=\"{path}/leased\" id=\"leased-link\">Leased ({})</a> · <a href=\"{path}/dead\">Dead letters ({})</a>{crawls} · {}</div>",
        count(s.hosts),
        count(s.leased),
        count(s.dead),
        live_link(frame, &path)
    );

    history_section(&mut body, &path, v.history, "");

    if s.shards.len() > 1 {
        body.push_str("<h2>Shards</h2><table id=\"shards\"><tr><th>shard</th><th>node</th><th class=\"n\">pending</th><th class=\"n\">ready</th><th class=\"n\">delayed</th><th class=\"n\">leased</th><th class=\"n\">dead</th><th class=\"n\">done</th><th class=\"n\">hosts</th></tr>");
        for (i, shard) in s.shards.iter().enumerate() {
            let node = v.shard_nodes.get(i).map_or("", String::as_str);
            let _ = write!(body, "<tr><td>{i}</td><td>{}</td>", escape(node));
            for n in [
                shard.pending,
                shard.ready,
                shard.delayed,
                shard.leased,
                shard.dead,
                shard.done,
                shard.hosts,
            ] {
                let _ = write!(body, "<td class=\"n\">{}</td>", count(n));
            }
            body.push_str("</tr>");
        }
        body.push_str("</table>");
    }

    body.push_str("<h2>Next up</h2>");
    items_table(&mut body, v.name, v.next);
    let _ = write!(
        body,
        "<p class=\"muted\">Lifetime: {} seeded, {} duplicates, {} leases, {} acked, {} nacked, {} retried, {} reclaimed, {} released, {} dead-lettered, {} over budget; {} duplicates answered by workers' seen caches.</p>",
        count(s.seeded_total),
        count(s.duplicates_total),
        count(s.leased_total),
        count(s.acked_total),
        count(s.nacked_total),
        count(s.retried_total),
        count(s.reclaimed_total),
        count(s.released_total),
        count(s.dead_total),
        count(s.over_budget_total),
        count(s.seen_cache_hits_total)
    );
    body.push_str(&seed_form(frame, v.name, None, &path));
    layout(frame, v.name, &[(path.clone(), v.name.to_string())], &body)
}

fn items_table(body: &mut String, queue: &str, items: &[StoredItem]) {
    if items.is_empty() {
        body.push_str("<p class=\"muted\" id=\"nothing-ready\">Nothing ready.</p>");
        return;
    }
    body.push_str("<table class=\"items\" id=\"items\"><tr><th>url or key</th><th>host</th><th class=\"n\">priority</th><th class=\"n\">attempts</th></tr>");
    for item in items {
        let what = item
            .url
            .as_deref()
            .or(item.key.as_deref())
            .unwrap_or(&item.id);
        let _ = write!(
            body,
            "<tr><td class=\"url\">{}</td><td><a href=\"{}\">{}</a></td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            escape(what),
            escape(&host_path(queue, &item.host)),
            escape(&item.host),
            item.priority,
            item.attempt
        );
    }
    body.push_str("</table>");
}

/// One host of the hosts page: its counts and (read for the hosts shown) its settings.
pub struct HostRow {
    pub counts: HostCounts,
    pub info: Option<HostInfo>,
}

pub struct HostsView<'a> {
    pub queue: &'a str,
    pub rows: &'a [HostRow],
    pub total: u64,
    pub next_cursor: Option<&'a str>,
    pub order: &'a str,
    /// How many of the largest hosts were ranked (all of this page's, by size).
    pub scanned: usize,
    pub now_ms: i64,
    pub default_delay: Duration,
}

pub fn hosts(frame: &Frame, v: &HostsView) -> String {
    let path = queue_path(v.queue);
    let mut body = format!(
        "<form class=\"inline\" method=\"get\" action=\"{path}/hosts\"><input type=\"search\" name=\"host\" placeholder=\"host name\" id=\"host-search\"><button type=\"submit\">Find host</button></form>"
    );
    let shown = match v.order {
        "slowest" => "the slowest (longest delay)",
        "paused" => "the paused ones",
        "budget" => "those with a budget, the most used first",
        _ => "the largest",
    };
    let among = if v.order == "largest" {
        String::new()
    } else {
        format!(" among the {} largest", count(v.scanned as u64))
    };
    let _ = write!(
        body,
        "<p id=\"hosts-shown\">{} hosts hold items. Shown: {shown}{among}. Show: ",
        count(v.total)
    );
    for (order, label) in [
        ("largest", "largest"),
        ("slowest", "slowest"),
        ("paused", "paused"),
        ("budget", "over or near budget"),
    ] {
        if order == v.order {
            let _ = write!(body, "<b>{label}</b> ");
        } else {
            let _ = write!(body, "<a href=\"{path}/hosts?order={order}\">{label}</a> ");
        }
    }
    body.push_str("</p><table id=\"hosts\"><tr><th>host</th><th class=\"n\">items</th><th class=\"n\">ready</th><th class=\"n\">delayed</th><th class=\"n\">leased</th><th class=\"n\">dead</th><th>delay</th><th>budget</th><th>next lease</th><th>state</th></tr>");
    for row in v.rows {
        let h = &row.counts;
        let _ = write!(
            body,
            "<tr data-host=\"{}\"><td><a href=\"{}\">{}</a></td>",
            escape(&h.host),
            escape(&host_path(v.queue, &h.host)),
            escape(&h.host)
        );
        for n in [h.items, h.ready, h.delayed, h.leased, h.dead] {
            let _ = write!(body, "<td class=\"n\">{}</td>", count(n));
        }
        let (delay, budget) = match &row.info {
            Some(info) => (
                delay_text(info, v.default_delay),
                info.budget.map_or("-".into(), |b| {
                    format!("{} / {}", count(info.budget_used), count(b))
                }),
            ),
            None => ("?".into(), "?".into()),
        };
        let next = h.next_due_ms.map_or("-".into(), |at| {
            if at <= v.now_ms {
                "now".into()
            } else {
                ago(at, v.now_ms)
            }
        });
        let state = host_state(h.paused, row.info.as_ref());
        let _ = write!(
            body,
            "<td>{}</td><td>{}</td><td>{}</td><td>{state}</td></tr>",
            escape(&delay),
            escape(&budget),
            escape(&next)
        );
    }
    body.push_str("</table>");
    if let Some(cursor) = v.next_cursor.filter(|_| v.order == "largest") {
        let _ = write!(
            body,
            "<p><a id=\"next-page\" href=\"{path}/hosts?order={}&amp;cursor={}\">Next page</a></p>",
            escape(v.order),
            escape(&segment(cursor))
        );
    }
    layout(
        frame,
        &format!("Hosts of {}", v.queue),
        &[
            (path.clone(), v.queue.to_string()),
            (format!("{path}/hosts"), "hosts".into()),
        ],
        &body,
    )
}

/// One named crawl of the crawls page: its counts, limits and rates (`crawl_stats`).
pub struct CrawlRow {
    pub name: String,
    pub stats: CrawlStats,
}

pub struct CrawlsView<'a> {
    pub queue: &'a str,
    pub rows: &'a [CrawlRow],
    /// How many crawls the queue has.
    pub total: usize,
    pub offset: usize,
    pub page_size: usize,
}

pub fn crawls(frame: &Frame, v: &CrawlsView) -> String {
    let path = queue_path(v.queue);
    let mut body = format!(
        "<p id=\"crawls-shown\">{} named crawls; shown: {} to {}, by name. Rates are each crawl's over the last minute of the Redis clock. {}</p>",
        count(v.total as u64),
        count(v.offset as u64 + u64::from(!v.rows.is_empty())),
        count((v.offset + v.rows.len()) as u64),
        live_link(frame, &format!("{path}/crawls"))
    );
    body.push_str("<table id=\"crawls\"><tr><th>crawl</th><th class=\"n\">pending</th><th class=\"n\">ready</th><th class=\"n\">delayed</th><th class=\"n\">leased</th><th class=\"n\">dead</th><th class=\"n\">done</th><th class=\"n\">done/s</th><th class=\"n\">seeded/s</th><th>limits</th></tr>");
    for row in v.rows {
        let c = &row.stats;
        let _ = write!(
            body,
            "<tr data-crawl=\"{}\"><td><a href=\"{}\">{}</a></td>",
            escape(&row.name),
            escape(&crawl_path(v.queue, &row.name)),
            escape(&clip(&row.name, 80))
        );
        for n in [c.pending(), c.ready, c.delayed, c.leased, c.dead, c.done] {
            let _ = write!(body, "<td class=\"n\">{}</td>", count(n));
        }
        let _ = write!(
            body,
            "<td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            per_second(c.done_per_second),
            per_second(c.seeded_per_second),
            escape(&crate::crawls::limits(c))
        );
    }
    body.push_str("</table>");
    let more = v.offset + v.rows.len() < v.total;
    body.push_str(&pager(
        &format!("{path}/crawls"),
        v.offset,
        v.rows.len(),
        v.page_size,
        more,
    ));
    layout(
        frame,
        &format!("Crawls of {}", v.queue),
        &[
            (path.clone(), v.queue.to_string()),
            (format!("{path}/crawls"), "crawls".into()),
        ],
        &body,
    )
}

/// A named crawl's page: its counts, limits, rates (`crawl_stats`) and charts of the
/// console's readings.
pub struct CrawlView<'a> {
    pub queue: &'a str,
    pub crawl: &'a str,
    pub stats: &'a CrawlStats,
    pub history: &'a History<'a>,
}

pub fn crawl(frame: &Frame, v: &CrawlView) -> String {
    let (c, queue, crawl) = (v.stats, v.queue, v.crawl);
    let path = crawl_path(queue, crawl);
    let mut body = String::from("<div class=\"cards\">");
    for (label, value, id) in [
        ("pending", c.pending(), "crawl-pending"),
        ("ready", c.ready, "crawl-ready"),
        ("delayed", c.delayed, "crawl-delayed"),
        ("leased", c.leased, "crawl-leased"),
        ("dead", c.dead, "crawl-dead"),
        ("done", c.done, "crawl-done"),
        ("seen", c.seen, "crawl-seen"),
        ("seeded", c.seeded_total, "crawl-seeded"),
        ("hosts", c.hosts, "crawl-hosts"),
        ("held hosts", c.held_hosts, "crawl-held-hosts"),
    ] {
        card(&mut body, label, &count(value), id);
    }
    let oldest = c
        .oldest_pending_age_ms
        .map_or("-".to_string(), |ms| duration(Duration::from_millis(ms)));
    card(&mut body, "oldest pending", &oldest, "crawl-oldest-pending");
    card(
        &mut body,
        "done/s",
        &per_second(c.done_per_second),
        "crawl-done-rate",
    );
    card(
        &mut body,
        "seeded/s",
        &per_second(c.seeded_per_second),
        "crawl-seeded-rate",
    );
    body.push_str("</div><h2>Limits</h2><table id=\"crawl\">");
    field_rows(
        &mut body,
        [
            (
                "paused",
                match (c.deleting, c.paused) {
                    (true, _) => "being deleted (a deletion under way, or stopped part-way: delete it again to end it)",
                    (false, true) => "yes",
                    (false, false) => "no",
                }
                .to_string(),
                "crawl-paused",
            ),
            (
                "cap (most leased at once)",
                c.cap.map_or("none".into(), count),
                "crawl-cap",
            ),
            ("weight", c.weight.to_string(), "crawl-weight"),
            (
                "rate (most leases a second)",
                c.rate.map_or("none".into(), per_second),
                "crawl-rate",
            ),
            (
                "host budget (most new URLs per host)",
                c.host_budget.map_or("none".into(), count),
                "crawl-host-budget",
            ),
        ],
    );
    body.push_str("</table>");
    if !frame.read_only {
        body.push_str("<h2>Actions</h2><div class=\"actions\">");
        // (a crawl being deleted takes no pause or limit: only its deletion, to end it)
        if !c.deleting {
            body.push_str(&if c.paused {
                action_button(
                    frame,
                    queue,
                    "resume-crawl",
                    &[("crawl", crawl)],
                    "Resume crawl",
                    &path,
                )
            } else {
                action_button(
                    frame,
                    queue,
                    "pause-crawl",
                    &[("crawl", crawl)],
                    "Pause crawl",
                    &path,
                )
            });
            for (action, field, words) in [
                ("crawl-cap", "cap", ("leases or none", "Set cap")),
                ("crawl-weight", "weight", ("1.. or default", "Set weight")),
                ("crawl-rate", "rate", ("per second or none", "Set rate")),
                (
                    "crawl-host-budget",
                    "budget",
                    ("URLs or none", "Set host budget"),
                ),
            ] {
                body.push_str(&value_input(
                    frame,
                    queue,
                    ("crawl", crawl),
                    action,
                    field,
                    words,
                    &path,
                ));
            }
            body.push_str("<br>");
        }
        body.push_str(&action_button(
            frame,
            queue,
            "delete-crawl",
            &[("crawl", crawl)],
            "Delete crawl",
            &format!("{}/crawls", queue_path(queue)),
        ));
        body.push_str("</div>");
    }
    history_section(&mut body, &path, v.history, &live_link(frame, &path));
    body.push_str(&seed_form(frame, queue, Some(crawl), &path));
    let queue_path = queue_path(queue);
    layout(
        frame,
        &format!("Crawl {crawl}"),
        &[
            (queue_path.clone(), queue.to_string()),
            (format!("{queue_path}/crawls"), "crawls".into()),
            (path.clone(), crawl.to_string()),
        ],
        &body,
    )
}

fn host_state(paused: bool, info: Option<&HostInfo>) -> String {
    let mut state = String::new();
    if paused {
        state.push_str("<span class=\"badge\">paused</span> ");
    }
    if let Some(info) = info {
        if info.budget.is_some_and(|b| info.budget_used >= b) {
            state.push_str("<span class=\"badge bad\">over budget</span> ");
        }
        if info.full {
            state.push_str("<span class=\"badge\">in-flight full</span> ");
        }
        if info.adaptive_extra_ms > 0 {
            state.push_str("<span class=\"badge\">slowed down</span> ");
        }
        if info.deleting {
            state.push_str("<span class=\"badge bad\">deleting</span> ");
        }
    }
    state
}

pub fn delay_text(info: &HostInfo, default: Duration) -> String {
    let base = match info.delay_override_ms {
        Some(ms) if info.delay_from_robots => {
            format!("{} (robots.txt)", duration(Duration::from_millis(ms)))
        }
        Some(ms) => duration(Duration::from_millis(ms)),
        None => format!("{} (default)", duration(default)),
    };
    if info.adaptive_extra_ms > 0 {
        format!(
            "{base} + {} slow-down",
            duration(Duration::from_millis(info.adaptive_extra_ms))
        )
    } else {
        base
    }
}

pub struct HostView<'a> {
    pub queue: &'a str,
    pub info: &'a HostInfo,
    /// A page of its ready items, in lease order.
    pub items: &'a [StoredItem],
    pub offset: usize,
    pub page_size: usize,
    pub now_ms: i64,
    pub default_delay: Duration,
}

pub fn host(frame: &Frame, v: &HostView) -> String {
    let (queue, info, now_ms, default_delay) = (v.queue, v.info, v.now_ms, v.default_delay);
    let path = host_path(queue, &info.host);
    let mut body = String::from("<table id=\"host\">");
    let paused = match (info.paused, info.paused_until_ms) {
        (false, _) => "no".to_string(),
        (true, None) => "yes, until resumed".to_string(),
        (true, Some(at)) => format!("yes, until {}", ago(at, now_ms)),
    };
    let held = info.held_until_ms.map_or("-".into(), |at| {
        if at <= now_ms {
            "no".into()
        } else {
            ago(at, now_ms)
        }
    });
    let in_flight = match info.in_flight_limit {
        Some(0) => format!("{} (no limit)", count(info.in_flight)),
        Some(n) => format!("{} of {n}", count(info.in_flight)),
        None => format!("{} (workers' default limit)", count(info.in_flight)),
    };
    let budget = info.budget.map_or("none".into(), |b| {
        format!("{} used of {}", count(info.budget_used), count(b))
    });
    let pacing = info.pacing.as_ref().map_or("workers' default".into(), |p| {
        format!(
            "{:?}{}",
            p.after,
            p.factor.map_or(String::new(), |f| format!(", factor {f}"))
        )
    });
    field_rows(
        &mut body,
        [
            ("ready", count(info.ready), "host-ready"),
            ("paused", paused, "host-paused"),
            ("held", held, "host-held"),
            ("delay", delay_text(info, default_delay), "host-delay"),
            ("in flight", in_flight, "host-in-flight"),
            ("delay after", pacing, "host-pacing"),
            ("budget", budget, "host-budget"),
            (
                "being deleted",
                if info.deleting {
                    "yes".into()
                } else {
                    "no".into()
                },
                "host-deleting",
            ),
        ],
    );
    body.push_str("</table>");
    if !frame.read_only {
        body.push_str("<h2>Actions</h2><div class=\"actions\">");
        let host = info.host.as_str();
        body.push_str(&if info.paused {
            action_button(
                frame,
                queue,
                "resume-host",
                &[("host", host)],
                "Resume host",
                &path,
            )
        } else {
            action_button(
                frame,
                queue,
                "pause-host",
                &[("host", host)],
                "Pause host",
                &path,
            )
        });
        body.push_str(&value_input(
            frame,
            queue,
            ("host", host),
            "host-delay",
            "delay",
            ("seconds or default", "Set delay"),
            &path,
        ));
        body.push_str(&value_input(
            frame,
            queue,
            ("host", host),
            "host-budget",
            "budget",
            ("URLs or none", "Set budget"),
            &path,
        ));
        body.push_str("<br>");
        body.push_str(&action_button(
            frame,
            queue,
            "delete-host",
            &[("host", host)],
            "Delete host's items",
            &path,
        ));
        body.push_str(&action_button(
            frame,
            queue,
            "delete-host",
            &[("host", host), ("forget", "yes")],
            "Delete host's items and forget them as seen",
            &path,
        ));
        body.push_str("</div>");
    }
    let _ = write!(
        body,
        "<h2>Ready items, in lease order</h2><p class=\"muted\">Items {}–{} of {}; delayed items (seed delays, retry backoffs) are not listed.</p>",
        count(v.offset as u64 + u64::from(!v.items.is_empty())),
        count((v.offset + v.items.len()) as u64),
        count(info.ready)
    );
    items_table(&mut body, queue, v.items);
    let more = v.items.len() == v.page_size && ((v.offset + v.items.len()) as u64) < info.ready;
    body.push_str(&pager(&path, v.offset, v.items.len(), v.page_size, more));
    let qpath = queue_path(queue);
    layout(
        frame,
        &info.host,
        &[
            (qpath.clone(), queue.to_string()),
            (format!("{qpath}/hosts"), "hosts".into()),
            (path, info.host.clone()),
        ],
        &body,
    )
}

pub struct DeadView<'a> {
    pub queue: &'a str,
    pub total: u64,
    pub offset: usize,
    pub page_size: usize,
    pub letters: &'a [DeadLetter],
    /// (reason, letters of the page with it), most first.
    pub reasons: &'a [(String, usize)],
    /// How many of the oldest letters the reasons were counted over.
    pub reasons_of: usize,
    pub reason: Option<&'a str>,
    pub now_ms: i64,
}

pub fn dead(frame: &Frame, v: &DeadView) -> String {
    let qpath = queue_path(v.queue);
    let path = format!("{qpath}/dead");
    let mut body = format!(
        "<p><span id=\"dead-total\">{}</span> dead letters, oldest first; {}.</p>",
        count(v.total),
        match v.reason {
            Some(_) => format!(
                "{} of them shown, those of one reason",
                count(v.letters.len() as u64)
            ),
            None => format!(
                "letters {}–{} shown",
                count(v.offset as u64 + u64::from(!v.letters.is_empty())),
                count((v.offset + v.letters.len()) as u64)
            ),
        }
    );
    if v.total > 0 {
        body.push_str("<div class=\"actions\">");
        body.push_str(&action_button(
            frame,
            v.queue,
            "requeue-dead",
            &[],
            "Requeue all",
            &path,
        ));
        body.push_str(&action_button(
            frame,
            v.queue,
            "purge-dead",
            &[],
            "Purge all",
            &path,
        ));
        body.push_str("</div>");
    }
    if !v.reasons.is_empty() {
        let _ = write!(
            body,
            "<h2>By reason</h2><p class=\"muted\">Counted over the oldest {} dead letters.</p><table id=\"reasons\"><tr><th>reason</th><th class=\"n\">letters</th><th></th></tr>",
            count(v.reasons_of as u64)
        );
        for (reason, n) in v.reasons {
            let _ = write!(
                body,
                "<tr><td><a href=\"{path}?reason={}\">{}</a></td><td class=\"n\">{n}</td><td>{}</td></tr>",
                escape(&segment(reason)),
                escape(&clip(reason, 120)),
                action_button(
                    frame,
                    v.queue,
                    "requeue-reason",
                    &[("reason", reason)],
                    "Requeue these",
                    &path
                ) + &action_button(
                    frame,
                    v.queue,
                    "purge-reason",
                    &[("reason", reason)],
                    "Purge these",
                    &path
                )
            );
        }
        body.push_str("</table>");
    }
    if let Some(reason) = v.reason {
        let _ = write!(
            body,
            "<p>Showing the letters whose reason is <b>{}</b>. <a href=\"{path}\">Show all</a></p>",
            escape(&clip(reason, 120))
        );
    }
    body.push_str("<h2>Letters</h2><table id=\"dead\"><tr><th>id</th><th>url or key</th><th>host</th><th class=\"n\">attempts</th><th>reason</th><th>died</th><th></th></tr>");
    for d in v.letters {
        let what = d.url.as_deref().or(d.key.as_deref()).unwrap_or("");
        let _ = write!(
            body,
            "<tr data-id=\"{}\"><td><a href=\"{path}/{}\"><code>{}</code></a></td><td class=\"url\">{}</td><td><a href=\"{}\">{}</a></td><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&d.id),
            escape(&segment(&d.id)),
            escape(&clip(&d.id, 18)),
            escape(&clip(what, 100)),
            escape(&host_path(v.queue, &d.host)),
            escape(&d.host),
            d.attempts,
            escape(&clip(&reason_of(d), 80)),
            escape(&ago(d.died_at_ms, v.now_ms)),
            action_button(
                frame,
                v.queue,
                "requeue-dead",
                &[("id", &d.id)],
                "Requeue",
                &path
            ) + &action_button(
                frame,
                v.queue,
                "purge-dead",
                &[("id", &d.id)],
                "Purge",
                &path
            )
        );
    }
    body.push_str("</table>");
    if v.reason.is_none() {
        let more = ((v.offset + v.letters.len()) as u64) < v.total;
        body.push_str(&pager(&path, v.offset, v.letters.len(), v.page_size, more));
    }
    layout(
        frame,
        &format!("Dead letters of {}", v.queue),
        &[
            (qpath.clone(), v.queue.to_string()),
            (path.clone(), "dead letters".into()),
        ],
        &body,
    )
}

/// The leases workers hold now ([`crawlq::Queue::leased_items`]), soonest expiry first, from
/// the `offset`-th on.
pub fn leased(
    frame: &Frame,
    queue: &str,
    page: &LeasedPage,
    offset: usize,
    page_size: usize,
) -> String {
    let qpath = queue_path(queue);
    let path = format!("{qpath}/leased");
    let expired = page
        .items
        .iter()
        .filter(|l| l.expires_at_ms < page.now_ms)
        .count();
    let mut body = format!(
        "<p><span id=\"leased-total\">{}</span> leases held now, soonest expiry first; {}–{} shown{}. An expired lease is listed until a lease call reclaims it: its worker can still answer it until then.</p>",
        count(page.total),
        count(offset as u64 + u64::from(!page.items.is_empty())),
        count((offset + page.items.len()) as u64),
        if expired > 0 {
            format!(", <span id=\"leased-expired\">{expired}</span> of them expired")
        } else {
            String::new()
        }
    );
    body.push_str("<table id=\"leased\"><tr><th>id</th><th>url or key</th><th>host</th><th>crawl</th><th class=\"n\">attempt</th><th>expires</th></tr>");
    for held in &page.items {
        let item = &held.item;
        let what = item.url.as_deref().or(item.key.as_deref()).unwrap_or("");
        let _ = write!(
            body,
            "<tr data-id=\"{}\"{}><td><code>{}</code></td><td class=\"url\">{}</td><td><a href=\"{}\">{}</a></td><td>{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            escape(&item.id),
            if held.expires_at_ms < page.now_ms {
                " class=\"expired\""
            } else {
                ""
            },
            escape(&clip(&item.id, 18)),
            escape(&clip(what, 100)),
            escape(&host_path(queue, &item.host)),
            escape(&item.host),
            escape(item.crawl.as_deref().unwrap_or("")),
            // numbered as the worker's lease: 1 on the first delivery
            item.attempt + 1,
            escape(&ago(held.expires_at_ms, page.now_ms)),
        );
    }
    body.push_str("</table>");
    if page.items.is_empty() {
        body.push_str("<p class=\"muted\" id=\"nothing-leased\">Nothing leased on this page.</p>");
    }
    let more = ((offset + page.items.len()) as u64) < page.total;
    body.push_str(&pager(&path, offset, page.items.len(), page_size, more));
    layout(
        frame,
        &format!("Leased in {queue}"),
        &[
            (qpath.clone(), queue.to_string()),
            (path.clone(), "leased".into()),
        ],
        &body,
    )
}

/// The reason a letter is listed under: its last error, or "(no reason)".
pub fn reason_of(d: &DeadLetter) -> String {
    d.last_error.clone().unwrap_or_else(|| "(no reason)".into())
}

pub fn dead_letter(frame: &Frame, queue: &str, d: &DeadLetter, now_ms: i64) -> String {
    let qpath = queue_path(queue);
    let path = format!("{qpath}/dead");
    let mut body = String::from("<table id=\"letter\">");
    let payload = d.payload.as_ref().map_or("-".into(), |p| {
        serde_json::to_string_pretty(p).unwrap_or_default()
    });
    for (label, value) in [
        ("id", d.id.clone()),
        ("url", d.url.clone().unwrap_or_else(|| "-".into())),
        ("key", d.key.clone().unwrap_or_else(|| "-".into())),
        ("host", d.host.clone()),
        ("priority", d.priority.to_string()),
        ("attempts", d.attempts.to_string()),
        ("reason", reason_of(d)),
        ("died", ago(d.died_at_ms, now_ms)),
    ] {
        let _ = write!(
            body,
            "<tr><th>{label}</th><td class=\"url\">{}</td></tr>",
            escape(&value)
        );
    }
    let _ = write!(
        body,
        "<tr><th>payload</th><td><pre>{}</pre></td></tr>",
        escape(&payload)
    );
    if let Some(raw) = &d.raw {
        let _ = write!(
            body,
            "<tr><th>stored as</th><td><pre>{}</pre></td></tr>",
            escape(raw)
        );
    }
    body.push_str("</table><div class=\"actions\">");
    body.push_str(&action_button(
        frame,
        queue,
        "requeue-dead",
        &[("id", &d.id)],
        "Requeue",
        &path,
    ));
    body.push_str(&action_button(
        frame,
        queue,
        "purge-dead",
        &[("id", &d.id)],
        "Purge",
        &path,
    ));
    body.push_str("</div>");
    layout(
        frame,
        &format!("Dead letter {}", clip(&d.id, 24)),
        &[(qpath, queue.to_string()), (path, "dead letters".into())],
        &body,
    )
}

pub fn login(frame: &Frame, next: &str, wrong: bool) -> String {
    let mut body = String::new();
    if wrong {
        body.push_str("<div class=\"error\">That token is not the console's.</div>");
    }
    let _ = write!(
        body,
        "<form method=\"post\" action=\"/login\"><input type=\"hidden\" name=\"next\" value=\"{}\"><input type=\"password\" name=\"token\" id=\"token\" placeholder=\"access token\" autofocus> <button type=\"submit\" id=\"login\">Open</button></form><p class=\"muted\">The token is the one <code>crawlq web</code> was started with (--token or CRAWLQ_WEB_TOKEN).</p>",
        escape(next)
    );
    layout(frame, "Access token", &[], &body)
}

/// Where the console's deletions are followed.
pub const DELETIONS_PATH: &str = "/deletions";
/// Seconds between the deletions page's reloads while one runs.
pub const DELETIONS_REFRESH: u32 = 2;

/// The console's deletions, those under way with their totals so far and the latest ended
/// ones with their outcomes (`lines`, from `Deletions::all_lines`). It holds no form, so it may
/// reload itself (the frame's `refresh`, set while one runs).
pub fn deletions(frame: &Frame, lines: &[String]) -> String {
    let mut body = String::new();
    if frame.refresh.is_some() {
        let _ = write!(
            body,
            "<p class=\"muted\" id=\"deletions-reloading\">This page reloads itself every {DELETIONS_REFRESH} s while a deletion is under way.</p>"
        );
    } else {
        body.push_str(
            "<p class=\"muted\" id=\"deletions-reloading\">No deletion is under way.</p>",
        );
    }
    if lines.is_empty() {
        body.push_str("<p>No deletion was started from this console in the last 10 minutes.</p>");
    } else {
        body.push_str("<ul class=\"deletions\" id=\"deletion-list\" role=\"status\">");
        for line in lines {
            let _ = write!(body, "<li>{}</li>", escape(line));
        }
        body.push_str("</ul>");
    }
    body.push_str("<p><a href=\"/\">Queues</a></p>");
    layout(frame, "Deletions", &[], &body)
}

pub fn message(frame: &Frame, title: &str, text: &str) -> String {
    layout(
        frame,
        title,
        &[],
        &format!(
            "<div class=\"error\" id=\"message\">{}</div><p><a href=\"/\">Queues</a></p>",
            escape(text)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::per_second;

    #[test]
    fn a_rate_keeps_two_significant_digits_below_one() {
        let shown: Vec<String> = [0.0, 1.0 / 60.0, 0.05, 0.5, 2.5, 12.4, 1_234.6]
            .into_iter()
            .map(per_second)
            .collect();
        assert_eq!(
            shown,
            ["0.0", "0.017", "0.050", "0.50", "2.5", "12", "1,235"]
        );
    }
}
