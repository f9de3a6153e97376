//! Lark `/regex/flags` literals → Rust `regex` syntax, and regex validation.
//!
//! Lark grammars are written against Python's `re`; stackmask compiles terminals with
//! Rust's `regex-syntax`/`regex-automata`. The two agree on almost everything a lexer
//! needs. Where Python has a spelling for something Rust can also express, it is
//! translated (`{,n}`, `(?#...)`, octal `\0`, `\b` = backspace in a class, `[` and
//! `&`/`~` as literals inside a class, a `{` that is not a quantifier). Rust's byte mode
//! `(?-u:...)` (no Python spelling) is kept: `(?-u:\xff)` is the byte 0xFF. Features with
//! no regular-language meaning — lookaround, backreferences, atomic groups, possessive
//! quantifiers, conditionals — and anchors/word boundaries (a terminal is a language of
//! whole lexemes; it cannot look outside itself; Python's `\Z` is read as `\z`, so it is
//! rejected as the anchor it is) are rejected with
//! [`GrammarErrorKind::UnsupportedRegex`] naming the feature.
//!
//! Lazy quantifiers (`*?`) are accepted and mean the same language as their greedy
//! forms: stackmask lexes by language (greedy, one byte of lookahead, DESIGN.md §1), not
//! by Python's leftmost-shortest match.

use regex_syntax::hir::{Hir, Look};

use super::error::GrammarErrorKind;

fn unsupported(feature: &str) -> GrammarErrorKind {
    GrammarErrorKind::UnsupportedRegex {
        feature: feature.to_string(),
    }
}

/// Parses a Rust regex the way the lexer stage will (Unicode on, may match non-UTF-8
/// bytes), turning a failure into [`GrammarErrorKind::InvalidRegex`].
pub fn parse_hir(pattern: &str) -> Result<Hir, GrammarErrorKind> {
    regex_syntax::ParserBuilder::new()
        .unicode(true)
        .utf8(false)
        .build()
        .parse(pattern)
        .map_err(|e| {
            // regex-syntax's message spans several lines (pattern, caret, text); keep the text.
            let msg = e.to_string();
            let text = msg
                .lines()
                .rev()
                .find(|l| l.starts_with("error:"))
                .map(|l| l.trim_start_matches("error:").trim());
            GrammarErrorKind::InvalidRegex {
                message: text.unwrap_or(&msg).to_string(),
            }
        })
}

/// Rejects look-around assertions (anchors, word boundaries) left in a parsed regex.
pub fn check_no_look(hir: &Hir) -> Result<(), GrammarErrorKind> {
    match hir.properties().look_set().iter().next() {
        None => Ok(()),
        Some(look) => Err(unsupported(match look {
            Look::Start | Look::StartLF | Look::StartCRLF => {
                "anchor `^`/`\\A` (a terminal cannot look outside its lexeme)"
            }
            Look::End | Look::EndLF | Look::EndCRLF => {
                "anchor `$`/`\\z`/`\\Z` (a terminal cannot look outside its lexeme)"
            }
            _ => "word boundary `\\b`/`\\B` (a terminal cannot look outside its lexeme)",
        })),
    }
}

/// Translates a Lark regex literal (`body` as written between the slashes, `flags` from
/// `imslux`) into one Rust regex group, e.g. `/a+/i` → `(?i:a+)`, and checks that it
/// parses and has no look-around. The result can be concatenated or quantified as is.
pub fn translate(body: &str, flags: &str) -> Result<String, GrammarErrorKind> {
    let mut rust_flags = String::new();
    for f in flags.chars() {
        match f {
            'i' | 'm' | 's' | 'x' => {
                if !rust_flags.contains(f) {
                    rust_flags.push(f)
                }
            }
            'u' => {} // Unicode matching is the default in both Python 3 and Rust.
            'l' => return Err(unsupported("flag `l` (locale-dependent matching)")),
            other => return Err(unsupported(&format!("flag `{other}`"))),
        }
    }
    let verbose = rust_flags.contains('x');
    let Translated {
        out: inner,
        verbose_at_end,
    } = translate_body(body, verbose)?;
    // In verbose mode a `#` comment runs to the end of the line: end the body with a line
    // break so that it cannot swallow the closing parenthesis. (Verbose mode may also be
    // switched on by a top-level `(?x)` in the body; a newline outside it would be a
    // literal, so only where verbose mode is still on at the end.)
    let group = if verbose_at_end {
        format!("(?{rust_flags}:{inner}\n)")
    } else {
        format!("(?{rust_flags}:{inner})")
    };
    let hir = parse_hir(&group)?;
    check_no_look(&hir)?;
    Ok(group)
}

/// Whether `s` starts with a Python quantifier `{m}`, `{m,}`, `{,n}`, `{m,n}` or `{,}`;
/// returns its Rust spelling and its length.
fn brace_quantifier(s: &str) -> Option<(String, usize)> {
    let close = s.find('}')?;
    let inner = &s[1..close];
    if !inner.chars().all(|c| c.is_ascii_digit() || c == ',') || inner.matches(',').count() > 1 {
        return None;
    }
    let rust = match inner.split_once(',') {
        None if inner.is_empty() => return None,
        None => format!("{{{inner}}}"),
        Some((a, b)) => format!("{{{},{b}}}", if a.is_empty() { "0" } else { a }),
    };
    Some((rust, close + 1))
}

/// Whether the translated regex so far ends in something a quantifier can apply to
/// (not the start, an unescaped `(` or an unescaped `|`).
fn has_operand(out: &str) -> bool {
    let Some(last) = out.chars().last() else {
        return false;
    };
    let escaped = out[..out.len() - last.len_utf8()]
        .chars()
        .rev()
        .take_while(|&c| c == '\\')
        .count()
        % 2
        == 1;
    escaped || !(last == '(' || last == '|')
}

/// `\p{..}`, `\x{..}`, `\u{..}`, `\U{..}`: Rust-only braced escapes, copied whole so that
/// the `{` is not mistaken for a quantifier.
fn braced_escape_len(s: &str) -> Option<usize> {
    if s.starts_with('{') {
        s.find('}').map(|i| i + 1)
    } else {
        None
    }
}

/// Python octal escape `\0`, `\0o`, `\0oo` (after the backslash): returns the character
/// as a Rust hex escape and the number of characters consumed.
fn octal_escape(s: &str) -> (String, usize) {
    let digits: String = s
        .chars()
        .take(3)
        .take_while(|c| ('0'..='7').contains(c))
        .collect();
    let value = u32::from_str_radix(&digits, 8).unwrap_or(0);
    (format!("\\x{{{value:x}}}"), digits.len())
}

/// A translated regex body, and whether verbose mode (`x`) is on at its end.
struct Translated {
    out: String,
    verbose_at_end: bool,
}

/// Whether inline flags (`imsx-imsx`, as kept) turn verbose mode on or off, if they
/// mention it.
fn inline_verbose(flags: &str) -> Option<bool> {
    let (on, off) = flags.split_once('-').unwrap_or((flags, ""));
    if off.contains('x') {
        Some(false)
    } else if on.contains('x') {
        Some(true)
    } else {
        None
    }
}

fn translate_body(body: &str, mut verbose: bool) -> Result<Translated, GrammarErrorKind> {
    let mut out = String::with_capacity(body.len() + 8);
    let mut i = 0;
    let mut in_class = false;
    // Open groups: the body is wrapped in a group of ours, so a stray `)` would close
    // that one and silently change the language (`a)|(b`); Python rejects it.
    let mut depth = 0usize;
    // Position right after `[` or `[^`, where `]` is a literal.
    let mut class_start = false;
    // Whether the previous token was a quantifier (a following `+` is possessive).
    let mut after_quantifier = false;
    while i < body.len() {
        let rest = &body[i..];
        let c = rest.chars().next().expect("i is on a char boundary");
        let was_class_start = class_start;
        class_start = false;
        let quantifier_before = after_quantifier;
        after_quantifier = false;

        if c == '\\' {
            let Some(e) = rest[1..].chars().next() else {
                return Err(GrammarErrorKind::InvalidRegex {
                    message: "trailing backslash".into(),
                });
            };
            let after = &rest[1 + e.len_utf8()..];
            let mut consumed = 1 + e.len_utf8();
            match e {
                '/' => out.push('/'),
                '0' => {
                    let (esc, n) = octal_escape(&rest[1..]);
                    out.push_str(&esc);
                    consumed = 1 + n;
                }
                '1'..='9' if !in_class => return Err(unsupported("backreference `\\N`")),
                'Z' if !in_class => out.push_str("\\z"),
                // Python: the literal characters; regex-syntax: word-start/end assertions.
                '<' | '>' => out.push(e),
                'b' if in_class => out.push_str("\\x08"),
                'N' if after.starts_with('{') => {
                    return Err(unsupported("named Unicode escape `\\N{...}`"))
                }
                'p' | 'P' | 'x' | 'u' | 'U' => {
                    out.push('\\');
                    out.push(e);
                    if let Some(n) = braced_escape_len(after) {
                        out.push_str(&after[..n]);
                        consumed += n;
                    }
                }
                _ => {
                    out.push('\\');
                    out.push(e);
                }
            }
            i += consumed;
            continue;
        }

        if in_class {
            match c {
                ']' if !was_class_start => {
                    in_class = false;
                    out.push(']');
                }
                ']' => out.push_str("\\]"),
                '^' if was_class_start && out.ends_with('[') => {
                    out.push('^');
                    class_start = true;
                }
                '[' => {
                    // `[:alpha:]` is a POSIX class in Rust (and meant as one); any other `[`
                    // is a literal in Python but would open a nested class in Rust.
                    let posix = rest
                        .strip_prefix("[:")
                        .and_then(|r| r.find(":]").map(|e| (r, e)));
                    match posix {
                        Some((r, end))
                            if r[..end]
                                .trim_start_matches('^')
                                .chars()
                                .all(|c| c.is_ascii_lowercase()) =>
                        {
                            let n = 2 + end + 2;
                            out.push_str(&rest[..n]);
                            i += n;
                            continue;
                        }
                        _ => out.push_str("\\["),
                    }
                }
                // Rust's class set operators `&&`, `~~`, `--` are literals in Python.
                '&' | '~' => {
                    out.push('\\');
                    out.push(c);
                }
                '-' if rest.starts_with("--") => out.push_str("-\\-"),
                // Python's verbose mode keeps blanks and `#` inside a class; Rust's does not.
                ' ' if verbose => out.push_str("\\x20"),
                '#' if verbose => out.push_str("\\#"),
                '\t' | '\n' | '\r' | '\x0b' | '\x0c' if verbose => {
                    out.push_str(&format!("\\x{{{:x}}}", c as u32))
                }
                _ => out.push(c),
            }
            i += if c == '-' && rest.starts_with("--") {
                2
            } else {
                c.len_utf8()
            };
            continue;
        }

        match c {
            '[' => {
                in_class = true;
                class_start = true;
                out.push('[');
            }
            '(' if rest.starts_with("(?") => {
                let r = &rest[2..];
                let feature = if r.starts_with('=') {
                    Some("lookahead `(?=...)`")
                } else if r.starts_with('!') {
                    Some("negative lookahead `(?!...)`")
                } else if r.starts_with("<=") {
                    Some("lookbehind `(?<=...)`")
                } else if r.starts_with("<!") {
                    Some("negative lookbehind `(?<!...)`")
                } else if r.starts_with("P=") {
                    Some("named backreference `(?P=name)`")
                } else if r.starts_with('>') {
                    Some("atomic group `(?>...)`")
                } else if r.starts_with('(') {
                    Some("conditional group `(?(...)...)`")
                } else {
                    None
                };
                if let Some(f) = feature {
                    return Err(unsupported(f));
                }
                if r.starts_with('#') {
                    // Python comment group: drop it.
                    let end = r.find(')').ok_or_else(|| GrammarErrorKind::InvalidRegex {
                        message: "unterminated comment group `(?#`".into(),
                    })?;
                    i += 2 + end + 1;
                    continue;
                }
                if !(r.starts_with("P<") || r.starts_with('<') || r.starts_with(':')) {
                    // Inline flags `(?imsx-imsx)` / `(?imsx-imsx:...)`.
                    let flags_end = r.find([')', ':']).unwrap_or(r.len());
                    let mut kept = String::new();
                    for f in r[..flags_end].chars() {
                        match f {
                            'i' | 'm' | 's' | 'x' | '-' => kept.push(f),
                            // `(?u)` is the default and Python's spelling; `(?-u)` is
                            // regex-syntax's byte mode (`(?-u:\xff)` is the byte 0xff,
                            // not the character U+00FF): it must reach the lexer.
                            'u' if kept.contains('-') => kept.push(f),
                            'u' => {}
                            'a' => {
                                return Err(unsupported("inline flag `a` (ASCII-only matching)"))
                            }
                            'L' => {
                                return Err(unsupported(
                                    "inline flag `L` (locale-dependent matching)",
                                ))
                            }
                            // Leave anything else to regex-syntax, which reports it.
                            other => kept.push(other),
                        }
                    }
                    if kept == "-" {
                        kept.clear();
                    }
                    let scoped = r[flags_end..].starts_with(':');
                    if !scoped && depth == 0 {
                        // `(?x)` at the top level lasts to the end of the body.
                        verbose = inline_verbose(&kept).unwrap_or(verbose);
                    }
                    if kept.is_empty() && r[flags_end..].starts_with(')') {
                        // `(?u)` alone: nothing left to say.
                        i += 2 + flags_end + 1;
                        continue;
                    }
                    // `(?u:` becomes `(?:` — the `:` is copied by the next iteration. A
                    // flags-only `(?i)` is closed by the `)` the next iteration copies.
                    out.push_str("(?");
                    out.push_str(&kept);
                    depth += 1;
                    i += 2 + flags_end;
                    continue;
                }
                out.push_str("(?");
                depth += 1;
                i += 2;
                continue;
            }
            '+' if quantifier_before => {
                return Err(unsupported(
                    "possessive quantifier (`*+`, `++`, `?+`, `{n}+`)",
                ));
            }
            '*' | '+' => {
                out.push(c);
                after_quantifier = true;
            }
            '?' => {
                out.push('?');
                // `x??` is lazy; `x?` is a quantifier after which `+` would be possessive.
                after_quantifier = !quantifier_before;
            }
            // Python reads a quantifier with nothing to repeat (`{2}` at the start, after
            // `(` or `|`) as literal text; Rust would reject it.
            '{' => match brace_quantifier(rest).filter(|_| has_operand(&out)) {
                Some((q, n)) => {
                    out.push_str(&q);
                    after_quantifier = true;
                    i += n;
                    continue;
                }
                None => out.push_str("\\{"),
            },
            '}' => out.push_str("\\}"),
            ']' => out.push_str("\\]"),
            '(' => {
                depth += 1;
                out.push('(');
            }
            ')' if depth == 0 => {
                return Err(GrammarErrorKind::InvalidRegex {
                    message: "unbalanced parenthesis: `)` closes no group".into(),
                })
            }
            ')' => {
                depth -= 1;
                out.push(')');
            }
            _ => out.push(c),
        }
        i += c.len_utf8();
    }
    Ok(Translated {
        out,
        verbose_at_end: verbose,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(body: &str, flags: &str) -> String {
        translate(body, flags).unwrap_or_else(|e| panic!("{body}: {e}"))
    }

    fn feature(body: &str) -> String {
        match translate(body, "") {
            Err(GrammarErrorKind::UnsupportedRegex { feature }) => feature,
            other => panic!("{body}: {other:?}"),
        }
    }

    #[test]
    fn flags_become_inline_groups() {
        assert_eq!(ok("a+", ""), "(?:a+)");
        assert_eq!(ok("a+", "i"), "(?i:a+)");
        assert_eq!(ok("a.b", "su"), "(?s:a.b)");
        assert_eq!(ok("a # comment", "x"), "(?x:a # comment\n)");
        assert!(matches!(
            translate("a", "l"),
            Err(GrammarErrorKind::UnsupportedRegex { .. })
        ));
    }

    #[test]
    fn python_spellings_are_translated() {
        assert_eq!(ok(r"a\/b", ""), "(?:a/b)");
        assert_eq!(ok(r"x{,3}", ""), "(?:x{0,3})");
        assert_eq!(ok(r"x{2,}y{3}", ""), "(?:x{2,}y{3})");
        assert_eq!(ok(r"{a}", ""), r"(?:\{a\})");
        assert_eq!(ok(r"a(?#note)b", ""), "(?:ab)");
        assert_eq!(ok(r"\0\012", ""), r"(?:\x{0}\x{a})");
        assert_eq!(ok(r"[\b]", ""), r"(?:[\x08])");
        assert_eq!(ok(r"[^[]", ""), r"(?:[^\[])");
        assert_eq!(ok(r"[]a]", ""), r"(?:[\]a])");
        assert_eq!(ok(r"[a&&b]", ""), r"(?:[a\&\&b])");
        assert_eq!(ok(r"[[:alpha:]_]", ""), r"(?:[[:alpha:]_])");
        assert_eq!(ok(r"\p{L}{2}", ""), r"(?:\p{L}{2})");
        assert_eq!(ok(r"(?P<n>a)(?i)b", ""), r"(?:(?P<n>a)(?i)b)");
        assert_eq!(ok(r"[ #]", "x"), "(?x:[\\x20\\#]\n)");
        assert_eq!(ok(r".*?", ""), "(?:.*?)");
        assert_eq!(ok(r"(?u:a)(?u)b", ""), "(?:(?:a)b)");
        assert_eq!(ok(r"{2}|(x{3})", ""), r"(?:\{2\}|(x{3}))");
        assert_eq!(ok(r"\({2}", ""), r"(?:\({2})");
        assert_eq!(ok(r"é{2}", ""), r"(?:é{2})");
    }

    #[test]
    fn unsupported_features_are_named() {
        assert_eq!(feature("a(?=b)"), "lookahead `(?=...)`");
        assert_eq!(feature("a(?!b)"), "negative lookahead `(?!...)`");
        assert_eq!(feature("(?<=a)b"), "lookbehind `(?<=...)`");
        assert_eq!(feature("(?<!a)b"), "negative lookbehind `(?<!...)`");
        assert_eq!(feature(r"(a)\1"), "backreference `\\N`");
        assert_eq!(feature("(?P<x>a)(?P=x)"), "named backreference `(?P=name)`");
        assert_eq!(feature("(?>a)"), "atomic group `(?>...)`");
        assert!(feature("a*+").starts_with("possessive"));
        assert!(feature("a{2}+").starts_with("possessive"));
        assert!(feature("(?(1)a|b)").starts_with("conditional"));
        assert!(feature(r"\bif\b").starts_with("word boundary"));
        assert!(feature("^a").starts_with("anchor `^`"));
        assert!(feature(r"a\Z").starts_with("anchor `$`/`\\z`/`\\Z`"));
        assert!(feature("(?m:a$)").starts_with("anchor `$`"));
        // Not possessive: a lazy quantifier followed by nothing, and `+` after a group.
        ok("a+?b", "");
        ok("(a)+", "");
    }

    #[test]
    fn invalid_regexes_are_reported() {
        match translate("[abc", "") {
            Err(GrammarErrorKind::InvalidRegex { message }) => {
                assert!(message.contains("unclosed"), "{message}")
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            translate("a\\", ""),
            Err(GrammarErrorKind::InvalidRegex { .. })
        ));
    }

    #[test]
    fn a_stray_parenthesis_is_an_error_not_a_new_language() {
        // Wrapped naively, `a)|(b` would become `(?:a)|(b)`: the language {a, b}.
        for body in ["a)|(b", ")", "(a))", "(?:a))(", "(?i)a)"] {
            match translate(body, "") {
                Err(GrammarErrorKind::InvalidRegex { message }) => {
                    assert!(message.contains("unbalanced"), "{body}: {message}")
                }
                other => panic!("{body}: {other:?}"),
            }
        }
        // Balanced groups of every kind, and escaped or class parentheses, are fine.
        ok(r"(a)(?:b)(?i:c)(?P<n>d)(?i)e\)[)(]", "");
        ok(r"a(?#comment)b", "");
    }

    #[test]
    fn angle_bracket_escapes_are_literals_as_in_python() {
        // regex-syntax would read `\<`/`\>` as word-start/end assertions.
        assert_eq!(ok(r"\<[a-z]+\>", ""), "(?:<[a-z]+>)");
        assert_eq!(ok(r"[\<\>]", ""), "(?:[<>])");
    }

    #[test]
    fn inline_verbose_flag_at_top_level_keeps_the_closing_group() {
        // `#` starts a comment to the end of the line; our closing `)` must survive it.
        assert_eq!(ok("(?x)a # c", ""), "(?:(?x)a # c\n)");
        // Scoped or switched-off verbose mode ends before the body does: no newline,
        // which would otherwise be a literal.
        assert_eq!(ok("(?x:a # c\n)b", ""), "(?:(?x:a # c\n)b)");
        assert_eq!(ok("(?x)a(?-x)b", ""), "(?:(?x)a(?-x)b)");
        assert_eq!(ok("a (?-x)b", "x"), "(?x:a (?-x)b)");
    }

    /// Issue 11 (2): `(?-u:...)` lost its `-u`, so byte classes became character
    /// classes: `/(?-u:\xff)/` accepted `\xc3\xbf` (U+00FF) and rejected the byte 0xff.
    #[test]
    fn byte_mode_groups_keep_matching_bytes() {
        let accepts = |body: &str, s: &[u8]| {
            let d = crate::lexer::compile_terminal(&ok(body, "")).unwrap();
            d.is_accepting(d.run(s))
        };
        assert!(accepts(r"(?-u:\xff)", &[0xff]));
        assert!(!accepts(r"(?-u:\xff)", "\u{ff}".as_bytes()));
        assert!(accepts(r"(?-u:[\x80-\xff])+", &[0x80, 0xff]));
        assert!(accepts(r"(?i-u)\xff", &[0xff]));
        assert_eq!(ok(r"(?-u:\xff)", ""), r"(?:(?-u:\xff))");
        assert_eq!(ok(r"(?u-i:a)", ""), r"(?:(?-i:a))");
    }

    /// Patterns whose meaning Python and regex-syntax share (plus regex-syntax's byte
    /// mode): the translation must not change their language.
    /// Each with a byte string it matches.
    const SHARED: &[(&str, &[u8])] = &[
        (r"(?-u:\xff)", b"\xff"),
        (r"(?-u:[\x80-\xff])+", b"\x80\xff"),
        (r"(?-u:[^a])", b"\xe9"),
        (r"(?-u:.)+", b"\xff\xc3"),
        (r"(?s-u:.)", b"\n"),
        (r"(?-u)\x80[\xc0-\xff]", b"\x80\xc3"),
        (r"a(?-u:\xe9|b)c", b"a\xe9c"),
        (r"(?i-u:\xc9)", b"\xc9"),
        (r"(?i)\xe9", "É".as_bytes()),
        (r"\xff", "\u{ff}".as_bytes()),
        (r"[\x80-\xff]", "é".as_bytes()),
        (r"[^a-z]+", b"\xc3\xa9\n"),
        (r".", "é".as_bytes()),
        (r"(?s:.)", b"\n"),
        (r"\w+", "aé".as_bytes()),
        (r"\d\s", b"1 "),
        (r"[\u00e9é]", "é".as_bytes()),
        (r"\x{10ffff}", "\u{10ffff}".as_bytes()),
        (r"(?i:ß)", "ẞ".as_bytes()),
        (r"(?u:\xe9)(?-u:\xe9)", b"\xc3\xa9\xe9"),
        ("(?x: a b # c\n)", b"ab"),
        (r"\p{Greek}|(?-u:\w)", "α".as_bytes()),
        (r"\0\012[\b]", b"\0\n\x08"),
        (r"x{,3}y{2,}", b"xyy"),
    ];

    /// Random byte strings: mostly bytes the patterns mention, their UTF-8 encodings and
    /// high bytes, sometimes anything.
    fn random_bytes(rng: &mut crate::test_rng::XorShift) -> Vec<u8> {
        const PIECES: &[&[u8]] = &[
            b"a",
            b"b",
            b"c",
            b"x",
            b"y",
            b" ",
            b"\n",
            b"\x08",
            b"\0",
            b"1",
            b"\xff",
            b"\x80",
            b"\xe9",
            b"\xc9",
            "é".as_bytes(),
            "É".as_bytes(),
            "\u{ff}".as_bytes(),
            "ß".as_bytes(),
            "ss".as_bytes(),
            "α".as_bytes(),
            "\u{10ffff}".as_bytes(),
            b"\xc3",
            b"\xf4\x8f\xbf",
            "ẞ".as_bytes(),
            b"S",
        ];
        let mut next = || rng.next();
        let len = next() % 5;
        let mut out = Vec::new();
        for _ in 0..len {
            if next() % 4 == 0 {
                out.push(next() as u8);
            } else {
                out.extend_from_slice(PIECES[(next() % PIECES.len() as u64) as usize]);
            }
        }
        out
    }

    /// Differential audit of the translation (issue 11): each pattern as translated and
    /// compiled by the lexer accepts exactly the byte strings regex-automata accepts for
    /// the original in byte mode (Unicode on, UTF-8 off, as the lexer), over random byte
    /// strings.
    #[test]
    fn translation_keeps_the_byte_language() {
        use regex_automata::{meta::Regex, util::syntax, Anchored, Input};
        let mut rng = crate::test_rng::XorShift(0x2545_f491_4f6c_dd1d);
        for &(body, witness) in SHARED {
            // The two Python-only spellings in the list, in regex-syntax's.
            let spelled = body
                .replace(r"\0\012[\b]", r"\x00\n[\x08]")
                .replace("x{,3}", "x{0,3}");
            let original = Regex::builder()
                .syntax(syntax::Config::new().unicode(true).utf8(false))
                .configure(Regex::config().utf8_empty(false))
                .build(&format!("(?:{spelled})$"))
                .unwrap_or_else(|e| panic!("{body}: {e}"));
            let lexer = crate::lexer::compile_terminal(&ok(body, ""))
                .unwrap_or_else(|e| panic!("{body}: {e:?}"));
            for s in std::iter::once(witness.to_vec())
                .chain(std::iter::repeat_with(|| random_bytes(&mut rng)).take(4000))
            {
                let want = original.is_match(Input::new(&s).anchored(Anchored::Yes));
                let got = lexer.is_accepting(lexer.run(&s));
                assert_eq!(got, want, "/{body}/ on {s:?}");
                if s == witness {
                    assert!(want, "/{body}/ must match its witness {s:?}");
                }
            }
        }
    }
}
