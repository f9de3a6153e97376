//! Greedy-lexing dead ends: whether a grammar has any.
//!
//! Under DESIGN.md §1 a greedy lexeme ending in DFA state `q` forbids the next lexeme
//! from starting with a byte that extends `q`. A lexeme can therefore be alive while
//! every way to finish it blocks whatever the grammar requires next (`start: A B`,
//! `A: /a+/`, `B: "a"` has no sentence). This module decides, cheaply and from the
//! grammar alone, that this cannot happen:
//!
//! for every terminal `t`, every live state `q` of its DFA, and every non-ignore
//! terminal `u` that may follow `t`, some accepting state reachable from `q` lets `u`
//! start — right away or after ignore lexemes (which are optional, so an ignore
//! terminal that no rule uses is never what gets blocked; one that a rule also uses
//! is checked like any other).
//!
//! Then every live configuration has a completion (finish each lexeme in such a
//! state; by induction the rest of the derivation can be lexed), so "some lexeme is
//! live and expected" is exact, and the grammar is compiled as it is. JSON, C, SQL and
//! arithmetic grammars pass. A grammar that fails is compiled through the
//! grammar × lexeme-adjacency product ([`crate::adjacency_product`]), which is exact
//! there too; the [`DeadEndError`] names the first place found.

use crate::analysis::{members, terminal_follow, FirstSets};
use stackmask_formats::dfa::ReverseEdges;
use stackmask_formats::{ByteDfa, Grammar, Location, Symbol};
use std::collections::HashMap;

/// Where a grammar may dead-end under greedy lexing (not an error: the place the
/// product stage reports when its own limit is hit). The message starts with
/// `file:line:col` of `after`'s definition and names where `before` is defined.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{}: after terminal {after}, greedy lexing may block {before} (defined at {}; input {example:?} cannot be ended so that {before} can start)",
    at(.source_name, .after_at), at(.source_name, .before_at)
)]
pub struct DeadEndError {
    /// Grammar source name.
    pub source_name: String,
    /// The terminal whose lexeme cannot end well.
    pub after: String,
    /// Where `after` is defined (first use, for anonymous literals), if known.
    pub after_at: Option<Location>,
    /// A terminal that may follow it and may be blocked.
    pub before: String,
    /// Where `before` is defined, if known.
    pub before_at: Option<Location>,
    /// Bytes that bring `after`'s DFA to a state with the problem.
    pub example: String,
}

/// `file:line:col`, or `file` alone when the location is unknown.
fn at(source_name: &str, location: &Option<Location>) -> String {
    match location {
        Some(l) => format!("{source_name}:{}:{}", l.line, l.col),
        None => source_name.to_string(),
    }
}

/// A set of bytes.
pub(crate) type ByteSet = [bool; 256];

/// Per ignore terminal and first byte: the exit byte-sets of the accepting states a
/// lexeme starting with that byte can end in.
pub(crate) fn ignore_exits(g: &Grammar, dfas: &[ByteDfa]) -> Vec<Vec<Vec<ByteSet>>> {
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
pub(crate) fn exit_bytes(d: &ByteDfa, q: u32, lazy: bool) -> ByteSet {
    std::array::from_fn(|b| lazy || !d.extends(q, b as u8))
}

/// Bytes that may start the next non-ignore lexeme after exit `e`, ignore lexemes
/// allowed in between.
pub(crate) fn allowed_first(e: &ByteSet, ign: &[Vec<Vec<ByteSet>>]) -> ByteSet {
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
    // Terminals numbered by their set of first bytes (equal sets, equal numbers).
    let mut class_of: HashMap<&ByteSet, usize> = HashMap::new();
    let first_class: Vec<usize> = firsts
        .iter()
        .map(|f| {
            let next = class_of.len();
            *class_of.entry(f).or_insert(next)
        })
        .collect();
    let mut searched = vec![false; class_of.len()];
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
    any_follow.sort_unstable();
    any_follow.dedup();
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
        // A lexeme that cannot go on once it may end (a literal, a quoted string)
        // blocks no byte after it, and every state of a trimmed DFA can reach an end:
        // no dead end, whatever follows (most terminals of a JSON Schema's grammar).
        let trimmed = (1..states as u32).all(|q| d.is_live(q));
        let ends_closed = (0..states as u32)
            .filter(|&q| d.is_accepting(q))
            .all(|q| (0..=255u8).all(|b| !d.extends(q, b)));
        if trimmed && ends_closed {
            continue;
        }
        // Only states a lexeme can continue from have edges: a lazy lexeme ends at its
        // first match.
        let preds = ReverseEdges::new(&d.trans, 256, |q| {
            q != ByteDfa::DEAD && !(lazy && d.is_accepting(q))
        });
        let af: Vec<Option<ByteSet>> = (0..states as u32)
            .map(|q| {
                d.is_accepting(q)
                    .then(|| allowed_first(&exit_bytes(d, q, lazy), &ign))
            })
            .collect();
        let mut good = vec![false; states];
        let mut work: Vec<u32> = Vec::new();
        // The search below depends on `u` only through its first bytes: followers
        // with the same first bytes (a thousand keywords) are searched once.
        searched.iter_mut().for_each(|s| *s = false);
        for &u in &next {
            let fu = &firsts[u as usize];
            if std::mem::replace(&mut searched[first_class[u as usize]], true) {
                continue;
            }
            // Good: some way to finish the lexeme lets `u` start. Seeded with the
            // accepting states whose exits allow one of `u`'s first bytes, then spread
            // backwards along the transitions, each state once (a worklist over the
            // reverse edges: linear in the table, where a sweep per level was not).
            for (q, a) in af.iter().enumerate() {
                good[q] = a.as_ref().is_some_and(|a| (0..256).any(|b| a[b] && fu[b]));
            }
            preds.spread_backwards(&mut good, &mut work);
            if let Some(example) = bad_state(d, &good, lazy) {
                let (after, before) = (&g.terminals[t], &g.terminals[u as usize]);
                return Err(DeadEndError {
                    source_name: g.source_name.clone(),
                    after: after.name.clone(),
                    after_at: after.defined_at,
                    before: before.name.clone(),
                    before_at: before.defined_at,
                    example: String::from_utf8_lossy(&example).into_owned(),
                });
            }
        }
    }
    Ok(())
}

/// Bytes leading from the start to a live state that is not good, if any: a
/// breadth-first search with one parent pointer per state (the shortest example,
/// without copying a path per queued state).
fn bad_state(d: &ByteDfa, good: &[bool], lazy: bool) -> Option<Vec<u8>> {
    const UNSEEN: u32 = u32::MAX;
    // parent[s] = (previous state, byte); the start is its own parent.
    let mut parent = vec![(UNSEEN, 0u8); d.num_states()];
    parent[d.start as usize] = (d.start, 0);
    let mut queue = std::collections::VecDeque::from([d.start]);
    let path_to = |mut q: u32, parent: &[(u32, u8)]| {
        let mut path = Vec::new();
        while q != d.start {
            let (p, b) = parent[q as usize];
            path.push(b);
            q = p;
        }
        path.reverse();
        path
    };
    while let Some(q) = queue.pop_front() {
        if q != d.start && !good[q as usize] {
            return Some(path_to(q, &parent));
        }
        if lazy && d.is_accepting(q) {
            continue;
        }
        for b in 0..=255u8 {
            let s = d.next(q, b);
            if s != ByteDfa::DEAD && parent[s as usize].0 == UNSEEN {
                parent[s as usize] = (q, b);
                queue.push_back(s);
            }
        }
    }
    None
}
