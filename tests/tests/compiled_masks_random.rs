//! The compiled mask path (Parser DWA walked over the GSS) against the reference path,
//! on random grammars × random small vocabularies.
//!
//! Grammars come from `common::random_grammar` with recursion: nesting, nullable
//! parts (empty alternatives), ambiguity, overlapping terminals, greedy and lazy
//! terminals, ignore terminals (also used in rules), line-comment-like ignore terminals
//! and greedy dead ends (compared against the reference on the grammar itself). Vocabularies hold random strings
//! of one to four bytes over the grammar's alphabet plus a space, a duplicate id, an
//! unused id and EOS. Each case compiles a real artifact, loads it as an `Engine`, and
//! walks random token sequences sampled from the mask, with `rollback` and
//! `commit_bytes` mixed in; at every step the compiled mask must equal the reference
//! mask bit for bit. This is what finds bugs in composition and lookback (DESIGN.md §5).

mod common;
mod compiled_support;

use common::{mask_ids, strings, GrammarShape, Rng};
use stackmask_compiler::artifact::{build_artifact, ArtifactInputs};
use stackmask_compiler::parser_dwa::{ParserDwaError, ParserDwaStats};
use stackmask_compiler::pipeline::{self, CompileError, CompileOptions};
use stackmask_formats::{Grammar, Vocabulary};
use stackmask_runtime::reference::ReferenceEngine;
use stackmask_runtime::reference::ReferenceMatcher;
use stackmask_runtime::{Engine, Matcher};
use std::sync::Arc;

fn random_grammar(rng: &mut Rng) -> Grammar {
    common::random_grammar(
        rng,
        &GrammarShape {
            max_nonterminals: 4,
            lazy_percent: 15,
            // "c[ab]*" is a line comment: it ends only before "c" or " ", so where
            // neither can come next it is a greedy dead end.
            ignore_regexes: &[" ", " +", "c", " c?", "c[ab]*"],
            max_alt_len: 3,
            recursive: true,
        },
    )
}

fn random_vocab(rng: &mut Rng) -> Vocabulary {
    let mut tokens: Vec<Vec<u8>> = strings(b"abc ", 2)
        .into_iter()
        .filter(|_| rng.chance(60))
        .collect();
    for _ in 0..12 {
        let len = 3 + rng.below(3);
        tokens.push((0..len).map(|_| b"abc "[rng.below(4)]).collect());
    }
    // Two in three vocabularies are spread over a wide mask, as real ones are (a
    // one-word mask never exercises the chunk layout): before each token a run of
    // filler tokens (a byte no grammar reads, so never in a mask), so token sets span
    // several chunk windows with gaps between their chunks. Sparse: long filler runs,
    // each token once (short chunks, OR-ed). Dense: short filler runs, each token
    // repeated (other ids, the same bytes) up to 64 times, so token sets are long runs
    // of words (long chunks, which a mask is written from rather than OR-ed).
    let (fillers, copies) = match rng.below(3) {
        0 => (0, 1),
        1 => (150, 1),
        _ => (8, 64),
    };
    if fillers > 0 {
        let mut spread = Vec::new();
        for t in tokens {
            for _ in 0..rng.below(fillers) {
                let n = spread.len() as u16;
                spread.push(vec![0xff, (n >> 8) as u8, n as u8]);
            }
            for _ in 0..1 + rng.below(copies) {
                spread.push(t.clone());
            }
        }
        tokens = spread;
    }
    common::vocab_with_extras("random", tokens)
}

/// Compiles `g` for `vocab` into a loaded engine, with the reference engine of `g`
/// itself (not of the grammar the tables parse, which for a grammar with greedy dead
/// ends is its adjacency product: so the product is checked too). `None` where the
/// compiled path cannot bound ε-reductions. The flag says whether `g` has greedy
/// dead ends.
fn engines(g: &Grammar, vocab: &Vocabulary) -> Option<(Arc<Engine>, Arc<ReferenceEngine>, bool)> {
    let lexed = common::lexed(g);
    let dead_ends = stackmask_compiler::adjacency::check_dead_ends(g, &lexed.dfas).is_err();
    let compiled = pipeline::compile_parser(&lexed, 100_000).unwrap_or_else(|e| panic!("{e}"));
    let trie = stackmask_compiler::vocab::build_trie(vocab);
    let options = CompileOptions::default();
    let (parser_dwa, dwa_stats) = match pipeline::compile_mask(&compiled, vocab, &trie, &options) {
        Ok(x) => x,
        // Hidden left recursion through ε-rules: a documented limit of the
        // compiled path (the GLR runtime handles it; the templates cannot bound it).
        Err(CompileError::ParserDwa(ParserDwaError::ReductionChain(_))) => return None,
        Err(e) => panic!("{e}"),
    };
    let source = format!("{g:?}");
    let inputs = ArtifactInputs {
        grammar_source: &source,
        grammar_name: "random",
        tokenizer: "random",
        vocab,
        trie: &trie,
        parser_dwa: &parser_dwa,
        dwa_stats,
    };
    let bytes = build_artifact(&compiled, &inputs).unwrap();
    let engine = Arc::new(compiled_support::load(&bytes).unwrap());
    let reference = ReferenceEngine::new(g, lexed.dfas, vocab.clone(), trie).unwrap();
    Some((engine, Arc::new(reference), dead_ends))
}

fn masks(m: &mut Matcher, r: &mut ReferenceMatcher) -> (Vec<u32>, Vec<u32>) {
    let words = m.engine().mask_words();
    // The compiled mask starts as garbage: fill_mask must write every word (serving
    // stacks reuse one buffer).
    let (mut a, mut b) = (vec![0xa5a5_a5a5u32; words], vec![0u32; words]);
    m.fill_mask(&mut a);
    r.fill_mask(&mut b);
    (a, b)
}

/// Random walks through the mask of `e` (token sequences sampled from the mask, with
/// rollbacks and forced bytes over `alphabet`), the compiled mask compared with the
/// reference mask at every step; the number of masks compared.
#[allow(clippy::too_many_arguments)]
fn compare_walks(
    label: &str,
    g: &Grammar,
    vocab: &Vocabulary,
    e: &Arc<Engine>,
    reference: &Arc<ReferenceEngine>,
    rng: &mut Rng,
    alphabet: &[u8],
    walks: usize,
    steps: usize,
) -> usize {
    let mut checked = 0;
    let eos = vocab.eos;
    for walk in 0..walks {
        let mut m = Matcher::new(e.clone());
        // Every walk strategy against the reference: the subset walk always (the
        // default; with and without what it remembers across masks), the pair walk
        // always, and the switch from one to the other after a few pairs.
        match walk % 4 {
            1 => m.set_subset_walk_after(4),
            2 => m.set_subset_walk_after(u32::MAX),
            3 => m.set_subset_memo(false),
            _ => {}
        }
        let mut r = ReferenceMatcher::new(reference.clone());
        let mut history: Vec<String> = Vec::new();
        let mut commits = 0usize;
        for step in 0..steps {
            let (a, b) = masks(&mut m, &mut r);
            checked += 1;
            if a != b {
                let (ia, ib) = (mask_ids(&a), mask_ids(&b));
                let only_compiled: Vec<_> = ia.iter().filter(|x| !ib.contains(x)).collect();
                let only_reference: Vec<_> = ib.iter().filter(|x| !ia.contains(x)).collect();
                let bytes = |ids: &[&u32]| -> Vec<String> {
                    ids.iter()
                        .map(|&&t| String::from_utf8_lossy(vocab.token_bytes(t)).into_owned())
                        .collect()
                };
                panic!(
                    "{label} walk {walk} step {step}: masks differ\n  only compiled: {only_compiled:?} {:?}\n  only reference: {only_reference:?} {:?}\n  history: {history:?}\n  grammar: {g:#?}",
                    bytes(&only_compiled),
                    bytes(&only_reference)
                );
            }
            let allowed = mask_ids(&a);
            if allowed.is_empty() || m.is_finished() {
                break;
            }
            match rng.below(10) {
                0 if commits >= 1 => {
                    let n = 1 + rng.below(commits.min(2));
                    commits -= n;
                    m.rollback(n).unwrap();
                    r.rollback(n).unwrap();
                    history.push(format!("rollback {n}"));
                }
                1 => {
                    // Forced bytes: accepted or refused alike by both.
                    let s: Vec<u8> = (0..1 + rng.below(3))
                        .map(|_| alphabet[rng.below(alphabet.len())])
                        .collect();
                    let (x, y) = (m.commit_bytes(&s).is_ok(), r.commit_bytes(&s).is_ok());
                    assert_eq!(x, y, "{label}: commit_bytes {s:?} after {history:?}");
                    if x {
                        commits += 1;
                        history.push(format!("bytes {:?}", String::from_utf8_lossy(&s)));
                    }
                }
                _ => {
                    let t = allowed[rng.below(allowed.len())];
                    if t == eos && allowed.len() > 1 && rng.chance(70) {
                        continue;
                    }
                    m.commit(t).unwrap();
                    r.commit(t).unwrap();
                    commits += 1;
                    history.push(if t == eos {
                        "EOS".to_string()
                    } else {
                        format!("{:?}", String::from_utf8_lossy(vocab.token_bytes(t)))
                    });
                }
            }
        }
    }
    checked
}

fn run(cases: usize, steps: usize) {
    let (mut compared, mut refused, mut checked, mut dead_ends) = (0, 0, 0usize, 0);
    for case in 0..cases {
        let mut rng = Rng(0x5eed ^ (case as u64 + 11).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let g = random_grammar(&mut rng);
        let vocab = random_vocab(&mut rng);
        let Some((e, reference, has_dead_ends)) = engines(&g, &vocab) else {
            refused += 1;
            continue;
        };
        compared += 1;
        dead_ends += has_dead_ends as usize;
        checked += compare_walks(
            &format!("case {case}"),
            &g,
            &vocab,
            &e,
            &reference,
            &mut rng,
            b"abc ",
            4,
            steps,
        );
    }
    eprintln!(
        "{compared} grammars compared ({checked} masks; {dead_ends} grammars with greedy dead ends), {refused} refused (ε-reductions without a bound)"
    );
    assert!(
        compared > cases * 3 / 4,
        "too many grammars refused: {refused}"
    );
    assert!(
        dead_ends > compared / 10,
        "too few grammars with greedy dead ends: {dead_ends}"
    );
}

#[test]
fn compiled_masks_match_the_reference_on_random_grammars() {
    run(300, 25);
}

#[test]
#[ignore = "slow sweep (minutes); run with --ignored"]
fn sweep_compiled_masks_match_the_reference_on_many_random_grammars() {
    run(5_000, 25);
}

/// A compile's mask path: the Parser DWA and its statistics, or the error.
type MaskPath = Result<(stackmask_formats::ParserDwa, ParserDwaStats), CompileError>;

/// The Parser DWA of `compiled` on a trie of its own, then (after `between`, which
/// may look at what `shared` kept before) on the shared prepared trie.
fn own_and_shared(
    compiled: &pipeline::CompiledParser,
    vocab: &Vocabulary,
    shared: &stackmask_compiler::pipeline::PreparedTrie,
    between: &mut dyn FnMut(),
) -> (MaskPath, MaskPath) {
    let options = CompileOptions::default();
    let own = pipeline::compile_mask(compiled, vocab, shared.trie(), &options);
    between();
    let on_shared = pipeline::compile_mask_within(
        compiled,
        vocab,
        shared,
        &options,
        &stackmask_compiler::budget::Deadline::unlimited(),
        &|_, _| {},
    );
    (own, on_shared)
}

/// A prepared trie keeps the lexeme bodies one grammar walked for the next (as `stackmask
/// compile` of many schemas and Python's `Compiler` do): what is kept is only a
/// shortcut, so every grammar of a run over one shared trie gets the very Parser DWA it
/// gets on a trie of its own — and the run does reuse walks.
#[test]
fn grammars_sharing_a_prepared_trie_compile_as_on_their_own() {
    use stackmask_compiler::pipeline::PreparedTrie;
    let mut rng = Rng(0xb0d1_e5b0_d1e5);
    let vocab = random_vocab(&mut rng);
    let shared = PreparedTrie::new(stackmask_compiler::vocab::build_trie(&vocab));
    let (mut compared, mut walks_before) = (0usize, Vec::new());
    for case in 0..120 {
        let g = random_grammar(&mut rng);
        let lexed = common::lexed(&g);
        let compiled = pipeline::compile_parser(&lexed, 100_000).unwrap_or_else(|e| panic!("{e}"));
        let (own, on_shared) = own_and_shared(&compiled, &vocab, &shared, &mut || {
            walks_before.push(shared.kept().1)
        });
        match (own, on_shared) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.0, b.0, "case {case}: Parser DWAs differ\n{g:#?}");
                compared += 1;
            }
            // Which boundary's error comes first depends on the worker threads.
            (Err(_), Err(_)) => {}
            (a, b) => panic!(
                "case {case}: {:?} on its own, {:?} shared",
                a.err(),
                b.err()
            ),
        }
    }
    let (tables, walks) = shared.kept();
    eprintln!("{compared} grammars compared; {tables} body tables and {walks} walks kept");
    assert!(compared > 90, "{compared}");
    // Walks were reused: later grammars added fewer than they would have alone.
    assert!(tables > 3 && walks > 10, "{tables} tables, {walks} walks");
    let late_growth = walks - walks_before[60];
    assert!(late_growth < walks_before[60], "{walks_before:?}");
}

/// Large token classes (thousands of tokens inside a word lexeme) are expanded into
/// mask words once per prepared trie and kept for the next grammar (`PreparedTrie::
/// class_words`): over a vocabulary of 12,000 word tokens, grammars whose word lexemes
/// take different letters compile on a shared trie, after the others filled its store,
/// to the very Parser DWA they get on a trie of their own, and their masks are the
/// reference's at every step of random walks.
#[test]
fn large_classes_kept_by_a_shared_trie_give_each_grammar_its_own_masks() {
    use stackmask_compiler::pipeline::PreparedTrie;
    let sources = [
        r#"start: "[" W ("," W)* "]"
W: /[abcd]+/"#,
        r#"start: "[" W ("," W)* "]" | "'" W "'"
W: /[abcd1]+/"#,
        r#"start: "[" W ("," N)* "]"
W: /[abcd]+/
N: /[bcd1]+/"#,
    ];
    let grammars: Vec<Grammar> = (sources.iter().enumerate())
        .map(|(i, s)| {
            stackmask_compiler::frontend::parse_grammar(s, &format!("words{i}.lark"))
                .unwrap_or_else(|e| panic!("{e}"))
        })
        .collect();
    let mut rng = Rng(0x1a_26e5);
    let mut tokens: Vec<Vec<u8>> = strings(b"abcd1[],'", 2);
    for (count, alphabet) in [(5_000, &b"abcd"[..]), (2_500, b"abcd1"), (4_500, b"bcd1")] {
        for _ in 0..count {
            let len = 3 + rng.below(8);
            tokens.push(
                (0..len)
                    .map(|_| alphabet[rng.below(alphabet.len())])
                    .collect(),
            );
        }
    }
    tokens.sort();
    tokens.dedup();
    let vocab = common::vocab_with_extras("words", tokens.clone());
    let shared = PreparedTrie::new(stackmask_compiler::vocab::build_trie(&vocab));
    let mut kept = Vec::new();
    for round in 0..2 {
        for (i, g) in grammars.iter().enumerate() {
            let lexed = common::lexed(g);
            let compiled =
                pipeline::compile_parser(&lexed, 100_000).unwrap_or_else(|e| panic!("{e}"));
            let (own, on_shared) = own_and_shared(&compiled, &vocab, &shared, &mut || {});
            let own = own.unwrap_or_else(|e| panic!("{e}"));
            let on_shared = on_shared.unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                own.0, on_shared.0,
                "round {round}, grammar {i}: Parser DWAs differ"
            );
            kept.push(shared.class_words_kept());
        }
    }
    // Every grammar has large classes of its own, and the second round adds none.
    assert!(
        kept[0] > 0 && kept[0] < kept[1] && kept[1] < kept[2],
        "{kept:?}"
    );
    assert_eq!(kept[2], kept[5], "{kept:?}");
    for (i, g) in grammars.iter().enumerate() {
        assert_masks_match_on("words", i, g, tokens.clone(), &mut rng, b"abcd1[],'", 4, 30);
    }
}

/// Masks of `g` over vocabulary `name` of `tokens` (sorted and deduplicated here,
/// special tokens added) against the reference's on `walks` random walks of up to
/// `steps` steps ([`compare_walks`]); more than 100 masks must be compared.
#[allow(clippy::too_many_arguments)]
fn assert_masks_match_on(
    name: &str,
    case: usize,
    g: &Grammar,
    mut tokens: Vec<Vec<u8>>,
    rng: &mut Rng,
    alphabet: &[u8],
    walks: usize,
    steps: usize,
) {
    tokens.sort();
    tokens.dedup();
    let vocab = common::vocab_with_extras(name, tokens);
    let (e, reference, _) = engines(g, &vocab).expect("no ε-reductions here");
    let label = format!("{name} case {case}");
    let checked = compare_walks(
        &label, g, &vocab, &e, &reference, rng, alphabet, walks, steps,
    );
    assert!(checked > 100, "{label}: only {checked} masks compared");
}

/// Lexemes counted past the depth a lexeme body keeps (`BodyTable::MAX_DEPTH`: 48
/// bytes), with tokens as long and longer: the counts above the depth share one cut
/// body, and a token that reaches the cut is walked on from the state before the cut
/// (the body walk hands it over as it does a lexeme's end). Also two
/// lexemes in progress together, a fixed-length chunk and a quoted tail (a chunked
/// string's shape), walked as one configuration body. Masks against the reference at
/// every step of random walks.
#[test]
fn counted_lexemes_and_chunk_pairs_match_the_reference() {
    let source = r#"
start: item ("," item)*
item: NAME | "\"" CHUNK* TAIL
NAME: /'[ab]{1,150}'/
CHUNK: /[ab]{8}/
TAIL: /[ab]{0,7}"/
"#;
    let g = stackmask_compiler::frontend::parse_grammar(source, "counted.lark")
        .unwrap_or_else(|e| panic!("{e}"));
    let mut rng = Rng(0xc0_47ed);
    for case in 0..4 {
        let mut tokens: Vec<Vec<u8>> = strings(b"ab',\"", 2);
        for _ in 0..40 {
            let len = 1 + rng.below(12);
            tokens.push((0..len).map(|_| b"aab',\""[rng.below(6)]).collect());
        }
        // Around and past the body depth: runs of 47–160 name characters, some closed.
        for len in [47, 48, 49, 65, 100, 150, 160] {
            let run: Vec<u8> = (0..len).map(|_| b"ab"[rng.below(2)]).collect();
            tokens.push(run.clone());
            tokens.push([b"'".as_slice(), &run].concat());
            tokens.push([run.as_slice(), b"'"].concat());
        }
        assert_masks_match_on("counted", case, &g, tokens, &mut rng, b"ab'\",", 6, 60);
    }
}

/// A wide counted lexeme (any character but the brackets, up to 150 of them, so a
/// state per count and per UTF-8 byte in progress: more than a lexeme body's usual
/// 64 states within its depth, `BodyTable::MAX_COUNTED_STATES` instead), with tokens
/// as long as the body's depth and longer, some with two-byte characters: the counts
/// above the depth share one cut body, and every token that reaches the cut is walked
/// on from the state before it. Masks against the reference at every step of random
/// walks.
#[test]
fn wide_counted_lexemes_match_the_reference() {
    let source = r##"
start: item ("," item)*
item: WIDE | "#" WIDE
WIDE: /<[^<>]{1,150}>/
"##;
    let g = stackmask_compiler::frontend::parse_grammar(source, "wide.lark")
        .unwrap_or_else(|e| panic!("{e}"));
    let mut rng = Rng(0x01de_c0de);
    let pieces: [&[u8]; 5] = [b"a", b"b", b",", b"#", "\u{e9}".as_bytes()];
    for case in 0..3 {
        let mut tokens: Vec<Vec<u8>> = strings(b"ab<>,#", 2);
        for _ in 0..60 {
            let len = 1 + rng.below(10);
            tokens.push((0..len).map(|_| b"aab<>,#"[rng.below(7)]).collect());
        }
        // Around and past the body depth: runs of 40–160 bytes, some opened or closed.
        for len in [40, 47, 48, 49, 60, 100, 150, 160] {
            let mut run: Vec<u8> = Vec::new();
            while run.len() < len {
                run.extend_from_slice(pieces[rng.below(pieces.len())]);
            }
            tokens.push([b"<".as_slice(), &run].concat());
            tokens.push([run.as_slice(), b">"].concat());
            tokens.push(run);
        }
        tokens.push("\u{e9}".as_bytes().to_vec());
        assert_masks_match_on("wide", case, &g, tokens, &mut rng, b"ab<>,#", 6, 60);
    }
}

/// A chunked string's shape over a vocabulary large enough that, where a chunk ends
/// inside a token, the rest of the token's subtree is walked as a set body (the
/// chunk and the tail started together, stepped as one: `SetBody` in the compiler's
/// `terminal_dwa`, tried on subtrees of 128 trie nodes and more). (Trie nodes here
/// have at most 6 children: the wide-node shortcut, `WideChildren`, needs 16 and is
/// exercised by the real vocabularies of `compiled_matcher`.)
/// Where two chunks were read only the tail may follow, so the final checks of a
/// token that ends inside the set body matter. Masks against the reference at every
/// step of random walks.
#[test]
fn chunks_ending_inside_long_tokens_match_the_reference() {
    let source = r#"
start: item ("," item)*
item: NAME | "\"" CHUNK? CHUNK? TAIL | "," "\"" CHUNK* TAIL
NAME: /'[ab]{1,20}'/
CHUNK: /[ab]{8}/
TAIL: /[abc]{0,7}"/
"#;
    let g = stackmask_compiler::frontend::parse_grammar(source, "chunks.lark")
        .unwrap_or_else(|e| panic!("{e}"));
    let mut rng = Rng(0x5e7_b0d1);
    for case in 0..2 {
        // Every string of up to 4 bytes over the 6-byte alphabet (1,554 tokens), and
        // longer random ones, mostly chunk bytes.
        let mut tokens: Vec<Vec<u8>> = strings(b"abc',\"", 4);
        for _ in 0..2500 {
            let len = 5 + rng.below(12);
            tokens.push((0..len).map(|_| b"aaabbb\"c,"[rng.below(9)]).collect());
        }
        assert_masks_match_on("chunks", case, &g, tokens, &mut rng, b"abc'\",", 6, 40);
    }
}

/// Narrow lexemes with many states (260 digits, then a letter: past the states a
/// narrow lexeme's body is made for, so the plain walk runs) over a vocabulary whose
/// trie nodes have many children (every 1- and 2-byte string over 23 bytes, and longer
/// digit runs): inside such a lexeme the walk enters only the digit children of a wide
/// node (`WideChildren` in the compiler's `wide_children`; a live-byte set one byte
/// short per run fails here). Masks against the reference at every step of random
/// walks.
#[test]
fn narrow_lexemes_under_wide_trie_nodes_match_the_reference() {
    let source = r#"
start: item ("," item)*
item: LOW | HIGH | WORD
LOW: /[0-5]{260}a/
HIGH: /[3-9]{260}b/
WORD: /[a-f]+/
"#;
    let g = stackmask_compiler::frontend::parse_grammar(source, "wide.lark")
        .unwrap_or_else(|e| panic!("{e}"));
    let mut rng = Rng(0x00d1_617e);
    for case in 0..2 {
        let alphabet = b"0123456789abcdefxyz,-:;";
        let mut tokens: Vec<Vec<u8>> = strings(alphabet, 2);
        for _ in 0..1500 {
            let len = 3 + rng.below(5);
            tokens.push(
                (0..len)
                    .map(|_| b"0123456789012345-:,ab"[rng.below(21)])
                    .collect(),
            );
        }
        assert_masks_match_on("wide", case, &g, tokens, &mut rng, alphabet, 8, 40);
    }
}
