//! The compiled `Matcher` against the reference path, on a real vocabulary.
//!
//! `json.lark` × `tiktoken:o200k_base`, built in process: the canonical tokenization of
//! the two smallest JSON samples is committed token by token, and at every step the
//! compiled mask must equal the reference mask (`engine.reference()`, the Earley + trie
//! path) bit for bit (DESIGN.md §5 "Differential"). Around that walk: `clone()` and
//! `rollback(n)` restore earlier masks exactly, a rejected commit changes nothing, the
//! EOS rules of §1 / §2 hold, and `reset()` is a fresh matcher. Then `c.lark`,
//! `sql.lark` (and `json`, `expr`) with the `bytes` vocabulary: whole-document
//! acceptance, rejection offsets and masks agree with the reference on every sample.

mod common;
mod compiled_support;

use common::{workspace, Rng};
use compiled_support::{bit, cached, count, engine, mask_diff, Built};
use stackmask_formats::TokenKind;
use stackmask_runtime::reference::{ReferenceEngine, ReferenceMatcher};
use stackmask_runtime::{Engine, MatchError, Matcher};
use std::path::PathBuf;
use std::sync::Arc;

const O200K: &str = "tiktoken:o200k_base";

struct Setup {
    built: &'static Built,
    engine: Arc<Engine>,
    docs: Vec<(String, Vec<u8>, Vec<u32>)>,
}

/// The json × o200k engine and the two smallest JSON samples with their canonical
/// tokenizations.
fn setup() -> Setup {
    let built = cached("json", O200K);
    let engine = engine(&built.bytes);
    let dir = workspace().join("grammars/samples/json");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort_by_key(|p| (std::fs::metadata(p).unwrap().len(), p.clone()));
    let docs = files[..2]
        .iter()
        .map(|p| {
            let text = std::fs::read(p).unwrap();
            let tokens = built.tokenizer.encode(&text).unwrap();
            assert_eq!(
                built.tokenizer.decode(&tokens),
                text,
                "{}: tokens spell the text",
                p.display()
            );
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                text,
                tokens,
            )
        })
        .collect();
    Setup {
        built,
        engine,
        docs,
    }
}

fn reference(e: &Arc<Engine>) -> ReferenceMatcher {
    ReferenceMatcher::new(e.reference().expect("the embedded reference path builds"))
}

/// The reference path on the shipped grammar's *source* (not the grammar in the
/// artifact, which for a grammar with greedy dead ends is its adjacency product), for
/// `grammar` compiled with `spec`: the comparison then checks the product too.
fn source_reference(grammar: &str, spec: &str) -> Arc<ReferenceEngine> {
    let built = cached(grammar, spec);
    Arc::new(
        ReferenceEngine::new(
            &built.lexed.grammar,
            built.lexed.dfas.clone(),
            built.tokenizer.vocab.clone(),
            stackmask_compiler::vocab::build_trie(&built.tokenizer.vocab),
        )
        .expect("the reference path builds"),
    )
}

fn mask_of(m: &mut Matcher) -> Vec<u32> {
    let mut v = vec![0u32; m.engine().mask_words()];
    m.fill_mask(&mut v);
    v
}

fn ref_mask_of(r: &mut ReferenceMatcher, words: usize) -> Vec<u32> {
    let mut v = vec![0u32; words];
    r.fill_mask(&mut v);
    v
}

/// `k` distinct sorted steps in `0..=last`, always including 0 and `last`.
fn sample_steps(rng: &mut Rng, last: usize, k: usize) -> Vec<usize> {
    let mut s = vec![0, last];
    while s.len() < k.min(last + 1) {
        let x = rng.below(last + 1);
        if !s.contains(&x) {
            s.push(x);
        }
    }
    s.sort_unstable();
    s
}

fn assert_same_mask(compiled: &[u32], reference: &[u32], what: &str) {
    assert!(
        compiled == reference,
        "{what}: compiled mask ({} tokens) != reference mask ({} tokens); first differing ids {:?}",
        count(compiled),
        count(reference),
        mask_diff(compiled, reference)
    );
}

#[test]
fn masks_match_the_reference_along_real_documents() {
    let s = setup();
    let eos = s.engine.meta().eos;
    let words = s.engine.mask_words();
    assert_eq!(words, s.built.tokenizer.vocab.mask_words());
    for (name, text, tokens) in &s.docs {
        let mut m = Matcher::new(s.engine.clone());
        let mut r = reference(&s.engine);
        // Every step: a reference mask over o200k costs milliseconds here.
        for step in 0..=tokens.len() {
            let next = tokens.get(step).copied().unwrap_or(eos);
            assert_eq!(
                m.is_accepting(),
                r.is_accepting(),
                "{name} step {step}: acceptance"
            );
            assert_eq!(m.bytes_consumed(), r.bytes_consumed(), "{name} step {step}");
            {
                let cm = mask_of(&mut m);
                let rm = ref_mask_of(&mut r, words);
                assert_same_mask(&cm, &rm, &format!("{name} step {step}"));
                assert!(
                    bit(&cm, next),
                    "{name} step {step}: the document's next token {next} is not allowed"
                );
                assert_eq!(
                    bit(&cm, eos),
                    m.is_accepting(),
                    "{name} step {step}: EOS bit vs is_accepting"
                );
                // Only normal tokens and EOS are ever allowed.
                for id in common::mask_ids(&cm) {
                    assert!(
                        id == eos || s.built.tokenizer.vocab.kind(id) == TokenKind::Normal,
                        "{name} step {step}: special/unused token {id} allowed"
                    );
                }
            }
            m.commit(next)
                .unwrap_or_else(|e| panic!("{name} step {step}: compiled: {e}"));
            r.commit(next)
                .unwrap_or_else(|e| panic!("{name} step {step}: reference: {e}"));
        }
        assert!(m.is_finished() && r.is_finished());
        assert_eq!(m.bytes_consumed(), text.len());
    }
}

/// Random walks that sample every next token from the compiled mask (DESIGN.md §5):
/// the masks agree with the reference at every step, every sampled token commits on
/// both paths, and a walk ends with EOS only where both accept.
#[test]
fn random_walks_through_the_mask_match_the_reference() {
    let s = setup();
    let eos = s.engine.meta().eos;
    let words = s.engine.mask_words();
    let mut rng = Rng(0x0003_a14b);
    for walk in 0..3 {
        let mut m = Matcher::new(s.engine.clone());
        let mut r = reference(&s.engine);
        // Start some walks inside a document, so they also see deeper structure.
        let (_, _, tokens) = &s.docs[walk % 2];
        let start = if walk == 0 {
            0
        } else {
            rng.below(tokens.len())
        };
        for &t in &tokens[..start] {
            m.commit(t).unwrap();
            r.commit(t).unwrap();
        }
        for step in 0..30 {
            let what = format!("walk {walk} (from document step {start}) step {step}");
            let cm = mask_of(&mut m);
            let rm = ref_mask_of(&mut r, words);
            assert_same_mask(&cm, &rm, &what);
            let ids = common::mask_ids(&cm);
            assert!(!ids.is_empty(), "{what}: empty mask on a viable prefix");
            // EOS rarely, so walks go on; otherwise a uniform allowed token.
            let normal: Vec<u32> = ids.iter().copied().filter(|&t| t != eos).collect();
            let t = if normal.is_empty() || (bit(&cm, eos) && rng.chance(10)) {
                eos
            } else {
                normal[rng.below(normal.len())]
            };
            m.commit(t)
                .unwrap_or_else(|e| panic!("{what}: allowed token {t} refused: {e}"));
            r.commit(t)
                .unwrap_or_else(|e| panic!("{what}: reference refused {t}: {e}"));
            if t == eos {
                break;
            }
        }
    }
}

#[test]
fn clone_and_rollback_restore_earlier_masks() {
    let s = setup();
    let eos = s.engine.meta().eos;
    let words = s.engine.mask_words();
    let mut rng = Rng(0xc10_4e5);
    let (name, _, tokens) = &s.docs[0];
    let mut m = Matcher::new(s.engine.clone());
    // Everything stays undoable: the test ends by rolling back to the start.
    m.set_max_rollback(usize::MAX);
    let mut r = reference(&s.engine);
    let points = sample_steps(&mut rng, tokens.len() - 1, 5);
    let mut step = 0;
    for &p in &points {
        while step < p {
            m.commit(tokens[step]).unwrap();
            r.commit(tokens[step]).unwrap();
            step += 1;
        }
        let what = format!("{name} clone at step {p}");
        let mask_p = mask_of(&mut m);
        let (bytes_p, acc_p) = (m.bytes_consumed(), m.is_accepting());
        let mut c = m.clone();
        let mut rc = r.clone();

        // m goes on along the document ...
        let k = (1 + rng.below(6)).min(tokens.len() - p);
        for &t in &tokens[p..p + k] {
            m.commit(t).unwrap();
            r.commit(t).unwrap();
        }
        // ... and the clone on a random walk through its own masks, starting with a
        // token other than the document's.
        let mut walked = 0;
        for i in 0..1 + rng.below(6) {
            let mask = mask_of(&mut c);
            let ids: Vec<u32> = common::mask_ids(&mask)
                .into_iter()
                .filter(|&t| t != eos && (i > 0 || t != tokens[p]))
                .collect();
            if ids.is_empty() {
                break;
            }
            let t = ids[rng.below(ids.len())];
            c.commit(t)
                .unwrap_or_else(|e| panic!("{what}: allowed token {t} refused: {e}"));
            rc.commit(t)
                .unwrap_or_else(|e| panic!("{what}: reference refused {t}: {e}"));
            walked += 1;
        }
        // Each matches its own reference: the clone did not disturb the original.
        assert_same_mask(
            &mask_of(&mut m),
            &ref_mask_of(&mut r, words),
            &format!("{what}: original after {k}"),
        );
        assert_same_mask(
            &mask_of(&mut c),
            &ref_mask_of(&mut rc, words),
            &format!("{what}: clone after {walked}"),
        );
        assert_eq!(c.is_accepting(), rc.is_accepting(), "{what}");

        // Rolling both back lands exactly where the clone was taken.
        c.rollback(walked).unwrap();
        assert_eq!(
            (c.bytes_consumed(), c.is_accepting()),
            (bytes_p, acc_p),
            "{what}: clone rolled back"
        );
        assert_same_mask(
            &mask_of(&mut c),
            &mask_p,
            &format!("{what}: clone rolled back"),
        );
        m.rollback(k).unwrap();
        r.rollback(k).unwrap();
        assert_eq!(
            (m.bytes_consumed(), m.is_accepting()),
            (bytes_p, acc_p),
            "{what}: original rolled back"
        );
        assert_same_mask(
            &mask_of(&mut m),
            &mask_p,
            &format!("{what}: original rolled back"),
        );
        // A clone of a clone, after rollback, still commits the document's tokens.
        let mut cc = c.clone();
        for &t in &tokens[p..p + k] {
            cc.commit(t)
                .unwrap_or_else(|e| panic!("{what}: re-commit after rollback: {e}"));
        }
    }
    // Rolling back everything is the start of input.
    let n = step;
    m.rollback(n).unwrap();
    assert_eq!(m.bytes_consumed(), 0);
    assert_same_mask(
        &mask_of(&mut m),
        &mask_of(&mut Matcher::new(s.engine.clone())),
        "rollback to the start",
    );
    assert_eq!(
        m.rollback(1),
        Err(MatchError::RollbackTooFar {
            requested: 1,
            available: 0
        })
    );
}

/// A matcher with a small rollback window forgets what older commits would need
/// (its GSS, heads and groups are rebuilt as it goes, once they pass a few thousand
/// entries, so every JSON sample is used): at every step its mask equals that of a
/// matcher that keeps everything (whose masks the other tests check against the
/// reference), rollbacks within the window (and the clone of a windowed matcher) land
/// exactly, and a rollback past the window is the named error with the matcher
/// unchanged.
#[test]
fn a_rollback_window_forgets_history_and_keeps_masks_exact() {
    let s = setup();
    let mut rng = Rng(0x3d0_11ba);
    let dir = workspace().join("grammars/samples/json");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read(&path).unwrap();
        let tokens = s.built.tokenizer.encode(&text).unwrap();
        for window in [0, 1, 3] {
            let what = |step: usize| format!("{name}, window {window}, step {step}");
            let mut m = Matcher::new(s.engine.clone());
            m.set_max_rollback(window);
            assert_eq!(m.max_rollback(), window);
            let mut all = Matcher::new(s.engine.clone());
            all.set_max_rollback(usize::MAX);
            let (mut step, mut available) = (0, 0);
            while step < tokens.len() {
                m.commit(tokens[step]).unwrap();
                all.commit(tokens[step]).unwrap();
                step += 1;
                // A rollback uses the window up; commits refill it.
                available = (available + 1).min(window);
                assert_eq!(m.rollback_available(), available, "{}", what(step));
                assert_same_mask(&mask_of(&mut m), &mask_of(&mut all), &what(step));
                assert_eq!(m.is_accepting(), all.is_accepting(), "{}", what(step));
                if available == 0 || rng.below(4) != 0 {
                    continue;
                }
                // Past the window: refused, nothing changes.
                let before = snapshot(&mut m);
                if step > window {
                    assert_eq!(
                        m.rollback(window + 1),
                        Err(MatchError::RollbackBeyondWindow {
                            requested: window + 1,
                            available,
                            window
                        }),
                        "{}",
                        what(step)
                    );
                    assert_eq!(snapshot(&mut m), before, "{}", what(step));
                }
                // Within it, on the matcher or on a clone: exact, then the
                // document goes on.
                let back = 1 + rng.below(available);
                let mut c = m.clone();
                for x in [&mut m, &mut c] {
                    x.rollback(back).unwrap();
                    assert_eq!(x.rollback_available(), available - back);
                }
                all.rollback(back).unwrap();
                (step, available) = (step - back, available - back);
                let want = mask_of(&mut all);
                assert_same_mask(&mask_of(&mut m), &want, &what(step));
                assert_same_mask(&mask_of(&mut c), &want, &format!("clone, {}", what(step)));
                assert_eq!(m.bytes_consumed(), all.bytes_consumed(), "{}", what(step));
            }
            assert_eq!(m.bytes_consumed(), text.len(), "{name}");
        }
    }
}

/// The observable state of a matcher.
fn snapshot(m: &mut Matcher) -> (Vec<u32>, usize, bool, bool) {
    (
        mask_of(m),
        m.bytes_consumed(),
        m.is_accepting(),
        m.is_finished(),
    )
}

#[test]
fn a_refused_commit_changes_nothing() {
    let s = setup();
    let vocab = &s.built.tokenizer.vocab;
    let eos = vocab.eos;
    let n = vocab.len() as u32;
    let special = (0..n)
        .find(|&t| t != eos && vocab.kind(t) == TokenKind::Special)
        .unwrap();
    let unused = (0..n)
        .find(|&t| vocab.kind(t) == TokenKind::Unused)
        .unwrap();
    let mut rng = Rng(0x4e_f05e);
    let (name, _, tokens) = &s.docs[1];
    let mut m = Matcher::new(s.engine.clone());
    let mut r = reference(&s.engine);
    let points = sample_steps(&mut rng, tokens.len() - 1, 5);
    for (step, &tok) in tokens.iter().enumerate() {
        if points.contains(&step) {
            let what = format!("{name} step {step}");
            let before = snapshot(&mut m);
            let mask = &before.0;
            // Normal tokens outside the mask.
            let mut refused = 0;
            while refused < 4 {
                let t = rng.below(n as usize) as u32;
                if vocab.kind(t) != TokenKind::Normal || bit(mask, t) {
                    continue;
                }
                assert!(
                    !m.accepts_bytes(vocab.token_bytes(t)),
                    "{what}: accepts_bytes of refused token {t}"
                );
                assert_eq!(
                    m.commit(t),
                    Err(MatchError::Rejected { token: t }),
                    "{what}"
                );
                assert_eq!(
                    snapshot(&mut m),
                    before,
                    "{what}: state changed by refused token {t}"
                );
                refused += 1;
            }
            // Tokens that are never allowed, and ids outside the vocabulary.
            assert_eq!(
                m.commit(special),
                Err(MatchError::SpecialToken(special)),
                "{what}"
            );
            assert_eq!(
                m.commit(unused),
                Err(MatchError::SpecialToken(unused)),
                "{what}"
            );
            assert_eq!(m.commit(n), Err(MatchError::UnknownToken(n)), "{what}");
            assert_eq!(
                m.commit(u32::MAX),
                Err(MatchError::UnknownToken(u32::MAX)),
                "{what}"
            );
            // Forced bytes that go wrong part-way: refused at the same offset as the
            // reference refuses them, all or nothing.
            let mut bad = vocab.token_bytes(tok).to_vec();
            bad.extend_from_slice(b"\x01}}");
            let got = m.commit_bytes(&bad);
            let want = r.clone().commit_bytes(&bad);
            assert_eq!(got, want, "{what}: forced bytes {bad:?}");
            assert!(got.is_err(), "{what}: {bad:?} accepted");
            // The next token of the document is accepted by accepts_bytes, without
            // being committed.
            assert!(m.accepts_bytes(vocab.token_bytes(tok)), "{what}");
            assert_eq!(
                snapshot(&mut m),
                before,
                "{what}: state changed by refused commits"
            );
            // The history is unchanged too: rolling back one commit undoes the last
            // accepted token, not a refused one.
            if step > 0 {
                let mut c = m.clone();
                let mut rc = r.clone();
                c.rollback(1).unwrap();
                rc.rollback(1).unwrap();
                assert_eq!(
                    c.bytes_consumed(),
                    rc.bytes_consumed(),
                    "{what}: rollback after refusals"
                );
                assert_eq!(
                    c.bytes_consumed(),
                    before.1 - vocab.token_bytes(tokens[step - 1]).len()
                );
            }
        }
        m.commit(tok).unwrap();
        r.commit(tok).unwrap();
    }
}

#[test]
fn eos_rules() {
    let s = setup();
    let vocab = &s.built.tokenizer.vocab;
    let eos = vocab.eos;
    let (name, _, tokens) = &s.docs[0];
    let mut m = Matcher::new(s.engine.clone());
    let mut r = reference(&s.engine);
    // Find a non-accepting point near the start ("{" then a newline, say).
    let mut step = 0;
    while m.is_accepting() || step == 0 {
        m.commit(tokens[step]).unwrap();
        r.commit(tokens[step]).unwrap();
        step += 1;
    }
    assert!(!r.is_accepting(), "{name} step {step}: reference accepts");
    let before = snapshot(&mut m);
    assert!(
        !bit(&before.0, eos),
        "EOS allowed where the text is not a sentence"
    );
    assert_eq!(m.commit(eos), Err(MatchError::EosNotAllowed));
    assert_eq!(snapshot(&mut m), before, "refused EOS changed the state");

    // Walk to the end.
    for &t in &tokens[step..] {
        m.commit(t).unwrap();
        r.commit(t).unwrap();
    }
    assert!(
        m.is_accepting() && r.is_accepting(),
        "{name}: the document is a sentence"
    );
    let end = snapshot(&mut m);
    assert!(
        bit(&end.0, eos),
        "EOS not allowed at the end of the document"
    );
    m.commit(eos).unwrap();
    assert!(m.is_finished());
    let finished = snapshot(&mut m);
    assert!(
        finished.0.iter().all(|&w| w == 0),
        "a mask after EOS allows {} tokens",
        count(&finished.0)
    );
    assert_eq!(finished.1, end.1, "EOS consumes no bytes");
    // Nothing after EOS, and a refusal after EOS changes nothing.
    let ws = (0..vocab.len() as u32)
        .find(|&t| vocab.kind(t) == TokenKind::Normal && vocab.token_bytes(t) == b"\n")
        .unwrap();
    assert_eq!(m.commit(ws), Err(MatchError::Finished));
    assert_eq!(m.commit(eos), Err(MatchError::Finished));
    assert_eq!(m.commit_bytes(b" "), Err(MatchError::Finished));
    assert_eq!(m.commit_bytes(b""), Err(MatchError::Finished));
    // accepts_bytes answers what commit_bytes does (found by the matcher_ops fuzzer).
    assert!(!m.accepts_bytes(b" "));
    assert!(!m.accepts_bytes(b""));
    assert_eq!(snapshot(&mut m), finished);

    // Rollback over EOS: back to the accepting state before it, mask and all.
    m.rollback(1).unwrap();
    assert!(!m.is_finished());
    assert_eq!(snapshot(&mut m), end, "rollback over EOS");
    // After that, trailing whitespace is still allowed (json.lark: `ws?` after a
    // value), and EOS again.
    m.commit(ws).unwrap();
    r.commit(ws).unwrap();
    assert_same_mask(
        &mask_of(&mut m),
        &ref_mask_of(&mut r, s.engine.mask_words()),
        "after trailing newline",
    );
    m.commit(eos).unwrap();
    // Rolling back EOS and two tokens is the state before the last document token.
    m.rollback(3).unwrap();
    let mut fresh = Matcher::new(s.engine.clone());
    for &t in &tokens[..tokens.len() - 1] {
        fresh.commit(t).unwrap();
    }
    assert_eq!(
        snapshot(&mut m),
        snapshot(&mut fresh),
        "rollback over EOS and two tokens"
    );
    // EOS committed at the very start is refused for JSON (an empty text is not a value).
    let mut empty = Matcher::new(s.engine.clone());
    assert_eq!(empty.commit(eos), Err(MatchError::EosNotAllowed));
    // And reset after EOS is a fresh matcher.
    m.commit(tokens[tokens.len() - 1]).unwrap();
    m.commit(eos).unwrap();
    m.reset();
    assert_eq!(
        snapshot(&mut m),
        snapshot(&mut Matcher::new(s.engine.clone())),
        "reset after EOS"
    );
}

#[test]
fn reset_is_a_fresh_matcher() {
    let s = setup();
    let mut rng = Rng(0x2e5e7);
    let mut pooled = Matcher::new(s.engine.clone());
    for round in 0..2 {
        for (name, _, tokens) in &s.docs {
            // Leave the pooled matcher somewhere in the middle of another document,
            // after a rollback and a refused commit.
            let (_, _, other) = &s.docs[(round + 1) % 2];
            pooled.reset();
            for &t in &other[..rng.below(other.len())] {
                pooled.commit(t).unwrap();
            }
            let _ = pooled.rollback(1);
            let _ = pooled.commit_bytes(b"\x00");
            pooled.reset();
            let mut fresh = Matcher::new(s.engine.clone());
            let steps = sample_steps(&mut rng, tokens.len(), 5);
            for (step, &t) in tokens.iter().enumerate() {
                if steps.contains(&step) {
                    assert_eq!(
                        snapshot(&mut pooled),
                        snapshot(&mut fresh),
                        "{name} round {round} step {step}"
                    );
                }
                pooled.commit(t).unwrap();
                fresh.commit(t).unwrap();
            }
            assert_eq!(pooled.is_accepting(), fresh.is_accepting());
        }
    }
}

/// A new matcher takes the buffers a dropped matcher of its engine left
/// (`Matcher::new`, the engine's pool): it starts at the start of input with every
/// setting at its default, whatever the dropped one had set or parsed, and its masks
/// equal the reference path's; the pool keeps at most `MAX_POOLED_MATCHERS` sets, and
/// none holding more than `MAX_POOLED_STATE_BYTES` of parse state.
#[test]
fn a_new_matcher_on_dropped_buffers_is_a_fresh_matcher() {
    let s = setup();
    // An engine of its own, so that no other test's matchers fill its pool.
    let engine = engine(&s.built.bytes);
    let words = engine.mask_words();
    let mut rng = Rng(0x0090_01ed);
    for round in 0..4 {
        let (name, _, tokens) = &s.docs[round % 2];
        let (_, _, other) = &s.docs[(round + 1) % 2];
        // Left in the middle of another document, every setting changed.
        let mut old = Matcher::new(engine.clone());
        old.set_mask_cache_slots(round % 2);
        old.set_subset_walk_after(16);
        old.set_sparse_pairs(false);
        old.set_kept_unions(false);
        old.set_max_rollback(round);
        for &t in &other[..1 + rng.below(other.len() - 1)] {
            old.commit(t).unwrap();
            let _ = mask_of(&mut old);
        }
        old.set_max_step_work(1);
        old.set_work_budget(1, 1);
        drop(old);
        assert!(engine.pooled_matchers() >= 1, "round {round}: nothing kept");
        let pooled = engine.pooled_matchers();
        let mut m = Matcher::new(engine.clone());
        assert_eq!(
            engine.pooled_matchers(),
            pooled - 1,
            "round {round}: not taken"
        );
        assert_eq!(m.bytes_consumed(), 0);
        assert_eq!(m.rollback_available(), 0);
        assert_eq!(m.max_rollback(), stackmask_runtime::DEFAULT_MAX_ROLLBACK);
        assert_eq!(
            m.mask_cache_slots(),
            stackmask_runtime::glr::DEFAULT_MASK_CACHE_SLOTS
        );
        assert_eq!(
            m.work_budget(),
            (
                stackmask_runtime::glr::DEFAULT_WORK_PER_BYTE,
                stackmask_runtime::glr::DEFAULT_WORK_BURST
            )
        );
        let mut r = reference(&engine);
        for (step, &t) in tokens.iter().enumerate() {
            let what = format!("round {round}, {name} step {step}");
            if step % 7 == 0 {
                assert_same_mask(&mask_of(&mut m), &ref_mask_of(&mut r, words), &what);
            } else {
                let _ = mask_of(&mut m);
            }
            // The dropped matcher's work limit of 1 would refuse this.
            m.commit(t).unwrap_or_else(|e| panic!("{what}: {e}"));
            r.commit(t).unwrap();
        }
        assert!(m.is_accepting(), "round {round}: {name} is a sentence");
        // The default window, not the dropped matcher's.
        m.rollback(stackmask_runtime::DEFAULT_MAX_ROLLBACK)
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
    }
    // Bounded by count.
    let many: Vec<Matcher> = (0..stackmask_runtime::MAX_POOLED_MATCHERS + 5)
        .map(|_| Matcher::new(engine.clone()))
        .collect();
    assert_eq!(engine.pooled_matchers(), 0);
    drop(many);
    assert_eq!(
        engine.pooled_matchers(),
        stackmask_runtime::MAX_POOLED_MATCHERS
    );
    // And by size: a matcher keeping all of a long document's history is freed.
    let mut long = Matcher::new(engine.clone());
    long.set_max_rollback(usize::MAX);
    let mut text = b"[".to_vec();
    text.extend(b"1,".repeat(300_000));
    text.extend(b"1]");
    long.commit_bytes(&text).unwrap();
    let _ = engine.pooled_matchers();
    let before = engine.pooled_matchers();
    drop(long);
    assert_eq!(
        engine.pooled_matchers(),
        before,
        "buffers over MAX_POOLED_STATE_BYTES were kept"
    );
}

/// A clone made over a dropped matcher's buffers (the engine's pool) is its original:
/// the same bytes, rollback window and settings, whatever the dropped matcher had
/// parsed or set, and its masks equal the reference path's at every step after.
/// (That nothing the dropped walk remembered of its stack is used is the next test's:
/// here the dropped stacks' memos are mostly forgotten by the low-water mark.)
#[test]
fn a_clone_on_dropped_buffers_is_its_original() {
    let s = setup();
    // An engine of its own, so that no other test's matchers fill its pool.
    let engine = engine(&s.built.bytes);
    let words = engine.mask_words();
    let mut rng = Rng(0xc10e_d0b5);
    for round in 0..8 {
        let (name, _, tokens) = &s.docs[round % 2];
        let (_, _, other) = &s.docs[(round / 2 + 1) % 2];
        // The original, part way through its document, its settings changed.
        let mut original = Matcher::new(engine.clone());
        original.set_max_rollback(3 + round);
        original.set_mask_cache_slots(1 + round % 3);
        if round % 4 == 3 {
            original.set_subset_walk_after(16);
        }
        let mut r = reference(&engine);
        let split = 1 + rng.below(tokens.len() - 2);
        for &t in &tokens[..split] {
            let _ = mask_of(&mut original);
            original.commit(t).unwrap();
            r.commit(t).unwrap();
        }
        // Dropped in the middle of another document (or the same one further on),
        // after masks that left its walk remembering its own stack.
        let mut old = Matcher::new(engine.clone());
        old.set_mask_cache_slots(round % 2);
        old.set_sparse_pairs(round % 2 == 0);
        old.set_max_rollback(usize::MAX);
        for &t in &other[..1 + rng.below(other.len() - 1)] {
            old.commit(t).unwrap();
            let _ = mask_of(&mut old);
        }
        drop(old);
        let pooled = engine.pooled_matchers();
        assert!(pooled >= 1, "round {round}: nothing kept");
        let mut copy = original.clone();
        assert_eq!(
            engine.pooled_matchers(),
            pooled - 1,
            "round {round}: not taken"
        );
        assert_eq!(copy.bytes_consumed(), original.bytes_consumed());
        assert_eq!(copy.rollback_available(), original.rollback_available());
        assert_eq!(copy.max_rollback(), original.max_rollback());
        assert_eq!(copy.mask_cache_slots(), original.mask_cache_slots());
        assert_eq!(copy.is_accepting(), original.is_accepting());
        for (step, &t) in tokens.iter().enumerate().skip(split) {
            let what = format!("round {round}, {name} step {step}");
            let mask = mask_of(&mut copy);
            assert_same_mask(&mask, &ref_mask_of(&mut r, words), &what);
            if step % 5 == 0 {
                assert!(mask == mask_of(&mut original), "{what}: the original's");
            }
            copy.commit(t).unwrap_or_else(|e| panic!("{what}: {e}"));
            original.commit(t).unwrap();
            r.commit(t).unwrap();
        }
        assert!(copy.is_accepting(), "round {round}: {name} is a sentence");
        // The original's window, not the dropped matcher's unlimited one.
        let window = copy.max_rollback();
        assert!(copy.rollback(window + 1).is_err(), "round {round}");
        copy.rollback(window.min(copy.rollback_available()))
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
    }
}

/// A clone over a dropped matcher's buffers uses nothing its walk remembered of the
/// dropped matcher's stack. The walk remembers, per (stack node, automaton state),
/// what it collected below, and a stack's nodes are numbered from its bottom: a
/// dropped matcher nested as deep over a bottom of as many nodes remembered pairs
/// with the clone's node numbers and automaton states (the tops read alike) but
/// another bottom below, which decides what closing tokens such as `]]}` may follow.
#[test]
fn a_clone_uses_nothing_the_dropped_matchers_walk_remembered() {
    let s = setup();
    let engine = engine(&s.built.bytes);
    let bottoms: [&[u8]; 8] = [
        b"[",
        b"{\"a\":",
        b"[[",
        b"{\"ab\":",
        b"[{\"a\":",
        b"{\"a\":[",
        b"[1,",
        b"{\"a\":1,\"b\":",
    ];
    let top: &[u8] = b"[[[[[[{\"k\":[[1";
    let closing = b"]]}]]]]]]]";
    for (i, old_bottom) in bottoms.iter().enumerate() {
        for (j, bottom) in bottoms.iter().enumerate() {
            if i == j {
                continue;
            }
            // Made first, so that it does not take the dropped matcher's buffers.
            let mut original = Matcher::new(engine.clone());
            let mut old = Matcher::new(engine.clone());
            for (m, bottom) in [(&mut original, bottom), (&mut old, old_bottom)] {
                m.commit_bytes(bottom).unwrap();
                for &b in top {
                    m.commit_bytes(&[b]).unwrap();
                    let _ = mask_of(m);
                }
            }
            drop(old);
            let mut copy = original.clone();
            for (k, &b) in closing.iter().enumerate() {
                let what = format!("dropped over {i}, cloned over {j}, {k} closed");
                assert!(mask_of(&mut copy) == mask_of(&mut original), "{what}");
                if original.commit_bytes(&[b]).is_err() {
                    break;
                }
                copy.commit_bytes(&[b])
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
            }
        }
    }
}

/// The same over ambiguous stacks (C after runs of `-` signs, walked as pairs and as
/// subsets): a clone over the buffers of a matcher dropped in another program masks
/// as the reference does at every byte after, however much of the dropped one's
/// stack its walk had remembered.
#[test]
fn a_clone_on_buffers_dropped_in_another_program_is_its_original() {
    let e = engine(&cached("c", "bytes").bytes);
    let source = source_reference("c", "bytes");
    let words = e.mask_words();
    let dropped = b"int f(int x) { return x---------------x + (x-----x)--; }";
    let text = b"int main(void) { int a = 1; int b = a-------a; return (b---a)-- + a----b; }";
    for split in (4..text.len()).step_by(13) {
        for subset_after in [None, Some(16)] {
            let mut original = Matcher::new(e.clone());
            if let Some(pairs) = subset_after {
                original.set_subset_walk_after(pairs);
            }
            let mut r = ReferenceMatcher::new(source.clone());
            for &b in &text[..split] {
                original.commit_bytes(&[b]).unwrap();
                r.commit_bytes(&[b]).unwrap();
                let _ = mask_of(&mut original);
            }
            let mut old = Matcher::new(e.clone());
            for &b in &dropped[..(split * 2 / 3).min(dropped.len())] {
                old.commit_bytes(&[b]).unwrap();
                let _ = mask_of(&mut old);
            }
            drop(old);
            let mut copy = original.clone();
            for (i, &b) in text.iter().enumerate().skip(split) {
                copy.commit_bytes(&[b]).unwrap();
                r.commit_bytes(&[b]).unwrap();
                let got = mask_of(&mut copy);
                let want = ref_mask_of(&mut r, words);
                assert!(
                    got == want,
                    "cloned at byte {split} ({subset_after:?}), byte {i} ({:?}): masks differ at {:?}",
                    String::from_utf8_lossy(&text[..=i]),
                    mask_diff(&got, &want)
                );
            }
            assert!(copy.is_accepting());
        }
    }
}

/// Masks served from a matcher's cache of recent masks equal the masks computed
/// afresh, with any number of slots (1 evicts at almost every distinct mask), at
/// every step of real documents and after rollbacks that revisit earlier states; and
/// masks with sparse token sets OR-ed as pairs equal those OR-ed as whole chunks.
#[test]
fn cached_masks_equal_computed_masks() {
    let s = setup();
    let docs: Vec<(String, Vec<u32>)> = s
        .docs
        .iter()
        .map(|(n, _, t)| (n.clone(), t.clone()))
        .collect();
    cached_masks_equal_computed(&s.engine, &docs, 0xcac4e);
}

/// [`cached_masks_equal_computed_masks`] on `c.lark` × o200k_base, whose masks are
/// unions of many token sets kept by the engine as patches of a few bases
/// (`kept_unions`): every step of every C sample, one engine for all the matchers, so
/// later documents' masks come from unions earlier ones made.
#[test]
#[ignore = "slow sweep (compiles C for o200k_base); run with --ignored"]
fn sweep_c_cached_masks_equal_computed_masks() {
    let built = cached("c", O200K);
    let e = engine(&built.bytes);
    let docs: Vec<(String, Vec<u32>)> = samples("c")
        .into_iter()
        .filter(|s| s.2)
        .map(|(path, text, _)| (path, built.tokenizer.encode(&text).unwrap()))
        .collect();
    assert!(docs.len() >= 4);
    cached_masks_equal_computed(&e, &docs, 0xc0c4e);
}

/// At every token of `docs` (with rollbacks drawn from `seed`), a matcher with 0, 1, 3
/// or the default number of cache slots and the engine's kept unions writes the mask a
/// matcher without either writes.
fn cached_masks_equal_computed(engine: &Arc<Engine>, docs: &[(String, Vec<u32>)], seed: u64) {
    let mut rng = Rng(seed);
    for slots in [0, 1, 3, stackmask_runtime::glr::DEFAULT_MASK_CACHE_SLOTS] {
        for (name, tokens) in docs {
            let mut cached = Matcher::new(engine.clone());
            cached.set_mask_cache_slots(slots);
            assert_eq!(cached.mask_cache_slots(), slots);
            assert_eq!(cached.clone().mask_cache_slots(), slots, "a clone keeps it");
            let mut plain = Matcher::new(engine.clone());
            plain.set_mask_cache_slots(0);
            plain.set_sparse_pairs(false);
            let mut step = 0;
            while step < tokens.len() {
                assert_eq!(
                    mask_of(&mut cached),
                    mask_of(&mut plain),
                    "{name}, {slots} slots, step {step}"
                );
                cached.commit(tokens[step]).unwrap();
                plain.commit(tokens[step]).unwrap();
                step += 1;
                if rng.below(8) == 0 && step > 2 {
                    let back = 1 + rng.below(2);
                    cached.rollback(back).unwrap();
                    plain.rollback(back).unwrap();
                    step -= back;
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Other grammars, bytes vocabulary.

/// `(path, text, expected verdict)` of every sample of a grammar: top-level files are
/// sentences, `invalid/` and `edge_ignore/` are not (grammars/samples/README.md).
fn samples(grammar: &str) -> Vec<(String, Vec<u8>, bool)> {
    let dir = workspace().join("grammars/samples").join(grammar);
    let mut out = Vec::new();
    for (sub, expected) in [
        (dir.clone(), true),
        (dir.join("invalid"), false),
        (dir.join("edge_ignore"), false),
    ] {
        let Ok(entries) = std::fs::read_dir(&sub) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_file() {
                out.push((
                    p.display().to_string(),
                    std::fs::read(&p).unwrap(),
                    expected,
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn other_grammars_agree_with_the_reference_on_their_samples() {
    let mut rng = Rng(0x5a_3b1e5);
    let mut failures = Vec::new();
    for grammar in ["c", "sql", "json", "expr", "toml"] {
        let e = engine(&cached(grammar, "bytes").bytes);
        let source = source_reference(grammar, "bytes");
        let words = e.mask_words();
        let samples = samples(grammar);
        assert!(
            samples.iter().filter(|s| s.2).count() >= 3,
            "{grammar}: samples"
        );
        for (path, text, expected) in samples {
            let mut m = Matcher::new(e.clone());
            let mut r = ReferenceMatcher::new(source.clone());
            let got = m.commit_bytes(&text);
            let want = r.commit_bytes(&text);
            if got != want {
                failures.push(format!("{path}: compiled {got:?}, reference {want:?}"));
                continue;
            }
            let (c, rf) = (
                got.is_ok() && m.is_accepting(),
                want.is_ok() && r.is_accepting(),
            );
            if c != rf || c != expected {
                failures.push(format!(
                    "{path}: compiled {c}, reference {rf}, expected {expected}"
                ));
            }
            // Masks at random byte positions of the viable prefix.
            let viable = match got {
                Ok(()) => text.len(),
                Err(MatchError::RejectedBytes { offset }) => offset,
                Err(e) => panic!("{path}: {e}"),
            };
            let mut m = Matcher::new(e.clone());
            let mut r = ReferenceMatcher::new(source.clone());
            let mut at = 0;
            for target in sample_steps(&mut rng, viable, 6) {
                m.commit_bytes(&text[at..target]).unwrap();
                r.commit_bytes(&text[at..target]).unwrap();
                at = target;
                let (cm, rm) = (mask_of(&mut m), ref_mask_of(&mut r, words));
                if cm != rm {
                    failures.push(format!(
                        "{path} at byte {at}: masks differ at {:?}",
                        mask_diff(&cm, &rm)
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// An ambiguous stack (C after a run of `-` signs: each `--` is also two `-`, and each
/// reading stacks its own operators) walked by the subset walk (the default), by the
/// pair walk and by the switch between them after 16 pairs: at every byte the three masks equal the reference
/// mask, also through clones, rollbacks and a reset that keep each matcher's setting.
#[test]
fn ambiguous_stacks_give_the_same_masks_by_every_walk() {
    let e = engine(&cached("c", "bytes").bytes);
    let source = source_reference("c", "bytes");
    let words = e.mask_words();
    let text = b"int f(int x, int y) { return x-------------y + (x---y)--; }";
    let settings = [None, Some(16), Some(u32::MAX)];
    let mut matchers: Vec<Matcher> = settings
        .iter()
        .map(|s| {
            let mut m = Matcher::new(e.clone());
            if let Some(pairs) = s {
                m.set_subset_walk_after(*pairs);
            }
            m
        })
        .collect();
    let mut r = ReferenceMatcher::new(source.clone());
    for (i, &b) in text.iter().enumerate() {
        r.commit_bytes(&[b]).unwrap();
        let want = ref_mask_of(&mut r, words);
        for (m, s) in matchers.iter_mut().zip(&settings) {
            m.commit_bytes(&[b]).unwrap();
            let got = mask_of(m);
            assert!(
                got == want,
                "walk {s:?} at byte {i} ({:?}): masks differ at {:?}",
                String::from_utf8_lossy(&text[..=i]),
                mask_diff(&got, &want)
            );
            if i % 7 == 3 {
                // A clone, and a rollback of the byte and its commit again.
                let mut c = m.clone();
                assert!(mask_of(&mut c) == want, "walk {s:?} clone at byte {i}");
                m.rollback(1).unwrap();
                m.commit_bytes(&[b]).unwrap();
                assert!(mask_of(m) == want, "walk {s:?} rollback at byte {i}");
            }
        }
    }
    for m in &mut matchers {
        assert!(m.is_accepting());
        m.reset();
        let mut r = ReferenceMatcher::new(source.clone());
        m.commit_bytes(b"int g(void) { return -----1; }").unwrap();
        r.commit_bytes(b"int g(void) { return -----1; }").unwrap();
        assert!(mask_of(m) == ref_mask_of(&mut r, words), "after a reset");
    }
}

/// What the subset walk remembers below an ambiguous stack's nodes is forgotten when
/// a rollback removes them: C's `-` runs, rolled back by one to eight bytes at every
/// byte and continued otherwise (the new nodes take the removed nodes' numbers, with
/// other LR states), every mask equal to the reference's, then the text goes on.
#[test]
fn rollbacks_under_an_ambiguous_stack_keep_masks_exact() {
    let e = engine(&cached("c", "bytes").bytes);
    let source = source_reference("c", "bytes");
    let words = e.mask_words();
    let text = b"int f(int x, int y) { return x---------y - (x-----y)--; }";
    let others: [&[u8]; 4] = [b"+y", b"*(y--)", b"-+-y", b" - -1"];
    let mut m = Matcher::new(e.clone());
    let mut r = ReferenceMatcher::new(source.clone());
    let mut rng = Rng(0x005a_b5e7);
    for (i, &b) in text.iter().enumerate() {
        m.commit_bytes(&[b]).unwrap();
        r.commit_bytes(&[b]).unwrap();
        let want = ref_mask_of(&mut r, words);
        assert!(mask_of(&mut m) == want, "byte {i}");
        if i < 28 {
            continue;
        }
        let back = 1 + rng.below(8.min(i));
        m.rollback(back).unwrap();
        r.rollback(back).unwrap();
        let other = others[rng.below(others.len())];
        let mut done = 0;
        for (k, &o) in other.iter().enumerate() {
            let (x, y) = (m.commit_bytes(&[o]).is_ok(), r.commit_bytes(&[o]).is_ok());
            assert_eq!(x, y, "byte {i}, back {back}, {other:?} byte {k}");
            if !x {
                break;
            }
            done += 1;
            let at = format!(
                "byte {i}, back {back}, then {:?}",
                String::from_utf8_lossy(&other[..=k])
            );
            let want = ref_mask_of(&mut r, words);
            let got = mask_of(&mut m);
            assert!(
                got == want,
                "{at}: masks differ at {:?}",
                mask_diff(&got, &want)
            );
        }
        // Back to the text: the same bytes again.
        m.rollback(done).unwrap();
        r.rollback(done).unwrap();
        assert_eq!(m.bytes_consumed(), i + 1 - back);
        for &o in &text[i + 1 - back..=i] {
            m.commit_bytes(&[o]).unwrap();
            r.commit_bytes(&[o]).unwrap();
        }
        assert!(
            mask_of(&mut m) == ref_mask_of(&mut r, words),
            "byte {i}, again"
        );
    }
}

/// The slow sweep, run before a release (`-- --ignored`): compiled and reference masks
/// at *every* byte of every sample of every shipped grammar (`bytes` vocabulary), and
/// at every token step of every JSON and TOML sample with o200k_base; the reference
/// runs on each grammar's source.
#[test]
#[ignore = "slow sweep (minutes); run with --ignored"]
fn sweep_masks_match_the_reference_everywhere() {
    let mut checked = 0usize;
    for grammar in ["json", "expr", "sql", "c", "toml"] {
        let e = engine(&cached(grammar, "bytes").bytes);
        let source = source_reference(grammar, "bytes");
        let words = e.mask_words();
        for (path, text, _) in samples(grammar) {
            let mut m = Matcher::new(e.clone());
            let mut r = ReferenceMatcher::new(source.clone());
            for (i, &b) in text.iter().enumerate() {
                let (cm, rm) = (mask_of(&mut m), ref_mask_of(&mut r, words));
                assert_same_mask(&cm, &rm, &format!("{path} at byte {i}"));
                checked += 1;
                let (got, want) = (m.commit_bytes(&[b]), r.commit_bytes(&[b]));
                assert_eq!(got.is_ok(), want.is_ok(), "{path} at byte {i}");
                if got.is_err() {
                    break;
                }
            }
        }
    }
    for grammar in ["json", "toml"] {
        let built = cached(grammar, O200K);
        let e = engine(&built.bytes);
        let source = source_reference(grammar, O200K);
        let words = e.mask_words();
        for (path, text, _) in samples(grammar).into_iter().filter(|s| s.2) {
            let tokens = built.tokenizer.encode(&text).unwrap();
            let mut m = Matcher::new(e.clone());
            let mut r = ReferenceMatcher::new(source.clone());
            for (i, &t) in tokens.iter().enumerate() {
                let (cm, rm) = (mask_of(&mut m), ref_mask_of(&mut r, words));
                assert_same_mask(&cm, &rm, &format!("{path} at token {i}"));
                assert!(bit(&cm, t), "{path}: token {i} not in its mask");
                checked += 1;
                m.commit(t).unwrap();
                r.commit(t).unwrap();
            }
        }
    }
    eprintln!("{checked} masks compared");
}

/// A commit whose bytes need more GLR work than the matcher's limit (an ambiguous
/// grammar on a long input) is the named error, with the limit, and changes nothing;
/// the message says what to raise.
#[test]
fn a_commit_past_the_work_limit_is_the_named_error() {
    let built = cached("expr", "bytes");
    let mut m = Matcher::new(engine(&built.bytes));
    m.set_max_step_work(20_000);
    let text = b"1+1+".repeat(400);
    let err = m.commit_bytes(&text).unwrap_err();
    assert_eq!(err, MatchError::WorkLimit { limit: 20_000 });
    assert!(err.to_string().contains("max_step_work"), "{err}");
    assert_eq!(m.bytes_consumed(), 0);
    m.set_max_step_work(u64::MAX);
    m.set_work_budget(u64::MAX, u64::MAX);
    m.commit_bytes(&text[..text.len() - 1]).unwrap();
    assert!(m.is_accepting());
}

/// Deciding whether the text is a sentence, and whether bytes could be committed, are
/// GLR work under the same limits: `accepting` and `try_accepts_bytes` name a limit
/// they meet where `is_accepting` and `accepts_bytes` can only say `false`, and say
/// `Ok(false)` for what the text refuses.
#[test]
fn accepting_and_try_accepts_bytes_name_a_work_limit() {
    let built = cached("expr", "bytes");
    let engine = engine(&built.bytes);
    let mut m = Matcher::new(engine.clone());
    m.commit_bytes(b"1+1").unwrap();
    assert_eq!(m.accepting(), Ok(true));
    assert_eq!(m.try_accepts_bytes(b"+1"), Ok(true));
    assert_eq!(m.try_accepts_bytes(b")"), Ok(false));
    m.commit_bytes(b"+").unwrap();
    assert_eq!(m.accepting(), Ok(false));
    m.set_max_step_work(0);
    assert!(!m.is_accepting());
    assert_eq!(m.accepting(), Err(MatchError::WorkLimit { limit: 0 }));
    assert_eq!(
        m.try_accepts_bytes(b"1"),
        Err(MatchError::WorkLimit { limit: 0 })
    );
    assert!(!m.accepts_bytes(b"1"));
    assert_eq!(m.bytes_consumed(), 4);
    m.set_max_step_work(u64::MAX);
    assert_eq!(m.try_accepts_bytes(b"1"), Ok(true));
}

/// At a boundary the compiler left to the token-trie walk, the walk parses each token's
/// bytes under the matcher's work limits: a limit that cuts a check is the named error
/// of `try_fill_mask` (and `fill_mask_by_trie_walk`), never a mask that quietly lacks
/// the tokens behind it; within the limits the walk's mask is the compiled path's. The
/// matcher is unchanged by a cut walk.
#[test]
fn a_work_limit_in_the_trie_walk_fallback_is_named() {
    let path = compiled_support::workspace_root().join("grammars/expr.lark");
    let source = std::fs::read_to_string(&path).unwrap();
    let mut options = stackmask_compiler::pipeline::CompileOptions::default();
    options.dwa.boundary_states = 1;
    let walked = stackmask_compiler::pipeline::build_artifact_from_source(
        &source,
        &path.display().to_string(),
        "bytes",
        &options,
        |_| {},
    )
    .unwrap();
    let fallback = engine(&walked.bytes);
    assert!(
        fallback.meta().mask_stats.fallback_boundaries > 0,
        "the test needs boundaries left to the trie walk"
    );
    let compiled = engine(&cached("expr", "bytes").bytes);
    let words = fallback.mask_words();
    let (mut got, mut want) = (vec![0u32; words], vec![0u32; words]);
    let mut m = Matcher::new(fallback.clone());
    let mut c = Matcher::new(compiled);
    for text in [&b"1+("[..], b"2*", b"3)"] {
        m.commit_bytes(text).unwrap();
        c.commit_bytes(text).unwrap();
        assert_eq!(m.try_fill_mask(&mut got), Ok(()));
        c.fill_mask(&mut want);
        assert_eq!(got, want, "the trie walk's mask is the compiled path's");
    }
    m.set_max_step_work(0);
    let limit = Err(MatchError::WorkLimit { limit: 0 });
    assert_eq!(m.try_fill_mask(&mut got), limit);
    assert_eq!(m.fill_mask_by_trie_walk(&mut got), limit);
    assert_eq!(m.bytes_consumed(), 7, "a cut walk changes nothing");
    m.set_max_step_work(u64::MAX);
    assert_eq!(m.try_fill_mask(&mut got), Ok(()));
    assert_eq!(got, want);
    // The walk's bytes are never committed: the work budget is as it was, so a
    // commit after it does what it does without it.
    m.set_work_budget(0, 1_000_000);
    m.commit_bytes(b"+").unwrap();
    let credit = m.work_credit();
    assert!(credit < 1_000_000, "the commit spent some of the budget");
    for _ in 0..3 {
        assert_eq!(m.try_fill_mask(&mut got), Ok(()));
        assert_eq!(m.work_credit(), credit, "a walk leaves the budget alone");
    }
}

/// Issue 11 (5): every byte of a long ambiguous sum stays under the per-byte limit,
/// but the work of the whole parse grows with the square of its length at every byte
/// (2,000 terms took 26 s in `validate`). The work budget ends it in its own named
/// error, with both numbers and the flags to raise, and changes nothing; the same
/// commits within a larger budget pass, and a fresh matcher has the default budget.
#[test]
fn a_commit_past_the_work_budget_is_the_named_error() {
    let built = cached("expr", "bytes");
    let engine = engine(&built.bytes);
    let mut m = Matcher::new(engine.clone());
    assert_eq!(
        m.work_budget(),
        (
            stackmask_runtime::glr::DEFAULT_WORK_PER_BYTE,
            stackmask_runtime::glr::DEFAULT_WORK_BURST
        )
    );
    m.set_work_budget(1_000, 2_000_000);
    m.commit_bytes(b"1+").unwrap();
    let text = b"1+1+".repeat(400);
    let err = m.commit_bytes(&text).unwrap_err();
    assert_eq!(
        err,
        MatchError::WorkBudget {
            per_byte: 1_000,
            burst: 2_000_000
        }
    );
    assert!(
        err.to_string().contains("work_burst") && err.to_string().contains("work_per_byte"),
        "{err}"
    );
    assert_eq!(m.bytes_consumed(), 2);
    m.set_work_budget(u64::MAX, u64::MAX);
    m.commit_bytes(&text[..text.len() - 1]).unwrap();
    assert!(m.is_accepting());
}
