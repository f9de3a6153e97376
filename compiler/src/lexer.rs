//! Lexer stage: one anchored byte-level DFA per terminal.
//!
//! Each terminal's regex is determinized by regex-automata and copied into a
//! [`ByteDfa`] table with two fixes the runtime relies on (DESIGN.md §7):
//! regex-automata reports a match one byte late, so "accepting" here is computed
//! through the end-of-input transition; and a non-dead state may be unable to reach a
//! match, so liveness is computed here and every non-live state is folded into the
//! single dead state. After that, `next(s, b) != DEAD` is exactly "b extends the
//! lexeme", which is the test greedy lexing needs.

use regex_automata::dfa::dense::{BuildError, Config, DFA};
use regex_automata::dfa::{Automaton, StartKind};
use regex_automata::nfa::thompson;
use regex_automata::util::primitives::StateID;
use regex_automata::util::start;
use regex_automata::{util::syntax, Anchored, MatchKind};
use stackmask_formats::{ByteDfa, Grammar, Location};
use std::collections::HashMap;

/// Limit on the memory regex-automata may use to determinize one terminal.
pub const DETERMINIZE_SIZE_LIMIT: usize = 256 << 20;
/// Limit on the size of one terminal's DFA.
pub const DFA_SIZE_LIMIT: usize = 256 << 20;
/// Limit on the number of states of one terminal's table.
pub const MAX_TERMINAL_STATES: usize = 1 << 20;

/// Why a terminal's regex could not become a DFA.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LexerErrorKind {
    /// The regex does not parse (or uses syntax Rust's regex lacks).
    #[error("invalid regex: {0}")]
    Syntax(String),
    /// A DFA size limit was hit.
    #[error("the DFA exceeds the size limit {limit} ({what}); simplify the regex")]
    SizeLimit {
        /// Which limit.
        what: &'static str,
        /// Its value.
        limit: usize,
    },
    /// The regex uses a feature byte-level DFAs cannot express.
    #[error("unsupported regex feature: {0}")]
    Unsupported(String),
    /// The regex matches the empty string.
    #[error("the terminal can match the empty string")]
    EmptyMatch,
}

/// A terminal whose regex could not be compiled, with where it was defined.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}:{}:{}: terminal {terminal}: {kind}", .location.line, .location.col)]
pub struct LexerError {
    /// Grammar source name.
    pub source_name: String,
    /// Where the terminal was defined (1:1 if unknown).
    pub location: Location,
    /// Terminal name.
    pub terminal: String,
    /// What went wrong.
    pub kind: LexerErrorKind,
}

/// Compiles one regex (Rust syntax) to a [`ByteDfa`] matching it anchored at both ends.
pub fn compile_terminal(regex: &str) -> Result<ByteDfa, LexerErrorKind> {
    let dfa = DFA::builder()
        .configure(
            Config::new()
                // The terminal is its whole regular language: leftmost-first (the
                // default) would drop `ab` from `a|ab` once `a` has matched.
                .match_kind(MatchKind::All)
                .start_kind(StartKind::Anchored)
                .minimize(false)
                .unicode_word_boundary(false)
                .dfa_size_limit(Some(DFA_SIZE_LIMIT))
                .determinize_size_limit(Some(DETERMINIZE_SIZE_LIMIT)),
        )
        .syntax(syntax::Config::new().unicode(true).utf8(false))
        .thompson(thompson::Config::new().utf8(false))
        .build(regex)
        .map_err(|e| build_error(regex, &e))?;
    let start = dfa
        .start_state(&start::Config::new().anchored(Anchored::Yes))
        .map_err(|e| LexerErrorKind::Unsupported(e.to_string()))?;

    // Breadth-first copy of the reachable states. Table index 0 is reserved for DEAD.
    let mut index: HashMap<StateID, u32> = HashMap::new();
    let mut order: Vec<StateID> = vec![start];
    index.insert(start, 1);
    let mut trans: Vec<u32> = vec![0; 256 * 2];
    let mut accepting = vec![false, dfa.is_match_state(dfa.next_eoi_state(start))];
    let mut i = 0;
    while i < order.len() {
        let sid = order[i];
        for b in 0..=255u8 {
            let next = dfa.next_state(sid, b);
            if dfa.is_quit_state(next) {
                return Err(LexerErrorKind::Unsupported(
                    "a construct the byte DFA cannot decide (Unicode word boundary \\b: use (?-u:\\b))".into(),
                ));
            }
            let target = if dfa.is_dead_state(next) {
                0
            } else if let Some(&t) = index.get(&next) {
                t
            } else {
                let t = order.len() as u32 + 1;
                if t as usize > MAX_TERMINAL_STATES {
                    return Err(LexerErrorKind::SizeLimit {
                        what: "states per terminal",
                        limit: MAX_TERMINAL_STATES,
                    });
                }
                index.insert(next, t);
                order.push(next);
                trans.extend_from_slice(&[0; 256]);
                accepting.push(dfa.is_match_state(dfa.next_eoi_state(next)));
                t
            };
            trans[(i + 1) * 256 + b as usize] = target;
        }
        i += 1;
    }
    if accepting[1] {
        return Err(LexerErrorKind::EmptyMatch);
    }
    Ok(fold_dead_states(trans, &accepting, 1))
}

/// Computes liveness (can reach an accepting state) and redirects every transition
/// into a non-live state to DEAD, so that "live" is "not DEAD".
fn fold_dead_states(mut trans: Vec<u32>, accepting: &[bool], start: u32) -> ByteDfa {
    let n = accepting.len();
    let mut reverse: Vec<Vec<u32>> = vec![Vec::new(); n];
    for s in 1..n {
        for b in 0..256 {
            let t = trans[s * 256 + b] as usize;
            if t != 0 {
                reverse[t].push(s as u32);
            }
        }
    }
    let mut live = accepting.to_vec();
    let mut stack: Vec<u32> = (0..n as u32).filter(|&s| accepting[s as usize]).collect();
    while let Some(s) = stack.pop() {
        for &p in &reverse[s as usize] {
            if !live[p as usize] {
                live[p as usize] = true;
                stack.push(p);
            }
        }
    }
    live[0] = false;
    for t in trans.iter_mut() {
        if !live[*t as usize] {
            *t = 0;
        }
    }
    let flags = (0..n)
        .map(|s| {
            (if accepting[s] { ByteDfa::ACCEPTING } else { 0 })
                | (if live[s] { ByteDfa::LIVE } else { 0 })
        })
        .collect();
    // A start state that cannot reach a match leaves an empty language; keep it as the
    // (non-live) start so callers see a terminal that never matches.
    let start = if live[start as usize] { start } else { 0 };
    ByteDfa {
        start,
        trans,
        flags,
    }
}

fn build_error(regex: &str, e: &BuildError) -> LexerErrorKind {
    if e.is_size_limit_exceeded() {
        return LexerErrorKind::SizeLimit {
            what: "regex-automata determinization / DFA size",
            limit: DFA_SIZE_LIMIT,
        };
    }
    let msg = e.to_string();
    let source = std::error::Error::source(e)
        .map(|s| s.to_string())
        .unwrap_or_default();
    let full = if source.is_empty() {
        msg
    } else {
        format!("{msg}: {source}")
    };
    if regex.contains("(?=") || regex.contains("(?!") {
        LexerErrorKind::Unsupported("lookahead".into())
    } else if regex.contains("(?<=") || regex.contains("(?<!") {
        LexerErrorKind::Unsupported("lookbehind".into())
    } else if full.contains("backreference") {
        LexerErrorKind::Unsupported("backreference".into())
    } else {
        LexerErrorKind::Syntax(full)
    }
}

/// Compiles every terminal of a grammar, in terminal-id order.
pub fn compile_lexer(grammar: &Grammar) -> Result<Vec<ByteDfa>, LexerError> {
    grammar
        .terminals
        .iter()
        .map(|t| {
            compile_terminal(&t.regex).map_err(|kind| LexerError {
                source_name: grammar.source_name.clone(),
                location: t.defined_at.unwrap_or(Location { line: 1, col: 1 }),
                terminal: t.name.clone(),
                kind,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepts(d: &ByteDfa, s: &[u8]) -> bool {
        d.is_accepting(d.run(s))
    }

    #[test]
    fn accepting_is_not_one_byte_late() {
        let d = compile_terminal("ab").unwrap();
        assert!(!accepts(&d, b"a"));
        assert!(accepts(&d, b"ab"));
        assert!(!accepts(&d, b"abb"));
        assert_eq!(d.run(b"abb"), ByteDfa::DEAD);
    }

    #[test]
    fn liveness_folds_states_that_cannot_match() {
        let d = compile_terminal("[0-9]+").unwrap();
        let s = d.run(b"12");
        assert!(d.is_accepting(s));
        assert!(d.extends(s, b'3'));
        assert!(!d.extends(s, b'x'));
        assert!(!d.extends(s, b' '));
        d.validate().unwrap();
    }

    #[test]
    fn unicode_classes_only_match_valid_utf8() {
        let d = compile_terminal(r"\w+").unwrap();
        assert!(accepts(&d, "héllo".as_bytes()));
        // The first byte of a two-byte sequence is live but not accepting.
        let s = d.run(&"é".as_bytes()[..1]);
        assert!(d.is_live(s) && !d.is_accepting(s));
        assert_eq!(d.run(&[0xff]), ByteDfa::DEAD);
    }

    #[test]
    fn byte_patterns_can_match_invalid_utf8() {
        let d = compile_terminal(r"(?-u:\xff)+").unwrap();
        assert!(accepts(&d, &[0xff, 0xff]));
    }

    #[test]
    fn empty_match_is_rejected() {
        assert_eq!(compile_terminal("a*"), Err(LexerErrorKind::EmptyMatch));
        assert_eq!(compile_terminal("(a|)"), Err(LexerErrorKind::EmptyMatch));
    }

    #[test]
    fn lookaround_is_named() {
        assert_eq!(
            compile_terminal("a(?=b)"),
            Err(LexerErrorKind::Unsupported("lookahead".into()))
        );
        assert_eq!(
            compile_terminal("(?<!b)a"),
            Err(LexerErrorKind::Unsupported("lookbehind".into()))
        );
    }

    #[test]
    fn alternation_keeps_every_branch() {
        let d = compile_terminal("a|ab").unwrap();
        assert!(accepts(&d, b"a") && accepts(&d, b"ab"));
        let d = compile_terminal("a{1,3}|a{4}").unwrap();
        assert!(accepts(&d, b"aaaa") && !accepts(&d, b"aaaaa"));
        let d = compile_terminal("<|<=").unwrap();
        assert!(d.extends(d.run(b"<"), b'='));
    }

    #[test]
    fn case_insensitive_literal() {
        let d = compile_terminal("(?i:select)").unwrap();
        assert!(accepts(&d, b"SeLeCt"));
        assert!(!d.extends(d.run(b"select"), b'x'));
    }
}
