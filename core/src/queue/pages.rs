//! Pages answered at once by concurrent callers of one queue, sent to Redis as one call.
//!
//! [`Queue::ack_with_links_and_lease`] is the call a crawler makes once per page, and most of
//! what it costs Redis is work done once per call whatever it carries (reading `meta`, the
//! type checks, the lease's scans of expired leases and due items). So while one such call of
//! a queue is on its way, the pages that other tasks answer meanwhile wait for it, then go
//! together in the next call: one `ack_seed_lease` with every page's links (in the pages'
//! order), every page's lease, and as many items leased as the pages ask for together. A page
//! answered with no call on its way goes at once: a lone worker waits for nothing. Unless
//! the queue's [`Config::answer_linger`] is set: then the page that carries a call waits
//! until that long after it was answered (or the line holds a full call), so that pages
//! that come back from their fetches one by one, which would otherwise each go alone, go
//! together too.
//!
//! The caller whose call carries the others hands each its share of the reply. When it is
//! done, the first page still waiting carries the next call (with the pages waiting behind
//! it), so no caller runs calls for others for longer than its own took. Only pages of one
//! crawl, one lease time and one seen epoch of the known-seen cache go together (the script
//! takes one of each per call), up to [`SEED_PER_CALL`] links and [`LEASE_PER_CALL`] leased
//! items in all. A queue of several shards has a line per shard: a page goes to its lease's
//! shard with its links of that shard, its links of each other shard go to that shard's line
//! without a lease (`Queue::answer_page`), and the page's call follows once those are in.

use super::seed::{report_seeded, seeded_items, split_known};
use super::*;
use futures_channel::oneshot;
use std::collections::VecDeque;
use std::sync::Arc;

/// Most pages one call carries.
const PAGES_PER_CALL: usize = 64;

/// One page's part of a combined call on one shard.
#[derive(Clone)]
pub(super) struct PageSend {
    /// The shard where the call goes.
    pub shard: usize,
    /// The page's lease, routed to that shard; none for the part of a page's links that go
    /// to another shard than its lease's.
    pub lease: Option<LeaseHandle>,
    /// Its links to send (those of this shard the known-seen cache did not answer).
    pub send: Vec<PreparedItem>,
    /// How many links the known-seen cache answered, and by which seen epoch.
    pub hits: usize,
    pub epoch_used: Option<String>,
    /// How many items to lease for it (0: none, an `ack_with_links`), for how long.
    pub ask: usize,
    pub ttl: Option<Duration>,
    /// The crawl its links go into.
    pub crawl: Option<String>,
}

impl PageSend {
    /// Whether `other` may go in one call with this page: the script takes one crawl for the
    /// links, one lease time and one seen epoch for the cache's hits per call.
    fn goes_with(&self, other: &PageSend) -> bool {
        self.crawl == other.crawl
            && self.epoch_used == other.epoch_used
            && (self.ttl.is_none() || other.ttl.is_none() || self.ttl == other.ttl)
    }
}

/// What a combined call answered for one page.
pub(super) struct PageAnswered {
    pub outcome: SeedOutcome,
    pub acked: bool,
    /// Its leased items, when it asked for some.
    pub batch: Option<LeaseBatch>,
}

/// What a waiting page's caller is told: its share of a call's reply, or that it carries the
/// next call.
enum Handoff {
    Answered(Result<PageAnswered>),
    Lead,
}

struct Waiting {
    page: PageSend,
    tx: Option<oneshot::Sender<Handoff>>,
}

/// The pages of a queue's shard waiting for the call on its way (see the module's comment).
#[derive(Default)]
pub(super) struct PageLine {
    line: std::sync::Mutex<Line>,
}

/// A queue's page lines, one per shard, made as pages first come for a shard.
#[derive(Default)]
pub(super) struct PageLines {
    lines: std::sync::Mutex<Vec<Arc<PageLine>>>,
}

impl PageLines {
    fn line(&self, shard: usize) -> Arc<PageLine> {
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        while lines.len() <= shard {
            lines.push(Arc::default());
        }
        lines[shard].clone()
    }
}

impl std::fmt::Debug for PageLines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        f.debug_list().entries(lines.iter()).finish()
    }
}

#[derive(Default)]
struct Line {
    /// Whether a call carrying pages is on its way.
    busy: bool,
    waiting: VecDeque<Waiting>,
}

impl std::fmt::Debug for PageLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let line = self.lock();
        f.debug_struct("PageLine")
            .field("busy", &line.busy)
            .field("waiting", &line.waiting.len())
            .finish()
    }
}

impl PageLine {
    fn lock(&self) -> std::sync::MutexGuard<'_, Line> {
        self.line.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next call's pages: the first waiting one (the caller now carrying the call) and those
    /// behind it that may go with it, within one call's limits.
    fn take_batch(line: &mut Line) -> Vec<Waiting> {
        let Some(first) = line.waiting.pop_front() else {
            return Vec::new();
        };
        let (mut links, mut ask) = (first.page.send.len(), first.page.ask);
        let mut batch = Vec::with_capacity((line.waiting.len() + 1).min(PAGES_PER_CALL));
        batch.push(first);
        let mut kept = VecDeque::new();
        while let Some(w) = line.waiting.pop_front() {
            let fits = batch.len() < PAGES_PER_CALL
                && links + w.page.send.len() <= SEED_PER_CALL
                && ask + w.page.ask <= LEASE_PER_CALL
                && batch.iter().all(|b| b.page.goes_with(&w.page));
            if fits {
                links += w.page.send.len();
                ask += w.page.ask;
                batch.push(w);
            } else {
                kept.push_back(w);
            }
        }
        line.waiting = kept;
        batch
    }

    /// The call is done: the first waiting page's caller carries the next one, or the line is
    /// idle. A waiting caller that went away (its future dropped) takes its page with it.
    fn hand_off(&self) {
        let mut line = self.lock();
        while let Some(first) = line.waiting.front_mut() {
            let tx = first.tx.take().expect("a waiting page not yet told");
            if tx.send(Handoff::Lead).is_ok() {
                return;
            }
            line.waiting.pop_front();
        }
        line.busy = false;
    }
}

/// Hands the line on when the call carrying pages ends, however it ends (its caller's future
/// may be dropped mid-call: the pages it carried then answer an error, see `Queue::send_page`).
struct Carrying<'a> {
    line: &'a PageLine,
    /// Whether the carrying caller's own page is still first in the line (it lingers for
    /// others, [`Config::answer_linger`]): a caller that goes away then takes it with it.
    own_in_line: bool,
}

impl Drop for Carrying<'_> {
    fn drop(&mut self) {
        if self.own_in_line {
            self.line.lock().waiting.pop_front();
        }
        self.line.hand_off();
    }
}

/// A waiting caller's receiver of its hand-off. A caller that goes away once the line was
/// handed to it but before it looked would hold the line for good: dropped with its turn
/// unread, it takes its page out of the line and hands the line on.
struct Turn<'a> {
    line: &'a PageLine,
    rx: Option<oneshot::Receiver<Handoff>>,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if let Some(mut rx) = self.rx.take()
            && let Ok(Some(Handoff::Lead)) = rx.try_recv()
        {
            // (the line was handed to this caller's page, first in the line)
            self.line.lock().waiting.pop_front();
            self.line.hand_off();
        }
    }
}

impl<E: Executor> Queue<E> {
    /// Send one page's answer, with those of other callers waiting meanwhile (see the module's
    /// comment); its share of the reply. `answered_ms` (monotonic) is when the caller answered
    /// the page: its linger counts from then, so a page whose links of other shards went
    /// first, through those shards' lines, does not linger again in its own.
    pub(super) async fn send_page(&self, page: PageSend, answered_ms: u64) -> Result<PageAnswered> {
        let pages = self.pages.line(page.shard);
        // (Config::answer_linger)
        let since_ms = (!self.config.answer_linger.is_zero()).then_some(answered_ms);
        let rx = {
            let mut line = pages.lock();
            if line.busy {
                let (tx, rx) = oneshot::channel();
                line.waiting.push_back(Waiting { page, tx: Some(tx) });
                Some(rx)
            } else {
                // (an idle line has nothing waiting: this page goes first, at once unless it
                // lingers)
                line.busy = true;
                line.waiting.push_front(Waiting { page, tx: None });
                None
            }
        };
        if let Some(rx) = rx {
            let mut turn = Turn {
                line: &pages,
                rx: Some(rx),
            };
            let handoff = turn.rx.as_mut().expect("just set").await;
            turn.rx = None;
            match handoff {
                Ok(Handoff::Answered(answer)) => return answer,
                Ok(Handoff::Lead) => {}
                Err(oneshot::Canceled) => {
                    return Err(Error::Unavailable(
                        "the call carrying this page's answer was dropped before its reply \
                         came: whether it ran is unknown (an unanswered lease comes back when \
                         it expires)"
                            .into(),
                    ));
                }
            }
        }
        // this caller carries the call: its own page first, then those that go with it
        let mut carrying = Carrying {
            line: &pages,
            own_in_line: true,
        };
        if let Some(left) = self.linger_left(&pages, since_ms) {
            self.exec.sleep(left).await;
        }
        let batch = PageLine::take_batch(&mut pages.lock());
        carrying.own_in_line = false;
        let (pages, txs): (Vec<PageSend>, Vec<_>) =
            batch.into_iter().map(|w| (w.page, w.tx)).unzip();
        let answers = self.send_pages(&pages).await;
        drop(carrying);
        let answers: Vec<Result<PageAnswered>> = match answers {
            Ok(answers) => answers.into_iter().map(Ok).collect(),
            Err(e) => pages.iter().map(|_| Err(e.clone())).collect(),
        };
        let mut answers = answers.into_iter();
        let own = answers
            .next()
            .expect("the carrying caller's page is the first");
        for (tx, answer) in txs.into_iter().skip(1).zip(answers) {
            if let Some(tx) = tx {
                // (a caller that went away leaves its share unread)
                let _ = tx.send(Handoff::Answered(answer));
            }
        }
        own
    }

    /// How much longer the carrying caller's page, answered at `since_ms` (none without a
    /// linger), waits for others before its call goes ([`Config::answer_linger`]): none once
    /// it has waited that long (as behind a call on its way, or in another shard's line) or
    /// the line holds a full call.
    fn linger_left(&self, line: &PageLine, since_ms: Option<u64>) -> Option<Duration> {
        let since_ms = since_ms?;
        let linger = self.config.answer_linger.as_millis() as u64;
        if linger == 0 || line.lock().waiting.len() >= PAGES_PER_CALL {
            return None;
        }
        let waited = self.exec.monotonic_ms().saturating_sub(since_ms);
        (waited < linger).then(|| Duration::from_millis(linger - waited))
    }

    /// One call for `pages` (all of one shard): `ack_seed_lease`, or `ack_seed` when none asks
    /// for items; each page's share of its reply, in order.
    async fn send_pages(&self, pages: &[PageSend]) -> Result<Vec<PageAnswered>> {
        let layout = self.layout().await?;
        let ops = layout.shard(pages[0].shard);
        let revisit = Revisit::After(self.config.revisit_after);
        let leases: Vec<LeaseHandle> = pages.iter().filter_map(|p| p.lease.clone()).collect();
        let send: Vec<PreparedItem> = pages.iter().flat_map(|p| p.send.iter().cloned()).collect();
        let ask: usize = pages.iter().map(|p| p.ask).sum();
        let hits: usize = pages.iter().map(|p| p.hits).sum();
        let ttl = pages.iter().find_map(|p| p.ttl);
        let mut call = match ttl {
            Some(ttl) if ask > 0 => ops.ack_seed_lease(&leases, revisit, &send, ask, ttl),
            _ => ops.ack_seed(&leases, revisit, &send),
        };
        let mut hits_added = false;
        if let (true, Some(epoch)) = (hits > 0, &pages[0].epoch_used) {
            Ops::add_cache_hits(&mut call, hits, epoch);
            hits_added = true;
        }
        if ttl.is_some() && ask > 0 {
            ops.add_lease_crawls(&mut call, hits_added);
        }
        let reply = self.eval_on(ops, call).await?;
        let (outcome, flags, batch) = match ttl {
            Some(ttl) if ask > 0 => {
                let (outcome, flags, batch) =
                    ops.decode_ack_seed_lease(reply, leases.len(), send.len(), ttl)?;
                (outcome, flags, Some(batch))
            }
            _ => {
                let (outcome, flags) = ops.decode_ack_seed(reply, leases.len(), send.len())?;
                (outcome, flags, None)
            }
        };
        Ok(split_answer(pages, outcome, flags, batch))
    }
}

/// A combined call's reply cut into each page's share: its links' outcome (their ids in order,
/// its counts), its ack flag (false for a part without a lease), and the leased items in turn
/// up to what it asked for. The
/// call's other lease figures (reclaimed items, undecodable records) go to the first page. A
/// page left without items while the call leased some looks again at once (its `next_due_ms`
/// is now): the call's own next due time is only known when nothing was leased.
fn split_answer(
    pages: &[PageSend],
    outcome: SeedOutcome,
    flags: Vec<bool>,
    batch: Option<LeaseBatch>,
) -> Vec<PageAnswered> {
    let mut ids = outcome.ids.into_iter();
    let mut flags = flags.into_iter();
    let mut shares = batch
        .map(|batch| split_batch(pages, batch))
        .into_iter()
        .flatten();
    pages
        .iter()
        .map(|page| {
            let acked = page.lease.is_some() && flags.next().unwrap_or(false);
            let mine: Vec<Seeded> = ids.by_ref().take(page.send.len()).collect();
            let mut part = SeedOutcome {
                added: 0,
                duplicates: 0,
                added_ready: 0,
                ids: Vec::new(),
                epoch: outcome.epoch.clone(),
            };
            for (seeded, item) in mine.iter().zip(&page.send) {
                match seeded {
                    Seeded::Added(_) => {
                        part.added += 1;
                        part.added_ready += u64::from(item.delay_ms == 0);
                    }
                    Seeded::Duplicate => part.duplicates += 1,
                    Seeded::OverBudget => {}
                }
            }
            part.ids = mine;
            PageAnswered {
                outcome: part,
                acked,
                batch: if page.ttl.is_some() {
                    shares.next()
                } else {
                    None
                },
            }
        })
        .collect()
}

/// A combined call's leased items, one share per page that asked for items: in turn, up to
/// what each asked for. The call's other lease figures (reclaimed items, undecodable records)
/// go to the first share. A page left without items while the call leased some looks again
/// at once (its `next_due_ms` is now): the call's own next due time is only known when nothing
/// was leased.
fn split_batch(pages: &[PageSend], batch: LeaseBatch) -> Vec<LeaseBatch> {
    let any_leased = !batch.leases.is_empty();
    let mut leases = batch.leases.into_iter();
    let mut undecodable = Some(batch.undecodable);
    let mut first = true;
    pages
        .iter()
        .filter(|p| p.ttl.is_some())
        .map(|page| {
            let taken: Vec<Lease> = leases.by_ref().take(page.ask).collect();
            let next_due_ms = if taken.is_empty() && any_leased {
                Some(batch.now_ms)
            } else {
                batch.next_due_ms
            };
            let (reclaimed, reclaimed_dead) = if first {
                (batch.reclaimed, batch.reclaimed_dead)
            } else {
                (0, 0)
            };
            first = false;
            LeaseBatch {
                now_ms: batch.now_ms,
                next_due_ms,
                reclaimed,
                reclaimed_dead,
                leases: taken,
                undecodable: undecodable.take().unwrap_or_default(),
            }
        })
        .collect()
}

impl<E: Executor> Queue<E> {
    /// [`Queue::ack_with_links`], and with `next` [`Queue::ack_with_links_and_lease`] (its
    /// wait ending early, with no leases, when `until` is given).
    pub(super) async fn answer_page(
        &self,
        lease: &LeaseHandle,
        links: &[SeedItem],
        opts: &SeedOptions,
        next: Option<&LeaseOptions>,
        until: Option<&StopSignal>,
    ) -> Result<(bool, SeedReport, Vec<Lease>)> {
        let ttl = next.map(|n| self.lease_ttl(n)).transpose()?;
        // stopped before it began: the page is answered, nothing is leased to go back
        let (next, ttl) = match self.stop_given(until) {
            true => (None, None),
            false => (next, ttl),
        };
        let started = self.exec.monotonic_ms();
        let layout = self.layout_to_add().await?;
        // a page's links go into its crawl unless the options name one
        let inherited;
        let opts = match (&opts.crawl, &lease.crawl) {
            (None, Some(crawl)) => {
                inherited = SeedOptions {
                    crawl: Some(crawl.clone()),
                    ..opts.clone()
                };
                &inherited
            }
            _ => opts,
        };
        // the links resolve against the page's URL
        let defaults = self
            .home
            .seed_defaults(opts)?
            .for_page(lease.url.as_deref());
        let (prepared, invalid) = self.home.prepare_with(links, 0, opts, &defaults);
        let answered = std::slice::from_ref(lease);
        let routed = layout.route(answered)?;
        let shard = routed[0].shard;
        // the links by shard, the lease's first (with several shards, the links of other shards
        // go in calls of their own, through those shards' lines, before the page's)
        let parts: Vec<(usize, Vec<PreparedItem>)> = if layout.count() > 1 {
            let mut parts = vec![(shard, Vec::new())];
            for item in prepared {
                let s = layout.of_host(&item.host);
                match parts.iter_mut().find(|(p, _)| *p == s) {
                    Some((_, items)) => items.push(item),
                    None => parts.push((s, vec![item])),
                }
            }
            parts
        } else {
            // (one shard: the links as prepared, not moved one by one into a growing list)
            vec![(shard, prepared)]
        };
        if parts.iter().any(|(_, items)| items.len() > SEED_PER_CALL) {
            let report = self
                .seed_with_defaults(links, opts, &defaults, |_| {})
                .await?;
            return Ok(match next {
                None => (self.ack(answered).await?[0], report, Vec::new()),
                Some(next) => {
                    let (acked, leases) = self.ack_and_lease_until(answered, next, until).await?;
                    (acked[0], report, leases)
                }
            });
        }
        let ask = next.map_or(0, |next| next.max.min(LEASE_PER_CALL));
        // links the known-seen cache holds are not sent, unless the reply's epoch says the
        // seen set may have shrunk since
        let parts: Vec<PagePart> = parts
            .into_iter()
            .map(|(s, items)| {
                let (known, epoch_used) = self.seen.known(s, &items);
                let (send, hits) = split_known(&items, &known);
                let own = s == shard;
                PagePart {
                    send: PageSend {
                        shard: s,
                        lease: own.then(|| routed[0].items[0].clone()),
                        send,
                        hits,
                        epoch_used,
                        ask: if own { ask } else { 0 },
                        ttl: if own { ttl } else { None },
                        crawl: opts.crawl.clone(),
                    },
                    items,
                    known,
                }
            })
            .collect();
        let mut report = SeedReport {
            added: 0,
            duplicates: 0,
            invalid,
            ids: vec![None; links.len()],
        };
        // (each with the pages other tasks answer meanwhile on its shard, in one call: pages.rs)
        let (own, others): (Vec<PagePart>, Vec<PagePart>) =
            parts.into_iter().partition(|part| part.send.shard == shard);
        // The links of other shards go in first, and the page is answered only once they are
        // in: a page acked with some of its links lost would never be crawled again, while a
        // page left leased is answered again (its links then come back as duplicates).
        let mut others = others;
        let answers = futures_util::future::join_all(
            others.iter_mut().map(|part| self.send_part(part, started)),
        )
        .await;
        let (mut markers, mut error) = (0, None);
        for (part, answer) in others.iter().zip(answers) {
            match answer {
                Ok(answer) => {
                    let (added_ready, part_error) = self
                        .settle_page_part(layout, part, answer.outcome, links, &mut report)
                        .await;
                    markers += added_ready;
                    if let Some(e) = part_error {
                        error.get_or_insert(e);
                    }
                }
                Err(e) => {
                    error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = error {
            self.flush_reports(layout, markers).await;
            return Err(with_context(
                e,
                "the page was not answered (it stays leased, and its links that went in come \
                 back as duplicates when it is answered again)",
            ));
        }
        let mut own = own
            .into_iter()
            .next()
            .expect("the lease's shard has a part");
        // the lease's shard: on an error the page's answer is unknown
        let answer = self.send_part(&mut own, started).await?;
        let acked = answer.acked;
        self.held.forget(answered);
        let batch = match (next, ttl, answer.batch) {
            (Some(next), Some(ttl), Some(batch)) => Some((next, ttl, ask, batch)),
            _ => None,
        };
        let (own_ready, own_error) = self
            .settle_page_part(layout, &own, answer.outcome, links, &mut report)
            .await;
        markers += own_ready;
        if let Some(e) = own_error {
            self.flush_reports(layout, markers).await;
            return Err(with_context(
                e,
                "the page was answered (and any next items leased, which go back when their \
                 lease expires) and its links seeded, except some the known-seen cache held \
                 back and sent again because the seen set had changed; seeding those again is \
                 safe",
            ));
        }
        report.invalid.sort_by_key(|i| i.index);
        let Some((next, ttl, ask, batch)) = batch else {
            self.flush_reports(layout, markers).await;
            return Ok((acked, report, Vec::new()));
        };
        let leases = self
            .finish_combined_lease(
                layout,
                shard,
                batch,
                ask,
                next,
                ttl,
                started,
                markers,
                own_ready > 0,
                until,
            )
            .await?;
        Ok((acked, report, leases))
    }

    /// Send one part of a page's answer ([`Queue::send_page`]). A call refused because the
    /// known-seen cache's hits were judged by a seen epoch that has moved (a restart may have
    /// lost them from the seen set) changed nothing: the cache starts over under the queue's
    /// epoch, and the part goes again with every link, so the links it held back go in the
    /// same call that answers the page. (A part without hits of its own is refused too when
    /// it went with one that had some.)
    async fn send_part(&self, part: &mut PagePart, answered_ms: u64) -> Result<PageAnswered> {
        let error = match self.send_page(part.send.clone(), answered_ms).await {
            Err(e) if e.moved_seen_epoch().is_some() => e,
            answered => return answered,
        };
        let epoch = error.moved_seen_epoch().unwrap_or_default();
        self.learn_seeded(part.send.shard, Some(epoch), &[], &[]);
        self.seen.count_resent(part.send.hits);
        part.send.send = part.items.clone();
        part.send.hits = 0;
        part.send.epoch_used = None;
        part.known = vec![false; part.items.len()];
        self.send_page(part.send.clone(), answered_ms).await
    }

    /// One part of a page's answer (its links of one shard, `outcome` its call's seed answer)
    /// into the page's `report`: the known-seen cache learns what the call said, and the links
    /// it held back are settled (`settle_known`). Returns the ready items the part added and
    /// the error of a settling call, if one failed.
    async fn settle_page_part(
        &self,
        layout: &Layout,
        part: &PagePart,
        outcome: SeedOutcome,
        links: &[SeedItem],
        report: &mut SeedReport,
    ) -> (u64, Option<Error>) {
        let s = part.send.shard;
        self.learn_seeded(s, outcome.epoch.as_deref(), &part.send.send, &outcome.ids);
        let sent = seeded_items(layout, s, &outcome.ids).collect();
        let counts = SeedOutcome {
            ids: Vec::new(),
            ..outcome
        };
        let (counts, seeded, part_error) = self
            .settle_known(
                layout,
                s,
                &part.items,
                &part.known,
                part.send.epoch_used.clone(),
                counts,
                sent,
                None,
            )
            .await;
        report.added += counts.added;
        report.duplicates += counts.duplicates;
        report_seeded(report, links, &part.items, seeded);
        (counts.added_ready, part_error.map(|(_, e)| e))
    }
}

/// One shard's part of a page's answer: what goes through that shard's line (the page's lease
/// with it on the lease's shard), the part's links, and which of them the known-seen cache
/// held.
struct PagePart {
    send: PageSend,
    items: Vec<PreparedItem>,
    known: Vec<bool>,
}
