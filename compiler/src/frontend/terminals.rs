//! Terminal definitions → one Rust regex each.
//!
//! A Lark terminal is a regular expression written in EBNF: literals, regexes, ranges and
//! references to other terminals, combined with `|`, sequence, `? * + ~ n..m` and groups.
//! This module inlines the references (rejecting cycles and references to rules) and
//! renders the result as a single regex string, adding `(?:...)` only where precedence
//! needs it. Terminals imported from a built-in library are expanded inside that library's
//! own namespace, as Lark does.

use std::collections::HashMap;

use super::ast::{Atom, Def, Expansions, Literal, LiteralKind, Name, Op};
use super::common::Library;
use super::error::{GrammarErrorKind, PosError};
use super::regex_translate;

/// How tightly a rendered regex binds, to decide where to add `(?:...)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Prec {
    /// A single character, class or group: can take a quantifier as is.
    Atom,
    /// A quantified atom: can be concatenated, but needs a group to be quantified again.
    Quant,
    /// A concatenation: needs a group to be quantified.
    Concat,
    /// An alternation: needs a group to be concatenated or quantified.
    Alt,
}

/// A rendered regex fragment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    /// The regex text (empty for the empty string).
    pub re: String,
    prec: Prec,
}

impl Piece {
    fn empty() -> Piece {
        Piece {
            re: String::new(),
            prec: Prec::Concat,
        }
    }

    fn is_empty(&self) -> bool {
        self.re.is_empty()
    }

    /// As something a quantifier can follow.
    fn as_atom(&self) -> String {
        if self.prec == Prec::Atom {
            self.re.clone()
        } else {
            format!("(?:{})", self.re)
        }
    }
}

/// The regex of a `"..."` or `/.../` literal.
pub fn literal_piece(lit: &Literal) -> Result<Piece, GrammarErrorKind> {
    match lit.kind {
        LiteralKind::Str => {
            if lit.value.is_empty() {
                return Ok(Piece::empty());
            }
            let escaped = escape_literal(&lit.value);
            Ok(if lit.flags.contains('i') {
                Piece {
                    re: format!("(?i:{escaped})"),
                    prec: Prec::Atom,
                }
            } else if lit.value.chars().count() == 1 {
                Piece {
                    re: escaped,
                    prec: Prec::Atom,
                }
            } else {
                Piece {
                    re: escaped,
                    prec: Prec::Concat,
                }
            })
        }
        LiteralKind::Regex => Ok(Piece {
            re: regex_translate::translate(&lit.value, &lit.flags)?,
            prec: Prec::Atom,
        }),
    }
}

/// Escapes a literal for a regex: meta characters with `\`, control characters as
/// `\x{..}` (so that the IR stays printable).
fn escape_literal(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if regex_syntax::is_meta_character(c) {
            out.push('\\');
            out.push(c);
        } else if c.is_control() {
            out.push_str(&format!("\\x{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

fn class_char(c: char) -> String {
    if c.is_alphanumeric() {
        c.to_string()
    } else {
        format!("\\x{{{:x}}}", c as u32)
    }
}

/// The regex of a `"a".."z"` range.
pub fn range_piece(from: &Literal, to: &Literal) -> Result<Piece, PosError> {
    let single = |lit: &Literal, which: &str| -> Result<char, PosError> {
        let mut chars = lit.value.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => Ok(c),
            _ => Err(PosError::new(
                lit.pos,
                GrammarErrorKind::InvalidRange {
                    message: format!("range {which} {} must be a single character", lit.text),
                },
            )),
        }
    };
    let (a, b) = (single(from, "start")?, single(to, "end")?);
    if a > b {
        return Err(PosError::new(
            from.pos,
            GrammarErrorKind::InvalidRange {
                message: format!("range start {} comes after its end {}", from.text, to.text),
            },
        ));
    }
    let class = format!("[{}-{}]", class_char(a), class_char(b));
    let re = if from.flags.contains('i') || to.flags.contains('i') {
        format!("(?i:{class})")
    } else {
        class
    };
    Ok(Piece {
        re,
        prec: Prec::Atom,
    })
}

fn concat(pieces: Vec<Piece>) -> Piece {
    let mut pieces: Vec<Piece> = pieces.into_iter().filter(|p| !p.is_empty()).collect();
    match pieces.len() {
        0 => Piece::empty(),
        1 => pieces.pop().expect("one piece"),
        _ => {
            let re = pieces
                .iter()
                .map(|p| {
                    if p.prec == Prec::Alt {
                        format!("(?:{})", p.re)
                    } else {
                        p.re.clone()
                    }
                })
                .collect();
            Piece {
                re,
                prec: Prec::Concat,
            }
        }
    }
}

fn alternate(mut pieces: Vec<Piece>) -> Piece {
    pieces.dedup();
    if pieces.len() == 1 {
        return pieces.pop().expect("one piece");
    }
    // `(?:)` rather than an empty branch: clearer, and valid in every regex dialect.
    let re = pieces
        .iter()
        .map(|p| {
            if p.is_empty() {
                "(?:)".to_string()
            } else {
                p.re.clone()
            }
        })
        .collect::<Vec<_>>()
        .join("|");
    Piece {
        re,
        prec: Prec::Alt,
    }
}

/// Checks a `~ n..m` / `{n,m}` count, shared with rule normalization.
pub fn check_repeat(min: i64, max: Option<i64>, limit: i64) -> Result<(), GrammarErrorKind> {
    let bad = |message: String| Err(GrammarErrorKind::InvalidRepeat { message });
    if min < 0 {
        return bad(format!("count {min} must be >= 0"));
    }
    if let Some(max) = max {
        if max < min {
            return bad(format!("range end {max} must be >= start {min}"));
        }
    }
    let largest = max.unwrap_or(min);
    if largest > limit {
        return bad(format!(
            "count {largest} is too large (the limit is {limit})"
        ));
    }
    Ok(())
}

/// Largest repetition count accepted in a terminal (regex-syntax's own limit is higher,
/// but the lexer's DFAs would not survive it anyway).
const MAX_TERMINAL_REPEAT: i64 = 1000;
/// Deepest chain of terminals defined through other terminals.
const MAX_TERMINAL_DEPTH: usize = 256;
/// Longest regex a terminal may expand to (its DFA is limited separately, in the lexer).
const MAX_TERMINAL_REGEX_LEN: usize = 1 << 20;

fn quantify(piece: Piece, op: Op) -> Result<Piece, GrammarErrorKind> {
    if piece.is_empty() {
        if let Op::Repeat { min, max } = op {
            check_repeat(min, max, MAX_TERMINAL_REPEAT)?;
        }
        return Ok(piece);
    }
    let atom = piece.as_atom();
    let re = match op {
        Op::Opt => format!("{atom}?"),
        Op::Star => format!("{atom}*"),
        Op::Plus => format!("{atom}+"),
        Op::Repeat { min, max } => {
            check_repeat(min, max, MAX_TERMINAL_REPEAT)?;
            match max {
                Some(max) if max == min => format!("{atom}{{{min}}}"),
                Some(max) => format!("{atom}{{{min},{max}}}"),
                None => format!("{atom}{{{min},}}"),
            }
        }
    };
    Ok(Piece {
        re,
        prec: Prec::Quant,
    })
}

/// Where a terminal name is looked up: the grammar itself, or a built-in library.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Scope {
    Main,
    Lib(&'static str),
}

/// What a terminal name in the main grammar stands for.
#[derive(Clone, Copy, Debug)]
pub enum Binding<'a> {
    /// A definition in the grammar.
    Def(&'a Def),
    /// `%import lib.NAME [-> ALIAS]`: `name` in `lib`, imported at byte `pos`.
    Import {
        /// The library.
        lib: &'static Library,
        /// The terminal's name in the library.
        name: &'static str,
        /// Where the import names it (errors inside the library are reported here).
        pos: usize,
    },
}

/// Expands terminal names to regexes, memoized.
pub struct TerminalExpander<'a> {
    main: HashMap<&'a str, Binding<'a>>,
    /// Rule names of the main grammar, to report "terminal refers to rule".
    rules: HashMap<&'a str, ()>,
    libs: HashMap<&'static str, HashMap<&'static str, &'static Def>>,
    memo: HashMap<(Scope, String), Piece>,
    /// Terminals being expanded, for cycle detection.
    stack: Vec<(Scope, String)>,
}

impl<'a> TerminalExpander<'a> {
    /// An expander over the main grammar's terminal `bindings`; `rules` are its rule names.
    pub fn new(
        bindings: HashMap<&'a str, Binding<'a>>,
        rules: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let mut libs = HashMap::new();
        for b in bindings.values() {
            if let Binding::Import { lib, .. } = b {
                libs.entry(lib.name).or_insert_with(|| {
                    lib.items
                        .iter()
                        .filter_map(|i| match i {
                            super::ast::Item::Def(d) => Some((d.name.text.as_str(), d)),
                            _ => None,
                        })
                        .collect()
                });
            }
        }
        TerminalExpander {
            main: bindings,
            rules: rules.into_iter().map(|r| (r, ())).collect(),
            libs,
            memo: HashMap::new(),
            stack: Vec::new(),
        }
    }

    /// Whether `name` is a terminal of the main grammar.
    pub fn is_defined(&self, name: &str) -> bool {
        self.main.contains_key(name)
    }

    /// The binding of a main-grammar terminal.
    pub fn binding(&self, name: &str) -> Option<Binding<'a>> {
        self.main.get(name).copied()
    }

    /// The full regex of the main-grammar terminal `name`, used at byte `use_pos`.
    pub fn regex_of(&mut self, name: &str, use_pos: usize) -> Result<String, PosError> {
        Ok(self.expand(Scope::Main, name, use_pos, "%ignore")?.re)
    }

    /// The regex of an expression in terminal context (`%ignore` bodies).
    pub fn expand_expression(
        &mut self,
        body: &Expansions,
        owner: &str,
    ) -> Result<String, PosError> {
        Ok(self.expand_body(Scope::Main, body, owner)?.re)
    }

    fn expand(
        &mut self,
        scope: Scope,
        name: &str,
        use_pos: usize,
        user: &str,
    ) -> Result<Piece, PosError> {
        let key = (scope, name.to_string());
        if let Some(p) = self.memo.get(&key) {
            return Ok(p.clone());
        }
        if let Some(i) = self.stack.iter().position(|k| *k == key) {
            let mut cycle: Vec<String> = self.stack[i..].iter().map(|(_, n)| n.clone()).collect();
            cycle.push(name.to_string());
            return Err(PosError::new(
                use_pos,
                GrammarErrorKind::TerminalCycle { cycle },
            ));
        }
        // Terminals are expanded recursively; a long chain `A1: A0`, `A2: A1`, ... must end
        // in an error, not in a stack overflow.
        if self.stack.len() >= MAX_TERMINAL_DEPTH {
            return Err(PosError::new(
                use_pos,
                GrammarErrorKind::LimitExceeded {
                    what: format!("terminal `{name}`: terminals defined through other terminals"),
                    limit: format!("{MAX_TERMINAL_DEPTH} levels deep"),
                },
            ));
        }
        let binding = match scope {
            Scope::Main => self.main.get(name).copied(),
            Scope::Lib(lib) => self.libs[lib].get(name).map(|d| Binding::Def(d)),
        };
        let piece = match binding {
            None if scope == Scope::Main && self.rules.contains_key(name) => {
                return Err(PosError::new(
                    use_pos,
                    GrammarErrorKind::RuleInTerminal {
                        terminal: user.to_string(),
                        rule: name.to_string(),
                    },
                ))
            }
            None => {
                return Err(PosError::new(
                    use_pos,
                    GrammarErrorKind::UndefinedSymbol {
                        what: "terminal",
                        name: name.to_string(),
                    },
                ))
            }
            Some(Binding::Import {
                lib,
                name: lib_name,
                pos,
            }) => {
                self.stack.push(key.clone());
                let r = self.expand(Scope::Lib(lib.name), lib_name, pos, name);
                self.stack.pop();
                // The library's offsets mean nothing in the user's file: point at the import.
                r.map_err(|e| PosError::new(pos, e.kind))?
            }
            Some(Binding::Def(def)) => {
                self.stack.push(key.clone());
                let r = self.expand_body(scope, &def.body, &def.name.text);
                self.stack.pop();
                let piece = r?;
                // Validate each definition on its own, so that an error points at it.
                regex_translate::parse_hir(&piece.re)
                    .map_err(|k| PosError::new(def.name.pos, k))?;
                piece
            }
        };
        self.memo.insert(key, piece.clone());
        Ok(piece)
    }

    fn expand_body(
        &mut self,
        scope: Scope,
        body: &Expansions,
        owner: &str,
    ) -> Result<Piece, PosError> {
        let mut alts = Vec::with_capacity(body.len());
        // Bytes of regex gathered so far, checked as pieces arrive: terminals built from
        // terminals can double at every level (`A1: A0 A0`, `A2: A1 A1`, ...), and a body
        // that uses a large terminal many times must fail before it is concatenated.
        let mut size = 0usize;
        for alt in body {
            let mut seq = Vec::with_capacity(alt.items.len());
            for expr in &alt.items {
                let piece = self.expand_atom(scope, &expr.atom, owner)?;
                size += piece.re.len();
                if size > MAX_TERMINAL_REGEX_LEN {
                    return Err(PosError::new(
                        expr.pos,
                        GrammarErrorKind::LimitExceeded {
                            what: format!("terminal `{owner}`: its expanded regex"),
                            limit: format!("{MAX_TERMINAL_REGEX_LEN} bytes"),
                        },
                    ));
                }
                seq.push(match expr.op {
                    None => piece,
                    Some(op) => quantify(piece, op).map_err(|k| PosError::new(expr.pos, k))?,
                });
            }
            alts.push(concat(seq));
        }
        Ok(alternate(alts))
    }

    fn expand_atom(&mut self, scope: Scope, atom: &Atom, owner: &str) -> Result<Piece, PosError> {
        match atom {
            Atom::Group(body) => self.expand_body(scope, body, owner),
            Atom::Maybe(body) => {
                let piece = self.expand_body(scope, body, owner)?;
                Ok(quantify(piece, Op::Opt).expect("`?` cannot fail"))
            }
            Atom::Name(Name { text, pos }) => {
                // Lower-case names are rules, except llguidance's lazy rules, which are
                // terminals (bound in the main grammar).
                if super::token::is_terminal_name(text)
                    || (scope == Scope::Main && self.main.contains_key(text.as_str()))
                {
                    self.expand(scope, text, *pos, owner)
                } else {
                    Err(PosError::new(
                        *pos,
                        GrammarErrorKind::RuleInTerminal {
                            terminal: owner.to_string(),
                            rule: text.clone(),
                        },
                    ))
                }
            }
            Atom::Literal(lit) => literal_piece(lit).map_err(|k| PosError::new(lit.pos, k)),
            Atom::Range { from, to, .. } => range_piece(from, to),
            Atom::Template { name, .. } => Err(PosError::new(
                name.pos,
                GrammarErrorKind::Template {
                    name: name.text.clone(),
                    message: "templates cannot be used inside terminals".into(),
                },
            )),
            Atom::Json { pos, .. } => Err(PosError::new(
                *pos,
                GrammarErrorKind::JsonSchema {
                    message: "a schema cannot be used inside a terminal (it is a grammar)".into(),
                },
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::frontend::parse_grammar;

    fn regex(src: &str, name: &str) -> String {
        let g = parse_grammar(src, "t.lark").unwrap_or_else(|e| panic!("{e}"));
        g.terminals
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .regex
            .clone()
    }

    fn err(src: &str) -> String {
        parse_grammar(src, "t.lark").unwrap_err().to_string()
    }

    #[test]
    fn terminal_references_are_inlined_with_minimal_groups() {
        let src = "start: C\nA: \"a\" | \"b\"\nB: A \"c\"\nC: B+ \"d\"? (A | \"xy\")*\n";
        assert_eq!(regex(src, "C"), "(?:(?:a|b)c)+d?(?:a|b|xy)*");
        assert_eq!(
            regex("start: X\nX: \"ab\" ~ 2..3 \"c\"~2\n", "X"),
            "(?:ab){2,3}c{2}"
        );
        assert_eq!(
            regex("start: X\nX: \"a\"{2,} /b/i{,2}\n", "X"),
            "a{2,}(?i:b){0,2}"
        );
        assert_eq!(
            regex("start: X\nX: [\"+\"|\"-\"] \"1\"\n", "X"),
            "(?:\\+|\\-)?1"
        );
        assert_eq!(regex("start: X\nX: \"if\"i \".\"\n", "X"), "(?i:if)\\.");
        assert_eq!(
            regex("start: X\nX: \"a\"..\"z\" \"0\"..\"9\" \"-\"..\"/\"\n", "X"),
            "[a-z][0-9][\\x{2d}-\\x{2f}]"
        );
    }

    #[test]
    fn terminal_errors() {
        assert_eq!(
            err("start: A\nA: \"a\" | B\nB: \"b\" A\n"),
            "t.lark:3:8: terminal defined in terms of itself: A -> B -> A"
        );
        assert_eq!(
            err("start: A\nA: \"a\" b\nb: \"b\"\n"),
            "t.lark:2:8: terminal `A` refers to rule `b`; terminals may only use literals, regexes and other terminals"
        );
        assert_eq!(
            err("start: A\nA: \"a\" BAZ\n"),
            "t.lark:2:8: undefined terminal `BAZ`"
        );
        assert_eq!(
            err("start: A\nA: \"ab\"..\"c\"\n"),
            "t.lark:2:4: invalid character range: range start \"ab\" must be a single character"
        );
        assert_eq!(
            err("start: A\nA: \"a\"..\"cd\"\n"),
            "t.lark:2:9: invalid character range: range end \"cd\" must be a single character"
        );
        assert_eq!(
            err("start: A\nA: \"d\"..\"a\"\n"),
            "t.lark:2:4: invalid character range: range start \"d\" comes after its end \"a\""
        );
        assert_eq!(
            err("start: A\nA: (\"a\"|\"b\"){7,6}\n"),
            "t.lark:2:4: invalid repetition: range end 6 must be >= start 7"
        );
        assert_eq!(
            err("start: A\nA: \"a\" ~ 5000\n"),
            "t.lark:2:4: invalid repetition: count 5000 is too large (the limit is 1000)"
        );
        assert_eq!(
            err("start: A\nA: /[abc/\n"),
            "t.lark:2:4: invalid regex: unclosed character class"
        );
        assert_eq!(
            err("start: A\n\nA: \"x\" /(?<!\\\\)y/\n"),
            "t.lark:3:8: unsupported regex feature: negative lookbehind `(?<!...)`"
        );
    }
}
