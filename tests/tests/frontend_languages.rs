//! The front end's rewrites keep languages: pairs of Lark grammars that must denote the
//! same language (one written with an EBNF construct that normalization rewrites, one
//! written plainly) are compared on every string up to a length bound, through the
//! reference recognizer and through the compiled GLR parser.
//!
//! The constructs here are the ones whose naive BNF is not LR-friendly: `x*` and `x+`
//! where `x` derives ε without being ε (`("a"?)*`), whose loop `H → H x` would be a
//! cycle `H ⇒ H`; normalization rewrites the loop over an ε-free copy of `x`.

mod common;

use common::strings;
use stackmask_compiler::pipeline::{self, LexedGrammar};
use stackmask_runtime::glr::{GlrRecognizer, GlrState};
use stackmask_runtime::ByteRecognizer;

/// Every string over `alphabet` up to `max` bytes (the empty one included) that the
/// grammar accepts, by the reference path and by the compiled path, which must agree.
fn language(source: &str, alphabet: &[u8], max: usize) -> Vec<Vec<u8>> {
    let lexed: LexedGrammar =
        pipeline::lex_grammar_source(source, "eq.lark").unwrap_or_else(|e| panic!("{source}: {e}"));
    let reference = common::engine_for(&lexed, "bytes");
    let compiled = pipeline::compile_parser(&lexed, 100_000)
        .unwrap_or_else(|e| panic!("{source}: compiled path: {e}"));
    let tables = compiled.tables.view();
    let mut state = GlrState::new(&tables);
    let mut accepted = Vec::new();
    let mut all = vec![Vec::new()];
    all.extend(strings(alphabet, max));
    for w in all {
        let by_reference = common::recognize(&reference, &w).is_ok();
        state.reset(&tables);
        let mut glr = GlrRecognizer {
            tables,
            state: &mut state,
        };
        let by_glr = glr.push_bytes(&w) && glr.is_accepting();
        assert_eq!(
            by_glr,
            by_reference,
            "{source}: {:?} compiled vs reference",
            String::from_utf8_lossy(&w)
        );
        if by_reference {
            accepted.push(w);
        }
    }
    accepted
}

fn same_language(a: &str, b: &str, alphabet: &[u8], max: usize) {
    let la = language(a, alphabet, max);
    let lb = language(b, alphabet, max);
    assert_eq!(
        la.iter()
            .map(|w| String::from_utf8_lossy(w))
            .collect::<Vec<_>>(),
        lb.iter()
            .map(|w| String::from_utf8_lossy(w))
            .collect::<Vec<_>>(),
        "\n{a}\nvs\n{b}"
    );
    assert!(!la.is_empty(), "{a}: the pair should accept something");
}

#[test]
fn loops_over_nullable_items_keep_their_language() {
    let pairs: &[(&str, &str)] = &[
        (
            "start: \"x\" (\"a\"?)* \"y\"\n",
            "start: \"x\" \"a\"* \"y\"\n",
        ),
        (
            "start: \"x\" (\"a\"?)+ \"y\"\n",
            "start: \"x\" \"a\"* \"y\"\n",
        ),
        (
            "start: \"x\" (\"a\" | \"b\"?)* \"y\"\n",
            "start: \"x\" (\"a\" | \"b\")* \"y\"\n",
        ),
        // A nullable rule under the loop, defined after its use.
        (
            "start: \"x\" item* \"y\"\nitem: \"a\" | \"b\" \"c\" |\n",
            "start: \"x\" (\"a\" | \"b\" \"c\")* \"y\"\n",
        ),
        // A sequence of nullable parts: the ε-free copy must keep "a", "b" and "ab".
        (
            "start: \"x\" (\"a\"? \"b\"?)* \"y\"\n",
            "start: \"x\" (\"a\" | \"b\")* \"y\"\n",
        ),
        // Nested loops and a nullable rule that itself loops.
        (
            "start: \"x\" ((\"a\"?)*)* \"y\"\n",
            "start: \"x\" \"a\"* \"y\"\n",
        ),
        (
            "start: (inner \"c\"?)+\ninner: \"a\"* | \"b\"\n",
            "start: (\"a\" | \"b\" | \"c\")*\n",
        ),
        // Unbounded repetition `~ n..` / `{n,}` ends in a loop too.
        (
            "start: \"x\" (\"a\"?){2,} \"y\"\n",
            "start: \"x\" \"a\"* \"y\"\n",
        ),
    ];
    for &(a, b) in pairs {
        same_language(a, b, b"abcxy", 5);
    }
}

#[test]
fn a_user_written_cycle_is_still_an_error() {
    // Only the loops normalization itself generates are rewritten; a rule the author
    // wrote to derive itself is reported.
    let err = pipeline::lex_grammar_source("start: a\na: a | \"x\"\n", "eq.lark").unwrap_err();
    assert!(
        err.to_string().contains("cyclic derivation a => a"),
        "{err}"
    );
}
