//! The compiled parser: byte-level lexing with per-terminal DFAs feeding a GLR parser
//! over a graph-structured stack.
//!
//! The structure mirrors the reference recognizer on purpose (so differences are
//! bugs in one of them, not in a shared idea): lexemes in progress carry their origin
//! boundary; a lexeme ends only when the next byte shows that the greedy rule lets it
//! end; the *frontier* at a boundary is the set of GSS heads that lexemes starting
//! there continue from. The Earley sets of the reference become GSS heads, and
//! "which terminals may start here" becomes a per-LR-state bitset — exact because
//! the tables are canonical LR(1).
//!
//! Lexemes are not tracked one by one: those that started at the same boundary from
//! heads in the same LR state form a *group* whose interned lexer configuration
//! (compiler stage `lexer_configs`) advances with one table lookup per byte.
//!
//! Everything lives in append-only arenas indexed by byte position; popping bytes is
//! a truncation, and a warmed-up parser (after [`GlrState::reset`]) allocates nothing.
//! Bytes that will never be popped again are forgotten ([`GlrState::forget_before`],
//! module `history`), so memory follows the nesting depth and the rollback window,
//! not the length of the input.

mod chain_memo;
mod dwa_walk;
mod gss;
mod history;
mod id_sets;
mod kept_unions;
mod mask_cache;
mod pair_set;
mod sparse_weights;
mod step;
mod subset_walk;

pub(crate) use dwa_walk::DwaWalk;
pub use dwa_walk::SUBSET_WALK_AFTER;
pub(crate) use kept_unions::KeptUnions;
pub use kept_unions::MAX_KEPT_UNION_BYTES;
pub use mask_cache::DEFAULT_MASK_CACHE_SLOTS;
pub(crate) use sparse_weights::SparseWeights;

use gss::{Gss, Layered};
use stackmask_formats::TablesRef;
use std::cell::RefCell;
use step::{EffortLimit, StepScratch};

/// GLR work (GSS edges looked at) one byte may take before the parse gives up with
/// an error: a deterministic byte takes a handful, an ambiguous grammar's byte can
/// take millions (`e: e "+" e` over a long sum). A few tenths of a second (15–20 ns a
/// unit on that sum).
pub const DEFAULT_MAX_STEP_WORK: u64 = 20_000_000;

/// GLR work each consumed byte adds to the parse's budget (see [`WorkLimit::Budget`]):
/// the shipped grammars' documents (the ambiguous `expr.lark` aside) need 0.4–2.3 units a
/// byte on average and 106 at most (`benches/examples/byte_work.rs`).
pub const DEFAULT_WORK_PER_BYTE: u64 = 1_000;

/// Most GLR work the parse's budget holds (see [`WorkLimit::Budget`]): 100 million GSS
/// edges looked at, one to two seconds.
pub const DEFAULT_WORK_BURST: u64 = 100_000_000;

/// Which work limit refused a byte ([`GlrState::work_limit_hit`]).
///
/// Why two: the per-byte limit bounds one step, but an ambiguous grammar can need
/// work that grows with the input at every byte (`e: e "+" e` over `1+1+…+1` is cubic
/// in all: 2,000 terms took 26 s, every byte within the per-byte limit). The budget
/// bounds the whole parse linearly in its length: over any `n` consecutive bytes it
/// may do at most `burst + n × per_byte` units, so a document of any size ends in an
/// answer or a named error within about that much work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkLimit {
    /// One byte needed more than this many units ([`GlrState::set_max_step_work`]).
    Step(u64),
    /// The parse ran out of its work budget ([`GlrState::set_work_budget`]).
    Budget {
        /// Units each consumed byte adds.
        per_byte: u64,
        /// Units the budget holds at most (and starts with).
        burst: u64,
    },
}

/// The lexemes in progress that started at one boundary from heads in one LR state
/// (or, for ignore lexemes, from the whole frontier), as one interned configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Group {
    /// Boundary (byte position) where the lexemes started.
    origin: u32,
    /// The heads they continue from: `heads[heads_start..heads_end]`.
    heads_start: u32,
    heads_end: u32,
    /// Interned lexer configuration (never 0 = nothing alive).
    config: u32,
    ignore: bool,
}

/// Arena lengths before a byte, to undo it.
#[derive(Clone, Copy, Debug)]
struct Mark {
    nodes: u32,
    edges: u32,
    heads: u32,
    groups: u32,
}

/// The parser state. Methods take the tables explicitly so that the state can live
/// beside an `Arc` of the engine that owns (or maps) them.
///
/// Every method that takes `tables` must be given the tables the state was created
/// with ([`GlrState::new`]): the state holds LR state ids, DFA states and lexer
/// configuration ids of those tables, and other tables (even valid ones) would read
/// them as something else — wrong answers, or an out-of-bounds panic.
///
/// Positions below are *local*: byte `base + p` of the input is local position `p`;
/// everything before `base` has been forgotten.
#[derive(Debug)]
pub struct GlrState {
    gss: Gss,
    /// Heads of every frontier, sorted by LR state within a frontier; the frontier
    /// made by byte `p` starts at `marks[p].heads`. Groups hold ranges of it.
    heads: Vec<u32>,
    /// Lexeme groups in progress after `p` bytes: `groups[frames[p]..frames[p + 1]]`.
    groups: Vec<Group>,
    frames: Vec<u32>,
    /// Per byte that can still be popped: arena lengths before it.
    marks: Vec<Mark>,
    /// Bytes forgotten: local position 0 is byte `base` of the input.
    base: usize,
    /// What forgetting keeps and when it runs (module `history`).
    history: history::History,
    /// Work one byte (or the acceptance test) may take.
    max_step_work: u64,
    /// The work budget ([`WorkLimit::Budget`]): units per consumed byte, the most it
    /// holds, and what it holds now.
    work_per_byte: u64,
    work_burst: u64,
    work_credit: u64,
    /// The limit that made the last `push_byte` or `is_accepting` answer `false` for
    /// its work, not for the text (a `Cell`: `is_accepting` takes `&self`).
    over_work_limit: std::cell::Cell<Option<WorkLimit>>,
    scratch: StepScratch,
    overlay: Gss,
    /// Scratch for [`GlrState::is_accepting`], which must not change the state.
    accept_scratch: RefCell<(StepScratch, Gss, Vec<u32>)>,
    new_heads: Vec<u32>,
    /// Lexemes ending before the current byte: (origin, terminal, heads range).
    ending: Vec<(u32, u32, u32, u32)>,
    step_heads: Vec<u32>,
}

/// Bytes a vector has allocated (its capacity, not its length).
fn capacity_bytes<T>(v: &Vec<T>) -> usize {
    v.capacity() * std::mem::size_of::<T>()
}

impl GlrState {
    /// The state at the start of input, for `tables` (validated: see
    /// [`TablesRef::validate`]); every later call takes the same tables.
    pub fn new(tables: &TablesRef<'_>) -> Self {
        let mut s = GlrState::detached();
        s.reset(tables);
        s
    }

    /// A state owning no buffers, not yet at any start of input: what stands in for
    /// a state moved out of a dropped matcher (`matcher_pool`). [`GlrState::reset`]
    /// makes it a state at the start of input.
    pub(crate) fn detached() -> Self {
        GlrState {
            gss: Gss::default(),
            heads: Vec::new(),
            groups: Vec::new(),
            frames: Vec::new(),
            marks: Vec::new(),
            base: 0,
            history: history::History::default(),
            max_step_work: DEFAULT_MAX_STEP_WORK,
            work_per_byte: DEFAULT_WORK_PER_BYTE,
            work_burst: DEFAULT_WORK_BURST,
            work_credit: DEFAULT_WORK_BURST,
            over_work_limit: Default::default(),
            scratch: StepScratch::default(),
            overlay: Gss::default(),
            accept_scratch: RefCell::new(Default::default()),
            new_heads: Vec::new(),
            ending: Vec::new(),
            step_heads: Vec::new(),
        }
    }

    /// Bytes of buffers the state holds (capacities of its arenas and scratch),
    /// for deciding whether a dropped matcher's buffers are worth keeping.
    pub(crate) fn retained_bytes(&self) -> usize {
        let gss = |g: &Gss| capacity_bytes(&g.nodes) + capacity_bytes(&g.edges);
        gss(&self.gss)
            + gss(&self.overlay)
            + capacity_bytes(&self.heads)
            + capacity_bytes(&self.groups)
            + capacity_bytes(&self.frames)
            + capacity_bytes(&self.marks)
            + capacity_bytes(&self.new_heads)
            + capacity_bytes(&self.ending)
            + capacity_bytes(&self.step_heads)
            + self.history.retained_bytes()
    }

    /// Back to the start of input, keeping every buffer's capacity. `tables` are the
    /// ones the state was created with.
    pub fn reset(&mut self, tables: &TablesRef<'_>) {
        self.gss.clear();
        self.gss.nodes.push(gss::Node {
            state: tables.lr.start_state,
            first_edge: gss::NONE,
        });
        self.heads.clear();
        self.groups.clear();
        self.frames.clear();
        self.frames.extend([0, 0]);
        self.marks.clear();
        self.base = 0;
        self.history.reset();
        self.work_credit = self.work_burst;
    }

    /// Bytes consumed so far.
    pub fn bytes_consumed(&self) -> usize {
        self.base + self.marks.len()
    }

    /// Bytes that [`GlrState::pop_bytes`] can still undo.
    pub fn bytes_poppable(&self) -> usize {
        self.marks.len()
    }

    /// The fewest GSS nodes held since the last call: nodes below it are unchanged
    /// since then (what the mask walk's memo relies on).
    pub(crate) fn take_gss_low_water(&mut self) -> u32 {
        self.gss.take_low_water()
    }

    /// Whether nothing has been consumed (the start of input, not of the kept history).
    fn at_start(&self) -> bool {
        self.base == 0 && self.marks.is_empty()
    }

    /// The lexeme groups in progress now.
    fn current_frame(&self) -> std::ops::Range<usize> {
        self.frame(self.marks.len())
    }

    /// Sets the work one byte (or [`GlrState::is_accepting`]) may take, in GSS edges
    /// looked at ([`DEFAULT_MAX_STEP_WORK`] unless set): past it the byte is refused
    /// and [`GlrState::over_work_limit`] says why.
    pub fn set_max_step_work(&mut self, max: u64) {
        self.max_step_work = max;
    }

    /// The work one byte may take.
    pub fn max_step_work(&self) -> u64 {
        self.max_step_work
    }

    /// Sets the work budget ([`WorkLimit::Budget`]; [`DEFAULT_WORK_PER_BYTE`] and
    /// [`DEFAULT_WORK_BURST`] unless set) and fills it; `u64::MAX` for both: none.
    /// Work done for bytes later undone or refused counts: it was done.
    pub fn set_work_budget(&mut self, per_byte: u64, burst: u64) {
        self.work_per_byte = per_byte;
        self.work_burst = burst;
        self.work_credit = burst;
    }

    /// The work budget: (units per consumed byte, the most it holds).
    pub fn work_budget(&self) -> (u64, u64) {
        (self.work_per_byte, self.work_burst)
    }

    /// The units the work budget holds now (what the next bytes may spend).
    pub fn work_credit(&self) -> u64 {
        self.work_credit
    }

    /// Puts the work budget's credit back to `credit`, as it was before bytes that a
    /// speculative walk has undone (the token-trie walk: its bytes are never committed).
    pub(crate) fn restore_work_credit(&mut self, credit: u64) {
        self.work_credit = credit;
    }

    /// Whether the last [`GlrState::push_byte`] or [`GlrState::is_accepting`] answered
    /// `false` for a work limit, not for the text ([`GlrState::work_limit_hit`] says
    /// which).
    pub fn over_work_limit(&self) -> bool {
        self.over_work_limit.get().is_some()
    }

    /// The work limit that made the last [`GlrState::push_byte`] or
    /// [`GlrState::is_accepting`] answer `false`, if one did.
    pub fn work_limit_hit(&self) -> Option<WorkLimit> {
        self.over_work_limit.get()
    }

    /// Work the GLR steps have done since the state was created (GSS edges looked at):
    /// tests check how it grows with the input, never wall time.
    pub fn work(&self) -> u64 {
        self.scratch.effort + self.accept_scratch.borrow().0.effort
    }

    /// Number of GSS nodes (for statistics).
    pub fn gss_nodes(&self) -> usize {
        self.gss.nodes.len()
    }

    /// The arena lengths now: the mark of the next byte.
    fn arena_lengths(&self) -> Mark {
        Mark {
            nodes: self.gss.nodes.len() as u32,
            edges: self.gss.edges.len() as u32,
            heads: self.heads.len() as u32,
            groups: self.groups.len() as u32,
        }
    }

    fn frame(&self, p: usize) -> std::ops::Range<usize> {
        self.frames[p] as usize..self.frames[p + 1] as usize
    }

    /// Consumes one byte if the input stays a viable prefix; otherwise returns
    /// `false` and changes nothing. `tables` are the ones the state was created with.
    pub fn push_byte(&mut self, tables: &TablesRef<'_>, b: u8) -> bool {
        let p = self.marks.len();
        let mark = self.arena_lengths();

        // 1. The frontier at p: the heads after every lexeme that b lets end here. All
        //    lexemes of one terminal from one origin end in a single GLR step, so nodes
        //    merge across the heads' LR states as in plain Tomita.
        self.new_heads.clear();
        self.overlay.clear();
        self.over_work_limit.set(None);
        // The budget after this byte's share, and what this byte may take of it.
        let credit = self
            .work_credit
            .saturating_add(self.work_per_byte)
            .min(self.work_burst);
        let allowed = self.max_step_work.min(credit);
        let effort_before = self.scratch.effort;
        self.scratch.effort_limit = EffortLimit(effort_before.saturating_add(allowed));
        if self.at_start() {
            self.new_heads.push(0);
        } else {
            self.ending.clear();
            for gi in self.frame(p) {
                let g = self.groups[gi];
                if !tables.conf_may_end(g.config) {
                    continue;
                }
                for &e in tables.conf_elems(g.config) {
                    let t = tables.dfa_term[e as usize];
                    if !tables.may_end(t, e, Some(b)) {
                        continue;
                    }
                    if g.ignore {
                        self.new_heads.extend_from_slice(
                            &self.heads[g.heads_start as usize..g.heads_end as usize],
                        );
                    } else {
                        self.ending.push((g.origin, t, g.heads_start, g.heads_end));
                    }
                }
            }
            self.ending.sort_unstable();
            let mut i = 0;
            while i < self.ending.len() {
                let (origin, t, _, _) = self.ending[i];
                self.step_heads.clear();
                while i < self.ending.len() && self.ending[i].0 == origin && self.ending[i].1 == t {
                    let (_, _, hs, he) = self.ending[i];
                    self.step_heads
                        .extend_from_slice(&self.heads[hs as usize..he as usize]);
                    i += 1;
                }
                let mut layered = Layered {
                    base: &self.gss,
                    over: &mut self.overlay,
                };
                step::step(
                    tables,
                    &mut layered,
                    &self.step_heads,
                    t,
                    &mut self.scratch,
                    &mut self.new_heads,
                );
                if self.scratch.exceeded {
                    // Nothing is committed yet: the overlay is all this byte wrote.
                    self.scratch.exceeded = false;
                    self.over_work_limit
                        .set(Some(if allowed < self.max_step_work {
                            WorkLimit::Budget {
                                per_byte: self.work_per_byte,
                                burst: self.work_burst,
                            }
                        } else {
                            WorkLimit::Step(self.max_step_work)
                        }));
                    self.overlay.clear();
                    return false;
                }
            }
        }
        self.gss.append(&self.overlay);
        let nodes = &self.gss.nodes;
        self.new_heads
            .sort_unstable_by_key(|&h| (nodes[h as usize].state, h));
        self.new_heads.dedup();
        let frontier_start = self.heads.len();
        self.heads.extend_from_slice(&self.new_heads);

        // 2. Lexemes starting at p with byte b: one group per LR state of the heads.
        let mut any_expected = false;
        let mut i = frontier_start;
        while i < self.heads.len() {
            let state = self.gss.nodes[self.heads[i] as usize].state;
            let mut j = i + 1;
            while j < self.heads.len() && self.gss.nodes[self.heads[j] as usize].state == state {
                j += 1;
            }
            any_expected |= tables.expects_any(state);
            let config = tables.conf_start(state, b);
            if config != 0 {
                self.groups.push(Group {
                    origin: p as u32,
                    heads_start: i as u32,
                    heads_end: j as u32,
                    config,
                    ignore: false,
                });
            }
            i = j;
        }
        if any_expected && (!self.at_start() || tables.allow_initial_skip) {
            let config = tables.ignore_start[b as usize];
            let (hs, he) = (frontier_start as u32, self.heads.len() as u32);
            if config != 0 && self.ignore_may_continue(tables, config, hs, he) {
                self.groups.push(Group {
                    origin: p as u32,
                    heads_start: hs,
                    heads_end: he,
                    config,
                    ignore: true,
                });
            }
        }

        // 3. Lexemes in progress that go on with b (the configuration transition drops
        //    greedy lexemes b does not extend and lazy lexemes that matched).
        for gi in self.frame(p) {
            let g = self.groups[gi];
            let config = tables.conf_step(g.config, b);
            if config != 0
                && (!g.ignore
                    || self.ignore_may_continue(tables, config, g.heads_start, g.heads_end))
            {
                self.groups.push(Group { config, ..g });
            }
        }

        if self.groups.len() == mark.groups as usize {
            self.gss.truncate(mark.nodes as usize, mark.edges as usize);
            self.heads.truncate(mark.heads as usize);
            return false;
        }
        self.frames.push(self.groups.len() as u32);
        self.marks.push(mark);
        self.work_credit = credit.saturating_sub(self.scratch.effort - effort_before);
        true
    }

    /// Whether an ignore group (configuration `config`, heads `heads[hs..he]`) can
    /// still end so that its heads shift something next: greedy lexing can leave an
    /// ignore lexeme only a few possible followers (a `#` comment ends only before a
    /// newline), and a prefix with none of them is a dead end (DESIGN.md §1), which
    /// the matcher must refuse as the mask does. Free when no ignore lexeme limits its
    /// followers (the tables say so once).
    fn ignore_may_continue(&self, tables: &TablesRef<'_>, config: u32, hs: u32, he: u32) -> bool {
        if !tables.has_ignore_follow_limits() {
            return true;
        }
        let heads = &self.heads[hs as usize..he as usize];
        tables.conf_elems(config).iter().any(|&e| {
            heads
                .iter()
                .any(|&h| tables.ignore_may_continue(self.gss.nodes[h as usize].state, e))
        })
    }

    /// Undoes the last `n` bytes.
    ///
    /// # Panics
    ///
    /// If `n > self.bytes_poppable()`: there is nothing to undo below the start of
    /// input or the forgotten history, and a caller asking for it has lost track of
    /// its own commits (the matchers check their rollback counts and windows before
    /// calling this).
    pub fn pop_bytes(&mut self, n: usize) {
        assert!(
            n <= self.marks.len(),
            "pop_bytes({n}) with only {} bytes {}",
            self.marks.len(),
            if self.base == 0 {
                "consumed"
            } else {
                "that can be undone"
            }
        );
        if n == 0 {
            return;
        }
        let m = self.marks.len() - n;
        let mark = self.marks[m];
        self.gss.truncate(mark.nodes as usize, mark.edges as usize);
        self.heads.truncate(mark.heads as usize);
        self.groups.truncate(mark.groups as usize);
        self.frames.truncate(m + 2);
        self.marks.truncate(m);
    }

    /// Whether the bytes consumed so far form a sentence. `tables` are the ones the
    /// state was created with.
    pub fn is_accepting(&self, tables: &TablesRef<'_>) -> bool {
        let mut guard = self.accept_scratch.borrow_mut();
        let scratch = &mut guard.0;
        scratch.effort_limit = EffortLimit(scratch.effort.saturating_add(self.max_step_work));
        let accepting = self.accepting(tables, &mut guard);
        let over = std::mem::take(&mut guard.0.exceeded);
        self.over_work_limit
            .set(over.then_some(WorkLimit::Step(self.max_step_work)));
        accepting && !over
    }

    fn accepting(
        &self,
        tables: &TablesRef<'_>,
        (scratch, overlay, shifted): &mut (StepScratch, Gss, Vec<u32>),
    ) -> bool {
        let eof = tables.lr.num_terminals - 1;
        overlay.clear();
        let mut layered = Layered {
            base: &self.gss,
            over: overlay,
        };
        let mut none = Vec::new();
        if self.at_start() {
            return step::step(tables, &mut layered, &[0], eof, scratch, &mut none);
        }
        for gi in self.current_frame() {
            let g = self.groups[gi];
            if g.ignore || !tables.conf_may_end(g.config) {
                continue;
            }
            let heads = &self.heads[g.heads_start as usize..g.heads_end as usize];
            for &e in tables.conf_elems(g.config) {
                let t = tables.dfa_term[e as usize];
                if !tables.may_end(t, e, None) {
                    continue;
                }
                shifted.clear();
                step::step(tables, &mut layered, heads, t, scratch, shifted);
                if scratch.exceeded {
                    return false;
                }
                if step::step(tables, &mut layered, shifted, eof, scratch, &mut none) {
                    return true;
                }
            }
        }
        false
    }
}

/// A copy of the parse (its history included), with fresh scratch buffers: only
/// what the parse is gets copied, and a copy warms its buffers on first use.
impl Clone for GlrState {
    fn clone(&self) -> Self {
        GlrState {
            gss: self.gss.clone(),
            heads: self.heads.clone(),
            groups: self.groups.clone(),
            frames: self.frames.clone(),
            marks: self.marks.clone(),
            base: self.base,
            history: self.history.clone(),
            max_step_work: self.max_step_work,
            work_per_byte: self.work_per_byte,
            work_burst: self.work_burst,
            work_credit: self.work_credit,
            over_work_limit: self.over_work_limit.clone(),
            scratch: self.scratch.fresh(),
            overlay: Gss::default(),
            accept_scratch: RefCell::new(Default::default()),
            new_heads: Vec::new(),
            ending: Vec::new(),
            step_heads: Vec::new(),
        }
    }

    /// What [`Clone::clone`] makes, in these buffers: no allocation once they are as
    /// large as `source`'s (a matcher's clone over a dropped matcher's buffers). The
    /// scratch buffers are kept as they are: every step clears what it reads.
    fn clone_from(&mut self, source: &Self) {
        self.gss.copy_from(&source.gss);
        self.heads.clone_from(&source.heads);
        self.groups.clone_from(&source.groups);
        self.frames.clone_from(&source.frames);
        self.marks.clone_from(&source.marks);
        self.base = source.base;
        self.history.continue_from(&source.history);
        self.max_step_work = source.max_step_work;
        self.work_per_byte = source.work_per_byte;
        self.work_burst = source.work_burst;
        self.work_credit = source.work_credit;
        self.over_work_limit.set(source.over_work_limit.get());
        self.scratch.continue_from(&source.scratch);
        self.accept_scratch
            .get_mut()
            .0
            .continue_from(&StepScratch::default());
    }
}

/// A [`GlrState`] bound to its tables: the [`crate::ByteRecognizer`] view.
pub struct GlrRecognizer<'a, 's> {
    /// The tables the state was created with.
    pub tables: TablesRef<'a>,
    /// The state.
    pub state: &'s mut GlrState,
}

impl crate::ByteRecognizer for GlrRecognizer<'_, '_> {
    fn push_byte(&mut self, byte: u8) -> bool {
        self.state.push_byte(&self.tables, byte)
    }
    fn pop_bytes(&mut self, n: usize) {
        self.state.pop_bytes(n)
    }
    fn bytes_consumed(&self) -> usize {
        self.state.bytes_consumed()
    }
    fn forget_before(&mut self, pos: usize) {
        self.state.forget_before(pos)
    }
    fn over_work_limit(&self) -> Option<WorkLimit> {
        self.state.work_limit_hit()
    }
    fn is_accepting(&self) -> bool {
        self.state.is_accepting(&self.tables)
    }
}
