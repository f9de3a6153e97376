//! The JSON Schema front end on real suites, judged by the reference path (Earley).
//!
//! * JSON-Schema-Test-Suite (draft2020-12 and draft7, optional tests included): every
//!   group whose schema compiles must accept each valid instance and reject each
//!   invalid one (instances serialized compactly by serde_json, keys in file order);
//!   a group that does not compile must fail with an error naming a keyword. The
//!   per-file table (printed with `--nocapture`) is the README's; the totals are
//!   asserted so that a regression fails.
//! * MaskBench subset: every schema compiles or fails naming a keyword; instances of
//!   compiled schemas are judged; coverage is compared with llguidance's expected
//!   results.

mod common;
mod compiled_support;

use serde_json::Value;
use stackmask_compiler::budget::Deadline;
use stackmask_compiler::frontend::json_schema::{
    self, Draft, PropertyOrder, SchemaError, SchemaOptions,
};
use stackmask_compiler::pipeline::{self, LexedGrammar};
use stackmask_runtime::reference::ReferenceEngine;
use stackmask_runtime::ByteRecognizer;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const SUITE: &str = "../../shared/corpus/JSON-Schema-Test-Suite/tests";
const MASKBENCH: &str = "../../shared/corpus/jsonschemabench/maskbench_data_subset";
const LLG_EXPECTED: &str = "../../shared/corpus/llguidance/json_stats/expected_maskbench.json";
const SCHEMASTORE: &str = "../../shared/corpus/schemastore/src";

fn corpus(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Why a schema has no engine: the front end refused it (naming a keyword or not), or
/// a lexer limit was hit.
enum Refusal {
    Schema(SchemaError),
    Lexer(String),
}

fn engine_for(
    schema: &Value,
    opts: &SchemaOptions,
    bytes: &stackmask_compiler::vocab::Tokenizer,
) -> Result<(ReferenceEngine, usize), Refusal> {
    let g = json_schema::schema_to_grammar(schema, "schema", opts).map_err(Refusal::Schema)?;
    let dfas = stackmask_compiler::lexer::compile_lexer(&g.grammar)
        .map_err(|e| Refusal::Lexer(e.to_string()))?;
    let lexed = LexedGrammar {
        grammar: g.grammar,
        dfas,
    };
    let engine =
        pipeline::reference_engine(&lexed, bytes).map_err(|e| Refusal::Lexer(e.to_string()))?;
    Ok((engine, g.warnings.len()))
}

fn accepts(engine: &ReferenceEngine, text: &str) -> bool {
    let mut r = engine.recognizer();
    r.push_bytes(text.as_bytes()) && r.is_accepting()
}

#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
struct Row {
    groups: usize,
    compiled: usize,
    refused_named: usize,
    refused_other: usize,
    tests: usize,
    right: usize,
    false_reject: usize,
    false_accept: usize,
}

impl Row {
    fn add(&mut self, o: &Row) {
        self.groups += o.groups;
        self.compiled += o.compiled;
        self.refused_named += o.refused_named;
        self.refused_other += o.refused_other;
        self.tests += o.tests;
        self.right += o.right;
        self.false_reject += o.false_reject;
        self.false_accept += o.false_accept;
    }
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|e| e == "json") {
            out.push(p);
        }
    }
}

/// Runs one draft directory; returns per-file rows and the list of wrong verdicts.
fn run_suite(
    draft_dir: &str,
    draft: Draft,
    order: PropertyOrder,
) -> (BTreeMap<String, Row>, Vec<String>) {
    let bytes = stackmask_compiler::vocab::load_tokenizer("bytes").unwrap();
    let root = corpus(SUITE).join(draft_dir);
    let mut paths = Vec::new();
    files(&root, &mut paths);
    let opts = SchemaOptions {
        draft,
        order,
        ..Default::default()
    };
    let mut rows = BTreeMap::new();
    let mut wrong = Vec::new();
    for path in paths {
        let name = path
            .strip_prefix(&root)
            .unwrap()
            .with_extension("")
            .display()
            .to_string();
        let groups: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let mut row = Row::default();
        for g in &groups {
            row.groups += 1;
            match engine_for(&g["schema"], &opts, &bytes) {
                Err(Refusal::Schema(e)) if e.issue.keyword.is_some() => row.refused_named += 1,
                Err(Refusal::Schema(e)) => {
                    row.refused_other += 1;
                    wrong.push(format!(
                        "{name}: {}: refused without a keyword: {e}",
                        g["description"]
                    ));
                }
                Err(Refusal::Lexer(e)) => {
                    row.refused_other += 1;
                    wrong.push(format!("{name}: {}: lexer: {e}", g["description"]));
                }
                Ok((engine, _)) => {
                    row.compiled += 1;
                    for t in g["tests"].as_array().unwrap() {
                        row.tests += 1;
                        let text = serde_json::to_string(&t["data"]).unwrap();
                        let valid = t["valid"].as_bool().unwrap();
                        let got = accepts(&engine, &text);
                        if got == valid {
                            row.right += 1;
                        } else {
                            if valid {
                                row.false_reject += 1;
                            } else {
                                row.false_accept += 1;
                            }
                            wrong.push(format!(
                                "{name}: {} / {}: {} {text}",
                                g["description"],
                                t["description"],
                                if valid {
                                    "valid rejected"
                                } else {
                                    "invalid accepted"
                                }
                            ));
                        }
                    }
                }
            }
        }
        rows.insert(name, row);
    }
    (rows, wrong)
}

fn table(title: &str, rows: &BTreeMap<String, Row>) -> (String, Row) {
    let mut s = format!(
        "| {title} | groups | compiled | refused (keyword named) | tests in compiled groups | right | valid rejected | invalid accepted |\n|---|---|---|---|---|---|---|---|\n"
    );
    let mut total = Row::default();
    for (name, r) in rows {
        s += &format!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.groups, r.compiled, r.refused_named, r.tests, r.right, r.false_reject, r.false_accept
        );
        total.add(r);
    }
    s += &format!(
        "| **total** | {} | {} | {} | {} | {} | {} | {} |\n",
        total.groups,
        total.compiled,
        total.refused_named,
        total.tests,
        total.right,
        total.false_reject,
        total.false_accept
    );
    (s, total)
}

/// Both drafts in one property order: prints the per-file tables and wrong verdicts;
/// asserts that every refusal names a keyword and no invalid instance is accepted;
/// returns (groups, compiled groups, tests in them, right verdicts, valid instances
/// rejected) per draft.
fn suite_totals(order: PropertyOrder) -> Vec<(usize, usize, usize, usize, usize)> {
    let mut totals = Vec::new();
    for (dir, draft) in [
        ("draft2020-12", Draft::Draft2020),
        ("draft7", Draft::Draft7),
    ] {
        let (rows, wrong) = run_suite(dir, draft, order);
        let (t, total) = table(dir, &rows);
        println!("{t}");
        for w in &wrong {
            println!("WRONG {dir}: {w}");
        }
        totals.push((dir, total));
    }
    for (dir, t) in &totals {
        assert_eq!(t.refused_other, 0, "{dir}: every refusal names a keyword");
        assert_eq!(t.false_accept, 0, "{dir}: no invalid instance accepted");
    }
    totals
        .iter()
        .map(|(_, t)| (t.groups, t.compiled, t.tests, t.right, t.false_reject))
        .collect()
}

#[test]
fn json_schema_test_suite() {
    // The rejections are listed in the README (property order, number forms).
    assert_eq!(suite_totals(PropertyOrder::Declared), EXPECTED_SUITE_TOTALS);
}

const EXPECTED_SUITE_TOTALS: [(usize, usize, usize, usize, usize); 2] =
    [(461, 258, 1371, 1353, 18), (321, 234, 1183, 1177, 6)];

/// The suite with `--property-order any`: the property-order rejections are gone
/// (`allOf` merging, `const` objects), the number forms and 2020-12's asserted
/// `format` remain.
#[test]
fn json_schema_test_suite_any_order() {
    assert_eq!(
        suite_totals(PropertyOrder::Any),
        EXPECTED_SUITE_TOTALS_ANY_ORDER
    );
}

const EXPECTED_SUITE_TOTALS_ANY_ORDER: [(usize, usize, usize, usize, usize); 2] =
    [(461, 258, 1371, 1356, 15), (321, 234, 1183, 1180, 3)];

/// MaskBench subset: strict and lenient coverage, verdicts, and llguidance beside it,
/// in one property order.
fn run_maskbench(step: usize, order: PropertyOrder) -> String {
    let bytes = stackmask_compiler::vocab::load_tokenizer("bytes").unwrap();
    let mut paths = Vec::new();
    files(&corpus(MASKBENCH), &mut paths);
    let expected: serde_json::Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(corpus(LLG_EXPECTED)).unwrap()).unwrap();
    let paths: Vec<&PathBuf> = paths.iter().step_by(step).collect();
    // Files in order on every core; their tallies summed in file order.
    let mut report = String::new();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut refusals: BTreeMap<String, usize> = BTreeMap::new();
    for tally in common::map_on_cores(&paths, |path| {
        maskbench_file(path, &expected, &bytes, order)
    }) {
        report += &tally.report;
        for (k, v) in tally.counts {
            *counts.entry(k).or_default() += v;
        }
        for (k, v) in tally.refusals {
            *refusals.entry(k).or_default() += v;
        }
    }
    for (k, v) in &counts {
        report += &format!("COUNT {k}: {v}\n");
    }
    for (k, v) in &refusals {
        report += &format!("STRICT REFUSAL {k}: {v}\n");
    }
    report
}

/// What one MaskBench file gave: report lines, counts, strict refusals by keyword.
struct MaskbenchTally {
    report: String,
    counts: BTreeMap<&'static str, usize>,
    refusals: BTreeMap<String, usize>,
}

/// One MaskBench file of [`run_maskbench`], strict and lenient.
fn maskbench_file(
    path: &Path,
    expected: &serde_json::Map<String, Value>,
    bytes: &stackmask_compiler::vocab::Tokenizer,
    order: PropertyOrder,
) -> MaskbenchTally {
    let mut report = String::new();
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut refusals: BTreeMap<String, usize> = BTreeMap::new();
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let schema = &doc["schema"];
    let llg_ok = expected
        .get(&name)
        .is_some_and(|v| v.as_object().is_some_and(|o| !o.contains_key("json_error")));
    *counts.entry("files").or_default() += 1;
    if llg_ok {
        *counts.entry("llguidance compiles").or_default() += 1;
    }
    let draft = json_schema::declared_draft(schema).unwrap_or_default();
    for lenient in [false, true] {
        let opts = SchemaOptions {
            lenient,
            draft,
            order,
            ..Default::default()
        };
        let mode = if lenient { "lenient" } else { "strict" };
        match engine_for(schema, &opts, bytes) {
            Err(Refusal::Schema(e))
                if e.issue.keyword.is_none() && e.issue.message.contains("(the limit") =>
            {
                report += &format!("{mode} {name}: limit: {e}\n");
                *counts
                    .entry(if lenient {
                        "lenient grammar size limit"
                    } else {
                        "strict grammar size limit"
                    })
                    .or_default() += 1;
                if !lenient {
                    *refusals.entry("(grammar size limit)".into()).or_default() += 1;
                }
            }
            Err(Refusal::Schema(e)) => {
                let kw = e.issue.keyword.clone().unwrap_or_else(|| "(none)".into());
                if !lenient {
                    *refusals.entry(kw.clone()).or_default() += 1;
                    report += &format!("strict {name}: refused: {e}\n");
                }
                if e.issue.keyword.is_none() {
                    report += &format!("{mode} {name}: refused without a keyword: {e}\n");
                    *counts
                        .entry(if lenient {
                            "lenient refused, no keyword"
                        } else {
                            "strict refused, no keyword"
                        })
                        .or_default() += 1;
                }
            }
            Err(Refusal::Lexer(e)) => {
                report += &format!("{mode} {name}: lexer limit: {e}\n");
                *counts
                    .entry(if lenient {
                        "lenient lexer limit"
                    } else {
                        "strict lexer limit"
                    })
                    .or_default() += 1;
                if !lenient {
                    *refusals.entry("(lexer limit)".into()).or_default() += 1;
                }
            }
            Ok((engine, warnings)) => {
                *counts
                    .entry(if lenient {
                        "lenient compiles"
                    } else {
                        "strict compiles"
                    })
                    .or_default() += 1;
                if !lenient && llg_ok {
                    *counts.entry("strict compiles, llguidance too").or_default() += 1;
                }
                for t in doc["tests"].as_array().into_iter().flatten() {
                    let text = serde_json::to_string(&t["data"]).unwrap();
                    let valid = t["valid"].as_bool().unwrap();
                    let got = accepts(&engine, &text);
                    let key = verdict(valid, got);
                    *counts
                        .entry(if lenient {
                            "lenient instances"
                        } else {
                            "strict instances"
                        })
                        .or_default() += 1;
                    *counts
                        .entry(&*Box::leak(format!("{mode} {key}").into_boxed_str()))
                        .or_default() += 1;
                    if got != valid {
                        report += &format!(
                            "{mode} {name}: {key} ({warnings} warnings): {}\n",
                            &text[..text.len().min(200)]
                        );
                    }
                }
            }
        }
    }
    MaskbenchTally {
        report,
        counts,
        refusals,
    }
}

/// Every 7th MaskBench file (the full subset is the ignored test below).
#[test]
fn maskbench_sample() {
    let report = run_maskbench(7, PropertyOrder::Declared);
    println!("{report}");
    assert!(!report.contains("refused without a keyword"), "{report}");
    assert!(!report.contains("strict invalid accepted:"), "{report}");
}

/// The whole MaskBench subset, in declared order, in any order and in any order where
/// feasible (opt-in: `-- --ignored`). In any order no valid instance of a compiled
/// schema is rejected in strict mode.
#[test]
#[ignore]
fn maskbench_subset() {
    for order in [
        PropertyOrder::Declared,
        PropertyOrder::Any,
        PropertyOrder::AnyOrDeclared,
    ] {
        let report = run_maskbench(1, order);
        println!("PROPERTY ORDER {order:?}\n{report}");
        assert!(!report.contains("refused without a keyword"), "{report}");
        assert!(!report.contains("strict invalid accepted:"), "{report}");
        if order == PropertyOrder::Any {
            assert!(!report.contains("strict valid rejected:"), "{report}");
        }
    }
}

/// SchemaStore's schemas with their JSON documents: `test/NAME/*.json` must validate,
/// `negative_test/NAME/*.json` must not (TOML and YAML documents are not JSON text and
/// are skipped). Strict mode, in `order`; each document written compactly. Returns the
/// report (one line per refusal and per wrong verdict, then the counts).
fn run_schemastore(order: PropertyOrder) -> String {
    let bytes = stackmask_compiler::vocab::load_tokenizer("bytes").unwrap();
    let root = corpus(SCHEMASTORE);
    let mut schemas: Vec<PathBuf> = std::fs::read_dir(root.join("schemas/json"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    schemas.sort();
    let mut report = String::new();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for path in &schemas {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        *counts.entry("schemas").or_default() += 1;
        let opts = SchemaOptions {
            draft: json_schema::declared_draft(&schema).unwrap_or_default(),
            order,
            ..Default::default()
        };
        let engine = match engine_for(&schema, &opts, &bytes) {
            Ok((engine, _)) => engine,
            Err(Refusal::Schema(e)) => {
                report += &format!("{name}: refused: {e}\n");
                *counts.entry("refused").or_default() += 1;
                continue;
            }
            Err(Refusal::Lexer(e)) => {
                report += &format!("{name}: lexer limit: {e}\n");
                *counts.entry("refused").or_default() += 1;
                continue;
            }
        };
        *counts.entry("compiles").or_default() += 1;
        for (dir, valid) in [("test", true), ("negative_test", false)] {
            let mut docs = Vec::new();
            let dir = root.join(dir).join(&name);
            if dir.is_dir() {
                files(&dir, &mut docs);
            }
            for doc in docs {
                let value: Value =
                    serde_json::from_str(&std::fs::read_to_string(&doc).unwrap()).unwrap();
                let got = accepts(&engine, &serde_json::to_string(&value).unwrap());
                let key = verdict(valid, got);
                *counts.entry(key).or_default() += 1;
                if valid != got {
                    let file = doc.file_name().unwrap().to_string_lossy();
                    report += &format!("{name}: {key}: {file}\n");
                }
            }
        }
    }
    for (k, v) in &counts {
        report += &format!("COUNT {k}: {v}\n");
    }
    report
}

/// How an instance was judged: whether it is valid, and whether it was accepted.
fn verdict(valid: bool, accepted: bool) -> &'static str {
    match (valid, accepted) {
        (true, true) => "valid accepted",
        (false, false) => "invalid rejected",
        (true, false) => "valid rejected",
        (false, true) => "invalid accepted",
    }
}

/// SchemaStore in declared order, in any order and in any order where feasible: no
/// negative document is accepted, and in any order no positive document of a compiled
/// schema is rejected (elsewhere member order may reject one; the report lists them).
#[test]
fn schemastore_documents() {
    for order in [
        PropertyOrder::Declared,
        PropertyOrder::Any,
        PropertyOrder::AnyOrDeclared,
    ] {
        let report = run_schemastore(order);
        println!("PROPERTY ORDER {order:?}\n{report}");
        assert!(!report.contains(": invalid accepted: "), "{report}");
        assert!(report.contains("COUNT compiles:"), "{report}");
        if order == PropertyOrder::Any {
            assert!(!report.contains(": valid rejected: "), "{report}");
        }
    }
}

/// End to end on the compiled path (`bytes` vocabulary): the schema groups of a few
/// suite files are compiled to artifacts; each instance's verdict by the compiled
/// `Matcher` is the expected one, and at every step of every instance the compiled mask
/// equals the reference mask.
#[test]
fn compiled_path_on_suite_groups() {
    let (groups_compiled, instances, masks) = compiled_path(
        &[
            "properties",
            "ref",
            "enum",
            "minimum",
            "prefixItems",
            "anyOf",
            "maxLength",
            "dependentRequired",
            "oneOf",
            "uniqueItems",
        ],
        &SchemaOptions::default(),
    );
    println!("{groups_compiled} groups compiled, {instances} instances, {masks} masks compared");
    assert!(
        groups_compiled >= 30 && instances >= 100,
        "{groups_compiled} {instances}"
    );
}

/// As above with `--property-order any`, on the files about objects (the `allOf` and
/// `const` groups whose valid instances write members out of declared order among them).
#[test]
fn compiled_path_on_suite_groups_any_order() {
    let opts = SchemaOptions {
        order: PropertyOrder::Any,
        ..Default::default()
    };
    let (groups_compiled, instances, masks) = compiled_path(
        &[
            "properties",
            "required",
            "additionalProperties",
            "patternProperties",
            "allOf",
            "const",
            "dependentRequired",
            "maxProperties",
            "minProperties",
        ],
        &opts,
    );
    println!("{groups_compiled} groups compiled, {instances} instances, {masks} masks compared");
    assert!(
        groups_compiled >= 40 && instances >= 150,
        "{groups_compiled} {instances}"
    );
}

/// Compiles the groups of draft 2020-12 `files` that the front end accepts, checks
/// verdicts and masks against the reference path; returns (groups, instances, masks).
fn compiled_path(files: &[&str], opts: &SchemaOptions) -> (usize, usize, usize) {
    let root = corpus(SUITE).join("draft2020-12");
    let (mut groups_compiled, mut instances, mut masks) = (0, 0, 0);
    for &file in files {
        let groups: Vec<Value> = serde_json::from_str(
            &std::fs::read_to_string(root.join(format!("{file}.json"))).unwrap(),
        )
        .unwrap();
        for g in &groups {
            let Ok(sg) = json_schema::schema_to_grammar(&g["schema"], file, opts) else {
                continue;
            };
            let tests: Vec<(String, bool)> = g["tests"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    let text = serde_json::to_string(&t["data"]).unwrap();
                    (text, t["valid"].as_bool().unwrap())
                })
                .collect();
            let what = format!("{file}: {}", g["description"]);
            masks +=
                compiled_agrees_with_reference(sg.grammar, &g["schema"], &what, &tests, "bytes");
            groups_compiled += 1;
            instances += tests.len();
        }
    }
    (groups_compiled, instances, masks)
}

/// Compiles a schema's grammar to an artifact for tokenizer `spec` and runs each
/// `(text, valid)` instance through the compiled `Matcher` and the reference matcher
/// side by side: equal masks at every step, and the expected verdict. Returns the
/// number of masks compared.
fn compiled_agrees_with_reference(
    grammar: stackmask_formats::Grammar,
    schema: &Value,
    what: &str,
    tests: &[(String, bool)],
    spec: &str,
) -> usize {
    use stackmask_runtime::reference::ReferenceMatcher;
    use stackmask_runtime::{Engine, Matcher};
    use std::sync::Arc;
    let dfas = stackmask_compiler::lexer::compile_lexer(&grammar).unwrap();
    let lexed = LexedGrammar { grammar, dfas };
    let source = schema.to_string();
    let built = pipeline::build_artifact_from_lexed(
        lexed,
        &source,
        what,
        spec,
        &pipeline::CompileOptions::default(),
        &Deadline::unlimited(),
        |_| {},
    )
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    let engine = Arc::new(
        Engine::from_bytes(stackmask_formats::artifact::AlignedBytes::from_slice(
            &built.bytes,
        ))
        .unwrap(),
    );
    let reference = engine.reference().unwrap();
    let words = engine.mask_words();
    let mut masks = 0;
    for (text, valid) in tests {
        let mut m = Matcher::new(engine.clone());
        let mut r = ReferenceMatcher::new(reference.clone());
        let (mut a, mut b) = (vec![0u32; words], vec![0u32; words]);
        let mut alive = true;
        for (step, tok) in (built.tokenizer.encode(text.as_bytes()).unwrap())
            .into_iter()
            .enumerate()
        {
            m.fill_mask(&mut a);
            r.fill_mask(&mut b);
            masks += 1;
            assert!(
                a == b,
                "{what}: masks differ in {text} before token {step}; first differing ids {:?}",
                compiled_support::mask_diff(&a, &b)
            );
            if m.commit(tok).is_err() {
                alive = false;
                break;
            }
            r.commit(tok).unwrap();
        }
        let accepted = alive && m.is_accepting();
        assert_eq!(accepted, *valid, "{what}: {text}");
    }
    masks
}

/// Strings with length bounds of a chunk or more are chunk lexemes: the compiled
/// path gives the reference masks across chunk boundaries and at both bounds.
#[test]
fn compiled_path_on_chunked_strings() {
    // Long bounds (chunks and a tail at each bound), short ones down to a single chunk,
    // an open maximum, and free whitespace (where strings are one terminal, not chunks).
    let unit = ["a", "\"", "é", "\n"];
    let cases: [(u64, Option<u64>, json_schema::Whitespace); 6] = [
        (1030, Some(1300), json_schema::Whitespace::Compact),
        (1, Some(255), json_schema::Whitespace::Compact),
        (0, Some(64), json_schema::Whitespace::Compact),
        (20, None, json_schema::Whitespace::Compact),
        (3, Some(255), json_schema::Whitespace::Compact),
        (3, Some(40), json_schema::Whitespace::Free),
    ];
    let mut masks = 0;
    for (min, max, whitespace) in cases {
        let mut s = serde_json::json!({"type": "string", "minLength": min});
        if let Some(m) = max {
            s["maxLength"] = m.into();
        }
        let schema = serde_json::json!({"type": "object", "properties": {"s": s}});
        let opts = SchemaOptions {
            whitespace,
            ..SchemaOptions::default()
        };
        let sg = json_schema::schema_to_grammar(&schema, "strings", &opts).unwrap();
        let top = max.unwrap_or(min + 30);
        let mut lengths = vec![min.saturating_sub(1), min, min + 1, min + 7, min + 8];
        lengths.extend([top.saturating_sub(8), top - 1, top, top + 1]);
        let tests: Vec<(String, bool)> = lengths
            .iter()
            .map(|&n| {
                let value: String = (0..n as usize).map(|i| unit[i % unit.len()]).collect();
                let text = if whitespace == json_schema::Whitespace::Free {
                    format!("{{ \"s\" :\n {} }}", serde_json::json!(value))
                } else {
                    serde_json::json!({ "s": value }).to_string()
                };
                (text, n >= min && max.is_none_or(|m| n <= m))
            })
            .collect();
        let what = format!("strings {min}..{max:?} {whitespace:?}");
        masks += compiled_agrees_with_reference(sg.grammar, &schema, &what, &tests, "bytes");
    }
    assert!(masks > 12000, "{masks}");
}

/// Property names for a real vocabulary, whose tokens run on from a name into the
/// colon and the value (`":"`): declared names that are prefixes of each other, an
/// undeclared name of another value type beside them, and nested objects that declare
/// the same names. A name's boundaries are most of a large schema's compile, and the
/// compile shares their walks in several ways (memoized runs of first bytes, walks
/// renamed between objects); the masks must be the reference's at every step, right
/// after a declared name (where `":"` goes on only as an undeclared name, whose value
/// is a string) and inside one. The `bytes` vocabulary of the suite tests has no token
/// that goes on past a name's closing quote.
#[test]
fn compiled_path_on_property_names_with_a_real_vocabulary() {
    let names = [
        "name",
        "namespace",
        "names",
        "nameserver",
        "node",
        "nodeName",
        "kind",
    ];
    let object = |inner: Option<Value>| {
        let mut properties = serde_json::Map::new();
        for n in names {
            properties.insert(n.to_string(), serde_json::json!({"type": "integer"}));
        }
        if let Some(inner) = inner {
            properties.insert("spec".to_string(), inner);
        }
        serde_json::json!({
            "type": "object",
            "properties": properties,
            "additionalProperties": {"type": "string"}
        })
    };
    let schema = object(Some(object(Some(object(None)))));
    let sg = json_schema::schema_to_grammar(&schema, "names", &SchemaOptions::default()).unwrap();
    let tests: Vec<(String, bool)> = [
        // Declared names in declared order, undeclared ones among them.
        (
            r#"{"name":1,"namespace":3,"names":2,"nameserver":4,"nam":"x","namesX":"y"}"#,
            true,
        ),
        (
            r#"{"node":5,"nodeName":4,"kind":6,"nod":"é","kinds":"k"}"#,
            true,
        ),
        (r#"{"spec":{"nameserver":7,"name":"x"}}"#, false),
        (
            r#"{"spec":{"spec":{"namespace":1,"n":"","":"😀"}},"nameservers":"z"}"#,
            true,
        ),
        (r#"{"nam":"x","name":1}"#, true),
        (r#"{"name":"x"}"#, false),
        (r#"{"nam":1}"#, false),
    ]
    .into_iter()
    .map(|(t, v)| (t.to_string(), v))
    .collect();
    let masks = compiled_agrees_with_reference(
        sg.grammar,
        &schema,
        "names",
        &tests,
        "tiktoken:cl100k_base",
    );
    assert!(masks > 60, "{masks}");
}
