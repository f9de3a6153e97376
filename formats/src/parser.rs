//! Everything the GLR runtime reads, as flat arrays: the terminal DFAs merged into one
//! transition table, the LR tables, and per-state expected-terminal sets.
//!
//! [`ParserTables`] owns the arrays (the compiler builds it; the artifact stores each
//! array as its own aligned section); [`TablesRef`] borrows them — from a
//! `ParserTables` or straight from an mmap'd artifact — and is what the runtime uses.

use crate::dfa::ReverseEdges;
use crate::lr::LrSlices;
use crate::{ByteDfa, LrTables};

use serde::{Deserialize, Serialize};

/// Interned lexer configurations (built by the compiler's `lexer_configs` stage):
/// every lexeme that started at one boundary, advanced with one lookup per byte.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct LexerConfigs {
    /// Per LR state: its expected class.
    pub state_class: Vec<u32>,
    /// `class_start[class * 256 + b]`: the configuration of the grammar lexemes that
    /// start with byte `b` where the LR state has that expected class.
    pub class_start: Vec<u32>,
    /// `ignore_start[b]`: the configuration of the ignore lexemes starting with `b`.
    pub ignore_start: Vec<u32>,
    /// `next[c * k + byte_class[b]]`: configuration `c` after byte `b` (0 = nothing
    /// alive), `k` columns per configuration as in [`ParserTables::dfa_trans`].
    pub next: Vec<u32>,
    /// Elements of configuration `c`: `elems[elem_index[c]..elem_index[c + 1]]`.
    pub elem_index: Vec<u32>,
    /// Merged-DFA states, sorted per configuration.
    pub elems: Vec<u32>,
    /// Per configuration: 1 if some element is accepting (some lexeme may end).
    pub flags: Vec<u8>,
    /// Terminal of each merged DFA state (`u32::MAX` for the dead state).
    pub dfa_term: Vec<u32>,
}

/// Owned parser tables.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ParserTables {
    /// All terminal DFAs in one table: global state 0 is the shared dead state,
    /// `dfa_trans[s * byte_classes + byte_class[b]]` the successor. One column per byte
    /// class, not per byte: a `date-time` lexeme's 11,000 states took 11 MB at 256
    /// columns and its lexer configurations as much again, written, loaded and checked
    /// for every schema that has one; its bytes fall into ~20 classes.
    pub dfa_trans: Vec<u32>,
    /// Per byte: its class, the column it reads in [`Self::dfa_trans`] and
    /// [`LexerConfigs::next`] (bytes no terminal DFA tells apart share one).
    pub byte_class: Vec<u8>,
    /// Number of byte classes (columns per state).
    pub byte_classes: u32,
    /// Per global DFA state: [`ByteDfa::ACCEPTING`] | [`ByteDfa::LIVE`].
    pub dfa_flags: Vec<u8>,
    /// Per terminal: its start state in the global table.
    pub dfa_start: Vec<u32>,
    /// Per terminal, plus a final entry: the first global state of each terminal's DFA
    /// (its states are `dfa_base[t]..dfa_base[t + 1]`).
    pub dfa_base: Vec<u32>,
    /// Per terminal: 1 if lazy.
    pub lazy: Vec<u8>,
    /// Ignore terminals.
    pub ignore: Vec<u32>,
    /// Whether ignore lexemes may come first.
    pub allow_initial_skip: bool,
    /// LR tables.
    pub lr: LrTables,
    /// Per LR state, `expected_words` words: the terminals with an action there (end
    /// of input excluded). With canonical LR(1) these are exactly the terminals that
    /// can be shifted next.
    pub expected: Vec<u64>,
    /// Words per state in `expected`.
    pub expected_words: u32,
    /// Interned lexer configurations.
    pub configs: LexerConfigs,
    /// Per merged DFA state of an ignore terminal: the row of [`Self::follow_sets`]
    /// naming the grammar terminals that can come next if the ignore lexeme ends from
    /// here (greedy lexing may leave it few), or [`NO_FOLLOW_LIMIT`] where every
    /// terminal can. Empty when no ignore lexeme limits what follows it (the grammar
    /// has no greedy dead ends).
    pub ignore_follow: Vec<u32>,
    /// Terminal sets, `expected_words` words each (see [`Self::ignore_follow`]).
    pub follow_sets: Vec<u64>,
}

/// Whether every row of `sets` (`words` words each) names only terminals below
/// `terminals`: end of input and the padding bits of the last word stay clear.
fn grammar_terminals_only(sets: &[u64], words: usize, terminals: usize) -> bool {
    sets.iter().enumerate().all(|(i, &w)| {
        let first = (i % words) * 64;
        let allowed = if first + 64 <= terminals {
            u64::MAX
        } else if first >= terminals {
            0
        } else {
            (1u64 << (terminals - first)) - 1
        };
        w & !allowed == 0
    })
}

/// [`ParserTables::ignore_follow`] entry for "any terminal may follow".
pub const NO_FOLLOW_LIMIT: u32 = u32::MAX;

/// Borrowed parser tables; see the module docs. Build it only from validated data
/// ([`ParserTables::validate`] or the artifact loader), which makes every index the
/// runtime computes in bounds.
#[derive(Clone, Copy, Debug)]
pub struct TablesRef<'a> {
    /// See [`ParserTables::dfa_trans`].
    pub dfa_trans: &'a [u32],
    /// See [`ParserTables::byte_class`].
    pub byte_class: &'a [u8],
    /// See [`ParserTables::byte_classes`].
    pub byte_classes: u32,
    /// See [`ParserTables::dfa_flags`].
    pub dfa_flags: &'a [u8],
    /// See [`ParserTables::dfa_start`].
    pub dfa_start: &'a [u32],
    /// See [`ParserTables::lazy`].
    pub lazy: &'a [u8],
    /// See [`ParserTables::ignore`].
    pub ignore: &'a [u32],
    /// See [`ParserTables::allow_initial_skip`].
    pub allow_initial_skip: bool,
    /// The LR tables.
    pub lr: LrSlices<'a>,
    /// See [`ParserTables::expected`].
    pub expected: &'a [u64],
    /// See [`ParserTables::expected_words`].
    pub expected_words: u32,
    /// See [`LexerConfigs::state_class`].
    pub state_class: &'a [u32],
    /// See [`LexerConfigs::class_start`].
    pub class_start: &'a [u32],
    /// See [`LexerConfigs::ignore_start`].
    pub ignore_start: &'a [u32],
    /// See [`LexerConfigs::next`].
    pub conf_next: &'a [u32],
    /// See [`LexerConfigs::elem_index`].
    pub conf_elem_index: &'a [u32],
    /// See [`LexerConfigs::elems`].
    pub conf_elems: &'a [u32],
    /// See [`LexerConfigs::flags`].
    pub conf_flags: &'a [u8],
    /// See [`LexerConfigs::dfa_term`].
    pub dfa_term: &'a [u32],
    /// See [`ParserTables::ignore_follow`].
    pub ignore_follow: &'a [u32],
    /// See [`ParserTables::follow_sets`].
    pub follow_sets: &'a [u64],
}

impl ParserTables {
    /// Builds the tables from per-terminal DFAs and LR tables.
    pub fn new(
        dfas: &[ByteDfa],
        lazy: &[bool],
        ignore: &[u32],
        allow_initial_skip: bool,
        lr: LrTables,
    ) -> Self {
        let (byte_class, byte_classes) = byte_partition(dfas);
        let reps = class_representatives(&byte_class, byte_classes);
        let mut dfa_trans = vec![0u32; reps.len()];
        let mut dfa_flags = vec![0u8];
        let mut dfa_start = Vec::with_capacity(dfas.len());
        let mut dfa_base = Vec::with_capacity(dfas.len() + 1);
        for d in dfas {
            // Local state s > 0 becomes base + s - 1; local DEAD stays global 0.
            let base = dfa_flags.len() as u32;
            dfa_base.push(base);
            let global = |s: u32| if s == ByteDfa::DEAD { 0 } else { base + s - 1 };
            for s in 1..d.num_states() as u32 {
                dfa_trans.extend(reps.iter().map(|&b| global(d.next(s, b))));
                dfa_flags.push(d.flags[s as usize]);
            }
            dfa_start.push(global(d.start));
        }
        dfa_base.push(dfa_flags.len() as u32);
        let words = (lr.num_terminals as usize).div_ceil(64);
        let eof = lr.eof();
        let mut expected = vec![0u64; lr.num_states as usize * words];
        for (s, t, _) in lr.view().action_cells().filter(|&(_, t, _)| t != eof) {
            expected[s as usize * words + t as usize / 64] |= 1 << (t % 64);
        }
        ParserTables {
            dfa_trans,
            byte_class: byte_class.to_vec(),
            byte_classes,
            dfa_flags,
            dfa_start,
            dfa_base,
            lazy: lazy.iter().map(|&l| l as u8).collect(),
            ignore: ignore.to_vec(),
            allow_initial_skip,
            lr,
            expected,
            expected_words: words as u32,
            configs: LexerConfigs::default(),
            ignore_follow: Vec::new(),
            follow_sets: Vec::new(),
        }
    }

    /// Borrows the tables.
    pub fn view(&self) -> TablesRef<'_> {
        TablesRef {
            dfa_trans: &self.dfa_trans,
            byte_class: &self.byte_class,
            byte_classes: self.byte_classes,
            dfa_flags: &self.dfa_flags,
            dfa_start: &self.dfa_start,
            lazy: &self.lazy,
            ignore: &self.ignore,
            allow_initial_skip: self.allow_initial_skip,
            lr: self.lr.view(),
            expected: &self.expected,
            expected_words: self.expected_words,
            state_class: &self.configs.state_class,
            class_start: &self.configs.class_start,
            ignore_start: &self.configs.ignore_start,
            conf_next: &self.configs.next,
            conf_elem_index: &self.configs.elem_index,
            conf_elems: &self.configs.elems,
            conf_flags: &self.configs.flags,
            dfa_term: &self.configs.dfa_term,
            ignore_follow: &self.ignore_follow,
            follow_sets: &self.follow_sets,
        }
    }
}

impl TablesRef<'_> {
    /// Checks every length and index, so that a runtime using these tables never
    /// indexes out of bounds.
    pub fn validate(&self) -> Result<(), String> {
        let states = self.dfa_flags.len();
        let k = self.byte_classes as usize;
        if self.byte_class.len() != 256 || k == 0 || k > 256 {
            return Err("dfa: the byte class table must map 256 bytes to 1..=256 classes".into());
        }
        if self.byte_class.iter().any(|&c| c as usize >= k) {
            return Err("dfa: byte class out of range".into());
        }
        if states == 0 || self.dfa_trans.len() != states * k {
            return Err("dfa: transition table does not match the state count".into());
        }
        if self
            .dfa_trans
            .iter()
            .chain(self.dfa_start)
            .any(|&s| s as usize >= states)
        {
            return Err("dfa: state out of range".into());
        }
        if self.dfa_flags[0] != 0 || self.dfa_trans[..k].iter().any(|&s| s != 0) {
            return Err("dfa: state 0 must be the dead sink".into());
        }
        self.validate_liveness()?;
        let terminals = self.dfa_start.len();
        if self.lr.num_terminals as usize != terminals + 1 || self.lazy.len() != terminals {
            return Err("tables: terminal counts disagree".into());
        }
        if self.ignore.iter().any(|&t| t as usize >= terminals) {
            return Err("tables: ignore terminal out of range".into());
        }
        if self.expected_words as usize != (self.lr.num_terminals as usize).div_ceil(64) {
            return Err("tables: expected-terminal sets have the wrong width".into());
        }
        let num_states = self.lr.num_states as usize;
        // `expects` computes `state * expected_words` in u32: the whole table must be
        // indexable by a u32 for that product not to overflow.
        let expected_len = num_states
            .checked_mul(self.expected_words as usize)
            .filter(|&n| n <= u32::MAX as usize)
            .ok_or("tables: expected-terminal sets have more words than a u32 can index")?;
        if self.expected.len() != expected_len {
            return Err("tables: expected-terminal sets have the wrong size".into());
        }
        // Only grammar terminals may be expected: end of input and the padding bits of
        // the last word stay clear, so `expects` never names a terminal without a DFA.
        let words = (self.expected_words as usize).max(1);
        if !grammar_terminals_only(self.expected, words, terminals) {
            return Err(
                "tables: an expected-terminal set names a terminal that is not a grammar terminal"
                    .into(),
            );
        }
        self.validate_configs(terminals, num_states)?;
        self.validate_follow_sets(words)?;
        crate::lr::validate_lr(self.lr)
    }

    /// Checks the invariants the lexers rely on: every state's `LIVE` flag says
    /// exactly whether an accepting state is reachable from it, and every start state
    /// other than 0 is live. A transition other than 0 means "the byte extends the
    /// lexeme" (greedy lexing, [`TablesRef::may_end`]); it may lead to a state that is
    /// not live (a terminal split by exit block keeps its parent's transitions, see
    /// `ByteDfa::extends`), so whether a lexeme goes on is read from the `LIVE` flag —
    /// by the compiler when it builds the lexer configurations (whose elements are
    /// checked to be live in `validate_configs`) and by the reference path.
    ///
    /// Liveness is recomputed backwards from the accepting states over the nonzero
    /// transitions (linear in the table; most transitions are 0).
    fn validate_liveness(&self) -> Result<(), String> {
        let n = self.dfa_flags.len();
        let bad = |what: String| Err(format!("dfa: {what}"));
        if let Some(s) =
            (0..n).find(|&s| self.dfa_accepting(s as u32) && self.dfa_flags[s] & ByteDfa::LIVE == 0)
        {
            return bad(format!("state {s} is accepting but not live"));
        }
        let mut live: Vec<bool> = (0..n).map(|s| self.dfa_accepting(s as u32)).collect();
        ReverseEdges::new(self.dfa_trans, self.byte_classes as usize, |_| true)
            .spread_backwards(&mut live, &mut Vec::new());
        if let Some(s) = (0..n).find(|&s| live[s] != (self.dfa_flags[s] & ByteDfa::LIVE != 0)) {
            return bad(format!(
                "state {s}'s live flag disagrees with its transitions (it {} reach an accepting state)",
                if live[s] { "can" } else { "cannot" }
            ));
        }
        if let Some(t) = self
            .dfa_start
            .iter()
            .position(|&s| s != 0 && !live[s as usize])
        {
            return bad(format!(
                "terminal {t} starts in a state that cannot reach an accepting state"
            ));
        }
        Ok(())
    }

    fn validate_follow_sets(&self, words: usize) -> Result<(), String> {
        let bad = |what: &str| Err(format!("ignore follow sets: {what}"));
        if self.ignore_follow.is_empty() {
            return if self.follow_sets.is_empty() {
                Ok(())
            } else {
                bad("sets without an index")
            };
        }
        if self.ignore_follow.len() != self.dfa_flags.len() {
            return bad("index has the wrong length");
        }
        if !self.follow_sets.len().is_multiple_of(words) {
            return bad("sets have the wrong width");
        }
        let rows = self.follow_sets.len() / words;
        if self
            .ignore_follow
            .iter()
            .any(|&r| r != NO_FOLLOW_LIMIT && r as usize >= rows)
        {
            return bad("row out of range");
        }
        // The same padding rule as `expected`: grammar terminals only.
        if !grammar_terminals_only(self.follow_sets, words, self.dfa_start.len()) {
            return bad("a set names a terminal that is not a grammar terminal");
        }
        Ok(())
    }

    fn validate_configs(&self, terminals: usize, num_states: usize) -> Result<(), String> {
        let n = self.conf_flags.len();
        let bad = |what: &str| Err(format!("lexer configurations: {what}"));
        if n == 0
            || self.conf_elem_index.len() != n + 1
            || self.conf_next.len() != n * self.byte_classes as usize
            || self.ignore_start.len() != 256
        {
            return bad("table sizes disagree");
        }
        if self.state_class.len() != num_states || !self.class_start.len().is_multiple_of(256) {
            return bad("expected classes have the wrong size");
        }
        let classes = self.class_start.len() / 256;
        if self.state_class.iter().any(|&c| c as usize >= classes) {
            return bad("expected class out of range");
        }
        if self
            .class_start
            .iter()
            .chain(self.ignore_start)
            .chain(self.conf_next)
            .any(|&c| c as usize >= n)
        {
            return bad("configuration id out of range");
        }
        if self.conf_elem_index[0] != 0
            || self.conf_elem_index.windows(2).any(|w| w[0] > w[1])
            || self.conf_elem_index[n] as usize != self.conf_elems.len()
        {
            return bad("element index is not monotone");
        }
        if self.dfa_term.len() != self.dfa_flags.len() || self.dfa_term[0] != u32::MAX {
            return bad("terminal-of-state table has the wrong size");
        }
        if self.dfa_term[1..].iter().any(|&t| t as usize >= terminals) {
            return bad("terminal of a state out of range");
        }
        if self
            .conf_elems
            .iter()
            .any(|&g| g == 0 || g as usize >= self.dfa_flags.len())
        {
            return bad("element out of range");
        }
        if self.conf_elems.iter().any(|&g| !self.dfa_live(g)) {
            return bad("element is a lexeme that can no longer end");
        }
        for c in 0..n {
            let elems = &self.conf_elems
                [self.conf_elem_index[c] as usize..self.conf_elem_index[c + 1] as usize];
            if (self.conf_flags[c] != 0) != elems.iter().any(|&g| self.dfa_accepting(g)) {
                return bad("accepting flag disagrees with the elements");
            }
        }
        Ok(())
    }

    /// Elements (merged DFA states) of configuration `c`.
    #[inline]
    pub fn conf_elems(&self, c: u32) -> &[u32] {
        &self.conf_elems[self.conf_elem_index[c as usize] as usize
            ..self.conf_elem_index[c as usize + 1] as usize]
    }

    /// Whether some lexeme of configuration `c` is in an accepting state.
    #[inline]
    pub fn conf_may_end(&self, c: u32) -> bool {
        self.conf_flags[c as usize] != 0
    }

    /// Configuration `c` after byte `b`.
    #[inline]
    pub fn conf_step(&self, c: u32, b: u8) -> u32 {
        self.conf_next
            [c as usize * self.byte_classes as usize + self.byte_class[b as usize] as usize]
    }

    /// Start configuration of grammar lexemes for LR state `state` and first byte `b`.
    #[inline]
    pub fn conf_start(&self, state: u32, b: u8) -> u32 {
        self.class_start[self.state_class[state as usize] as usize * 256 + b as usize]
    }

    /// Whether LR state `state` can shift terminal `t` next.
    #[inline]
    pub fn expects(&self, state: u32, t: u32) -> bool {
        self.expected[(state * self.expected_words) as usize + t as usize / 64] >> (t % 64) & 1 != 0
    }

    /// Whether LR state `state` expects any terminal.
    #[inline]
    pub fn expects_any(&self, state: u32) -> bool {
        let w = self.expected_words as usize;
        self.expected[state as usize * w..(state as usize + 1) * w]
            .iter()
            .any(|&x| x != 0)
    }

    /// Global DFA successor.
    #[inline]
    pub fn dfa_next(&self, state: u32, byte: u8) -> u32 {
        self.dfa_trans
            [state as usize * self.byte_classes as usize + self.byte_class[byte as usize] as usize]
    }

    /// One byte of each byte class, the smallest: stepping these steps every byte.
    pub fn class_representatives(&self) -> Vec<u8> {
        class_representatives(self.byte_class, self.byte_classes)
    }

    /// Whether a lexeme in global DFA state `state` can still end (the `LIVE` flag;
    /// see [`TablesRef::validate`] for why this is not "transition != 0").
    #[inline]
    pub fn dfa_live(&self, state: u32) -> bool {
        self.dfa_flags[state as usize] & ByteDfa::LIVE != 0
    }

    /// Whether an ignore lexeme in global DFA state `state` can end so that something
    /// LR state `lr_state` expects comes next ([`ParserTables::ignore_follow`]).
    #[inline]
    pub fn ignore_may_continue(&self, lr_state: u32, state: u32) -> bool {
        match self.ignore_follow.get(state as usize) {
            None | Some(&NO_FOLLOW_LIMIT) => self.expects_any(lr_state),
            Some(&row) => self.expects_any_of(lr_state, row),
        }
    }

    /// Whether LR state `state` expects a terminal of row `row` of the follow sets.
    #[inline]
    pub fn expects_any_of(&self, state: u32, row: u32) -> bool {
        let w = self.expected_words as usize;
        let set = &self.follow_sets[row as usize * w..(row as usize + 1) * w];
        self.expected[state as usize * w..(state as usize + 1) * w]
            .iter()
            .zip(set)
            .any(|(a, b)| a & b != 0)
    }

    /// Whether any ignore lexeme limits what may follow it (see
    /// [`ParserTables::ignore_follow`]).
    #[inline]
    pub fn has_ignore_follow_limits(&self) -> bool {
        !self.ignore_follow.is_empty()
    }

    /// Whether a global DFA state is accepting.
    #[inline]
    pub fn dfa_accepting(&self, state: u32) -> bool {
        self.dfa_flags[state as usize] & ByteDfa::ACCEPTING != 0
    }

    /// Whether a lexeme of `t` in global state `state` may end before `next`
    /// (`None` = end of input): DESIGN.md §1's greedy / lazy rule.
    #[inline]
    pub fn may_end(&self, t: u32, state: u32, next: Option<u8>) -> bool {
        self.dfa_accepting(state)
            && (self.lazy[t as usize] != 0 || next.is_none_or(|b| self.dfa_next(state, b) == 0))
    }
}

/// Rebuilds per-terminal [`ByteDfa`]s from the merged table (for the reference path
/// on an artifact). Fails if a terminal's transitions leave its own block of states.
pub fn split_dfas(tables: &TablesRef<'_>, dfa_base: &[u32]) -> Result<Vec<ByteDfa>, String> {
    let terminals = tables.dfa_start.len();
    if dfa_base.len() != terminals + 1
        || dfa_base.first() != Some(&1)
        || dfa_base.windows(2).any(|w| w[0] > w[1])
    {
        return Err("dfa: bad per-terminal bases".into());
    }
    if dfa_base[terminals] as usize != tables.dfa_flags.len() {
        return Err("dfa: bases do not cover the table".into());
    }
    (0..terminals)
        .map(|t| {
            let (lo, hi) = (dfa_base[t], dfa_base[t + 1]);
            let local = |g: u32| -> Result<u32, String> {
                match g {
                    0 => Ok(0),
                    g if g >= lo && g < hi => Ok(g - lo + 1),
                    _ => Err(format!(
                        "dfa: terminal {t} jumps to a state outside its block"
                    )),
                }
            };
            let mut trans = vec![0u32; 256];
            let mut flags = vec![0u8];
            for g in lo..hi {
                for b in 0..=255u8 {
                    trans.push(local(tables.dfa_next(g, b))?);
                }
                flags.push(tables.dfa_flags[g as usize]);
            }
            Ok(ByteDfa {
                start: local(tables.dfa_start[t])?,
                trans,
                flags,
            })
        })
        .collect()
}

/// The coarsest partition of the bytes that the DFAs `dfas` cannot tell apart (two
/// bytes share a class when every state of every DFA sends them to the same state), as
/// a class per byte, classes numbered by their smallest byte, and the class count.
pub fn byte_partition(dfas: &[ByteDfa]) -> ([u8; 256], u32) {
    let mut rep = [0u8; 256];
    for d in dfas {
        crate::dfa::refine_byte_classes(&mut rep, &d.trans);
    }
    // A class's first byte comes before its other bytes: classes numbered in order.
    let mut class = [0u8; 256];
    let mut classes = 0u32;
    for b in 0..256 {
        class[b] = if rep[b] as usize == b {
            classes += 1;
            (classes - 1) as u8
        } else {
            class[rep[b] as usize]
        };
    }
    (class, classes)
}

/// The smallest byte of each of `classes` classes (`byte_class` maps every byte to one
/// below `classes`). A class no byte is in (a loaded table may have one) gets byte 0:
/// no byte reads its column, so what stepping byte 0 gives does not matter there.
fn class_representatives(byte_class: &[u8], classes: u32) -> Vec<u8> {
    let mut reps = vec![0u8; classes as usize];
    let mut seen = vec![false; classes as usize];
    for (b, &c) in byte_class.iter().enumerate() {
        if let Some(s) = seen.get_mut(c as usize).filter(|s| !**s) {
            *s = true;
            reps[c as usize] = b as u8;
        }
    }
    reps
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A damage to the fixture and the message it must produce.
    type Edit = (fn(&mut ParserTables), &'static str);

    /// The merged table of one terminal `ab` as the compiler writes it: 0 dead,
    /// 1 start, 2 after `a`, 3 after `ab` (accepting, no way on).
    fn ab() -> ParserTables {
        let mut trans = vec![0u32; 4 * 256];
        trans[256 + b'a' as usize] = 2;
        trans[2 * 256 + b'b' as usize] = 3;
        ParserTables {
            dfa_trans: trans,
            // Every byte its own class: the table is as wide as a `ByteDfa`'s.
            byte_class: (0..=255).collect(),
            byte_classes: 256,
            dfa_flags: vec![
                0,
                ByteDfa::LIVE,
                ByteDfa::LIVE,
                ByteDfa::LIVE | ByteDfa::ACCEPTING,
            ],
            dfa_start: vec![1],
            ..ParserTables::default()
        }
    }

    #[test]
    fn liveness_flags_must_agree_with_the_transitions() {
        ab().view().validate_liveness().unwrap();
        let cases: [Edit; 4] = [
            // A live state without its flag: the reference would call `a` a dead end
            // where the GLR parser carries on.
            (|t| t.dfa_flags[2] = 0, "state 2's live flag"),
            // Nothing accepts any more, yet everything is flagged live.
            (
                |t| t.dfa_flags[3] = ByteDfa::LIVE,
                "state 1's live flag disagrees with its transitions (it cannot",
            ),
            (
                |t| t.dfa_flags[3] = ByteDfa::ACCEPTING,
                "accepting but not live",
            ),
            (
                |t| {
                    t.dfa_trans.extend([0; 256]);
                    t.dfa_flags.push(0);
                    t.dfa_start[0] = 4;
                },
                "terminal 0 starts in a state",
            ),
        ];
        for (edit, message) in cases {
            let mut t = ab();
            edit(&mut t);
            let e = t.view().validate_liveness().unwrap_err();
            assert!(e.contains(message), "{message:?} not in {e:?}");
        }
        // An unreachable state that cannot match, correctly flagged, is fine; so is a
        // transition into it (a split terminal's byte that extends the lexeme past
        // where it can end: `ByteDfa::extends`).
        let mut t = ab();
        t.dfa_trans.extend([0; 256]);
        t.dfa_flags.push(0);
        t.view().validate_liveness().unwrap();
        t.dfa_trans[3 * 256 + b'c' as usize] = 4;
        t.view().validate_liveness().unwrap();
    }

    /// Random DFAs whose transitions come in runs of bytes (as a regex's classes do).
    fn random_dfas(seed: &mut u64) -> Vec<ByteDfa> {
        let mut next = |n: u64| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed % n
        };
        (0..1 + next(3))
            .map(|_| {
                let states = 2 + next(5) as u32;
                let mut trans = vec![0u32; 256];
                for _ in 1..states {
                    let mut row = [0u32; 256];
                    let mut b = 0;
                    while b < 256 {
                        let short = next(4) == 0;
                        let run = 1 + next(if short { 3 } else { 90 }) as usize;
                        let to = next(states as u64) as u32;
                        row[b..(b + run).min(256)].fill(to);
                        b += run;
                    }
                    trans.extend(row);
                }
                let mut flags = vec![0u8; states as usize];
                flags[1..].fill(ByteDfa::LIVE);
                ByteDfa {
                    start: 1,
                    trans,
                    flags,
                }
            })
            .collect()
    }

    #[test]
    fn byte_classes_are_the_coarsest_partition_the_dfas_respect() {
        let mut seed = 0x5eed_cafe_u64;
        for _ in 0..300 {
            let dfas = random_dfas(&mut seed);
            let (class, k) = byte_partition(&dfas);
            let reps = class_representatives(&class, k);
            assert_eq!(reps.len(), k as usize);
            let column = |b: u8| -> Vec<u32> {
                dfas.iter()
                    .flat_map(|d| (0..d.num_states() as u32).map(move |s| d.next(s, b)))
                    .collect()
            };
            // Sound: every byte steps as its class's representative does.
            for b in 0..=255u8 {
                assert!((class[b as usize] as u32) < k);
                assert_eq!(
                    column(b),
                    column(reps[class[b as usize] as usize]),
                    "byte {b}"
                );
            }
            // Coarsest: two classes differ in some state, and classes are numbered by
            // their smallest byte.
            for c1 in 0..reps.len() {
                assert_eq!(class[reps[c1] as usize] as usize, c1);
                for c2 in c1 + 1..reps.len() {
                    assert!(reps[c1] < reps[c2]);
                    assert_ne!(column(reps[c1]), column(reps[c2]), "classes {c1}, {c2}");
                }
            }
        }
    }
}
