//! LR stage: the canonical LR(1) automaton of the normalized grammar, conflicts kept.
//!
//! Why canonical LR(1) and not LALR(1): in canonical LR(1) every item of a state is
//! valid for *every* viable prefix that reaches the state, so "the state has an action
//! on `t`" means exactly "`t` can be shifted next" (the correct-prefix property). The
//! runtime uses that to decide which lexemes to start without simulating reductions.
//! LALR merges states and loses it (it may reduce on a terminal that can never be
//! shifted). The cost is more states; JSON and the shipped C subset stay small.
//!
//! Conflicts (shift/reduce, reduce/reduce) are not resolved: each is a GLR fork, and
//! [`Conflict`] records them so `stackmask check` can show grammar authors where.

mod pack;

use crate::analysis::{members, union_into, FirstSets};
use crate::budget::{BudgetError, Deadline, Poll, Stage};
use rustc_hash::FxHashMap;
use stackmask_formats::lr::Comb;
use stackmask_formats::{Action, Grammar, LrTables, Symbol};
#[cfg(test)]
use std::collections::HashMap;

/// Default limit on the number of LR(1) states.
pub const DEFAULT_MAX_STATES: usize = 200_000;

/// Why the automaton could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LrError {
    /// The automaton grew past the state limit.
    #[error("the LR(1) automaton exceeds the limit of {limit} states (max_lr_states); simplify the grammar or raise the limit")]
    TooManyStates {
        /// The limit.
        limit: usize,
    },
    /// A count exceeds what the table encoding can hold: action codes keep states and
    /// rules in 30 bits, and table cells are indexed by `u32`.
    #[error(
        "{what} is {value}, above the table encoding's limit of {limit}; simplify the grammar"
    )]
    EncodingLimit {
        /// What is counted (`max_lr_states`, grammar rules, action table cells, …).
        what: &'static str,
        /// Its value.
        value: u64,
        /// The largest value the encoding allows.
        limit: u64,
    },
    /// The tables would take more memory than their limit (checked before each array
    /// is allocated and while the row-displacement tables grow).
    #[error(
        "the LR tables would take more than {bytes} bytes ({states} states, {cells} table cells \
         with an action or a goto), above the limit of {limit} bytes (max_table_bytes); raise it \
         with --max-table-bytes or simplify the grammar"
    )]
    TableBytes {
        /// Bytes the tables needed when they passed the limit (at least).
        bytes: u64,
        /// LR(1) states.
        states: usize,
        /// Action cells plus gotos present.
        cells: usize,
        /// The limit ([`LrLimits::max_table_bytes`]).
        limit: u64,
    },
    /// The compile's time limit passed, or it was cancelled.
    #[error(transparent)]
    Budget(#[from] BudgetError),
}

/// Default limit on the memory of the LR tables (`--max-table-bytes`): the
/// row-displacement action and goto tables, the actions, and the per-state
/// expected-terminal sets the runtime derives from them. The tables grow with the cells
/// present, so only grammars with very many states × terminals come near it.
pub const DEFAULT_MAX_TABLE_BYTES: u64 = 1 << 30;

/// Limits of the LR stage; each ends in an [`LrError`] that names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LrLimits {
    /// LR(1) states (`--max-lr-states`, [`LrError::TooManyStates`]).
    pub max_states: usize,
    /// Bytes of the tables (`--max-table-bytes`, [`LrError::TableBytes`]).
    pub max_table_bytes: u64,
}

impl Default for LrLimits {
    fn default() -> Self {
        LrLimits::states(DEFAULT_MAX_STATES)
    }
}

impl LrLimits {
    /// `max_states` states and the default table memory.
    pub fn states(max_states: usize) -> Self {
        LrLimits {
            max_states,
            max_table_bytes: DEFAULT_MAX_TABLE_BYTES,
        }
    }
}

/// The largest `max_states` [`build_lr`] accepts: shift actions store the target state
/// in 30 bits ([`Action::MAX_PAYLOAD`]).
pub const MAX_ENCODABLE_STATES: usize = Action::MAX_PAYLOAD as usize;

/// Errors unless `value <= limit`.
fn within(what: &'static str, value: usize, limit: usize) -> Result<(), LrError> {
    if value > limit {
        return Err(LrError::EncodingLimit {
            what,
            value: value as u64,
            limit: limit as u64,
        });
    }
    Ok(())
}

/// A table cell with more than one action: a place where the GLR parser forks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The LR state.
    pub state: u32,
    /// The lookahead terminal (the grammar's id; `eof` for end of input).
    pub terminal: u32,
    /// The competing actions.
    pub actions: Vec<Action>,
    /// The competing items, rendered `A → α • β`.
    pub items: Vec<String>,
}

/// The LR(1) tables before packing: each state's cells in column order, in CSR arrays
/// (linear in the cells present). [`build_lr`] packs them into [`LrTables`]; tests
/// compare the packed lookups with these.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SparseTables {
    /// Per state, plus a final entry: its action cells are `row_start[s]..row_start[s + 1]`.
    pub row_start: Vec<u32>,
    /// Terminal of each action cell.
    pub cell_terminal: Vec<u32>,
    /// Per action cell, plus a final entry: its encoded actions are
    /// `actions[cell_start[c]..cell_start[c + 1]]` (shift first, then reductions).
    pub cell_start: Vec<u32>,
    /// Encoded [`Action`]s.
    pub actions: Vec<u32>,
    /// Per state, plus a final entry: its gotos are `goto_start[s]..goto_start[s + 1]`.
    pub goto_start: Vec<u32>,
    /// Nonterminal of each goto.
    pub goto_nonterminal: Vec<u32>,
    /// Target state of each goto.
    pub goto_target: Vec<u32>,
    /// Left-hand side of each rule (augmented rule last).
    pub rule_lhs: Vec<u32>,
    /// Right-hand-side length of each rule.
    pub rule_len: Vec<u32>,
}

impl SparseTables {
    fn range(index: &[u32], i: usize) -> std::ops::Range<usize> {
        index[i] as usize..index[i + 1] as usize
    }

    /// The cells of `state` as `(terminal, encoded actions)`, in terminal order.
    pub fn cells(&self, state: u32) -> impl Iterator<Item = (u32, &[u32])> + '_ {
        Self::range(&self.row_start, state as usize).map(|c| {
            (
                self.cell_terminal[c],
                &self.actions[Self::range(&self.cell_start, c)],
            )
        })
    }

    /// The gotos of `state` as `(nonterminal, target)`, in nonterminal order.
    pub fn gotos(&self, state: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
        Self::range(&self.goto_start, state as usize)
            .map(|i| (self.goto_nonterminal[i], self.goto_target[i]))
    }
}

/// The LR(1) automaton: tables for the runtime plus what reports need.
#[derive(Debug, Clone)]
pub struct LrAutomaton {
    /// The parse tables.
    pub tables: LrTables,
    /// Every conflicting cell.
    pub conflicts: Vec<Conflict>,
    /// Work of the item-set construction: lookahead propagations in closures plus
    /// items built. Counted, not timed, so resource tests can check its growth.
    pub construction_steps: u64,
}

type Bits = Vec<u64>;

/// The grammar augmented with `S' → S`, flattened for the construction.
struct Augmented<'g> {
    g: &'g Grammar,
    rules: Vec<(u32, Vec<Symbol>)>,
    by_lhs: Vec<Vec<u32>>,
    /// FIRST and nullability of every rule suffix `rhs[dot..]`.
    suffix_first: Vec<Vec<(Bits, bool)>>,
    /// Per nonterminal `B`: for each `C` that starts one of `B`'s rules, the union of
    /// FIRST(γ) over its rules `B → C γ`, and whether some such γ is nullable (then
    /// `B`'s lookaheads flow on to `C`). The closure's edges.
    predicts: Vec<Vec<(u32, Bits, bool)>>,
    words: usize,
    eof: u32,
}

impl<'g> Augmented<'g> {
    fn new(g: &'g Grammar) -> Self {
        let nt = g.nonterminals.len();
        let eof = g.terminals.len() as u32;
        let mut rules: Vec<(u32, Vec<Symbol>)> =
            g.rules.iter().map(|r| (r.lhs, r.rhs.clone())).collect();
        rules.push((nt as u32, vec![Symbol::Nonterminal(g.start)]));
        let mut by_lhs = vec![Vec::new(); nt + 1];
        for (i, r) in rules.iter().enumerate() {
            by_lhs[r.0 as usize].push(i as u32);
        }
        let sets = FirstSets::new(g, &rules[rules.len() - 1..], nt + 1);
        let (first, nullable) = (&sets.first, &sets.nullable);
        let suffix_first = rules
            .iter()
            .map(|(_, rhs)| {
                let mut out = vec![(vec![0u64; sets.words], true); rhs.len() + 1];
                for d in (0..rhs.len()).rev() {
                    let (mut f, n) = match rhs[d] {
                        Symbol::Terminal(t) => {
                            let mut b = vec![0u64; sets.words];
                            b[t as usize / 64] |= 1 << (t % 64);
                            (b, false)
                        }
                        Symbol::Nonterminal(a) => (first[a as usize].clone(), nullable[a as usize]),
                    };
                    if n {
                        union_into(&mut f, &out[d + 1].0.clone());
                    }
                    out[d] = (f, n && out[d + 1].1);
                }
                out
            })
            .collect::<Vec<Vec<(Bits, bool)>>>();
        let mut predicts: Vec<Vec<(u32, Bits, bool)>> = vec![Vec::new(); nt + 1];
        let mut edge_at: FxHashMap<(u32, u32), usize> = FxHashMap::default();
        for (i, (lhs, rhs)) in rules.iter().enumerate() {
            let Some(&Symbol::Nonterminal(c)) = rhs.first() else {
                continue;
            };
            let (first, nullable) = &suffix_first[i][1];
            let edges = &mut predicts[*lhs as usize];
            match edge_at.get(&(*lhs, c)) {
                Some(&e) => {
                    union_into(&mut edges[e].1, first);
                    edges[e].2 |= nullable;
                }
                None => {
                    edge_at.insert((*lhs, c), edges.len());
                    edges.push((c, first.clone(), *nullable));
                }
            }
        }
        Augmented {
            g,
            rules,
            by_lhs,
            suffix_first,
            predicts,
            words: sets.words,
            eof,
        }
    }

    fn next(&self, rule: u32, dot: u32) -> Option<Symbol> {
        self.rules[rule as usize].1.get(dot as usize).copied()
    }

    fn render_item(&self, rule: u32, dot: u32) -> String {
        let (lhs, rhs) = &self.rules[rule as usize];
        let name = |s: &Symbol| match *s {
            Symbol::Nonterminal(n) if n as usize == self.g.nonterminals.len() => {
                "$start".to_string()
            }
            s => self.g.symbol_name(s).to_string(),
        };
        let lhs_name = name(&Symbol::Nonterminal(*lhs));
        let mut parts: Vec<String> = rhs.iter().map(name).collect();
        parts.insert(dot as usize, "•".into());
        format!("{lhs_name} → {}", parts.join(" "))
    }
}

/// An LR(1) item set: cores `(rule, dot)` with their lookahead sets, sorted by core.
type ItemSet = Vec<(u32, u32, Bits)>;

/// Builds the canonical LR(1) automaton with at most `max_states` states
/// ([`LrError::TooManyStates`] beyond) and the default table memory limit. `max_states`
/// itself may not exceed [`MAX_ENCODABLE_STATES`], and the grammar's rules and the
/// tables' sizes must fit the table encoding ([`LrError::EncodingLimit`]): refused up
/// front rather than written as action codes or indices that lose their top bits.
pub fn build_lr(g: &Grammar, max_states: usize) -> Result<LrAutomaton, LrError> {
    build_lr_within(g, LrLimits::states(max_states), &Deadline::unlimited())
}

/// [`build_lr`] under explicit limits and a compile budget: polled once per state built
/// and per table row ([`LrError::Budget`] when it runs out).
pub fn build_lr_within(
    g: &Grammar,
    limits: LrLimits,
    deadline: &Deadline,
) -> Result<LrAutomaton, LrError> {
    let mut poll = deadline.poll(Stage::Lr);
    let mut steps = 0u64;
    let (sparse, conflicts) = sparse_tables(g, limits, &mut poll, &mut steps)?;
    poll.check()?;
    let tables = pack_tables(g, sparse, limits.max_table_bytes)?;
    debug_assert!(tables.validate().is_ok());
    Ok(LrAutomaton {
        tables,
        conflicts,
        construction_steps: steps,
    })
}

/// The unpacked tables of [`build_lr`], for tests that check the packing against them.
pub fn build_sparse_tables(g: &Grammar, max_states: usize) -> Result<SparseTables, LrError> {
    let deadline = Deadline::unlimited();
    let limits = LrLimits::states(max_states);
    Ok(sparse_tables(g, limits, &mut deadline.poll(Stage::Lr), &mut 0)?.0)
}

/// Bytes of the tables besides the two combs' slots: the row bases, the actions and
/// their index's final entry, and the expected-terminal sets (one bit per state and
/// terminal, in whole `u64` words per state).
fn fixed_table_bytes(states: usize, terminals: usize, actions: usize) -> u64 {
    let words = terminals.div_ceil(64) as u64;
    4 * (2 * states as u64 + actions as u64 + 1) + 8 * words * states as u64
}

/// Bytes a comb slot takes: its check entry and its payload (action index or goto).
const SLOT_BYTES: u64 = 8;

/// Packs sparse tables into the runtime's row-displacement form, within `limit` bytes
/// ([`LrError::TableBytes`], checked before each comb grows past its share).
fn pack_tables(g: &Grammar, sp: SparseTables, limit: u64) -> Result<LrTables, LrError> {
    let n = sp.row_start.len() - 1;
    let num_terminals = g.terminals.len() + 1;
    let num_nonterminals = g.nonterminals.len() + 1;
    let (cells, gotos) = (sp.cell_terminal.len(), sp.goto_target.len());
    let fixed = fixed_table_bytes(n, num_terminals, sp.actions.len());
    let over = |action_slots: usize, goto_slots: usize| {
        let bytes = fixed + SLOT_BYTES * (action_slots + goto_slots) as u64;
        (bytes > limit).then_some(LrError::TableBytes {
            bytes,
            states: n,
            cells: cells + gotos,
            limit,
        })
    };
    // Each comb has at least a slot per cell: refuse before packing if even that is over.
    if let Some(e) = over(cells, gotos) {
        return Err(e);
    }
    // A comb's share of the limit, given the other's slots.
    let share = |other: usize| ((limit - fixed) / SLOT_BYTES) as usize - other;
    // Past its share, or past what a u32 indexes (with a limit of many GB).
    let refuse = |action_slots: usize, goto_slots: usize| {
        over(action_slots, goto_slots).unwrap_or(LrError::EncodingLimit {
            what: "the LR table's slot count",
            value: action_slots.max(goto_slots) as u64,
            limit: u32::MAX as u64,
        })
    };
    let action_comb = pack::pack(
        (0..n).map(|s| &sp.cell_terminal[SparseTables::range(&sp.row_start, s)]),
        num_terminals as u32,
        share(gotos),
    )
    .map_err(|e| refuse(e.slots, gotos))?;
    let goto_comb = pack::pack(
        (0..n).map(|s| &sp.goto_nonterminal[SparseTables::range(&sp.goto_start, s)]),
        num_nonterminals as u32,
        share(action_comb.check.len()),
    )
    .map_err(|e| refuse(action_comb.check.len(), e.slots))?;
    // Payloads in slot order: the cell of slot `p` is found in its row by column.
    let cell_of = |index: &[u32], columns: &[u32], row: u32, column: u32| {
        let r = SparseTables::range(index, row as usize);
        r.start
            + columns[r]
                .binary_search(&column)
                .expect("an owned slot is a cell")
    };
    let mut action_index = Vec::with_capacity(action_comb.check.len() + 1);
    let mut actions = Vec::with_capacity(sp.actions.len());
    action_index.push(0u32);
    for (p, &s) in action_comb.check.iter().enumerate() {
        if s != Comb::FREE {
            let t = (p - action_comb.base[s as usize] as usize) as u32;
            let c = cell_of(&sp.row_start, &sp.cell_terminal, s, t);
            actions.extend_from_slice(&sp.actions[SparseTables::range(&sp.cell_start, c)]);
        }
        action_index.push(actions.len() as u32);
    }
    let mut goto_target = vec![LrTables::NO_GOTO; goto_comb.check.len()];
    for (s, a, p) in goto_comb.view().cells() {
        goto_target[p] = sp.goto_target[cell_of(&sp.goto_start, &sp.goto_nonterminal, s, a)];
    }
    Ok(LrTables {
        num_states: n as u32,
        num_terminals: num_terminals as u32,
        num_nonterminals: num_nonterminals as u32,
        start_state: 0,
        action_comb,
        action_index,
        actions,
        goto_comb,
        goto_target,
        rule_lhs: sp.rule_lhs,
        rule_len: sp.rule_len,
    })
}

/// The item sets and the unpacked tables, with every conflicting cell.
fn sparse_tables(
    g: &Grammar,
    limits: LrLimits,
    poll: &mut Poll<'_>,
    steps: &mut u64,
) -> Result<(SparseTables, Vec<Conflict>), LrError> {
    poll.check()?;
    let max_states = limits.max_states;
    within("max_lr_states", max_states, MAX_ENCODABLE_STATES)?;
    // Reduce actions name rules (the augmented rule included) in 30 bits too.
    within(
        "the number of grammar rules",
        g.rules.len() + 1,
        Action::MAX_PAYLOAD as usize,
    )?;
    let aug = Augmented::new(g);
    let num_terminals = aug.eof as usize + 1;
    let start_rule = (aug.rules.len() - 1) as u32;
    let ItemSets {
        kernels,
        transitions,
        closed,
    } = item_sets(&aug, max_states, poll, steps)?;
    drop(kernels);

    let n = closed.len();
    // The expected-terminal sets are dense (a bit per state and terminal): refused
    // here, before the rows, when they alone pass the limit.
    let fixed = fixed_table_bytes(n, num_terminals, 0);
    if fixed > limits.max_table_bytes {
        return Err(LrError::TableBytes {
            bytes: fixed,
            states: n,
            cells: 0,
            limit: limits.max_table_bytes,
        });
    }
    let u32_max = u32::MAX as usize;
    // One row at a time: the actions of a state as (terminal, action) pairs sorted by
    // terminal (shift first, then reductions in item order); only cells present are
    // stored.
    let mut sp = SparseTables {
        rule_lhs: aug.rules.iter().map(|r| r.0).collect(),
        rule_len: aug.rules.iter().map(|r| r.1.len() as u32).collect(),
        ..SparseTables::default()
    };
    let mut conflicts = Vec::new();
    sp.row_start.push(0);
    sp.cell_start.push(0);
    sp.goto_start.push(0);
    let mut row: Vec<(u32, Action)> = Vec::new();
    for st in 0..n {
        poll.tick()?;
        row.clear();
        for &(x, target) in &transitions[st] {
            match x {
                Symbol::Terminal(t) => row.push((t, Action::Shift(target))),
                Symbol::Nonterminal(a) => {
                    sp.goto_nonterminal.push(a);
                    sp.goto_target.push(target);
                }
            }
        }
        let gotos = sp.goto_start[st] as usize..sp.goto_nonterminal.len();
        let mut by_nonterminal: Vec<(u32, u32)> = gotos
            .clone()
            .map(|i| (sp.goto_nonterminal[i], sp.goto_target[i]))
            .collect();
        by_nonterminal.sort_unstable();
        for (i, (a, target)) in gotos.zip(by_nonterminal) {
            sp.goto_nonterminal[i] = a;
            sp.goto_target[i] = target;
        }
        for (r, d, la) in &closed[st] {
            if aug.next(*r, *d).is_some() {
                continue;
            }
            let action = if *r == start_rule {
                Action::Accept
            } else {
                Action::Reduce(*r)
            };
            row.extend(members(la).map(|t| (t, action)));
        }
        row.sort_by_key(|&(t, _)| t);
        // An item set holds one item per core, so no cell gets an action twice.
        debug_assert!(row.windows(2).all(|w| w[0] != w[1]));
        for cell in row.chunk_by(|a, b| a.0 == b.0) {
            let t = cell[0].0;
            sp.cell_terminal.push(t);
            sp.actions.extend(cell.iter().map(|&(_, a)| a.encode()));
            sp.cell_start.push(sp.actions.len().min(u32_max) as u32);
            if cell.len() > 1 {
                let items = closed[st]
                    .iter()
                    .filter(|(r, d, la)| match aug.next(*r, *d) {
                        Some(Symbol::Terminal(x)) => x == t,
                        None => la[t as usize / 64] >> (t % 64) & 1 != 0,
                        _ => false,
                    })
                    .map(|(r, d, _)| aug.render_item(*r, *d))
                    .collect();
                conflicts.push(Conflict {
                    state: st as u32,
                    terminal: t,
                    actions: cell.iter().map(|&(_, a)| a).collect(),
                    items,
                });
            }
        }
        // Checked per row, before an index could lose its top bits.
        within("the number of LR actions", sp.actions.len(), u32_max)?;
        within(
            "the number of LR table cells",
            sp.cell_terminal.len(),
            u32_max,
        )?;
        within("the number of LR gotos", sp.goto_target.len(), u32_max)?;
        sp.row_start.push(sp.cell_terminal.len() as u32);
        sp.goto_start.push(sp.goto_target.len() as u32);
    }
    Ok((sp, conflicts))
}

/// The canonical LR(1) collection: kernels, their transitions and closed item sets,
/// numbered in the order they are found.
struct ItemSets {
    kernels: Vec<ItemSet>,
    /// Per state: (symbol, target) transitions.
    transitions: Vec<Vec<(Symbol, u32)>>,
    /// Per state: the closed item set.
    closed: Vec<ItemSet>,
}

/// Builds the [`ItemSets`] of the augmented grammar, counting its work in `steps`.
fn item_sets(
    aug: &Augmented,
    max_states: usize,
    poll: &mut Poll<'_>,
    steps: &mut u64,
) -> Result<ItemSets, LrError> {
    let start_rule = (aug.rules.len() - 1) as u32;
    let mut eof_set = vec![0u64; aug.words];
    eof_set[aug.eof as usize / 64] |= 1 << (aug.eof % 64);
    let mut kernels: Vec<ItemSet> = vec![vec![(start_rule, 0, eof_set)]];
    let mut index: FxHashMap<ItemSet, u32> = FxHashMap::default();
    index.insert(kernels[0].clone(), 0);
    // Per state: (symbol, target) transitions and the closed item set.
    let mut transitions: Vec<Vec<(Symbol, u32)>> = Vec::new();
    let mut closed: Vec<ItemSet> = Vec::new();

    let mut s = 0;
    while s < kernels.len() {
        poll.tick()?;
        let items = closure(aug, &kernels[s], steps);
        *steps += items.len() as u64;
        // Goto kernels by symbol, in order of the symbol's first item.
        let mut by_symbol: Vec<(Symbol, ItemSet)> = Vec::new();
        let mut symbol_at: FxHashMap<Symbol, usize> = FxHashMap::default();
        for (r, d, la) in &items {
            if let Some(x) = aug.next(*r, *d) {
                let i = *symbol_at.entry(x).or_insert_with(|| {
                    by_symbol.push((x, Vec::new()));
                    by_symbol.len() - 1
                });
                by_symbol[i].1.push((*r, d + 1, la.clone()));
            }
        }
        let mut out = Vec::with_capacity(by_symbol.len());
        for (x, mut kernel) in by_symbol {
            kernel.sort();
            let target = match index.get(&kernel) {
                Some(&t) => t,
                None => {
                    let t = kernels.len() as u32;
                    if kernels.len() >= max_states {
                        return Err(LrError::TooManyStates { limit: max_states });
                    }
                    index.insert(kernel.clone(), t);
                    kernels.push(kernel);
                    t
                }
            };
            out.push((x, target));
        }
        transitions.push(out);
        closed.push(items);
        s += 1;
    }

    Ok(ItemSets {
        kernels,
        transitions,
        closed,
    })
}

/// LR(1) closure of a kernel: predicted items get FIRST(β) plus, when β is nullable,
/// the lookaheads of the item that predicted them.
///
/// Every predicted item `B → • γ` of one closure has the same lookaheads, those of
/// `B`, so the fixpoint runs over predicted nonterminals along the [`Augmented::predicts`]
/// edges (each edge once per change of its source's set) and the items are written out
/// once at the end. Propagating per item instead re-sent a set to every rule of `B`
/// each time it grew: with `n` keywords in `start: (ID | "kw0" | …)+`, `n` items each
/// re-propagated `n` times to `2n` rules, cubic work.
fn closure(aug: &Augmented, kernel: &ItemSet, steps: &mut u64) -> ItemSet {
    // Predicted nonterminals in order of discovery, with their lookaheads.
    let mut predicted: Vec<(u32, Bits)> = Vec::new();
    let mut at: FxHashMap<u32, usize> = FxHashMap::default();
    let mut queued: Vec<bool> = Vec::new();
    let mut work: Vec<usize> = Vec::new();
    let mut add = |b: u32,
                   look: &Bits,
                   predicted: &mut Vec<(u32, Bits)>,
                   queued: &mut Vec<bool>,
                   work: &mut Vec<usize>| {
        *steps += 1;
        match at.get(&b) {
            Some(&j) => {
                if union_into(&mut predicted[j].1, look) && !queued[j] {
                    queued[j] = true;
                    work.push(j);
                }
            }
            None => {
                at.insert(b, predicted.len());
                predicted.push((b, look.clone()));
                queued.push(true);
                work.push(predicted.len() - 1);
            }
        }
    };
    let mut look = vec![0u64; aug.words];
    for (r, d, la) in kernel {
        let Some(Symbol::Nonterminal(b)) = aug.next(*r, *d) else {
            continue;
        };
        let (first, nullable) = &aug.suffix_first[*r as usize][*d as usize + 1];
        look.copy_from_slice(first);
        if *nullable {
            union_into(&mut look, la);
        }
        add(b, &look, &mut predicted, &mut queued, &mut work);
    }
    while let Some(i) = work.pop() {
        queued[i] = false;
        let b = predicted[i].0;
        for (c, first, nullable) in &aug.predicts[b as usize] {
            look.copy_from_slice(first);
            if *nullable {
                union_into(&mut look, &predicted[i].1);
            }
            add(*c, &look, &mut predicted, &mut queued, &mut work);
        }
    }
    let mut items: ItemSet = kernel.clone();
    for (b, la) in &predicted {
        for &rb in &aug.by_lhs[*b as usize] {
            // Only the augmented start rule is a kernel item at dot 0, and nothing
            // predicts it: the union below never meets a kernel item.
            debug_assert!(kernel.iter().all(|k| (k.0, k.1) != (rb, 0)));
            items.push((rb, 0, la.clone()));
        }
    }
    items
}

/// The closure as it was first written (per item, see [`closure`]), kept to check
/// the nonterminal fixpoint against on every shipped grammar.
#[cfg(test)]
fn closure_per_item(aug: &Augmented, kernel: &ItemSet) -> ItemSet {
    let mut items: ItemSet = kernel.clone();
    let mut at: HashMap<(u32, u32), usize> = items
        .iter()
        .enumerate()
        .map(|(i, (r, d, _))| ((*r, *d), i))
        .collect();
    let mut work: Vec<usize> = (0..items.len()).collect();
    while let Some(i) = work.pop() {
        let (r, d) = (items[i].0, items[i].1);
        let Some(Symbol::Nonterminal(b)) = aug.next(r, d) else {
            continue;
        };
        let (first, nullable) = &aug.suffix_first[r as usize][d as usize + 1];
        let mut look = first.clone();
        if *nullable {
            union_into(&mut look, &items[i].2.clone());
        }
        for &rb in &aug.by_lhs[b as usize] {
            match at.get(&(rb, 0)) {
                Some(&j) => {
                    if union_into(&mut items[j].2, &look) {
                        work.push(j);
                    }
                }
                None => {
                    at.insert((rb, 0), items.len());
                    items.push((rb, 0, look.clone()));
                    work.push(items.len() - 1);
                }
            }
        }
    }
    items
}

impl LrAutomaton {
    /// Renders the conflicts for a report: one block per cell.
    pub fn conflict_report(&self, g: &Grammar) -> String {
        let mut out = String::new();
        for c in &self.conflicts {
            let t = if c.terminal as usize == g.terminals.len() {
                "$end"
            } else {
                &g.terminals[c.terminal as usize].name
            };
            let kinds: Vec<&str> = c
                .actions
                .iter()
                .map(|a| {
                    if matches!(a, Action::Shift(_)) {
                        "shift"
                    } else {
                        "reduce"
                    }
                })
                .collect();
            out.push_str(&format!(
                "  state {} on {}: {}\n",
                c.state,
                t,
                kinds.join("/")
            ));
            for it in &c.items {
                out.push_str(&format!("      {it}\n"));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(mut items: ItemSet) -> ItemSet {
        items.sort();
        items
    }

    /// The nonterminal fixpoint closes every kernel of every shipped grammar (and of
    /// keyword, nullable and left-recursive ones) to the same item set as the
    /// per-item closure; the goto kernels are built from the closures, so the two
    /// automata are the same up to state numbering.
    #[test]
    fn closure_by_nonterminals_equals_closure_by_items() {
        let mut sources: Vec<(String, String)> = ["json", "expr", "toml", "sql", "c"]
            .iter()
            .map(|n| {
                let path = format!("{}/../grammars/{n}.lark", env!("CARGO_MANIFEST_DIR"));
                (n.to_string(), std::fs::read_to_string(path).unwrap())
            })
            .collect();
        let kws: Vec<String> = (0..40).map(|i| format!("\"kw{i}\"")).collect();
        sources.push((
            "keywords".into(),
            format!(
                "start: (ID | {})+\nID: /[a-z_][a-z0-9_]*/\n%ignore \" \"\n",
                kws.join(" | ")
            ),
        ));
        sources.push((
            "nullable".into(),
            "start: a b c\na: a \"x\" | b | \nb: c a \"y\" | \"z\" |\nc: a | b \"w\" | \"v\"\n"
                .into(),
        ));
        for (name, src) in &sources {
            let g = crate::parse_grammar(src, name).unwrap();
            let aug = Augmented::new(&g);
            let deadline = Deadline::unlimited();
            let mut poll = deadline.poll(Stage::Lr);
            let sets = item_sets(&aug, 200_000, &mut poll, &mut 0).unwrap();
            assert!(sets.kernels.len() > 3, "{name}");
            for (k, kernel) in sets.kernels.iter().enumerate() {
                assert_eq!(
                    sorted(closure(&aug, kernel, &mut 0)),
                    sorted(closure_per_item(&aug, kernel)),
                    "{name}: state {k}"
                );
            }
        }
    }
}
