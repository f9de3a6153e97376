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
                keep_slowest(&mut out.slow, slowest, i, step, masked_took);
                if pass == 1 {
                    let took = subject.time_clone();
                    out.timings.record("clone", took);
                }
            }
        }
    }
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
