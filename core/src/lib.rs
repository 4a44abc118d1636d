//! crawlq: one Redis-backed crawl frontier shared by workers in Rust, Python, Node.js, PHP and
//! WebAssembly.
//!
//! * **seed** URLs or hosts: canonicalized, de-duplicated over the queue's whole life, with
//!   priority, delay and a JSON payload; invalid items are reported with their index.
//! * **lease / ack / nack / extend / release** with a fencing token per lease: a stale worker
//!   cannot answer for somebody else's lease.
//! * **stale recovery** without a daemon: expired leases are reclaimed inside lease calls.
//! * **politeness**: a host is not leased again before its delay, across every worker.
//! * **stats**: exact O(1) depth counters.
//!
//! The crate is split sans-IO ([`ops`]: build each script call, decode each reply) from I/O
//! ([`Queue`] over an [`Executor`]; the native one, [`redis_exec::RedisExecutor`], is behind
//! the default `redis-executor` feature). Without it the crate builds for wasm32.
//!
//! ```no_run
//! # async fn demo() -> crawlq::Result<()> {
//! use crawlq::{Config, Queue, SeedOptions};
//! use std::time::Duration;
//! let q = Queue::connect("redis://127.0.0.1:6379/0", "frontier", Config::default()).await?;
//! let report = q.seed(&["https://example.com/".into(), "Example.ORG.".into()], &SeedOptions::default()).await?;
//! assert_eq!(report.added, 2);
//! let leases = q.lease(10, Duration::from_secs(5)).await?;
//! let handles: Vec<_> = leases.iter().map(|l| l.handle()).collect();
//! q.ack(&handles).await?;
//! # Ok(()) }
//! ```

// The bindings' plumbing (their JSON boundary, work loop, held leases, runtime): not part of
// the Rust API.
#[doc(hidden)]
pub mod binding;
#[cfg(feature = "redis-executor")]
pub mod catalog;
pub mod config;
pub mod error;
pub mod keys;
pub mod link_memo;
pub mod model;
pub mod normalize;
pub mod ops;
pub mod queue;
#[cfg(feature = "redis-executor")]
pub mod redis_exec;
pub mod request;
pub mod retry_after;
pub mod scripts;
pub mod seen_cache;
pub mod shards;
pub mod wire;

pub use config::{Backoff, BackoffKind, Config, DelayAfter, Style};
pub use error::{ERROR_KINDS, Error, ErrorKind, InvalidReason, Result};
pub use model::*;
pub use normalize::HostKeyMode;
pub use queue::{
    Executor, LEASE_PER_CALL, LeaseOptions, MaybeSend, PROMOTE_PER_CALL, Queue, RECLAIM_PER_CALL,
    SEED_PER_CALL, WAIT_SLICE,
};
pub use queue::{Interrupt, StopSignal};
#[cfg(feature = "redis-executor")]
pub use redis_exec::RedisExecutor;
pub use request::CrawlRequest;
pub use retry_after::RetryAfter;

/// The root README's Rust example is compiled as a doctest, so it stays correct.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
mod readme_example {}
