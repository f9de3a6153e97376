//! Minimization of the assembled Parser DWA, across all lexer boundaries at once.
//!
//! Each boundary's automaton is built on its own, but boundaries overlap heavily: after
//! a token's first terminal is shifted, what the rest of the token needs from the stack
//! no longer depends on the lexeme that was in progress, and lexer configurations that
//! differ only in bytes no token can tell apart (an integer or a float constant in
//! progress, before a `)`) build the same automaton outright. Moore's partition
//! refinement over the whole table merges every pair of states that yield the same
//! token sets on every stack: two states are equivalent iff they have the same default
//! weight and keyed weights and their targets (forks as sets) are equivalent. Merging
//! is exact — equivalent states produce the same mask on every stack — so the walk and
//! its results are unchanged, only the table shrinks (and with it the load time and
//! the cache footprint of the walk).

use crate::budget::{BudgetError, Deadline, Stage};
use stackmask_formats::ParserDwa;
use std::collections::HashMap;

/// The targets of state `s`: keyed targets, then the default.
fn targets(d: &ParserDwa, s: usize) -> impl Iterator<Item = u32> + '_ {
    d.targets[d.index[s] as usize..d.index[s + 1] as usize]
        .iter()
        .chain(std::iter::once(&d.default_target[s]))
        .copied()
}

/// The states a target leads to (the members of a fork).
fn members(d: &ParserDwa, t: u32) -> &[u32] {
    if t & ParserDwa::FORK == 0 {
        return &[];
    }
    let f = (t & !ParserDwa::FORK) as usize;
    &d.fork_states[d.fork_index[f] as usize..d.fork_index[f + 1] as usize]
}

/// Writes target `t` in block terms into `sig`: a block id, or a fork as its member
/// blocks, sorted, without the stop block (a member that yields nothing adds nothing),
/// collapsed to a plain block where one member is left.
fn push_target(d: &ParserDwa, block: &[u32], t: u32, sig: &mut Vec<u32>, scratch: &mut Vec<u32>) {
    if t & ParserDwa::FORK == 0 {
        sig.push(block[t as usize]);
        return;
    }
    scratch.clear();
    scratch.extend(
        members(d, t)
            .iter()
            .map(|&s| block[s as usize])
            .filter(|&b| b != 0),
    );
    scratch.sort_unstable();
    scratch.dedup();
    match scratch.len() {
        0 => sig.push(0),
        1 => sig.push(scratch[0]),
        // Marked so that a fork of blocks never reads as a block id.
        k => {
            sig.push(ParserDwa::FORK | k as u32);
            sig.extend_from_slice(scratch);
        }
    }
}

/// State `s`'s signature in block terms: default target and weight, then each keyed
/// `(LR state, target, weight)`.
fn signature(d: &ParserDwa, block: &[u32], s: usize, sig: &mut Vec<u32>, scratch: &mut Vec<u32>) {
    sig.clear();
    push_target(d, block, d.default_target[s], sig, scratch);
    sig.push(d.default_weight[s]);
    for i in d.index[s] as usize..d.index[s + 1] as usize {
        sig.push(d.keys[i]);
        push_target(d, block, d.targets[i], sig, scratch);
        sig.push(d.weights[i]);
    }
}

/// States in post-order (every state after the states it leads to), or `None` if the
/// automaton has a cycle.
fn post_order(d: &ParserDwa) -> Option<Vec<u32>> {
    let n = d.default_target.len();
    // 0 unvisited, 1 on the DFS stack, 2 done.
    let mut mark = vec![0u8; n];
    let mut order = Vec::with_capacity(n);
    let mut stack: Vec<(u32, Vec<u32>)> = Vec::new();
    let children = |s: u32| -> Vec<u32> {
        targets(d, s as usize)
            .flat_map(|t| {
                if t & ParserDwa::FORK == 0 {
                    vec![t]
                } else {
                    members(d, t).to_vec()
                }
            })
            .collect()
    };
    for root in 0..n as u32 {
        if mark[root as usize] != 0 {
            continue;
        }
        mark[root as usize] = 1;
        stack.push((root, children(root)));
        while let Some((s, pending)) = stack.last_mut() {
            match pending.pop() {
                Some(c) => match mark[c as usize] {
                    0 => {
                        mark[c as usize] = 1;
                        let grand = children(c);
                        stack.push((c, grand));
                    }
                    1 if c != 0 => return None,
                    _ => {}
                },
                None => {
                    mark[*s as usize] = 2;
                    order.push(*s);
                    stack.pop();
                }
            }
        }
    }
    Some(order)
}

/// Merges the equivalent states of `d` (see the module docs); state 0 stays the stop
/// state (and absorbs every state that yields nothing). Returns the number of states
/// removed.
///
/// The automaton reads down a stack, so it is almost always acyclic: then one pass in
/// post-order, each state named by its signature over its successors' final names,
/// gives the minimal automaton. A cycle (a grammar whose stack reads can repeat) falls
/// back to Moore's rounds of refinement until no block splits.
/// Polls `deadline` per state signed; stops with its error, `d` unchanged.
pub fn minimize(d: &mut ParserDwa, deadline: &Deadline) -> Result<usize, BudgetError> {
    let mut poll = deadline.poll(Stage::Minimize);
    poll.check()?;
    let n = d.default_target.len();
    let mut sig = Vec::new();
    let mut scratch = Vec::new();
    let mut block = vec![0u32; n];
    let blocks = match post_order(d) {
        Some(order) => {
            let mut ids: HashMap<Box<[u32]>, u32> = HashMap::new();
            // The stop state (0, default stop, no weight, no keys) is block 0.
            ids.insert(vec![0, 0].into_boxed_slice(), 0);
            for &s in &order {
                poll.tick()?;
                signature(d, &block, s as usize, &mut sig, &mut scratch);
                block[s as usize] = match ids.get(&sig[..]) {
                    Some(&b) => b,
                    None => {
                        let b = ids.len() as u32;
                        ids.insert(sig.clone().into_boxed_slice(), b);
                        b
                    }
                };
            }
            ids.len()
        }
        None => {
            // Moore: start from one block and split by signature until stable; the stop
            // state's signature is the first seen, so its block is 0 in every round.
            let mut blocks = 1;
            loop {
                let mut ids: HashMap<Box<[u32]>, u32> = HashMap::with_capacity(blocks * 2);
                let mut next = Vec::with_capacity(n);
                for s in 0..n {
                    poll.tick()?;
                    signature(d, &block, s, &mut sig, &mut scratch);
                    sig.push(block[s]);
                    let fresh = ids.len() as u32;
                    let b = match ids.get(&sig[..]) {
                        Some(&b) => b,
                        None => {
                            ids.insert(sig.clone().into_boxed_slice(), fresh);
                            fresh
                        }
                    };
                    next.push(b);
                }
                let count = ids.len();
                block = next;
                if count == blocks {
                    break count;
                }
                blocks = count;
            }
        }
    };
    if blocks == n {
        return Ok(0);
    }
    // Rebuild with one state per block (its first member as representative).
    let mut rep = vec![u32::MAX; blocks];
    for s in (0..n).rev() {
        rep[block[s] as usize] = s as u32;
    }
    let mut out = ParserDwa {
        start: Vec::with_capacity(d.start.len()),
        index: vec![0],
        keys: Vec::new(),
        targets: Vec::new(),
        weights: Vec::new(),
        default_target: Vec::with_capacity(blocks),
        default_weight: Vec::with_capacity(blocks),
        weight_index: std::mem::take(&mut d.weight_index),
        weight_chunks: std::mem::take(&mut d.weight_chunks),
        chunk_table: std::mem::take(&mut d.chunk_table),
        chunk_words: std::mem::take(&mut d.chunk_words),
        fork_index: vec![0],
        fork_states: Vec::new(),
    };
    let mut forks: HashMap<Vec<u32>, u32> = HashMap::new();
    let mut map = |t: u32, out: &mut ParserDwa| -> u32 {
        sig.clear();
        push_target(d, &block, t, &mut sig, &mut scratch);
        if sig.len() == 1 {
            return sig[0];
        }
        let members = sig[1..].to_vec();
        let f = *forks.entry(members).or_insert_with_key(|members| {
            out.fork_states.extend_from_slice(members);
            out.fork_index.push(out.fork_states.len() as u32);
            out.fork_index.len() as u32 - 2
        });
        ParserDwa::FORK | f
    };
    for &r in &rep {
        let s = r as usize;
        for i in d.index[s] as usize..d.index[s + 1] as usize {
            let t = map(d.targets[i], &mut out);
            out.keys.push(d.keys[i]);
            out.targets.push(t);
            out.weights.push(d.weights[i]);
        }
        out.index.push(out.keys.len() as u32);
        let t = map(d.default_target[s], &mut out);
        out.default_target.push(t);
        out.default_weight.push(d.default_weight[s]);
    }
    out.start = d
        .start
        .iter()
        .map(|&s| {
            if s == ParserDwa::FALLBACK {
                s
            } else {
                block[s as usize]
            }
        })
        .collect();
    *d = out;
    Ok(n - blocks)
}
