//! `stackmask bench`: per-call latency percentiles of a compiled artifact (part of the
//! command-line binary, not of the library).
//!
//! Users choose an engine on its tail: one slow mask stalls a whole batch. So every
//! call is timed on its own into an HDR histogram (p50 … p99.9, max), never averaged.
//! The work is replayed traces: real documents tokenized canonically, and seeded random
//! walks that sample each next token from the mask itself (so they reach states no
//! document does). The timing loop is `stackmask_peers::replay`, the one the peer
//! drivers (llguidance, glrmask) run too: the first pass over the traces warms caches and
//! is not recorded; everything runs on the calling thread (one core).

use stackmask_peers::percentiles::Row;
use stackmask_peers::replay::{replay, time_make, SlowMask, StepMedians, Subject};
use stackmask_runtime::{Engine, Matcher};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// Also time a bare copy of a full mask over the same traces ([`WriteFloor`]).
    pub write_floor: bool,
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

/// stackmask as the shared timing loop drives it (`stackmask_peers::replay`), so it is
/// timed exactly like the peer drivers.
struct StackmaskSubject {
    engine: Arc<Engine>,
    matcher: Matcher,
}

impl Subject for StackmaskSubject {
    fn time_new_matcher(&mut self) -> Duration {
        time_make(|| Matcher::new(self.engine.clone()))
    }

    fn reset(&mut self) -> Result<(), String> {
        self.matcher.reset();
        Ok(())
    }

    fn fill_mask(&mut self, mask: &mut [u32]) -> Result<(), String> {
        self.matcher.try_fill_mask(mask).map_err(|e| e.to_string())
    }

    fn commit(&mut self, token: u32) -> Result<(), String> {
        self.matcher.commit(token).map_err(|e| e.to_string())
    }

    fn time_clone(&mut self) -> Duration {
        time_make(|| self.matcher.clone())
    }
}

/// Replays `traces` (token ids, without EOS) on `engine` and returns the rows of every
/// operation (engine `stackmask`), and the `slowest` get_mask calls (slowest first).
/// `artifact` is loaded again to time `load`. A token of a trace that is refused is an
/// error: the traces are sentences of this very artifact.
pub fn run(
    engine: &Arc<Engine>,
    artifact: &Path,
    traces: &[Vec<u32>],
    cfg: &BenchConfig,
    slowest: usize,
) -> Result<(Vec<Row>, Vec<SlowMask>, StepMedians), String> {
    let mut subject = StackmaskSubject {
        engine: engine.clone(),
        matcher: Matcher::new(engine.clone()),
    };
    let mut r = replay(
        &mut subject,
        traces,
        engine.mask_words(),
        cfg.repeats,
        slowest,
    );
    if let Some(e) = r.rejections.first() {
        return Err(format!(
            "token {} of a trace is rejected at step {}: {}",
            e.token, e.step, e.error
        ));
    }
    for _ in 0..10 {
        let started = Instant::now();
        let e = Engine::load(artifact).map_err(|e| e.to_string())?;
        r.timings.record("load", started.elapsed());
        drop(e);
    }
    let meta = engine.meta();
    let grammar = grammar_name(&meta.grammar_name);
    let mut rows = r.timings.rows("stackmask", &grammar, &meta.tokenizer);
    if cfg.write_floor {
        let mut floor = WriteFloor {
            full: vec![u32::MAX; engine.mask_words()],
        };
        let f = replay(&mut floor, traces, engine.mask_words(), cfg.repeats, 0);
        rows.extend(
            f.timings
                .rows("write-floor", &grammar, &meta.tokenizer)
                .into_iter()
                .filter(|r| r.op == "get_mask"),
        );
    }
    Ok((rows, r.slow, r.step_medians))
}

/// The least any engine that writes its mask can take, timed by the same loop: its
/// "mask" is a copy of a stored mask of the same width (every token allowed, so the
/// loop's check that the trace's token is in it passes), and it commits nothing. The
/// distance from stackmask's get_mask row to this one is all that computing the mask
/// costs beyond writing it.
struct WriteFloor {
    full: Vec<u32>,
}

impl Subject for WriteFloor {
    fn time_new_matcher(&mut self) -> Duration {
        Duration::ZERO
    }

    fn reset(&mut self) -> Result<(), String> {
        Ok(())
    }

    fn fill_mask(&mut self, mask: &mut [u32]) -> Result<(), String> {
        mask.copy_from_slice(&self.full);
        Ok(())
    }

    fn commit(&mut self, _token: u32) -> Result<(), String> {
        Ok(())
    }

    fn time_clone(&mut self) -> Duration {
        Duration::ZERO
    }
}

/// The grammar's name in reports: the file stem of the name it was compiled under
/// (`grammars/json.lark` → `json`).
pub fn grammar_name(compiled_as: &str) -> String {
    Path::new(compiled_as)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| compiled_as.to_string())
}
