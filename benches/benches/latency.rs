//! The latency harness: per-call percentiles (p50, p99, p99.9, max) recorded with
//! hdrhistogram, for commit on the compiled path, over the canonical token traces of
//! real documents, repeated. Run with `cargo bench -p stackmask-benches --bench latency`.
//!
//! Each call is timed on its own (`Instant` around one commit), so the numbers include
//! the timer's overhead (~20–30 ns); the tail is what matters here.

use hdrhistogram::Histogram;
use stackmask_benches::workload;
use stackmask_runtime::Matcher;
use std::time::Instant;

fn percentiles(h: &Histogram<u64>) -> String {
    format!(
        "p50 {:>7.2} µs  p99 {:>7.2} µs  p99.9 {:>7.2} µs  max {:>8.2} µs  (n={})",
        h.value_at_quantile(0.5) as f64 / 1e3,
        h.value_at_quantile(0.99) as f64 / 1e3,
        h.value_at_quantile(0.999) as f64 / 1e3,
        h.max() as f64 / 1e3,
        h.len()
    )
}

fn main() {
    let repeats: usize = std::env::var("STACKMASK_REPEATS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    for w in workload::standard() {
        let mut commit = Histogram::<u64>::new(3).expect("histogram");
        let mut m = Matcher::new(w.engine.clone());
        for r in 0..repeats + 1 {
            for (_, tokens) in &w.docs {
                m.reset();
                for &t in tokens {
                    let start = Instant::now();
                    m.commit(t).expect("token in the language");
                    let ns = start.elapsed().as_nanos() as u64;
                    // The first pass warms caches and buffers; it is not recorded.
                    if r > 0 {
                        commit.record(ns.max(1)).expect("record");
                    }
                }
            }
        }
        println!("{} ({} tokens × {repeats})", w.name, w.total_tokens());
        println!("  stackmask commit     {}", percentiles(&commit));
    }
}
