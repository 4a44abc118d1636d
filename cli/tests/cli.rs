//! The `crawlq` binary against a real redis-server: each test runs the built executable and
//! checks its output, its exit status and the queue it changed (through the core crate).

#[path = "../../core/tests/common/mod.rs"]
mod common;

use common::{RedisServer, shared, unique};
use crawlq::{
    Config, DelayAfter, HostPacing, LeaseOptions, NackOptions, Queue, RedisExecutor, SeedOptions,
};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

fn crawlq_command(server: &RedisServer, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_crawlq"));
    cmd.env("CRAWLQ_REDIS_URL", server.url())
        .env_remove("CRAWLQ_QUEUE")
        .args(args);
    cmd
}

fn crawlq(args: &[&str]) -> Output {
    crawlq_command(shared(), args).output().expect("run crawlq")
}

fn crawlq_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = crawlq_command(shared(), args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run crawlq");
    // A command that refuses its arguments exits without reading stdin: a broken pipe here
    // is expected then, and the exit status below is what the tests check.
    let _ = child.stdin.take().unwrap().write_all(input);
    child.wait_with_output().unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json_out(out: &Output) -> Value {
    serde_json::from_str(stdout(out).trim())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", stdout(out), stderr(out)))
}

async fn queue(name: &str) -> Queue<RedisExecutor> {
    Queue::connect(&shared().url(), name, Config::default())
        .await
        .unwrap()
}

fn temp_file(name: &str, content: &[u8]) -> TempFile {
    let path = std::env::temp_dir().join(format!(
        "crawlq-cli-{}-{}",
        std::process::id(),
        unique(name)
    ));
    std::fs::write(&path, content).unwrap();
    TempFile(path)
}

/// A file of the system's temporary directory, removed when the test is done with it.
struct TempFile(std::path::PathBuf);

impl std::ops::Deref for TempFile {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for TempFile {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

const SEED_FILE: &[u8] = b"# seeds for the test\n\
https://example.com/a\n\
\n\
HTTPS://EXAMPLE.COM/a#frag\n\
ftp://example.com/file\n\
example.org\n\
   # an indented comment\n\
https://example.net/b\n\
http://exa mple.com/\n\
EXAMPLE.ORG.\n\
\xff\xfe not utf-8\n\
https://example.com/c\n";

#[tokio::test]
async fn seed_reports_exact_counts_and_invalid_line_numbers() {
    let name = unique("seed");
    let file = temp_file("seed.txt", SEED_FILE);
    let out = crawlq(&["-q", &name, "seed", file.to_str().unwrap(), "--json"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "some lines were invalid: {}",
        stderr(&out)
    );
    let summary = json_out(&out);
    assert_eq!(summary["lines"], 12);
    assert_eq!(summary["skipped"], 3, "blank lines and comments");
    assert_eq!(summary["added"], 4, "a, example.org, b, c");
    assert_eq!(summary["duplicates"], 2, "a#frag and EXAMPLE.ORG.");
    assert_eq!(summary["invalid"], 3);
    let err = stderr(&out);
    let path = file.display();
    assert!(
        err.contains(&format!("{path}:5: unsupported_scheme")),
        "{err}"
    );
    assert!(err.contains(&format!("{path}:9: invalid_")), "{err}");
    assert!(
        err.contains(&format!(
            "{path}:11: invalid_url: not a valid URL: not valid UTF-8"
        )),
        "{err}"
    );

    let stats = queue(&name).await.stats().await.unwrap();
    assert_eq!((stats.pending, stats.seen), (4, 4));
    let queued: Vec<String> = queue(&name)
        .await
        .peek(10)
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.url.unwrap_or(i.host))
        .collect();
    assert_eq!(queued.len(), 3, "peek shows one item per host: {queued:?}");
    assert!(queued.contains(&"https://example.com/a".to_string()));
}

/// Which Redis the CLI reaches: `--redis`, else `$CRAWLQ_REDIS_URL`, else `$CRAWLQ_URL` (the
/// adapters' variable), else the local default; a port that refuses shows which was used.
#[tokio::test]
async fn the_redis_url_comes_from_the_flag_then_crawlq_redis_url_then_crawlq_url() {
    let name = unique("url-env");
    queue(&name)
        .await
        .seed(&["https://example.com/env".into()], &SeedOptions::default())
        .await
        .unwrap();
    let dead = "redis://127.0.0.1:1/0";
    let pending = |out: &Output| {
        assert!(out.status.success(), "{}", stderr(out));
        json_out(out)["pending"].as_u64()
    };
    let run = |env: &[(&str, &str)], args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_crawlq"));
        cmd.env_remove("CRAWLQ_REDIS_URL")
            .env_remove("CRAWLQ_URL")
            .env_remove("CRAWLQ_QUEUE")
            .args(["-q", &name, "-o", "connect_timeout=2"])
            .args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().expect("run crawlq")
    };
    let url = shared().url();
    let only_crawlq_url = run(&[("CRAWLQ_URL", &url)], &["stats", "--json"]);
    assert_eq!(pending(&only_crawlq_url), Some(1));
    let both = run(
        &[("CRAWLQ_URL", dead), ("CRAWLQ_REDIS_URL", &url)],
        &["stats", "--json"],
    );
    assert_eq!(
        pending(&both),
        Some(1),
        "CRAWLQ_REDIS_URL before CRAWLQ_URL"
    );
    let flag = run(
        &[("CRAWLQ_URL", dead), ("CRAWLQ_REDIS_URL", dead)],
        &["--redis", &url, "stats", "--json"],
    );
    assert_eq!(pending(&flag), Some(1), "--redis before either variable");
    let refused = run(&[("CRAWLQ_URL", dead)], &["stats", "--json"]);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("127.0.0.1:1"),
        "{}",
        stderr(&refused)
    );
}

#[tokio::test]
async fn seed_into_a_named_crawl() {
    let name = unique("seed-crawl");
    let file = temp_file(
        "crawl.txt",
        b"https://example.com/a\nhttps://example.com/b\n",
    );
    let path = file.to_str().unwrap();
    let out = crawlq(&["-q", &name, "seed", path, "--crawl", "news", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json_out(&out)["added"], 2);
    // the same URLs: duplicates in that crawl, new in the default one
    let again = crawlq(&["-q", &name, "seed", path, "--crawl", "news", "--json"]);
    assert_eq!(json_out(&again)["duplicates"], 2);
    let default = crawlq(&["-q", &name, "seed", path, "--json"]);
    assert_eq!(json_out(&default)["added"], 2);
    let q = queue(&name).await;
    let news = q.crawl_stats("news").await.unwrap();
    assert_eq!((news.pending(), news.seen, news.seeded_total), (2, 2, 2));
    let leased = q.lease(10, std::time::Duration::ZERO).await.unwrap();
    assert!(leased.iter().any(|l| l.crawl.as_deref() == Some("news")));
    // a name out of its rules is refused, nothing seeded
    let bad = crawlq(&["-q", &name, "seed", path, "--crawl", "a:b"]);
    assert_ne!(bad.status.code(), Some(0));
    assert!(stderr(&bad).contains("crawl name"), "{}", stderr(&bad));
    assert_eq!(q.stats().await.unwrap().seen, 4);
}

#[tokio::test]
async fn crawls_are_listed_capped_paused_resumed_and_deleted() {
    let name = unique("crawls-cmd");
    let file = temp_file(
        "crawls.txt",
        b"https://a.example/1\nhttps://b.example/1\nhttps://c.example/1\n",
    );
    let path = file.to_str().unwrap();
    for crawl in ["news", "shop"] {
        let out = crawlq(&["-q", &name, "seed", path, "--crawl", crawl]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let ls = crawlq(&["-q", &name, "crawls", "ls"]);
    let text = String::from_utf8_lossy(&ls.stdout).to_string();
    assert!(text.starts_with("2 crawls"), "{text}");
    let shown = crawlq(&["-q", &name, "crawls", "show", "news"]);
    let news = String::from_utf8_lossy(&shown.stdout).to_string();
    assert!(news.contains("hosts    3\n"), "{news}");
    assert!(news.contains("oldest   "), "{news}");
    assert!(
        news.contains("rates    0.00/s done, ") && news.contains("/s seeded (the last minute)"),
        "{news}"
    );
    let shown = crawlq(&["-q", &name, "crawls", "show", "news", "--json"]);
    assert_eq!(json_out(&shown)["hosts"], 3);
    // its three seeds of this minute (or of the minute before, weighed by what is left of it)
    let seeded = json_out(&shown)["seeded_per_second"].as_f64().unwrap();
    assert!(seeded > 0.0 && seeded <= 0.05, "{seeded}");
    assert_eq!(json_out(&shown)["done_per_second"], 0.0);
    assert!(json_out(&shown)["oldest_pending_age"].is_number());
    assert!(text.contains("news") && text.contains("shop"), "{text}");
    let capped = crawlq(&["-q", &name, "crawls", "cap", "news", "2", "--json"]);
    assert_eq!(capped.status.code(), Some(0), "{}", stderr(&capped));
    assert_eq!(json_out(&capped)["cap"], 2);
    let bad = crawlq(&["-q", &name, "crawls", "cap", "news", "lots"]);
    assert_ne!(bad.status.code(), Some(0));
    assert!(stderr(&bad).contains("not a cap"), "{}", stderr(&bad));
    let zero = crawlq(&["-q", &name, "crawls", "cap", "news", "0"]);
    assert_ne!(zero.status.code(), Some(0));
    assert!(stderr(&zero).contains("at least 1"), "{}", stderr(&zero));
    let weighed = crawlq(&["-q", &name, "crawls", "weight", "shop", "3", "--json"]);
    assert_eq!(weighed.status.code(), Some(0), "{}", stderr(&weighed));
    assert_eq!(json_out(&weighed)["weight"], 3);
    let rated = crawlq(&["-q", &name, "crawls", "rate", "shop", "2.5", "--json"]);
    assert_eq!(rated.status.code(), Some(0), "{}", stderr(&rated));
    assert_eq!(json_out(&rated)["rate"], 2.5);
    let budget = crawlq(&["-q", &name, "crawls", "budget", "shop", "100", "--json"]);
    assert_eq!(budget.status.code(), Some(0), "{}", stderr(&budget));
    assert_eq!(json_out(&budget)["host_budget"], 100);
    let shown = crawlq(&["-q", &name, "crawls", "show", "shop"]);
    let text = String::from_utf8_lossy(&shown.stdout).to_string();
    assert!(text.contains("100 URLs a host"), "{text}");
    let bad = crawlq(&["-q", &name, "crawls", "budget", "shop", "-1"]);
    assert_ne!(bad.status.code(), Some(0));
    let none = crawlq(&["-q", &name, "crawls", "budget", "shop", "none", "--json"]);
    assert_eq!(json_out(&none)["host_budget"], serde_json::Value::Null);
    let paused = crawlq(&["-q", &name, "crawls", "pause", "shop"]);
    assert_eq!(paused.status.code(), Some(0), "{}", stderr(&paused));
    let q = queue(&name).await;
    assert!(q.crawl_stats("shop").await.unwrap().paused);
    let lines = crawlq(&["-q", &name, "crawls", "ls", "--json"]);
    let rows: Vec<serde_json::Value> = String::from_utf8_lossy(&lines.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[1]["crawl"].as_str(), rows[1]["paused"].as_bool()),
        (Some("shop"), Some(true))
    );
    let resumed = crawlq(&["-q", &name, "crawls", "resume", "shop"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert!(!q.crawl_stats("shop").await.unwrap().paused);
    // the mark a deletion leaves while it runs (or once stopped part-way) is shown
    let base = q.ops().keys().base().to_string();
    shared().cli(&["HSET", &format!("{base}:crawlcfg"), "news", ":d"]);
    let shown = crawlq(&["-q", &name, "crawls", "show", "news"]);
    let text = String::from_utf8_lossy(&shown.stdout).to_string();
    assert!(text.contains("being deleted"), "{text}");
    let shown = crawlq(&["-q", &name, "crawls", "show", "news", "--json"]);
    assert_eq!(
        (&json_out(&shown)["deleting"], &json_out(&shown)["paused"]),
        (&json!(true), &json!(true))
    );
    let rm = crawlq(&["-q", &name, "crawls", "rm", "news", "--json"]);
    assert_eq!(rm.status.code(), Some(0), "{}", stderr(&rm));
    assert_eq!(json_out(&rm)["removed"], 3);
    let shown = crawlq(&["-q", &name, "crawls", "show", "news", "--json"]);
    assert_eq!(json_out(&shown)["deleting"], json!(false));
    // (its recent counts went with it)
    assert_eq!(json_out(&shown)["seeded_per_second"], 0.0);
    assert_eq!(q.crawls().await.unwrap(), ["shop"]);
    assert_eq!(q.stats().await.unwrap().pending, 3);
}

/// What `crawlq ARGS` draws on a terminal of type `term` (`TERM`): run by `script` on a
/// pseudo-terminal, which copies what the command writes to it (stdout and stderr together).
fn crawlq_on_terminal(term: &str, args: &[&str]) -> String {
    let line = std::iter::once(env!("CARGO_BIN_EXE_crawlq"))
        .chain(args.iter().copied())
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect::<Vec<_>>()
        .join(" ");
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env("CRAWLQ_REDIS_URL", shared().url())
        .env("TERM", term)
        .env_remove("CRAWLQ_QUEUE")
        .stdin(Stdio::null())
        .output()
        .expect("run script (util-linux)");
    let drawn = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{drawn}{}", stderr(&out));
    drawn
}

#[tokio::test]
async fn deletions_draw_their_progress_on_a_terminal_and_nowhere_else() {
    let name = unique("rm-progress");
    let q = queue(&name).await;
    let into_big = SeedOptions {
        crawl: Some("big".into()),
        ..Default::default()
    };
    // 1,500 items: a deletion of several calls
    let urls: Vec<crawlq::SeedItem> = (0..1500)
        .map(|i| format!("http://h{}.example/{i}", i % 30).into())
        .collect();
    q.seed(&urls, &into_big).await.unwrap();
    let drawn = crawlq_on_terminal("xterm", &["-q", &name, "crawls", "rm", "big"]);
    assert!(drawn.contains("deleting crawl big"), "{drawn}");
    assert!(
        drawn.contains("deleted crawl big: 1,500 items removed"),
        "{drawn}"
    );
    // a terminal that cannot redraw a line (TERM=dumb): the result alone
    q.seed(&urls, &into_big).await.unwrap();
    let drawn = crawlq_on_terminal("dumb", &["-q", &name, "crawls", "rm", "big"]);
    assert!(!drawn.contains("deleting"), "{drawn}");
    assert!(drawn.contains("1,500 items removed"), "{drawn}");
    // --quiet: the result alone
    q.seed(&urls, &into_big).await.unwrap();
    let drawn = crawlq_on_terminal("xterm", &["-q", &name, "crawls", "rm", "big", "--quiet"]);
    assert!(!drawn.contains("deleting"), "{drawn}");
    assert!(drawn.contains("1,500 items removed"), "{drawn}");
    // stderr not a terminal: nothing drawn
    q.seed(&urls, &into_big).await.unwrap();
    let out = crawlq(&["-q", &name, "crawls", "rm", "big"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    assert!(stdout(&out).contains("1,500 items removed"));

    // a host: the same
    let host_urls: Vec<crawlq::SeedItem> = (0..1200)
        .map(|i| format!("http://one.example/{i}").into())
        .collect();
    q.seed(&host_urls, &SeedOptions::default()).await.unwrap();
    let drawn = crawlq_on_terminal(
        "xterm",
        &["-q", &name, "hosts", "rm", "one.example", "--forget-seen"],
    );
    assert!(drawn.contains("deleting one.example"), "{drawn}");
    assert!(
        drawn.contains("deleted one.example: 1,200 items removed"),
        "{drawn}"
    );
    q.seed(&host_urls, &SeedOptions::default()).await.unwrap();
    let out = crawlq(&["-q", &name, "hosts", "rm", "one.example", "--quiet"]);
    assert_eq!(stderr(&out), "");
    assert!(stdout(&out).contains("1,200 items removed"));

    // the queue: the same
    let drawn = crawlq_on_terminal("xterm", &["-q", &name, "queue", "rm", "--yes"]);
    assert!(drawn.contains(&format!("deleting queue {name}")), "{drawn}");
    assert!(
        drawn.contains(&format!("deleted queue {name} (")),
        "{drawn}"
    );
    q.seed(&host_urls, &SeedOptions::default()).await.unwrap();
    let out = crawlq(&["-q", &name, "queue", "rm", "--yes", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    assert!(q.stats().await.unwrap().pending == 0);
}

#[tokio::test]
async fn seed_in_small_batches_maps_every_invalid_line_and_writes_them_to_a_file() {
    let name = unique("batches");
    let file = temp_file("batches.txt", SEED_FILE);
    let invalid = temp_file("invalid.tsv", b"");
    let out = crawlq(&[
        "-q",
        &name,
        "seed",
        file.to_str().unwrap(),
        "--batch",
        "2",
        "--invalid-out",
        invalid.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stdout(&out).contains("12 lines"), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("4 added, 2 duplicates, 3 invalid, 3 skipped"),
        "{}",
        stdout(&out)
    );
    assert!(
        !stderr(&out).contains("unsupported_scheme"),
        "invalid lines go to the file only"
    );
    let rows: Vec<Vec<String>> = std::fs::read_to_string(&invalid)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect();
    let lines: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(lines, ["5", "9", "11"]);
    assert_eq!(rows[0][1], "unsupported_scheme");
    assert_eq!(rows[0][3], "ftp://example.com/file");
    assert!(rows.iter().all(|r| r.len() == 4), "{rows:?}");
}

#[tokio::test]
async fn seed_from_stdin_with_priority_delay_payload_and_force() {
    let name = unique("stdin");
    let out = crawlq_stdin(
        &[
            "-q",
            &name,
            "seed",
            "-",
            "--priority",
            "-3",
            "--payload",
            r#"{"depth":1}"#,
        ],
        b"https://a.example/1\nhttps://b.example/1\n",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("<stdin>: 2 lines"),
        "{}",
        stdout(&out)
    );
    let items = queue(&name).await.peek(10).await.unwrap();
    assert_eq!(items.len(), 2);
    assert!(
        items
            .iter()
            .all(|i| i.priority == -3 && i.payload == Some(json!({"depth": 1})))
    );

    let out = crawlq_stdin(
        &["-q", &name, "seed", "-", "--delay", "60", "--json"],
        b"https://c.example/1\n",
    );
    assert_eq!(json_out(&out)["added"], 1);
    let stats = queue(&name).await.stats().await.unwrap();
    assert_eq!((stats.ready, stats.delayed), (2, 1));

    // done items come back only with --force
    let q = queue(&name).await;
    let leases = q.lease(10, Duration::ZERO).await.unwrap();
    q.ack(&leases.iter().map(|l| l.handle()).collect::<Vec<_>>())
        .await
        .unwrap();
    let again = crawlq_stdin(
        &["-q", &name, "seed", "-", "--json"],
        b"https://a.example/1\n",
    );
    assert_eq!(json_out(&again)["duplicates"], 1);
    let forced = crawlq_stdin(
        &["-q", &name, "seed", "-", "--force", "--json"],
        b"https://a.example/1\n",
    );
    assert_eq!(json_out(&forced)["added"], 1);
}

#[tokio::test]
async fn seed_resumes_from_a_line() {
    let name = unique("resume");
    let file = temp_file(
        "resume.txt",
        b"https://r.example/1\nhttps://r.example/2\nhttps://r.example/3\n",
    );
    let out = crawlq(&[
        "-q",
        &name,
        "seed",
        file.to_str().unwrap(),
        "--from-line",
        "2",
        "--json",
    ]);
    let summary = json_out(&out);
    assert_eq!(
        (summary["added"].as_u64(), summary["skipped"].as_u64()),
        (Some(2), Some(1))
    );
    let urls: Vec<_> = queue(&name)
        .await
        .lease(10, Duration::ZERO)
        .await
        .unwrap()
        .into_iter()
        .map(|l| l.url.unwrap())
        .collect();
    assert_eq!(urls, ["https://r.example/2", "https://r.example/3"]);
}

#[tokio::test]
async fn seed_refuses_bad_input_before_touching_the_queue() {
    let name = unique("badinput");
    let deep = format!("{}1{}", "[".repeat(40), "]".repeat(40));
    let cases: [(&[&str], &str); 13] = [
        (&["seed", "/no/such/file"], "cannot read /no/such/file"),
        (&["seed", "/tmp"], "it is a directory"),
        (
            &["seed", "-", "--payload", "{nope"],
            "--payload is not JSON",
        ),
        (&["seed", "-", "--payload", &deep], "nested deeper than 32"),
        (&["seed", "-", "--delay", "-1"], "--delay must be"),
        (&["seed", "-", "--delay", "1e16"], "--delay must be"),
        (&["seed", "-", "--delay", "1e20"], "--delay must be"),
        (&["seed", "-", "--delay", "NaN"], "--delay must be"),
        (&["seed", "-", "--priority", "40000"], "priority"),
        (&["seed"], "FILE"),
        (&["host-delay", "example.com", "1e300"], "the delay must be"),
        (&["host-delay", "example.com", "inf"], "the delay must be"),
        (&["stats", "--watch", "1e300"], "--watch must be"),
    ];
    for (args, message) in cases {
        let mut full = vec!["-q", name.as_str()];
        full.extend_from_slice(args);
        let out = crawlq_stdin(&full, b"https://x.example/\n");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
    }
    assert_eq!(queue(&name).await.stats().await.unwrap().seen, 0);
}

#[tokio::test]
async fn stats_of_a_name_never_used_says_so_beside_its_zeros() {
    let name = unique("never-used");
    for args in [
        &["-q", &name, "stats"][..],
        &["-q", &name, "stats", "--json"],
    ] {
        let out = crawlq(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!(
                "queue {name} holds nothing and has no record of an item"
            )) && stderr(&out).contains("crawlq queue ls"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // the figures on stdout are as for any empty queue
    assert_eq!(
        json_out(&crawlq(&["-q", &name, "stats", "--json"]))["pending"],
        0
    );
    // a queue that held items and was drained is not a name never used
    let q = queue(&name).await;
    q.seed(
        &common::items(&["https://n.example/1"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let lease = q.lease(1, Duration::ZERO).await.unwrap();
    q.ack(&[lease[0].handle()]).await.unwrap();
    let out = crawlq(&["-q", &name, "stats"]);
    assert!(
        !stderr(&out).contains("no record of an item"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn stats_as_table_json_and_watch() {
    let name = unique("stats");
    let q = queue(&name).await;
    q.seed(
        &common::items(&[
            "https://s.example/1",
            "https://s.example/2",
            "https://t.example/1",
        ]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let lease = q.lease(1, Duration::ZERO).await.unwrap();
    q.ack(&[lease[0].handle()]).await.unwrap();

    let table = stdout(&crawlq(&["-q", &name, "stats"]));
    let row = |label: &str| -> String {
        table
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label} row in\n{table}"))
            .split_whitespace()
            .nth(label.split_whitespace().count())
            .unwrap()
            .to_string()
    };
    assert_eq!(row("pending"), "2");
    assert_eq!(row("done"), "1");
    assert_eq!(row("seen"), "3");
    assert!(table.contains("ready 2, delayed 0"), "{table}");

    let out = crawlq(&["-q", &name, "stats"]);
    assert!(
        !stderr(&out).contains("no record of an item"),
        "{}",
        stderr(&out)
    );
    let stats = json_out(&crawlq(&["-q", &name, "stats", "--json"]));
    assert_eq!(stats["pending"], 2);
    assert_eq!(stats["acked_total"], 1);
    assert!(stats["oldest_pending_age"].is_number());

    // --watch --json prints one JSON line per refresh until stopped
    let mut child = crawlq_command(
        shared(),
        &["-q", &name, "stats", "--watch", "0.1", "--json"],
    )
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    q.seed(
        &common::items(&["https://u.example/1"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let mut last = first.clone();
    for _ in 0..50 {
        last = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        if last["pending"] == 3 {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(first["pending"], 2);
    assert_eq!(last["pending"], 3, "the watch saw the new item");

    // the table form prints a block per refresh, with rates from the second one on
    let mut child = crawlq_command(shared(), &["-q", &name, "stats", "--watch", "0.1"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut text = String::new();
    let mut buf = [0u8; 4096];
    while text.matches("queue ").count() < 3 {
        let n = out.read(&mut buf).unwrap();
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(text.contains("/s"), "rates after the first refresh: {text}");
    assert_eq!(
        crawlq(&["-q", &name, "stats", "--watch", "0"])
            .status
            .code(),
        Some(2)
    );
}

#[tokio::test]
async fn dead_letters_list_requeue_and_purge() {
    let name = unique("dead");
    let q = queue(&name).await;
    q.seed(
        &common::items(&[
            "https://d1.example/x",
            "https://d2.example/y",
            "https://d3.example/z",
        ]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let leases = q.lease(3, Duration::ZERO).await.unwrap();
    let nacks: Vec<_> = leases
        .iter()
        .map(|l| {
            (
                l.handle(),
                NackOptions {
                    retry: false,
                    reason: Some(format!("HTTP 404 for {}", l.id)),
                    ..NackOptions::default()
                },
            )
        })
        .collect();
    q.nack(&nacks).await.unwrap();

    let listed = json_out(&crawlq(&["-q", &name, "dead", "list", "--json"]));
    assert_eq!(listed["total"], 3);
    let ids: Vec<String> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        listed["items"][0]["last_error"],
        format!("HTTP 404 for {}", ids[0])
    );
    let table = stdout(&crawlq(&[
        "-q", &name, "dead", "list", "--limit", "2", "--offset", "1",
    ]));
    assert!(
        table.contains(&format!("HTTP 404 for {}", ids[1]))
            && table.contains("https://d2.example/y"),
        "{table}"
    );
    assert!(table.contains("2 of 3 dead letters (from 1)"), "{table}");

    let out = crawlq(&["-q", &name, "dead", "requeue", &ids[0]]);
    assert_eq!(stdout(&out).trim(), "requeued 1 of 1 dead letters");
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.dead, stats.ready), (2, 1));
    assert_eq!(
        crawlq(&["-q", &name, "dead", "requeue"]).status.code(),
        Some(2),
        "needs ids or --all"
    );

    let refused = crawlq(&["-q", &name, "dead", "purge"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("not purging 2 dead letters without --yes"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(q.stats().await.unwrap().dead, 2);
    // by id: needs --yes too; an id that is not a dead letter (requeued above) is reported
    let refused = crawlq(&["-q", &name, "dead", "purge", &ids[1]]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let out = crawlq(&["-q", &name, "dead", "purge", "--yes", &ids[1], &ids[0]]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "purged 1 of 2 dead letters");
    assert!(stderr(&out).contains(&ids[0]), "{}", stderr(&out));
    assert_eq!(q.stats().await.unwrap().dead, 1);
    assert_eq!(
        stdout(&crawlq(&["-q", &name, "dead", "purge", "--yes"])).trim(),
        "purged 1 dead letters"
    );
    assert_eq!(q.stats().await.unwrap().dead, 0);

    q.seed(
        &common::items(&["https://d4.example/w"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let lease = q.lease(1, Duration::ZERO).await.unwrap();
    let lease = lease
        .iter()
        .find(|l| l.host == "d4.example")
        .cloned()
        .unwrap_or_else(|| lease[0].clone());
    q.nack(&[(
        lease.handle(),
        NackOptions {
            retry: false,
            ..NackOptions::default()
        },
    )])
    .await
    .unwrap();
    assert_eq!(
        stdout(&crawlq(&["-q", &name, "dead", "requeue", "--all"])).trim(),
        "requeued 1 dead letters"
    );
}

#[tokio::test]
async fn reclaim_requeues_expired_leases_and_dead_letters_past_max_attempts() {
    let name = unique("reclaim");
    let short = Config {
        lease_ttl: Duration::from_millis(50),
        ..Config::default()
    };
    let q = Queue::connect(&shared().url(), &name, short).await.unwrap();
    q.seed(
        &common::items(&["https://e1.example/", "https://e2.example/"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(q.lease(2, Duration::ZERO).await.unwrap().len(), 2);
    tokio::time::sleep(Duration::from_millis(120)).await;
    let r = json_out(&crawlq(&["-q", &name, "reclaim", "--limit", "1", "--json"]));
    assert_eq!(
        (
            r["requeued"].as_u64(),
            r["dead"].as_u64(),
            r["remaining"].as_u64()
        ),
        (Some(1), Some(0), Some(1))
    );
    let text = stdout(&crawlq(&["-q", &name, "-o", "max_attempts=1", "reclaim"]));
    assert!(text.contains("0 requeued, 1 dead-lettered"), "{text}");
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.ready, stats.dead, stats.leased), (1, 1, 0));
}

#[tokio::test]
async fn host_delay_shows_sets_and_clears_an_override() {
    let name = unique("hostdelay");
    let q = queue(&name).await;
    q.seed(
        &common::items(&["https://h.example/1"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let text = stdout(&crawlq(&[
        "-q",
        &name,
        "host-delay",
        "https://H.example/any",
        "2.5",
    ]));
    assert!(text.starts_with("h.example: delay 2.5s"), "{text}");
    assert_eq!(
        q.host_info("h.example").await.unwrap().delay_override_ms,
        Some(2500)
    );
    let shown = json_out(&crawlq(&["-q", &name, "host-delay", "h.example", "--json"]));
    assert_eq!(shown["delay"], 2.5);
    assert_eq!(shown["ready"], 1);
    crawlq(&["-q", &name, "host-delay", "h.example", "default"]);
    assert_eq!(
        q.host_info("h.example").await.unwrap().delay_override_ms,
        None
    );
    let bad = crawlq(&["-q", &name, "host-delay", "h.example", "soon"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("not a delay"), "{}", stderr(&bad));
    let bad_host = crawlq(&["-q", &name, "host-delay", "ex ample", "1"]);
    assert_eq!(bad_host.status.code(), Some(2), "{}", stderr(&bad_host));
}

#[tokio::test]
async fn hosts_pause_resume_and_show() {
    let name = unique("hosts");
    let q = queue(&name).await;
    q.seed(
        &common::items(&["https://p.example/1", "https://o.example/1"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let text = stdout(&crawlq(&[
        "-q",
        &name,
        "hosts",
        "pause",
        "https://P.example/x",
    ]));
    assert!(text.starts_with("p.example: "), "{text}");
    assert!(text.contains("1 ready, paused until resumed"), "{text}");
    assert!(q.host_info("p.example").await.unwrap().paused);
    let leases = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(leases.len(), 1);
    assert_eq!(leases[0].host, "o.example");

    let shown = json_out(&crawlq(&[
        "-q",
        &name,
        "hosts",
        "pause",
        "p.example",
        "--for",
        "90",
        "--json",
    ]));
    assert_eq!(shown["paused"], true);
    assert!(shown["paused_until"].as_f64().is_some(), "{shown}");
    let text = stdout(&crawlq(&["-q", &name, "hosts", "show", "p.example"]));
    assert!(
        text.contains("paused, ends in 1m 30s") || text.contains("paused, ends in 1m 29s"),
        "{text}"
    );

    let text = stdout(&crawlq(&["-q", &name, "hosts", "resume", "p.example"]));
    assert!(text.contains("1 ready, leasable now"), "{text}");
    assert!(!q.host_info("p.example").await.unwrap().paused);
    assert_eq!(q.lease(10, Duration::ZERO).await.unwrap().len(), 1);

    let bad = crawlq(&["-q", &name, "hosts", "pause", "p.example", "--for", "-1"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("--for must be"), "{}", stderr(&bad));
    let bad_host = crawlq(&["-q", &name, "hosts", "resume", "ex ample"]);
    assert_eq!(bad_host.status.code(), Some(2), "{}", stderr(&bad_host));

    // list and delete hosts
    // o.example and p.example hold one leased item each: same count, then by name
    let text = stdout(&crawlq(&["-q", &name, "hosts", "ls", "--limit", "1"]));
    assert!(text.contains("2 hosts hold items"), "{text}");
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(2)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0][..6],
        ["o.example", "1", "0", "0", "1", "0"],
        "{text}"
    );
    assert_eq!(rows[1][..4], ["more:", "crawlq", "hosts", "ls"], "{text}");
    let listed = json_out(&crawlq(&[
        "-q", &name, "hosts", "ls", "--json", "--cursor", rows[1][5],
    ]));
    assert_eq!(listed["hosts"][0]["host"], "p.example", "{listed}");
    assert_eq!(listed["hosts"][0]["leased"], 1, "{listed}");
    assert_eq!(listed["total"], 2, "{listed}");
    assert!(listed["cursor"].is_null(), "{listed}");
    let all = stdout(&crawlq(&[
        "-q", &name, "hosts", "ls", "--all", "--limit", "1",
    ]));
    assert!(
        all.contains("o.example") && all.contains("p.example") && !all.contains("more:"),
        "{all}"
    );
    let bad = crawlq(&["-q", &name, "hosts", "ls", "--cursor", "x"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    let bad = crawlq(&["-q", &name, "hosts", "ls", "--limit", "0"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));

    // budgets: a host's own, the queue's default
    let text = stdout(&crawlq(&["-q", &name, "hosts", "budget", "p.example", "1"]));
    assert!(text.contains("budget 1 (0 used, 1 left)"), "{text}");
    let report = q
        .seed(
            &common::items(&["https://p.example/2", "https://p.example/3"]),
            &SeedOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(report.invalid.len(), 1);
    assert_eq!(report.invalid[0].reason.code(), "budget_exhausted");
    let shown = json_out(&crawlq(&[
        "-q",
        &name,
        "hosts",
        "budget",
        "p.example",
        "--json",
    ]));
    assert_eq!(
        (
            &shown["budget"],
            &shown["budget_used"],
            &shown["budget_remaining"]
        ),
        (&json!(1), &json!(1), &json!(0))
    );
    let text = stdout(&crawlq(&[
        "-q",
        &name,
        "hosts",
        "budget",
        "--default",
        "500",
    ]));
    assert_eq!(text.trim(), "default budget: 500 new URLs per host");
    crawlq(&["-q", &name, "hosts", "budget", "p.example", "default"]);
    assert_eq!(q.host_info("p.example").await.unwrap().budget, Some(500));
    let shown = json_out(&crawlq(&[
        "-q",
        &name,
        "hosts",
        "budget",
        "--default",
        "none",
        "--json",
    ]));
    assert_eq!(shown, json!({"default_budget": null}));
    let bad = crawlq(&["-q", &name, "hosts", "budget", "p.example", "-3"]);
    assert_eq!(bad.status.code(), Some(2));
    let bad = crawlq(&["-q", &name, "hosts", "budget", "p.example", "many"]);
    assert!(stderr(&bad).contains("not a budget"), "{}", stderr(&bad));

    // the whole queue: until resumed, or for a time
    let text = stdout(&crawlq(&["-q", &name, "queue", "pause"]));
    assert!(text.contains("until `crawlq queue resume`"), "{text}");
    assert!(q.is_paused().await.unwrap());
    let text = stdout(&crawlq(&["-q", &name, "queue", "pause", "--for", "90"]));
    assert!(
        text.contains("(it was paused already)") && text.contains("for 1m 30s"),
        "{text}"
    );
    assert!(q.is_paused().await.unwrap());
    crawlq(&["-q", &name, "queue", "resume"]);
    assert!(!q.is_paused().await.unwrap());
    let bad = crawlq(&["-q", &name, "queue", "pause", "--for", "-1"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(!q.is_paused().await.unwrap());

    // delete a host: its items and leases go, the others stay
    let before = q.stats().await.unwrap();
    let gone = json_out(&crawlq(&[
        "-q",
        &name,
        "hosts",
        "rm",
        "https://p.example/",
        "--json",
    ]));
    assert_eq!(gone["host"], "p.example", "{gone}");
    assert_eq!(
        gone["removed"],
        gone["ready"].as_u64().unwrap() + gone["leased"].as_u64().unwrap(),
        "{gone}"
    );
    assert!(gone["removed"].as_u64().unwrap() >= 1, "{gone}");
    let after = q.stats().await.unwrap();
    assert_eq!(after.seen, before.seen);
    assert_eq!(
        after.pending + after.leased + gone["removed"].as_u64().unwrap(),
        before.pending + before.leased
    );
    let text = stdout(&crawlq(&["-q", &name, "hosts", "rm", "p.example"]));
    assert!(
        text.starts_with("deleted p.example: 0 items removed"),
        "{text}"
    );
    let text = stdout(&crawlq(&[
        "-q",
        &name,
        "hosts",
        "rm",
        "o.example",
        "--forget-seen",
    ]));
    assert!(text.contains("forgot 1 URLs"), "{text}");
    assert_eq!(q.stats().await.unwrap().seen, after.seen - 1);
    let listed = json_out(&crawlq(&["-q", &name, "hosts", "ls", "--json"]));
    assert!(
        listed["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["host"] != "p.example"),
        "{listed}"
    );
}

#[tokio::test]
async fn leased_lists_the_leases_held_soonest_expiry_first() {
    let name = unique("leased");
    let q = queue(&name).await;
    let empty = stdout(&crawlq(&["-q", &name, "leased"]));
    assert!(
        empty.contains("(nothing leased on this page)") && empty.contains("0 of 0 leased"),
        "{empty}"
    );
    q.seed(
        &common::items(&["https://l1.example/a", "https://l2.example/b", "l3.example"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let long = q.lease(2, Duration::ZERO).await.unwrap();
    let short = q
        .lease_with(&LeaseOptions {
            max: 1,
            wait: Duration::ZERO,
            ttl: Some(Duration::from_secs(5)),
        })
        .await
        .unwrap();
    let listed = json_out(&crawlq(&["-q", &name, "leased", "--json"]));
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[0]["id"], short[0].id.as_str(), "the 5 s lease first");
    assert_eq!(listed[0]["token"], short[0].token);
    assert_eq!(listed[0]["attempt"], 1, "numbered as the worker's lease");
    let expires = listed[0]["expires_at"].as_f64().unwrap();
    assert!(
        (expires * 1000.0 - short[0].expires_at_ms as f64).abs() < 2.0,
        "{expires}"
    );
    let mut rest: Vec<&str> = listed[1..]
        .iter()
        .map(|l| l["id"].as_str().unwrap())
        .collect();
    rest.sort();
    let mut held: Vec<&str> = long.iter().map(|l| l.id.as_str()).collect();
    held.sort();
    assert_eq!(rest, held);
    let table = stdout(&crawlq(&[
        "-q", &name, "leased", "--limit", "1", "--offset", "1",
    ]));
    // (the second lease by expiry is one of the two leased for the queue's lease_ttl)
    let line = table.lines().nth(1).unwrap();
    let second = long
        .iter()
        .find(|l| line.starts_with(&l.id))
        .expect("a long lease");
    let item = second.url.clone().unwrap_or_else(|| second.host.clone());
    assert!(line.contains(" in ") && line.ends_with(&item), "{table}");
    assert!(table.contains("1 of 3 leased"), "{table}");
}

#[tokio::test]
async fn peek_shows_the_next_items_without_leasing() {
    let name = unique("peek");
    let q = queue(&name).await;
    q.seed(
        &common::items(&["https://p1.example/a", "https://p2.example/b"]),
        &SeedOptions {
            priority: 2,
            ..SeedOptions::default()
        },
    )
    .await
    .unwrap();
    let peeked = json_out(&crawlq(&["-q", &name, "peek", "--json"]));
    let urls: Vec<&str> = peeked
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["url"].as_str().unwrap())
        .collect();
    assert_eq!(urls, ["https://p1.example/a", "https://p2.example/b"]);
    assert_eq!(peeked[0]["priority"], 2);
    let table = stdout(&crawlq(&["-q", &name, "peek", "--limit", "1"]));
    assert!(
        table.contains("https://p1.example/a") && !table.contains("p2.example"),
        "{table}"
    );
    assert_eq!(q.stats().await.unwrap().leased, 0);
    let empty = stdout(&crawlq(&["-q", &unique("empty"), "peek"]));
    assert!(empty.contains("(nothing ready)"), "{empty}");

    // one host's items, in lease order, paged
    q.seed(
        &common::items(&["https://p1.example/c", "https://p1.example/d"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let host = json_out(&crawlq(&[
        "-q",
        &name,
        "peek",
        "--host",
        "p1.example",
        "--json",
    ]));
    let urls: Vec<&str> = host
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        urls,
        [
            "https://p1.example/a",
            "https://p1.example/c",
            "https://p1.example/d"
        ]
    );
    let paged = stdout(&crawlq(&[
        "-q",
        &name,
        "peek",
        "--host",
        "https://p1.example/",
        "--offset",
        "1",
        "--limit",
        "1",
    ]));
    assert!(
        paged.contains("https://p1.example/c") && !paged.contains("p1.example/d"),
        "{paged}"
    );
    let out = crawlq(&[
        "-q",
        &name,
        "peek",
        "--host",
        "p1.example",
        "--limit",
        "251",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("at most 250"), "{}", stderr(&out));
    assert_eq!(q.stats().await.unwrap().leased, 0);
}

#[tokio::test]
async fn import_list_moves_a_classic_queue_without_losing_an_item() {
    let server = shared();
    let key = unique("classic");
    let name = unique("imported");
    let processing = format!("{key}:processing");
    // producers LPUSH; the oldest item is at the right end
    server.cli(&["RPUSH", &key,
        r#"{"host":"new.example","ts":1700000003,"attempt":0}"#,
        "not json {",
        r#"{"url":"https://x.example/page","host":"x.example","ts":1700000002,"attempt":1,"depth":2}"#,
        r#"{"host":"old.example","ts":1700000001,"attempt":0}"#,
        r#"{"host":"old.example","ts":1700000000,"attempt":0}"#,
        r#"{"ts":1}"#,
    ]);
    server.cli(&[
        "RPUSH",
        &processing,
        r#"{"host":"inflight.example","ts":1699999999,"attempt":2}"#,
        "https://raw.example/path",
    ]);
    // what an interrupted run left behind
    server.cli(&[
        "RPUSH",
        &format!("{key}:crawlq-import"),
        r#"{"host":"staged.example","ts":1,"attempt":0}"#,
    ]);

    let dry = crawlq(&["-q", &name, "import-list", &key, "--dry-run", "--json"]);
    let report = json_out(&dry);
    assert_eq!(report["dry_run"], true);
    assert_eq!(report["lists"][1]["items"], 6);
    assert_eq!(report["lists"][1]["refused"], 2);
    assert_eq!(server.cli(&["LLEN", &key]), "6", "a dry run moves nothing");

    let out = crawlq(&["-q", &name, "import-list", &key, "--batch", "2", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "two items were refused: {}",
        stderr(&out)
    );
    let report = json_out(&out);
    let lists: Vec<(String, u64, u64, u64, u64)> = report["lists"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["list"].as_str().unwrap().to_string(),
                l["items"].as_u64().unwrap(),
                l["added"].as_u64().unwrap(),
                l["duplicates"].as_u64().unwrap(),
                l["refused"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        lists,
        [
            (format!("{key}:crawlq-import"), 1, 1, 0, 0),
            (key.clone(), 6, 3, 1, 2),
            (processing.clone(), 2, 2, 0, 0),
        ]
    );
    assert_eq!(
        server.cli(&["EXISTS", &key, &processing, &format!("{key}:crawlq-import")]),
        "0"
    );
    let rejected = server.cli(&["LRANGE", &format!("{key}:crawlq-rejected"), "0", "-1"]);
    assert_eq!(
        rejected, "{\"ts\":1}\nnot json {",
        "refused items are kept, unchanged"
    );
    stderr(&out)
        .contains("no \"url\" or \"host\"")
        .then_some(())
        .expect("reasons on stderr");

    let q = queue(&name).await;
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.pending, stats.seen), (6, 6));
    let items = q.peek(10).await.unwrap();
    let x = items.iter().find(|i| i.host == "x.example").unwrap();
    assert_eq!(x.url.as_deref(), Some("https://x.example/page"));
    assert_eq!(
        x.payload,
        Some(json!({"depth": 2})),
        "extra fields become the payload"
    );
    // arrival order is kept: the staged item, then the list from its right (oldest) end
    let id = |host: &str| -> u64 {
        items
            .iter()
            .find(|i| i.host == host)
            .unwrap()
            .id
            .parse()
            .unwrap()
    };
    assert!(id("staged.example") < id("old.example"));
    assert!(id("old.example") < id("x.example") && id("x.example") < id("new.example"));
    assert!(id("new.example") < id("inflight.example"));
    let again = crawlq(&["-q", &name, "import-list", &key]);
    assert_eq!(
        again.status.code(),
        Some(2),
        "the lists are gone: {}",
        stdout(&again)
    );
    assert!(
        stderr(&again).contains("nothing to import"),
        "{}",
        stderr(&again)
    );
}

/// The Grafana dashboard and the alert rules in docs/grafana name only metrics the exporter
/// serves (a renamed metric would leave a panel empty or an alert silent), and each panel and
/// rule queries at least one.
#[tokio::test]
async fn grafana_dashboard_and_alerts_name_only_metrics_the_exporter_serves() {
    let name = unique("grafana");
    // of 2 shards, so that the per-shard series are served too
    let config = Config {
        shards: Some(2),
        ..Config::default()
    };
    let q = Queue::connect(&shared().url(), &name, config)
        .await
        .unwrap();
    q.seed(
        &common::items(&["https://g1.example/"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    // and of a named crawl with a cap, so that the per-crawl series are served too
    q.seed(
        &common::items(&["https://g2.example/"]),
        &SeedOptions {
            crawl: Some("g".into()),
            ..SeedOptions::default()
        },
    )
    .await
    .unwrap();
    q.set_crawl_cap("g", Some(4)).await.unwrap();
    let exporter = Exporter::start(shared(), &[&name]);
    let (status, _, body) = http_get(&exporter.address, "/metrics");
    assert_eq!(status, 200);
    // what a Prometheus scraping this exporter stores: each family's samples (a counter's
    // with `_total`), whether or not this scrape had one of them
    let mut served = std::collections::BTreeSet::new();
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            let (family, kind) = (parts.next().unwrap(), parts.next().unwrap());
            served.insert(if kind == "counter" {
                format!("{family}_total")
            } else {
                family.to_string()
            });
        } else if !line.starts_with('#') && !line.is_empty() {
            served.insert(line.split(['{', ' ']).next().unwrap().to_string());
        }
    }
    let metric = |text: &str| -> Vec<String> {
        let mut found = Vec::new();
        let mut rest = text;
        while let Some(at) = rest.find("crawlq_") {
            let tail = &rest[at..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(tail.len());
            found.push(tail[..end].to_string());
            rest = &tail[end..];
        }
        found
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/grafana");
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("crawlq-dashboard.json")).unwrap())
            .expect("the dashboard is JSON");
    let mut queried = Vec::new();
    let panels = dashboard["panels"].as_array().unwrap();
    assert!(panels.len() >= 10, "a dashboard of {} panels", panels.len());
    for panel in panels {
        let targets = panel["targets"].as_array().unwrap();
        assert!(
            !targets.is_empty(),
            "panel {} queries nothing",
            panel["title"]
        );
        for target in targets {
            let expr = target["expr"].as_str().unwrap();
            let names = metric(expr);
            assert!(!names.is_empty(), "panel {}: {expr}", panel["title"]);
            queried.extend(names);
        }
    }
    let alerts = std::fs::read_to_string(root.join("crawlq-alerts.yml")).unwrap();
    let exprs: Vec<&str> = alerts
        .lines()
        .filter_map(|l| l.trim().strip_prefix("expr: "))
        .collect();
    assert!(exprs.len() >= 5, "{} alert rules", exprs.len());
    for expr in &exprs {
        let names = metric(expr);
        assert!(!names.is_empty(), "alert expr {expr}");
        queried.extend(names);
    }
    // and Prometheus reads the rules (promtool comes with the prometheus package setup.sh
    // installs)
    let checked = std::process::Command::new("promtool")
        .args(["check", "rules"])
        .arg(root.join("crawlq-alerts.yml"))
        .output()
        .expect("promtool runs (apt install prometheus)");
    assert!(
        checked.status.success(),
        "promtool check rules: {}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    let unknown: Vec<&String> = queried.iter().filter(|m| !served.contains(*m)).collect();
    assert!(
        unknown.is_empty(),
        "not served by the exporter: {unknown:?}; served: {served:?}"
    );
    // and the dashboard's queue variable reads a label the exporter sets
    assert!(
        body.contains(&format!("crawlq_up{{queue=\"{name}\"}} 1")),
        "{body}"
    );
}

#[tokio::test]
async fn exporter_says_once_which_named_queue_has_no_record_of_an_item() {
    let unused = unique("metrics-unused");
    let used = unique("metrics-used");
    queue(&used)
        .await
        .seed(
            &common::items(&["https://u.example/"]),
            &SeedOptions::default(),
        )
        .await
        .unwrap();
    let mut exporter = Exporter::start_reading_stderr(shared(), &[&format!("{unused},{used}")]);
    for _ in 0..2 {
        let (status, _, body) = http_get(&exporter.address, "/metrics");
        assert_eq!(status, 200);
        // served as any empty queue
        assert!(
            body.contains(&format!("crawlq_up{{queue=\"{unused}\"}} 1")),
            "{body}"
        );
    }
    let stderr = exporter.stderr_when_stopped();
    let line = format!("queue {unused} holds nothing and has no record of an item");
    assert_eq!(stderr.matches(&line).count(), 1, "{stderr}");
    assert!(stderr.contains("misspelt --queue"), "{stderr}");
    assert!(!stderr.contains(&format!("queue {used} ")), "{stderr}");
}

#[tokio::test]
async fn exporter_serves_prometheus_metrics_per_queue() {
    let a = unique("metrics-a");
    let b = unique("metrics-b");
    let qa = queue(&a).await;
    qa.seed(
        &common::items(&[
            "https://m1.example/",
            "https://m2.example/",
            "https://m3.example/",
        ]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let leases = qa.lease(2, Duration::ZERO).await.unwrap();
    qa.ack(&[leases[0].handle()]).await.unwrap();
    qa.nack(&[(
        leases[1].handle(),
        NackOptions {
            retry: false,
            ..NackOptions::default()
        },
    )])
    .await
    .unwrap();
    // a worker with a known-seen cache seeds a page it has seen twice: Redis answers the first,
    // its cache the second
    let cached = Queue::connect(
        &shared().url(),
        &a,
        Config {
            seen_cache: 100,
            ..Config::default()
        },
    )
    .await
    .unwrap();
    for _ in 0..2 {
        let again = common::items(&["https://m1.example/"]);
        cached.seed(&again, &SeedOptions::default()).await.unwrap();
    }

    let mut exporter = Exporter::start(shared(), &[&format!("{a},{b}")]);
    let (status, content_type, body) = http_get(&exporter.address, "/metrics");
    assert_eq!(status, 200);
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    assert!(body.ends_with("# EOF\n"), "{body}");
    let scrape = prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).unwrap();
    let value = |metric: &str, queue: &str| -> f64 {
        let sample = scrape
            .samples
            .iter()
            .find(|s| s.metric == metric && s.labels.get("queue") == Some(queue))
            .unwrap_or_else(|| panic!("no {metric}{{queue={queue}}} in\n{body}"));
        match sample.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            ref other => panic!("{metric}: unexpected {other:?}"),
        }
    };
    assert_eq!(value("crawlq_up", &a), 1.0);
    assert_eq!(value("crawlq_pending", &a), 1.0);
    assert_eq!(value("crawlq_done", &a), 1.0);
    assert_eq!(value("crawlq_dead", &a), 1.0);
    assert_eq!(value("crawlq_seen", &a), 3.0);
    assert_eq!(value("crawlq_leases_total", &a), 2.0);
    assert_eq!(value("crawlq_acked_total", &a), 1.0);
    assert_eq!(value("crawlq_nacked_total", &a), 1.0);
    assert_eq!(value("crawlq_dead_lettered_total", &a), 1.0);
    assert_eq!(value("crawlq_reclaimed_total", &a), 0.0);
    assert_eq!(value("crawlq_over_budget_total", &a), 0.0);
    assert_eq!(value("crawlq_duplicates_total", &a), 2.0);
    assert_eq!(value("crawlq_seen_cache_hits_total", &a), 1.0);
    assert!(value("crawlq_oldest_pending_age_seconds", &a) >= 0.0);
    // the top hosts' own series (m1.example holds nothing once acked)
    let host_value = |metric: &str, host: &str| -> Option<f64> {
        scrape
            .samples
            .iter()
            .find(|s| {
                s.metric == metric
                    && s.labels.get("queue") == Some(a.as_str())
                    && s.labels.get("host") == Some(host)
            })
            .map(|s| match s.value {
                prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Untyped(v) => v,
                ref other => panic!("{metric}: unexpected {other:?}"),
            })
    };
    assert_eq!(host_value("crawlq_host_items", "m2.example"), Some(1.0));
    assert_eq!(host_value("crawlq_host_dead", "m2.example"), Some(1.0));
    assert_eq!(host_value("crawlq_host_ready", "m3.example"), Some(1.0));
    assert_eq!(host_value("crawlq_host_items", "m1.example"), None);
    assert_eq!(value("crawlq_up", &b), 1.0);
    assert_eq!(value("crawlq_pending", &b), 0.0);
    assert!(body.contains("# TYPE crawlq_acked counter"), "{body}");
    assert!(body.contains("# TYPE crawlq_pending gauge"), "{body}");
    for line in body.lines().filter(|l| l.starts_with("# HELP")) {
        assert!(line.ends_with('.') && !line.ends_with(".."), "{line}");
        assert!(line.len() > 40, "a real help text: {line}");
    }
    let version = format!(
        "crawlq_build_info{{version=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION")
    );
    assert!(body.contains(&version), "{body}");
    let (status, _, health) = http_get(&exporter.address, "/healthz");
    assert_eq!((status, health.as_str()), (200, "ok\n"));

    // each scrape reads fresh figures
    let lease = qa.lease(1, Duration::ZERO).await.unwrap();
    qa.ack(&[lease[0].handle()]).await.unwrap();
    let (_, _, body) = http_get(&exporter.address, "/metrics");
    assert!(
        body.contains(&format!("crawlq_acked_total{{queue=\"{a}\"}} 2")),
        "{body}"
    );
    assert_eq!(http_get(&exporter.address, "/nope").0, 404);
    let status = Command::new("kill")
        .args(["-TERM", &exporter.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(
        exporter.child.wait().unwrap().code(),
        Some(0),
        "SIGTERM stops it cleanly"
    );
}

#[tokio::test]
async fn exporter_serves_series_per_named_crawl() {
    let name = unique("metrics-crawls");
    let q = queue(&name).await;
    for (crawl, n) in [("alpha", 3), ("beta", 2)] {
        let urls: Vec<String> = (0..n)
            .map(|i| format!("https://c{i}.example/{crawl}"))
            .collect();
        let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
        let opts = SeedOptions {
            crawl: Some(crawl.into()),
            ..SeedOptions::default()
        };
        q.seed(&common::items(&urls), &opts).await.unwrap();
    }
    q.set_crawl_cap("alpha", Some(5)).await.unwrap();
    q.pause_crawl("beta").await.unwrap();
    let mut exporter = Exporter::start(shared(), &[&name]);
    let (status, _, body) = http_get(&exporter.address, "/metrics");
    assert_eq!(status, 200);
    let scrape = prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).unwrap();
    let value = |metric: &str, crawl: &str| -> Option<f64> {
        scrape
            .samples
            .iter()
            .find(|s| s.metric == metric && s.labels.get("crawl") == Some(crawl))
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                ref other => panic!("{metric}: unexpected {other:?}"),
            })
    };
    assert_eq!(value("crawlq_crawl_pending", "alpha"), Some(3.0));
    assert_eq!(value("crawlq_crawl_ready", "beta"), Some(2.0));
    assert_eq!(value("crawlq_crawl_seeded_total", "alpha"), Some(3.0));
    assert_eq!(value("crawlq_crawl_cap", "alpha"), Some(5.0));
    assert_eq!(value("crawlq_crawl_cap", "beta"), None, "no cap: no sample");
    assert_eq!(value("crawlq_crawl_paused", "beta"), Some(1.0));
    assert_eq!(value("crawlq_crawl_paused", "alpha"), Some(0.0));
    assert_eq!(value("crawlq_crawl_deleting", "alpha"), Some(0.0));
    assert_eq!(
        value("crawlq_crawl_hosts", "alpha"),
        Some(3.0),
        "c0, c1, c2"
    );
    assert_eq!(value("crawlq_crawl_hosts", "beta"), Some(2.0));
    let age = value("crawlq_crawl_oldest_pending_age_seconds", "alpha");
    assert!(age.is_some_and(|s| (0.0..600.0).contains(&s)), "{age:?}");
    let _ = exporter.child.kill();
    let _ = exporter.child.wait();
    // --max-crawls bounds the series: the first crawls by name
    let mut exporter = Exporter::start_with(shared(), &[&name], &["--max-crawls", "1"]);
    let (_, _, body) = http_get(&exporter.address, "/metrics");
    assert!(body.contains("crawl=\"alpha\""), "{body}");
    assert!(!body.contains("crawl=\"beta\""), "{body}");
    let _ = exporter.child.kill();
    let _ = exporter.child.wait();
}

#[test]
fn exporter_reports_down_while_redis_is_unreachable() {
    let mut server = RedisServer::start();
    let mut exporter = Exporter::start(&server, &["q1"]);
    let (_, _, body) = http_get(&exporter.address, "/metrics");
    assert!(body.contains("crawlq_up{queue=\"q1\"} 1"), "{body}");
    server.stop();
    let (status, _, body) = http_get(&exporter.address, "/metrics");
    assert_eq!(status, 200, "the scrape itself succeeds");
    assert!(body.contains("crawlq_up{queue=\"q1\"} 0"), "{body}");
    assert!(
        !body.contains("crawlq_pending{"),
        "no stale figures while down: {body}"
    );
    let (status, _, health) = http_get(&exporter.address, "/healthz");
    assert_eq!(status, 503, "{health}");
    assert!(health.starts_with("redis: "), "{health}");
    server.restart();
    let mut up = false;
    for _ in 0..50 {
        if http_get(&exporter.address, "/metrics")
            .2
            .contains("crawlq_up{queue=\"q1\"} 1")
        {
            up = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(up, "the exporter reconnects");
    exporter.stop();
}

/// On a server that may evict any key, a queue's first call refuses to go on (CONFIG, exit 2)
/// unless `allow_eviction` is set; the commands that only read show the queue with a warning,
/// and the exporter serves it with `crawlq_redis_evicts` 1.
#[test]
fn reads_go_on_with_a_warning_on_a_server_that_evicts() {
    let server = RedisServer::start();
    assert_eq!(server.cli(&["CONFIG", "SET", "maxmemory", "1gb"]), "OK");
    assert_eq!(
        server.cli(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]),
        "OK"
    );
    let run = |args: &[&str]| crawlq_command(&server, args).output().unwrap();
    let seed = |extra: &[&str]| {
        let mut args = vec!["--queue", "evicts"];
        args.extend_from_slice(extra);
        args.extend(["seed", "-"]);
        let mut child = crawlq_command(&server, &args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _ = child
            .stdin
            .take()
            .unwrap()
            .write_all(b"https://e.example/1\n");
        child.wait_with_output().unwrap()
    };
    let refused = seed(&[]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("allkeys-lru"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(server.cli(&["DBSIZE"]), "0", "nothing written");
    let allowed = seed(&["-o", "allow_eviction=true"]);
    assert_eq!(allowed.status.code(), Some(0), "{}", stderr(&allowed));
    for command in [&["stats", "--json"][..], &["peek"], &["leased"]] {
        let mut args = vec!["--queue", "evicts"];
        args.extend_from_slice(command);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(0), "{command:?}: {}", stderr(&out));
        assert!(
            stderr(&out).starts_with("crawlq: warning: ") && stderr(&out).contains("allkeys-lru"),
            "{command:?}: {}",
            stderr(&out)
        );
        if command[0] == "stats" {
            assert_eq!(json_out(&out)["pending"], 1);
        }
    }
    let exporter = Exporter::start(&server, &["evicts"]);
    let (_, _, body) = http_get(&exporter.address, "/metrics");
    assert!(body.contains("crawlq_up{queue=\"evicts\"} 1"), "{body}");
    assert!(
        body.contains("crawlq_redis_evicts{queue=\"evicts\"} 1"),
        "{body}"
    );
    assert!(
        body.contains("crawlq_pending{queue=\"evicts\"} 1"),
        "{body}"
    );
    // the web console shows the queue with the risk above it, and refuses to change it
    let (mut console, mut console_out, address) = start_console(&server, "evicts");
    let (status, _, page) = http_get(&address, "/q/evicts");
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("<div class=\"value\" id=\"pending\">1</div>"),
        "{page}"
    );
    let warning = page
        .split("id=\"warning\" role=\"alert\">")
        .nth(1)
        .expect(&page);
    assert!(
        warning.contains("allkeys-lru") && warning.contains("refused"),
        "{warning}"
    );
    // every other page of the queue, and the list of queues naming it, shows it too
    let host = "/q/evicts/host/e.example";
    let pages = [
        "/",
        "/q/evicts/hosts",
        host,
        "/q/evicts/crawls",
        "/q/evicts/leased",
        "/q/evicts/dead",
    ];
    let warning_of = |path: &str| {
        let (status, _, page) = http_get(&address, path);
        assert_eq!(status, 200, "{path}: {page}");
        page.split("id=\"warning\" role=\"alert\">")
            .nth(1)
            .map(|w| w.split("</div>").next().unwrap_or_default().to_string())
    };
    for path in pages {
        let warning = warning_of(path).unwrap_or_else(|| panic!("{path}: no warning"));
        assert!(
            warning.contains("allkeys-lru") && warning.contains("refused"),
            "{path}: {warning}"
        );
        if path == "/" {
            assert!(
                warning.starts_with("Queues at risk (evicts): "),
                "{warning}"
            );
        }
    }
    let keys_before = server.cli(&["DBSIZE"]);
    let form = "action=pause-queue&confirm=yes&back=%2Fq%2Fevicts";
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    // (in one write: the console reads the request as it comes)
    let request = format!(
        "POST /q/evicts/action HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
        form.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(
        !answer.starts_with("HTTP/1.0 303") && !answer.starts_with("HTTP/1.1 303"),
        "{answer}"
    );
    assert!(answer.contains("allkeys-lru"), "{answer}");
    let mut line = String::new();
    console_out.read_line(&mut line).unwrap();
    assert!(
        line.contains("action=pause-queue") && line.contains("failed"),
        "{line}"
    );
    assert_eq!(server.cli(&["DBSIZE"]), keys_before, "nothing written");
    assert_eq!(
        server.cli(&["HGET", "crawlq:{evicts}:meta", "paused"]),
        "",
        "not paused"
    );
    // the server made safe: no warning, the gauge at 0
    assert_eq!(
        server.cli(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]),
        "OK"
    );
    let out = run(&["--queue", "evicts", "stats"]);
    assert_eq!((out.status.code(), stderr(&out)), (Some(0), String::new()));
    let (_, _, body) = http_get(&exporter.address, "/metrics");
    assert!(
        body.contains("crawlq_redis_evicts{queue=\"evicts\"} 0"),
        "{body}"
    );
    for path in pages.into_iter().chain(["/q/evicts"]) {
        assert_eq!(warning_of(path), None, "{path}");
    }
    let _ = console.kill();
    let _ = console.wait();
}

#[test]
fn usage_and_connection_errors_have_clear_messages_and_exit_codes() {
    let out = crawlq(&["stats"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("pass --queue NAME or set CRAWLQ_QUEUE"),
        "{}",
        stderr(&out)
    );

    let out = crawlq(&["-q", "a,b", "stats"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("only the exporter takes several"),
        "{}",
        stderr(&out)
    );

    let out = crawlq(&["-q", "x", "-o", "max_atempts=3", "stats"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("max_atempts"), "{}", stderr(&out));

    let out = crawlq(&[
        "-q",
        "x",
        "--redis",
        "redis://127.0.0.1:1/0",
        "-o",
        "connect_timeout=0.5",
        "-o",
        "command_timeout=0.5",
        "stats",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("crawlq: redis unavailable"),
        "{}",
        stderr(&out)
    );

    let out = crawlq(&["-q", "x", "--redis", "http://nope", "stats"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("redis URL"), "{}", stderr(&out));

    let out = crawlq(&["-q", "x", "exporter", "--listen", "256.0.0.1:1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("cannot listen on 256.0.0.1:1"),
        "{}",
        stderr(&out)
    );

    let out = crawlq(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn seeding_surfaces_redis_dying_mid_file_with_where_to_resume() {
    let mut server = RedisServer::start();
    let lines: String = (0..50_000)
        .map(|i| format!("https://dying{}.example/{i}\n", i % 100))
        .collect();
    let file = temp_file("dying.txt", lines.as_bytes());
    let child = crawlq_command(
        &server,
        &[
            "-q",
            "dying",
            "-o",
            "connect_timeout=0.3",
            // each attempt gives up within 0.5 s: the test waits for the retries, not the default 10 s
            "-o",
            "command_timeout=0.5",
            "seed",
            file.to_str().unwrap(),
            "--batch",
            "1000",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // stop the server once part of the file is in
    for _ in 0..200 {
        if server.cli(&["DBSIZE"]).parse::<u64>().unwrap_or(0) > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    server.stop();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout: {}\nstderr: {}",
        stdout(&out),
        stderr(&out)
    );
    let err = stderr(&out);
    assert!(err.contains("retrying"), "retried first: {err}");
    assert!(err.contains("resume with --from-line"), "{err}");
}

struct Exporter {
    child: Child,
    address: String,
}

impl Exporter {
    fn start(server: &RedisServer, queues: &[&str]) -> Exporter {
        Exporter::start_with(server, queues, &[])
    }

    fn start_with(server: &RedisServer, queues: &[&str], extra: &[&str]) -> Exporter {
        Exporter::spawn(server, queues, extra, Stdio::null())
    }

    /// An exporter whose stderr `stderr_when_stopped` reads.
    fn start_reading_stderr(server: &RedisServer, queues: &[&str]) -> Exporter {
        Exporter::spawn(server, queues, &[], Stdio::piped())
    }

    /// Stops the exporter and answers what it wrote on stderr.
    fn stderr_when_stopped(&mut self) -> String {
        self.stop();
        let mut text = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            std::io::Read::read_to_string(&mut err, &mut text).unwrap();
        }
        text
    }

    fn spawn(server: &RedisServer, queues: &[&str], extra: &[&str], stderr: Stdio) -> Exporter {
        let mut args = vec![];
        for q in queues {
            args.extend(["--queue", q]);
        }
        args.extend_from_slice(extra);
        args.extend([
            "-o",
            "connect_timeout=0.5",
            "-o",
            "command_timeout=0.5",
            "exporter",
            "--listen",
            "127.0.0.1:0",
        ]);
        // exporter options after the subcommand
        if let Some(at) = args.iter().position(|a| *a == "--discover") {
            let moved: Vec<&str> = args.drain(at..at + 4).collect();
            args.extend(moved);
        }
        if let Some(at) = args.iter().position(|a| *a == "--max-crawls") {
            let moved: Vec<&str> = args.drain(at..at + 2).collect();
            args.extend(moved);
        }
        let mut child = crawlq_command(server, &args)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let address = line
            .trim()
            .strip_suffix("/metrics")
            .and_then(|l| l.rsplit("http://").next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Exporter { child, address }
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `crawlq -q QUEUE web` on a free port: the process, its standard output after the line that
/// gives its address (the console logs each action there: keep it open while actions run), and
/// the address.
fn start_console(
    server: &RedisServer,
    queue: &str,
) -> (Child, BufReader<std::process::ChildStdout>, String) {
    let mut console = crawlq_command(server, &["-q", queue, "web", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(console.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let address = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    (console, out, address)
}

/// A plain HTTP/1.0 GET: (status, content type, body).
fn http_get(address: &str, path: &str) -> (u16, String, String) {
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let content_type = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Type: "))
        .unwrap_or_default()
        .to_string();
    (status, content_type, body.to_string())
}

/// A queue of 8 shards over a Redis Cluster: seeded by the CLI (`-o shards=8` fixes the count),
/// its stats per shard in the table, the JSON and the exporter; later commands find the count
/// without the option.
#[tokio::test]
async fn a_sharded_queue_over_a_cluster() {
    let cluster = common::Cluster::start(3, 0);
    let node = &cluster.nodes[0];
    let name = unique("sharded");
    let urls: String = (0..200)
        .map(|i| format!("https://h{}.cluster.example/{i}\n", i % 40))
        .collect();
    let mut seed = crawlq_command(node, &["-q", &name, "-o", "shards=8", "seed", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    seed.stdin
        .take()
        .unwrap()
        .write_all(urls.as_bytes())
        .unwrap();
    let out = seed.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = crawlq_command(node, &["-q", &name, "stats", "--json"])
        .output()
        .unwrap();
    let stats = json_out(&out);
    assert_eq!(stats["pending"], 200);
    let shards = stats["shards"].as_array().unwrap();
    assert_eq!(shards.len(), 8);
    assert_eq!(
        shards
            .iter()
            .map(|s| s["pending"].as_u64().unwrap())
            .sum::<u64>(),
        200
    );
    // each shard's node: the spread tags put at least 2 of the 8 on each of the 3 masters
    let mut per_node: std::collections::HashMap<String, u32> = Default::default();
    for shard in shards {
        *per_node
            .entry(shard["node"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    assert!(
        per_node.len() == 3 && per_node.values().all(|&n| n >= 2),
        "{per_node:?}"
    );
    let out = crawlq_command(node, &["-q", &name, "stats"])
        .output()
        .unwrap();
    assert!(stdout(&out).contains("shards (8)"), "{}", stdout(&out));
    assert!(
        per_node.keys().all(|n| stdout(&out).contains(n.as_str())),
        "every node in the table: {}",
        stdout(&out)
    );
    let out = crawlq_command(node, &["queue", "ls"]).output().unwrap();
    let line = stdout(&out)
        .lines()
        .find(|l| l.starts_with(name.as_str()))
        .map(str::to_string)
        .unwrap_or_default();
    assert!(
        per_node
            .iter()
            .all(|(n, count)| line.contains(&format!("{n} ({count})"))),
        "queue ls shows how the shards spread: {line}"
    );
    let out = crawlq_command(node, &["-q", &name, "-o", "shards=4", "stats"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "another count is a usage error: {}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("has 8 shards"), "{}", stderr(&out));

    let mut exporter = Exporter::start(node, &[&name]);
    let (status, _, body) = http_get(&exporter.address, "/metrics");
    assert_eq!(status, 200);
    let per_shard: Vec<&str> = body
        .lines()
        .filter(|l| l.starts_with("crawlq_shard_pending{"))
        .collect();
    assert_eq!(per_shard.len(), 8, "{body}");
    assert!(
        per_shard
            .iter()
            .all(|l| l.contains(&format!("queue=\"{name}\"")))
    );
    assert!(
        body.contains(&format!("crawlq_pending{{queue=\"{name}\"}} 200")),
        "{body}"
    );
    let _ = exporter.child.kill();
    let _ = exporter.child.wait();

    // the web console over the cluster: the queue page's figures and its table of 8 shards
    let (mut console, _, address) = start_console(node, &name);
    let (status, _, page) = http_get(&address, &format!("/q/{name}"));
    let _ = console.kill();
    let _ = console.wait();
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("<div class=\"value\" id=\"pending\">200</div>"),
        "{page}"
    );
    let shard_table = page.split("<table id=\"shards\">").nth(1).expect(&page);
    let shard_table = shard_table.split("</table>").next().unwrap();
    assert_eq!(shard_table.matches("<tr><td>").count(), 8, "{shard_table}");
}

#[tokio::test]
async fn dead_show_and_requeue_report_unknown_ids_with_status_4() {
    let name = unique("dead-ids");
    let q = queue(&name).await;
    q.seed(
        &["https://a.example/1".into(), "https://b.example/2".into()],
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let leases = q.lease(2, Duration::ZERO).await.unwrap();
    common::dead_letter(&q, &leases, |_| "HTTP 410".to_string()).await;
    let id = leases[0].id.clone();

    let out = crawlq(&["-q", &name, "dead", "show", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("dead letter {id}")) && text.contains("HTTP 410"),
        "{text}"
    );
    assert!(text.contains(leases[0].url.as_deref().unwrap()), "{text}");

    let out = crawlq(&["-q", &name, "dead", "show", "9999", &id, "--json"]);
    assert_eq!(out.status.code(), Some(4));
    let shown = json_out(&out);
    assert_eq!(shown[0], Value::Null);
    assert_eq!(shown[1]["id"], json!(id));
    assert!(stderr(&out).contains("9999"), "{}", stderr(&out));

    let out = crawlq(&["-q", &name, "dead", "requeue", &id, "9999"]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "the unknown id makes the status 4"
    );
    assert!(stdout(&out).contains("requeued 1 of 2"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("9999") && !stderr(&out).contains(&format!(" {id},")),
        "{}",
        stderr(&out)
    );
    let s = q.stats().await.unwrap();
    assert_eq!((s.dead, s.pending), (1, 1), "the known id was requeued");
    let out = crawlq(&["-q", &name, "dead", "requeue", &id]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "requeued already: not a dead letter any more"
    );
}

#[tokio::test]
async fn queue_ls_lists_queues_and_rm_deletes_one_after_confirmation() {
    let prefix = unique("cli-catalog");
    let option = format!("key_prefix={prefix}");
    let config = Config {
        key_prefix: prefix.clone(),
        ..Config::default()
    };
    let a = Queue::connect(&shared().url(), "alpha", config.clone())
        .await
        .unwrap();
    let b = Queue::connect(&shared().url(), "beta", config.clone())
        .await
        .unwrap();
    a.seed(
        &["https://a.example/".into(), "https://b.example/".into()],
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    b.seed(&["https://c.example/".into()], &SeedOptions::default())
        .await
        .unwrap();

    let out = crawlq(&["-o", &option, "queue", "ls", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed = json_out(&out);
    let names: Vec<_> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["name"].clone())
        .collect();
    assert_eq!(names, [json!("alpha"), json!("beta")]);
    assert_eq!(listed[0]["stats"]["pending"], 2);
    let table = stdout(&crawlq(&["-o", &option, "queue", "ls"]));
    assert!(
        table.contains("alpha") && table.contains("2 queues"),
        "{table}"
    );

    let out = crawlq(&["-o", &option, "queue", "rm", "alpha"]);
    assert_eq!(out.status.code(), Some(2), "no --yes: refused");
    assert!(stderr(&out).contains("--yes"), "{}", stderr(&out));
    assert_eq!(a.stats().await.unwrap().pending, 2);

    let out = crawlq(&["-o", &option, "queue", "rm", "alpha", "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("deleted queue alpha"),
        "{}",
        stdout(&out)
    );
    assert_eq!(a.stats().await.unwrap().pending, 0);
    assert_eq!(b.stats().await.unwrap().pending, 1, "the other queue stays");
    let out = crawlq(&["-o", &option, "queue", "rm", "alpha", "--yes"]);
    assert_eq!(out.status.code(), Some(4), "nothing left to delete");
}

#[test]
fn import_list_refuses_a_key_that_is_not_a_list_or_does_not_exist_in_one_line() {
    let server = shared();
    let key = unique("scrapy-like");
    server.cli(&["ZADD", &key, "0", "a-request"]);
    let out = crawlq(&["-q", "imported", "import-list", &key]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "one clear error: {err}");
    assert!(
        err.contains(&format!("{key} is a zset, not a list")),
        "{err}"
    );
    assert!(
        !err.contains("crawlq-import"),
        "no staging list is named: {err}"
    );
    assert_eq!(server.cli(&["ZCARD", &key]), "1", "nothing moved");

    let out = crawlq(&["-q", "imported", "import-list", &unique("missing")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("nothing to import"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn completions_are_printed_for_each_shell() {
    for (shell, marker) in [
        ("bash", "_crawlq()"),
        ("zsh", "#compdef crawlq"),
        ("fish", "complete -c crawlq"),
    ] {
        let out = crawlq(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        assert!(
            script.contains(marker),
            "{shell}: {}",
            &script[..script.len().min(200)]
        );
        assert!(
            script.contains("host-delay") && script.contains("import-list"),
            "{shell}"
        );
    }
}

#[tokio::test]
async fn exporter_discovers_queues_by_pattern_and_reports_health() {
    let prefix = unique("discover");
    let config = Config {
        key_prefix: prefix.clone(),
        ..Config::default()
    };
    for name in ["crawl-news", "crawl-shop", "other"] {
        let q = Queue::connect(&shared().url(), name, config.clone())
            .await
            .unwrap();
        q.seed(
            &common::items(&["https://d.example/"]),
            &SeedOptions::default(),
        )
        .await
        .unwrap();
    }
    let option = format!("key_prefix={prefix}");
    let mut exporter = Exporter::start_with(
        shared(),
        &[],
        &[
            "-o",
            &option,
            "--discover",
            "crawl-*",
            "--discover-every",
            "0",
        ],
    );
    let (status, _, body) = http_get(&exporter.address, "/metrics");
    assert_eq!(status, 200);
    assert!(
        body.contains("crawlq_pending{queue=\"crawl-news\"} 1"),
        "{body}"
    );
    assert!(
        body.contains("crawlq_pending{queue=\"crawl-shop\"} 1"),
        "{body}"
    );
    assert!(
        !body.contains("queue=\"other\""),
        "the pattern leaves it out: {body}"
    );

    // a queue created later is found by the next discovery
    let late = Queue::connect(&shared().url(), "crawl-late", config.clone())
        .await
        .unwrap();
    late.seed(
        &common::items(&["https://l.example/", "https://m.example/"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let (_, _, body) = http_get(&exporter.address, "/metrics");
    assert!(
        body.contains("crawlq_pending{queue=\"crawl-late\"} 2"),
        "{body}"
    );
    exporter.stop();
}

/// Python's pickle of a scrapy request dict, as scrapy-redis' default serializer stores it
/// (`pickle.dumps(request_to_dict(request), protocol=-1)`).
fn pickled_request(url: &str, priority: i64) -> Vec<u8> {
    let script = format!(
        "import pickle, sys; sys.stdout.buffer.write(pickle.dumps({{'url': {url:?}, 'callback': 'parse', \
         'errback': None, 'method': 'GET', 'headers': {{b'Referer': [b'https://start.example/']}}, \
         'body': b'', 'cookies': {{}}, 'meta': {{'depth': 1}}, 'encoding': 'utf-8', \
         'priority': {priority}, 'dont_filter': False, 'flags': [], 'cb_kwargs': {{}}}}, protocol=-1))"
    );
    let out = Command::new("python3")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[tokio::test]
async fn import_list_moves_scrapy_redis_laravel_and_bullmq_queues() {
    use crawlq::redis_exec::redis;
    let server = shared();
    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();

    // scrapy-redis PriorityQueue: a zset scored by -priority, pickled request dicts
    let requests = unique("spider:requests");
    let high = pickled_request("https://s.example/high", 5);
    let low = pickled_request("https://s.example/low", 0);
    let _: () = redis::pipe()
        .cmd("ZADD")
        .arg(&requests)
        .arg(-5)
        .arg(&high)
        .ignore()
        .cmd("ZADD")
        .arg(&requests)
        .arg(0)
        .arg(&low)
        .ignore()
        .cmd("ZADD")
        .arg(&requests)
        .arg(0)
        .arg(b"\x80\x05junk".as_slice())
        .ignore()
        .query_async(&mut conn)
        .await
        .unwrap();
    let name = unique("from-scrapy");
    let out = crawlq(&[
        "-q",
        &name,
        "import-list",
        &requests,
        "--format",
        "scrapy-redis",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "the junk member is refused: {}",
        stderr(&out)
    );
    assert_eq!(json_out(&out)["lists"][1]["added"], 2);
    let q = queue(&name).await;
    let leases = q.lease(5, Duration::ZERO).await.unwrap();
    let urls: Vec<_> = leases.iter().map(|l| l.url.clone().unwrap()).collect();
    assert_eq!(
        urls,
        ["https://s.example/high", "https://s.example/low"],
        "priority kept"
    );
    let scrapy = &leases[0].payload.as_ref().unwrap()["scrapy"];
    assert_eq!(scrapy["callback"], "parse");
    assert_eq!(scrapy["meta"]["depth"], 1);
    assert_eq!(
        scrapy["headers"]["Referer"][0]["$bytes"],
        "aHR0cHM6Ly9zdGFydC5leGFtcGxlLw=="
    );
    assert_eq!(
        server.cli(&["EXISTS", &requests]),
        "0",
        "the zset was emptied"
    );
    assert_eq!(
        server.cli(&["LLEN", &format!("{requests}:crawlq-rejected")]),
        "1"
    );

    // Laravel: payloads RPUSHed on queues:<name>, delayed ones in a zset
    let laravel = unique("queues:crawl");
    let command =
        "O:18:\"App\\Jobs\\CrawlPage\":1:{s:6:\"\0*\0url\";s:22:\"https://l.example/page\";}";
    let job = json!({"uuid": "u1", "displayName": "App\\Jobs\\CrawlPage",
        "job": "Illuminate\\Queue\\CallQueuedHandler@call",
        "data": {"commandName": "App\\Jobs\\CrawlPage", "command": command}, "attempts": 0});
    let raw = json!({"job": "crawl", "data": {"url": "https://l.example/raw"}});
    let _: () = redis::pipe()
        .cmd("RPUSH")
        .arg(&laravel)
        .arg(job.to_string())
        .ignore()
        .cmd("ZADD")
        .arg(format!("{laravel}:delayed"))
        .arg(1_700_000_000)
        .arg(raw.to_string())
        .ignore()
        .query_async(&mut conn)
        .await
        .unwrap();
    let name = unique("from-laravel");
    let out = crawlq(&["-q", &name, "import-list", &laravel, "--format", "laravel"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let q = queue(&name).await;
    let mut urls: Vec<_> = q
        .lease(5, Duration::ZERO)
        .await
        .unwrap()
        .into_iter()
        .map(|l| l.url.unwrap())
        .collect();
    urls.sort();
    assert_eq!(urls, ["https://l.example/page", "https://l.example/raw"]);

    // BullMQ: job ids LPUSHed on <prefix>:wait, job data in the hash <prefix>:<id>
    let bull = unique("bull:crawl");
    let _: () = redis::pipe()
        .cmd("HSET")
        .arg(format!("{bull}:1"))
        .arg("name")
        .arg("page")
        .arg("data")
        .arg(r#"{"url":"https://b.example/1","depth":0}"#)
        .ignore()
        .cmd("HSET")
        .arg(format!("{bull}:2"))
        .arg("name")
        .arg("page")
        .arg("data")
        .arg(r#"{"link":"https://b.example/2"}"#)
        .ignore()
        .cmd("LPUSH")
        .arg(format!("{bull}:wait"))
        .arg("1")
        .arg("2")
        .ignore()
        .query_async(&mut conn)
        .await
        .unwrap();
    let name = unique("from-bullmq");
    let out = crawlq(&["-q", &name, "import-list", &bull, "--format", "bullmq"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "job 2 has no url field: {}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("--url-field"), "{}", stderr(&out));
    let q = queue(&name).await;
    let leases = q.lease(5, Duration::ZERO).await.unwrap();
    assert_eq!(leases.len(), 1);
    assert_eq!(
        leases[0].payload.as_ref().unwrap()["bullmq"],
        json!({"name": "page", "data": {"depth": 0}})
    );
    assert_eq!(
        server.cli(&["EXISTS", &format!("{bull}:1")]),
        "0",
        "an imported job's hash is deleted"
    );
    assert_eq!(
        server.cli(&["EXISTS", &format!("{bull}:2")]),
        "1",
        "a refused job keeps its hash"
    );
    assert_eq!(
        server.cli(&["LRANGE", &format!("{bull}:crawlq-rejected"), "0", "-1"]),
        "2"
    );
}

#[tokio::test]
async fn hosts_in_flight_shows_sets_and_clears_a_limit() {
    let name = unique("inflight");
    let q = queue(&name).await;
    q.seed(
        &common::items(&["https://f.example/1", "https://f.example/2"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let text = stdout(&crawlq(&[
        "-q",
        &name,
        "hosts",
        "in-flight",
        "https://F.example/x",
        "1",
    ]));
    assert!(text.contains("0 in flight (limit 1)"), "{text}");
    assert_eq!(q.lease(5, Duration::ZERO).await.unwrap().len(), 1);
    let shown = json_out(&crawlq(&[
        "-q",
        &name,
        "hosts",
        "in-flight",
        "f.example",
        "--json",
    ]));
    assert_eq!(
        (
            &shown["in_flight_limit"],
            &shown["in_flight"],
            &shown["full"]
        ),
        (&json!(1), &json!(1), &json!(true))
    );
    let text = stdout(&crawlq(&[
        "-q",
        &name,
        "hosts",
        "in-flight",
        "f.example",
        "default",
    ]));
    assert!(text.contains("1 in flight"), "{text}");
    assert_eq!(
        q.host_info("f.example").await.unwrap().in_flight_limit,
        None
    );
    let bad = crawlq(&["-q", &name, "hosts", "in-flight", "f.example", "-1"]);
    assert_eq!(bad.status.code(), Some(2));
    let bad = crawlq(&["-q", &name, "hosts", "in-flight", "f.example", "many"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("not a limit"), "{}", stderr(&bad));
    let too_many = crawlq(&["-q", &name, "hosts", "in-flight", "f.example", "2000000"]);
    assert_ne!(too_many.status.code(), Some(0));
    assert!(
        stderr(&too_many).contains("at most 1000000"),
        "{}",
        stderr(&too_many)
    );
}

#[tokio::test]
async fn hosts_delay_after_shows_sets_and_clears_a_hosts_pacing() {
    let name = unique("pacing");
    let q = queue(&name).await;
    let text = stdout(&crawlq(&[
        "-q",
        &name,
        "hosts",
        "delay-after",
        "https://P.example/x",
        "answer",
        "--factor",
        "2",
    ]));
    assert!(text.contains("after the answer (factor 2)"), "{text}");
    let info = q.host_info("p.example").await.unwrap();
    assert_eq!(
        info.pacing,
        Some(HostPacing {
            after: DelayAfter::Answer,
            factor: Some(2.0)
        })
    );
    let shown = json_out(&crawlq(&[
        "-q",
        &name,
        "hosts",
        "delay-after",
        "p.example",
        "--json",
    ]));
    assert_eq!(
        (&shown["delay_after"], &shown["delay_factor"]),
        (&json!("answer"), &json!(2.0))
    );
    let text = stdout(&crawlq(&[
        "-q",
        &name,
        "hosts",
        "delay-after",
        "p.example",
        "lease",
    ]));
    assert!(text.contains("after the lease"), "{text}");
    stdout(&crawlq(&[
        "-q",
        &name,
        "hosts",
        "delay-after",
        "p.example",
        "default",
    ]));
    assert_eq!(q.host_info("p.example").await.unwrap().pacing, None);

    let bad = crawlq(&["-q", &name, "hosts", "delay-after", "p.example", "response"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("not a mode"), "{}", stderr(&bad));
    let bad = crawlq(&[
        "-q",
        &name,
        "hosts",
        "delay-after",
        "p.example",
        "--factor",
        "2",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    let bad = crawlq(&[
        "-q",
        &name,
        "hosts",
        "delay-after",
        "p.example",
        "lease",
        "--factor",
        "2",
    ]);
    assert_ne!(bad.status.code(), Some(0));
    assert!(
        stderr(&bad).contains("only after the answer"),
        "{}",
        stderr(&bad)
    );
}
