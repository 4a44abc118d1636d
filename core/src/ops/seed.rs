//! Seed calls: items normalized and encoded (prepare), the seed script's call and its reply.

use super::*;

impl Ops {
    /// Normalize a batch. Invalid items are returned with their index; valid ones are ready
    /// for [`Ops::seed`]. Batch options out of range are an error for the whole call.
    pub fn prepare(
        &self,
        items: &[SeedItem],
        opts: &SeedOptions,
    ) -> Result<(Vec<PreparedItem>, Vec<InvalidInput>)> {
        let defaults = self.seed_defaults(opts)?;
        Ok(self.prepare_with(items, 0, opts, &defaults))
    }

    /// Check a seed call's batch options once, before its items are prepared chunk by chunk.
    pub fn seed_defaults(&self, opts: &SeedOptions) -> Result<SeedDefaults> {
        let priority = i16::try_from(opts.priority).map_err(|_| {
            Error::InvalidArgument(format!(
                "priority {} is outside -32768..=32767",
                opts.priority
            ))
        })?;
        let payload = match &opts.payload {
            Some(p) => Some(
                self.payload_json(p)
                    .map_err(|r| Error::InvalidArgument(format!("payload: {r}")))?,
            ),
            None => None,
        };
        let crawl = match &opts.crawl {
            Some(name) => {
                normalize::check_crawl(name).map_err(Error::InvalidArgument)?;
                Some(std::sync::Arc::from(&name[..]))
            }
            None => None,
        };
        Ok(SeedDefaults {
            priority,
            payload,
            crawl,
            page: None,
        })
    }

    /// Normalize `items`, the part of a batch that starts at index `offset`; indexes in the
    /// result are positions in the whole batch.
    pub fn prepare_with(
        &self,
        items: &[SeedItem],
        offset: usize,
        opts: &SeedOptions,
        defaults: &SeedDefaults,
    ) -> (Vec<PreparedItem>, Vec<InvalidInput>) {
        let mut prepared = Vec::with_capacity(items.len());
        let mut invalid = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let index = offset + i;
            match self.prepare_one(index, item, opts, defaults) {
                Ok(p) => prepared.push(p),
                Err(reason) => invalid.push(InvalidInput {
                    index,
                    input: item.input.clone(),
                    reason,
                }),
            }
        }
        (prepared, invalid)
    }

    pub(super) fn payload_json(
        &self,
        payload: &serde_json::Value,
    ) -> Result<Option<String>, InvalidReason> {
        if payload.is_null() {
            return Ok(None);
        }
        let json = wire::canonical_json(payload)?;
        if json.len() > self.config.max_payload_bytes {
            return Err(InvalidReason::PayloadTooLarge {
                len: json.len(),
                max: self.config.max_payload_bytes,
            });
        }
        Ok(Some(json))
    }

    fn prepare_one(
        &self,
        index: usize,
        item: &SeedItem,
        opts: &SeedOptions,
        defaults: &SeedDefaults,
    ) -> Result<PreparedItem, InvalidReason> {
        if let Some(reason) = &item.refused {
            return Err(reason.clone());
        }
        let link = self.links.canonical(
            &item.input,
            defaults.page.as_ref(),
            self.config.sort_query,
            self.config.host_key,
        )?;
        let priority = match item.priority {
            Some(p) => {
                i16::try_from(p).map_err(|_| InvalidReason::InvalidPriority(p.to_string()))?
            }
            None => defaults.priority,
        };
        let own_payload;
        let payload = match &item.payload {
            Some(p) => {
                own_payload = self.payload_json(p)?;
                own_payload.as_deref()
            }
            None => defaults.payload.as_ref().and_then(|p| p.as_deref()),
        };
        let key = item.key.as_deref();
        if let Some(key) = key {
            normalize::check_key(key)?;
        }
        let crawl = defaults.crawl.as_deref();
        // a caller's key replaces the canonical form as the item's identity; a named crawl's
        // items are identified within their crawl
        let fingerprint = match (key, crawl) {
            (Some(key), _) => normalize::Fingerprint::of(&normalize::scoped_identity(crawl, key)),
            (None, Some(_)) => {
                normalize::Fingerprint::of(&normalize::scoped_identity(crawl, &link.canonical))
            }
            (None, None) => link.fingerprint,
        };
        let delay = item.delay.unwrap_or(opts.delay);
        if delay > crate::config::MAX_DURATION {
            return Err(InvalidReason::InvalidDelay(format!(
                "{} s is longer than the longest delay ({} s)",
                delay.as_secs(),
                crate::config::MAX_DURATION.as_secs()
            )));
        }
        Ok(PreparedItem {
            index,
            seen_member: fingerprint.seen_member(),
            bucket_hash: fingerprint.bucket_hash(),
            url: (link.kind == ItemKind::Url).then_some(link.canonical),
            key: key.map(str::to_string),
            payload: payload.map(str::to_string),
            host: link.host_key,
            priority,
            delay_ms: delay.as_millis() as u64,
            force: item.force.unwrap_or(opts.force),
            crawl: defaults.crawl.clone(),
        })
    }

    /// The seed call for one chunk of prepared items.
    pub fn seed(&self, items: &[PreparedItem]) -> ScriptCall {
        let mut call = self.call(&scripts::SEED, 1 + items.len() * 9);
        call.args.push(item_count(items));
        for item in items {
            call.args.push(item.seen_member.to_string().into_bytes());
            call.args.push(item.bucket_hash.to_string().into_bytes());
            call.args.push(item.host.as_bytes().to_vec());
            call.args.push(item.priority.to_string().into_bytes());
            call.args.push(item.delay_ms.to_string().into_bytes());
            call.args.push(if item.force {
                b"1".to_vec()
            } else {
                b"0".to_vec()
            });
            let live = item.live();
            call.args.push(live.member.to_string().into_bytes());
            call.args.push(live.bucket_hash.to_string().into_bytes());
            call.args.push(item.tail().into_bytes());
        }
        call
    }

    /// Tell a seed call (`seed`, `ack_seed`, `ack_seed_lease`; the arguments go at the end of
    /// each) how many items the known-seen cache answered as duplicates without sending them,
    /// and the seen epoch it judged them by: the script counts them in
    /// `seen_cache_hits_total` (which stats adds to `duplicates_total`) only while that epoch
    /// still holds.
    pub fn add_cache_hits(call: &mut ScriptCall, hits: usize, epoch: &str) {
        call.args.push(hits.to_string().into_bytes());
        call.args.push(epoch.as_bytes().to_vec());
    }

    /// Decode a seed reply for a chunk of `n` items.
    pub fn decode_seed(&self, reply: Reply, n: usize) -> Result<SeedOutcome> {
        let items = reply.array()?;
        expect_len(&items, 3, "seed")?;
        let status = items[0].data()?;
        if status.len() != n {
            return Err(Error::Protocol(format!(
                "seed status covers {} items, sent {n}",
                status.len()
            )));
        }
        // added items took consecutive ids from first_id, in the call's order
        let mut next_id = match items.get(3) {
            Some(first) => first.uint()?,
            None => {
                return Err(Error::Protocol(
                    "seed reply has no first id (a script of an older version?)".into(),
                ));
            }
        };
        let (mut duplicates, mut over_budget) = (0, 0);
        let ids = status
            .iter()
            .map(|c| match *c {
                b'd' => {
                    duplicates += 1;
                    Seeded::Duplicate
                }
                b'b' => {
                    over_budget += 1;
                    Seeded::OverBudget
                }
                _ => {
                    next_id += 1;
                    Seeded::Added(next_id - 1)
                }
            })
            .collect();
        let epoch = match items.get(4) {
            Some(Reply::Data(d)) => Some(String::from_utf8_lossy(d).into_owned()),
            _ => None,
        };
        Ok(SeedOutcome {
            added: n as u64 - duplicates - over_budget,
            duplicates,
            added_ready: items[1].uint()?,
            ids,
            epoch,
        })
    }

    // ---- lease ----
}

/// The item count a seed call takes: `N`, or `N/<crawl>` when the items are of a named crawl
/// (every item of a call is of one crawl).
pub(super) fn item_count(items: &[PreparedItem]) -> Vec<u8> {
    match items.first().and_then(|i| i.crawl.as_deref()) {
        Some(crawl) => format!("{}/{crawl}", items.len()).into_bytes(),
        None => items.len().to_string().into_bytes(),
    }
}
