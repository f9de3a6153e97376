//! The GLR parser against the reference engine and brute force.
//!
//! Random finite grammars (as in `reference_bruteforce.rs`, but with recursion
//! allowed here, since the reference is the oracle) and the shipped grammars with
//! their samples: every prefix, random byte mutations, acceptance, and pop/push
//! round trips must agree byte for byte.

mod common;

use common::{strings, workspace, GrammarShape, Rng};
use stackmask_compiler::pipeline::{self, LexedGrammar};
use stackmask_formats::{Grammar, TokenKind, Vocabulary};
use stackmask_runtime::glr::{GlrRecognizer, GlrState};
use stackmask_runtime::reference::ReferenceEngine;
use stackmask_runtime::ByteRecognizer;

fn random_grammar(rng: &mut Rng) -> Grammar {
    common::random_grammar(
        rng,
        &GrammarShape {
            max_nonterminals: 4,
            lazy_percent: 10,
            ignore_regexes: &["c", "c+", " ", "c[ab]*"],
            max_alt_len: 3,
            recursive: true,
        },
    )
}

fn tiny_vocab() -> Vocabulary {
    let entries = vec![
        Some((b"a".to_vec(), TokenKind::Normal)),
        Some((b"<eos>".to_vec(), TokenKind::Special)),
    ];
    Vocabulary::from_entries("tiny", entries, 1)
}

/// Pushes `input` byte by byte into both engines, comparing acceptance of each byte
/// and `is_accepting` after each; returns how many bytes were accepted.
fn compare(
    reference: &mut dyn ByteRecognizer,
    glr: &mut dyn ByteRecognizer,
    input: &[u8],
    what: &dyn Fn() -> String,
) -> usize {
    let mut n = 0;
    assert_eq!(
        glr.is_accepting(),
        reference.is_accepting(),
        "acceptance of the empty input; {}",
        what()
    );
    for &b in input {
        let r = reference.push_byte(b);
        let g = glr.push_byte(b);
        assert_eq!(
            g,
            r,
            "byte {n} ({:?}) of {:?}; {}",
            b as char,
            String::from_utf8_lossy(input),
            what()
        );
        if !r {
            break;
        }
        n += 1;
        assert_eq!(
            glr.is_accepting(),
            reference.is_accepting(),
            "acceptance after {:?}; {}",
            String::from_utf8_lossy(&input[..n]),
            what()
        );
    }
    n
}

/// Pushes `input` into the reference and into `state` (reset first), which forgets
/// its history at a random point after every byte (`forget_before_now`: the arenas
/// are rebuilt each time) and now and then pops what it may still undo and pushes it
/// again: every byte's acceptance and every `is_accepting` must agree. Leaves the
/// reference where it was.
fn compare_forgetting(
    reference: &mut dyn ByteRecognizer,
    tables: &stackmask_formats::TablesRef<'_>,
    state: &mut GlrState,
    input: &[u8],
    rng: &mut Rng,
    what: &dyn Fn() -> String,
) {
    state.reset(tables);
    let start = reference.bytes_consumed();
    let mut n = 0;
    while n < input.len() {
        let b = input[n];
        let r = reference.push_byte(b);
        assert_eq!(
            state.push_byte(tables, b),
            r,
            "byte {n} of {:?} with history forgotten; {}",
            String::from_utf8_lossy(input),
            what()
        );
        if !r {
            break;
        }
        n += 1;
        let at = |n: usize| format!("after {:?}", String::from_utf8_lossy(&input[..n]));
        assert_eq!(
            state.is_accepting(tables),
            reference.is_accepting(),
            "acceptance {} with history forgotten; {}",
            at(n),
            what()
        );
        let consumed = state.bytes_consumed();
        state.forget_before_now(consumed - rng.below(state.bytes_poppable() + 1));
        if rng.below(3) == 0 && state.bytes_poppable() > 0 {
            let back = 1 + rng.below(state.bytes_poppable().min(2));
            state.pop_bytes(back);
            reference.pop_bytes(back);
            n -= back;
            assert_eq!(
                state.is_accepting(tables),
                reference.is_accepting(),
                "acceptance {} after popping {back} with history forgotten; {}",
                at(n),
                what()
            );
        }
    }
    reference.pop_bytes(reference.bytes_consumed() - start);
}

#[test]
fn glr_matches_reference_on_random_grammars() {
    let cases = std::env::var("STACKMASK_GLR_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400);
    random_grammars(cases);
}

/// The slow sweep, run before a release: `cargo test -p stackmask-tests --test
/// glr_differential -- --ignored`.
#[test]
#[ignore = "slow sweep (about a minute); run with --ignored"]
fn sweep_glr_matches_reference_on_many_random_grammars() {
    random_grammars(20_000);
}

fn random_grammars(cases: usize) {
    let (mut compared, mut dead_ends) = (0, 0);
    for case in 0..cases {
        let mut rng = Rng(0xdead_beef ^ (case as u64 + 7).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let g = random_grammar(&mut rng);
        let lexed = common::lexed(&g);
        let dfas = lexed.dfas.clone();
        // Grammars with greedy dead ends run on their adjacency product; the
        // reference below runs on the grammar itself.
        if stackmask_compiler::adjacency::check_dead_ends(&g, &dfas).is_err() {
            dead_ends += 1;
        }
        let compiled = pipeline::compile_parser(&lexed, 100_000)
            .unwrap_or_else(|e| panic!("case {case}: {e}"));
        let tables = compiled.tables.view();
        tables.validate().unwrap();
        let vocab = tiny_vocab();
        let trie = stackmask_compiler::vocab::build_trie(&vocab);
        let engine = ReferenceEngine::new(&g, dfas, vocab, trie).unwrap();
        let mut reference = engine.recognizer();
        let mut state = GlrState::new(&tables);
        let mut forgetting = GlrState::new(&tables);
        let what = || format!("case {case}: {g:#?}");
        for w in strings(b"abc ", 5) {
            let mut glr = GlrRecognizer {
                tables,
                state: &mut state,
            };
            let n = compare(&mut reference, &mut glr, &w, &what);
            reference.pop_bytes(n);
            glr.pop_bytes(n);
            assert_eq!(glr.bytes_consumed(), 0);
            compare_forgetting(
                &mut reference,
                &tables,
                &mut forgetting,
                &w,
                &mut rng,
                &what,
            );
        }
        compared += 1;
    }
    eprintln!("{compared} grammars compared, {dead_ends} of them with greedy dead ends");
    assert_eq!(compared, cases);
    assert!(
        dead_ends > 0,
        "no grammar with greedy dead ends among {cases}"
    );
}

fn lexed_shipped(name: &str) -> LexedGrammar {
    pipeline::lex_grammar_file(&workspace().join("grammars").join(format!("{name}.lark"))).unwrap()
}

fn samples(name: &str) -> Vec<(String, Vec<u8>)> {
    let dir = workspace().join("grammars/samples").join(name);
    let mut out = Vec::new();
    for sub in [dir.clone(), dir.join("invalid")] {
        let Ok(entries) = std::fs::read_dir(&sub) else {
            continue;
        };
        for e in entries.flatten() {
            if e.path().is_file() {
                out.push((
                    e.path().display().to_string(),
                    std::fs::read(e.path()).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn glr_matches_reference_on_shipped_grammars() {
    for name in ["json", "expr", "sql", "c", "toml"] {
        let lexed = lexed_shipped(name);
        let compiled =
            pipeline::compile_parser(&lexed, 200_000).unwrap_or_else(|e| panic!("{name}: {e}"));
        let tables = compiled.tables.view();
        tables.validate().unwrap();
        let vocab = tiny_vocab();
        let trie = stackmask_compiler::vocab::build_trie(&vocab);
        let engine = ReferenceEngine::new(&lexed.grammar, lexed.dfas.clone(), vocab, trie).unwrap();
        let mut rng = Rng(0x5eed ^ name.len() as u64);
        for (path, doc) in samples(name) {
            let mut reference = engine.recognizer();
            let mut state = GlrState::new(&tables);
            let mut glr = GlrRecognizer {
                tables,
                state: &mut state,
            };
            let what = || path.to_string();
            let mut forgetting = GlrState::new(&tables);
            compare_forgetting(
                &mut reference,
                &tables,
                &mut forgetting,
                &doc,
                &mut rng,
                &what,
            );
            let n = compare(&mut reference, &mut glr, &doc, &what);
            // Mutations: from random points, pop back and push a mutated tail.
            for _ in 0..30 {
                if n == 0 {
                    break;
                }
                let at = rng.below(n);
                let consumed = reference.bytes_consumed();
                if consumed > at {
                    reference.pop_bytes(consumed - at);
                    glr.pop_bytes(consumed - at);
                } else {
                    assert!(
                        reference.push_bytes(&doc[consumed..at])
                            && glr.push_bytes(&doc[consumed..at]),
                        "{path}: re-push"
                    );
                }
                let mut tail: Vec<u8> = doc[at..doc.len().min(at + 40)].to_vec();
                for _ in 0..1 + rng.below(3) {
                    if tail.is_empty() {
                        break;
                    }
                    let i = rng.below(tail.len());
                    match rng.below(3) {
                        0 => {
                            tail[i] = b" \n{}[](),;:\"'+-*/=<>!&|0123456789abcxyzSELECTselectint"
                                [rng.below(52)]
                        }
                        1 => {
                            tail.remove(i);
                        }
                        _ => tail.insert(i, doc[rng.below(doc.len())]),
                    }
                }
                let pushed = compare(&mut reference, &mut glr, &tail, &what);
                reference.pop_bytes(pushed);
                glr.pop_bytes(pushed);
            }
        }
    }
}

/// Reductions on a highly ambiguous stack: `s` splits `a^n` every way into 2 to 8
/// parts, so the number of GSS paths a reduction of `s s s s s s s s` follows grows
/// exponentially with n. Enumerating them one by one took over 20 s at 36 bytes (and
/// ~10x more per 6 bytes after that); level by level over deduplicated nodes it is
/// milliseconds. The guard turns a regression into a failure instead of a stuck run.
#[test]
fn reductions_on_a_highly_ambiguous_stack_stay_polynomial() {
    const N: usize = 48;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let alts: Vec<String> = (2..=8).map(|k| vec!["s"; k].join(" ")).collect();
        let source = format!("start: s\ns: {} | \"a\"\n", alts.join(" | "));
        let lexed = pipeline::lex_grammar_source(&source, "ambiguous.lark").unwrap();
        let compiled = pipeline::compile_parser(&lexed, 100_000).unwrap();
        assert!(
            !compiled.automaton.conflicts.is_empty(),
            "the grammar forks"
        );
        let tables = compiled.tables.view();
        let vocab = tiny_vocab();
        let trie = stackmask_compiler::vocab::build_trie(&vocab);
        let engine = ReferenceEngine::new(&lexed.grammar, lexed.dfas.clone(), vocab, trie).unwrap();
        let mut reference = engine.recognizer();
        let mut state = GlrState::new(&tables);
        let mut glr = GlrRecognizer {
            tables,
            state: &mut state,
        };
        let input = [b'a'; N];
        let n = compare(&mut reference, &mut glr, &input, &|| source.clone());
        let _ = tx.send((n, glr.is_accepting()));
    });
    let (n, accepting) = match rx.recv_timeout(std::time::Duration::from_secs(60)) {
        Ok(r) => r,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("{N} bytes of a highly ambiguous grammar took over 60 s")
        }
        Err(e) => panic!("the parsing thread failed (see its panic above): {e}"),
    };
    assert_eq!(n, N);
    assert!(accepting);
}

/// `pop_bytes` past the start of input is a caller bug: it panics with a message
/// naming both counts (documented under `# Panics`), not with an arithmetic underflow.
#[test]
fn popping_more_bytes_than_consumed_panics_with_a_message() {
    let lexed = pipeline::lex_grammar_source("start: \"a\"\n", "a.lark").unwrap();
    let compiled = pipeline::compile_parser(&lexed, 100).unwrap();
    let tables = compiled.tables.view();
    let mut state = GlrState::new(&tables);
    assert!(state.push_byte(&tables, b'a'));
    assert!(state.is_accepting(&tables));
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| state.pop_bytes(2)))
        .expect_err("popping 2 of 1 bytes panics");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert_eq!(message, "pop_bytes(2) with only 1 bytes consumed");
    // The reference recognizer keeps the same contract.
    let vocab = tiny_vocab();
    let trie = stackmask_compiler::vocab::build_trie(&vocab);
    let engine = ReferenceEngine::new(&lexed.grammar, lexed.dfas.clone(), vocab, trie).unwrap();
    let mut reference = engine.recognizer();
    assert!(reference.push_byte(b'a'));
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| reference.pop_bytes(2)))
        .expect_err("popping 2 of 1 bytes panics");
    assert_eq!(
        panic.downcast_ref::<String>().map(String::as_str),
        Some("pop_bytes(2) with only 1 bytes consumed")
    );
}

/// Issue 11 (5): on `start: "a" start | "a"` (unambiguous, right recursive) the reduce
/// chain at the end merged every link into one GSS node, and each link re-walked and
/// re-scanned all the node's edges: quadratic (40,000 bytes: 8 s). Deterministic
/// stretches must cost O(1) amortized per byte: doubling the input may not much more
/// than double the work (GSS edges looked at, not time).
#[test]
fn right_recursion_costs_linear_work() {
    for grammar in [
        "start: \"a\" start | \"a\"\n",
        "start: \"(\" start \")\" | \"x\"\n",
        "start: item start | item\nitem: \"a\" | \"b\" \"c\"\n",
    ] {
        let lexed = pipeline::lex_grammar_source(grammar, "r.lark").unwrap();
        let compiled = pipeline::compile_parser(&lexed, 1000).unwrap();
        let tables = compiled.tables.view();
        let work = |n: usize| {
            let text: Vec<u8> = match grammar.as_bytes()[8] {
                b'(' => [vec![b'('; n], vec![b'x'], vec![b')'; n]].concat(),
                b'a' => vec![b'a'; n],
                _ => b"abc".repeat(n / 2),
            };
            let mut state = GlrState::new(&tables);
            for &b in &text {
                assert!(state.push_byte(&tables, b), "{grammar}");
            }
            assert!(state.is_accepting(&tables), "{grammar}");
            state.work()
        };
        let (small, large) = (work(2000), work(4000));
        assert!(
            large <= small * 5 / 2,
            "{grammar}: work {small} for 2000, {large} for 4000: not linear"
        );
    }
}

/// Issue 8: `++x;` also lexes as `+ +x;` (each terminal is greedy on its own), and the
/// two readings rejoin under a chain of precedence levels one level per Farshi round.
/// A round that revisited every node of the step made that step quadratic in the
/// chain's depth (C's 16 levels: 415 units and 7 µs for one `;`); rounds visit only
/// the nodes that can reach a fresh edge. Four times the depth may cost not much more
/// than four times the extra work of the `++` statement (the quadratic rounds took 12
/// times; these take about 2).
#[test]
fn lexings_rejoining_under_a_deep_chain_cost_linear_work() {
    let grammar = |depth: usize| {
        let mut g = String::from("start: stmt+\nstmt: e0 \";\"\n");
        for k in 0..depth {
            g += &format!("?e{k}: e{k} \"|{k}\" e{next} | e{next}\n", next = k + 1);
        }
        g += &format!("?e{depth}: post | \"++\" e{depth} | uop e{depth}\n");
        g + "uop: \"+\" | \"-\"\n?post: IDENT | post \"++\"\nIDENT: /[a-z]+/\n%ignore \" \"\n"
    };
    let extra = |depth: usize| {
        let lexed = pipeline::lex_grammar_source(&grammar(depth), "chain.lark").unwrap();
        let compiled = pipeline::compile_parser(&lexed, 100_000).unwrap();
        let tables = compiled.tables.view();
        let work = |text: &[u8]| {
            let mut state = GlrState::new(&tables);
            for &b in text {
                assert!(state.push_byte(&tables, b), "depth {depth}");
            }
            state.work()
        };
        work(b"x; ++x; ") - work(b"x; x; ")
    };
    let (shallow, deep) = (extra(16), extra(64));
    assert!(
        deep <= 6 * shallow,
        "the `++` statement's extra work: {shallow} under 16 levels, {deep} under 64"
    );
}

/// Issue 11 (6): a parse that forgets what it will never undo holds memory for its
/// nesting depth, not its length. A JSON array ten times longer may not leave a
/// larger GSS behind, nor more than a rebuild's worth of undoable bytes (a window of
/// 0 bytes, as `validate` uses; GSS nodes counted, not bytes of memory), and nesting
/// still costs what it must.
#[test]
fn forgetting_keeps_memory_to_the_nesting_depth() {
    let lexed = lexed_shipped("json");
    let compiled = pipeline::compile_parser(&lexed, 200_000).unwrap();
    let tables = compiled.tables.view();
    let kept = |text: &[u8]| {
        let mut state = GlrState::new(&tables);
        let mut peak = 0;
        for &b in text {
            assert!(state.push_byte(&tables, b));
            state.forget_before(state.bytes_consumed());
            peak = peak.max(state.gss_nodes());
        }
        assert!(state.is_accepting(&tables));
        (peak, state.bytes_poppable())
    };
    let flat = |n: usize| [b"[".to_vec(), b"1, \"ab\", ".repeat(n), b"1]".to_vec()].concat();
    let (short, long) = (kept(&flat(2_000)), kept(&flat(20_000)));
    assert!(
        long.0 <= short.0 + 16 && long.1 <= 4096,
        "(peak GSS nodes, undoable bytes): {short:?} for 2,000 elements, {long:?} for 20,000"
    );
    let nested = |n: usize| [b"[".repeat(n), b"1".to_vec(), b"]".repeat(n)].concat();
    let (shallow, deep) = (kept(&nested(1_000)), kept(&nested(4_000)));
    assert!(
        deep.0 >= 3 * shallow.0,
        "nesting 4x deeper keeps {deep:?}, 1,000 deep {shallow:?}: a stack was dropped"
    );
}

/// Issue 11 (5): the work budget bounds a whole parse linearly in its length. On a
/// long ambiguous sum, whose work per byte grows with its length, the work done up to
/// and including the refused byte never exceeds the burst plus the per-byte share of
/// the bytes offered; the refusal names the budget, not the per-byte limit, and leaves
/// the state as it was; a deterministic grammar's long input never comes near it.
#[test]
fn a_parse_past_its_work_budget_is_refused_and_named() {
    use stackmask_runtime::glr::WorkLimit;
    let lexed = lexed_shipped("expr");
    let compiled = pipeline::compile_parser(&lexed, 200_000).unwrap();
    let tables = compiled.tables.view();
    let (per_byte, burst) = (1_000u64, 3_000_000u64);
    let mut state = GlrState::new(&tables);
    state.set_work_budget(per_byte, burst);
    let text = b"1+".repeat(5_000);
    let mut refused_at = None;
    // Acceptance tests are bounded one by one (the per-byte limit), not by the budget.
    let mut accept_work = 0;
    for (i, &b) in text.iter().enumerate() {
        let before = state.work();
        let accepting = state.is_accepting(&tables);
        accept_work += state.work() - before;
        let pushed = state.push_byte(&tables, b);
        let offered = i as u64 + 1;
        // A step stops at most one GSS node's edges past its limit.
        let pushes = state.work() - accept_work;
        assert!(
            pushes <= burst + per_byte * offered + 100_000,
            "byte {i}: work {pushes} past the budget"
        );
        if !pushed {
            assert_eq!(
                state.work_limit_hit(),
                Some(WorkLimit::Budget { per_byte, burst })
            );
            assert_eq!(
                state.bytes_consumed(),
                i,
                "the refused byte changed the state"
            );
            assert_eq!(state.is_accepting(&tables), accepting);
            refused_at = Some(i);
            break;
        }
        assert_eq!(state.work_limit_hit(), None);
    }
    let i = refused_at.expect("5,000 terms of an ambiguous sum stay within the budget");
    assert!(
        i > 100,
        "refused at byte {i}: the budget bites on short sums"
    );
    // A deterministic grammar: 200,000 bytes at the default budget, far from it.
    let lexed = pipeline::lex_grammar_source("start: \"a\" start | \"a\"\n", "r.lark").unwrap();
    let compiled = pipeline::compile_parser(&lexed, 1000).unwrap();
    let tables = compiled.tables.view();
    let mut state = GlrState::new(&tables);
    for _ in 0..200_000 {
        assert!(state.push_byte(&tables, b'a'));
        state.forget_before(state.bytes_consumed());
    }
    assert!(state.is_accepting(&tables));
}

/// Issue 11 (5): an ambiguous grammar's byte can need millions of GSS edge visits
/// (`expr.lark`'s `e: e "+" e` on a long sum): past the per-byte work limit the byte
/// is refused as over the limit — named, distinct from a byte the grammar refuses —
/// and the state is unchanged, so a larger limit accepts the same byte.
#[test]
fn a_byte_past_the_work_limit_is_refused_and_named() {
    let lexed = lexed_shipped("expr");
    let compiled = pipeline::compile_parser(&lexed, 200_000).unwrap();
    let tables = compiled.tables.view();
    let text = b"1+1+".repeat(400);
    let mut state = GlrState::new(&tables);
    state.set_max_step_work(20_000);
    let mut refused_at = None;
    for (i, &b) in text.iter().enumerate() {
        let accepting = state.is_accepting(&tables);
        if !state.push_byte(&tables, b) {
            refused_at = Some(i);
            assert!(state.over_work_limit(), "byte {i} refused for its text");
            assert_eq!(
                state.bytes_consumed(),
                i,
                "the refused byte changed the state"
            );
            assert_eq!(state.is_accepting(&tables), accepting);
            state.set_max_step_work(u64::MAX);
            state.set_work_budget(u64::MAX, u64::MAX);
            assert!(state.push_byte(&tables, b), "byte {i} with no limit");
            assert!(!state.over_work_limit());
            break;
        }
        assert!(!state.over_work_limit());
    }
    let i = refused_at.expect("800 terms of an ambiguous sum stay under 20,000 edges a byte");
    assert!(i > 10, "refused at byte {i}: the limit bites on short sums");
    // A byte the grammar refuses is not over the limit.
    assert!(!state.push_byte(&tables, b')'));
    assert!(!state.over_work_limit());
}
