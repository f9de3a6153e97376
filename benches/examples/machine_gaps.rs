//! How often this machine stops a running thread, and for how long: the floor under any
//! latency tail measured on it.
//!
//! ```sh
//! cargo run --release -p stackmask-benches --example machine_gaps -- [SECONDS]
//! ```
//!
//! One thread reads the monotonic clock in a tight loop for SECONDS (default 5); a gap
//! between two reads longer than 2 µs is time the thread did not run (an interrupt, the
//! hypervisor, another task). On a shared VM such gaps come hundreds of times a second,
//! and a call lasting `d` µs contains one of `r` gaps a second with probability about
//! `d × r × 10⁻⁶`. So when that product nears 0.1%, a p99.9 of calls that short is the
//! machine's, not the code's, and no max below the largest gap can be measured at all.
//! The table says, per gap size, how many came a second and that probability for calls
//! of 1, 2 and 5 µs.

use std::time::{Duration, Instant};

/// Lower bounds of the gap-size buckets, in µs.
const BUCKETS: [u64; 8] = [2, 5, 10, 20, 30, 50, 70, 100];

fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("SECONDS: a number"))
        .unwrap_or(5.0);
    let mut counts = [0u64; BUCKETS.len()];
    let mut largest = Duration::ZERO;
    let mut stopped = Duration::ZERO;
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let mut prev = start;
    loop {
        let now = Instant::now();
        let gap = now - prev;
        prev = now;
        let us = gap.as_nanos() as u64 / 1_000;
        if us >= BUCKETS[0] {
            let bucket = BUCKETS.iter().rposition(|&b| us >= b).expect("us >= 2");
            counts[bucket] += 1;
            stopped += gap;
            largest = largest.max(gap);
        }
        if now >= end {
            break;
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    println!(
        "{elapsed:.1} s of one thread reading the clock: stopped {:.2}% of the time, longest gap {:.1} µs",
        stopped.as_secs_f64() / elapsed * 100.0,
        largest.as_secs_f64() * 1e6
    );
    println!(
        "{:>10} {:>10} {:>10} {:>14} {:>14} {:>14}",
        "gap ≥ µs", "count", "per s", "in a 1 µs call", "in a 2 µs call", "in a 5 µs call"
    );
    for (i, &lower) in BUCKETS.iter().enumerate() {
        // Gaps at least this long (this bucket and every longer one).
        let count: u64 = counts[i..].iter().sum();
        let rate = count as f64 / elapsed;
        let chance = |call_us: f64| format!("{:.4}%", call_us * rate * 1e-6 * 100.0);
        println!(
            "{lower:>10} {count:>10} {rate:>10.1} {:>14} {:>14} {:>14}",
            chance(1.0),
            chance(2.0),
            chance(5.0)
        );
    }
}
