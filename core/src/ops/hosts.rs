//! Per-host calls: settings, the host's turn, budgets, the list of hosts, deletion, forgetting seen URLs.

use super::*;

impl Ops {
    /// Change what `change` names of a host (nothing: only read it).
    pub fn host_config(&self, host: &str, change: &HostChange) -> ScriptCall {
        let mut call = self.call(&scripts::HOST_CONFIG, 8);
        let duration_arg = |d: Option<Option<Duration>>| match d {
            Some(Some(d)) => millis(d).into_bytes(),
            Some(None) => Vec::new(),
            None => b"-".to_vec(),
        };
        call.args.push(host.as_bytes().to_vec());
        call.args.push(duration_arg(change.delay));
        call.args.push(match change.pause {
            HostPause::Keep => b"-".to_vec(),
            HostPause::Resume => Vec::new(),
            HostPause::Pause(None) => b"*".to_vec(),
            HostPause::Pause(Some(d)) => millis(d).into_bytes(),
        });
        call.args.push(match change.in_flight {
            Some(Some(n)) => n.to_string().into_bytes(),
            Some(None) => Vec::new(),
            None => b"-".to_vec(),
        });
        call.args
            .push(self.config.host_in_flight.to_string().into_bytes());
        call.args.push(duration_arg(change.robots_delay));
        call.args.push(match change.pacing {
            Some(Some(p)) => p.to_string().into_bytes(),
            Some(None) => Vec::new(),
            None => b"-".to_vec(),
        });
        call.args.push(self.pacing_arg());
        call
    }

    /// Take a turn of a host for a request that is not the fetch of one of its items (a
    /// redirect hop), `own` when the caller holds a lease of that host. Decode with
    /// [`Ops::decode_host_turn`].
    pub fn host_turn(&self, host: &str, own: bool, max_wait: Duration) -> ScriptCall {
        let mut call = self.call(&scripts::HOST_TURN, 6);
        call.args.push(host.as_bytes().to_vec());
        call.args.push(millis(self.config.host_delay).into_bytes());
        call.args
            .push(self.config.host_in_flight.to_string().into_bytes());
        call.args.push(self.pacing_arg());
        call.args
            .push(if own { b"1".to_vec() } else { b"0".to_vec() });
        call.args.push(millis(max_wait).into_bytes());
        call
    }

    /// The reply of [`Ops::host_turn`].
    pub fn decode_host_turn(&self, reply: Reply) -> Result<HostTurn> {
        let items = reply.array()?;
        expect_len(&items, 2, "host_turn")?;
        let at = items[1].int()?;
        let wait = || Duration::from_millis(at.max(0) as u64);
        match items[0].int()? {
            0 => Ok(HostTurn::Taken(wait())),
            1 => Ok(HostTurn::Full),
            2 => Ok(HostTurn::Paused((at >= 0).then_some(at))),
            3 => Ok(HostTurn::TooFar(wait())),
            other => Err(Error::Protocol(format!(
                "host_turn answered an unknown state {other}"
            ))),
        }
    }

    /// The workers' pacing as `lease` and `host_config` take it: `<mode>:<factor>:<max ms>`.
    pub(super) fn pacing_arg(&self) -> Vec<u8> {
        let c = &self.config;
        format!(
            "{}:{}:{}",
            c.host_delay_after.as_str(),
            c.host_delay_factor,
            millis(c.host_delay_max)
        )
        .into_bytes()
    }

    pub fn decode_host_config(&self, reply: Reply, host: &str) -> Result<HostInfo> {
        let items = reply.array()?;
        expect_len(&items, 14, "host_config")?;
        let held = items[3].int()?;
        let paused = items[4].int()?;
        let budget = items[5].int()?;
        let own_limit = items[8].int()?;
        let override_now = items[11].int()?;
        Ok(HostInfo {
            host: host.to_string(),
            delay_override_ms: (override_now >= 0).then_some(override_now as u64),
            adaptive_extra_ms: items[1].uint()?,
            ready: items[2].uint()?,
            held_until_ms: (held >= 0).then_some(held),
            paused: paused >= 0,
            paused_until_ms: (paused > 0).then_some(paused),
            budget: (budget >= 0).then_some(budget as u64),
            budget_used: items[6].uint()?,
            deleting: items[7].int()? == 1,
            in_flight_limit: (own_limit >= 0).then_some(own_limit as u32),
            in_flight: items[9].uint()?,
            full: items[10].int()? == 1,
            delay_from_robots: items[12].int()? == 1,
            pacing: match items[13].text()? {
                own if own.is_empty() => None,
                own => Some(own.parse()?),
            },
        })
    }

    /// Set (`Some(Some(n))`), remove (`Some(None)`) or only read (`None`) the budget of one
    /// host, or with `host` `None` the queue's default budget.
    pub fn host_budget(&self, host: Option<&str>, budget: Option<Option<u64>>) -> ScriptCall {
        let mut call = self.call(&scripts::HOST_BUDGET, 2);
        call.args.push(host.unwrap_or("").as_bytes().to_vec());
        call.args.push(match budget {
            Some(Some(n)) => n.to_string().into_bytes(),
            Some(None) => Vec::new(),
            None => b"-".to_vec(),
        });
        call
    }

    /// The reply of [`Ops::host_budget`]: (own budget, default budget, used).
    pub fn decode_host_budget(&self, reply: Reply) -> Result<(Option<u64>, Option<u64>, u64)> {
        let items = reply.array()?;
        expect_len(&items, 3, "host_budget")?;
        let own = items[0].int()?;
        let default = items[1].int()?;
        Ok((
            (own >= 0).then_some(own as u64),
            (default >= 0).then_some(default as u64),
            items[2].uint()?,
        ))
    }

    /// A page of the shard's hosts by item count, from `offset`; `lane_budget` bounds the
    /// lanes read (at least one host is answered).
    pub fn hosts_list(&self, offset: u64, limit: usize, lane_budget: usize) -> ScriptCall {
        let mut call = self.call(&scripts::HOSTS_LIST, 3);
        call.args.push(offset.to_string().into_bytes());
        call.args.push(limit.to_string().into_bytes());
        call.args.push(lane_budget.to_string().into_bytes());
        call
    }

    /// Pages of hosts of this shard and of others of the same queue on the same node, in one
    /// call (docs/PROTOCOL.md section 9, "Readings"): `(ops, offset, limit)` per shard, this
    /// one's first; at most `hosts` hosts answered and `lanes` lanes read in all.
    pub fn hosts_list_shards(
        &self,
        hosts: usize,
        lanes: usize,
        pages: &[(&Ops, u64, usize)],
    ) -> ScriptCall {
        let mut call = self.call(&scripts::HOSTS_LIST_SHARDS, 2 + pages.len() * 3);
        call.args.push(hosts.to_string().into_bytes());
        call.args.push(lanes.to_string().into_bytes());
        for (n, (ops, offset, limit)) in pages.iter().enumerate() {
            if n > 0 {
                call.args.push(ops.keys.base().as_bytes().to_vec());
            }
            call.args.push(offset.to_string().into_bytes());
            call.args.push(limit.to_string().into_bytes());
        }
        call
    }

    /// The replies of [`Ops::hosts_list_shards`] for the first shards asked (at least one; at
    /// most `asked`: the budgets ran out before the others), in the order asked.
    pub fn decode_hosts_list_shards(
        &self,
        reply: Reply,
        asked: usize,
    ) -> Result<Vec<(u64, Vec<HostCounts>)>> {
        let replies = reply.array()?;
        expect_len(&replies, 1, "hosts_list_shards")?;
        if replies.len() > asked {
            return Err(Error::Protocol(format!(
                "hosts_list_shards answered {} shards, {asked} asked",
                replies.len()
            )));
        }
        replies
            .into_iter()
            .map(|r| self.decode_hosts_list(r))
            .collect()
    }

    /// The reply of [`Ops::hosts_list`]: the shard's host count and the page.
    pub fn decode_hosts_list(&self, reply: Reply) -> Result<(u64, Vec<HostCounts>)> {
        let items = reply.array()?;
        expect_len(&items, 2, "hosts_list")?;
        let total = items[1].uint()?;
        let mut hosts = Vec::new();
        for row in items[2..].chunks(7) {
            let [host, count, ready, delayed, dead, due, paused] = row else {
                return Err(Error::Protocol("hosts_list reply is not in sevens".into()));
            };
            let (count, ready, delayed, dead) =
                (count.uint()?, ready.uint()?, delayed.uint()?, dead.uint()?);
            let (due, paused) = (due.int()?, paused.int()?);
            hosts.push(HostCounts {
                host: host.text()?,
                items: count,
                ready,
                delayed,
                leased: count.saturating_sub(ready + delayed + dead),
                dead,
                next_due_ms: (due >= 0).then_some(due),
                paused: paused >= 0,
                paused_until_ms: (paused > 0).then_some(paused),
            });
        }
        Ok((total, hosts))
    }

    /// One bounded step of deleting a host (see `core/scripts/host_delete.lua`).
    /// With `identities`, the reply also names each removed item (for [`Ops::seen_forget`]).
    /// `deletion` names this deletion in each of its calls ([`Ops::deletion_id`]): a deletion
    /// of the same host begun meanwhile by another client is then the one that finishes.
    pub fn host_delete(
        &self,
        host: &str,
        step: &str,
        cursor: &str,
        limit: usize,
        identities: bool,
        deletion: &str,
    ) -> ScriptCall {
        let mut call = self.call(&scripts::HOST_DELETE, 6);
        call.args.push(host.as_bytes().to_vec());
        call.args.push(step.as_bytes().to_vec());
        call.args.push(cursor.as_bytes().to_vec());
        call.args.push(limit.to_string().into_bytes());
        call.args.push(if identities {
            b"1".to_vec()
        } else {
            b"0".to_vec()
        });
        call.args.push(deletion.as_bytes().to_vec());
        call
    }

    /// A name for one host deletion, unique to it in practice: the process's random hash keys,
    /// the monotonic clock and a per-process count (no random source is needed, so it works on
    /// wasm32 too).
    ///
    /// ```
    /// let (a, b) = (crawlq::ops::Ops::deletion_id(5), crawlq::ops::Ops::deletion_id(5));
    /// assert_ne!(a, b);
    /// ```
    pub fn deletion_id(monotonic_ms: u64) -> String {
        use std::hash::{BuildHasher, Hasher};
        static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        static KEYS: std::sync::OnceLock<std::collections::hash_map::RandomState> =
            std::sync::OnceLock::new();
        let mut h = KEYS.get_or_init(Default::default).build_hasher();
        h.write_u64(monotonic_ms);
        h.write_u64(COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        h.write_usize(&COUNT as *const _ as usize);
        format!("{:016x}", h.finish())
    }

    /// The reply of [`Ops::host_delete`]: the next step (`None`: done) and cursor, what this
    /// step removed (`left`: the host's items now) and, when asked, the removed items'
    /// identities.
    #[allow(clippy::type_complexity)]
    pub fn decode_host_delete(
        &self,
        reply: Reply,
    ) -> Result<(Option<(String, String)>, HostDeletion, Vec<String>)> {
        let items = reply.array()?;
        expect_len(&items, 7, "host_delete")?;
        let identities = items[7..]
            .iter()
            .map(Reply::text)
            .collect::<Result<Vec<_>>>()?;
        let step = items[0].text()?;
        let removed = HostDeletion {
            host: String::new(),
            ready: items[2].uint()?,
            delayed: items[3].uint()?,
            leased: items[4].uint()?,
            dead: items[5].uint()?,
            left: items[6].uint()?,
            forgotten: 0,
        };
        let next = (!step.is_empty()).then(|| items[1].text().map(|c| (step, c)));
        Ok((next.transpose()?, removed, identities))
    }

    /// Remove the fingerprints of these identities (keys, canonical URLs or host keys; a named
    /// crawl's as `<crawl> NUL <identity>`, as `host_delete` answers them) from the seen set.
    pub fn seen_forget(&self, identities: &[String]) -> ScriptCall {
        let mut call = self.call(&scripts::SEEN_FORGET, identities.len() * 2);
        for identity in identities {
            let fp = normalize::Fingerprint::of(identity);
            call.args.push(fp.seen_member().to_string().into_bytes());
            let bucket = fp.bucket_hash().to_string();
            // (the script finds the member of the crawl's generation, and counts it off the
            // crawl's seen)
            call.args.push(match identity.split_once('\0') {
                Some((crawl, _)) => format!("{bucket}/{crawl}").into_bytes(),
                None => bucket.into_bytes(),
            });
        }
        call
    }
}
