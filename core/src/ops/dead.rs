//! Dead-letter calls: list, list by id, requeue, purge.

use super::*;

impl Ops {
    pub fn dead_list(&self, limit: usize, offset: usize) -> ScriptCall {
        let mut call = self.call(&scripts::DEAD_LIST, 2);
        call.args.push(offset.to_string().into_bytes());
        call.args.push(limit.to_string().into_bytes());
        call
    }

    /// `dead_list` for given ids (at most a few thousand: one argument each).
    pub fn dead_list_ids(&self, ids: &[String]) -> ScriptCall {
        let mut call = self.dead_list(0, 0);
        call.args
            .extend(ids.iter().map(|id| id.clone().into_bytes()));
        call
    }

    /// The reply of [`Ops::dead_list_ids`]: one entry per id asked, `None` where the id is not
    /// a dead letter.
    pub fn decode_dead_list_ids(&self, reply: Reply) -> Result<Vec<Option<DeadLetter>>> {
        let page = self.decode_dead_list(reply)?;
        Ok(page
            .items
            .into_iter()
            .map(|d| (d.died_at_ms >= 0).then_some(d))
            .collect())
    }

    pub fn decode_dead_list(&self, reply: Reply) -> Result<DeadPage> {
        let items = reply.array()?;
        expect_len(&items, 1, "dead_list")?;
        let total = items[0].uint()?;
        let mut page = Vec::new();
        for triple in items[1..].chunks(3) {
            let [id, died_at, record] = triple else {
                return Err(Error::Protocol("dead_list reply is not in triples".into()));
            };
            // a dead letter that does not decode is shown raw, never fails the listing
            let bytes = record.data()?;
            let (stored, raw) = match wire::decode_record(bytes) {
                Ok(stored) => (stored, None),
                Err(_) => {
                    // a record no script could read keeps the reason of the nack that buried
                    // it after a newline (which no stored record holds)
                    let (bytes, reason) = match bytes.iter().rposition(|&b| b == b'\n') {
                        Some(at) => (
                            &bytes[..at],
                            serde_json::from_slice::<String>(&bytes[at + 1..]).ok(),
                        ),
                        None => (bytes, None),
                    };
                    let mut stored = wire::salvage_record(bytes);
                    if reason.is_some() {
                        stored.last_error = reason;
                    }
                    (stored, Some(String::from_utf8_lossy(bytes).into_owned()))
                }
            };
            page.push(DeadLetter {
                id: id.text()?,
                url: stored.url,
                key: stored.key,
                host: stored.host,
                payload: stored.payload,
                priority: stored.priority,
                attempts: stored.attempt,
                last_error: stored.last_error,
                died_at_ms: died_at.int()?,
                raw,
            });
        }
        Ok(DeadPage { total, items: page })
    }

    /// Requeue the dead letters `ids`, or (`None`) the `limit` oldest after the first
    /// `offset` (the ones earlier calls left where they are).
    pub fn dead_requeue(&self, ids: Option<&[String]>, limit: usize, offset: usize) -> ScriptCall {
        let mut call = self.call(&scripts::DEAD_REQUEUE, 3 + ids.map_or(0, <[String]>::len));
        call.args.push(if ids.is_some() {
            b"ids".to_vec()
        } else {
            b"all".to_vec()
        });
        call.args.push(limit.to_string().into_bytes());
        match ids {
            Some(ids) => call
                .args
                .extend(ids.iter().map(|id| id.as_bytes().to_vec())),
            None => call.args.push(offset.to_string().into_bytes()),
        }
        call
    }

    /// (requeued, remaining dead, per-id found flags).
    pub fn decode_dead_requeue(&self, reply: Reply) -> Result<(u64, u64, Vec<bool>)> {
        let items = reply.array()?;
        expect_len(&items, 2, "dead_requeue")?;
        let flags = items[2..]
            .iter()
            .map(|r| Ok(r.int()? == 1))
            .collect::<Result<_>>()?;
        Ok((items[0].uint()?, items[1].uint()?, flags))
    }

    /// Remove at most `limit` dead letters, oldest first.
    pub fn dead_purge(&self, limit: usize) -> ScriptCall {
        let mut call = self.call(&scripts::DEAD_PURGE, 1);
        call.args.push(limit.to_string().into_bytes());
        call
    }

    /// Remove the dead letters among `ids` (at most 500 a call).
    pub fn dead_purge_ids(&self, ids: &[String]) -> ScriptCall {
        let mut call = self.call(&scripts::DEAD_PURGE, 1 + ids.len());
        call.args.push(ids.len().to_string().into_bytes());
        call.args
            .extend(ids.iter().map(|id| id.as_bytes().to_vec()));
        call
    }

    /// The reply of [`Ops::dead_purge_ids`]: one flag per id, `true` when it was removed.
    pub fn decode_dead_purge_ids(&self, reply: Reply, ids: usize) -> Result<Vec<bool>> {
        let items = reply.array()?;
        expect_len(&items, 2 + ids, "dead_purge")?;
        items[2..].iter().map(|f| Ok(f.int()? == 1)).collect()
    }

    /// The reply of [`Ops::dead_purge`]: (removed, dead letters left).
    pub fn decode_dead_purge(&self, reply: Reply) -> Result<(u64, u64)> {
        let items = reply.array()?;
        expect_len(&items, 2, "dead_purge")?;
        Ok((items[0].uint()?, items[1].uint()?))
    }
}
