//! Every `*.lark` of the shared corpus (Lark's own grammars and examples, and
//! ligurio/lark-grammars) must either parse or fail with an `Unsupported*` error — never
//! with a syntax error or another "your grammar is wrong" error, since all of them are
//! legal Lark. `CORPUS_STATUS.md` lists the failures and why.
//!
//! Run with `--nocapture` to print the status table.

use std::path::{Path, PathBuf};

use super::ast::Item;
use super::{parse_grammar, GrammarErrorKind};

fn corpus_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus")
}

fn lark_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            lark_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "lark") {
            out.push(path);
        }
    }
}

/// Grammars that must keep parsing: a regression here is a bug even though an
/// `Unsupported*` error would pass the general check.
const MUST_PARSE: &[&str] = &[
    "lark/examples/extracted_from_py/json_parser.lark",
    "lark/examples/extracted_from_py/calc.lark",
    "lark/examples/composition/json.lark",
    "lark/examples/composition/csv.lark",
    "lark-grammars-ligurio/lark_grammars/grammars/sqlite.lark",
    "lark-grammars-ligurio/lark_grammars/grammars/mime.lark",
    "lark-grammars-ligurio/lark_grammars/grammars/iso-8601.lark",
];

/// Corpus files that are not usable Lark grammars, with the error we must give. All but
/// `lua.lark` are rejected by Lark 1.3.1 too (`Lark.open(path)`, Earley and LALR), for the
/// same reason; `CORPUS_STATUS.md` has the details.
const EXPECTED_ERRORS: &[(&str, &str)] = &[
    // Library grammars without a `start` rule (Lark: "Using an undefined rule: start").
    // The test also checks that they normalize once a `start` rule is added.
    (
        "lark/examples/extracted_from_py/fruitflies.lark",
        "NoStartRule",
    ),
    ("lark/lark/grammars/unicode.lark", "NoStartRule"),
    ("lark/tests/grammars/ab.lark", "NoStartRule"),
    (
        "lark/tests/grammars/leading_underscore_grammar.lark",
        "NoStartRule",
    ),
    ("lark/tests/grammars/templates.lark", "NoStartRule"),
    ("lark/tests/grammars/test.lark", "NoStartRule"),
    (
        "lark/tests/grammars/test_relative_import_of_nested_grammar__nested_grammar.lark",
        "NoStartRule",
    ),
    ("lark/tests/grammars/test_unicode.lark", "NoStartRule"),
    (
        "lark/tests/grammars/three_rules_using_same_token.lark",
        "NoStartRule",
    ),
    (
        "lark-grammars-ligurio/lark_grammars/grammars/rfc_5321.lark",
        "NoStartRule",
    ),
    (
        "lark-grammars-ligurio/lark_grammars/grammars/rfc_6531.lark",
        "NoStartRule",
    ),
    (
        "lark-grammars-ligurio/lark_grammars/grammars/toml.lark",
        "NoStartRule",
    ),
    // Lark stops earlier, at the mixed-case name `absoluteURI` (it splits it into `absolute`
    // and `URI`); we read mixed-case names as rule names.
    (
        "lark-grammars-ligurio/lark_grammars/grammars/rfc_2396.lark",
        "NoStartRule",
    ),
    // Not Lark syntax (ABNF / ANTLR fragments, `-` in names, `+870` as a value, ...).
    (
        "lark-grammars-ligurio/lark_grammars/grammars/gedcom.lark",
        "Lexical",
    ),
    (
        "lark-grammars-ligurio/lark_grammars/grammars/pf.lark",
        "Lexical",
    ),
    (
        "lark-grammars-ligurio/lark_grammars/grammars/subunit_v1.lark",
        "Lexical",
    ),
    (
        "lark-grammars-ligurio/lark_grammars/grammars/rfc_822.lark",
        "Lexical",
    ),
    (
        "lark-grammars-ligurio/lark_grammars/grammars/rfc_822_datetime.lark",
        "Lexical",
    ),
    (
        "lark-grammars-ligurio/lark_grammars/grammars/phone_number.lark",
        "Syntax",
    ),
    (
        "lark-grammars-ligurio/lark_grammars/grammars/restructuredtext.lark",
        "Syntax",
    ),
    (
        "lark-grammars-ligurio/lark_grammars/grammars/rfc_2397.lark",
        "Syntax",
    ),
    (
        "lark-grammars-ligurio/lark_grammars/grammars/rfc_5545.lark",
        "Syntax",
    ),
    // Lark: "Dynamic Earley doesn't allow zero-width regexps".
    (
        "lark-grammars-ligurio/lark_grammars/grammars/eqn.lark",
        "EmptyTerminal",
    ),
    (
        "lark-grammars-ligurio/lark_grammars/grammars/yaml.lark",
        "EmptyTerminal",
    ),
    // Lark: "Rule 'dataurl' used but not defined".
    (
        "lark-grammars-ligurio/lark_grammars/grammars/rfc_1738.lark",
        "UndefinedSymbol",
    ),
    // Lark: 'Empty terminals are not allowed ("")'. We read `""` as ε (llguidance does),
    // and then `name_part: ... name_part` has no base case.
    (
        "lark-grammars-ligurio/lark_grammars/grammars/postal.lark",
        "Unproductive",
    ),
    // Lark accepts it (it does not check productivity), but `function: function funcbody`
    // can never derive a string: a bug in the grammar.
    (
        "lark-grammars-ligurio/lark_grammars/grammars/lua.lark",
        "Unproductive",
    ),
];

/// The variant name of an error kind (`Syntax`, `NoStartRule`, ...).
fn kind_name(kind: &GrammarErrorKind) -> String {
    let debug = format!("{kind:?}");
    debug
        .split([' ', '{', '('])
        .next()
        .unwrap_or_default()
        .to_string()
}

/// A `start` rule using every rule of the file (every terminal if it has no rules).
fn synthetic_start(text: &str) -> Option<String> {
    let items = super::parse_items(text).ok()?;
    let mut rules = Vec::new();
    let mut terminals = Vec::new();
    for item in &items {
        match item {
            Item::Def(d) if d.name.is_terminal() => terminals.push(d.name.text.as_str()),
            Item::Def(d) if d.params.is_empty() => rules.push(d.name.text.as_str()),
            Item::Import { names, .. } => terminals.extend(
                names
                    .iter()
                    .map(|(name, alias)| alias.as_ref().unwrap_or(name).text.as_str()),
            ),
            _ => {}
        }
    }
    let names = if rules.is_empty() { terminals } else { rules };
    (!names.is_empty()).then(|| format!("\nstart: {}\n", names.join(" | ")))
}

#[test]
fn corpus_grammars_parse_or_are_unsupported() {
    let root = corpus_root();
    if !root.is_dir() {
        println!(
            "note: corpus directory {} not found; skipping the corpus check",
            root.display()
        );
        return;
    }
    let mut files = Vec::new();
    lark_files(&root.join("lark"), &mut files);
    lark_files(&root.join("lark-grammars-ligurio"), &mut files);
    files.sort();
    assert!(
        files.len() >= 60,
        "expected the whole corpus, found {} files",
        files.len()
    );

    let (mut ok, mut unsupported, mut expected_errors) = (0, 0, 0);
    let mut wrong = Vec::new();
    for path in &files {
        let rel = path
            .strip_prefix(&root)
            .unwrap_or(path)
            .display()
            .to_string();
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let result = parse_grammar(&text, &rel);
        let expected = EXPECTED_ERRORS
            .iter()
            .find(|(p, _)| *p == rel)
            .map(|(_, k)| *k);
        match (&result, expected) {
            (Ok(g), None) => {
                ok += 1;
                println!(
                    "| `{rel}` | ok | {} rules, {} terminals |",
                    g.rules.len(),
                    g.terminals.len()
                );
            }
            (Err(e), None) if e.kind.is_unsupported() => {
                unsupported += 1;
                println!(
                    "| `{rel}` | unsupported | {}:{}: {} |",
                    e.line, e.col, e.kind
                );
            }
            (Err(e), Some(kind)) if kind_name(&e.kind) == kind => {
                expected_errors += 1;
                println!(
                    "| `{rel}` | error (expected) | {}:{}: {} |",
                    e.line, e.col, e.kind
                );
            }
            (Ok(_), Some(kind)) => {
                wrong.push(format!("{rel}: parsed, but a {kind} error was expected"))
            }
            (Err(e), _) => wrong.push(format!("{e} [{}]", kind_name(&e.kind))),
        }
        if expected == Some("NoStartRule") {
            // The rest of a library grammar must be fine: give it a `start` and retry.
            // (A file with nothing but a template has nothing to check.)
            if let Some(start) = synthetic_start(&text) {
                match parse_grammar(&format!("{text}{start}"), &rel) {
                    Ok(_) => {}
                    Err(e) if e.kind.is_unsupported() => {}
                    Err(e) => wrong.push(format!("{e} (with a synthetic start rule)")),
                }
            }
        }
        if MUST_PARSE.contains(&rel.as_str()) && result.is_err() {
            wrong.push(format!("{rel} must parse"));
        }
    }
    println!(
        "{} files: {ok} ok, {unsupported} unsupported, {expected_errors} expected errors",
        files.len()
    );
    assert!(
        wrong.is_empty(),
        "corpus grammars with an unexpected result:\n{}",
        wrong.join("\n")
    );
    assert!(ok >= 19, "only {ok} corpus grammars parse");
}
