//! Per-call latency percentiles: one HDR histogram per operation, and the row every
//! engine reports them in (the element of `stackmask bench --json`'s array).
//!
//! Users choose an engine on its tail (one slow mask stalls a whole batch), so calls are
//! timed one by one, never averaged over a loop.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Every operation a row can name, in report order.
pub const OPS: [&str; 7] = [
    "get_mask",
    "commit",
    "mask_commit",
    "compile",
    "load",
    "new_matcher",
    "clone",
];

/// One engine's percentiles for one operation, in microseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// `stackmask`, `llguidance` or `glrmask`.
    pub engine: String,
    /// The grammar's name.
    pub grammar: String,
    /// The tokenizer spec.
    pub vocab: String,
    /// One of [`OPS`].
    pub op: String,
    /// Calls recorded.
    pub count: u64,
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Slowest call.
    pub max_us: f64,
}

impl Row {
    /// The row's percentile columns in table order: mean, p50, p90, p99, p99.9, max.
    pub fn columns(&self) -> [f64; 6] {
        [
            self.mean_us,
            self.p50_us,
            self.p90_us,
            self.p99_us,
            self.p999_us,
            self.max_us,
        ]
    }
}

/// Histograms of every operation (1 ns to 100 s at 3 significant digits).
pub struct Timings {
    hist: Vec<Histogram<u64>>,
}

impl Default for Timings {
    fn default() -> Self {
        Timings {
            hist: OPS
                .iter()
                .map(|_| Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid bounds"))
                .collect(),
        }
    }
}

/// Index of `op` in [`OPS`]; an unknown name is a programming error.
fn op_index(op: &str) -> usize {
    OPS.iter()
        .position(|&o| o == op)
        .unwrap_or_else(|| panic!("unknown op {op:?}"))
}

impl Timings {
    /// Records one call of `op` (one of [`OPS`]).
    pub fn record(&mut self, op: &str, took: Duration) {
        // Sub-nanosecond calls count as 1 ns (the lowest value), past 100 s as 100 s.
        let ns = (took.as_nanos() as u64).clamp(1, 100_000_000_000);
        self.hist[op_index(op)].saturating_record(ns);
    }

    /// Adds every call recorded in `other`.
    pub fn absorb(&mut self, other: &Timings) {
        for (h, o) in self.hist.iter_mut().zip(&other.hist) {
            h.add(o).expect("same bounds");
        }
    }

    /// Calls of `op` recorded so far.
    pub fn count(&self, op: &str) -> u64 {
        self.hist[op_index(op)].len()
    }

    /// One row per operation with at least one call, in [`OPS`] order.
    pub fn rows(&self, engine: &str, grammar: &str, vocab: &str) -> Vec<Row> {
        OPS.iter()
            .zip(&self.hist)
            .filter(|(_, h)| !h.is_empty())
            .map(|(&op, h)| {
                let us = |q: f64| h.value_at_quantile(q) as f64 / 1e3;
                Row {
                    engine: engine.into(),
                    grammar: grammar.into(),
                    vocab: vocab.into(),
                    op: op.into(),
                    count: h.len(),
                    mean_us: h.mean() / 1e3,
                    p50_us: us(0.5),
                    p90_us: us(0.9),
                    p99_us: us(0.99),
                    p999_us: us(0.999),
                    max_us: h.max() as f64 / 1e3,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_hold_the_recorded_percentiles() {
        let mut t = Timings::default();
        for us in 1..=1000u64 {
            t.record("get_mask", Duration::from_micros(us));
        }
        t.record("compile", Duration::from_millis(250));
        t.record("commit", Duration::ZERO);
        let rows = t.rows("glrmask", "json", "tiktoken:o200k_base");
        let ops: Vec<&str> = rows.iter().map(|r| r.op.as_str()).collect();
        assert_eq!(ops, ["get_mask", "commit", "compile"]);
        let m = &rows[0];
        assert_eq!((m.engine.as_str(), m.count), ("glrmask", 1000));
        // 3 significant digits: values within 0.1 %.
        let near = |a: f64, b: f64| (a - b).abs() <= b * 1e-3 + 1e-9;
        assert!(near(m.p50_us, 500.0), "{}", m.p50_us);
        assert!(near(m.p90_us, 900.0), "{}", m.p90_us);
        assert!(near(m.p99_us, 990.0), "{}", m.p99_us);
        assert!(near(m.p999_us, 999.0), "{}", m.p999_us);
        assert!(near(m.max_us, 1000.0), "{}", m.max_us);
        assert!(near(m.mean_us, 500.5), "{}", m.mean_us);
        assert_eq!(rows[1].max_us, 0.001);
        assert!(near(rows[2].p50_us, 250_000.0));
        assert_eq!(t.count("clone"), 0);
    }

    #[test]
    #[should_panic(expected = "unknown op")]
    fn unknown_op_panics() {
        Timings::default().record("mask", Duration::ZERO);
    }
}
