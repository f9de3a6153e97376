//! LR(1) parse tables with every conflict kept (GLR).
//!
//! Terminal ids are the grammar's, plus one extra id for end of input
//! ([`LrTables::eof`]); nonterminal ids are the grammar's, plus the augmented start
//! symbol. Actions are stored CSR-style so a `(state, terminal)` cell can hold several
//! actions — that is what a GLR fork is.

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
    /// Packs the action.
    pub fn encode(self) -> u32 {
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

/// The tables a GLR parser runs on.
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
    /// `action_index[s * num_terminals + t] .. action_index[s * num_terminals + t + 1]`
    /// is the range of `actions` for state `s` on terminal `t`.
    pub action_index: Vec<u32>,
    /// Encoded [`Action`]s.
    pub actions: Vec<u32>,
    /// `goto[s * num_nonterminals + a]`: the state after reducing to `a` in state `s`,
    /// or [`LrTables::NO_GOTO`].
    pub goto: Vec<u32>,
    /// Left-hand side of each rule (augmented rule last).
    pub rule_lhs: Vec<u32>,
    /// Right-hand-side length of each rule.
    pub rule_len: Vec<u32>,
}

impl LrTables {
    /// Marks a missing goto entry.
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
            action_index: &self.action_index,
            actions: &self.actions,
            goto: &self.goto,
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
    /// See [`LrTables::action_index`].
    pub action_index: &'a [u32],
    /// See [`LrTables::actions`].
    pub actions: &'a [u32],
    /// See [`LrTables::goto`].
    pub goto: &'a [u32],
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
        let cell = (state * self.num_terminals + terminal) as usize;
        &self.actions[self.action_index[cell] as usize..self.action_index[cell + 1] as usize]
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
        let g = self.goto[(state * self.num_nonterminals + nonterminal) as usize];
        (g != LrTables::NO_GOTO).then_some(g)
    }
}

/// Validates LR tables given as slices (see [`LrTables::validate`]).
pub fn validate_lr(t: LrSlices<'_>) -> Result<(), String> {
    let cells = (t.num_states as usize)
        .checked_mul(t.num_terminals as usize)
        .ok_or("lr: table size overflows")?;
    if t.num_terminals == 0 || t.num_states == 0 || t.start_state >= t.num_states {
        return Err("lr: empty tables or start state out of range".into());
    }
    if t.action_index.len() != cells + 1 || t.action_index[0] != 0 {
        return Err("lr: action index has the wrong length".into());
    }
    if t.action_index.windows(2).any(|w| w[0] > w[1])
        || t.action_index[cells] as usize != t.actions.len()
    {
        return Err("lr: action index is not monotone or does not cover the actions".into());
    }
    let gotos = (t.num_states as usize)
        .checked_mul(t.num_nonterminals as usize)
        .ok_or("lr: goto size overflows")?;
    if t.goto.len() != gotos {
        return Err("lr: goto table has the wrong length".into());
    }
    if t.goto
        .iter()
        .any(|&g| g != LrTables::NO_GOTO && g >= t.num_states)
    {
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
