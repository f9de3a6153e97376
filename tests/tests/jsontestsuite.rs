//! JSONTestSuite (nst/JSONTestSuite, `../shared/corpus/JSONTestSuite/test_parsing/`)
//! against the reference recognizer with `grammars/json.lark`.
//!
//! - every `y_*` file must be a sentence (all bytes pushed, then accepting);
//! - every `n_*` file must be rejected (some byte refused, or not accepting at the end);
//! - the `i_*` files (implementation-defined) must get the answer of an independent
//!   RFC 8259 checker written below (byte-level, iterative, UTF-8 via `std::str`), which
//!   is itself first validated against the suite's own `y_`/`n_` labels. Their results
//!   are printed; `STACKMASK_WRITE_I_RESULTS=1` regenerates `tests/JSONTESTSUITE_I_RESULTS.md`.
//!
//! Files are read as bytes: several are deliberately invalid UTF-8 or UTF-16. The
//! `n_structure_100000_opening_arrays.json` (and `n_structure_open_array_object.json`,
//! 250 KB of `[{"":`) cases check that deep nesting does not overflow the stack.

mod common;

use common::{recognize, shared, workspace};
use stackmask_runtime::reference::ReferenceEngine;
use std::path::PathBuf;

fn suite_dir() -> PathBuf {
    shared().join("corpus/JSONTestSuite/test_parsing")
}

fn suite_files(prefix: &str) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = common::files_in(&suite_dir())
        .into_iter()
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            (name.starts_with(prefix) && name.ends_with(".json")).then(|| {
                let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                (name, bytes)
            })
        })
        .collect();
    out.sort();
    out
}

fn json_engine() -> ReferenceEngine {
    common::engine_for(&common::shipped_grammar("json"), "bytes")
}

// ---------------------------------------------------------------------------------------
// An independent RFC 8259 checker (no grammar, no DFAs): JSON-text = ws value ws over
// bytes that must be valid UTF-8 as a whole (outside strings a valid text is ASCII, so
// this is the same as "string contents are Unicode scalar values").

#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    Ok,
    /// Not UTF-8: offset of the first bad byte.
    NotUtf8(usize),
    /// UTF-8, but not RFC 8259 syntax: offset and what went wrong.
    Syntax(usize, &'static str),
}

fn rfc8259(b: &[u8]) -> Verdict {
    if let Err(e) = std::str::from_utf8(b) {
        return Verdict::NotUtf8(e.valid_up_to());
    }
    match syntax(b) {
        Ok(()) => Verdict::Ok,
        Err((at, what)) => Verdict::Syntax(at, what),
    }
}

fn syntax(b: &[u8]) -> Result<(), (usize, &'static str)> {
    #[derive(Clone, Copy, PartialEq)]
    enum Ctx {
        Array,
        Object,
    }
    let ws = |p: &mut usize| {
        while *p < b.len() && matches!(b[*p], b' ' | b'\t' | b'\n' | b'\r') {
            *p += 1;
        }
    };
    let at = |p: usize| b.get(p).copied();
    let string = |p: &mut usize| -> Result<(), (usize, &'static str)> {
        if at(*p) != Some(b'"') {
            return Err((*p, "expected a string"));
        }
        *p += 1;
        loop {
            match at(*p) {
                None => return Err((*p, "unterminated string")),
                Some(b'"') => {
                    *p += 1;
                    return Ok(());
                }
                Some(c) if c < 0x20 => return Err((*p, "control character in a string")),
                Some(b'\\') => {
                    *p += 1;
                    match at(*p) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => *p += 1,
                        Some(b'u') => {
                            *p += 1;
                            for _ in 0..4 {
                                if !at(*p).is_some_and(|c| c.is_ascii_hexdigit()) {
                                    return Err((*p, "bad \\u escape"));
                                }
                                *p += 1;
                            }
                        }
                        _ => return Err((*p, "bad escape")),
                    }
                }
                Some(_) => *p += 1,
            }
        }
    };
    let digits = |p: &mut usize| -> bool {
        let s = *p;
        while at(*p).is_some_and(|c| c.is_ascii_digit()) {
            *p += 1;
        }
        *p > s
    };
    let number = |p: &mut usize| -> Result<(), (usize, &'static str)> {
        if at(*p) == Some(b'-') {
            *p += 1;
        }
        match at(*p) {
            Some(b'0') => *p += 1,
            Some(b'1'..=b'9') => {
                digits(p);
            }
            _ => return Err((*p, "bad number")),
        }
        if at(*p) == Some(b'.') {
            *p += 1;
            if !digits(p) {
                return Err((*p, "no digits after '.'"));
            }
        }
        if matches!(at(*p), Some(b'e' | b'E')) {
            *p += 1;
            if matches!(at(*p), Some(b'+' | b'-')) {
                *p += 1;
            }
            if !digits(p) {
                return Err((*p, "no digits in exponent"));
            }
        }
        Ok(())
    };
    // `"key" :` and the whitespace after it.
    let member_key = |p: &mut usize| -> Result<(), (usize, &'static str)> {
        string(p)?;
        ws(p);
        if at(*p) != Some(b':') {
            return Err((*p, "expected ':'"));
        }
        *p += 1;
        ws(p);
        Ok(())
    };

    let mut p = 0usize;
    let mut stack: Vec<Ctx> = Vec::new();
    ws(&mut p);
    'value: loop {
        // A value starts at p.
        match at(p) {
            Some(b'{') => {
                p += 1;
                ws(&mut p);
                if at(p) == Some(b'}') {
                    p += 1;
                } else {
                    member_key(&mut p)?;
                    stack.push(Ctx::Object);
                    continue 'value;
                }
            }
            Some(b'[') => {
                p += 1;
                ws(&mut p);
                if at(p) == Some(b']') {
                    p += 1;
                } else {
                    stack.push(Ctx::Array);
                    continue 'value;
                }
            }
            Some(b'"') => string(&mut p)?,
            Some(b'-' | b'0'..=b'9') => number(&mut p)?,
            Some(b't') if b[p..].starts_with(b"true") => p += 4,
            Some(b'f') if b[p..].starts_with(b"false") => p += 5,
            Some(b'n') if b[p..].starts_with(b"null") => p += 4,
            _ => return Err((p, "expected a value")),
        }
        // A value ended at p: close containers until one wants another element.
        loop {
            ws(&mut p);
            match stack.last() {
                None => {
                    return if p == b.len() {
                        Ok(())
                    } else {
                        Err((p, "text after the value"))
                    }
                }
                Some(&ctx) => match (ctx, at(p)) {
                    (Ctx::Array, Some(b',')) => {
                        p += 1;
                        ws(&mut p);
                        continue 'value;
                    }
                    (Ctx::Object, Some(b',')) => {
                        p += 1;
                        ws(&mut p);
                        member_key(&mut p)?;
                        continue 'value;
                    }
                    (Ctx::Array, Some(b']')) | (Ctx::Object, Some(b'}')) => {
                        p += 1;
                        stack.pop();
                    }
                    _ => return Err((p, "expected ',' or a closing bracket")),
                },
            }
        }
    }
}

#[test]
fn independent_checker_agrees_with_the_suite_labels() {
    // The oracle for the i_ files is only as good as this: it must reproduce every
    // y_/n_ label of the suite itself.
    let mut bad = Vec::new();
    for (name, bytes) in suite_files("y_") {
        if rfc8259(&bytes) != Verdict::Ok {
            bad.push(format!("{name}: {:?}", rfc8259(&bytes)));
        }
    }
    for (name, bytes) in suite_files("n_") {
        if rfc8259(&bytes) == Verdict::Ok {
            bad.push(format!("{name}: accepted"));
        }
    }
    assert!(
        bad.is_empty(),
        "the test's own RFC 8259 checker disagrees with JSONTestSuite: {bad:#?}"
    );
    // Hand-made sanity cases, including the ones JSONTestSuite lacks.
    assert_eq!(rfc8259(b" [1, {\"a\": [true, null]}] \n"), Verdict::Ok);
    assert_eq!(rfc8259(b"\"\\ud800\""), Verdict::Ok);
    assert!(matches!(rfc8259(b"\"\xed\xa0\x80\""), Verdict::NotUtf8(1)));
    assert!(matches!(rfc8259(b"01"), Verdict::Syntax(1, _)));
}

#[test]
fn y_files_are_sentences() {
    let engine = json_engine();
    let files = suite_files("y_");
    assert_eq!(files.len(), 95, "the corpus README lists 95 y_ files");
    let failures: Vec<String> = files
        .iter()
        .filter_map(|(name, bytes)| match recognize(&engine, bytes) {
            Ok(()) => None,
            Err(at) if at == bytes.len() => {
                Some(format!("{name}: every byte viable but not accepting"))
            }
            Err(at) => Some(format!("{name}: byte {at} ({:#04x}) refused", bytes[at])),
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} y_ files rejected: {failures:#?}",
        failures.len()
    );
}

#[test]
fn n_files_are_rejected() {
    let engine = json_engine();
    let files = suite_files("n_");
    assert_eq!(files.len(), 188, "the corpus README lists 188 n_ files");
    let started = std::time::Instant::now();
    let mut failures = Vec::new();
    let mut saw_deep = 0;
    for (name, bytes) in &files {
        let verdict = recognize(&engine, bytes);
        if verdict.is_ok() {
            failures.push(name.clone());
        }
        if name == "n_structure_100000_opening_arrays.json"
            || name == "n_structure_open_array_object.json"
        {
            // Every byte of these is a viable prefix (only the end is missing): the
            // recognizer had to carry the whole nesting depth, then refuse at the end.
            assert_eq!(
                verdict,
                Err(bytes.len()),
                "{name}: expected every byte viable, no acceptance"
            );
            saw_deep += 1;
        }
    }
    assert_eq!(
        saw_deep, 2,
        "the deep-nesting stress files are missing from the corpus"
    );
    assert!(
        failures.is_empty(),
        "{} n_ files accepted: {failures:#?}",
        failures.len()
    );
    eprintln!(
        "{} n_ files rejected in {:.1} s",
        files.len(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn deep_nesting_is_accepted_when_closed() {
    // The same depth as the n_ stress case, closed: accepted, no stack overflow
    // (also when the recognizer is dropped).
    let engine = json_engine();
    let depth = 100_000;
    let doc: Vec<u8> = std::iter::repeat_n(b'[', depth)
        .chain(std::iter::repeat_n(b']', depth))
        .collect();
    assert_eq!(recognize(&engine, &doc), Ok(()));
    assert_eq!(
        recognize(&engine, &doc[..doc.len() - 1]),
        Err(doc.len() - 1)
    );
    let extra: Vec<u8> = doc.iter().copied().chain([b']']).collect();
    assert_eq!(recognize(&engine, &extra), Err(doc.len()));
}

/// Why an i_ file got its answer, for the results table.
fn reason(name: &str, verdict: &Verdict, bytes: &[u8]) -> String {
    match verdict {
        Verdict::NotUtf8(at) => {
            let kind = if bytes.starts_with(&[0xff, 0xfe]) || bytes.starts_with(&[0xfe, 0xff]) {
                "UTF-16 with a byte-order mark".to_string()
            } else if bytes.contains(&0) {
                return "UTF-16 without a byte-order mark: its NUL bytes are neither JSON whitespace nor a value".into();
            } else {
                format!(
                    "invalid UTF-8 sequence starting at byte {at} ({:#04x})",
                    bytes[*at]
                )
            };
            format!("{kind}: the STRING regex is Unicode-aware, so its language is valid UTF-8 only (DESIGN.md §1)")
        }
        Verdict::Syntax(at, what) => {
            if bytes.starts_with(b"\xef\xbb\xbf") {
                "UTF-8 byte-order mark before the value: not JSON-text (json.lark accepts no BOM)"
                    .into()
            } else if bytes.contains(&0) {
                format!(
                    "UTF-16 without BOM: byte {at} is NUL ({what}), not JSON whitespace or a value"
                )
            } else {
                format!("not RFC 8259 syntax at byte {at}: {what}")
            }
        }
        Verdict::Ok => {
            if name.starts_with("i_number") {
                "syntactically a number; RFC 8259 leaves range/precision to implementations, the grammar checks syntax only".into()
            } else if name.starts_with("i_structure") {
                "nesting depth is not limited".into()
            } else if name.contains("surrogate") || name.contains("escape") {
                "`\\uXXXX` escapes of unpaired/invalid surrogates are syntax (RFC 8259 §8.2); the grammar does not pair them".into()
            } else {
                "valid UTF-8 and RFC 8259 syntax".into()
            }
        }
    }
}

#[test]
fn i_files_match_the_independent_checker() {
    let engine = json_engine();
    let files = suite_files("i_");
    assert_eq!(files.len(), 35, "the corpus README lists 35 i_ files");
    let mut rows = Vec::new();
    let mut mismatches = Vec::new();
    for (name, bytes) in &files {
        let got = recognize(&engine, bytes);
        let expected = rfc8259(bytes);
        if got.is_ok() != (expected == Verdict::Ok) {
            mismatches.push(format!(
                "{name}: recognizer {got:?}, RFC 8259 checker {expected:?}"
            ));
        }
        let result = match got {
            Ok(()) => "accepted".to_string(),
            Err(at) if at == bytes.len() => "rejected (at end of input)".to_string(),
            Err(at) => format!("rejected at byte {at}"),
        };
        println!("{name:<50} {result}");
        rows.push(format!(
            "| `{name}` | {result} | {} |",
            reason(name, &expected, bytes)
        ));
    }
    if std::env::var_os("STACKMASK_WRITE_I_RESULTS").is_some() {
        let accepted = rows.iter().filter(|r| r.contains("| accepted |")).count();
        let text = format!(
            "# JSONTestSuite `i_*` results (reference recognizer, `grammars/json.lark`)\n\n\
             Generated by `STACKMASK_WRITE_I_RESULTS=1 cargo test -p stackmask-tests --test jsontestsuite`.\n\
             The test checks each result against an independent RFC 8259 checker (valid UTF-8 +\n\
             RFC 8259 syntax, no range or surrogate-pairing checks); \"rejected at byte N\" is the first\n\
             byte the recognizer refused (no sentence starts with the bytes up to it).\n\n\
             {accepted} of {} accepted.\n\n| file | result | reason |\n|---|---|---|\n{}\n",
            rows.len(),
            rows.join("\n")
        );
        std::fs::write(workspace().join("tests/JSONTESTSUITE_I_RESULTS.md"), text).unwrap();
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}
