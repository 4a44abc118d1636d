//! Leasing: which shards are due, blocking waits, and a lease taken together with an answer.

use super::*;

impl<E: Executor> Queue<E> {
    /// The leases workers hold now, soonest expiry first: `limit` of them after the first
    /// `offset`, with the total. An expired lease is listed until a lease call reclaims it (its
    /// `expires_at_ms` is then before `now_ms`). Read in calls of 500, so that none holds Redis
    /// for long; a lease taken or answered between two of them can shift the page (no lease is
    /// listed twice). For an operator (the web console); a worker has its own leases.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let page = q.leased_items(10, 0).await?;
    /// for held in &page.items {
    ///     let left_ms = held.expires_at_ms - page.now_ms;
    ///     println!("{} {} {left_ms} ms left", held.item.id, held.item.host);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn leased_items(&self, limit: usize, offset: usize) -> Result<LeasedPage> {
        let layout = self.layout().await?;
        let pages = self
            .each_shard(layout, |ops| async move {
                let (limit, offset) = layout.shard_window(limit, offset);
                // (the Redis clock of the shard's last call; atomic, as the future is Send)
                let now = std::sync::atomic::AtomicI64::new(0);
                let (items, total) = paged(
                    offset,
                    limit,
                    LEASED_LIST_PER_CALL,
                    |l: &LeasedItem| format!("{}:{}", l.token, l.item.id),
                    |want, at| {
                        let now = &now;
                        async move {
                            let reply = self.exec.eval(ops.leased_list(want, at)).await?;
                            let page = ops.decode_leased_list(reply)?;
                            now.store(page.now_ms, std::sync::atomic::Ordering::Relaxed);
                            Ok((page.items, page.total))
                        }
                    },
                )
                .await?;
                Ok(LeasedPage {
                    total,
                    now_ms: now.load(std::sync::atomic::Ordering::Relaxed),
                    items,
                })
            })
            .await?;
        let now_ms = pages.first().map_or(0, |page| page.now_ms);
        let total = pages.iter().map(|page| page.total).sum();
        let items = layout.merge_pages(
            pages.into_iter().map(|page| page.items).collect(),
            |l| &mut l.item.id,
            |a, b| {
                (a.expires_at_ms, a.token, &a.item.id).cmp(&(b.expires_at_ms, b.token, &b.item.id))
            },
            limit,
            offset,
        );
        Ok(LeasedPage {
            total,
            now_ms,
            items,
        })
    }

    /// Lease up to `max` items, waiting up to `wait` when nothing is ready.
    pub async fn lease(&self, max: usize, wait: Duration) -> Result<Vec<Lease>> {
        self.lease_with(&LeaseOptions {
            max,
            wait,
            ttl: None,
        })
        .await
    }

    /// Lease with all options. Returns an empty list when `wait` passes with nothing ready.
    pub async fn lease_with(&self, opts: &LeaseOptions) -> Result<Vec<Lease>> {
        self.lease_until(opts, None).await
    }

    /// [`Queue::lease_with`], its wait ending early (with no leases) when `until` is given.
    pub(super) async fn lease_until(
        &self,
        opts: &LeaseOptions,
        until: Option<&StopSignal>,
    ) -> Result<Vec<Lease>> {
        let ttl = self.lease_ttl(opts)?;
        self.lease_from(opts, ttl, self.exec.monotonic_ms(), None, until)
            .await
    }

    /// The lease time of `opts`, after checking them.
    pub(super) fn lease_ttl(&self, opts: &LeaseOptions) -> Result<Duration> {
        if !(1..=10_000).contains(&opts.max) {
            return Err(Error::InvalidArgument(format!(
                "max must be within 1..=10000, got {}",
                opts.max
            )));
        }
        if opts.wait > MAX_WAIT {
            return Err(Error::InvalidArgument(
                "wait must be at most one day".into(),
            ));
        }
        let ttl = opts.ttl.unwrap_or(self.config.lease_ttl);
        check_ttl(ttl)?;
        let every = self.config.extend_every;
        if !every.is_zero() && ttl <= every {
            return Err(Error::InvalidArgument(format!(
                "a lease time of {} ms would expire before the next extension (extend_every is {} ms)",
                ttl.as_millis(),
                every.as_millis()
            )));
        }
        Ok(ttl)
    }

    /// The lease loop of [`Queue::lease_with`] (checked options, lease time `ttl`), started at
    /// `started` (monotonic ms), its first batch `first` when a call already took one. Once
    /// `until` is given it stops (with no leases) at its wait or before its next script call,
    /// never during one: leases a script took are always returned.
    pub(super) async fn lease_from(
        &self,
        opts: &LeaseOptions,
        ttl: Duration,
        started: u64,
        mut first: Option<LeaseBatch>,
        until: Option<&StopSignal>,
    ) -> Result<Vec<Lease>> {
        let layout = self.layout().await?;
        let wait_ms = opts.wait.as_millis() as u64;
        let stopped = || self.stop_given(until);
        loop {
            let batch = match first.take() {
                Some(batch) => batch,
                None if stopped() => return Ok(Vec::new()),
                None => self.lease_once(opts.max, ttl).await?,
            };
            let buried = self.bury_undecodable(&batch.undecodable).await?;
            if !batch.leases.is_empty() {
                self.held
                    .record(&batch.leases, ttl, self.exec.monotonic_ms());
                return Ok(batch.leases);
            }
            if buried > 0 {
                // the batch was only poison: ask again at once
                continue;
            }
            let waited = self.exec.monotonic_ms().saturating_sub(started);
            if waited >= wait_ms {
                return Ok(Vec::new());
            }
            let mut sleep = wait_ms - waited;
            if let Some(due) = batch.next_due_ms {
                sleep = sleep.min((due - batch.now_ms).max(1) as u64);
            }
            if layout.count() > 1 {
                // work the index never heard of (its writer died before reporting) is found
                // by the next sweep: look again at least that often
                sleep = sleep.min(SWEEP_EVERY.as_millis() as u64);
            }
            let wait = self
                .exec
                .wait(self.wake_key(layout), Duration::from_millis(sleep));
            // a wait holds no leases: dropping it when a stop comes loses nothing
            let stop = async {
                match until {
                    None => self.closing.stopped().await,
                    Some(signal) => {
                        let (closed, signalled) = (
                            std::pin::pin!(self.closing.stopped()),
                            std::pin::pin!(signal.stopped()),
                        );
                        futures_util::future::select(closed, signalled).await;
                    }
                }
            };
            let (wait, stop) = (std::pin::pin!(wait), std::pin::pin!(stop));
            match futures_util::future::select(wait, stop).await {
                futures_util::future::Either::Left((woke, _)) => {
                    woke?;
                }
                futures_util::future::Either::Right(_) => return Ok(Vec::new()),
            }
        }
    }

    /// Ack `acks` and lease up to `opts.max` more items, in one script call (one round trip)
    /// when the acked leases are of one shard (always, with one shard): for a worker that
    /// answers each item and takes the next. The acks are applied first, exactly as
    /// [`Queue::ack`] applies them (the queue's `revisit_after` included), then the lease runs
    /// as [`Queue::lease_with`] (waiting up to `opts.wait` when nothing is ready). Returns one
    /// ack flag per lease (`false`: it was not live any more) and the new leases. Leases of
    /// several shards, or more than 500 of them, are acked by their own calls first.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// use crawlq::LeaseOptions;
    /// use std::time::Duration;
    /// let opts = LeaseOptions { max: 1, wait: Duration::from_secs(2), ttl: None };
    /// let mut leases = q.lease_with(&opts).await?;
    /// while let Some(lease) = leases.pop() {
    ///     // ... fetch lease.url ...
    ///     let (_acked, next) = q.ack_and_lease(&[lease.handle()], &opts).await?;
    ///     leases = next;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn ack_and_lease(
        &self,
        acks: &[LeaseHandle],
        opts: &LeaseOptions,
    ) -> Result<(Vec<bool>, Vec<Lease>)> {
        self.ack_and_lease_until(acks, opts, None).await
    }

    /// [`Queue::ack_and_lease`], its wait ending early (with no leases) when `until` is given.
    pub(super) async fn ack_and_lease_until(
        &self,
        acks: &[LeaseHandle],
        opts: &LeaseOptions,
        until: Option<&StopSignal>,
    ) -> Result<(Vec<bool>, Vec<Lease>)> {
        let ttl = self.lease_ttl(opts)?;
        if self.stop_given(until) {
            // stopped before it began: the acks alone, nothing leased to go back
            return Ok((self.ack(acks).await?, Vec::new()));
        }
        let started = self.exec.monotonic_ms();
        let layout = self.layout().await?;
        let parts = layout.route(acks)?;
        if acks.is_empty() || acks.len() > LEASES_PER_CALL || parts.len() != 1 {
            let flags = self.ack(acks).await?;
            return Ok((
                flags,
                self.lease_from(opts, ttl, started, None, until).await?,
            ));
        }
        let part = parts.into_iter().next().expect("one part");
        let s = part.shard;
        let ops = layout.shard(s);
        let ask = opts.max.min(LEASE_PER_CALL);
        let revisit = Revisit::After(self.config.revisit_after);
        let reply = self
            .eval_on(ops, ops.ack_lease(&part.items, revisit, ask, ttl))
            .await?;
        let (flags, batch) = ops.decode_ack_lease(reply, acks.len(), ttl)?;
        self.held.forget(acks);
        let leases = self
            .finish_combined_lease(layout, s, batch, ask, opts, ttl, started, 0, false, until)
            .await?;
        Ok((flags, leases))
    }

    /// The leases of a call that answered and leased on shard `shard` (`batch`, asked for
    /// `ask` of `opts.max`), finished as a lease call finishes them: ids named, the shard
    /// reports sent (with `markers` wake markers for what the call queued; the shard's own is
    /// not when it is still leasable, unless the call queued ready items there, `queued_here`,
    /// as the index may have had it as empty), the rest of `max` from the other shards or
    /// past one call's share, and the wait as [`Queue::lease_with`] waits.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn finish_combined_lease(
        &self,
        layout: &Layout,
        shard: usize,
        mut batch: LeaseBatch,
        ask: usize,
        opts: &LeaseOptions,
        ttl: Duration,
        started: u64,
        markers: u64,
        queued_here: bool,
        until: Option<&StopSignal>,
    ) -> Result<Vec<Lease>> {
        layout.name_ids(&mut batch, shard);
        if !queued_here {
            self.drop_still_due(&[shard], &mut batch);
        }
        self.flush_reports(
            layout,
            markers + batch.reclaimed.saturating_sub(batch.reclaimed_dead),
        )
        .await;
        let got = batch.leases.len() + batch.undecodable.len();
        let stopped = self.stop_given(until);
        if got < opts.max && (got == ask || layout.count() > 1) && !stopped {
            let more = self.lease_once(opts.max - got, ttl).await?;
            batch = batch.merge(more);
        }
        self.lease_from(opts, ttl, started, Some(batch), until)
            .await
    }

    /// [`Queue::ack_and_lease`] for the bindings: the acks as [`Answers`] (one flag for a
    /// single lease, `single`, or a list), the wait stopping early (with no leases) as
    /// [`Queue::lease_interruptible`]'s does, on `stop` (an [`Interrupt`]: a closure checked
    /// between slices of the wait, or a [`StopSignal`]). The acks stand either way.
    ///
    /// ```no_run
    /// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>, lease: crawlq::Lease) -> crawlq::Result<()> {
    /// let opts = crawlq::LeaseOptions { max: 1, wait: std::time::Duration::ZERO, ttl: None };
    /// let (acked, next) = q.ack_and_lease_answers(&[lease.handle()], true, &opts, || false).await?;
    /// assert_eq!(acked.to_json(crawlq::Style::Camel), serde_json::json!(true));
    /// # Ok(()) }
    /// ```
    pub async fn ack_and_lease_answers<S>(
        &self,
        acks: &[LeaseHandle],
        single: bool,
        opts: &LeaseOptions,
        mut stop: S,
    ) -> Result<(Answers, Vec<Lease>)>
    where
        S: Interrupt,
    {
        // checked whole here: the first call sees only a slice of the wait
        self.lease_ttl(opts)?;
        let started = self.exec.monotonic_ms();
        let total = opts.wait.as_millis() as u64;
        let slice = LeaseOptions {
            wait: opts.wait.min(WAIT_SLICE),
            ..*opts
        };
        let (flags, leases) = self
            .ack_and_lease_until(acks, &slice, stop.signal())
            .await?;
        let answers = Answers {
            results: AnswerResults::Flags(flags),
            single,
        };
        let waited = self.exec.monotonic_ms().saturating_sub(started);
        if !leases.is_empty() || waited >= total || stop.interrupted() || self.is_closed() {
            return Ok((answers, leases));
        }
        let rest = LeaseOptions {
            wait: Duration::from_millis(total - waited),
            ..*opts
        };
        Ok((answers, self.lease_interruptible(&rest, stop).await?))
    }

    /// [`Queue::lease_with`], giving up early (with an empty list) when `stop` says so: a
    /// closure is asked between slices of the wait (each at most [`WAIT_SLICE`]); a
    /// [`StopSignal`] ends the wait under way at once. Either way the call stops only while it
    /// waits, never during a script call, so no lease a script took is left unreturned.
    pub async fn lease_interruptible<S>(
        &self,
        opts: &LeaseOptions,
        mut stop: S,
    ) -> Result<Vec<Lease>>
    where
        S: Interrupt,
    {
        self.lease_interrupted_by(opts, &mut stop).await
    }

    /// [`Queue::lease_interruptible`] with an interrupt the caller keeps.
    pub(crate) async fn lease_interrupted_by<S>(
        &self,
        opts: &LeaseOptions,
        stop: &mut S,
    ) -> Result<Vec<Lease>>
    where
        S: Interrupt,
    {
        // checked whole here: each call below sees only a slice of the wait
        self.lease_ttl(opts)?;
        let started = self.exec.monotonic_ms();
        let total = opts.wait.as_millis() as u64;
        let slice_ms = WAIT_SLICE.as_millis() as u64;
        loop {
            let remaining = total.saturating_sub(self.exec.monotonic_ms().saturating_sub(started));
            let slice = LeaseOptions {
                wait: Duration::from_millis(remaining.min(slice_ms)),
                ..*opts
            };
            let leases = self.lease_until(&slice, stop.signal()).await?;
            if !leases.is_empty() || remaining <= slice_ms || stop.interrupted() || self.is_closed()
            {
                return Ok(leases);
            }
        }
    }

    /// Send leased records that cannot be decoded to dead letters (reason `undecodable: ...`),
    /// so one poison record never fails a lease call or sinks its batch-mates. Returns how many.
    pub async fn bury_undecodable(&self, undecodable: &[Undecodable]) -> Result<usize> {
        if undecodable.is_empty() {
            return Ok(0);
        }
        let nacks: Vec<(LeaseHandle, NackOptions)> = undecodable
            .iter()
            .map(|u| {
                let salvaged = crate::wire::salvage_record(u.raw.as_bytes());
                let handle = LeaseHandle {
                    token: u.token,
                    id: u.id.clone(),
                    host: salvaged.host,
                    url: salvaged.url,
                    key: salvaged.key,
                    crawl: salvaged.crawl,
                };
                let opts = NackOptions {
                    retry: false,
                    reason: Some(format!("undecodable: {}", u.error)),
                    ..NackOptions::default()
                };
                (handle, opts)
            })
            .collect();
        self.nack(&nacks).await?;
        Ok(undecodable.len())
    }

    /// Lease calls without waiting: the leases, reclaim counts and when something next becomes
    /// due. With several shards, the queue's index names the shards that may have something
    /// leasable now (one call on the queue's own base, which also sends the reports pending
    /// here); they are asked in turn, from a start that rotates with every call (so none is
    /// starved), until `max` leases came, and their reports go back to the index in one more
    /// call only when a shard's state changed from what the index said. An empty queue costs
    /// one call whatever its shard count. Each lease's id names its shard. Undecodable records
    /// are in the batch's `undecodable` (see [`Queue::bury_undecodable`]).
    pub async fn lease_once(&self, max: usize, ttl: Duration) -> Result<LeaseBatch> {
        let layout = self.layout().await?;
        let count = layout.count();
        if count == 1 {
            return self.lease_shard(layout.shard(0), max, ttl).await;
        }
        let viewed = {
            let view = self.view.lock().unwrap_or_else(|e| e.into_inner());
            view.as_ref()
                .filter(|(at, _)| self.exec.monotonic_ms().saturating_sub(*at) < VIEW_FOR)
                .map(|(_, pick)| pick.clone())
        };
        if let Some(pick) = viewed {
            let batch = self.lease_due(layout, &pick, max, ttl).await?;
            if !batch.leases.is_empty() || !batch.undecodable.is_empty() {
                return Ok(batch);
            }
            // the shards it named ran dry: ask the index again
        }
        let pick = self.due_pick(layout, count).await?;
        *self.view.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((self.exec.monotonic_ms(), pick.clone()));
        self.lease_due(layout, &pick, max, ttl).await
    }

    /// Lease from the shards `pick` names as due, in turn from a start that rotates with every
    /// call, until `max` leases came; then send the reports that changed something. A shard
    /// that had nothing leasable ends the reuse of `pick`.
    async fn lease_due(
        &self,
        layout: &Layout,
        pick: &DuePick,
        max: usize,
        ttl: Duration,
    ) -> Result<LeaseBatch> {
        let start = self.next_shard.fetch_add(1, Ordering::Relaxed);
        let mut batch = LeaseBatch {
            now_ms: pick.now_ms,
            next_due_ms: pick.next_ms,
            reclaimed: 0,
            reclaimed_dead: 0,
            leases: Vec::new(),
            undecodable: Vec::new(),
        };
        let due = pick.shards.len();
        let mut dry = false;
        for k in 0..due {
            let got = batch.leases.len() + batch.undecodable.len();
            if got >= max {
                break;
            }
            let s = pick.shards[(start + k) % due];
            let mut part = self.lease_shard(layout.shard(s), max - got, ttl).await?;
            dry |= part.leases.is_empty() && part.undecodable.is_empty();
            layout.name_ids(&mut part, s);
            batch = batch.merge(part);
        }
        let changed = self.drop_still_due(&pick.shards, &mut batch);
        if dry || changed {
            *self.view.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
        self.flush_reports(layout, batch.reclaimed.saturating_sub(batch.reclaimed_dead))
            .await;
        Ok(batch)
    }

    /// A shard of `due` (which the index has as due now) whose lease found it still leasable
    /// changes nothing there: its report is dropped, so a busy shard costs no index call. The
    /// other reports stay for [`Queue::flush_reports`]; those that come due later bring the
    /// batch's `next_due_ms` forward. Returns whether a report stayed (something changed).
    pub(super) fn drop_still_due(&self, due: &[usize], batch: &mut LeaseBatch) -> bool {
        let mut reports = self.pending_reports();
        reports.retain(|r| {
            !(r.kind == ReportKind::Set
                && r.at >= 0
                && r.at <= batch.now_ms
                && due.contains(&r.shard))
        });
        for r in reports.iter().filter(|r| r.at > batch.now_ms) {
            batch.next_due_ms = Some(batch.next_due_ms.map_or(r.at, |n| n.min(r.at)));
        }
        !reports.is_empty()
    }

    /// The shards of a queue of several that the index says may have something leasable now,
    /// sending the reports pending here in the same call. The caller that the index picks for
    /// a sweep (one per [`SWEEP_EVERY`] for the whole queue) first reads every shard's state
    /// and sends it: that repairs an index a client left behind when it died between a write
    /// and its report, and builds the index of a queue made before it had one.
    async fn due_pick(&self, layout: &Layout, count: usize) -> Result<DuePick> {
        let reports = std::mem::take(&mut *self.pending_reports());
        let call = self.home.due(&reports, 0, count, SWEEP_EVERY);
        let pick = match self.exec.eval(call).await {
            Ok(reply) => self.home.decode_due(reply)?,
            Err(e) => {
                self.pending_reports().extend(reports);
                return Err(e);
            }
        };
        if !pick.sweep {
            return Ok(pick);
        }
        let (states, _) = self
            .read_by_node(
                layout,
                Ops::shard_state_shards,
                Ops::shard_state,
                Ops::decode_shard_state,
            )
            .await?;
        let reply = self
            .exec
            .eval(self.home.due(&states, 0, count, Duration::ZERO))
            .await?;
        self.home.decode_due(reply)
    }

    /// Up to `max` leases from one shard, in calls of at most [`LEASE_PER_CALL`]: more calls
    /// only while each one hands out all it was asked for.
    async fn lease_shard(&self, ops: &Ops, max: usize, ttl: Duration) -> Result<LeaseBatch> {
        let mut batch: Option<LeaseBatch> = None;
        loop {
            let got = batch
                .as_ref()
                .map_or(0, |b| b.leases.len() + b.undecodable.len());
            let ask = (max - got).min(LEASE_PER_CALL);
            let reply = self.eval_on(ops, ops.lease(ask, ttl)).await?;
            let part = ops.decode_lease(reply, ttl)?;
            let full = part.leases.len() + part.undecodable.len() == ask;
            let sum = match batch {
                None => part,
                Some(sum) => sum.merge(part),
            };
            let done = !full || sum.leases.len() + sum.undecodable.len() >= max;
            batch = Some(sum);
            if done {
                return Ok(batch.expect("set above"));
            }
        }
    }
}
