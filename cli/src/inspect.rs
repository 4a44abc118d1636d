//! `stats`, `dead`, `reclaim`, `host-delay`, `hosts` and `peek`: look at a queue and repair it.

use crate::error::CliError;
use crate::format::{ago, clip, count, duration, progress_bar, rate};
use clap::{Args, Subcommand};
use crawlq::{DelayAfter, HostInfo, HostPacing, Queue, RedisExecutor, Stats, Style, binding::json};
use serde_json::Value;
use std::io::{IsTerminal, Write};
use std::time::Duration;

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Refresh every SECONDS (default 2) until interrupted; with --json, one line per refresh.
    #[arg(long, value_name = "SECONDS", num_args = 0..=1, default_missing_value = "2")]
    watch: Option<f64>,
    /// JSON (snake_case, seconds, as the Python binding's stats()).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
pub enum DeadCommand {
    /// List dead letters, oldest first.
    List {
        /// Show at most this many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Skip this many of the oldest first (paging).
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// JSON (snake_case, as the Python binding's dead()).
        #[arg(long)]
        json: bool,
    },
    /// Show dead letters by id: item, payload, attempts, last error, when it died. Ids that
    /// are not dead letters are reported and the status is 4.
    Show {
        /// Dead letter ids (as `dead list` shows them).
        #[arg(required = true)]
        ids: Vec<String>,
        /// JSON: one object per id, null for an id that is not a dead letter.
        #[arg(long)]
        json: bool,
    },
    /// Queue dead letters again (attempts reset): the given ids, or all with --all. Ids that
    /// are not dead letters are reported and the status is 4.
    Requeue {
        /// Dead letter ids (as `dead list` shows them).
        ids: Vec<String>,
        /// Every dead letter, oldest first.
        #[arg(long, conflicts_with = "ids")]
        all: bool,
    },
    /// Delete dead letters: the given ids, or every one (they stay in the seen set: seeding
    /// them again needs --force). Ids that are not dead letters are reported and the status
    /// is 4.
    Purge {
        /// Dead letter ids (as `dead list` shows them); none: every dead letter.
        ids: Vec<String>,
        /// Required: purging cannot be undone.
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum QueueCommand {
    /// List the queues under the key prefix with their depth (every primary of a cluster is
    /// scanned: meant for operators, not for a hot path).
    Ls {
        /// JSON: one object per queue (name, shards and its stats).
        #[arg(long)]
        json: bool,
    },
    /// Pause a queue for every worker in every language: leases hand out nothing (blocking
    /// ones keep waiting) until `queue resume`, or for --for SECONDS by the Redis clock;
    /// seeding, acks of leases already out, stats and dead letters go on.
    Pause {
        /// The queue (default: --queue).
        name: Option<String>,
        /// End the pause after this many seconds.
        #[arg(long = "for", value_name = "SECONDS", allow_negative_numbers = true)]
        for_seconds: Option<f64>,
    },
    /// Let a paused queue lease again; lease calls waiting on it wake at once.
    Resume {
        /// The queue (default: --queue).
        name: Option<String>,
    },
    /// Delete a queue: its items, leases, dead letters, counters and seen set. Stop its
    /// workers first: a running worker recreates the queue on its next call.
    Rm {
        /// The queue to delete (default: --queue).
        name: Option<String>,
        /// Required: deleting cannot be undone.
        #[arg(long)]
        yes: bool,
        /// Delete it even while items are leased (their workers' answers will be lost).
        #[arg(long)]
        force: bool,
        /// No progress line (it is drawn on stderr only when that is a terminal).
        #[arg(long)]
        quiet: bool,
    },
}

#[derive(Debug, Args)]
pub struct ReclaimArgs {
    /// Reclaim at most this many expired leases.
    #[arg(long, default_value_t = crawlq::binding::defaults::RECLAIM_LIMIT)]
    limit: usize,
    /// JSON (snake_case, as the Python binding's reclaim()).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct HostDelayArgs {
    /// A host or URL (its host key is used).
    host: String,
    /// New delay in seconds, or "default" to fall back to the queue's host_delay.
    seconds: Option<String>,
    /// JSON (snake_case, as the Python binding's host_info()).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
pub enum HostsCommand {
    /// Show a host's politeness state and pause.
    Show {
        /// A host or URL (its host key is used).
        host: String,
        /// JSON (snake_case, as the Python binding's host_info()).
        #[arg(long)]
        json: bool,
    },
    /// Pause a host for every worker (leases skip it; seeding goes on): until `hosts resume`,
    /// or for --for SECONDS by the Redis clock. Pausing a paused host sets the new end.
    Pause {
        /// A host or URL (its host key is used).
        host: String,
        /// End the pause after this many seconds.
        #[arg(long = "for", value_name = "SECONDS", allow_negative_numbers = true)]
        for_seconds: Option<f64>,
        /// JSON (snake_case, as the Python binding's pause_host()).
        #[arg(long)]
        json: bool,
    },
    /// Show or set a host's budget: the most new URLs it may add ("default": back to the
    /// queue's default budget). With --default instead of a host: the queue's default
    /// ("none": no default). Seeds past a budget are reported as budget_exhausted.
    Budget {
        /// A host or URL (its host key is used); omit it with --default.
        #[arg(required_unless_present = "default")]
        host: Option<String>,
        /// New budget: a number of URLs, or "default".
        urls: Option<String>,
        /// Set (or with no value show) the queue's default budget: a number or "none".
        #[arg(long, num_args = 0..=1, default_missing_value = "", conflicts_with_all = ["host", "urls"])]
        default: Option<String>,
        /// JSON (snake_case, as the Python binding's host_info()).
        #[arg(long)]
        json: bool,
    },
    /// Show or set a host's in-flight limit: the most of its items leased at once across
    /// every worker (0: none, whatever the workers' host_in_flight; "default": back to it).
    InFlight {
        /// A host or URL (its host key is used).
        host: String,
        /// New limit: a whole number, or "default".
        limit: Option<String>,
        /// JSON (snake_case, as the Python binding's host_info()).
        #[arg(long)]
        json: bool,
    },
    /// Show or set when a host's delay is counted from: "lease" (its next lease waits its
    /// delay after the previous lease), "answer" (after the previous item's answer; one item
    /// in flight unless its in-flight limit allows more) or "default" (the workers'
    /// host_delay_after).
    DelayAfter {
        /// A host or URL (its host key is used).
        host: String,
        /// "lease", "answer" or "default".
        after: Option<String>,
        /// After the answer, wait this many times how long the answered item was leased when
        /// that is longer than the delay (within the workers' host_delay_max).
        #[arg(long)]
        factor: Option<f64>,
        /// JSON (snake_case, as the Python binding's host_info()).
        #[arg(long)]
        json: bool,
    },
    /// List the hosts that hold items, the most items first, with their ready, delayed,
    /// leased and dead counts (one bounded call per page; --all pages through every host).
    Ls {
        /// Hosts per page (1..=1000).
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Start at this page (the cursor a previous page printed).
        #[arg(long)]
        cursor: Option<String>,
        /// Every page, not only the first.
        #[arg(long, conflicts_with = "cursor")]
        all: bool,
        /// JSON (snake_case, as the Python binding's list_hosts(); with --all one page per
        /// line).
        #[arg(long)]
        json: bool,
    },
    /// Delete a host: its ready, delayed, leased and dead items and its settings. Its leases
    /// answer lost; its URLs stay seen. Safe while workers run.
    Rm {
        /// A host or URL (its host key is used).
        host: String,
        /// Also forget the removed items' URLs, so that seeding them again adds them.
        #[arg(long)]
        forget_seen: bool,
        /// JSON (snake_case, as the Python binding's delete_host()).
        #[arg(long)]
        json: bool,
        /// No progress line (it is drawn on stderr only when that is a terminal).
        #[arg(long)]
        quiet: bool,
    },
    /// End a host's pause (what is left of its politeness delay still applies).
    Resume {
        /// A host or URL (its host key is used).
        host: String,
        /// JSON (snake_case, as the Python binding's resume_host()).
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct PeekArgs {
    /// Show at most this many items.
    #[arg(long, default_value_t = crawlq::binding::defaults::PEEK_LIMIT)]
    limit: usize,
    /// One host's ready items instead (a host or a URL of it), in the order its leases take
    /// them, paused or held or not (at most 250).
    #[arg(long)]
    host: Option<String>,
    /// With --host: skip this many of its items first (paging).
    #[arg(long, default_value_t = 0, requires = "host")]
    offset: usize,
    /// JSON (snake_case, one object per item).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct LeasedArgs {
    /// Show at most this many leases.
    #[arg(long, default_value_t = 20)]
    limit: usize,
    /// Skip this many leases first (paging).
    #[arg(long, default_value_t = 0)]
    offset: usize,
    /// JSON (snake_case, one object per lease, as a worker's lease shows it: attempt 1 on the
    /// first delivery, its token and expires_at).
    #[arg(long)]
    json: bool,
}

pub async fn stats(q: &Queue<RedisExecutor>, args: StatsArgs) -> Result<u8, CliError> {
    // where each shard lives (a cluster spreads them over its masters)
    let nodes = if q.shard_count().await? > 1 {
        q.shard_nodes().await?
    } else {
        Vec::new()
    };
    let Some(every) = args.watch else {
        let s = q.stats().await?;
        if no_record_of_an_item(&s) {
            // (a misspelt name reads as an empty queue: say so, on stderr, the figures unchanged)
            eprintln!(
                "crawlq: queue {} holds nothing and has no record of an item under this key \
                 prefix (a misspelt name? `crawlq queue ls` lists the queues)",
                q.name()
            );
        }
        if args.json {
            let mut json = json::stats_to_json(&s, Style::Snake);
            add_nodes(&mut json, &nodes);
            println!("{json}");
        } else {
            print!("{}", stats_table(q.name(), &s, None, &nodes));
        }
        return Ok(0);
    };
    let every = crate::seconds(every, "--watch")?;
    if every < Duration::from_millis(50) {
        return Err(CliError::Usage(
            "--watch takes an interval of at least 0.05 seconds".into(),
        ));
    }
    let clear = !args.json && std::io::stdout().is_terminal();
    let mut previous: Option<Stats> = None;
    loop {
        let s = q.stats().await?;
        let mut out = std::io::stdout().lock();
        let text = if args.json {
            let mut json = json::stats_to_json(&s, Style::Snake);
            add_nodes(&mut json, &nodes);
            format!("{json}\n")
        } else {
            let table = stats_table(q.name(), &s, previous.as_ref(), &nodes);
            // Redraw in place on a terminal; elsewhere print one block per refresh.
            if clear {
                format!("\x1b[H\x1b[2J{table}")
            } else {
                format!("{table}\n")
            }
        };
        // A closed pipe (`crawlq stats --watch | head`) ends the watch quietly.
        if out
            .write_all(text.as_bytes())
            .and_then(|_| out.flush())
            .is_err()
        {
            return Ok(0);
        }
        drop(out);
        previous = Some(s);
        tokio::time::sleep(every).await;
    }
}

/// Nothing is in the queue and its counters record no item: a name no client has used (or a
/// queue removed since).
pub(crate) fn no_record_of_an_item(s: &Stats) -> bool {
    s.seeded_total == 0 && s.pending == 0 && s.leased == 0 && s.dead == 0 && s.done == 0
}

/// How a queue's shards spread over nodes: `node (shards), ...`, most shards first; `-` for a
/// queue of one shard.
fn node_spread(nodes: &[String]) -> String {
    if nodes.is_empty() {
        return "-".to_string();
    }
    let mut per_node: std::collections::BTreeMap<&str, usize> = Default::default();
    for node in nodes {
        *per_node.entry(node.as_str()).or_default() += 1;
    }
    let mut list: Vec<(&str, usize)> = per_node.into_iter().collect();
    list.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    list.iter()
        .map(|(node, n)| format!("{node} ({n})"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Each shard's node in the stats JSON (`"node"` in each of `"shards"`).
fn add_nodes(json: &mut Value, nodes: &[String]) {
    if let Some(shards) = json.get_mut("shards").and_then(Value::as_array_mut) {
        for (shard, node) in shards.iter_mut().zip(nodes) {
            shard["node"] = Value::from(node.as_str());
        }
    }
}

/// The depth figures as a table; with the previous sample, the rates in between; each shard's
/// node when `nodes` names them.
fn stats_table(name: &str, s: &Stats, previous: Option<&Stats>, nodes: &[String]) -> String {
    let row = |label: &str, value: u64, detail: String| {
        format!("  {label:<16}{:>14}  {detail}", count(value))
            .trim_end()
            .to_string()
            + "\n"
    };
    let oldest = s
        .oldest_pending_age_ms
        .map_or("-".to_string(), |ms| duration(Duration::from_millis(ms)));
    let mut out = format!("queue {name}\n");
    out += &row(
        "pending",
        s.pending,
        format!("ready {}, delayed {}", count(s.ready), count(s.delayed)),
    );
    out += &row("leased", s.leased, String::new());
    out += &row("dead", s.dead, String::new());
    out += &row("done", s.done, String::new());
    out += &row("seen", s.seen, "distinct items ever queued".into());
    out += &row(
        "hosts",
        s.hosts,
        format!(
            "with pending work; {} waiting on politeness",
            count(s.hosts_waiting)
        ),
    );
    out += &format!("  {:<16}{oldest:>14}\n", "oldest pending");
    out += "totals\n";
    let totals = [
        ("seeded", s.seeded_total, previous.map(|p| p.seeded_total)),
        (
            "duplicates",
            s.duplicates_total,
            previous.map(|p| p.duplicates_total),
        ),
        ("leased", s.leased_total, previous.map(|p| p.leased_total)),
        ("acked", s.acked_total, previous.map(|p| p.acked_total)),
        ("nacked", s.nacked_total, previous.map(|p| p.nacked_total)),
        (
            "retried",
            s.retried_total,
            previous.map(|p| p.retried_total),
        ),
        (
            "reclaimed",
            s.reclaimed_total,
            previous.map(|p| p.reclaimed_total),
        ),
        (
            "released",
            s.released_total,
            previous.map(|p| p.released_total),
        ),
        (
            "dead-lettered",
            s.dead_total,
            previous.map(|p| p.dead_total),
        ),
    ];
    let elapsed = previous.map(|p| Duration::from_millis(s.now_ms.saturating_sub(p.now_ms) as u64));
    for (label, value, before) in totals {
        let detail = match (before, elapsed) {
            (Some(before), Some(elapsed)) => {
                format!("{}/s", rate(value.saturating_sub(before), elapsed))
            }
            _ => String::new(),
        };
        out += &row(label, value, detail);
    }
    if !s.shards.is_empty() {
        out += &format!("shards ({})\n", s.shards.len());
        for (i, shard) in s.shards.iter().enumerate() {
            let node = nodes.get(i).map(|n| format!("  {n}")).unwrap_or_default();
            out += &format!(
                "  {i:<4}pending {:>10}  leased {:>8}  dead {:>8}  done {:>12}  hosts {:>8}{node}\n",
                count(shard.pending),
                count(shard.leased),
                count(shard.dead),
                count(shard.done),
                count(shard.hosts)
            );
        }
    }
    out
}

pub async fn dead(q: &Queue<RedisExecutor>, command: DeadCommand) -> Result<u8, CliError> {
    match command {
        DeadCommand::List {
            limit,
            offset,
            json,
        } => {
            let page = q.dead(limit, offset).await?;
            if json {
                println!("{}", json::dead_page_to_json(&page, Style::Snake));
                return Ok(0);
            }
            let now = q.stats().await?.now_ms;
            println!(
                "{:<10} {:>8}  {:<12} {:<40} item",
                "id", "attempts", "died", "last error"
            );
            for d in &page.items {
                println!(
                    "{:<10} {:>8}  {:<12} {:<40} {}",
                    d.id,
                    d.attempts,
                    ago(d.died_at_ms, now),
                    clip(d.last_error.as_deref().unwrap_or("-"), 40),
                    d.url.as_deref().unwrap_or(&d.host)
                );
            }
            println!(
                "{} of {} dead letters (from {})",
                count(page.items.len() as u64),
                count(page.total),
                offset
            );
        }
        DeadCommand::Show { ids, json } => {
            let found = q.dead_letters(&ids).await?;
            if json {
                let list: Vec<Value> = found
                    .iter()
                    .map(|d| {
                        d.as_ref()
                            .map_or(Value::Null, |d| json::dead_letter_to_json(d, Style::Snake))
                    })
                    .collect();
                println!("{}", Value::Array(list));
            } else {
                let now = q.stats().await?.now_ms;
                for d in found.iter().flatten() {
                    println!("dead letter {}", d.id);
                    println!("  item        {}", d.url.as_deref().unwrap_or(&d.host));
                    println!("  host        {}", d.host);
                    println!("  priority    {}", d.priority);
                    println!("  attempts    {}", d.attempts);
                    println!("  last error  {}", d.last_error.as_deref().unwrap_or("-"));
                    println!("  died        {}", ago(d.died_at_ms, now));
                    if let Some(payload) = &d.payload {
                        println!("  payload     {payload}");
                    }
                    if let Some(raw) = &d.raw {
                        println!("  raw record  {raw}");
                    }
                }
            }
            return Ok(report_unknown(&ids, found.iter().map(Option::is_some)));
        }
        DeadCommand::Requeue { ids, all } => {
            if ids.is_empty() && !all {
                return Err(CliError::Usage(
                    "which dead letters? give their ids, or --all".into(),
                ));
            }
            if all {
                let requeued = q.requeue_dead(None).await?;
                println!("requeued {} dead letters", count(requeued));
                return Ok(0);
            }
            let flags = q.requeue_dead_ids(&ids).await?;
            let requeued = flags.iter().filter(|&&f| f).count() as u64;
            println!(
                "requeued {} of {} dead letters",
                count(requeued),
                count(ids.len() as u64)
            );
            return Ok(report_unknown(&ids, flags.into_iter()));
        }
        DeadCommand::Purge { ids, yes } => {
            if !yes && !ids.is_empty() {
                return Err(CliError::Usage(format!(
                    "not purging {} dead letters without --yes (this cannot be undone)",
                    count(ids.len() as u64)
                )));
            }
            if !ids.is_empty() {
                let flags = q.purge_dead_ids(&ids).await?;
                let purged = flags.iter().filter(|&&f| f).count() as u64;
                println!(
                    "purged {} of {} dead letters",
                    count(purged),
                    count(ids.len() as u64)
                );
                return Ok(report_unknown(&ids, flags.into_iter()));
            }
            if !yes {
                let dead = q.stats().await?.dead;
                return Err(CliError::Usage(format!(
                    "not purging {} dead letters without --yes (this cannot be undone)",
                    count(dead)
                )));
            }
            println!("purged {} dead letters", count(q.purge_dead().await?));
        }
    }
    Ok(0)
}

/// Name on stderr every id whose flag is false; the exit status (4 if any).
fn report_unknown(ids: &[String], found: impl Iterator<Item = bool>) -> u8 {
    let unknown: Vec<&str> = ids
        .iter()
        .zip(found)
        .filter(|(_, found)| !found)
        .map(|(id, _)| id.as_str())
        .collect();
    if unknown.is_empty() {
        return 0;
    }
    eprintln!(
        "crawlq: not a dead letter (unknown id, already requeued or purged): {}",
        unknown.join(", ")
    );
    crate::error::EXIT_NOT_FOUND
}

pub async fn reclaim(q: &Queue<RedisExecutor>, args: ReclaimArgs) -> Result<u8, CliError> {
    let r = q.reclaim(args.limit).await?;
    if args.json {
        println!("{}", json::reclaim_to_json(&r, Style::Snake));
    } else {
        println!(
            "reclaimed expired leases: {} requeued, {} dead-lettered (past max_attempts), {} expired leases left",
            count(r.requeued),
            count(r.dead),
            count(r.remaining)
        );
    }
    Ok(0)
}

pub async fn host_delay(q: &Queue<RedisExecutor>, args: HostDelayArgs) -> Result<u8, CliError> {
    let info = match args.seconds.as_deref() {
        None => q.host_info(&args.host).await?,
        Some("default") => q.set_host_delay(&args.host, None).await?,
        Some(text) => {
            let seconds: f64 = text.parse().map_err(|_| {
                CliError::Usage(format!(
                    "{text:?} is not a delay: give seconds (e.g. 2.5) or \"default\""
                ))
            })?;
            q.set_host_delay(&args.host, Some(crate::seconds(seconds, "the delay")?))
                .await?
        }
    };
    print_host(q, &info, args.json).await
}

pub async fn hosts(q: &Queue<RedisExecutor>, command: HostsCommand) -> Result<u8, CliError> {
    let (info, json) = match command {
        HostsCommand::Show { host, json } => (q.host_info(&host).await?, json),
        HostsCommand::Pause {
            host,
            for_seconds,
            json,
        } => {
            let duration = for_seconds
                .map(|s| crate::seconds(s, "--for"))
                .transpose()?;
            (q.pause_host(&host, duration).await?, json)
        }
        HostsCommand::Resume { host, json } => (q.resume_host(&host).await?, json),
        HostsCommand::Ls {
            limit,
            cursor,
            all,
            json,
        } => return list_hosts(q, limit, cursor, all, json).await,
        HostsCommand::Rm {
            host,
            forget_seen,
            json,
            quiet,
        } => {
            let progress = progress_bar(None, quiet);
            progress.set_message(format!("deleting {host}"));
            let gone = q
                .delete_host_with_progress(&host, forget_seen, |so_far| {
                    progress.set_message(format!(
                        "deleting {}: {} items removed",
                        so_far.host,
                        count(so_far.removed())
                    ));
                })
                .await;
            progress.finish_and_clear();
            let gone = gone?;
            if json {
                println!("{}", json::host_deletion_to_json(&gone, Style::Snake));
            } else {
                println!(
                    "deleted {}: {} items removed ({} ready, {} delayed, {} leased, {} dead){}",
                    gone.host,
                    count(gone.removed()),
                    count(gone.ready),
                    count(gone.delayed),
                    count(gone.leased),
                    count(gone.dead),
                    if gone.left > 0 {
                        format!("; {} arrived meanwhile and stay", count(gone.left))
                    } else {
                        String::new()
                    }
                );
                if forget_seen {
                    println!(
                        "forgot {} URLs: seeding them again adds them",
                        count(gone.forgotten)
                    );
                }
            }
            return Ok(0);
        }
        HostsCommand::InFlight { host, limit, json } => {
            let info = match limit.as_deref() {
                None => q.host_info(&host).await?,
                Some("default") => q.set_host_in_flight(&host, None).await?,
                Some(text) => {
                    let n = text.parse().map_err(|_| {
                        CliError::Usage(format!(
                            "{text:?} is not a limit: give a whole number (0: none), or \"default\""
                        ))
                    })?;
                    q.set_host_in_flight(&host, Some(n)).await?
                }
            };
            (info, json)
        }
        HostsCommand::DelayAfter {
            host,
            after,
            factor,
            json,
        } => {
            let info = match (after.as_deref(), factor) {
                (None, None) => q.host_info(&host).await?,
                (None, Some(_)) => {
                    return Err(CliError::Usage(
                        "--factor goes with \"answer\": crawlq hosts delay-after HOST answer --factor 2".into(),
                    ));
                }
                (Some("default"), None) => q.set_host_delay_after(&host, None).await?,
                (Some(text), factor) => {
                    let after = DelayAfter::parse(text).ok_or_else(|| {
                        CliError::Usage(format!(
                            "{text:?} is not a mode: give \"lease\", \"answer\" or \"default\""
                        ))
                    })?;
                    q.set_host_delay_after(&host, Some(HostPacing { after, factor }))
                        .await?
                }
            };
            (info, json)
        }
        HostsCommand::Budget {
            host,
            urls,
            default,
            json,
        } => match (host, default) {
            (_, Some(value)) => return default_budget(q, &value, json).await,
            (Some(host), None) => {
                let info = match urls.as_deref() {
                    None => q.host_info(&host).await?,
                    Some("default") => q.set_host_budget(&host, None).await?,
                    Some(text) => q.set_host_budget(&host, Some(budget_arg(text)?)).await?,
                };
                (info, json)
            }
            (None, None) => unreachable!("clap requires a host or --default"),
        },
    };
    print_host(q, &info, json).await
}

/// `hosts ls`: one page, or every page with --all.
async fn list_hosts(
    q: &Queue<RedisExecutor>,
    limit: usize,
    mut cursor: Option<String>,
    all: bool,
    json: bool,
) -> Result<u8, CliError> {
    let now = q.stats().await?.now_ms;
    let mut first = true;
    loop {
        let page = q.list_hosts(cursor.as_deref(), limit).await?;
        if json {
            println!("{}", json::host_page_to_json(&page, Style::Snake));
        } else {
            if first {
                println!("{} hosts hold items", count(page.total));
                println!(
                    "{:<40} {:>9} {:>9} {:>9} {:>9} {:>9}  next lease",
                    "host", "items", "ready", "delayed", "leased", "dead"
                );
            }
            for h in &page.hosts {
                let next = match (h.paused, h.paused_until_ms, h.next_due_ms) {
                    (true, None, _) => "paused until resumed".to_string(),
                    (true, Some(end), _) => format!("paused, ends {}", ago(end, now)),
                    (false, _, Some(at)) if at > now => ago(at, now),
                    (false, _, Some(_)) => "now".into(),
                    (false, _, None) => "-".into(),
                };
                println!(
                    "{:<40} {:>9} {:>9} {:>9} {:>9} {:>9}  {next}",
                    h.host,
                    count(h.items),
                    count(h.ready),
                    count(h.delayed),
                    count(h.leased),
                    count(h.dead)
                );
            }
        }
        first = false;
        match page.cursor {
            Some(next) if all => cursor = Some(next),
            Some(next) => {
                if !json {
                    println!("more: crawlq hosts ls --cursor {next}");
                }
                return Ok(0);
            }
            None => return Ok(0),
        }
    }
}

fn budget_arg(text: &str) -> Result<u64, CliError> {
    text.parse().map_err(|_| {
        CliError::Usage(format!(
            "{text:?} is not a budget: give a whole number of URLs (e.g. 10000), or \"default\""
        ))
    })
}

/// `hosts budget --default [N|none]`: show or set the queue's default budget.
async fn default_budget(q: &Queue<RedisExecutor>, value: &str, json: bool) -> Result<u8, CliError> {
    match value {
        "" => {}
        "none" => q.set_default_host_budget(None).await?,
        text => q.set_default_host_budget(Some(budget_arg(text)?)).await?,
    }
    let budget = q.default_host_budget().await?;
    if json {
        println!("{}", serde_json::json!({ "default_budget": budget }));
    } else {
        match budget {
            Some(n) => println!("default budget: {} new URLs per host", count(n)),
            None => println!("no default budget"),
        }
    }
    Ok(0)
}

/// One line per host: delay, adaptive extra, ready items, when it is leasable; or its JSON.
async fn print_host(q: &Queue<RedisExecutor>, info: &HostInfo, json: bool) -> Result<u8, CliError> {
    if json {
        println!("{}", json::host_info_to_json(info, Style::Snake));
        return Ok(0);
    }
    let delay = match info.delay_override_ms {
        Some(ms) => duration(Duration::from_millis(ms)),
        None => format!("{} (queue default)", duration(q.config().host_delay)),
    };
    let now = q.stats().await?.now_ms;
    let held = match (info.paused, info.paused_until_ms, info.held_until_ms) {
        (true, None, _) => "paused until resumed".to_string(),
        (true, Some(end), Some(at)) if at > end => {
            format!(
                "paused, ends {}, next lease {}",
                ago(end, now),
                ago(at, now)
            )
        }
        (true, Some(end), _) => format!("paused, ends {}", ago(end, now)),
        (false, _, Some(at)) if at > now => format!("next lease {}", ago(at, now)),
        _ => "leasable now".into(),
    };
    let budget = match info.budget {
        Some(b) => format!(
            ", budget {} ({} used, {} left)",
            count(b),
            count(info.budget_used),
            count(info.budget_remaining().unwrap_or(0))
        ),
        None => String::new(),
    };
    let limit = match info.in_flight_limit {
        Some(0) => Some("no limit".to_string()),
        Some(n) => Some(format!("limit {n}")),
        None if q.config().host_in_flight > 0 => Some(format!(
            "limit {} (queue default)",
            q.config().host_in_flight
        )),
        None => None,
    };
    let flight = match limit {
        Some(limit) => format!(
            ", {} in flight ({limit}{})",
            count(info.in_flight),
            if info.full { ", full" } else { "" }
        ),
        None if info.in_flight > 0 => format!(", {} in flight", count(info.in_flight)),
        None => String::new(),
    };
    let pacing = match info.pacing {
        Some(p) if p.after == DelayAfter::Answer => {
            let factor = p.factor.unwrap_or(q.config().host_delay_factor);
            if factor > 0.0 {
                format!(" after the answer (factor {factor})")
            } else {
                " after the answer".into()
            }
        }
        Some(_) => " after the lease".into(),
        None if q.config().host_delay_after == DelayAfter::Answer => {
            " after the answer (queue default)".into()
        }
        None => String::new(),
    };
    println!(
        "{}: delay {delay}{pacing}, adaptive extra {}, {} ready, {held}{budget}{flight}",
        info.host,
        duration(Duration::from_millis(info.adaptive_extra_ms)),
        count(info.ready)
    );
    Ok(0)
}

pub async fn peek(q: &Queue<RedisExecutor>, args: PeekArgs) -> Result<u8, CliError> {
    let items = match &args.host {
        Some(host) => q.peek_host(host, args.limit, args.offset).await?,
        None => q.peek(args.limit).await?,
    };
    if args.json {
        println!("{}", json::stored_items_to_json(&items, Style::Snake));
        return Ok(0);
    }
    let now = q.stats().await?.now_ms;
    println!(
        "{:<10} {:>8} {:>7}  {:<12} item",
        "id", "priority", "attempt", "queued"
    );
    for i in &items {
        println!(
            "{:<10} {:>8} {:>7}  {:<12} {}",
            i.id,
            i.priority,
            i.attempt,
            ago(i.ts, now),
            i.url.as_deref().unwrap_or(&i.host)
        );
    }
    if items.is_empty() {
        println!("(nothing ready)");
    }
    Ok(0)
}

pub async fn leased(q: &Queue<RedisExecutor>, args: LeasedArgs) -> Result<u8, CliError> {
    let page = q.leased_items(args.limit, args.offset).await?;
    if args.json {
        let leases: Vec<Value> = page
            .items
            .iter()
            .map(|held| json::leased_item_to_json(held, Style::Snake))
            .collect();
        println!("{}", Value::Array(leases));
        return Ok(0);
    }
    println!("{:<10} {:>7}  {:<14} item", "id", "attempt", "expires");
    for held in &page.items {
        println!(
            "{:<10} {:>7}  {:<14} {}",
            held.item.id,
            held.item.attempt + 1,
            ago(held.expires_at_ms, page.now_ms),
            held.item.url.as_deref().unwrap_or(&held.item.host)
        );
    }
    if page.items.is_empty() {
        println!("(nothing leased on this page)");
    }
    println!(
        "{} of {} leased",
        count(page.items.len() as u64),
        count(page.total)
    );
    Ok(0)
}

pub async fn queue(
    g: &crate::Global,
    config: crawlq::Config,
    command: QueueCommand,
) -> Result<u8, CliError> {
    match command {
        QueueCommand::Ls { json } => {
            let exec = std::sync::Arc::new(RedisExecutor::connect(&g.redis, &config).await?);
            let entries = crawlq::catalog::list_queues(&exec, &config.key_prefix).await?;
            let mut rows = Vec::new();
            for entry in &entries {
                let q = Queue::with_executor(exec.clone(), &entry.name, config.clone())?;
                let nodes = if entry.shards > 1 {
                    q.shard_nodes().await?
                } else {
                    Vec::new()
                };
                rows.push((entry, q.stats().await?, q.is_paused().await?, nodes));
            }
            if json {
                let list: Vec<Value> = rows
                    .iter()
                    .map(|(e, s, paused, nodes)| {
                        let mut stats = json::stats_to_json(s, Style::Snake);
                        add_nodes(&mut stats, nodes);
                        serde_json::json!({"name": e.name, "shards": e.shards, "paused": paused,
                                           "stats": stats})
                    })
                    .collect();
                println!("{}", Value::Array(list));
                return Ok(0);
            }
            println!(
                "{:<32} {:>6} {:>7} {:>12} {:>10} {:>10} {:>14}  nodes",
                "queue", "shards", "state", "pending", "leased", "dead", "done"
            );
            for (e, s, paused, nodes) in &rows {
                println!(
                    "{:<32} {:>6} {:>7} {:>12} {:>10} {:>10} {:>14}  {}",
                    e.name,
                    e.shards,
                    if *paused { "paused" } else { "active" },
                    count(s.pending),
                    count(s.leased),
                    count(s.dead),
                    count(s.done),
                    node_spread(nodes)
                );
            }
            println!("{} queues under prefix {:?}", rows.len(), config.key_prefix);
            Ok(0)
        }
        QueueCommand::Pause { name, for_seconds } => {
            let length = for_seconds
                .map(|s| crate::seconds(s, "--for"))
                .transpose()?;
            let q = crate::open(&named(g, name), config).await?;
            let was = match length {
                Some(d) => q.pause_for(d).await?,
                None => q.pause().await?,
            };
            let note = if was { " (it was paused already)" } else { "" };
            let until = match length {
                Some(d) => format!("for {}", duration(d)),
                None => "until `crawlq queue resume`".into(),
            };
            println!(
                "paused queue {}{note}: leases hand out nothing {until}",
                q.name()
            );
            Ok(0)
        }
        QueueCommand::Resume { name } => {
            let q = crate::open(&named(g, name), config).await?;
            let was = q.resume().await?;
            let note = if was { "" } else { " (it was not paused)" };
            println!("resumed queue {}{note}", q.name());
            Ok(0)
        }
        QueueCommand::Rm {
            name,
            yes,
            force,
            quiet,
        } => {
            let q = crate::open(&named(g, name), config).await?;
            if !yes {
                let s = q.stats().await?;
                return Err(CliError::Usage(format!(
                    "not deleting queue {} ({} pending, {} leased, {} dead, {} done) without --yes (this cannot be undone)",
                    q.name(),
                    count(s.pending),
                    count(s.leased),
                    count(s.dead),
                    count(s.done)
                )));
            }
            let progress = progress_bar(None, quiet);
            progress.set_message(format!("deleting queue {}", q.name()));
            let deleted = q
                .remove_queue_with_progress(force, |keys| {
                    progress.set_message(format!(
                        "deleting queue {}: {} keys deleted",
                        q.name(),
                        count(keys)
                    ));
                })
                .await;
            progress.finish_and_clear();
            let deleted = deleted?;
            if deleted == 0 {
                eprintln!(
                    "crawlq: no queue {} under prefix {:?}",
                    q.name(),
                    q.config().key_prefix
                );
                return Ok(crate::error::EXIT_NOT_FOUND);
            }
            println!("deleted queue {} ({} keys)", q.name(), count(deleted));
            Ok(0)
        }
    }
}

/// The global options with the queue a subcommand named, if it named one.
fn named(g: &crate::Global, name: Option<String>) -> crate::Global {
    crate::Global {
        redis: g.redis.clone(),
        queue: name.map_or_else(|| g.queue.clone(), |n| vec![n]),
        options: Vec::new(),
    }
}
