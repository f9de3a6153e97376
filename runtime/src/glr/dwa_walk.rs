//! `get_mask` on the compiled path: the Parser DWA walked over the GSS.
//!
//! Every lexeme group in progress starts the automaton state of its lexer
//! configuration at each of its heads; the walk then reads LR states down the GSS, as
//! a worklist over `(GSS node, automaton state)` pairs, collecting each transition's
//! token set and following a node's edges while the automaton state still has
//! undecided tokens. No token trie, no reduce chain: a table lookup per stack level
//! read. The mask is the union of the distinct token sets collected, written once
//! at the end — or copied, when a recent walk collected the same sets (`mask_cache`).
//!
//! Termination: a GSS can have cycles (ε-reductions add an edge back to a node of the
//! same step), and a cycle always passes through a node with two or more edges —
//! a node's first edge, added when it is created, points to an older node. So pairs
//! are remembered at such nodes (and at the heads), which also keeps an ambiguous
//! stack from being walked once per path, while a plain stack costs no lookups.
//!
//! Across masks: what a stretch of the walk collected is remembered per pair
//! (`chain_memo`), so the next mask, after a commit that changed only the top of the
//! stack, steps the new nodes and takes the rest from the memo in one slice.
//!
//! By default every walk is a *subset walk* (module `subset_walk`, [`SUBSET_WALK_AFTER`]),
//! which steps each node with the set of states that reach it and remembers, across
//! masks, what a node stepped with a set collects below it (from a single start, or on
//! a stack that has forked). Set otherwise, a walk that has stepped that many pairs
//! starts over as a subset walk: plain and nearly plain stacks never get there and keep
//! the pair walk's few nanoseconds a level. Once a walk has switched on a stack that
//! forks, the next walks start as subset walks, until the subset walk forgets (a
//! removed node): an ambiguous stack stays ambiguous below the top, and the pairs
//! stepped before the switch were most of such a mask's walk (C: 16 pairs, ~1 µs,
//! against a subset walk that takes the rest from its memo).

use super::chain_memo::{ChainMemo, Cont};
use super::gss::{Gss, NONE};
use super::kept_unions::KeptUnions;
use super::mask_cache::{MaskCache, WeightForms};
use super::pair_set::PairSet;
use super::sparse_weights::SparseWeights;
use super::subset_walk::SubsetWalk;
use super::GlrState;
use stackmask_formats::{ParserDwa, ParserDwaRef};

/// Pairs a walk steps before it starts over as a subset walk: none, every walk is one.
/// A pair costs a few nanoseconds, a node of the subset walk some tens (a lookup and a
/// set union), but the subset walk steps a node once for all the states and lexeme
/// groups that reach it, and remembers across masks what it collects below a node,
/// where the pair walk's chains are cut short wherever the automaton or the stack
/// branches. Chosen on `stackmask bench` (× o200k_base, two runs each, 2026-12-05):
/// at 0 against 16, C's get_mask p50 / p99 / p99.9 1.04 / 3.9–4.2 / 8.4–8.5 → 0.83 /
/// 2.0–2.1 / 5.5 µs, SQL's p99 3.0 → 1.65, TOML's the same or better; JSON's p50
/// 0.58–0.62 → 0.64–0.66 and p99 1.3–1.4 → 1.1–1.2; `expr.lark`'s p50 +5%. A walk from
/// a single start then went depth first through the memo on every stack, not only on
/// one that forked: JSON's p50 0.61 → 0.54–0.55, C's the same. (On
/// 2026-11-26, before the subset walk remembered anything across masks, 16 was best: C's
/// p99.9 319 µs with no switch, 45 at 128, 23–25 at 16–32.)
pub const SUBSET_WALK_AFTER: u32 = 0;

/// [`SUBSET_WALK_AFTER`] or what [`crate::Matcher::set_subset_walk_after`] set.
#[derive(Clone, Copy, Debug)]
struct SubsetAfter(u32);

impl Default for SubsetAfter {
    fn default() -> Self {
        SubsetAfter(SUBSET_WALK_AFTER)
    }
}

/// Reusable buffers for the walk (a warm walk allocates nothing).
#[derive(Debug, Default)]
pub(crate) struct DwaWalk {
    work: Vec<(u32, u32)>,
    /// Pairs already queued.
    seen: PairSet,
    /// Per weight id: the walk that last collected it. OR is idempotent, and forked
    /// states and ambiguous stacks often yield the same (large) weight several
    /// times in one walk: each is written once.
    collected: Vec<u32>,
    /// This walk's number in `collected` (never 0, so a fresh table marks nothing).
    walk: u32,
    /// The distinct weights this walk yields, written into the mask after the walk.
    weights: Vec<u32>,
    /// Recent masks by the weights they are the union of.
    pub cache: MaskCache,
    /// What the walk below a pair yields, from earlier masks of this matcher.
    memo: ChainMemo,
    /// The walk's start pairs.
    starts: Vec<(u32, u32)>,
    /// The walk for ambiguous stacks.
    subset: SubsetWalk,
    /// Pairs stepped before switching to it.
    subset_after: SubsetAfter,
    /// Whether a walk went on as a subset walk over a stack that forks and the subset
    /// walk has forgotten nothing since: the next walk starts as one, through the
    /// subset walk's memo.
    ambiguous: bool,
    /// Every weight OR-ed as chunks, none as pairs (module `sparse_weights`).
    chunks_only: bool,
    /// Masks and their dense weights OR-ed each time, not copied from the engine's
    /// kept unions (module `kept_unions`).
    no_kept_unions: bool,
}

/// Adds weight `w` (0: none) to `weights` unless this walk collected it already.
#[inline]
fn collect(collected: &mut [u32], walk: u32, weights: &mut Vec<u32>, w: u32) {
    if w != 0 && collected[w as usize] != walk {
        collected[w as usize] = walk;
        weights.push(w);
    }
}

impl DwaWalk {
    /// A walk with the same settings (mask cache size, subset walk switch, sparse
    /// pairs, kept unions) and empty buffers, for a matcher's clone: buffers warm on
    /// the clone's first mask.
    pub fn with_empty_buffers(&self) -> DwaWalk {
        DwaWalk {
            cache: self.cache.clone(),
            subset: self.subset.with_empty_buffers(),
            subset_after: self.subset_after,
            chunks_only: self.chunks_only,
            no_kept_unions: self.no_kept_unions,
            ..DwaWalk::default()
        }
    }

    /// The settings of `other` (as [`DwaWalk::with_empty_buffers`] copies them), the
    /// buffers and the stored masks kept, and nothing remembered of any stack: a
    /// walk taken over by a clone of `other`'s matcher (`matcher_pool`). The stored
    /// masks stay exact: each is the union of the token sets its key lists, a function
    /// of the engine alone, and a pool serves one engine.
    pub fn adopt_settings_of(&mut self, other: &DwaWalk) {
        self.cache.set_slots(other.cache.slots());
        self.subset_after = other.subset_after;
        self.chunks_only = other.chunks_only;
        self.no_kept_unions = other.no_kept_unions;
        self.memo.forget();
        // Forgets what it remembered of the dropped matcher's stack.
        self.subset.set_memo(other.subset.memo());
        self.ambiguous = false;
    }

    /// Every setting back to its default (mask cache slots, subset walk switch,
    /// sparse pairs, kept unions), the buffers and the stored masks kept: a walk
    /// taken over by a new matcher of the same engine (`matcher_pool`).
    pub fn reset_settings(&mut self) {
        self.cache.set_slots(super::DEFAULT_MASK_CACHE_SLOTS);
        self.subset_after = SubsetAfter::default();
        self.subset.set_memo(true);
        self.ambiguous = false;
        self.chunks_only = false;
        self.no_kept_unions = false;
    }

    /// Sets how many pairs a walk steps before it starts over as a subset walk (0:
    /// every walk is one; `u32::MAX`: none is). Masks are the same either way.
    pub fn set_subset_walk_after(&mut self, pairs: u32) {
        self.subset_after = SubsetAfter(pairs);
        self.ambiguous = false;
    }

    /// Whether the subset walk remembers what it collects below a node across masks
    /// (module `subset_walk`). Masks are the same either way.
    pub fn set_subset_memo(&mut self, on: bool) {
        self.subset.set_memo(on);
    }

    /// Whether sparse weights are OR-ed as (word, bits) pairs (the default) or, like
    /// the others, as whole chunks. Masks are the same either way.
    pub fn set_sparse_pairs(&mut self, on: bool) {
        self.chunks_only = !on;
    }

    /// Whether masks of many chunks and a mask's dense weights are copied from the
    /// unions the engine keeps (the default; dense unions only with sparse pairs on) or written and
    /// OR-ed each time. Masks are the same either way.
    pub fn set_kept_unions(&mut self, on: bool) {
        self.no_kept_unions = !on;
    }

    /// Writes the mask of `state` (lexemes in progress and the GSS) into `mask`, which
    /// is cleared first and must have the Parser DWA's validated width. `low_water`
    /// is the state's [`GlrState::take_gss_low_water`], taken right before; `sparse`
    /// and `kept` are the engine's (modules `sparse_weights`, `kept_unions`). Returns
    /// `false`, with `mask` unspecified, if a group in progress is at a boundary the
    /// compiler left to the token-trie walk ([`ParserDwa::FALLBACK`]).
    pub fn fill(
        &mut self,
        state: &GlrState,
        low_water: u32,
        dwa: &ParserDwaRef<'_>,
        sparse: &SparseWeights,
        kept: &KeptUnions,
        mask: &mut [u32],
    ) -> bool {
        self.memo.begin(low_water);
        if self.subset.begin(low_water) {
            self.ambiguous = false;
        }
        self.work.clear();
        self.seen.clear();
        self.weights.clear();
        let weights = dwa.weight_index.len() - 1;
        if self.collected.len() != weights {
            // Sized once per engine (a matcher's first walk).
            self.collected = vec![0; weights];
            self.walk = 0;
        }
        self.walk = self.walk.wrapping_add(1);
        if self.walk == 0 {
            self.collected.fill(0);
            self.walk = 1;
        }
        self.starts.clear();
        if state.at_start() {
            if dwa.initial() == ParserDwa::FALLBACK {
                return false;
            }
            self.starts.push((0, dwa.initial()));
        } else {
            for g in &state.groups[state.current_frame()] {
                let start = dwa.start(g.config, g.ignore);
                if start == ParserDwa::FALLBACK {
                    return false;
                }
                if start == ParserDwa::STOP {
                    continue;
                }
                for &h in &state.heads[g.heads_start as usize..g.heads_end as usize] {
                    self.starts.push((h, start));
                }
            }
        }
        for i in 0..self.starts.len() {
            let (node, d) = self.starts[i];
            self.push(node, d);
        }
        let gss: &Gss = &state.gss;
        let mut stepped = 0u32;
        let switch_after = if self.ambiguous {
            0
        } else {
            self.subset_after.0
        };
        while let Some((mut node, mut d)) = self.work.pop() {
            if stepped >= switch_after {
                // What was collected so far is collected again: OR is idempotent.
                let (collected, walk, weights) =
                    (&mut self.collected, self.walk, &mut self.weights);
                // Depth first through the memo on a stack that forked, or from a single
                // start: several starts on a plain stack are walked merged, each node
                // once for all of them (depth first walks each start on its own).
                let remember = self.ambiguous || self.starts.len() == 1;
                let forked = self.subset.walk(gss, dwa, &self.starts, remember, |w| {
                    collect(collected, walk, weights, w)
                });
                // Only a stack that forks stays ambiguous below its top: on a deep plain
                // one (a JSON document's closing brackets) the next walk starts as this
                // one did.
                self.ambiguous |= forked;
                break;
            }
            // Down one path while it neither forks in the GSS nor in the automaton,
            // recorded as a chain (module `chain_memo`) unless it runs into one.
            let cont = loop {
                if let Some((weights, cont)) = self.memo.get(node, d) {
                    for &w in weights {
                        collect(&mut self.collected, self.walk, &mut self.weights, w);
                    }
                    self.memo.finish_into(node, d);
                    break cont;
                }
                let n = gss.nodes[node as usize];
                stepped += 1;
                let (next, w) = dwa.step(d, n.state);
                self.memo.step(node, d, w);
                collect(&mut self.collected, self.walk, &mut self.weights, w);
                if next == ParserDwa::STOP || n.first_edge == NONE {
                    break Cont::End;
                }
                let first = gss.edges[n.first_edge as usize];
                if first.next == NONE && next & ParserDwa::FORK == 0 {
                    // One predecessor: a node with one edge is on no cycle (module docs).
                    let to = gss.nodes[first.to as usize];
                    if to.first_edge != NONE
                        && gss.edges[to.first_edge as usize].next != NONE
                        && !self.seen.insert(first.to, next)
                    {
                        break Cont::Pair {
                            node: first.to,
                            d: next,
                        };
                    }
                    (node, d) = (first.to, next);
                    continue;
                }
                break Cont::Fork { node, next };
            };
            self.memo.finish(cont);
            match cont {
                Cont::End => {}
                Cont::Pair { node, d } => self.push(node, d),
                Cont::Fork { node, next } => {
                    // A GSS fork or an automaton fork: every pair is remembered, so
                    // paths that meet again (two states of a fork reaching one state)
                    // are walked once.
                    let targets = if next & ParserDwa::FORK != 0 {
                        dwa.fork(next)
                    } else {
                        std::slice::from_ref(&next)
                    };
                    let mut e = gss.nodes[node as usize].first_edge;
                    while e != NONE {
                        let edge = gss.edges[e as usize];
                        for &t in targets {
                            self.push(edge.to, t);
                        }
                        e = edge.next;
                    }
                }
            }
        }
        self.memo.end(gss.nodes.len() as u32);
        let (collected, walk) = (&self.collected, self.walk);
        let forms = WeightForms {
            sparse: (!self.chunks_only).then_some(sparse),
            kept: (!self.no_kept_unions).then_some(kept),
        };
        self.cache.write(
            dwa,
            forms,
            &self.weights,
            |w| collected[w as usize] == walk,
            mask,
        );
        true
    }

    /// Queues `(node, d)` unless it was queued before.
    fn push(&mut self, node: u32, d: u32) {
        if self.seen.insert(node, d) {
            self.work.push((node, d));
        }
    }
}
