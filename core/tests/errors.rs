//! Error paths and connections: Redis down, dropped and restored, slow, protected by a
//! password, over a unix socket or TLS, full, or holding data of a newer format; bad options.
mod common;

use common::*;
use crawlq::*;
use std::process::Command;
use std::time::{Duration, Instant};

fn quick() -> Config {
    Config {
        connect_timeout: Duration::from_millis(500),
        command_timeout: Duration::from_millis(500),
        ..config()
    }
}

#[tokio::test]
async fn unreachable_redis_is_reported_as_unavailable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = Queue::connect(&format!("redis://127.0.0.1:{port}/0"), "q", quick())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "UNAVAILABLE", "{err}");
    let err = Queue::connect("unix:///nonexistent/redis.sock", "q", quick())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "UNAVAILABLE", "{err}");

    // tried again for connect_timeout, not for the longer command_timeout
    let started = Instant::now();
    let patient_calls = Config {
        connect_timeout: Duration::from_millis(300),
        command_timeout: Duration::from_secs(20),
        ..config()
    };
    let err = Queue::connect(&format!("redis://127.0.0.1:{port}/0"), "q", patient_calls)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "UNAVAILABLE", "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_url_the_client_cannot_use_says_what_to_fix() {
    let server = RedisServer::start();
    let no_such_db = server.url().replace("/0", "/99");
    let err = Queue::connect(&no_such_db, "q", quick()).await.unwrap_err();
    assert_eq!(err.code(), "CONFIG", "{err}");
    assert!(
        err.to_string().contains("no database of the URL's number"),
        "{err}"
    );
    let no_scheme = server.url().replace("redis://", "");
    let err = Queue::connect(&no_scheme, "q", quick()).await.unwrap_err();
    assert_eq!(err.code(), "CONFIG", "{err}");
    assert!(
        err.to_string()
            .contains(&format!("no scheme: write redis://{no_scheme}")),
        "{err}"
    );
    let err = Queue::connect(":pw@127.0.0.1:6379", "q", quick())
        .await
        .unwrap_err();
    assert!(!err.to_string().contains("pw"), "{err}");
    // another service's port: a listener that answers HTTP
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let http = format!("redis://{}/0", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut stream in listener.incoming().flatten() {
            let _ = stream.read(&mut [0; 512]);
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        }
    });
    let err = Queue::connect(&http, "q", quick()).await.unwrap_err();
    assert_eq!(err.code(), "CONFIG", "{err}");
    assert!(
        err.to_string()
            .ends_with("is that the address of a Redis server?"),
        "{err}"
    );
    let err = Queue::connect("redis://127.0.0.1:99999/0", "q", quick())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "CONFIG", "{err}");
    assert!(err.to_string().ends_with("invalid port number"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_is_surfaced_and_recovered_after_restart() {
    let mut server = RedisServer::start();
    let q = Queue::connect(&server.url(), "drop", quick())
        .await
        .unwrap();
    q.seed(&items(&["http://a.com/"]), &SeedOptions::default())
        .await
        .unwrap();

    server.stop();
    let err = q.stats().await.unwrap_err();
    assert!(
        matches!(err, Error::Unavailable(_) | Error::Timeout(_)),
        "{err}"
    );
    let err = q
        .seed(
            &items(&["http://a.com/1", "http://a.com/2"]),
            &SeedOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("0 of 2 items were seeded before this failure"),
        "{err}"
    );

    server.restart();
    let deadline = Instant::now() + Duration::from_secs(10);
    let stats = loop {
        match q.stats().await {
            Ok(stats) => break stats,
            Err(e) => {
                assert!(Instant::now() < deadline, "no reconnect: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    assert_eq!(stats.seen, 0, "a fresh server (no persistence in tests)");
    assert_eq!(
        q.seed(&items(&["http://a.com/"]), &SeedOptions::default())
            .await
            .unwrap()
            .added,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_lease_fails_instead_of_hanging_when_redis_goes_away() {
    let mut server = RedisServer::start();
    let q = std::sync::Arc::new(
        Queue::connect(&server.url(), "drop-wait", quick())
            .await
            .unwrap(),
    );
    let waiter = {
        let q = q.clone();
        tokio::spawn(async move { q.lease(1, Duration::from_secs(30)).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.stop();
    let result = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("lease returned")
        .unwrap();
    let err = result.unwrap_err();
    assert!(
        matches!(err, Error::Unavailable(_) | Error::Timeout(_)),
        "{err}"
    );
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let server = RedisServer::start();
    let q = Queue::connect(
        &server.url(),
        "slow",
        Config {
            command_timeout: Duration::from_millis(200),
            ..config()
        },
    )
    .await
    .unwrap();
    q.stats().await.unwrap();
    server.cli(&["CLIENT", "PAUSE", "1500", "ALL"]);
    let err = q.stats().await.unwrap_err();
    assert_eq!(err.code(), "TIMEOUT", "{err}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while q.stats().await.is_err() {
        assert!(Instant::now() < deadline, "recovered after the pause");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn passwords_come_from_the_url() {
    let server = RedisServer::start_with(&["--requirepass", "s3cret"]);
    let q = Queue::connect(&server.url(), "auth", quick())
        .await
        .unwrap();
    assert_eq!(
        q.seed(&items(&["http://a.com/"]), &SeedOptions::default())
            .await
            .unwrap()
            .added,
        1
    );
    let wrong = format!("redis://:wrong@127.0.0.1:{}/0", server.port);
    let err = Queue::connect(&wrong, "auth", quick()).await.unwrap_err();
    assert_eq!(err.code(), "CONFIG", "{err}");
    assert!(
        !err.to_string().contains("wrong"),
        "the password is not echoed: {err}"
    );
    // a missing password is found at connect, not by a later call
    let missing = format!("redis://127.0.0.1:{}/0", server.port);
    let err = Queue::connect(&missing, "auth", quick()).await.unwrap_err();
    assert_eq!(err.code(), "CONFIG", "{err}");
    assert!(err.to_string().contains("authentication"), "{err}");
}

#[tokio::test]
async fn unix_sockets_work() {
    let url = format!("unix://{}", shared().socket().display());
    let q = Queue::connect(&url, &unique("unix"), config())
        .await
        .unwrap();
    q.seed(&items(&["http://u.com/"]), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(q.lease(1, Duration::from_secs(1)).await.unwrap().len(), 1);
}

fn openssl(dir: &std::path::Path, args: &[&str]) {
    let status = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl");
    assert!(
        status.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&status.stderr)
    );
}

#[tokio::test]
async fn tls_with_a_private_ca() {
    let dir = std::env::temp_dir().join(unique("crawlq-tls"));
    std::fs::create_dir_all(&dir).unwrap();
    openssl(
        &dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "1",
            "-subj",
            "/CN=crawlq test CA",
        ],
    );
    openssl(
        &dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ],
    );
    std::fs::write(
        dir.join("san.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .unwrap();
    openssl(
        &dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "1",
            "-extfile",
            "san.ext",
        ],
    );
    let tls_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let d = |f: &str| dir.join(f).display().to_string();
    let server = RedisServer::start_with(&[
        "--tls-port",
        &tls_port,
        "--tls-cert-file",
        &d("server.pem"),
        "--tls-key-file",
        &d("server.key"),
        "--tls-ca-cert-file",
        &d("ca.pem"),
        "--tls-auth-clients",
        "no",
    ]);
    let url = format!("rediss://127.0.0.1:{tls_port}/0");
    let deadline = Instant::now() + Duration::from_secs(5);
    let q = loop {
        match Queue::connect(
            &url,
            "tls",
            Config {
                tls_ca_file: Some(d("ca.pem")),
                ..quick()
            },
        )
        .await
        {
            Ok(q) => break q,
            Err(e) => {
                assert!(Instant::now() < deadline, "TLS connect: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    q.seed(&items(&["https://tls.example/"]), &SeedOptions::default())
        .await
        .unwrap();
    let leases = q.lease(1, Duration::from_secs(1)).await.unwrap();
    assert_eq!(leases[0].url.as_deref(), Some("https://tls.example/"));
    // without the CA the certificate is not trusted
    let err = Queue::connect(&url, "tls", quick()).await.unwrap_err();
    assert_eq!(err.code(), "CONFIG", "{err}");
    assert!(err.to_string().contains("tls_ca_file"), "{err}");
    let err = Queue::connect(
        &url,
        "tls",
        Config {
            tls_ca_file: Some("/nonexistent.pem".into()),
            ..quick()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), "CONFIG");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_full_redis_refuses_seeds_whole_but_lets_workers_drain() {
    let server = RedisServer::start();
    let q = Queue::connect(&server.url(), "oom", config())
        .await
        .unwrap();
    q.seed(
        &items(&["http://a.com/1", "http://a.com/2"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let before = q.stats().await.unwrap();
    server.cli(&["CONFIG", "SET", "maxmemory", "1"]);
    let err = q
        .seed(&items(&["http://b.com/1"]), &SeedOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "SERVER", "{err}");
    assert!(err.to_string().contains("OOM"), "{err}");
    assert_eq!(
        q.stats().await.unwrap().seen,
        before.seen,
        "nothing half-applied"
    );
    let leases = q.lease(2, Duration::ZERO).await.unwrap();
    assert_eq!(q.ack(&handles(&leases)).await.unwrap(), vec![true, true]);
    server.cli(&["CONFIG", "SET", "maxmemory", "0"]);
    assert_eq!(
        q.seed(&items(&["http://b.com/1"]), &SeedOptions::default())
            .await
            .unwrap()
            .added,
        1
    );
}

#[tokio::test]
async fn data_of_a_newer_format_is_refused_untouched() {
    let q = open("newer", config()).await;
    q.seed(&items(&["http://a.com/"]), &SeedOptions::default())
        .await
        .unwrap();
    let meta = format!("{}:meta", q.ops().keys().base());
    shared().cli(&["HSET", &meta, "format", "8"]);
    for err in [
        q.stats().await.unwrap_err(),
        q.lease(1, Duration::ZERO).await.unwrap_err(),
        q.seed(&items(&["http://b.com/"]), &SeedOptions::default())
            .await
            .unwrap_err(),
    ] {
        assert_eq!(err.code(), "PROTOCOL", "{err}");
        assert!(
            err.to_string()
                .starts_with("protocol mismatch: queue was written with format 8; "),
            "{err}"
        );
    }
    // a queue of the earlier format 1 (no live set, other lease keys) is refused as well
    shared().cli(&["HSET", &meta, "format", "1"]);
    let err = q.stats().await.unwrap_err();
    assert_eq!(err.code(), "PROTOCOL", "{err}");
    assert!(err.to_string().contains("format 1"), "{err}");
    shared().cli(&["HSET", &meta, "format", "4"]);
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.ready, stats.seen, stats.leased), (1, 1, 0));
}

/// Turn a queue of this protocol into the exact layout of an older one. Both older protocols
/// write every record's host (protocol 4 leaves it out when it is the URL's host); protocol 2
/// also gives every host with a lane its priority set (protocol 3 and 4 only for hosts with a
/// lane other than priority 0: `p0_hosts` are the others) and writes `"attempt":0`.
fn as_older_protocol(q: &Queue<RedisExecutor>, format: &str, p0_hosts: &[&str]) {
    let base = q.ops().keys().base().to_string();
    if format == "2" {
        for host in p0_hosts {
            assert_eq!(shared().cli(&["EXISTS", &format!("{base}:hp:{host}")]), "0");
            shared().cli(&["ZADD", &format!("{base}:hp:{host}"), "0", "0"]);
        }
    }
    for lane in scan_keys(shared(), &base, ":l:*") {
        // <base>:l:<priority>:<host>
        let host = lane[base.len() + 3..]
            .split_once(':')
            .unwrap()
            .1
            .to_string();
        let records = shared().cli(&["LRANGE", &lane, "0", "-1"]);
        let mut args = vec!["RPUSH".to_string(), lane.clone()];
        for record in records.lines() {
            assert!(!record.contains("\"attempt\""), "{record}");
            assert!(!record.contains("\"host\""), "{record}");
            let ts_end = record.find(",\"ts\":").unwrap() + 6;
            let ts_end = ts_end + record[ts_end..].find(',').unwrap();
            let mut older = format!(
                "{},\"host\":\"{host}\"{}",
                &record[..ts_end],
                &record[ts_end..]
            );
            if format == "2" {
                older = older.replacen(",\"url\"", ",\"attempt\":0,\"url\"", 1);
            }
            args.push(older);
        }
        shared().cli(&["DEL", &lane]);
        shared().cli(&args.iter().map(String::as_str).collect::<Vec<_>>());
    }
    shared().cli(&["HSET", &format!("{base}:meta"), "format", format]);
}

/// Put a lease back with a new payload; whether it was live.
async fn release_with_payload(
    q: &Queue<RedisExecutor>,
    lease: &Lease,
    payload: serde_json::Value,
) -> bool {
    let options = ReleaseOptions {
        payload: Some(payload),
    };
    q.release_with(&[(lease.handle(), options)]).await.unwrap() == [true]
}

fn format_of(q: &Queue<RedisExecutor>) -> String {
    shared().cli(&["HGET", &format!("{}:meta", q.ops().keys().base()), "format"])
}

async fn open_unsharded(name: &str) -> Queue<RedisExecutor> {
    open(
        name,
        Config {
            shards: None,
            ..config()
        },
    )
    .await
}

/// A protocol 2 queue (`format` 2: every host with a lane has its priority set, priority 0
/// included; every record has its host and attempt) is a valid protocol 4 queue: read and
/// written as it is, and marked 3 before the first write that protocol 2 clients could not read
/// (a host lane without a priority set, a record without `attempt`), so that they refuse the
/// queue from then on instead of losing hosts; seed marks it 4.
#[tokio::test]
async fn a_protocol_2_queue_is_used_as_it_is_and_marked_before_its_first_new_layout() {
    let url = shared().url();
    let q = open_unsharded("format2").await;
    let seeded = vec![
        SeedItem::from("http://a.com/1"),
        SeedItem::from("http://a.com/2"),
        SeedItem::from("http://b.com/1").with_priority(3),
        SeedItem::from("http://c.com/1"),
    ];
    q.seed(&seeded, &SeedOptions::default()).await.unwrap();
    assert_eq!(format_of(&q), "4");
    as_older_protocol(&q, "2", &["a.com", "c.com"]);
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.ready, stats.hosts), (4, 3));
    assert_eq!(q.peek(10).await.unwrap().len(), 3);
    // leasing and acking in the protocol 2 layout writes nothing protocol 2 cannot read
    let leases = q.lease(3, Duration::ZERO).await.unwrap();
    assert_eq!(
        urls_of_leases(&leases),
        ["http://b.com/1", "http://a.com/1", "http://a.com/2"]
    );
    assert!(leases.iter().all(|l| l.attempt == 1));
    q.ack(&handles(&leases)).await.unwrap();
    assert_eq!(format_of(&q), "2");
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.ready, stats.hosts, stats.done), (1, 1, 3));
    // a seed writes records without their host: the queue is marked 4 first
    q.seed(&items(&["http://d.com/1"]), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(format_of(&q), "4");
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.ready, stats.hosts), (2, 2));
    let leases = q.lease(5, Duration::ZERO).await.unwrap();
    assert_eq!(
        urls_of_leases(&leases),
        ["http://c.com/1", "http://d.com/1"]
    );
    assert_eq!(
        leases.iter().map(|l| l.host.as_str()).collect::<Vec<_>>(),
        ["c.com", "d.com"]
    );

    // A first attempt put back by release with a new payload is rewritten without its attempt
    // count (keeping its host): after the marker 3.
    let q = open_unsharded("format2-release").await;
    let seeded = vec![SeedItem::from("http://a.com/urgent").with_priority(5)];
    q.seed(&seeded, &SeedOptions::default()).await.unwrap();
    as_older_protocol(&q, "2", &[]);
    let leases = q.lease(1, Duration::ZERO).await.unwrap();
    assert_eq!(leases[0].attempt, 1);
    assert_eq!(format_of(&q), "2");
    // (put back as it is, the record keeps its shape and the queue its marker)
    assert_eq!(q.release(&handles(&leases)).await.unwrap(), [true]);
    assert_eq!(format_of(&q), "2");
    let leases = q.lease(1, Duration::ZERO).await.unwrap();
    assert!(release_with_payload(&q, &leases[0], serde_json::json!({"depth": 1})).await);
    assert_eq!(format_of(&q), "3");
    let lane = q.ops().keys().lane("a.com", 5);
    let record = shared().cli(&["LINDEX", &lane, "0"]);
    assert!(!record.contains("attempt"), "{record}");
    assert!(record.contains(r#""host":"a.com""#), "{record}");
    let leases = q.lease(1, Duration::ZERO).await.unwrap();
    assert_eq!((leases[0].attempt, leases[0].priority), (1, 5));
    check_invariants(&url, &q).await;

    // A host whose set is left with priority 0 alone loses the set, after the marker 3.
    let q = open_unsharded("format2-set").await;
    let seeded = vec![
        SeedItem::from("http://a.com/urgent").with_priority(5),
        SeedItem::from("http://a.com/normal"),
    ];
    q.seed(&seeded, &SeedOptions::default()).await.unwrap();
    as_older_protocol(&q, "2", &[]);
    let base = q.ops().keys().base().to_string();
    assert_eq!(shared().cli(&["ZCARD", &format!("{base}:hp:a.com")]), "2");
    let leases = q.lease(1, Duration::ZERO).await.unwrap();
    assert_eq!(urls_of_leases(&leases), ["http://a.com/urgent"]);
    assert_eq!(shared().cli(&["EXISTS", &format!("{base}:hp:a.com")]), "0");
    assert_eq!(format_of(&q), "3");
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.ready, stats.hosts, stats.leased), (1, 1, 1));
}

/// A protocol 3 queue (every record has its host) is a valid protocol 4 queue: records keep
/// their host when a script rewrites them, so retries and releases leave the marker at
/// 3; the first record written without its host (a seed) marks it 4, and both shapes then live
/// side by side.
#[tokio::test]
async fn a_protocol_3_queue_keeps_its_records_hosts_until_a_seed_marks_it_4() {
    let url = shared().url();
    let q = open_unsharded("format3").await;
    let seeded = vec![
        SeedItem::from("http://a.com/1").with_payload(serde_json::json!({"n": 1})),
        SeedItem::from("http://b.com/1").with_priority(2),
        SeedItem::from("http://c.com/1"),
    ];
    q.seed(&seeded, &SeedOptions::default()).await.unwrap();
    as_older_protocol(&q, "3", &[]);
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.ready, stats.hosts), (3, 3));
    let leases = q.lease(3, Duration::from_secs(60)).await.unwrap();
    assert_eq!(
        leases.iter().map(|l| l.host.as_str()).collect::<Vec<_>>(),
        ["b.com", "a.com", "c.com"]
    );
    // a retry (attempt 1), a release with a payload (attempt 0), an ack
    let retry = NackOptions {
        delay: Some(Duration::ZERO),
        ..NackOptions::default()
    };
    assert_eq!(
        q.nack(&[(leases[0].handle(), retry)]).await.unwrap(),
        [NackOutcome::Retried]
    );
    assert!(release_with_payload(&q, &leases[1], serde_json::json!({"n": 2})).await);
    q.ack(&[leases[2].handle()]).await.unwrap();
    assert_eq!(format_of(&q), "3");
    let base = q.ops().keys().base().to_string();
    for lane in scan_keys(shared(), &base, ":l:*") {
        for record in shared().cli(&["LRANGE", &lane, "0", "-1"]).lines() {
            assert!(record.contains("\"host\""), "{record}");
        }
    }
    check_invariants(&url, &q).await;
    q.seed(&items(&["http://a.com/2"]), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(format_of(&q), "4");
    let lane = q.ops().keys().lane("a.com", 0);
    let records = shared().cli(&["LRANGE", &lane, "0", "-1"]);
    let records: Vec<&str> = records.lines().collect();
    assert_eq!(records.len(), 2);
    assert!(records[0].contains(r#""host":"a.com""#), "{}", records[0]);
    assert!(!records[1].contains("\"host\""), "{}", records[1]);
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.ready, stats.hosts), (3, 2));
    let leases = q.lease(3, Duration::ZERO).await.unwrap();
    let got: Vec<(&str, &str, u32)> = leases
        .iter()
        .map(|l| (l.host.as_str(), l.url.as_deref().unwrap(), l.attempt))
        .collect();
    assert_eq!(
        got,
        [
            ("b.com", "http://b.com/1", 2),
            ("a.com", "http://a.com/1", 1),
            ("a.com", "http://a.com/2", 1)
        ]
    );
    assert_eq!(leases[1].payload, Some(serde_json::json!({"n": 2})));
}

fn urls_of_leases(leases: &[Lease]) -> Vec<String> {
    leases
        .iter()
        .map(|l| l.url.clone().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn bad_options_and_names_are_config_errors() {
    let url = shared().url();
    for (name, config, url) in [
        ("a{b}", config(), url.as_str()),
        ("", config(), url.as_str()),
        (
            "ok",
            Config {
                max_attempts: 0,
                ..config()
            },
            url.as_str(),
        ),
        (
            "ok",
            Config {
                key_prefix: "x}".into(),
                ..config()
            },
            url.as_str(),
        ),
        ("ok", config(), "http://127.0.0.1:1/"),
        ("ok", config(), "not a url"),
    ] {
        let err = Queue::connect(url, name, config).await.unwrap_err();
        assert_eq!(err.code(), "CONFIG", "{name:?} {url:?}: {err}");
    }
}

#[tokio::test]
async fn scripts_run_as_functions_loaded_once_and_reloaded_after_a_flush() {
    let server = RedisServer::start();
    let q = Queue::connect(&server.url(), "functions", config())
        .await
        .unwrap();
    // connecting ran one operation (the queue's shard count): the library is loaded
    let library = crawlq::scripts::library().name;
    assert!(
        server
            .cli(&["FUNCTION", "LIST", "LIBRARYNAME", library])
            .contains(library)
    );
    server.cli(&["CONFIG", "RESETSTAT"]);
    q.seed(
        &items(&["http://a.com/", "http://b.com/"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let leases = q.lease(1, Duration::ZERO).await.unwrap();
    q.ack(&handles(&leases)).await.unwrap();
    // three operations, three calls, nothing loaded again, no script
    assert_eq!(calls_of(&server, "fcall"), 3);
    assert_eq!(calls_of(&server, "function|load"), 0);
    assert_eq!(calls_of(&server, "evalsha") + calls_of(&server, "eval"), 0);
    // a flushed (or restarted, or new cluster node's) server gets the library again
    assert_eq!(server.cli(&["FUNCTION", "FLUSH"]), "OK");
    assert_eq!(q.stats().await.unwrap().ready, 1);
    assert_eq!(calls_of(&server, "function|load"), 1);
    assert_eq!(calls_of(&server, "evalsha") + calls_of(&server, "eval"), 0);
    assert!(
        server
            .cli(&["FUNCTION", "LIST", "LIBRARYNAME", library])
            .contains(library)
    );
}

/// A call passes one key, the queue's meta (docs/PROTOCOL.md section 4); a caller that passes
/// the 12 fixed keys, as clients before that change did, gets the same answers.
#[tokio::test]
async fn a_call_with_every_fixed_key_answers_as_one_with_the_meta_key() {
    let server = RedisServer::start();
    let config = Config {
        shards: Some(1),
        ..Config::default()
    };
    let q = Queue::connect(&server.url(), "twelve", config)
        .await
        .unwrap();
    q.seed(
        &items(&["http://a.com/1", "http://b.com/1"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let keys = crawlq::keys::Keys::new("crawlq", "twelve").unwrap();
    assert_eq!(keys.script_keys().len(), 1);
    assert_eq!(keys.script_keys()[0], format!("{}:meta", keys.base()));
    let fcall = |script: &crawlq::scripts::Script, all_keys: bool, args: &[&str]| {
        let declared: Vec<&str> = if all_keys {
            keys.fixed().iter().map(String::as_str).collect()
        } else {
            vec![keys.script_keys()[0].as_str()]
        };
        let count = declared.len().to_string();
        let mut cmd = vec!["FCALL", script.function_name(), count.as_str()];
        cmd.extend(declared);
        cmd.extend([keys.base(), ""]);
        cmd.extend(args);
        server.cli(&cmd)
    };
    // stats, but for its first line (the server's clock)
    let tail = |reply: String| reply.lines().skip(1).collect::<Vec<_>>().join("\n");
    let one = tail(fcall(&crawlq::scripts::STATS, false, &[]));
    let twelve = tail(fcall(&crawlq::scripts::STATS, true, &[]));
    assert_eq!(one, twelve);
    assert!(one.starts_with("2\n"), "two ready: {one}");
    // a lease through the 12 keys leases an item of this queue
    let leased = fcall(
        &crawlq::scripts::LEASE,
        true,
        &["1", "60000", "0", "3", "100", "100"],
    );
    assert!(leased.contains("http://"), "{leased}");
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.leased, stats.ready), (1, 1));
}

/// The scripts keep the key names they build per queue in the functions library, at most
/// 1,024 queues' worth, then start the table again: more queues than that on one server, each
/// used before and after the table starts again, keep their own keys.
#[tokio::test]
async fn more_queues_than_the_scripts_keep_key_names_for() {
    let server = RedisServer::start();
    let url = server.url();
    let config = Config {
        shards: Some(1),
        ..Config::default()
    };
    for round in 0..2 {
        for i in 0..1100 {
            let q = Queue::connect(&url, &format!("many-{i}"), config.clone())
                .await
                .unwrap();
            let url_of = format!("http://host-{i}.example/{round}");
            let report = q
                .seed(&items(&[url_of.as_str()]), &SeedOptions::default())
                .await
                .unwrap();
            assert_eq!(report.added, 1, "{i}");
            let leases = q.lease(2, Duration::ZERO).await.unwrap();
            assert_eq!(leases.len(), 1, "{i}");
            assert_eq!(leases[0].url.as_deref(), Some(url_of.as_str()));
            assert_eq!(q.ack(&handles(&leases)).await.unwrap(), [true]);
            let stats = q.stats().await.unwrap();
            assert_eq!(
                (stats.done, stats.ready, stats.leased),
                (round + 1, 0, 0),
                "{i}"
            );
        }
    }
}

/// The scripts also keep the names of the seen- and live-set buckets they use, at most 32,768
/// in all: past that they build each name on every use, and a queue first seen after that
/// starts the table again. Queues that together use more bucket names than that keep finding
/// their own members, before and after the table starts again.
#[tokio::test]
async fn more_bucket_names_than_the_scripts_keep() {
    let server = RedisServer::start();
    let url = server.url();
    let config = Config {
        shards: Some(1),
        ..Config::default()
    };
    // 4,000 URLs touch about 1,000 of a queue's 1,024 seen buckets and as many live ones
    let batch = |q: usize| -> Vec<SeedItem> {
        (0..4000)
            .map(|i| format!("http://q{q}.example/{i}").into())
            .collect()
    };
    let mut queues = Vec::new();
    for q in 0..18 {
        let queue = Queue::connect(&url, &format!("buckets-{q}"), config.clone())
            .await
            .unwrap();
        let report = queue
            .seed(&batch(q), &SeedOptions::default())
            .await
            .unwrap();
        assert_eq!((report.added, report.duplicates), (4000, 0), "{q}");
        queues.push(queue);
    }
    for (q, queue) in queues.iter().enumerate() {
        let report = queue
            .seed(&batch(q), &SeedOptions::default())
            .await
            .unwrap();
        assert_eq!((report.added, report.duplicates), (0, 4000), "{q}");
        let stats = queue.stats().await.unwrap();
        assert_eq!((stats.seen, stats.ready), (4000, 4000), "{q}");
    }
    // every live member is found again when its item is acked
    let first = &queues[0];
    loop {
        let leases = first.lease(500, Duration::ZERO).await.unwrap();
        if leases.is_empty() {
            break;
        }
        assert!(
            first
                .ack(&handles(&leases))
                .await
                .unwrap()
                .iter()
                .all(|f| *f)
        );
    }
    let base = first.ops().keys().base().to_string();
    assert_eq!(
        server.cli(&[
            "EVAL",
            "return #redis.call('KEYS', ARGV[1])",
            "0",
            &format!("{base}:v:*")
        ]),
        "0",
        "no live member left"
    );
    assert_eq!(first.stats().await.unwrap().done, 4000);
}

/// Every operation's script form compiles: the largest (`ack_seed_lease`: the prelude and the
/// steps and bodies of seed, ack and lease) stays within Lua's 200 locals per chunk and 60
/// outer names per function. SCRIPT LOAD answers the SHA-1 the clients call it by.
#[tokio::test]
async fn every_script_form_compiles() {
    use crawlq::redis_exec::redis;
    let server = RedisServer::start();
    let client = redis::Client::open(server.url()).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    for script in crawlq::scripts::ALL {
        let sha: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(script.source())
            .query_async(&mut con)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", script.name));
        assert_eq!(sha, script.sha1(), "{}", script.name);
    }
}

/// A user who may not load or call functions runs the same operations as scripts: EVALSHA,
/// and EVAL when the script cache is empty.
#[tokio::test]
async fn without_functions_scripts_run_by_evalsha_with_an_eval_fallback() {
    let server = RedisServer::start();
    for (user, refused) in [("nofcall", "-fcall"), ("noload", "-function|load")] {
        assert_eq!(
            server.cli(&[
                "ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", refused
            ]),
            "OK"
        );
        let url = format!("redis://{user}:pw@127.0.0.1:{}/0", server.port);
        let q = Queue::connect(&url, user, config()).await.unwrap();
        server.cli(&["CONFIG", "RESETSTAT"]);
        q.seed(&items(&["http://a.com/"]), &SeedOptions::default())
            .await
            .unwrap();
        assert_eq!(server.cli(&["SCRIPT", "FLUSH"]), "OK");
        assert_eq!(q.stats().await.unwrap().ready, 1, "{user}");
        assert_eq!(
            server.cli(&["SCRIPT", "EXISTS", crawlq::scripts::STATS.sha1()]),
            "1",
            "{user}: EVAL loaded the script again"
        );
        let leases = q.lease(1, Duration::ZERO).await.unwrap();
        assert_eq!(q.ack(&handles(&leases)).await.unwrap(), [true], "{user}");
        // once refused, functions are not tried again by this client
        assert_eq!(calls_of(&server, "fcall"), 0, "{user}");
        assert_eq!(q.stats().await.unwrap().done, 1, "{user}");
        // every script's first call found the cache empty (EVAL), the second (stats) did not
        assert_eq!(calls_of(&server, "evalsha"), 5, "{user}");
        assert_eq!(calls_of(&server, "eval"), 4, "{user}");
    }
    assert_eq!(server.cli(&["FUNCTION", "LIST"]), "", "nothing was loaded");
}
