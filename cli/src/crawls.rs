//! `crawls`: the named crawls of a queue (docs/crawls.md): list them with their counts, show
//! one, cap, weigh, rate, budget, pause, resume or delete it.

use crate::error::CliError;
use crate::format::{count, progress_bar};
use clap::Subcommand;
use crawlq::{CrawlStats, Queue, RedisExecutor, Style, binding::json};

#[derive(Debug, Subcommand)]
pub enum CrawlsCommand {
    /// List the named crawls with their counts.
    Ls {
        /// JSON lines: one object per crawl, its name under "crawl" (snake_case, as the Python
        /// binding's crawl_stats()).
        #[arg(long)]
        json: bool,
    },
    /// Show one crawl's counts and limits.
    Show {
        /// The crawl's name.
        crawl: String,
        /// JSON (snake_case, as the Python binding's crawl_stats()).
        #[arg(long)]
        json: bool,
    },
    /// Set a crawl's cap, the most of its items leased at once by all workers together
    /// ("none": no cap). With several shards it must be at least the shard count.
    Cap {
        /// The crawl's name.
        crawl: String,
        /// A whole number from 1, or "none".
        cap: String,
        /// JSON (snake_case, as the Python binding's set_crawl_cap()).
        #[arg(long)]
        json: bool,
    },
    /// Set a crawl's weight: on each host, crawls with due work are leased from in proportion
    /// to their weights ("default": 1). It orders the items queued from now on.
    Weight {
        /// The crawl's name.
        crawl: String,
        /// A whole number from 1 to 1000, or "default".
        weight: String,
        /// JSON (snake_case, as the Python binding's set_crawl_weight()).
        #[arg(long)]
        json: bool,
    },
    /// Set a crawl's rate: at most N of its items leased a second by all workers together
    /// ("none": no rate).
    Rate {
        /// The crawl's name.
        crawl: String,
        /// Leases a second (a number above 0), or "none".
        per_second: String,
        /// JSON (snake_case, as the Python binding's set_crawl_rate()).
        #[arg(long)]
        json: bool,
    },
    /// Set a crawl's host budget: each host may add at most N new URLs to the crawl ("none":
    /// no budget). New URLs past it are refused per item (budget_exhausted).
    Budget {
        /// The crawl's name.
        crawl: String,
        /// A whole number from 0, or "none".
        urls: String,
        /// JSON (snake_case, as the Python binding's set_crawl_host_budget()).
        #[arg(long)]
        json: bool,
    },
    /// Pause a crawl: none of its items is leased until `crawls resume` (seeding goes on).
    Pause {
        /// The crawl's name.
        crawl: String,
    },
    /// Resume a paused crawl.
    Resume {
        /// The crawl's name.
        crawl: String,
    },
    /// Delete a crawl: its ready, delayed, leased and dead items, its counts and limits, in
    /// bounded steps while workers run (its leases answer lost). Other crawls are not touched.
    Rm {
        /// The crawl's name.
        crawl: String,
        /// JSON (snake_case, as the Python binding's delete_crawl()).
        #[arg(long)]
        json: bool,
        /// No progress line (it is drawn on stderr only when that is a terminal).
        #[arg(long)]
        quiet: bool,
    },
}

pub async fn run(q: &Queue<RedisExecutor>, command: CrawlsCommand) -> Result<u8, CliError> {
    match command {
        CrawlsCommand::Ls { json } => {
            let names = q.crawls().await?;
            if !json {
                println!("{} crawls", count(names.len() as u64));
                println!(
                    "{:<32} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  limits",
                    "crawl", "pending", "ready", "delayed", "leased", "dead", "done"
                );
            }
            for name in names {
                let stats = q.crawl_stats(&name).await?;
                if json {
                    let mut out = json::crawl_stats_to_json(&stats, Style::Snake);
                    out["crawl"] = name.into();
                    println!("{out}");
                } else {
                    println!(
                        "{:<32} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  {}",
                        name,
                        count(stats.pending()),
                        count(stats.ready),
                        count(stats.delayed),
                        count(stats.leased),
                        count(stats.dead),
                        count(stats.done),
                        limits(&stats)
                    );
                }
            }
        }
        CrawlsCommand::Show { crawl, json } => show(&crawl, &q.crawl_stats(&crawl).await?, json),
        CrawlsCommand::Cap { crawl, cap, json } => {
            let cap = match cap.as_str() {
                "none" => None,
                text => Some(text.parse().map_err(|_| {
                    CliError::Usage(format!(
                        "{text:?} is not a cap: give a whole number from 1, or \"none\""
                    ))
                })?),
            };
            show(&crawl, &q.set_crawl_cap(&crawl, cap).await?, json);
        }
        CrawlsCommand::Weight {
            crawl,
            weight,
            json,
        } => {
            let weight = match weight.as_str() {
                "default" => None,
                text => Some(text.parse().map_err(|_| {
                    CliError::Usage(format!(
                        "{text:?} is not a weight: give a whole number from 1 to 1000, or \"default\""
                    ))
                })?),
            };
            show(&crawl, &q.set_crawl_weight(&crawl, weight).await?, json);
        }
        CrawlsCommand::Rate {
            crawl,
            per_second,
            json,
        } => {
            let rate = match per_second.as_str() {
                "none" => None,
                text => Some(text.parse().map_err(|_| {
                    CliError::Usage(format!(
                        "{text:?} is not a rate: give leases a second (a number above 0), or \"none\""
                    ))
                })?),
            };
            show(&crawl, &q.set_crawl_rate(&crawl, rate).await?, json);
        }
        CrawlsCommand::Budget { crawl, urls, json } => {
            let urls = match urls.as_str() {
                "none" => None,
                text => Some(text.parse().map_err(|_| {
                    CliError::Usage(format!(
                        "{text:?} is not a budget: give a whole number from 0, or \"none\""
                    ))
                })?),
            };
            show(&crawl, &q.set_crawl_host_budget(&crawl, urls).await?, json);
        }
        CrawlsCommand::Pause { crawl } => {
            q.pause_crawl(&crawl).await?;
            println!("paused crawl {crawl}");
        }
        CrawlsCommand::Resume { crawl } => {
            q.resume_crawl(&crawl).await?;
            println!("resumed crawl {crawl}");
        }
        CrawlsCommand::Rm { crawl, json, quiet } => {
            let progress = progress_bar(None, quiet);
            progress.set_message(format!("deleting crawl {crawl}"));
            let gone = q
                .delete_crawl_with_progress(&crawl, |so_far| {
                    progress.set_message(format!(
                        "deleting crawl {crawl}: {} items removed",
                        count(so_far.removed())
                    ));
                })
                .await;
            progress.finish_and_clear();
            let gone = gone?;
            if json {
                println!("{}", json::crawl_deletion_to_json(&gone, Style::Snake));
            } else {
                println!(
                    "deleted crawl {}: {} items removed ({} ready, {} delayed, {} leased, {} dead)",
                    gone.crawl,
                    count(gone.removed()),
                    count(gone.ready),
                    count(gone.delayed),
                    count(gone.leased),
                    count(gone.dead)
                );
            }
        }
    }
    Ok(0)
}

/// A crawl's limits in a few words ("-": none), as `crawls ls` and the web console show them.
pub fn limits(s: &CrawlStats) -> String {
    let mut out = Vec::new();
    if s.deleting {
        out.push("being deleted".to_string());
    } else if s.paused {
        out.push("paused".to_string());
    }
    if let Some(cap) = s.cap {
        out.push(format!("cap {}", count(cap)));
    }
    if let Some(rate) = s.rate {
        out.push(format!("{rate}/s"));
    }
    if s.weight != 1 {
        out.push(format!("weight {}", s.weight));
    }
    if let Some(budget) = s.host_budget {
        out.push(format!("{} URLs a host", count(budget)));
    }
    if s.held_hosts > 0 {
        out.push(format!("{} hosts held", count(s.held_hosts)));
    }
    if out.is_empty() {
        "-".into()
    } else {
        out.join(", ")
    }
}

/// A rate as `crawls show` prints it: two decimals below 10 a second, whole above.
fn per_second(rate: f64) -> String {
    if rate < 10.0 {
        format!("{rate:.2}")
    } else {
        format!("{rate:.0}")
    }
}

fn show(crawl: &str, s: &CrawlStats, json: bool) {
    if json {
        println!("{}", json::crawl_stats_to_json(s, Style::Snake));
        return;
    }
    println!("crawl {crawl}");
    for (what, n) in [
        ("pending", s.pending()),
        ("ready", s.ready),
        ("delayed", s.delayed),
        ("leased", s.leased),
        ("dead", s.dead),
        ("done", s.done),
        ("seen", s.seen),
        ("hosts", s.hosts),
        ("seeded", s.seeded_total),
    ] {
        println!("  {what:<8} {}", count(n));
    }
    let oldest = s.oldest_pending_age_ms.map_or("-".to_string(), |ms| {
        crate::format::duration(std::time::Duration::from_millis(ms))
    });
    println!("  oldest   {oldest}");
    println!(
        "  rates    {}/s done, {}/s seeded (the last minute)",
        per_second(s.done_per_second),
        per_second(s.seeded_per_second)
    );
    println!("  limits   {}", limits(s));
}
