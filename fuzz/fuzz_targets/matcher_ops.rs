//! Sequences of matcher operations on shipped grammars (`expr.lark`, `json.lark`,
//! compiled once for the `bytes` tokenizer, and `json.lark` for a vocabulary spread over
//! a wide mask, `stackmask_fuzz::spread_vocab`), with the artifact and the mask walk
//! chosen by the first byte (default, subset walk always, pair walk always), decoded
//! from the input: commit, commit bytes, rollback, fill_mask, clone, reset,
//! set_max_rollback, is_accepting, accepts_bytes. Besides "never a panic", every step
//! checks what DESIGN.md §1 promises:
//!
//! - a mask is exact: every token in it commits (on a copy), every token outside it is
//!   refused, and EOS is in it exactly when the matcher is accepting;
//! - a refused commit, commit_bytes or rollback leaves the matcher unchanged;
//! - `accepts_bytes` answers what `commit_bytes` then does (after EOS too: the defect
//!   this found is `accepts_bytes_is_false_after_eos` in tests/tests/fuzz_regressions.rs);
//! - a rollback restores exactly the state before the commits it undoes;
//! - a clone behaves as the original.

#![no_main]

use libfuzzer_sys::fuzz_target;
use stackmask_runtime::{MatchError, Matcher};

/// What a matcher looks like from outside, to compare before and after.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Snapshot {
    bytes_consumed: usize,
    accepting: bool,
    finished: bool,
    mask: Vec<u32>,
}

fn snapshot(m: &mut Matcher) -> Snapshot {
    let mut mask = vec![0u32; m.engine().mask_words()];
    m.fill_mask(&mut mask);
    Snapshot {
        bytes_consumed: m.bytes_consumed(),
        accepting: m.is_accepting(),
        finished: m.is_finished(),
        mask,
    }
}

fn in_mask(mask: &[u32], t: u32) -> bool {
    mask.get(t as usize / 32)
        .is_some_and(|w| w >> (t % 32) & 1 != 0)
}

/// Reads the input as a stream of small integers (zero once it runs out).
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        b
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.byte()).collect()
    }
}

/// Checks that the mask is exact: each token commits on a copy exactly when it is in
/// the mask (every token: 257 for `bytes`, 3,572 for the spread vocabulary), and
/// EOS is in it exactly when the matcher accepts.
fn check_mask(m: &Matcher, s: &Snapshot) {
    let engine = m.engine();
    let (vocab_len, eos) = (engine.meta().vocab_len, engine.meta().eos);
    if s.finished {
        assert!(s.mask.iter().all(|&w| w == 0), "a finished matcher's mask");
        return;
    }
    assert_eq!(
        in_mask(&s.mask, eos),
        s.accepting,
        "EOS in the mask vs is_accepting"
    );
    let mut probe = m.clone();
    probe.set_max_rollback(1);
    for t in (0..vocab_len).filter(|&t| t != eos) {
        let allowed = in_mask(&s.mask, t);
        match probe.commit(t) {
            Ok(()) => {
                assert!(allowed, "token {t} commits but is not in the mask");
                probe.rollback(1).expect("rollback of one commit");
            }
            Err(e) if e.is_work_limit() => {}
            Err(e) => assert!(!allowed, "token {t} is in the mask but commit says {e}"),
        }
    }
    assert_eq!(
        snapshot(&mut probe),
        *s,
        "probing the mask changed the copy"
    );
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let first = input.byte() as usize;
    let index = first % stackmask_fuzz::MATCHER_ENGINES;
    let engine = stackmask_fuzz::engine(index);
    let (vocab_len, eos) = (engine.meta().vocab_len, engine.meta().eos);
    let mut m = Matcher::new(engine);
    // The mask walk: the default switch, the subset walk always, or the pair walk
    // always (the setting survives clones and resets, as each snapshot checks).
    match first / stackmask_fuzz::MATCHER_ENGINES % 3 {
        1 => m.set_subset_walk_after(0),
        2 => m.set_subset_walk_after(u32::MAX),
        _ => {}
    }
    // The snapshot before each commit that a rollback can still reach.
    let mut history: Vec<Snapshot> = Vec::new();
    let mut ops = 0;
    while !input.0.is_empty() && ops < 64 {
        ops += 1;
        let before = snapshot(&mut m);
        match input.byte() % 10 {
            0 | 1 => {
                let t =
                    u32::from(u16::from_le_bytes([input.byte(), input.byte()])) % (vocab_len + 4);
                match m.commit(t) {
                    Ok(()) => {
                        assert!(
                            t == eos && before.accepting || in_mask(&before.mask, t),
                            "token {t} commits but is not in the mask"
                        );
                        history.push(before);
                    }
                    Err(e) => {
                        assert!(
                            !in_mask(&before.mask, t) || e.is_work_limit(),
                            "token {t} is in the mask but commit says {e}"
                        );
                        assert_eq!(
                            snapshot(&mut m),
                            before,
                            "a refused commit ({e}) changed the matcher"
                        );
                    }
                }
            }
            2 => {
                let n = input.byte() as usize % 6;
                let bytes = input.bytes(n);
                let accepted = m.accepts_bytes(&bytes);
                assert_eq!(
                    snapshot(&mut m),
                    before,
                    "accepts_bytes changed the matcher"
                );
                match m.commit_bytes(&bytes) {
                    Ok(()) => {
                        assert!(
                            accepted,
                            "commit_bytes({bytes:?}) after accepts_bytes said no"
                        );
                        history.push(before);
                    }
                    Err(e) => {
                        assert!(
                            !accepted || e.is_work_limit(),
                            "accepts_bytes({bytes:?}) said yes, commit_bytes says {e}"
                        );
                        assert_eq!(
                            snapshot(&mut m),
                            before,
                            "a refused commit_bytes ({e}) changed the matcher"
                        );
                    }
                }
            }
            3 => {
                let n = input.byte() as usize % 8;
                match m.rollback(n) {
                    Ok(()) => {
                        assert!(
                            n <= history.len(),
                            "rolled back {n} of {} commits",
                            history.len()
                        );
                        let target = history.split_off(history.len() - n);
                        if let Some(expected) = target.into_iter().next() {
                            assert_eq!(
                                snapshot(&mut m),
                                expected,
                                "rollback({n}) did not restore the state"
                            );
                        }
                    }
                    Err(e) => {
                        assert!(n > m.rollback_available(), "rollback({n}) refused: {e}");
                        assert_eq!(
                            snapshot(&mut m),
                            before,
                            "a refused rollback ({e}) changed the matcher"
                        );
                    }
                }
            }
            4 => check_mask(&m, &before),
            5 => {
                let copy = m.clone();
                let mut original = std::mem::replace(&mut m, copy);
                assert_eq!(
                    snapshot(&mut m),
                    before,
                    "a clone differs from its original"
                );
                assert_eq!(m.rollback_available(), original.rollback_available());
                // Keep going on either one: the other must not matter.
                if input.byte() & 1 == 0 {
                    assert_eq!(snapshot(&mut original), before);
                    m = original;
                }
            }
            6 => {
                m.reset();
                history.clear();
                let fresh = snapshot(&mut Matcher::new(m.engine().clone()));
                assert_eq!(snapshot(&mut m), fresh, "reset differs from a new matcher");
            }
            7 => {
                let k = input.byte() as usize % 12;
                m.set_max_rollback(if k == 11 { usize::MAX } else { k });
            }
            8 => {
                assert_eq!(m.is_accepting(), before.accepting);
                if !before.finished {
                    assert_eq!(in_mask(&before.mask, eos), before.accepting);
                }
            }
            _ => {
                let n = input.byte() as usize % 6;
                let bytes = input.bytes(n);
                let accepted = m.accepts_bytes(&bytes);
                assert_eq!(
                    snapshot(&mut m),
                    before,
                    "accepts_bytes changed the matcher"
                );
                let mut copy = m.clone();
                let committed = copy.commit_bytes(&bytes);
                assert!(
                    committed.is_ok() == accepted
                        || committed.as_ref().is_err_and(MatchError::is_work_limit),
                    "accepts_bytes({bytes:?}) = {accepted}, commit_bytes on a copy: {committed:?}"
                );
            }
        }
        // Drop what the window no longer reaches.
        let keep = m.rollback_available();
        if history.len() > keep {
            history.drain(..history.len() - keep);
        }
    }
});
