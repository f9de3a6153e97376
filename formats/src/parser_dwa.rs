//! The Parser DWA as flat arrays: the automaton `get_mask` runs over the parse stack.
//!
//! A deterministic weighted automaton that reads LR state ids from a stack top
//! downwards (DESIGN.md §2). Each transition yields a *weight* — the tokens that the
//! states read so far prove valid — and leads to the next automaton state; state 0
//! ([`ParserDwa::STOP`]) means every token is decided, so the walk stops there. A
//! walk starts from the automaton state of the lexemes in progress
//! ([`ParserDwa::start`], one per interned lexer configuration and ignore flag, plus
//! one for the start of input). Over a graph-structured stack the runtime walks every
//! path and ORs what they yield.
//!
//! Transitions are sparse: per automaton state, the LR states that do something
//! particular are listed in increasing order (binary search), and every other LR state
//! leads to the state's *default* target with no weight. Weights are stored once,
//! deduplicated, as sorted `(word index, bits)` pairs of the `u32` mask words they
//! touch, so OR-ing a weight costs what it sets, not the vocabulary size.
//!
//! [`ParserDwa`] owns the arrays (the compiler builds it; the artifact stores each one
//! as its own aligned section); [`ParserDwaRef`] borrows them, from an owned value or
//! in place from an mmap, and is what the runtime uses after [`ParserDwaRef::validate`].

use serde::{Deserialize, Serialize};

/// Owned Parser DWA tables.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ParserDwa {
    /// Start state per lexer configuration `c` and ignore flag `i`: `start[2 * c + i]`;
    /// the last entry is the start of input (no lexeme in progress); [`ParserDwa::FALLBACK`]
    /// where the compiler left the boundary to the run-time token-trie walk.
    pub start: Vec<u32>,
    /// Keyed transitions of state `d`: `keys[index[d]..index[d + 1]]`, one more entry
    /// than there are states.
    pub index: Vec<u32>,
    /// LR state read, strictly increasing within one automaton state.
    pub keys: Vec<u32>,
    /// Target automaton state of each keyed transition.
    pub targets: Vec<u32>,
    /// Weight id of each keyed transition (0 = no token).
    pub weights: Vec<u32>,
    /// Per automaton state: the target for LR states without a key (weight 0).
    pub default_target: Vec<u32>,
    /// Words of weight `w`: `weight_words[weight_index[w]..weight_index[w + 1]]`.
    pub weight_index: Vec<u32>,
    /// `(word index << 32) | bits`, word indices strictly increasing within a weight,
    /// bits never 0.
    pub weight_words: Vec<u64>,
}

/// Borrowed Parser DWA tables; see the module docs. Build it from validated data
/// only ([`ParserDwaRef::validate`]), which makes every index the runtime computes in
/// bounds and every walk finite.
#[derive(Clone, Copy, Debug)]
pub struct ParserDwaRef<'a> {
    /// See [`ParserDwa::start`].
    pub start: &'a [u32],
    /// See [`ParserDwa::index`].
    pub index: &'a [u32],
    /// See [`ParserDwa::keys`].
    pub keys: &'a [u32],
    /// See [`ParserDwa::targets`].
    pub targets: &'a [u32],
    /// See [`ParserDwa::weights`].
    pub weights: &'a [u32],
    /// See [`ParserDwa::default_target`].
    pub default_target: &'a [u32],
    /// See [`ParserDwa::weight_index`].
    pub weight_index: &'a [u32],
    /// See [`ParserDwa::weight_words`].
    pub weight_words: &'a [u64],
}

impl ParserDwa {
    /// The state where nothing is undecided: a walk stops there.
    pub const STOP: u32 = 0;

    /// A start entry for a boundary the compiler left to the run-time token-trie walk
    /// (its automaton was past the per-boundary budget).
    pub const FALLBACK: u32 = u32::MAX;

    /// Borrows the tables.
    pub fn view(&self) -> ParserDwaRef<'_> {
        ParserDwaRef {
            start: &self.start,
            index: &self.index,
            keys: &self.keys,
            targets: &self.targets,
            weights: &self.weights,
            default_target: &self.default_target,
            weight_index: &self.weight_index,
            weight_words: &self.weight_words,
        }
    }

    /// Number of automaton states.
    pub fn num_states(&self) -> usize {
        self.default_target.len()
    }

    /// Number of distinct weights (the empty weight 0 included).
    pub fn num_weights(&self) -> usize {
        self.weight_index.len().saturating_sub(1)
    }

    /// Bytes the tables take in an artifact.
    pub fn size_bytes(&self) -> usize {
        4 * (self.start.len()
            + self.index.len()
            + self.keys.len()
            + self.targets.len()
            + self.weights.len()
            + self.default_target.len()
            + self.weight_index.len())
            + 8 * self.weight_words.len()
    }
}

impl<'a> ParserDwaRef<'a> {
    /// Checks every length and index against the lexer configuration count, the LR
    /// state count and the mask width in words. `allowed` is called with each weight
    /// word `(index, bits)` and must say whether those bits name only tokens a mask
    /// may contain (the runtime passes the vocabulary's ordinary tokens and EOS).
    pub fn validate(
        &self,
        num_configs: usize,
        num_lr_states: u32,
        mask_words: usize,
        mut allowed: impl FnMut(usize, u32) -> bool,
    ) -> Result<(), String> {
        let bad = |what: &str| Err(format!("parser DWA: {what}"));
        let n = self.default_target.len();
        if n == 0 || self.index.len() != n + 1 {
            return bad("state tables have inconsistent lengths");
        }
        if self.start.len() != 2 * num_configs + 1 {
            return bad("start table does not match the lexer configuration count");
        }
        let transitions = self.keys.len();
        if self.targets.len() != transitions || self.weights.len() != transitions {
            return bad("transition arrays have different lengths");
        }
        if self.index[0] != 0
            || self.index.windows(2).any(|w| w[0] > w[1])
            || self.index[n] as usize != transitions
        {
            return bad("transition index is not monotone");
        }
        if self.default_target[0] != ParserDwa::STOP || self.index[1] != 0 {
            return bad("state 0 must be the stop state");
        }
        if self
            .start
            .iter()
            .filter(|&&d| d != ParserDwa::FALLBACK)
            .chain(self.targets)
            .chain(self.default_target)
            .any(|&d| d as usize >= n)
        {
            return bad("automaton state out of range");
        }
        for d in 0..n {
            let keys = &self.keys[self.index[d] as usize..self.index[d + 1] as usize];
            if keys.windows(2).any(|w| w[0] >= w[1]) {
                return bad("keys of a state are not strictly increasing");
            }
            if keys.last().is_some_and(|&k| k >= num_lr_states) {
                return bad("key is not an LR state");
            }
        }
        let w = self.weight_index.len();
        if w == 0
            || self.weight_index[0] != 0
            || self.weight_index.windows(2).any(|x| x[0] > x[1])
            || self.weight_index[w - 1] as usize != self.weight_words.len()
            || self.weight_index.get(1) != Some(&0)
        {
            return bad("weight index is not monotone, or weight 0 is not empty");
        }
        if self.weights.iter().any(|&x| x as usize >= w - 1) {
            return bad("weight id out of range");
        }
        for i in 0..w - 1 {
            let words = self.weight(i as u32);
            let mut last = None;
            for &x in words {
                let (at, bits) = ((x >> 32) as usize, x as u32);
                if at >= mask_words || bits == 0 || last.is_some_and(|l| l >= at) {
                    return bad("weight word out of range, empty or out of order");
                }
                if !allowed(at, bits) {
                    return bad("a weight names a special or unused token");
                }
                last = Some(at);
            }
        }
        Ok(())
    }

    /// Start state for a lexeme group with lexer configuration `config`.
    #[inline]
    pub fn start(&self, config: u32, ignore: bool) -> u32 {
        self.start[2 * config as usize + ignore as usize]
    }

    /// Start state at the start of input.
    #[inline]
    pub fn initial(&self) -> u32 {
        self.start[self.start.len() - 1]
    }

    /// Transition of state `d` on LR state `lr`: (target, weight id).
    #[inline]
    pub fn step(&self, d: u32, lr: u32) -> (u32, u32) {
        let lo = self.index[d as usize] as usize;
        let hi = self.index[d as usize + 1] as usize;
        match self.keys[lo..hi].binary_search(&lr) {
            Ok(i) => (self.targets[lo + i], self.weights[lo + i]),
            Err(_) => (self.default_target[d as usize], 0),
        }
    }

    /// The words of weight `w`.
    #[inline]
    pub fn weight(&self, w: u32) -> &'a [u64] {
        &self.weight_words
            [self.weight_index[w as usize] as usize..self.weight_index[w as usize + 1] as usize]
    }

    /// ORs weight `w` into `mask` (which has at least the validated mask width).
    #[inline]
    pub fn or_weight(&self, w: u32, mask: &mut [u32]) {
        for &x in self.weight(w) {
            mask[(x >> 32) as usize] |= x as u32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two states besides STOP: 1 reads LR state 3 → STOP with weight 1 (token 33),
    /// anything else → 2; 2 stops on everything.
    fn small() -> ParserDwa {
        ParserDwa {
            start: vec![1, 2, 1],
            index: vec![0, 0, 1, 1],
            keys: vec![3],
            targets: vec![0],
            weights: vec![1],
            default_target: vec![0, 2, 0],
            weight_index: vec![0, 0, 1],
            weight_words: vec![(1 << 32) | 2],
        }
    }

    #[test]
    fn steps_and_weights() {
        let t = small();
        let v = t.view();
        v.validate(1, 4, 2, |_, _| true).unwrap();
        assert_eq!(v.step(1, 3), (0, 1));
        assert_eq!(v.step(1, 2), (2, 0));
        let mut mask = [0u32; 2];
        v.or_weight(1, &mut mask);
        assert_eq!(mask, [0, 2]);
    }

    #[test]
    fn validation_catches_each_damage() {
        type Edit = (fn(&mut ParserDwa), &'static str);
        let cases: [Edit; 9] = [
            (|t| t.start.push(0), "start table"),
            (|t| t.targets[0] = 7, "out of range"),
            (|t| t.default_target[0] = 1, "stop state"),
            (|t| t.keys[0] = 4, "not an LR state"),
            (|t| t.weights[0] = 2, "weight id"),
            (|t| t.weight_words[0] = 2 << 32 | 1, "weight word"),
            (|t| t.weight_words[0] = 1 << 32, "weight word"),
            (|t| t.index[3] = 2, "monotone"),
            (|t| t.weight_index[2] = 0, "weight index"),
        ];
        for (edit, message) in cases {
            let mut t = small();
            edit(&mut t);
            let e = t.view().validate(1, 4, 2, |_, _| true).unwrap_err();
            assert!(e.contains(message), "{message:?} not in {e:?}");
        }
        let e = small()
            .view()
            .validate(1, 4, 2, |at, bits| !(at == 1 && bits & 2 != 0))
            .unwrap_err();
        assert!(e.contains("special or unused"), "{e}");
    }
}
