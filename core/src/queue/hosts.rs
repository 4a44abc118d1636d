//! Per-host settings (delay, in-flight limit, delay after the answer, Crawl-delay, budget),
//! pause and resume, the host's turn for a redirect hop, the list of hosts and their deletion.

use super::*;

impl<E: Executor> Queue<E> {
    /// Set the politeness delay of one host for every worker (`None`: back to each worker's
    /// `host_delay`). `host` may be a host or a URL.
    pub async fn set_host_delay(&self, host: &str, delay: Option<Duration>) -> Result<HostInfo> {
        if delay.is_some_and(|d| d > crate::config::MAX_DURATION) {
            return Err(Error::InvalidArgument(
                "a host delay must be at most 100 years".into(),
            ));
        }
        // (host_config answers the override in force after the call)
        self.host_config(
            host,
            HostChange {
                delay: Some(delay),
                ..HostChange::default()
            },
        )
        .await
    }

    /// Set the in-flight limit of one host for every worker: the most of its items leased at
    /// once (`Some(0)`: no limit, whatever the workers' `host_in_flight`; `None`: back to it).
    /// A host that has as many items leased as its limit allows is held (`full` in
    /// [`HostInfo`]) until an ack, nack, release or expiry of one of them frees a slot; raising
    /// the limit frees it at once. Items leased while no limit applied are not counted.
    /// `host` may be a host or a URL.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let info = q.set_host_in_flight("slow.example", Some(1)).await?;
    /// assert_eq!(info.in_flight_limit, Some(1));
    /// # Ok(()) }
    /// ```
    pub async fn set_host_in_flight(&self, host: &str, limit: Option<u64>) -> Result<HostInfo> {
        let limit = match limit {
            Some(n) if n > crate::config::MAX_IN_FLIGHT as u64 => {
                return Err(Error::InvalidArgument(format!(
                    "an in-flight limit must be at most {}, got {n}",
                    crate::config::MAX_IN_FLIGHT
                )));
            }
            other => other.map(|n| n as u32),
        };
        let info = self
            .host_config(
                host,
                HostChange {
                    in_flight: Some(limit),
                    ..HostChange::default()
                },
            )
            .await?;
        if !info.full && info.ready > 0 {
            self.flush_reports(self.layout().await?, 1).await;
        }
        Ok(info)
    }

    /// Set when one host's delay is counted from, for every worker (`None`: back to the
    /// workers' `host_delay_after` and `host_delay_factor`). With [`DelayAfter::Answer`] its
    /// next lease waits its delay after the previous item's answer (ack, nack, release or
    /// expiry), or `factor` times how long that item was leased when longer (within the
    /// workers' `host_delay_max`; `None`: their `host_delay_factor`), and it has at most
    /// `max(limit, 1)` items in flight. Setting it back to [`DelayAfter::Lease`] or `None`
    /// frees a host held for an answer at once. `host` may be a host or a URL.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// use crawlq::{DelayAfter, HostPacing};
    /// let slow = HostPacing { after: DelayAfter::Answer, factor: Some(2.0) };
    /// let info = q.set_host_delay_after("slow.example", Some(slow)).await?;
    /// assert_eq!(info.pacing, Some(slow));
    /// # Ok(()) }
    /// ```
    pub async fn set_host_delay_after(
        &self,
        host: &str,
        pacing: Option<HostPacing>,
    ) -> Result<HostInfo> {
        if let Some(p) = pacing {
            match p.factor {
                Some(f) if p.after == DelayAfter::Lease => {
                    return Err(Error::InvalidArgument(format!(
                        "a delay factor ({f}) applies only after the answer, not after the lease"
                    )));
                }
                Some(f)
                    if !f.is_finite() || !(0.0..=crate::config::MAX_DELAY_FACTOR).contains(&f) =>
                {
                    return Err(Error::InvalidArgument(format!(
                        "a delay factor must be within 0..=1000, got {f}"
                    )));
                }
                _ => {}
            }
        }
        let info = self
            .host_config(
                host,
                HostChange {
                    pacing: Some(pacing),
                    ..HostChange::default()
                },
            )
            .await?;
        if !info.full && info.ready > 0 {
            self.flush_reports(self.layout().await?, 1).await;
        }
        Ok(info)
    }

    /// Set a host's delay from its robots.txt `Crawl-delay` (`None`: its robots.txt has none
    /// now), for every worker, unless an operator set one with [`Queue::set_host_delay`]: an
    /// operator's delay stays, and replaces one from robots.txt. A delay above the queue's
    /// `crawl_delay_max` (default 300 s) is taken as that. `host` may be a host or a URL.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// use std::time::Duration;
    /// // robots.txt of example.com says "Crawl-delay: 2"
    /// let info = q.set_host_crawl_delay("example.com", Some(Duration::from_secs(2))).await?;
    /// assert!(info.delay_from_robots || info.delay_override_ms.is_some());
    /// # Ok(()) }
    /// ```
    pub async fn set_host_crawl_delay(
        &self,
        host: &str,
        delay: Option<Duration>,
    ) -> Result<HostInfo> {
        let delay = delay.map(|d| d.min(self.config.crawl_delay_max));
        self.host_config(
            host,
            HostChange {
                robots_delay: Some(delay),
                ..HostChange::default()
            },
        )
        .await
    }

    /// Wait for a turn of the host of `url` for a request the frontier does not lease: a
    /// redirect that an HTTP client follows while it fetches a leased item. A turn is spaced
    /// from the host's leases and other turns by its delay, as a lease is, across every worker
    /// and shard: it waits until the host's politeness time, takes it, and moves the host's
    /// next lease to the turn + its delay. It waits while the host has as many items leased
    /// as its in-flight limit allows, or is paused. `lease` is the lease being fetched: a
    /// request to that lease's own host runs in its in-flight slot, and for a host paced after
    /// the answer it waits the delay from now (the answer that led to it). A turn counts in
    /// no in-flight slot. The whole queue being paused does not stop a turn (it is part of a
    /// fetch already under way).
    ///
    /// Returns `true` when the turn is taken and its time has come (start the request now),
    /// `false` when it would come later than `timeout` (nothing is taken then). A timeout
    /// over one day is refused.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// use std::time::Duration;
    /// let lease = q.lease(1, Duration::ZERO).await?.remove(0);
    /// // the fetch of lease.url answered 301 Location: https://www.example.com/
    /// if q.wait_host_turn("https://www.example.com/", Some(&lease.handle()), Duration::from_secs(30)).await? {
    ///     // follow the redirect now
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn wait_host_turn(
        &self,
        url: &str,
        lease: Option<&LeaseHandle>,
        timeout: Duration,
    ) -> Result<bool> {
        if timeout > MAX_WAIT {
            return Err(Error::InvalidArgument(
                "timeout must be at most one day".into(),
            ));
        }
        let key = self.home.host_key_of(url)?;
        let own = lease.is_some_and(|l| l.host == key);
        let started = self.exec.monotonic_ms();
        let timeout_ms = timeout.as_millis() as u64;
        loop {
            let layout = self.layout().await?;
            let ops = layout.shard(layout.of_host(&key));
            let left = timeout_ms.saturating_sub(self.exec.monotonic_ms().saturating_sub(started));
            let call = ops.host_turn(&key, own, Duration::from_millis(left));
            let turn = ops.decode_host_turn(self.eval_on(ops, call).await?)?;
            let probe = format!("{}:probe", ops.keys().base());
            match turn {
                HostTurn::Taken(wait) => {
                    if !wait.is_zero() {
                        // a key nobody pushes to: BLPOP is the executor's sleep
                        self.exec.wait(&probe, wait).await?;
                    }
                    return Ok(true);
                }
                HostTurn::TooFar(_) => return Ok(false),
                HostTurn::Full | HostTurn::Paused(_) => {
                    if left == 0 {
                        return Ok(false);
                    }
                    // (not the wake list: its markers are for blocked lease calls)
                    let poll = left.min(HOST_TURN_POLL.as_millis() as u64);
                    self.exec.wait(&probe, Duration::from_millis(poll)).await?;
                }
            }
        }
    }

    /// Politeness state of one host: its delay, ready items, hold and pause.
    pub async fn host_info(&self, host: &str) -> Result<HostInfo> {
        self.host_config(host, HostChange::default()).await
    }

    /// Pause one host for every worker: no lease takes its items until `duration` has passed
    /// (by the Redis clock) or, with `None`, until [`Queue::resume_host`]. Seeding it, and
    /// answering its leases already handed out, go on. Pausing a paused host sets the new end.
    /// `host` may be a host or a URL.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// use std::time::Duration;
    /// q.pause_host("example.com", Some(Duration::from_secs(600))).await?; // a 429 storm
    /// let info = q.host_info("https://example.com/a").await?;
    /// assert!(info.paused && info.paused_until_ms.is_some());
    /// q.resume_host("example.com").await?; // blocked lease calls wake now
    /// # Ok(()) }
    /// ```
    pub async fn pause_host(&self, host: &str, duration: Option<Duration>) -> Result<HostInfo> {
        if duration.is_some_and(|d| d > crate::config::MAX_DURATION) {
            return Err(Error::InvalidArgument(
                "a host pause must be at most 100 years".into(),
            ));
        }
        self.host_config(
            host,
            HostChange {
                pause: HostPause::Pause(duration),
                ..HostChange::default()
            },
        )
        .await
    }

    /// End a host's pause: it is leasable again once what was left of its politeness delay
    /// has passed, and blocked lease calls wake. A host that is not paused is left as it is.
    pub async fn resume_host(&self, host: &str) -> Result<HostInfo> {
        let info = self
            .host_config(
                host,
                HostChange {
                    pause: HostPause::Resume,
                    ..HostChange::default()
                },
            )
            .await?;
        if info.ready > 0 {
            self.flush_reports(self.layout().await?, 1).await;
        }
        Ok(info)
    }

    /// Set the most new URLs one host may add (`None`: back to the queue's default budget).
    /// Seeds of new URLs past it are refused, each reported in the seed report's `invalid`
    /// list with the code `budget_exhausted` (the rest of the batch is seeded); they are not
    /// marked seen, so they come in once the budget grows. Duplicates and forced re-adds are
    /// not counted. `host` may be a host or a URL.
    ///
    /// Usage is counted while the queue has any budget (a default or a host's): URLs added
    /// before the first budget was set do not count.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let info = q.set_host_budget("example.com", Some(10_000)).await?;
    /// assert_eq!(info.budget_remaining(), Some(10_000 - info.budget_used.min(10_000)));
    /// # Ok(()) }
    /// ```
    pub async fn set_host_budget(&self, host: &str, urls: Option<u64>) -> Result<HostInfo> {
        let key = self.home.host_key_of(host)?;
        let layout = self.layout().await?;
        let ops = layout.shard(layout.of_host(&key));
        // the host's state is read first: a foreign value at one of its keys fails the call
        // before the budget is written
        let mut info = self.host_info(&key).await?;
        let reply = self
            .exec
            .eval(ops.host_budget(Some(&key), Some(urls)))
            .await?;
        let (own, default, used) = ops.decode_host_budget(reply)?;
        info.budget = own.or(default);
        info.budget_used = used;
        Ok(info)
    }

    /// Set the budget of every host that has none of its own ([`Queue::set_host_budget`];
    /// `None`: no default).
    pub async fn set_default_host_budget(&self, urls: Option<u64>) -> Result<()> {
        let layout = self.layout().await?;
        self.each_shard(layout, |ops| async move {
            let reply = self.exec.eval(ops.host_budget(None, Some(urls))).await?;
            ops.decode_host_budget(reply)
        })
        .await?;
        Ok(())
    }

    /// The queue's default host budget, if any.
    pub async fn default_host_budget(&self) -> Result<Option<u64>> {
        let layout = self.layout().await?;
        let ops = layout.shard(0);
        let reply = self.exec.eval(ops.host_budget(None, None)).await?;
        Ok(ops.decode_host_budget(reply)?.1)
    }

    /// A page of the queue's hosts, those holding at least one item (queued, leased or dead):
    /// the most items first, then by host key, with each one's ready, delayed, leased and dead
    /// counts, pause and next due time. Pass the previous page's `cursor` for the next one.
    /// Each script call is bounded whatever the number of hosts: a page (`limit` hosts, at most
    /// 1,000) is read from each shard in calls of at most 250 hosts and 1,250 lanes (a host's
    /// lanes are read in one call). Hosts whose counts change between two calls may move
    /// between pages, or within a page between its calls.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let busiest = q.list_hosts(None, 10).await?;
    /// for h in &busiest.hosts {
    ///     println!("{}: {} items, {} ready", h.host, h.items, h.ready);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_hosts(&self, cursor: Option<&str>, limit: usize) -> Result<HostPage> {
        const MAX_LIMIT: usize = 1_000;
        // per script call: a few ms of Redis time on a slow machine (bench/README.md)
        const CALL_HOSTS: usize = 250;
        const CALL_LANES: usize = 1_250;
        if limit == 0 || limit > MAX_LIMIT {
            return Err(Error::InvalidArgument(format!(
                "list_hosts limit must be 1..={MAX_LIMIT}, got {limit}"
            )));
        }
        let layout = self.layout().await?;
        let offsets = parse_host_cursor(cursor, layout.count())?;
        let offsets = &offsets;
        // one shard's page alone, in calls of CALL_HOSTS
        let one_shard = |s: usize| async move {
            let ops = layout.shard(s);
            let (mut offset, mut page) = (offsets[s], Vec::new());
            loop {
                let want = (limit - page.len()).min(CALL_HOSTS);
                let reply = self
                    .exec
                    .eval(ops.hosts_list(offset, want, CALL_LANES))
                    .await?;
                let (total, hosts) = ops.decode_hosts_list(reply)?;
                offset += hosts.len() as u64;
                let none = hosts.is_empty();
                page.extend(hosts);
                // (a call answers fewer hosts than asked when it read its lanes' worth:
                // the next call goes on)
                if none || page.len() >= limit || offset >= total {
                    return Ok::<_, Error>((total, page));
                }
            }
        };
        let by_node = self.shards_by_node(layout).await;
        let pages = futures_util::future::try_join_all(by_node.iter().map(|shards| async move {
            if shards.len() == 1 {
                return Ok(vec![(shards[0], one_shard(shards[0]).await?)]);
            }
            // the node's shards in calls of at most CALL_HOSTS hosts and CALL_LANES lanes in
            // all (what one shard's call reads), each shard asked for the rest of its page
            // until it has `limit` hosts or answered its last
            let mut state: Vec<(usize, u64, Option<u64>, Vec<HostCounts>)> = shards
                .iter()
                .map(|s| (*s, offsets[*s], None, Vec::new()))
                .collect();
            loop {
                let asks: Vec<(usize, u64, usize)> = state
                    .iter()
                    .enumerate()
                    .filter(|(_, (_, offset, total, page))| {
                        total.is_none_or(|t| *offset < t) && page.len() < limit
                    })
                    .map(|(n, (_, offset, _, page))| (n, *offset, limit - page.len()))
                    .collect();
                if asks.is_empty() {
                    break;
                }
                let first = layout.shard(state[asks[0].0].0);
                let call: Vec<(&Ops, u64, usize)> = asks
                    .iter()
                    .map(|(n, offset, want)| (layout.shard(state[*n].0), *offset, *want))
                    .collect();
                let replies = match self
                    .exec
                    .eval(first.hosts_list_shards(CALL_HOSTS, CALL_LANES, &call))
                    .await
                {
                    Ok(reply) => first.decode_hosts_list_shards(reply, asks.len()),
                    Err(e) => Err(e),
                };
                let replies =
                    match replies {
                        Ok(replies) => replies,
                        Err(e) if matches!(e.code(), "UNAVAILABLE" | "TIMEOUT") => return Err(e),
                        Err(_) => {
                            // the node map was stale: each shard alone
                            return futures_util::future::try_join_all(shards.iter().map(
                                |s| async move { Ok::<_, Error>((*s, one_shard(*s).await?)) },
                            ))
                            .await;
                        }
                    };
                for ((n, _, _), (total, hosts)) in asks.iter().zip(replies) {
                    let (_, offset, known, page) = &mut state[*n];
                    *known = Some(total);
                    if hosts.is_empty() {
                        // nothing more answered (hosts left meanwhile): the shard's page ends
                        *offset = (*offset).max(total);
                    }
                    *offset += hosts.len() as u64;
                    page.extend(hosts);
                }
            }
            Ok(state
                .into_iter()
                .map(|(s, _, total, page)| (s, (total.unwrap_or(0), page)))
                .collect())
        }))
        .await?;
        let mut per_shard: Vec<(u64, Vec<HostCounts>)> = vec![(0, Vec::new()); layout.count()];
        for (s, page) in pages.into_iter().flatten() {
            per_shard[s] = page;
        }
        // Merge the shards' pages in order; stop where a shard that has more hosts ran out of
        // answered ones (its next host may sort before the others' rest).
        let mut next = offsets.clone();
        let mut taken = vec![0usize; per_shard.len()];
        let mut hosts = Vec::new();
        while hosts.len() < limit {
            let mut best: Option<usize> = None;
            let mut blocked = false;
            for (s, (total, page)) in per_shard.iter().enumerate() {
                match page.get(taken[s]) {
                    Some(h) => {
                        let better = best.is_none_or(|b| {
                            let o = &per_shard[b].1[taken[b]];
                            (std::cmp::Reverse(h.items), &h.host)
                                < (std::cmp::Reverse(o.items), &o.host)
                        });
                        if better {
                            best = Some(s);
                        }
                    }
                    None => blocked |= next[s] < *total,
                }
            }
            let Some(s) = best.filter(|_| !blocked) else {
                break;
            };
            hosts.push(per_shard[s].1[taken[s]].clone());
            taken[s] += 1;
            next[s] += 1;
        }
        let total: u64 = per_shard.iter().map(|(t, _)| t).sum();
        let more = per_shard.iter().zip(&next).any(|((t, _), n)| n < t);
        Ok(HostPage {
            hosts,
            total,
            cursor: more.then(|| {
                next.iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(".")
            }),
        })
    }

    /// Delete a host from the queue: its ready, delayed, leased and dead items, its lanes, its
    /// settings (delay override, adaptive delay, pause, budget and its count). Runs as bounded
    /// calls (at most 500 entries each) while workers go on: the host is paused first, so none
    /// of its items is leased meanwhile; the leases removed answer lost when acked, so no
    /// deleted item is acked as done. Its URLs stay in the seen set (seeding one again is a
    /// duplicate unless forced) unless `forget_seen`: then the removed items' fingerprints
    /// leave it too, so they can be seeded again (URLs of the host acked before are not
    /// forgotten: the queue keeps no record of them). Every counter stays exact. `host` may
    /// be a host or a URL.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let gone = q.delete_host("spam.example", false).await?;
    /// println!("removed {} items", gone.removed());
    /// # Ok(()) }
    /// ```
    pub async fn delete_host(&self, host: &str, forget_seen: bool) -> Result<HostDeletion> {
        self.delete_host_with_progress(host, forget_seen, |_| {})
            .await
    }

    /// [`Queue::delete_host`], calling `progress` after each bounded call with what has been
    /// removed so far, for a deletion that takes a while to show how far it got. The last
    /// figures it is given are the deletion's total.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// q.delete_host_with_progress("spam.example", false, |so_far| {
    ///     eprint!("\r{} items removed", so_far.removed());
    /// })
    /// .await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete_host_with_progress(
        &self,
        host: &str,
        forget_seen: bool,
        progress: impl Fn(&HostDeletion) + Send + Sync,
    ) -> Result<HostDeletion> {
        const STEP_LIMIT: usize = 500;
        let key = self.home.host_key_of(host)?;
        let layout = self.layout().await?;
        let ops = layout.shard(layout.of_host(&key));
        let mut total = HostDeletion {
            host: key.clone(),
            ..Default::default()
        };
        let (mut step, mut cursor) = ("leases".to_string(), "0".to_string());
        let deletion = Ops::deletion_id(self.exec.monotonic_ms());
        loop {
            let reply = self
                .exec
                .eval(ops.host_delete(&key, &step, &cursor, STEP_LIMIT, forget_seen, &deletion))
                .await?;
            let (next, removed, identities) = ops.decode_host_delete(reply)?;
            if !identities.is_empty() {
                let reply = self.exec.eval(ops.seen_forget(&identities)).await?;
                total.forgotten += ops.decode_count(reply)?;
            }
            total.add_step(&removed);
            progress(&total);
            // a report's reader runs before the next step is sent (see delete_crawl's)
            self.exec.yield_now().await;
            match next {
                Some((s, c)) => (step, cursor) = (s, c),
                None => break,
            }
        }
        if total.left > 0 {
            self.flush_reports(layout, 1).await;
        }
        Ok(total)
    }

    pub(super) async fn host_config(&self, host: &str, change: HostChange) -> Result<HostInfo> {
        let key = self.home.host_key_of(host)?;
        let layout = self.layout().await?;
        let ops = layout.shard(layout.of_host(&key));
        let reply = self.eval_on(ops, ops.host_config(&key, &change)).await?;
        ops.decode_host_config(reply, &key)
    }
}
