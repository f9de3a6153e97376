//! What the mask walk below a `(GSS node, automaton state)` pair yields, kept from one
//! mask to the next.
//!
//! Why: between two masks a commit changes only the top of the stack, yet the walk
//! reads far down it — JSON's closing tokens (`}]}}`) are only decided several levels
//! deep, so a mask in a document nested five deep takes some 25 automaton steps, most
//! of them over nodes the previous mask already read. Nodes below the top are
//! immutable (a node gains edges only in the step that created it, module `gss`), so
//! the weights the walk collects from a pair downward are a function of the pair for
//! as long as the node exists: they can be remembered.
//!
//! What is remembered is a *chain*: the stretch the walk follows from a pair without
//! branching (one GSS edge, one automaton state), with the weights it collects and
//! how it ends — at the bottom or a `STOP` ([`Cont::End`]), at a branch of the GSS or
//! the automaton ([`Cont::Fork`], whose targets are walked as usual), or at a pair the
//! walk had already queued ([`Cont::Pair`]). Every pair of the stretch maps to its
//! offset in the chain's weights, so a later walk entering the stretch anywhere takes
//! the rest of the weights in one slice and goes on from the end. A new chain that
//! runs into a remembered one copies that one's rest and end instead of pointing to
//! it, so reading a chain never follows more than the one end.
//!
//! When it is forgotten: a rollback or a history rebuild that removes or renumbers
//! remembered nodes ([`crate::glr::GlrState::take_gss_low_water`] says so), and when
//! the memo outgrows its budget (emptying costs what was filled; the memory stays).

use super::pair_set::PairMap;

/// Pairs remembered at most before the memo starts over. With [`MAX_WEIGHTS`] this
/// keeps a matcher's memo near 250 KB (a table of 8,192 16-byte slots, at most half
/// full, the weights and the chains): a serving process holds one per request. A walk
/// that alone steps more pairs (an ambiguous C stack) still records them all, and the
/// memo starts over at the next mask.
const MAX_PAIRS: usize = 3_000;

/// Weights kept at most (over all chains) before the memo starts over.
const MAX_WEIGHTS: usize = 1 << 14;

/// How a chain ends; see the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cont {
    /// Nothing more below.
    End,
    /// The walk goes on along every edge of `node` for every state of `next` (a fork
    /// target or a plain one).
    Fork { node: u32, next: u32 },
    /// The walk goes on from this pair.
    Pair { node: u32, d: u32 },
}

#[derive(Clone, Copy, Debug)]
struct Chain {
    /// Its weights end at `weights[end]`.
    end: u32,
    cont: Cont,
}

/// The memo; see the module docs.
#[derive(Debug, Default)]
pub(crate) struct ChainMemo {
    /// Pair → chain id (high half) and offset of the pair's first weight (low half).
    pairs: PairMap,
    chains: Vec<Chain>,
    weights: Vec<u32>,
    /// Node count when the memo was last written: every remembered node is below it.
    horizon: u32,
    /// A chain being recorded: its pairs with their weight offsets.
    pending: Vec<(u32, u32, u32)>,
}

impl ChainMemo {
    /// Called before each walk with the GSS's low water since the last walk
    /// ([`crate::glr::GlrState::take_gss_low_water`]): forgets everything if a
    /// remembered node may have gone, or if the memo is over its budget.
    pub fn begin(&mut self, low_water: u32) {
        if low_water < self.horizon
            || self.pairs.len() > MAX_PAIRS
            || self.weights.len() > MAX_WEIGHTS
        {
            self.forget();
        }
        self.pending.clear();
    }

    /// Forgets every remembered node, keeping the buffers: for a walk taken over by a
    /// matcher whose stack is another one's.
    pub fn forget(&mut self) {
        self.pairs.clear();
        self.chains.clear();
        self.weights.clear();
        self.horizon = 0;
    }

    /// Called after each walk with the GSS's node count.
    pub fn end(&mut self, nodes: u32) {
        self.horizon = nodes;
    }

    /// The rest of the chain through `(node, d)`, if remembered: its weights and how
    /// it ends.
    #[inline]
    pub fn get(&self, node: u32, d: u32) -> Option<(&[u32], Cont)> {
        if node >= self.horizon {
            return None;
        }
        let v = self.pairs.get(node, d)?;
        let chain = self.chains[(v >> 32) as usize];
        Some((
            &self.weights[v as u32 as usize..chain.end as usize],
            chain.cont,
        ))
    }

    /// Records that the walk stepped `(node, d)` and collected `w` (0: none).
    #[inline]
    pub fn step(&mut self, node: u32, d: u32, w: u32) {
        self.pending.push((node, d, self.weights.len() as u32));
        if w != 0 {
            self.weights.push(w);
        }
    }

    /// Ends the chain being recorded where it ran into the remembered pair `(node,
    /// d)`: the chain takes that one's rest of weights and its end.
    pub fn finish_into(&mut self, node: u32, d: u32) {
        if self.pending.is_empty() {
            return;
        }
        let v = self.pairs.get(node, d).expect("a remembered pair");
        let chain = self.chains[(v >> 32) as usize];
        let start = v as u32 as usize;
        self.weights.extend_from_within(start..chain.end as usize);
        self.finish(chain.cont);
    }

    /// Ends the chain being recorded (if the walk stepped a pair since the last end)
    /// with `cont`.
    pub fn finish(&mut self, cont: Cont) {
        if self.pending.is_empty() {
            return;
        }
        let id = self.chains.len() as u64;
        self.chains.push(Chain {
            end: self.weights.len() as u32,
            cont,
        });
        for &(node, d, offset) in &self.pending {
            // A pair is on one chain: the walk steps it at most once per mask, and
            // only when it was not remembered.
            self.pairs.insert_value(node, d, id << 32 | offset as u64);
        }
        self.pending.clear();
    }
}
