//! A byte-level DFA table for one terminal, in the form the lexers of both the
//! reference path and the GLR runtime step through.
//!
//! regex-automata reports matches one byte late and keeps non-dead states that can no
//! longer reach a match; this table has neither quirk: `accepting(s)` means "the bytes
//! read so far are in the language", and `live(s)` means "some continuation (possibly
//! empty) is in the language". State [`ByteDfa::DEAD`] is the unique non-live sink.

use serde::{Deserialize, Serialize};

/// A complete DFA over bytes with explicit acceptance and liveness.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ByteDfa {
    /// Start state.
    pub start: u32,
    /// `trans[s * 256 + b]` is the state after reading byte `b` in state `s`.
    pub trans: Vec<u32>,
    /// Per state: bit 0 = accepting, bit 1 = live.
    pub flags: Vec<u8>,
}

impl ByteDfa {
    /// The dead state: not live, loops on every byte.
    pub const DEAD: u32 = 0;
    /// Flag bit: the input read so far is a match.
    pub const ACCEPTING: u8 = 1;
    /// Flag bit: some continuation from here is a match.
    pub const LIVE: u8 = 2;

    /// Number of states.
    pub fn num_states(&self) -> usize {
        self.flags.len()
    }

    /// Transition on one byte.
    #[inline]
    pub fn next(&self, state: u32, byte: u8) -> u32 {
        self.trans[state as usize * 256 + byte as usize]
    }

    /// Whether the bytes read so far form a match.
    #[inline]
    pub fn is_accepting(&self, state: u32) -> bool {
        self.flags[state as usize] & Self::ACCEPTING != 0
    }

    /// Whether some continuation reaches a match.
    #[inline]
    pub fn is_live(&self, state: u32) -> bool {
        self.flags[state as usize] & Self::LIVE != 0
    }

    /// Whether `byte` extends the current lexeme: its transition is not to the dead
    /// state. A greedy lexeme ending in `state` may not be followed by such a byte
    /// (DESIGN.md §1). This is not liveness: a terminal split by exit block (the
    /// compiler's `adjacency_product` stage) keeps the transitions of the terminal
    /// it came from, so a byte can extend the lexeme into a state from which it can
    /// no longer end as this split terminal ([`ByteDfa::is_live`] is false there).
    #[inline]
    pub fn extends(&self, state: u32, byte: u8) -> bool {
        self.next(state, byte) != Self::DEAD
    }

    /// Runs the DFA over `bytes` from the start state.
    pub fn run(&self, bytes: &[u8]) -> u32 {
        bytes.iter().fold(self.start, |s, &b| self.next(s, b))
    }

    /// Checks internal consistency: every transition target is a state, the dead
    /// state is a non-live sink. Used by artifact loading.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.flags.len();
        if n == 0 || self.trans.len() != n * 256 {
            return Err(format!(
                "dfa: {} states but {} transitions",
                n,
                self.trans.len()
            ));
        }
        if self.start as usize >= n {
            return Err("dfa: start state out of range".into());
        }
        if let Some(t) = self.trans.iter().find(|&&t| t as usize >= n) {
            return Err(format!("dfa: transition to state {t} out of range"));
        }
        if self.is_live(Self::DEAD) || self.is_accepting(Self::DEAD) {
            return Err("dfa: dead state is live".into());
        }
        if (0..256).any(|b| self.trans[b] != Self::DEAD) {
            return Err("dfa: dead state is not a sink".into());
        }
        Ok(())
    }
}

/// Refines a partition of the bytes by the rows of `trans` (256 columns a row): two
/// bytes stay together only where every row sends them to the same state. `rep[b]` is
/// the first (smallest) byte of `b`'s class, before and after; all zeros is the
/// partition with one class. A row moves the bytes whose target differs from their
/// class's first byte's to a new class, keyed by (old class, target). The table is read
/// in order, O(256 · rows): comparing columns instead reads it at a 1 KB stride, and a
/// `date-time`'s 11,000-state table spent more time there than in minimizing it.
pub fn refine_byte_classes(rep: &mut [u8; 256], trans: &[u32]) {
    // This row's new classes: (old class, target, first byte).
    let mut moved: Vec<(u8, u32, u8)> = Vec::new();
    for row in trans.chunks_exact(256) {
        moved.clear();
        for b in 0..256usize {
            let r = rep[b];
            let target = row[b];
            if target == row[r as usize] {
                continue;
            }
            rep[b] = match moved.iter().find(|&&(c, t, _)| c == r && t == target) {
                Some(&(_, _, first)) => first,
                None => {
                    moved.push((r, target, b as u8));
                    b as u8
                }
            };
        }
    }
}

/// The reverse transitions of a table `width` columns wide (`trans[s * width + c]`:
/// 256 for a [`ByteDfa`], one per byte class for the merged table), state 0 the dead
/// sink, for spreading a property backwards: "can reach an accepting state" (liveness,
/// computed by the lexer stage and re-checked at load) or "can reach a good state" (the
/// compiler's dead-end check). Stored CSR: the states with an edge into `t` are
/// `sources[start[t]..start[t + 1]]`. Edges into state 0 are left out (nothing of
/// interest spreads from the dead sink, and most transitions go there).
pub struct ReverseEdges {
    start: Vec<usize>,
    sources: Vec<u32>,
}

impl ReverseEdges {
    /// The edges `s → t` of `trans` (`width` columns per state) with `t != 0` and
    /// `keep(s)`. Every target must be a state (`< trans.len() / width`).
    pub fn new(trans: &[u32], width: usize, keep: impl Fn(u32) -> bool) -> Self {
        let n = trans.len() / width;
        let edges = || {
            trans
                .iter()
                .enumerate()
                .map(|(i, &t)| ((i / width) as u32, t))
                .filter(|&(s, t)| t != ByteDfa::DEAD && keep(s))
        };
        let mut start = vec![0usize; n + 1];
        for (_, t) in edges() {
            start[t as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut sources = vec![0u32; start[n]];
        for (s, t) in edges() {
            sources[fill[t as usize]] = s;
            fill[t as usize] += 1;
        }
        ReverseEdges { start, sources }
    }

    /// Marks every state from which a marked state is reachable over the edges (each
    /// state visited once: linear in the edges). `work` is scratch.
    pub fn spread_backwards(&self, marked: &mut [bool], work: &mut Vec<u32>) {
        work.clear();
        work.extend((0..marked.len() as u32).filter(|&s| marked[s as usize]));
        while let Some(t) = work.pop() {
            for &p in &self.sources[self.start[t as usize]..self.start[t as usize + 1]] {
                if !std::mem::replace(&mut marked[p as usize], true) {
                    work.push(p);
                }
            }
        }
    }
}
