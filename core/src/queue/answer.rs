//! Answers to leases: ack (with a revisit, with a page's links), nack, extend, release, and the
//! held leases a client keeps extending.

use super::*;

impl<E: Executor> Queue<E> {
    /// One call per shard the leases belong to (chunks of [`LEASES_PER_CALL`]), concurrently;
    /// the results in the leases' order.
    async fn per_lease<'a, T, R, F, Fut>(
        &'a self,
        leases: &[T],
        route: impl Fn(&T) -> &LeaseHandle,
        call: F,
    ) -> Result<Vec<R>>
    where
        T: Clone,
        F: Fn(&'a Ops, Vec<(T, LeaseHandle)>) -> Fut,
        Fut: Future<Output = Result<Vec<R>>>,
    {
        let layout = self.layout().await?;
        let parts = layout.group(leases, |item| {
            let handle = route(item);
            let routed = layout.route(std::slice::from_ref(handle))?;
            let part = routed.into_iter().next().expect("one handle, one part");
            Ok((
                part.shard,
                (
                    item.clone(),
                    part.items.into_iter().next().expect("one handle"),
                ),
            ))
        })?;
        let results = self
            .each_part(parts, |s, items: Vec<(T, LeaseHandle)>| {
                let ops = layout.shard(s);
                let call = &call;
                async move {
                    let mut out = Vec::with_capacity(items.len());
                    for chunk in items.chunks(LEASES_PER_CALL) {
                        out.extend(call(ops, chunk.to_vec()).await?);
                    }
                    Ok(out)
                }
            })
            .await;
        Ok(reassemble(leases.len(), results?))
    }

    /// [`Queue::per_lease`] for leases that each come with their options: `call` gets the
    /// routed handles paired with their options.
    async fn per_lease_with<'a, O, R, F, Fut>(
        &'a self,
        leases: &[(LeaseHandle, O)],
        call: F,
    ) -> Result<Vec<R>>
    where
        O: Clone,
        F: Fn(&'a Ops, Vec<(LeaseHandle, O)>) -> Fut,
        Fut: Future<Output = Result<Vec<R>>>,
    {
        self.per_lease(
            leases,
            |(h, _)| h,
            |ops, chunk| {
                call(
                    ops,
                    chunk
                        .into_iter()
                        .map(|((_, opts), routed)| (routed, opts))
                        .collect(),
                )
            },
        )
        .await
    }

    /// [`Queue::per_lease`] for calls that take the routed handles only.
    async fn per_handle<'a, R, F, Fut>(&'a self, leases: &[LeaseHandle], call: F) -> Result<Vec<R>>
    where
        F: Fn(&'a Ops, Vec<LeaseHandle>) -> Fut,
        Fut: Future<Output = Result<Vec<R>>>,
    {
        self.per_lease(
            leases,
            |h| h,
            |ops, chunk| call(ops, chunk.into_iter().map(|(_, routed)| routed).collect()),
        )
        .await
    }

    /// Ack leases (the work is done). One flag per lease: `false` when the lease was not live
    /// any more (expired and reclaimed, or already answered): nothing changed for it.
    pub async fn ack(&self, leases: &[LeaseHandle]) -> Result<Vec<bool>> {
        self.ack_revisit(leases, self.config.revisit_after).await
    }

    /// Ack leases and queue each item again `after` from now (by the Redis clock; zero: never):
    /// a recrawl. Until then the URL stays known (seeding it is a duplicate) and waits in
    /// `delayed` (counted in `stats().revisits` too); it comes back with its attempt count
    /// reset, its payload and priority kept.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>, lease: crawlq::Lease) -> crawlq::Result<()> {
    /// // fetched: look again in a day
    /// q.ack_revisit(&[lease.handle()], std::time::Duration::from_secs(86_400)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn ack_revisit(&self, leases: &[LeaseHandle], after: Duration) -> Result<Vec<bool>> {
        if after > crate::config::MAX_DURATION {
            return Err(Error::InvalidArgument(
                "a revisit must be at most 100 years away".into(),
            ));
        }
        self.ack_with(leases, Revisit::After(after)).await
    }

    /// [`Queue::ack_revisit`] at a time (ms since the epoch, by the Redis clock; a time already
    /// past: the items are due at once).
    pub async fn ack_revisit_at(&self, leases: &[LeaseHandle], at_ms: i64) -> Result<Vec<bool>> {
        if !(0..=crate::config::MAX_TIMESTAMP_MS).contains(&at_ms) {
            return Err(Error::InvalidArgument(format!(
                "a revisit time must be in ms since the epoch, got {at_ms}"
            )));
        }
        self.ack_with(leases, Revisit::At(at_ms)).await
    }

    async fn ack_with(&self, leases: &[LeaseHandle], after: Revisit) -> Result<Vec<bool>> {
        let flags = self
            .per_handle(leases, |ops, handles| async move {
                let reply = self.eval_on(ops, ops.ack(&handles, after)).await?;
                ops.decode_flags(reply, handles.len())
            })
            .await?;
        self.held.forget(leases);
        // An ack reports when it freed a host's in-flight slot (the host is leasable now) or
        // queued a revisit: the index hears it at once, and blocked leases wake.
        if !self.pending_reports().is_empty() {
            self.flush_reports(self.layout().await?, 1).await;
        }
        Ok(flags)
    }

    /// Answer a fetched page and seed the links it found, in one round trip: the links are
    /// seeded as [`Queue::seed`] seeds them (with `opts`), then the lease is acked as
    /// [`Queue::ack`] acks it (the queue's `revisit_after` included), in one script call, so
    /// the frontier never looks finished in between. Returns whether the lease was still live
    /// and the links' report (per link: its id, a duplicate, or invalid with its index in
    /// `links`). Links resolve against the page's URL as a browser resolves an `href`
    /// (`next.html`, `/about`, `?page=2`; a link of another scheme is refused per link:
    /// [`crate::normalize::normalize_link`]); a host item's links are inputs as `seed` takes
    /// them. Links go into the lease's crawl unless `opts` names another
    /// ([`SeedOptions::crawl`]). The links are seeded even when the lease is no longer live (it expired and
    /// was reclaimed, or was answered): nothing found is lost, and whoever fetches the page
    /// again finds them duplicates.
    ///
    /// One call when the valid links fit one call (250): with several shards, one call on the
    /// lease's shard with the links of that shard (the usual page: most links are to its own
    /// site), after one on each other shard its links go to. The page is answered only once
    /// those are in: when one fails, the call answers its error and the page stays leased
    /// (answered again, its links that went in are duplicates). With more than 250 for one
    /// shard, the links are seeded first (as [`Queue::seed`]) and the ack follows.
    /// [`Queue::ack_with_links_and_lease`] also leases the next items in the same call.
    ///
    /// Pages that other tasks answer through this queue while such a call is on its way wait
    /// for it and then go together, in one call per shard (one crawl, one lease time per
    /// call; up to 250 links and 64 pages): its fixed work in Redis is paid once for all of
    /// them, and each page still gets its own flag, report and leases. A page answered with
    /// no call on its way goes at once.
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// use std::time::Duration;
    /// let lease = q.lease(1, Duration::from_secs(5)).await?.remove(0);
    /// // ... fetch lease.url, parse its links ...
    /// let links: Vec<crawlq::SeedItem> = ["https://example.com/a", "https://example.com/b"].map(Into::into).into();
    /// let (acked, report) = q.ack_with_links(&lease.handle(), &links, &crawlq::SeedOptions::default()).await?;
    /// println!("acked: {acked}, {} new links", report.added);
    /// # Ok(()) }
    /// ```
    pub async fn ack_with_links(
        &self,
        lease: &LeaseHandle,
        links: &[SeedItem],
        opts: &SeedOptions,
    ) -> Result<(bool, SeedReport)> {
        let (acked, report, _) = self.answer_page(lease, links, opts, None, None).await?;
        Ok((acked, report))
    }

    /// [`Queue::ack_with_links`], then lease the next items as [`Queue::lease_with`] does
    /// (`next`): a worker's whole turn on a page (its links, its ack, the next page) in one
    /// round trip. The lease waits as `lease_with` waits when nothing is due; it runs whether
    /// or not the answered lease was still live. One call as [`Queue::ack_with_links`] says
    /// (with several shards the next items come from the lease's shard first, then from the
    /// others, as [`Queue::ack_and_lease`] takes them); past 250 links the links are seeded
    /// first and the ack and lease follow as [`Queue::ack_and_lease`].
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// use std::time::Duration;
    /// let next = crawlq::LeaseOptions { max: 1, wait: Duration::from_secs(5), ttl: None };
    /// let mut leases = q.lease_with(&next).await?;
    /// while let Some(lease) = leases.pop() {
    ///     // ... fetch lease.url, parse its links ...
    ///     let links: Vec<crawlq::SeedItem> = vec!["https://example.com/a".into()];
    ///     let (_acked, _report, more) = q
    ///         .ack_with_links_and_lease(&lease.handle(), &links, &crawlq::SeedOptions::default(), &next)
    ///         .await?;
    ///     leases = more;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn ack_with_links_and_lease(
        &self,
        lease: &LeaseHandle,
        links: &[SeedItem],
        opts: &SeedOptions,
        next: &LeaseOptions,
    ) -> Result<(bool, SeedReport, Vec<Lease>)> {
        self.answer_page(lease, links, opts, Some(next), None).await
    }

    /// [`Queue::ack_with_links_and_lease`] for the bindings: the wait stopping early (with no
    /// leases) as [`Queue::lease_interruptible`]'s does, on `stop` (an [`Interrupt`]: a closure
    /// checked between slices of the wait, or a [`StopSignal`]). The answer and the links
    /// stand either way.
    pub async fn ack_with_links_and_lease_interruptible<S>(
        &self,
        lease: &LeaseHandle,
        links: &[SeedItem],
        opts: &SeedOptions,
        next: &LeaseOptions,
        mut stop: S,
    ) -> Result<(bool, SeedReport, Vec<Lease>)>
    where
        S: Interrupt,
    {
        // checked whole here: the first call sees only a slice of the wait
        self.lease_ttl(next)?;
        let started = self.exec.monotonic_ms();
        let total = next.wait.as_millis() as u64;
        let slice = LeaseOptions {
            wait: next.wait.min(WAIT_SLICE),
            ..*next
        };
        let (acked, report, leases) = self
            .answer_page(lease, links, opts, Some(&slice), stop.signal())
            .await?;
        let waited = self.exec.monotonic_ms().saturating_sub(started);
        if !leases.is_empty() || waited >= total || stop.interrupted() {
            return Ok((acked, report, leases));
        }
        let rest = LeaseOptions {
            wait: Duration::from_millis(total - waited),
            ..*next
        };
        Ok((acked, report, self.lease_interruptible(&rest, stop).await?))
    }

    /// Fail leases: retry (backoff or explicit delay) or dead-letter each one.
    ///
    /// A payload in the options replaces the item's stored payload (checked for every lease
    /// before anything is sent: a payload that is not valid is an error for the whole call).
    pub async fn nack(&self, leases: &[(LeaseHandle, NackOptions)]) -> Result<Vec<NackOutcome>> {
        for (_, opts) in leases {
            self.home.payload_update(opts.payload.as_ref())?;
        }
        let outcomes = self
            .per_lease_with(
                leases,
                |ops, pairs: Vec<(LeaseHandle, NackOptions)>| async move {
                    let randoms: Vec<f64> = pairs
                        .iter()
                        .map(|(l, _)| self.jitter_random(l.token))
                        .collect();
                    let reply = self.eval_on(ops, ops.nack(&pairs, &randoms)?).await?;
                    ops.decode_nack(reply, pairs.len())
                },
            )
            .await?;
        self.held.forget(leases.iter().map(|(l, _)| l));
        let retried = outcomes
            .iter()
            .filter(|o| **o == NackOutcome::Retried)
            .count();
        // (a nack that freed a host's in-flight slot wakes a blocked lease even when its item
        // went to dead letters: markers are pushed only for a report of work due now)
        self.flush_reports(self.layout().await?, (retried as u64).max(1))
            .await;
        Ok(outcomes)
    }

    /// Push the deadline of leases to now + `ttl`. `None` for a lease that is not live.
    pub async fn extend(&self, leases: &[LeaseHandle], ttl: Duration) -> Result<Vec<Option<i64>>> {
        check_ttl(ttl)?;
        let started = self.exec.monotonic_ms();
        let deadlines = self
            .per_handle(leases, |ops, handles| async move {
                let reply = self.exec.eval(ops.extend(&handles, ttl)).await?;
                ops.decode_extend(reply, handles.len())
            })
            .await?;
        for (lease, deadline) in leases.iter().zip(&deadlines) {
            match deadline {
                // counted from before the call: the local deadline is never later than Redis's
                Some(_) => self.held.extended(lease, ttl, started),
                None => self.held.forget([lease]),
            }
        }
        Ok(deadlines)
    }

    /// Extend every lease this queue handed out and that was not answered yet, each to the
    /// lease time it was taken for; one round trip per lease time. What the `extend_every`
    /// option runs in the background in every binding; call it yourself from a long job's
    /// loop otherwise. Returns how many were extended (a lease found lost is forgotten: its
    /// answer will report it lost).
    ///
    /// ```no_run
    /// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let leases = q.lease(10, std::time::Duration::ZERO).await?;
    /// assert_eq!(q.extend_held().await?, leases.len());
    /// # Ok(()) }
    /// ```
    pub async fn extend_held(&self) -> Result<usize> {
        let mut extended = 0;
        for (ttl, handles) in self.held.due(self.exec.monotonic_ms()) {
            extended += self
                .extend(&handles, ttl)
                .await?
                .iter()
                .filter(|d| d.is_some())
                .count();
        }
        Ok(extended)
    }

    /// Release every lease this queue handed out and that was not answered yet (a worker
    /// stopping: SIGTERM, shutdown), so other workers take the items at once. Returns how many
    /// were released.
    ///
    /// ```no_run
    /// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let leases = q.lease(10, std::time::Duration::ZERO).await?;
    /// assert_eq!(q.release_held().await?, leases.len());
    /// assert_eq!(q.release_held().await?, 0);
    /// # Ok(()) }
    /// ```
    pub async fn release_held(&self) -> Result<usize> {
        let handles = self.held.take_all(self.exec.monotonic_ms());
        if handles.is_empty() {
            return Ok(0);
        }
        Ok(self
            .release(&handles)
            .await?
            .iter()
            .filter(|ok| **ok)
            .count())
    }
    /// Answer leases a caller hands back, the way every binding's `ack`, `nack`, `extend` and
    /// `release` do: one round trip per chunk, the results per lease, and which leases are
    /// finished. For a single lease (`single`), an extend that finds it lost is
    /// [`Error::LeaseLost`] (its holder should stop working on it); the other answers report a
    /// lost lease in their result (`false`, `lost`).
    ///
    /// ```no_run
    /// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>, lease: crawlq::Lease) -> crawlq::Result<()> {
    /// use crawlq::{Answer, Style};
    /// let answers = q.answer(&Answer::Ack, &[lease.handle()], true).await?;
    /// assert_eq!(answers.to_json(Style::Camel), serde_json::json!(true));
    /// # Ok(()) }
    /// ```
    pub async fn answer(
        &self,
        answer: &Answer,
        leases: &[LeaseHandle],
        single: bool,
    ) -> Result<Answers> {
        let results = match answer {
            Answer::Ack => AnswerResults::Flags(self.ack(leases).await?),
            Answer::Revisit(after) => AnswerResults::Flags(self.ack_revisit(leases, *after).await?),
            Answer::RevisitAt(at) => AnswerResults::Flags(self.ack_revisit_at(leases, *at).await?),
            Answer::Release(opts) => {
                let pairs: Vec<_> = leases.iter().map(|l| (l.clone(), opts.clone())).collect();
                AnswerResults::Flags(self.release_with(&pairs).await?)
            }
            Answer::Nack(opts) => {
                let pairs: Vec<_> = leases.iter().map(|l| (l.clone(), opts.clone())).collect();
                AnswerResults::Outcomes(self.nack(&pairs).await?)
            }
            Answer::Extend(ttl) => {
                let deadlines = self.extend(leases, *ttl).await?;
                if single && let (Some(None), Some(lease)) = (deadlines.first(), leases.first()) {
                    return Err(Error::LeaseLost {
                        id: lease.id.clone(),
                        token: lease.token,
                    });
                }
                AnswerResults::Deadlines(deadlines)
            }
        };
        Ok(Answers { results, single })
    }

    /// [`Queue::answer`] for one lease that must still be live: [`Error::LeaseLost`] when it was
    /// not (expired and reclaimed, or answered already), so its holder learns the work may be
    /// done twice.
    pub async fn answer_one(&self, answer: &Answer, lease: &LeaseHandle) -> Result<()> {
        let answers = self
            .answer(answer, std::slice::from_ref(lease), true)
            .await?;
        if answers.finished().first() == Some(&true) || answers.deadlines().is_some() {
            return Ok(());
        }
        Err(Error::LeaseLost {
            id: lease.id.clone(),
            token: lease.token,
        })
    }

    /// Give leases back untouched: each goes to the front of its lane and its attempt is not
    /// counted. `false` for a lease that was not live.
    pub async fn release(&self, leases: &[LeaseHandle]) -> Result<Vec<bool>> {
        let pairs: Vec<_> = leases
            .iter()
            .map(|l| (l.clone(), ReleaseOptions::default()))
            .collect();
        self.release_with(&pairs).await
    }

    /// [`Queue::release`], storing a new payload with the items that have one in their options
    /// (the next attempt sees it; a payload that is not valid is an error for the whole call).
    ///
    /// ```no_run
    /// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>, lease: crawlq::Lease) -> crawlq::Result<()> {
    /// let progress = crawlq::ReleaseOptions { payload: Some(serde_json::json!({"page": 7})) };
    /// assert_eq!(q.release_with(&[(lease.handle(), progress)]).await?, vec![true]);
    /// # Ok(()) }
    /// ```
    pub async fn release_with(
        &self,
        leases: &[(LeaseHandle, ReleaseOptions)],
    ) -> Result<Vec<bool>> {
        for (_, opts) in leases {
            self.home.payload_update(opts.payload.as_ref())?;
        }
        let flags = self
            .per_lease_with(
                leases,
                |ops, pairs: Vec<(LeaseHandle, ReleaseOptions)>| async move {
                    let reply = self.eval_on(ops, ops.release(&pairs)?).await?;
                    ops.decode_flags(reply, pairs.len())
                },
            )
            .await?;
        self.held.forget(leases.iter().map(|(l, _)| l));
        let released = flags.iter().filter(|ok| **ok).count();
        self.flush_reports(self.layout().await?, released as u64)
            .await;
        Ok(flags)
    }

    /// A number in [0, 1) that differs per lease and per call, for backoff jitter. It needs
    /// no entropy, only spread, and stays available on wasm32 without a random source.
    fn jitter_random(&self, token: u64) -> f64 {
        let nonce = self.jitter_nonce.fetch_add(1, Ordering::Relaxed);
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&token.to_le_bytes());
        bytes[8..].copy_from_slice(&nonce.to_le_bytes());
        (xxhash_rust::xxh3::xxh3_64(&bytes) >> 11) as f64 / (1u64 << 53) as f64
    }
}
