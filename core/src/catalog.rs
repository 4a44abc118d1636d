//! The queues a Redis server (or cluster) holds under one key prefix, and removing one: for
//! tools (the CLI's `queue ls` / `queue rm`, the exporter's discovery), not for workers.
//!
//! A queue is found by its meta hash `<prefix>:{<queue>}:meta`, which every connect or first
//! write creates. The meta hashes of a sharded queue's shards (`{<queue>:<s>~<k>}`, or
//! `{<queue>:<s>}` for a queue of protocol 4) are recognised by the shard count and tags their
//! queue stores, so they are not listed as queues of their own.

use crate::error::Result;
use crate::queue::{Executor, Queue};
use crate::redis_exec::{RedisExecutor, redis, to_error};
use std::collections::BTreeMap;

/// One queue found under a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueEntry {
    /// The queue's name, as given to `Queue::connect`.
    pub name: String,
    /// Its shard count (1 for a queue of one shard).
    pub shards: usize,
}

/// The queues under `prefix` (`""` for none), sorted by name. Walks the key space with SCAN.
///
/// ```no_run
/// # async fn demo() -> crawlq::Result<()> {
/// let exec = crawlq::RedisExecutor::connect("redis://127.0.0.1:6379/0", &Default::default()).await?;
/// for queue in crawlq::catalog::list_queues(&exec, "crawlq").await? {
///     println!("{} ({} shards)", queue.name, queue.shards);
/// }
/// # Ok(()) }
/// ```
pub async fn list_queues(exec: &RedisExecutor, prefix: &str) -> Result<Vec<QueueEntry>> {
    let head = crate::keys::Keys::base_head(prefix);
    let pattern = format!("{}*}}:meta", glob_escape(&head));
    let mut names = Vec::new();
    for key in exec.scan_keys(&pattern).await? {
        if let Some(name) = key
            .strip_prefix(&head)
            .and_then(|rest| rest.strip_suffix("}:meta"))
            .filter(|name| !name.is_empty() && !name.contains(['{', '}']))
        {
            names.push(name.to_string());
        }
    }
    let mut conn = exec.connection();
    let mut shards = BTreeMap::new();
    let mut shard_names = std::collections::HashSet::new();
    for name in &names {
        let (stored, tags): (Option<usize>, Option<String>) = redis::cmd("HMGET")
            .arg(format!("{head}{name}}}:meta"))
            .arg("shards")
            .arg("tags")
            .query_async(&mut conn)
            .await
            .map_err(|e| to_error(e, "reading a queue's shard count"))?;
        let count = stored.unwrap_or(1).max(1);
        shards.insert(name.clone(), count);
        if count > 1 {
            // the bases its shards have (docs/PROTOCOL.md section 9): not queues of their own
            for s in 0..count as u32 {
                shard_names.insert(match tags.as_deref() {
                    Some("spread") => crate::keys::spread_tag(name, s, count as u32),
                    _ => format!("{name}:{s}"),
                });
            }
        }
    }
    Ok(shards
        .iter()
        .filter(|(name, _)| !shard_names.contains(name.as_str()))
        .map(|(name, &shards)| QueueEntry {
            name: name.clone(),
            shards,
        })
        .collect())
}

/// Delete every key of the queue: [`Queue::remove_queue`], for tools that list queues here.
///
/// ```no_run
/// # async fn demo(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
/// let deleted = crawlq::catalog::remove_queue(&q, false).await?;
/// # Ok(()) }
/// ```
pub async fn remove_queue<E: Executor>(q: &Queue<E>, even_if_leased: bool) -> Result<u64> {
    q.remove_queue(even_if_leased).await
}

/// `text` with SCAN's glob characters escaped, to match it literally.
fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn glob_characters_are_escaped() {
        assert_eq!(super::glob_escape("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
    }
}
