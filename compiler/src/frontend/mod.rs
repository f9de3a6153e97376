//! The grammar front end: Lark grammar text → normalized BNF [`Grammar`] IR.
//!
//! [`parse_grammar`] is the whole interface. Inside, a hand-written lexer (`token`) feeds
//! a LALRPOP parser (`lark.lalrpop`, generated at build time) that builds a syntax tree
//! (`ast`); `normalize` resolves names, imports the built-in `common` library
//! (`common`), expands terminals into regexes (`terminals`, `regex_translate`) and EBNF
//! into BNF. Every error is a [`GrammarError`] with `file:line:col`.
//!
//! The accepted language is the Lark subset real Lark and llguidance grammars use; see
//! `CORPUS_STATUS.md` in this directory for how the public corpus fares, and
//! [`GrammarErrorKind`] for what is rejected.

mod ast;
mod common;
mod error;
pub mod json_schema;
mod normalize;
mod regex_translate;
mod terminals;
mod token;

#[cfg(test)]
mod corpus_tests;
#[cfg(test)]
mod tests;

lalrpop_util::lalrpop_mod!(
    #[allow(
        clippy::all,
        clippy::pedantic,
        unused_qualifications,
        dead_code,
        missing_docs
    )]
    lark,
    "frontend/lark.rs"
);

pub use error::{GrammarError, GrammarErrorKind};
use stackmask_formats::Grammar;

use error::{LineIndex, PosError};
use lalrpop_util::ParseError;
use token::{Lexer, Tok};

/// Parses Lark grammar text and normalizes it to BNF IR.
///
/// `source_name` (usually the file path) is used in error messages and stored in
/// [`Grammar::source_name`]. The start symbol is the rule named `start`.
///
/// Accepted: rules `name: a b | c` (alternatives may continue on lines starting with `|`),
/// `?name`/`!name`/`_name` and `-> alias` (tree shaping only: kept as ordinary rules,
/// aliases dropped), terminals `NAME: ...` over literals, regexes, ranges and other
/// terminals, `"lit"i`, `/regex/imsxu`, `? * + [ ] ( ) ~ n ~ n..m` and llguidance's
/// `{n,m}`, templates `_sep{x, s}`, priorities `NAME.N` (terminals: stored in
/// `Terminal::priority`; rules: parsed and ignored, GLR keeps every parse), `%ignore`,
/// `%import common.X [-> Y]` / `%import common (X, Y)` (also `unicode`),
/// `%llguidance {"allow_initial_skip": ...}`, llguidance's `NAME[lazy]` and `rule[lazy]`
/// (a lazy rule is one lazy terminal). `""` in a rule means ε. Everything else Lark or
/// llguidance accepts is an `Unsupported*` [`GrammarErrorKind`].
pub fn parse_grammar(source: &str, source_name: &str) -> Result<Grammar, GrammarError> {
    let index = LineIndex::new(source);
    let items = parse_items(source).map_err(|e| index.error(source_name, e))?;
    normalize::normalize(&items, &index, source_name).map_err(|e| index.error(source_name, e))
}

/// Grammar source read as bytes → text: invalid UTF-8 is an error at its `line:col`.
pub fn grammar_text(bytes: Vec<u8>, source_name: &str) -> Result<String, GrammarError> {
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let prefix = std::str::from_utf8(&e.as_bytes()[..valid]).expect("valid up to here");
        LineIndex::new(prefix).error(
            source_name,
            PosError::new(
                valid,
                GrammarErrorKind::Lexical {
                    message: "invalid UTF-8 (grammar files are UTF-8 text)".into(),
                },
            ),
        )
    })
}

/// Parses grammar text into its syntax tree (no name resolution).
fn parse_items(source: &str) -> Result<Vec<ast::Item>, PosError> {
    lark::GrammarParser::new()
        .parse(source, Lexer::new(source))
        .map_err(|e| match e {
            ParseError::User { error } => error,
            ParseError::UnrecognizedToken {
                token: (start, tok, _),
                expected,
            } => PosError::new(
                start,
                GrammarErrorKind::Syntax {
                    found: describe(&tok),
                    expected: clean_expected(expected),
                },
            ),
            ParseError::UnrecognizedEof { location, expected } => PosError::new(
                location,
                GrammarErrorKind::Syntax {
                    found: "end of input".into(),
                    expected: clean_expected(expected),
                },
            ),
            ParseError::ExtraToken {
                token: (start, tok, _),
            } => PosError::new(
                start,
                GrammarErrorKind::Syntax {
                    found: describe(&tok),
                    expected: vec!["end of input".into()],
                },
            ),
            // Only LALRPOP's built-in lexer produces this; ours reports `User` errors.
            ParseError::InvalidToken { location } => PosError::new(
                location,
                GrammarErrorKind::Lexical {
                    message: "invalid token".into(),
                },
            ),
        })
}

/// How a found token is named in a syntax error.
fn describe(tok: &Tok<'_>) -> String {
    match tok {
        Tok::RuleName(n) => format!("rule name `{n}`"),
        Tok::TermName(n) => format!("terminal name `{n}`"),
        Tok::Str(s) => format!("string literal `{}`", s.text),
        Tok::Regex(r) => format!("regex literal `{}`", r.text),
        Tok::Number(n) => format!("number `{n}`"),
        Tok::Repeat(_) => "repetition `{n,m}`".into(),
        Tok::Llguidance(_) => "`%llguidance`".into(),
        Tok::Json(_) => "`%json`".into(),
        Tok::Newline => "end of line".into(),
        Tok::Colon => "`:`".into(),
        Tok::Pipe => "`|`".into(),
        Tok::LParen => "`(`".into(),
        Tok::RParen => "`)`".into(),
        Tok::LBracket => "`[`".into(),
        Tok::RBracket => "`]`".into(),
        Tok::LBrace => "`{`".into(),
        Tok::RBrace => "`}`".into(),
        Tok::Comma => "`,`".into(),
        Tok::Question => "`?`".into(),
        Tok::Star => "`*`".into(),
        Tok::Plus => "`+`".into(),
        Tok::Bang => "`!`".into(),
        Tok::Tilde => "`~`".into(),
        Tok::Dot => "`.`".into(),
        Tok::DotDot => "`..`".into(),
        Tok::Arrow => "`->`".into(),
        Tok::Equals => "`=`".into(),
        Tok::Ignore => "`%ignore`".into(),
        Tok::Import => "`%import`".into(),
        Tok::Declare => "`%declare`".into(),
        Tok::Override => "`%override`".into(),
        Tok::Extend => "`%extend`".into(),
    }
}

/// LALRPOP names expected terminals as they are spelled in `lark.lalrpop`, quoted
/// (`"\":\""`): turn them into `` `:` `` or, for token classes, `rule name`.
fn clean_expected(expected: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = expected
        .into_iter()
        .map(|e| {
            let inner = e
                .strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .unwrap_or(&e)
                .replace("\\\"", "\"");
            match inner.as_str() {
                "rule name" | "terminal name" | "string literal" | "regex literal" | "number" => {
                    inner
                }
                "repetition {n,m}" => "repetition `{n,m}`".into(),
                "newline" => "end of line".into(),
                _ => format!("`{inner}`"),
            }
        })
        .collect();
    out.sort();
    out.dedup();
    out
}
