//! The latency harness: per-call percentiles (p50, p99, p99.9, max) recorded with
//! hdrhistogram, stackmask beside llguidance on the same grammar, vocabulary and token
//! trace. Run with `cargo bench -p stackmask-benches --bench latency`.
//!
//! - commit: every token of the canonical traces of real documents, repeated
//!   (`STACKMASK_REPEATS`, default 200); the first pass warms up and is not recorded.
//! - get_mask: the first `STACKMASK_MASK_STEPS` (default 150) steps of each trace:
//!   stackmask's `fill_mask` walks the Parser DWA over the GSS (falling back to the
//!   token-trie walk at lexer boundaries the compiler left to it, see `inspect`).
//! - `STACKMASK_GRAMMARS=json.lark,c.lark` picks workloads (default: all).
//!
//! Each call is timed on its own (`Instant` around one call, ~20–30 ns of overhead);
//! these machines are shared and noisy, so compare the ratios, not absolute times.

use stackmask_benches::peer::{LlgPeer, PeerVocab};
use stackmask_benches::percentiles::{histogram, ratio, row};
use stackmask_benches::workload;
use stackmask_runtime::Matcher;
use std::time::Instant;

fn main() {
    let env = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(d)
    };
    let repeats = env("STACKMASK_REPEATS", 200);
    let mask_steps = env("STACKMASK_MASK_STEPS", 150);
    let only = std::env::var("STACKMASK_GRAMMARS").ok();
    for w in workload::standard() {
        let picked = |o: &str| {
            o.split(',')
                .any(|g| w.name.starts_with(g.trim_end_matches(".lark")))
        };
        if only.as_deref().is_some_and(|o| !picked(o)) {
            continue;
        }
        println!(
            "{} ({} tokens in {} documents)",
            w.name,
            w.total_tokens(),
            w.docs.len()
        );
        let mut peer = match LlgPeer::new(
            &w.grammar_source,
            &PeerVocab::from_vocabulary(&w.tokenizer.vocab),
        ) {
            Ok(p) => Some(p),
            Err(e) => {
                println!("  llguidance: cannot load the grammar: {e}");
                None
            }
        };

        // commit
        let (mut ours, mut theirs) = (histogram(), histogram());
        let mut m = Matcher::new(w.engine.clone());
        for r in 0..repeats + 1 {
            for (_, tokens) in &w.docs {
                m.reset();
                for &t in tokens {
                    let start = Instant::now();
                    m.commit(t).expect("token in the language");
                    let ns = start.elapsed().as_nanos() as u64;
                    if r > 0 {
                        ours.record(ns.max(1)).expect("record");
                    }
                }
            }
        }
        let peer_repeats = repeats.min(20);
        if let Some(p) = peer.as_mut() {
            'outer: for r in 0..peer_repeats + 1 {
                for (doc, tokens) in &w.docs {
                    p.reset().expect("reset");
                    for &t in tokens {
                        match p.commit(t) {
                            Ok(ns) if r > 0 => theirs.record(ns.max(1)).expect("record"),
                            Ok(_) => {}
                            Err(e) => {
                                println!("  llguidance rejects a token of {doc}: {e}");
                                break 'outer;
                            }
                        }
                    }
                }
            }
        }
        println!("{}", row("stackmask commit", &ours));
        if !theirs.is_empty() {
            println!("{}", row("llguidance commit", &theirs));
            println!("{}", ratio("commit", &ours, &theirs));
        }

        // get_mask
        let (mut ours, mut theirs) = (histogram(), histogram());
        let mut buf = vec![0u32; w.engine.mask_words()];
        let mut peer_buf = vec![0u32; w.engine.mask_words()];
        for (doc, tokens) in &w.docs {
            m.reset();
            if let Some(p) = peer.as_mut() {
                p.reset().expect("reset");
            }
            for &t in tokens.iter().take(mask_steps) {
                let start = Instant::now();
                m.fill_mask(&mut buf);
                ours.record((start.elapsed().as_nanos() as u64).max(1))
                    .expect("record");
                m.commit(t).expect("token in the language");
                if let Some(p) = peer.as_mut() {
                    match p.mask(&mut peer_buf).and_then(|ns| p.commit(t).map(|_| ns)) {
                        Ok(ns) => theirs.record(ns.max(1)).expect("record"),
                        Err(e) => {
                            println!("  llguidance fails on {doc}: {e}");
                            peer = None;
                        }
                    }
                }
            }
        }
        println!("{}", row("stackmask get_mask", &ours));
        if !theirs.is_empty() {
            println!("{}", row("llguidance get_mask", &theirs));
            println!("{}", ratio("get_mask", &ours, &theirs));
        }
    }
}
