//! `stackmask bench`: per-call latency percentiles of a compiled artifact (part of the
//! command-line binary, not of the library).
//!
//! Users choose an engine on its tail: one slow mask stalls a whole batch. So every
//! call is timed on its own into an HDR histogram (p50 … p99.9, max), never averaged.
//! The work is replayed traces: real documents tokenized canonically, and seeded random
//! walks that sample each next token from the mask itself (so they reach states no
//! document does). The first pass over the traces warms caches and is not recorded.
//! Everything runs on the calling thread (one core).

use hdrhistogram::Histogram;
use stackmask_runtime::{Engine, Matcher};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The operations timed, in the order they are reported.
pub const OPS: [&str; 6] = [
    "get_mask",
    "commit",
    "mask_commit",
    "new_matcher",
    "clone",
    "load",
];

/// What to replay and how often.
pub struct BenchConfig {
    /// Timed passes over the traces (after one warm-up pass).
    pub repeats: usize,
    /// Seeded random walks added to the document traces.
    pub walks: usize,
    /// Tokens per random walk at most (a walk ends early where only EOS is allowed).
    pub walk_len: usize,
    /// Seed of the random walks.
    pub seed: u64,
}

/// One operation's percentiles, in microseconds.
pub struct OpStats {
    /// Operation name (one of [`OPS`]).
    pub op: &'static str,
    /// Calls recorded.
    pub count: u64,
    /// Mean.
    pub mean_us: f64,
    /// Percentiles 50, 90, 99, 99.9.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest single call.
    pub max_us: f64,
}

/// A small deterministic generator (xorshift64*), so a seed names one set of walks on
/// every machine.
struct Walker(u64);

impl Walker {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// The ids set in `mask`, into `out` (cleared first).
fn allowed_ids(mask: &[u32], out: &mut Vec<u32>) {
    out.clear();
    for (w, &word) in mask.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            out.push((w * 32) as u32 + bits.trailing_zeros());
            bits &= bits - 1;
        }
    }
}

/// Random walks: from the empty prefix, each next token drawn uniformly from the mask
/// without EOS; a walk stops at `len` tokens or where only EOS is allowed.
pub fn random_walks(engine: &Arc<Engine>, eos: u32, cfg: &BenchConfig) -> Vec<Vec<u32>> {
    let mut rng = Walker(cfg.seed.max(1));
    let mut mask = vec![0u32; engine.mask_words()];
    let mut ids = Vec::new();
    let mut walks = Vec::with_capacity(cfg.walks);
    for _ in 0..cfg.walks {
        let mut m = Matcher::new(engine.clone());
        let mut walk = Vec::new();
        while walk.len() < cfg.walk_len {
            m.fill_mask(&mut mask);
            allowed_ids(&mask, &mut ids);
            ids.retain(|&t| t != eos);
            if ids.is_empty() {
                break;
            }
            let t = ids[(rng.next() % ids.len() as u64) as usize];
            if m.commit(t).is_err() {
                break;
            }
            walk.push(t);
        }
        walks.push(walk);
    }
    walks
}

fn histogram() -> Histogram<u64> {
    // 1 ns to 100 s at 3 significant digits.
    Histogram::<u64>::new_with_bounds(1, 100_000_000_000, 3).expect("valid bounds")
}

fn record(h: &mut Histogram<u64>, took: Duration) {
    // Sub-nanosecond calls still count as one nanosecond (the histogram's lowest
    // value); anything past 100 s is recorded as 100 s.
    h.saturating_record((took.as_nanos() as u64).clamp(1, 100_000_000_000));
}

/// One of the slowest get_mask calls: which trace, before which token, how long.
#[derive(Clone, Copy, Debug)]
pub struct SlowMask {
    /// Index of the trace.
    pub trace: usize,
    /// Tokens committed before the call.
    pub step: usize,
    /// The call's time in microseconds (its slowest pass).
    pub us: f64,
}

/// Replays `traces` (token ids, without EOS) on `engine` and returns the percentiles of
/// every operation, and the `slowest` get_mask calls (slowest first). `artifact` is
/// loaded again to time `load`.
pub fn run(
    engine: &Arc<Engine>,
    artifact: &Path,
    traces: &[Vec<u32>],
    cfg: &BenchConfig,
    slowest: usize,
) -> Result<(Vec<OpStats>, Vec<SlowMask>), String> {
    let mut slow: Vec<SlowMask> = Vec::new();
    let mut hist: Vec<Histogram<u64>> = OPS.iter().map(|_| histogram()).collect();
    let [get_mask, commit, mask_commit, new_matcher, clone, load] = &mut hist[..] else {
        unreachable!("one histogram per op")
    };
    let mut mask = vec![0u32; engine.mask_words()];
    let mut m = Matcher::new(engine.clone());
    for pass in 0..=cfg.repeats {
        let timed = pass > 0;
        for (i, trace) in traces.iter().enumerate() {
            let started = Instant::now();
            let fresh = Matcher::new(engine.clone());
            if timed {
                record(new_matcher, started.elapsed());
            }
            drop(fresh);
            m.reset();
            for (step, &t) in trace.iter().enumerate() {
                let started = Instant::now();
                m.fill_mask(&mut mask);
                let masked = started.elapsed();
                let started = Instant::now();
                m.commit(t)
                    .map_err(|e| format!("token {t} of a trace is rejected: {e}"))?;
                let committed = started.elapsed();
                if timed {
                    record(get_mask, masked);
                    let us = masked.as_secs_f64() * 1e6;
                    if slowest > 0 && (slow.len() < slowest || us > slow[slow.len() - 1].us) {
                        match slow.iter_mut().find(|s| (s.trace, s.step) == (i, step)) {
                            Some(s) => s.us = s.us.max(us),
                            None => slow.push(SlowMask { trace: i, step, us }),
                        }
                        slow.sort_by(|a, b| b.us.total_cmp(&a.us));
                        slow.truncate(slowest);
                    }
                    record(commit, committed);
                    record(mask_commit, masked + committed);
                }
                if mask[t as usize / 32] & (1 << (t % 32)) == 0 {
                    return Err(format!("token {t} of a trace is not in its mask"));
                }
                if timed && pass == 1 {
                    let started = Instant::now();
                    let copy = m.clone();
                    record(clone, started.elapsed());
                    drop(copy);
                }
            }
        }
    }
    for _ in 0..10 {
        let started = Instant::now();
        let e = Engine::load(artifact).map_err(|e| e.to_string())?;
        record(load, started.elapsed());
        drop(e);
    }
    let stats = OPS
        .iter()
        .zip(&hist)
        .map(|(&op, h)| {
            let us = |q: f64| h.value_at_quantile(q) as f64 / 1e3;
            OpStats {
                op,
                count: h.len(),
                mean_us: h.mean() / 1e3,
                p50_us: us(0.5),
                p90_us: us(0.9),
                p99_us: us(0.99),
                p999_us: us(0.999),
                max_us: h.max() as f64 / 1e3,
            }
        })
        .collect();
    Ok((stats, slow))
}
