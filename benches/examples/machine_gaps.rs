//! How often this machine stops a running thread, and for how long: the floor under any
//! latency tail measured on it (see `stackmask_peers::machine_gaps`; `stackmask bench
//! --machine-gaps SECONDS` prints the summary line beside its table).
//!
//! ```sh
//! cargo run --release -p stackmask-benches --example machine_gaps -- [SECONDS]
//! ```

use stackmask_peers::machine_gaps;
use std::time::Duration;

fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("SECONDS: a number"))
        .unwrap_or(5.0);
    let gaps = machine_gaps::measure(Duration::from_secs_f64(seconds));
    println!("{}", gaps.summary());
    print!("{}", gaps.table());
}
