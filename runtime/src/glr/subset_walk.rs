//! The mask walk over an ambiguous stack: the Parser DWA read one GSS node at a time
//! with the *set* of automaton states that reach the node, determinized as it goes.
//!
//! Why: the pair walk (module `dwa_walk`) visits every `(node, state)` pair, and on an
//! ambiguous stack there are many states per node. C after a run of `-` signs (each
//! `--` is also two `-`, and each reading stacks its own operators) is a GSS of some
//! 400 nodes that the automaton, with its forks, reads in ~18 states each: 8,000 pairs,
//! some 400 µs a mask, again at every mask while an identifier goes on above them.
//! The mask is the union over all of them, so the states that reach a node can be
//! stepped together: one step of a state *set* per node, and the step of a set on an
//! LR state — the weights it yields and the set it goes on in — is remembered (the
//! subset construction, done lazily and kept across masks: it depends only on the
//! tables). On the `-` stack the same few sets recur at every level, so a mask is a
//! table lookup and a set union per node and edge.
//!
//! Order: a node is stepped once everything above it has reached it. Edges point to
//! older nodes except within one parse step (ε-reductions, which can also close a
//! cycle), so nodes are taken newest first, and a node reached again after its step
//! with new states is stepped again: the sets only grow, so this ends, and the result
//! is the union over every path, exactly as the pair walk's.
//!
//! What is remembered is bounded ([`MAX_STEPS`], [`MAX_SET_IDS`]): past it, it starts
//! over (a cache: nothing it holds can go stale).

use super::gss::{Gss, NONE};
use super::id_sets::{IdSets, EMPTY_SET};
use super::pair_set::PairTable;
use stackmask_formats::{ParserDwa, ParserDwaRef};
use std::collections::BinaryHeap;

/// Steps of a state set remembered at most (16-byte slots in a table at most half
/// full: 512 KB). C's `-` runs need about 50.
const MAX_STEPS: usize = 1 << 14;

/// Ids held at most over all state and weight sets (4 bytes each: 256 KB).
const MAX_SET_IDS: usize = 1 << 16;

/// Per GSS node, within one walk.
#[derive(Clone, Copy, Debug, Default)]
struct Arrival {
    /// The walk this entry belongs to (older entries read as nothing arrived).
    walk: u32,
    /// The states that reached the node.
    states: u32,
    /// The states the node was stepped with (a node reached again with more is
    /// stepped again).
    stepped: u32,
}

/// The walk's buffers and what it remembers; see the module docs.
#[derive(Debug, Default)]
pub(crate) struct SubsetWalk {
    /// Sets of Parser DWA states.
    states: IdSets,
    /// Sets of weight ids.
    weights: IdSets,
    /// `(state set, LR state)` → weight set (high half) and next state set (low half).
    steps: PairTable<u64>,
    /// Per node id; sized to the largest GSS seen.
    arrivals: Vec<Arrival>,
    walk: u32,
    /// Nodes to step, newest first.
    queue: BinaryHeap<u32>,
    /// Per weight set: the walk that last collected it.
    collected: Vec<u32>,
    /// Scratch for a set being stepped.
    next_states: Vec<u32>,
    next_weights: Vec<u32>,
}

impl SubsetWalk {
    /// Walks from `starts` (`(head node, start state)`, plain states) down the GSS and
    /// calls `collect` with every weight a pair walk from the same starts would
    /// collect (some more than once).
    pub fn walk(
        &mut self,
        gss: &Gss,
        dwa: &ParserDwaRef<'_>,
        starts: impl Iterator<Item = (u32, u32)>,
        mut collect: impl FnMut(u32),
    ) {
        if self.steps.len() > MAX_STEPS || self.states.words() + self.weights.words() > MAX_SET_IDS
        {
            self.steps.clear();
            self.states.clear();
            self.weights.clear();
        }
        if self.arrivals.len() < gss.nodes.len() {
            self.arrivals.resize(gss.nodes.len(), Arrival::default());
        }
        self.walk = self.walk.wrapping_add(1);
        if self.walk == 0 {
            self.arrivals.fill(Arrival::default());
            self.collected.fill(0);
            self.walk = 1;
        }
        self.queue.clear();
        for (node, d) in starts {
            let set = self.states.of(&[d]);
            self.reach(node, set);
        }
        while let Some(node) = self.queue.pop() {
            let a = self.arrivals[node as usize];
            if a.stepped == a.states {
                continue; // queued twice
            }
            self.arrivals[node as usize].stepped = a.states;
            let n = gss.nodes[node as usize];
            let (weights, next) = self.step(dwa, a.states, n.state);
            if weights != EMPTY_SET {
                if self.collected.len() <= weights as usize {
                    self.collected.resize(self.weights.len(), 0);
                }
                if self.collected[weights as usize] != self.walk {
                    self.collected[weights as usize] = self.walk;
                    self.weights.get(weights).iter().for_each(|&w| collect(w));
                }
            }
            if next == EMPTY_SET {
                continue;
            }
            let mut e = n.first_edge;
            while e != NONE {
                let edge = gss.edges[e as usize];
                self.reach(edge.to, next);
                e = edge.next;
            }
        }
    }

    /// States `set` reach `node`.
    #[inline]
    fn reach(&mut self, node: u32, set: u32) {
        let a = &mut self.arrivals[node as usize];
        if a.walk != self.walk {
            *a = Arrival {
                walk: self.walk,
                states: EMPTY_SET,
                stepped: EMPTY_SET,
            };
        }
        let states = self.states.union(a.states, set);
        if states != a.states {
            a.states = states;
            self.queue.push(node);
        }
    }

    /// The weight set and next state set of state set `set` on LR state `lr`.
    fn step(&mut self, dwa: &ParserDwaRef<'_>, set: u32, lr: u32) -> (u32, u32) {
        if let Some(v) = self.steps.get(set, lr) {
            return ((v >> 32) as u32, v as u32);
        }
        self.next_states.clear();
        self.next_weights.clear();
        for &d in self.states.get(set) {
            let (next, w) = dwa.step(d, lr);
            if w != 0 {
                self.next_weights.push(w);
            }
            if next & ParserDwa::FORK != 0 {
                self.next_states.extend_from_slice(dwa.fork(next));
            } else if next != ParserDwa::STOP {
                self.next_states.push(next);
            }
        }
        let weights = self.weights.of(&self.next_weights);
        let next = self.states.of(&self.next_states);
        self.steps
            .insert_value(set, lr, (weights as u64) << 32 | next as u64);
        (weights, next)
    }
}
