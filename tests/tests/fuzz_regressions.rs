//! Defects found by the fuzz targets (`fuzz/`, README "Fuzzing"), one test each, named
//! for the defect and built from the minimized input the fuzzer wrote.

mod compiled_support;

use compiled_support::{cached, engine};
use stackmask_runtime::{MatchError, Matcher};

/// `matcher_ops`: after EOS nothing can be committed (`commit_bytes` says `Finished`),
/// yet `accepts_bytes` answered from the parse as if the sequence had not ended, so it
/// said yes to bytes `commit_bytes` then refused: `[]`, and `+1` after `1`.
#[test]
fn accepts_bytes_is_false_after_eos() {
    let built = cached("expr", "bytes");
    let mut m = Matcher::new(engine(&built.bytes));
    m.commit_bytes(b"1").unwrap();
    m.commit(built.tokenizer.vocab.eos).unwrap();
    assert!(matches!(m.commit_bytes(b""), Err(MatchError::Finished)));
    assert!(matches!(m.commit_bytes(b"+1"), Err(MatchError::Finished)));
    assert!(!m.accepts_bytes(b""), "accepts_bytes([]) after EOS");
    assert!(!m.accepts_bytes(b"+1"), "accepts_bytes(\"+1\") after EOS");
}

/// `grammar_frontend`: a one-terminal grammar whose 825-byte regex is mostly `.` and `*`
/// (two inputs). Its determinization has 128 byte classes or more and ran to
/// regex-automata's 64 MB DFA size limit: 8.5–9.9 s in a release build, 60–72 s with
/// debug assertions, and `--time-limit` could not interrupt it. The lexer now
/// determinizes state by state and polls the budget, so a time limit of one second ends
/// it in the lexer stage, named.
#[test]
fn a_determinization_in_progress_stops_at_the_time_limit() {
    use stackmask_compiler::budget::{BudgetError, CompileBudget, Stage};
    use stackmask_compiler::pipeline::{lex_grammar_source_within, PipelineError};
    let inputs: [&[u8]; 2] = [
        include_bytes!(
            "../../fuzz/regressions/grammar_frontend/timeout-389d94686575edee714952e9908497ea03606a7b"
        ),
        include_bytes!(
            "../../fuzz/regressions/grammar_frontend/timeout-e346c257abe51fe8e860a03a38b4711de1cde3cc"
        ),
    ];
    for input in inputs {
        let source = std::str::from_utf8(input).unwrap();
        let budget = CompileBudget {
            time_limit: Some(std::time::Duration::from_secs(1)),
            cancel: None,
        };
        match lex_grammar_source_within(source, "fuzz.lark", &budget.start()) {
            Err(PipelineError::Budget(BudgetError::TimeLimit { stage, .. })) => {
                assert_eq!(stage, Stage::Lexer)
            }
            Err(other) => panic!("expected the time limit in the lexer stage, got {other}"),
            Ok(_) => panic!("expected the time limit in the lexer stage, got a lexer"),
        }
    }
}

/// `schema_frontend`: an `anyOf` of two `required`s over sixteen names that no schema
/// declares (a mutated MaskBench schema). Such names are written in any order, so the
/// object's member automaton tracked which were written: 65,537 states of ~30,000
/// presence assignments each — seconds in a release build, past the fuzz run's 60 s
/// timeout with debug assertions, and then more LR(1) states than their limit. The
/// automaton now has a named limit, reached in a fraction of a second.
#[test]
fn an_object_whose_member_automaton_explodes_ends_in_its_named_limit() {
    use stackmask_compiler::frontend::json_schema::{
        schema_text_to_grammar, Draft, PropertyOrder, SchemaOptions,
    };
    let input = include_bytes!(
        "../../fuzz/regressions/schema_frontend/timeout-63b4590512ed1897155c30b3d2d497f8f894a646"
    );
    // The target's first byte (13): lenient, sorted property order, draft 7.
    assert_eq!(input[0], 13);
    let options = SchemaOptions {
        lenient: true,
        order: PropertyOrder::Sorted,
        draft: Draft::Draft7,
        ..SchemaOptions::default()
    };
    let text = std::str::from_utf8(&input[1..]).unwrap();
    let Err(e) = schema_text_to_grammar(text, "fuzz.json", &options) else {
        panic!("expected the member automaton's limit, got a grammar");
    };
    assert!(
        e.to_string().contains(
            "(the limit on one object's members under presence conditions: 16 names mentioned, 16 of them declared nowhere"
        ),
        "{e}"
    );
}

/// `schema_frontend`: `{"type":"object","properties":{"a":{"type":"string","maxLength":
/// 422239264}}}`. The counted string's blocked rules grow with the count: 45 s and 22 GB
/// in a release build, past the fuzz run's 2 GB. It is now refused at the limit on
/// counted string lengths (`chunked_string::MAX_STRING_CHUNKS`), named.
#[test]
fn a_string_length_of_422_million_characters_is_refused_at_its_named_limit() {
    use stackmask_compiler::frontend::json_schema::{schema_text_to_grammar, SchemaOptions};
    let input = include_bytes!(
        "../../fuzz/regressions/schema_frontend/oom-604b59db62cb99ee2bc5981706a647af93931132"
    );
    // The target's first byte (0): strict, compact, declared order, the default draft.
    assert_eq!(input[0], 0);
    let text = std::str::from_utf8(&input[1..]).unwrap();
    let Err(e) = schema_text_to_grammar(text, "fuzz.json", &SchemaOptions::default()) else {
        panic!("expected the limit on counted string lengths, got a grammar");
    };
    assert!(
        e.to_string()
            .contains("more than 8388608 (the limit on counted string lengths"),
        "{e}"
    );
}
