//! The last few masks a matcher wrote, keyed by the token sets they are the union of.
//!
//! A mask is the union of the Parser DWA weights its walk reached, so two walks that
//! reach the same weights write the same mask, whatever their stacks. Decoding
//! revisits the same few situations over and over (inside a string, after a key,
//! after an identifier in an expression), and a mask OR-ed from a hundred scattered
//! chunks costs several times a plain 25 KB copy: a hit copies the stored mask
//! instead. Masks cheap to OR (few chunks, from sets that stay in cache) are not stored,
//! since storing one costs a copy too.
//! Exact by construction: the key is the full set of weight ids, never a hash. A
//! stored set equals the walk's when it has as many ids and the walk collected each
//! of them (the walk marks what it collected, so this needs no sorting: sorting a C
//! mask's 40-odd ids was up to a quarter of a warm hit, `mask_floor` on `linked_list.c`
//! 1.52–1.57 µs with the sort, 1.13–1.16 without).
//!
//! A mask of [`MIN_CHUNKS`] chunks or more that misses here is looked up (by its
//! sorted ids) in the unions the engine keeps for all its matchers, made and kept
//! there the first time (module `kept_unions`), and remembered here by where it is
//! kept: a hit here needs no sort and no lookup, and storing it costs no copy (most
//! kept masks are a base that stays in cache plus a patch, so the copy a slot of its
//! own would hold reads more memory than the kept union does). A mask that is not kept
//! is stored here as a copy, in a buffer placed for the copy.

use super::kept_unions::{self, KeptRef, KeptUnions};
use super::sparse_weights::{self, SparseWeights};
use stackmask_formats::parser_dwa::copy_words;
use stackmask_formats::ParserDwaRef;

/// Masks kept per matcher when nothing else is set ([`MaskCache::set_slots`]).
pub const DEFAULT_MASK_CACHE_SLOTS: usize = 8;

/// Chunks from which a mask is remembered: kept in the engine's kept unions and here.
/// Below, OR-ing it costs about what writing a kept one does. Chosen on `stackmask
/// bench` (C and JSON × o200k_base, alternating binaries): at 64, JSON's p99 rose by a
/// fifth while kept masks were whole 25 KB copies stored again in a slot here
/// (2026-12-02: 128 kept, C's p50 −10–30% and p99 −15–35%); once kept masks were
/// patches of bases, remembered here by reference (2026-12-05), 64 gave C's p50
/// 1.18–1.19 → 1.13–1.14 µs and JSON's p99 1.51–1.58 → 1.39–1.45, JSON's p50 0.56–0.59
/// → 0.60–0.62.
const MIN_CHUNKS: usize = 64;

/// Token-set bytes of an artifact past which its sets are taken to be read from L3
/// or memory (about a core's L2, less what the walk needs): then a mask of fewer than
/// [`MIN_CHUNKS`] chunks whose sets cover 1/[`DENSE_FRACTION`] of the mask or more,
/// and a mask of one set, are kept too, since a kept mask's base stays in cache and its
/// patch is small (C × o200k_base, 7.8 MB of sets: one dense set written in 1.1 µs
/// against 0.6–0.7 for a kept mask; get_mask p50 1.13–1.14 → 1.04–1.07 µs, p99
/// 4.05–4.42 → 3.66–3.88 on `stackmask bench`, 2026-12-05). Sets that fit in L2 (JSON,
/// 0.35 MB) are as hot as a base: keeping those masks made JSON's p50 3–10% slower.
const COLD_SETS_MIN_BYTES: usize = 1 << 20;

/// See [`COLD_SETS_MIN_BYTES`].
const DENSE_FRACTION: usize = 2;

/// A small least-recently-used set of masks; see the module docs.
#[derive(Debug)]
pub(crate) struct MaskCache {
    slots: Vec<Slot>,
    max_slots: usize,
    clock: u64,
    /// Scratch for the dense weights of a mask (module `kept_unions`).
    dense: Vec<u32>,
    /// Scratch for a mask's weights, sorted: its key in the engine's kept unions.
    key: Vec<u32>,
    /// The address of the kept unions that the slots' [`KeptRef`]s are into (0: none
    /// yet): slots from another engine's table are dropped, never followed.
    kept_table: usize,
}

#[derive(Debug)]
struct Slot {
    /// Weight ids, distinct, in the order the walk collected them.
    weights: Vec<u32>,
    /// Where the engine keeps the mask, or `None`: then the mask is
    /// `buf[start..start + len]`; see [`Slot::store`].
    kept: Option<KeptRef>,
    buf: Box<[u32]>,
    start: usize,
    used: u64,
}

/// Spare words in a slot's buffer, to place the stored mask (one 4 KiB page).
const SPARE_WORDS: usize = 1024;

/// Where a stored mask starts relative to the caller's mask, modulo a page.
const PAGE_OFFSET: usize = 1024;

impl Slot {
    /// Writes the stored mask into `mask` (the width it was stored at).
    fn write(&self, kept: Option<&KeptUnions>, mask: &mut [u32]) -> bool {
        match (self.kept, kept) {
            (Some(r), Some(unions)) => unions.write_ref(r, mask),
            (Some(_), None) => false,
            (None, _) if self.buf.len() == mask.len() + SPARE_WORDS => {
                copy_words(mask, &self.buf[self.start..self.start + mask.len()]);
                true
            }
            (None, _) => false,
        }
    }

    /// Stores `mask`. The copy starts `PAGE_OFFSET` bytes past the caller's buffer
    /// modulo 4 KiB: where source and destination addresses share their low 12 bits or
    /// the source trails slightly, x86 cores see false dependencies between a copy's
    /// loads and stores (4K aliasing), and a hit's 25 KB copy measured 0.19–0.22 µs
    /// instead of 0.13 (`benches/examples/mask_floor.rs`). Callers that keep one mask
    /// buffer get the fast placement on every hit; others get a random one, as before.
    /// (Every copy goes through `copy_words`, never `memcpy`, whose `rep movsb` is
    /// ten times slower at some of those random distances on AMD cores.)
    fn store(&mut self, mask: &[u32]) {
        if self.buf.len() != mask.len() + SPARE_WORDS {
            // Allocates while the cache warms up (or the width changes), never after.
            self.buf = vec![0; mask.len() + SPARE_WORDS].into_boxed_slice();
        }
        let from = self.buf.as_ptr() as usize;
        let to = mask.as_ptr() as usize;
        // Both are `u32`-aligned, so the byte distance is a whole number of words.
        self.start = (PAGE_OFFSET + to).wrapping_sub(from) % 4096 / 4;
        copy_words(&mut self.buf[self.start..self.start + mask.len()], mask);
    }
}

impl Default for MaskCache {
    fn default() -> Self {
        MaskCache {
            slots: Vec::new(),
            max_slots: DEFAULT_MASK_CACHE_SLOTS,
            clock: 0,
            dense: Vec::new(),
            key: Vec::new(),
            kept_table: 0,
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
    /// `forms` (the engine's) says how they are OR-ed.
    pub fn write(
        &mut self,
        dwa: &ParserDwaRef<'_>,
        forms: WeightForms<'_>,
        weights: &[u32],
        collected: impl Fn(u32) -> bool,
        mask: &mut [u32],
    ) {
        let chunks: usize = weights.iter().map(|&w| dwa.chunk_count(w)).sum();
        let cold_sets = dwa.weight_bytes() > COLD_SETS_MIN_BYTES;
        // Summing the words reads every chunk's length, so only below `MIN_CHUNKS`.
        let dense = chunks < MIN_CHUNKS
            && cold_sets
            && weights.iter().map(|&w| dwa.weight_words(w)).sum::<usize>() * DENSE_FRACTION
                >= mask.len();
        let remembered = chunks >= MIN_CHUNKS || dense;
        if !remembered || self.max_slots == 0 {
            or_all(dwa, forms, weights, &mut self.dense, mask);
            return;
        }
        self.clock += 1;
        let table = forms.kept.map_or(0, |k| k as *const KeptUnions as usize);
        if table != self.kept_table {
            // Refs into the table the slots were stored with mean nothing here.
            self.slots.retain(|s| s.kept.is_none());
            self.kept_table = table;
        }
        // Distinct ids on both sides: as many, each collected, is the same set.
        let found = self.slots.iter().position(|s| {
            s.weights.len() == weights.len() && s.weights.iter().all(|&w| collected(w))
        });
        if let Some(i) = found {
            if self.slots[i].write(forms.kept, mask) {
                self.slots[i].used = self.clock;
                return;
            }
        }
        let mut kept = None;
        // One set is the mask itself: from sets that stay in cache, written as fast as a
        // kept copy (JSON's p50 and p99 rose by 5–20% when those were kept).
        if let (Some(unions), true) = (forms.kept, weights.len() >= 2 || cold_sets) {
            // The whole mask, from the engine's kept unions: made the first time any
            // matcher of the engine needs it (its dense weights OR-ed there, not
            // copied from a kept union: the table is being set), then copied.
            self.key.clear();
            self.key.extend_from_slice(weights);
            self.key.sort_unstable();
            let dense = &mut self.dense;
            let made = WeightForms {
                kept: None,
                ..forms
            };
            kept = unions.write_kept(
                &self.key,
                mask,
                || true,
                |words| or_all(dwa, made, weights, dense, words),
            );
        }
        if kept.is_none() {
            or_all(dwa, forms, weights, &mut self.dense, mask);
        }
        // Remembered here too (a hit here costs no sort): where it is kept, or a copy
        // in a placed buffer.
        // A slot found above that could not write the mask (stored at another width) is
        // stored over, so that it is not found again.
        let slot = if let Some(i) = found {
            &mut self.slots[i]
        } else if self.slots.len() < self.max_slots {
            // Allocates while the cache warms up, never after.
            self.slots.push(Slot {
                weights: Vec::new(),
                kept: None,
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
        slot.kept = kept;
        if kept.is_none() {
            slot.store(mask);
        }
        slot.used = self.clock;
    }
}

/// How a matcher writes the union of its weights: what the engine keeps to make it
/// cheaper (module docs of `sparse_weights` and `kept_unions`). `None` for either:
/// not used, for A/B measurements.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WeightForms<'e> {
    pub sparse: Option<&'e SparseWeights>,
    pub kept: Option<&'e KeptUnions>,
}

/// `mask` = the union of `weights` (distinct ids). With sparse pairs, the dense
/// weights' union is written first (copied from the engine's kept unions when there
/// are two or more, module `kept_unions`), then the sparse ones are OR-ed over it as
/// pairs; without, every weight as chunks. `dense` is scratch for the dense ids.
fn or_all(
    dwa: &ParserDwaRef<'_>,
    forms: WeightForms<'_>,
    weights: &[u32],
    dense: &mut Vec<u32>,
    mask: &mut [u32],
) {
    let Some(sparse) = forms.sparse else {
        kept_unions::write_union(dwa, weights, mask);
        return;
    };
    dense.clear();
    dense.extend(
        weights
            .iter()
            .copied()
            .filter(|&w| sparse.pairs(dwa, w).is_none()),
    );
    match forms.kept {
        Some(unions) if dense.len() >= 2 => {
            dense.sort_unstable();
            unions.write(dwa, dense, mask);
        }
        _ => kept_unions::write_union(dwa, dense, mask),
    }
    for &w in weights {
        if let Some(pairs) = sparse.pairs(dwa, w) {
            sparse_weights::or_pairs(pairs, mask);
        }
    }
}
