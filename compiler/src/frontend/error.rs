//! Errors of the grammar front end, and the byte-offset → `line:col` mapping they use.
//!
//! Every error carries the place in the grammar source it is about (the use site for an
//! undefined name, the second definition for a duplicate, the regex for a regex problem),
//! so that `stackmask check` can print `file:line:col: message` like a compiler.

use std::fmt;

use stackmask_formats::display_name::short;
use stackmask_formats::grammar::Location;

/// A grammar that could not be parsed or normalized.
///
/// Displays as `{source_name}:{line}:{col}: {message}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrammarError {
    /// Name of the grammar source (a file path), as given to [`super::parse_grammar`].
    pub source_name: String,
    /// 1-based line of the offending construct.
    pub line: u32,
    /// 1-based column (in characters) of the offending construct.
    pub col: u32,
    /// What is wrong.
    pub kind: GrammarErrorKind,
}

impl fmt::Display for GrammarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.source_name, self.line, self.col, self.kind
        )
    }
}

impl std::error::Error for GrammarError {}

impl GrammarError {
    /// The location of the error as a [`Location`].
    pub fn location(&self) -> Location {
        Location {
            line: self.line,
            col: self.col,
        }
    }
}

/// What is wrong with a grammar.
///
/// The `Unsupported*` kinds mark legal Lark (or llguidance-Lark) that stackmask does not
/// implement; [`GrammarErrorKind::is_unsupported`] tells them apart from real mistakes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GrammarErrorKind {
    /// The parser met a token (or the end of the input) that cannot come here.
    #[error("unexpected {found}; expected {}", list_expected(.expected))]
    Syntax {
        /// Description of what was found (`` `:` ``, `end of input`, ...).
        found: String,
        /// Descriptions of the tokens that would have been accepted here.
        expected: Vec<String>,
    },
    /// The lexer could not make a token out of the input here.
    #[error("{message}")]
    Lexical {
        /// What is wrong (`unterminated string literal`, ...).
        message: String,
    },
    /// A bad `\` escape in a string literal.
    #[error("invalid escape `{escape}` in string literal")]
    InvalidEscape {
        /// The escape as written.
        escape: String,
    },
    /// A name that is used but never defined (or imported).
    #[error("undefined {what} `{}`", short(.name))]
    UndefinedSymbol {
        /// `rule`, `terminal` or `name`.
        what: &'static str,
        /// The name as written.
        name: String,
    },
    /// A rule or terminal defined twice.
    #[error("`{}` is already defined at {first_line}:{first_col}", short(.name))]
    Duplicate {
        /// The name.
        name: String,
        /// Line of the first definition.
        first_line: u32,
        /// Column of the first definition.
        first_col: u32,
    },
    /// A terminal (used by the grammar or ignored) whose language contains the empty
    /// string; the lexer needs every lexeme to be at least one byte long.
    #[error("`{}` is a terminal that can match the empty string (a terminal matches at least one byte; in a rule, write `X?` for an optional terminal, and `\"\"` for the empty sequence)", short(.name))]
    EmptyTerminal {
        /// The terminal's name (the literal's source text for anonymous ones).
        name: String,
    },
    /// A regex uses a feature that has no equivalent in a byte-level DFA / Rust regex.
    #[error("unsupported regex feature: {feature}")]
    UnsupportedRegex {
        /// The feature, e.g. `lookahead (?=...)`.
        feature: String,
    },
    /// A regex that Rust's `regex-syntax` rejects.
    #[error("invalid regex: {message}")]
    InvalidRegex {
        /// The message from `regex-syntax` (first line).
        message: String,
    },
    /// A directive stackmask does not implement (`%declare`, relative `%import`, an
    /// unknown `%llguidance` key, ...).
    #[error("unsupported directive: {directive}")]
    UnsupportedDirective {
        /// The directive (and, where useful, the offending part of it).
        directive: String,
    },
    /// Other Lark / llguidance syntax stackmask does not implement.
    #[error("unsupported syntax: {feature}")]
    UnsupportedSyntax {
        /// The feature.
        feature: String,
    },
    /// A definition attribute (`NAME[attr]`) other than a plain `lazy`.
    #[error("unsupported attribute `{name}`: {reason}")]
    UnsupportedAttribute {
        /// The attribute's name.
        name: String,
        /// Why (`only \`lazy\` is supported`, ...).
        reason: String,
    },
    /// A `%json` schema that is not valid JSON, or that the JSON Schema front end
    /// refuses (naming the keyword and its pointer).
    #[error("`%json`: {message}")]
    JsonSchema {
        /// What is wrong.
        message: String,
    },
    /// A directive that is understood but malformed (e.g. bad JSON in `%llguidance`).
    #[error("invalid directive: {message}")]
    InvalidDirective {
        /// What is wrong.
        message: String,
    },
    /// A reachable rule that derives no finite string of terminals.
    #[error("rule `{}` derives no finite string of terminals (every alternative recurses without reaching a base case)", short(.rule))]
    Unproductive {
        /// The rule.
        rule: String,
    },
    /// `A ⇒+ A`: a nonterminal derives itself, which makes the grammar infinitely
    /// ambiguous and sends LR/GLR parsers into endless reductions.
    #[error("cyclic derivation {} (a rule derives itself without consuming input)", .cycle.join(" => "))]
    CyclicUnitRules {
        /// The nonterminals on the cycle, the first repeated at the end.
        cycle: Vec<String>,
    },
    /// A terminal defined (directly or indirectly) in terms of itself.
    #[error("terminal defined in terms of itself: {}", .cycle.join(" -> "))]
    TerminalCycle {
        /// The terminals on the cycle, the first repeated at the end.
        cycle: Vec<String>,
    },
    /// A terminal definition that refers to a rule.
    #[error("terminal `{}` refers to rule `{}`; terminals may only use literals, regexes and other terminals", short(.terminal), short(.rule))]
    RuleInTerminal {
        /// The terminal being defined.
        terminal: String,
        /// The rule it refers to.
        rule: String,
    },
    /// `%ignore` given a rule.
    #[error("`%ignore` needs a terminal, but `{}` is a rule", short(.name))]
    IgnoreRule {
        /// The rule name.
        name: String,
    },
    /// A bad `"a".."z"` character range.
    #[error("invalid character range: {message}")]
    InvalidRange {
        /// What is wrong.
        message: String,
    },
    /// A bad `~ n..m` / `{n,m}` repetition.
    #[error("invalid repetition: {message}")]
    InvalidRepeat {
        /// What is wrong.
        message: String,
    },
    /// A template used with the wrong number of arguments, a non-template used with
    /// arguments, or a template used without them.
    #[error("template `{name}`: {message}")]
    Template {
        /// The template (or rule) name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The grammar is too large for one of the front end's limits (nesting, expanded
    /// size), which keep hostile or runaway grammars from exhausting memory or stack.
    #[error("{what} exceeds the limit of {limit}")]
    LimitExceeded {
        /// What is too large.
        what: String,
        /// The limit, with its unit.
        limit: String,
    },
    /// A terminal whose language is empty: it matches no byte string at all.
    #[error("`{}` is a terminal that matches nothing (its language is empty)", short(.name))]
    EmptyLanguageTerminal {
        /// The terminal's name (the literal's source text for anonymous ones).
        name: String,
    },
    /// The grammar has no rule named `start`.
    #[error("no `start` rule: the start symbol is the rule named `start`")]
    NoStartRule,
}

impl GrammarErrorKind {
    /// Whether this error is about legal input that stackmask does not implement, as
    /// opposed to a mistake in the grammar.
    pub fn is_unsupported(&self) -> bool {
        matches!(
            self,
            GrammarErrorKind::UnsupportedRegex { .. }
                | GrammarErrorKind::UnsupportedDirective { .. }
                | GrammarErrorKind::UnsupportedSyntax { .. }
                | GrammarErrorKind::UnsupportedAttribute { .. }
        )
    }
}

fn list_expected(expected: &[String]) -> String {
    match expected {
        [] => "nothing more".to_string(),
        [one] => one.clone(),
        many => format!("one of {}", many.join(", ")),
    }
}

/// An error before it is placed in a file: a byte offset into the source and a kind.
///
/// The lexer, the parser actions and normalization all produce these; [`LineIndex`]
/// turns them into [`GrammarError`]s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PosError {
    /// Byte offset into the source text.
    pub pos: usize,
    /// What is wrong.
    pub kind: GrammarErrorKind,
}

impl PosError {
    /// An error at byte offset `pos`.
    pub fn new(pos: usize, kind: GrammarErrorKind) -> Self {
        PosError { pos, kind }
    }
}

/// Maps byte offsets of one source text to 1-based line and column (in characters).
pub struct LineIndex<'a> {
    src: &'a str,
    /// Byte offset of the start of every line.
    line_starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    /// Indexes `src`.
    pub fn new(src: &'a str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(src.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { src, line_starts }
    }

    /// The location of byte offset `pos` (clamped to the end of the source).
    pub fn location(&self, pos: usize) -> Location {
        let pos = pos.min(self.src.len());
        let line = self.line_starts.partition_point(|&s| s <= pos) - 1;
        let start = self.line_starts[line];
        // Offsets always come from token boundaries, but be robust to a mid-char one.
        let mut prefix = self
            .src
            .get(start..pos)
            .map_or(pos - start, |s| s.chars().count());
        // A byte order mark is skipped by the lexer and shown by no editor: not a column.
        if line == 0 && pos > 0 && self.src.starts_with('\u{feff}') {
            prefix -= 1;
        }
        Location {
            line: line as u32 + 1,
            col: prefix as u32 + 1,
        }
    }

    /// Places a [`PosError`] in the file `source_name`.
    pub fn error(&self, source_name: &str, err: PosError) -> GrammarError {
        let loc = self.location(err.pos);
        GrammarError {
            source_name: source_name.to_string(),
            line: loc.line,
            col: loc.col,
            kind: err.kind,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_index_maps_offsets() {
        let idx = LineIndex::new("ab\ncdé\n\nx");
        assert_eq!(idx.location(0), Location { line: 1, col: 1 });
        assert_eq!(idx.location(2), Location { line: 1, col: 3 });
        assert_eq!(idx.location(3), Location { line: 2, col: 1 });
        // `é` is two bytes but one column.
        assert_eq!(idx.location(7), Location { line: 2, col: 4 });
        assert_eq!(idx.location(8), Location { line: 3, col: 1 });
        assert_eq!(idx.location(9), Location { line: 4, col: 1 });
        assert_eq!(idx.location(100), Location { line: 4, col: 2 });
    }

    #[test]
    fn a_byte_order_mark_is_not_a_column() {
        let idx = LineIndex::new("\u{feff}ab\ncd");
        assert_eq!(idx.location(3), Location { line: 1, col: 1 });
        assert_eq!(idx.location(4), Location { line: 1, col: 2 });
        assert_eq!(idx.location(6), Location { line: 2, col: 1 });
    }

    #[test]
    fn display_has_file_line_col() {
        let e = GrammarError {
            source_name: "g.lark".into(),
            line: 3,
            col: 7,
            kind: GrammarErrorKind::Syntax {
                found: "`)`".into(),
                expected: vec!["`:`".into(), "newline".into()],
            },
        };
        assert_eq!(
            e.to_string(),
            "g.lark:3:7: unexpected `)`; expected one of `:`, newline"
        );
        assert!(!e.kind.is_unsupported());
        assert!(GrammarErrorKind::UnsupportedDirective {
            directive: "%declare".into()
        }
        .is_unsupported());
    }
}
