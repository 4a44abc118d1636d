//! Answers to leases: ack (with a page's links, with the next lease), extend, release, nack.

use super::*;

impl Ops {
    /// The ack call; a revisit queues each acked item again when it is due.
    pub fn ack(&self, leases: &[LeaseHandle], revisit: Revisit) -> ScriptCall {
        let mut call = self.call(&scripts::ACK, 2 + leases.len() * 4);
        self.push_ack_args(&mut call, leases);
        match revisit {
            Revisit::After(d) if d.is_zero() => {}
            Revisit::After(d) => call.args.push(millis(d).into_bytes()),
            Revisit::At(ms) => call.args.push(format!("@{ms}").into_bytes()),
        }
        call
    }

    /// Seed `links` (one call's worth, as [`Ops::seed`]) and ack `leases` (as [`Ops::ack`]) in
    /// one call: the `ack_seed` script. Decode with [`Ops::decode_ack_seed`].
    pub fn ack_seed(
        &self,
        leases: &[LeaseHandle],
        revisit: Revisit,
        links: &[PreparedItem],
    ) -> ScriptCall {
        let mut call = self.call(&scripts::ACK_SEED, 3 + leases.len() * 4 + links.len() * 9);
        self.push_ack_args(&mut call, leases);
        call.args.push(match revisit {
            Revisit::After(d) => millis(d).into_bytes(),
            Revisit::At(ms) => format!("@{ms}").into_bytes(),
        });
        let seed = self.seed(links);
        call.args.extend(seed.args.into_iter().skip(2));
        call
    }

    /// The reply of [`Ops::ack_seed`] for `n` leases and `links` links: the links' outcome and
    /// the ack flags.
    pub fn decode_ack_seed(
        &self,
        reply: Reply,
        n: usize,
        links: usize,
    ) -> Result<(SeedOutcome, Vec<bool>)> {
        let mut items = reply.array()?;
        expect_len(&items, 5 + n, "ack_seed")?;
        let flags = items
            .split_off(5)
            .iter()
            .map(|r| Ok(r.int()? == 1))
            .collect::<Result<Vec<bool>>>()?;
        let outcome = self.decode_seed(Reply::Array(items), links)?;
        Ok((outcome, flags))
    }

    /// Seed `links` (as [`Ops::ack_seed`]), ack `leases` and lease up to `max` items (as
    /// [`Ops::lease`]) in one call: the `ack_seed_lease` script. Decode with
    /// [`Ops::decode_ack_seed_lease`].
    pub fn ack_seed_lease(
        &self,
        leases: &[LeaseHandle],
        revisit: Revisit,
        links: &[PreparedItem],
        max: usize,
        ttl: Duration,
    ) -> ScriptCall {
        let mut call = self.ack_seed(leases, revisit, links);
        call.script = &scripts::ACK_SEED_LEASE;
        // (on a shard of several, the lease's report: the shard's whole state after the call)
        call.report = call.report.map(|_| ReportKind::Set);
        self.push_lease_args(&mut call, max, ttl);
        call
    }

    /// Finish an `ack_seed_lease` call (after [`Ops::add_cache_hits`], if the cache answered
    /// any): a worker with `lease_crawls` leases from its chosen crawls only, named after the
    /// cache's two arguments (`0` and `''` when it answered none).
    pub fn add_lease_crawls(&self, call: &mut ScriptCall, cache_hits_added: bool) {
        if self.config.lease_crawls.is_empty() {
            return;
        }
        if !cache_hits_added {
            Self::add_cache_hits(call, 0, "");
        }
        self.push_lease_crawls(call);
    }

    /// The reply of [`Ops::ack_seed_lease`] for `n` leases and `links` links: the links'
    /// outcome, the ack flags and the lease batch.
    pub fn decode_ack_seed_lease(
        &self,
        reply: Reply,
        n: usize,
        links: usize,
        ttl: Duration,
    ) -> Result<(SeedOutcome, Vec<bool>, LeaseBatch)> {
        let mut items = reply.array()?;
        expect_len(&items, 6 + n + 4, "ack_seed_lease")?;
        if items[5].uint()? != n as u64 {
            return Err(Error::Protocol(format!(
                "ack_seed_lease answered for {} leases, expected {n}",
                items[5].uint()?
            )));
        }
        let leased = items.split_off(6 + n);
        let flags = items
            .split_off(5)
            .iter()
            .skip(1)
            .map(|r| Ok(r.int()? == 1))
            .collect::<Result<Vec<bool>>>()?;
        let outcome = self.decode_seed(Reply::Array(items), links)?;
        Ok((
            outcome,
            flags,
            self.decode_lease(Reply::Array(leased), ttl)?,
        ))
    }

    /// The ack script's arguments from its ARGV 3: the count, then per lease its key, host and
    /// live member.
    pub(super) fn push_ack_args(&self, call: &mut ScriptCall, leases: &[LeaseHandle]) {
        call.args.push(leases.len().to_string().into_bytes());
        for l in leases {
            let live = LiveMember::of(&crate::normalize::scoped_identity(
                l.crawl.as_deref(),
                l.identity(),
            ));
            call.args.push(l.lease_key().into_bytes());
            call.args.push(l.host.as_bytes().to_vec());
            call.args.push(live.member.to_string().into_bytes());
            call.args.push(live.bucket_hash.to_string().into_bytes());
        }
    }

    /// Decode a per-lease 1/0 reply (ack, release).
    pub fn decode_flags(&self, reply: Reply, n: usize) -> Result<Vec<bool>> {
        let items = reply.array()?;
        expect_len(&items, n, "ack/release")?;
        items.iter().map(|r| Ok(r.int()? == 1)).collect()
    }

    pub fn extend(&self, leases: &[LeaseHandle], ttl: Duration) -> ScriptCall {
        let mut call = self.call(&scripts::EXTEND, 1 + leases.len() * 2);
        call.args.push(leases.len().to_string().into_bytes());
        for l in leases {
            call.args.push(l.lease_key().into_bytes());
            call.args.push(millis(ttl).into_bytes());
        }
        call
    }

    /// New deadlines (ms) per lease, `None` where the lease was not live.
    pub fn decode_extend(&self, reply: Reply, n: usize) -> Result<Vec<Option<i64>>> {
        let items = reply.array()?;
        expect_len(&items, n, "extend")?;
        items
            .iter()
            .map(|r| Ok(Some(r.int()?).filter(|d| *d >= 0)))
            .collect()
    }

    pub fn release(&self, leases: &[(LeaseHandle, ReleaseOptions)]) -> Result<ScriptCall> {
        let mut call = self.call(&scripts::RELEASE, 1 + leases.len() * 2);
        call.args.push(leases.len().to_string().into_bytes());
        for (l, opts) in leases {
            call.args.push(l.lease_key().into_bytes());
            call.args
                .push(self.payload_update(opts.payload.as_ref())?.into_bytes());
        }
        Ok(call)
    }

    /// The argument a nack or release sends for a payload update: '' keeps the stored payload
    /// (no update, or JSON null), else the new payload's canonical JSON, which must fit
    /// `max_payload_bytes`.
    ///
    /// ```
    /// let ops = crawlq::ops::Ops::new("jobs", crawlq::Config::default()).unwrap();
    /// assert_eq!(ops.payload_update(None).unwrap(), "");
    /// assert_eq!(ops.payload_update(Some(&serde_json::json!({"b": 1, "a": 2}))).unwrap(), r#"{"a":2,"b":1}"#);
    /// ```
    pub fn payload_update(&self, payload: Option<&serde_json::Value>) -> Result<String> {
        match payload {
            None => Ok(String::new()),
            // the reason names the payload already
            Some(p) => Ok(self
                .payload_json(p)
                .map_err(|r| Error::InvalidArgument(r.to_string()))?
                .unwrap_or_default()),
        }
    }

    /// The nack call. `randoms` (one per lease, in `[0, 1)`) feed the backoff jitter.
    pub fn nack(
        &self,
        leases: &[(LeaseHandle, NackOptions)],
        randoms: &[f64],
    ) -> Result<ScriptCall> {
        let c = &self.config;
        let mut call = self.call(&scripts::NACK, 10 + leases.len() * 8);
        call.args.push(c.max_attempts.to_string().into_bytes());
        call.args.push(
            match c.backoff.kind {
                BackoffKind::Fixed => "fixed",
                BackoffKind::Exponential => "exponential",
            }
            .into(),
        );
        call.args.push(millis(c.backoff.base).into_bytes());
        call.args.push(millis(c.backoff.max).into_bytes());
        call.args.push(c.backoff.jitter.to_string().into_bytes());
        call.args.push(millis(c.host_delay).into_bytes());
        call.args.push(millis(c.adaptive_delay_step).into_bytes());
        call.args.push(millis(c.adaptive_delay_max).into_bytes());
        call.args.push(millis(c.retry_after_max).into_bytes());
        call.args.push(leases.len().to_string().into_bytes());
        for (i, (lease, opts)) in leases.iter().enumerate() {
            call.args.push(lease.lease_key().into_bytes());
            call.args.push(if opts.retry {
                b"1".to_vec()
            } else {
                b"0".to_vec()
            });
            call.args.push(match opts.delay {
                Some(d) => millis(d).into_bytes(),
                None => b"-1".to_vec(),
            });
            call.args.push(match &opts.reason {
                Some(r) => wire::json_string(r).into_bytes(),
                None => Vec::new(),
            });
            call.args.push(if opts.rate_limited {
                b"1".to_vec()
            } else {
                b"0".to_vec()
            });
            call.args.push(
                randoms
                    .get(i)
                    .copied()
                    .unwrap_or(0.0)
                    .to_string()
                    .into_bytes(),
            );
            call.args
                .push(self.payload_update(opts.payload.as_ref())?.into_bytes());
            call.args.push(
                opts.retry_after
                    .map_or_else(String::new, |r| r.script_arg())
                    .into_bytes(),
            );
        }
        Ok(call)
    }

    pub fn decode_nack(&self, reply: Reply, n: usize) -> Result<Vec<NackOutcome>> {
        let items = reply.array()?;
        expect_len(&items, n, "nack")?;
        items
            .iter()
            .map(|r| match r.data()? {
                b"retried" => Ok(NackOutcome::Retried),
                b"dead" => Ok(NackOutcome::Dead),
                b"lost" => Ok(NackOutcome::Lost),
                _ => Err(bad_reply("retried, dead or lost", r)),
            })
            .collect()
    }

    // ---- recovery, depth, dead letters, hosts ----
}
