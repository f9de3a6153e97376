//! The reference engine against brute force, on random grammars × random vocabularies.
//!
//! Grammars are random but finite (non-recursive rules, terminals with finite
//! languages over `abc`), so every sentence up to a length bound can be enumerated
//! from the definition in DESIGN.md §1. Ignore-free grammars are compared exactly:
//! viable prefixes, acceptance and token masks. With an ignore terminal the language
//! is unbounded, so acceptance is still compared exactly (it only concerns `w`), and
//! viability in the direction the bound allows.

mod common;

use common::{sentences, strings, GrammarShape, Rng};
use stackmask_compiler::lexer::compile_terminal;
use stackmask_formats::{ByteDfa, Grammar, TokenKind, Vocabulary};
use stackmask_runtime::reference::{ReferenceEngine, ReferenceMatcher};
use stackmask_runtime::ByteRecognizer;
use std::collections::BTreeSet;
use std::sync::Arc;

const ALPHABET: &[u8] = b"abc";

fn random_grammar(rng: &mut Rng) -> Grammar {
    common::random_grammar(
        rng,
        &GrammarShape {
            max_nonterminals: 3,
            lazy_percent: 15,
            ignore_regexes: &["c", "c{1,2}", "c+"],
            max_alt_len: 2,
            recursive: false,
        },
    )
}

fn random_vocab(rng: &mut Rng) -> Vocabulary {
    // Plus a duplicate id for the same bytes, an unused id and the EOS special token.
    let tokens = strings(ALPHABET, 3)
        .into_iter()
        .filter(|_| rng.chance(70))
        .collect();
    common::vocab_with_extras("random", tokens)
}

fn build_trie(v: &Vocabulary) -> stackmask_formats::TokenTrie {
    stackmask_compiler::vocab::build_trie(v)
}

fn prefixes(set: &BTreeSet<Vec<u8>>) -> BTreeSet<Vec<u8>> {
    set.iter()
        .flat_map(|s| (0..=s.len()).map(move |k| s[..k].to_vec()))
        .collect()
}

/// Sentences and viable prefixes enumerated up to one length bound.
struct Bounded {
    max_len: usize,
    sentences: BTreeSet<Vec<u8>>,
    prefixes: BTreeSet<Vec<u8>>,
}

/// Sentences up to `max_len`, cached per bound (the enumeration is the slow part).
struct Language<'a> {
    g: &'a Grammar,
    dfas: &'a [ByteDfa],
    bounds: Vec<Bounded>,
}

impl Language<'_> {
    fn at(&mut self, max_len: usize) -> (&BTreeSet<Vec<u8>>, &BTreeSet<Vec<u8>>) {
        if !self.bounds.iter().any(|b| b.max_len == max_len) {
            let sentences = sentences(self.g, self.dfas, ALPHABET, max_len, max_len);
            let prefixes = prefixes(&sentences);
            self.bounds.push(Bounded {
                max_len,
                sentences,
                prefixes,
            });
        }
        let b = self.bounds.iter().find(|b| b.max_len == max_len).unwrap();
        (&b.sentences, &b.prefixes)
    }

    /// Whether `w` has a completion: exact when it has one within `LONG` bytes, and when
    /// it has none at all (the tiny grammars here never need longer completions; a
    /// failure that reports a grammar needing one is a test bug, not an engine bug).
    fn viable(&mut self, w: &[u8]) -> bool {
        self.at(SHORT).1.contains(w) || self.at(LONG).1.contains(w)
    }
}

const SHORT: usize = 7;
const LONG: usize = 11;

#[test]
fn reference_matches_brute_force_on_random_grammars() {
    let cases = std::env::var("STACKMASK_BRUTE_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    random_grammars(cases);
}

/// The slow sweep, run before a release: `cargo test -p stackmask-tests --test
/// reference_bruteforce -- --ignored`.
#[test]
#[ignore = "slow sweep (several minutes); run with --ignored"]
fn sweep_reference_matches_brute_force_on_many_random_grammars() {
    random_grammars(3_000);
}

/// Checks cases `0..cases` (on every core: each case is independent).
fn random_grammars(cases: usize) {
    let per_case = common::map_on_cores(&(0..cases).collect::<Vec<_>>(), |&case| check_case(case));
    let checked_masks: usize = per_case.iter().map(|&(masks, _)| masks).sum();
    let dead_ends: usize = per_case.iter().map(|&(_, dead)| dead).sum();
    assert!(
        checked_masks > 100,
        "too few masks checked: {checked_masks}"
    );
    eprintln!("{checked_masks} masks checked, {dead_ends} greedy dead ends seen");
}

/// Checks one case; returns the masks checked and the greedy dead ends seen.
fn check_case(case: usize) -> (usize, usize) {
    let mut checked_masks = 0;
    let mut dead_ends = 0;
    let mut rng =
        Rng(0x9e37_79b9_7f4a_7c15 ^ (case as u64 + 1).wrapping_mul(0x1234_5678_9abc_def1));
    let g = random_grammar(&mut rng);
    let dfas: Vec<ByteDfa> = match g
        .terminals
        .iter()
        .map(|t| compile_terminal(&t.regex))
        .collect()
    {
        Ok(d) => d,
        Err(e) => panic!("case {case}: {e}"),
    };
    let mut lang = Language {
        g: &g,
        dfas: &dfas,
        bounds: Vec::new(),
    };
    let vocab = random_vocab(&mut rng);
    let trie = build_trie(&vocab);
    let engine = Arc::new(ReferenceEngine::new(&g, dfas.clone(), vocab.clone(), trie).unwrap());
    let ctx = || format!("case {case}: grammar {g:#?}");

    // Viability and acceptance of every string up to 4 bytes.
    let mut rec = engine.recognizer();
    let mut inputs = strings(ALPHABET, 4);
    inputs.insert(0, Vec::new());
    for w in &inputs {
        let ok = rec.push_bytes(w);
        let expect = lang.viable(w);
        // The empty prefix cannot be refused (nothing is pushed); a grammar whose
        // language is empty simply has empty masks.
        assert_eq!(
            ok,
            expect || w.is_empty(),
            "viability of {:?}; {}",
            String::from_utf8_lossy(w),
            ctx()
        );
        // A live lexeme whose every ending dead-ends: what the viability analysis is for.
        let naive_prefix = (1..=w.len()).all(|k| lang.at(SHORT).1.contains(&w[..k]) || !expect);
        if !expect && naive_prefix && w.len() == 1 {
            dead_ends += 1;
        }
        if ok {
            assert_eq!(
                rec.is_accepting(),
                lang.at(SHORT).0.contains(w),
                "acceptance of {:?}; {}",
                String::from_utf8_lossy(w),
                ctx()
            );
            rec.pop_bytes(w.len());
        }
        assert_eq!(rec.bytes_consumed(), 0);
    }

    // Masks after every viable prefix up to 3 bytes.
    let short_prefixes: Vec<Vec<u8>> = lang
        .at(SHORT)
        .1
        .iter()
        .filter(|w| w.len() <= 3)
        .cloned()
        .collect();
    for w in &short_prefixes {
        let mut m = ReferenceMatcher::new(engine.clone());
        if !w.is_empty() {
            m.commit_bytes(w).unwrap();
        }
        let mut mask = vec![0u32; vocab.mask_words()];
        m.fill_mask(&mut mask);
        for id in 0..vocab.len() as u32 {
            let expect = if id == vocab.eos {
                lang.at(SHORT).0.contains(w)
            } else if vocab.kind(id) != TokenKind::Normal {
                false
            } else {
                lang.viable(&[w.as_slice(), vocab.token_bytes(id)].concat())
            };
            let got = mask[id as usize / 32] >> (id % 32) & 1 == 1;
            assert_eq!(
                got,
                expect,
                "token {id} {:?} after {:?}; {}",
                String::from_utf8_lossy(vocab.token_bytes(id)),
                String::from_utf8_lossy(w),
                ctx()
            );
        }
        checked_masks += 1;
    }
    (checked_masks, dead_ends)
}
