//! get_mask under several mask-cache sizes, side by side in one process: an A/B
//! harness that this shared, noisy machine cannot spoil.
//!
//! ```sh
//! cargo run --release -p stackmask-benches --example mask_cache_ab -- json 8 16 0
//! cargo run --release -p stackmask-benches --example mask_cache_ab -- c 8 8c   # sparse sets as chunks
//! cargo run --release -p stackmask-benches --example mask_cache_ab -- c 8 8u   # no kept unions (dense sets' and whole masks')
//! ```
//!
//! `stackmask bench` runs one configuration at a time, and on a shared 2-core VM two
//! runs of one binary a minute apart can differ by 2× at every percentile. Here one
//! matcher per setting replays the standard workload's documents (`json` or `c`, then
//! mask-cache slot counts, each with `c` after it for sparse token sets OR-ed as whole
//! chunks: `Matcher::set_sparse_pairs`, or `u` for masks and dense token sets OR-ed each
//! time instead of copied as the unions the engine keeps: `Matcher::set_kept_unions`), all
//! in the same loop: at every step each matcher fills its
//! mask and commits the token, in an order rotated from step to step (the first to
//! read a token set pays its cache misses, the others find it warm). Each step's time
//! is the median of its passes, so a burst of load moves one sample, not the figure;
//! the percentiles are over those per-step medians (the deterministic tail: the same
//! slow masks every pass), next to the percentiles of every sample.

use stackmask_benches::workload;
use stackmask_runtime::Matcher;
use std::time::Instant;

/// Passes over the documents (odd, for a median).
const PASSES: usize = 15;

fn main() {
    let mut args = std::env::args().skip(1);
    let grammar = args.next().unwrap_or_else(|| "json".to_string());
    // A setting: a slot count, then `c` for sparse token sets OR-ed as chunks or `u`
    // for no kept unions (module `glr::kept_unions`).
    let slots: Vec<String> = args.collect();
    let slots = if slots.is_empty() {
        vec!["8".to_string(), "0".to_string()]
    } else {
        slots
    };
    let w = workload::standard()
        .into_iter()
        .find(|w| w.name.starts_with(&format!("{grammar} ")))
        .unwrap_or_else(|| panic!("no standard workload {grammar} (json, c)"));
    let mut mask = vec![0u32; w.engine.mask_words()];
    let mut matchers: Vec<Matcher> = slots
        .iter()
        .map(|s| {
            let mut m = Matcher::new(w.engine.clone());
            let n = s.strip_suffix(['c', 'u']).unwrap_or(s);
            m.set_mask_cache_slots(
                n.parse()
                    .expect("settings are slot counts, then one of `c`, `u` or neither"),
            );
            m.set_sparse_pairs(!s.ends_with('c'));
            m.set_kept_unions(!s.ends_with('u'));
            m
        })
        .collect();
    // times[setting][step]: the step's samples, steps of all documents in order.
    let steps: usize = w.docs.iter().map(|(_, t)| t.len()).sum();
    let mut times = vec![vec![Vec::with_capacity(PASSES); steps]; slots.len()];
    for pass in 0..PASSES {
        let mut step = 0;
        for (_, tokens) in &w.docs {
            matchers.iter_mut().for_each(Matcher::reset);
            for &token in tokens {
                for j in 0..matchers.len() {
                    let k = (step + pass + j) % matchers.len();
                    let m = &mut matchers[k];
                    let start = Instant::now();
                    m.fill_mask(&mut mask);
                    times[k][step].push(start.elapsed().as_nanos() as u64);
                    m.commit(token).expect("token in the language");
                }
                step += 1;
            }
        }
    }
    println!(
        "{}: {} documents, {steps} masks, {PASSES} passes; µs",
        w.name,
        w.docs.len()
    );
    println!(
        "{:>6}  {:>34}  {:>22}",
        "slots", "per-step medians p50 p90 p99 p99.9 max", "all samples p50 p99.9"
    );
    for (k, s) in slots.iter().enumerate() {
        let mut medians: Vec<u64> = times[k]
            .iter_mut()
            .map(|v| {
                v.sort_unstable();
                v[v.len() / 2]
            })
            .collect();
        medians.sort_unstable();
        let mut all: Vec<u64> = times[k].iter().flatten().copied().collect();
        all.sort_unstable();
        let q =
            |v: &[u64], p: f64| v[((v.len() as f64 * p) as usize).min(v.len() - 1)] as f64 / 1e3;
        println!(
            "{s:>6}  {:>6.2} {:>6.2} {:>6.2} {:>6.2} {:>6.2}  {:>10.2} {:>10.2}",
            q(&medians, 0.5),
            q(&medians, 0.9),
            q(&medians, 0.99),
            q(&medians, 0.999),
            q(&medians, 1.0),
            q(&all, 0.5),
            q(&all, 0.999)
        );
    }
}
