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
use rustc_hash::FxHashMap;
use stackmask_formats::ParserDwa;

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

/// A list of states for each state (its successors, or its predecessors), in one flat
/// table. The cycle analysis, the predecessors and the post-order each read every
/// state's successors, and walking the rows and forks again for each (and a vector
/// per state for the predecessors and the search's pending successors) cost more than
/// building this once.
struct Neighbours {
    /// Where each state's list starts in `states` (one more entry than states).
    index: Vec<u32>,
    states: Vec<u32>,
}

impl Neighbours {
    /// Each state's successors: keyed and default targets, forks as their members.
    fn successors(d: &ParserDwa) -> Neighbours {
        let n = d.default_target.len();
        let mut index = Vec::with_capacity(n + 1);
        let mut states = Vec::with_capacity(d.targets.len() + n);
        index.push(0);
        for s in 0..n {
            for t in targets(d, s) {
                if t & ParserDwa::FORK == 0 {
                    states.push(t);
                } else {
                    states.extend_from_slice(members(d, t));
                }
            }
            index.push(states.len() as u32);
        }
        Neighbours { index, states }
    }

    /// The list of state `s`.
    fn get(&self, s: u32) -> &[u32] {
        &self.states[self.index[s as usize] as usize..self.index[s as usize + 1] as usize]
    }
}

/// Whether each state is reachable from a cycle (the stop state's loop on itself aside):
/// Kahn's algorithm peels states with no predecessor left, and what it cannot peel has a
/// predecessor on a cycle. The stop state is always in, as a state of its own.
fn reachable_from_cycles(succ: &Neighbours) -> Vec<bool> {
    let n = succ.index.len() - 1;
    let mut preds = vec![0u32; n];
    for s in 1..n as u32 {
        for &t in succ.get(s).iter().filter(|&&t| t != 0) {
            preds[t as usize] += 1;
        }
    }
    let mut peel: Vec<u32> = (1..n as u32).filter(|&s| preds[s as usize] == 0).collect();
    let mut core = vec![true; n];
    while let Some(s) = peel.pop() {
        core[s as usize] = false;
        for &t in succ.get(s).iter().filter(|&&t| t != 0) {
            preds[t as usize] -= 1;
            if preds[t as usize] == 0 {
                peel.push(t);
            }
        }
    }
    core
}

/// The states outside `core` in post-order (every state after the states it leads to);
/// they form an acyclic graph, since every cycle lies in the core. A depth-first search
/// on one stack: a state is pushed again, marked, under its successors, and listed when
/// that mark comes back up; a successor already seen is finished, since the graph
/// outside the core has no cycle.
fn post_order_outside(succ: &Neighbours, core: &[bool]) -> Vec<u32> {
    const LIST: u32 = 1 << 31;
    let n = core.len();
    debug_assert!(n <= LIST as usize, "state numbers leave the top bit free");
    let mut done: Vec<bool> = core.to_vec();
    let mut order = Vec::with_capacity(n);
    let mut stack: Vec<u32> = Vec::new();
    for root in 0..n as u32 {
        stack.push(root);
        while let Some(s) = stack.pop() {
            if s & LIST != 0 {
                order.push(s & !LIST);
                continue;
            }
            if std::mem::replace(&mut done[s as usize], true) {
                continue;
            }
            stack.push(s | LIST);
            stack.extend(succ.get(s).iter().filter(|&&c| !done[c as usize]));
        }
    }
    order
}

/// The predecessors of each core state among the core's states, with a state listed
/// once per edge. All of a core state's successors are in the core: a successor of a
/// state reachable from a cycle is reachable from it, and the stop state, whose loop on
/// itself the cycle analysis leaves out, is always in the core.
fn core_predecessors(succ: &Neighbours, core_states: &[usize]) -> Neighbours {
    let n = succ.index.len() - 1;
    let mut index = vec![0u32; n + 1];
    for &s in core_states {
        for &t in succ.get(s as u32) {
            index[t as usize + 1] += 1;
        }
    }
    for s in 0..n {
        index[s + 1] += index[s];
    }
    let mut fill = index.clone();
    let mut states = vec![0u32; index[n] as usize];
    for &s in core_states {
        for &t in succ.get(s as u32) {
            states[fill[t as usize] as usize] = s as u32;
            fill[t as usize] += 1;
        }
    }
    Neighbours { index, states }
}

/// Moore's refinement on the core, from one block to the coarsest stable partition
/// (written into `block`). Block ids stay put where a block does not split, so a round
/// re-signs only the blocks with a member whose successors changed block in the round
/// before: most of a Parser DWA's core (90% of
/// its states) settles in the first rounds, and signing all of it in each of 10–20
/// rounds was most of the minimization. Splitting a block by signatures over a partial
/// update is still a refinement the coarsest partition respects, and the loop ends
/// only when a round splits nothing, so the result is Moore's. The stop state's part of
/// a split keeps the block's id: block 0 is the stop state's. Within a block, only the
/// members a move has touched since it was last signed are signed again, and one other
/// for the rest (`sign_every_member`: all of them, as the tests' reference): a fifth of
/// the minimization's instructions on names-heavy MaskBench schemas, whose cores are most
/// of their 40,000–80,000 states. Returns each block's smallest member, by block id.
fn refine_core(
    d: &ParserDwa,
    succ: &Neighbours,
    core_states: &[usize],
    block: &mut [u32],
    poll: &mut crate::budget::Poll<'_>,
    sign_every_member: bool,
) -> Result<Vec<u32>, BudgetError> {
    let n = d.default_target.len();
    let preds = core_predecessors(succ, core_states);
    // Members of each block, ascending (the stop state first in block 0).
    let mut members: Vec<Vec<u32>> = vec![core_states.iter().map(|&s| s as u32).collect()];
    let mut dirty_blocks: Vec<u32> = vec![0];
    let mut is_dirty = vec![true];
    let (mut sig, mut scratch) = (Vec::new(), Vec::new());
    let mut groups: FxHashMap<Box<[u32]>, u32> = FxHashMap::default();
    let mut group_of: Vec<u32> = Vec::new();
    let mut moved: Vec<u32> = Vec::new();
    // Only a member with a successor that moved since its block was last signed can
    // have a signature other than its block-mates': the members of a block all had one
    // signature when it was signed (a block is one signature's group, and states only
    // leave a block when it is signed), and a state's signature changes only when a
    // successor moves (block ids stay put otherwise). So each of the other members
    // takes the group of the first of them, signed for all: the same groups, in the same
    // order, as signing every member. Times count the blocks signed (from 1); a
    // state's touch time is when a successor of it last moved, a block's signing time
    // when it was last signed; a move during a block's own split counts as after it.
    // (64 bits: rounds × blocks has no small bound.)
    let mut clock = 0u64;
    let mut touched_at: Vec<u64> = vec![0; n];
    let mut signed_at: Vec<u64> = vec![0];
    while !dirty_blocks.is_empty() {
        moved.clear();
        for b in std::mem::take(&mut dirty_blocks) {
            is_dirty[b as usize] = false;
            groups.clear();
            group_of.clear();
            clock += 1;
            let last_signed = signed_at[b as usize];
            let mut unchanged_group = None;
            for &s in &members[b as usize] {
                poll.tick()?;
                let unchanged = !sign_every_member && touched_at[s as usize] < last_signed;
                if let (true, Some(g)) = (unchanged, unchanged_group) {
                    group_of.push(g);
                    continue;
                }
                signature(d, block, s as usize, &mut sig, &mut scratch);
                let g = intern(&mut groups, &sig);
                if unchanged {
                    unchanged_group = Some(g);
                }
                group_of.push(g);
            }
            signed_at[b as usize] = clock;
            if groups.len() == 1 {
                continue;
            }
            // Group 0 (the first member's) keeps `b`; the others become new blocks.
            let old = std::mem::take(&mut members[b as usize]);
            let first_new = members.len() as u32;
            members.resize_with(members.len() + groups.len() - 1, Vec::new);
            is_dirty.resize(members.len(), false);
            signed_at.resize(members.len(), clock);
            for (&s, &g) in old.iter().zip(&group_of) {
                let to = if g == 0 { b } else { first_new + g - 1 };
                members[to as usize].push(s);
                if to != b {
                    block[s as usize] = to;
                    moved.push(s);
                    for &p in preds.get(s) {
                        touched_at[p as usize] = clock;
                    }
                }
            }
        }
        for &s in &moved {
            for &p in preds.get(s) {
                let b = block[p as usize];
                if !is_dirty[b as usize] {
                    is_dirty[b as usize] = true;
                    dirty_blocks.push(b);
                }
            }
        }
    }
    Ok(members.iter().map(|m| m[0]).collect())
}

/// The id of signature `sig`, the next free one if it is new.
fn intern(ids: &mut FxHashMap<Box<[u32]>, u32>, sig: &[u32]) -> u32 {
    if let Some(&b) = ids.get(sig) {
        return b;
    }
    let fresh = ids.len() as u32;
    ids.insert(sig.into(), fresh);
    fresh
}

/// Merges the equivalent states of `d` (see the module docs); state 0 stays the stop
/// state (and absorbs every state that yields nothing). Returns the number of states
/// removed.
///
/// The automaton reads down a stack, so its cycles (nested brackets read one level after
/// another) lie in a small core that the rest leads into: the states reachable from a
/// cycle. Moore's rounds of refinement, which take as many rounds as the longest chain
/// that tells two states apart, run on that core only; every other state is then named in
/// one pass in post-order, by its signature over its successors' final names, which
/// finds the same blocks (the core's coarsest partition has one signature per block, so a
/// state outside the core equivalent to one inside gets its block). A long acyclic chain
/// (a string of up to 32,767 characters counted in chunks) costs one pass, not one
/// round per link.
/// Polls `deadline` per state signed; stops with its error, `d` unchanged.
pub fn minimize(d: &mut ParserDwa, deadline: &Deadline) -> Result<usize, BudgetError> {
    minimize_with(d, deadline, false)
}

/// [`minimize`], signing every member of a block the refinement re-signs where
/// `sign_every_member` (the same result, slower: see [`refine_core`]).
fn minimize_with(
    d: &mut ParserDwa,
    deadline: &Deadline,
    sign_every_member: bool,
) -> Result<usize, BudgetError> {
    let mut poll = deadline.poll(Stage::Minimize);
    poll.check()?;
    let n = d.default_target.len();
    let mut sig = Vec::new();
    let mut scratch = Vec::new();
    let mut block = vec![0u32; n];
    let succ = Neighbours::successors(d);
    let core = reachable_from_cycles(&succ);
    let core_states: Vec<usize> = (0..n).filter(|&s| core[s]).collect();
    let representatives = refine_core(
        d,
        &succ,
        &core_states,
        &mut block,
        &mut poll,
        sign_every_member,
    )?;
    let mut blocks = representatives.len();
    // Each core block by its signature over the final blocks (all its members have
    // that one: the partition is stable), then the other states.
    let mut ids: FxHashMap<Box<[u32]>, u32> =
        FxHashMap::with_capacity_and_hasher(blocks * 2, Default::default());
    for (b, &s) in representatives.iter().enumerate() {
        signature(d, &block, s as usize, &mut sig, &mut scratch);
        ids.insert(sig.as_slice().into(), b as u32);
    }
    debug_assert_eq!(
        ids.len(),
        blocks,
        "a stable partition has one signature per block"
    );
    debug_assert!(core_states.iter().all(|&s| {
        signature(d, &block, s, &mut sig, &mut scratch);
        ids.get(sig.as_slice()) == Some(&block[s])
    }));
    // New blocks are numbered after the core's (`blocks` of them, 0 to `blocks - 1`).
    for s in post_order_outside(&succ, &core) {
        poll.tick()?;
        signature(d, &block, s as usize, &mut sig, &mut scratch);
        block[s as usize] = match ids.get(&sig[..]) {
            Some(&b) => b,
            None => {
                ids.insert(sig.clone().into_boxed_slice(), blocks as u32);
                blocks += 1;
                blocks as u32 - 1
            }
        };
    }
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
    let mut forks: FxHashMap<Vec<u32>, u32> = FxHashMap::default();
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The shared test generator, drawing `u32`s.
    struct Rng(crate::test_rng::XorShift);
    impl Rng {
        fn below(&mut self, n: u32) -> u32 {
            self.0.below(n as u64) as u32
        }
    }

    const KEYS: u32 = 3;

    /// A random automaton of `n` states over LR states `0..KEYS`, weights `0..3`, with
    /// forks; `acyclic`: every target below its state. `start` lists every state, so
    /// that after minimization `start[s]` is the block of `s`.
    fn random_dwa(rng: &mut Rng, n: u32, acyclic: bool) -> ParserDwa {
        let mut d = ParserDwa {
            start: (0..n).collect(),
            index: vec![0, 0],
            default_target: vec![0],
            default_weight: vec![0],
            fork_index: vec![0],
            ..Default::default()
        };
        let target = |rng: &mut Rng, d: &mut ParserDwa, s: u32| -> u32 {
            let bound = if acyclic { s } else { n };
            if rng.below(4) == 0 && bound > 2 {
                let mut members: Vec<u32> = (0..2 + rng.below(2))
                    .map(|_| 1 + rng.below(bound - 1))
                    .collect();
                members.sort_unstable();
                members.dedup();
                if members.len() >= 2 {
                    d.fork_states.extend_from_slice(&members);
                    d.fork_index.push(d.fork_states.len() as u32);
                    return ParserDwa::FORK | (d.fork_index.len() as u32 - 2);
                }
            }
            rng.below(bound)
        };
        for s in 1..n {
            // A copy of an earlier state: equivalent to it, so there is something to merge.
            if s > 1 && rng.below(3) == 0 {
                let c = 1 + rng.below(s - 1) as usize;
                let keyed = d.index[c] as usize..d.index[c + 1] as usize;
                let (keys, targets) = (
                    d.keys[keyed.clone()].to_vec(),
                    d.targets[keyed.clone()].to_vec(),
                );
                let weights = d.weights[keyed].to_vec();
                d.keys.extend(keys);
                d.targets.extend(targets);
                d.weights.extend(weights);
                d.index.push(d.keys.len() as u32);
                d.default_target.push(d.default_target[c]);
                d.default_weight.push(d.default_weight[c]);
                continue;
            }
            for k in 0..KEYS {
                if rng.below(2) == 0 {
                    let t = target(rng, &mut d, s);
                    d.keys.push(k);
                    d.targets.push(t);
                    d.weights.push(rng.below(3));
                }
            }
            d.index.push(d.keys.len() as u32);
            let t = target(rng, &mut d, s);
            d.default_target.push(t);
            d.default_weight.push(rng.below(3));
        }
        d
    }

    /// The weights met walking down `stack` from state `s` (forks: every member).
    fn walk(d: &ParserDwa, s: u32, stack: &[u32], out: &mut BTreeSet<u32>) {
        let Some((&k, below)) = stack.split_first() else {
            return;
        };
        if s == 0 {
            return;
        }
        let keyed = d.index[s as usize] as usize..d.index[s as usize + 1] as usize;
        let (t, w) = match d.keys[keyed.clone()].iter().position(|&x| x == k) {
            Some(i) => (d.targets[keyed.start + i], d.weights[keyed.start + i]),
            None => (d.default_target[s as usize], d.default_weight[s as usize]),
        };
        if w != 0 {
            out.insert(w);
        }
        let one = (t & ParserDwa::FORK == 0).then_some(t);
        for m in one.into_iter().chain(members(d, t).iter().copied()) {
            walk(d, m, below, out);
        }
    }

    /// Moore's refinement over every state: the coarsest partition, as a block count.
    fn moore_blocks(d: &ParserDwa) -> usize {
        let n = d.default_target.len();
        let (mut block, mut blocks) = (vec![0u32; n], 1);
        let (mut sig, mut scratch) = (Vec::new(), Vec::new());
        loop {
            let mut ids = FxHashMap::default();
            let next: Vec<u32> = (0..n)
                .map(|s| {
                    signature(d, &block, s, &mut sig, &mut scratch);
                    sig.push(block[s]);
                    intern(&mut ids, &sig)
                })
                .collect();
            block = next;
            if ids.len() == blocks {
                return blocks;
            }
            blocks = ids.len();
        }
    }

    #[test]
    fn minimal_and_equivalent_on_random_automata_with_and_without_cycles() {
        let mut rng = Rng(crate::test_rng::XorShift(0x9e37_79b9_7f4a_7c15));
        let mut merged = 0;
        for round in 0..3000 {
            let n = 2 + rng.below(24);
            let original = random_dwa(&mut rng, n, round % 3 == 0);
            let mut d = original.clone();
            let removed = minimize(&mut d, &Deadline::unlimited()).unwrap();
            merged += removed;
            assert_eq!(
                d.default_target.len(),
                moore_blocks(&original),
                "round {round}"
            );
            assert_eq!(d.start[0], 0, "the stop state stays state 0");
            for _ in 0..40 {
                let stack: Vec<u32> = (0..1 + rng.below(7)).map(|_| rng.below(KEYS + 1)).collect();
                for s in 0..n {
                    let (mut want, mut got) = (BTreeSet::new(), BTreeSet::new());
                    walk(&original, s, &stack, &mut want);
                    walk(&d, d.start[s as usize], &stack, &mut got);
                    assert_eq!(got, want, "round {round}: state {s}, stack {stack:?}");
                }
            }
        }
        assert!(
            merged > 5000,
            "the automata must give merges to check: {merged}"
        );
    }

    /// Signing only the members a move touched splits every block as signing all of
    /// them does, round for round: the same automaton, state numbers included (so the
    /// artifacts are the same bytes).
    #[test]
    fn signing_only_touched_members_numbers_the_states_as_signing_all() {
        let mut rng = Rng(crate::test_rng::XorShift(0x2545_f491_4f6c_dd1d));
        let mut with_merges = 0;
        for round in 0..2000 {
            let n = 2 + rng.below(if round % 2 == 0 { 40 } else { 400 });
            let original = random_dwa(&mut rng, n, round % 5 == 0);
            let (mut all, mut touched) = (original.clone(), original.clone());
            minimize_with(&mut all, &Deadline::unlimited(), true).unwrap();
            minimize_with(&mut touched, &Deadline::unlimited(), false).unwrap();
            assert_eq!(touched, all, "round {round}");
            with_merges += usize::from(all.default_target.len() + 1 < n as usize);
        }
        assert!(with_merges > 500, "few automata with merges: {with_merges}");
    }
}
