//! `ReferenceMatcher` as a decoding session: commit, fill_mask, rollback, clone.
//!
//! 1. Round trips on real grammars and vocabularies (`bytes`, `tiktoken:o200k_base`): a
//!    sample JSON document is committed token by token with every mask recorded; then
//!    rollbacks to random earlier points must give back exactly the recorded masks and byte
//!    counts, clones taken at random points must continue independently (a clone that goes
//!    another way and rolls back leaves both at the recorded state), a refused token must
//!    leave the matcher unchanged, EOS ends the session (nothing commits after it) and a
//!    rollback past the start is an error.
//! 2. Masks against brute force on tiny hand-written grammars with the `bytes` tokenizer:
//!    the languages are enumerated by hand, and token `b` must be allowed after `w` iff
//!    `w·b` is a prefix of a sentence, EOS iff `w` is a sentence (DESIGN.md §1).

mod common;

use common::{mask_has, mask_ids, Rng};
use stackmask_compiler::pipeline::{lex_grammar_source, reference_engine, LexedGrammar};
use stackmask_compiler::vocab::{load_tokenizer, Tokenizer};
use stackmask_formats::TokenKind;
use stackmask_runtime::reference::{ReferenceEngine, ReferenceMatcher};
use stackmask_runtime::MatchError;
use std::collections::BTreeSet;
use std::sync::Arc;

fn mask_of(m: &mut ReferenceMatcher, words: usize) -> Vec<u32> {
    let mut mask = vec![0u32; words];
    m.fill_mask(&mut mask);
    mask
}

/// A state snapshot: the mask and the byte count after some number of commits.
#[derive(Clone, PartialEq, Eq)]
struct Snapshot {
    mask: Vec<u32>,
    consumed: usize,
    accepting: bool,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids = mask_ids(&self.mask);
        write!(
            f,
            "Snapshot {{ consumed: {}, accepting: {}, {} allowed: {:?}.. }}",
            self.consumed,
            self.accepting,
            ids.len(),
            &ids[..ids.len().min(12)]
        )
    }
}

fn snapshot(m: &mut ReferenceMatcher, words: usize) -> Snapshot {
    Snapshot {
        mask: mask_of(m, words),
        consumed: m.bytes_consumed(),
        accepting: m.is_accepting(),
    }
}

/// A normal token refused in the current state, preferring one whose first byte is
/// allowed (so the refusal happens after some bytes were pushed and had to be undone).
fn refused_token(rng: &mut Rng, tok: &Tokenizer, mask: &[u32]) -> Option<u32> {
    let v = &tok.vocab;
    let allowed = mask_ids(mask);
    let first_bytes: BTreeSet<u8> = allowed
        .iter()
        .filter(|&&id| id != v.eos)
        .filter_map(|&id| v.token_bytes(id).first().copied())
        .collect();
    let mut fallback = None;
    for _ in 0..20_000 {
        let id = rng.below(v.len()) as u32;
        if v.kind(id) != TokenKind::Normal || mask_has(mask, id) {
            continue;
        }
        let b = v.token_bytes(id);
        if b.len() > 1 && first_bytes.contains(&b[0]) {
            return Some(id);
        }
        fallback.get_or_insert(id);
    }
    fallback
}

/// Expect a refused commit to leave `m` exactly as it was.
fn assert_unchanged(m: &mut ReferenceMatcher, before: &Snapshot, words: usize, what: &str) {
    let after = snapshot(m, words);
    assert_eq!(&after, before, "{what} changed the matcher");
}

struct Walk {
    name: String,
    tok: Tokenizer,
    engine: Arc<ReferenceEngine>,
    tokens: Vec<u32>,
}

impl Walk {
    fn new(grammar: &LexedGrammar, spec: &str, sample: &str) -> Walk {
        let tok = load_tokenizer(spec).unwrap();
        let engine = Arc::new(reference_engine(grammar, &tok).unwrap());
        let path = common::workspace().join("grammars/samples").join(sample);
        let text = std::fs::read(&path).unwrap();
        let tokens = tok.encode(&text).unwrap();
        assert_eq!(
            tok.decode(&tokens),
            text,
            "{sample}: tokenization does not spell the document"
        );
        Walk {
            name: format!("{sample} × {spec}"),
            tok,
            engine,
            tokens,
        }
    }

    fn words(&self) -> usize {
        self.tok.vocab.mask_words()
    }

    /// Commits the whole document, recording the state before each commit and at the end
    /// (`states[i]` = after `i` commits), and checks that each token is in its mask.
    fn forward(&self) -> (ReferenceMatcher, Vec<Snapshot>) {
        let mut m = ReferenceMatcher::new(self.engine.clone());
        let mut states = Vec::with_capacity(self.tokens.len() + 1);
        for (i, &t) in self.tokens.iter().enumerate() {
            let s = snapshot(&mut m, self.words());
            assert!(
                mask_has(&s.mask, t),
                "{}: step {i}: token {t} not in its mask",
                self.name
            );
            assert!(
                !mask_has(&s.mask, self.tok.eos()) || s.accepting,
                "{}: step {i}: EOS allowed but not accepting",
                self.name
            );
            states.push(s);
            m.commit(t)
                .unwrap_or_else(|e| panic!("{}: step {i}: {e}", self.name));
        }
        let end = snapshot(&mut m, self.words());
        assert!(
            end.accepting && mask_has(&end.mask, self.tok.eos()),
            "{}: EOS not allowed at the end",
            self.name
        );
        states.push(end);
        (m, states)
    }

    fn run(&self, seed: u64, experiments: usize) {
        let words = self.words();
        let eos = self.tok.eos();
        let n = self.tokens.len();
        let (mut m, states) = self.forward();
        let mut rng = Rng(seed);

        // EOS ends the session: the mask is empty, nothing commits, rollback(1) reopens it.
        m.commit(eos).unwrap();
        assert!(m.is_finished());
        assert!(
            mask_of(&mut m, words).iter().all(|&w| w == 0),
            "{}: mask after EOS is not empty",
            self.name
        );
        assert_eq!(m.commit(self.tokens[0]), Err(MatchError::Finished));
        assert_eq!(m.commit(eos), Err(MatchError::Finished));
        assert_eq!(m.commit_bytes(b" "), Err(MatchError::Finished));
        assert_eq!(
            m.rollback(n + 2),
            Err(MatchError::RollbackTooFar {
                requested: n + 2,
                available: n + 1
            })
        );
        assert!(m.is_finished(), "a refused rollback reopened the session");
        m.rollback(1).unwrap();
        assert!(!m.is_finished());
        assert_eq!(
            snapshot(&mut m, words),
            states[n],
            "{}: rollback of EOS",
            self.name
        );

        // Rollback past the start is an error and changes nothing.
        assert_eq!(
            m.rollback(n + 1),
            Err(MatchError::RollbackTooFar {
                requested: n + 1,
                available: n
            })
        );
        assert_eq!(snapshot(&mut m, words), states[n]);
        m.rollback(0).unwrap();
        assert_eq!(snapshot(&mut m, words), states[n]);

        // `m` is now after all `n` commits. Random experiments, each starting where `m` is.
        let mut at = n;
        for e in 0..experiments {
            let (name, at0) = (&self.name, at);
            let ctx = move |what: &str| format!("{name}: experiment {e} starting at {at0}: {what}");
            match rng.below(4) {
                // Roll back to a random earlier point, check, and go forward again a bit.
                0 => {
                    let back = rng.below(at + 1);
                    m.rollback(back).unwrap();
                    at -= back;
                    assert_eq!(
                        snapshot(&mut m, words),
                        states[at],
                        "{}",
                        ctx(&format!("after rollback({back})"))
                    );
                    let fwd = rng.below(n - at + 1).min(8);
                    for i in at..at + fwd {
                        m.commit(self.tokens[i]).unwrap();
                        assert_eq!(
                            snapshot(&mut m, words),
                            states[i + 1],
                            "{}",
                            ctx("re-commit after rollback")
                        );
                    }
                    at += fwd;
                }
                // Clone, take the clone down another path, roll it back; both must be intact.
                1 => {
                    let mut c = m.clone();
                    let mut detour = 0;
                    for _ in 0..1 + rng.below(4) {
                        let s = snapshot(&mut c, words);
                        let options: Vec<u32> = mask_ids(&s.mask)
                            .into_iter()
                            .filter(|&t| t != eos && Some(&t) != self.tokens.get(at))
                            .collect();
                        if options.is_empty() {
                            break;
                        }
                        c.commit(options[rng.below(options.len())]).unwrap();
                        detour += 1;
                    }
                    assert_eq!(
                        snapshot(&mut m, words),
                        states[at],
                        "{}",
                        ctx("original after the clone's detour")
                    );
                    // The original goes on with the document while the clone is off its path.
                    if at < n {
                        m.commit(self.tokens[at]).unwrap();
                        assert_eq!(
                            snapshot(&mut m, words),
                            states[at + 1],
                            "{}",
                            ctx("original continues")
                        );
                        m.rollback(1).unwrap();
                    }
                    c.rollback(detour).unwrap();
                    assert_eq!(
                        snapshot(&mut c, words),
                        states[at],
                        "{}",
                        ctx(&format!("clone after rollback({detour})"))
                    );
                    // The clone can now follow the document and the original can detour.
                    let fwd = (n - at).min(3);
                    for i in at..at + fwd {
                        c.commit(self.tokens[i]).unwrap();
                        assert_eq!(
                            snapshot(&mut c, words),
                            states[i + 1],
                            "{}",
                            ctx("clone follows the document")
                        );
                    }
                    assert_eq!(
                        snapshot(&mut m, words),
                        states[at],
                        "{}",
                        ctx("original after the clone went on")
                    );
                    // Keep the clone as the session half of the time.
                    if rng.chance(50) {
                        m = c;
                        at += fwd;
                    }
                }
                // Refused commits leave everything unchanged.
                2 => {
                    let before = snapshot(&mut m, words);
                    if let Some(t) = refused_token(&mut rng, &self.tok, &before.mask) {
                        assert_eq!(
                            m.commit(t),
                            Err(MatchError::Rejected { token: t }),
                            "{}",
                            ctx("refused token")
                        );
                        assert_unchanged(
                            &mut m,
                            &before,
                            words,
                            &ctx(&format!("refused token {t}")),
                        );
                    }
                    if !before.accepting {
                        assert_eq!(
                            m.commit(eos),
                            Err(MatchError::EosNotAllowed),
                            "{}",
                            ctx("EOS")
                        );
                        assert_unchanged(&mut m, &before, words, &ctx("refused EOS"));
                    }
                    let len = self.tok.vocab.len() as u32;
                    assert_eq!(m.commit(len), Err(MatchError::UnknownToken(len)));
                    assert_unchanged(&mut m, &before, words, &ctx("unknown token"));
                    if let Some(special) = (0..len)
                        .rev()
                        .find(|&id| id != eos && self.tok.vocab.kind(id) != TokenKind::Normal)
                    {
                        assert_eq!(m.commit(special), Err(MatchError::SpecialToken(special)));
                        assert_unchanged(&mut m, &before, words, &ctx("special token"));
                    }
                    // Forced bytes: the document's next bytes then 0xFF, never valid UTF-8 (every shipped grammar is UTF-8-only).
                    let next: Vec<u8> = self.tokens[at..(at + 3).min(n)]
                        .iter()
                        .flat_map(|&t| self.tok.vocab.token_bytes(t).to_vec())
                        .collect();
                    let bad = [next.as_slice(), b"\xff"].concat();
                    assert_eq!(
                        m.commit_bytes(&bad),
                        Err(MatchError::RejectedBytes { offset: next.len() }),
                        "{}",
                        ctx("forced bytes")
                    );
                    assert_unchanged(&mut m, &before, words, &ctx("refused forced bytes"));
                }
                // Forced bytes spanning several tokens count as one commit.
                _ => {
                    let k = (n - at).min(1 + rng.below(5));
                    let bytes: Vec<u8> = self.tokens[at..at + k]
                        .iter()
                        .flat_map(|&t| self.tok.vocab.token_bytes(t).to_vec())
                        .collect();
                    m.commit_bytes(&bytes).unwrap();
                    assert_eq!(
                        snapshot(&mut m, words),
                        states[at + k],
                        "{}",
                        ctx("commit_bytes")
                    );
                    m.rollback(1).unwrap();
                    assert_eq!(
                        snapshot(&mut m, words),
                        states[at],
                        "{}",
                        ctx("rollback(1) of commit_bytes")
                    );
                }
            }
        }
    }
}

#[test]
fn roundtrips_json_bytes_tokenizer() {
    let json = common::shipped_grammar("json");
    // Non-ASCII (emoji): single-byte tokens walk through partial UTF-8.
    Walk::new(
        &json,
        "bytes",
        "json/schemastore_all-contributors_complete.json",
    )
    .run(0x5eed_0001, 150);
    Walk::new(
        &json,
        "bytes",
        "json/handwritten_deep_nesting_whitespace.json",
    )
    .run(0x5eed_0002, 150);
}

#[test]
fn roundtrips_json_o200k() {
    let json = common::shipped_grammar("json");
    for (i, sample) in [
        "json/simdjson_example_config.json",
        "json/handwritten_deep_nesting_whitespace.json",
    ]
    .iter()
    .enumerate()
    {
        let walk = Walk::new(&json, "tiktoken:o200k_base", sample);
        assert!(
            walk.tokens.len() > 20,
            "{sample}: too short to be interesting"
        );
        walk.run(0x5eed_0003 + i as u64, 60);
    }
}

#[test]
fn roundtrips_other_grammars() {
    // Grammars with %ignore (whitespace, comments) and keyword/identifier overlaps.
    Walk::new(
        &common::shipped_grammar("sql"),
        "bytes",
        "sql/with_recursive_union.sql",
    )
    .run(0x5eed_0005, 60);
    Walk::new(
        &common::shipped_grammar("expr"),
        "tiktoken:o200k_base",
        "expr/long_chain_no_spaces.txt",
    )
    .run(0x5eed_0006, 60);
}

// ---------------------------------------------------------------------------------------
// Brute force on tiny grammars.

/// Checks, for every prefix `w` in `check`, the mask after committing `w` byte by byte
/// (and after `commit_bytes(w)`) against the language given by `sentences`: byte `b` is
/// allowed iff `w·b` is a prefix of a sentence, EOS iff `w` is a sentence. Also checks that
/// a byte outside the mask is refused by `commit`. `sentences` must contain every sentence
/// any `w·b` is a prefix of (callers bound lengths accordingly).
fn check_masks(
    name: &str,
    grammar: &str,
    sentences: &BTreeSet<Vec<u8>>,
    check: &BTreeSet<Vec<u8>>,
) -> usize {
    let lexed = lex_grammar_source(grammar, name).unwrap_or_else(|e| panic!("{name}: {e}"));
    let tok = load_tokenizer("bytes").unwrap();
    let engine = Arc::new(reference_engine(&lexed, &tok).unwrap());
    let viable: BTreeSet<Vec<u8>> = sentences
        .iter()
        .flat_map(|s| (0..=s.len()).map(move |k| s[..k].to_vec()))
        .collect();
    let words = tok.vocab.mask_words();
    let eos = tok.eos();
    let mut checked = 0;
    for w in check {
        assert!(
            viable.contains(w),
            "{name}: test bug: {w:?} is not a viable prefix"
        );
        let mut m = ReferenceMatcher::new(engine.clone());
        for &b in w {
            m.commit(b as u32).unwrap_or_else(|e| {
                panic!("{name}: committing {:?}: {e}", String::from_utf8_lossy(w))
            });
        }
        let mask = mask_of(&mut m, words);
        let mut m2 = ReferenceMatcher::new(engine.clone());
        if !w.is_empty() {
            m2.commit_bytes(w).unwrap();
        }
        assert_eq!(
            mask_of(&mut m2, words),
            mask,
            "{name}: commit vs commit_bytes after {w:?}"
        );
        assert_eq!(
            m.is_accepting(),
            sentences.contains(w),
            "{name}: acceptance of {:?}",
            String::from_utf8_lossy(w)
        );
        assert_eq!(
            mask_has(&mask, eos),
            sentences.contains(w),
            "{name}: EOS after {:?}",
            String::from_utf8_lossy(w)
        );
        for b in 0..=255u8 {
            let wb = [w.as_slice(), &[b]].concat();
            let expect = viable.contains(&wb);
            assert_eq!(
                mask_has(&mask, b as u32),
                expect,
                "{name}: byte {:?} after {:?}",
                b as char,
                String::from_utf8_lossy(w)
            );
            if !expect {
                assert_eq!(
                    m.commit(b as u32),
                    Err(MatchError::Rejected { token: b as u32 })
                );
            }
        }
        assert_eq!(m.bytes_consumed(), w.len());
        checked += 1;
    }
    checked
}

fn set<I: IntoIterator<Item = S>, S: AsRef<[u8]>>(items: I) -> BTreeSet<Vec<u8>> {
    items.into_iter().map(|s| s.as_ref().to_vec()).collect()
}

fn prefixes(s: &BTreeSet<Vec<u8>>) -> BTreeSet<Vec<u8>> {
    s.iter()
        .flat_map(|x| (0..=x.len()).map(move |k| x[..k].to_vec()))
        .collect()
}

#[test]
fn masks_on_tiny_grammars_match_brute_force() {
    let mut checked = 0;

    // DESIGN.md §1's own example: "a" cannot be extended by "b", so `abc` is a sentence.
    let s = set(["abc", "abd"]);
    checked += check_masks(
        "section1",
        "start: \"a\" \"bc\" | \"ab\" \"d\"",
        &s,
        &prefixes(&s),
    );

    // Keyword vs identifier, and the greedy rule inside a terminal: a one-letter ID cannot
    // be followed by "x" (the "x" would extend it), so "ax" is not a sentence but "axx" is.
    let letters: Vec<u8> = (b'a'..=b'z').collect();
    let mut s = set(["if"]);
    for &a in &letters {
        for &b in &letters {
            s.insert(vec![a, b, b'x']);
        }
    }
    checked += check_masks(
        "kw_ident",
        "start: \"if\" | ID \"x\"\nID: /[a-z]{1,2}/",
        &s,
        &prefixes(&s),
    );

    // A lazy terminal ends at its first match: r is exactly "a" (its only match with no
    // proper prefix matching), so "<ab>" and "<aa>" are not sentences.
    let s = set(["<a>", "<b>"]);
    checked += check_masks(
        "lazy",
        "start: \"<\" r \">\"\nr[lazy]: /a[ab]*|b/",
        &s,
        &prefixes(&s),
    );

    // Ignore: between lexemes only (not before the first, not after the last); runs of
    // spaces bounded by 3 in the enumeration, prefixes checked with runs of at most 2.
    let spaced = |max: usize| -> BTreeSet<Vec<u8>> {
        let mut out = BTreeSet::new();
        for i in 0..=max {
            for j in 0..=max {
                let sp = |k: usize| " ".repeat(k);
                out.insert(format!("a{}b", sp(i)).into_bytes());
                out.insert(format!("a{}b{}c", sp(i), sp(j)).into_bytes());
            }
        }
        out
    };
    let g = "start: \"a\" \"b\" \"c\"?\n%ignore \" \"";
    checked += check_masks("ignore", g, &spaced(3), &prefixes(&spaced(2)));

    // With allow_initial_skip, ignore lexemes may also come first (still never last).
    let lead = |max: usize| -> BTreeSet<Vec<u8>> {
        spaced(max)
            .into_iter()
            .flat_map(|s| (0..=max).map(move |k| [" ".repeat(k).into_bytes(), s.clone()].concat()))
            .collect()
    };
    let g = "%llguidance {\"allow_initial_skip\": true}\nstart: \"a\" \"b\" \"c\"?\n%ignore \" \"";
    checked += check_masks("initial_skip", g, &lead(3), &prefixes(&lead(2)));

    // Unicode-aware classes: only valid UTF-8, partial sequences allowed exactly when they
    // can complete (é = C3 A9, € = E2 82 AC, 😀 = F0 9F 98 80).
    let s = set(["é!", "€!", "😀!", "x!"]);
    checked += check_masks("utf8", "start: /[é€😀x]/ \"!\"", &s, &prefixes(&s));

    // A nullable start symbol: the empty string is a sentence (EOS allowed at once).
    let s = set(["", "a", "ab"]);
    checked += check_masks("nullable", "start: (\"a\" \"b\"?)?", &s, &prefixes(&s));

    assert!(checked > 1000, "only {checked} masks checked");
    eprintln!("{checked} masks checked against brute force");
}

/// A terminal's language is the whole regular language of its regex: an alternation
/// whose earlier branch is a prefix of a later one (`"<" | "<="`, `a{1,3}|a{4}`) must keep
/// both (no leftmost-first match priority inside one terminal's DFA).
#[test]
fn alternation_inside_a_terminal_keeps_every_branch() {
    let mut checked = 0;

    // OP = {"<", "<="}, then "x". "<" followed by "=" would extend OP, so "<=x" is only
    // OP="<=".
    let s = set(["<x", "<=x"]);
    checked += check_masks(
        "prefix_alternatives",
        "start: OP \"x\"\nOP: \"<\" | \"<=\"",
        &s,
        &prefixes(&s),
    );

    // A ∈ {a, aa, aaa, aaaa}, B ∈ {b, ab}. A followed by B = "ab" needs that "a" not to
    // extend A: only A = "aaaa" (no fifth a possible) gives "aaaaab"; A followed by "b": all.
    let s = set(["ab", "aab", "aaab", "aaaab", "aaaaab"]);
    checked += check_masks(
        "greedy_alternatives",
        "start: A B\nA: /a{1,3}/ | /a{4}/\nB: /a?b/",
        &s,
        &prefixes(&s),
    );
    assert!(checked > 10);
}

/// Issue 11 (10): the reference set-up swept every rule until nothing changed, and a
/// chain `a0: "(" a1 ")"`, …, `aN: "x"` takes one sweep per link: quadratic in the
/// number of rules (5,000 rules: 25 s). Its work (rule evaluations, not time) must grow
/// linearly: doubling the chain may not much more than double it.
#[test]
fn reference_setup_work_grows_linearly_with_the_rules() {
    let bytes = load_tokenizer("bytes").unwrap();
    let work = |n: usize| {
        let mut g = String::from("start: a0\n");
        for i in 0..n {
            g.push_str(&format!("a{i}: \"(\" a{} \")\"\n", i + 1));
        }
        g.push_str(&format!("a{n}: \"x\"\n"));
        let lexed = lex_grammar_source(&g, "chain.lark").unwrap();
        reference_engine(&lexed, &bytes).unwrap().setup_work()
    };
    let (small, large) = (work(300), work(600));
    assert!(
        large <= small * 5 / 2,
        "set-up work {small} for 300 rules, {large} for 600: not linear"
    );
}
