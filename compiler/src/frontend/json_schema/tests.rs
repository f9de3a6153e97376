//! Unit tests of the schema front end on hand-written schemas (the suites are in
//! `tests/tests/json_schema_suite.rs`).

use super::*;
use serde_json::json;
use stackmask_runtime::ByteRecognizer;

pub(super) fn accepts(schema: &Value, opts: &SchemaOptions) -> impl Fn(&str) -> bool {
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

/// A counted string past `chunked_string::MAX_STRING_CHUNKS` is refused, naming the
/// limit (the fuzzer's `maxLength` of 422 million characters took 45 s and 22 GB);
/// lenient reads it as unbounded, a superset, with the warning listed.
#[test]
fn a_string_length_past_the_counted_limit_is_named_or_unbounded() {
    let s =
        json!({"type": "object", "properties": {"a": {"type": "string", "maxLength": 422239264}}});
    let e = schema_to_grammar(&s, "s.json", &SchemaOptions::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "s.json: #/properties/a/maxLength: unsupported `maxLength`: 422239264 characters: more than 8388608 (the limit on counted string lengths; lenient: read as no bound)"
    );
    let lenient = SchemaOptions {
        lenient: true,
        ..SchemaOptions::default()
    };
    let g = schema_to_grammar(&s, "s.json", &lenient).unwrap();
    assert_eq!(g.warnings.len(), 1);
    let ok = accepts(&s, &lenient);
    assert!(ok(r#"{"a":"0123456789abcdefghij"}"#) && ok(r#"{}"#));
    let at_limit = json!({"type": "string", "maxLength": 8388608});
    assert!(schema_to_grammar(&at_limit, "s.json", &SchemaOptions::default()).is_ok());
}

/// An object whose member automaton would pass `presence::MAX_MEMBER_AUTOMATON` is a
/// named error in every mode; below it the same form is exact.
#[test]
fn an_object_whose_member_automaton_is_past_its_limit_is_a_named_error() {
    // Names no schema declares are written in any order, so the automaton tracks which
    // were written: sixteen of them made 65,537 states of ~30,000 assignments each.
    let names = |n: usize| -> Vec<String> { (0..n).map(|i| format!("n{i}")).collect() };
    let schema = |n: usize| json!({"anyOf": [{"required": ["a"]}, {"required": names(n)}]});
    for opts in [
        SchemaOptions::default(),
        SchemaOptions {
            lenient: true,
            ..SchemaOptions::default()
        },
    ] {
        let e = schema_to_grammar(&schema(15), "s.json", &opts).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "s.json: #: the members of this object need an automaton of more than {} units, its states plus the presence assignments they carry (the limit on one object's members under presence conditions: 16 names mentioned, 16 of them declared nowhere and so written in any order)",
                presence::MAX_MEMBER_AUTOMATON
            )
        );
    }
    // Within the limit the same form is exact: either `a`, or every `n`, in any order.
    let ok = accepts(&schema(3), &SchemaOptions::default());
    for (doc, want) in [
        (r#"{"a":1}"#, true),
        (r#"{"n2":1,"n0":2,"n1":3}"#, true),
        (r#"{"n1":true,"a":null}"#, true),
        (r#"{"n0":1,"n1":2}"#, false),
        (r#"{}"#, false),
        (r#"{"n0":1,"n0":2,"n1":3}"#, false),
    ] {
        assert_eq!(ok(doc), want, "{doc}");
    }
}

/// An issue says what is wrong with its keyword: "unsupported" only for a keyword (or
/// form of one) the grammar cannot enforce (an unknown keyword read "unsupported `foo`:
/// unknown keyword", an invalid `$ref` "unsupported `$ref`: `$ref` must be a string");
/// another issue names its keyword after the pointer only where the pointer does not
/// end in it.
#[test]
fn issues_say_what_is_wrong_with_their_keyword() {
    let strict = SchemaOptions::default();
    let unsupported = json!({"properties": {"a": {"contains": {"type": "integer"}}}});
    let e = schema_to_grammar(&unsupported, "s.json", &strict).unwrap_err();
    assert_eq!(
        e.to_string(),
        "s.json: #/properties/a/contains: unsupported `contains`: `contains` is not supported"
    );
    let invalid = json!({"$ref": 5});
    let e = schema_to_grammar(&invalid, "s.json", &strict).unwrap_err();
    assert_eq!(e.to_string(), "s.json: #/$ref: `$ref` must be a string");
    let unknown = json!({"type": "integer", "frobnicate": 1});
    let g = schema_to_grammar(&unknown, "s.json", &strict).unwrap();
    assert_eq!(
        g.warnings[0].to_string(),
        "#/frobnicate: unknown keyword: no effect (JSON Schema ignores unknown keywords)"
    );
    let issue = |pointer: &str, unsupported: bool| SchemaIssue {
        pointer: pointer.to_string(),
        keyword: Some("a/b~c".to_string()),
        unsupported,
        message: "m".to_string(),
    };
    assert_eq!(issue("#/x/a~1b~0c", false).to_string(), "#/x/a~1b~0c: m");
    assert_eq!(issue("#/x", false).to_string(), "#/x: `a/b~c`: m");
    assert_eq!(
        issue("#/x", true).to_string(),
        "#/x: unsupported `a/b~c`: m"
    );
}

#[test]
fn a_benchmark_file_given_as_a_schema_says_where_its_schema_is() {
    let file = json!({
        "description": "sample",
        "schema": {"type": "integer"},
        "tests": [{"data": 1, "valid": true}],
    });
    let g = schema_to_grammar(&file, "f.json", &SchemaOptions::default()).unwrap();
    let hint = |g: &SchemaGrammar, k: &str| {
        let w = g.warnings.iter().find(|w| w.keyword.as_deref() == Some(k));
        w.unwrap_or_else(|| panic!("no warning for `{k}`: {:?}", g.warnings))
            .message
            .contains("jq .schema FILE")
    };
    assert!(hint(&g, "schema"));
    assert!(!hint(&g, "tests"));
    // A schema that constrains something and happens to have such members is a schema.
    let schema = json!({"type": "object", "schema": {}, "tests": []});
    let g = schema_to_grammar(&schema, "s.json", &SchemaOptions::default()).unwrap();
    assert!(!hint(&g, "schema"));
}

#[test]
fn an_invalid_type_is_an_error_not_an_empty_language() {
    for s in [
        json!({"type": 5}),
        json!({"items": {"type": ["string", null]}}),
    ] {
        let e = schema_to_grammar(&s, "s.json", &SchemaOptions::default()).unwrap_err();
        assert_eq!(e.issue.keyword.as_deref(), Some("type"), "{s}");
        assert!(
            e.issue.to_string().contains("invalid `type`"),
            "{}",
            e.issue
        );
    }
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

/// The grammar accepts exactly the instances the `jsonschema` crate validates (formats
/// asserted), over every given instance written compactly.
fn agrees_with_validator(schema: &Value, instances: &[Value]) {
    let ok = accepts(schema, &SchemaOptions::default());
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .unwrap();
    for v in instances {
        let text = serde_json::to_string(v).unwrap();
        assert_eq!(ok(&text), validator.is_valid(v), "{schema}: {text}");
    }
}

/// Objects with every subset of the members `names` (in that order, values from
/// `value`), and a few non-objects.
fn member_subsets(names: &[&str], value: &Value) -> Vec<Value> {
    let mut out = vec![json!(null), json!("s"), json!(1), json!([])];
    for bits in 0u32..(1 << names.len()) {
        let mut m = serde_json::Map::new();
        for (i, n) in names.iter().enumerate() {
            if bits & (1 << i) != 0 {
                m.insert(n.to_string(), value.clone());
            }
        }
        out.push(Value::Object(m));
    }
    out
}

#[test]
fn dependencies_in_both_forms_are_exact() {
    // Names declared nowhere are additional members, in any order.
    let s = json!({"dependentSchemas": {"e": {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}}, "additionalProperties": {"type": "integer"}});
    agrees_with_validator(&s, &member_subsets(&["e", "d", "c", "b", "a"], &json!(1)));
    agrees_with_validator(&s, &member_subsets(&["c", "a", "e", "b"], &json!(1)));
    let objects = member_subsets(&["a", "b", "c", "d", "e"], &json!(1));
    for s in [
        s,
        json!({"type": "object", "dependencies": {"a": ["b", "c"], "b": ["d"]}}),
        json!({"dependentRequired": {"c": ["a"]}, "properties": {"a": {}, "b": {}, "c": {}}}),
        json!({"dependencies": {"a": {"anyOf": [{"required": ["b"]}, {"required": ["c"]}]}, "b": {"not": {"required": ["a"]}}}}),
        json!({"properties": {"a": {}, "b": {}}, "patternProperties": {"^[a-e]$": true}, "additionalProperties": false,
               "dependencies": {"a": ["c"], "c": {"not": {"required": ["d"]}}}, "maxProperties": 3}),
        json!({"allOf": [{"dependencies": {"a": ["b"]}}, {"dependencies": {"a": ["c"], "d": ["e"]}}]}),
    ] {
        agrees_with_validator(&s, &objects);
    }
}

#[test]
fn presence_conditions_in_not_one_of_and_if() {
    let objects = member_subsets(&["a", "b", "c"], &json!("x"));
    for s in [
        json!({"not": {"allOf": [{"required": ["a"]}, {"required": ["b"]}]}}),
        json!({"type": "object", "oneOf": [{"required": ["a", "b"]}, {"required": ["c"]}]}),
        json!({"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}),
        json!({"anyOf": [{"required": ["a"]}, {"type": "string"}], "properties": {"a": {"type": "string"}}}),
        json!({"if": {"required": ["a"]}, "then": {"required": ["b"]}, "else": {"not": {"required": ["c"]}}}),
        json!({"properties": {"a": {"type": "string"}, "b": {}},
               "dependencies": {"b": {"not": {"properties": {"a": {"type": "string"}}, "required": ["a"]}}}}),
        json!({"properties": {"a": {}, "b": {}, "c": {}}, "not": {"properties": {"a": false}}}),
        json!({"enum": [{"a": "x"}, {"a": "x", "b": "x"}, {"c": "x"}, "s", {}],
               "oneOf": [{"required": ["a"]}, {"required": ["b"]}, {"required": ["c"]}]}),
    ] {
        agrees_with_validator(&s, &objects);
    }
    // A condition on member values is still reported.
    let by_value = json!({"if": {"properties": {"a": {"const": 1}}}, "then": {"required": ["b"]}});
    let e = schema_to_grammar(&by_value, "s", &SchemaOptions::default()).unwrap_err();
    assert_eq!(e.issue.keyword.as_deref(), Some("if"));
    let value_dep = json!({"dependentSchemas": {"a": {"properties": {"b": {"type": "integer"}}}}});
    let e = schema_to_grammar(&value_dep, "s", &SchemaOptions::default()).unwrap_err();
    assert_eq!(e.issue.keyword.as_deref(), Some("dependentSchemas"));
}

#[test]
fn unique_items_over_a_short_list() {
    let s = json!({"type": "array", "uniqueItems": true, "minItems": 1, "maxItems": 3,
                   "items": {"enum": ["x", "y", 1, 1.0, true, "z"], "not": {"const": "z"}}});
    let mut instances = vec![json!([]), json!("x"), json!(["z"]), json!([1, 1.0])];
    let values = [json!("x"), json!("y"), json!(1), json!(true)];
    for a in &values {
        instances.push(json!([a]));
        for b in &values {
            instances.push(json!([a, b]));
            for c in &values {
                instances.push(json!([a, b, c]));
                instances.push(json!([a, b, c, "x"]));
            }
        }
    }
    agrees_with_validator(&s, &instances);
    let open = json!({"type": "array", "uniqueItems": true, "items": {"type": "string"}});
    let e = schema_to_grammar(&open, "s", &SchemaOptions::default()).unwrap_err();
    assert_eq!(e.issue.keyword.as_deref(), Some("uniqueItems"));
}

#[test]
fn pattern_properties_that_match_every_name_or_a_class_star() {
    let instances: Vec<Value> = [
        r#"{}"#,
        r#"{"basic":"a"}"#,
        r#"{"basic":1}"#,
        r#"{"x":"a"}"#,
        r#"{"x":1}"#,
        r#"{"basic":"a","x y":"b","_":2}"#,
        r#"{"a\nb":1}"#,
        r#"{"a\nb":"s","ab":"t"}"#,
        r#"{"ab":[]}"#,
    ]
    .iter()
    .map(|t| serde_json::from_str(t).unwrap())
    .collect();
    for s in [
        json!({"properties": {"basic": {"type": "string"}}, "patternProperties": {".*": {"type": "string"}}}),
        json!({"patternProperties": {"^[a-z0-9_]*": {"type": ["string", "array"]}}, "additionalProperties": false}),
        json!({"patternProperties": {"^.*$": {"type": "string"}}}),
        json!({"properties": {"basic": {"minLength": 1}}, "patternProperties": {"^[a-z_]*$": {"type": "string"}}, "additionalProperties": {"type": "integer"}}),
    ] {
        agrees_with_validator(&s, &instances);
    }
}

#[test]
fn unknown_formats_are_listed_annotations() {
    let s = json!({"type": "string", "format": "country-code", "maxLength": 2});
    let g = schema_to_grammar(&s, "s", &SchemaOptions::default()).unwrap();
    assert_eq!(g.warnings.len(), 1);
    assert_eq!(g.warnings[0].keyword.as_deref(), Some("format"));
    assert_eq!(g.warnings[0].pointer, "#/format");
    agrees_with_validator(&s, &[json!("de"), json!("deu"), json!(""), json!(1)]);
    // Formats the specification defines but that have no exact grammar stay errors.
    let hostname = json!({"type": "string", "format": "hostname"});
    let e = schema_to_grammar(&hostname, "s", &SchemaOptions::default()).unwrap_err();
    assert_eq!(e.issue.keyword.as_deref(), Some("format"));
}

#[test]
fn one_of_disjoint_with_the_siblings_beside_it() {
    // Each branch alone also matches any string (`required` holds vacuously); beside
    // `type: object` the shared required `kind` with disjoint values separates them.
    let branches = json!([
        {"properties": {"kind": {"enum": ["a"]}, "x": {"type": "integer"}}, "required": ["kind"]},
        {"properties": {"kind": {"enum": ["b"]}}, "required": ["kind", "y"]}
    ]);
    let s = json!({"type": "object", "oneOf": branches});
    let instances: Vec<Value> = [
        r#"{"kind":"a"}"#,
        r#"{"kind":"a","x":1}"#,
        r#"{"kind":"a","x":"s"}"#,
        r#"{"kind":"b","y":1}"#,
        r#"{"kind":"b"}"#,
        r#"{"kind":"c","y":1}"#,
        r#"{}"#,
        r#""s""#,
    ]
    .iter()
    .map(|t| serde_json::from_str(t).unwrap())
    .collect();
    agrees_with_validator(&s, &instances);
    let alone = json!({"oneOf": branches});
    let e = schema_to_grammar(&alone, "s", &SchemaOptions::default()).unwrap_err();
    assert_eq!(e.issue.keyword.as_deref(), Some("oneOf"));
    // String branches whose languages share no string (a product-DFA search).
    let timeout = json!({"oneOf": [{"enum": ["none"]}, {"type": "string", "pattern": "^([0-9]+[smh] ?)+$"},
                                   {"type": "string", "pattern": "^[0-9.]+[xX]$"}, {"type": "string", "maxLength": 0}]});
    let texts = ["none", "5s", "5m 3s", "1.5x", "2X", "5", "x", "", "5s x"];
    let mut instances: Vec<Value> = texts.iter().map(|t| json!(t)).collect();
    instances.push(json!(1));
    agrees_with_validator(&timeout, &instances);
    let overlapping = json!({"oneOf": [{"type": "string", "pattern": "^[0-9]+"}, {"type": "string", "pattern": "x$"}]});
    let e = schema_to_grammar(&overlapping, "s", &SchemaOptions::default()).unwrap_err();
    assert_eq!(e.issue.keyword.as_deref(), Some("oneOf"));
    // Siblings that cannot be merged with a branch prove nothing.
    let patterns =
        json!({"type": "string", "pattern": "a", "oneOf": [{"pattern": "b"}, {"pattern": "c"}]});
    let e = schema_to_grammar(&patterns, "s", &SchemaOptions::default()).unwrap_err();
    assert_eq!(e.issue.keyword.as_deref(), Some("oneOf"));
}

#[test]
fn long_strings_are_exact_around_every_bound() {
    let s = json!({"type": "object", "properties": {"s": {"type": "string", "minLength": 1030, "maxLength": 2050}}});
    let ok = accepts(&s, &SchemaOptions::default());
    // Characters of every encoded width: ASCII, an escape, two- to four-byte UTF-8.
    let unit = ["a", "\"", "\n", "é", "€", "😀", "\u{1}"];
    for n in [
        0usize, 1, 255, 256, 257, 1029, 1030, 1031, 1280, 2047, 2048, 2049, 2050, 2051,
    ] {
        let value: String = (0..n).map(|i| unit[i % unit.len()]).collect();
        let doc = json!({"s": value});
        let want = (1030..=2050).contains(&n);
        assert_eq!(ok(&doc.to_string()), want, "{n} characters");
    }
    assert!(!ok(r#"{"s":1}"#));
    // Unbounded above: only the minimum counts.
    let at_least = json!({"type": "string", "minLength": 1500});
    let ok = accepts(&at_least, &SchemaOptions::default());
    for (n, want) in [(1499, false), (1500, true), (1536, true), (5000, true)] {
        assert_eq!(ok(&json!("x".repeat(n)).to_string()), want, "{n}");
    }
    // The size that was past the lexer's NFA limit as one terminal.
    let big = json!({"type": "string", "maxLength": 65535});
    let ok = accepts(&big, &SchemaOptions::default());
    assert!(ok(&json!("y".repeat(65535)).to_string()));
    assert!(!ok(&json!("y".repeat(65536)).to_string()));
}

/// Past [`super::chunked_string::BLOCKED_FROM_CHUNKS`] chunks the count is in blocks:
/// every length is right around the bounds and at the end of every block (block and
/// chunk multiples, one either side), the grammar stays deterministic, and a string's
/// LR states no longer grow with its bound.
#[test]
fn blocked_strings_are_exact_at_every_block() {
    use super::chunked_string::{block_size, BLOCKED_FROM_CHUNKS, CHUNK_CHARS};
    let c = CHUNK_CHARS as usize;
    let unit = ["a", "\"", "é", "😀", "\n"];
    // Bounds that fall at, before and after a block's end, and both in one block.
    let max = (BLOCKED_FROM_CHUNKS as usize + 11) * c + 5;
    let span = block_size(max as u64 / c as u64) as usize * c;
    let last = max / span * span;
    // A maximum at a block's end (its own block size, which depends on it).
    let at_end = 8 * block_size(8 * BLOCKED_FROM_CHUNKS / c as u64 + 8) as usize * c;
    assert_eq!(
        at_end % (block_size(at_end as u64 / c as u64) as usize * c),
        0
    );
    for (min, max) in [
        (1, max),
        (span - 1, max),
        (span, max),
        (last, max),
        (last + 1, max),
        (1, at_end),
        (at_end - 1, at_end),
    ] {
        assert!(
            max as u64 / c as u64 >= BLOCKED_FROM_CHUNKS,
            "{max}: in blocks"
        );
        let s = json!({"type": "object", "properties": {"s": {"type": "string", "minLength": min, "maxLength": max}}});
        let ok = accepts(&s, &SchemaOptions::default());
        let mut lengths: Vec<usize> = (0..=max / c + 1)
            .flat_map(|k| [k * c, k * c + 1, (k * c).saturating_sub(1)])
            .collect();
        lengths.extend([min.saturating_sub(1), min, min + 1, max - 1, max, max + 1]);
        for n in lengths {
            let value: String = (0..n).map(|i| unit[i % unit.len()]).collect();
            let want = (min..=max).contains(&n);
            assert_eq!(
                ok(&json!({ "s": value }).to_string()),
                want,
                "{min}..={max}: {n} characters"
            );
        }
        assert_deterministic(&s, &SchemaOptions::default());
    }
    // maxLength 32767: one state per chunk count would be ~12,000 LR states.
    let big = json!({"type": "string", "maxLength": 32767});
    let g = schema_to_grammar(&big, "s.json", &SchemaOptions::default())
        .unwrap()
        .grammar;
    let dfas = crate::lexer::compile_lexer(&g).unwrap();
    let lexed = crate::pipeline::LexedGrammar { grammar: g, dfas };
    let parser = crate::pipeline::compile_parser(&lexed, crate::lr::DEFAULT_MAX_STATES).unwrap();
    let states = parser.automaton.tables.num_states;
    assert!(states < 1_000, "{states} LR states");
}

/// Declared order: additional members before the named ones or after them, counted,
/// checked against `additionalProperties`, and with one parse per text (no conflict in
/// the LR(1) automaton: an object of additional members only reads one way).
#[test]
fn additional_members_lead_or_trail_the_declared_ones() {
    let s = json!({"properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {}},
        "required": ["b"], "minProperties": 2, "additionalProperties": {"type": ["integer", "string"]}});
    let ok = accepts(&s, &SchemaOptions::default());
    for t in [
        r#"{"$schema":"s","b":"x"}"#,
        r#"{"b":"x","$schema":"s"}"#,
        r#"{"q":1,"a":1,"b":"x","z":2}"#,
        r#"{"q":1,"r":"t","b":"x","c":null}"#,
        r#"{"b":"x","q":1,"r":2}"#,
    ] {
        assert!(ok(t), "{t}");
    }
    for t in [
        r#"{"q":1,"r":2}"#,
        r#"{"q":1}"#,
        r#"{"b":"x"}"#,
        r#"{"q":[1],"b":"x"}"#,
        r#"{"b":"x","b":"y"}"#,
        r#"{"q":1,"b":"x","b":"y"}"#,
    ] {
        assert!(!ok(t), "{t}");
    }
    for extra in [json!({}), json!({"additionalProperties": false})] {
        let mut s = s.clone();
        s.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        assert_deterministic(&s, &SchemaOptions::default());
    }
}

/// Asserts that the schema's grammar has an LR(1) automaton without conflicts: every
/// text has one parse, and the runtime never forks.
pub(super) fn assert_deterministic(schema: &Value, opts: &SchemaOptions) {
    let g = schema_to_grammar(schema, "s.json", opts).unwrap().grammar;
    let dfas = crate::lexer::compile_lexer(&g).unwrap();
    let lexed = crate::pipeline::LexedGrammar { grammar: g, dfas };
    let parser = crate::pipeline::compile_parser(&lexed, crate::lr::DEFAULT_MAX_STATES).unwrap();
    assert!(
        parser.automaton.conflicts.is_empty(),
        "{schema}: {:?}",
        parser.automaton.conflicts
    );
}

#[test]
fn short_length_bounds_are_exact_at_and_around_every_chunk() {
    // Bounds from one chunk up (chunked) and just below it (one terminal), with lengths
    // at every multiple of the chunk and one either side of it and of each bound.
    let c = super::chunked_string::CHUNK_CHARS as usize;
    let unit = ["a", "\"", "é", "\\", "😀"];
    let bounds: [(Option<usize>, Option<usize>); 10] = [
        (Some(1), Some(255)),
        (None, Some(64)),
        (Some(20), None),
        (Some(3), Some(255)),
        (Some(c), Some(c)),
        (Some(c - 1), Some(c + 1)),
        (None, Some(c)),
        (Some(2 * c), Some(2 * c)),
        (Some(1), Some(c - 1)),
        (Some(c + 3), Some(3 * c - 2)),
    ];
    for (min, max) in bounds {
        let mut s = json!({"type": "object", "properties": {"s": {"type": "string"}}});
        if let Some(m) = min {
            s["properties"]["s"]["minLength"] = json!(m);
        }
        if let Some(m) = max {
            s["properties"]["s"]["maxLength"] = json!(m);
        }
        let ok = accepts(&s, &SchemaOptions::default());
        let top = max.unwrap_or(min.unwrap_or(0) + 3 * c) + c + 1;
        for n in 0..=top.min(80) {
            let value: String = (0..n).map(|i| unit[i % unit.len()]).collect();
            let want = min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m);
            assert_eq!(
                ok(&json!({ "s": value }).to_string()),
                want,
                "{s}: {n} characters"
            );
        }
        for n in [max.unwrap_or(200), max.unwrap_or(200) + 1, top] {
            let value = "x".repeat(n);
            let want = min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m);
            assert_eq!(ok(&json!({ "s": value }).to_string()), want, "{s}: {n} x");
        }
        assert!(!ok(r#"{"s":1}"#) && !ok(r#"{"s":"#));
    }
}

/// Chunked strings of one schema whose bounds share a chunk or an end (the front end
/// writes each `lo..=hi` terminal once per schema): each string keeps its own bounds.
#[test]
fn chunked_strings_of_one_schema_keep_their_own_bounds() {
    let c = super::chunked_string::CHUNK_CHARS as usize;
    let bounds = [
        (c, 2 * c + 1),
        (c + 1, 2 * c + 1),
        (1, 2 * c + 2),
        (c, 3 * c - 2),
    ];
    let mut properties = serde_json::Map::new();
    for (i, (lo, hi)) in bounds.iter().enumerate() {
        properties.insert(
            format!("s{i}"),
            json!({"type": "string", "minLength": lo, "maxLength": hi}),
        );
    }
    let s = json!({"type": "object", "properties": properties});
    let ok = accepts(&s, &SchemaOptions::default());
    for (i, &(lo, hi)) in bounds.iter().enumerate() {
        for n in [lo - 1, lo, lo + 1, hi - 1, hi, hi + 1] {
            let value = "é".repeat(n);
            assert_eq!(
                ok(&json!({ format!("s{i}"): value }).to_string()),
                (lo..=hi).contains(&n),
                "s{i} ({lo}..={hi}): {n} characters"
            );
        }
    }
}

#[test]
fn property_names_outside_a_list_and_not_no_names() {
    let objects = member_subsets(&["1", "2", "3", "4"], &json!([1, 2]));
    for s in [
        // "Some name is 1 or 3, and some name is 2 or 3."
        json!({"type": "object", "not": {"anyOf": [
            {"propertyNames": {"not": {"enum": ["1", "3"]}}},
            {"propertyNames": {"not": {"enum": ["2", "3"]}}}]}, "minProperties": 2}),
        json!({"patternProperties": {"^[0-9]$": {"type": "array"}}, "additionalProperties": false,
               "oneOf": [{"propertyNames": {"not": {"const": "1"}}}, {"required": ["2"]}]}),
        json!({"not": {"propertyNames": false}}),
        json!({"type": "object", "not": {"propertyNames": false}, "maxProperties": 1}),
    ] {
        agrees_with_validator(&s, &objects);
    }
    // A `propertyNames` that allows a finite list is not a presence condition.
    let only = json!({"not": {"propertyNames": {"enum": ["1"]}}});
    let e = schema_to_grammar(&only, "s", &SchemaOptions::default()).unwrap_err();
    assert_eq!(e.issue.keyword.as_deref(), Some("not"));
}

#[test]
fn decimal_bounds_on_numbers() {
    let instances: Vec<Value> = [
        "10.5", "10.49", "10.51", "10.500", "10", "11", "-3.25", "0.1", "0.09", "-0.1", "\"x\"",
    ]
    .iter()
    .map(|t| serde_json::from_str(t).unwrap())
    .collect();
    for s in [
        json!({"type": "number", "maximum": 10.5}),
        json!({"type": "number", "exclusiveMaximum": 10.5, "minimum": 0.1}),
        json!({"type": "number", "exclusiveMinimum": -0.1, "maximum": 10}),
    ] {
        agrees_with_validator(&s, &instances);
    }
}

/// `propertyNames` that no string satisfies leave no name terminal behind: as an empty
/// terminal it made a `%json` block in Lark (whose lexer refuses terminals that match
/// nothing) an error while the schema itself compiles; the object can only be `{}`.
#[test]
fn names_no_string_can_be_leave_no_terminal() {
    let schema = json!({"type": "object", "propertyNames": {"type": "integer"}});
    let lark = format!("start: %json {schema}\n");
    let lexed =
        crate::pipeline::lex_grammar_source(&lark, "names.lark").unwrap_or_else(|e| panic!("{e}"));
    assert!(lexed
        .grammar
        .terminals
        .iter()
        .all(|t| !t.name.starts_with("property name")));
    let ok = accepts(&schema, &SchemaOptions::default());
    assert!(ok("{}") && !ok("{\"a\":1}"));
}

/// A format's terminal, parsed and written once per process, is the one written from
/// its regex afresh, schema after schema, and not the one of the same format under
/// length bounds or a pattern (whose characters differ).
#[test]
fn format_terminals_kept_across_schemas_are_the_ones_written_afresh() {
    let fresh = |f: &str| {
        let re = formats::format_regex(f).expect("a format with a regex");
        string_lang::string_terminal(&string_lang::parse_chars(&re).expect("parses"))
            .expect("writes")
    };
    let terminal_regexes = |schema: Value| -> Vec<String> {
        let g = schema_to_grammar(&schema, "test", &SchemaOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        g.grammar
            .terminals
            .iter()
            .map(|t| t.regex.clone())
            .collect()
    };
    for f in ["date-time", "uuid", "email", "json-pointer"] {
        for round in 0..2 {
            let plain = terminal_regexes(json!({"type": "string", "format": f}));
            assert!(plain.contains(&fresh(f)), "{f}, schema {round}");
        }
    }
    // Length bounds the format's language is cut to (no empty pointer): other
    // characters, another terminal.
    for round in 0..2 {
        let bounded =
            terminal_regexes(json!({"type": "string", "format": "json-pointer", "minLength": 1}));
        assert!(
            !bounded.contains(&fresh("json-pointer")),
            "json-pointer with minLength, schema {round}"
        );
    }
}
