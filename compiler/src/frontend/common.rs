//! The built-in libraries `%import common.NAME` and `%import unicode.NAME` draw from.
//!
//! They are Lark source, parsed by our own parser on first use. The text follows Lark's
//! `lark/grammars/common.lark` and `unicode.lark` exactly, except for the two terminals
//! whose Lark definitions rely on Python's shortest-match regex semantics, which a
//! terminal's *language* (what stackmask's DFAs and greedy lexing use) cannot express:
//! `_STRING_ESC_INNER` (a lookbehind) and the bodies of `ESCAPED_STRING` and `C_COMMENT`
//! (lazy `*?`, which only picks the shortest match — as a language `".*?"` also contains
//! `"a" "b"`, so a greedy lexer would run past the closing quote). Each is rewritten to a
//! regex whose language is exactly the set of strings Lark matches.

use std::sync::OnceLock;

use super::ast::Item;

/// `common.lark` from Lark (MIT, © 2017 Erez Shinan), with the rewrites described above.
pub const COMMON_LARK: &str = r#"
// Basic terminals for common use


//
// Numbers
//

DIGIT: "0".."9"
HEXDIGIT: "a".."f"|"A".."F"|DIGIT

INT: DIGIT+
SIGNED_INT: ["+"|"-"] INT
DECIMAL: INT "." INT? | "." INT

// float = /-?\d+(\.\d+)?([eE][+-]?\d+)?/
_EXP: ("e"|"E") SIGNED_INT
FLOAT: INT _EXP | DECIMAL _EXP?
SIGNED_FLOAT: ["+"|"-"] FLOAT

NUMBER: FLOAT | INT
SIGNED_NUMBER: ["+"|"-"] NUMBER

//
// Strings
//
_STRING_INNER: /.*?/
// Lark: _STRING_INNER /(?<!\\)(\\\\)*?/ — any line that does not end in an odd number
// of backslashes; a backslash always pairs with the next character.
_STRING_ESC_INNER: /(?:[^\\\n]|\\[^\n])*/

// Lark: "\"" _STRING_ESC_INNER "\"" — the closing quote is the first one not escaped.
ESCAPED_STRING : "\"" /(?:[^"\\\n]|\\[^\n])*/ "\""


//
// Names (Variables)
//
LCASE_LETTER: "a".."z"
UCASE_LETTER: "A".."Z"

LETTER: UCASE_LETTER | LCASE_LETTER
WORD: LETTER+

CNAME: ("_"|LETTER) ("_"|LETTER|DIGIT)*


//
// Whitespace
//
WS_INLINE: (" "|/\t/)+
WS: /[ \t\f\r\n]/+

CR : /\r/
LF : /\n/
NEWLINE: (CR? LF)+


// Comments
SH_COMMENT: /#[^\n]*/
CPP_COMMENT: /\/\/[^\n]*/
// Lark: "/*" /(.|\n)*?/ "*/" — ends at the first "*/".
C_COMMENT: "/*" /[^*]*\*+(?:[^\/*][^*]*\*+)*/ "/"
SQL_COMMENT: /--[^\n]*/
"#;

/// `unicode.lark` from Lark (MIT, © 2017 Erez Shinan), unchanged.
pub const UNICODE_LARK: &str = r#"
//
// Whitespace
//
WS_INLINE: /[ \t\xa0]/+
WS: /[ \t\xa0\f\r\n]/+
"#;

/// A built-in library: its name and parsed items.
#[derive(Debug)]
pub struct Library {
    /// The module name used in `%import`.
    pub name: &'static str,
    /// The parsed definitions.
    pub items: Vec<Item>,
}

/// The built-in library named `name` (`common` or `unicode`), parsed once.
pub fn library(name: &str) -> Option<&'static Library> {
    static COMMON: OnceLock<Library> = OnceLock::new();
    static UNICODE: OnceLock<Library> = OnceLock::new();
    let (cell, name, source) = match name {
        "common" => (&COMMON, "common", COMMON_LARK),
        "unicode" => (&UNICODE, "unicode", UNICODE_LARK),
        _ => return None,
    };
    Some(cell.get_or_init(|| {
        // The libraries are part of this crate: a parse error is a bug, caught by the tests.
        let items = super::parse_items(source)
            .unwrap_or_else(|e| panic!("built-in library `{name}` does not parse: {e:?}"));
        Library { name, items }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontend::parse_grammar;

    /// Expands one imported terminal and returns its regex.
    fn regex_of(name: &str) -> String {
        let src = format!("%import common.{name}\nstart: {name}\n");
        let g = parse_grammar(&src, "t.lark").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(g.terminals.len(), 1);
        assert_eq!(g.terminals[0].name, name);
        g.terminals[0].regex.clone()
    }

    fn full_match(re: &str, s: &str) -> bool {
        regex_automata::meta::Regex::new(&format!("^(?:{re})$"))
            .unwrap()
            .is_match(s)
    }

    #[test]
    fn every_common_terminal_imports() {
        let lib = library("common").unwrap();
        let mut count = 0;
        for item in &lib.items {
            if let Item::Def(d) = item {
                if d.name.text == "_STRING_INNER" || d.name.text == "_STRING_ESC_INNER" {
                    continue; // match the empty string: only usable inside other terminals
                }
                regex_of(&d.name.text);
                count += 1;
            }
        }
        assert!(count >= 25, "{count}");
        assert!(library("unicode").is_some());
        assert!(library("python").is_none());
    }

    #[test]
    fn numbers() {
        let int = regex_of("INT");
        assert!(full_match(&int, "0123") && !full_match(&int, "1.0"));
        let n = regex_of("SIGNED_NUMBER");
        for ok in ["-1", "+2.5", "3e10", ".5", "1.", "-1.5E-3"] {
            assert!(full_match(&n, ok), "{ok}");
        }
        for bad in ["", "-", "e5", "1e", "1..2"] {
            assert!(!full_match(&n, bad), "{bad}");
        }
        assert_eq!(regex_of("DIGIT"), "[0-9]");
    }

    #[test]
    fn escaped_string_stops_at_the_first_unescaped_quote() {
        let s = regex_of("ESCAPED_STRING");
        for ok in [
            r#""""#,
            r#""a""#,
            r#""a\"b""#,
            r#""a\\""#,
            r#""\\\"""#,
            r#""é""#,
        ] {
            assert!(full_match(&s, ok), "{ok}");
        }
        for bad in [r#""a"b""#, r#""a\""#, r#""a\\"b""#, "\"a\nb\"", r#""abc"#] {
            assert!(!full_match(&s, bad), "{bad}");
        }
    }

    #[test]
    fn c_comment_stops_at_the_first_close() {
        let c = regex_of("C_COMMENT");
        for ok in ["/**/", "/* a */", "/* * / ** */", "/*\n*/", "/***/"] {
            assert!(full_match(&c, ok), "{ok}");
        }
        for bad in ["/* a */ b */", "/*/", "/* a *"] {
            assert!(!full_match(&c, bad), "{bad}");
        }
    }

    #[test]
    fn whitespace_and_names() {
        let ws = regex_of("WS");
        assert!(full_match(&ws, " \t\r\n") && !full_match(&ws, "x"));
        let nl = regex_of("NEWLINE");
        assert!(full_match(&nl, "\r\n\n") && !full_match(&nl, "\r"));
        let cname = regex_of("CNAME");
        assert!(full_match(&cname, "_a1") && !full_match(&cname, "1a"));
    }
}
