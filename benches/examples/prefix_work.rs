//! GLR work and time per byte of C text with an ambiguous unary prefix: the run of
//! dashes that random walks reach, read as every mix of `-` and `--` (DESIGN.md §1).
//! Each byte that reduces an operand through the prefix costs work linear in its
//! length; BENCHMARKS.md (twenty-eighth session) gives the figures.
//!
//! ```sh
//! cargo run --release -p stackmask-benches --example prefix_work -- \
//!     "int f(){ x = a | DASHES b------------ < c; }" 1000
//! ```
//!
//! `DASHES` is replaced by runs of 4 … 74 dashes (or the lengths in `NS=4,16`); the
//! second argument is how many timed parses of each text to average.

use stackmask_benches::workload;
use stackmask_formats::artifact::AlignedBytes;
use stackmask_runtime::{Engine, Matcher};
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let (_, built) = workload::build("c.lark", "bytes");
    let engine =
        Arc::new(Engine::from_bytes(AlignedBytes::from_slice(&built.bytes)).expect("engine"));
    let template = std::env::args()
        .nth(1)
        .unwrap_or("int f(){ x = a | DASHES b------------ < c; }".into());
    let parses: usize = std::env::args()
        .nth(2)
        .map(|s| s.parse().expect("a number of parses"))
        .unwrap_or(100);
    let lengths: Vec<usize> = std::env::var("NS")
        .map(|v| {
            v.split(',')
                .map(|x| x.parse().expect("NS: lengths"))
                .collect()
        })
        .unwrap_or(vec![4, 8, 16, 32, 64, 74]);
    for n in lengths {
        let text = template.replace("DASHES", &"-".repeat(n));
        let mut m = Matcher::new(engine.clone());
        // No refill and a budget that never runs out: each byte's drop in credit is
        // exactly its work.
        m.set_work_budget(0, 1 << 60);
        let mut per_byte = Vec::new();
        for &b in text.as_bytes() {
            let before = m.work_credit();
            m.commit_bytes(&[b]).expect("the text is C");
            per_byte.push((b as char, before - m.work_credit()));
        }
        let total: u64 = per_byte.iter().map(|p| p.1).sum();
        let heavy: Vec<String> = per_byte
            .iter()
            .filter(|p| p.1 > 20)
            .map(|p| format!("{:?}:{}", p.0, p.1))
            .collect();
        let start = Instant::now();
        for _ in 0..parses {
            m.reset();
            m.commit_bytes(text.as_bytes()).expect("the text is C");
        }
        let ns = start.elapsed().as_nanos() as f64 / parses.max(1) as f64;
        println!(
            "{n} dashes: {total} units, {:.1} µs a parse; bytes over 20 units: {}",
            ns / 1e3,
            heavy.join(" ")
        );
    }
}
