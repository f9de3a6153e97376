//! What `Matcher::clone()` costs after committing whole documents (it copies the
//! parse history, so it grows with the bytes committed).
//! `cargo run --release -p stackmask-benches --example clone_cost`

use stackmask_benches::workload;
use stackmask_runtime::Matcher;
use std::time::Instant;

fn main() {
    for w in workload::standard() {
        for (doc, tokens) in &w.docs {
            let mut m = Matcher::new(w.engine.clone());
            for &t in tokens {
                m.commit(t).expect("token in the language");
            }
            let runs = 200;
            let start = Instant::now();
            for _ in 0..runs {
                std::hint::black_box(m.clone());
            }
            let per = start.elapsed().as_secs_f64() * 1e6 / runs as f64;
            println!(
                "{:<40} {:>6} bytes committed: clone {:>8.2} µs",
                doc,
                m.bytes_consumed(),
                per
            );
        }
    }
}
