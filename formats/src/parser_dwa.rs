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
//! leads to the state's *default* target and weight. Where every thread of a state
//! takes a goto on the state read, only LR states with that goto can occur there (the
//! LR parser never uncovers a state without the goto it reduces to), so the compiler
//! makes the most common outcome the default. A transition may lead to a *fork*
//! ([`ParserDwa::FORK`]): several states that each read on. Weights are stored once,
//! deduplicated, as runs of `u32` mask words (`[start, len, words…]`): a sparse weight
//! costs what it sets, a dense one (most of the vocabulary) is one contiguous,
//! vectorized OR.
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
    /// Per automaton state: the target for LR states without a key.
    pub default_target: Vec<u32>,
    /// Per automaton state: the weight for LR states without a key.
    pub default_weight: Vec<u32>,
    /// Runs of weight `w`: `weight_words[weight_index[w]..weight_index[w + 1]]`.
    pub weight_index: Vec<u32>,
    /// Each weight as runs of mask words `[start, len, word × len]`: starts increasing,
    /// runs neither overlapping nor touching, `len ≥ 1`, a run's first and last word
    /// never 0 (see [`ParserDwa::encode_weight`]).
    pub weight_words: Vec<u32>,
    /// States of fork `f`: `fork_states[fork_index[f]..fork_index[f + 1]]`.
    pub fork_index: Vec<u32>,
    /// Two or more automaton states per fork, strictly increasing, never STOP.
    pub fork_states: Vec<u32>,
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
    /// See [`ParserDwa::default_weight`].
    pub default_weight: &'a [u32],
    /// See [`ParserDwa::weight_index`].
    pub weight_index: &'a [u32],
    /// See [`ParserDwa::weight_words`].
    pub weight_words: &'a [u32],
    /// See [`ParserDwa::fork_index`].
    pub fork_index: &'a [u32],
    /// See [`ParserDwa::fork_states`].
    pub fork_states: &'a [u32],
}

impl ParserDwa {
    /// The state where nothing is undecided: a walk stops there.
    pub const STOP: u32 = 0;

    /// A start entry for a boundary the compiler left to the run-time token-trie walk
    /// (its automaton was past the per-boundary budget).
    pub const FALLBACK: u32 = u32::MAX;

    /// Marks a transition target that is a *fork*, `FORK | f`: the walk goes on in
    /// every state of fork `f` (each reads the next stack state; their token sets are
    /// OR-ed). Start entries are never forks.
    pub const FORK: u32 = 1 << 31;

    /// Borrows the tables.
    pub fn view(&self) -> ParserDwaRef<'_> {
        ParserDwaRef {
            start: &self.start,
            index: &self.index,
            keys: &self.keys,
            targets: &self.targets,
            weights: &self.weights,
            default_target: &self.default_target,
            default_weight: &self.default_weight,
            weight_index: &self.weight_index,
            weight_words: &self.weight_words,
            fork_index: &self.fork_index,
            fork_states: &self.fork_states,
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
            + self.default_weight.len()
            + self.weight_index.len()
            + self.fork_index.len()
            + self.fork_states.len())
            + 4 * self.weight_words.len()
    }

    /// Zero words a run may bridge rather than start a new run: a new run costs two
    /// header words, so a gap of up to two words is cheaper to carry.
    const RUN_GAP: usize = 2;

    /// The runs (see [`ParserDwa::weight_words`]) of the dense mask words `dense`.
    /// Runs let a weight that covers most of the vocabulary (inside a string almost
    /// every token is allowed) be OR-ed by one contiguous loop the compiler
    /// vectorizes, while a sparse one costs two header words per run.
    pub fn encode_weight(dense: &[u32]) -> Vec<u32> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < dense.len() {
            if dense[i] == 0 {
                i += 1;
                continue;
            }
            let start = i;
            let mut end = i + 1; // one past the last nonzero word of the run
            let mut j = end;
            while j < dense.len() && j - end <= Self::RUN_GAP {
                if dense[j] != 0 {
                    end = j + 1;
                }
                j += 1;
            }
            out.push(start as u32);
            out.push((end - start) as u32);
            out.extend_from_slice(&dense[start..end]);
            i = end;
        }
        out
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
        if n == 0 || self.index.len() != n + 1 || self.default_weight.len() != n {
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
        if self.default_target[0] != ParserDwa::STOP
            || self.default_weight[0] != 0
            || self.index[1] != 0
        {
            return bad("state 0 must be the stop state");
        }
        if n >= ParserDwa::FORK as usize
            || self
                .start
                .iter()
                .any(|&d| d != ParserDwa::FALLBACK && d as usize >= n)
        {
            return bad("automaton state out of range");
        }
        let f = self.fork_index.len();
        if f == 0
            || self.fork_index[0] != 0
            || self.fork_index.windows(2).any(|x| x[0] > x[1])
            || self.fork_index[f - 1] as usize != self.fork_states.len()
        {
            return bad("fork index is not monotone");
        }
        for i in 0..f - 1 {
            let members = self.fork(ParserDwa::FORK | i as u32);
            if members.len() < 2
                || members.windows(2).any(|w| w[0] >= w[1])
                || members
                    .iter()
                    .any(|&s| s == ParserDwa::STOP || s as usize >= n)
            {
                return bad("a fork needs two or more increasing states other than stop");
            }
        }
        let target_ok = |d: u32| {
            if d & ParserDwa::FORK != 0 {
                ((d & !ParserDwa::FORK) as usize) < f - 1
            } else {
                (d as usize) < n
            }
        };
        if !self
            .targets
            .iter()
            .chain(self.default_target)
            .all(|&d| target_ok(d))
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
        if self
            .weights
            .iter()
            .chain(self.default_weight)
            .any(|&x| x as usize >= w - 1)
        {
            return bad("weight id out of range");
        }
        for i in 0..w - 1 {
            let mut runs = self.weight(i as u32);
            let mut next_free = 0usize;
            while !runs.is_empty() {
                let [start, len, ..] = *runs else {
                    return bad("weight run header cut short");
                };
                let (start, len) = (start as usize, len as usize);
                if len == 0
                    || start < next_free
                    || runs.len() - 2 < len
                    || start.checked_add(len).is_none_or(|end| end > mask_words)
                {
                    return bad("weight run out of range, empty, overlapping or cut short");
                }
                let words = &runs[2..2 + len];
                if words[0] == 0 || words[len - 1] == 0 {
                    return bad("weight run starts or ends with an empty word");
                }
                for (k, &bits) in words.iter().enumerate() {
                    if bits != 0 && !allowed(start + k, bits) {
                        return bad("a weight names a special or unused token");
                    }
                }
                // Runs neither overlap nor touch (touching runs would be one run).
                next_free = start + len + 1;
                runs = &runs[2 + len..];
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
            Err(_) => (
                self.default_target[d as usize],
                self.default_weight[d as usize],
            ),
        }
    }

    /// The states of fork `target` (a target with the [`ParserDwa::FORK`] bit).
    #[inline]
    pub fn fork(&self, target: u32) -> &'a [u32] {
        let f = (target & !ParserDwa::FORK) as usize;
        &self.fork_states[self.fork_index[f] as usize..self.fork_index[f + 1] as usize]
    }

    /// The runs of weight `w` (see [`ParserDwa::weight_words`]).
    #[inline]
    pub fn weight(&self, w: u32) -> &'a [u32] {
        &self.weight_words
            [self.weight_index[w as usize] as usize..self.weight_index[w as usize + 1] as usize]
    }

    /// ORs weight `w` into `mask` (which has at least the validated mask width).
    #[inline]
    pub fn or_weight(&self, w: u32, mask: &mut [u32]) {
        let mut runs = self.weight(w);
        while let [start, len, ref rest @ ..] = *runs {
            let (start, len) = (start as usize, len as usize);
            let (words, next) = rest.split_at(len);
            // Zipping two equal-length slices lets the loop vectorize.
            for (m, &x) in mask[start..start + len].iter_mut().zip(words) {
                *m |= x;
            }
            runs = next;
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
            default_weight: vec![0, 0, 0],
            weight_index: vec![0, 0, 3],
            weight_words: vec![1, 1, 2],
            fork_index: vec![0],
            fork_states: vec![],
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
        let cases: [Edit; 17] = [
            (|t| t.start.push(0), "start table"),
            (|t| t.targets[0] = 7, "out of range"),
            (|t| t.default_target[0] = 1, "stop state"),
            (|t| t.keys[0] = 4, "not an LR state"),
            (|t| t.weights[0] = 2, "weight id"),
            (|t| t.default_weight[1] = 2, "weight id"),
            (
                |t| {
                    t.default_weight.pop();
                },
                "inconsistent lengths",
            ),
            (|t| t.weight_words[0] = 2, "weight run out of range"),
            (|t| t.weight_words[1] = 0, "weight run out of range"),
            (|t| t.weight_words[1] = 2, "weight run out of range"),
            (|t| t.weight_words[2] = 0, "empty word"),
            (|t| t.index[3] = 2, "monotone"),
            (|t| t.weight_index[2] = 0, "weight index"),
            (|t| t.targets[0] = ParserDwa::FORK, "out of range"),
            (|t| t.fork_index.push(1), "fork index"),
            (
                |t| {
                    t.fork_states = vec![1, 1];
                    t.fork_index.push(2);
                },
                "two or more increasing states",
            ),
            (
                |t| {
                    t.fork_states = vec![0, 1];
                    t.fork_index.push(2);
                },
                "other than stop",
            ),
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

    #[test]
    fn forks_and_default_weights_validate() {
        let mut t = small();
        t.fork_states = vec![1, 2];
        t.fork_index.push(2);
        t.targets[0] = ParserDwa::FORK;
        t.default_weight[2] = 1;
        let v = t.view();
        v.validate(1, 4, 2, |_, _| true).unwrap();
        assert_eq!(v.step(1, 3), (ParserDwa::FORK, 1));
        assert_eq!(v.fork(ParserDwa::FORK), &[1, 2]);
        assert_eq!(v.step(2, 0), (0, 1));
    }

    #[test]
    fn encoded_weights_or_back_to_the_dense_words() {
        // Gaps of 0..=4 zero words, runs at both ends, and one word alone.
        let dense: Vec<u32> = vec![
            5, 0, 7, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0, 2, 3, 0, 0, 0, 0, 0, 0, 4,
        ];
        let runs = ParserDwa::encode_weight(&dense);
        // Gaps up to two words are bridged: 5..9 is one run, then 1, then 2 3, then 4.
        assert_eq!(
            runs,
            vec![0, 6, 5, 0, 7, 0, 0, 9, 9, 1, 1, 14, 2, 2, 3, 22, 1, 4]
        );
        let t = ParserDwa {
            weight_index: vec![0, 0, runs.len() as u32],
            weight_words: runs,
            ..small()
        };
        let v = t.view();
        v.validate(1, 4, dense.len(), |_, _| true).unwrap();
        let mut mask = vec![0u32; dense.len()];
        v.or_weight(1, &mut mask);
        assert_eq!(mask, dense);
        assert!(ParserDwa::encode_weight(&[0, 0]).is_empty());
    }
}
