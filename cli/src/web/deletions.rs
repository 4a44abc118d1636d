//! Deletions that outlast their request: a crawl's, a host's or a queue's deletion runs in a
//! task of its own, so a browser (or a proxy) that gives up on the request never stops it
//! part-way, and a deletion of millions of items does not hold a serving thread. The request
//! waits for it up to `--background-after`; one still running then is answered at once, and
//! every page shows it with its totals so far until it ends (and its outcome for a while after).

use crate::format::{count, duration};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an ended deletion's outcome stays on the pages.
const SHOWN_AFTER_END: Duration = Duration::from_secs(600);
/// The most ended deletions shown (the latest).
const ENDED_SHOWN: usize = 20;

/// The deletions started from this console.
#[derive(Default)]
pub struct Deletions {
    entries: Mutex<Vec<Arc<Deletion>>>,
}

/// One deletion: what it deletes, and how far it got.
pub struct Deletion {
    /// The queue it runs on.
    pub queue: String,
    /// What it deletes, as the pages name it: `crawl shop`, `host a.example`, `queue jobs`.
    pub what: String,
    started: Instant,
    state: Mutex<State>,
}

enum State {
    /// Under way: its totals so far, in words (`12,000 items removed so far`).
    Running { so_far: String },
    /// Ended: the sentence its action answers (or why it failed), and whether the request
    /// that started it showed it already (then it is not listed).
    Ended {
        at: Instant,
        outcome: Result<String, String>,
        answered: bool,
    },
}

impl Deletions {
    /// Record a deletion about to start; refused (with why) while the same one runs.
    pub fn begin(&self, queue: &str, what: &str) -> Result<Arc<Deletion>, String> {
        let mut entries = self.entries.lock().expect("not poisoned");
        if let Some(running) = entries
            .iter()
            .find(|d| d.queue == queue && d.what == what && d.is_running())
        {
            return Err(format!(
                "{} of queue {queue} is being deleted already (for {}): its progress is shown on every page",
                running.what,
                duration(running.started.elapsed())
            ));
        }
        let now = Instant::now();
        entries.retain(|d| d.shown_at(now, true));
        let deletion = Arc::new(Deletion {
            queue: queue.to_string(),
            what: what.to_string(),
            started: now,
            state: Mutex::new(State::Running {
                so_far: String::new(),
            }),
        });
        entries.push(deletion.clone());
        Ok(deletion)
    }

    /// A line per deletion to show on every page: those under way, then the latest ended ones
    /// not yet shown by their own request.
    pub fn lines(&self) -> Vec<String> {
        self.collect_lines(false)
    }

    /// A line per deletion for the deletions page: those under way, then the latest ended ones,
    /// those whose own request showed their outcome too (the page is where one is followed).
    pub fn all_lines(&self) -> Vec<String> {
        self.collect_lines(true)
    }

    fn collect_lines(&self, answered_too: bool) -> Vec<String> {
        let now = Instant::now();
        let entries = self.entries.lock().expect("not poisoned");
        let running = entries.iter().filter_map(|d| d.running_line());
        let ended: Vec<String> = entries
            .iter()
            .rev()
            .filter(|d| d.shown_at(now, answered_too))
            .filter_map(|d| d.ended_line(now))
            .take(ENDED_SHOWN)
            .collect();
        running.chain(ended).collect()
    }

    /// Whether a deletion is under way (the pages then link to the deletions page, which
    /// reloads itself until none is).
    pub fn any_running(&self) -> bool {
        let entries = self.entries.lock().expect("not poisoned");
        entries.iter().any(|d| d.is_running())
    }

    /// The deletions under way, named for a message (`crawl shop of queue jobs`).
    pub fn running(&self) -> Vec<String> {
        let entries = self.entries.lock().expect("not poisoned");
        entries
            .iter()
            .filter(|d| d.is_running())
            .map(|d| format!("{} of queue {}", d.what, d.queue))
            .collect()
    }
}

impl Deletion {
    /// Its totals so far, in words.
    pub fn report(&self, so_far: String) {
        let mut state = self.state.lock().expect("not poisoned");
        if let State::Running { so_far: shown } = &mut *state {
            *shown = so_far;
        }
    }

    /// Its end: the action's answer, or why it failed.
    pub fn end(&self, outcome: Result<String, String>) {
        *self.state.lock().expect("not poisoned") = State::Ended {
            at: Instant::now(),
            outcome,
            answered: false,
        };
    }

    /// The request that started it showed its outcome: no page lists it.
    pub fn answered(&self) {
        if let State::Ended { answered, .. } = &mut *self.state.lock().expect("not poisoned") {
            *answered = true;
        }
    }

    /// Its totals so far, in words (empty before its first step ended).
    pub fn so_far(&self) -> String {
        match &*self.state.lock().expect("not poisoned") {
            State::Running { so_far } => so_far.clone(),
            State::Ended { .. } => String::new(),
        }
    }

    fn is_running(&self) -> bool {
        matches!(
            *self.state.lock().expect("not poisoned"),
            State::Running { .. }
        )
    }

    /// Whether it is still listed (`answered_too`: even when its own request showed it).
    fn shown_at(&self, now: Instant, answered_too: bool) -> bool {
        match &*self.state.lock().expect("not poisoned") {
            State::Running { .. } => true,
            State::Ended { at, answered, .. } => {
                (answered_too || !answered) && now.saturating_duration_since(*at) < SHOWN_AFTER_END
            }
        }
    }

    fn running_line(&self) -> Option<String> {
        match &*self.state.lock().expect("not poisoned") {
            State::Running { so_far } => Some(format!(
                "deleting {} of queue {}{}{} (for {})",
                self.what,
                self.queue,
                if so_far.is_empty() { "" } else { ": " },
                so_far,
                duration(self.started.elapsed())
            )),
            State::Ended { .. } => None,
        }
    }

    fn ended_line(&self, now: Instant) -> Option<String> {
        match &*self.state.lock().expect("not poisoned") {
            State::Running { .. } => None,
            State::Ended { at, outcome, .. } => {
                let ago = duration(now.saturating_duration_since(*at));
                Some(match outcome {
                    Ok(done) => format!("queue {}: {done} ({ago} ago)", self.queue),
                    Err(why) => format!(
                        "deleting {} of queue {} failed: {why} ({ago} ago)",
                        self.what, self.queue
                    ),
                })
            }
        }
    }
}

/// Ends a deletion whose task stops before it ended (a panic, the runtime shutting down) as
/// stopped part-way, so that it is not listed as running forever nor refused when asked again.
pub struct EndsIfStopped(pub Arc<Deletion>);

impl Drop for EndsIfStopped {
    fn drop(&mut self) {
        if self.0.is_running() {
            self.0.end(Err(STOPPED.into()));
        }
    }
}

/// Why a deletion whose task stopped early ended.
const STOPPED: &str = "stopped part-way (what it removed is gone; delete it again to end it)";

/// Items removed so far, in words.
pub fn items_so_far(removed: u64) -> String {
    format!("{} items removed so far", count(removed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deletion_is_listed_while_it_runs_and_once_ended_unless_answered() {
        let deletions = Deletions::default();
        let shop = deletions.begin("jobs", "crawl shop").unwrap();
        assert!(deletions.lines()[0].starts_with("deleting crawl shop of queue jobs (for "));
        shop.report(items_so_far(12_000));
        assert!(
            deletions.lines()[0].starts_with(
                "deleting crawl shop of queue jobs: 12,000 items removed so far (for "
            ),
            "{:?}",
            deletions.lines()
        );
        assert_eq!(shop.so_far(), "12,000 items removed so far");
        assert_eq!(deletions.running(), ["crawl shop of queue jobs"]);
        assert!(deletions.any_running());

        let why = deletions.begin("jobs", "crawl shop").err().unwrap();
        assert!(
            why.starts_with("crawl shop of queue jobs is being deleted already (for "),
            "{why}"
        );
        // another crawl, or the same name on another queue, starts
        let news = deletions.begin("jobs", "crawl news").unwrap();
        let other = deletions.begin("other", "crawl shop").unwrap();

        shop.end(Ok(
            "deleted crawl shop: 3 ready, 0 delayed, 0 leased, 0 dead".into(),
        ));
        news.end(Err("connection refused".into()));
        other.end(Ok(
            "deleted crawl shop: 1 ready, 0 delayed, 0 leased, 0 dead".into(),
        ));
        other.answered();
        assert!(deletions.running().is_empty());
        assert!(!deletions.any_running());
        assert_eq!(shop.so_far(), "", "ended");
        let lines = deletions.lines();
        assert_eq!(lines.len(), 2, "the answered one is not listed: {lines:?}");
        // the deletions page lists it too
        let all = deletions.all_lines();
        assert_eq!(all.len(), 3, "{all:?}");
        assert!(
            all[0].starts_with(
                "queue other: deleted crawl shop: 1 ready, 0 delayed, 0 leased, 0 dead ("
            ),
            "the latest first: {all:?}"
        );
        assert_eq!(all[1..], lines[..]);
        assert!(
            lines[0].starts_with("deleting crawl news of queue jobs failed: connection refused ("),
            "the latest first: {lines:?}"
        );
        assert!(
            lines[1].starts_with(
                "queue jobs: deleted crawl shop: 3 ready, 0 delayed, 0 leased, 0 dead ("
            ),
            "{lines:?}"
        );
        // ended, it may start again
        assert!(deletions.begin("jobs", "crawl shop").is_ok());
    }

    #[test]
    fn a_deletion_whose_task_stops_early_ends_as_stopped() {
        let deletions = Deletions::default();
        let host = deletions.begin("jobs", "host a.example").unwrap();
        let task = std::thread::spawn({
            let host = host.clone();
            move || {
                let _ends = EndsIfStopped(host);
                panic!("a deletion's task panics");
            }
        });
        assert!(task.join().is_err());
        assert!(deletions.running().is_empty());
        let lines = deletions.lines();
        assert!(
            lines[0].starts_with(
                "deleting host a.example of queue jobs failed: stopped part-way (what it removed is gone; delete it again to end it) ("
            ),
            "{lines:?}"
        );
        // one that ended first stays as it ended
        let crawl = deletions.begin("jobs", "crawl c").unwrap();
        {
            let _ends = EndsIfStopped(crawl.clone());
            crawl.end(Ok("deleted crawl c".into()));
        }
        assert!(deletions.lines()[0].starts_with("queue jobs: deleted crawl c ("));
    }

    #[test]
    fn ended_deletions_shown_are_the_latest() {
        let deletions = Deletions::default();
        for i in 0..ENDED_SHOWN + 5 {
            let d = deletions
                .begin("jobs", &format!("host h{i}.example"))
                .unwrap();
            d.end(Ok(format!("deleted host h{i}.example")));
        }
        let lines = deletions.lines();
        assert_eq!(lines.len(), ENDED_SHOWN);
        assert!(
            lines[0].starts_with(&format!(
                "queue jobs: deleted host h{}.example (",
                ENDED_SHOWN + 4
            )),
            "{lines:?}"
        );
    }
}
