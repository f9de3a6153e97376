//! Greedy-lexing dead ends: the check that lets the compiled path use plain liveness.
//!
//! Under DESIGN.md §1 a greedy lexeme ending in DFA state `q` forbids the next lexeme
//! from starting with a byte that extends `q`. A lexeme can therefore be alive while
//! every way to finish it blocks whatever the grammar requires next (`start: A B`,
//! `A: /a+/`, `B: "a"` has no sentence). The reference path decides this exactly at
//! run time; the compiled path instead requires, at compile time, a grammar where it
//! cannot happen:
//!
//! for every terminal `t`, every live state `q` of its DFA, and every non-ignore
//! terminal `u` that may follow `t`, some accepting state reachable from `q` lets `u`
//! start — right away or after ignore lexemes (which are optional, so an ignore
//! terminal that no rule uses is never what gets blocked; one that a rule also uses
//! is checked like any other).
//!
//! Then every live configuration has a completion (finish each lexeme in such a
//! state; by induction the rest of the derivation can be lexed), so "some lexeme is
//! live and expected" is exact. JSON, C, SQL and arithmetic grammars pass; a grammar
//! that fails gets an error naming the two terminals.

use crate::analysis::{members, terminal_follow, FirstSets};
use stackmask_formats::{ByteDfa, Grammar, Symbol};

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

type ByteSet = [bool; 256];

/// Per ignore terminal and first byte: the exit byte-sets of the accepting states a
/// lexeme starting with that byte can end in.
fn ignore_exits(g: &Grammar, dfas: &[ByteDfa]) -> Vec<Vec<Vec<ByteSet>>> {
    g.ignore
        .iter()
        .map(|&ig| {
            let d = &dfas[ig as usize];
            let lazy = g.terminals[ig as usize].lazy;
            (0..=255u8)
                .map(|f| {
                    let mut seen = vec![false; d.num_states()];
                    let mut stack = vec![d.next(d.start, f)];
                    let mut out = Vec::new();
                    while let Some(q) = stack.pop() {
                        if q == ByteDfa::DEAD || std::mem::replace(&mut seen[q as usize], true) {
                            continue;
                        }
                        if d.is_accepting(q) {
                            out.push(exit_bytes(d, q, lazy));
                            if lazy {
                                continue;
                            }
                        }
                        stack.extend((0..=255u8).map(|b| d.next(q, b)));
                    }
                    out
                })
                .collect()
        })
        .collect()
}

/// Bytes allowed right after a lexeme ending in accepting state `q`.
fn exit_bytes(d: &ByteDfa, q: u32, lazy: bool) -> ByteSet {
    std::array::from_fn(|b| lazy || !d.extends(q, b as u8))
}

/// Bytes that may start the next non-ignore lexeme after exit `e`, ignore lexemes
/// allowed in between.
fn allowed_first(e: &ByteSet, ign: &[Vec<Vec<ByteSet>>]) -> ByteSet {
    let mut out = *e;
    let mut seen: Vec<ByteSet> = vec![*e];
    let mut stack = vec![*e];
    while let Some(x) = stack.pop() {
        for per_first in ign {
            for (f, exits) in per_first.iter().enumerate() {
                if !x[f] {
                    continue;
                }
                for e2 in exits {
                    if !seen.contains(e2) {
                        seen.push(*e2);
                        stack.push(*e2);
                        for b in 0..256 {
                            out[b] |= e2[b];
                        }
                    }
                }
            }
        }
    }
    out
}

/// Checks the condition in the module docs: for every terminal `t`, every live state
/// reachable from its start, and every non-ignore terminal `u` that may follow `t`,
/// some accepting state reachable from there lets `u` start (directly or after
/// ignore lexemes). Then, by induction, every live configuration can be completed.
pub fn check_dead_ends(g: &Grammar, dfas: &[ByteDfa]) -> Result<(), DeadEndError> {
    let follow = terminal_follow(g);
    let n = g.terminals.len();
    let firsts: Vec<ByteSet> = dfas
        .iter()
        .map(|d| std::array::from_fn(|b| d.extends(d.start, b as u8)))
        .collect();
    let ign = ignore_exits(g, dfas);
    let mut in_rules = vec![false; n];
    for s in g.rules.iter().flat_map(|r| &r.rhs) {
        if let Symbol::Terminal(t) = *s {
            in_rules[t as usize] = true;
        }
    }
    let mut any_follow: Vec<u32> = (0..n)
        .flat_map(|t| {
            members(&follow[t])
                .filter(|&u| (u as usize) < n)
                .collect::<Vec<_>>()
        })
        .collect();
    if g.allow_initial_skip {
        let first = FirstSets::new(g, &[], g.nonterminals.len());
        any_follow.extend(members(&first.first[g.start as usize]).filter(|&u| (u as usize) < n));
    }
    for t in 0..n {
        // Ignore lexemes are optional, so only non-ignore followers can be blocked in a
        // way that matters; after an ignore lexeme, anything that follows some lexeme
        // (or starts the input, with allow_initial_skip) may come.
        let mut next: Vec<u32> = if g.is_ignore(t as u32) {
            any_follow.clone()
        } else {
            members(&follow[t]).filter(|&u| (u as usize) < n).collect()
        };
        // An ignore terminal that a rule also uses can be required, so it stays.
        next.retain(|&u| !g.is_ignore(u) || in_rules[u as usize]);
        next.sort_unstable();
        next.dedup();
        let d = &dfas[t];
        let lazy = g.terminals[t].lazy;
        let states = d.num_states();
        let af: Vec<Option<ByteSet>> = (0..states as u32)
            .map(|q| {
                d.is_accepting(q)
                    .then(|| allowed_first(&exit_bytes(d, q, lazy), &ign))
            })
            .collect();
        for &u in &next {
            let fu = &firsts[u as usize];
            let mut good: Vec<bool> = af
                .iter()
                .map(|a| a.as_ref().is_some_and(|a| (0..256).any(|b| a[b] && fu[b])))
                .collect();
            let mut changed = true;
            while changed {
                changed = false;
                for q in 1..states {
                    // A lazy lexeme ends at its first match: it cannot go on past one.
                    if good[q] || (lazy && d.is_accepting(q as u32)) {
                        continue;
                    }
                    if (0..=255u8).any(|b| good[d.next(q as u32, b) as usize]) {
                        good[q] = true;
                        changed = true;
                    }
                }
            }
            if let Some(example) = bad_state(d, &good, lazy) {
                return Err(DeadEndError {
                    source_name: g.source_name.clone(),
                    after: g.terminals[t].name.clone(),
                    before: g.terminals[u as usize].name.clone(),
                    example: String::from_utf8_lossy(&example).into_owned(),
                });
            }
        }
    }
    Ok(())
}

/// Bytes leading from the start to a live state that is not good, if any.
fn bad_state(d: &ByteDfa, good: &[bool], lazy: bool) -> Option<Vec<u8>> {
    let mut seen = vec![false; d.num_states()];
    let mut queue = std::collections::VecDeque::from([(d.start, Vec::<u8>::new())]);
    seen[d.start as usize] = true;
    while let Some((q, path)) = queue.pop_front() {
        if !path.is_empty() && !good[q as usize] {
            return Some(path);
        }
        if lazy && d.is_accepting(q) {
            continue;
        }
        for b in 0..=255u8 {
            let s = d.next(q, b);
            if s != ByteDfa::DEAD && !seen[s as usize] {
                seen[s as usize] = true;
                let mut p = path.clone();
                p.push(b);
                queue.push_back((s, p));
            }
        }
    }
    None
}
