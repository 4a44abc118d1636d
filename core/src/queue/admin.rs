//! The whole queue: stats, whether it is finished, reclaim of expired leases, pause and resume, peek,
//! removal.

use super::*;

impl<E: Executor> Queue<E> {
    /// Delete every key of the queue (all its shards, its items, counters, dead letters and seen
    /// set); returns how many keys were deleted. Workers still running recreate parts of it on
    /// their next call: stop them first. Refuses ([`Error::InvalidArgument`]) while items are
    /// leased unless `even_if_leased`. A queue opened again under the name is a new one: a URL it
    /// held can be seeded again, by this client too (its known-seen cache is cleared by the new
    /// queue's seen epoch). This client goes on with its shard layout: its next seed (or
    /// page's links), or its next call of any kind if it asked for a count
    /// (`Config::shards`), makes the queue again with it, as it would a new queue; its reads
    /// before that make nothing again (a monitor does not bring a removed queue back).
    ///
    /// ```no_run
    /// # async fn demo(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let deleted = q.remove_queue(false).await?;
    /// # Ok(()) }
    /// ```
    pub async fn remove_queue(&self, even_if_leased: bool) -> Result<u64> {
        self.remove_queue_with_progress(even_if_leased, |_| {})
            .await
    }

    /// [`Queue::remove_queue`], calling `progress` after each bounded call with how many keys
    /// have been deleted so far, for a removal that takes a while to show how far it got. The
    /// last count it is given is the removal's total. A removal that does not run to the end
    /// (its future dropped, its process gone) leaves the queue part-removed: remove it again
    /// before using its name.
    ///
    /// ```no_run
    /// # async fn demo(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// q.remove_queue_with_progress(false, |keys| eprint!("\r{keys} keys deleted"))
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn remove_queue_with_progress(
        &self,
        even_if_leased: bool,
        progress: impl Fn(u64) + Send + Sync,
    ) -> Result<u64> {
        let stats = self.stats().await?;
        if stats.leased > 0 && !even_if_leased {
            return Err(Error::InvalidArgument(format!(
                "queue {} has {} leased items: stop its workers first (or remove it anyway)",
                self.name(),
                stats.leased
            )));
        }
        // the queue's own base (its meta, the wake list of a sharded queue) and each shard's, each
        // walked by bounded calls (queue_remove) on the node that holds it
        let layout = self.layout().await?;
        let mut bases = vec![self.ops()];
        if layout.count() > 1 {
            bases.extend(layout.all());
        }
        // (set first: a removal that fails part way has removed some of the home too)
        self.recheck_home.store(true, Ordering::Release);
        let mut deleted = 0u64;
        for ops in bases {
            let mut cursor = "0".to_string();
            loop {
                let reply = self
                    .exec
                    .eval(ops.queue_remove(&cursor, REMOVE_SCAN_COUNT))
                    .await?;
                let (next, n) = ops.decode_queue_remove(reply)?;
                deleted += n;
                progress(deleted);
                // a report's reader runs before the next step is sent (see delete_crawl's)
                self.exec.yield_now().await;
                if next == "0" {
                    break;
                }
                cursor = next;
            }
        }
        Ok(deleted)
    }

    /// Recover up to `limit` expired leases now, in every shard (lease calls also do this,
    /// bounded).
    pub async fn reclaim(&self, limit: usize) -> Result<ReclaimReport> {
        if limit == 0 {
            return Err(Error::InvalidArgument("limit must be at least 1".into()));
        }
        let layout = self.layout().await?;
        let mut total = ReclaimReport::default();
        for report in self
            .each_shard(layout, |ops| async move {
                // calls of RECLAIM_PER_CALL until `limit` are handled or none are left
                let mut sum = ReclaimReport::default();
                loop {
                    let handled = (sum.requeued + sum.dead) as usize;
                    let ask = (limit - handled).min(RECLAIM_PER_CALL);
                    let reply = self.eval_on(ops, ops.reclaim(ask)).await?;
                    let part = ops.decode_reclaim(reply)?;
                    sum.requeued += part.requeued;
                    sum.dead += part.dead;
                    sum.remaining = part.remaining;
                    let handled = (sum.requeued + sum.dead) as usize;
                    if part.remaining == 0 || part.requeued + part.dead == 0 || handled >= limit {
                        return Ok(sum);
                    }
                }
            })
            .await?
        {
            total.requeued += report.requeued;
            total.dead += report.dead;
            total.remaining += report.remaining;
        }
        self.flush_reports(layout, total.requeued).await;
        Ok(total)
    }

    /// One call per shard, concurrently; the results in shard order.
    pub(super) async fn each_shard<'a, R, F, Fut>(
        &'a self,
        layout: &'a Layout,
        call: F,
    ) -> Result<Vec<R>>
    where
        F: Fn(&'a Ops) -> Fut,
        Fut: Future<Output = Result<R>>,
    {
        futures_util::future::try_join_all(layout.all().iter().map(call)).await
    }

    /// A named crawl's counts ([`crate::SeedOptions::crawl`]), exact and O(1) per shard: the
    /// sums over the shards. A crawl never seeded answers zeros.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let s = q.crawl_stats("customer-42").await?;
    /// println!("{} pending, {} leased, {} done", s.pending(), s.leased, s.done);
    /// # Ok(()) }
    /// ```
    pub async fn crawl_stats(&self, crawl: &str) -> Result<crate::CrawlStats> {
        let layout = self.layout().await?;
        let per_shard = self
            .each_shard(layout, |ops| async move {
                let reply = self.exec.eval(ops.crawl_stats(crawl)?).await?;
                ops.decode_crawl_stats(reply)
            })
            .await?;
        Ok(per_shard
            .into_iter()
            .fold(crate::CrawlStats::default(), crate::CrawlStats::add))
    }

    /// Cap a named crawl: at most `cap` of its items leased at once, by all workers together
    /// (`None` removes the cap). A lease passes over a capped crawl's items while it is at its
    /// cap and takes the next crawl's on the same host; a host with nothing else waits, held,
    /// until an answer takes the crawl under its cap. With several shards the cap is split
    /// among them (each shard leases at most its share, the shares summing to `cap`), so `cap`
    /// must be at least the shard count. Hosts held for the crawl are released when the cap
    /// rises. Answers the crawl's stats after the change.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// q.set_crawl_cap("customer-42", Some(16)).await?; // a customer's plan: 16 fetches at once
    /// assert_eq!(q.crawl_stats("customer-42").await?.cap, Some(16));
    /// # Ok(()) }
    /// ```
    pub async fn set_crawl_cap(&self, crawl: &str, cap: Option<u64>) -> Result<crate::CrawlStats> {
        let layout = self.layout().await?;
        let shards = layout.count() as u64;
        if let Some(cap) = cap {
            if cap == 0 {
                return Err(Error::InvalidArgument(
                    "a crawl's cap must be at least 1 (pause_crawl stops a crawl)".into(),
                ));
            }
            if cap < shards {
                return Err(Error::InvalidArgument(format!(
                    "a crawl's cap ({cap}) must be at least the queue's shard count ({shards}): \
                     each shard leases at most its share of it"
                )));
            }
        }
        self.crawl_change(layout, crawl, |shard| {
            crate::CrawlChange::Cap(cap.map(|cap| cap_share(cap, shards, shard as u64)))
        })
        .await?;
        self.crawl_stats(crawl).await
    }

    /// Limit a named crawl's rate: at most `per_second` of its items leased a second, by all
    /// workers together, spaced evenly (`None` removes the rate). A lease passes over the crawl
    /// until its next lease time; a host with nothing else waits until then. With several
    /// shards each shard leases at most its share (`per_second / shards`), so a crawl whose
    /// hosts sit in a few shards gets only those shards' shares. Answers the crawl's stats.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// q.set_crawl_rate("trial-customer", Some(2.0)).await?; // two pages a second
    /// # Ok(()) }
    /// ```
    pub async fn set_crawl_rate(
        &self,
        crawl: &str,
        per_second: Option<f64>,
    ) -> Result<crate::CrawlStats> {
        if let Some(r) = per_second
            && !(r.is_finite() && r > 0.0 && r <= MAX_CRAWL_RATE)
        {
            return Err(Error::InvalidArgument(format!(
                "a crawl's rate must be above 0 and at most {MAX_CRAWL_RATE} leases a second, got {r}"
            )));
        }
        let layout = self.layout().await?;
        let shards = layout.count() as f64;
        self.crawl_change(layout, crawl, |_| {
            crate::CrawlChange::Rate(per_second.map(|r| r / shards))
        })
        .await?;
        self.crawl_stats(crawl).await
    }

    /// Weigh a named crawl against the others on the same hosts: on each host, crawls with due
    /// work are leased from in proportion to their weights (a crawl of weight 3 gets three
    /// leases to one of weight 1). `None` (or 1) is the default weight. The weight orders the
    /// items queued from now on; those queued before keep their places. Answers the crawl's
    /// stats after the change.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// q.set_crawl_weight("premium", Some(3)).await?;
    /// assert_eq!(q.crawl_stats("premium").await?.weight, 3);
    /// # Ok(()) }
    /// ```
    pub async fn set_crawl_weight(
        &self,
        crawl: &str,
        weight: Option<u64>,
    ) -> Result<crate::CrawlStats> {
        if let Some(w) = weight
            && !(1..=MAX_CRAWL_WEIGHT).contains(&w)
        {
            return Err(Error::InvalidArgument(format!(
                "a crawl's weight must be from 1 to {MAX_CRAWL_WEIGHT}, got {w}"
            )));
        }
        let layout = self.layout().await?;
        self.crawl_change(layout, crawl, |_| crate::CrawlChange::Weight(weight))
            .await?;
        self.crawl_stats(crawl).await
    }

    /// Give a named crawl a host budget: each host may add at most `urls` new URLs to the
    /// crawl (`None` removes the budget). A seed into the crawl of a new URL past it is refused,
    /// reported in the seed report's `invalid` list with the code `budget_exhausted` (the rest
    /// of the batch is seeded), and not marked seen, so it comes in once the budget grows.
    /// Duplicates and forced re-adds are not counted. The host's own budget
    /// ([`Queue::set_host_budget`], for all crawls together) holds as well. New URLs count from
    /// the time the crawl has a budget; removing it keeps the counts. Answers the crawl's stats.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// q.set_crawl_host_budget("trial-customer", Some(100)).await?; // 100 pages of each site
    /// assert_eq!(q.crawl_stats("trial-customer").await?.host_budget, Some(100));
    /// # Ok(()) }
    /// ```
    pub async fn set_crawl_host_budget(
        &self,
        crawl: &str,
        urls: Option<u64>,
    ) -> Result<crate::CrawlStats> {
        let layout = self.layout().await?;
        self.crawl_change(layout, crawl, |_| crate::CrawlChange::HostBudget(urls))
            .await?;
        self.crawl_stats(crawl).await
    }

    /// Pause a named crawl: none of its items is leased until [`Queue::resume_crawl`]; leases
    /// of it already handed out may be answered, seeds go on, and other crawls on the same
    /// hosts are leased as before (a host with only this crawl's items waits, held).
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// q.pause_crawl("customer-42").await?; // out of credit
    /// q.resume_crawl("customer-42").await?;
    /// # Ok(()) }
    /// ```
    pub async fn pause_crawl(&self, crawl: &str) -> Result<()> {
        let layout = self.layout().await?;
        self.crawl_change(layout, crawl, |_| crate::CrawlChange::Pause)
            .await
    }

    /// Resume a paused crawl: the hosts held for it go back to be leased (250 a call per
    /// shard, as many calls as it takes) and blocked lease calls wake. Resuming a crawl that
    /// is not paused changes nothing.
    pub async fn resume_crawl(&self, crawl: &str) -> Result<()> {
        let layout = self.layout().await?;
        self.crawl_change(layout, crawl, |_| crate::CrawlChange::Resume)
            .await
    }

    /// Delete a named crawl: its ready, delayed, leased and dead items, its counts, limits
    /// and listing. Runs as bounded calls (at most 500 entries each, every shard at once) while
    /// workers go on: the crawl is marked first, so none of its items is leased meanwhile and
    /// seeds into it are refused (`InvalidArgument`) until the deletion ends; its leases
    /// removed answer lost when acked. Other crawls' items and the hosts' settings are not
    /// touched. The crawl's URLs no longer count as seen: the name then starts a fresh crawl
    /// (a customer's re-run), to which its URLs are new, while other crawls' URLs stay seen.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let gone = q.delete_crawl("customer-42").await?; // the customer left
    /// println!("removed {} items", gone.removed());
    /// # Ok(()) }
    /// ```
    pub async fn delete_crawl(&self, crawl: &str) -> Result<crate::CrawlDeletion> {
        self.delete_crawl_with_progress(crawl, |_| {}).await
    }

    /// [`Queue::delete_crawl`], calling `progress` after each bounded call with what has been
    /// removed so far (all shards together), for a deletion that takes a while to show how far
    /// it got. The last figures it is given are the deletion's total.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// q.delete_crawl_with_progress("customer-42", |so_far| {
    ///     eprint!("\r{} items removed", so_far.removed());
    /// })
    /// .await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete_crawl_with_progress(
        &self,
        crawl: &str,
        progress: impl Fn(&crate::CrawlDeletion) + Send + Sync,
    ) -> Result<crate::CrawlDeletion> {
        const STEP_LIMIT: usize = 500;
        let layout = self.layout().await?;
        // (the shards run at once: each step adds to the one total the caller sees)
        let so_far = std::sync::Mutex::new(crate::CrawlDeletion {
            crawl: crawl.to_string(),
            ..Default::default()
        });
        let (so_far, progress) = (&so_far, &progress);
        self.each_shard(layout, |ops| async move {
            let (mut step, mut cursor) = ("leases".to_string(), "0".to_string());
            loop {
                let call = ops.crawl_delete(crawl, &step, &cursor, STEP_LIMIT)?;
                let (next, removed) = ops.decode_crawl_delete(self.eval_on(ops, call).await?)?;
                let total = {
                    let mut total = so_far.lock().unwrap_or_else(|e| e.into_inner());
                    total.add_step(&removed);
                    total.clone()
                };
                progress(&total);
                // the report's reader (a binding's callback that may stop the call) runs
                // before the next step is sent, so a call dropped then has run no step more
                self.exec.yield_now().await;
                match next {
                    Some((s, c)) => (step, cursor) = (s, c),
                    None => return Ok(()),
                }
            }
        })
        .await?;
        self.flush_reports(layout, 32).await;
        Ok(so_far.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// Apply a change to a crawl's limits in every shard, then release the hosts held for it
    /// in bounded calls while any are released.
    async fn crawl_change(
        &self,
        layout: &Layout,
        crawl: &str,
        change: impl Fn(usize) -> crate::CrawlChange,
    ) -> Result<()> {
        let change = &change;
        self.each_shard(layout, |ops| async move {
            let mut next = change(ops.shard_index());
            loop {
                let call = ops.crawl_config(crawl, &next)?;
                let (released, left) = ops.decode_crawl_config(self.eval_on(ops, call).await?)?;
                if released == 0 || left == 0 {
                    return Ok(());
                }
                next = crate::CrawlChange::Release;
            }
        })
        .await?;
        self.flush_reports(layout, 32).await;
        Ok(())
    }

    /// The named crawls of the queue, sorted: each that seeded an item or has a cap or pause
    /// (one call per shard).
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// for crawl in q.crawls().await? {
    ///     println!("{crawl}: {} pending", q.crawl_stats(&crawl).await?.pending());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn crawls(&self) -> Result<Vec<String>> {
        let layout = self.layout().await?;
        let per_shard = self
            .each_shard(layout, |ops| async move {
                ops.decode_crawls_list(self.exec.eval(ops.crawls_list()).await?)
            })
            .await?;
        let mut names: Vec<String> = per_shard.into_iter().flatten().collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// Depth and counters, exact and O(1) per shard: the sums over the shards, and (with
    /// several shards) each shard's own in [`Stats::shards`].
    pub async fn stats(&self) -> Result<Stats> {
        let layout = self.layout().await?;
        Ok(Stats::total(self.read_stats(layout).await?.0))
    }

    /// The queue's shards grouped by the node that serves them ([`Executor::node_groups`]),
    /// in shard order within a group.
    pub(super) async fn shards_by_node(&self, layout: &Layout) -> Vec<Vec<usize>> {
        let metas: Vec<String> = layout
            .all()
            .iter()
            .map(|ops| ops.keys().script_keys()[0].clone())
            .collect();
        let groups = self.exec.node_groups(&metas).await;
        let mut by_node: Vec<(usize, Vec<usize>)> = Vec::new();
        for (shard, group) in groups.into_iter().enumerate() {
            match by_node.iter_mut().find(|(g, _)| *g == group) {
                Some((_, shards)) => shards.push(shard),
                None => by_node.push((group, vec![shard])),
            }
        }
        by_node.into_iter().map(|(_, shards)| shards).collect()
    }

    /// Each shard's stats, read with one call per node that serves some of them (one call on
    /// one server, whatever the shard count), and whether that was one atomic reading of
    /// them all (one call). A node's call that fails (a slot moved since the node map was
    /// read) is made again shard by shard.
    async fn read_stats(&self, layout: &Layout) -> Result<(Vec<Stats>, bool)> {
        self.read_by_node(layout, Ops::stats_shards, Ops::stats, |ops, reply, _| {
            ops.decode_stats(reply)
        })
        .await
    }

    /// One reading of every shard: `together` (a script that reads several shards of one node,
    /// docs/PROTOCOL.md section 9, "Readings") once per node, or `alone` once per shard of a
    /// node whose call failed (a shard moved away since the node map was read); `decode` reads
    /// one shard's reply. Also answers whether every shard was read by one call (one atomic
    /// reading).
    pub(super) async fn read_by_node<T>(
        &self,
        layout: &Layout,
        together: fn(&Ops, &[&Ops]) -> ScriptCall,
        alone: fn(&Ops) -> ScriptCall,
        decode: fn(&Ops, Reply, usize) -> Result<T>,
    ) -> Result<(Vec<T>, bool)> {
        let one = |s: usize| async move {
            let ops = layout.shard(s);
            decode(ops, self.exec.eval(alone(ops)).await?, s)
        };
        if layout.count() == 1 {
            return Ok((vec![one(0).await?], true));
        }
        let by_node = self.shards_by_node(layout).await;
        let one_reading = by_node.len() == 1;
        let readings =
            futures_util::future::try_join_all(by_node.iter().map(|shards| async move {
                let first = layout.shard(shards[0]);
                let others: Vec<&Ops> = shards[1..].iter().map(|s| layout.shard(*s)).collect();
                let read = match self.exec.eval(together(first, &others)).await {
                    Ok(reply) => reply.array().and_then(|replies| {
                        if replies.len() != shards.len() {
                            return Err(Error::Protocol(format!(
                                "a reading of {} shards answered {}",
                                shards.len(),
                                replies.len()
                            )));
                        }
                        replies
                            .into_iter()
                            .zip(shards)
                            .map(|(reply, s)| decode(layout.shard(*s), reply, *s))
                            .collect::<Result<Vec<T>>>()
                    }),
                    Err(e) => Err(e),
                };
                match read {
                    Ok(values) => Ok::<_, Error>(shards.iter().copied().zip(values).collect()),
                    Err(e) if matches!(e.code(), "UNAVAILABLE" | "TIMEOUT") => Err(e),
                    Err(_) => {
                        futures_util::future::try_join_all(
                            shards
                                .iter()
                                .map(|s| async move { Ok((*s, one(*s).await?)) }),
                        )
                        .await
                    }
                }
            }))
            .await?;
        let mut read: Vec<(usize, T)> = readings.into_iter().flatten().collect();
        read.sort_by_key(|(s, _)| *s);
        Ok((
            read.into_iter().map(|(_, value)| value).collect(),
            one_reading,
        ))
    }

    /// The crawl is finished: nothing is queued or leased anywhere in the queue (done and dead
    /// items do not count). Every worker of every language can ask; a worker that seeds
    /// what it finds before it acks the page it came from keeps the queue unfinished until
    /// its children are queued, so `true` stays true until someone seeds again.
    ///
    /// The shards a node serves are read atomically by one script (on one server: all of
    /// them). Over several nodes the readings are not one moment, so a second reading
    /// confirms: idle twice on every shard with nothing seeded, leased or requeued in between. An expired lease of a dead worker counts as leased
    /// until a lease call or [`Queue::reclaim`] takes it back.
    ///
    /// ```no_run
    /// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// while !q.is_finished().await? {
    ///     for lease in q.lease(10, std::time::Duration::from_secs(1)).await? {
    ///         q.ack(&[lease.handle()]).await?;
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn is_finished(&self) -> Result<bool> {
        let layout = self.layout().await?;
        let (shards, one_reading) = self.read_stats(layout).await?;
        let first = Stats::total(shards);
        if !first.is_idle() {
            return Ok(false);
        }
        if one_reading {
            return Ok(true);
        }
        let second = Stats::total(self.read_stats(layout).await?.0);
        Ok(first.idle_across(&second))
    }

    /// Pause the whole queue for every worker: lease calls hand out nothing (blocking ones keep
    /// waiting) until [`Queue::resume`]; seeding, answering leases already handed out, stats
    /// and dead letters go on. Returns whether it was paused already.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// q.pause().await?;
    /// assert!(q.is_paused().await?);
    /// q.resume().await?; // blocked lease calls wake now
    /// # Ok(()) }
    /// ```
    pub async fn pause(&self) -> Result<bool> {
        self.set_paused(Some(true), None).await
    }

    /// Pause the whole queue for `duration` (by the Redis clock), as [`Queue::pause`] does
    /// until resumed: blocked lease calls take work again when it ends. Pausing a paused
    /// queue sets the new end. Returns whether it was paused already.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// q.pause_for(std::time::Duration::from_secs(300)).await?; // a maintenance window
    /// # Ok(()) }
    /// ```
    pub async fn pause_for(&self, duration: Duration) -> Result<bool> {
        if duration > crate::config::MAX_DURATION {
            return Err(Error::InvalidArgument(
                "a pause must be at most 100 years".into(),
            ));
        }
        self.set_paused(Some(true), Some(duration)).await
    }

    /// Let a paused queue lease again and wake the lease calls waiting on it. Returns whether
    /// it was paused.
    pub async fn resume(&self) -> Result<bool> {
        self.set_paused(Some(false), None).await
    }

    /// Whether the queue is paused (a timed pause is over once its end has passed).
    pub async fn is_paused(&self) -> Result<bool> {
        self.set_paused(None, None).await
    }

    /// Every shard's state changes, so no shard leases while paused; the answer is whether
    /// any shard was paused before (for a read: is paused now).
    async fn set_paused(&self, pause: Option<bool>, duration: Option<Duration>) -> Result<bool> {
        let layout = self.layout().await?;
        let states = self
            .each_shard(layout, |ops| async move {
                let reply = self.eval_on(ops, ops.pause(pause, duration)).await?;
                ops.decode_pause(reply)
            })
            .await?;
        if pause == Some(false) && states.iter().any(|(before, _)| *before) {
            self.flush_reports(layout, 32).await;
        }
        Ok(states.iter().any(|(before, _)| *before))
    }

    /// The ready items of one host (a host or a URL of it), in the order its leases would take
    /// them (best priority first, then oldest), from the `offset`-th on, without leasing:
    /// whether or not the host is due, held by its delay or paused. Delayed items (a seed delay
    /// or a retry's backoff) are not listed. One call of at most `limit` records (up to 250).
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// for item in q.peek_host("example.com", 20, 0).await? {
    ///     println!("{} (priority {})", item.url.as_deref().unwrap_or(""), item.priority);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn peek_host(
        &self,
        host: &str,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<StoredItem>> {
        if limit > PEEK_PER_CALL {
            return Err(Error::InvalidArgument(format!(
                "peek_host lists at most {PEEK_PER_CALL} items a call, not {limit}: page with the offset"
            )));
        }
        let key = self.home.host_key_of(host)?;
        let layout = self.layout().await?;
        let shard = layout.of_host(&key);
        let ops = layout.shard(shard);
        let reply = self
            .eval_on(ops, ops.peek_host(&key, limit, offset))
            .await?;
        Ok(ops
            .decode_peek(reply)?
            .into_iter()
            .map(|mut item| {
                item.id = layout.public_id(std::mem::take(&mut item.id), shard);
                item
            })
            .collect())
    }

    /// The items the next lease calls would take (one per leasable host, higher priority and
    /// older first across shards), without leasing. A limit over 250 is read in calls of 250
    /// hosts, so that none holds Redis for long; a lease between two of them can shift the
    /// hosts, so a long peek is a close look rather than a snapshot (no item is listed twice).
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// for item in q.peek(10).await? {
    ///     println!("{} {}", item.host, item.url.as_deref().unwrap_or(""));
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn peek(&self, limit: usize) -> Result<Vec<StoredItem>> {
        let layout = self.layout().await?;
        let per_shard = self
            .each_shard(layout, |ops| async move {
                let (items, _) = paged(
                    0,
                    limit,
                    PEEK_PER_CALL,
                    |i: &StoredItem| i.id.clone(),
                    |want, at| async move {
                        let reply = self.exec.eval(ops.peek(want, at)).await?;
                        Ok((ops.decode_peek(reply)?, 0))
                    },
                )
                .await?;
                Ok(items)
            })
            .await?;
        Ok(layout.merge_pages(
            per_shard,
            |i| &mut i.id,
            |a, b| (-i32::from(a.priority), a.ts).cmp(&(-i32::from(b.priority), b.ts)),
            limit,
            0,
        ))
    }
}

/// The largest crawl weight: a weight w divides each tag of a host in w (docs/crawls.md), and
/// a rank holds 2^37 tags per priority.
const MAX_CRAWL_WEIGHT: u64 = 1000;

/// The highest crawl rate, leases a second.
const MAX_CRAWL_RATE: f64 = 1_000_000.0;

/// Shard `shard`'s share of a crawl's cap over `shards` shards: the shares differ by at most one
/// and sum to `cap`.
fn cap_share(cap: u64, shards: u64, shard: u64) -> u64 {
    cap / shards + u64::from(shard < cap % shards)
}

/// The SCAN COUNT of each `queue_remove` call: about that many keys of the node looked at.
const REMOVE_SCAN_COUNT: usize = 1000;
