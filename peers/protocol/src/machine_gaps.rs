//! How often the machine stops a running thread, and for how long: the floor under any
//! latency tail measured on it.
//!
//! One thread reads the monotonic clock in a tight loop; a gap between two reads of at
//! least [`GAP_BUCKETS_US`]`[0]` µs is time the thread did not run (an interrupt, the
//! hypervisor, another task). On a shared VM such gaps come hundreds of times a second,
//! and a call lasting `d` µs contains one of `r` gaps a second with probability about
//! `d × r × 10⁻⁶`. When that nears 0.1%, the p99.9 of calls that short is the machine's,
//! not the code's; and no max below the largest gap can be measured at all.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// Lower bounds of the gap-size buckets, in µs.
pub const GAP_BUCKETS_US: [u64; 8] = [2, 5, 10, 20, 30, 50, 70, 100];

/// What [`measure`] saw.
#[derive(Clone, Debug)]
pub struct MachineGaps {
    /// How long the clock was read.
    pub elapsed: Duration,
    /// Per bucket of [`GAP_BUCKETS_US`]: gaps at least that long and shorter than the
    /// next bucket's bound.
    pub counts: [u64; GAP_BUCKETS_US.len()],
    /// Time in gaps (of the first bucket's size or more).
    pub stopped: Duration,
    /// The longest gap.
    pub longest: Duration,
}

/// Reads the clock in a tight loop on this thread for `duration` and sorts the gaps.
pub fn measure(duration: Duration) -> MachineGaps {
    let mut counts = [0u64; GAP_BUCKETS_US.len()];
    let (mut stopped, mut longest) = (Duration::ZERO, Duration::ZERO);
    let start = Instant::now();
    let end = start + duration;
    let mut prev = start;
    loop {
        let now = Instant::now();
        let gap = now - prev;
        prev = now;
        let us = gap.as_micros() as u64;
        if let Some(bucket) = GAP_BUCKETS_US.iter().rposition(|&b| us >= b) {
            counts[bucket] += 1;
            stopped += gap;
            longest = longest.max(gap);
        }
        if now >= end {
            break;
        }
    }
    MachineGaps {
        elapsed: start.elapsed(),
        counts,
        stopped,
        longest,
    }
}

impl MachineGaps {
    /// Gaps of at least `GAP_BUCKETS_US[bucket]` µs.
    pub fn at_least(&self, bucket: usize) -> u64 {
        self.counts[bucket..].iter().sum()
    }

    /// Gaps of at least `GAP_BUCKETS_US[bucket]` µs per second.
    pub fn rate(&self, bucket: usize) -> f64 {
        self.at_least(bucket) as f64 / self.elapsed.as_secs_f64()
    }

    /// The chance that a call lasting `call_us` µs contains a gap of at least
    /// `GAP_BUCKETS_US[bucket]` µs.
    pub fn chance(&self, bucket: usize, call_us: f64) -> f64 {
        (call_us * 1e-6 * self.rate(bucket)).min(1.0)
    }

    /// Share of the time the thread did not run.
    pub fn stopped_share(&self) -> f64 {
        self.stopped.as_secs_f64() / self.elapsed.as_secs_f64()
    }

    /// One line for a bench report: how much, how often and how long the machine stopped.
    pub fn summary(&self) -> String {
        let at = |us: u64| {
            GAP_BUCKETS_US
                .iter()
                .position(|&b| b == us)
                .expect("a bucket bound")
        };
        format!(
            "machine: one thread reading the clock for {:.1} s was stopped {:.2}% of the time; \
             gaps of 20 µs or more {:.0} a second (a 2 µs call meets one {:.3}% of the time, a 5 µs call {:.3}%), \
             100 µs or more {:.1} a second; longest {:.0} µs",
            self.elapsed.as_secs_f64(),
            self.stopped_share() * 100.0,
            self.rate(at(20)),
            self.chance(at(20), 2.0) * 100.0,
            self.chance(at(20), 5.0) * 100.0,
            self.rate(at(100)),
            self.longest.as_secs_f64() * 1e6,
        )
    }

    /// A table: per gap size, the count, the rate and the chance for calls of 1, 2 and
    /// 5 µs.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{:>9} {:>9} {:>9} {:>12} {:>12} {:>12}\n",
            "gap µs ≥", "count", "per s", "1 µs call", "2 µs call", "5 µs call"
        );
        for (i, &lower) in GAP_BUCKETS_US.iter().enumerate() {
            let count = self.at_least(i);
            let pct = |d: f64| format!("{:.4}%", self.chance(i, d) * 100.0);
            let _ = writeln!(
                out,
                "{lower:>9} {count:>9} {:>9.1} {:>12} {:>12} {:>12}",
                self.rate(i),
                pct(1.0),
                pct(2.0),
                pct(5.0)
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gaps(counts: [u64; 8], seconds: u64) -> MachineGaps {
        MachineGaps {
            elapsed: Duration::from_secs(seconds),
            counts,
            stopped: Duration::from_millis(10),
            longest: Duration::from_micros(150),
        }
    }

    #[test]
    fn rates_count_every_longer_bucket() {
        let g = gaps([100, 0, 0, 30, 10, 0, 0, 2], 2);
        // Gaps of 20 µs or more: 30 + 10 + 2 in 2 s.
        assert_eq!(g.rate(3), 21.0);
        assert_eq!(g.rate(7), 1.0);
        assert_eq!(g.rate(0), 71.0);
        // 21 a second meet a 5 µs call with probability 5e-6 × 21.
        assert!((g.chance(3, 5.0) - 1.05e-4).abs() < 1e-12);
        assert!(g.summary().contains("21 a second"), "{}", g.summary());
        assert_eq!(g.table().lines().count(), 1 + GAP_BUCKETS_US.len());
    }

    #[test]
    fn a_short_measurement_sorts_every_gap_it_counts() {
        let g = measure(Duration::from_millis(50));
        assert!(g.elapsed >= Duration::from_millis(50));
        assert!(g.stopped <= g.elapsed);
        let counted: u64 = g.counts.iter().sum();
        // Every counted gap is at least 2 µs long, so their total bounds their number.
        assert!(g.stopped.as_micros() as u64 >= 2 * counted);
        assert!(counted == 0 || g.longest >= Duration::from_micros(2));
    }
}
