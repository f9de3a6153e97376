//! JSONTestSuite on the compiled path (DESIGN.md §5 "Real suites"): every
//! `test_parsing/y_*.json` is a sentence of `grammars/json.lark` and every `n_*.json`
//! is not, through the compiled `Matcher` (an artifact built in process) and through
//! the command-line tool (`stackmask validate ARTIFACT FILE`, exit 0 / 1). A damaged
//! artifact makes `validate` exit 2 with a message, never panic.
//!
//! The `i_*` files (implementation-defined) are only run for crashes.

mod common;
mod compiled_support;

use common::{shared, Rng};
use compiled_support::{cached, engine, files_with_prefix, stackmask_binary, temp_dir, Parts};
use stackmask_formats::layout;
use stackmask_runtime::{MatchError, Matcher};
use std::path::{Path, PathBuf};
use std::process::Command;

fn suite() -> PathBuf {
    shared().join("corpus/JSONTestSuite/test_parsing")
}

fn name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// The compiled path's verdict on a whole document: committed at once, then accepting.
fn accepts(m: &mut Matcher, text: &[u8]) -> bool {
    m.reset();
    m.commit_bytes(text).is_ok() && m.is_accepting()
}

#[test]
fn compiled_matcher_accepts_y_and_rejects_n() {
    let e = engine(&cached("json", "bytes").bytes);
    let mut m = Matcher::new(e.clone());
    let mut rng = Rng(0x150_5e7);
    let (y, n, i) = (
        files_with_prefix(&suite(), "y_"),
        files_with_prefix(&suite(), "n_"),
        files_with_prefix(&suite(), "i_"),
    );
    assert!(
        y.len() >= 90 && n.len() >= 180,
        "{} y_, {} n_ files",
        y.len(),
        n.len()
    );
    let mut wrong = Vec::new();
    for (files, expected) in [(&y, true), (&n, false)] {
        for path in files.iter() {
            let text = std::fs::read(path).unwrap();
            let whole = accepts(&mut m, &text);
            if whole != expected {
                wrong.push(format!("{}: compiled matcher says {whole}", name(path)));
                continue;
            }
            // The same verdict when the text arrives in random pieces (each piece
            // all-or-nothing), and the rejection offset is where the pieces stop.
            m.reset();
            let mut at = 0;
            let mut stopped = None;
            while at < text.len() {
                let k = 1 + rng.below(16).min(text.len() - at - 1);
                match m.commit_bytes(&text[at..at + k]) {
                    Ok(()) => at += k,
                    Err(MatchError::RejectedBytes { offset }) => {
                        assert!(
                            offset < k,
                            "{}: offset {offset} of a {k}-byte piece",
                            name(path)
                        );
                        stopped = Some(at + offset);
                        break;
                    }
                    Err(e) => panic!("{}: {e}", name(path)),
                }
            }
            assert_eq!(m.bytes_consumed(), at, "{}", name(path));
            let pieces = stopped.is_none() && m.is_accepting();
            if pieces != expected {
                wrong.push(format!(
                    "{}: in pieces the matcher says {pieces}",
                    name(path)
                ));
            }
            // A rejected byte: the prefix before it is viable, the prefix with it is not.
            if let Some(off) = stopped {
                m.reset();
                assert!(
                    m.commit_bytes(&text[..off]).is_ok(),
                    "{}: prefix to {off}",
                    name(path)
                );
                m.reset();
                match m.commit_bytes(&text[..=off]) {
                    Err(MatchError::RejectedBytes { offset }) => {
                        assert_eq!(offset, off, "{}", name(path))
                    }
                    other => panic!("{}: prefix through {off}: {other:?}", name(path)),
                }
                assert_eq!(
                    m.bytes_consumed(),
                    0,
                    "{}: a refused commit changed the state",
                    name(path)
                );
            }
        }
    }
    // i_ files: either verdict, but no crash, and reset gives the same verdict again.
    for path in &i {
        let text = std::fs::read(path).unwrap();
        let a = accepts(&mut m, &text);
        let b = accepts(&mut Matcher::new(e.clone()), &text);
        assert_eq!(
            a,
            b,
            "{}: reset matcher and fresh matcher disagree",
            name(path)
        );
    }
    assert!(
        wrong.is_empty(),
        "{} wrong verdicts:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

fn validate(artifact: &Path, file: &Path) -> (i32, String) {
    let out = Command::new(stackmask_binary())
        .arg("validate")
        .arg(artifact)
        .arg(file)
        .output()
        .expect("run stackmask");
    let code = out.status.code().unwrap_or(-1);
    (code, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn cli_validate_accepts_y_and_rejects_n() {
    let dir = temp_dir("jsontestsuite-cli");
    let artifact = dir.join("json.smask");
    std::fs::write(&artifact, &cached("json", "bytes").bytes).unwrap();
    let mut wrong = Vec::new();
    for (prefix, expected) in [("y_", 0), ("n_", 1)] {
        for path in files_with_prefix(&suite(), prefix) {
            let (code, stderr) = validate(&artifact, &path);
            if code != expected {
                wrong.push(format!(
                    "{}: exit {code}, expected {expected}: {}",
                    name(&path),
                    stderr.trim()
                ));
            } else if expected == 1
                && (!stderr.starts_with("error: ") || stderr.contains("panicked"))
            {
                wrong.push(format!(
                    "{}: exit 1 without a clean message: {stderr}",
                    name(&path)
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        wrong.is_empty(),
        "{} wrong exits:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn cli_validate_says_where_a_document_fails() {
    let dir = temp_dir("jsontestsuite-cli-where");
    let artifact = dir.join("json.smask");
    std::fs::write(&artifact, &cached("json", "bytes").bytes).unwrap();
    let cases: [(&[u8], &str); 2] = [
        // `x` is byte 7, on line 2 after two spaces and `2`.
        (b"[1,\n  2x]", "rejected at byte 7 (line 2, column 4)"),
        // Every byte is fine; the text stops early: the offset is the end.
        (b"{\"a\": 1", "incomplete at byte 7 (line 1, column 8)"),
    ];
    for (text, expected) in cases {
        let doc = dir.join("doc.json");
        std::fs::write(&doc, text).unwrap();
        let (code, stderr) = validate(&artifact, &doc);
        assert_eq!(code, 1, "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cli_validate_on_a_damaged_artifact_exits_2() {
    let dir = temp_dir("jsontestsuite-cli-damaged");
    let good = &cached("json", "bytes").bytes;
    let doc = suite().join("y_object_simple.json");
    assert!(doc.is_file());

    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated by one byte", good[..good.len() - 1].to_vec()),
        ("truncated to the header", good[..64].to_vec()),
        ("empty", Vec::new()),
        ("not an artifact", b"{\"this is\": \"json\"}".to_vec()),
    ];
    let mut flipped = good.clone();
    flipped[good.len() / 3] ^= 0x04;
    cases.push(("one bit flipped", flipped));
    let mut version = good.clone();
    version[8] = 9;
    cases.push(("format version 9", version));
    // Semantic damage behind valid checksums.
    let mut p = Parts::of(good);
    let n = p.meta().num_states;
    p.edit_u32s(layout::LR_GOTO_TARGET, |g| {
        let i = g.iter().position(|&x| x != u32::MAX).unwrap();
        g[i] = n;
    });
    cases.push(("goto out of range (resealed)", p.assemble()));
    let mut p = Parts::of(good);
    p.edit_meta(|m| m.vocab_len += 1);
    cases.push(("vocabulary size disagrees (resealed)", p.assemble()));

    let mut wrong = Vec::new();
    for (what, bytes) in &cases {
        let path = dir.join("damaged.smask");
        std::fs::write(&path, bytes).unwrap();
        let (code, stderr) = validate(&path, &doc);
        if code != 2 || !stderr.starts_with("error: ") || stderr.contains("panicked") {
            wrong.push(format!("{what}: exit {code}, stderr {stderr:?}"));
        }
    }
    // A missing artifact, and a missing document with a good artifact.
    let (code, stderr) = validate(&dir.join("missing.smask"), &doc);
    if code != 2 || !stderr.contains("missing.smask") {
        wrong.push(format!("missing artifact: exit {code}, stderr {stderr:?}"));
    }
    let artifact = dir.join("good.smask");
    std::fs::write(&artifact, good).unwrap();
    let (code, stderr) = validate(&artifact, &dir.join("missing.json"));
    if code != 2 || !stderr.contains("missing.json") {
        wrong.push(format!("missing document: exit {code}, stderr {stderr:?}"));
    }
    assert_eq!(
        validate(&artifact, &doc).0,
        0,
        "the good artifact validates the document"
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// An artifact whose damage passes every load-time check (an expected-terminal bit
/// for the end-of-input terminal, resealed) must not crash `validate` either: any of
/// exit 0, 1 or 2 is acceptable, a panic (exit 101) is not.
#[test]
fn cli_validate_does_not_panic_on_damage_that_passes_the_checks() {
    let dir = temp_dir("jsontestsuite-cli-expected");
    let good = &cached("json", "bytes").bytes;
    let mut p = Parts::of(good);
    let meta = p.meta();
    let eof = meta.num_terminals - 1;
    let at = (meta.start_state as usize * meta.expected_words as usize + eof as usize / 64) * 8;
    p.section_mut(layout::EXPECTED).bytes[at + (eof % 64) as usize / 8] |= 1 << (eof % 8);
    let path = dir.join("expected.smask");
    std::fs::write(&path, p.assemble()).unwrap();
    let doc = suite().join("y_object_simple.json");
    let (code, stderr) = validate(&path, &doc);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        matches!(code, 0..=2) && !stderr.contains("panicked"),
        "exit {code}: {stderr}"
    );
}
