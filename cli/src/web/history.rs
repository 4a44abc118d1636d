//! The console's memory of the last hour: each queue's figures sampled at a fixed interval,
//! the rates between samples, and the charts drawn from them (inline SVG, no script).

use crawlq::{CrawlStats, Stats};
use std::collections::{HashMap, VecDeque};
use std::fmt::Write;

/// One reading of a queue: the depth figures and the lifetime counters rates come from.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Redis time of the reading (ms since epoch).
    pub at_ms: i64,
    pub pending: u64,
    pub leased: u64,
    pub dead: u64,
    pub done: u64,
    pub seeded_total: u64,
    pub acked_total: u64,
    pub nacked_total: u64,
}

impl Sample {
    pub fn of(s: &Stats) -> Sample {
        Sample {
            at_ms: s.now_ms,
            pending: s.pending,
            leased: s.leased,
            dead: s.dead,
            done: s.done,
            seeded_total: s.seeded_total,
            acked_total: s.acked_total,
            nacked_total: s.nacked_total,
        }
    }

    /// A reading of a named crawl, at the Redis time of the queue's reading beside it: its
    /// acks are its `done` (a crawl counts no nacks), so its rates are seeded and done per
    /// second.
    pub fn of_crawl(c: &CrawlStats, at_ms: i64) -> Sample {
        Sample {
            at_ms,
            pending: c.pending(),
            leased: c.leased,
            dead: c.dead,
            done: c.done,
            seeded_total: c.seeded_total,
            acked_total: c.done,
            nacked_total: 0,
        }
    }
}

/// The history key of a queue's named crawl (a NUL byte apart from the queue's name: no
/// queue is named so).
pub fn crawl_key(queue: &str, crawl: &str) -> String {
    format!("{queue}\0{crawl}")
}

/// Per-second rates between two samples.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rates {
    pub seeded: f64,
    pub acked: f64,
    pub nacked: f64,
}

impl Rates {
    /// The rates from `a` to `b`; `None` when no time passed. A counter that went down (the
    /// queue was removed and created again) counts as no change.
    pub fn between(a: &Sample, b: &Sample) -> Option<Rates> {
        let seconds = (b.at_ms - a.at_ms) as f64 / 1000.0;
        if seconds <= 0.0 {
            return None;
        }
        let per = |x: u64, y: u64| y.saturating_sub(x) as f64 / seconds;
        Some(Rates {
            seeded: per(a.seeded_total, b.seeded_total),
            acked: per(a.acked_total, b.acked_total),
            nacked: per(a.nacked_total, b.nacked_total),
        })
    }
}

/// The samples of every queue, each kept for `keep_ms` (an hour by default).
#[derive(Debug)]
pub struct History {
    keep_ms: i64,
    queues: HashMap<String, VecDeque<Sample>>,
}

impl History {
    pub fn new(keep_ms: i64) -> History {
        History {
            keep_ms,
            queues: HashMap::new(),
        }
    }

    /// Add a reading; readings older than the window are dropped, and one no newer than the
    /// last is ignored (two readers raced).
    pub fn record(&mut self, queue: &str, sample: Sample) {
        let samples = self.queues.entry(queue.to_string()).or_default();
        if samples
            .back()
            .is_some_and(|last| last.at_ms >= sample.at_ms)
        {
            return;
        }
        let oldest_kept = sample.at_ms - self.keep_ms;
        samples.push_back(sample);
        while samples.front().is_some_and(|s| s.at_ms < oldest_kept) {
            samples.pop_front();
        }
    }

    /// Drop a queue's readings and its crawls' (the queue was removed: a queue made again under
    /// its name starts from nothing).
    pub fn forget(&mut self, queue: &str) {
        let crawls = crawl_key(queue, "");
        self.queues
            .retain(|key, _| key != queue && !key.starts_with(&crawls));
    }

    pub fn samples(&self, queue: &str) -> Vec<Sample> {
        self.queues
            .get(queue)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The rates over the last `window_ms` of readings (at least the last two readings).
    pub fn recent_rates(&self, queue: &str, window_ms: i64) -> Option<Rates> {
        let samples = self.queues.get(queue)?;
        let last = samples.back()?;
        let first = samples
            .iter()
            .find(|s| s.at_ms >= last.at_ms - window_ms && s.at_ms < last.at_ms)
            .or_else(|| samples.iter().rev().nth(1))?;
        Rates::between(first, last)
    }

    /// Forget queues no longer shown, and their crawls.
    pub fn retain(&mut self, queues: &[String]) {
        self.queues.retain(|name, _| {
            let queue = name.split_once('\0').map_or(name.as_str(), |(q, _)| q);
            queues.iter().any(|q| q == queue)
        });
    }

    /// Forget a queue's crawls that are not among `crawls` (deleted, or no longer sampled).
    pub fn retain_crawls(&mut self, queue: &str, crawls: &[String]) {
        let prefix = crawl_key(queue, "");
        self.queues.retain(|name, _| {
            name.strip_prefix(&prefix)
                .is_none_or(|crawl| crawls.iter().any(|c| c == crawl))
        });
    }
}

/// A line chart of a few series over time, as an inline SVG: one polyline per series, the
/// largest value on the axis, the time span under it.
/// One line of a chart: its name, its colour, its (time in ms, value) points.
pub type Series<'a> = (&'a str, &'a str, Vec<(i64, f64)>);

pub fn chart(title: &str, series: &[Series]) -> String {
    const W: f64 = 560.0;
    const H: f64 = 140.0;
    const PAD: f64 = 4.0;
    let points = || series.iter().flat_map(|(_, _, p)| p.iter());
    let mut svg = String::new();
    let _ = write!(svg, "<figure class=\"chart\"><figcaption>{}", escape(title));
    for (name, color, _) in series {
        let _ = write!(
            svg,
            // a swatch drawn, not styled: the console's CSP allows no inline style
            " <span class=\"key\"><svg width=\"10\" height=\"10\"><rect width=\"10\" height=\"10\" fill=\"{color}\"/></svg> {}</span>",
            escape(name)
        );
    }
    svg.push_str("</figcaption>");
    let (Some(t0), Some(t1)) = (points().map(|p| p.0).min(), points().map(|p| p.0).max()) else {
        svg.push_str("<p class=\"muted\">no readings yet</p></figure>");
        return svg;
    };
    let top = points().map(|p| p.1).fold(0.0f64, f64::max).max(1.0);
    let span = (t1 - t0).max(1) as f64;
    let _ = write!(
        svg,
        "<svg viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{}\">",
        escape(title)
    );
    for (_, color, p) in series {
        let mut line = String::new();
        for (t, v) in p {
            let x = PAD + (*t - t0) as f64 / span * (W - 2.0 * PAD);
            let y = H - PAD - v / top * (H - 2.0 * PAD);
            let _ = write!(line, "{x:.1},{y:.1} ");
        }
        let _ = write!(
            svg,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>",
            line.trim_end()
        );
    }
    let _ = write!(
        svg,
        "</svg><div class=\"axis\"><span>max {}</span><span>last {}</span></div></figure>",
        axis_value(top),
        crate::format::duration(std::time::Duration::from_millis((t1 - t0) as u64))
    );
    svg
}

fn axis_value(v: f64) -> String {
    if v >= 10.0 || v.fract() == 0.0 {
        crate::format::count(v.round() as u64)
    } else {
        format!("{v:.2}")
    }
}

/// Text made safe to put in HTML, in an element or a quoted attribute.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at_ms: i64, acked_total: u64) -> Sample {
        Sample {
            at_ms,
            pending: 0,
            leased: 0,
            dead: 0,
            done: acked_total,
            seeded_total: 0,
            acked_total,
            nacked_total: 0,
        }
    }

    #[test]
    fn a_removed_queue_is_forgotten_with_its_crawls_and_no_other_queue() {
        let mut h = History::new(3_600_000);
        for key in ["q", "q2", &crawl_key("q", "news"), &crawl_key("q2", "news")] {
            h.record(key, sample(0, 0));
        }
        h.forget("q");
        assert!(h.samples("q").is_empty());
        assert!(h.samples(&crawl_key("q", "news")).is_empty());
        assert_eq!(h.samples("q2").len(), 1);
        assert_eq!(h.samples(&crawl_key("q2", "news")).len(), 1);
    }

    #[test]
    fn the_window_keeps_the_last_hour_and_ignores_stale_readings() {
        let mut h = History::new(3_600_000);
        h.record("q", sample(0, 0));
        h.record("q", sample(1_800_000, 10));
        h.record("q", sample(1_800_000, 99));
        assert_eq!(h.samples("q").len(), 2, "a reading no newer than the last");
        h.record("q", sample(3_600_001, 20));
        let kept: Vec<i64> = h.samples("q").iter().map(|s| s.at_ms).collect();
        assert_eq!(kept, vec![1_800_000, 3_600_001]);
        h.retain(&[]);
        assert!(h.samples("q").is_empty());
    }

    #[test]
    fn rates_are_per_second_over_the_window_and_never_negative() {
        let mut h = History::new(3_600_000);
        h.record("q", sample(0, 0));
        h.record("q", sample(10_000, 50));
        h.record("q", sample(20_000, 250));
        let r = h.recent_rates("q", 60_000).unwrap();
        assert_eq!(r.acked, 12.5);
        let r = h.recent_rates("q", 10_000).unwrap();
        assert_eq!(r.acked, 20.0);
        // a queue removed and created again: its counters restart
        let r = Rates::between(&sample(0, 100), &sample(1000, 3)).unwrap();
        assert_eq!(r.acked, 0.0);
        assert!(Rates::between(&sample(5, 1), &sample(5, 2)).is_none());
        assert!(History::new(1).recent_rates("none", 1).is_none());
    }

    #[test]
    fn crawls_are_kept_with_their_queue_and_dropped_when_gone() {
        let mut h = History::new(3_600_000);
        let crawl = CrawlStats {
            ready: 2,
            delayed: 1,
            done: 5,
            seeded_total: 8,
            ..CrawlStats::default()
        };
        h.record("q", sample(0, 0));
        h.record(&crawl_key("q", "a"), Sample::of_crawl(&crawl, 0));
        let later = CrawlStats {
            done: 25,
            seeded_total: 18,
            ..crawl
        };
        h.record(&crawl_key("q", "a"), Sample::of_crawl(&later, 10_000));
        h.record(&crawl_key("q", "b"), Sample::of_crawl(&crawl, 0));
        let r = h.recent_rates(&crawl_key("q", "a"), 60_000).unwrap();
        assert_eq!((r.acked, r.seeded, r.nacked), (2.0, 1.0, 0.0));
        assert_eq!(h.samples(&crawl_key("q", "a"))[1].pending, 3);
        h.retain(&["q".to_string()]);
        assert_eq!(
            h.samples(&crawl_key("q", "b")).len(),
            1,
            "kept with its queue"
        );
        h.retain_crawls("q", &["a".to_string()]);
        assert!(h.samples(&crawl_key("q", "b")).is_empty(), "a crawl gone");
        assert_eq!(h.samples(&crawl_key("q", "a")).len(), 2);
        assert_eq!(h.samples("q").len(), 1, "the queue's own readings stay");
        h.retain(&[]);
        assert!(h.samples(&crawl_key("q", "a")).is_empty());
    }

    #[test]
    fn charts_escape_their_labels_and_say_when_empty() {
        let svg = chart("<depth>", &[("a&b", "#123", vec![(0, 1.0), (1000, 3.0)])]);
        assert!(
            svg.contains("&lt;depth&gt;") && svg.contains("a&amp;b"),
            "{svg}"
        );
        assert!(svg.contains("<polyline"), "{svg}");
        assert!(svg.contains("max 3"), "{svg}");
        let empty = chart("depth", &[("a", "#123", vec![])]);
        assert!(empty.contains("no readings yet"), "{empty}");
    }
}
