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
//!
//! Across masks: the stack below the top does not change from one mask to the next,
//! yet the merged walk reads all of it again. So on a stack that stays ambiguous, or
//! from a single start (the caller says when: module `dwa_walk`), each start is first
//! walked depth first, and
//! what a node stepped with a state set collects down to the bottom — a function of
//! the pair, for as long as the node exists (module `chain_memo`) — is remembered as a
//! weight set: the next mask steps the new nodes and takes the rest
//! from the memo. Per pair, the union of the states' pair walks, so the same weights
//! as the merged walk. Depth first does not merge what reaches a node by two paths,
//! and a cycle would not end: it gives up, for the merged walk, past [`MAX_FRAMES`]
//! pairs in one walk or at an edge to a node not older than its source (only those can
//! close a cycle: every edge points to an older node except within one parse step).
//! The pairs it finished stay remembered, so a later walk gets further.

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

/// Pairs one depth-first walk steps at most before it gives up for the merged walk
/// (the first walk over a stack steps each of its `(node, state set)` pairs once; on
/// `stackmask bench`'s C traces the walks step 6 on average).
const MAX_FRAMES: u32 = 4_096;

/// Pairs remembered at most (8-byte keys and 4-byte values in a table at most half
/// full: 192 KB, like the pair walk's memo, per matcher) before the memo starts over.
/// C's ambiguous stacks keep some tens to hundreds.
const MAX_REMEMBERED: usize = 1 << 13;

/// A pair of the depth-first walk whose edges are being followed.
#[derive(Clone, Copy, Debug)]
struct Frame {
    node: u32,
    /// The state set the node is stepped with.
    set: u32,
    /// The state set its predecessors are stepped with.
    next: u32,
    /// The next edge to follow ([`NONE`]: done).
    edge: u32,
    /// The weights collected so far, by this node and the predecessors walked.
    weights: u32,
}

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
    /// `(node, state set)` → the weight set it collects down to the bottom.
    below: PairTable<u32>,
    /// Node count when `below` was last written: every remembered node is below it.
    horizon: u32,
    /// The depth-first walk's path.
    frames: Vec<Frame>,
    /// Every walk merged, nothing remembered below pairs (for A/B measurements).
    no_memo: bool,
}

impl SubsetWalk {
    /// Called before each mask walk with the GSS's low water since the last one
    /// ([`crate::glr::GlrState::take_gss_low_water`]): forgets what is remembered below
    /// pairs if a remembered node may have gone: `true` if so.
    pub fn begin(&mut self, low_water: u32) -> bool {
        let gone = low_water < self.horizon;
        if gone {
            self.forget();
        }
        gone
    }

    /// Whether what is collected below pairs is remembered (the default).
    pub fn set_memo(&mut self, on: bool) {
        self.no_memo = !on;
        self.forget();
    }

    /// See [`SubsetWalk::set_memo`].
    pub fn memo(&self) -> bool {
        !self.no_memo
    }

    /// Empty buffers with this walk's setting, for a matcher's clone.
    pub fn with_empty_buffers(&self) -> SubsetWalk {
        SubsetWalk {
            no_memo: self.no_memo,
            ..SubsetWalk::default()
        }
    }

    /// Forgets every remembered node, keeping the buffers: for a walk taken over by a
    /// matcher whose stack is another one's.
    pub fn forget(&mut self) {
        self.below.clear();
        self.horizon = 0;
    }

    /// Walks from `starts` (`(head node, start state)`, plain states) down the GSS and
    /// calls `collect` with every weight a pair walk from the same starts would
    /// collect (some more than once); depth first through the memo if `remember`
    /// (and the memo is on), else merged. Returns whether the merged walk stepped a
    /// node with two or more edges (`false` when it did not run).
    pub fn walk(
        &mut self,
        gss: &Gss,
        dwa: &ParserDwaRef<'_>,
        starts: &[(u32, u32)],
        remember: bool,
        mut collect: impl FnMut(u32),
    ) -> bool {
        if self.steps.len() > MAX_STEPS || self.states.words() + self.weights.words() > MAX_SET_IDS
        {
            self.steps.clear();
            self.states.clear();
            self.weights.clear();
            self.below.clear();
        }
        if self.below.len() > MAX_REMEMBERED {
            self.below.clear();
        }
        self.horizon = gss.nodes.len() as u32;
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
        let mut budget = MAX_FRAMES;
        let mut depth_first = remember && !self.no_memo;
        if depth_first {
            for &(node, d) in starts {
                let set = self.states.of(&[d]);
                let Some(weights) = self.below(gss, dwa, node, set, &mut budget) else {
                    depth_first = false;
                    break;
                };
                self.collect_set(weights, &mut collect);
            }
        }
        if depth_first {
            // Sets made by unions are collected at later walks: sized for all of
            // them now, so that a walk that makes no set allocates nothing.
            if self.collected.len() < self.weights.len() {
                self.collected.resize(self.weights.len(), 0);
            }
            return false;
        }
        for &(node, d) in starts {
            let set = self.states.of(&[d]);
            self.reach(node, set);
        }
        let mut forked = false;
        while let Some(node) = self.queue.pop() {
            let a = self.arrivals[node as usize];
            if a.stepped == a.states {
                continue; // queued twice
            }
            self.arrivals[node as usize].stepped = a.states;
            let n = gss.nodes[node as usize];
            let (weights, next) = self.step(dwa, a.states, n.state);
            self.collect_set(weights, &mut collect);
            if next == EMPTY_SET {
                continue;
            }
            let mut e = n.first_edge;
            forked |= e != NONE && gss.edges[e as usize].next != NONE;
            while e != NONE {
                let edge = gss.edges[e as usize];
                self.reach(edge.to, next);
                e = edge.next;
            }
        }
        forked
    }

    /// Calls `collect` with the weights of set `weights` unless this walk did.
    #[inline]
    fn collect_set(&mut self, weights: u32, collect: &mut impl FnMut(u32)) {
        if weights == EMPTY_SET {
            return;
        }
        if self.collected.len() <= weights as usize {
            self.collected.resize(self.weights.len(), 0);
        }
        if self.collected[weights as usize] != self.walk {
            self.collected[weights as usize] = self.walk;
            self.weights.get(weights).iter().for_each(|&w| collect(w));
        }
    }

    /// The weight set `node` stepped with state set `set` collects down to the bottom,
    /// walked depth first from the pairs remembered; `None` if the walk gave up
    /// (`budget` pairs stepped, or an edge that may close a cycle).
    fn below(
        &mut self,
        gss: &Gss,
        dwa: &ParserDwaRef<'_>,
        node: u32,
        set: u32,
        budget: &mut u32,
    ) -> Option<u32> {
        if let Some(weights) = self.below.get(node, set) {
            return Some(weights);
        }
        self.frames.clear();
        self.open(gss, dwa, node, set, budget)?;
        loop {
            let top = self.frames.last_mut().expect("a frame");
            if top.edge == NONE {
                let done = self.frames.pop().expect("a frame");
                self.below.insert_value(done.node, done.set, done.weights);
                match self.frames.last_mut() {
                    None => return Some(done.weights),
                    Some(parent) => {
                        parent.weights = self.weights.union(parent.weights, done.weights);
                    }
                }
                continue;
            }
            let edge = gss.edges[top.edge as usize];
            top.edge = edge.next;
            if edge.to >= top.node {
                return None;
            }
            let (to, next) = (edge.to, top.next);
            match self.below.get(to, next) {
                Some(weights) => top.weights = self.weights.union(top.weights, weights),
                None => self.open(gss, dwa, to, next, budget)?,
            }
        }
    }

    /// Steps `node` with state set `set` and puts it on the depth-first walk's path;
    /// `None` if `budget` is spent.
    fn open(
        &mut self,
        gss: &Gss,
        dwa: &ParserDwaRef<'_>,
        node: u32,
        set: u32,
        budget: &mut u32,
    ) -> Option<()> {
        *budget = budget.checked_sub(1)?;
        let n = gss.nodes[node as usize];
        let (weights, next) = self.step(dwa, set, n.state);
        self.frames.push(Frame {
            node,
            set,
            next,
            edge: if next == EMPTY_SET {
                NONE
            } else {
                n.first_edge
            },
            weights,
        });
        Some(())
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
