//! Whole-queue calls: reclaim, stats, pause, peek, removal.

use super::*;

impl Ops {
    /// One step of removing this base's keys: a SCAN step from `cursor` (`"0"` to start) of
    /// about `count` keys, those of the base unlinked.
    pub fn queue_remove(&self, cursor: &str, count: usize) -> ScriptCall {
        let mut call = self.call(&scripts::QUEUE_REMOVE, 2);
        call.args.push(cursor.as_bytes().to_vec());
        call.args.push(count.to_string().into_bytes());
        call
    }

    /// The reply of [`Ops::queue_remove`]: (the next cursor, `"0"` when done; keys deleted).
    pub fn decode_queue_remove(&self, reply: Reply) -> Result<(String, u64)> {
        let items = reply.array()?;
        expect_len(&items, 2, "queue_remove")?;
        Ok((items[0].text()?, items[1].uint()?))
    }

    pub fn reclaim(&self, limit: usize) -> ScriptCall {
        let mut call = self.call(&scripts::RECLAIM, 2);
        call.args.push(limit.to_string().into_bytes());
        call.args
            .push(self.config.max_attempts.to_string().into_bytes());
        call
    }

    pub fn decode_reclaim(&self, reply: Reply) -> Result<ReclaimReport> {
        let items = reply.array()?;
        expect_len(&items, 3, "reclaim")?;
        Ok(ReclaimReport {
            requeued: items[0].uint()?,
            dead: items[1].uint()?,
            remaining: items[2].uint()?,
        })
    }

    pub fn stats(&self) -> ScriptCall {
        self.call(&scripts::STATS, 0)
    }

    /// A named crawl's counts in this shard: the `crawl_stats` script.
    pub fn crawl_stats(&self, crawl: &str) -> Result<ScriptCall> {
        crate::normalize::check_crawl(crawl).map_err(Error::InvalidArgument)?;
        let mut call = self.call(&scripts::CRAWL_STATS, 1);
        call.args.push(crawl.as_bytes().to_vec());
        Ok(call)
    }

    /// The reply of [`Ops::crawl_stats`].
    pub fn decode_crawl_stats(&self, reply: Reply) -> Result<crate::CrawlStats> {
        let items = reply.array()?;
        expect_len(&items, 15, "crawl_stats")?;
        let n = |i: usize| -> Result<u64> { Ok(items[i].int()?.max(0) as u64) };
        // (the recent counts, absent from the replies of an earlier build's library: 0)
        let recent = |i: usize| -> Result<u64> {
            Ok(items
                .get(i)
                .map(|r| r.int())
                .transpose()?
                .unwrap_or(0)
                .max(0) as u64)
        };
        Ok(crate::CrawlStats {
            ready: n(0)?,
            delayed: n(1)?,
            leased: n(2)?,
            dead: n(3)?,
            done: n(4)?,
            seen: n(5)?,
            seeded_total: n(6)?,
            cap: u64::try_from(items[7].int()?).ok(),
            paused: items[8].int()? == 1,
            held_hosts: n(9)?,
            weight: n(10)?,
            rate: items[11].text()?.parse().ok(),
            host_budget: u64::try_from(items[12].int()?).ok(),
            hosts: n(13)?,
            oldest_pending_age_ms: u64::try_from(items[14].int()?).ok(),
            // (absent from the replies of an earlier build's library)
            deleting: items.get(15).map(|d| d.int()).transpose()? == Some(1),
            done_per_second: crate::model::per_second_of_last_minute(
                recent(16)?,
                recent(17)?,
                recent(20)?,
            ),
            seeded_per_second: crate::model::per_second_of_last_minute(
                recent(18)?,
                recent(19)?,
                recent(20)?,
            ),
        })
    }

    /// A change to a named crawl's limits in this shard (`cap`: this shard's share of the
    /// crawl's cap): the `crawl_config` script, which then releases up to 250 hosts held for
    /// the crawl if it is not blocked.
    pub fn crawl_config(&self, crawl: &str, change: &CrawlChange) -> Result<ScriptCall> {
        crate::normalize::check_crawl(crawl).map_err(Error::InvalidArgument)?;
        let mut call = self.call(&scripts::CRAWL_CONFIG, 3);
        call.args.push(crawl.as_bytes().to_vec());
        // (a setting's name, then its value: '' removes it)
        fn setting(name: &str, value: Option<String>) -> [Vec<u8>; 2] {
            [name.into(), value.unwrap_or_default().into_bytes()]
        }
        match change {
            CrawlChange::Cap(share) => call
                .args
                .extend(setting("cap", share.map(|n| n.to_string()))),
            CrawlChange::Weight(weight) => call
                .args
                .extend(setting("weight", weight.map(|n| n.to_string()))),
            CrawlChange::Rate(rate) => call
                .args
                .extend(setting("rate", rate.map(|r| format!("{r}")))),
            CrawlChange::HostBudget(budget) => call
                .args
                .extend(setting("budget", budget.map(|n| n.to_string()))),
            CrawlChange::Pause => call.args.push(b"pause".to_vec()),
            CrawlChange::Resume => call.args.push(b"resume".to_vec()),
            CrawlChange::Release => call.args.push(Vec::new()),
        }
        Ok(call)
    }

    /// The reply of [`Ops::crawl_config`]: (hosts released, hosts still held).
    pub fn decode_crawl_config(&self, reply: Reply) -> Result<(u64, u64)> {
        let items = reply.array()?;
        expect_len(&items, 4, "crawl_config")?;
        Ok((items[0].uint()?, items[1].uint()?))
    }

    /// One step of a crawl's deletion in this shard: the `crawl_delete` script.
    pub fn crawl_delete(
        &self,
        crawl: &str,
        step: &str,
        cursor: &str,
        limit: usize,
    ) -> Result<ScriptCall> {
        crate::normalize::check_crawl(crawl).map_err(Error::InvalidArgument)?;
        let mut call = self.call(&scripts::CRAWL_DELETE, 4);
        call.args.push(crawl.as_bytes().to_vec());
        call.args.push(step.as_bytes().to_vec());
        call.args.push(cursor.as_bytes().to_vec());
        call.args.push(limit.to_string().into_bytes());
        Ok(call)
    }

    /// The reply of [`Ops::crawl_delete`]: the next step and cursor (`None`: done) and what this
    /// step removed.
    pub fn decode_crawl_delete(
        &self,
        reply: Reply,
    ) -> Result<(Option<(String, String)>, crate::CrawlDeletion)> {
        let items = reply.array()?;
        expect_len(&items, 6, "crawl_delete")?;
        let step = items[0].text()?;
        let removed = crate::CrawlDeletion {
            crawl: String::new(),
            ready: items[2].uint()?,
            delayed: items[3].uint()?,
            leased: items[4].uint()?,
            dead: items[5].uint()?,
        };
        let next = (!step.is_empty()).then(|| items[1].text().map(|c| (step, c)));
        Ok((next.transpose()?, removed))
    }

    /// The crawls this shard knows: the `crawls_list` script.
    pub fn crawls_list(&self) -> ScriptCall {
        self.call(&scripts::CRAWLS_LIST, 0)
    }

    /// The reply of [`Ops::crawls_list`].
    pub fn decode_crawls_list(&self, reply: Reply) -> Result<Vec<String>> {
        reply.array()?.into_iter().map(|r| r.text()).collect()
    }

    /// Stats of this shard and of `others` (shards of the same queue on the same node) in one
    /// atomic call (docs/PROTOCOL.md section 9, "Readings").
    pub fn stats_shards(&self, others: &[&Ops]) -> ScriptCall {
        self.with_other_bases(&scripts::STATS_SHARDS, others)
    }

    /// A call of `script` on this shard with the bases of `others` as its arguments.
    pub(super) fn with_other_bases(
        &self,
        script: &'static scripts::Script,
        others: &[&Ops],
    ) -> ScriptCall {
        let mut call = self.call(script, others.len());
        call.args
            .extend(others.iter().map(|o| o.keys.base().as_bytes().to_vec()));
        call
    }

    pub fn decode_stats(&self, reply: Reply) -> Result<Stats> {
        let items = reply.array()?;
        expect_len(&items, 22, "stats")?;
        let u = |i: usize| items[i].uint();
        let now_ms = items[0].int()?;
        let oldest = items[8].int()?;
        let (ready, delayed) = (u(1)?, u(5)?);
        Ok(Stats {
            now_ms,
            pending: ready + delayed,
            ready,
            hosts: u(2)?,
            done: u(3)?,
            seen: u(4)?,
            delayed,
            leased: u(6)?,
            dead: u(7)?,
            oldest_pending_age_ms: (oldest >= 0).then(|| (now_ms - oldest).max(0) as u64),
            seeded_total: u(9)?,
            duplicates_total: u(10)?,
            leased_total: u(11)?,
            acked_total: u(12)?,
            nacked_total: u(13)?,
            retried_total: u(14)?,
            reclaimed_total: u(15)?,
            released_total: u(16)?,
            dead_total: u(17)?,
            hosts_waiting: u(18)?,
            over_budget_total: u(19)?,
            revisits: u(20)?,
            seen_cache_hits_total: u(21)?,
            shards: Vec::new(),
        })
    }

    /// Pause (`Some(true)`: until resumed, or for `duration`), resume (`Some(false)`) or only
    /// read (`None`) the queue's state.
    pub fn pause(&self, pause: Option<bool>, duration: Option<Duration>) -> ScriptCall {
        let mut call = self.call(&scripts::PAUSE, 2);
        call.args.push(match pause {
            Some(true) => b"1".to_vec(),
            Some(false) => b"0".to_vec(),
            None => Vec::new(),
        });
        if let (Some(true), Some(d)) = (pause, duration) {
            call.args.push(millis(d).into_bytes());
        }
        call
    }

    /// The reply of [`Ops::pause`]: (paused before, paused now).
    pub fn decode_pause(&self, reply: Reply) -> Result<(bool, bool)> {
        let items = reply.array()?;
        expect_len(&items, 3, "pause")?;
        Ok((items[0].int()? == 1, items[1].int()? == 1))
    }

    pub fn decode_count(&self, reply: Reply) -> Result<u64> {
        reply.uint()
    }

    /// The heads of at most `limit` leasable hosts, skipping the first `offset`.
    pub fn peek(&self, limit: usize, offset: usize) -> ScriptCall {
        let mut call = self.call(&scripts::PEEK, 2);
        call.args.push(limit.to_string().into_bytes());
        call.args.push(offset.to_string().into_bytes());
        call
    }

    /// At most `limit` ready items of one host (its key, as stored), in the order its leases
    /// would take them, skipping the first `offset`.
    pub fn peek_host(&self, host: &str, limit: usize, offset: usize) -> ScriptCall {
        let mut call = self.peek(limit, offset);
        call.args.push(host.as_bytes().to_vec());
        call
    }

    pub fn decode_peek(&self, reply: Reply) -> Result<Vec<StoredItem>> {
        reply
            .array()?
            .iter()
            .map(|r| {
                let bytes = r.data()?;
                Ok(wire::decode_record(bytes).unwrap_or_else(|_| wire::salvage_record(bytes)))
            })
            .collect()
    }
}
