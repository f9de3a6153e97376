//! The peers' own accept/reject cases, run through the reference recognizer.
//!
//! - llguidance: `../shared/corpus/llguidance/extracted/lark_test_cases.jsonl`, records of
//!   kind `lark_accept_reject`. In llguidance's harness an `accept` string is a sentence; a
//!   plain `reject` string is refused before its end (it is not a viable prefix: some byte
//!   is refused); a `FINAL_REJECT:`-prefixed one is a viable prefix but not a sentence.
//! - xgrammar: `../shared/corpus/xgrammar/extracted/test_accept_reject_cases.jsonl`, groups
//!   of dialect `lark` only. `accept` = a sentence, `reject` = not a sentence (it may
//!   still be a viable prefix).
//!
//! A case is *within our subset* when its grammar goes through `lex_grammar_source` and
//! `ReferenceEngine::new`; otherwise it is counted as outside the subset (with the error).
//! Every case within the subset either agrees with the peer or is listed, with its
//! DESIGN.md §1 reason, in [`EXPECTED_DISAGREEMENTS`]; the test fails on any new
//! disagreement and on any listed one that no longer occurs. The summary is printed and,
//! with `STACKMASK_WRITE_PEER_SUITES=1`, written to `tests/PEER_SUITES.md`.

mod common;

use common::{shared, workspace};
use stackmask_compiler::pipeline::{lex_grammar_source, reference_engine};
use stackmask_compiler::vocab::{load_tokenizer, Tokenizer};
use stackmask_runtime::reference::ReferenceEngine;
use stackmask_runtime::ByteRecognizer;
use std::collections::{BTreeMap, BTreeSet};

/// `(case id, input, reason)`: the cases where we knowingly differ from the peer.
/// Case ids are `llguidance:<upstream file>:<line>` and `xgrammar:<test_fn>#<n>` (the n-th
/// lark group of that test function in the jsonl file, from 1).
const EXPECTED_DISAGREEMENTS: &[(&str, &str, &str)] = &[
    // `start: "\x41\x42"`, plain reject "A". Under §1 "A" is a viable prefix (of "AB"), so
    // it cannot be refused before its end. llguidance refuses it because of *forcing*: the
    // grammar forces the bytes "AB", and llguidance then allows only the canonical token
    // for them, so the token "A" is not in its mask. §1: "stackmask allows every token that
    // has a valid completion" (compare llguidance with `no_forcing`).
    ("llguidance:test_lark.rs:2076", "A", "llguidance forcing: only the canonical token of the forced bytes `AB` is allowed; §1 allows every token with a valid completion, so `A` is a viable prefix"),
    // Trailing `%ignore`: xgrammar lets ignored text follow the last lexeme (these tests say
    // so in their names); §1 allows ignore lexemes only *between* two lexemes, never after
    // the last one (once the sentence is complete only EOS may follow; llguidance agrees).
    // In each case the refused byte is the first byte of the trailing ignored text.
    ("xgrammar:test_lark_ignore_is_inserted_between_and_after_lexemes#1", "a\n1\n c  ", "trailing %ignore (WS after the last lexeme `c`): xgrammar allows it, §1 allows ignore only between lexemes"),
    ("xgrammar:test_lark_multiple_ignore_declarations#1", "a b // trailing", "trailing %ignore (WS + CPP_COMMENT after the last lexeme `b`): xgrammar allows it, §1 allows ignore only between lexemes"),
    ("xgrammar:test_lark_ignore_inline_regex#1", "a _ b___", "trailing %ignore (`___` after the last lexeme `b`): xgrammar allows it, §1 allows ignore only between lexemes"),
    ("xgrammar:test_lark_default_disallows_initial_skip_but_allows_trailing_skip#1", "ab  ", "trailing %ignore (WS_INLINE after the last lexeme `b`): xgrammar allows it, §1 allows ignore only between lexemes"),
    // `start: head`, `head[lazy]: TEXT "<end>"`, `TEXT: /(\n|.)*/`. xgrammar-specific
    // semantics: a lazy head `TEXT "<trigger>"` over any-text compiles to its TagDispatch,
    // in which the free text may also end at EOS without the trigger. In Lark/llguidance and
    // here the rule body is one lazy terminal `(\n|.)*<end>`, ending at the first `<end>`,
    // which must be present: "" and "plain" are viable prefixes, not sentences.
    ("xgrammar:test_lark_standalone_lazy_rule#1", "", "xgrammar-specific: a lazy `TEXT \"<end>\"` head becomes TagDispatch where text may end at EOS without the trigger; §1: the lazy terminal `(\\n|.)*<end>` must match"),
    ("xgrammar:test_lark_standalone_lazy_rule#1", "plain", "xgrammar-specific: a lazy `TEXT \"<end>\"` head becomes TagDispatch where text may end at EOS without the trigger; §1: the lazy terminal `(\\n|.)*<end>` must match"),
    // `%json {…}` (README, JSON Schema "Text form"): instances are written in canonical
    // form — compact (no whitespace), strings with every character raw except the
    // mandatory escapes, integers that may end in a zero fraction (JSON Schema: 1.0 is an
    // integer). The peers read other text forms.
    ("llguidance:test_lark.rs:807", "{\"known\":0,\"\\u00e9\":1}", "%json text form: `\\u00e9` escapes a character that canonical JSON writes raw (`é`); llguidance reads any escape"),
    ("llguidance:test_lark.rs:807", "{\"\\uD83D\\uDE00\":1}", "%json text form: a `\\uXXXX` surrogate pair for a character canonical JSON writes raw; llguidance reads any escape"),
    ("xgrammar:test_lark_inline_json_schemas#2", "1.0", "%json {\"type\":\"integer\"}: JSON Schema counts 1.0 as an integer (README); xgrammar's integers have no fraction"),
    ("xgrammar:test_lark_inline_json_schemas#5", "[ 1, 2, 3 ]", "%json is compact (no whitespace) by default; xgrammar's JSON allows whitespace"),
    ("xgrammar:test_lark_inline_json_schemas#6", "{ \"x\" : -2 }", "%json is compact (no whitespace) by default; xgrammar's JSON allows whitespace"),
    // `"values=" %json {"type":"integer"} "."`: the integer's lexeme may go on with `.`
    // (`1.0` is an integer), so §1's greedy lexing reads `1.` as one unfinished lexeme and
    // the final `.` can never be a separate terminal: a greedy dead end, exact by §1.
    ("xgrammar:test_lark_inline_json_inside_sequence_and_repeat#1", "values=1.", "§1 greedy lexing: `.` continues the integer lexeme (`1.0` is an integer), so `1.` `.` cannot be lexed; xgrammar's lexer backtracks"),
    ("xgrammar:test_lark_inline_json_inside_sequence_and_repeat#1", "values=1;-2;3.", "§1 greedy lexing: `.` continues the integer lexeme (`1.0` is an integer), so `3.` `.` cannot be lexed; xgrammar's lexer backtracks"),
];

/// What the peer says about an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// A sentence.
    Accept,
    /// Not a viable prefix (llguidance plain reject).
    RejectEarly,
    /// A viable prefix, not a sentence (llguidance `FINAL_REJECT:`).
    RejectFinal,
    /// Not a sentence (xgrammar reject).
    Reject,
}

/// What our recognizer does with an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Sentence,
    /// Every byte viable, not a sentence.
    ViableOnly,
    /// Byte at this offset refused.
    RefusedAt(usize),
}

impl Expect {
    fn agrees(self, o: Outcome) -> bool {
        match self {
            Expect::Accept => o == Outcome::Sentence,
            Expect::RejectEarly => matches!(o, Outcome::RefusedAt(_)),
            Expect::RejectFinal => o == Outcome::ViableOnly,
            Expect::Reject => o != Outcome::Sentence,
        }
    }
}

struct Case {
    id: String,
    grammar: String,
    inputs: Vec<(String, Expect)>,
}

fn read_jsonl(path: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: {e}: {l}", path.display())))
        .collect()
}

fn strings(v: &serde_json::Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

fn llguidance_cases() -> Vec<Case> {
    let path = shared().join("corpus/llguidance/extracted/lark_test_cases.jsonl");
    let cases: Vec<Case> = read_jsonl(&path)
        .into_iter()
        .filter(|r| r["kind"] == "lark_accept_reject")
        .map(|r| {
            let source = r["source"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_string();
            let mut inputs: Vec<(String, Expect)> = strings(&r, "accept")
                .into_iter()
                .map(|s| (s, Expect::Accept))
                .collect();
            for s in strings(&r, "reject") {
                match s.strip_prefix("FINAL_REJECT:") {
                    Some(rest) => inputs.push((rest.to_string(), Expect::RejectFinal)),
                    None => inputs.push((s, Expect::RejectEarly)),
                }
            }
            Case {
                id: format!("llguidance:{source}:{}", r["line"]),
                grammar: r["grammar"].as_str().unwrap().to_string(),
                inputs,
            }
        })
        .collect();
    assert_eq!(
        cases.len(),
        61,
        "the corpus README lists 61 lark_accept_reject records"
    );
    cases
}

fn xgrammar_cases() -> Vec<Case> {
    let path = shared().join("corpus/xgrammar/extracted/test_accept_reject_cases.jsonl");
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let cases: Vec<Case> = read_jsonl(&path)
        .into_iter()
        .filter(|r| r["dialect"] == "lark")
        .map(|r| {
            // Our front end starts at `start`; no lark group names another root.
            assert!(
                r["root_rule_name"].is_null(),
                "xgrammar group with a root rule: {r}"
            );
            let test_fn = r["test_fn"].as_str().unwrap().to_string();
            let n = seen.entry(test_fn.clone()).or_default();
            *n += 1;
            let mut inputs: Vec<(String, Expect)> = strings(&r, "accept")
                .into_iter()
                .map(|s| (s, Expect::Accept))
                .collect();
            inputs.extend(
                strings(&r, "reject")
                    .into_iter()
                    .map(|s| (s, Expect::Reject)),
            );
            Case {
                id: format!("xgrammar:{test_fn}#{n}"),
                grammar: r["grammar"].as_str().unwrap().to_string(),
                inputs,
            }
        })
        .collect();
    assert_eq!(cases.len(), 105, "the corpus README lists 105 lark groups");
    cases
}

fn outcome(engine: &ReferenceEngine, input: &[u8]) -> Outcome {
    let mut rec = engine.recognizer();
    for (i, &b) in input.iter().enumerate() {
        if !rec.push_byte(b) {
            return Outcome::RefusedAt(i);
        }
    }
    if rec.is_accepting() {
        Outcome::Sentence
    } else {
        Outcome::ViableOnly
    }
}

#[derive(Default)]
struct Summary {
    groups: usize,
    groups_in: usize,
    strings_in: usize,
    agree: usize,
    disagree: Vec<(String, String, Expect, Outcome)>,
    outside: Vec<(String, usize, String)>,
}

fn run_suite(cases: &[Case], tok: &Tokenizer) -> Summary {
    let mut s = Summary::default();
    for case in cases {
        s.groups += 1;
        let engine = match lex_grammar_source(&case.grammar, &case.id)
            .and_then(|l| reference_engine(&l, tok))
        {
            Ok(e) => e,
            Err(e) => {
                let msg = e.to_string().lines().next().unwrap_or("").to_string();
                s.outside.push((case.id.clone(), case.inputs.len(), msg));
                continue;
            }
        };
        s.groups_in += 1;
        for (input, expect) in &case.inputs {
            s.strings_in += 1;
            let o = outcome(&engine, input.as_bytes());
            if expect.agrees(o) {
                s.agree += 1;
            } else {
                s.disagree
                    .push((case.id.clone(), input.clone(), *expect, o));
            }
        }
    }
    s
}

fn summary_rows(name: &str, s: &Summary) -> String {
    let strings_out: usize = s.outside.iter().map(|o| o.1).sum();
    format!(
        "| {name} | {} | {} ({} strings) | {} | {} | {} ({} strings) |",
        s.groups,
        s.groups_in,
        s.strings_in,
        s.agree,
        s.disagree.len(),
        s.outside.len(),
        strings_out
    )
}

#[test]
fn peer_accept_reject_cases() {
    let tok = load_tokenizer("bytes").unwrap();
    let suites = [
        ("llguidance", run_suite(&llguidance_cases(), &tok)),
        ("xgrammar (lark)", run_suite(&xgrammar_cases(), &tok)),
    ];

    let expected: BTreeSet<(&str, &str)> =
        EXPECTED_DISAGREEMENTS.iter().map(|d| (d.0, d.1)).collect();
    assert_eq!(
        expected.len(),
        EXPECTED_DISAGREEMENTS.len(),
        "duplicate entries in EXPECTED_DISAGREEMENTS"
    );
    let mut actual: BTreeSet<(String, String)> = BTreeSet::new();
    let mut new = Vec::new();
    for (_, s) in &suites {
        for (id, input, expect, o) in &s.disagree {
            actual.insert((id.clone(), input.clone()));
            if !expected.contains(&(id.as_str(), input.as_str())) {
                new.push(format!(
                    "    (\"{}\", \"{}\", \"peer: {expect:?}, ours: {o:?}\"),",
                    id,
                    input.escape_debug()
                ));
            }
        }
    }
    let fixed: Vec<String> = expected
        .iter()
        .filter(|(id, input)| !actual.contains(&(id.to_string(), input.to_string())))
        .map(|(id, input)| format!("{id} {input:?}"))
        .collect();

    let mut report = String::new();
    report.push_str("| suite | groups | within subset | agree | disagree | outside subset |\n|---|---|---|---|---|---|\n");
    for (name, s) in &suites {
        report.push_str(&summary_rows(name, s));
        report.push('\n');
    }
    println!("{report}");
    for (name, s) in &suites {
        println!("{name}: outside the subset:");
        for (id, n, msg) in &s.outside {
            println!("  {id} ({n} strings): {msg}");
        }
        println!("{name}: disagreements:");
        for (id, input, expect, o) in &s.disagree {
            println!("  {id} {input:?}: peer {expect:?}, ours {o:?}");
        }
    }
    if std::env::var_os("STACKMASK_WRITE_PEER_SUITES").is_some() {
        write_report(&suites, &report);
    }
    assert!(
        new.is_empty(),
        "new disagreements (not in EXPECTED_DISAGREEMENTS):\n{}",
        new.join("\n")
    );
    assert!(
        fixed.is_empty(),
        "listed disagreements that no longer occur: {fixed:#?}"
    );
}

fn write_report(suites: &[(&str, Summary)], table: &str) {
    let mut md = String::from(
        "# Peer accept/reject suites (reference recognizer)\n\n\
         Generated by `STACKMASK_WRITE_PEER_SUITES=1 cargo test -p stackmask-tests --test peer_suites`\n\
         (`tests/tests/peer_suites.rs`; its `EXPECTED_DISAGREEMENTS` has the reason for every\n\
         disagreement). Counts are strings unless marked as groups; a group is one grammar with its\n\
         accept/reject strings. Within subset = the grammar goes through our front end.\n\n",
    );
    md.push_str(table);
    for (name, s) in suites {
        md.push_str(&format!("\n## {name}: disagreements\n\n| case | input | peer | ours | reason |\n|---|---|---|---|---|\n"));
        for (id, input, expect, o) in &s.disagree {
            let reason = EXPECTED_DISAGREEMENTS
                .iter()
                .find(|d| d.0 == id && d.1 == input)
                .map(|d| d.2)
                .unwrap_or("(not listed)");
            md.push_str(&format!(
                "| {id} | `{}` | {expect:?} | {o:?} | {reason} |\n",
                input.escape_debug().to_string().replace('|', "\\|")
            ));
        }
        md.push_str(&format!(
            "\n## {name}: outside the subset\n\n| case | strings | error |\n|---|---|---|\n"
        ));
        for (id, n, msg) in &s.outside {
            md.push_str(&format!(
                "| {id} | {n} | {} |\n",
                msg.replace('|', "\\|").replace('`', "'")
            ));
        }
    }
    std::fs::write(workspace().join("tests/PEER_SUITES.md"), md).unwrap();
}
