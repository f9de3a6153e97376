//! Per-call latency percentiles for the harnesses: nanoseconds recorded in an HDR
//! histogram, printed as one line of p50 / p99 / p99.9 / max in microseconds, and a
//! peer's percentiles as ratios of ours.

use hdrhistogram::Histogram;

/// An empty histogram of nanoseconds, three significant digits.
pub fn histogram() -> Histogram<u64> {
    Histogram::<u64>::new(3).expect("three significant digits is a valid precision")
}

/// One line: `name`, then p50, p99, p99.9 and max in µs, and the count.
pub fn row(name: &str, h: &Histogram<u64>) -> String {
    let us = |q: f64| h.value_at_quantile(q) as f64 / 1e3;
    format!(
        "  {name:<22} p50 {:>9.2} µs  p99 {:>9.2} µs  p99.9 {:>9.2} µs  max {:>9.2} µs  (n={})",
        us(0.5),
        us(0.99),
        us(0.999),
        h.max() as f64 / 1e3,
        h.len()
    )
}

/// One line: the peer's percentiles divided by ours (above 1: the peer is slower).
pub fn ratio(name: &str, ours: &Histogram<u64>, theirs: &Histogram<u64>) -> String {
    let r = |q: f64| theirs.value_at_quantile(q) as f64 / ours.value_at_quantile(q).max(1) as f64;
    format!(
        "  {name:<22} llguidance / stackmask: p50 ×{:.1}  p99 ×{:.1}  p99.9 ×{:.1}  max ×{:.1}",
        r(0.5),
        r(0.99),
        r(0.999),
        theirs.max() as f64 / ours.max().max(1) as f64
    )
}
