//! Key layout of a queue. Every key carries the hash tag `{<queue>}` so a queue lives in one
//! Redis Cluster slot; the scripts build per-host and seen-bucket keys from [`Keys::base`].

use crate::error::{Error, Result};
use std::sync::Arc;

/// Names of the fixed keys (`<base>:<name>`). A script is passed only the first, `meta`, as
/// its one `KEYS` entry (it routes the call to the queue's Cluster slot) and builds the others
/// from the base, in this order.
pub const FIXED_KEYS: [&str; 12] = [
    "meta",
    "ready",
    "wait",
    "heads",
    "delayed",
    "leased",
    "leases",
    "dead",
    "deadrec",
    "hostdelay",
    "adaptive",
    "wake",
];

const META: usize = fixed_index("meta");
const WAKE: usize = fixed_index("wake");

/// Where `name` is in [`FIXED_KEYS`]: keys are found by name, so inserting one moves nothing
/// else. Panics (at compile time, for a constant) on a name that is not there.
const fn fixed_index(name: &str) -> usize {
    let mut i = 0;
    while i < FIXED_KEYS.len() {
        let (a, b) = (FIXED_KEYS[i].as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("not a fixed key name")
}

/// The keys of one queue.
///
/// ```
/// let keys = crawlq::keys::Keys::new("crawlq", "jobs").unwrap();
/// assert_eq!(keys.base(), "crawlq:{jobs}");
/// assert_eq!(keys.fixed()[0], "crawlq:{jobs}:meta");
/// assert_eq!(keys.lane("example.com", 0), "crawlq:{jobs}:l:0:example.com");
/// ```
#[derive(Debug, Clone)]
pub struct Keys {
    base: String,
    fixed: Arc<[String]>,
    script_keys: Arc<[String]>,
}

/// Check a key prefix and queue name: a name of 1..=200 bytes, and neither with braces (they
/// would break the hash tag) or control characters. The one check every binding uses.
///
/// ```
/// assert!(crawlq::keys::check_queue_name("crawlq", "jobs").is_ok());
/// assert_eq!(crawlq::keys::check_queue_name("crawlq", "a{b}").unwrap_err().code(), "CONFIG");
/// ```
pub fn check_queue_name(prefix: &str, queue: &str) -> Result<()> {
    Keys::new(prefix, queue).map(drop)
}

impl Keys {
    /// Validate the prefix and queue name and build the key set.
    pub fn new(prefix: &str, queue: &str) -> Result<Keys> {
        if queue.is_empty() || queue.len() > 200 {
            return Err(Error::Config(format!(
                "queue name must be 1..=200 bytes, got {}",
                queue.len()
            )));
        }
        for (what, s) in [("queue name", queue), ("key_prefix", prefix)] {
            if s.contains(['{', '}']) || s.chars().any(char::is_control) {
                return Err(Error::Config(format!(
                    "{what} {s:?} must not contain braces or control characters"
                )));
            }
        }
        let base = format!("{}{queue}}}", Keys::base_head(prefix));
        let fixed: Arc<[String]> = FIXED_KEYS.iter().map(|k| format!("{base}:{k}")).collect();
        let script_keys = Arc::from([fixed[META].clone()]);
        Ok(Keys {
            base,
            fixed,
            script_keys,
        })
    }

    /// The keys of shard `shard` of a queue split in more than one shard: base
    /// `<prefix>:{<queue>:<shard>}`, so each shard has a hash tag (a Redis Cluster slot) of its
    /// own. A queue of one shard uses [`Keys::new`]'s layout.
    ///
    /// ```
    /// let keys = crawlq::keys::Keys::shard("crawlq", "jobs", 3).unwrap();
    /// assert_eq!(keys.base(), "crawlq:{jobs:3}");
    /// ```
    pub fn shard(prefix: &str, queue: &str, shard: u32) -> Result<Keys> {
        check_queue_name(prefix, queue)?;
        let tagged = format!("{queue}:{shard}");
        Keys::new(prefix, &tagged)
    }

    /// The keys of shard `shard` of `count` in the spread layout of protocol 5: base
    /// `<prefix>:{<tag>}` with the tag of [`spread_tag`], so the shards' slots spread over the
    /// slot space evenly (and over a cluster's masters when their slots are spread evenly).
    ///
    /// ```
    /// let keys = crawlq::keys::Keys::spread_shard("crawlq", "jobs", 1, 3).unwrap();
    /// assert!(keys.base().starts_with("crawlq:{jobs:1~"));
    /// let slot = crawlq::keys::cluster_slot(keys.base());
    /// assert!((5461..10922).contains(&slot));
    /// ```
    pub fn spread_shard(prefix: &str, queue: &str, shard: u32, count: u32) -> Result<Keys> {
        check_queue_name(prefix, queue)?;
        Keys::new(prefix, &spread_tag(queue, shard, count))
    }

    /// What every base under `prefix` starts with: `<prefix>:{` (`{` for an empty prefix).
    ///
    /// ```
    /// assert_eq!(crawlq::keys::Keys::base_head("crawlq"), "crawlq:{");
    /// assert_eq!(crawlq::keys::Keys::base_head(""), "{");
    /// ```
    pub fn base_head(prefix: &str) -> String {
        if prefix.is_empty() {
            "{".to_string()
        } else {
            format!("{prefix}:{{")
        }
    }

    /// `<prefix>:{<queue>}`: the start of every key of the queue.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The fixed keys, in [`FIXED_KEYS`] order (cheap to clone).
    pub fn fixed(&self) -> &Arc<[String]> {
        &self.fixed
    }

    /// The `KEYS` of every script call: the queue's `meta` key alone (cheap to clone).
    pub fn script_keys(&self) -> &Arc<[String]> {
        &self.script_keys
    }

    /// The fixed key `name` (one of [`FIXED_KEYS`]; panics on another name).
    ///
    /// ```
    /// let keys = crawlq::keys::Keys::new("crawlq", "jobs").unwrap();
    /// assert_eq!(keys.named("wake"), "crawlq:{jobs}:wake");
    /// ```
    pub fn named(&self, name: &str) -> &str {
        &self.fixed[fixed_index(name)]
    }

    /// The queue's `meta` key: the one `KEYS` entry of every script call.
    pub fn meta(&self) -> &str {
        &self.fixed[META]
    }

    /// The list key `wake`, on which blocked lease calls wait.
    pub fn wake(&self) -> &str {
        &self.fixed[WAKE]
    }

    /// The ready lane of one host at one priority.
    pub fn lane(&self, host: &str, priority: i16) -> String {
        format!("{}:l:{priority}:{host}", self.base)
    }

    /// The set of priorities with a non-empty lane for one host.
    pub fn host_priorities(&self, host: &str) -> String {
        format!("{}:hp:{host}", self.base)
    }

    /// One bucket of the seen set.
    pub fn seen_bucket(&self, level: u32, bucket: u64) -> String {
        format!("{}:s:{level}:{bucket}", self.base)
    }
}

/// The Redis Cluster slot of a key: CRC16 (XMODEM) of its hash tag (the text between the first
/// `{` and the next `}`, when that is not empty), else of the whole key, modulo 16384.
///
/// ```
/// use crawlq::keys::cluster_slot;
/// assert_eq!(cluster_slot("123456789"), 12739);
/// assert_eq!(cluster_slot("crawlq:{jobs}:meta"), cluster_slot("{jobs}"));
/// assert_eq!(cluster_slot("a{}b"), cluster_slot("a{}b"));
/// ```
pub fn cluster_slot(key: &str) -> u16 {
    let bytes = key.as_bytes();
    let hashed = match bytes.iter().position(|&b| b == b'{') {
        Some(open) => match bytes[open + 1..].iter().position(|&b| b == b'}') {
            Some(len) if len > 0 => &bytes[open + 1..open + 1 + len],
            _ => bytes,
        },
        None => bytes,
    };
    crc16_xmodem(hashed) % 16384
}

/// The hash tag of shard `shard` of `count` (`count` > 1) in the spread layout (protocol 5):
/// `<queue>:<shard>~<k>`, k the smallest number from 0 whose tag's slot (CRC16 mod 16384) falls
/// in the middle three quarters of the shard's share of the slot space, `[lo + w/8, hi - w/8)`
/// with `lo = shard * 16384 / count`, `hi = (shard + 1) * 16384 / count` (integer division) and
/// `w = hi - lo`. A cluster whose masters hold equal runs of slots (as `redis-cli --cluster
/// create` makes them) then holds about `count / masters` shards on each master; the old tags
/// `<queue>:<shard>` left a master empty half the time with three shards on three masters.
///
/// ```
/// let tag = crawlq::keys::spread_tag("frontier", 0, 3);
/// assert!(tag.starts_with("frontier:0~"));
/// let slot = crawlq::keys::cluster_slot(&format!("{{{tag}}}"));
/// assert!((682..4779).contains(&slot));
/// ```
pub fn spread_tag(queue: &str, shard: u32, count: u32) -> String {
    let count = u64::from(count.max(1));
    let (lo, hi) = (
        u64::from(shard) * 16384 / count,
        (u64::from(shard) + 1) * 16384 / count,
    );
    let margin = (hi - lo) / 8;
    let window = (lo + margin)..(hi - margin);
    let head = format!("{queue}:{shard}~");
    // the checksum of the head once, then of each k's digits from there
    let start = crc16_update(0, head.as_bytes());
    let mut digits = itoa_buffer();
    for k in 0u64.. {
        let text = write_digits(&mut digits, k);
        let slot = u64::from(crc16_update(start, text) % 16384);
        if window.contains(&slot) {
            return format!("{head}{k}");
        }
    }
    unreachable!("some k lands in every window of at least 8 slots")
}

fn itoa_buffer() -> [u8; 20] {
    [0; 20]
}

/// The decimal digits of `n` in `buf`, as a slice of it.
fn write_digits(buf: &mut [u8; 20], mut n: u64) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

/// CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum Redis Cluster slots use.
fn crc16_xmodem(bytes: &[u8]) -> u16 {
    crc16_update(0, bytes)
}

/// [`crc16_xmodem`] of what `crc` covered followed by `bytes`.
fn crc16_update(mut crc: u16, bytes: &[u8]) -> u16 {
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The master of a slot in a cluster of `masters` whose slots `redis-cli --cluster create`
    /// spread evenly: equal runs, the remainder to the last ones.
    fn master_of(slot: u16, masters: u64) -> u64 {
        (0..masters)
            .find(|m| u64::from(slot) < (m + 1) * 16384 / masters)
            .expect("a slot below 16384")
    }

    /// Shards per master for queue `name` of `count` shards over `masters` masters.
    fn placement(name: &str, count: u32, masters: u64, spread: bool) -> Vec<u32> {
        let mut per_master = vec![0; masters as usize];
        for s in 0..count {
            let tag = if spread {
                spread_tag(name, s, count)
            } else {
                format!("{name}:{s}")
            };
            per_master[master_of(cluster_slot(&format!("{{{tag}}}")), masters) as usize] += 1;
        }
        per_master
    }

    #[test]
    fn spread_tags_put_at_least_their_share_of_shards_on_every_master() {
        // 1,000 queue names of the shapes people give them
        let names: Vec<String> = (0..1000)
            .map(|i| match i % 4 {
                0 => format!("frontier-{i}"),
                1 => format!("crawl:{i}:news"),
                2 => format!("q{i}"),
                _ => format!("shop.example/{i}"),
            })
            .collect();
        for count in [3u32, 24] {
            let mut old_even = 0;
            for name in &names {
                let spread = placement(name, count, 3, true);
                assert!(
                    spread.iter().all(|&n| n >= count / 3),
                    "{name}: {count} shards over 3 masters as {spread:?}"
                );
                old_even += usize::from(
                    placement(name, count, 3, false)
                        .iter()
                        .all(|&n| n >= count / 3),
                );
            }
            // what the numbered tags did: a master short of its share most of the time
            assert!(old_even < names.len() * 3 / 4, "S = {count}: {old_even}");
        }
    }

    #[test]
    fn a_spread_tag_lands_in_its_window_for_every_count() {
        for count in [2u32, 7, 64, 1000, 1024] {
            for s in (0..count).step_by((count as usize / 16).max(1)) {
                let slot = u64::from(cluster_slot(&format!(
                    "{{{}}}",
                    spread_tag("jobs", s, count)
                )));
                let (lo, hi) = (
                    u64::from(s) * 16384 / u64::from(count),
                    (u64::from(s) + 1) * 16384 / u64::from(count),
                );
                assert!(
                    (lo..hi).contains(&slot),
                    "S = {count}, shard {s}: slot {slot}"
                );
            }
        }
        assert_eq!(
            spread_tag("jobs", 5, 8),
            spread_tag("jobs", 5, 8),
            "the same for every client"
        );
    }
}
