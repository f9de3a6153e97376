//! LR(1) parse tables with every conflict kept (GLR).
//!
//! Terminal ids are the grammar's, plus one extra id for end of input
//! ([`LrTables::eof`]); nonterminal ids are the grammar's, plus the augmented start
//! symbol. A `(state, terminal)` cell can hold several actions — that is what a GLR fork
//! is — so a cell is a range of the action list. Cells and gotos are stored by row
//! displacement ([`Comb`]): the tables grow with the cells present, never with states ×
//! columns.

use crate::Grammar;
use serde::{Deserialize, Serialize};

/// One parser action, packed into a `u32`: the low two bits are the kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Shift the lookahead and go to this state.
    Shift(u32),
    /// Reduce by this rule (index into the grammar's rules; the augmented rule is last).
    Reduce(u32),
    /// Accept (the augmented rule on end of input).
    Accept,
}

impl Action {
    /// Largest state or rule number + 1 an encoded action can hold: the payload has the
    /// 30 bits above the kind. The LR builder refuses automata that would exceed it.
    pub const MAX_PAYLOAD: u32 = 1 << 30;

    /// Packs the action. States and rules must be below [`Action::MAX_PAYLOAD`]; the
    /// builder guarantees it (a larger one would lose its top bits).
    pub fn encode(self) -> u32 {
        debug_assert!(
            match self {
                Action::Shift(x) | Action::Reduce(x) => x < Self::MAX_PAYLOAD,
                Action::Accept => true,
            },
            "{self:?} does not fit in an action code"
        );
        match self {
            Action::Shift(s) => s << 2,
            Action::Reduce(r) => (r << 2) | 1,
            Action::Accept => 2,
        }
    }

    /// Unpacks an action; `None` for an invalid code.
    pub fn decode(code: u32) -> Option<Action> {
        match code & 3 {
            0 => Some(Action::Shift(code >> 2)),
            1 => Some(Action::Reduce(code >> 2)),
            2 if code == 2 => Some(Action::Accept),
            _ => None,
        }
    }
}

/// A sparse table stored by row displacement (a "comb", as in yacc and bison): row `r`'s
/// cells are the slots `base[r] + column`, and a slot belongs to row `r` exactly when
/// `check[slot] == r`. Rows are interleaved so that their cells fill each other's gaps:
/// the arrays grow with the cells present, not with rows × columns, and a lookup is
/// two loads and a compare. Every absent cell reads as absent (no default entries), so
/// "no action" stays distinguishable from an action — the GLR parser and the Parser DWA
/// rely on it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Comb {
    /// Per row: the slot of its column 0 (its cells may start further on).
    pub base: Vec<u32>,
    /// Per slot: the row owning it, or [`Comb::FREE`].
    pub check: Vec<u32>,
}

impl Comb {
    /// Marks a slot no row owns.
    pub const FREE: u32 = u32::MAX;

    /// Borrows the comb.
    pub fn view(&self) -> CombRef<'_> {
        CombRef {
            base: &self.base,
            check: &self.check,
        }
    }
}

/// A [`Comb`] as borrowed slices.
#[derive(Clone, Copy, Debug)]
pub struct CombRef<'a> {
    /// See [`Comb::base`].
    pub base: &'a [u32],
    /// See [`Comb::check`].
    pub check: &'a [u32],
}

impl<'a> CombRef<'a> {
    /// The slot of cell `(row, column)`, if the cell is present. Validated combs keep
    /// `base[row] + column` below `check.len()` for every row and column, in `u32`.
    #[inline]
    pub fn slot(&self, row: u32, column: u32) -> Option<usize> {
        let p = (self.base[row as usize] + column) as usize;
        (self.check[p] == row).then_some(p)
    }

    /// Every present cell as `(row, column, slot)`, in slot order: linear in the comb,
    /// whatever the number of rows × columns.
    pub fn cells(&self) -> impl Iterator<Item = (u32, u32, usize)> + 'a {
        let (base, check) = (self.base, self.check);
        check
            .iter()
            .enumerate()
            .filter(|&(_, &r)| r != Comb::FREE)
            .map(move |(p, &r)| (r, p as u32 - base[r as usize], p))
    }

    /// Checks that every lookup of a row below `rows` and a column below `columns`
    /// stays in bounds (and in `u32`), and that every owned slot lies within its row.
    fn validate(&self, rows: u32, columns: u32, what: &str) -> Result<(), String> {
        if self.base.len() != rows as usize {
            return Err(format!("lr: {what} row bases have the wrong length"));
        }
        let len = self.check.len() as u64;
        if len > u32::MAX as u64 {
            return Err(format!(
                "lr: {what} comb has more slots than a u32 can index"
            ));
        }
        if self.base.iter().any(|&b| b as u64 + columns as u64 > len) {
            return Err(format!("lr: {what} row base out of range"));
        }
        for (p, &r) in self.check.iter().enumerate() {
            if r == Comb::FREE {
                continue;
            }
            if r >= rows {
                return Err(format!("lr: {what} slot {p} names row {r}, out of range"));
            }
            let b = self.base[r as usize] as usize;
            if p < b || p - b >= columns as usize {
                return Err(format!("lr: {what} slot {p} lies outside its row {r}"));
            }
        }
        Ok(())
    }

    /// Bytes the comb takes.
    fn bytes(&self) -> u64 {
        4 * (self.base.len() + self.check.len()) as u64
    }
}

/// The tables a GLR parser runs on, compressed: the action cells and the gotos are
/// each a [`Comb`], so their size follows the cells present (a chain of 20,000 nested
/// rules has 60,000 states and 80,000 nonterminal columns, but about two gotos a state).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct LrTables {
    /// Number of LR states.
    pub num_states: u32,
    /// Number of terminal columns: the grammar's terminals plus end of input.
    pub num_terminals: u32,
    /// Number of nonterminal columns: the grammar's nonterminals plus the augmented start.
    pub num_nonterminals: u32,
    /// The initial state.
    pub start_state: u32,
    /// Action cells: rows are states, columns terminals.
    pub action_comb: Comb,
    /// `action_index[p] .. action_index[p + 1]` is the range of `actions` of the cell
    /// at slot `p` of [`Self::action_comb`] (empty for a free slot); one entry more
    /// than the comb has slots.
    pub action_index: Vec<u32>,
    /// Encoded [`Action`]s.
    pub actions: Vec<u32>,
    /// Gotos: rows are states, columns nonterminals.
    pub goto_comb: Comb,
    /// Per slot of [`Self::goto_comb`]: the state after reducing to the column's
    /// nonterminal in the row's state ([`LrTables::NO_GOTO`] in free slots).
    pub goto_target: Vec<u32>,
    /// Left-hand side of each rule (augmented rule last).
    pub rule_lhs: Vec<u32>,
    /// Right-hand-side length of each rule.
    pub rule_len: Vec<u32>,
}

impl LrTables {
    /// Fills the free goto slots.
    pub const NO_GOTO: u32 = u32::MAX;

    /// The end-of-input terminal id.
    pub fn eof(&self) -> u32 {
        self.num_terminals - 1
    }

    /// Borrows the tables.
    pub fn view(&self) -> LrSlices<'_> {
        LrSlices {
            num_states: self.num_states,
            num_terminals: self.num_terminals,
            num_nonterminals: self.num_nonterminals,
            start_state: self.start_state,
            action_comb: self.action_comb.view(),
            action_index: &self.action_index,
            actions: &self.actions,
            goto_comb: self.goto_comb.view(),
            goto_target: &self.goto_target,
            rule_lhs: &self.rule_lhs,
            rule_len: &self.rule_len,
        }
    }

    /// Encoded actions of `state` on `terminal`.
    pub fn actions(&self, state: u32, terminal: u32) -> &[u32] {
        self.view().actions(state, terminal)
    }

    /// Checks every length, index and encoded action, so a runtime that trusts the
    /// tables after this never indexes out of bounds.
    pub fn validate(&self) -> Result<(), String> {
        validate_lr(self.view())
    }
}

/// LR tables as borrowed slices: from [`LrTables`] or in place from an artifact.
#[derive(Clone, Copy, Debug)]
pub struct LrSlices<'a> {
    /// See [`LrTables::num_states`].
    pub num_states: u32,
    /// See [`LrTables::num_terminals`].
    pub num_terminals: u32,
    /// See [`LrTables::num_nonterminals`].
    pub num_nonterminals: u32,
    /// See [`LrTables::start_state`].
    pub start_state: u32,
    /// See [`LrTables::action_comb`].
    pub action_comb: CombRef<'a>,
    /// See [`LrTables::action_index`].
    pub action_index: &'a [u32],
    /// See [`LrTables::actions`].
    pub actions: &'a [u32],
    /// See [`LrTables::goto_comb`].
    pub goto_comb: CombRef<'a>,
    /// See [`LrTables::goto_target`].
    pub goto_target: &'a [u32],
    /// See [`LrTables::rule_lhs`].
    pub rule_lhs: &'a [u32],
    /// See [`LrTables::rule_len`].
    pub rule_len: &'a [u32],
}

impl<'a> LrSlices<'a> {
    /// The end-of-input terminal id.
    pub fn eof(&self) -> u32 {
        self.num_terminals - 1
    }

    /// Encoded actions of `state` on `terminal`.
    #[inline]
    pub fn actions(&self, state: u32, terminal: u32) -> &'a [u32] {
        let c = self.action_comb;
        let p = (c.base[state as usize] + terminal) as usize;
        let lo = self.action_index[p] as usize;
        // A slot of another row reads as the empty range (a select, not a branch).
        let hi = if c.check[p] == state {
            self.action_index[p + 1] as usize
        } else {
            lo
        };
        &self.actions[lo..hi]
    }

    /// Decoded actions of `state` on `terminal`.
    #[inline]
    pub fn decoded_actions(&self, state: u32, terminal: u32) -> impl Iterator<Item = Action> + 'a {
        self.actions(state, terminal)
            .iter()
            .filter_map(|&c| Action::decode(c))
    }

    /// Goto after reducing to `nonterminal` in `state`.
    #[inline]
    pub fn goto(&self, state: u32, nonterminal: u32) -> Option<u32> {
        self.goto_comb
            .slot(state, nonterminal)
            .map(|p| self.goto_target[p])
    }

    /// Every cell with actions as `(state, terminal, encoded actions)`, in no particular
    /// order; linear in the table's size.
    pub fn action_cells(&self) -> impl Iterator<Item = (u32, u32, &'a [u32])> + 'a {
        let (index, actions) = (self.action_index, self.actions);
        self.action_comb
            .cells()
            .map(move |(s, t, p)| (s, t, &actions[index[p] as usize..index[p + 1] as usize]))
    }

    /// Every goto as `(state, nonterminal, target)`, in no particular order; linear in
    /// the table's size.
    pub fn gotos(&self) -> impl Iterator<Item = (u32, u32, u32)> + 'a {
        let target = self.goto_target;
        self.goto_comb
            .cells()
            .map(move |(s, a, p)| (s, a, target[p]))
    }

    /// Bytes of the action and goto tables (the rule tables are the grammar's size).
    pub fn table_bytes(&self) -> u64 {
        self.action_comb.bytes()
            + 4 * (self.action_index.len() + self.actions.len() + self.goto_target.len()) as u64
            + self.goto_comb.bytes()
    }
}

/// Validates LR tables given as slices (see [`LrTables::validate`]): both combs keep
/// every lookup in bounds, the action index is a monotone cover of the actions that
/// gives owned slots at least one action and free slots none, and every action and
/// goto target names a state or rule that exists.
pub fn validate_lr(t: LrSlices<'_>) -> Result<(), String> {
    if t.num_terminals == 0 || t.num_states == 0 || t.start_state >= t.num_states {
        return Err("lr: empty tables or start state out of range".into());
    }
    t.action_comb
        .validate(t.num_states, t.num_terminals, "action")?;
    t.goto_comb
        .validate(t.num_states, t.num_nonterminals, "goto")?;
    let slots = t.action_comb.check.len();
    if t.action_index.len() != slots + 1 || t.action_index[0] != 0 {
        return Err("lr: action index has the wrong length".into());
    }
    if t.action_index.windows(2).any(|w| w[0] > w[1])
        || t.action_index[slots] as usize != t.actions.len()
    {
        return Err("lr: action index is not monotone or does not cover the actions".into());
    }
    if let Some(p) = (0..slots).find(|&p| {
        let owned = t.action_comb.check[p] != Comb::FREE;
        owned != (t.action_index[p] < t.action_index[p + 1])
    }) {
        return Err(format!(
            "lr: action slot {p} is owned without actions or has actions without an owner"
        ));
    }
    if t.goto_target.len() != t.goto_comb.check.len() {
        return Err("lr: goto targets have the wrong length".into());
    }
    if t.gotos().any(|(_, _, g)| g >= t.num_states) {
        return Err("lr: goto target out of range".into());
    }
    let rules = t.rule_lhs.len();
    if t.rule_len.len() != rules || t.rule_lhs.iter().any(|&a| a >= t.num_nonterminals) {
        return Err("lr: rule tables are inconsistent".into());
    }
    for &code in t.actions {
        match Action::decode(code) {
            Some(Action::Shift(s)) if s < t.num_states => {}
            Some(Action::Reduce(r)) if (r as usize) < rules => {}
            Some(Action::Accept) => {}
            _ => return Err(format!("lr: invalid action code {code}")),
        }
    }
    Ok(())
}

/// Checks LR tables against the grammar they claim to be built from (the normalized
/// grammar an artifact's metadata carries): one rule per grammar rule plus the
/// augmented rule `S' → start` last, each with the grammar rule's left-hand side and
/// right-hand-side length, and the column counts of the grammar.
///
/// [`validate_lr`] alone only bounds the rule tables by themselves; a runtime reduction
/// pops `rule_len[r]` GSS levels, so a length that disagrees with the grammar is a
/// wrong parse at best and, when huge, a reduction that walks the stack for billions of
/// levels. Tying each length to a right-hand side stored in the metadata bounds it by
/// the metadata's size.
pub fn validate_lr_grammar(t: LrSlices<'_>, g: &Grammar) -> Result<(), String> {
    if t.num_terminals as usize != g.terminals.len() + 1 {
        return Err(format!(
            "lr: {} terminal columns, but the grammar has {} terminals (+ end of input)",
            t.num_terminals,
            g.terminals.len()
        ));
    }
    let augmented_lhs = g.nonterminals.len();
    if t.num_nonterminals as usize != augmented_lhs + 1 {
        return Err(format!(
            "lr: {} nonterminal columns, but the grammar has {} nonterminals (+ the augmented start)",
            t.num_nonterminals, augmented_lhs
        ));
    }
    if t.rule_lhs.len() != g.rules.len() + 1 || t.rule_len.len() != g.rules.len() + 1 {
        return Err(format!(
            "lr: {} rule left-hand sides and {} rule lengths, but the grammar has {} rules (+ the augmented rule)",
            t.rule_lhs.len(),
            t.rule_len.len(),
            g.rules.len()
        ));
    }
    // The augmented rule as the LR builder writes it: `S' → start`, S' numbered after
    // the grammar's nonterminals.
    let expected = g
        .rules
        .iter()
        .map(|r| (r.lhs as usize, r.rhs.len()))
        .chain([(augmented_lhs, 1)]);
    for (r, (lhs, len)) in expected.enumerate() {
        if t.rule_lhs[r] as usize != lhs {
            return Err(format!(
                "lr: rule {r} has left-hand side {} in the tables but {lhs} in the grammar",
                t.rule_lhs[r]
            ));
        }
        if t.rule_len[r] as usize != len {
            return Err(format!(
                "lr: rule {r} has length {} in the tables but {len} in the grammar",
                t.rule_len[r]
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Nonterminal, Rule, Symbol, Terminal};

    /// A damage to the fixture and the message it must produce.
    type Edit = (fn(&mut LrTables), &'static str);

    #[test]
    fn actions_round_trip_up_to_the_payload_limit() {
        for a in [
            Action::Shift(0),
            Action::Shift(Action::MAX_PAYLOAD - 1),
            Action::Reduce(0),
            Action::Reduce(Action::MAX_PAYLOAD - 1),
            Action::Accept,
        ] {
            assert_eq!(Action::decode(a.encode()), Some(a));
        }
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "does not fit in an action code")]
    fn encoding_a_state_past_the_payload_limit_is_a_bug() {
        let _ = Action::Shift(Action::MAX_PAYLOAD).encode();
    }

    /// `S → a S | ε` with its augmented rule, as the builder writes the rule tables.
    fn grammar_and_tables() -> (Grammar, LrTables) {
        let g = Grammar {
            source_name: "g".into(),
            terminals: vec![Terminal {
                name: "a".into(),
                regex: "a".into(),
                lazy: false,
                priority: 0,
                defined_at: None,
                difference: None,
            }],
            nonterminals: vec![Nonterminal { name: "s".into() }],
            rules: vec![
                Rule {
                    lhs: 0,
                    rhs: vec![Symbol::Terminal(0), Symbol::Nonterminal(0)],
                },
                Rule {
                    lhs: 0,
                    rhs: vec![],
                },
            ],
            start: 0,
            ignore: vec![],
            allow_initial_skip: false,
        };
        let t = LrTables {
            num_states: 1,
            num_terminals: 2,
            num_nonterminals: 2,
            start_state: 0,
            action_comb: Comb {
                base: vec![0],
                check: vec![Comb::FREE; 2],
            },
            action_index: vec![0, 0, 0],
            actions: vec![],
            goto_comb: Comb {
                base: vec![0],
                check: vec![Comb::FREE; 2],
            },
            goto_target: vec![LrTables::NO_GOTO; 2],
            rule_lhs: vec![0, 0, 1],
            rule_len: vec![2, 0, 1],
        };
        (g, t)
    }

    #[test]
    fn rule_tables_must_match_the_grammar() {
        let (g, good) = grammar_and_tables();
        validate_lr_grammar(good.view(), &g).unwrap();
        let cases: [Edit; 6] = [
            (|t| t.rule_len[0] = 3, "rule 0 has length 3"),
            (|t| t.rule_len[1] = 1, "rule 1 has length 1"),
            (|t| t.rule_len[2] = 2, "rule 2 has length 2"),
            (|t| t.rule_lhs[1] = 1, "rule 1 has left-hand side 1"),
            (
                |t| {
                    t.rule_lhs.pop();
                    t.rule_len.pop();
                },
                "the grammar has 2 rules",
            ),
            (|t| t.num_nonterminals = 3, "nonterminal columns"),
        ];
        for (edit, message) in cases {
            let mut t = good.clone();
            edit(&mut t);
            let e = validate_lr_grammar(t.view(), &g).unwrap_err();
            assert!(e.contains(message), "{message:?} not in {e:?}");
        }
    }

    /// Two states over terminals `a`, `$end`: state 0 shifts `a` to 1 and reduces rule
    /// 1 on `$end`, state 1 accepts on `$end`; goto(0, s) = 1. Rows interleaved: state
    /// 1's row starts at slot 1, so its `$end` cell is slot 2, after state 0's.
    fn packed() -> LrTables {
        let (_, mut t) = grammar_and_tables();
        t.num_states = 2;
        t.action_comb = Comb {
            base: vec![0, 1],
            check: vec![0, 0, 1],
        };
        t.action_index = vec![0, 1, 2, 3];
        t.actions = vec![
            Action::Shift(1).encode(),
            Action::Reduce(1).encode(),
            Action::Accept.encode(),
        ];
        t.goto_comb = Comb {
            base: vec![0, 0],
            check: vec![0, Comb::FREE],
        };
        t.goto_target = vec![1, LrTables::NO_GOTO];
        t
    }

    #[test]
    fn lookups_read_only_the_rows_own_slots() {
        let t = packed();
        t.validate().unwrap();
        let v = t.view();
        let cell = |s, a| v.decoded_actions(s, a).collect::<Vec<_>>();
        assert_eq!(cell(0, 0), [Action::Shift(1)]);
        assert_eq!(cell(0, 1), [Action::Reduce(1)]);
        // Slot 1 is state 0's `$end` cell, where state 1's `a` would be: absent.
        assert_eq!(cell(1, 0), []);
        assert_eq!(cell(1, 1), [Action::Accept]);
        assert_eq!((v.goto(0, 0), v.goto(0, 1)), (Some(1), None));
        assert_eq!((v.goto(1, 0), v.goto(1, 1)), (None, None));
        let mut cells: Vec<(u32, u32, usize)> =
            v.action_cells().map(|(s, a, c)| (s, a, c.len())).collect();
        cells.sort();
        assert_eq!(cells, [(0, 0, 1), (0, 1, 1), (1, 1, 1)]);
        assert_eq!(v.gotos().collect::<Vec<_>>(), [(0, 0, 1)]);
    }

    #[test]
    fn damaged_combs_are_refused() {
        let cases: [Edit; 10] = [
            (
                |t| t.action_comb.base[1] = 2,
                "action row base out of range",
            ),
            (
                |t| t.action_comb.base[1] = u32::MAX,
                "action row base out of range",
            ),
            (
                |t| t.action_comb.base.push(0),
                "action row bases have the wrong length",
            ),
            (|t| t.action_comb.check[2] = 2, "names row 2, out of range"),
            (
                |t| t.action_comb.check[0] = 1,
                "slot 0 lies outside its row 1",
            ),
            (
                |t| t.action_comb.check[1] = Comb::FREE,
                "owned without actions or has actions without an owner",
            ),
            (|t| t.action_index[1] = 0, "owned without actions"),
            (|t| t.goto_comb.check[1] = 2, "goto slot 1 names row 2"),
            (|t| t.goto_target[0] = 2, "goto target out of range"),
            (
                |t| {
                    t.goto_target.pop();
                },
                "goto targets have the wrong length",
            ),
        ];
        for (edit, message) in cases {
            let mut t = packed();
            edit(&mut t);
            let e = t.validate().unwrap_err();
            assert!(e.contains(message), "{message:?} not in {e:?}");
        }
        // A free goto slot may hold anything: it is never read.
        let mut t = packed();
        t.goto_target[1] = 7;
        t.validate().unwrap();
    }
}
