//! Lease calls, alone or after an ack, and their replies.

use super::*;

impl Ops {
    /// The leases held now, soonest expiry first, `limit` of them from the `offset`-th on:
    /// the `leased_list` script. Decode with [`Ops::decode_leased_list`].
    pub fn leased_list(&self, limit: usize, offset: usize) -> ScriptCall {
        let mut call = self.call(&scripts::LEASED_LIST, 2);
        call.args.push(offset.to_string().into_bytes());
        call.args.push(limit.to_string().into_bytes());
        call
    }

    /// The reply of [`Ops::leased_list`] (ids as this shard names them).
    pub fn decode_leased_list(&self, reply: Reply) -> Result<LeasedPage> {
        let items = reply.array()?;
        expect_len(&items, 2, "leased_list")?;
        let (now_ms, total) = (items[0].int()?, items[1].uint()?);
        let mut page = Vec::new();
        for triple in items[2..].chunks(3) {
            let [lease_key, deadline, record] = triple else {
                return Err(Error::Protocol(
                    "leased_list reply is not in triples".into(),
                ));
            };
            let lease_key = lease_key.text()?;
            let (token, id) = lease_key
                .split_once(':')
                .and_then(|(token, id)| Some((token.parse::<u64>().ok()?, id)))
                .ok_or_else(|| Error::Protocol(format!("not a lease key: {lease_key:?}")))?;
            let bytes = record.data()?;
            let mut item =
                wire::decode_record(bytes).unwrap_or_else(|_| wire::salvage_record(bytes));
            // (the lease key names the item even where its record is missing or cut)
            item.id = id.to_string();
            page.push(LeasedItem {
                token,
                expires_at_ms: deadline.int()?,
                item,
            });
        }
        Ok(LeasedPage {
            total,
            now_ms,
            items: page,
        })
    }

    /// The lease call for up to `max` items with lease time `ttl`.
    pub fn lease(&self, max: usize, ttl: Duration) -> ScriptCall {
        let mut call = self.call(&scripts::LEASE, 9);
        self.push_lease_args(&mut call, max, ttl);
        self.push_lease_crawls(&mut call);
        call
    }

    /// The crawls a worker leases from (`lease_crawls`), last in a lease call; nothing for a
    /// worker of every crawl.
    pub(super) fn push_lease_crawls(&self, call: &mut ScriptCall) {
        if !self.config.lease_crawls.is_empty() {
            call.args
                .push(self.config.lease_crawls.join(" ").into_bytes());
        }
    }

    /// Ack `leases` (as [`Ops::ack`]) and lease up to `max` items (as [`Ops::lease`], from the
    /// chosen crawls of a worker with `lease_crawls`) in one call: the `ack_lease` script.
    /// Decode with [`Ops::decode_ack_lease`].
    pub fn ack_lease(
        &self,
        leases: &[LeaseHandle],
        revisit: Revisit,
        max: usize,
        ttl: Duration,
    ) -> ScriptCall {
        let mut call = self.call(&scripts::ACK_LEASE, 8 + leases.len() * 4);
        self.push_ack_args(&mut call, leases);
        call.args.push(match revisit {
            Revisit::After(d) => millis(d).into_bytes(),
            Revisit::At(ms) => format!("@{ms}").into_bytes(),
        });
        self.push_lease_args(&mut call, max, ttl);
        self.push_lease_crawls(&mut call);
        call
    }

    /// The ack flags and the lease batch of an `ack_lease` reply for `n` leases.
    pub fn decode_ack_lease(
        &self,
        reply: Reply,
        n: usize,
        ttl: Duration,
    ) -> Result<(Vec<bool>, LeaseBatch)> {
        let mut items = reply.array()?;
        expect_len(&items, 5 + n, "ack_lease")?;
        if items[4].uint()? != n as u64 {
            return Err(Error::Protocol(format!(
                "ack_lease answered for {} leases, expected {n}",
                items[4].uint()?
            )));
        }
        let flags = items
            .drain(4..5 + n)
            .skip(1)
            .map(|r| Ok(r.int()? == 1))
            .collect::<Result<Vec<bool>>>()?;
        Ok((flags, self.decode_lease(Reply::Array(items), ttl)?))
    }

    /// The lease script's arguments from its ARGV 3: max, ttl and the queue's lease options.
    pub(super) fn push_lease_args(&self, call: &mut ScriptCall, max: usize, ttl: Duration) {
        let c = &self.config;
        call.args.push(max.to_string().into_bytes());
        call.args.push(millis(ttl).into_bytes());
        call.args.push(millis(c.host_delay).into_bytes());
        call.args.push(c.max_attempts.to_string().into_bytes());
        let reclaim = c.reclaim_batch.min(crate::queue::RECLAIM_PER_CALL);
        call.args.push(reclaim.to_string().into_bytes());
        call.args.push(
            max.clamp(100, crate::queue::PROMOTE_PER_CALL)
                .to_string()
                .into_bytes(),
        );
        call.args.push(c.host_in_flight.to_string().into_bytes());
        call.args.push(self.pacing_arg());
    }

    pub fn decode_lease(&self, reply: Reply, ttl: Duration) -> Result<LeaseBatch> {
        let items = reply.array()?;
        expect_len(&items, 4, "lease")?;
        let now_ms = items[0].int()?;
        let next_due = items[1].int()?;
        let expires_at_ms = now_ms + ttl.as_millis() as i64;
        let mut leases = Vec::with_capacity((items.len() - 4) / 2);
        let mut undecodable = Vec::new();
        for pair in items[4..].chunks(2) {
            let [lease_key, record] = pair else {
                return Err(Error::Protocol(
                    "lease reply has an odd number of fields".into(),
                ));
            };
            let (token, id) = parse_lease_key(lease_key)?;
            let bytes = record.data()?;
            match wire::decode_record(bytes) {
                Ok(stored) => leases.push(Lease {
                    id: stored.id,
                    url: stored.url,
                    host: stored.host,
                    key: stored.key,
                    crawl: stored.crawl,
                    payload: stored.payload,
                    priority: stored.priority,
                    attempt: stored.attempt + 1,
                    token,
                    leased_at_ms: now_ms,
                    expires_at_ms,
                    enqueued_at_ms: stored.ts,
                    last_error: stored.last_error,
                }),
                // a record of a newer format is a version mismatch, not a poison record
                Err(e) if wire::is_newer_format(bytes) => return Err(e),
                Err(e) => undecodable.push(Undecodable {
                    token,
                    id,
                    raw: String::from_utf8_lossy(bytes).into_owned(),
                    error: e.to_string(),
                }),
            }
        }
        Ok(LeaseBatch {
            now_ms,
            next_due_ms: (next_due >= 0).then_some(next_due),
            reclaimed: items[2].uint()?,
            reclaimed_dead: items[3].uint()?,
            leases,
            undecodable,
        })
    }

    // ---- ack / extend / release / nack ----
}
