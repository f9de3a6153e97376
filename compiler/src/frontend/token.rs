//! Hand-written lexer for the Lark grammar language, feeding the LALRPOP parser.
//!
//! LALRPOP's built-in lexer cannot express Lark's tokens: `/regex/flags` (where `/` and
//! escapes interact), `"literal"i`, and above all Lark's newline rule — a rule ends at a
//! newline *unless* the next non-blank line starts with `|`. This lexer implements that
//! rule by emitting one [`Tok::Newline`] per run of line breaks, and none when the run is
//! followed by `|`, at the start or the end of the input, or inside `( )`, `[ ]`, `{ }`
//! (Lark itself rejects line breaks inside brackets; accepting them is harmless).
//!
//! It also turns llguidance-only syntax (`%json`, `<|special|>`, `@sub`, `&`, `~X`, `::`)
//! into clear `Unsupported*` errors right away, since none of it fits the token set.

use super::error::{GrammarErrorKind, PosError};

/// A decoded `"..."` literal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrLit<'a> {
    /// The literal's value, escapes decoded the way Lark decodes them.
    pub value: String,
    /// The `i` (case-insensitive) flag.
    pub insensitive: bool,
    /// The source text, quotes and flag included (names anonymous terminals).
    pub text: &'a str,
}

/// A `/regex/flags` literal, body undecoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegexLit<'a> {
    /// Text between the slashes, as written (`\/` still escaped).
    pub body: &'a str,
    /// Flag letters after the closing slash (a subset of `imslux`).
    pub flags: &'a str,
    /// The source text, slashes and flags included.
    pub text: &'a str,
}

/// A `{n}`, `{n,}`, `{,m}` or `{n,m}` repetition suffix (llguidance syntax).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RepeatSpec {
    /// Minimum count.
    pub min: u32,
    /// Maximum count; `None` for unbounded.
    pub max: Option<u32>,
}

/// A token of the Lark grammar language.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tok<'a> {
    /// A lower-case name: a rule (or a module in `%import`).
    RuleName(&'a str),
    /// An upper-case name: a terminal.
    TermName(&'a str),
    /// `"..."` or `"..."i`.
    Str(StrLit<'a>),
    /// `/.../flags`.
    Regex(RegexLit<'a>),
    /// An integer, optionally negative (priorities may be).
    Number(i64),
    /// `{n,m}` and friends.
    Repeat(RepeatSpec),
    /// `%llguidance {json}`: the JSON object's text.
    Llguidance(&'a str),
    /// `%json {schema}` (llguidance): the JSON Schema object's text.
    Json(&'a str),
    /// `:`
    Colon,
    /// `|`
    Pipe,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `[`
    LBracket,
    /// `]`
    RBracket,
    /// `{` (template parameters and arguments)
    LBrace,
    /// `}`
    RBrace,
    /// `,`
    Comma,
    /// `?`
    Question,
    /// `*`
    Star,
    /// `+`
    Plus,
    /// `!`
    Bang,
    /// `~`
    Tilde,
    /// `.`
    Dot,
    /// `..`
    DotDot,
    /// `->`
    Arrow,
    /// `=`
    Equals,
    /// `%ignore`
    Ignore,
    /// `%import`
    Import,
    /// `%declare`
    Declare,
    /// `%override`
    Override,
    /// `%extend`
    Extend,
    /// The end of a definition or statement.
    Newline,
}

/// A token with its byte span, as LALRPOP wants it.
pub type Spanned<'a> = (usize, Tok<'a>, usize);

/// Whether an identifier names a terminal: Lark's `_?[A-Z][_A-Z0-9]*` (leading
/// underscores allowed, no lower-case letter).
pub fn is_terminal_name(name: &str) -> bool {
    let rest = name.trim_start_matches('_');
    rest.starts_with(|c: char| c.is_ascii_uppercase())
        && !rest.contains(|c: char| c.is_ascii_lowercase())
}

/// Deepest nesting of `( [ {` accepted in a grammar source.
pub const MAX_NESTING: u32 = 256;

/// The lexer: an iterator of spanned tokens or a positioned error.
pub struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    /// Nesting of `( [ {`: line breaks inside brackets do not end a definition.
    depth: u32,
    /// Whether a token has been produced yet (no leading [`Tok::Newline`]).
    started: bool,
    /// Set after an error: the iterator then ends.
    failed: bool,
}

impl<'a> Lexer<'a> {
    /// A lexer over `src`.
    pub fn new(src: &'a str) -> Self {
        // Skip a UTF-8 byte order mark, which some editors write.
        let pos = if src.starts_with('\u{feff}') {
            '\u{feff}'.len_utf8()
        } else {
            0
        };
        Lexer {
            src,
            pos,
            depth: 0,
            started: false,
            failed: false,
        }
    }

    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.src
            .get(self.pos + offset..)
            .and_then(|s| s.chars().next())
    }

    fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }

    /// Skips blanks (not line breaks) and comments (`//` and `#` to the end of the line).
    fn skip_blanks_and_comments(&mut self) {
        loop {
            match self.peek() {
                Some(' ' | '\t' | '\x0c') => self.pos += 1,
                Some('\\')
                    if self.rest().starts_with("\\\n") || self.rest().starts_with("\\\r\n") =>
                {
                    // A backslash-continued line; Lark's `\s` skipping does not allow this,
                    // but it is unambiguous and costs nothing.
                    self.pos += if self.rest().starts_with("\\\n") {
                        2
                    } else {
                        3
                    };
                }
                Some('#') => self.skip_to_eol(),
                Some('/') if self.peek_at(1) == Some('/') => self.skip_to_eol(),
                _ => return,
            }
        }
    }

    fn skip_to_eol(&mut self) {
        match self.rest().find('\n') {
            Some(i) => self.pos += i,
            None => self.pos = self.src.len(),
        }
    }

    fn err(&mut self, pos: usize, kind: GrammarErrorKind) -> Option<Result<Spanned<'a>, PosError>> {
        self.failed = true;
        Some(Err(PosError::new(pos, kind)))
    }

    /// An opening bracket. Nesting is limited: later stages walk the syntax tree
    /// recursively, and a grammar file must not be able to overflow their stack.
    fn open(&mut self, start: usize, tok: Tok<'a>) -> Option<Result<Spanned<'a>, PosError>> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return self.lexical(
                start,
                format!("brackets nested more than {MAX_NESTING} levels deep"),
            );
        }
        self.pos += 1;
        Some(Ok((start, tok, start + 1)))
    }

    fn lexical(
        &mut self,
        pos: usize,
        message: impl Into<String>,
    ) -> Option<Result<Spanned<'a>, PosError>> {
        self.err(
            pos,
            GrammarErrorKind::Lexical {
                message: message.into(),
            },
        )
    }

    fn unsupported(&mut self, pos: usize, feature: &str) -> Option<Result<Spanned<'a>, PosError>> {
        self.err(
            pos,
            GrammarErrorKind::UnsupportedSyntax {
                feature: feature.to_string(),
            },
        )
    }

    fn lex_string(&mut self, start: usize) -> Option<Result<Spanned<'a>, PosError>> {
        // Find the closing quote: `\` escapes the next character; no line breaks.
        let bytes = self.src.as_bytes();
        let mut i = start + 1;
        loop {
            match bytes.get(i) {
                None | Some(b'\n') => return self.lexical(start, "unterminated string literal"),
                Some(b'\\') => i += 2,
                Some(b'"') => break,
                Some(_) => i += 1,
            }
        }
        let body = &self.src[start + 1..i];
        let mut end = i + 1;
        let insensitive = bytes.get(end) == Some(&b'i');
        if insensitive {
            end += 1;
        }
        self.pos = end;
        match decode_string(body, start + 1) {
            Ok(value) => Some(Ok((
                start,
                Tok::Str(StrLit {
                    value,
                    insensitive,
                    text: &self.src[start..end],
                }),
                end,
            ))),
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }

    fn lex_regex(&mut self, start: usize) -> Option<Result<Spanned<'a>, PosError>> {
        let bytes = self.src.as_bytes();
        let mut i = start + 1;
        loop {
            match bytes.get(i) {
                None => return self.lexical(start, "unterminated regex literal"),
                Some(b'\\') => i += 2,
                Some(b'/') => break,
                Some(_) => i += 1,
            }
        }
        let body = &self.src[start + 1..i];
        let flags_start = i + 1;
        let flags_len = self.src[flags_start..]
            .bytes()
            .take_while(|b| b"imslux".contains(b))
            .count();
        let flags = &self.src[flags_start..flags_start + flags_len];
        let end = flags_start + flags_len;
        if body.contains('\n') && !flags.contains('x') {
            // Lark's rule: a regex may only span lines in verbose mode. Without it, a
            // stray `/` would swallow the rest of the file into one token.
            let message = "unterminated regex literal (a regex may contain line breaks only \
                           with the `x` flag)";
            return self.lexical(start, message);
        }
        self.pos = end;
        Some(Ok((
            start,
            Tok::Regex(RegexLit {
                body,
                flags,
                text: &self.src[start..end],
            }),
            end,
        )))
    }

    /// `%llguidance { ... }` or `%json { ... }` (`schema`): returns the balanced JSON
    /// object's text.
    fn lex_json_object(
        &mut self,
        directive_start: usize,
        schema: bool,
    ) -> Option<Result<Spanned<'a>, PosError>> {
        let directive = if schema { "%json" } else { "%llguidance" };
        while let Some(c) = self.peek() {
            if c.is_whitespace() {
                self.pos += c.len_utf8();
            } else {
                break;
            }
        }
        let start = self.pos;
        if self.peek() != Some('{') {
            return self.err(
                start,
                GrammarErrorKind::InvalidDirective {
                    message: format!("`{directive}` must be followed by a JSON object"),
                },
            );
        }
        let bytes = self.src.as_bytes();
        let mut depth = 0usize;
        let mut in_string = false;
        let mut i = start;
        while i < bytes.len() {
            let b = bytes[i];
            if in_string {
                match b {
                    b'\\' => i += 1,
                    b'"' => in_string = false,
                    _ => {}
                }
            } else {
                match b {
                    b'"' => in_string = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            self.pos = i + 1;
                            return Some(Ok((
                                directive_start,
                                if schema {
                                    Tok::Json(&self.src[start..=i])
                                } else {
                                    Tok::Llguidance(&self.src[start..=i])
                                },
                                i + 1,
                            )));
                        }
                    }
                    _ => {}
                }
            }
            i += 1;
        }
        self.err(
            start,
            GrammarErrorKind::InvalidDirective {
                message: format!("unterminated JSON object after `{directive}`"),
            },
        )
    }

    /// At `{`: a repetition `{n}`, `{n,}`, `{,m}`, `{n,m}` (digits and blanks only), or
    /// `None` when it is a template's brace.
    fn try_repeat(&self) -> Option<(RepeatSpec, usize)> {
        let rest = self.rest();
        let close = rest.find('}')?;
        let inner = &rest[1..close];
        if !inner
            .chars()
            .all(|c| c.is_ascii_digit() || c == ',' || c == ' ' || c == '\t')
        {
            return None;
        }
        let parse = |s: &str| -> Result<Option<u32>, ()> {
            let s = s.trim();
            if s.is_empty() {
                Ok(None)
            } else {
                s.parse::<u32>().map(Some).map_err(|_| ())
            }
        };
        let spec = match inner.split_once(',') {
            None => {
                let n = parse(inner).ok()??;
                RepeatSpec {
                    min: n,
                    max: Some(n),
                }
            }
            Some((a, b)) => {
                if b.contains(',') {
                    return None;
                }
                RepeatSpec {
                    min: parse(a).ok()?.unwrap_or(0),
                    max: parse(b).ok()?,
                }
            }
        };
        Some((spec, close + 1))
    }
}

impl<'a> Iterator for Lexer<'a> {
    type Item = Result<Spanned<'a>, PosError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        self.skip_blanks_and_comments();
        let c = self.peek()?;
        let start = self.pos;

        if c == '\n' || c == '\r' {
            // A run of line breaks (with blank and comment lines in between).
            while let Some(c) = self.peek() {
                if c.is_whitespace() {
                    self.pos += c.len_utf8();
                    self.skip_blanks_and_comments();
                } else {
                    break;
                }
            }
            let ends_definition =
                self.depth == 0 && self.started && self.peek().is_some_and(|c| c != '|');
            if ends_definition {
                return Some(Ok((start, Tok::Newline, start + 1)));
            }
            return self.next();
        }

        self.started = true;
        let one = |lexer: &mut Self, tok: Tok<'a>, len: usize| {
            lexer.pos += len;
            Some(Ok((start, tok, start + len)))
        };
        match c {
            'a'..='z' | 'A'..='Z' | '_' => {
                let len = self
                    .rest()
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(self.rest().len());
                let name = &self.rest()[..len];
                let tok = if is_terminal_name(name) {
                    Tok::TermName(name)
                } else {
                    Tok::RuleName(name)
                };
                one(self, tok, len)
            }
            '0'..='9' => self.lex_number(start),
            '-' if self.peek_at(1) == Some('>') => one(self, Tok::Arrow, 2),
            '-' if self.peek_at(1).is_some_and(|c| c.is_ascii_digit()) => self.lex_number(start),
            '"' => self.lex_string(start),
            '/' => self.lex_regex(start),
            ':' if self.peek_at(1) == Some(':') => {
                self.unsupported(start, "parametric rules `name::param` (llguidance)")
            }
            ':' => one(self, Tok::Colon, 1),
            '|' => one(self, Tok::Pipe, 1),
            '(' => self.open(start, Tok::LParen),
            '[' => self.open(start, Tok::LBracket),
            '{' => {
                if let Some((spec, len)) = self.try_repeat() {
                    return one(self, Tok::Repeat(spec), len);
                }
                self.open(start, Tok::LBrace)
            }
            ')' | ']' | '}' => {
                self.depth = self.depth.saturating_sub(1);
                let tok = match c {
                    ')' => Tok::RParen,
                    ']' => Tok::RBracket,
                    _ => Tok::RBrace,
                };
                one(self, tok, 1)
            }
            ',' => one(self, Tok::Comma, 1),
            '?' => one(self, Tok::Question, 1),
            '*' => one(self, Tok::Star, 1),
            '+' => one(self, Tok::Plus, 1),
            '!' => one(self, Tok::Bang, 1),
            '=' => one(self, Tok::Equals, 1),
            '.' if self.peek_at(1) == Some('.') => one(self, Tok::DotDot, 2),
            '.' => one(self, Tok::Dot, 1),
            '~' => {
                // Lark's `x ~ n`; llguidance also has a prefix `~X` (complement).
                let after = self.rest()[1..].trim_start_matches([' ', '\t']);
                if after.starts_with(|c: char| c.is_ascii_digit()) {
                    one(self, Tok::Tilde, 1)
                } else {
                    self.unsupported(start, "terminal negation `~` (llguidance)")
                }
            }
            '%' => {
                let len = 1 + self.rest()[1..]
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(self.rest().len() - 1);
                let word = &self.rest()[..len];
                let tok = match word {
                    "%ignore" => Tok::Ignore,
                    "%import" => Tok::Import,
                    "%declare" => Tok::Declare,
                    "%override" => Tok::Override,
                    "%extend" => Tok::Extend,
                    "%llguidance" | "%json" => {
                        self.pos += len;
                        return self.lex_json_object(start, word == "%json");
                    }
                    "%regex" | "%lark" | "%if" => {
                        return self.err(
                            start,
                            GrammarErrorKind::UnsupportedDirective {
                                directive: format!("`{word}` (llguidance)"),
                            },
                        )
                    }
                    "%" => return self.lexical(start, "expected a directive name after `%`"),
                    _ => {
                        return self.err(
                            start,
                            GrammarErrorKind::UnsupportedDirective {
                                directive: format!("`{word}`"),
                            },
                        )
                    }
                };
                one(self, tok, len)
            }
            '&' => self.unsupported(start, "terminal intersection `&` (llguidance)"),
            '@' => self.unsupported(start, "subgrammar reference `@name` (llguidance)"),
            '<' => self.unsupported(start, "special token `<...>` (llguidance)"),
            _ => self.lexical(
                start,
                format!("unexpected character `{}`", c.escape_debug()),
            ),
        }
    }
}

impl<'a> Lexer<'a> {
    fn lex_number(&mut self, start: usize) -> Option<Result<Spanned<'a>, PosError>> {
        let sign = usize::from(self.peek() == Some('-'));
        let digits = self.rest()[sign..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        let end = start + sign + digits;
        let text = &self.src[start..end];
        self.pos = end;
        match text.parse::<i64>() {
            Ok(n) => Some(Ok((start, Tok::Number(n), end))),
            Err(_) => self.lexical(start, format!("number `{text}` is too large")),
        }
    }
}

/// Decodes the body of a `"..."` literal the way Lark does (`eval_escaping` followed by
/// Python's `literal_eval`): `\\`, `\"`, `\n`, `\t`, `\r`, `\f`, `\xhh`, `\uhhhh`,
/// `\Uhhhhhhhh` are escapes; any other backslash is kept as a literal backslash.
/// `body_pos` is the byte offset of `body` in the source, for error positions.
pub fn decode_string(body: &str, body_pos: usize) -> Result<String, PosError> {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some((_, e)) = chars.next() else {
            return Err(PosError::new(
                body_pos + i,
                GrammarErrorKind::InvalidEscape {
                    escape: "\\".into(),
                },
            ));
        };
        let hex_len = match e {
            '\\' => {
                out.push('\\');
                continue;
            }
            '"' => {
                out.push('"');
                continue;
            }
            'n' => {
                out.push('\n');
                continue;
            }
            't' => {
                out.push('\t');
                continue;
            }
            'r' => {
                out.push('\r');
                continue;
            }
            'f' => {
                out.push('\x0c');
                continue;
            }
            'x' => 2,
            'u' => 4,
            'U' => 8,
            other => {
                out.push('\\');
                out.push(other);
                continue;
            }
        };
        let digits: String = (0..hex_len)
            .filter_map(|_| {
                chars
                    .next_if(|(_, c)| c.is_ascii_hexdigit())
                    .map(|(_, c)| c)
            })
            .collect();
        let value = if digits.len() == hex_len {
            u32::from_str_radix(&digits, 16)
                .ok()
                .and_then(char::from_u32)
        } else {
            None
        };
        match value {
            Some(ch) => out.push(ch),
            None => {
                return Err(PosError::new(
                    body_pos + i,
                    GrammarErrorKind::InvalidEscape {
                        escape: format!("\\{e}{digits}"),
                    },
                ))
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(src: &str) -> Vec<Tok<'_>> {
        Lexer::new(src).map(|r| r.unwrap().1).collect()
    }

    #[test]
    fn newline_rule() {
        let t = toks("\n// c\na: b\n\n  | c  # x\nd: e\n\n");
        assert_eq!(
            t,
            vec![
                Tok::RuleName("a"),
                Tok::Colon,
                Tok::RuleName("b"),
                Tok::Pipe,
                Tok::RuleName("c"),
                Tok::Newline,
                Tok::RuleName("d"),
                Tok::Colon,
                Tok::RuleName("e"),
            ]
        );
        // Inside brackets a line break is just a blank.
        assert_eq!(toks("a: (b\n c)").len(), 6);
    }

    #[test]
    fn names_numbers_and_punctuation() {
        let t = toks("?_x.-2: A_1 ~ 3..4 -> y {2,} {,5} {3} {x}");
        assert_eq!(
            t,
            vec![
                Tok::Question,
                Tok::RuleName("_x"),
                Tok::Dot,
                Tok::Number(-2),
                Tok::Colon,
                Tok::TermName("A_1"),
                Tok::Tilde,
                Tok::Number(3),
                Tok::DotDot,
                Tok::Number(4),
                Tok::Arrow,
                Tok::RuleName("y"),
                Tok::Repeat(RepeatSpec { min: 2, max: None }),
                Tok::Repeat(RepeatSpec {
                    min: 0,
                    max: Some(5)
                }),
                Tok::Repeat(RepeatSpec {
                    min: 3,
                    max: Some(3)
                }),
                Tok::LBrace,
                Tok::RuleName("x"),
                Tok::RBrace,
            ]
        );
        assert!(is_terminal_name("_STRING_INNER"));
        assert!(is_terminal_name("A1"));
        assert!(!is_terminal_name("a1"));
        assert!(!is_terminal_name("Foo"));
    }

    #[test]
    fn strings_and_regexes() {
        let t = toks(r#""a\"b\\c\n\x41\u00e9\q"i /a\/b[/] /x/is /y/ly"#);
        match &t[0] {
            Tok::Str(s) => {
                assert_eq!(s.value, "a\"b\\c\nA\u{e9}\\q");
                assert!(s.insensitive);
                assert_eq!(s.text, r#""a\"b\\c\n\x41\u00e9\q"i"#);
            }
            other => panic!("{other:?}"),
        }
        // `[/]` is not special to Lark's lexer: the `/` inside the class ends the regex.
        assert_eq!(
            t[1],
            Tok::Regex(RegexLit {
                body: r"a\/b[",
                flags: "",
                text: r"/a\/b[/"
            })
        );
        assert_eq!(t[2], Tok::RBracket);
        assert_eq!(
            t[3],
            Tok::Regex(RegexLit {
                body: "x",
                flags: "is",
                text: "/x/is"
            })
        );
        // Like Lark, only `imslux` are flags: `/y/ly` is a regex with flag `l` and a name.
        assert_eq!(
            t[4],
            Tok::Regex(RegexLit {
                body: "y",
                flags: "l",
                text: "/y/l"
            })
        );
        assert_eq!(t[5], Tok::RuleName("y"));
    }

    #[test]
    fn errors_have_positions() {
        let e = Lexer::new("a: \"abc\nb").find_map(Result::err).unwrap();
        assert_eq!(e.pos, 3);
        assert!(matches!(e.kind, GrammarErrorKind::Lexical { .. }));
        let e = Lexer::new("a: \"\\xZZ\"").find_map(Result::err).unwrap();
        assert_eq!(e.pos, 4);
        assert_eq!(
            e.kind,
            GrammarErrorKind::InvalidEscape {
                escape: "\\x".into()
            }
        );
        let e = Lexer::new("start: %lark {}").find_map(Result::err).unwrap();
        assert_eq!(e.pos, 7);
        assert!(e.kind.is_unsupported());
        let e = Lexer::new("x: <|eos|>").find_map(Result::err).unwrap();
        assert!(e.kind.is_unsupported());
    }

    #[test]
    fn llguidance_json() {
        let t = toks("%llguidance { \"a\": \"}\", \"b\": [1] }\nstart: A");
        assert_eq!(t[0], Tok::Llguidance("{ \"a\": \"}\", \"b\": [1] }"));
        assert_eq!(t[1], Tok::Newline);
        let t = toks("start: %json {\"enum\": [\"}\"]} \"x\"");
        assert_eq!(t[2], Tok::Json("{\"enum\": [\"}\"]}"));
        assert!(matches!(t[3], Tok::Str(_)));
    }
}
