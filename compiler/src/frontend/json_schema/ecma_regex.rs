//! ECMA-262 regexes (JSON Schema `pattern`, `patternProperties`) → Rust regex syntax.
//!
//! JSON Schema patterns are ECMA-262 regexes matched against the decoded string value.
//! Rust's `regex-syntax` differs in ways that change the language, so each construct is
//! translated rather than copied: `\d`, `\w` are ASCII in ECMA (Unicode in Rust), `\s` is
//! ECMA's whitespace set, `.` excludes the four ECMA line terminators, `[` `&` `~` `-` are
//! literals inside an ECMA class, `[]` matches nothing and `[^]` any character, a `{`
//! that does not start a quantifier is a literal, `\uXXXX` surrogate pairs are one
//! character, `\cX` is a control character. Every literal character is written as a
//! `\x{..}` escape, so no ECMA identity escape can be misread.
//!
//! Backreferences, lookaround and word boundaries have no regular meaning here; they are
//! reported by name ([`RegexIssue`]). Anchors `^`/`$` are kept: the string module places
//! them (a pattern is unanchored unless it says otherwise).

/// Why a pattern could not be translated: the construct, named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegexIssue(pub String);

/// ECMA `\s`: WhiteSpace and LineTerminator code points, as a class body.
const ECMA_SPACE: &str =
    "\\t\\n\\x{0B}\\x{0C}\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";

/// Translates an ECMA-262 pattern into Rust regex syntax with the same language.
pub fn translate(src: &str) -> Result<String, RegexIssue> {
    let chars: Vec<char> = src.chars().collect();
    let mut t = Translator {
        c: &chars,
        i: 0,
        out: String::with_capacity(src.len() * 2),
    };
    t.run()?;
    Ok(t.out)
}

struct Translator<'a> {
    c: &'a [char],
    i: usize,
    out: String,
}

/// One atom inside a character class: a single code point, or a class escape.
enum ClassAtom {
    Char(u32),
    Set(String),
}

fn lit(cp: u32) -> String {
    format!("\\x{{{cp:X}}}")
}

fn issue<T>(s: impl Into<String>) -> Result<T, RegexIssue> {
    Err(RegexIssue(s.into()))
}

impl Translator<'_> {
    fn peek(&self, k: usize) -> Option<char> {
        self.c.get(self.i + k).copied()
    }

    fn run(&mut self) -> Result<(), RegexIssue> {
        while let Some(ch) = self.peek(0) {
            self.i += 1;
            match ch {
                '\\' => {
                    let s = self.escape_outside()?;
                    self.out.push_str(&s);
                }
                '.' => self.out.push_str("[^\\n\\r\\x{2028}\\x{2029}]"),
                '[' => self.class()?,
                '(' => self.group_open()?,
                ')' | '|' | '*' | '+' | '?' | '^' | '$' => self.out.push(ch),
                '{' => {
                    if let Some(len) = self.quantifier_len() {
                        let q: String = self.c[self.i - 1..self.i + len].iter().collect();
                        self.out.push_str(&q);
                        self.i += len;
                    } else {
                        self.out.push_str(&lit('{' as u32));
                    }
                }
                _ => self.out.push_str(&lit(ch as u32)),
            }
        }
        Ok(())
    }

    /// After `{`: the length of `n}`, `n,}` or `n,m}` if a quantifier follows.
    fn quantifier_len(&self) -> Option<usize> {
        let rest = &self.c[self.i..];
        let close = rest.iter().position(|&c| c == '}')?;
        let inner: String = rest[..close].iter().collect();
        let (a, b) = match inner.split_once(',') {
            Some((a, b)) => (a, Some(b)),
            None => (inner.as_str(), None),
        };
        let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
        if digits(a) && b.is_none_or(|b| b.is_empty() || digits(b)) {
            Some(close + 1)
        } else {
            None
        }
    }

    fn group_open(&mut self) -> Result<(), RegexIssue> {
        if self.peek(0) != Some('?') {
            self.out.push('(');
            return Ok(());
        }
        match (self.peek(1), self.peek(2)) {
            (Some(':'), _) => {
                self.i += 2;
                self.out.push_str("(?:");
            }
            (Some('='), _) | (Some('!'), _) => return issue("lookahead `(?=`/`(?!`"),
            (Some('<'), Some('=')) | (Some('<'), Some('!')) => {
                return issue("lookbehind `(?<=`/`(?<!`")
            }
            (Some('<'), _) => {
                // Named group: the name does not change the language.
                let close = self.c[self.i..]
                    .iter()
                    .position(|&c| c == '>')
                    .ok_or_else(|| RegexIssue("unterminated group name".into()))?;
                self.i += close + 1;
                self.out.push('(');
            }
            _ => return issue("group modifier `(?`"),
        }
        Ok(())
    }

    /// Reads `\uXXXX` (after `\u`), joining a surrogate pair `\uD83D\uDE00`.
    fn unicode_escape(&mut self) -> Result<u32, RegexIssue> {
        if self.peek(0) == Some('{') {
            let close = self.c[self.i..]
                .iter()
                .position(|&c| c == '}')
                .ok_or_else(|| RegexIssue("unterminated `\\u{`".into()))?;
            let hex: String = self.c[self.i + 1..self.i + close].iter().collect();
            self.i += close + 1;
            return u32::from_str_radix(&hex, 16)
                .ok()
                .filter(|&v| char::from_u32(v).is_some())
                .ok_or_else(|| RegexIssue(format!("invalid escape `\\u{{{hex}}}`")));
        }
        let hi = self.hex(4)?;
        if (0xD800..0xDC00).contains(&hi) && self.peek(0) == Some('\\') && self.peek(1) == Some('u')
        {
            let save = self.i;
            self.i += 2;
            if let Ok(lo) = self.hex(4) {
                if (0xDC00..0xE000).contains(&lo) {
                    return Ok(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00));
                }
            }
            self.i = save;
        }
        if (0xD800..0xE000).contains(&hi) {
            return issue("lone surrogate escape `\\uD800`-`\\uDFFF`");
        }
        Ok(hi)
    }

    fn hex(&mut self, n: usize) -> Result<u32, RegexIssue> {
        let s: String = self.c[self.i..(self.i + n).min(self.c.len())]
            .iter()
            .collect();
        if s.len() != n || !s.chars().all(|c| c.is_ascii_hexdigit()) {
            return issue(format!("invalid hex escape `{s}`"));
        }
        self.i += n;
        Ok(u32::from_str_radix(&s, 16).expect("hex digits"))
    }

    /// An escape shared by both contexts (after the backslash); `in_class` decides `\b`.
    fn escape_atom(&mut self, in_class: bool) -> Result<ClassAtom, RegexIssue> {
        let Some(e) = self.peek(0) else {
            return issue("trailing backslash");
        };
        self.i += 1;
        let set = |s: &str| Ok(ClassAtom::Set(s.to_string()));
        match e {
            'd' => set("0-9"),
            'D' => set("[^0-9]"),
            'w' => set("A-Za-z0-9_"),
            'W' => set("[^A-Za-z0-9_]"),
            's' => set(ECMA_SPACE),
            'S' => Ok(ClassAtom::Set(format!("[^{ECMA_SPACE}]"))),
            'p' | 'P' => {
                if self.peek(0) != Some('{') {
                    return issue(format!("`\\{e}` without a property name"));
                }
                let close = self.c[self.i..]
                    .iter()
                    .position(|&c| c == '}')
                    .ok_or_else(|| RegexIssue("unterminated `\\p{`".into()))?;
                let name: String = self.c[self.i..=self.i + close].iter().collect();
                self.i += close + 1;
                Ok(ClassAtom::Set(format!("\\{e}{name}")))
            }
            'b' if in_class => Ok(ClassAtom::Char(8)),
            'b' | 'B' => issue("word boundary `\\b`/`\\B`"),
            't' => Ok(ClassAtom::Char(9)),
            'n' => Ok(ClassAtom::Char(10)),
            'v' => Ok(ClassAtom::Char(11)),
            'f' => Ok(ClassAtom::Char(12)),
            'r' => Ok(ClassAtom::Char(13)),
            '0' if !self.peek(0).is_some_and(|c| c.is_ascii_digit()) => Ok(ClassAtom::Char(0)),
            '1'..='9' | '0' => issue("backreference `\\1`"),
            'k' if self.peek(0) == Some('<') => issue("named backreference `\\k<name>`"),
            'c' => match self.peek(0) {
                Some(l) if l.is_ascii_alphabetic() => {
                    self.i += 1;
                    Ok(ClassAtom::Char(l as u32 % 32))
                }
                _ => issue("invalid control escape `\\c`"),
            },
            'x' => Ok(ClassAtom::Char(self.hex(2)?)),
            'u' => Ok(ClassAtom::Char(self.unicode_escape()?)),
            other => Ok(ClassAtom::Char(other as u32)),
        }
    }

    fn escape_outside(&mut self) -> Result<String, RegexIssue> {
        Ok(match self.escape_atom(false)? {
            ClassAtom::Char(cp) => lit(cp),
            ClassAtom::Set(s) if s.starts_with('[') || s.starts_with("\\p") => s,
            ClassAtom::Set(s) if s.starts_with("\\P") => s,
            ClassAtom::Set(s) => format!("[{s}]"),
        })
    }

    /// After `[`: one ECMA class, written as a Rust class.
    fn class(&mut self) -> Result<(), RegexIssue> {
        let negated = self.peek(0) == Some('^');
        if negated {
            self.i += 1;
        }
        let mut items: Vec<String> = Vec::new();
        loop {
            let Some(ch) = self.peek(0) else {
                return issue("unterminated character class `[`");
            };
            if ch == ']' {
                self.i += 1;
                break;
            }
            let first = self.class_atom()?;
            let is_range = self.peek(0) == Some('-') && self.peek(1).is_some_and(|c| c != ']');
            match (first, is_range) {
                (ClassAtom::Char(a), true) => {
                    self.i += 1;
                    match self.class_atom()? {
                        ClassAtom::Char(b) if a <= b => {
                            items.push(format!("{}-{}", lit(a), lit(b)))
                        }
                        ClassAtom::Char(_) => return issue("class range out of order"),
                        ClassAtom::Set(s) => {
                            // ECMA (Annex B): `a-\d` is `a`, `-` and `\d`.
                            items.push(lit(a));
                            items.push(lit('-' as u32));
                            items.push(s);
                        }
                    }
                }
                (ClassAtom::Char(a), false) => items.push(lit(a)),
                (ClassAtom::Set(s), _) => items.push(s),
            }
        }
        if items.is_empty() {
            // `[]` matches nothing, `[^]` any character.
            self.out.push_str(if negated {
                "[\\x{0}-\\x{10FFFF}]"
            } else {
                "[a&&b]"
            });
        } else {
            self.out.push('[');
            if negated {
                self.out.push('^');
            }
            for it in items {
                self.out.push_str(&it);
            }
            self.out.push(']');
        }
        Ok(())
    }

    fn class_atom(&mut self) -> Result<ClassAtom, RegexIssue> {
        let ch = self.peek(0).expect("caller checked");
        self.i += 1;
        if ch == '\\' {
            if self.peek(0) == Some('-') {
                self.i += 1;
                return Ok(ClassAtom::Char('-' as u32));
            }
            self.escape_atom(true)
        } else {
            Ok(ClassAtom::Char(ch as u32))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, s: &str) -> bool {
        let re = regex_automata::meta::Regex::new(&translate(pattern).unwrap()).unwrap();
        re.is_match(s)
    }

    #[test]
    fn ecma_classes_are_ascii_where_ecma_says_so() {
        assert!(matches("^\\d$", "7"));
        assert!(!matches("^\\d$", "\u{0967}"));
        assert!(!matches("^\\w$", "é"));
        assert!(matches("^\\s$", "\u{FEFF}"));
        assert!(!matches("^.$", "\r"));
        assert!(matches("^[^]$", "\n"));
        assert!(!matches("[]", "a"));
        assert!(matches("^a{$", "a{"));
        assert!(matches("^[[&~-]+$", "[&~-"));
        assert!(matches("^\\uD83D\\uDE00$", "😀"));
        assert!(matches("^\\cJ$", "\n"));
        assert!(matches("^(?<y>a)b$", "ab"));
    }

    #[test]
    fn non_regular_constructs_are_named() {
        assert!(translate("(a)\\1").unwrap_err().0.contains("backreference"));
        assert!(translate("a(?=b)").unwrap_err().0.contains("lookahead"));
        assert!(translate("\\bx").unwrap_err().0.contains("word boundary"));
    }
}
