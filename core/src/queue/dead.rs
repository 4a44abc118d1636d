//! Dead letters: list, requeue, read by id, purge.

use super::*;

impl<E: Executor> Queue<E> {
    /// A page of dead letters, oldest first (across shards: each shard's oldest `offset +
    /// limit`, merged by when they died). A page of more than 500 is read in calls of 500, so
    /// that none holds Redis for long (a dead letter that moved meanwhile is listed once).
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let page = q.dead(100, 0).await?;
    /// for d in &page.items {
    ///     println!("{} {:?}", d.id, d.last_error);
    /// }
    /// println!("{} dead letters in all", page.total);
    /// # Ok(()) }
    /// ```
    pub async fn dead(&self, limit: usize, offset: usize) -> Result<DeadPage> {
        let layout = self.layout().await?;
        let pages = self
            .each_shard(layout, |ops| async move {
                let (limit, offset) = layout.shard_window(limit, offset);
                let (items, total) = paged(
                    offset,
                    limit,
                    DEAD_LIST_PER_CALL,
                    |d: &DeadLetter| d.id.clone(),
                    |want, at| async move {
                        let reply = self.exec.eval(ops.dead_list(want, at)).await?;
                        let page = ops.decode_dead_list(reply)?;
                        Ok((page.items, page.total))
                    },
                )
                .await?;
                Ok(DeadPage { total, items })
            })
            .await?;
        let total = pages.iter().map(|page| page.total).sum();
        let items = layout.merge_pages(
            pages.into_iter().map(|page| page.items).collect(),
            |d| &mut d.id,
            |a, b| (a.died_at_ms, &a.id).cmp(&(b.died_at_ms, &b.id)),
            limit,
            offset,
        );
        Ok(DeadPage { total, items })
    }

    /// Queue dead letters again with fresh attempts: the given ids, or all of them (`None`).
    /// Returns how many were requeued (unknown ids are skipped).
    pub async fn requeue_dead(&self, ids: Option<&[String]>) -> Result<u64> {
        let layout = self.layout().await?;
        let requeued: Vec<u64> = match ids {
            Some(ids) => {
                return Ok(self
                    .requeue_dead_ids(ids)
                    .await?
                    .into_iter()
                    .filter(|&requeued| requeued)
                    .count() as u64);
            }
            None => {
                self.each_shard(layout, |ops| async move {
                    // dead letters that stay (their item was queued again by a forced seed) keep
                    // their place at the head: the next call looks past them
                    let (mut total, mut staying) = (0, 0);
                    loop {
                        let reply = self
                            .eval_on(ops, ops.dead_requeue(None, REQUEUE_PER_CALL, staying))
                            .await?;
                        let (requeued, remaining, looked) = ops.decode_dead_requeue(reply)?;
                        total += requeued;
                        staying += looked.len() - requeued as usize;
                        if looked.len() < REQUEUE_PER_CALL || remaining as usize <= staying {
                            return Ok(total);
                        }
                    }
                })
                .await?
            }
        };
        let total = requeued.iter().sum();
        self.flush_reports(layout, total).await;
        Ok(total)
    }

    /// Queue these dead letters again; one flag per id, in the order given: `true` when it was
    /// a dead letter and is queued again, `false` when it is not a dead letter (unknown, already
    /// requeued or purged, or its item was queued again meanwhile by a forced seed).
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let flags = q.requeue_dead_ids(&["251".into(), "9999".into()]).await?;
    /// let unknown: Vec<_> = flags.iter().zip(["251", "9999"]).filter(|(ok, _)| !**ok).collect();
    /// # Ok(()) }
    /// ```
    pub async fn requeue_dead_ids(&self, ids: &[String]) -> Result<Vec<bool>> {
        let layout = self.layout().await?;
        let flags = self
            .flag_per_dead_id(
                layout,
                ids,
                REQUEUE_PER_CALL,
                |ops, chunk| ops.dead_requeue(Some(chunk), chunk.len(), 0),
                |ops, reply, _| Ok(ops.decode_dead_requeue(reply)?.2),
            )
            .await?;
        self.flush_reports(layout, flags.iter().filter(|&&f| f).count() as u64)
            .await;
        Ok(flags)
    }

    /// One flag per id, in the order given, from the scripts of the shards the ids name, in
    /// calls of at most `per_call` ids: `call` writes one call, `decode` reads its flags.
    async fn flag_per_dead_id(
        &self,
        layout: &Layout,
        ids: &[String],
        per_call: usize,
        call: impl Fn(&Ops, &[String]) -> ScriptCall,
        decode: impl Fn(&Ops, Reply, usize) -> Result<Vec<bool>>,
    ) -> Result<Vec<bool>> {
        let parts = layout.group(ids, |id| layout.split_id(id))?;
        let (call, decode) = (&call, &decode);
        let answered = self
            .each_part(parts, |s, ids: Vec<String>| async move {
                let ops = layout.shard(s);
                let mut flags = Vec::with_capacity(ids.len());
                for chunk in ids.chunks(per_call) {
                    let reply = self.eval_on(ops, call(ops, chunk)).await?;
                    flags.extend(decode(ops, reply, chunk.len())?);
                }
                Ok(flags)
            })
            .await?;
        Ok(reassemble(ids.len(), answered))
    }

    /// The dead letters with these ids, in the order given; `None` for an id that is not a
    /// dead letter. One round trip per shard the ids name (per 4,000 ids).
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// if let [Some(letter)] = q.dead_letters(&["251".into()]).await?.as_slice() {
    ///     println!("{} died after {} attempts: {:?}", letter.id, letter.attempts, letter.last_error);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn dead_letters(&self, ids: &[String]) -> Result<Vec<Option<DeadLetter>>> {
        let layout = self.layout().await?;
        let parts = layout.group(ids, |id| layout.split_id(id))?;
        let answered = self
            .each_part(parts, |s, ids: Vec<String>| async move {
                let ops = layout.shard(s);
                let mut found = Vec::with_capacity(ids.len());
                for chunk in ids.chunks(REQUEUE_PER_CALL) {
                    let reply = self.exec.eval(ops.dead_list_ids(chunk)).await?;
                    found.extend(ops.decode_dead_list_ids(reply)?.into_iter().map(|d| {
                        d.map(|mut d| {
                            d.id = layout.public_id(std::mem::take(&mut d.id), s);
                            d
                        })
                    }));
                }
                Ok(found)
            })
            .await?;
        Ok(reassemble(ids.len(), answered))
    }

    /// Delete these dead letters; one flag per id, in the order given: `true` when it was a
    /// dead letter and is deleted, `false` when it is not a dead letter (unknown, requeued or
    /// purged already, or named earlier in the list). They stay seen (re-seeding needs `force`).
    /// One round trip per shard the ids name (per 500 ids).
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let flags = q.purge_dead_ids(&["251".into(), "9999".into()]).await?;
    /// println!("{} purged", flags.iter().filter(|f| **f).count());
    /// # Ok(()) }
    /// ```
    pub async fn purge_dead_ids(&self, ids: &[String]) -> Result<Vec<bool>> {
        let layout = self.layout().await?;
        self.flag_per_dead_id(
            layout,
            ids,
            PURGE_PER_CALL,
            |ops, chunk| ops.dead_purge_ids(chunk),
            |ops, reply, n| ops.decode_dead_purge_ids(reply, n),
        )
        .await
    }

    /// Delete every dead letter; returns how many. They stay seen (re-seeding needs `force`).
    /// Runs as calls of at most 500 dead letters each, so that none holds Redis for long; if
    /// one fails, the dead letters it did not reach are still there (purge again).
    ///
    /// ```no_run
    /// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let purged = q.purge_dead().await?;
    /// println!("{purged} dead letters purged");
    /// # Ok(()) }
    /// ```
    pub async fn purge_dead(&self) -> Result<u64> {
        let layout = self.layout().await?;
        let counts = self
            .each_shard(layout, |ops| async move {
                let mut total = 0;
                loop {
                    let reply = self.exec.eval(ops.dead_purge(PURGE_PER_CALL)).await?;
                    let (purged, left) = ops.decode_dead_purge(reply)?;
                    total += purged;
                    if left == 0 || purged == 0 {
                        return Ok(total);
                    }
                }
            })
            .await?;
        Ok(counts.iter().sum())
    }
}
