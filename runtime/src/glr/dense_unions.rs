//! Unions of dense token sets, kept per engine for the next mask that ORs the same ones.
//!
//! Why: the masks that miss a matcher's cache OR a few dense token sets that each span
//! the whole vocabulary (C × `o200k_base`: 2–6 sets of ~6,250 words, the rest of the
//! mask being sparse sets OR-ed as pairs, module `sparse_weights`). Those dense sets
//! come in few combinations: over `stackmask bench`'s C traces the 22,305 masks that
//! missed the matchers' caches had 235 distinct combinations of dense sets, and 81% of
//! the first pass's masks with two or more found their combination earlier in the same
//! pass. A mask whose combination is kept copies one union instead of writing one set
//! and OR-ing the others over it.
//!
//! Shared by an engine's matchers, like the sparse pairs: a union is a pure function
//! of the mapped artifact and its key (the sorted weight ids, compared whole, never by
//! hash alone), so which thread makes it does not matter, and a kept union is never
//! changed or dropped. Reads are lock-free: a slot is a [`OnceLock`], set once. The
//! memory is bounded ([`MAX_DENSE_UNION_BYTES`]); past it masks are OR-ed as before.

use stackmask_formats::ParserDwaRef;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Bytes of unions (their words and keys) one engine keeps at most: 335 unions of a
/// 200k-token mask (25 KB each), more for smaller vocabularies up to [`SLOTS`].
pub const MAX_DENSE_UNION_BYTES: usize = 8 << 20;

/// Slots of the table (a power of two): a key hashes to one and looks at the next
/// [`PROBES`], so a union is found in at most that many comparisons.
const SLOTS: usize = 1024;

/// Slots looked at per key before the union is OR-ed without being kept.
const PROBES: usize = 8;

/// Average chunk length, in words, above which writing a token set (a copy and a
/// gap fill per chunk) beats zeroing the mask and OR-ing it: measured per token set of
/// C and JSON × o200k (`write_weight` against `fill(0)` + `or_weight`, hot caches:
/// `benches/examples/mask_floor.rs --weights`),
/// writing is 1.1–1.3× slower at 8–16 words a chunk, 0.95× at 17–32, 0.64–0.73× past
/// 64 — each chunk's copy and fill are library calls, where the OR is an inline loop.
const WRITE_MIN_CHUNK_WORDS: usize = 16;

/// One kept union.
#[derive(Debug)]
struct Union {
    /// The weight ids, sorted and distinct.
    key: Box<[u32]>,
    /// Their union, at the engine's mask width.
    words: Box<[u32]>,
}

/// The kept unions of one engine; see the module docs.
#[derive(Debug, Default)]
pub(crate) struct DenseUnions {
    slots: OnceLock<Box<[OnceLock<Union>]>>,
    /// Bytes taken or reserved by unions, at most [`MAX_DENSE_UNION_BYTES`].
    bytes: AtomicUsize,
}

impl DenseUnions {
    /// Sets `mask` (the validated mask width) to the union of the weights `key`
    /// (sorted, distinct): a copy of the kept union, or, the first time, the union
    /// made and kept if there is room.
    pub fn write(&self, dwa: &ParserDwaRef<'_>, key: &[u32], mask: &mut [u32]) {
        debug_assert!(key.windows(2).all(|p| p[0] < p[1]), "sorted, distinct");
        let slots = self
            .slots
            .get_or_init(|| (0..SLOTS).map(|_| OnceLock::new()).collect());
        let home = hash(key);
        for probe in 0..PROBES {
            let slot = &slots[(home + probe) & (SLOTS - 1)];
            let union = match slot.get() {
                Some(union) => union,
                None => {
                    let bytes = 4 * (mask.len() + key.len());
                    if self.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes
                        > MAX_DENSE_UNION_BYTES
                    {
                        self.bytes.fetch_sub(bytes, Ordering::Relaxed);
                        break;
                    }
                    let mut made = false;
                    let union = slot.get_or_init(|| {
                        made = true;
                        // Allocates once per kept union (the engine warming up).
                        let mut words = vec![0; mask.len()].into_boxed_slice();
                        write_union(dwa, key, &mut words);
                        Union {
                            key: key.into(),
                            words,
                        }
                    });
                    if !made {
                        // Another thread set the slot first, with its own bytes.
                        self.bytes.fetch_sub(bytes, Ordering::Relaxed);
                    }
                    union
                }
            };
            if *union.key == *key && union.words.len() == mask.len() {
                mask.copy_from_slice(&union.words);
                return;
            }
        }
        write_union(dwa, key, mask);
    }

    /// The number of unions kept (for tests).
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.slots
            .get()
            .map_or(0, |s| s.iter().filter(|u| u.get().is_some()).count())
    }
}

/// A slot for `key`: FNV-1a over its ids.
fn hash(key: &[u32]) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &w in key {
        h = (h ^ u64::from(w)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h ^ (h >> 32)) as usize
}

/// Sets `mask` (the validated mask width) to the union of `weights` (distinct ids) as
/// chunks: the weight covering the most words is written (copied, gaps zeroed) if its
/// chunks are long, the others OR-ed over it, so a union made mostly of one dense set
/// costs about one copy of the mask.
pub(super) fn write_union(dwa: &ParserDwaRef<'_>, weights: &[u32], mask: &mut [u32]) {
    let base = weights
        .iter()
        .map(|&w| (dwa.weight_words(w), w))
        .max()
        .filter(|&(words, w)| words > WRITE_MIN_CHUNK_WORDS * dwa.chunk_count(w))
        .map(|(_, w)| w);
    match base {
        Some(w) => dwa.write_weight(w, mask),
        None => mask.fill(0),
    }
    for &w in weights {
        if Some(w) != base {
            dwa.or_weight(w, mask);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackmask_formats::ParserDwa;

    /// A 16-word mask and weights `1..=n` of one 16-word chunk each (weight 0 is
    /// "none"), weight `w` setting the bits of `pattern(w, i)` in word `i`.
    fn dwa(n: u32) -> ParserDwa {
        let mut chunk_words = Vec::new();
        let mut chunk_table = Vec::new();
        for w in 1..=n {
            chunk_table.extend([0, 16, chunk_words.len() as u32]);
            chunk_words.extend((0..16).map(|i| pattern(w, i)));
        }
        ParserDwa {
            weight_index: std::iter::once(0).chain(0..=n).collect(),
            weight_chunks: (0..n).collect(),
            chunk_table,
            chunk_words,
            ..ParserDwa::default()
        }
    }

    fn pattern(w: u32, i: u32) -> u32 {
        w.wrapping_mul(0x9e37_79b9).rotate_left(i) & (0x0101_0101 << (w % 8))
    }

    fn naive(key: &[u32]) -> Vec<u32> {
        (0..16)
            .map(|i| key.iter().fold(0, |m, &w| m | pattern(w, i)))
            .collect()
    }

    #[test]
    fn kept_unions_are_the_unions_of_their_keys() {
        let owned = dwa(40);
        let dwa = owned.view();
        let unions = DenseUnions::default();
        let keys: Vec<Vec<u32>> = vec![
            vec![1, 2],
            vec![1, 3],
            vec![2, 3],
            vec![1, 2, 3],
            vec![5, 17, 40],
            vec![3, 4, 9, 11, 12, 30],
        ];
        for round in 0..3 {
            for key in &keys {
                let mut mask = vec![0xdead_beef; 16];
                unions.write(&dwa, key, &mut mask);
                assert_eq!(mask, naive(key), "key {key:?}, round {round}");
            }
        }
        assert_eq!(unions.kept(), keys.len(), "each kept once");
    }

    #[test]
    fn threads_making_the_same_unions_at_once_get_them_exact_and_kept_once() {
        let owned = dwa(24);
        let unions = DenseUnions::default();
        let keys: Vec<Vec<u32>> = (1..24).map(|a| vec![a, a + 1]).collect();
        std::thread::scope(|scope| {
            for t in 0..4 {
                let (owned, unions, keys) = (&owned, &unions, &keys);
                scope.spawn(move || {
                    let dwa = owned.view();
                    for i in 0..keys.len() * 4 {
                        let key = &keys[(i * (t + 1)) % keys.len()];
                        let mut mask = vec![0; 16];
                        unions.write(&dwa, key, &mut mask);
                        assert_eq!(mask, naive(key), "thread {t}, key {key:?}");
                    }
                });
            }
        });
        assert_eq!(unions.kept(), keys.len());
        // Bytes reserved by a thread that lost the race for a slot are given back.
        let per_union = 4 * (16 + 2);
        assert_eq!(unions.bytes.load(Ordering::Relaxed), keys.len() * per_union);
    }

    #[test]
    fn past_the_slots_a_key_probes_gives_unions_are_made_and_not_kept() {
        let owned = dwa(60);
        let dwa = owned.view();
        let unions = DenseUnions::default();
        // Far more keys than the slots one key can probe, and than all the slots:
        // every answer stays exact, and no more are kept than there are slots.
        let mut keys = Vec::new();
        for a in 1..=60 {
            for b in a + 1..=60 {
                keys.push(vec![a, b]);
            }
        }
        for round in 0..2 {
            for key in &keys {
                let mut mask = vec![0; 16];
                unions.write(&dwa, key, &mut mask);
                assert_eq!(mask, naive(key), "key {key:?}, round {round}");
            }
        }
        assert!(unions.kept() <= SLOTS);
        assert!(unions.bytes.load(Ordering::Relaxed) <= MAX_DENSE_UNION_BYTES);
    }
}
