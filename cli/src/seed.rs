//! `crawlq seed FILE|-`: stream a file of URLs or hosts into the queue in batches.

use crate::error::{CliError, EXIT_SOME_REFUSED};
use crate::format::{count, progress_bar};
use clap::Args;
use crawlq::{Error, InvalidReason, Queue, RedisExecutor, SeedItem, SeedOptions, SeedReport};
use indicatif::ProgressBar;
use serde_json::json;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Invalid lines printed to stderr when no --invalid-out file is given.
const SHOWN_INVALID: usize = 20;
/// Attempts per batch when Redis is unreachable or times out.
const BATCH_ATTEMPTS: u32 = 5;

#[derive(Debug, Args)]
pub struct SeedArgs {
    /// File of URLs or hosts, one per line; "-" reads standard input.
    file: PathBuf,
    /// Priority of every item (higher is leased first), -32768..=32767.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true,
          value_parser = clap::value_parser!(i64).range(-32768..=32767))]
    priority: i64,
    /// Make every item ready only after this many seconds.
    #[arg(
        long,
        default_value_t = 0.0,
        value_name = "SECONDS",
        allow_negative_numbers = true
    )]
    delay: f64,
    /// Queue items again even if the queue has seen them (not if they are pending or leased).
    #[arg(long)]
    force: bool,
    /// A JSON payload stored with every item.
    #[arg(long, value_name = "JSON")]
    payload: Option<String>,
    /// Seed into this named crawl (de-duplication per crawl; hosts shared with every crawl).
    #[arg(long, value_name = "NAME")]
    crawl: Option<String>,
    /// Write every invalid line to this file (tab-separated: line, code, reason, input)
    /// instead of the first few to stderr.
    #[arg(long, value_name = "FILE")]
    invalid_out: Option<PathBuf>,
    /// Lines per batch: memory use is bounded by one batch (the queue's seed_batch items go in
    /// each round trip).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    batch: u64,
    /// Start at this line (1-based), e.g. to resume after an interrupted run.
    #[arg(long, default_value_t = 1, value_name = "LINE", value_parser = clap::value_parser!(u64).range(1..))]
    from_line: u64,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

/// One item of the current batch and the line it came from.
struct Pending {
    items: Vec<SeedItem>,
    lines: Vec<u64>,
}

/// Where refused lines go.
enum InvalidSink {
    File(BufWriter<File>, PathBuf),
    Stderr { shown: usize },
}

#[derive(Default)]
struct Totals {
    lines: u64,
    skipped: u64,
    report: SeedReport,
    invalid: u64,
}

pub async fn run(q: &Queue<RedisExecutor>, args: SeedArgs) -> Result<u8, CliError> {
    let payload = match &args.payload {
        Some(text) => Some(
            serde_json::from_str(text)
                .map_err(|e| CliError::Usage(format!("--payload is not JSON: {e}")))?,
        ),
        None => None,
    };
    let opts = SeedOptions {
        priority: args.priority,
        delay: crate::seconds(args.delay, "--delay")?,
        payload,
        force: args.force,
        crawl: args.crawl.clone(),
    };
    let name = if crate::is_stdin(&args.file) {
        "<stdin>".to_string()
    } else {
        args.file.display().to_string()
    };
    let (input, size): (Box<dyn Read>, Option<u64>) = if crate::is_stdin(&args.file) {
        (Box::new(io::stdin().lock()), None)
    } else {
        let file = File::open(&args.file)
            .map_err(|e| CliError::Usage(format!("cannot read {name}: {e}")))?;
        let metadata = file.metadata().ok();
        if metadata.as_ref().is_some_and(|m| m.is_dir()) {
            return Err(CliError::Usage(format!(
                "cannot read {name}: it is a directory (give a file of URLs, one per line, or - for stdin)"
            )));
        }
        let size = metadata.map(|m| m.len());
        (Box::new(file), size)
    };
    let mut reader = BufReader::with_capacity(1 << 20, input);
    let mut sink = match &args.invalid_out {
        Some(path) => {
            let file = File::create(path)
                .map_err(|e| CliError::Usage(format!("cannot write {}: {e}", path.display())))?;
            InvalidSink::File(BufWriter::new(file), path.clone())
        }
        None => InvalidSink::Stderr { shown: 0 },
    };
    let progress = progress_bar(size, args.quiet);
    let started = Instant::now();
    let mut totals = Totals::default();
    let mut pending = Pending {
        items: Vec::with_capacity(args.batch as usize),
        lines: Vec::with_capacity(args.batch as usize),
    };
    let mut raw = Vec::with_capacity(256);
    let mut bytes_read = 0u64;
    loop {
        raw.clear();
        let n = reader
            .read_until(b'\n', &mut raw)
            .map_err(|e| CliError::io(format!("reading {name}"), e))?;
        if n == 0 {
            break;
        }
        bytes_read += n as u64;
        totals.lines += 1;
        let line_no = totals.lines;
        if line_no < args.from_line {
            totals.skipped += 1;
            continue;
        }
        let text = match std::str::from_utf8(&raw) {
            Ok(text) => text.trim(),
            Err(_) => {
                let input = String::from_utf8_lossy(&raw).trim().to_string();
                let reason = InvalidReason::InvalidUrl("not valid UTF-8".into());
                report_invalid(&mut sink, &progress, &name, line_no, &input, &reason)?;
                totals.invalid += 1;
                continue;
            }
        };
        if text.is_empty() || text.starts_with('#') {
            totals.skipped += 1;
            continue;
        }
        pending.items.push(SeedItem::from(text));
        pending.lines.push(line_no);
        if pending.items.len() as u64 >= args.batch {
            flush(
                q,
                &opts,
                &mut pending,
                &mut totals,
                &mut sink,
                &progress,
                &name,
            )
            .await?;
            progress.set_position(bytes_read);
            progress.set_message(progress_line(&totals, started.elapsed()));
        }
    }
    flush(
        q,
        &opts,
        &mut pending,
        &mut totals,
        &mut sink,
        &progress,
        &name,
    )
    .await?;
    progress.finish_and_clear();
    let elapsed = started.elapsed();

    if let InvalidSink::File(out, path) = &mut sink {
        out.flush()
            .map_err(|e| CliError::io(format!("writing {}", path.display()), e))?;
    }
    if let InvalidSink::Stderr { shown } = sink
        && totals.invalid > shown as u64
    {
        eprintln!(
            "... and {} more invalid lines (--invalid-out FILE writes them all)",
            count(totals.invalid - shown as u64)
        );
    }
    if args.json {
        println!(
            "{}",
            json!({
                "file": name,
                "lines": totals.lines,
                "skipped": totals.skipped,
                "added": totals.report.added,
                "duplicates": totals.report.duplicates,
                "invalid": totals.invalid,
                "seconds": (elapsed.as_secs_f64() * 1000.0).round() / 1000.0,
            })
        );
    } else {
        println!("{name}: {}", summary_line(&totals, elapsed));
    }
    Ok(if totals.invalid > 0 {
        EXIT_SOME_REFUSED
    } else {
        0
    })
}

fn summary_line(t: &Totals, elapsed: Duration) -> String {
    let per_second = t.lines as f64 / elapsed.as_secs_f64().max(1e-9);
    format!(
        "{} lines ({}/s): {} added, {} duplicates, {} invalid, {} skipped (blank, comment or before --from-line)",
        count(t.lines),
        count(per_second.round() as u64),
        count(t.report.added),
        count(t.report.duplicates),
        count(t.invalid),
        count(t.skipped),
    )
}

/// The progress bar's message (cut at the terminal's width).
fn progress_line(t: &Totals, elapsed: Duration) -> String {
    let per_second = t.lines as f64 / elapsed.as_secs_f64().max(1e-9);
    format!(
        "{} lines {}/s, added {}, duplicates {}, invalid {}",
        count(t.lines),
        count(per_second.round() as u64),
        count(t.report.added),
        count(t.report.duplicates),
        count(t.invalid),
    )
}

/// Seed the batch (one `seed` call: `seed_batch` items per round trip), retrying it while Redis
/// is unreachable. A retried batch is safe: items that made it the first time come back as
/// duplicates.
async fn flush(
    q: &Queue<RedisExecutor>,
    opts: &SeedOptions,
    pending: &mut Pending,
    totals: &mut Totals,
    sink: &mut InvalidSink,
    progress: &ProgressBar,
    name: &str,
) -> Result<(), CliError> {
    if pending.items.is_empty() {
        return Ok(());
    }
    let first_line = pending.lines[0];
    let mut attempt = 1;
    let report = loop {
        match q.seed(&pending.items, opts).await {
            Ok(report) => break report,
            Err(e @ (Error::Unavailable(_) | Error::Timeout(_))) if attempt < BATCH_ATTEMPTS => {
                let wait = Duration::from_millis(500 << (attempt - 1));
                progress.suspend(|| {
                    eprintln!(
                        "{name}: batch from line {first_line} failed ({e}); retrying in {wait:?} ({attempt}/{})",
                        BATCH_ATTEMPTS - 1
                    )
                });
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
            Err(e) => return Err(CliError::Queue(with_line(e, name, first_line))),
        }
    };
    for invalid in &report.invalid {
        let line_no = pending.lines[invalid.index];
        report_invalid(
            sink,
            progress,
            name,
            line_no,
            &invalid.input,
            &invalid.reason,
        )?;
    }
    totals.invalid += report.invalid.len() as u64;
    totals.report.added += report.added;
    totals.report.duplicates += report.duplicates;
    pending.items.clear();
    pending.lines.clear();
    Ok(())
}

/// The error, saying where seeding stopped and how to resume.
fn with_line(e: Error, name: &str, line: u64) -> Error {
    let context = format!(
        "{name}: stopped at the batch starting on line {line}; lines before it are queued, \
         resume with --from-line {line}"
    );
    match e {
        Error::Unavailable(m) => Error::Unavailable(format!("{m}\n{context}")),
        Error::Timeout(m) => Error::Timeout(format!("{m}\n{context}")),
        Error::Server(m) => Error::Server(format!("{m}\n{context}")),
        Error::Protocol(m) => Error::Protocol(format!("{m}\n{context}")),
        other => other,
    }
}

fn report_invalid(
    sink: &mut InvalidSink,
    progress: &ProgressBar,
    name: &str,
    line: u64,
    input: &str,
    reason: &InvalidReason,
) -> Result<(), CliError> {
    match sink {
        InvalidSink::File(out, path) => {
            let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
            writeln!(
                out,
                "{line}\t{}\t{}\t{}",
                reason.code(),
                clean(&reason.to_string()),
                clean(input)
            )
            .map_err(|e| CliError::io(format!("writing {}", path.display()), e))
        }
        InvalidSink::Stderr { shown } => {
            if *shown < SHOWN_INVALID {
                *shown += 1;
                progress
                    .suspend(|| eprintln!("{name}:{line}: {}: {reason}: {input:?}", reason.code()));
            }
            Ok(())
        }
    }
}
