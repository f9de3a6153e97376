//! Sparse token sets as the mask words they set, made from the artifact's chunks the
//! first time a mask needs them.
//!
//! Why: a Parser DWA weight is stored as chunks of whole mask words (8-word blocks, so
//! a mask ORs them with wide loads). That suits dense sets — the inside of a JSON
//! string — but many of C's sets are the tokens that begin with one operator, a few
//! hundred tokens spread over the whole vocabulary: over `o200k_base` the largest of
//! them cover ~4,200 words of chunks of which ~400 are nonzero (one token a word). A
//! first-seen C mask ORs 50–60 of them, and OR-ing every word of their chunks was most
//! of its time. OR-ing only the nonzero words, as (word, bits) pairs, writes a tenth as
//! much: the weight sets of the largest first-seen masks of `stackmask bench`'s C traces,
//! zeroed and OR-ed in a loop, took 12.4 → 8.7 and 11.6 → 7.2 µs (2026-11-30); what is
//! left is mostly their half-dozen dense sets, whose unions the engine keeps (module
//! `kept_unions`).
//!
//! Made per engine on first use (the scan costs about one OR of the chunks), shared by
//! its matchers, never changed after: a weight's pairs are a pure function of the
//! mapped artifact, so which thread makes them does not matter.

use stackmask_formats::ParserDwaRef;
use std::sync::OnceLock;

/// A weight is OR-ed as pairs when its nonzero words are fewer than the words of its
/// chunks divided by this: a pair is a scattered read-modify-write of one word where a
/// chunk word is one lane of a streamed vector OR.
const SPARSE_RATIO: usize = 4;

/// A weight's nonzero mask words as (word, bits) pairs, or `None` if it is dense.
type Form = Option<Box<[(u32, u32)]>>;

/// Per weight: unset until first asked, then its [`Form`].
#[derive(Debug, Default)]
pub(crate) struct SparseWeights {
    forms: OnceLock<Box<[OnceLock<Form>]>>,
}

impl SparseWeights {
    /// The nonzero words of weight `w` as (mask word, bits) pairs, in increasing word
    /// order, if there are few enough to beat OR-ing its chunks. `dwa` is always the
    /// Parser DWA of the engine that owns this table.
    #[inline]
    pub fn pairs<'s>(&'s self, dwa: &ParserDwaRef<'_>, w: u32) -> Option<&'s [(u32, u32)]> {
        let forms = self.forms.get_or_init(|| {
            (0..dwa.weight_index.len() - 1)
                .map(|_| OnceLock::new())
                .collect()
        });
        debug_assert_eq!(forms.len(), dwa.weight_index.len() - 1);
        forms[w as usize]
            .get_or_init(|| sparse_form(dwa, w))
            .as_deref()
    }
}

/// The pairs of `w`, or `None` when its chunks are dense enough to OR whole.
fn sparse_form(dwa: &ParserDwaRef<'_>, w: u32) -> Form {
    let words = dwa.weight_words(w);
    let mut pairs = Vec::new();
    for &c in dwa.chunks_of(w) {
        let (start, chunk_words) = dwa.chunk(c);
        for (i, &bits) in chunk_words.iter().enumerate() {
            if bits != 0 {
                if (pairs.len() + 1) * SPARSE_RATIO >= words {
                    return None;
                }
                pairs.push(((start + i) as u32, bits));
            }
        }
    }
    Some(pairs.into_boxed_slice())
}

/// ORs a sparse weight's `pairs` into `mask` (the validated mask width).
#[inline]
pub(crate) fn or_pairs(pairs: &[(u32, u32)], mask: &mut [u32]) {
    for &(i, bits) in pairs {
        // In bounds: a chunk lies within the validated mask width.
        mask[i as usize] |= bits;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackmask_formats::ParserDwa;

    /// A 20-word mask (its last chunk ends off an 8-word block) and three weights: one
    /// sparse across two chunks, one dense, one with exactly a quarter of its chunk
    /// words nonzero (not under it, so dense).
    fn dwa() -> ParserDwa {
        let mut words = vec![0u32; 8];
        words[3] = 0x10;
        words.extend([0, 0, 0, 0x8000_0000]); // the tail chunk, words 16..20
        words.extend(1..=8u32); // dense, words 8..16
        let mut quarter = vec![0u32; 8];
        quarter[0] = 1;
        quarter[7] = 2;
        words.extend(quarter); // words 0..8 again
        ParserDwa {
            weight_index: vec![0, 0, 2, 3, 4],
            weight_chunks: vec![0, 1, 2, 3],
            chunk_table: vec![0, 8, 0, 16, 4, 8, 8, 8, 12, 0, 8, 20],
            chunk_words: words,
            ..ParserDwa::default()
        }
    }

    #[test]
    fn sparse_weights_are_their_nonzero_words_and_or_like_their_chunks() {
        let owned = dwa();
        let dwa = owned.view();
        let sparse = SparseWeights::default();
        assert_eq!(
            sparse.pairs(&dwa, 1),
            Some(&[(3, 0x10), (19, 0x8000_0000)][..])
        );
        assert_eq!(sparse.pairs(&dwa, 2), None);
        assert_eq!(sparse.pairs(&dwa, 3), None);
        for w in 1..4 {
            let start: Vec<u32> = (0..20u32)
                .map(|i| i.wrapping_mul(0x9e37_79b9) & 0x0f0f)
                .collect();
            let (mut by_pairs, mut by_chunks) = (start.clone(), start);
            match sparse.pairs(&dwa, w) {
                Some(pairs) => or_pairs(pairs, &mut by_pairs),
                None => dwa.or_weight(w, &mut by_pairs),
            }
            dwa.or_weight(w, &mut by_chunks);
            assert_eq!(by_pairs, by_chunks, "weight {w}");
        }
    }
}
