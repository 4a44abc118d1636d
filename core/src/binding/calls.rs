//! Calls every binding makes in one shape where the Rust API has two.

use crate::Queue;
use crate::error::Result;
use crate::queue::Executor;

/// `purge_dead(ids?)` in every language: the dead letters with these ids (how many of them
/// were deleted), or every dead letter (how many).
pub async fn purge_dead<E: Executor>(q: &Queue<E>, ids: Option<&[String]>) -> Result<u64> {
    match ids {
        Some(ids) => Ok(q.purge_dead_ids(ids).await?.iter().filter(|&&f| f).count() as u64),
        None => q.purge_dead().await,
    }
}
