//! `crawlq`: operate a crawlq queue from a shell. Seed from files, watch depth, repair dead
//! letters and stale leases, migrate a classic Redis-list queue, export metrics to Prometheus.
//!
//! Every subcommand is a thin layer over the core crate's operations; nothing here changes a
//! queue except through them (`import-list` only moves items of the foreign list it migrates).

mod connection;
mod crawls;
mod error;
mod exporter;
mod foreign;
mod format;
mod import;
mod inspect;
mod seed;
mod serve;
mod web;

use clap::{Args, Parser, Subcommand};
use crawlq::{Config, Queue, RedisExecutor, Style};
use error::CliError;
use serde_json::{Map, Value};
use std::process::ExitCode;

/// Seed, inspect and repair a crawlq queue; export its depth to Prometheus.
///
/// Exit status: 0 success; 1 Redis failed (unreachable, timeout, server error); 2 bad usage or
/// bad input (unknown option, unreadable file, invalid value, a missing or foreign key); 3
/// `seed` or `import-list` finished but refused some items (the rest were queued); 4 some ids
/// given to `dead show` or `dead requeue` are not dead letters (the others were handled).
#[derive(Debug, Parser)]
#[command(name = "crawlq", version, max_term_width = 100)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Args)]
pub(crate) struct Global {
    /// Redis URL: redis://[:password@]host[:port][/db], rediss://... (TLS) or unix:///path.
    /// Unset: $CRAWLQ_URL (the framework adapters' variable), else redis://127.0.0.1:6379/0.
    #[arg(
        long,
        global = true,
        env = "CRAWLQ_REDIS_URL",
        hide_env_values = true,
        default_value_t = redis_url_from_env(),
        hide_default_value = true
    )]
    pub(crate) redis: String,

    /// Queue name (the exporter takes several: repeat the option or separate with commas).
    #[arg(
        long,
        short = 'q',
        global = true,
        env = "CRAWLQ_QUEUE",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub(crate) queue: Vec<String>,

    /// A queue option, as in the Python binding (snake_case, seconds): -o key_prefix=app,
    /// -o max_attempts=5, -o host_key=domain. Repeatable.
    #[arg(long = "option", short = 'o', global = true, value_name = "KEY=VALUE")]
    options: Vec<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The queues under the key prefix (-o key_prefix=..., default "crawlq"): list, remove.
    #[command(subcommand)]
    Queue(inspect::QueueCommand),
    /// Seed URLs or hosts from a file (one per line; blank lines and # comments skipped), or
    /// from standard input with "-". Streams in batches, so any file size runs in constant
    /// memory; invalid lines are reported with their line number and the rest are queued.
    Seed(seed::SeedArgs),
    /// The queue's depth and lifetime counters, as a table or JSON.
    Stats(inspect::StatsArgs),
    /// List, requeue or purge dead letters.
    #[command(subcommand)]
    Dead(inspect::DeadCommand),
    /// Requeue expired leases now (lease calls also do this as they go), dead-lettering those
    /// past max_attempts (-o max_attempts=N, default 3).
    Reclaim(inspect::ReclaimArgs),
    /// Show a host's politeness state, or set its delay in seconds ("default" clears it).
    HostDelay(inspect::HostDelayArgs),
    /// Per-host controls: show a host, pause it (until resumed or for a time), resume it, set
    /// its budget or its in-flight limit.
    #[command(subcommand)]
    Hosts(inspect::HostsCommand),
    /// The named crawls of the queue: list them with their counts, show one, cap, pause,
    /// resume or delete one.
    #[command(subcommand)]
    Crawls(crawls::CrawlsCommand),
    /// The items the next lease calls would take (one per host), or one host's ready items in
    /// the order its leases take them (--host), without leasing them.
    Peek(inspect::PeekArgs),
    /// The leases workers hold now, soonest expiry first (an expired one until a lease call
    /// reclaims it): which items are in flight, for how long yet, and how often they failed.
    Leased(inspect::LeasedArgs),
    /// Move a foreign queue into a crawlq queue without losing an item: a classic Redis list
    /// (KEY and KEY:processing), a scrapy-redis request queue, Laravel's Redis queue or BullMQ's
    /// waiting jobs (--format).
    ImportList(import::ImportArgs),
    /// Serve Prometheus metrics (the depth figures and counters of each --queue) on /metrics.
    Exporter(exporter::ExporterArgs),
    /// Serve a web console of the queues (every --queue, else those under the key prefix):
    /// depth and rates over the last hour, hosts, dead letters, and confirmed actions.
    Web(web::WebArgs),
    /// Print a completion script for a shell to standard output, e.g.
    /// `crawlq completions bash > /etc/bash_completion.d/crawlq`.
    Completions {
        /// The shell to complete in.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// The URL when neither `--redis` nor `$CRAWLQ_REDIS_URL` gives one: `$CRAWLQ_URL`, which the
/// Scrapy settings and Laravel config of docs/frameworks.md read, so a shell that runs a worker
/// reaches the same Redis with the CLI; else the local default.
fn redis_url_from_env() -> String {
    std::env::var("CRAWLQ_URL")
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| "redis://127.0.0.1:6379/0".to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Completions { shell } = cli.command {
        use clap::CommandFactory;
        clap_complete::generate(shell, &mut Cli::command(), "crawlq", &mut std::io::stdout());
        return ExitCode::SUCCESS;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("crawlq: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("crawlq: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

async fn run(cli: Cli) -> Result<u8, CliError> {
    let config = config_from_options(&cli.global.options)?;
    let g = &cli.global;
    match cli.command {
        Command::Queue(command) => inspect::queue(g, config, command).await,
        Command::Seed(args) => seed::run(&open(g, config).await?, args).await,
        Command::Stats(args) => inspect::stats(&open_to_read(g, config).await?, args).await,
        Command::Dead(command) => inspect::dead(&open(g, config).await?, command).await,
        Command::Reclaim(args) => inspect::reclaim(&open(g, config).await?, args).await,
        Command::HostDelay(args) => inspect::host_delay(&open(g, config).await?, args).await,
        Command::Hosts(command) => inspect::hosts(&open(g, config).await?, command).await,
        Command::Crawls(command) => crawls::run(&open(g, config).await?, command).await,
        Command::Peek(args) => inspect::peek(&open_to_read(g, config).await?, args).await,
        Command::Leased(args) => inspect::leased(&open_to_read(g, config).await?, args).await,
        Command::ImportList(args) => import::run(&open(g, config).await?, args).await,
        Command::Exporter(args) => exporter::run(&g.redis, &g.queue, config, args).await,
        Command::Web(args) => web::run(&g.redis, &g.queue, config, args).await,
        Command::Completions { .. } => unreachable!("answered before the runtime starts"),
    }
}

/// `-o KEY=VALUE` options through the core's option table (the names and units of the Python
/// binding). A value is read as JSON when it parses (numbers, true, null), else as a string.
fn config_from_options(options: &[String]) -> Result<Config, CliError> {
    let mut map = Map::new();
    for option in options {
        let (key, value) = option
            .split_once('=')
            .ok_or_else(|| CliError::Usage(format!("-o {option:?}: expected KEY=VALUE")))?;
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::from(value));
        map.insert(key.trim().to_string(), value);
    }
    Ok(Config::from_options(&map, Style::Snake)?)
}

pub(crate) async fn open(g: &Global, config: Config) -> Result<Queue<RedisExecutor>, CliError> {
    let name = match g.queue.as_slice() {
        [name] => name,
        [] => {
            return Err(CliError::Usage(
                "which queue? pass --queue NAME or set CRAWLQ_QUEUE".into(),
            ));
        }
        _ => {
            return Err(CliError::Usage(
                "this command takes one --queue (only the exporter takes several)".into(),
            ));
        }
    };
    Ok(Queue::connect(&g.redis, name, config).await?)
}

/// [`open`] for a command that only reads (`stats`, `peek`, `leased`): on a server that may
/// evict the queue's keys, where a queue's first call refuses to go on without
/// `allow_eviction`, the command shows the queue all the same and warns on stderr, so that a
/// look at a queue at risk shows both the queue and the risk.
async fn open_to_read(g: &Global, config: Config) -> Result<Queue<RedisExecutor>, CliError> {
    let q = open(
        g,
        Config {
            allow_eviction: true,
            ..config
        },
    )
    .await?;
    // (the queue's shards first: a count this client cannot use is an error, not a warning)
    q.layout().await?;
    if let Some(why) = q.eviction_risk().await? {
        eprintln!("crawlq: warning: {why}");
    }
    Ok(q)
}

/// A path argument that may be "-" for standard input.
/// A number of seconds given on the command line, checked the way the library checks every
/// duration (not negative, not NaN, at most 100 years): a usage error, never a panic.
fn seconds(value: f64, what: &str) -> Result<std::time::Duration, error::CliError> {
    crawlq::config::duration_from_number(value, crawlq::Style::Snake).ok_or_else(|| {
        error::CliError::Usage(format!(
            "{what} must be a number of seconds from 0 to 100 years, got {value}"
        ))
    })
}

fn is_stdin(path: &std::path::Path) -> bool {
    path.as_os_str() == "-"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_parsed_by_the_core_option_table() {
        let config = config_from_options(&[
            "max_attempts=7".into(),
            "host_delay=0.25".into(),
            "key_prefix=app".into(),
        ])
        .unwrap();
        assert_eq!(config.max_attempts, 7);
        assert_eq!(config.host_delay, std::time::Duration::from_millis(250));
        assert_eq!(config.key_prefix, "app");
    }

    #[test]
    fn bad_options_are_usage_errors() {
        let err = config_from_options(&["max_attempts".into()]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        let err = config_from_options(&["no_such_option=1".into()]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("no_such_option"), "{err}");
    }

    #[test]
    fn the_command_line_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    /// Every subcommand and every flag or positional says what it is in `--help`.
    #[test]
    fn every_command_and_argument_has_help_text() {
        use clap::CommandFactory;
        fn walk(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in command.get_arguments() {
                let builtin = matches!(arg.get_id().as_str(), "help" | "version");
                if !builtin && arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {}", arg.get_id()));
                }
            }
            for sub in command.get_subcommands() {
                let sub_path = format!("{path} {}", sub.get_name());
                if sub.get_name() != "help" && sub.get_about().is_none() {
                    missing.push(sub_path.clone());
                }
                walk(sub, &sub_path, missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "crawlq", &mut missing);
        assert!(missing.is_empty(), "without help text: {missing:#?}");
    }
}
