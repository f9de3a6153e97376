//! The shipped grammars (`grammars/<g>.lark`) against their sample documents
//! (`grammars/samples/<g>/`, see its README), through the reference recognizer:
//!
//! - every file directly in `samples/<g>/` is a sentence;
//! - every file in `samples/<g>/invalid/` is rejected;
//! - every file in `samples/<g>/edge_ignore/` is rejected, and *only* because `%ignore`d text
//!   comes before the first or after the last lexeme: the document is `x · s · y` with `s`
//!   a sentence and `x`, `y` (not both empty) made of ignore lexemes; where `y` is empty the
//!   same grammar with `%llguidance {"allow_initial_skip": true}` accepts the document;
//! - `stackmask trace` semantics on the two smallest JSON samples with
//!   `tiktoken:o200k_base`: the canonical tokenization (`Tokenizer::encode`) spells the
//!   document, every next token is in the mask, EOS is in the mask exactly where the
//!   committed bytes are a sentence and is allowed at the end; masks hold no other special
//!   token.

mod common;

use common::{mask_has, recognize, workspace};
use stackmask_compiler::pipeline::{lex_grammar_source, reference_engine, LexedGrammar};
use stackmask_compiler::vocab::load_tokenizer;
use stackmask_formats::TokenKind;
use stackmask_runtime::reference::{ReferenceEngine, ReferenceMatcher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn grammar_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(workspace().join("grammars/samples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["c", "expr", "json", "sql", "toml"],
        "sample folders changed: update this test"
    );
    names
}

fn files(dir: &Path) -> Vec<PathBuf> {
    if dir.is_dir() {
        common::files_in(dir)
    } else {
        Vec::new()
    }
}

fn describe(bytes: &[u8], verdict: Result<(), usize>) -> String {
    match verdict {
        Ok(()) => "accepted".into(),
        Err(at) if at == bytes.len() => "every byte viable, not a sentence".into(),
        Err(at) => {
            let from = at.saturating_sub(20);
            format!(
                "byte {at} refused after …{:?}",
                String::from_utf8_lossy(&bytes[from..at])
            )
        }
    }
}

#[test]
fn samples_are_sentences_and_invalid_files_are_rejected() {
    let mut failures = Vec::new();
    let (mut valid, mut invalid) = (0, 0);
    for g in grammar_names() {
        let engine = common::engine_for(&common::shipped_grammar(&g), "bytes");
        let dir = workspace().join("grammars/samples").join(&g);
        let samples = files(&dir);
        assert!(!samples.is_empty(), "{g}: no samples");
        for path in samples {
            let bytes = std::fs::read(&path).unwrap();
            let v = recognize(&engine, &bytes);
            if v.is_err() {
                failures.push(format!("{}: {}", path.display(), describe(&bytes, v)));
            }
            valid += 1;
        }
        let bad = files(&dir.join("invalid"));
        assert!(!bad.is_empty(), "{g}: no invalid samples");
        for path in bad {
            let bytes = std::fs::read(&path).unwrap();
            if recognize(&engine, &bytes).is_ok() {
                failures.push(format!("{}: invalid document accepted", path.display()));
            }
            invalid += 1;
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    eprintln!("{valid} samples accepted, {invalid} invalid documents rejected");
}

/// Whether `bytes` is a (possibly empty) concatenation of matches of ignore terminals.
fn ignore_lexemes_only(lexed: &LexedGrammar, bytes: &[u8]) -> bool {
    let mut reach = vec![false; bytes.len() + 1];
    reach[0] = true;
    for p in 0..bytes.len() {
        if !reach[p] {
            continue;
        }
        for &t in &lexed.grammar.ignore {
            let dfa = &lexed.dfas[t as usize];
            let mut s = dfa.start;
            for (q, &b) in bytes[p..].iter().enumerate() {
                s = dfa.next(s, b);
                if !dfa.is_live(s) {
                    break;
                }
                if dfa.is_accepting(s) {
                    reach[p + q + 1] = true;
                }
            }
        }
    }
    reach[bytes.len()]
}

#[test]
fn edge_ignore_documents_are_rejected_only_for_their_edges() {
    let mut checked = 0;
    for g in grammar_names() {
        let dir = workspace()
            .join("grammars/samples")
            .join(&g)
            .join("edge_ignore");
        let docs = files(&dir);
        if docs.is_empty() {
            continue;
        }
        let lexed = common::shipped_grammar(&g);
        assert!(
            !lexed.grammar.allow_initial_skip,
            "{g}: edge_ignore samples need a grammar without allow_initial_skip"
        );
        let engine = common::engine_for(&lexed, "bytes");
        let source =
            std::fs::read_to_string(workspace().join("grammars").join(format!("{g}.lark")))
                .unwrap();
        let skipping = lex_grammar_source(
            &format!("%llguidance {{\"allow_initial_skip\": true}}\n{source}"),
            &format!("{g}+skip"),
        )
        .unwrap();
        assert!(skipping.grammar.allow_initial_skip);
        let skip_engine = common::engine_for(&skipping, "bytes");
        for path in docs {
            let doc = std::fs::read(&path).unwrap();
            let name = path.display().to_string();
            assert!(recognize(&engine, &doc).is_err(), "{name}: accepted, but ignored text at an edge is not part of a sentence (DESIGN.md §1)");
            // Find the split x · s · y (shortest edges first).
            let n = doc.len();
            let split = (1..=n)
                .flat_map(|edges| (0..=edges).map(move |i| (i, n - (edges - i))))
                .find(|&(i, j)| {
                    i < j
                        && ignore_lexemes_only(&lexed, &doc[..i])
                        && ignore_lexemes_only(&lexed, &doc[j..])
                        && recognize(&engine, &doc[i..j]).is_ok()
                });
            let (i, j) =
                split.unwrap_or_else(|| panic!("{name}: no sentence between ignored edges"));
            // Leading ignored text only: allow_initial_skip makes it a sentence.
            assert_eq!(
                recognize(&skip_engine, &doc).is_ok(),
                j == n,
                "{name}: with allow_initial_skip (split {i}..{j} of {n})"
            );
            checked += 1;
        }
    }
    assert_eq!(
        checked, 7,
        "the README's edge_ignore folders hold 7 documents"
    );
}

fn trace(
    engine: &Arc<ReferenceEngine>,
    tok: &stackmask_compiler::vocab::Tokenizer,
    name: &str,
    text: &[u8],
) -> usize {
    let tokens = tok.encode(text).unwrap();
    assert_eq!(
        tok.decode(&tokens),
        text,
        "{name}: the canonical tokenization does not spell the document"
    );
    let v = &tok.vocab;
    let eos = tok.eos();
    let specials: Vec<u32> = (0..v.len() as u32)
        .filter(|&id| id != eos && v.kind(id) != TokenKind::Normal)
        .collect();
    let mut m = ReferenceMatcher::new(engine.clone());
    let mut mask = vec![0u32; v.mask_words()];
    let mut consumed = 0;
    for (step, &t) in tokens.iter().chain(std::iter::once(&eos)).enumerate() {
        m.fill_mask(&mut mask);
        let sentence = recognize(engine, &text[..consumed]).is_ok();
        assert_eq!(
            mask_has(&mask, eos),
            sentence,
            "{name}: step {step}: EOS in the mask vs the prefix being a sentence"
        );
        assert_eq!(
            m.is_accepting(),
            sentence,
            "{name}: step {step}: is_accepting"
        );
        assert!(
            specials.iter().all(|&s| !mask_has(&mask, s)),
            "{name}: step {step}: a special token other than EOS is in the mask"
        );
        assert!(
            mask_has(&mask, t),
            "{name}: step {step}: token {t} {:?} is not in the mask after {consumed} bytes",
            String::from_utf8_lossy(v.token_bytes(t))
        );
        m.commit(t)
            .unwrap_or_else(|e| panic!("{name}: step {step}: {e}"));
        if t != eos {
            consumed += v.token_bytes(t).len();
        }
        assert_eq!(m.bytes_consumed(), consumed);
    }
    assert!(m.is_finished());
    tokens.len()
}

#[test]
fn trace_smallest_json_samples_with_o200k() {
    let tok = load_tokenizer("tiktoken:o200k_base").unwrap();
    let json = common::shipped_grammar("json");
    let engine = Arc::new(reference_engine(&json, &tok).unwrap());
    let mut samples: Vec<(u64, PathBuf)> = files(&workspace().join("grammars/samples/json"))
        .into_iter()
        .map(|p| (p.metadata().unwrap().len(), p))
        .collect();
    samples.sort();
    assert!(samples.len() >= 2);
    for (_, path) in &samples[..2] {
        let text = std::fs::read(path).unwrap();
        let steps = trace(&engine, &tok, &path.display().to_string(), &text);
        eprintln!("{}: {steps} tokens traced", path.display());
    }
}
