//! A queue split in shards by host. Each shard is a whole queue of protocol 4 with its own hash
//! tag (`<prefix>:{<queue>:<s>}`), so a Redis Cluster spreads the shards over its nodes and every
//! script still runs in one slot. What is written here once: which shard an item, a lease or a
//! dead letter belongs to, how ids name their shard, and how per-shard results are put back in
//! the caller's order. A queue of one shard keeps the layout and ids of an unsharded queue.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::keys::Keys;
use crate::model::LeaseHandle;
use crate::normalize::shard_of;
use crate::ops::{CallState, Ops};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// How a queue of several shards names their hash tags (docs/PROTOCOL.md section 9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardTags {
    /// `<queue>:<shard>~<k>`, spread over the slot space (protocol 5; every new queue).
    Spread,
    /// `<queue>:<shard>` (queues of several shards made by protocol 4 clients).
    Numbered,
}

/// The shards of one queue.
#[derive(Debug)]
pub struct Layout {
    shards: Vec<Ops>,
    tags: ShardTags,
}

/// The seen epoch each shard's last seed reply carried (docs/PROTOCOL.md, `seed`). An epoch
/// that moves says the shard was removed and made again, forgot seen URLs, or that its server
/// restarted or failed over and may have lost writes: the queue's home (on its own slot) may
/// have lost its shard count with them, so a client that adds items confirms it again
/// ([`crate::Queue`] writes its count back before its next addition).
///
/// ```
/// let watch = crawlq::shards::EpochWatch::default();
/// watch.note(0, Some("1:0:a"));
/// assert!(!watch.take_moved(), "a first epoch is no move");
/// watch.note(0, Some("1:0:b"));
/// assert!(watch.take_moved() && !watch.take_moved());
/// ```
#[derive(Debug, Default)]
pub struct EpochWatch {
    last: Mutex<HashMap<usize, String>>,
    moved: AtomicBool,
}

impl EpochWatch {
    /// Note the epoch a reply of `shard` carried (`None`: a reply without one).
    pub fn note(&self, shard: usize, epoch: Option<&str>) {
        let Some(epoch) = epoch else { return };
        let mut last = self.last.lock().expect("epoch watch");
        match last.get_mut(&shard) {
            Some(known) if known == epoch => {}
            Some(known) => {
                *known = epoch.to_string();
                self.moved.store(true, Ordering::Release);
            }
            None => {
                last.insert(shard, epoch.to_string());
            }
        }
    }

    /// Whether an epoch moved since the last call.
    pub fn take_moved(&self) -> bool {
        self.moved.swap(false, Ordering::AcqRel)
    }
}

/// Items of one call that belong to one shard: their positions in the caller's list, and
/// themselves.
#[derive(Debug)]
pub struct Part<T> {
    pub shard: usize,
    pub positions: Vec<usize>,
    pub items: Vec<T>,
}

impl Layout {
    /// The layout of `count` shards (1: the unsharded layout, base `<prefix>:{<queue>}`), with
    /// the spread tags of protocol 5 ([`crate::keys::spread_tag`]) or the earlier
    /// `<queue>:<shard>` ones (`tags`, as the queue's home says).
    pub fn new(
        queue: &str,
        config: &Config,
        count: u32,
        tags: ShardTags,
        state: &Arc<CallState>,
    ) -> Result<Layout> {
        let shards = if count <= 1 {
            vec![Keys::new(&config.key_prefix, queue)?]
        } else {
            (0..count)
                .map(|s| match tags {
                    ShardTags::Spread => Keys::spread_shard(&config.key_prefix, queue, s, count),
                    ShardTags::Numbered => Keys::shard(&config.key_prefix, queue, s),
                })
                .collect::<Result<Vec<_>>>()?
        };
        let reporting = shards.len() > 1;
        Ok(Layout {
            tags,
            shards: shards
                .into_iter()
                .enumerate()
                .map(|(s, keys)| {
                    let ops = Ops::with_keys(keys, config.clone(), state.clone());
                    match (reporting, tags) {
                        (false, _) => ops,
                        (true, ShardTags::Spread) => ops.reporting(s).split(count),
                        (true, ShardTags::Numbered) => ops.reporting(s),
                    }
                })
                .collect(),
        })
    }

    pub fn count(&self) -> usize {
        self.shards.len()
    }

    /// How the shards' hash tags are spelled.
    pub fn tags(&self) -> ShardTags {
        self.tags
    }

    pub fn shard(&self, s: usize) -> &Ops {
        &self.shards[s]
    }

    pub fn all(&self) -> &[Ops] {
        &self.shards
    }

    /// The shard of a host key.
    pub fn of_host(&self, host: &str) -> usize {
        shard_of(host, self.count() as u32) as usize
    }

    /// The id callers see for record id `id` of shard `s`: the record id with one shard,
    /// `<id>@<s>` with several (record ids are numbered per shard).
    pub fn public_id(&self, id: String, s: usize) -> String {
        if self.count() == 1 {
            id
        } else {
            format!("{id}@{s}")
        }
    }

    /// Give the leases of a batch from shard `s` their public ids ([`Layout::public_id`]).
    pub(crate) fn name_ids(&self, batch: &mut crate::ops::LeaseBatch, s: usize) {
        for lease in &mut batch.leases {
            lease.id = self.public_id(std::mem::take(&mut lease.id), s);
        }
        for u in &mut batch.undecodable {
            u.id = self.public_id(std::mem::take(&mut u.id), s);
        }
    }

    /// The window each shard is read with for a page of `limit` items from `offset` of the
    /// whole queue's list: that window with one shard; with several, each shard's first
    /// `offset + limit`, from which [`Layout::merge_pages`] cuts the page.
    pub(crate) fn shard_window(&self, limit: usize, offset: usize) -> (usize, usize) {
        if self.count() == 1 {
            (limit, offset)
        } else {
            (offset + limit, 0)
        }
    }

    /// The shards' pages (read with [`Layout::shard_window`], in shard order) as the page of
    /// `limit` items from `offset` of the whole list: each item's id (`id_of`) made public,
    /// the shards' items merged in the list's `order`.
    pub(crate) fn merge_pages<T>(
        &self,
        pages: Vec<Vec<T>>,
        id_of: impl Fn(&mut T) -> &mut String,
        order: impl Fn(&T, &T) -> std::cmp::Ordering,
        limit: usize,
        offset: usize,
    ) -> Vec<T> {
        let mut items = Vec::new();
        for (s, page) in pages.into_iter().enumerate() {
            items.extend(page.into_iter().map(|mut item| {
                let id = id_of(&mut item);
                *id = self.public_id(std::mem::take(id), s);
                item
            }));
        }
        if self.count() > 1 {
            items.sort_by(order);
            items = items.into_iter().skip(offset).take(limit).collect();
        }
        items
    }

    /// The shard and record id of an id a caller gives back.
    ///
    /// ```
    /// # let state = crawlq::ops::CallState::new(None);
    /// let layout = crawlq::shards::Layout::new("q", &crawlq::Config::default(), 4, crawlq::shards::ShardTags::Spread, &state).unwrap();
    /// assert_eq!(layout.split_id("17@3").unwrap(), (3, "17".to_string()));
    /// assert!(layout.split_id("17@9").is_err());
    /// ```
    pub fn split_id(&self, id: &str) -> Result<(usize, String)> {
        if self.count() == 1 {
            return Ok((0, id.to_string()));
        }
        let bad = || {
            Error::InvalidArgument(format!(
                "id {id:?} does not name one of the queue's {} shards (<id>@<shard>)",
                self.count()
            ))
        };
        let (record, shard) = id.rsplit_once('@').ok_or_else(bad)?;
        let shard: usize = shard.parse().map_err(|_| bad())?;
        if shard >= self.count() {
            return Err(bad());
        }
        Ok((shard, record.to_string()))
    }

    /// Lease handles grouped by shard (the one their id names; their host's shard when the id
    /// has none), with record ids.
    pub fn route(&self, handles: &[LeaseHandle]) -> Result<Vec<Part<LeaseHandle>>> {
        self.group(handles, |h| {
            let (shard, id) = if self.count() > 1 && !h.id.contains('@') {
                (self.of_host(&h.host), h.id.clone())
            } else {
                self.split_id(&h.id)?
            };
            Ok((shard, LeaseHandle { id, ..h.clone() }))
        })
    }

    /// Group `items` by the shard `place` gives each (with the item to send there).
    pub fn group<T, U>(
        &self,
        items: &[T],
        mut place: impl FnMut(&T) -> Result<(usize, U)>,
    ) -> Result<Vec<Part<U>>> {
        let mut parts: Vec<Part<U>> = Vec::new();
        let mut index_of = vec![usize::MAX; self.count()];
        for (position, item) in items.iter().enumerate() {
            let (shard, placed) = place(item)?;
            if index_of[shard] == usize::MAX {
                index_of[shard] = parts.len();
                parts.push(Part {
                    shard,
                    positions: Vec::new(),
                    items: Vec::new(),
                });
            }
            let part = &mut parts[index_of[shard]];
            part.positions.push(position);
            part.items.push(placed);
        }
        Ok(parts)
    }
}

/// Put per-part results back in the order of the caller's `len` items (every position is
/// in exactly one part).
pub fn reassemble<R>(len: usize, parts: Vec<(Vec<usize>, Vec<R>)>) -> Vec<R> {
    let mut out: Vec<Option<R>> = (0..len).map(|_| None).collect();
    for (positions, results) in parts {
        for (position, result) in positions.into_iter().zip(results) {
            out[position] = Some(result);
        }
    }
    out.into_iter()
        .map(|r| r.expect("every position answered by its shard"))
        .collect()
}
