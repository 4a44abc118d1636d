//! Hosts: politeness state, counts, pages, deletion, pauses, turns and pacing.

use crate::config::DelayAfter;
use std::time::Duration;

/// Politeness state of one host ([`crate::Queue::host_info`]).
///
/// ```no_run
/// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
/// let info = q.pause_host("example.com", None).await?;
/// assert!(info.paused && info.paused_until_ms.is_none()); // until resumed
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct HostInfo {
    pub host: String,
    /// The per-host delay override stored in Redis (`None`: the workers' default applies).
    pub delay_override_ms: Option<u64>,
    /// Extra delay built up by rate-limited nacks.
    pub adaptive_extra_ms: u64,
    /// Ready items of the host.
    pub ready: u64,
    /// Not leasable before this time (ms since epoch), if held back by its politeness delay
    /// or a timed pause (`None` while paused until resumed).
    pub held_until_ms: Option<i64>,
    /// Paused ([`crate::Queue::pause_host`]): no lease takes its items.
    pub paused: bool,
    /// When a timed pause ends (ms since epoch, the Redis clock); `None` when not paused or
    /// paused until resumed.
    pub paused_until_ms: Option<i64>,
    /// The most new URLs the host may add ([`crate::Queue::set_host_budget`], else the
    /// queue's default); `None`: no budget.
    pub budget: Option<u64>,
    /// New URLs the host added while budgets were set on the queue.
    pub budget_used: u64,
    /// A deletion of the host ([`crate::Queue::delete_host`]) is running: it holds the host
    /// paused, and pausing or resuming it changes nothing until it ends. A deletion that was
    /// interrupted (its client died) is finished by calling `delete_host` again.
    pub deleting: bool,
    /// The host's own in-flight limit ([`crate::Queue::set_host_in_flight`]; `Some(0)`: no
    /// limit whatever the workers' default); `None`: the workers' `host_in_flight` applies.
    pub in_flight_limit: Option<u32>,
    /// Items of the host counted in flight: leased while a limit applied to it, not answered.
    pub in_flight: u64,
    /// Held because it has as many items leased as its limit allows: leasable again once an
    /// answer frees a slot (and its politeness delay has passed).
    pub full: bool,
    /// The delay override came from the host's robots.txt Crawl-delay
    /// ([`crate::Queue::set_host_crawl_delay`]), not from an operator.
    pub delay_from_robots: bool,
    /// The host's own pacing ([`crate::Queue::set_host_delay_after`]); `None`: the workers'
    /// `host_delay_after` and `host_delay_factor` apply.
    pub pacing: Option<HostPacing>,
}

impl HostInfo {
    /// New URLs the host may still add (`None`: no budget).
    pub fn budget_remaining(&self) -> Option<u64> {
        self.budget.map(|b| b.saturating_sub(self.budget_used))
    }
}

/// One host's items ([`crate::Queue::list_hosts`]): every count is exact at the moment its
/// shard was read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostCounts {
    pub host: String,
    /// Items the host holds: ready + delayed + leased + dead.
    pub items: u64,
    pub ready: u64,
    pub delayed: u64,
    pub leased: u64,
    pub dead: u64,
    /// When its next ready item may be leased (ms since epoch, the Redis clock; now when it is
    /// due); `None` when it has no ready item or is paused until resumed.
    pub next_due_ms: Option<i64>,
    /// Paused ([`crate::Queue::pause_host`]).
    pub paused: bool,
    /// When a timed pause ends; `None` when not paused or paused until resumed.
    pub paused_until_ms: Option<i64>,
}

/// A page of [`crate::Queue::list_hosts`]: hosts with the most items first, then by name.
///
/// ```no_run
/// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
/// let mut cursor = None;
/// loop {
///     let page = q.list_hosts(cursor.as_deref(), 500).await?;
///     for h in &page.hosts {
///         println!("{} {} ready, {} leased", h.host, h.ready, h.leased);
///     }
///     match page.cursor {
///         Some(next) => cursor = Some(next),
///         None => break,
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPage {
    pub hosts: Vec<HostCounts>,
    /// Hosts that hold at least one item, in the whole queue.
    pub total: u64,
    /// Where the next page starts; `None` after the last one.
    pub cursor: Option<String>,
}

/// What [`crate::Queue::delete_host`] removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostDeletion {
    pub host: String,
    pub ready: u64,
    pub delayed: u64,
    /// Leases removed: their acks answer lost.
    pub leased: u64,
    pub dead: u64,
    /// Items of the host that arrived while it was being deleted (seeded, or retried into
    /// the delayed set after the scan passed): they stay, and are leasable.
    pub left: u64,
    /// Removed items whose fingerprints left the seen set (asked with `forget_seen`).
    pub forgotten: u64,
}

impl HostDeletion {
    /// Count one step of a deletion (one `host_delete` call) into this total: its removals add
    /// up, and what it left is what is left now.
    pub fn add_step(&mut self, step: &HostDeletion) {
        self.ready += step.ready;
        self.delayed += step.delayed;
        self.leased += step.leased;
        self.dead += step.dead;
        self.left = step.left;
    }

    /// Items removed in all.
    pub fn removed(&self) -> u64 {
        self.ready + self.delayed + self.leased + self.dead
    }
}

/// A change to a host's pause, as the `host_config` script takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostPause {
    /// Leave it as it is.
    #[default]
    Keep,
    /// End it: the host is leasable again (after what is left of its politeness delay).
    Resume,
    /// Pause for this long from now (the Redis clock), or until resumed (`None`).
    Pause(Option<Duration>),
}

/// What one `host_config` call changes of a host (each part `None`: left as it is; an
/// inner `None`: removed, so the workers' default applies).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct HostChange {
    /// The operator's delay.
    pub delay: Option<Option<Duration>>,
    pub pause: HostPause,
    /// The host's own in-flight limit.
    pub in_flight: Option<Option<u32>>,
    /// The delay from its robots.txt `Crawl-delay`, already capped.
    pub robots_delay: Option<Option<Duration>>,
    /// The host's own pacing (when its delay is counted from, and its delay factor).
    pub pacing: Option<Option<HostPacing>>,
}

/// What the `host_turn` script answered for a request to a host outside the frontier (see
/// [`crate::Queue::wait_host_turn`], which waits on it).
///
/// ```
/// use crawlq::HostTurn;
/// assert_ne!(HostTurn::Taken(std::time::Duration::ZERO), HostTurn::Full);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostTurn {
    /// A turn was taken: start the request after this long.
    Taken(std::time::Duration),
    /// The host's next turn is further away than the caller would wait (nothing taken).
    TooFar(std::time::Duration),
    /// The host has as many items in flight as its limit allows.
    Full,
    /// The host is paused until this time (ms since epoch), `None`: until resumed.
    Paused(Option<i64>),
}

/// A host's own pacing ([`crate::Queue::set_host_delay_after`]): when its delay is counted
/// from and, after the answer, its delay factor (`None`: the workers' `host_delay_factor`).
///
/// ```
/// use crawlq::{DelayAfter, HostPacing};
/// let slow = HostPacing { after: DelayAfter::Answer, factor: Some(2.0) };
/// assert_eq!(slow.to_string(), "answer:2");
/// assert_eq!("answer:2".parse::<HostPacing>().unwrap(), slow);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostPacing {
    pub after: DelayAfter,
    pub factor: Option<f64>,
}

impl HostPacing {
    /// A host's pacing as the bindings take it: `after` `"lease"`, `"answer"` or `None`
    /// (back to the workers' default; no factor then) and an optional factor (after the
    /// answer only). Range checks are [`crate::Queue::set_host_delay_after`]'s.
    ///
    /// ```
    /// use crawlq::{DelayAfter, HostPacing};
    /// let p = HostPacing::from_parts(Some("answer"), Some(2.0)).unwrap().unwrap();
    /// assert_eq!((p.after, p.factor), (DelayAfter::Answer, Some(2.0)));
    /// assert!(HostPacing::from_parts(None, None).unwrap().is_none());
    /// assert!(HostPacing::from_parts(Some("response"), None).is_err());
    /// assert!(HostPacing::from_parts(None, Some(2.0)).is_err());
    /// ```
    pub fn from_parts(
        after: Option<&str>,
        factor: Option<f64>,
    ) -> crate::Result<Option<HostPacing>> {
        match (after, factor) {
            (None, None) => Ok(None),
            (None, Some(f)) => Err(crate::Error::InvalidArgument(format!(
                "a delay factor ({f}) needs the mode \"answer\""
            ))),
            (Some(text), factor) => match DelayAfter::parse(text) {
                Some(after) => Ok(Some(HostPacing { after, factor })),
                None => Err(crate::Error::InvalidArgument(format!(
                    "a host's delay is counted after \"lease\" or \"answer\", got {text:?}"
                ))),
            },
        }
    }
}

/// As the `hostpacing` hash stores it: `lease`, `answer` or `answer:<factor>`.
impl std::fmt::Display for HostPacing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.after, self.factor) {
            (DelayAfter::Answer, Some(factor)) => write!(f, "answer:{factor}"),
            (after, _) => f.write_str(after.as_str()),
        }
    }
}

impl std::str::FromStr for HostPacing {
    type Err = crate::Error;

    fn from_str(text: &str) -> crate::Result<HostPacing> {
        let (mode, factor) = match text.split_once(':') {
            Some((mode, factor)) => (mode, Some(factor)),
            None => (text, None),
        };
        let after = DelayAfter::parse(mode);
        let factor = factor.map(|f| f.parse::<f64>().ok());
        match (after, factor) {
            (Some(after), None) => Ok(HostPacing {
                after,
                factor: None,
            }),
            (Some(DelayAfter::Answer), Some(Some(f))) => Ok(HostPacing {
                after: DelayAfter::Answer,
                factor: Some(f),
            }),
            _ => Err(crate::Error::Protocol(format!(
                "unexpected host pacing {text:?}"
            ))),
        }
    }
}
