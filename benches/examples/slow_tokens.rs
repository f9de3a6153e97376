//! Prints the slowest commits (median over repeats) of each standard workload, with
//! the token's bytes: where the commit tail comes from.
//! `cargo run --release -p stackmask-benches --example slow_tokens`

use stackmask_benches::workload;
use stackmask_runtime::Matcher;
use std::time::Instant;

fn main() {
    for w in workload::standard() {
        let mut m = Matcher::new(w.engine.clone());
        let mut rows = Vec::new();
        for (doc, tokens) in &w.docs {
            let mut times = vec![Vec::new(); tokens.len()];
            for _ in 0..31 {
                m.reset();
                for (i, &t) in tokens.iter().enumerate() {
                    let start = Instant::now();
                    m.commit(t).expect("token in the language");
                    times[i].push(start.elapsed().as_nanos() as u64);
                }
            }
            for (i, mut ts) in times.into_iter().enumerate() {
                ts.sort_unstable();
                rows.push((ts[ts.len() / 2], doc.clone(), i, tokens[i]));
            }
        }
        rows.sort_unstable_by(|a, b| b.cmp(a));
        println!("{}", w.name);
        for (ns, doc, i, t) in rows.iter().take(12) {
            let tokens = &w.docs.iter().find(|d| &d.0 == doc).expect("doc").1;
            let context: Vec<u8> = tokens[i.saturating_sub(8)..*i]
                .iter()
                .flat_map(|&t| w.tokenizer.vocab.token_bytes(t).to_vec())
                .collect();
            println!(
                "  {:>7.2} µs  {doc} #{i}  {:?} after {:?}",
                *ns as f64 / 1e3,
                String::from_utf8_lossy(w.tokenizer.vocab.token_bytes(*t)),
                String::from_utf8_lossy(&context)
            );
        }
    }
}
