//! Seeding: chunks of `seed_batch` items normalized while the previous chunk is in flight, split
//! by shard, the known-seen cache consulted first.

use super::*;

impl<E: Executor> Queue<E> {
    /// Seed URLs or hosts. Invalid items are reported with their index and never stop the
    /// rest; each chunk of `seed_batch` items is one round trip (per shard it touches, sent
    /// concurrently).
    ///
    /// If Redis fails part-way the error says how many items were already seeded; seeding the
    /// same batch again is safe (those come back as duplicates).
    pub async fn seed(&self, items: &[SeedItem], opts: &SeedOptions) -> Result<SeedReport> {
        self.seed_with_progress(items, opts, |_| {}).await
    }

    /// [`Queue::seed`], calling `progress` after each round trip.
    pub async fn seed_with_progress<F>(
        &self,
        items: &[SeedItem],
        opts: &SeedOptions,
        progress: F,
    ) -> Result<SeedReport>
    where
        F: FnMut(SeedProgress) + MaybeSend,
    {
        let defaults = self.home.seed_defaults(opts)?;
        self.seed_with_defaults(items, opts, &defaults, progress)
            .await
    }

    /// [`Queue::seed_with_progress`] with the batch's options already checked (`defaults`: a
    /// page's links carry the page's URL there).
    pub(super) async fn seed_with_defaults<F>(
        &self,
        items: &[SeedItem],
        opts: &SeedOptions,
        defaults: &crate::ops::SeedDefaults,
        mut progress: F,
    ) -> Result<SeedReport>
    where
        F: FnMut(SeedProgress) + MaybeSend,
    {
        let layout = self.layout_to_add().await?;
        let chunk_len = self.config.seed_batch.max(1);
        let mut report = SeedReport {
            ids: vec![None; items.len()],
            ..SeedReport::default()
        };
        let mut done = 0;
        // One chunk in flight while the next one is normalized: the client's work overlaps
        // Redis's, and chunks still run in order (ids follow the caller's order).
        let mut in_flight: Option<Flight<_, ChunkSeeded>> = None;
        let mut offset = 0;
        loop {
            let next = if offset < items.len() {
                let end = (offset + chunk_len).min(items.len());
                let (prepared, invalid) =
                    self.home
                        .prepare_with(&items[offset..end], offset, opts, defaults);
                offset = end;
                Some((prepared, invalid))
            } else {
                None
            };
            if let Some(flight) = in_flight.take() {
                let chunk: ChunkSeeded = match flight {
                    Flight::Sent(outcome) => outcome.await,
                    Flight::Answered(outcome) => outcome,
                };
                let ChunkSeeded {
                    sent: sent_items,
                    counts,
                    items: seeded_items,
                    error,
                } = chunk;
                report.added += counts.added;
                report.duplicates += counts.duplicates;
                report_seeded(&mut report, items, &sent_items, seeded_items);
                if let Some((shard, error)) = error {
                    // what the other calls queued may be leased at once
                    self.flush_reports(layout, counts.added_ready).await;
                    let whereabouts = if layout.count() > 1 {
                        format!(
                            "in shard {shard} of {}, the other shards' calls applied; ",
                            layout.count()
                        )
                    } else {
                        String::new()
                    };
                    return Err(with_context(
                        error,
                        &format!(
                            "{whereabouts}{} of {} items were seeded before this failure (added \
                             or found duplicate); seeding the batch again is safe",
                            report.added + report.duplicates,
                            items.len()
                        ),
                    ));
                }
                self.flush_reports(layout, counts.added_ready).await;
                done += sent_items.len();
                progress(SeedProgress::of(&report, done, items.len()));
            }
            let Some((prepared, invalid)) = next else {
                break;
            };
            done += invalid.len();
            report.invalid.extend(invalid);
            if prepared.is_empty() {
                progress(SeedProgress::of(&report, done, items.len()));
                continue;
            }
            let mut outcome = Box::pin(self.seed_chunk(layout, prepared));
            // Poll once so the executor sends the calls now, before the next chunk is prepared,
            // and give its writer a turn (on a tokio worker it would wait for this task).
            let flight = match poll_once(&mut outcome).await {
                Poll::Ready(answered) => Flight::Answered(answered),
                Poll::Pending => {
                    self.exec.yield_now().await;
                    Flight::Sent(outcome)
                }
            };
            in_flight = Some(flight);
        }
        // budget refusals are known after the invalid items of later chunks
        report.invalid.sort_by_key(|i| i.index);
        Ok(report)
    }

    /// Seed one chunk of prepared items: split by shard, each shard's part in calls of
    /// [`SEED_PER_CALL`] sent together (one round trip per shard, the shards concurrently). Every
    /// call is answered, so a failed one does not hide what the others applied: the counts and
    /// items are those of the calls that succeeded, with the first error and its shard.
    pub(super) async fn seed_chunk(
        &self,
        layout: &Layout,
        prepared: Vec<PreparedItem>,
    ) -> ChunkSeeded {
        let len = prepared.len();
        // one shard (the usual queue): the chunk as it is; several: a copy per shard
        let parts: Vec<(usize, Vec<usize>, std::borrow::Cow<'_, [PreparedItem]>)> =
            if layout.count() == 1 {
                vec![(
                    0,
                    (0..len).collect(),
                    std::borrow::Cow::Borrowed(&prepared[..]),
                )]
            } else {
                let mut by_shard: Vec<(usize, Vec<usize>, Vec<PreparedItem>)> = Vec::new();
                for (position, item) in prepared.iter().enumerate() {
                    let shard = layout.of_host(&item.host);
                    match by_shard.iter_mut().find(|(s, _, _)| *s == shard) {
                        Some((_, positions, items)) => {
                            positions.push(position);
                            items.push(item.clone());
                        }
                        None => by_shard.push((shard, vec![position], vec![item.clone()])),
                    }
                }
                by_shard
                    .into_iter()
                    .map(|(s, positions, items)| (s, positions, std::borrow::Cow::Owned(items)))
                    .collect()
            };
        let per_shard = futures_util::future::join_all(parts.iter().map(
            |(shard, positions, part)| async move {
                let shard = *shard;
                let (known, epoch_used) = self.seen.known(shard, part);
                if !known.contains(&true) {
                    let (counts, items, error) = self.seed_calls(layout, shard, part, None).await;
                    return (positions.clone(), counts, items, error);
                }
                // the cache knows some as seen: send the others (at least one call, whose
                // reply says whether the cache's epoch still holds)
                let (send, hits) = split_known(part, &known);
                let cache_hits = epoch_used.as_deref().map(|epoch| (hits, epoch));
                let (counts, sent, error) = self.seed_calls(layout, shard, &send, cache_hits).await;
                let (counts, items, error) = self
                    .settle_known(layout, shard, part, &known, epoch_used, counts, sent, error)
                    .await;
                (positions.clone(), counts, items, error)
            },
        ))
        .await;
        drop(parts);
        let mut chunk = ChunkSeeded {
            sent: Vec::new(),
            counts: SeedOutcome::default(),
            items: Vec::new(),
            error: None,
        };
        let mut placed = Vec::with_capacity(per_shard.len());
        for (positions, counts, items, error) in per_shard {
            chunk.counts = chunk.counts.then(counts);
            if chunk.error.is_none() {
                chunk.error = error;
            }
            placed.push((positions, items));
        }
        chunk.items = reassemble(len, placed);
        chunk.sent = prepared;
        chunk
    }

    /// Send `items` (of one shard) in seed calls of [`SEED_PER_CALL`], together (one round
    /// trip; at least one call, even for no items: its reply carries the shard's seen epoch),
    /// and teach the known-seen cache what they answer; the last call also tells Redis the
    /// cache's hits (their count and the epoch they were judged by: [`Ops::add_cache_hits`]).
    /// The counts and items of the calls that succeeded (`None` for the items of one that
    /// failed), with the first error.
    pub(super) async fn seed_calls(
        &self,
        layout: &Layout,
        shard: usize,
        items: &[PreparedItem],
        cache_hits: Option<(usize, &str)>,
    ) -> (SeedOutcome, Vec<Option<ItemSeeded>>, Option<(usize, Error)>) {
        let ops = layout.shard(shard);
        let chunks: Vec<&[PreparedItem]> = if items.is_empty() {
            vec![items]
        } else {
            items.chunks(SEED_PER_CALL).collect()
        };
        // (the hits go with the last call: the epoch the reports keep is the last call's, so
        // the client resends them exactly when that call did not count them)
        let last = chunks.len() - 1;
        let calls = chunks.iter().enumerate().map(|(i, chunk)| async move {
            let mut call = ops.seed(chunk);
            if let (true, Some((hits, epoch))) = (i == last, cache_hits) {
                Ops::add_cache_hits(&mut call, hits, epoch);
            }
            let reply = self.eval_on(ops, call).await?;
            ops.decode_seed(reply, chunk.len())
        });
        let answers = futures_util::future::join_all(calls).await;
        let mut counts = SeedOutcome::default();
        let mut seeded = Vec::with_capacity(items.len());
        let mut error = None;
        for (answer, chunk) in answers.into_iter().zip(chunks) {
            match answer {
                Ok(outcome) => {
                    self.learn_seeded(shard, outcome.epoch.as_deref(), chunk, &outcome.ids);
                    seeded.extend(seeded_items(layout, shard, &outcome.ids));
                    counts = counts.then(SeedOutcome {
                        ids: Vec::new(),
                        ..outcome
                    });
                }
                Err(e) => {
                    seeded.extend(std::iter::repeat_n(None, chunk.len()));
                    error.get_or_insert((shard, e));
                }
            }
        }
        (counts, seeded, error)
    }

    /// Seed crawl requests (docs/PROTOCOL.md, section 10): each is stored as the one request
    /// shape every framework adapter reads, known by its canonical URL when it is a plain GET
    /// and by its method, URL and body otherwise. `items` are the requests' seed items with
    /// their own options (priority, delay, force), made by [`Queue::request_items`]; the
    /// report is [`Queue::seed`]'s.
    ///
    /// ```no_run
    /// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let mut request = crawlq::CrawlRequest::get("https://example.com/next");
    /// request.label = Some("listing".into());
    /// request.depth = 1;
    /// let items = q.request_items(&[request]);
    /// q.seed(&items, &crawlq::SeedOptions::default()).await?;
    /// # Ok(()) }
    /// ```
    pub fn request_items(&self, requests: &[CrawlRequest]) -> Vec<SeedItem> {
        requests.iter().map(|r| self.home.request_item(r)).collect()
    }

    /// The counts and items, in the part's order (`part`, `known`: which of its items the
    /// known-seen cache held), of a part whose other items were sent (`counts`, `sent`: their
    /// calls' answers, `error`: a failed one) and whose cache hits were not: the hits are
    /// duplicates while the epoch the calls answered is the one the cache knew them under
    /// (`epoch_used`); otherwise the seen set may have shrunk since, and they go to Redis too.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn settle_known(
        &self,
        layout: &Layout,
        shard: usize,
        part: &[PreparedItem],
        known: &[bool],
        epoch_used: Option<String>,
        mut counts: SeedOutcome,
        sent: Vec<Option<ItemSeeded>>,
        mut error: Option<(usize, Error)>,
    ) -> (SeedOutcome, Vec<Option<ItemSeeded>>, Option<(usize, Error)>) {
        let mut again = None;
        let moved = counts.epoch != epoch_used;
        let hits = known.iter().filter(|k| **k).count();
        if hits > 0 && error.is_none() && moved {
            self.seen.count_resent(hits);
            // (copied only now: the hits go to Redis only when the epoch moved)
            let hits: Vec<PreparedItem> = part
                .iter()
                .zip(known)
                .filter(|(_, k)| **k)
                .map(|(item, _)| item.clone())
                .collect();
            let (more, items, more_error) = self.seed_calls(layout, shard, &hits, None).await;
            counts = counts.then(more);
            error = more_error;
            again = Some(items.into_iter());
        } else {
            counts.duplicates += hits as u64;
        }
        let mut sent = sent.into_iter();
        let items = known
            .iter()
            .map(|k| match (k, again.as_mut()) {
                (false, _) => sent.next().flatten(),
                (true, Some(again)) => again.next().flatten(),
                (true, None) => Some(ItemSeeded::Duplicate),
            })
            .collect();
        (counts, items, error)
    }
}

/// A part's items the known-seen cache did not know as seen (`known`: its answer), to send,
/// and how many it knew.
pub(super) fn split_known(part: &[PreparedItem], known: &[bool]) -> (Vec<PreparedItem>, usize) {
    let mut send = Vec::with_capacity(part.len());
    for (item, k) in part.iter().zip(known) {
        if !*k {
            send.push(item.clone());
        }
    }
    let hits = part.len() - send.len();
    (send, hits)
}

/// What became of each item of a seed call of `shard`, as its reply says.
pub(super) fn seeded_items<'a>(
    layout: &'a Layout,
    shard: usize,
    ids: &'a [Seeded],
) -> impl Iterator<Item = Option<ItemSeeded>> + 'a {
    ids.iter().map(move |s| {
        Some(match s {
            Seeded::OverBudget => ItemSeeded::OverBudget,
            Seeded::Duplicate => ItemSeeded::Duplicate,
            // record ids are numbered per shard: the public id names it
            Seeded::Added(id) => ItemSeeded::Queued(Some(layout.public_id(id.to_string(), shard))),
        })
    })
}

/// Put what became of the `sent` items (prepared from `items`) into `report`: the ids of those
/// queued; those refused by their host's budget as invalid items.
pub(super) fn report_seeded(
    report: &mut SeedReport,
    items: &[SeedItem],
    sent: &[PreparedItem],
    seeded: Vec<Option<ItemSeeded>>,
) {
    for (item, seeded) in sent.iter().zip(seeded) {
        match seeded {
            Some(ItemSeeded::Queued(id)) => report.ids[item.index] = id,
            Some(ItemSeeded::Duplicate) | None => {}
            Some(ItemSeeded::OverBudget) => report.invalid.push(InvalidInput {
                index: item.index,
                input: items[item.index].input.clone(),
                reason: InvalidReason::BudgetExhausted(item.host.to_string()),
            }),
        }
    }
}

/// What became of one item of a seed chunk.
#[derive(Debug, Clone)]
pub(super) enum ItemSeeded {
    /// Queued, with its public id (`None` only where the report keeps none).
    Queued(Option<String>),
    Duplicate,
    /// Refused by its host's budget.
    OverBudget,
}

/// A seed chunk's result: the counts and items of the calls that succeeded (`None` for the
/// items of a call that failed), and the first failure with its shard.
pub(super) struct ChunkSeeded {
    /// The chunk's items, handed back.
    pub sent: Vec<PreparedItem>,
    pub counts: SeedOutcome,
    pub items: Vec<Option<ItemSeeded>>,
    pub error: Option<(usize, Error)>,
}

/// A call handed to the executor: still on its way, or already answered.
enum Flight<F, T> {
    Sent(F),
    Answered(T),
}
