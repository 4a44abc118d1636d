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
        let script_keys = Arc::from([fixed[0].clone()]);
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

    /// The list key `wake`, on which blocked lease calls wait.
    pub fn wake(&self) -> &str {
        &self.fixed[11]
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

/// CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum Redis Cluster slots use.
fn crc16_xmodem(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
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
