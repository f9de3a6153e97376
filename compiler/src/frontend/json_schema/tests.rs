//! Unit tests of the schema front end on hand-written schemas (the suites are in
//! `tests/tests/json_schema_suite.rs`).

use super::*;
use serde_json::json;
use stackmask_runtime::ByteRecognizer;

fn accepts(schema: &Value, opts: &SchemaOptions) -> impl Fn(&str) -> bool {
    let g = schema_to_grammar(schema, "test", opts).unwrap_or_else(|e| panic!("{e}"));
    let dfas = crate::lexer::compile_lexer(&g.grammar).unwrap();
    let tok = crate::vocab::load_tokenizer("bytes").unwrap();
    let lexed = crate::pipeline::LexedGrammar {
        grammar: g.grammar,
        dfas,
    };
    let engine = crate::pipeline::reference_engine(&lexed, &tok).unwrap();
    move |s: &str| {
        let mut r = engine.recognizer();
        r.push_bytes(s.as_bytes()) && r.is_accepting()
    }
}

#[test]
fn object_with_required_optional_and_additional_members() {
    let s = json!({"type": "object", "properties": {"a": {"type": "integer", "minimum": 1}, "b": {"type": "string", "maxLength": 2}},
        "required": ["a"], "additionalProperties": {"type": "boolean"}});
    let ok = accepts(&s, &SchemaOptions::default());
    for (doc, want) in [
        (r#"{"a":1}"#, true),
        (r#"{"a":1,"b":"xy"}"#, true),
        (r#"{"a":1,"c":true}"#, true),
        (r#"{"a":1,"b":"xy","c":false,"d":true}"#, true),
        (r#"{"a":0}"#, false),
        (r#"{"b":"x"}"#, false),
        (r#"{"a":1,"b":"xyz"}"#, false),
        (r#"{"a":1,"c":1}"#, false),
        (r#"{"a":1,"a":true}"#, false),
        (r#"{ "a":1}"#, false),
    ] {
        assert_eq!(ok(doc), want, "{doc}");
    }
    let free = accepts(
        &s,
        &SchemaOptions {
            whitespace: Whitespace::Free,
            ..Default::default()
        },
    );
    assert!(free("{ \"a\" : 1 ,\n \"c\": true }"));
}

#[test]
fn refs_recursion_anyof_and_counts() {
    let s = json!({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}}, "additionalProperties": false}},
        "anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]});
    let ok = accepts(&s, &SchemaOptions::default());
    assert!(ok(r#"{"v":1,"kids":[{"v":2},{"kids":[]}]}"#));
    assert!(ok("null"));
    assert!(!ok(r#"{"kids":[{},{},{}]}"#));
    assert!(!ok(r#"{"x":1}"#));
}

#[test]
fn unsupported_keywords_are_named_with_their_pointer() {
    let s = json!({"properties": {"a": {"contains": {"type": "integer"}}}});
    let e = schema_to_grammar(&s, "s.json", &SchemaOptions::default()).unwrap_err();
    assert_eq!(e.issue.keyword.as_deref(), Some("contains"));
    assert_eq!(e.issue.pointer, "#/properties/a/contains");
    let lenient = SchemaOptions {
        lenient: true,
        ..Default::default()
    };
    let g = schema_to_grammar(&s, "s.json", &lenient).unwrap();
    assert_eq!(g.warnings.len(), 1);
    assert_eq!(g.warnings[0].keyword.as_deref(), Some("contains"));
}

#[test]
fn one_of_needs_disjoint_branches() {
    let disjoint = json!({"oneOf": [{"type": "string"}, {"type": "integer"}]});
    assert!(schema_to_grammar(&disjoint, "s", &SchemaOptions::default()).is_ok());
    let overlapping = json!({"oneOf": [{"type": "string"}, {"minLength": 2}]});
    let e = schema_to_grammar(&overlapping, "s", &SchemaOptions::default()).unwrap_err();
    assert_eq!(e.issue.keyword.as_deref(), Some("oneOf"));
}

/// Beside a list of values every keyword is decided by the validator: `not`, `oneOf`,
/// `if`-free conditionals through `$ref`, `uniqueItems` — strict mode compiles, and
/// exactly the listed values that validate are accepted.
#[test]
fn listed_values_are_filtered_by_every_keyword_beside_them() {
    let s = json!({
        "definitions": {"noFalse": {"not": {"const": {"a": false}}}},
        "properties": {"x": {
            "allOf": [{"enum": [{"a": 0}, {"a": false}, 3, [1, 1], [1, 2], "b"]}, {"$ref": "#/definitions/noFalse"}],
            "not": {"oneOf": [{"const": 3}, {"type": "string", "maxLength": 0}]},
            "uniqueItems": true
        }},
        "required": ["x"],
        "additionalProperties": false
    });
    let ok = accepts(&s, &SchemaOptions::default());
    for (doc, want) in [
        (r#"{"x":{"a":0}}"#, true),
        (r#"{"x":{"a":false}}"#, false),
        (r#"{"x":3}"#, false),
        (r#"{"x":[1,1]}"#, false),
        (r#"{"x":[1,2]}"#, true),
        (r#"{"x":"b"}"#, true),
        (r#"{"x":"c"}"#, false),
    ] {
        assert_eq!(ok(doc), want, "{doc}");
    }
}
