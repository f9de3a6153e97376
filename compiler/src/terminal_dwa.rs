//! Terminal DWA: from one lexer boundary, the terminal sequences each token realises.
//!
//! At a token boundary the matcher holds lexeme *groups*: lexemes in progress that
//! started together, as one interned lexer configuration (stage `lexer_configs`). A
//! token's bytes, fed from such a group, end the lexeme in progress (or not), start
//! fresh lexemes, end those, … exactly as the GLR runtime lexes (DESIGN.md §1: greedy
//! per terminal with one byte of lookahead, lazy terminals, ignore lexemes between
//! lexemes but not first). Each way of doing so is a *word*: the non-ignore terminals
//! the parser must shift, in order, followed by a [`FinalCheck`] on the lexeme the
//! token ends inside. Which words are valid depends only on the parse stack, so
//! tokens with the same set of words form one *token class*, and everything after
//! this stage works on classes.
//!
//! The words from one boundary form a trie over terminals — a deterministic
//! automaton whose states are word prefixes — and each class is a weight on the
//! trie's final edges. The trie is built by walking the token trie once with every
//! lexing thread at once (threads are deterministic per terminal, so they only fork
//! where a lexeme ends and new ones start). End of sequence is one more "token": its
//! word ends the lexeme in progress and then reads end of input.
//!
//! Most of a walk stays inside one lexeme or a few that go on together; those parts
//! are walked once per vocabulary ([`crate::lexeme_bodies`]: a lexeme's body, a
//! group's, or a set of lexemes started within the token), and at the trie's wide
//! nodes a narrow lexeme enters only its live children ([`crate::wide_children`]).
//! Where every thread is on one word, the walk follows a lazily built DFA over such
//! thread sets instead of stepping each thread ([`chain`]): a chunked string's chunks
//! end inside tokens one after another, and each end only makes the word one longer.

mod chain;
mod renamed;
mod runs;

pub use renamed::{Likeness, RenamedDwas};

use crate::budget::{BudgetError, Poll};
use crate::lexeme_bodies::{BodyTable, BodyWalk, ByteRuns, Interned, PreparedTrie};
use crate::wide_children::{insert_range, ByteSet};
use rustc_hash::FxHashMap;
use stackmask_formats::{TablesRef, TrieRef};
use std::sync::{Arc, Mutex, OnceLock};

/// "None" for terminal and node fields.
pub const NONE: u32 = u32::MAX;

/// A set of token classes of one boundary, as a bitset.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ClassSet(pub Vec<u64>);

impl ClassSet {
    /// The empty set over `n` classes.
    pub fn empty(n: usize) -> Self {
        ClassSet(vec![0; n.div_ceil(64)])
    }
    /// Adds class `k`.
    pub fn insert(&mut self, k: u32) {
        self.0[k as usize / 64] |= 1 << (k % 64);
    }
    /// `self |= other`.
    pub fn union_with(&mut self, other: &ClassSet) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= b;
        }
    }
    /// `self |= other & mask`.
    pub fn union_masked(&mut self, other: &ClassSet, mask: &ClassSet) {
        for ((a, b), m) in self.0.iter_mut().zip(&other.0).zip(&mask.0) {
            *a |= b & m;
        }
    }
    /// `self &= !other`.
    pub fn remove_all(&mut self, other: &ClassSet) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a &= !b;
        }
    }
    /// `self &= other`.
    pub fn intersect_with(&mut self, other: &ClassSet) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a &= b;
        }
    }
    /// Whether the two sets share a class.
    pub fn intersects(&self, other: &ClassSet) -> bool {
        self.0.iter().zip(&other.0).any(|(a, b)| a & b != 0)
    }
    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
    /// The classes in the set, in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(i, &w)| {
            (0..64)
                .filter(move |b| w >> b & 1 != 0)
                .map(move |b| (i * 64 + b) as u32)
        })
    }
}

/// What must hold of the parse stack, once a word's terminals are shifted, for the
/// token to be valid there (the lexeme it ends inside must be able to go on).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FinalCheck {
    /// Nothing: the token does not end the lexeme in progress at the boundary, whose
    /// terminals the parser expected where it started (or, for end of sequence, the
    /// parser accepted end of input).
    Always,
    /// The token ends inside a lexeme of this terminal that started within the token:
    /// the parser must expect the terminal.
    Expect(u32),
    /// The token ends inside an ignore lexeme that started within the token: some
    /// terminal must be able to follow it.
    AnyExpected,
    /// The token ends inside an ignore lexeme that greedy lexing lets end only before
    /// some terminals (a `#` comment only before a newline): the parser must expect
    /// one of the terminals in this row of the tables' follow sets.
    ExpectAny(u32),
}

/// Where a Terminal DWA starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Boundary {
    /// A group of lexemes in progress: an interned lexer configuration, of ignore
    /// lexemes or of grammar lexemes.
    Group {
        /// The configuration.
        config: u32,
        /// Whether the lexemes are ignore lexemes.
        ignore: bool,
    },
    /// The start of input: nothing in progress, lexemes start with the first byte.
    Initial,
}

/// The Terminal DWA of one boundary: the words as a DAG with class weights.
///
/// Node 0 is the empty word. A node is reached from its predecessors by a terminal
/// edge (one more terminal shifted) or by an ε edge into a *union* node: lexing
/// threads that reached the same lexeme state at the same token position after
/// different words (`++` as `INC` or as `PLUS PLUS`) share all their continuations, so
/// they continue as one node whose words are the union of theirs. This keeps the
/// automaton linear in the token lengths where the words are exponential.
#[derive(Clone, Debug, PartialEq)]
pub struct TerminalDwa {
    /// The boundary.
    pub boundary: Boundary,
    /// Per node: its successors as `(terminal, node)`, or `(NONE, node)` for an ε
    /// edge into a union node; end of input is the LR table's `eof` terminal.
    pub succ: Vec<Vec<(u32, u32)>>,
    /// Per node: the final checks of the words ending there, with their classes.
    pub finals: Vec<Vec<(FinalCheck, ClassSet)>>,
    /// Per class: its tokens, as ranges of the token trie's `token_ids` (a subtree's
    /// tokens are one range, so a long lexeme's body is a few ranges, not thousands of
    /// ids), and whether EOS is in it (where it behaves like them).
    pub class_tokens: Vec<ClassTokens>,
    /// Per node: the classes with a word through it (at the node or after it).
    pub classes_below: Vec<ClassSet>,
}

/// The tokens of one class (see [`TerminalDwa::class_tokens`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ClassTokens {
    /// Half-open ranges of positions in the trie's `token_ids`, ascending, not adjacent.
    pub ranges: Vec<(u32, u32)>,
    /// Whether end of sequence is in the class.
    pub eos: bool,
}

impl ClassTokens {
    /// Sorts the ranges and joins those that meet: walks from exits and memoized
    /// subtrees add them out of order, and equal classes must have equal ranges.
    fn normalize(&mut self) {
        self.ranges.sort_unstable();
        let mut out: Vec<(u32, u32)> = Vec::with_capacity(self.ranges.len());
        for &r in &self.ranges {
            match out.last_mut() {
                Some(last) if last.1 == r.0 => last.1 = r.1,
                _ => out.push(r),
            }
        }
        self.ranges = out;
    }

    /// Adds the positions `range`, joining it to the last range where they meet.
    fn add(&mut self, range: (u32, u32)) {
        match self.ranges.last_mut() {
            Some(last) if last.1 == range.0 => last.1 = range.1,
            _ => self.ranges.push(range),
        }
    }

    /// The token ids: `token_ids` is the trie's, `eos` the end of sequence token.
    pub fn ids<'t>(&'t self, token_ids: &'t [u32], eos: u32) -> impl Iterator<Item = u32> + 't {
        self.ranges
            .iter()
            .flat_map(move |&(a, b)| token_ids[a as usize..b as usize].iter().copied())
            .chain(self.eos.then_some(eos))
    }
}

impl TerminalDwa {
    /// Number of token classes.
    pub fn num_classes(&self) -> usize {
        self.class_tokens.len()
    }
    /// Number of states (DAG nodes).
    pub fn num_states(&self) -> usize {
        self.succ.len()
    }
}

/// What a lexing thread is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Kind {
    /// A grammar lexeme that was in progress at the boundary.
    Group,
    /// An ignore lexeme that was in progress at the boundary.
    GroupIgnore,
    /// A grammar lexeme started within the token.
    Fresh,
    /// An ignore lexeme started within the token.
    FreshIgnore,
    /// The start of input: lexemes start with the next byte (no ignore lexeme unless
    /// the grammar allows initial skips).
    Start,
}

/// One lexing thread: the word so far and the lexeme in progress (a merged-DFA state).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Thread {
    word: u32,
    kind: Kind,
    state: u32,
}

/// The lexing facts shared by every boundary of a grammar.
pub struct Lexing<'a> {
    tables: TablesRef<'a>,
    /// `follows[a * terminals + b]`: terminal `b` can be shifted right after terminal
    /// `a` on some stack — some state entered by shifting `a` expects `b` (exact in
    /// canonical LR(1), where "expects" means "can be shifted next"). A word with a
    /// pair that cannot follow is valid on no stack, so the walk drops it at once;
    /// without this, a run like `--------` has exponentially many lexings.
    follows: Vec<bool>,
    terminals: usize,
    /// `class_reaches[k][c]`: configuration `c` is reachable from a start
    /// configuration of expected class `k`.
    class_reaches: Vec<Vec<bool>>,
    /// Per expected class: the LR states of that class, in increasing order (a
    /// boundary's heads are a few classes' states; filtering every LR state per
    /// boundary was 5% of a `date-time` schema's compile, at 13,000 boundaries).
    class_states: Vec<Vec<u32>>,
    /// Per first byte: merged-DFA states of grammar terminals that start with it (only
    /// terminals some LR state expects).
    fresh_start: Vec<Vec<u32>>,
    /// Per first byte: merged-DFA states of ignore terminals that start with it.
    ignore_start: Vec<Vec<u32>>,
    /// Subtree walks shared by the boundaries (see [`Walk::first_bytes`]).
    memo: Mutex<SubtreeMemo>,
    /// The token trie, with the lexeme bodies shared by every grammar.
    trie: &'a PreparedTrie,
    /// Per merged-DFA state: its lexeme's body in canonical form, once asked. Asked at
    /// every first byte of every boundary's walk, by every worker: a `OnceLock` read is
    /// one load where a shared map took a lock (1–2% of a small schema's compile).
    bodies: Vec<OnceLock<Option<Arc<Body>>>>,
    /// Per lexer configuration: its body, once asked ([`Lexing::config_body`]).
    config_bodies: Vec<OnceLock<Option<Arc<Body>>>>,
    /// Per merged-DFA state: its step inside its lexeme, once asked
    /// ([`Lexing::lexeme_runs`]). A state's body visits every state it reaches, so
    /// without these a chain's states were stepped once per state before them.
    lexeme_runs: Vec<OnceLock<ByteRuns>>,
    /// Per lexer configuration: its step as a whole ([`Lexing::config_runs`]).
    config_runs: Vec<OnceLock<ByteRuns>>,
    /// Per terminal: its merged-DFA states.
    term_states: Vec<u32>,
    /// Per terminal: an id of its row of `follows`, once asked ([`renamed`]).
    follow_rows: Vec<OnceLock<u32>>,
    /// The ids of the rows of `follows` asked so far.
    follow_row_ids: Mutex<FxHashMap<Box<[bool]>, u32>>,
    /// Per terminal: its states' classes of equal walks, once asked ([`renamed`]).
    walk_classes: Vec<OnceLock<Option<renamed::WalkClasses>>>,
    /// Per set of lexemes started together (sorted): its body, once asked.
    set_bodies: Mutex<FxHashMap<LexemeSet, Option<Arc<SetBody>>>>,
    /// Chain DFAs ([`chain`]) between walks: each walk takes one and puts it back, so
    /// that a worker's boundaries share the transitions worked out so far (a small
    /// boundary's walk needs a few dozen, too few to pay for working them out alone).
    chains: Mutex<Vec<chain::ChainDfa>>,
    /// Whether walks take chain walks where they apply (off only to test them
    /// against the thread-by-thread walk).
    chain_walks: bool,
    /// Root children per memoized run ([`runs`]; 0, only to test them against the
    /// walk child by child: none).
    run_len: usize,
}

/// A lexeme state's body: its interned [`BodyTable`] and, per canonical state, the
/// merged-DFA state it stands for (or, for a configuration's body, the configuration).
struct Body {
    table: Interned,
    states: Vec<u32>,
}

/// The body of lexemes that started together within a token, all on one word (a
/// chunked string's middle chunk and tail, after a chunk ends inside the token): they
/// step as a set while none ends and the set's final checks stay those it started
/// with (a lexeme may die where another with the same check goes on), so a token that
/// ends inside has the same final checks in every state. Such a walk went on through
/// most of the trie at every exit of a chunked string's boundaries (3–6 ms a
/// boundary); as a body it is walked once per vocabulary.
struct SetBody {
    table: Interned,
    /// Per canonical state: the lexemes in progress.
    sets: Vec<LexemeSet>,
    /// The final checks of a token that ends inside the body.
    checks: Box<[FinalCheck]>,
}

/// Lexemes in progress on one word, as sorted (kind, merged-DFA state) pairs.
type LexemeSet = Box<[(Kind, u32)]>;

impl SetBody {
    /// Fewest trie nodes in a walk's subtree (its root included) for a set body to be
    /// tried there: a small subtree is cheaper to walk than to look up.
    const MIN_NODES: usize = 128;
    /// Most sets a set body steps through: a chunked string's chunk and tail in
    /// lockstep, a state per byte of each of 8 characters, are about 60; its walk
    /// spares thousands of trie nodes at every exit, so a larger table pays.
    const MAX_STATES: usize = 256;
}

/// What a [`Body`]'s states are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BodyOf {
    /// Merged-DFA states of one lexeme.
    Lexeme,
    /// Lexer configurations of a group's lexemes, all on the empty word.
    Config,
}

impl<'a> Lexing<'a> {
    /// Prepares the per-byte start states; Terminal DWAs are built over `trie`.
    pub fn new(tables: TablesRef<'a>, trie: &'a PreparedTrie) -> Self {
        let terminals = tables.dfa_start.len() as u32;
        let used: Vec<u32> = (0..terminals)
            .filter(|&t| (0..tables.lr.num_states).any(|s| tables.expects(s, t)))
            .collect();
        let starts = |ts: &[u32], b: u8| -> Vec<u32> {
            ts.iter()
                .map(|&t| tables.dfa_next(tables.dfa_start[t as usize], b))
                .filter(|&g| tables.dfa_live(g))
                .collect()
        };
        let n = terminals as usize;
        let mut follows = vec![false; n * n];
        for (_, a, cell) in tables.lr.action_cells().filter(|&(_, a, _)| a < terminals) {
            for &code in cell {
                if let Some(stackmask_formats::Action::Shift(to)) =
                    stackmask_formats::Action::decode(code)
                {
                    for b in 0..terminals {
                        if tables.expects(to, b) {
                            follows[a as usize * n + b as usize] = true;
                        }
                    }
                }
            }
        }
        let classes = tables.class_start.len() / 256;
        let successors = config_successors(&tables);
        let class_reaches = (0..classes)
            .map(|k| {
                reachable_configs(
                    &successors,
                    &mut tables.class_start[k * 256..(k + 1) * 256].iter().copied(),
                )
            })
            .collect();
        let mut class_states: Vec<Vec<u32>> = vec![Vec::new(); classes];
        for s in 0..tables.lr.num_states {
            class_states[tables.state_class[s as usize] as usize].push(s);
        }
        let mut term_states = vec![0u32; n];
        for &term in tables.dfa_term {
            if let Some(c) = term_states.get_mut(term as usize) {
                *c += 1;
            }
        }
        Lexing {
            term_states,
            follow_rows: unset(n),
            follow_row_ids: Mutex::default(),
            walk_classes: unset(n),
            tables,
            follows,
            terminals: n,
            class_reaches,
            class_states,
            fresh_start: (0..=255u8).map(|b| starts(&used, b)).collect(),
            ignore_start: (0..=255u8).map(|b| starts(tables.ignore, b)).collect(),
            memo: Mutex::default(),
            trie,
            bodies: unset(tables.dfa_term.len()),
            config_bodies: unset(tables.conf_flags.len()),
            lexeme_runs: unset(tables.dfa_term.len()),
            config_runs: unset(tables.conf_flags.len()),
            set_bodies: Mutex::default(),
            chains: Mutex::default(),
            chain_walks: true,
            run_len: runs::RUN_LEN,
        }
    }

    /// Drops what the boundaries' walks kept (bodies, memoized subtrees: many small
    /// allocations) on a rayon pool thread, off the caller's sequential path.
    pub fn drop_on_pool(self) {
        let kept = (
            self.memo,
            self.bodies,
            self.config_bodies,
            self.lexeme_runs,
            self.config_runs,
            self.set_bodies,
            self.chains,
        );
        rayon::spawn(move || drop(kept));
    }

    /// Every boundary the runtime can be at between tokens: the start of input, and
    /// every configuration reachable from a start configuration of grammar lexemes
    /// (for groups of grammar lexemes) or of ignore lexemes (for ignore groups).
    pub fn boundaries(&self) -> Vec<Boundary> {
        let t = &self.tables;
        let n = t.conf_flags.len();
        let ignore = reachable_configs(&config_successors(t), &mut t.ignore_start.iter().copied());
        let mut out = vec![Boundary::Initial];
        for c in 0..n as u32 {
            if self.class_reaches.iter().any(|r| r[c as usize]) {
                out.push(Boundary::Group {
                    config: c,
                    ignore: false,
                });
            }
            if ignore[c as usize] {
                out.push(Boundary::Group {
                    config: c,
                    ignore: true,
                });
            }
        }
        out
    }

    /// The LR states a group of `boundary` can have as heads, in increasing order:
    /// the states whose expected class starts a configuration from which `boundary`'s
    /// is reachable; the start state for the start of input; every state for ignore
    /// groups (their heads are a whole frontier).
    pub fn head_states(&self, boundary: Boundary) -> Vec<u32> {
        let t = &self.tables;
        match boundary {
            Boundary::Initial => vec![t.lr.start_state],
            Boundary::Group { ignore: true, .. } => (0..t.lr.num_states).collect(),
            Boundary::Group {
                config,
                ignore: false,
            } => {
                let mut heads: Vec<u32> = (self.class_reaches.iter().zip(&self.class_states))
                    .filter(|(reaches, _)| reaches[config as usize])
                    .flat_map(|(_, states)| states.iter().copied())
                    .collect();
                heads.sort_unstable();
                heads
            }
        }
    }

    /// Builds the Terminal DWA of `boundary` over the token trie (end of sequence is
    /// [`ClassTokens::eos`]). Fails past `max_states` nodes, or when `poll` (ticked per
    /// trie node) finds the compile's budget spent.
    pub fn build(
        &self,
        boundary: Boundary,
        max_states: usize,
        poll: &mut Poll<'_>,
    ) -> Result<TerminalDwa, TerminalDwaError> {
        poll.check()?;
        let t = &self.tables;
        let eof = t.lr.eof();
        let root: Vec<Thread> = match boundary {
            Boundary::Initial => vec![Thread {
                word: 0,
                kind: Kind::Start,
                state: 0,
            }],
            Boundary::Group { config, ignore } => t
                .conf_elems(config)
                .iter()
                .map(|&state| Thread {
                    word: 0,
                    kind: if ignore {
                        Kind::GroupIgnore
                    } else {
                        Kind::Group
                    },
                    state,
                })
                .collect(),
        };
        let group = match boundary {
            Boundary::Group {
                config,
                ignore: false,
            } => Some(config),
            _ => None,
        };
        let mut walk = Walk::new(self, max_states, poll);
        walk.first_bytes(&root, group)?;
        let Walk {
            mut words,
            mut classes,
            scratch,
            ..
        } = walk;
        (self.chains.lock())
            .unwrap_or_else(|e| e.into_inner())
            .push(scratch.chain);
        let mut outcome: Vec<(u32, FinalCheck)> = Vec::new();

        // End of sequence: the grammar lexeme in progress ends, then end of input.
        outcome.clear();
        match boundary {
            Boundary::Initial => outcome.push((words.child(0, eof), FinalCheck::Always)),
            Boundary::Group {
                config,
                ignore: false,
            } => {
                for &g in t.conf_elems(config) {
                    let term = t.dfa_term[g as usize];
                    if t.may_end(term, g, None) {
                        let w = words.child(0, term);
                        outcome.push((words.child(w, eof), FinalCheck::Always));
                    }
                }
            }
            Boundary::Group { ignore: true, .. } => {}
        }
        if !outcome.is_empty() {
            outcome.sort_unstable();
            outcome.dedup();
            let k = classes.class_of(&outcome);
            classes.tokens[k as usize].eos = true;
        }

        let n = words.len();
        let k = classes.tokens.len();
        let mut finals: Vec<Vec<(FinalCheck, ClassSet)>> = vec![Vec::new(); n];
        let mut classes_below = vec![ClassSet::empty(k); n];
        // Where `(word, check)` is in `finals[word]`: a word can end with a check per
        // terminal (hundreds in a large schema), too many to search.
        let ends = classes.outcomes.iter().map(Vec::len).sum();
        let mut final_at: FxHashMap<(u32, FinalCheck), usize> =
            FxHashMap::with_capacity_and_hasher(ends, Default::default());
        for (class, outcomes) in classes.outcomes.iter().enumerate() {
            for &(w, check) in outcomes {
                let f = &mut finals[w as usize];
                let at = *final_at.entry((w, check)).or_insert_with(|| {
                    f.push((check, ClassSet::empty(k)));
                    f.len() - 1
                });
                f[at].1.insert(class as u32);
                classes_below[w as usize].insert(class as u32);
            }
        }
        let mut succ = vec![Vec::new(); n];
        for w in 1..n {
            for &(label, from) in &words.preds[w] {
                succ[from as usize].push((label, w as u32));
            }
        }
        // A node is created after its predecessors: one backward pass sums what
        // follows each node.
        for w in (0..n).rev() {
            for &(_, to) in &succ[w] {
                let (lo, hi) = classes_below.split_at_mut(to as usize);
                lo[w].union_with(&hi[0]);
            }
        }
        for c in &mut succ {
            c.sort_unstable();
        }
        for f in &mut finals {
            f.sort_unstable_by_key(|(c, _)| *c);
        }
        let mut class_tokens = classes.tokens;
        for tokens in &mut class_tokens {
            tokens.normalize();
        }
        Ok(TerminalDwa {
            boundary,
            succ,
            finals,
            class_tokens,
            classes_below,
        })
    }

    /// The body of merged-DFA state `state`'s lexeme, if it is small enough to put in
    /// canonical form (see [`crate::lexeme_bodies`]).
    fn body(&self, state: u32) -> Option<Arc<Body>> {
        self.bodies[state as usize]
            .get_or_init(|| self.make_body(state))
            .clone()
    }

    /// The body of lexer configuration `config` stepped as a whole: it ends where any
    /// of its lexemes may end, and goes on to the configuration after the byte
    /// otherwise. A chunked string's boundaries hold two lexemes (the middle chunk and
    /// the tail), and walking their trie with two threads cost 20–30 ms at each
    /// character boundary.
    fn config_body(&self, config: u32) -> Option<Arc<Body>> {
        self.config_bodies[config as usize]
            .get_or_init(|| {
                let too_big = |c: u32| matches!(self.config_bodies[c as usize].get(), Some(None));
                self.intern_body(BodyTable::canonical_of_runs(
                    config,
                    |c| self.config_runs(c),
                    too_big,
                    SetBody::MAX_STATES,
                ))
            })
            .clone()
    }

    /// Configuration `config`'s byte step as a whole, for its body: it ends where any
    /// of its lexemes may end, and goes on to the configuration after the byte
    /// otherwise.
    fn config_runs(&self, config: u32) -> &ByteRuns {
        self.config_runs[config as usize].get_or_init(|| {
            let t = &self.tables;
            ByteRuns::of(|b| {
                if t.conf_elems(config)
                    .iter()
                    .any(|&g| t.may_end(t.dfa_term[g as usize], g, Some(b)))
                {
                    BodyTable::END
                } else {
                    match t.conf_step(config, b) {
                        0 => BodyTable::DEAD,
                        next => next,
                    }
                }
            })
        })
    }

    /// Merged-DFA state `state`'s byte step for a thread that stays in its lexeme, as
    /// [`Lexing::step`] makes it (a lexeme's transitions stay among its own states).
    fn lexeme_runs(&self, state: u32) -> &ByteRuns {
        self.lexeme_runs[state as usize]
            .get_or_init(|| ByteRuns::of(|b| self.lexeme_step(state, b)))
    }

    /// Merged-DFA state `state`'s step by byte `b` inside its lexeme: [`BodyTable::END`]
    /// where the lexeme ends before `b`, [`BodyTable::DEAD`] where it dies, else the
    /// next state.
    fn lexeme_step(&self, state: u32, b: u8) -> u32 {
        let t = &self.tables;
        if t.may_end(t.dfa_term[state as usize], state, Some(b)) {
            BodyTable::END
        } else {
            let next = t.dfa_next(state, b);
            if t.dfa_live(next) {
                next
            } else {
                BodyTable::DEAD
            }
        }
    }

    /// [`Lexing::body`], worked out.
    fn make_body(&self, state: u32) -> Option<Arc<Body>> {
        let term = self.tables.dfa_term[state as usize];
        // A narrow lexeme's walk is cheap (few trie children match). Its bodies pay
        // off when they recur, schema after schema (a property name's rest, a number);
        // in a many-state narrow lexeme (`date-time`: 11,000 states) nearly every state
        // has its own, and interning and walking them cost 5× the plain walks (mask
        // path 850 → 166 ms on such a schema).
        let states = self.term_states[term as usize];
        let wide = self.lexeme_runs(state).width() >= BodyTable::MIN_WIDTH;
        if states > BodyTable::MANY_STATES && !wide {
            return None;
        }
        // A wide state of a counted lexeme (`[a-zA-Z0-9_-]{162}` inside a string:
        // 189 states) reaches a state per count and per escape or UTF-8 byte within
        // the body's depth, past `MAX_STATES`; without a body each count walked the
        // whole trie (188 boundaries of 1.5–3.5 ms). With one, the counts above the
        // depth share one cut table and its walk.
        let max_states = if wide && states as usize > BodyTable::MAX_STATES {
            BodyTable::MAX_COUNTED_STATES
        } else {
            BodyTable::MAX_STATES
        };
        let too_big = |s: u32| matches!(self.bodies[s as usize].get(), Some(None));
        self.intern_body(BodyTable::canonical_of_runs(
            state,
            |s| self.lexeme_runs(s),
            too_big,
            max_states,
        ))
    }

    /// A canonical form as a [`Body`], its table interned in the vocabulary's store.
    fn intern_body(&self, canonical: Option<(BodyTable, Vec<u32>)>) -> Option<Arc<Body>> {
        canonical.map(|(table, states)| {
            Arc::new(Body {
                table: self.trie.intern(table),
                states,
            })
        })
    }

    /// The [`SetBody`] of lexemes `start` (sorted), once per grammar.
    fn set_body(&self, start: &[(Kind, u32)]) -> Option<Arc<SetBody>> {
        let lock = || self.set_bodies.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(body) = lock().get(start) {
            return body.clone();
        }
        let made = self.make_set_body(start);
        lock().insert(start.into(), made.clone());
        made
    }

    /// [`Lexing::set_body`], worked out: the sets the lexemes step through while none
    /// ends and the final checks stay those of `start`, breadth first, then their
    /// canonical form; `None` past [`SetBody::MAX_STATES`] sets.
    fn make_set_body(&self, start: &[(Kind, u32)]) -> Option<Arc<SetBody>> {
        let t = &self.tables;
        let checks = self.checks_of(start);
        let mut sets: Vec<LexemeSet> = vec![start.into()];
        let mut ids: FxHashMap<LexemeSet, u32> = FxHashMap::default();
        ids.insert(start.into(), 0);
        let mut runs: Vec<ByteRuns> = Vec::new();
        // Per set: the fewest bytes that reach it (the canonical form's depth, so that
        // a set it cuts is not explored: a counted lexeme's sets stop at the depth).
        let mut depth: Vec<u32> = vec![0];
        let mut next: Vec<(Kind, u32)> = Vec::new();
        let mut codes = [0u32; 256];
        while runs.len() < sets.len() {
            if sets.len() > SetBody::MAX_STATES {
                return None;
            }
            let i = runs.len();
            let set = sets[i].clone();
            for b in 0..=255u8 {
                codes[b as usize] = if set
                    .iter()
                    .any(|&(_, s)| t.may_end(t.dfa_term[s as usize], s, Some(b)))
                {
                    BodyTable::END
                } else {
                    next.clear();
                    next.extend(set.iter().filter_map(|&(kind, s)| {
                        let n = t.dfa_next(s, b);
                        t.dfa_live(n).then_some((kind, n))
                    }));
                    next.sort_unstable();
                    next.dedup();
                    if next.is_empty() {
                        BodyTable::DEAD
                    } else if self.checks_of(&next) != checks {
                        // A lexeme died (or an ignore lexeme's follow limit
                        // changed): tokens ending past here have other checks, so
                        // the caller steps the threads from here on.
                        BodyTable::END
                    } else if let Some(&id) = ids.get(next.as_slice()) {
                        id
                    } else if depth[i] + 1 >= BodyTable::MAX_DEPTH {
                        // Past the depth the canonical form keeps: it cuts here.
                        BodyTable::CUT
                    } else {
                        let fresh = sets.len() as u32;
                        ids.insert(next.as_slice().into(), fresh);
                        sets.push(next.as_slice().into());
                        depth.push(depth[i] + 1);
                        fresh
                    }
                };
            }
            runs.push(ByteRuns::of(|b| codes[b as usize]));
        }
        let (table, states) =
            BodyTable::canonical_of_runs(0, |s| &runs[s as usize], |_| false, SetBody::MAX_STATES)?;
        Some(Arc::new(SetBody {
            table: self.trie.intern(table),
            sets: states.iter().map(|&s| sets[s as usize].clone()).collect(),
            checks: checks.into(),
        }))
    }

    /// Adds the tokens ending at a trie node whose threads are `threads` to the class of
    /// their outcome (`outcome` is scratch space).
    fn add_tokens(
        &self,
        trie: TrieRef<'_>,
        node: usize,
        threads: &[Thread],
        classes: &mut ClassInterner,
        outcome: &mut Vec<(u32, FinalCheck)>,
    ) {
        let n = &trie.nodes[node];
        if n.num_tokens == 0 {
            return;
        }
        let tokens = (n.first_token, n.first_token + n.num_tokens);
        outcome.clear();
        outcome.extend(threads.iter().map(|&th| (th.word, self.check_of(th))));
        outcome.sort_unstable();
        outcome.dedup();
        classes.add(outcome, tokens);
    }

    /// What must hold of the stack for a token that ends with lexemes `lexemes` in
    /// progress, all on one word ([`Lexing::check_of`] each), sorted and deduplicated.
    fn checks_of(&self, lexemes: &[(Kind, u32)]) -> Vec<FinalCheck> {
        let mut checks: Vec<FinalCheck> = (lexemes.iter())
            .map(|&(kind, state)| {
                self.check_of(Thread {
                    word: 0,
                    kind,
                    state,
                })
            })
            .collect();
        checks.sort_unstable();
        checks.dedup();
        checks
    }

    /// What must hold of the stack for a token that ends with thread `th` alive.
    fn check_of(&self, th: Thread) -> FinalCheck {
        let t = &self.tables;
        let limit = t.ignore_follow.get(th.state as usize).copied();
        match (th.kind, limit) {
            (Kind::Group, _) => FinalCheck::Always,
            (Kind::Fresh, _) => FinalCheck::Expect(t.dfa_term[th.state as usize]),
            // Where greedy lexing limits what may follow an ignore lexeme, the limit
            // is checked on every token that ends inside one, also one that began
            // before the token (its followers shrink as it grows); elsewhere an
            // ignore group at a boundary had a follower when it started and keeps it.
            (Kind::GroupIgnore | Kind::FreshIgnore, Some(row))
                if row != stackmask_formats::parser::NO_FOLLOW_LIMIT =>
            {
                FinalCheck::ExpectAny(row)
            }
            (Kind::GroupIgnore, _) => FinalCheck::Always,
            (Kind::FreshIgnore, _) => FinalCheck::AnyExpected,
            (Kind::Start, _) => unreachable!("a start thread always consumes a byte"),
        }
    }

    /// The bytes lexemes `lexemes` can go on with (a byte that is not
    /// [`BodyTable::DEAD`] in a lexeme state's byte runs either goes on in the lexeme
    /// or ends it, and then lexemes starting with it may follow); `None` at the start
    /// of input, where any byte may start a lexeme.
    fn live_bytes(&self, lexemes: impl Iterator<Item = (Kind, u32)>) -> Option<ByteSet> {
        let mut live: ByteSet = [0; 4];
        for (kind, state) in lexemes {
            if kind == Kind::Start {
                return None;
            }
            self.add_bytes_where(state, |code| code != BodyTable::DEAD, &mut live);
        }
        Some(live)
    }

    /// Adds to `set` the bytes whose code in merged-DFA state `state`'s byte runs
    /// ([`Lexing::lexeme_runs`]) satisfies `keep`.
    fn add_bytes_where(&self, state: u32, keep: impl Fn(u32) -> bool, set: &mut ByteSet) {
        let mut from = 0u8;
        for &(last, code) in self.lexeme_runs(state).as_ref() {
            if keep(code) {
                insert_range(set, from, last);
            }
            from = last.wrapping_add(1);
        }
    }

    /// The bytes on which one of `threads` ends a grammar lexeme ([`Lexing::step`]
    /// makes a word for each).
    fn end_bytes(&self, threads: &[Thread]) -> ByteSet {
        let mut ends: ByteSet = [0; 4];
        for th in threads
            .iter()
            .filter(|th| matches!(th.kind, Kind::Group | Kind::Fresh))
        {
            self.add_bytes_where(th.state, |code| code == BodyTable::END, &mut ends);
        }
        ends
    }

    /// One byte for one thread, as the GLR runtime lexes it.
    fn step(&self, th: Thread, b: u8, words: &mut WordDag, out: &mut Vec<Thread>) {
        let t = &self.tables;
        if th.kind == Kind::Start {
            let last = words.last[th.word as usize];
            self.start_lexemes(th.word, last, b, t.allow_initial_skip, out);
            return;
        }
        let term = t.dfa_term[th.state as usize];
        if t.may_end(term, th.state, Some(b)) {
            let word = match th.kind {
                Kind::Group | Kind::Fresh => words.child(th.word, term),
                _ => th.word,
            };
            self.start_lexemes(word, words.last[word as usize], b, true, out);
        } else {
            let next = t.dfa_next(th.state, b);
            if t.dfa_live(next) {
                out.push(Thread { state: next, ..th });
            }
        }
    }

    /// Lexemes starting with byte `b` after `word`, whose last terminal is `last`
    /// (only terminals that can follow it).
    fn start_lexemes(&self, word: u32, last: u32, b: u8, with_ignore: bool, out: &mut Vec<Thread>) {
        for &state in &self.fresh_start[b as usize] {
            let x = self.tables.dfa_term[state as usize];
            if last == NONE || self.follows[last as usize * self.terminals + x as usize] {
                out.push(Thread {
                    word,
                    kind: Kind::Fresh,
                    state,
                });
            }
        }
        if with_ignore {
            out.extend(self.ignore_start[b as usize].iter().map(|&state| Thread {
                word,
                kind: Kind::FreshIgnore,
                state,
            }));
        }
    }
}

/// One boundary's walk over the token trie: the grammar's lexing facts, and the words
/// and token classes found so far. Every part of the walk reads the same facts and adds
/// to the same words, checked against the same limits, so they travel together.
struct Walk<'w, 'a, 'p> {
    lexing: &'w Lexing<'a>,
    trie: TrieRef<'w>,
    words: WordDag,
    classes: ClassInterner,
    /// Most word nodes before the walk fails ([`TerminalDwaLimitError`]).
    max_states: usize,
    poll: &'w mut Poll<'p>,
    scratch: WalkScratch,
    /// The class of each (word, chain state) pair the chain walk has added tokens to.
    chain_classes: FxHashMap<(u32, u32), u32>,
    /// The last pair looked up there and its class: sibling tokens (`20`, `21`, …)
    /// mostly end in one chain state on one word.
    chain_last: ((u32, u32), u32),
}

impl<'w, 'a, 'p> Walk<'w, 'a, 'p> {
    /// A walk with nothing found yet.
    fn new(lexing: &'w Lexing<'a>, max_states: usize, poll: &'w mut Poll<'p>) -> Self {
        Walk {
            lexing,
            trie: lexing.trie.trie().view(),
            words: WordDag::new(),
            classes: ClassInterner::default(),
            max_states,
            poll,
            scratch: WalkScratch {
                chain: (lexing.chains.lock())
                    .unwrap_or_else(|e| e.into_inner())
                    .pop()
                    .unwrap_or_default(),
                ..WalkScratch::default()
            },
            chain_classes: FxHashMap::default(),
            chain_last: ((NONE, NONE), 0),
        }
    }

    /// Fails once the words outgrow [`Walk::max_states`].
    fn check_size(&self) -> Result<(), TerminalDwaError> {
        if self.words.len() > self.max_states {
            return Err(TerminalDwaLimitError {
                limit: self.max_states,
            }
            .into());
        }
        Ok(())
    }

    /// Walks the whole trie from the boundary's threads `threads` (the elements of
    /// configuration `group` for a group of grammar lexemes), one first byte (a child
    /// of the root) at a time. Where, after that byte, one grammar lexeme is in
    /// progress, or the group's lexemes all go on, the part of its subtree inside
    /// them comes from the vocabulary's shared walks ([`Walk::by_body`]). Where no
    /// lexeme has ended yet (every thread still on the empty word), what its subtree
    /// yields depends only on the threads' lexeme states, not on the boundary: it is
    /// walked once per grammar and replayed ([`Walk::subtree`]), and so are runs of
    /// such first bytes that recur from boundary to boundary ([`runs`]). Boundaries
    /// inside long lexemes (strings, names) mostly differ in their first bytes only.
    /// (Memoizing deeper levels too was measured slower: their subtrees are small and
    /// the keys many. Where lexemes that started within the token go on through a
    /// large subtree, [`SetBody`] shares that walk per vocabulary instead.)
    fn first_bytes(
        &mut self,
        threads: &[Thread],
        group: Option<u32>,
    ) -> Result<(), TerminalDwaError> {
        let lexing = self.lexing;
        let trie = self.trie;
        let mut next: Vec<Thread> = Vec::new();
        // Inside a narrow lexeme (digits, a `date-time`) only a few first bytes go on:
        // those children of the root alone, where the root's children are indexed
        // (the others would step to nothing).
        let live = lexing.live_bytes(threads.iter().map(|th| (th.kind, th.state)));
        let wide = lexing.trie.wide_children();
        let children: Vec<usize> = match live.and_then(|live| wide.select(0, &live)) {
            Some(selected) => selected.collect(),
            None => {
                let len = trie.nodes.len();
                let first = (len > 1).then_some(1);
                std::iter::successors(first, |&c| Some(trie.subtree_end(c)).filter(|&n| n < len))
                    .collect()
            }
        };
        // Runs of first bytes after which every thread is still on the empty word,
        // walked as one: their subtrees yield the same whatever the boundary. A byte
        // that ends a grammar lexeme makes a word when it is stepped, so the run
        // before it is walked first (the words keep the order of a walk byte by byte).
        // A boundary with fewer first bytes than a run (inside a narrow lexeme: digits,
        // a `date-time`'s 11,000 boundaries) walks each on its own, without the runs'
        // bookkeeping.
        let runs = children.len() >= lexing.run_len && lexing.run_len > 0;
        let ends = if runs {
            lexing.end_bytes(threads)
        } else {
            [0; 4]
        };
        let mut run: Vec<(u32, u32, LexemeSet)> = Vec::new();
        for c in children {
            self.poll.tick()?;
            next.clear();
            let byte = trie.nodes[c].byte;
            if ends[byte as usize / 64] >> (byte % 64) & 1 != 0 {
                self.walk_run(&run)?;
                run.clear();
            }
            for &th in threads {
                lexing.step(th, byte, &mut self.words, &mut next);
            }
            if next.is_empty() {
                continue;
            }
            self.words.merge(&mut next);
            self.check_size()?;
            // The configuration after the byte, for a group whose lexemes all go on.
            let after = group.map_or(NONE, |config| lexing.tables.conf_step(config, byte));
            if !runs {
                self.first_byte(c, &next, after)?;
            } else if next.iter().all(|th| th.word == 0) {
                let lexemes = next.iter().map(|th| (th.kind, th.state)).collect();
                run.push((c as u32, after, lexemes));
                if run.len() == lexing.run_len {
                    self.walk_run(&run)?;
                    run.clear();
                }
            } else {
                self.walk_run(&run)?;
                run.clear();
                self.first_byte(c, &next, after)?;
            }
        }
        self.walk_run(&run)
    }

    /// Walks the subtree of root child `c` from `next`, its threads after its byte;
    /// `after` is the configuration after the byte for a group of grammar lexemes
    /// ([`NONE`] for other boundaries).
    fn first_byte(
        &mut self,
        c: usize,
        next: &[Thread],
        after: u32,
    ) -> Result<(), TerminalDwaError> {
        let lexing = self.lexing;
        let body = match next {
            [th] if matches!(th.kind, Kind::Group | Kind::Fresh) => {
                lexing.body(th.state).map(|b| (b, BodyOf::Lexeme))
            }
            // Every lexeme of the group went on (none ended): they are the elements
            // of the configuration after the byte.
            _ if after != NONE && next.iter().all(|th| th.kind == Kind::Group && th.word == 0) => {
                lexing.config_body(after).map(|b| (b, BodyOf::Config))
            }
            _ => None,
        };
        if let Some((body, of)) = body {
            self.by_body(c, next[0], &body, of)?;
        } else if next.iter().all(|th| th.word == 0) {
            let sub = self.subtree(c, next)?;
            sub.replay(&mut self.words, &mut self.classes);
            self.check_size()?;
        } else {
            self.walk(c, next)?;
        }
        Ok(())
    }

    /// Walks the subtree of trie node `root` for one thread `th` (after the node's
    /// byte) of a grammar lexeme with body `body`: the part inside the lexeme from the
    /// vocabulary's shared walks, then on from every exit (an end of the lexeme, or a
    /// token going on past the depth the body keeps) as [`Walk::walk`] does. With a
    /// configuration's body (`of`), `th` stands for every lexeme of the group (on the
    /// empty word).
    fn by_body(
        &mut self,
        root: usize,
        th: Thread,
        body: &Body,
        of: BodyOf,
    ) -> Result<(), TerminalDwaError> {
        let lexing = self.lexing;
        let body_walk = lexing.trie.walk(root, &body.table);
        let check = match th.kind {
            Kind::Fresh => FinalCheck::Expect(lexing.tables.dfa_term[th.state as usize]),
            _ => FinalCheck::Always,
        };
        let step_at = |before: u32, byte: u8, words: &mut WordDag, next: &mut Vec<Thread>| {
            let state = body.states[before as usize];
            match of {
                BodyOf::Lexeme => lexing.step(Thread { state, ..th }, byte, words, next),
                BodyOf::Config => {
                    for &g in lexing.tables.conf_elems(state) {
                        lexing.step(Thread { state: g, ..th }, byte, words, next);
                    }
                }
            }
        };
        self.on_from_body(&body_walk, &[(th.word, check)], step_at)
    }

    /// Adds a body walk to the boundary's: its tokens with `outcome` (the words and
    /// checks of a token that ends inside the body), then on from its exits (trie nodes
    /// whose byte ends a lexeme or goes on past the body's depth, each with the body's
    /// state before it), where `step_at(before, byte, …)` steps the threads the body
    /// stood for by the exit's byte and the exit's subtree is walked from them.
    fn on_from_body(
        &mut self,
        body_walk: &BodyWalk,
        outcome: &[(u32, FinalCheck)],
        step_at: impl Fn(u32, u8, &mut WordDag, &mut Vec<Thread>),
    ) -> Result<(), TerminalDwaError> {
        for &range in &body_walk.tokens {
            self.classes.add(outcome, range);
        }
        let mut next = Vec::new();
        for &(node, before) in &body_walk.exits {
            self.poll.tick()?;
            next.clear();
            step_at(
                before,
                self.trie.nodes[node as usize].byte,
                &mut self.words,
                &mut next,
            );
            if next.is_empty() {
                continue;
            }
            self.words.merge(&mut next);
            self.check_size()?;
            self.walk(node as usize, &next)?;
        }
        Ok(())
    }

    /// The subtree of trie node `from` walked from `threads` (all on the empty word),
    /// on a word DAG of its own: from the memo, or walked now and memoized while the
    /// memo is under its size budget. Equal to walking it in place (`replay`).
    fn subtree(
        &mut self,
        from: usize,
        threads: &[Thread],
    ) -> Result<Arc<Subtree>, TerminalDwaError> {
        let lexing = self.lexing;
        let key: SubtreeKey = (
            from as u32,
            threads.iter().map(|th| (th.kind, th.state)).collect(),
        );
        if let Some(sub) = lexing.memo.lock().expect("no walk panicked").map.get(&key) {
            return Ok(sub.clone());
        }
        let sub = self.on_own_dag(|own| own.walk(from, threads))?;
        let mut memo = lexing.memo.lock().expect("no walk panicked");
        if memo.fits(&sub) {
            memo.map.insert(key, sub.clone());
        }
        Ok(sub)
    }

    /// What `walk` adds, done on a word DAG and classes of their own (whose node 0
    /// stands for this walk's empty word), for a memo to keep and [`Subtree::replay`].
    fn on_own_dag(
        &mut self,
        walk: impl FnOnce(&mut Walk<'_, 'a, '_>) -> Result<(), TerminalDwaError>,
    ) -> Result<Arc<Subtree>, TerminalDwaError> {
        let mut own = Walk {
            lexing: self.lexing,
            trie: self.trie,
            words: WordDag::new(),
            classes: ClassInterner::default(),
            max_states: self.max_states,
            poll: &mut *self.poll,
            scratch: std::mem::take(&mut self.scratch),
            chain_classes: FxHashMap::default(),
            chain_last: ((NONE, NONE), 0),
        };
        let walked = walk(&mut own);
        let Walk {
            words,
            classes,
            scratch,
            ..
        } = own;
        self.scratch = scratch;
        walked?;
        Ok(Arc::new(Subtree {
            preds: words.preds,
            classes: classes.outcomes.into_iter().zip(classes.tokens).collect(),
        }))
    }

    /// Walks the subtree of trie node `from` by a [`SetBody`] where one applies: the
    /// threads are lexemes that started within the token, all on one word, and the
    /// subtree is large enough to be worth it. `false`, with nothing added, otherwise.
    fn by_set_body(&mut self, from: usize, threads: &[Thread]) -> Result<bool, TerminalDwaError> {
        let lexing = self.lexing;
        let Some(&Thread { word, .. }) = threads.first() else {
            return Ok(false);
        };
        if (self.trie.nodes[from].subtree_size as usize) < SetBody::MIN_NODES
            || !threads
                .iter()
                .all(|th| th.word == word && matches!(th.kind, Kind::Fresh | Kind::FreshIgnore))
        {
            return Ok(false);
        }
        let key: Vec<(Kind, u32)> = threads.iter().map(|th| (th.kind, th.state)).collect();
        let Some(body) = lexing.set_body(&key) else {
            return Ok(false);
        };
        let body_walk = lexing.trie.walk(from, &body.table);
        let outcome: Vec<(u32, FinalCheck)> = body.checks.iter().map(|&c| (word, c)).collect();
        let step_at = |before: u32, byte: u8, words: &mut WordDag, next: &mut Vec<Thread>| {
            for &(kind, state) in body.sets[before as usize].iter() {
                lexing.step(Thread { word, kind, state }, byte, words, next);
            }
        };
        self.on_from_body(&body_walk, &outcome, step_at)?;
        Ok(true)
    }

    /// Walks the subtree of trie node `from`, whose threads (after its byte) are
    /// `threads`: the tokens at `from` and below it.
    fn walk(&mut self, from: usize, threads: &[Thread]) -> Result<(), TerminalDwaError> {
        if self.by_set_body(from, threads)? || self.by_chain(from, threads)? {
            return Ok(());
        }
        let d = self.trie.nodes[from].depth as usize;
        let WalkScratch {
            levels, outcome, ..
        } = &mut self.scratch;
        if levels.len() <= d {
            levels.resize_with(d + 1, Vec::new);
        }
        levels[d].clear();
        levels[d].extend_from_slice(threads);
        self.lexing
            .add_tokens(self.trie, from, &levels[d], &mut self.classes, outcome);
        self.below::<false>(from)
    }

    /// Walks the subtree below trie node `root`, whose threads are
    /// `scratch.levels[depth]` (with `CHAIN`, whose chain state and word are
    /// `scratch.chain.path[depth]`, see [`chain`]): depth first over the flat token
    /// trie, where level `d` holds the threads `d` bytes deep (a level is written
    /// before it is read: its node's parent is the last node entered one level up). At
    /// a wide node only a few of whose bytes go on, only those children are entered
    /// ([`crate::wide_children::WideChildren::select`]), in the same order.
    fn below<const CHAIN: bool>(&mut self, root: usize) -> Result<(), TerminalDwaError> {
        if self.live_children_below::<CHAIN>(root)? {
            return Ok(());
        }
        let end = self.trie.subtree_end(root);
        let mut i = root + 1;
        while i < end {
            if !self.enter_by::<CHAIN>(i)? || self.live_children_below::<CHAIN>(i)? {
                i = self.trie.subtree_end(i);
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    /// [`Walk::enter`], or with `CHAIN` [`Walk::chain_enter`].
    fn enter_by<const CHAIN: bool>(&mut self, i: usize) -> Result<bool, TerminalDwaError> {
        if CHAIN {
            self.chain_enter(i)
        } else {
            self.enter(i)
        }
    }

    /// At a wide node `node` only a few of whose children its threads can go on into,
    /// walks those children's subtrees: `true`. Otherwise `false`, with nothing
    /// walked. Which bytes a thread can go on with is its lexeme state's byte runs
    /// ([`Lexing::live_bytes`]).
    fn live_children_below<const CHAIN: bool>(
        &mut self,
        node: usize,
    ) -> Result<bool, TerminalDwaError> {
        let lexing = self.lexing;
        let wide = lexing.trie.wide_children();
        if !wide.is_wide(node) {
            return Ok(false);
        }
        let depth = self.trie.nodes[node].depth as usize;
        let live = if CHAIN {
            lexing.live_bytes(self.scratch.chain.lexemes_at(depth).iter().copied())
        } else {
            let threads = &self.scratch.levels[depth];
            lexing.live_bytes(threads.iter().map(|th| (th.kind, th.state)))
        };
        let Some(children) = live.and_then(|live| wide.select(node, &live)) else {
            return Ok(false);
        };
        for c in children {
            if self.enter_by::<CHAIN>(c)? {
                self.below::<CHAIN>(c)?;
            }
        }
        Ok(true)
    }

    /// Enters trie node `i`: steps its parent's threads (the level above) by its
    /// byte into its level, and adds the tokens ending there. `false` if no thread
    /// goes on (nothing below it can be valid).
    fn enter(&mut self, i: usize) -> Result<bool, TerminalDwaError> {
        self.poll.tick()?;
        let node = &self.trie.nodes[i];
        let d = node.depth as usize;
        let WalkScratch {
            levels, outcome, ..
        } = &mut self.scratch;
        if levels.len() <= d {
            levels.resize_with(d + 1, Vec::new);
        }
        let (before, after) = levels.split_at_mut(d);
        let next = &mut after[0];
        next.clear();
        for &th in &before[d - 1] {
            self.lexing.step(th, node.byte, &mut self.words, next);
        }
        if next.is_empty() {
            return Ok(false);
        }
        self.words.merge(next);
        self.lexing
            .add_tokens(self.trie, i, next, &mut self.classes, outcome);
        self.check_size()?;
        Ok(true)
    }
}

/// `n` cells, none set yet.
fn unset<T>(n: usize) -> Vec<OnceLock<T>> {
    std::iter::repeat_with(OnceLock::new).take(n).collect()
}

/// Per lexer configuration, the configurations one byte leads to (each once, 0
/// excluded), as `(start, successors)` with configuration `c`'s at
/// `successors[start[c]..start[c + 1]]`: made once, for every search over them (a
/// search per expected class stepped all 256 bytes of every configuration it reached).
fn config_successors(t: &TablesRef<'_>) -> (Vec<u32>, Vec<u32>) {
    let n = t.conf_flags.len();
    let width = t.byte_classes as usize;
    let mut start = Vec::with_capacity(n + 1);
    let mut successors = Vec::new();
    start.push(0);
    for row in t.conf_next.chunks(width).take(n) {
        let from = successors.len();
        for &d in row {
            if d != 0 && !successors[from..].contains(&d) {
                successors.push(d);
            }
        }
        start.push(successors.len() as u32);
    }
    (start, successors)
}

/// The configurations reachable by byte steps from `seeds` (0 excluded), over the
/// steps of [`config_successors`].
fn reachable_configs(
    (start, successors): &(Vec<u32>, Vec<u32>),
    seeds: &mut dyn Iterator<Item = u32>,
) -> Vec<bool> {
    let mut seen = vec![false; start.len() - 1];
    let mut stack: Vec<u32> = seeds.filter(|&c| c != 0).collect();
    while let Some(c) = stack.pop() {
        if std::mem::replace(&mut seen[c as usize], true) {
            continue;
        }
        let next = &successors[start[c as usize] as usize..start[c as usize + 1] as usize];
        stack.extend(next.iter().filter(|&&d| !seen[d as usize]));
    }
    seen
}

/// The Terminal DWA of a boundary would exceed its limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the Terminal DWA needs more than {limit} states (max_terminal_dwa_states): tokens have too many lexings as terminal sequences")]
pub struct TerminalDwaLimitError {
    /// The limit.
    pub limit: usize,
}

/// Why a Terminal DWA could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TerminalDwaError {
    /// Past its state limit.
    #[error(transparent)]
    Limit(#[from] TerminalDwaLimitError),
    /// The compile's time limit passed, or it was cancelled.
    #[error(transparent)]
    Budget(#[from] BudgetError),
}

/// Buffers [`Walk::walk`] reuses from one call to the next (a boundary inside a
/// string walks once per exit, thousands of times).
#[derive(Default)]
struct WalkScratch {
    levels: Vec<Vec<Thread>>,
    outcome: Vec<(u32, FinalCheck)>,
    chain: chain::ChainDfa,
}

/// Words as a DAG with interned nodes (see [`TerminalDwa`]); node 0 is the empty word.
struct WordDag {
    /// Per node: its predecessors as `(terminal, node)`; `(NONE, member)` for a union.
    preds: Vec<Vec<(u32, u32)>>,
    /// Per node: the last terminal of every word it stands for ([`NONE`] for none):
    /// unions only merge words that end alike, so that which terminals may follow
    /// stays a property of the node.
    last: Vec<u32>,
    children: FxHashMap<(u32, u32), u32>,
    unions: FxHashMap<Vec<u32>, u32>,
}

impl WordDag {
    fn new() -> Self {
        WordDag {
            preds: vec![Vec::new()],
            last: vec![NONE],
            children: FxHashMap::default(),
            unions: FxHashMap::default(),
        }
    }

    fn len(&self) -> usize {
        self.preds.len()
    }

    fn child(&mut self, parent: u32, terminal: u32) -> u32 {
        let next = self.preds.len() as u32;
        *self.children.entry((parent, terminal)).or_insert_with(|| {
            self.preds.push(vec![(terminal, parent)]);
            self.last.push(terminal);
            next
        })
    }

    fn union(&mut self, members: Vec<u32>) -> u32 {
        if let Some(&u) = self.unions.get(&members) {
            return u;
        }
        let u = self.preds.len() as u32;
        self.preds
            .push(members.iter().map(|&m| (NONE, m)).collect());
        self.last.push(self.last[members[0] as usize]);
        self.unions.insert(members, u);
        u
    }

    /// Sorts and deduplicates `threads`, then merges threads that differ only in
    /// their word (same lexeme, same last terminal) into one thread on a union node.
    fn merge(&mut self, threads: &mut Vec<Thread>) {
        threads.sort_unstable_by_key(|t| (t.kind, t.state, self.last[t.word as usize], t.word));
        threads.dedup();
        let mut out = 0;
        let mut i = 0;
        while i < threads.len() {
            let t = threads[i];
            let last = self.last[t.word as usize];
            let mut j = i + 1;
            while j < threads.len()
                && threads[j].kind == t.kind
                && threads[j].state == t.state
                && self.last[threads[j].word as usize] == last
            {
                j += 1;
            }
            let word = if j - i == 1 {
                t.word
            } else {
                let members: Vec<u32> = threads[i..j].iter().map(|t| t.word).collect();
                self.union(members)
            };
            threads[out] = Thread { word, ..t };
            out += 1;
            i = j;
        }
        threads.truncate(out);
        threads.sort_unstable();
    }
}

/// Token classes: tokens with the same set of (word, final check) outcomes.
#[derive(Default)]
struct ClassInterner {
    /// The class added to last.
    last: Option<u32>,
    ids: FxHashMap<Vec<(u32, FinalCheck)>, u32>,
    outcomes: Vec<Vec<(u32, FinalCheck)>>,
    tokens: Vec<ClassTokens>,
}

impl ClassInterner {
    /// Adds the token positions `tokens` to the class of `outcome`.
    fn add(&mut self, outcome: &[(u32, FinalCheck)], tokens: (u32, u32)) {
        let k = self.class_of(outcome);
        self.tokens[k as usize].add(tokens);
    }

    /// The class of `outcome`, new if it is new.
    fn class_of(&mut self, outcome: &[(u32, FinalCheck)]) -> u32 {
        // Neighbouring trie nodes mostly share their outcome (a string's body): the
        // last class is checked before hashing.
        if let Some(k) = self.last {
            if self.outcomes[k as usize] == outcome {
                return k;
            }
        }
        let k = match self.ids.get(outcome) {
            Some(&k) => k,
            None => {
                let k = self.outcomes.len() as u32;
                self.ids.insert(outcome.to_vec(), k);
                self.outcomes.push(outcome.to_vec());
                self.tokens.push(ClassTokens::default());
                k
            }
        };
        self.last = Some(k);
        k
    }
}

/// What the walk of one trie subtree yields on a word DAG of its own, whose node 0 is
/// the empty word the walk started on: its nodes and its token classes.
struct Subtree {
    /// Per node, its predecessors (as [`WordDag::preds`]).
    preds: Vec<Vec<(u32, u32)>>,
    /// Per class: its outcome (over these nodes) and its tokens (never EOS).
    classes: Vec<(Vec<(u32, FinalCheck)>, ClassTokens)>,
}

impl Subtree {
    /// Its size in memo units (a token, an outcome or a predecessor each).
    fn size(&self) -> usize {
        self.preds.iter().map(Vec::len).sum::<usize>()
            + self
                .classes
                .iter()
                .map(|(o, t)| o.len() + 2 * t.ranges.len())
                .sum::<usize>()
    }

    /// Adds its nodes and classes to a boundary's, its node 0 being the boundary's
    /// empty word: the same interned nodes and classes as walking it there.
    fn replay(&self, words: &mut WordDag, classes: &mut ClassInterner) {
        let mut map: Vec<u32> = Vec::with_capacity(self.preds.len());
        map.push(0);
        for preds in &self.preds[1..] {
            let node = match preds.as_slice() {
                &[(terminal, parent)] if terminal != NONE => {
                    words.child(map[parent as usize], terminal)
                }
                members => {
                    let mut members: Vec<u32> =
                        members.iter().map(|&(_, m)| map[m as usize]).collect();
                    members.sort_unstable();
                    words.union(members)
                }
            };
            map.push(node);
        }
        let mut outcome = Vec::new();
        for (o, tokens) in &self.classes {
            outcome.clear();
            outcome.extend(o.iter().map(|&(w, check)| (map[w as usize], check)));
            outcome.sort_unstable();
            outcome.dedup();
            if tokens.ranges.is_empty() {
                continue;
            }
            let k = classes.class_of(&outcome) as usize;
            for &range in &tokens.ranges {
                classes.tokens[k].add(range);
            }
        }
    }
}

/// A subtree's memo key: its trie node and its threads' (kind, lexeme state).
type SubtreeKey = (u32, Vec<(Kind, u32)>);

/// Memo units (tokens, outcomes, predecessors; 4–12 bytes each) kept per grammar:
/// about 100 MB at most. Past it subtrees are still walked on their own DAG, so the
/// result never depends on what the memo holds.
const MEMO_BUDGET: usize = 16 << 20;

/// Subtree walks shared by the boundaries of one grammar.
#[derive(Default)]
struct SubtreeMemo {
    map: FxHashMap<SubtreeKey, Arc<Subtree>>,
    /// Runs of root children ([`Walk::walk_run`]), and the hashes of those seen once.
    runs: FxHashMap<runs::RunKey, Arc<Subtree>>,
    runs_seen: rustc_hash::FxHashSet<u64>,
    size: usize,
}

impl SubtreeMemo {
    /// Whether `sub` fits in the memo's budget, counted in if it does.
    fn fits(&mut self, sub: &Subtree) -> bool {
        let size = sub.size();
        let fits = self.size + size <= MEMO_BUDGET;
        if fits {
            self.size += size;
        }
        fits
    }
}

/// A token trie of `count` random tokens of 1 to `max_len` bytes of `alphabet`, and
/// end of sequence: for tests that two ways of walking a boundary build the same
/// automaton whatever the vocabulary.
#[cfg(test)]
pub(crate) fn random_trie(
    rng: &mut crate::test_rng::XorShift,
    alphabet: &[u8],
    count: u32,
    max_len: u64,
) -> PreparedTrie {
    random_trie_of(rng, &[(alphabet, count, max_len)])
}

/// [`random_trie`] with tokens of several kinds, each `(alphabet, count, max_len)`, in
/// that order (a vocabulary whose digit tokens run longer than its letter tokens).
#[cfg(test)]
pub(crate) fn random_trie_of(
    rng: &mut crate::test_rng::XorShift,
    kinds: &[(&[u8], u32, u64)],
) -> PreparedTrie {
    use stackmask_formats::{TokenKind, Vocabulary};
    let mut entries = Vec::new();
    for &(alphabet, count, max_len) in kinds {
        entries.extend((0..count).map(|_| {
            let len = 1 + rng.below(max_len) as usize;
            let bytes = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect();
            Some((bytes, TokenKind::Normal))
        }));
    }
    let count = entries.len() as u32;
    entries.push(Some((b"<eos>".to_vec(), TokenKind::Special)));
    let vocab = Vocabulary::from_entries("random", entries, count);
    PreparedTrie::new(crate::vocab::build_trie(&vocab))
}
