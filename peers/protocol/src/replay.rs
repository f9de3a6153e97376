//! The timing loop every engine runs: replay token traces, timing each get_mask, commit,
//! new matcher and clone on its own. The first pass over the traces warms caches and is
//! not recorded; everything runs on the calling thread (one core).

use crate::percentiles::Timings;
use std::time::{Duration, Instant};

/// An engine with one grammar loaded, as the loop drives it.
pub trait Subject {
    /// Creates a fresh matcher and drops it; returns the time of the creation alone.
    fn time_new_matcher(&mut self) -> Duration;
    /// Puts the working matcher back at the start of the grammar (not timed).
    fn reset(&mut self) -> Result<(), String>;
    /// Writes the working matcher's mask (EOS included) into `mask`.
    fn fill_mask(&mut self, mask: &mut [u32]) -> Result<(), String>;
    /// Commits `token` on the working matcher.
    fn commit(&mut self, token: u32) -> Result<(), String>;
    /// Clones the working matcher and drops the copy; returns the time of the clone alone.
    fn time_clone(&mut self) -> Duration;
}

/// The time `make` takes; what it made is dropped after the clock stops (for
/// [`Subject::time_new_matcher`] and [`Subject::time_clone`]).
pub fn time_make<T>(make: impl FnOnce() -> T) -> Duration {
    let started = Instant::now();
    let made = make();
    let took = started.elapsed();
    drop(made);
    took
}

/// A token of a trace the engine did not take (the rest of that trace is skipped).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Rejection {
    /// Index of the trace.
    pub trace: usize,
    /// Tokens committed before it.
    pub step: usize,
    /// The token.
    pub token: u32,
    /// What the engine said (or that the token is not in its mask).
    pub error: String,
}

/// One of the slowest get_mask calls: which trace, before which token, how long.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlowMask {
    /// Index of the trace.
    pub trace: usize,
    /// Tokens committed before the call.
    pub step: usize,
    /// The call's time in microseconds (its slowest pass).
    pub us: f64,
}

/// What one replay measured.
#[derive(Default)]
pub struct Replay {
    /// get_mask, commit, mask_commit, new_matcher, clone.
    pub timings: Timings,
    /// The slowest get_mask calls, slowest first.
    pub slow: Vec<SlowMask>,
    /// Tokens the engine refused, at most one per trace.
    pub rejections: Vec<Rejection>,
    /// Each step's median over the timed passes, summarized.
    pub step_medians: StepMedians,
}

/// Percentiles of each step's *median* time over the timed passes: the part of the tail
/// that recurs at every pass, which is the engine's. The table's percentiles also hold
/// calls slow in one pass only (on a shared VM mostly the machine stopping the thread,
/// see [`crate::machine_gaps`]); a p99.9 of a few µs can differ several times between
/// the two.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepMedians {
    /// Steps summarized (steps timed in at least one pass).
    pub steps: usize,
    /// get_mask: p50, p99, p99.9 and max of the steps' medians, µs.
    pub get_mask: [f64; 4],
    /// get_mask + commit of one step, likewise.
    pub mask_commit: [f64; 4],
}

/// A step's times in one timed pass, ns: (get_mask, get_mask + commit); never timed is
/// `NOT_TIMED`.
const NOT_TIMED: (u32, u32) = (u32::MAX, u32::MAX);

/// Summarizes `times` (per step, `passes` slots of (get_mask, mask + commit) ns, slots
/// of passes that did not reach the step `NOT_TIMED`).
pub fn step_medians(times: &[(u32, u32)], passes: usize) -> StepMedians {
    let mut medians: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let mut one: Vec<u32> = Vec::with_capacity(passes);
    for step in times.chunks(passes.max(1)) {
        for (k, step_medians) in medians.iter_mut().enumerate() {
            one.clear();
            let timed = step.iter().filter(|&&t| t != NOT_TIMED);
            one.extend(timed.map(|&(mask, both)| if k == 0 { mask } else { both }));
            if one.is_empty() {
                continue;
            }
            one.sort_unstable();
            step_medians.push(one[(one.len() - 1) / 2] as f64 / 1e3);
        }
    }
    let summary = |v: &mut Vec<f64>| {
        v.sort_unstable_by(f64::total_cmp);
        // Nearest rank: the smallest value at least a share `q` of the steps reach.
        let at = |q: f64| v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1];
        if v.is_empty() {
            [0.0; 4]
        } else {
            [at(0.5), at(0.99), at(0.999), v[v.len() - 1]]
        }
    };
    StepMedians {
        steps: medians[0].len(),
        get_mask: summary(&mut medians[0]),
        mask_commit: summary(&mut medians[1]),
    }
}

fn in_mask(mask: &[u32], t: u32) -> bool {
    mask.get(t as usize / 32)
        .is_some_and(|w| w >> (t % 32) & 1 == 1)
}

/// Replays `traces` `1 + repeats` times (the first pass is the warm-up) with masks of
/// `mask_words` words, keeping the `slowest` get_mask calls. new_matcher is timed once per
/// trace and pass, clone after every commit of the first timed pass.
pub fn replay<S: Subject + ?Sized>(
    subject: &mut S,
    traces: &[Vec<u32>],
    mask_words: usize,
    repeats: usize,
    slowest: usize,
) -> Replay {
    let mut out = Replay::default();
    let mut mask = vec![0u32; mask_words];
    // Per step of every trace, its times in each timed pass (made before timing starts).
    let first_step: Vec<usize> = traces
        .iter()
        .scan(0, |at, t| {
            let first = *at;
            *at += t.len();
            Some(first)
        })
        .collect();
    let steps: usize = traces.iter().map(Vec::len).sum();
    let mut times = vec![NOT_TIMED; steps * repeats];
    // A trace is replayed up to its first rejected token on every pass.
    let mut usable: Vec<usize> = traces.iter().map(Vec::len).collect();
    for pass in 0..=repeats {
        let timed = pass > 0;
        for (i, trace) in traces.iter().enumerate() {
            let took = subject.time_new_matcher();
            if timed {
                out.timings.record("new_matcher", took);
            }
            if let Err(error) = subject.reset() {
                out.rejections.push(Rejection {
                    trace: i,
                    step: 0,
                    token: trace.first().copied().unwrap_or(0),
                    error: format!("reset: {error}"),
                });
                usable[i] = 0;
            }
            for (step, &t) in trace.iter().enumerate().take(usable[i]) {
                let started = Instant::now();
                let masked = subject.fill_mask(&mut mask);
                let masked_took = started.elapsed();
                let refused = match masked {
                    Err(e) => Some(format!("get_mask: {e}")),
                    Ok(()) if !in_mask(&mask, t) => Some("not in the mask".to_string()),
                    Ok(()) => None,
                };
                let started = Instant::now();
                let committed = subject.commit(t);
                let commit_took = started.elapsed();
                let refused = refused.or(committed.err().map(|e| format!("commit: {e}")));
                if let Some(error) = refused {
                    out.rejections.push(Rejection {
                        trace: i,
                        step,
                        token: t,
                        error,
                    });
                    usable[i] = step;
                    break;
                }
                if !timed {
                    continue;
                }
                out.timings.record("get_mask", masked_took);
                out.timings.record("commit", commit_took);
                out.timings.record("mask_commit", masked_took + commit_took);
                let ns = |d: Duration| d.as_nanos().min(u32::MAX as u128 - 1) as u32;
                times[(first_step[i] + step) * repeats + pass - 1] =
                    (ns(masked_took), ns(masked_took + commit_took));
                keep_slowest(&mut out.slow, slowest, i, step, masked_took);
                if pass == 1 {
                    let took = subject.time_clone();
                    out.timings.record("clone", took);
                }
            }
        }
    }
    out.step_medians = step_medians(&times, repeats);
    out
}

fn keep_slowest(slow: &mut Vec<SlowMask>, n: usize, trace: usize, step: usize, took: Duration) {
    let us = took.as_secs_f64() * 1e6;
    if n == 0 || (slow.len() >= n && us <= slow[slow.len() - 1].us) {
        return;
    }
    match slow.iter_mut().find(|s| (s.trace, s.step) == (trace, step)) {
        Some(s) => s.us = s.us.max(us),
        None => slow.push(SlowMask { trace, step, us }),
    }
    slow.sort_by(|a, b| b.us.total_cmp(&a.us));
    slow.truncate(n);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The language `a^n b` over tokens a = 0, b = 1 (EOS = 2 after `b`); optionally
    /// refuses to commit token `refuse`.
    pub(crate) struct AB {
        pub after_b: bool,
        pub refuse: Option<u32>,
        pub calls: Vec<&'static str>,
    }

    impl Subject for AB {
        fn time_new_matcher(&mut self) -> Duration {
            self.calls.push("new");
            Duration::from_nanos(100)
        }
        fn reset(&mut self) -> Result<(), String> {
            self.after_b = false;
            Ok(())
        }
        fn fill_mask(&mut self, mask: &mut [u32]) -> Result<(), String> {
            mask[0] = if self.after_b { 0b100 } else { 0b011 };
            Ok(())
        }
        fn commit(&mut self, token: u32) -> Result<(), String> {
            if Some(token) == self.refuse {
                return Err("refused".into());
            }
            self.after_b |= token == 1;
            Ok(())
        }
        fn time_clone(&mut self) -> Duration {
            self.calls.push("clone");
            Duration::from_nanos(50)
        }
    }

    pub(crate) fn ab(refuse: Option<u32>) -> AB {
        AB {
            after_b: false,
            refuse,
            calls: vec![],
        }
    }

    #[test]
    fn counts_skip_the_warm_up_pass() {
        let traces = vec![vec![0, 0, 1], vec![1]];
        let mut s = ab(None);
        let r = replay(&mut s, &traces, 1, 3, 2);
        assert!(r.rejections.is_empty());
        // 3 timed passes × 4 steps; clone on the first timed pass only.
        assert_eq!(r.timings.count("get_mask"), 12);
        assert_eq!(r.timings.count("commit"), 12);
        assert_eq!(r.timings.count("mask_commit"), 12);
        assert_eq!(r.timings.count("new_matcher"), 6);
        assert_eq!(r.timings.count("clone"), 4);
        assert_eq!(s.calls.iter().filter(|&&c| c == "new").count(), 8);
        let rows = r.timings.rows("x", "g", "v");
        let clone = rows.iter().find(|r| r.op == "clone").unwrap();
        assert_eq!(clone.p50_us, 0.05);
        assert_eq!(r.slow.len(), 2);
        assert!(r.slow[0].us >= r.slow[1].us);
    }

    #[test]
    fn step_medians_keep_what_recurs_and_drop_one_pass_stalls() {
        // 1,000 steps × 3 passes: every step 1 µs (mask + commit 2 µs), except step 7,
        // 50 µs in every pass, and step 8, 500 µs in one pass only (a stall).
        let passes = 3;
        let mut times = vec![(1_000u32, 2_000u32); 1_000 * passes];
        for p in 0..passes {
            times[7 * passes + p] = (50_000, 51_000);
        }
        times[8 * passes + 1] = (500_000, 501_000);
        // A step no pass reached, and one only the first pass reached.
        times.extend([NOT_TIMED; 3]);
        times.extend([(4_000, 5_000), NOT_TIMED, NOT_TIMED]);
        let m = step_medians(&times, passes);
        assert_eq!(m.steps, 1_001);
        assert_eq!(m.get_mask, [1.0, 1.0, 4.0, 50.0]);
        assert_eq!(m.mask_commit, [2.0, 2.0, 5.0, 51.0]);
        // The replay fills one slot per step and timed pass.
        let traces = vec![vec![0, 0, 1], vec![1]];
        let r = replay(&mut ab(None), &traces, 1, 3, 0);
        assert_eq!(r.step_medians.steps, 4);
        assert!(r.step_medians.get_mask[3] > 0.0);
    }

    #[test]
    fn tokens_outside_the_mask_or_refused_are_rejections() {
        // Token 0 after `b` is not in the mask: the trace stops there, once.
        let traces = vec![vec![0, 1, 0, 0], vec![0, 1]];
        let r = replay(&mut ab(None), &traces, 1, 2, 0);
        assert_eq!(
            r.rejections,
            vec![Rejection {
                trace: 0,
                step: 2,
                token: 0,
                error: "not in the mask".into()
            }]
        );
        // Steps before it still count: 2 passes × (2 + 2).
        assert_eq!(r.timings.count("get_mask"), 8);
        let r = replay(&mut ab(Some(1)), &traces, 1, 1, 0);
        assert_eq!(r.rejections.len(), 2);
        assert_eq!(r.rejections[1].error, "commit: refused");
        assert_eq!(r.timings.count("commit"), 2);
    }
}
