//! tiktoken's pre-tokenizer split, computed without backtracking.
//!
//! tiktoken cuts text into pieces with a `fancy-regex` pattern and byte-pair-encodes each
//! piece on its own. The patterns end in `\s+(?!\S)`, whose look-ahead runs in
//! fancy-regex's backtracking VM: a run of about a million whitespace characters overflows
//! its fixed stack (`StackOverflow`), and `tiktoken-rs` unwraps that error into a panic.
//!
//! Every alternative *before* that look-ahead needs no backtracking (the possessive
//! quantifiers of cl100k's pattern are equivalent to greedy ones where they stand: the
//! class after each never overlaps it, see [`Split::cl100k`]), so a leftmost-first
//! finite-automaton search (regex-automata) finds the same match. When none of them
//! matches at a position, the text there is whitespace and the last two alternatives are
//! decided by hand, which is what they mean:
//!
//! - `\s+(?!\S)`: the longest whitespace run `[t, r)` if it ends the text; otherwise
//!   `[t, r - 1)` when that is not empty (the character before a non-space is left for the
//!   next piece);
//! - `\s+` (o200k) or `\s` (cl100k): otherwise the run has one character, and both take it.
//!
//! The pieces are then the same as the library's, and the identity is tested against the
//! library on every input where the library itself works.

use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};

/// The pieces of one tiktoken encoding's pre-tokenizer pattern.
pub struct Split {
    /// The pattern's alternatives before `\s+(?!\S)`, as one leftmost-first regex.
    head: Regex,
    /// `\s+`: the whitespace run starting at a position.
    space: Regex,
}

/// o200k_base's pattern up to (not including) `|\s+(?!\S)|\s+`: it is the start of
/// `tiktoken_rs::O200K_BASE_PAT_STR`, checked by a test.
const O200K_HEAD: &str = concat!(
    r#"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"#,
    "|",
    r#"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"#,
    "|",
    r#"\p{N}{1,3}"#,
    "|",
    r#" ?[^\s\p{L}\p{N}]+[\r\n/]*"#,
    "|",
    r#"\s*[\r\n]+"#,
);

/// The library's o200k tail after [`O200K_HEAD`]: the two alternatives decided by hand.
pub const O200K_TAIL: &str = r#"|\s+(?!\S)|\s+"#;

/// cl100k_base's pattern in `tiktoken-rs` is
/// `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s`.
/// regex-automata has no possessive quantifiers; each one here gives the same match as
/// the greedy quantifier, because backtracking into it could never succeed:
/// `[^\r\n\p{L}\p{N}]?+` is followed by `\p{L}`, which the optional character is not;
/// `\p{L}++`, `\p{N}{1,3}+` and `[\r\n]*+` end their alternative; `[^\s\p{L}\p{N}]++` is
/// followed by `[\r\n]*`, disjoint from it and allowed to be empty; `\s++$` needs the end
/// of the text, which a shorter run cannot reach.
const CL100K_HEAD: &str = concat!(
    r#"'(?i:[sdmt]|ll|ve|re)"#,
    "|",
    r#"[^\r\n\p{L}\p{N}]?\p{L}+"#,
    "|",
    r#"\p{N}{1,3}"#,
    "|",
    r#" ?[^\s\p{L}\p{N}]+[\r\n]*"#,
    "|",
    r#"\s+$"#,
    "|",
    r#"\s*[\r\n]"#,
);

impl Split {
    /// The split of `o200k_base`.
    pub fn o200k() -> Split {
        Split::new(O200K_HEAD)
    }

    /// The split of `cl100k_base`.
    pub fn cl100k() -> Split {
        Split::new(CL100K_HEAD)
    }

    fn new(head: &str) -> Split {
        // Both patterns are constants that compile (tested); a failure is a bug here.
        Split {
            head: Regex::new(head).expect("tiktoken split pattern compiles"),
            space: Regex::new(r"\s+").expect(r"\s+ compiles"),
        }
    }

    /// Calls `piece` on each piece of `text`, in order; the pieces tile the text.
    ///
    /// # Errors
    /// A position where no alternative matches (the library would silently skip the
    /// text there): the byte offset. No such text is known; it is reported rather than
    /// tokenized differently.
    pub fn pieces<E>(
        &self,
        text: &str,
        mut piece: impl FnMut(&str) -> Result<(), E>,
        no_match: impl Fn(usize) -> E,
    ) -> Result<(), E> {
        let mut t = 0;
        while t < text.len() {
            let end = self
                .match_end(&self.head, text, t)
                .or_else(|| {
                    let r = self.match_end(&self.space, text, t)?;
                    // Where the run's last character starts (the run is not empty).
                    let last = text[..r].char_indices().next_back().map_or(t, |(i, _)| i);
                    // At the end of the text, or when the run is one character, the
                    // piece is the run; otherwise the run's last character is left for
                    // the next piece (before it comes a non-space, after it `(?!\S)`).
                    Some(if r == text.len() || last == t {
                        r
                    } else {
                        last
                    })
                })
                .ok_or_else(|| no_match(t))?;
            piece(&text[t..end])?;
            t = end;
        }
        Ok(())
    }

    /// End of the leftmost-first match of `re` anchored at `at`, if it is not empty.
    fn match_end(&self, re: &Regex, text: &str, at: usize) -> Option<usize> {
        let m = re.search(&Input::new(text).range(at..).anchored(Anchored::Yes))?;
        (m.end() > at).then_some(m.end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &Split, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        s.pieces::<usize>(
            text,
            |p| {
                out.push(p.to_string());
                Ok(())
            },
            |at| at,
        )
        .unwrap();
        out
    }

    #[test]
    fn o200k_head_is_the_librarys_pattern() {
        assert_eq!(
            format!("{O200K_HEAD}{O200K_TAIL}"),
            tiktoken_rs::O200K_BASE_PAT_STR
        );
    }

    #[test]
    fn whitespace_runs_leave_their_last_character() {
        for s in [Split::o200k(), Split::cl100k()] {
            assert_eq!(split(&s, "a   b"), ["a", "  ", " b"]);
            assert_eq!(split(&s, "a   "), ["a", "   "]);
            assert_eq!(split(&s, "   1"), ["  ", " ", "1"]);
            assert_eq!(split(&s, " 1"), [" ", "1"]);
            assert_eq!(
                split(&s, "\u{3000}\u{3000}1"),
                ["\u{3000}", "\u{3000}", "1"]
            );
        }
    }
}
