//! Compile-stage facts a grammar author relies on: which shipped grammars fork where,
//! that limits end in errors naming the limit, and that the engine can be shared.

mod common;

use common::workspace;
use stackmask_compiler::budget::{BudgetError, CancelFlag, CompileBudget, Deadline, Stage};
use stackmask_compiler::lexer_configs::{build_lexer_configs, ConfigLimitError};
use stackmask_compiler::lr::{self, build_lr, LrError};
use stackmask_compiler::pipeline::{self, CompileError, LexedGrammar};
use stackmask_formats::Action;
use stackmask_runtime::{Engine, Matcher};
use std::time::Duration;

fn lexed(name: &str) -> pipeline::LexedGrammar {
    pipeline::lex_grammar_file(&workspace().join("grammars").join(name)).unwrap()
}

#[test]
fn json_is_conflict_free_and_c_forks_only_on_dangling_else() {
    let json = pipeline::compile_parser(&lexed("json.lark"), 100_000).unwrap();
    assert!(
        json.automaton.conflicts.is_empty(),
        "{:?}",
        json.automaton.conflicts
    );

    let c = lexed("c.lark");
    let compiled = pipeline::compile_parser(&c, 100_000).unwrap();
    assert!(!compiled.automaton.conflicts.is_empty());
    for conflict in &compiled.automaton.conflicts {
        assert_eq!(
            c.grammar.terminals[conflict.terminal as usize].name,
            "\"else\""
        );
        assert!(conflict
            .actions
            .iter()
            .any(|a| matches!(a, Action::Shift(_))));
        assert!(conflict
            .actions
            .iter()
            .any(|a| matches!(a, Action::Reduce(_))));
        assert!(
            conflict.items.iter().any(|i| i.contains("• \"else\"")),
            "{:?}",
            conflict.items
        );
    }

    let expr = pipeline::compile_parser(&lexed("expr.lark"), 100_000).unwrap();
    assert!(
        expr.automaton.conflicts.len() >= 4,
        "the ambiguous expression grammar forks"
    );
}

#[test]
fn lr_state_limit_is_a_named_error() {
    let c = lexed("c.lark");
    let err = build_lr(&c.grammar, 50).unwrap_err();
    assert_eq!(err, LrError::TooManyStates { limit: 50 });
    assert!(err.to_string().contains("max_lr_states"), "{err}");
    assert!(matches!(
        pipeline::compile_parser(&c, 50),
        Err(CompileError::Lr(_))
    ));
}

#[test]
fn lr_state_limits_beyond_the_action_encoding_are_refused() {
    // Shift actions keep the target state in 30 bits: a limit above that could let
    // the builder write codes that lose their top bits, so it is refused up front.
    let json = lexed("json.lark");
    let over = lr::MAX_ENCODABLE_STATES + 1;
    let err = build_lr(&json.grammar, over).unwrap_err();
    assert_eq!(
        err,
        LrError::EncodingLimit {
            what: "max_lr_states",
            value: over as u64,
            limit: 1 << 30,
        }
    );
    assert!(err.to_string().contains("max_lr_states"), "{err}");
    assert!(matches!(
        pipeline::compile_parser(&json, over),
        Err(CompileError::Lr(_))
    ));
    assert!(build_lr(&json.grammar, lr::MAX_ENCODABLE_STATES).is_ok());
}

#[test]
fn lexer_configuration_limit_is_a_named_error() {
    let sql = pipeline::compile_parser(&lexed("sql.lark"), 100_000).unwrap();
    let unlimited = Deadline::unlimited();
    let err = build_lexer_configs::<CompileError>(&sql.tables, 10, &unlimited).unwrap_err();
    assert!(
        matches!(err, CompileError::Configs(ConfigLimitError { limit: 10 })),
        "{err}"
    );
    assert!(err.to_string().contains("max_lexer_configs"), "{err}");
    assert!(build_lexer_configs::<CompileError>(&sql.tables, 1 << 20, &unlimited).is_ok());
}

#[test]
fn greedy_dead_ends_are_found_with_both_terminals_named() {
    use stackmask_compiler::adjacency::check_dead_ends;
    let src = "start: A B\nA: /a+/\nB: \"a\"\n";
    let l = pipeline::lex_grammar_source(src, "dead.lark").unwrap();
    let e = check_dead_ends(&l.grammar, &l.dfas).unwrap_err();
    assert_eq!((e.after.as_str(), e.before.as_str()), ("A", "B"));
    // Both terminals located, as every grammar error is.
    assert!(
        e.to_string().starts_with("dead.lark:2:1: after terminal A"),
        "{e}"
    );
    assert!(
        e.to_string().contains("B (defined at dead.lark:3:1;"),
        "{e}"
    );
    // An ignore terminal that a rule requires can be blocked too (found in review):
    // A's every ending is extended by "\n", so NL can never follow it.
    let src = "start: A NL\nA: /a\\n*/\nNL: \"\\n\"\n%ignore NL\n";
    let l = pipeline::lex_grammar_source(src, "nl.lark").unwrap();
    let e = check_dead_ends(&l.grammar, &l.dfas).unwrap_err();
    assert_eq!((e.after.as_str(), e.before.as_str()), ("A", "NL"));
    // Making A lazy removes the dead end ("a" then "a" lexes as A, B).
    let l =
        pipeline::lex_grammar_source("start: A B\nA[lazy]: /a+/\nB: \"a\"\n", "lazy.lark").unwrap();
    assert!(check_dead_ends(&l.grammar, &l.dfas).is_ok());
}

#[test]
fn grammars_with_greedy_dead_ends_compile_to_exact_tables() {
    use stackmask_runtime::glr::{GlrRecognizer, GlrState};
    use stackmask_runtime::ByteRecognizer;
    let accepts = |src: &str, input: &[u8]| -> (bool, bool) {
        let l = pipeline::lex_grammar_source(src, "g.lark").unwrap();
        let compiled = pipeline::compile_parser(&l, 1000).unwrap();
        let tables = compiled.tables.view();
        tables.validate().unwrap();
        let mut state = GlrState::new(&tables);
        let mut r = GlrRecognizer {
            tables,
            state: &mut state,
        };
        let prefix = input.iter().all(|&b| r.push_byte(b));
        (prefix, prefix && r.is_accepting())
    };
    // No sentence at all: "a" is alive byte by byte but can never be followed by B.
    assert_eq!(
        accepts("start: A B\nA: /a+/\nB: \"a\"\n", b"a"),
        (false, false)
    );
    // The lexeme of A must end where B can start.
    let src = "start: A B\nA: /a+(b|c+)/\nB: \"c\"\n";
    assert_eq!(accepts(src, b"aab"), (true, false));
    assert_eq!(accepts(src, b"aabc"), (true, true));
    assert_eq!(
        accepts(src, b"aac"),
        (false, false),
        "a+c+ can only end before a non-c"
    );
    // A comment ends only before a newline, which cannot come after a key.
    let src = "start: K \"=\" V NL\nK: /[a-z]+/\nV: /[0-9]+/\nNL: \"\\n\"\n%ignore \" \"\n%ignore /#[^\\n]*/\n";
    assert_eq!(accepts(src, b"ab #"), (false, false));
    assert_eq!(accepts(src, b"ab = 1 # c\n"), (true, true));
}

#[test]
fn dead_end_examples_are_the_shortest_input_reaching_the_bad_state() {
    // Every prefix of "xxxxx" can still end as "xxxxxb", which "a" may follow; only
    // after "xxxxxa" does every ending stay extendable by "a".
    let src = "start: A B\nA: /x{5}(a+|b)/\nB: \"a\"\n";
    let l = pipeline::lex_grammar_source(src, "deep.lark").unwrap();
    let e = stackmask_compiler::adjacency::check_dead_ends(&l.grammar, &l.dfas).unwrap_err();
    assert_eq!(e.example, "xxxxxa");
}

#[test]
fn dead_end_check_is_linear_in_long_terminals() {
    // A 20000-state chain: the check spreads "can end well" backwards along it. One
    // sweep over all states per level made that quadratic (about half a minute here);
    // a worklist over reverse edges is milliseconds. The guard turns a regression into
    // a failure instead of a stuck run.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let src = "start: A B\nA: /a{20000}/\nB: \"b\"\n";
        let l = pipeline::lex_grammar_source(src, "chain.lark").unwrap();
        let _ = tx.send(stackmask_compiler::adjacency::check_dead_ends(
            &l.grammar, &l.dfas,
        ));
    });
    match rx.recv_timeout(std::time::Duration::from_secs(20)) {
        Ok(r) => r.unwrap(),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("the dead-end check of a 20000-state terminal took over 20 s")
        }
        Err(e) => panic!("the checking thread failed (see its panic above): {e}"),
    }
}

#[test]
fn engine_is_shareable_and_matchers_are_sendable() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Engine>();
    send::<Matcher>();
}

/// `start: (ID | "kw0" | … | "kw{n-1}")+` with an identifier regex and `%ignore " "`:
/// SQL-like keyword lists (issue 11 item 4).
fn keywords(n: usize) -> LexedGrammar {
    let alts: Vec<String> = (0..n).map(|i| format!("\"kw{i}\"")).collect();
    let src = format!(
        "start: (ID | {})+\nID: /[a-z_][a-z0-9_]*/\n%ignore \" \"\n",
        alts.join(" | ")
    );
    pipeline::lex_grammar_source(&src, "keywords.lark").unwrap()
}

/// The LR(1) construction's work (closure propagations and items built, counted by
/// the automaton) grows about linearly with the number of keywords: it grew with
/// their cube (every predicted item re-propagated its lookaheads to every rule of
/// `start` each time one of them grew), 63 s for 1,000 keywords.
#[test]
fn lr_construction_work_grows_linearly_with_keywords() {
    let steps = |n| {
        build_lr(&keywords(n).grammar, 100_000)
            .unwrap()
            .construction_steps
    };
    let (small, large) = (steps(50), steps(200));
    // 4× the keywords: linear work is 4×; allow 6× (quadratic would be 16×).
    assert!(
        large <= small * 6,
        "LR(1) construction steps: {small} for 50 keywords, {large} for 200"
    );
}

/// A compile with a zero time limit stops at the first check of its first stage with
/// the named error; `stage` says where. Bounded by checks, not by timing.
#[test]
fn a_zero_time_limit_ends_in_the_named_error_at_the_first_check() {
    let zero = CompileBudget {
        time_limit: Some(Duration::ZERO),
        cancel: None,
    };
    let options = pipeline::CompileOptions {
        budget: zero.clone(),
        ..Default::default()
    };
    let src = std::fs::read_to_string(workspace().join("grammars/json.lark")).unwrap();
    let err = pipeline::build_artifact_from_source(&src, "json.lark", "bytes", &options, |_| {})
        .unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(
            err,
            pipeline::BuildError::Pipeline(pipeline::PipelineError::Budget(
                BudgetError::TimeLimit {
                    limit: Duration::ZERO,
                    stage: Stage::FrontEnd
                }
            ))
        ),
        "{message}"
    );
    assert!(message.contains("--time-limit"), "{message}");
    // Each later stage, entered with the spent budget, names itself.
    let json = lexed("json.lark");
    let spent = zero.start();
    assert!(matches!(
        pipeline::compile_parser_within(&json, lr::LrLimits::states(100_000), &spent),
        Err(CompileError::Budget(BudgetError::TimeLimit {
            stage: Stage::AdjacencyProduct,
            ..
        }))
    ));
    assert!(matches!(
        lr::build_lr_within(&json.grammar, lr::LrLimits::states(100_000), &spent),
        Err(LrError::Budget(BudgetError::TimeLimit {
            stage: Stage::Lr,
            ..
        }))
    ));
    let compiled = pipeline::compile_parser(&json, 100_000).unwrap();
    let tok = stackmask_compiler::vocab::load_tokenizer("bytes").unwrap();
    let trie = pipeline::PreparedTrie::new(stackmask_compiler::vocab::build_trie(&tok.vocab));
    let mask =
        pipeline::compile_mask_within(&compiled, &tok.vocab, &trie, &options, &spent, &|_, _| {});
    assert!(matches!(
        mask,
        Err(CompileError::Budget(BudgetError::TimeLimit {
            stage: Stage::TerminalDwa,
            ..
        }))
    ));
    // The same compile with a generous budget and a cancel flag nobody sets succeeds.
    let generous = pipeline::CompileOptions {
        budget: CompileBudget {
            time_limit: Some(Duration::from_secs(3600)),
            cancel: Some(CancelFlag::new()),
        },
        ..Default::default()
    };
    assert!(
        pipeline::build_artifact_from_source(&src, "json.lark", "bytes", &generous, |_| {}).is_ok()
    );
}

/// A cancel flag set before the compile starts cancels it at the first check.
#[test]
fn a_cancel_flag_set_before_the_start_cancels() {
    let flag = CancelFlag::new();
    flag.cancel();
    let options = pipeline::CompileOptions {
        budget: CompileBudget {
            time_limit: None,
            cancel: Some(flag),
        },
        ..Default::default()
    };
    let err = pipeline::build_artifact_from_lexed(
        lexed("json.lark"),
        "",
        "json.lark",
        "bytes",
        &options,
        &options.budget.start(),
        |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            pipeline::BuildError::Compile(CompileError::Budget(BudgetError::Cancelled {
                stage: Stage::AdjacencyProduct
            }))
        ),
        "{err}"
    );
    assert!(err.to_string().contains("cancelled"), "{err}");
}

/// Cancelling mid-compile stops the Parser DWA's parallel workers: a flag set from
/// the progress callback once the first lexer boundary is built ends the compile with
/// `Cancelled` in a mask-path stage, not in the minimization after it (which is where
/// it would end if the workers went on building every boundary).
#[test]
fn a_cancel_during_the_parser_dwa_stops_its_workers() {
    let flag = CancelFlag::new();
    let options = pipeline::CompileOptions {
        budget: CompileBudget {
            time_limit: None,
            cancel: Some(flag.clone()),
        },
        ..Default::default()
    };
    let json = lexed("json.lark");
    let compiled = pipeline::compile_parser(&json, 100_000).unwrap();
    let tok = stackmask_compiler::vocab::load_tokenizer("tiktoken:cl100k_base").unwrap();
    let trie = pipeline::PreparedTrie::new(stackmask_compiler::vocab::build_trie(&tok.vocab));
    let total = std::sync::atomic::AtomicUsize::new(0);
    let deadline = options.budget.start();
    let result = pipeline::compile_mask_within(
        &compiled,
        &tok.vocab,
        &trie,
        &options,
        &deadline,
        &|done, all| {
            total.store(all, std::sync::atomic::Ordering::Relaxed);
            if done >= 1 {
                flag.cancel();
            }
        },
    );
    match result {
        Err(CompileError::Budget(BudgetError::Cancelled { stage })) => {
            assert!(
                matches!(stage, Stage::TerminalDwa | Stage::ParserDwa),
                "{stage}"
            );
        }
        other => panic!("expected a cancel, got {:?}", other.map(|_| ())),
    }
    assert!(total.into_inner() > 4, "JSON has more than 4 boundaries");
}

/// A chain of unit rules longer than the template's reduction bound is refused with
/// the bound it passed and a cause that fits (it once blamed ε-rules for any chain);
/// the bound is a limit with a flag: raised, the chain compiles, lowered, a shorter one
/// is refused naming the lower value.
#[test]
fn a_unit_chain_past_the_reduction_bound_names_that_bound() {
    let chain = |n: usize| {
        let mut src = String::from("start: a0\n");
        for i in 0..n - 1 {
            src.push_str(&format!("a{i}: a{}\n", i + 1));
        }
        src.push_str(&format!("a{}: \"x\"\n", n - 1));
        src
    };
    let with_limit = |src: &str, reductions: u32| {
        let mut options = pipeline::CompileOptions::default();
        options.dwa.template_reductions = reductions;
        pipeline::build_artifact_from_source(src, "chain.lark", "bytes", &options, |_| {})
    };
    let default = stackmask_compiler::template::DEFAULT_MAX_REDUCTIONS;
    let long = chain(default as usize + 50);
    let err = with_limit(&long, default).unwrap_err().to_string();
    assert!(
        err.contains("over 10000 reductions without a shift")
            && err.contains("unit rules")
            && err.contains("--max-template-reductions"),
        "{err}"
    );
    assert!(!err.contains("push over"), "{err}");
    assert!(with_limit(&long, default + 100).is_ok());
    let err = with_limit(&chain(300), 200).unwrap_err().to_string();
    assert!(err.contains("over 200 reductions"), "{err}");
    assert!(with_limit(&chain(300), 400).is_ok());
}

/// `--max-dwa-states` bounds the automaton states the artifact holds: a boundary that
/// shares another's states (their tokens differ, their words do not) is emitted with
/// its own token sets, so its states count again. Planted bug it catches: counting a
/// shared state set once.
#[test]
fn the_dwa_state_limit_counts_shared_states_once_per_automaton() {
    let src = std::fs::read_to_string(workspace().join("grammars").join("json.lark")).unwrap();
    let build = |max_states: usize| {
        let mut options = pipeline::CompileOptions::default();
        options.dwa.max_states = max_states;
        pipeline::build_artifact_from_source(&src, "json.lark", "bytes", &options, |_| {})
    };
    let stats = build(pipeline::CompileOptions::default().dwa.max_states)
        .unwrap()
        .dwa_stats;
    assert!(
        stats.shapes < stats.automata,
        "the test needs boundaries that share states: {stats:?}"
    );
    let err = build(stats.states_built - 1).unwrap_err().to_string();
    assert!(
        err.contains(&format!("more than {} states", stats.states_built - 1))
            && err.contains("--max-dwa-states"),
        "{err}"
    );
    assert!(build(2 * stats.states_built).is_ok());
}
