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
//! deduplicated, as lists of *chunks*: the nonzero part of one aligned window of
//! [`ParserDwa::CHUNK_WORDS`] mask words (widened to whole 8-word blocks), itself
//! stored once however many weights contain it. Token sets of neighbouring states
//! differ in few tokens, so most of their windows are shared (C × o200k: 85 MB of
//! runs became ~8 MB); OR-ing a chunk is one contiguous loop of 256-bit operations,
//! and a sparse weight costs what it sets. A weight's chunks that lie end to end in
//! the mask and in the stored words are joined into one, so a dense token set costs
//! one loop, not one per window.
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
    /// Chunks of weight `w`: `weight_chunks[weight_index[w]..weight_index[w + 1]]`.
    pub weight_index: Vec<u32>,
    /// Chunk ids of each weight, in increasing order of their start word, never
    /// overlapping.
    pub weight_chunks: Vec<u32>,
    /// Per chunk, three `u32`: the mask word it starts at, its length in words, and
    /// its offset in `chunk_words`. Start and length are multiples of
    /// [`ParserDwa::BLOCK_WORDS`], except that a chunk may end at the mask's end.
    /// Chunks are cut per window of [`ParserDwa::CHUNK_WORDS`] words to be shared;
    /// a weight's chunks that lie end to end in the mask and in `chunk_words` are
    /// joined into one, which then spans several windows.
    pub chunk_table: Vec<u32>,
    /// The words of every chunk.
    pub chunk_words: Vec<u32>,
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
    /// See [`ParserDwa::weight_chunks`].
    pub weight_chunks: &'a [u32],
    /// See [`ParserDwa::chunk_table`].
    pub chunk_table: &'a [u32],
    /// See [`ParserDwa::chunk_words`].
    pub chunk_words: &'a [u32],
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

    /// Width in mask words of the aligned windows weights are cut into (2,048
    /// tokens): a window's words are stored once however many weights share them.
    pub const CHUNK_WORDS: u32 = 64;

    /// Chunks start and end on aligned blocks of this many words (one 256-bit
    /// vector), so the OR loop is whole vector operations with no per-word head or
    /// tail: the per-chunk cost is what dominates OR-ing sparse token sets.
    pub const BLOCK_WORDS: u32 = 8;

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
            weight_chunks: &self.weight_chunks,
            chunk_table: &self.chunk_table,
            chunk_words: &self.chunk_words,
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
            + self.fork_states.len()
            + self.weight_chunks.len()
            + self.chunk_table.len()
            + self.chunk_words.len())
    }

    /// Bytes of the token sets: chunk ids, chunk table and chunk words.
    pub fn weight_bytes(&self) -> usize {
        self.view().weight_bytes()
    }
}

impl<'a> ParserDwaRef<'a> {
    /// Bytes of the token sets: chunk ids, chunk table and chunk words.
    pub fn weight_bytes(&self) -> usize {
        4 * (self.weight_chunks.len() + self.chunk_table.len() + self.chunk_words.len())
    }

    /// Checks every length and index against the lexer configuration count, the LR
    /// state count and the mask width. `maskable` has one bit set per token a mask
    /// may contain (the runtime passes the vocabulary's ordinary tokens and EOS), and
    /// its length is the mask width in words; a weight naming any other bit is
    /// refused.
    pub fn validate(
        &self,
        num_configs: usize,
        num_lr_states: u32,
        maskable: &[u32],
    ) -> Result<(), String> {
        let mask_words = maskable.len();
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
            || self.weight_index[w - 1] as usize != self.weight_chunks.len()
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
        if !self.chunk_table.len().is_multiple_of(3) {
            return bad("chunk table is not made of triples");
        }
        let chunks = self.chunk_table.len() / 3;
        for c in 0..chunks {
            let [start, len, offset] = [0, 1, 2].map(|i| self.chunk_table[3 * c + i] as usize);
            let block = ParserDwa::BLOCK_WORDS as usize;
            if len == 0
                || start.checked_add(len).is_none_or(|end| end > mask_words)
                || offset
                    .checked_add(len)
                    .is_none_or(|end| end > self.chunk_words.len())
            {
                return bad("chunk out of range or empty");
            }
            if start % block != 0 || (len % block != 0 && start + len != mask_words) {
                return bad("chunk not aligned to blocks");
            }
            let words = &self.chunk_words[offset..offset + len];
            // One pass over whole words (it vectorizes).
            if words
                .iter()
                .zip(&maskable[start..start + len])
                .fold(0, |bad_bits, (&w, &m)| bad_bits | (w & !m))
                != 0
            {
                return bad("a weight names a special or unused token");
            }
        }
        for i in 0..w - 1 {
            let mut next_free = 0;
            for &c in self.chunks_of(i as u32) {
                if c as usize >= chunks {
                    return bad("chunk id out of range");
                }
                let (start, len) = (
                    self.chunk_table[3 * c as usize],
                    self.chunk_table[3 * c as usize + 1],
                );
                if start < next_free {
                    return bad("chunks of a weight overlap or are out of order");
                }
                next_free = start + len;
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

    /// The chunk ids of weight `w`.
    #[inline]
    pub fn chunks_of(&self, w: u32) -> &'a [u32] {
        &self.weight_chunks
            [self.weight_index[w as usize] as usize..self.weight_index[w as usize + 1] as usize]
    }

    /// Number of chunks of weight `w`: a cheap measure of how many words it writes.
    #[inline]
    pub fn chunk_count(&self, w: u32) -> usize {
        (self.weight_index[w as usize + 1] - self.weight_index[w as usize]) as usize
    }

    /// Mask words that weight `w`'s chunks cover: what OR-ing or writing it reads.
    #[inline]
    pub fn weight_words(&self, w: u32) -> usize {
        self.chunks_of(w)
            .iter()
            .map(|&c| self.chunk_table[3 * c as usize + 1] as usize)
            .sum()
    }

    /// Sets `mask` (the validated mask width) to exactly weight `w`: its chunks copied,
    /// the words between them zeroed. One pass of writes, where zeroing the mask and
    /// then OR-ing `w` in is two, plus a read of the mask: for a dense token set (the
    /// inside of a JSON string) that is most of a mask's time.
    pub fn write_weight(&self, w: u32, mask: &mut [u32]) {
        let mut next_free = 0;
        // Chunks are in mask order and do not overlap (checked by `validate`).
        for &c in self.chunks_of(w) {
            let (start, words) = self.chunk(c);
            mask[next_free..start].fill(0);
            copy_words(&mut mask[start..start + words.len()], words);
            next_free = start + words.len();
        }
        mask[next_free..].fill(0);
    }

    /// ORs weight `w` into `mask` (which has at least the validated mask width).
    ///
    /// The OR of token sets is most of a mask's time, so on x86-64 CPUs with AVX2
    /// (almost all that serve models) it runs as 256-bit operations; the build
    /// targets baseline x86-64, whose 128-bit loop is half as fast.
    #[inline]
    pub fn or_weight(&self, w: u32, mask: &mut [u32]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: `or_weight_avx2` only needs the CPU to support AVX2, which was
            // just detected (std caches the answer, so the check is a load and a test).
            unsafe { self.or_weight_avx2(w, mask) };
            return;
        }
        self.or_weight_portable(w, mask);
    }

    /// [`ParserDwaRef::or_weight`] compiled for AVX2 (the same loop, vectorized wider).
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn or_weight_avx2(&self, w: u32, mask: &mut [u32]) {
        self.or_weight_portable(w, mask);
    }

    /// The OR loop; inlined into each caller so each compiles it for its features.
    #[inline(always)]
    fn or_weight_portable(&self, w: u32, mask: &mut [u32]) {
        for &c in self.chunks_of(w) {
            let (start, words) = self.chunk(c);
            or_blocks(&mut mask[start..start + words.len()], words);
        }
    }

    /// Chunk `c`: the mask word it starts at, and its words.
    #[inline(always)]
    pub fn chunk(&self, c: u32) -> (usize, &'a [u32]) {
        let t = 3 * c as usize;
        let (start, len, offset) = (
            self.chunk_table[t] as usize,
            self.chunk_table[t + 1] as usize,
            self.chunk_table[t + 2] as usize,
        );
        (start, &self.chunk_words[offset..offset + len])
    }
}

/// `dst.copy_from_slice(src)` as a loop of vector loads and stores, never the C
/// library's `memcpy`: every copy of mask words (a token set's chunks, a stored or
/// kept mask) goes through here.
///
/// Why: glibc's `memcpy` moves large blocks with `rep movsb`, which on AMD Zen cores is
/// more than ten times slower when the destination lies just past the source modulo 4
/// KiB (4K aliasing): a 25 KB mask copied at `dst − src ≡ 8 (mod 4096)` took 8.5 µs
/// instead of 0.47 (`benches/examples/copy_alias.rs`). The distance between a chunk in
/// the mapped artifact and the caller's mask is whatever the two layouts make it, and
/// on a page-aligned mask 71 of C × `o200k_base`'s token sets that masks are written
/// from were copied at such a distance (4–8 µs a mask). The loop below runs at
/// `memcpy`'s speed at every distance there, 0.43–0.53 µs for 25 KB.
///
/// # Panics
///
/// If the slices differ in length (as `copy_from_slice` does).
#[inline]
pub fn copy_words(dst: &mut [u32], src: &[u32]) {
    assert_eq!(
        dst.len(),
        src.len(),
        "copy_words: slices of different lengths"
    );
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: `copy_words_avx2` only needs the CPU to support AVX2, which was just
        // detected (std caches the answer, so the check is a load and a test).
        unsafe { copy_words_avx2(dst, src) };
        return;
    }
    // Baseline x86-64 and other targets: their `memcpy`s are not known to have the
    // slow case, and a 128-bit loop would be slower than them.
    dst.copy_from_slice(src);
}

/// [`copy_words`] compiled for AVX2.
///
/// # Safety
///
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn copy_words_avx2(dst: &mut [u32], src: &[u32]) {
    copy_words_loop(dst, src);
}

/// The copy loop. The OR with a zero the optimiser cannot see keeps LLVM from
/// recognising a copy and calling `memcpy` in its place; it costs nothing in a loop
/// bound by its loads and stores.
#[inline(always)]
fn copy_words_loop(dst: &mut [u32], src: &[u32]) {
    let zero = std::hint::black_box(0u32);
    for (d, s) in dst.iter_mut().zip(src) {
        *d = *s | zero;
    }
}

/// `dst |= src` over equal-length slices whose length is a whole number of blocks
/// but for a mask's last chunk: fixed-width inner loops become one vector operation
/// per block, with a word loop only for that last chunk's tail.
#[inline(always)]
fn or_blocks(dst: &mut [u32], src: &[u32]) {
    const B: usize = ParserDwa::BLOCK_WORDS as usize;
    let (mut d, mut s) = (dst.chunks_exact_mut(B), src.chunks_exact(B));
    for (d, s) in (&mut d).zip(&mut s) {
        for i in 0..B {
            d[i] |= s[i];
        }
    }
    for (d, s) in d.into_remainder().iter_mut().zip(s.remainder()) {
        *d |= s;
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
            weight_index: vec![0, 0, 1],
            weight_chunks: vec![0],
            chunk_table: vec![0, 2, 0],
            chunk_words: vec![0, 2],
            fork_index: vec![0],
            fork_states: vec![],
        }
    }

    #[test]
    fn steps_and_weights() {
        let t = small();
        let v = t.view();
        v.validate(1, 4, &[u32::MAX; 2]).unwrap();
        assert_eq!(v.step(1, 3), (0, 1));
        assert_eq!(v.step(1, 2), (2, 0));
        let mut mask = [0u32; 2];
        v.or_weight(1, &mut mask);
        assert_eq!(mask, [0, 2]);
    }

    #[test]
    fn validation_catches_each_damage() {
        type Edit = (fn(&mut ParserDwa), &'static str);
        let cases: [Edit; 22] = [
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
            (|t| t.chunk_table[0] = 2, "chunk out of range"),
            (|t| t.chunk_table[1] = 0, "chunk out of range"),
            (|t| t.chunk_table[1] = 3, "chunk out of range"),
            (|t| t.chunk_table[2] = 1, "chunk out of range"),
            (|t| t.chunk_table.push(0), "triples"),
            (|t| t.chunk_table[1] = 1, "not aligned"),
            (|t| t.weight_chunks[0] = 1, "chunk id"),
            (
                |t| {
                    t.weight_chunks.push(0);
                    t.weight_index[2] = 2;
                },
                "overlap",
            ),
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
            (
                |t| {
                    t.chunk_table = vec![0, 2, 0];
                    t.chunk_words = vec![1];
                },
                "out of range",
            ),
        ];
        for (edit, message) in cases {
            let mut t = small();
            edit(&mut t);
            let e = t.view().validate(1, 4, &[u32::MAX; 2]).unwrap_err();
            assert!(e.contains(message), "{message:?} not in {e:?}");
        }
        let e = small().view().validate(1, 4, &[u32::MAX, !2]).unwrap_err();
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
        v.validate(1, 4, &[u32::MAX; 2]).unwrap();
        assert_eq!(v.step(1, 3), (ParserDwa::FORK, 1));
        assert_eq!(v.fork(ParserDwa::FORK), &[1, 2]);
        assert_eq!(v.step(2, 0), (0, 1));
    }

    /// The AVX2 build of the OR (taken on CPUs that have it, as this test's likely
    /// does) and the portable loop give the right words, for chunks of every block
    /// count 1..=8 at several offsets in their window, and for a last chunk that ends
    /// with the mask between two blocks (the word loop for the tail).
    #[test]
    fn the_dispatched_or_equals_the_portable_loop() {
        let (mut table, mut words, mut index, mut chunks) = (vec![], vec![], vec![0], vec![]);
        let mut x = 0x9e37_79b9u32;
        const WIDTH: usize = 197;
        let shapes = (1..=8u32)
            .map(|k| (8 * ((3 * k) % (9 - k)) + 64 * (k % 3), 8 * k))
            .chain([(192, 5)]);
        for (start, len) in shapes {
            table.extend([start, len, words.len() as u32]);
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                words.push(x | 1);
            }
            chunks.push(chunks.len() as u32);
            index.push(chunks.len() as u32);
        }
        let t = ParserDwa {
            weight_index: [vec![0], index].concat(),
            weight_chunks: chunks,
            chunk_table: table,
            chunk_words: words,
            ..small()
        };
        let v = t.view();
        let before = vec![0x0101_0101u32; WIDTH];
        for w in 1..=9 {
            let (mut fast, mut portable) = (before.clone(), before.clone());
            v.or_weight(w, &mut fast);
            v.or_weight_portable(w, &mut portable);
            assert_eq!(fast, portable, "weight {w}");
            assert_ne!(fast, before, "weight {w} wrote nothing");
            // Each chunk's words land at its start, and nothing else changes.
            let [start, len, offset] =
                [0, 1, 2].map(|i| t.chunk_table[3 * (w as usize - 1) + i] as usize);
            for (i, (&got, &was)) in fast.iter().zip(&before).enumerate() {
                let want = if (start..start + len).contains(&i) {
                    was | t.chunk_words[offset + i - start]
                } else {
                    was
                };
                assert_eq!(got, want, "weight {w}, word {i}");
            }
        }
    }

    #[test]
    fn chunks_shared_by_weights_or_into_place() {
        // Weight 1: words 1 and 64..66; weight 2: words 64..66 only (shared chunk,
        // which ends at the mask's end).
        let t = ParserDwa {
            weights: vec![2],
            default_weight: vec![0, 1, 0],
            weight_index: vec![0, 0, 2, 3],
            weight_chunks: vec![0, 1, 1],
            chunk_table: vec![0, 8, 0, 64, 6, 8],
            chunk_words: vec![0, 2, 0, 0, 0, 0, 0, 0, 5, 0, 7, 0, 0, 0],
            ..small()
        };
        let v = t.view();
        v.validate(1, 4, &[u32::MAX; 70]).unwrap();
        let mut mask = vec![0u32; 70];
        v.or_weight(1, &mut mask);
        assert_eq!((mask[1], mask[64], mask[65], mask[66]), (2, 5, 0, 7));
        let mut mask = vec![0u32; 70];
        v.or_weight(2, &mut mask);
        assert_eq!((mask[1], mask[64], mask[66]), (0, 5, 7));
    }

    /// Writing a weight leaves exactly its words, whatever the mask held: the gaps
    /// before, between and after its chunks are zeroed, and `weight_words` counts the
    /// chunks' words.
    #[test]
    fn writing_a_weight_equals_zeroing_then_or_ing_it() {
        // Weight 1: words 1 and 64..66 (two chunks, a gap between); weight 2: words
        // 64..66 only (a gap before); weight 3: word 1 only (a gap after).
        let t = ParserDwa {
            weights: vec![2],
            default_weight: vec![0, 1, 0],
            weight_index: vec![0, 0, 2, 3, 4],
            weight_chunks: vec![0, 1, 1, 0],
            chunk_table: vec![0, 8, 0, 64, 6, 8],
            chunk_words: vec![0, 2, 0, 0, 0, 0, 0, 0, 5, 0, 7, 0, 0, 0],
            ..small()
        };
        let v = t.view();
        v.validate(1, 4, &[u32::MAX; 70]).unwrap();
        for w in [1, 2, 3] {
            let mut want = vec![0u32; 70];
            v.or_weight(w, &mut want);
            let mut got = vec![0xdead_beefu32; 70];
            v.write_weight(w, &mut got);
            assert_eq!(got, want, "weight {w}");
        }
        assert_eq!(
            (v.weight_words(1), v.weight_words(2), v.weight_words(3)),
            (14, 6, 8)
        );
    }

    /// `copy_words` (the AVX2 loop on CPUs that have it, as this test's likely does)
    /// copies exactly: every length from 0 to 80 words, at every word offset of source
    /// and destination within a 64-byte line, leaving the words around the copy alone;
    /// and the words of a whole 200k-token mask at the distance that made `memcpy` slow.
    #[test]
    fn copy_words_copies_exactly() {
        let src: Vec<u32> = (0..200u32)
            .map(|i| i.wrapping_mul(0x9e37_79b9) | 1)
            .collect();
        for len in 0..=80 {
            for so in 0..16 {
                for d_off in 0..16 {
                    let mut dst = vec![0u32; 120];
                    copy_words(&mut dst[d_off..d_off + len], &src[so..so + len]);
                    assert_eq!(
                        &dst[d_off..d_off + len],
                        &src[so..so + len],
                        "{len} {so} {d_off}"
                    );
                    assert!(dst[..d_off].iter().all(|&w| w == 0), "{len} {so} {d_off}");
                    assert!(
                        dst[d_off + len..].iter().all(|&w| w == 0),
                        "{len} {so} {d_off}"
                    );
                }
            }
        }
        let (words, page) = (6251usize, 1024usize);
        let big: Vec<u32> = (0..(words + 2 * page) as u32)
            .map(|i| i ^ 0x5555_5555)
            .collect();
        let mut out = vec![0u32; words + 2 * page];
        // Both at the start of a page, then the source 8 bytes before the destination.
        let (s0, d0) = (
            (page - big.as_ptr() as usize % 4096 / 4) % page,
            (page - out.as_ptr() as usize % 4096 / 4) % page,
        );
        let s0 = (s0 + page - 2) % page;
        copy_words(&mut out[d0..d0 + words], &big[s0..s0 + words]);
        assert_eq!(&out[d0..d0 + words], &big[s0..s0 + words]);
    }

    #[test]
    #[should_panic(expected = "different lengths")]
    fn copy_words_refuses_slices_of_different_lengths() {
        copy_words(&mut [0u32; 3], &[1u32; 4]);
    }

    #[test]
    fn a_joined_chunk_spans_windows() {
        // One chunk of 16 words from word 56 to 71, across the window edge at 64.
        let t = ParserDwa {
            chunk_table: vec![56, 16, 0],
            chunk_words: (1..=16).collect(),
            ..small()
        };
        let v = t.view();
        v.validate(1, 4, &[u32::MAX; 72]).unwrap();
        let mut mask = vec![0u32; 72];
        v.or_weight(1, &mut mask);
        assert_eq!(&mask[56..], &(1..=16).collect::<Vec<u32>>()[..]);
        assert!(mask[..56].iter().all(|&w| w == 0));
        let e = v.validate(1, 4, &[u32::MAX; 70]).unwrap_err();
        assert!(e.contains("out of range"), "{e}");
    }
}
