//! Composition → Parser DWA: Terminal DWAs and templates become one automaton that
//! reads the parse stack top-down and yields token sets.
//!
//! For one boundary, a token class is valid on a stack iff one of its words can be
//! shifted there and its final check holds on the stack after. Reading the stack one
//! LR state at a time, every word is simulated with the templates of its terminals
//! over the part of the stack seen so far (a walk over the Terminal DWA); a simulation
//! that pops everything it has seen becomes a *thread* `(Terminal DWA node, terminal
//! in progress, states still to pop, nonterminal to goto)` that waits for the next
//! state down. Pushes made while simulating live only in the known part and cancel
//! against later pops; what is left pushed when a word ends is dropped (commit does
//! the real update).
//!
//! **Factored states.** An automaton state holds the threads of one template
//! continuation `(terminal, pops, goto)`; a read that leaves threads of several
//! continuations leads to a *fork* ([`ParserDwa::FORK`]) of one state per
//! continuation, and the walk follows each and ORs what they yield. Threads of
//! different continuations read the stack independently: held in one state, their
//! combinations multiply (after an identifier in C, every combination of what `)`,
//! `]`, `,` and `;` each still need to see); factored, they add up. The price is that
//! a state cannot know what its siblings already proved, so a token may be OR-ed in
//! twice — harmless. A state without threads yields nothing more: the walk stops
//! (bounded lookback).
//!
//! **Memoized reads.** What a thread does on a state read depends on that state only
//! through its goto target, except where a reduction pops back down to it; so each
//! `(thread, goto target)` is simulated once per boundary and each `(thread, state)`
//! read once, which keeps the construction linear in the distinct reads rather than
//! in the automaton's transitions.
//!
//! **Shared states.** The states depend on the Terminal DWA's words and final checks
//! and on the heads, not on which tokens each class holds; the tokens only make the
//! weights. Boundaries of one lexeme at different states mostly differ in their tokens
//! alone (a number after `1` or after `1.5`, a property name where no declared name
//! goes on), so their automata share one set of states ([`DwaShape`]), built once per
//! grammar, and each boundary cuts its own token sets. Over the middle half of the
//! MaskBench subset, 8,200 state sets serve 20,700 automata.
//!
//! **States past the first terminal.** Boundaries whose Terminal DWAs agree on every
//! node but the root (a JSON Schema's value ends: `}`, `]`, `null`, `true`, a
//! string's closing quote) read the stack alike once their first terminal is taken:
//! a state whose threads are all past the root has the transitions of the state with
//! the same threads in the first such automaton built ([`RestKey`]), translated
//! rather than simulated again, in the order a build of its own would make them, so
//! the automaton is the same.
//!
//! End of sequence is a class like the others (its word ends the lexeme in progress
//! and reads end of input), so the runtime needs no reduce chain for it either.

use crate::budget::{BudgetError, Deadline, Stage};
use crate::lexeme_bodies::{ClassRanges, PreparedTrie};
use crate::template::{self, Effect, ReductionChainError};
use crate::terminal_dwa::{
    Boundary, ClassSet, ClassTokens, FinalCheck, Lexing, RenamedDwas, TerminalDwa,
    TerminalDwaError, NONE,
};
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use stackmask_formats::{ParserDwa, TablesRef};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Limits of the Parser DWA construction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParserDwaLimits {
    /// Automaton states over all boundaries (`--max-dwa-states`).
    pub max_states: usize,
    /// Bytes of distinct token-set weights (`--max-weight-bytes`).
    pub max_weight_bytes: usize,
    /// Terminal DWA states of one boundary (`--max-terminal-dwa-states`).
    pub max_terminal_states: usize,
    /// Automaton states of one boundary before it is left to the run-time trie walk
    /// (`--boundary-dwa-states`).
    pub boundary_states: usize,
    /// Simulation steps for one boundary before it is left to the run-time trie walk
    /// (`--boundary-dwa-steps`): bounds the compile time per boundary.
    pub boundary_steps: usize,
    /// Reductions one terminal's template may take before a shift
    /// (`--max-template-reductions`): past it the compile stops with an error naming it.
    pub template_reductions: u32,
}

impl Default for ParserDwaLimits {
    fn default() -> Self {
        ParserDwaLimits {
            max_states: 1 << 21,
            max_weight_bytes: 1 << 30,
            max_terminal_states: 1 << 22,
            boundary_states: 250_000,
            boundary_steps: 40_000_000,
            template_reductions: template::DEFAULT_MAX_REDUCTIONS,
        }
    }
}

/// Why the Parser DWA could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParserDwaError {
    /// Too many automaton states.
    #[error("the Parser DWA needs more than {limit} states (max_dwa_states, raise it with --max-dwa-states); the limit was reached after {boundary}")]
    States {
        /// The limit.
        limit: usize,
        /// The lexer boundary being built, described with its terminals.
        boundary: String,
    },
    /// Too many weight bytes.
    #[error("the Parser DWA's token sets need more than {limit} bytes (max_weight_bytes, raise it with --max-weight-bytes)")]
    WeightBytes {
        /// The limit.
        limit: usize,
    },
    /// A Terminal DWA is too large.
    #[error(
        "{source}; the limit was reached with {boundary} (raise it with --max-terminal-dwa-states)"
    )]
    TerminalDwa {
        /// The limit error.
        source: crate::terminal_dwa::TerminalDwaLimitError,
        /// The lexer boundary, described with its terminals.
        boundary: String,
    },
    /// A template did not end.
    #[error("{0}")]
    ReductionChain(#[from] ReductionChainError),
    /// The compile's time limit passed, or it was cancelled.
    #[error(transparent)]
    Budget(#[from] BudgetError),
    /// One stack state read needed too many simulation steps.
    #[error("reading one stack state needed more than {limit} simulation steps (the tokens' terminal sequences are too ambiguous); the limit was reached with {boundary}")]
    Simulation {
        /// The limit.
        limit: usize,
        /// The lexer boundary, described with its terminals.
        boundary: String,
    },
}

/// What one transition costs against [`ParserDwaLimits::boundary_steps`] besides its
/// simulation steps.
const STEP_COST: usize = 2;

/// Same-level continuations (reductions back down to the state read, each read on it
/// again) one read may chain before its boundary is left to the run-time trie walk:
/// unit-rule chains are far shorter; only a grammar cycle reaches this.
const MAX_LEVEL_CHAIN: usize = 1_000;

/// Simulation steps for one stack state read before the compile gives up.
pub const MAX_SIMULATION_STEPS: usize = 4_000_000;

/// Why one step of the subset construction failed.
enum StepError {
    Chain(ReductionChainError),
    Budget,
    /// The boundary's whole budget ([`ParserDwaLimits::boundary_steps`]) is spent.
    BoundaryBudget,
}

impl From<ReductionChainError> for StepError {
    fn from(e: ReductionChainError) -> Self {
        StepError::Chain(e)
    }
}

/// A waiting simulation: see the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Thread {
    /// Terminal DWA node: the words shifted so far, plus `term` if that is pending.
    node: u32,
    /// The terminal whose template is in progress ([`NONE`]: none, continue at `node`).
    term: u32,
    /// Real states to pop before the goto.
    pops: u32,
    /// Nonterminal to goto on the state after the pops ([`NONE`]: the state read
    /// becomes the top as it is — only at the start).
    goto: u32,
}

/// An automaton state of one boundary: its threads (one template continuation, sorted,
/// each with classes still to decide); the stop state has none.
type Key = Vec<Thread>;

/// One automaton state's transitions: keyed `(LR state, target, weight)`, and the
/// default target and weight.
type LocalState = (Vec<(u32, u32, u32)>, u32, u32);

/// One boundary's automaton: its states, shared by the boundaries whose Terminal DWAs
/// differ in their classes' tokens only ([`DwaShape`]), and its token sets.
struct BoundaryDwa {
    shape: Arc<DwaShape>,
    /// Per local weight id (of the shape's class sets): its chunks, as ids of the
    /// shared [`ChunkStore`]; 0 is empty.
    weights: Vec<Vec<u32>>,
}

/// The states of a boundary's automaton, with local state ids (0 = stop) and
/// class-set weights: a function of the words, final checks and heads alone
/// ([`ShapeKey`]), which the token sets of the classes do not change.
struct DwaShape {
    start: u32,
    /// Per local state: keyed transitions `(LR state, target, weight)` and default
    /// target; a target is a local state id or [`ParserDwa::FORK`] `|` a local fork id.
    states: Vec<LocalState>,
    /// Per local fork: the local states it continues in (two or more, increasing).
    forks: Vec<Vec<u32>>,
    /// Per local weight id: the classes it accepts; 0 is empty.
    weight_sets: Vec<ClassSet>,
    classes: usize,
    terminal_states: usize,
    /// States whose transitions were translated from a [`RestShape`].
    translated: usize,
}

/// What a boundary's automaton states are a function of: its Terminal DWA's words and
/// final checks (not which tokens each class holds) and the LR states a head can be
/// in. Boundaries of one lexeme at different states mostly have different tokens but
/// the same words: a number after `1` or after `1.5`, a property name after `"a` or
/// after `"ab` where no declared name goes on. Hashed once, when made, so that the
/// shared map's lock is held for a lookup only.
#[derive(PartialEq, Eq)]
struct ShapeKey {
    hash: u64,
    succ: Vec<Vec<(u32, u32)>>,
    finals: Vec<Vec<(FinalCheck, ClassSet)>>,
    heads: Vec<u32>,
}

impl ShapeKey {
    /// The key of a Terminal DWA's words and final checks (taken, not copied: the
    /// builder reads them from here) with heads `heads`.
    fn new(
        succ: Vec<Vec<(u32, u32)>>,
        finals: Vec<Vec<(FinalCheck, ClassSet)>>,
        heads: &[u32],
    ) -> Self {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        (&succ, &finals, heads).hash(&mut h);
        ShapeKey {
            hash: h.finish(),
            succ,
            finals,
            heads: heads.to_vec(),
        }
    }
}

impl std::hash::Hash for ShapeKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// What a boundary's whole automaton is a function of: its shape and its classes'
/// tokens. Boundaries inside a long lexeme mostly agree on all of it: a `date-time`'s
/// 11,000 lexer states are 13,000 boundaries with 1,000 different automata, where a
/// token cannot tell the remembered hour and minute (checked only for a leap second)
/// apart.
#[derive(PartialEq, Eq)]
struct BoundaryKey {
    hash: u64,
    shape: Arc<ShapeKey>,
    class_tokens: Arc<[ClassTokens]>,
}

impl BoundaryKey {
    /// The key of a shape with its classes' tokens (taken: the builder reads them
    /// from here).
    fn new(shape: Arc<ShapeKey>, class_tokens: Vec<ClassTokens>) -> Self {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        (shape.hash, &class_tokens).hash(&mut h);
        BoundaryKey {
            hash: h.finish(),
            shape,
            class_tokens: class_tokens.into(),
        }
    }
}

/// A boundary's Terminal DWA as the builder reads it: its parts now belong to the
/// keys that find automata to share ([`ShapeKey`], [`BoundaryKey`]), which took them
/// rather than copy them (copies were 6% of a 9,700-boundary schema's compile).
#[derive(Clone, Copy)]
struct TdwaRef<'a> {
    succ: &'a [Vec<(u32, u32)>],
    finals: &'a [Vec<(FinalCheck, ClassSet)>],
    class_tokens: &'a [ClassTokens],
    classes_below: &'a [ClassSet],
}

impl TdwaRef<'_> {
    fn num_classes(&self) -> usize {
        self.class_tokens.len()
    }

    fn num_states(&self) -> usize {
        self.succ.len()
    }
}

impl std::hash::Hash for BoundaryKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// What a boundary's automaton states past its first terminal are a function of:
/// its Terminal DWA without the root (every node but the empty word, whose edges
/// name the first terminal) and its number of classes. A JSON Schema's value ends
/// (`}`, `]`, `null`, `true`, `false`, a string's closing quote) are boundaries of
/// this kind: after their own terminal every token goes on alike (`,`, `}`, `]`,
/// white space) and reads the stack alike, so their automata, thousands of states
/// each, coincide except for the states that still hold that terminal. The states
/// of one are kept ([`RestShape`]) and the others take theirs from it.
struct RestKey {
    hash: u64,
    shape: Arc<ShapeKey>,
    classes: usize,
}

impl RestKey {
    fn new(shape: Arc<ShapeKey>, classes: usize) -> Self {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        (&shape.succ[1..], &shape.finals[1..], classes).hash(&mut h);
        RestKey {
            hash: h.finish(),
            shape,
            classes,
        }
    }
}

impl PartialEq for RestKey {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash
            && self.classes == other.classes
            && self.shape.succ[1..] == other.shape.succ[1..]
            && self.shape.finals[1..] == other.shape.finals[1..]
    }
}

impl Eq for RestKey {}

impl std::hash::Hash for RestKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// A built automaton with the threads of its states, for the boundaries of its
/// [`RestKey`]: a state whose threads are all past the root (no thread still holds
/// the first terminal) reads the stack as the state with the same threads here, so
/// its transitions are translated from this one's instead of simulated again.
struct RestShape {
    shape: Arc<DwaShape>,
    /// Per local state: its threads.
    keys: Vec<Key>,
    /// Local state ids by their threads.
    ids: FxHashMap<Key, u32>,
}

impl RestShape {
    /// What reading LR state `r` in local state `state` yields: its target and
    /// weight. Transitions are sorted by the state read; one not listed takes the
    /// default.
    fn outcome(&self, state: u32, r: u32) -> (u32, u32) {
        let (trans, default, default_weight) = &self.shape.states[state as usize];
        match trans.binary_search_by_key(&r, |&(s, _, _)| s) {
            Ok(i) => (trans[i].1, trans[i].2),
            Err(_) => (*default, *default_weight),
        }
    }

    /// The threads of `target` (of every state of a fork, as a step leaves them).
    fn threads_of(&self, target: u32, threads: &mut Vec<Thread>) {
        threads.clear();
        if target & ParserDwa::FORK != 0 {
            for &s in &self.shape.forks[(target & !ParserDwa::FORK) as usize] {
                threads.extend_from_slice(&self.keys[s as usize]);
            }
        } else {
            threads.extend_from_slice(&self.keys[target as usize]);
        }
    }
}

/// What a boundary's build has made of a [`RestShape`]'s targets and weights so far,
/// by their ids there ([`NONE`]: not met yet).
struct Translated {
    states: Vec<u32>,
    forks: Vec<u32>,
    weights: Vec<u32>,
}

impl Translated {
    fn new(rest: &RestShape) -> Self {
        Translated {
            states: vec![NONE; rest.keys.len()],
            forks: vec![NONE; rest.shape.forks.len()],
            weights: vec![NONE; rest.shape.weight_sets.len()],
        }
    }

    /// Where target `target` of the kept automaton is kept.
    fn target(&mut self, target: u32) -> &mut u32 {
        if target & ParserDwa::FORK != 0 {
            &mut self.forks[(target & !ParserDwa::FORK) as usize]
        } else {
            &mut self.states[target as usize]
        }
    }
}

/// The id of weight `set` among `sets` (by `ids`), added if new.
fn weight_id(ids: &mut FxHashMap<ClassSet, u32>, sets: &mut Vec<ClassSet>, set: &ClassSet) -> u32 {
    if let Some(&w) = ids.get(set) {
        return w;
    }
    sets.push(set.clone());
    ids.insert(set.clone(), sets.len() as u32 - 1);
    sets.len() as u32 - 1
}

/// Which built automata are kept as [`RestShape`]s: those of Terminal DWAs of at
/// least `min_terminal_states` nodes with at least `min_states` states (smaller ones
/// are cheaper to build again than to keep).
#[derive(Clone, Copy, Debug)]
struct RestSharing {
    min_terminal_states: usize,
    min_states: usize,
}

impl RestSharing {
    /// The compiler's setting: value ends have 20 or more Terminal DWA nodes and
    /// automata of thousands of states; property names (thousands of boundaries)
    /// have a few nodes and a few states.
    const DEFAULT: RestSharing = RestSharing {
        min_terminal_states: 16,
        min_states: 64,
    };
}

/// A boundary's automaton as [`Builder::build`] leaves it: its states and the
/// threads of each.
struct Built {
    shape: DwaShape,
    keys: Vec<Key>,
    ids: FxHashMap<Key, u32>,
}

/// One automaton, built by the first boundary of its [`BoundaryKey`] to ask.
type SharedBuild = std::sync::OnceLock<Result<Option<Arc<BoundaryDwa>>, ParserDwaError>>;

/// One automaton's states, built by the first boundary of its [`ShapeKey`] to ask.
type SharedShape = std::sync::OnceLock<Result<Option<Arc<DwaShape>>, ParserDwaError>>;

/// Sizes, for the compile summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParserDwaStats {
    /// Boundaries.
    pub boundaries: usize,
    /// Token classes summed over boundaries.
    pub token_classes: usize,
    /// Terminal DWA states summed over boundaries.
    pub terminal_dwa_states: usize,
    /// Boundaries past their per-boundary budget, left to the run-time trie walk.
    pub fallback_boundaries: usize,
    /// Different automata over the boundaries (a boundary with the same Terminal DWA
    /// and heads as another shares its automaton).
    pub automata: usize,
    /// Different automaton state sets built (automata whose Terminal DWAs differ only
    /// in their classes' tokens share one).
    pub shapes: usize,
    /// States of all automata together before minimization: what `max_states`
    /// (`--max-dwa-states`) bounds.
    pub states_built: usize,
    /// States of those automata whose transitions were translated from another
    /// boundary's automaton that coincides with theirs past the first terminal
    /// rather than simulated.
    pub states_translated: usize,
}

/// The chunks of token sets (see [`ParserDwa::chunk_table`]), interned across all
/// boundaries as they are built: neighbouring boundaries' token sets share most of
/// their windows.
#[derive(Default)]
struct ChunkStore {
    /// Chunk ids by the 64-bit hash of `[start word, words…]` ([`chunk_hash`]): the
    /// first chunk with that hash; `collided` holds the others, if any. A window is
    /// up to 65 words, hashed for every window of every token set cut: hashing them as
    /// bytes in bulk rather than word by word as a map key was most of the cutting.
    ids: FxHashMap<u64, u32>,
    /// Chunk ids whose hash an earlier chunk with other words has (in practice none).
    collided: FxHashMap<u64, Vec<u32>>,
    /// Per chunk id: its start word and words.
    chunks: Vec<(u32, Vec<u32>)>,
    /// The chunk ids of token sets already cut, by their classes' ids in
    /// `classes`, ascending. Boundaries repeat their token sets (a property name's
    /// boundaries, character after character, weigh the same "the string goes on"
    /// set): `Glaiveai2K---create_invoice` cut 545 sets holding 128 distinct token
    /// sets, 98 of them through a whole 25 KB mask. Sets whose boundaries split their
    /// tokens into the same classes are found here.
    sets: FxHashMap<Box<[u32]>, Vec<u32>>,
    /// Ids of the token classes of every boundary so far, by their tokens, without and
    /// with end of sequence. A token is in one class per boundary, so equal class ids
    /// are equal token sets.
    classes: [ClassIds; 2],
    /// Range pairs held in `classes`' keys, against [`ChunkStore::MAX_CLASS_RANGES`].
    class_ranges: usize,
}

/// Token class ids by the class's ranges (which identify its tokens, [`ClassTokens`]).
type ClassIds = FxHashMap<Box<[(u32, u32)]>, u32>;

/// The words of window `w` a chunk holds, `first..end` within the window: from the
/// block of its first nonzero word to the end of the block of its last (`len`, the
/// window's length, where the mask ends sooner).
fn chunk_span(first: usize, last: usize, len: usize) -> (usize, usize) {
    let block = ParserDwa::BLOCK_WORDS as usize;
    (
        first / block * block,
        (last + 1).div_ceil(block).saturating_mul(block).min(len),
    )
}

impl ChunkStore {
    /// The chunk ids of the dense mask words `dense`: the nonzero part of each
    /// aligned window that has one, widened to whole blocks of
    /// [`ParserDwa::BLOCK_WORDS`] (the mask's end excepted), in order. `key` is
    /// scratch space.
    fn intern(&mut self, dense: &[u32], key: &mut Vec<u32>) -> Vec<u32> {
        let window = ParserDwa::CHUNK_WORDS as usize;
        let mut out = Vec::new();
        for (w, words) in dense.chunks(window).enumerate() {
            let Some(first) = words.iter().position(|&x| x != 0) else {
                continue;
            };
            let last = words.iter().rposition(|&x| x != 0).expect("a nonzero word");
            let (first, end) = chunk_span(first, last, words.len());
            key.clear();
            key.push((w * window + first) as u32);
            key.extend_from_slice(&words[first..end]);
            out.push(self.intern_chunk(key));
        }
        out
    }

    /// [`ChunkStore::intern`] of the mask with the token ids `ids` (ascending, no
    /// duplicates) out of `words` mask words, without the mask: the same chunks.
    fn intern_ids(&mut self, ids: &[u32], words: usize, key: &mut Vec<u32>) -> Vec<u32> {
        let window = ParserDwa::CHUNK_WORDS as usize;
        let mut out = Vec::new();
        let mut i = 0;
        while i < ids.len() {
            let w = ids[i] as usize / 32 / window;
            let j = i + ids[i..].partition_point(|&t| t as usize / 32 / window == w);
            let word = |t: u32| t as usize / 32 - w * window;
            let len = window.min(words - w * window);
            let (first, end) = chunk_span(word(ids[i]), word(ids[j - 1]), len);
            key.clear();
            key.push((w * window + first) as u32);
            key.resize(1 + end - first, 0);
            for &t in &ids[i..j] {
                key[1 + word(t) - first] |= 1 << (t % 32);
            }
            out.push(self.intern_chunk(key));
            i = j;
        }
        out
    }

    /// Range pairs the keys of `classes` may hold in all (16 MB); past it, new
    /// classes get no id and sets with them are cut afresh each time, as before.
    const MAX_CLASS_RANGES: usize = 2 << 20;

    /// The id of the class of tokens `tokens`, or `None` once the budget is spent.
    fn class_id(&mut self, tokens: &ClassTokens) -> Option<u32> {
        let next = (self.classes[0].len() + self.classes[1].len()) as u32;
        let map = &mut self.classes[tokens.eos as usize];
        if let Some(&id) = map.get(&tokens.ranges[..]) {
            return Some(id);
        }
        if self.class_ranges + tokens.ranges.len() > Self::MAX_CLASS_RANGES {
            return None;
        }
        self.class_ranges += tokens.ranges.len();
        map.insert(tokens.ranges.clone().into_boxed_slice(), next);
        Some(next)
    }

    /// The id of the chunk `key` (`[start word, words…]`).
    fn intern_chunk(&mut self, key: &[u32]) -> u32 {
        let hash = chunk_hash(key);
        let is = |chunks: &[(u32, Vec<u32>)], id: u32| {
            let (start, words) = &chunks[id as usize];
            *start == key[0] && words[..] == key[1..]
        };
        let id = self.chunks.len() as u32;
        match self.ids.get(&hash) {
            Some(&first) if is(&self.chunks, first) => return first,
            Some(_) => {
                let others = self.collided.entry(hash).or_default();
                if let Some(&other) = others.iter().find(|&&o| is(&self.chunks, o)) {
                    return other;
                }
                others.push(id);
            }
            None => {
                self.ids.insert(hash, id);
            }
        }
        self.chunks.push((key[0], key[1..].to_vec()));
        id
    }
}

/// The hash [`ChunkStore`] files chunk `key` under: xxh3 of its bytes.
fn chunk_hash(key: &[u32]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytemuck::cast_slice(key))
}

/// The mask words of large token classes, shared by every boundary.
///
/// A token set is a union of classes, and expanding a class sets one bit per token at
/// a scattered position (classes are ranges of the trie's order, not of ids). Inside
/// strings and other wide lexemes most tokens fall in one class that recurs, with the
/// same tokens, at boundary after boundary (each `date-time` or counted-string state of
/// a JSON Schema): 18,000 token sets of 65,000 tokens on average in one MaskBench schema.
/// Such a class is expanded once into mask words and OR-ed in afterwards; a class's
/// ranges identify its tokens (ascending, joined where they meet). The words come from
/// the trie's store ([`PreparedTrie::class_words`]), which keeps them for the next
/// grammar compiled over it; this map spares boundaries its lock.
#[derive(Default)]
struct DenseClasses {
    words: FxHashMap<ClassRanges, MaskWords>,
}

/// The mask words of one class, shared between the cache and its readers.
type MaskWords = std::sync::Arc<[u32]>;

impl DenseClasses {
    /// Classes with at least this many tokens are kept as mask words.
    const MIN_TOKENS: u32 = 4096;
    /// At most this many classes are kept (25 KB each for a 200k vocabulary).
    const MAX_CLASSES: usize = 512;
}

/// What cutting one boundary's token sets learns of its classes, for its other sets:
/// a boundary inside a wide lexeme has dozens of classes of thousands of ranges each
/// (a chunked string's), and each of its sets is a union of most of them. Looking a
/// class up in [`DenseClasses`] hashes and compares its ranges: done once per class
/// rather than once per set it is in.
#[derive(Default)]
struct BoundaryClasses {
    /// Per class: its tokens (end of sequence included); empty until first asked.
    sizes: Vec<u32>,
    /// Per class: its mask words, once looked up (`Some(None)`: none kept).
    dense: Vec<Option<Option<MaskWords>>>,
}

/// Sets the bits of `ids` in the mask words `dense`.
fn set_bits(dense: &mut [u32], ids: impl IntoIterator<Item = u32>) {
    for t in ids {
        dense[t as usize / 32] |= 1 << (t % 32);
    }
}

/// Builds the Parser DWA of a grammar for a vocabulary of `vocab_len` ids, telling
/// `progress(done, total)` each time a lexer boundary is built. Every worker polls
/// `deadline` (per trie node walked, automaton state and stack state read), so all of
/// them stop soon after it runs out.
#[allow(clippy::too_many_arguments)]
pub fn build_parser_dwa(
    tables: TablesRef<'_>,
    trie: &PreparedTrie,
    vocab_len: usize,
    eos: u32,
    limits: ParserDwaLimits,
    deadline: &Deadline,
    describe: &(dyn Fn(Boundary) -> String + Sync),
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<(ParserDwa, ParserDwaStats), ParserDwaError> {
    build_parser_dwa_with(
        tables,
        trie,
        vocab_len,
        eos,
        limits,
        deadline,
        describe,
        progress,
        Some(RestSharing::DEFAULT),
    )
}

/// [`build_parser_dwa`] with automata kept for boundaries of one [`RestKey`] as
/// `rest_sharing` says (`None`: none, every automaton built on its own).
#[allow(clippy::too_many_arguments)]
fn build_parser_dwa_with(
    tables: TablesRef<'_>,
    trie: &PreparedTrie,
    vocab_len: usize,
    eos: u32,
    limits: ParserDwaLimits,
    deadline: &Deadline,
    describe: &(dyn Fn(Boundary) -> String + Sync),
    progress: &(dyn Fn(usize, usize) + Sync),
    rest_sharing: Option<RestSharing>,
) -> Result<(ParserDwa, ParserDwaStats), ParserDwaError> {
    deadline.check(Stage::TerminalDwa)?;
    let lexing = Lexing::new(tables, trie);
    let boundaries = lexing.boundaries();
    let lr = tables.lr;
    // Per nonterminal, the states with a goto on it, in increasing order (from the
    // gotos present: a loop over states × nonterminals is quadratic on rule chains).
    let mut goto_states: Vec<Vec<u32>> = vec![Vec::new(); lr.num_nonterminals as usize];
    for (s, a, _) in lr.gotos() {
        goto_states[a as usize].push(s);
    }
    goto_states
        .iter_mut()
        .for_each(|states| states.sort_unstable());
    let counter = AtomicUsize::new(1);
    let done = AtomicUsize::new(0);
    progress(0, boundaries.len());
    let chunk_store = std::sync::Mutex::new(ChunkStore::default());
    let dense_classes = std::sync::Mutex::new(DenseClasses::default());
    let same = std::sync::Mutex::new(FxHashMap::<BoundaryKey, Arc<SharedBuild>>::default());
    let shapes = std::sync::Mutex::new(FxHashMap::<Arc<ShapeKey>, Arc<SharedShape>>::default());
    let rests = std::sync::Mutex::new(FxHashMap::<RestKey, Arc<RestShape>>::default());
    // Boundaries that differ only in their lexemes' terminals walk the trie once.
    let renamed = RenamedDwas::new(
        boundaries
            .par_iter()
            .with_max_len(64)
            .map(|&b| lexing.likeness(b))
            .collect(),
    );
    // Short jobs: a few boundaries of a grammar can cost most of its time (a long
    // string's chunks), and they sit near each other in the boundary order. Rayon
    // splits a slice into long runs that one worker walks in sequence, so one worker
    // took all of a `maxLength` string's chunks while the other had nothing left to
    // steal (o9919: 1.2 times faster on two workers than on one; with runs of at
    // most 4, 1.8 times).
    let built: Vec<Option<Arc<BoundaryDwa>>> = boundaries
        .par_iter()
        .enumerate()
        .with_max_len(4)
        .map(|(i, &b)| {
            let t0 = std::time::Instant::now();
            let tdwa = renamed
                .build(
                    &lexing,
                    i,
                    b,
                    limits.max_terminal_states,
                    &mut deadline.poll(Stage::TerminalDwa),
                )
                .map_err(|e| match e {
                    TerminalDwaError::Limit(source) => ParserDwaError::TerminalDwa {
                        source,
                        boundary: describe(b),
                    },
                    TerminalDwaError::Budget(e) => ParserDwaError::Budget(e),
                })?;
            let t1 = t0.elapsed();
            let heads = lexing.head_states(b);
            // Boundaries with the same Terminal DWA and heads have the same automaton:
            // the first builds it, the others (waiting if it is under way) share it.
            // Where only their classes' tokens differ, they share its states, and each
            // cuts its own token sets. (Waiting blocks a rayon worker: sound because
            // `Builder::build` starts no rayon work that the waiting worker could be
            // asked to run, and a worker building a shape waits for nothing.)
            let TerminalDwa {
                succ,
                finals,
                class_tokens,
                classes_below,
                ..
            } = tdwa;
            let (classes, states) = (class_tokens.len(), succ.len());
            let shape_key = Arc::new(ShapeKey::new(succ, finals, &heads));
            let key = BoundaryKey::new(shape_key.clone(), class_tokens);
            let class_tokens = key.class_tokens.clone();
            let shared = same
                .lock()
                .expect("no builder panicked")
                .entry(key)
                .or_default()
                .clone();
            let r = shared
                .get_or_init(|| {
                    let rest_key = rest_sharing
                        .filter(|r| shape_key.succ.len() >= r.min_terminal_states)
                        .map(|r| (r, RestKey::new(shape_key.clone(), classes)));
                    let rest = rest_key.as_ref().and_then(|(_, key)| {
                        rests.lock().expect("no builder panicked").get(key).cloned()
                    });
                    let builder = Builder {
                        rest,
                        by_read: RefCell::new(Reads::new(classes)),
                        by_goto: Default::default(),
                        tables,
                        tdwa: TdwaRef {
                            succ: &shape_key.succ,
                            finals: &shape_key.finals,
                            class_tokens: &class_tokens,
                            classes_below: &classes_below,
                        },
                        goto_states: &goto_states,
                        heads,
                        chunks: &chunk_store,
                        dense_classes: &dense_classes,
                        template_reductions: limits.template_reductions,
                        trie,
                        eos,
                    };
                    let shape = shapes
                        .lock()
                        .expect("no builder panicked")
                        .entry(shape_key.clone())
                        .or_default()
                        .clone();
                    let shape = shape
                        .get_or_init(|| {
                            let built = builder.build(&counter, &limits, deadline, &|| describe(b));
                            Ok(built?.map(|Built { shape, keys, ids }| {
                                let shape = Arc::new(shape);
                                if let Some((sharing, key)) = rest_key {
                                    if builder.rest.is_none()
                                        && shape.states.len() >= sharing.min_states
                                    {
                                        rests.lock().expect("no builder panicked").entry(key).or_insert_with(|| {
                                            Arc::new(RestShape {
                                                shape: shape.clone(),
                                                keys,
                                                ids,
                                            })
                                        });
                                    }
                                }
                                shape
                            }))
                        })
                        .clone()?;
                    let Some(shape) = shape else {
                        return Ok(None);
                    };
                    // Every automaton is emitted with its own token sets, so its
                    // states count for each (the build counted them while it ran
                    // only to stop a runaway one early).
                    let total = counter.fetch_add(shape.states.len() - 1, Ordering::Relaxed)
                        + shape.states.len()
                        - 1;
                    if total > limits.max_states {
                        return Err(ParserDwaError::States {
                            limit: limits.max_states,
                            boundary: describe(b),
                        });
                    }
                    let weights = builder.token_chunks(&shape.weight_sets, vocab_len);
                    Ok(Some(Arc::new(BoundaryDwa { shape, weights })))
                })
                .clone();
            // Per-boundary sizes and times, for finding what makes a grammar expensive.
            if std::env::var_os("STACKMASK_DEBUG_DWA").is_some() {
                if let Ok(Some(d)) = &r {
                    eprintln!(
                        "{}: {} classes, {} tdwa states, {:?}; {} dwa states, {} trans, {} weights, {:?}",
                        describe(b),
                        classes,
                        states,
                        t1,
                        d.shape.states.len(),
                        d.shape.states.iter().map(|s| s.0.len()).sum::<usize>(),
                        d.weights.len(),
                        t0.elapsed()
                    );
                }
            }
            progress(
                done.fetch_add(1, Ordering::Relaxed) + 1,
                boundaries.len(),
            );
            r
        })
        .collect::<Result<_, _>>()?;

    let mut out = ParserDwa {
        start: Vec::new(),
        index: vec![0, 0],
        keys: Vec::new(),
        targets: Vec::new(),
        weights: Vec::new(),
        default_target: vec![ParserDwa::STOP],
        default_weight: vec![0],
        weight_index: vec![0, 0],
        weight_chunks: Vec::new(),
        chunk_table: Vec::new(),
        chunk_words: Vec::new(),
        fork_index: vec![0],
        fork_states: Vec::new(),
    };
    // Fx hashes: these maps see every automaton and token set once (SipHash took about
    // 1 of the assembly's 5-6 serial ms on names-heavy schemas); ids come from
    // insertion counts and no map is iterated, so the artifact does not depend on the
    // hasher.
    let mut weight_ids: FxHashMap<Vec<u32>, u32> = FxHashMap::default();
    weight_ids.insert(Vec::new(), 0);
    // Chunks renumbered in order of first use, so that the artifact does not depend
    // on the order the boundaries were built in.
    let store = chunk_store.into_inner().expect("no builder panicked");
    let mut chunk_ids: Vec<u32> = vec![u32::MAX; store.chunks.len()];
    let mut starts: FxHashMap<Boundary, u32> = FxHashMap::default();
    // Per shared automaton (by address): its start state, once its states are in.
    let mut start_of: FxHashMap<*const BoundaryDwa, u32> = FxHashMap::default();
    let mut stats = ParserDwaStats {
        boundaries: built.len(),
        ..Default::default()
    };
    let mut shape_ptrs: rustc_hash::FxHashSet<*const DwaShape> = Default::default();
    for (b, dwa) in boundaries.iter().zip(&built) {
        let Some(dwa) = dwa else {
            stats.fallback_boundaries += 1;
            starts.insert(*b, ParserDwa::FALLBACK);
            continue;
        };
        stats.token_classes += dwa.shape.classes;
        stats.terminal_dwa_states += dwa.shape.terminal_states;
        if let Some(&start) = start_of.get(&Arc::as_ptr(dwa)) {
            starts.insert(*b, start);
            continue;
        }
        if shape_ptrs.insert(Arc::as_ptr(&dwa.shape)) {
            stats.states_translated += dwa.shape.translated;
        }
        // Local state s > 0 becomes offset + s - 1; local 0 stays STOP.
        let offset = out.default_target.len() as u32;
        let state = |s: u32| {
            if s == 0 {
                ParserDwa::STOP
            } else {
                offset + s - 1
            }
        };
        let fork_offset = out.fork_index.len() as u32 - 1;
        let global = |s: u32| {
            if s & ParserDwa::FORK != 0 {
                ParserDwa::FORK | (fork_offset + (s & !ParserDwa::FORK))
            } else {
                state(s)
            }
        };
        for members in &dwa.shape.forks {
            out.fork_states.extend(members.iter().map(|&s| state(s)));
            out.fork_index.push(out.fork_states.len() as u32);
        }
        let mut local_weight = Vec::with_capacity(dwa.weights.len());
        for chunks in &dwa.weights {
            let chunks: Vec<u32> = chunks
                .iter()
                .map(|&c| {
                    if chunk_ids[c as usize] == u32::MAX {
                        let (start, words) = &store.chunks[c as usize];
                        chunk_ids[c as usize] = out.chunk_table.len() as u32 / 3;
                        out.chunk_table.extend([
                            *start,
                            words.len() as u32,
                            out.chunk_words.len() as u32,
                        ]);
                        out.chunk_words.extend_from_slice(words);
                    }
                    chunk_ids[c as usize]
                })
                .collect();
            let next = weight_ids.len() as u32;
            let id = *weight_ids.entry(chunks).or_insert_with_key(|chunks| {
                out.weight_chunks.extend_from_slice(chunks);
                out.weight_index.push(out.weight_chunks.len() as u32);
                next
            });
            local_weight.push(id);
        }
        if out.weight_bytes() > limits.max_weight_bytes {
            return Err(ParserDwaError::WeightBytes {
                limit: limits.max_weight_bytes,
            });
        }
        for (keys, default, default_weight) in &dwa.shape.states[1..] {
            for &(r, target, w) in keys {
                out.keys.push(r);
                out.targets.push(global(target));
                out.weights.push(local_weight[w as usize]);
            }
            out.index.push(out.keys.len() as u32);
            out.default_target.push(global(*default));
            out.default_weight
                .push(local_weight[*default_weight as usize]);
        }
        starts.insert(*b, state(dwa.shape.start));
        start_of.insert(Arc::as_ptr(dwa), state(dwa.shape.start));
    }
    let configs = tables.conf_flags.len() as u32;
    for c in 0..configs {
        for ignore in [false, true] {
            let b = Boundary::Group { config: c, ignore };
            out.start
                .push(starts.get(&b).copied().unwrap_or(ParserDwa::STOP));
        }
    }
    out.start.push(starts[&Boundary::Initial]);
    // What the boundaries shared is many small allocations: freed on a pool thread
    // (idle from here on) instead of in sequence with the minimization (3% of a
    // schema's time on one core).
    stats.automata = start_of.len();
    stats.shapes = shape_ptrs.len();
    drop((start_of, shape_ptrs));
    rayon::spawn(move || drop((same, shapes, rests, built, store, dense_classes)));
    lexing.drop_on_pool();
    join_adjacent_chunks(&mut out);
    let t = std::time::Instant::now();
    let before = out.default_target.len();
    stats.states_built = before;
    let removed = crate::minimize::minimize(&mut out, deadline)?;
    if std::env::var_os("STACKMASK_DEBUG_DWA").is_some() {
        eprintln!(
            "minimize: {before} -> {} states in {:?}",
            before - removed,
            t.elapsed()
        );
    }
    Ok((out, stats))
}

/// Joins the chunks of each weight that lie end to end both in the mask and in the
/// chunk words into one longer chunk (an entry of its own in the chunk table; the
/// words are not copied). Chunks are cut per window so that weights can share them,
/// but a dense token set whose windows are its own then costs one tight loop over
/// its words instead of a table lookup and a loop per window: the per-chunk cost is
/// most of OR-ing a token set that covers much of the vocabulary.
fn join_adjacent_chunks(dwa: &mut ParserDwa) {
    let old = std::mem::take(&mut dwa.chunk_table);
    let entry = |c: u32| -> [u32; 3] { std::array::from_fn(|i| old[3 * c as usize + i]) };
    let mut ids: FxHashMap<[u32; 3], u32> = FxHashMap::default();
    let mut intern = |run: [u32; 3], table: &mut Vec<u32>| {
        *ids.entry(run).or_insert_with(|| {
            table.extend(run);
            table.len() as u32 / 3 - 1
        })
    };
    let mut chunks = Vec::with_capacity(dwa.weight_chunks.len());
    let mut index = Vec::with_capacity(dwa.weight_index.len());
    index.push(0);
    for w in 0..dwa.num_weights() {
        let list =
            &dwa.weight_chunks[dwa.weight_index[w] as usize..dwa.weight_index[w + 1] as usize];
        let mut run: Option<[u32; 3]> = None;
        for &c in list {
            let [start, len, offset] = entry(c);
            run = match run {
                Some([s, l, o]) if s + l == start && o + l == offset => Some([s, l + len, o]),
                Some(done) => {
                    chunks.push(intern(done, &mut dwa.chunk_table));
                    Some([start, len, offset])
                }
                None => Some([start, len, offset]),
            };
        }
        if let Some(done) = run {
            chunks.push(intern(done, &mut dwa.chunk_table));
        }
        index.push(chunks.len() as u32);
    }
    dwa.weight_chunks = chunks;
    dwa.weight_index = index;
}

/// What a ready thread does on one LR state read: the classes it proves valid and
/// the threads it leaves waiting.
struct ThreadStep {
    accepted: ClassSet,
    threads: Vec<Thread>,
}

/// [`Builder::read`]'s memo: per ready thread, a row of result ids by candidate; and
/// the results ([`ThreadStep`]s) themselves, one after the other in shared vectors.
///
/// A boundary makes hundreds of thousands of results; as separate allocations, making
/// and dropping them took a fifth of a large boundary's time.
struct Reads {
    /// Per ready thread, its row in `rows`.
    ids: FxHashMap<Thread, usize>,
    /// Per row, per candidate: 0 (not read yet) or the result's id plus one.
    rows: Vec<Vec<u32>>,
    /// Words of each result's class set ([`ClassSet`]), `width` a result.
    words: Vec<u64>,
    width: usize,
    /// Each result's threads: result `i` has `threads[starts[i]..starts[i + 1]]`.
    threads: Vec<Thread>,
    starts: Vec<u32>,
}

impl Reads {
    /// The result of a read that does nothing.
    const NOTHING: u32 = 0;

    /// An empty memo over `classes` classes, holding [`Reads::NOTHING`].
    fn new(classes: usize) -> Self {
        let width = ClassSet::empty(classes).0.len();
        Reads {
            ids: FxHashMap::default(),
            rows: Vec::new(),
            words: vec![0; width],
            width,
            threads: Vec::new(),
            starts: vec![0, 0],
        }
    }

    /// Thread `th`'s row (of `len` slots), made empty on first use.
    fn row(&mut self, th: Thread, len: usize) -> usize {
        let rows = &mut self.rows;
        *self.ids.entry(th).or_insert_with(|| {
            rows.push(vec![0; len]);
            rows.len() - 1
        })
    }

    /// Adds a result, returning its id.
    fn push(&mut self, accepted: &[u64], threads: &[Thread]) -> u32 {
        debug_assert_eq!(accepted.len(), self.width);
        self.words.extend_from_slice(accepted);
        self.threads.extend_from_slice(threads);
        self.starts.push(self.threads.len() as u32);
        self.starts.len() as u32 - 2
    }

    fn accepted(&self, id: u32) -> &[u64] {
        let at = id as usize * self.width;
        &self.words[at..at + self.width]
    }

    fn threads(&self, id: u32) -> &[Thread] {
        let id = id as usize;
        &self.threads[self.starts[id] as usize..self.starts[id + 1] as usize]
    }

    /// Adds result `id` to `accepted` and `threads`.
    fn add_to(&self, id: u32, accepted: &mut [u64], threads: &mut Vec<Thread>) {
        for (a, b) in accepted.iter_mut().zip(self.accepted(id)) {
            *a |= b;
        }
        threads.extend_from_slice(self.threads(id));
    }
}

/// What a ready thread does after its goto to one target state: [`ThreadStep`] for
/// the threads that pop below the state read (already counted one level down), and
/// the threads whose reductions pop back to the state read, to be read on it again.
struct GotoStep {
    /// A result in [`Reads`].
    below: u32,
    same_level: Vec<Thread>,
}

/// Builds one boundary's automaton by subset construction.
struct Builder<'a> {
    /// The automaton of a boundary that coincides with this one past the first
    /// terminal, whose states this one's take their transitions from ([`RestKey`]).
    rest: Option<Arc<RestShape>>,
    /// Per `(ready thread, LR state read)`: what the read does ([`Builder::read`]).
    /// Threads recur in many automaton states, so each read is worked out once per
    /// boundary.
    ///
    /// Kept as one row per thread, indexed like the thread's candidates (the states
    /// with a goto on its nonterminal, [`Builder::goto_states`]): an automaton
    /// state reads its candidates in order, so its lookups go along a row instead of
    /// all over one large map (the reads are bound by memory latency, not work).
    /// The start thread, which reads the heads, has `goto` [`NONE`] and a row as
    /// long as the LR table's states.
    by_read: RefCell<Reads>,
    /// Per `(ready thread, goto target)`: the simulation on the goto target alone,
    /// shared by every state read with that goto target ([`Builder::read`]).
    by_goto: RefCell<FxHashMap<(Thread, u32), Rc<GotoStep>>>,
    tables: TablesRef<'a>,
    tdwa: TdwaRef<'a>,
    goto_states: &'a [Vec<u32>],
    /// The LR states a head of this boundary can be in (the first state read).
    heads: Vec<u32>,
    /// Where the token sets' chunks are interned.
    chunks: &'a std::sync::Mutex<ChunkStore>,
    /// Large classes as mask words, shared by every boundary.
    dense_classes: &'a std::sync::Mutex<DenseClasses>,
    /// Reductions a template may take before a shift ([`ParserDwaLimits`]).
    template_reductions: u32,
    /// The trie: its ids, which class tokens index ([`ClassTokens`]), and its store,
    /// which keeps large classes' mask words from grammar to grammar.
    trie: &'a PreparedTrie,
    /// The end of sequence token.
    eos: u32,
}

/// What one step (one LR state read) produced.
struct Step<'a> {
    b: &'a Builder<'a>,
    undecided: &'a ClassSet,
    accepted: ClassSet,
    threads: Vec<Thread>,
    /// `(node, known stack)` pairs explored in this step.
    seen: rustc_hash::FxHashSet<(u32, Vec<u32>)>,
    budget: usize,
}

impl Builder<'_> {
    /// Token sets up to this size are cut into chunks from their ids
    /// ([`ChunkStore::intern_ids`]), larger ones through a whole mask.
    const FEW_TOKENS: u32 = 1024;

    /// The boundary's automaton states, or `None` past the per-boundary budget. Its
    /// states are not added to `counter` (the caller counts them for every boundary
    /// that uses them), only checked against the limit as they are made.
    fn build(
        &self,
        counter: &AtomicUsize,
        limits: &ParserDwaLimits,
        deadline: &Deadline,
        describe: &dyn Fn() -> String,
    ) -> Result<Option<Built>, ParserDwaError> {
        let mut poll = deadline.poll(Stage::ParserDwa);
        poll.check()?;
        let max_states = limits.max_states;
        let mut steps_left = limits.boundary_steps;
        let k = self.tdwa.num_classes();
        let has_classes: Vec<bool> = self
            .tdwa
            .classes_below
            .iter()
            .map(|c| !c.is_empty())
            .collect();
        let mut ids: FxHashMap<Key, u32> = FxHashMap::default();
        let mut keys: Vec<Key> = vec![Vec::new()];
        ids.insert(Vec::new(), 0);
        let mut forks: Vec<Vec<u32>> = Vec::new();
        let mut fork_ids: FxHashMap<Vec<u32>, u32> = FxHashMap::default();
        let mut weight_ids: FxHashMap<ClassSet, u32> = FxHashMap::default();
        weight_ids.insert(ClassSet::empty(k), 0);
        let mut weight_sets = vec![ClassSet::empty(k)];
        let mut targets: Vec<u32> = Vec::new();
        let mut translated_ids = self.rest.as_deref().map(Translated::new);
        let mut translated = 0;

        // The automaton state(s) a thread set continues in: one per template
        // continuation, as a fork where there are several (module docs). Threads
        // whose words are all decided (no class below their node) are dropped.
        let mut intern =
            |threads: &mut Vec<Thread>, keys: &mut Vec<Key>| -> Result<u32, ParserDwaError> {
                threads.retain(|t| has_classes[t.node as usize]);
                threads.sort_unstable_by_key(|t| (t.term, t.pops, t.goto, t.node));
                threads.dedup();
                targets.clear();
                for group in
                    threads.chunk_by(|a, b| (a.term, a.pops, a.goto) == (b.term, b.pops, b.goto))
                {
                    let id = match ids.get(group) {
                        Some(&id) => id,
                        None => {
                            if counter.load(Ordering::Relaxed) + keys.len() >= max_states {
                                return Err(ParserDwaError::States {
                                    limit: max_states,
                                    boundary: describe(),
                                });
                            }
                            let id = keys.len() as u32;
                            ids.insert(group.to_vec(), id);
                            keys.push(group.to_vec());
                            id
                        }
                    };
                    targets.push(id);
                }
                targets.sort_unstable();
                Ok(match targets.len() {
                    0 => 0,
                    1 => targets[0],
                    _ => {
                        let next = forks.len() as u32;
                        let f = *fork_ids.entry(targets.clone()).or_insert_with(|| {
                            forks.push(targets.clone());
                            next
                        });
                        ParserDwa::FORK | f
                    }
                })
            };
        let start = intern(
            &mut vec![Thread {
                node: 0,
                term: NONE,
                pops: 0,
                goto: NONE,
            }],
            &mut keys,
        )?;
        let mut states: Vec<LocalState> = vec![(Vec::new(), 0, 0)];
        let mut d = 1;
        // Scratch reused from state to state: a large boundary has tens of thousands
        // of states with a read or two each, where allocating these was much of a
        // state's cost.
        let mut candidates: Vec<u32> = Vec::new();
        let mut waiting: Vec<Thread> = Vec::new();
        // One step's result, reused from candidate to candidate.
        let mut threads: Vec<Thread> = Vec::new();
        let mut accepted = ClassSet::empty(k);
        let mut counts: FxHashMap<(u32, u32), usize> = FxHashMap::default();
        while d < keys.len() {
            poll.tick()?;
            if keys.len() > limits.boundary_states {
                return Ok(None);
            }
            // Taken while the state is built (interning only adds keys) and put back.
            let key = std::mem::take(&mut keys[d]);
            // Default: only threads still popping survive a state without a key.
            waiting.clear();
            waiting.extend(key.iter().filter(|t| t.pops > 0).map(|t| Thread {
                pops: t.pops - 1,
                ..*t
            }));
            let default = intern(&mut waiting, &mut keys)?;
            candidates.clear();
            let ready = key.iter().filter(|t| t.pops == 0);
            if ready.clone().any(|t| t.goto == NONE) {
                // Only the start state reads the head (it has no other thread).
                candidates.extend_from_slice(&self.heads);
            } else {
                for t in ready {
                    candidates.extend_from_slice(&self.goto_states[t.goto as usize]);
                }
                candidates.sort_unstable();
                candidates.dedup();
            }
            let mut trans = Vec::new();
            let num_candidates = candidates.len();
            // Past the root, the state with the same threads in the kept automaton
            // reads alike: its outcomes, translated, in the same order, give the same
            // local ids and weights as simulating them here.
            let kept = (self.rest.as_deref())
                .filter(|_| key.iter().all(|t| t.node != 0))
                .and_then(|rest| Some((rest, *rest.ids.get(&key)?)));
            translated += kept.is_some() as usize;
            for &r in &candidates {
                poll.tick()?;
                let (target, w) = match kept {
                    Some((rest, state)) => {
                        let Some(left) = steps_left.checked_sub(STEP_COST) else {
                            return Ok(None);
                        };
                        steps_left = left;
                        let (there, w_there) = rest.outcome(state, r);
                        let translated_ids = translated_ids.as_mut().expect("made with the rest");
                        let target = match *translated_ids.target(there) {
                            NONE => {
                                rest.threads_of(there, &mut threads);
                                let here = intern(&mut threads, &mut keys)?;
                                *translated_ids.target(there) = here;
                                here
                            }
                            here => here,
                        };
                        // Weight 0 is the empty set, here and there.
                        if w_there == 0 && target == default {
                            continue;
                        }
                        let w = match translated_ids.weights[w_there as usize] {
                            NONE => {
                                let set = &rest.shape.weight_sets[w_there as usize];
                                let here = weight_id(&mut weight_ids, &mut weight_sets, set);
                                translated_ids.weights[w_there as usize] = here;
                                here
                            }
                            here => here,
                        };
                        (target, w)
                    }
                    None => {
                        match self.step(&key, r, &mut steps_left, &mut threads, &mut accepted) {
                            Ok(()) => {}
                            Err(StepError::BoundaryBudget) => return Ok(None),
                            Err(StepError::Chain(e)) => return Err(e.into()),
                            Err(StepError::Budget) => {
                                return Err(ParserDwaError::Simulation {
                                    limit: MAX_SIMULATION_STEPS,
                                    boundary: describe(),
                                })
                            }
                        };
                        let target = intern(&mut threads, &mut keys)?;
                        if accepted.is_empty() && target == default {
                            continue;
                        }
                        (
                            target,
                            weight_id(&mut weight_ids, &mut weight_sets, &accepted),
                        )
                    }
                };
                trans.push((r, target, w));
            }
            let mut default = (default, 0);
            if key.iter().all(|t| t.pops == 0) {
                // Every thread takes a goto on the state read, and a real stack always
                // has that goto (the LR parser built it: a reduction's goto exists on
                // the state it uncovers), so only candidates occur here and the most
                // common outcome can be the default.
                counts.clear();
                for &(_, target, w) in &trans {
                    *counts.entry((target, w)).or_default() += 1;
                }
                counts.insert(default, num_candidates - trans.len());
                let common = counts
                    .iter()
                    .max_by_key(|&(&outcome, &n)| (n, std::cmp::Reverse(outcome)))
                    .map(|(&outcome, _)| outcome)
                    .expect("the default is counted");
                if common != default {
                    // The candidates the old default covered get explicit transitions
                    // (`trans` is in the order of the candidates, which are sorted).
                    let mut all: Vec<(u32, u32, u32)> = trans.clone();
                    for &r in &candidates {
                        if trans.binary_search_by_key(&r, |t| t.0).is_err() {
                            all.push((r, default.0, default.1));
                        }
                    }
                    all.sort_unstable();
                    trans = all
                        .into_iter()
                        .filter(|&(_, t, w)| (t, w) != common)
                        .collect();
                    default = common;
                }
            }
            states.push((trans, default.0, default.1));
            keys[d] = key;
            d += 1;
        }
        Ok(Some(Built {
            shape: DwaShape {
                start,
                states,
                forks,
                weight_sets,
                classes: k,
                terminal_states: self.tdwa.num_states(),
                translated,
            },
            keys,
            ids,
        }))
    }

    /// The chunks of each class set's tokens, interned in the shared store: sets cut
    /// at an earlier boundary from the store, the others cut now.
    fn token_chunks(&self, sets: &[ClassSet], vocab_len: usize) -> Vec<Vec<u32>> {
        let lock = || self.chunks.lock().expect("no builder panicked");
        let class_ids: Vec<Option<u32>> = {
            let mut store = lock();
            let classes = &self.tdwa.class_tokens;
            classes
                .iter()
                .map(|tokens| store.class_id(tokens))
                .collect()
        };
        let mut classes = BoundaryClasses::default();
        sets.iter()
            .map(|set| {
                let key: Option<Vec<u32>> =
                    set.iter().map(|class| class_ids[class as usize]).collect();
                let key = key.map(|mut key| {
                    key.sort_unstable();
                    key.into_boxed_slice()
                });
                if let Some(chunks) = key.as_ref().and_then(|key| lock().sets.get(key).cloned()) {
                    return chunks;
                }
                let chunks = self.cut_token_set(set, vocab_len, &mut classes);
                if let Some(key) = key {
                    lock().sets.insert(key, chunks.clone());
                }
                chunks
            })
            .collect()
    }

    /// The chunks of a class set's tokens, cut now (`classes`: what the boundary's
    /// sets cut so far learnt of its classes).
    fn cut_token_set(
        &self,
        set: &ClassSet,
        vocab_len: usize,
        classes: &mut BoundaryClasses,
    ) -> Vec<u32> {
        let words = vocab_len.div_ceil(32);
        let mut key = Vec::new();
        let class_tokens = &self.tdwa.class_tokens;
        if classes.sizes.is_empty() {
            classes.sizes = (class_tokens.iter())
                .map(|t| t.ranges.iter().map(|&(a, b)| b - a).sum::<u32>() + t.eos as u32)
                .collect();
            classes.dense = vec![None; class_tokens.len()];
        }
        // A few tokens (most sets outside wide lexemes): their chunks straight from
        // the ids, without a whole mask to fill and scan.
        let size: u32 = set.iter().map(|class| classes.sizes[class as usize]).sum();
        if size <= Self::FEW_TOKENS {
            let mut ids: Vec<u32> = set
                .iter()
                .flat_map(|class| {
                    self.tdwa.class_tokens[class as usize]
                        .ids(&self.trie.trie().token_ids, self.eos)
                })
                .collect();
            ids.sort_unstable();
            ids.dedup();
            return self
                .chunks
                .lock()
                .expect("no builder panicked")
                .intern_ids(&ids, words, &mut key);
        }
        let mut dense = vec![0u32; words];
        for class in set.iter() {
            let tokens = &class_tokens[class as usize];
            let words = classes.dense[class as usize]
                .get_or_insert_with(|| self.dense_class(tokens, dense.len()))
                .clone();
            match words {
                Some(words) => {
                    for (d, w) in dense.iter_mut().zip(words.iter()) {
                        *d |= w;
                    }
                    set_bits(&mut dense, tokens.eos.then_some(self.eos));
                }
                None => set_bits(
                    &mut dense,
                    tokens.ids(&self.trie.trie().token_ids, self.eos),
                ),
            }
        }
        self.chunks
            .lock()
            .expect("no builder panicked")
            .intern(&dense, &mut key)
    }

    /// The mask words of class `tokens`' ranges (end of sequence aside) if it is large
    /// ([`DenseClasses`]), expanded on first use; `None` for a small class or once the
    /// cache is full.
    fn dense_class(&self, tokens: &ClassTokens, words: usize) -> Option<MaskWords> {
        let size: u32 = tokens.ranges.iter().map(|&(a, b)| b - a).sum();
        if size < DenseClasses::MIN_TOKENS {
            return None;
        }
        let lock = || self.dense_classes.lock().expect("no builder panicked");
        {
            let cache = lock();
            if let Some(w) = cache.words.get(&tokens.ranges[..]) {
                return Some(w.clone());
            }
            if cache.words.len() >= DenseClasses::MAX_CLASSES {
                return None;
            }
        }
        // The ranges only: end of sequence is the caller's to add (it is not in the key).
        let dense = self.trie.class_words(&tokens.ranges, words);
        lock()
            .words
            .insert(tokens.ranges.clone().into_boxed_slice(), dense.clone());
        Some(dense)
    }

    /// Reads LR state `r` in automaton state `key`: the next state's threads (into
    /// `threads`) and the classes decided valid (into `accepted`), both cleared first.
    fn step(
        &self,
        key: &Key,
        r: u32,
        steps_left: &mut usize,
        threads: &mut Vec<Thread>,
        accepted: &mut ClassSet,
    ) -> Result<(), StepError> {
        threads.clear();
        accepted.0.fill(0);
        // A step costs its simulations plus a fixed share for normalizing and
        // interning its result, so that many cheap steps count too.
        let mut spent = STEP_COST;
        for th in key {
            if th.pops > 0 {
                threads.push(Thread {
                    pops: th.pops - 1,
                    ..*th
                });
                continue;
            }
            let result = self.read(*th, r, 0, &mut spent)?;
            self.by_read
                .borrow()
                .add_to(result, &mut accepted.0, threads);
        }
        *steps_left = steps_left
            .checked_sub(spent)
            .ok_or(StepError::BoundaryBudget)?;
        Ok(())
    }

    /// What ready thread `th` does when it reads LR state `r` (memoized).
    ///
    /// The thread takes its goto on `r`, and what follows depends on `r` only where
    /// a reduction pops back down to it. So the simulation runs on the goto target
    /// alone (shared by every `r` with that target: in
    /// canonical LR(1) far fewer than the states read), and only the reductions that
    /// reach `r` — the same-level continuations, typically a chain of unit rules —
    /// are read on `r` again here.
    fn read(&self, th: Thread, r: u32, depth: usize, spent: &mut usize) -> Result<u32, StepError> {
        let candidates: &[u32] = if th.goto == NONE {
            &[]
        } else {
            &self.goto_states[th.goto as usize]
        };
        let slot = if th.goto == NONE {
            r as usize
        } else {
            match candidates.binary_search(&r) {
                Ok(i) => i,
                // No goto on `r`: the thread dies (a real stack never has this).
                Err(_) => return Ok(Reads::NOTHING),
            }
        };
        let row = {
            let mut rows = self.by_read.borrow_mut();
            let len = if th.goto == NONE {
                self.tables.lr.num_states as usize
            } else {
                candidates.len()
            };
            let row = rows.row(th, len);
            if let Some(result) = rows.rows[row][slot].checked_sub(1) {
                return Ok(result);
            }
            row
        };
        if depth > MAX_LEVEL_CHAIN {
            return Err(StepError::BoundaryBudget);
        }
        let result = if th.goto == NONE {
            // The start thread reads the head: the stack top as it is.
            let raw = self.simulate(th, &[r], spent)?;
            self.by_read
                .borrow_mut()
                .push(&raw.accepted.0, &raw.threads)
        } else if let Some(g) = self.tables.lr.goto(r, th.goto) {
            let cached = self.by_goto.borrow().get(&(th, g)).cloned();
            let after = match cached {
                Some(after) => after,
                None => {
                    let raw = self.simulate(th, &[g], spent)?;
                    let (same_level, mut below): (Vec<Thread>, Vec<Thread>) =
                        raw.threads.into_iter().partition(|t| t.pops == 0);
                    for t in &mut below {
                        t.pops -= 1;
                    }
                    let below = self.by_read.borrow_mut().push(&raw.accepted.0, &below);
                    let after = Rc::new(GotoStep { below, same_level });
                    self.by_goto.borrow_mut().insert((th, g), after.clone());
                    after
                }
            };
            if after.same_level.is_empty() {
                // What follows does not depend on `r` itself: share the result.
                after.below
            } else {
                let (mut accepted, mut threads) = {
                    let reads = self.by_read.borrow();
                    let below = after.below;
                    (
                        reads.accepted(below).to_vec(),
                        reads.threads(below).to_vec(),
                    )
                };
                for t in &after.same_level {
                    // The reduction popped back to `r`: its goto is on `r`.
                    let more = self.read(*t, r, depth + 1, spent)?;
                    self.by_read
                        .borrow()
                        .add_to(more, &mut accepted, &mut threads);
                }
                threads.sort_unstable();
                threads.dedup();
                self.by_read.borrow_mut().push(&accepted, &threads)
            }
        } else {
            Reads::NOTHING
        };
        *spent += 1;
        self.by_read.borrow_mut().rows[row][slot] = result + 1;
        Ok(result)
    }

    /// Runs ready thread `th` on the stack top `known`: the classes proven valid and
    /// the threads left waiting below `known` (`pops` counted from its bottom).
    fn simulate(
        &self,
        th: Thread,
        known: &[u32],
        spent: &mut usize,
    ) -> Result<ThreadStep, StepError> {
        let mut s = Step {
            b: self,
            undecided: &self.tdwa.classes_below[0],
            accepted: ClassSet::empty(self.tdwa.num_classes()),
            threads: Vec::new(),
            seen: Default::default(),
            budget: MAX_SIMULATION_STEPS,
        };
        if th.term == NONE {
            s.explore(th.node, known)?;
        } else {
            s.resume(th.node, th.term, known)?;
        }
        *spent += MAX_SIMULATION_STEPS - s.budget;
        s.threads.sort_unstable();
        s.threads.dedup();
        Ok(ThreadStep {
            accepted: s.accepted,
            threads: s.threads,
        })
    }
}

impl Step<'_> {
    /// Whether some class after `node` is still undecided in this step.
    fn live(&self, node: u32) -> bool {
        let below = &self.b.tdwa.classes_below[node as usize].0;
        below
            .iter()
            .zip(&self.undecided.0)
            .zip(&self.accepted.0)
            .any(|((b, u), a)| b & u & !a != 0)
    }

    /// Everything shifted up to `node`, stack top `known`: check the finals, then go
    /// on along each successor.
    fn explore(&mut self, node: u32, known: &[u32]) -> Result<(), StepError> {
        if !self.live(node) || !self.seen.insert((node, known.to_vec())) {
            return Ok(());
        }
        self.budget = self.budget.checked_sub(1).ok_or(StepError::Budget)?;
        let t = &self.b.tables;
        let tdwa = self.b.tdwa;
        let top = *known.last().expect("non-empty");
        for (check, classes) in &tdwa.finals[node as usize] {
            let holds = match *check {
                FinalCheck::Always => true,
                FinalCheck::Expect(x) => t.expects(top, x),
                FinalCheck::AnyExpected => t.expects_any(top),
                FinalCheck::ExpectAny(row) => t.expects_any_of(top, row),
            };
            if holds {
                self.accepted.union_masked(classes, self.undecided);
            }
        }
        for &(label, next) in &tdwa.succ[node as usize] {
            if label == NONE {
                self.explore(next, known)?;
            } else if self.live(next) {
                self.resume(next, label, known)?;
            }
        }
        Ok(())
    }

    /// Runs `term`'s template on `known`, then continues at `node` (the node the
    /// terminal leads to) with each outcome.
    fn resume(&mut self, node: u32, term: u32, known: &[u32]) -> Result<(), StepError> {
        let mut effects = Vec::new();
        template::apply(
            &self.b.tables.lr,
            known,
            term,
            self.b.template_reductions,
            &mut effects,
        )?;
        for e in effects {
            match e {
                Effect::Shifted(v) => self.explore(node, &v)?,
                Effect::Accepted => self.explore(node, known)?,
                Effect::NeedsDeeper { pops, goto } => self.threads.push(Thread {
                    node,
                    term,
                    pops,
                    goto,
                }),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::XorShift;

    /// Token classes get one id per token set, end of sequence included: a set of
    /// classes remembered at one boundary is reused at another only when it holds the
    /// same tokens. Past the budget, new classes get none.
    #[test]
    fn class_ids_tell_token_sets_apart_by_their_tokens_and_end_of_sequence() {
        let class = |ranges: &[(u32, u32)], eos: bool| ClassTokens {
            ranges: ranges.to_vec(),
            eos,
        };
        let mut store = ChunkStore::default();
        let a = store.class_id(&class(&[(0, 5), (9, 12)], false));
        let a_eos = store.class_id(&class(&[(0, 5), (9, 12)], true));
        let b = store.class_id(&class(&[(0, 5)], false));
        let eos_only = store.class_id(&class(&[], true));
        let ids = [a, a_eos, b, eos_only];
        assert!(ids.iter().all(Option::is_some));
        for i in 0..ids.len() {
            for j in 0..i {
                assert_ne!(ids[i], ids[j], "classes {i} and {j} hold different tokens");
            }
        }
        assert_eq!(store.class_id(&class(&[(0, 5), (9, 12)], true)), a_eos);
        assert_eq!(store.class_id(&class(&[(0, 5)], false)), b);

        store.class_ranges = ChunkStore::MAX_CLASS_RANGES;
        assert_eq!(store.class_id(&class(&[(20, 30)], false)), None);
        assert_eq!(
            store.class_id(&class(&[(0, 5)], false)),
            b,
            "known classes keep theirs"
        );
    }

    /// Chunks are told apart by their words, not only by their hash: a chunk whose
    /// hash another chunk has (made to happen here by filing it under that hash) gets
    /// an id of its own, found again when asked again, and the first keeps its id.
    #[test]
    fn chunks_with_one_hash_keep_their_own_ids() {
        let mut store = ChunkStore::default();
        let (a, b, c) = ([0u32, 7, 9], [64u32, 1], [3u32, 5, 5, 5]);
        let ia = store.intern_chunk(&a);
        // `b` and `c` hash as `a` does.
        store.ids.insert(chunk_hash(&b), ia);
        store.ids.insert(chunk_hash(&c), ia);
        let ib = store.intern_chunk(&b);
        let ic = store.intern_chunk(&c);
        assert!(ia != ib && ib != ic && ia != ic, "{ia} {ib} {ic}");
        assert_eq!(store.intern_chunk(&b), ib);
        assert_eq!(store.intern_chunk(&c), ic);
        assert_eq!(store.intern_chunk(&a), ia);
        assert_eq!(store.chunks[ib as usize], (64, vec![1]));
        assert_eq!(store.chunks[ic as usize], (3, vec![5, 5, 5]));
    }

    /// A set's chunks cut from its ids are the chunks of its mask: random sets, sparse
    /// and clustered, over mask lengths that end inside a window and a block.
    #[test]
    fn chunks_from_ids_are_the_chunks_of_the_mask() {
        let mut rng = XorShift(0xc4_0c5);
        let (mut by_ids, mut by_mask) = (ChunkStore::default(), ChunkStore::default());
        let mut key = Vec::new();
        for case in 0..400 {
            let vocab_len = 1 + rng.below(20_000) as usize;
            let words = vocab_len.div_ceil(32);
            let n = rng.below(300) as usize;
            let centre = rng.below(vocab_len as u64);
            let mut ids: Vec<u32> = (0..n)
                .map(|_| match rng.below(2) {
                    0 => rng.below(vocab_len as u64) as u32,
                    _ => (centre + rng.below(600)).min(vocab_len as u64 - 1) as u32,
                })
                .collect();
            ids.sort_unstable();
            ids.dedup();
            let mut dense = vec![0u32; words];
            set_bits(&mut dense, ids.iter().copied());
            let a = by_ids.intern_ids(&ids, words, &mut key);
            let b = by_mask.intern(&dense, &mut key);
            let chunks = |store: &ChunkStore, ids: &[u32]| -> Vec<(u32, Vec<u32>)> {
                ids.iter()
                    .map(|&c| store.chunks[c as usize].clone())
                    .collect()
            };
            assert_eq!(chunks(&by_ids, &a), chunks(&by_mask, &b), "case {case}");
        }
    }

    /// Boundaries whose automata coincide past their first terminal (a schema's value
    /// ends: `}`, `]`, `null`, `true`, `false`, a string's closing quote) take those
    /// states from the first one built ([`RestShape`]): the Parser DWA is the one
    /// every boundary builds on its own, over random vocabularies, and states were
    /// taken.
    #[test]
    fn states_taken_past_the_first_terminal_are_the_states_built_alone() {
        let schema = r#"{"type": "object", "properties": {
            "a": {"type": ["boolean", "null", "string"]},
            "b": {"type": "array", "items": {"type": ["integer", "boolean", "null"]}},
            "c": {"type": "object", "properties": {"d": {"enum": [true, false, null, "x"]}}}}}"#;
        let lexed = crate::pipeline::lex_schema_source(
            schema,
            "rest.json",
            &crate::frontend::json_schema::SchemaOptions::default(),
        )
        .expect("schema")
        .0;
        let compiled = crate::pipeline::compile_parser(&lexed, 100_000).expect("tables");
        let tables = compiled.tables.view();
        let mut rng = XorShift(0x5e57_0f7e);
        let mut translated = 0;
        for case in 0..4 {
            let count = 600;
            let trie = crate::terminal_dwa::random_trie(
                &mut rng,
                b"abcdxyz\":,{}[]0129.-tfnrulse ",
                count,
                6,
            );
            let build = |sharing| {
                build_parser_dwa_with(
                    tables,
                    &trie,
                    count as usize + 1,
                    count,
                    ParserDwaLimits::default(),
                    &Deadline::unlimited(),
                    &|b| format!("{b:?}"),
                    &|_, _| {},
                    sharing,
                )
                .expect("within limits")
            };
            let (alone, alone_stats) = build(None);
            let every = RestSharing {
                min_terminal_states: 0,
                min_states: 0,
            };
            let (shared, stats) = build(Some(every));
            assert_eq!(alone_stats.states_translated, 0);
            assert!(alone == shared, "case {case}: the Parser DWAs differ");
            translated += stats.states_translated;
        }
        assert!(translated > 0, "no state was taken from another boundary's");
    }
}
