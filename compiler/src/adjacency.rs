//! Greedy-lexing dead ends: the check that lets the compiled path use plain liveness.
//!
//! Under DESIGN.md §1 a greedy lexeme ending in DFA state `q` forbids the next lexeme
//! from starting with a byte that extends `q`. A lexeme can therefore be alive while
//! every way to finish it blocks whatever the grammar requires next (`start: A B`,
//! `A: /a+/`, `B: "a"` has no sentence). The reference path decides this exactly at
//! run time; the compiled path instead requires, at compile time, a grammar where it
//! cannot happen:
//!
//! for every terminal `t` and every live state `q` of its DFA, some accepting state
//! reachable from `q` lets *every* byte that can start a terminal which may follow
//! `t` (ignore terminals included) begin the next lexeme.
//!
//! Then every live configuration has a completion (finish each lexeme in such a
//! state; by induction the rest of the derivation can be lexed), so "some lexeme is
//! live and expected" is exact. JSON, C, SQL and arithmetic grammars pass; a grammar
//! that fails gets an error naming the two terminals.

use crate::analysis::{members, terminal_follow};
use stackmask_formats::{ByteDfa, Grammar};

/// Where a grammar may dead-end under greedy lexing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{source_name}: after terminal {after}, greedy lexing may block {before} (input {example:?} cannot be ended so that {before} can start); \
     the compiled path needs grammars without such dead ends (the reference path handles them): make {after} lazy or separate the two"
)]
pub struct DeadEndError {
    /// Grammar source name.
    pub source_name: String,
    /// The terminal whose lexeme cannot end well.
    pub after: String,
    /// A terminal that may follow it and may be blocked.
    pub before: String,
    /// Bytes that bring `after`'s DFA to a state with the problem.
    pub example: String,
}

/// Checks the condition in the module docs.
pub fn check_dead_ends(g: &Grammar, dfas: &[ByteDfa]) -> Result<(), DeadEndError> {
    let follow = terminal_follow(g);
    let n = g.terminals.len();
    let first_bytes = |t: usize| -> [bool; 256] {
        let d = &dfas[t];
        std::array::from_fn(|b| d.extends(d.start, b as u8))
    };
    let firsts: Vec<[bool; 256]> = (0..n).map(first_bytes).collect();
    let any_follow: Vec<u32> = (0..n).flat_map(|t| members(&follow[t]).filter(|&u| (u as usize) < n).collect::<Vec<_>>()).collect();
    for t in 0..n {
        if g.terminals[t].lazy {
            continue;
        }
        let mut next: Vec<u32> = if g.is_ignore(t as u32) {
            any_follow.clone()
        } else {
            members(&follow[t]).filter(|&u| (u as usize) < n).collect()
        };
        if !next.is_empty() || g.is_ignore(t as u32) {
            next.extend(&g.ignore);
        }
        next.sort_unstable();
        next.dedup();
        let d = &dfas[t];
        // Accepting states whose exit admits every possible next first byte.
        let good_exit = |q: u32| d.is_accepting(q) && next.iter().all(|&u| (0..256).all(|b| !firsts[u as usize][b] || !d.extends(q, b as u8)));
        let states = d.num_states();
        let mut good: Vec<bool> = (0..states as u32).map(good_exit).collect();
        let mut changed = true;
        while changed {
            changed = false;
            for q in 1..states {
                if !good[q] && (0..=255u8).any(|b| good[d.next(q as u32, b) as usize]) {
                    good[q] = true;
                    changed = true;
                }
            }
        }
        // A live state reachable from the start that cannot reach a good exit.
        let mut seen = vec![false; states];
        let mut queue = vec![(d.start, Vec::<u8>::new())];
        seen[d.start as usize] = true;
        while let Some((q, path)) = queue.pop() {
            if q != ByteDfa::DEAD && !good[q as usize] && !path.is_empty() {
                let blocked = next
                    .iter()
                    .find(|&&u| (0..256).any(|b| firsts[u as usize][b]))
                    .map(|&u| g.terminals[u as usize].name.clone())
                    .unwrap_or_default();
                return Err(DeadEndError {
                    source_name: g.source_name.clone(),
                    after: g.terminals[t].name.clone(),
                    before: blocked,
                    example: String::from_utf8_lossy(&path).into_owned(),
                });
            }
            for b in 0..=255u8 {
                let s = d.next(q, b);
                if s != ByteDfa::DEAD && !seen[s as usize] {
                    seen[s as usize] = true;
                    let mut p = path.clone();
                    p.push(b);
                    queue.push((s, p));
                }
            }
        }
    }
    Ok(())
}
