//! The console's actions: what each will do (the sentence its confirmation asks), and doing
//! it once confirmed, through the core's calls.

use super::deletions::{Deletion, items_so_far};
use super::{REASON_SCAN, Request, pages};
use crate::format::count;
use crawlq::{Queue, RedisExecutor};
use std::sync::Arc;
use std::time::Duration;

/// What an action will do, in a sentence for its confirmation; an error for one the console
/// does not know or whose value is not valid.
pub fn describe(action: &str, request: &Request, queue: &str) -> Result<String, String> {
    let host = request.field("host").unwrap_or("");
    let needs_host = || {
        if host.is_empty() {
            Err(format!("{action} needs a host"))
        } else {
            Ok(())
        }
    };
    let crawl = request.field("crawl").unwrap_or("");
    let needs_crawl = || {
        if crawl.is_empty() {
            Err(format!("{action} needs a crawl"))
        } else {
            Ok(())
        }
    };
    Ok(match action {
        "pause-crawl" => {
            needs_crawl()?;
            format!(
                "Pause crawl {crawl} of {queue}? None of its items is leased until it is resumed; other crawls go on."
            )
        }
        "resume-crawl" => {
            needs_crawl()?;
            format!("Resume crawl {crawl} of {queue}?")
        }
        "crawl-cap" => {
            needs_crawl()?;
            match count_value(request.field("cap"), "leases")? {
                None => format!("Remove crawl {crawl}'s cap?"),
                Some(n) => format!(
                    "Cap crawl {crawl}: at most {n} of its items leased at once, by all workers?"
                ),
            }
        }
        "crawl-weight" => {
            needs_crawl()?;
            match weight_value(request.field("weight"))? {
                None => format!("Set crawl {crawl}'s weight back to the default, 1?"),
                Some(w) => format!(
                    "Set crawl {crawl}'s weight to {w} (its share of each host against the other crawls there)?"
                ),
            }
        }
        "crawl-rate" => {
            needs_crawl()?;
            match rate_value(request.field("rate"))? {
                None => format!("Remove crawl {crawl}'s rate?"),
                Some(r) => format!("Limit crawl {crawl} to {r} leases a second?"),
            }
        }
        "crawl-host-budget" => {
            needs_crawl()?;
            match budget_value(request.field("budget"))? {
                None => format!("Remove crawl {crawl}'s host budget?"),
                Some(n) => format!(
                    "Set crawl {crawl}'s host budget to {n} new URLs per host (the hosts' own budgets hold too)?"
                ),
            }
        }
        "delete-crawl" => {
            needs_crawl()?;
            format!(
                "Delete crawl {crawl} of {queue}: its ready, delayed, leased and dead items, counts and limits (the name then starts a fresh crawl, to which its URLs are new)? This cannot be undone."
            )
        }
        "seed" => {
            let lines = seed_lines(request.field("urls"))?;
            let priority = priority_value(request.field("priority"))?;
            let into = if crawl.is_empty() {
                format!("queue {queue}")
            } else {
                crawlq::normalize::check_crawl(crawl)?;
                format!("crawl {crawl} of {queue}")
            };
            let at = if priority == 0 {
                String::new()
            } else {
                format!(" at priority {priority}")
            };
            format!(
                "Seed {} into {into}{at}? Each is normalized and de-duplicated as a worker's seed is: a URL seen before is not queued again, a line refused is reported by its number and the others are seeded.",
                crate::format::plural(lines.len() as u64, "line")
            )
        }
        "pause-queue" => {
            format!("Pause queue {queue}? Leases will hand out nothing until it is resumed.")
        }
        "remove-queue" => format!(
            "Remove queue {queue}: every item (ready, delayed, dead), its host and crawl settings, counters and seen set (its URLs can then be seeded again)? Refused while items are leased: stop its workers first. This cannot be undone."
        ),
        "resume-queue" => format!("Resume queue {queue}?"),
        "pause-host" => {
            needs_host()?;
            format!("Pause host {host} of {queue}? No lease takes its items until it is resumed.")
        }
        "resume-host" => {
            needs_host()?;
            format!("Resume host {host} of {queue}?")
        }
        "host-delay" => {
            needs_host()?;
            match delay_value(request.field("delay"))? {
                None => format!("Clear host {host}'s delay, back to the workers' default?"),
                Some(d) => format!("Set host {host}'s delay to {}?", crate::format::duration(d)),
            }
        }
        "host-budget" => {
            needs_host()?;
            match budget_value(request.field("budget"))? {
                None => format!("Remove host {host}'s own budget (the queue default applies)?"),
                Some(n) => format!("Set host {host}'s budget to {n} new URLs?"),
            }
        }
        "delete-host" => {
            needs_host()?;
            let forget = if request.field("forget") == Some("yes") {
                ", and forget them as seen (they may be seeded again)"
            } else {
                " (they stay seen: seeding them again adds nothing)"
            };
            format!(
                "Delete every item of host {host} in {queue}: ready, delayed, leased and dead{forget}? This cannot be undone."
            )
        }
        "requeue-dead" => match request.field("id") {
            Some(id) => format!("Requeue dead letter {id}?"),
            None => format!("Requeue every dead letter of {queue}?"),
        },
        "requeue-reason" => {
            let reason = request.field("reason").unwrap_or("");
            format!(
                "Requeue the dead letters whose reason is {reason:?} (among the oldest {REASON_SCAN})?"
            )
        }
        "purge-dead" => match request.field("id") {
            Some(id) => format!("Purge dead letter {id}? It is deleted for good (and stays seen)."),
            None => format!("Purge every dead letter of {queue}? They are deleted for good."),
        },
        "purge-reason" => {
            let reason = request.field("reason").unwrap_or("");
            format!(
                "Purge the dead letters whose reason is {reason:?} (among the oldest {REASON_SCAN})? They are deleted for good."
            )
        }
        other => return Err(format!("unknown action {other:?}")),
    })
}

fn delay_value(text: Option<&str>) -> Result<Option<Duration>, String> {
    match text.map(str::trim) {
        None | Some("") => Err("give a delay in seconds, or default".into()),
        Some("default") => Ok(None),
        Some(t) => {
            let seconds: f64 = t
                .parse()
                .map_err(|_| format!("not a number of seconds: {t:?}"))?;
            crawlq::config::duration_from_number(seconds, crawlq::Style::Snake)
                .map(Some)
                .ok_or_else(|| format!("a delay is 0 to 100 years of seconds, got {t}"))
        }
    }
}

fn weight_value(text: Option<&str>) -> Result<Option<u64>, String> {
    match text.map(str::trim) {
        None | Some("") => Err("give a weight from 1, or default".into()),
        Some("default") => Ok(None),
        Some(t) => match t.parse::<u64>() {
            Ok(w) if w >= 1 => Ok(Some(w)),
            _ => Err(format!("not a weight from 1: {t:?}")),
        },
    }
}

fn rate_value(text: Option<&str>) -> Result<Option<f64>, String> {
    match text.map(str::trim) {
        None | Some("") => Err("give leases a second, or none".into()),
        Some("none") => Ok(None),
        Some(t) => match t.parse::<f64>() {
            Ok(r) if r.is_finite() && r > 0.0 => Ok(Some(r)),
            _ => Err(format!("not a rate above 0: {t:?}")),
        },
    }
}

/// The lines of a seed form to seed, with their line numbers (from 1): one URL or host per
/// line, blank lines and lines starting with `#` skipped, as `crawlq seed` reads a file.
fn seed_lines(text: Option<&str>) -> Result<Vec<(usize, &str)>, String> {
    let lines: Vec<(usize, &str)> = text
        .unwrap_or("")
        .lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
        .collect();
    if lines.is_empty() {
        return Err("give one URL or host per line".into());
    }
    Ok(lines)
}

/// A seed's priority: blank for 0, else a whole number the core takes.
fn priority_value(text: Option<&str>) -> Result<i64, String> {
    match text.map(str::trim) {
        None | Some("") => Ok(0),
        Some(t) => match t.parse::<i64>() {
            Ok(p) if (-32768..=32767).contains(&p) => Ok(p),
            _ => Err(format!(
                "a priority is a whole number from -32768 to 32767, got {t:?}"
            )),
        },
    }
}

/// What a seed from the console did, for its log line and the page: the counts, then the
/// first refused lines by number.
fn seed_outcome(lines: &[(usize, &str)], into: &str, report: &crawlq::SeedReport) -> String {
    let mut outcome = format!(
        "seeded {} into {into}: {} added, {} duplicates, {} invalid",
        crate::format::plural(lines.len() as u64, "line"),
        report.added,
        report.duplicates,
        report.invalid.len()
    );
    const SHOWN: usize = 5;
    let shown: Vec<String> = report
        .invalid
        .iter()
        .take(SHOWN)
        .map(|bad| {
            let line = lines.get(bad.index).map_or(0, |(n, _)| *n);
            format!("line {line}: {}", bad.reason.code())
        })
        .collect();
    if !shown.is_empty() {
        let more = report.invalid.len().saturating_sub(SHOWN);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        outcome.push_str(&format!(" ({}{more})", shown.join(", ")));
    }
    outcome
}

/// A count of a form (a budget in URLs, a cap in leases), or "none".
fn count_value(text: Option<&str>, of: &str) -> Result<Option<u64>, String> {
    match text.map(str::trim) {
        None | Some("") => Err(format!("give a number of {of}, or none")),
        Some("none") => Ok(None),
        Some(t) => t
            .parse()
            .map(Some)
            .map_err(|_| format!("not a number of {of}: {t:?}")),
    }
}

fn budget_value(text: Option<&str>) -> Result<Option<u64>, String> {
    count_value(text, "URLs")
}

/// Do a confirmed action; what it did, for the log and the page.
pub async fn perform(
    q: &Queue<Arc<RedisExecutor>>,
    action: &str,
    request: &Request,
    host: &str,
) -> crawlq::Result<String> {
    let invalid = |text: String| crawlq::Error::InvalidArgument(text);
    let crawl = request.field("crawl").unwrap_or("");
    Ok(match action {
        "pause-crawl" => {
            q.pause_crawl(crawl).await?;
            format!("paused crawl {crawl}")
        }
        "resume-crawl" => {
            q.resume_crawl(crawl).await?;
            format!("resumed crawl {crawl}")
        }
        "crawl-cap" => {
            let cap = count_value(request.field("cap"), "leases").map_err(invalid)?;
            q.set_crawl_cap(crawl, cap).await?;
            format!("set crawl {crawl}'s cap")
        }
        "crawl-weight" => {
            let weight = weight_value(request.field("weight")).map_err(invalid)?;
            q.set_crawl_weight(crawl, weight).await?;
            format!("set crawl {crawl}'s weight")
        }
        "crawl-rate" => {
            let rate = rate_value(request.field("rate")).map_err(invalid)?;
            q.set_crawl_rate(crawl, rate).await?;
            format!("set crawl {crawl}'s rate")
        }
        "crawl-host-budget" => {
            let budget = budget_value(request.field("budget")).map_err(invalid)?;
            q.set_crawl_host_budget(crawl, budget).await?;
            format!("set crawl {crawl}'s host budget")
        }
        "seed" => {
            let lines = seed_lines(request.field("urls")).map_err(invalid)?;
            let priority = priority_value(request.field("priority")).map_err(invalid)?;
            let items: Vec<crawlq::SeedItem> = lines
                .iter()
                .map(|(_, line)| crawlq::SeedItem::from(*line))
                .collect();
            let options = crawlq::SeedOptions {
                priority,
                crawl: (!crawl.is_empty()).then(|| crawl.to_string()),
                ..Default::default()
            };
            let report = q.seed(&items, &options).await?;
            let into = if crawl.is_empty() {
                format!("queue {}", q.name())
            } else {
                format!("crawl {crawl}")
            };
            seed_outcome(&lines, &into, &report)
        }
        "pause-queue" => {
            q.pause().await?;
            format!("paused queue {}", q.name())
        }
        "resume-queue" => {
            q.resume().await?;
            format!("resumed queue {}", q.name())
        }
        "pause-host" => {
            q.pause_host(host, None).await?;
            format!("paused host {host}")
        }
        "resume-host" => {
            q.resume_host(host).await?;
            format!("resumed host {host}")
        }
        "host-delay" => {
            let delay = delay_value(request.field("delay")).map_err(invalid)?;
            q.set_host_delay(host, delay).await?;
            format!("set host {host}'s delay")
        }
        "host-budget" => {
            let budget = budget_value(request.field("budget")).map_err(invalid)?;
            q.set_host_budget(host, budget).await?;
            format!("set host {host}'s budget")
        }
        "requeue-dead" | "purge-dead" => {
            let (verb, requeue) = if action == "requeue-dead" {
                ("requeued", true)
            } else {
                ("purged", false)
            };
            match request.field("id") {
                Some(id) => {
                    let ids = [id.to_string()];
                    let done = if requeue {
                        q.requeue_dead_ids(&ids).await?
                    } else {
                        q.purge_dead_ids(&ids).await?
                    };
                    if done.first() == Some(&true) {
                        format!("{verb} dead letter {id}")
                    } else {
                        format!("{id} is not a dead letter (requeued or purged already)")
                    }
                }
                None if requeue => format!("requeued {} dead letters", q.requeue_dead(None).await?),
                None => format!("purged {} dead letters", q.purge_dead().await?),
            }
        }
        "requeue-reason" | "purge-reason" => {
            let reason = request.field("reason").unwrap_or("");
            let page = q.dead(REASON_SCAN, 0).await?;
            let ids: Vec<String> = page
                .items
                .iter()
                .filter(|d| pages::reason_of(d) == reason)
                .map(|d| d.id.clone())
                .collect();
            let (verb, done) = if action == "requeue-reason" {
                ("requeued", q.requeue_dead_ids(&ids).await?)
            } else {
                ("purged", q.purge_dead_ids(&ids).await?)
            };
            let n = done.iter().filter(|&&b| b).count();
            format!("{verb} {n} dead letters whose reason is {reason:?}")
        }
        other => return Err(invalid(format!("unknown action {other:?}"))),
    })
}

/// The actions that delete, which run in a task of their own (`deletions.rs`).
pub enum Delete {
    Crawl(String),
    Host { host: String, forget_seen: bool },
    Queue,
}

impl Delete {
    /// The deletion a confirmed action asks for, if it is one.
    pub fn of(action: &str, request: &Request) -> Option<Delete> {
        Some(match action {
            "delete-crawl" => Delete::Crawl(request.field("crawl").unwrap_or("").to_string()),
            "delete-host" => Delete::Host {
                host: request.field("host").unwrap_or("").to_string(),
                forget_seen: request.field("forget") == Some("yes"),
            },
            "remove-queue" => Delete::Queue,
            _ => return None,
        })
    }

    /// What it deletes, as the pages name it.
    pub fn what(&self, queue: &str) -> String {
        match self {
            Delete::Crawl(crawl) => format!("crawl {crawl}"),
            Delete::Host { host, .. } => format!("host {host}"),
            Delete::Queue => format!("queue {queue}"),
        }
    }

    /// Do it, telling `deletion` its totals after each step; what it did, for the log and
    /// the page.
    pub async fn run(
        &self,
        q: &Queue<Arc<RedisExecutor>>,
        deletion: &Deletion,
    ) -> crawlq::Result<String> {
        Ok(match self {
            Delete::Crawl(crawl) => {
                let gone = q
                    .delete_crawl_with_progress(crawl, |so_far| {
                        deletion.report(items_so_far(so_far.removed()))
                    })
                    .await?;
                format!(
                    "deleted crawl {crawl}: {} ready, {} delayed, {} leased, {} dead",
                    gone.ready, gone.delayed, gone.leased, gone.dead
                )
            }
            Delete::Host { host, forget_seen } => {
                let gone = q
                    .delete_host_with_progress(host, *forget_seen, |so_far| {
                        deletion.report(items_so_far(so_far.removed()))
                    })
                    .await?;
                format!(
                    "deleted host {host}: {} ready, {} delayed, {} leased, {} dead, {} forgotten",
                    gone.ready, gone.delayed, gone.leased, gone.dead, gone.forgotten
                )
            }
            Delete::Queue => {
                let keys = q
                    .remove_queue_with_progress(false, |keys| {
                        deletion.report(format!("{} Redis keys deleted so far", count(keys)))
                    })
                    .await?;
                format!("removed queue {}: {keys} Redis keys deleted", q.name())
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_values_are_checked_before_confirmation() {
        assert_eq!(delay_value(Some("default")), Ok(None));
        assert_eq!(
            delay_value(Some(" 1.5 ")),
            Ok(Some(Duration::from_millis(1500)))
        );
        assert!(delay_value(Some("-1")).is_err());
        assert!(delay_value(Some("soon")).is_err());
        assert!(delay_value(None).is_err());
        assert_eq!(budget_value(Some("none")), Ok(None));
        assert_eq!(budget_value(Some("500")), Ok(Some(500)));
        assert!(budget_value(Some("-5")).is_err());
        assert_eq!(
            count_value(Some("x"), "leases"),
            Err("not a number of leases: \"x\"".to_string())
        );
        assert_eq!(weight_value(Some("default")), Ok(None));
        assert_eq!(weight_value(Some("3")), Ok(Some(3)));
        assert!(weight_value(Some("1.5")).is_err());
        assert!(weight_value(Some("0")).is_err());
        assert_eq!(rate_value(Some("none")), Ok(None));
        assert_eq!(rate_value(Some(" 2.5")), Ok(Some(2.5)));
        assert!(rate_value(Some("0")).is_err());
        assert!(rate_value(Some("inf")).is_err());
        assert!(rate_value(None).is_err());
        assert_eq!(priority_value(Some(" ")), Ok(0));
        assert_eq!(priority_value(Some("-32768")), Ok(-32768));
        assert!(priority_value(Some("32768")).is_err());
        assert!(priority_value(Some("1.5")).is_err());
    }

    #[test]
    fn seed_lines_are_read_as_the_cli_reads_a_file_and_refused_ones_named_by_number() {
        let text = "https://a.example/\r\n\r\n  # a comment\r\n ftp://b.example/ \r\nexample.org";
        let lines = seed_lines(Some(text)).unwrap();
        assert_eq!(
            lines,
            vec![
                (1, "https://a.example/"),
                (4, "ftp://b.example/"),
                (5, "example.org")
            ]
        );
        assert!(seed_lines(Some("\n# only a comment\n")).is_err());
        assert!(seed_lines(None).is_err());
        let invalid = |index: usize| crawlq::InvalidInput {
            index,
            input: lines[index].1.to_string(),
            reason: crawlq::InvalidReason::UnsupportedScheme("ftp".into()),
        };
        let report = crawlq::SeedReport {
            added: 2,
            duplicates: 0,
            invalid: vec![invalid(1)],
            ids: Vec::new(),
        };
        assert_eq!(
            seed_outcome(&lines, "queue q", &report),
            "seeded 3 lines into queue q: 2 added, 0 duplicates, 1 invalid (line 4: unsupported_scheme)"
        );
        let many: Vec<(usize, &str)> = (1..=8).map(|n| (n, "ftp://x/")).collect();
        let report = crawlq::SeedReport {
            invalid: (0..8)
                .map(|index| crawlq::InvalidInput {
                    index,
                    input: "ftp://x/".into(),
                    reason: crawlq::InvalidReason::UnsupportedScheme("ftp".into()),
                })
                .collect(),
            ..Default::default()
        };
        assert!(
            seed_outcome(&many, "crawl c", &report)
                .ends_with("(line 1: unsupported_scheme, line 2: unsupported_scheme, line 3: unsupported_scheme, line 4: unsupported_scheme, line 5: unsupported_scheme and 3 more)")
        );
    }
}
