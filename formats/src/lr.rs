//! LR(1) parse tables with every conflict kept (GLR).
//!
//! Terminal ids are the grammar's, plus one extra id for end of input
//! ([`LrTables::eof`]); nonterminal ids are the grammar's, plus the augmented start
//! symbol. Actions are stored CSR-style so a `(state, terminal)` cell can hold several
//! actions — that is what a GLR fork is.

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
///
/// Besides lengths and targets, the cell counts of the action and goto tables must fit
/// in a `u32`: the accessors above compute `state * columns + column` in `u32` (the
/// hot path), which cannot overflow once the largest product is known to fit.
pub fn validate_lr(t: LrSlices<'_>) -> Result<(), String> {
    let cells = (t.num_states as usize)
        .checked_mul(t.num_terminals as usize)
        .filter(|&c| c <= u32::MAX as usize)
        .ok_or("lr: the action table has more cells than a u32 can index")?;
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
        .filter(|&c| c <= u32::MAX as usize)
        .ok_or("lr: the goto table has more cells than a u32 can index")?;
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
            action_index: vec![0, 0, 0],
            actions: vec![],
            goto: vec![LrTables::NO_GOTO; 2],
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

    #[test]
    fn cell_counts_must_fit_u32_indices() {
        // 65536 states × 65537 columns: more cells than a u32 index reaches. The
        // arrays are empty; the count alone is refused, before any length check.
        let t = LrSlices {
            num_states: 1 << 16,
            num_terminals: (1 << 16) + 1,
            num_nonterminals: 1,
            start_state: 0,
            action_index: &[],
            actions: &[],
            goto: &[],
            rule_lhs: &[],
            rule_len: &[],
        };
        let e = validate_lr(t).unwrap_err();
        assert!(e.contains("action table has more cells than a u32"), "{e}");
        let t = LrSlices {
            num_terminals: 1,
            num_nonterminals: (1 << 16) + 1,
            action_index: &[0; (1 << 16) + 1],
            ..t
        };
        let e = validate_lr(t).unwrap_err();
        assert!(e.contains("goto table has more cells than a u32"), "{e}");
    }
}
