//! The front end's rewrites keep languages: pairs of Lark grammars that must denote the
//! same language (one written with an EBNF construct that normalization rewrites, one
//! written plainly) are compared on every string up to a length bound, through the
//! reference recognizer and through the compiled GLR parser.
//!
//! The constructs here are the ones whose naive BNF is not LR-friendly: `x*` and `x+`
//! where `x` derives ε without being ε (`("a"?)*`), whose loop `H → H x` would be a
//! cycle `H ⇒ H`; normalization rewrites the loop over an ε-free copy of `x`.

mod common;

use stackmask_compiler::pipeline::{self, LexedGrammar};
use stackmask_runtime::glr::{GlrRecognizer, GlrState};
use stackmask_runtime::ByteRecognizer;

/// Every string over `alphabet` up to `max` bytes (the empty one included) that the
/// grammar accepts, by the reference path and by the compiled path, which must agree.
fn language(source: &str, alphabet: &[u8], max: usize) -> Vec<Vec<u8>> {
    let lexed: LexedGrammar =
        pipeline::lex_grammar_source(source, "eq.lark").unwrap_or_else(|e| panic!("{source}: {e}"));
    language_of(&lexed, source, alphabet, max)
}

/// [`language`] of a grammar already lexed (`source` names it in messages), in
/// depth-first order over `alphabet`. A prefix both recognizers refuse is not extended:
/// neither can accept an extension of it, so every string still has both verdicts
/// compared, without enumerating the millions under dead prefixes (the wrapped `%json`
/// languages below took 43 s of a CI run enumerated in full).
fn language_of(lexed: &LexedGrammar, source: &str, alphabet: &[u8], max: usize) -> Vec<Vec<u8>> {
    let lexed = lexed.clone();
    let reference = common::engine_for(&lexed, "bytes");
    let compiled = pipeline::compile_parser(&lexed, 100_000)
        .unwrap_or_else(|e| panic!("{source}: compiled path: {e}"));
    let tables = compiled.tables.view();
    let mut state = GlrState::new(&tables);
    let mut accepted = Vec::new();
    let mut pending = vec![Vec::new()];
    while let Some(w) = pending.pop() {
        let by_reference = common::recognize(&reference, &w);
        state.reset(&tables);
        let mut glr = GlrRecognizer {
            tables,
            state: &mut state,
        };
        let glr_alive = glr.push_bytes(&w);
        let by_glr = glr_alive && glr.is_accepting();
        assert_eq!(
            by_glr,
            by_reference.is_ok(),
            "{source}: {:?} compiled vs reference",
            String::from_utf8_lossy(&w)
        );
        let reference_alive = by_reference.is_ok() || by_reference == Err(w.len());
        if w.len() < max && (glr_alive || reference_alive) {
            pending.extend(
                alphabet
                    .iter()
                    .rev()
                    .map(|&c| [w.as_slice(), &[c]].concat()),
            );
        }
        if by_reference.is_ok() {
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

/// `%json {schema}` in a Lark grammar stands for exactly the schema's language: the
/// same strings as the schema compiled on its own, also between other symbols.
#[test]
fn json_in_lark_is_the_schema_language() {
    use stackmask_compiler::frontend::json_schema::SchemaOptions;
    for (schema, alphabet, max) in [
        (
            r#"{"type": "array", "items": {"enum": [1, 2]}, "maxItems": 2}"#,
            &b"[]12,"[..],
            6,
        ),
        (
            r#"{"type": "integer", "minimum": -3, "maximum": 12}"#,
            &b"-0123"[..],
            3,
        ),
        (
            r#"{"anyOf": [{"const": true}, {"type": "array", "prefixItems": [{"const": 0}]}]}"#,
            &b"[]0,true"[..],
            5,
        ),
    ] {
        let direct = pipeline::lex_schema_source(schema, "s.json", &SchemaOptions::default())
            .unwrap_or_else(|e| panic!("{schema}: {e}"))
            .0;
        let expected = language_of(&direct, schema, alphabet, max);
        assert!(expected.len() > 2, "{schema}: a language worth comparing");
        assert_eq!(
            language(&format!("start: %json {schema}\n"), alphabet, max),
            expected,
            "{schema}"
        );
        // Between other symbols, twice (the same text is one copy, used twice).
        let wrapped: Vec<Vec<u8>> = language(
            &format!("start: \"<\" %json {schema} \">\" %json {schema}\n"),
            &[alphabet, b"<>"].concat(),
            max + 2,
        );
        for w in &wrapped {
            let inner = &w[1..];
            let gt = inner.iter().position(|&b| b == b'>').expect("a `>`");
            assert!(w[0] == b'<', "{schema}: {:?}", String::from_utf8_lossy(w));
            assert!(
                expected.contains(&inner[..gt].to_vec())
                    && expected.contains(&inner[gt + 1..].to_vec()),
                "{schema}: {:?} is not `<` value `>` value",
                String::from_utf8_lossy(w)
            );
        }
        let shortest = expected.iter().map(Vec::len).min().unwrap();
        let short: Vec<&Vec<u8>> = expected.iter().filter(|w| w.len() == shortest).collect();
        for a in &short {
            let w = [&b"<"[..], a, b">", a].concat();
            if w.len() <= max + 2 {
                assert!(
                    wrapped.contains(&w),
                    "{schema}: {:?} missing",
                    String::from_utf8_lossy(&w)
                );
            }
        }
    }
}

/// `%json` refusals carry the `%json`'s position and the schema's reason.
#[test]
fn json_in_lark_refusals_say_where_and_why() {
    let err = |src: &str| {
        pipeline::lex_grammar_source(src, "g.lark")
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err("start: \"a\"\n  | %json {\"type\": \"object\", \"contains\": {}}\n"),
        "g.lark:2:5: `%json`: #/contains: unsupported `contains`: `contains` is not supported",
    );
    assert!(err("start: %json {\"type\": }\n").starts_with("g.lark:1:8: `%json`: invalid JSON: "));
    assert!(err("start: %json {\"format\": \"country-code\"}\n")
        .contains("a warning, which a Lark grammar cannot list: refused"));
    assert_eq!(
        err("start: A\nA: %json {}\n"),
        "g.lark:2:4: `%json`: a schema cannot be used inside a terminal (it is a grammar)"
    );
}
