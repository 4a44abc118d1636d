//! `crawlq import-list KEY`: migrate a foreign queue into a crawlq queue: a classic Redis-list
//! queue (producers LPUSH JSON items such as `{"host":"example.com","ts":..,"attempt":0}` onto
//! KEY, workers BRPOPLPUSH them onto KEY:processing), a scrapy-redis request queue, Laravel's
//! Redis queue or a BullMQ queue (`--format`, parsing in `foreign.rs`).
//!
//! No item can be lost, even if the import is interrupted: items move (LMOVE per item from a
//! list; ZRANGE then LPUSH + ZREM in one MULTI from a sorted set) onto a staging list, are
//! seeded, and only then is the staging list deleted (with the BullMQ job hashes seeded). A run finds a staging list left by an interrupted run and imports it
//! first (seeding twice is harmless: de-duplication). Items crawlq refuses are kept, bytes
//! unchanged, on KEY:crawlq-rejected.

use crate::error::{CliError, EXIT_SOME_REFUSED};
use crate::foreign::{self, Format, Shape, Source};
use crate::format::count;
use clap::Args;
use crawlq::redis_exec::{redis, to_error};
use crawlq::{Queue, RedisExecutor, SeedItem, SeedOptions};
use serde_json::{Map, Value, json};

/// Refused items printed to stderr.
const SHOWN_REFUSED: usize = 20;
/// Fields of the classic item format that have no place in a crawlq item: the queue keeps its
/// own enqueue time, and attempts start again at 0.
const CLASSIC_FIELDS: [&str; 5] = ["url", "host", "ts", "attempt", "priority"];

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The foreign queue: the list (classic), the spider's requests key (scrapy-redis, e.g.
    /// `myspider:requests`), `queues:<name>` (laravel) or the queue's prefix and name (bullmq,
    /// e.g. `bull:crawl`).
    key: String,
    /// What kind of queue KEY is.
    #[arg(long, value_enum, default_value_t = Format::Classic)]
    format: Format,
    /// The classic queue's in-flight list [default: KEY:processing].
    #[arg(long, value_name = "KEY")]
    processing: Option<String>,
    /// The job field or property holding the URL (laravel, bullmq).
    #[arg(long, value_name = "NAME", default_value = "url")]
    url_field: String,
    /// Items per round trip.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    batch: u64,
    /// Queue items again even if this queue has seen them.
    #[arg(long)]
    force: bool,
    /// Only read the lists and say what an import would do.
    #[arg(long)]
    dry_run: bool,
    /// JSON: what became of each list's items.
    #[arg(long)]
    json: bool,
}

/// What became of the items of one list.
#[derive(Debug, Default, Clone, PartialEq)]
struct ListReport {
    list: String,
    items: u64,
    added: u64,
    duplicates: u64,
    refused: u64,
}

/// A classic item as a seed item: `url` (or else `host`) is the item, `priority` is kept, any
/// other field than `ts` and `attempt` goes into the payload. A plain string (a bare URL or
/// host, or a JSON string) is taken as is.
pub(crate) fn classic_item(raw: &[u8]) -> Result<SeedItem, String> {
    let text = std::str::from_utf8(raw).map_err(|_| "not valid UTF-8".to_string())?;
    let trimmed = text.trim();
    if !trimmed.starts_with('{') {
        if trimmed.starts_with('"') {
            let s: String =
                serde_json::from_str(trimmed).map_err(|e| format!("not a JSON string: {e}"))?;
            return Ok(SeedItem::from(s));
        }
        return Ok(SeedItem::from(trimmed));
    }
    let object: Map<String, Value> =
        serde_json::from_str(trimmed).map_err(|e| format!("not a JSON object: {e}"))?;
    let input = match (object.get("url"), object.get("host")) {
        (Some(Value::String(url)), _) => url.clone(),
        (_, Some(Value::String(host))) => host.clone(),
        _ => return Err("no \"url\" or \"host\" string field".into()),
    };
    let mut item = SeedItem::from(input);
    match object.get("priority") {
        None | Some(Value::Null) => {}
        Some(p) => item.priority = Some(p.as_i64().ok_or("\"priority\" is not an integer")?),
    }
    let rest: Map<String, Value> = object
        .into_iter()
        .filter(|(k, _)| !CLASSIC_FIELDS.contains(&k.as_str()))
        .collect();
    if !rest.is_empty() {
        item.payload = Some(Value::Object(rest));
    }
    Ok(item)
}

pub async fn run(q: &Queue<RedisExecutor>, args: ImportArgs) -> Result<u8, CliError> {
    let staging = format!("{}:crawlq-import", args.key);
    let rejected = format!("{}:crawlq-rejected", args.key);
    let mut importer = Importer {
        q,
        conn: q.executor().connection(),
        staging,
        rejected,
        batch: args.batch as usize,
        opts: SeedOptions {
            force: args.force,
            ..SeedOptions::default()
        },
        format: args.format,
        url_field: args.url_field.clone(),
        key: args.key.clone(),
        shown: 0,
    };
    let sources = foreign::sources(args.format, &args.key, args.processing.as_deref());
    let sources = check_sources(&mut importer.conn, sources, &importer.staging).await?;
    let staging = Source {
        key: importer.staging.clone(),
        shape: Shape::List("RIGHT"),
    };
    let mut reports = Vec::new();
    if args.dry_run {
        reports.push(importer.inspect(&staging).await?);
        for source in &sources {
            reports.push(importer.inspect(source).await?);
        }
    } else {
        // A staging list left by an interrupted run goes first.
        reports.push(importer.resume(&staging.key).await?);
        for source in &sources {
            reports.push(importer.drain(source).await?);
        }
    }
    let refused: u64 = reports.iter().map(|r| r.refused).sum();
    if args.json {
        let lists: Vec<Value> = reports
            .iter()
            .map(|r| {
                json!({"list": r.list, "items": r.items, "added": r.added,
                       "duplicates": r.duplicates, "refused": r.refused})
            })
            .collect();
        println!(
            "{}",
            json!({"queue": q.name(), "dry_run": args.dry_run, "lists": lists,
                   "rejected_list": importer.rejected})
        );
    } else {
        let verb = if args.dry_run {
            "would import"
        } else {
            "imported"
        };
        println!("{verb} into queue {}:", q.name());
        let width = reports.iter().map(|r| r.list.len()).max().unwrap_or(0);
        for r in &reports {
            if r.items == 0 && r.list == importer.staging {
                continue;
            }
            let outcome = if args.dry_run {
                format!("{} valid, {} refused", count(r.added), count(r.refused))
            } else {
                format!(
                    "{} added, {} duplicates, {} refused",
                    count(r.added),
                    count(r.duplicates),
                    count(r.refused)
                )
            };
            println!(
                "  {:<width$}  {:>10} items: {outcome}",
                r.list,
                count(r.items)
            );
        }
        if refused > 0 && !args.dry_run {
            println!(
                "refused items are kept unchanged on {} ({} of them)",
                importer.rejected,
                count(refused)
            );
        }
    }
    Ok(if refused > 0 { EXIT_SOME_REFUSED } else { 0 })
}

struct Importer<'a> {
    q: &'a Queue<RedisExecutor>,
    conn: crawlq::redis_exec::Connection,
    staging: String,
    rejected: String,
    batch: usize,
    opts: SeedOptions,
    format: Format,
    url_field: String,
    /// KEY as given (BullMQ job hashes are KEY:<id>)
    key: String,
    shown: usize,
}

impl Importer<'_> {
    /// Move the source's items, oldest first, batch by batch through the staging list into the
    /// queue.
    async fn drain(&mut self, source: &Source) -> Result<ListReport, CliError> {
        let list = source.key.as_str();
        let mut report = ListReport {
            list: list.to_string(),
            ..ListReport::default()
        };
        loop {
            let items: Vec<Vec<u8>> = match source.shape {
                Shape::List(end) => {
                    let mut pipe = redis::pipe();
                    for _ in 0..self.batch {
                        pipe.cmd("LMOVE")
                            .arg(list)
                            .arg(&self.staging)
                            .arg(end)
                            .arg("LEFT");
                    }
                    let moved: Vec<Option<Vec<u8>>> = pipe
                        .query_async(&mut self.conn)
                        .await
                        .map_err(|e| redis_failure(e, list, &self.staging))?;
                    moved.into_iter().flatten().collect()
                }
                Shape::Zset | Shape::ListOrZset => {
                    let members: Vec<Vec<u8>> = redis::cmd("ZRANGE")
                        .arg(list)
                        .arg(0)
                        .arg(self.batch - 1)
                        .query_async(&mut self.conn)
                        .await
                        .map_err(|e| redis_failure(e, list, &self.staging))?;
                    if !members.is_empty() {
                        // onto the staging list and out of the set in one transaction
                        let mut pipe = redis::pipe();
                        pipe.atomic();
                        pipe.cmd("LPUSH").arg(&self.staging).arg(&members).ignore();
                        pipe.cmd("ZREM").arg(list).arg(&members).ignore();
                        pipe.query_async::<()>(&mut self.conn)
                            .await
                            .map_err(|e| redis_failure(e, list, &self.staging))?;
                    }
                    members
                }
            };
            if items.is_empty() {
                return Ok(report);
            }
            self.import(items, &mut report).await?;
        }
    }

    /// The stored items as the format's parser reads them: BullMQ's are job ids, read as
    /// `<name>\n<data>` from their job hashes (empty when the hash is gone).
    async fn readable(&mut self, raw: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, CliError> {
        if self.format != Format::Bullmq || raw.is_empty() {
            return Ok(raw.to_vec());
        }
        let mut pipe = redis::pipe();
        for id in raw {
            let hash = format!("{}:{}", self.key, String::from_utf8_lossy(id));
            pipe.cmd("HMGET").arg(hash).arg("name").arg("data");
        }
        // per job: its name and its data, either missing when the job hash is gone
        type NameAndData = (Option<Vec<u8>>, Option<Vec<u8>>);
        let jobs: Vec<NameAndData> = pipe
            .query_async(&mut self.conn)
            .await
            .map_err(|e| redis_failure(e, &self.key, &self.staging))?;
        Ok(jobs
            .into_iter()
            .map(|job| match job {
                (name, Some(data)) => {
                    let mut out = name.unwrap_or_default();
                    out.push(b'\n');
                    out.extend(data);
                    out
                }
                _ => Vec::new(),
            })
            .collect())
    }

    /// Import what an interrupted run left on the staging list.
    async fn resume(&mut self, staging: &str) -> Result<ListReport, CliError> {
        let mut report = ListReport {
            list: staging.to_string(),
            ..ListReport::default()
        };
        let mut items: Vec<Vec<u8>> = redis::cmd("LRANGE")
            .arg(staging)
            .arg(0)
            .arg(-1)
            .query_async(&mut self.conn)
            .await
            .map_err(|e| redis_failure(e, staging, staging))?;
        if !items.is_empty() {
            // staging is filled at its left end: the right end is the oldest
            items.reverse();
            self.import(items, &mut report).await?;
        }
        Ok(report)
    }

    /// Seed one batch (oldest first), keep what was refused, then drop the staging list.
    async fn import(&mut self, raw: Vec<Vec<u8>>, report: &mut ListReport) -> Result<(), CliError> {
        let readable = self.readable(&raw).await?;
        let mut items = Vec::with_capacity(raw.len());
        let mut origin = Vec::with_capacity(raw.len());
        let mut refused: Vec<&[u8]> = Vec::new();
        for (i, (bytes, readable)) in raw.iter().zip(&readable).enumerate() {
            match foreign::item(self.format, readable, &self.url_field) {
                Ok(item) => {
                    items.push(item);
                    origin.push(i);
                }
                Err(reason) => {
                    self.show_refused(&report.list, bytes, &reason);
                    refused.push(bytes);
                }
            }
        }
        let seeded = self
            .q
            .seed(&items, &self.opts)
            .await
            .map_err(|e| CliError::Queue(with_resume_hint(e, &self.staging)))?;
        for invalid in &seeded.invalid {
            let bytes = &raw[origin[invalid.index]];
            self.show_refused(&report.list, bytes, &invalid.reason.to_string());
            refused.push(bytes);
        }
        let mut pipe = redis::pipe();
        pipe.atomic();
        if !refused.is_empty() {
            pipe.cmd("RPUSH").arg(&self.rejected).arg(&refused).ignore();
        }
        if self.format == Format::Bullmq {
            // the jobs now in crawlq; a refused job keeps its hash (its id is on the rejected list)
            let invalid: std::collections::HashSet<usize> =
                seeded.invalid.iter().map(|inv| origin[inv.index]).collect();
            for &i in &origin {
                if !invalid.contains(&i) {
                    let hash = format!("{}:{}", self.key, String::from_utf8_lossy(&raw[i]));
                    pipe.cmd("DEL").arg(hash).ignore();
                }
            }
        }
        pipe.cmd("DEL").arg(&self.staging).ignore();
        pipe.query_async::<()>(&mut self.conn)
            .await
            .map_err(|e| redis_failure(e, &report.list, &self.staging))?;
        report.items += raw.len() as u64;
        report.added += seeded.added;
        report.duplicates += seeded.duplicates;
        report.refused += refused.len() as u64;
        Ok(())
    }

    /// Count a source's items and how many crawlq would accept, without changing anything.
    async fn inspect(&mut self, source: &Source) -> Result<ListReport, CliError> {
        let list = source.key.as_str();
        let mut report = ListReport {
            list: list.to_string(),
            ..ListReport::default()
        };
        let range = match source.shape {
            Shape::List(_) => "LRANGE",
            Shape::Zset | Shape::ListOrZset => "ZRANGE",
        };
        let mut start = 0usize;
        loop {
            let chunk: Vec<Vec<u8>> = redis::cmd(range)
                .arg(list)
                .arg(start)
                .arg(start + self.batch - 1)
                .query_async(&mut self.conn)
                .await
                .map_err(|e| redis_failure(e, list, list))?;
            let readable = self.readable(&chunk).await?;
            for (bytes, readable) in chunk.iter().zip(&readable) {
                let accepted =
                    foreign::item(self.format, readable, &self.url_field).and_then(|item| {
                        crawlq::normalize::normalize(&item.input)
                            .map(|_| ())
                            .map_err(|reason| reason.to_string())
                    });
                match accepted {
                    Ok(()) => report.added += 1,
                    Err(reason) => {
                        self.show_refused(list, bytes, &reason);
                        report.refused += 1;
                    }
                }
            }
            report.items += chunk.len() as u64;
            if chunk.len() < self.batch {
                return Ok(report);
            }
            start += self.batch;
        }
    }

    fn show_refused(&mut self, list: &str, bytes: &[u8], reason: &str) {
        if self.shown < SHOWN_REFUSED {
            self.shown += 1;
            eprintln!(
                "{list}: refused {:?}: {reason}",
                String::from_utf8_lossy(bytes)
            );
        } else if self.shown == SHOWN_REFUSED {
            self.shown += 1;
            eprintln!("(more refused items not shown)");
        }
    }
}

/// One clear error before anything moves: a key of the wrong type, or nothing to import at
/// all. Returns the sources with a list-or-zset resolved to what the key holds.
async fn check_sources(
    conn: &mut crawlq::redis_exec::Connection,
    sources: Vec<Source>,
    staging: &str,
) -> Result<Vec<Source>, CliError> {
    let mut all_missing = true;
    let mut checked = Vec::with_capacity(sources.len());
    let staging = Source {
        key: staging.to_string(),
        shape: Shape::List("RIGHT"),
    };
    for (i, source) in std::iter::once(staging).chain(sources).enumerate() {
        let kind: String = redis::cmd("TYPE")
            .arg(&source.key)
            .query_async(conn)
            .await
            .map_err(|e| {
                CliError::Queue(to_error(e, &format!("reading the type of {}", source.key)))
            })?;
        let shape = match (kind.as_str(), source.shape) {
            ("none", shape) => shape,
            ("list", Shape::List(end)) => Shape::List(end),
            ("list", Shape::ListOrZset) => Shape::List("RIGHT"),
            ("zset", Shape::Zset | Shape::ListOrZset) => Shape::Zset,
            (other, shape) => {
                let expected = match shape {
                    Shape::List(_) => "a list",
                    Shape::Zset => "a sorted set",
                    Shape::ListOrZset => "a list or a sorted set",
                };
                let hint = if other == "zset" {
                    " (a scrapy-redis priority queue? use --format scrapy-redis)"
                } else {
                    ""
                };
                return Err(CliError::Usage(format!(
                    "{} is a {other}, not {expected}{hint}; nothing was changed",
                    source.key
                )));
            }
        };
        if kind != "none" {
            all_missing = false;
        }
        if i > 0 {
            checked.push(Source {
                key: source.key,
                shape,
            });
        }
    }
    if all_missing {
        let keys: Vec<&str> = checked.iter().map(|s| s.key.as_str()).collect();
        return Err(CliError::Usage(format!(
            "nothing to import: none of {} exists (check the key name, --format and the \
             database number in --redis)",
            keys.join(", ")
        )));
    }
    Ok(checked)
}

fn redis_failure(e: redis::RedisError, list: &str, staging: &str) -> CliError {
    CliError::Queue(with_resume_hint(
        to_error(e, &format!("moving items of {list}")),
        staging,
    ))
}

/// The error, saying that running the import again finishes it.
fn with_resume_hint(e: crawlq::Error, staging: &str) -> crawlq::Error {
    let hint = format!(
        "\nno item is lost: items already moved wait on {staging}; run the import again to finish"
    );
    match e {
        crawlq::Error::Unavailable(m) => crawlq::Error::Unavailable(m + &hint),
        crawlq::Error::Timeout(m) => crawlq::Error::Timeout(m + &hint),
        crawlq::Error::Server(m) => crawlq::Error::Server(m + &hint),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classic_host_items_keep_their_extra_fields_as_payload() {
        let item = classic_item(br#"{"host":"example.com","ts":1700000000,"attempt":2,"depth":3}"#)
            .unwrap();
        assert_eq!(item.input, "example.com");
        assert_eq!(item.payload, Some(json!({"depth": 3})));
        assert_eq!(item.priority, None);
    }

    #[test]
    fn a_url_field_wins_over_host_and_priority_is_kept() {
        let item = classic_item(
            br#"{"url":"https://example.com/a","host":"example.com","priority":4,"ts":1,"attempt":0}"#,
        )
        .unwrap();
        assert_eq!(item.input, "https://example.com/a");
        assert_eq!(item.priority, Some(4));
        assert_eq!(item.payload, None);
    }

    #[test]
    fn plain_strings_are_taken_as_items() {
        assert_eq!(
            classic_item(b"  https://example.com/x \n").unwrap().input,
            "https://example.com/x"
        );
        assert_eq!(
            classic_item(br#""example.org""#).unwrap().input,
            "example.org"
        );
    }

    #[test]
    fn unusable_items_are_refused_with_a_reason() {
        assert!(
            classic_item(b"{\"ts\":1}")
                .unwrap_err()
                .contains("\"url\" or \"host\"")
        );
        assert!(
            classic_item(b"{not json")
                .unwrap_err()
                .contains("not a JSON object")
        );
        assert!(classic_item(b"\xff\xfe").unwrap_err().contains("UTF-8"));
        assert!(
            classic_item(br#"{"host":"a.com","priority":"high"}"#)
                .unwrap_err()
                .contains("priority")
        );
    }
}
