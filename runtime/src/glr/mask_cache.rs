//! The last few masks a matcher wrote, keyed by the token sets they are the union of.
//!
//! A mask is the union of the Parser DWA weights its walk reached, so two walks that
//! reach the same weights write the same mask, whatever their stacks. Decoding
//! revisits the same few situations over and over (inside a string, after a key,
//! after an identifier in an expression), and a mask OR-ed from a hundred scattered
//! chunks costs several times a plain 25 KB copy: a hit copies the stored mask
//! instead. Cheap masks (few chunks) are not stored, since storing costs a copy too.
//! Exact by construction: the key is the full set of weight ids, never a hash. A
//! stored set equals the walk's when it has as many ids and the walk collected each
//! of them (the walk marks what it collected, so this needs no sorting: sorting a C
//! mask's 40-odd ids was up to a quarter of a warm hit, `mask_floor` on `linked_list.c`
//! 1.52–1.57 µs with the sort, 1.13–1.16 without).

use super::sparse_weights::{self, SparseWeights};
use stackmask_formats::ParserDwaRef;

/// Masks kept per matcher when nothing else is set ([`MaskCache::set_slots`]).
pub const DEFAULT_MASK_CACHE_SLOTS: usize = 8;

/// Chunks below which OR-ing a mask costs about what copying a stored one does.
const MIN_CHUNKS: usize = 64;

/// A small least-recently-used set of masks; see the module docs.
#[derive(Debug)]
pub(crate) struct MaskCache {
    slots: Vec<Slot>,
    max_slots: usize,
    clock: u64,
}

#[derive(Debug)]
struct Slot {
    /// Weight ids, distinct, in the order the walk collected them.
    weights: Vec<u32>,
    /// The mask is `buf[start..start + len]`; see [`Slot::store`].
    buf: Box<[u32]>,
    start: usize,
    used: u64,
}

/// Spare words in a slot's buffer, to place the stored mask (one 4 KiB page).
const SPARE_WORDS: usize = 1024;

/// Where a stored mask starts relative to the caller's mask, modulo a page.
const PAGE_OFFSET: usize = 1024;

impl Slot {
    /// The stored mask, of `len` words.
    fn mask(&self, len: usize) -> &[u32] {
        &self.buf[self.start..self.start + len]
    }

    /// Stores `mask`. The copy starts `PAGE_OFFSET` bytes past the caller's buffer
    /// modulo 4 KiB: where source and destination addresses share their low 12 bits or
    /// the source trails slightly, x86 cores see false dependencies between a copy's
    /// loads and stores (4K aliasing), and a hit's 25 KB copy measured 0.19–0.22 µs
    /// instead of 0.13 (`benches/examples/mask_floor.rs`). Callers that keep one mask
    /// buffer get the fast placement on every hit; others get a random one, as before.
    fn store(&mut self, mask: &[u32]) {
        if self.buf.len() != mask.len() + SPARE_WORDS {
            // Allocates while the cache warms up (or the width changes), never after.
            self.buf = vec![0; mask.len() + SPARE_WORDS].into_boxed_slice();
        }
        let from = self.buf.as_ptr() as usize;
        let to = mask.as_ptr() as usize;
        // Both are `u32`-aligned, so the byte distance is a whole number of words.
        self.start = (PAGE_OFFSET + to).wrapping_sub(from) % 4096 / 4;
        self.buf[self.start..self.start + mask.len()].copy_from_slice(mask);
    }
}

impl Default for MaskCache {
    fn default() -> Self {
        MaskCache {
            slots: Vec::new(),
            max_slots: DEFAULT_MASK_CACHE_SLOTS,
            clock: 0,
        }
    }
}

impl Clone for MaskCache {
    /// A copy starts empty (it warms on its first masks): cloning a matcher must stay
    /// cheap, and its masks are recomputed exactly either way.
    fn clone(&self) -> Self {
        MaskCache {
            max_slots: self.max_slots,
            ..MaskCache::default()
        }
    }
}

impl MaskCache {
    /// Keeps at most `slots` masks (0 turns the cache off and frees it).
    pub fn set_slots(&mut self, slots: usize) {
        self.max_slots = slots;
        self.slots.truncate(slots);
    }

    /// The number of masks kept at most.
    pub fn slots(&self) -> usize {
        self.max_slots
    }

    /// Writes the union of `weights` (distinct ids) into `mask`, which has the
    /// validated mask width. `collected(w)` says whether `w` is one of `weights`;
    /// `sparse` (the engine's, or `None` for chunks only) says how sparse weights are OR-ed.
    pub fn write(
        &mut self,
        dwa: &ParserDwaRef<'_>,
        sparse: Option<&SparseWeights>,
        weights: &[u32],
        collected: impl Fn(u32) -> bool,
        mask: &mut [u32],
    ) {
        let chunks: usize = weights.iter().map(|&w| dwa.chunk_count(w)).sum();
        if chunks < MIN_CHUNKS || self.max_slots == 0 {
            or_all(dwa, sparse, weights, mask);
            return;
        }
        self.clock += 1;
        // Distinct ids on both sides: as many, each collected, is the same set.
        if let Some(slot) = self.slots.iter_mut().find(|s| {
            s.weights.len() == weights.len()
                && s.buf.len() == mask.len() + SPARE_WORDS
                && s.weights.iter().all(|&w| collected(w))
        }) {
            slot.used = self.clock;
            mask.copy_from_slice(slot.mask(mask.len()));
            return;
        }
        or_all(dwa, sparse, weights, mask);
        let slot = if self.slots.len() < self.max_slots {
            // Allocates while the cache warms up, never after.
            self.slots.push(Slot {
                weights: Vec::new(),
                buf: Box::default(),
                start: 0,
                used: 0,
            });
            self.slots.last_mut().expect("just pushed")
        } else {
            self.slots
                .iter_mut()
                .min_by_key(|s| s.used)
                .expect("max_slots > 0 slots")
        };
        slot.weights.clear();
        slot.weights.extend_from_slice(weights);
        slot.store(mask);
        slot.used = self.clock;
    }
}

/// Average chunk length, in words, above which writing a token set (a copy and a
/// gap fill per chunk) beats zeroing the mask and OR-ing it: measured per token set of
/// C and JSON × o200k (`write_weight` against `fill(0)` + `or_weight`, hot caches:
/// `benches/examples/mask_floor.rs --weights`),
/// writing is 1.1–1.3× slower at 8–16 words a chunk, 0.95× at 17–32, 0.64–0.73× past
/// 64 — each chunk's copy and fill are library calls, where the OR is an inline loop.
const WRITE_MIN_CHUNK_WORDS: usize = 16;

/// `mask` = the union of `weights` (distinct ids): the weight covering the most words
/// is written (copied, gaps zeroed) if its chunks are long, the others OR-ed over it
/// (sparse ones as pairs, given `sparse`: module `sparse_weights`), so a mask made
/// mostly of one dense token set costs about one copy of the mask.
fn or_all(
    dwa: &ParserDwaRef<'_>,
    sparse: Option<&SparseWeights>,
    weights: &[u32],
    mask: &mut [u32],
) {
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
            match sparse {
                Some(sparse) => sparse_weights::or_weight(dwa, sparse, w, mask),
                None => dwa.or_weight(w, mask),
            }
        }
    }
}
