//! Unions of token sets, kept per engine for the next mask that ORs the same ones:
//! unions of a mask's dense sets, and whole masks that cost many chunks to OR.
//!
//! "Dense" means not kept as (word, bits) pairs (module `sparse_weights`): a quarter or
//! more of the words its chunks cover are nonzero. Why: the masks that miss a matcher's
//! cache OR a few such sets that each span the whole vocabulary (C × `o200k_base`: 2–6
//! sets of ~6,250 words, the rest of the mask being sparse sets OR-ed as pairs). They
//! come in few combinations: over `stackmask bench`'s C traces the 22,305 masks that
//! missed the matchers' caches had 133 distinct combinations of two or more dense sets,
//! and 81% of the first pass's masks with two or more found their combination earlier in
//! the same pass. A mask whose combination is kept copies one union instead of writing
//! one set and OR-ing the others over it.
//!
//! Whole masks, for the same reason one level up: those 18,445 misses (in a later
//! run) were of only 532 distinct masks, none seen once, so a mask of
//! `mask_cache::MIN_CHUNKS` chunks or more (or of dense sets) that one matcher made is copied by
//! every matcher after it (`MaskCache::write`). Both kinds share
//! one table: a key is the sorted ids of the weights whose union the slot holds,
//! whichever kind of mask asked for it.
//!
//! Shared by an engine's matchers, like the sparse pairs: a union is a pure function
//! of the mapped artifact and its key (the sorted weight ids, compared whole, never by
//! hash alone), so which thread makes it does not matter, and a kept union is never
//! changed or dropped. A slot is a [`OnceLock`], set once: reading a set slot takes no
//! lock, and a thread that finds a slot being set waits for that one union. The memory
//! is bounded ([`MAX_KEPT_UNION_BYTES`] of unions, plus the table of [`SLOTS`] slots);
//! past the bound, or when a key's [`PROBES`] slots hold other unions, masks are
//! OR-ed as before.
//!
//! Most kept unions are held as a *patch* of a *base*: the words where they differ
//! from one of a few whole unions kept as they are. Why: C's 282 distinct masks over
//! `stackmask bench`'s programs are 7 MB, far more than a core's L2, so a kept mask
//! was copied from L3 at about three times a cached copy's cost (1.5 µs against 0.5,
//! timers patched into the walk, 2026-12-05). Yet they are few shapes: from their
//! nearest of 16 of them, they differ in a median of 65 words of 6,251, and in 1,392 at
//! p99. A copy of a base that stays in cache plus a few hundred (index, word) pairs
//! reads a tenth of the bytes. Bases are the first unions made that no base is near
//! ([`MAX_BASES`] at most, set once, never dropped), so which unions are bases depends
//! on the order masks come in; every kept union is its exact words either way.

use stackmask_formats::parser_dwa::copy_words;
use stackmask_formats::ParserDwaRef;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Bytes of unions (their words and keys) one engine keeps at most: 670 unions of a
/// 200k-token mask (25 KB each), more for smaller vocabularies up to [`SLOTS`]. C ×
/// `o200k_base`'s traces need 532 whole masks and 133 dense unions.
pub const MAX_KEPT_UNION_BYTES: usize = 16 << 20;

/// Slots of the table (a power of two; about 40 bytes each, 80 KB, made on first
/// use): a key hashes to a home slot and looks at it and the [`PROBES`]` - 1` after it.
const SLOTS: usize = 2048;

/// Slots looked at per key before the union is OR-ed without being kept.
const PROBES: usize = 8;

/// A union is kept only when the dense sets other than the largest cover at least
/// 1/this of the mask's words. Writing the largest and OR-ing the rest costs a copy of
/// the mask plus the rest; a kept union costs the copy alone, so below that the saving
/// is under an eighth of a copy and the slot's 25 KB are better left to another
/// combination (a choice, not a measurement: C's combinations are of whole-mask sets).
const MIN_REST_FRACTION: usize = 8;

/// Average chunk length, in words, above which writing a token set (a copy and a
/// gap fill per chunk) beats zeroing the mask and OR-ing it: measured per token set of
/// C and JSON × o200k (`write_weight` against `fill(0)` + `or_weight`, hot caches:
/// `benches/examples/mask_floor.rs --weights`),
/// writing is 1.1–1.3× slower at 8–16 words a chunk, 0.95× at 17–32, 0.64–0.73× past
/// 64 — each chunk's copy and fill are library calls, where the OR is an inline loop.
const WRITE_MIN_CHUNK_WORDS: usize = 16;

/// Bases one engine keeps at most: 800 KB at a 200k-token mask, so that the bases a
/// run of masks patches stay in a core's L2. C's masks over `stackmask bench`'s traces
/// take all 32 (× `o200k_base`); JSON's a few.
pub const MAX_BASES: usize = 32;

/// A union is held as a patch when it differs from its nearest base in at most
/// 1/this of its words: applying a pair costs about what copying four words does.
const MAX_PATCH_FRACTION: usize = 4;

/// While the engine has bases free, a union that differs from its nearest base in
/// more than 1/this of its words becomes a base. Bases made only past
/// [`MAX_PATCH_FRACTION`] are so far apart that the unions between them patch a
/// median of 521 of C's 6,251 words; at 1/16, 256, and a kept mask is written in
/// three quarters of the time (C × o200k_base, timers patched into the walk,
/// 2026-12-05).
const NEW_BASE_FRACTION: usize = 16;

/// Words compared to tell which base a union is nearest ([`sample`]): comparing every
/// word with every base would cost up to 32 passes over the mask each time a union is
/// made. Single words spread evenly: blocks of 16 words chose worse bases (C's get_mask
/// p50 a few percent slower on `stackmask bench`).
const SAMPLE_WORDS: usize = 512;

/// Where a kept union lies in its table: a matcher's cache keeps this rather than a
/// copy of the union (module `mask_cache`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeptRef(usize);

/// One kept union.
#[derive(Debug)]
struct Union {
    /// The weight ids, sorted and distinct.
    key: Box<[u32]>,
    /// Their union, at the engine's mask width.
    words: Held,
}

/// A base's words, set once (module docs).
type Base = OnceLock<BaseWords>;

/// A base: its words, and a sample of them ([`sample`]) stored end to end, so that
/// telling which base a new union is nearest reads the samples in order. (Sampled in
/// place, one word in 16 of each base, that took 7.8 µs of the 17 µs a C union took to
/// hold at the median; with this and [`patch`]'s blocks, 7.7 µs in all.)
#[derive(Debug)]
struct BaseWords {
    words: Box<[u32]>,
    sample: Box<[u32]>,
}

/// The words of `union` that tell which base it is nearest: [`SAMPLE_WORDS`], spread
/// evenly over the mask.
fn sample(union: &[u32]) -> Vec<u32> {
    let step = union.len().div_ceil(SAMPLE_WORDS).max(1);
    union.iter().step_by(step).copied().collect()
}

/// How a kept union's words are held (module docs).
#[derive(Debug)]
enum Held {
    /// As base `i` of the engine.
    Base(usize),
    /// As its own words, when it is near no base and the bases are all taken.
    Whole(Box<[u32]>),
    /// As base `base` with the words at some indices replaced: (index, word) pairs,
    /// indices ascending and below the mask width.
    Patch { base: usize, pairs: Box<[u32]> },
}

/// The words of `union` that differ from `base` (as long), as (index, word) pairs, if
/// there are at most `limit` of them.
fn patch(base: &[u32], union: &[u32], limit: usize) -> Option<Vec<u32>> {
    let mut pairs = Vec::new();
    let mut add = |i: usize, u: u32, b: u32| {
        if u == b {
            return true;
        }
        if pairs.len() == 2 * limit {
            return false;
        }
        pairs.extend([i as u32, u]);
        true
    };
    // Blocks of 16 compared whole first, since most of a near union's are equal: their
    // XOR, vectorized as fixed-size arrays (half the time of the same over slices, in a
    // microbenchmark; slice equality calls `memcmp` per block).
    let whole = union.len() / PATCH_BLOCK * PATCH_BLOCK;
    for k in (0..whole).step_by(PATCH_BLOCK) {
        let u: &[u32; PATCH_BLOCK] = union[k..k + PATCH_BLOCK].try_into().expect("a block");
        let b: &[u32; PATCH_BLOCK] = base[k..k + PATCH_BLOCK].try_into().expect("a block");
        if (0..PATCH_BLOCK).fold(0, |acc, j| acc | (u[j] ^ b[j])) == 0 {
            continue;
        }
        if !(0..PATCH_BLOCK).all(|j| add(k + j, u[j], b[j])) {
            return None;
        }
    }
    (whole..union.len())
        .all(|k| add(k, union[k], base[k]))
        .then_some(pairs)
}

/// Words [`patch`] compares at once.
const PATCH_BLOCK: usize = 16;

/// The kept unions of one engine; see the module docs.
#[derive(Debug)]
pub(crate) struct KeptUnions {
    slots: OnceLock<Box<[OnceLock<Union>]>>,
    /// The bases: the first `base_count` are set or being set (module docs).
    bases: OnceLock<Box<[Base]>>,
    /// Bases claimed; may run past `max_bases` (those claims fail).
    base_count: AtomicUsize,
    /// Bytes taken or reserved by unions, at most `max_bytes`.
    bytes: AtomicUsize,
    /// [`MAX_KEPT_UNION_BYTES`], [`SLOTS`], [`PROBES`] and [`MAX_BASES`], but in tests.
    max_bytes: usize,
    slot_count: usize,
    probes: usize,
    max_bases: usize,
}

impl Default for KeptUnions {
    fn default() -> Self {
        KeptUnions::with_limits(MAX_KEPT_UNION_BYTES, SLOTS, PROBES, MAX_BASES)
    }
}

impl KeptUnions {
    /// A table of `slot_count` slots (a power of two), `probes` looked at per key, at
    /// most `max_bytes` of unions and `max_bases` bases.
    fn with_limits(max_bytes: usize, slot_count: usize, probes: usize, max_bases: usize) -> Self {
        debug_assert!(slot_count.is_power_of_two() && probes <= slot_count);
        KeptUnions {
            slots: OnceLock::new(),
            bases: OnceLock::new(),
            base_count: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            max_bytes,
            slot_count,
            probes,
            max_bases,
        }
    }

    /// Sets `mask` (the validated mask width) to the union of the weights `key`
    /// (sorted, distinct): a copy of the kept union, or, the first time, the union
    /// made and kept if it is worth keeping and there is room.
    pub fn write(&self, dwa: &ParserDwaRef<'_>, key: &[u32], mask: &mut [u32]) {
        let width = mask.len();
        let kept = self.write_kept(
            key,
            mask,
            || worth_keeping(dwa, key, width),
            |words| write_union(dwa, key, words),
        );
        if kept.is_none() {
            write_union(dwa, key, mask);
        }
    }

    /// Sets `mask` (the validated mask width) to the kept union of the weights `key`
    /// (sorted, distinct), or, the first time, to the union `make` writes, kept if
    /// `worth()` and there is room: where the union is kept, for [`KeptUnions::write_ref`].
    /// `None`, with `mask` unchanged, when the union is not kept (then the caller makes
    /// it without keeping it).
    pub fn write_kept(
        &self,
        key: &[u32],
        mask: &mut [u32],
        worth: impl FnOnce() -> bool,
        make: impl FnOnce(&mut [u32]),
    ) -> Option<KeptRef> {
        debug_assert!(key.windows(2).all(|p| p[0] < p[1]), "sorted, distinct");
        let slots = self
            .slots
            .get_or_init(|| (0..self.slot_count).map(|_| OnceLock::new()).collect());
        let home = hash(key);
        let (mut worth, mut make) = (Some(worth), Some(make));
        for probe in 0..self.probes {
            let index = home.wrapping_add(probe) & (self.slot_count - 1);
            let slot = &slots[index];
            let union = match slot.get() {
                Some(union) => union,
                // Only here, not before probing: a key not worth keeping is never in
                // the table, and a hit need not read every chunk of its sets.
                None if !worth.take().is_some_and(|w| w()) => break,
                None => match make
                    .take()
                    .and_then(|make| self.set_slot(slot, key, mask.len(), make))
                {
                    Some(union) => union,
                    None => break,
                },
            };
            if *union.key == *key && self.write_held(&union.words, mask) {
                return Some(KeptRef(index));
            }
        }
        None
    }

    /// Sets `mask` to the union [`KeptUnions::write_kept`] returned `r` for: `false`,
    /// with `mask` unchanged, if there is none (`r` is another table's) or it is not of
    /// the mask's width.
    pub fn write_ref(&self, r: KeptRef, mask: &mut [u32]) -> bool {
        let union = self
            .slots
            .get()
            .and_then(|s| s.get(r.0))
            .and_then(|s| s.get());
        union.is_some_and(|u| self.write_held(&u.words, mask))
    }

    /// Sets `slot` to the union of `key` at mask width `width`, as `make` writes it,
    /// unless another thread has, reserving its bytes first (as many as a whole union
    /// takes; what its patch does not use is given back): the slot's union, or `None`
    /// if there is no room.
    fn set_slot<'s>(
        &self,
        slot: &'s OnceLock<Union>,
        key: &[u32],
        width: usize,
        make: impl FnOnce(&mut [u32]),
    ) -> Option<&'s Union> {
        let bytes = 4 * (width + key.len());
        // A plain load first: once the table is full every mask not kept comes here,
        // and a read-modify-write per mask would bounce the counter's cache line
        // between the threads.
        if self.bytes.load(Ordering::Relaxed) + bytes > self.max_bytes {
            return None;
        }
        // Threads that passed the load together may overshoot it: the last gives back.
        if self.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes > self.max_bytes {
            self.bytes.fetch_sub(bytes, Ordering::Relaxed);
            return None;
        }
        let mut unused = bytes;
        let union = slot.get_or_init(|| {
            // Allocates once per kept union (the engine warming up).
            let mut words = vec![0; width];
            make(&mut words);
            let (held, held_bytes) = self.hold(words);
            unused = bytes - (4 * key.len() + held_bytes);
            Union {
                key: key.into(),
                words: held,
            }
        });
        // All of it when another thread set the slot first, with its own bytes.
        self.bytes.fetch_sub(unused, Ordering::Relaxed);
        Some(union)
    }

    /// The bases' table (made on first use).
    fn bases(&self) -> &[Base] {
        self.bases
            .get_or_init(|| (0..self.max_bases).map(|_| OnceLock::new()).collect())
    }

    /// How to hold `union` (module docs), and the bytes that takes: a patch of the
    /// nearest base if it is near enough, else a new base while there is room for one,
    /// else its own words.
    fn hold(&self, union: Vec<u32>) -> (Held, usize) {
        let bases = self.bases();
        let claimed = self.base_count.load(Ordering::Acquire).min(bases.len());
        let mine = sample(&union);
        let nearest = bases[..claimed]
            .iter()
            .enumerate()
            .filter_map(|(i, b)| b.get().map(|b| (i, b)))
            .filter(|(_, b)| b.words.len() == union.len())
            .min_by_key(|(_, b)| mine.iter().zip(&*b.sample).filter(|(x, y)| x != y).count());
        let nearest = nearest.map(|(i, _)| i);
        let patched = |base: usize, limit: usize| {
            let words = &bases[base].get().expect("the nearest base is set").words;
            patch(words, &union, limit).map(|pairs| {
                let bytes = 4 * pairs.len();
                let pairs = pairs.into_boxed_slice();
                (Held::Patch { base, pairs }, bytes)
            })
        };
        // While bases are free, only a near union is a patch: bases far apart leave
        // the unions between them large patches.
        let free = claimed < bases.len();
        let near = union.len() / NEW_BASE_FRACTION;
        let far = union.len() / MAX_PATCH_FRACTION;
        if let Some(held) = nearest.and_then(|i| patched(i, if free { near } else { far })) {
            return held;
        }
        let bytes = 4 * union.len();
        let i = self.base_count.fetch_add(1, Ordering::AcqRel);
        if i < bases.len() {
            // Claimed by this thread alone, so the slot is empty.
            let base = BaseWords {
                sample: mine.into_boxed_slice(),
                words: union.into_boxed_slice(),
            };
            if bases[i].set(base).is_ok() {
                return (Held::Base(i), bytes);
            }
            unreachable!("base {i} claimed twice");
        }
        // The last bases were claimed since `free` was read.
        if let Some(held) = nearest.filter(|_| free).and_then(|i| patched(i, far)) {
            return held;
        }
        (Held::Whole(union.into_boxed_slice()), bytes)
    }

    /// Writes the union `held` into `mask`: `false`, with `mask` unchanged, if the
    /// union is not of the mask's width.
    fn write_held(&self, held: &Held, mask: &mut [u32]) -> bool {
        // A base a union refers to was set before the union was held, and the union
        // reached this thread through its slot's `OnceLock`, after that.
        let base = |i: usize| -> &[u32] { &self.bases()[i].get().expect("set before use").words };
        match held {
            Held::Whole(words) if words.len() == mask.len() => copy_words(mask, words),
            Held::Base(i) if base(*i).len() == mask.len() => copy_words(mask, base(*i)),
            Held::Patch { base: i, pairs } if base(*i).len() == mask.len() => {
                copy_words(mask, base(*i));
                for pair in pairs.chunks_exact(2) {
                    mask[pair[0] as usize] = pair[1];
                }
            }
            _ => return false,
        }
        true
    }

    /// The number of unions kept (for tests).
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.slots
            .get()
            .map_or(0, |s| s.iter().filter(|u| u.get().is_some()).count())
    }
}

/// Whether the union of `key` is worth a slot: see [`MIN_REST_FRACTION`].
fn worth_keeping(dwa: &ParserDwaRef<'_>, key: &[u32], mask_words: usize) -> bool {
    let (mut total, mut largest) = (0, 0);
    for &w in key {
        let words = dwa.weight_words(w);
        total += words;
        largest = largest.max(words);
    }
    (total - largest) * MIN_REST_FRACTION >= mask_words
}

/// The home slot of `key`, before masking to the table: FNV-1a over its ids, with a
/// final multiply so that keys differing in one small id spread over the low bits.
fn hash(key: &[u32]) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &w in key {
        h = (h ^ u64::from(w)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h = (h ^ (h >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    (h ^ (h >> 32)) as usize
}

/// Sets `mask` (the validated mask width) to the union of `weights` (distinct ids) as
/// chunks: the weight covering the most words is written (copied, gaps zeroed) if its
/// chunks are long, the others OR-ed over it, so a union made mostly of one dense set
/// costs about one copy of the mask. (Also how a matcher with sparse pairs turned off
/// writes its whole mask.)
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
    use std::sync::Barrier;

    /// Mask width of the test automaton, in words.
    const W: u32 = 256;

    /// Weights `1..=n` (weight 0 is "none") of four kinds by `w % 4`: one chunk over the
    /// whole mask (long chunks: written, not OR-ed, when largest); two 8-word chunks with
    /// a gap; one 64-word chunk; one 8-word chunk (too small to be worth a slot with
    /// another small one). Weight `w` sets the bits `pattern(w, i)` in word `i`.
    fn dwa(n: u32) -> ParserDwa {
        let mut chunk_words = Vec::new();
        let mut chunk_table = Vec::new();
        let mut weight_index = vec![0, 0];
        for w in 1..=n {
            for (start, len) in spans(w) {
                chunk_table.extend([start, len, chunk_words.len() as u32]);
                chunk_words.extend((start..start + len).map(|i| pattern(w, i)));
            }
            weight_index.push(chunk_table.len() as u32 / 3);
        }
        ParserDwa {
            weight_chunks: (0..chunk_table.len() as u32 / 3).collect(),
            weight_index,
            chunk_table,
            chunk_words,
            ..ParserDwa::default()
        }
    }

    /// The chunks of weight `w`: (first word, words), in mask order.
    fn spans(w: u32) -> Vec<(u32, u32)> {
        match w % 4 {
            0 => vec![(0, W)],
            1 => vec![(8 * (w % 8), 8), (200, 8)],
            2 => vec![(64, 64)],
            _ => vec![(128 + 8 * (w % 4), 8)],
        }
    }

    fn pattern(w: u32, i: u32) -> u32 {
        w.wrapping_mul(0x9e37_79b9).rotate_left(i) & (0x0101_0101 << (w % 8))
    }

    fn naive(key: &[u32]) -> Vec<u32> {
        let mut mask = vec![0; W as usize];
        for &w in key {
            for (start, len) in spans(w) {
                for i in start..start + len {
                    mask[i as usize] |= pattern(w, i);
                }
            }
        }
        mask
    }

    fn write(unions: &KeptUnions, owned: &ParserDwa, key: &[u32]) -> Vec<u32> {
        let mut mask = vec![0xdead_beef; W as usize];
        unions.write(&owned.view(), key, &mut mask);
        mask
    }

    /// Writes every key's union `rounds` times over, each equal to the naive union.
    fn write_exact(unions: &KeptUnions, owned: &ParserDwa, keys: &[Vec<u32>], rounds: usize) {
        for round in 0..rounds {
            for key in keys {
                assert_eq!(
                    write(unions, owned, key),
                    naive(key),
                    "{key:?} round {round}"
                );
            }
        }
    }

    /// `write_kept` of `key`, its union made as a mask's dense sets are (worth keeping):
    /// where it is kept, if it is, and the mask written.
    fn make_kept(
        unions: &KeptUnions,
        owned: &ParserDwa,
        key: &[u32],
    ) -> (Option<KeptRef>, Vec<u32>) {
        let mut mask = vec![0xdead_beef; W as usize];
        let kept = unions.write_kept(
            key,
            &mut mask,
            || true,
            |words| write_union(&owned.view(), key, words),
        );
        (kept, mask)
    }

    /// Runs `f(t)` on four threads `t` that start at once.
    fn on_four_threads(f: impl Fn(usize) + Sync) {
        let start = Barrier::new(4);
        std::thread::scope(|scope| {
            for t in 0..4 {
                let (f, start) = (&f, &start);
                scope.spawn(move || {
                    start.wait();
                    f(t)
                });
            }
        });
    }

    /// A table that holds every union as its own words (no bases): each takes
    /// [`per_union`] bytes.
    fn whole_only(max_bytes: usize, slots: usize, probes: usize) -> KeptUnions {
        KeptUnions::with_limits(max_bytes, slots, probes, 0)
    }

    /// Bytes one kept union of `key_len` ids takes.
    fn per_union(key_len: usize) -> usize {
        4 * (W as usize + key_len)
    }

    #[test]
    fn kept_unions_are_the_unions_of_their_keys_in_a_full_table_too() {
        let owned = dwa(40);
        let keys: Vec<Vec<u32>> = vec![
            vec![1, 2],
            vec![1, 4],
            vec![2, 4],
            vec![1, 2, 4],
            vec![5, 17, 40],
            vec![4, 6, 9, 11, 12, 30],
            vec![8, 12],
        ];
        let worth: Vec<&Vec<u32>> = keys
            .iter()
            .filter(|k| worth_keeping(&owned.view(), k, W as usize))
            .collect();
        assert_eq!(worth.len(), 5, "[1, 2] and [1, 4] add only 16 words");
        // The full table, then one of 4 slots that every key probes: there keys share
        // slots (a union found in a slot is another key's), the first four worth
        // keeping are kept and the others OR-ed each time.
        for (unions, kept) in [
            (whole_only(MAX_KEPT_UNION_BYTES, SLOTS, PROBES), worth.len()),
            (whole_only(MAX_KEPT_UNION_BYTES, 4, 4), 4),
        ] {
            write_exact(&unions, &owned, &keys, 3);
            assert_eq!(unions.kept(), kept);
            let bytes: usize = worth.iter().take(kept).map(|k| per_union(k.len())).sum();
            assert_eq!(unions.bytes.load(Ordering::Relaxed), bytes);
        }
    }

    /// A whole mask (`write_kept`, as a matcher's cache asks for one): made by its
    /// caller's `make` the first time, then copied without making it again; not kept,
    /// with the mask untouched, when not worth it or past the byte bound.
    #[test]
    fn a_kept_mask_is_made_once_then_copied_and_an_unkept_one_left_alone() {
        let owned = dwa(40);
        let unions = whole_only(per_union(3) * 2, SLOTS, PROBES);
        let write_kept = |key: &[u32], worth: bool, make: &dyn Fn(&mut [u32])| {
            let mut mask = vec![0xdead_beef; W as usize];
            let kept = unions.write_kept(key, &mut mask, || worth, make);
            (kept.is_some(), mask)
        };
        let made = std::cell::Cell::new(0);
        let make = |key: &'static [u32]| {
            let (made, owned) = (&made, &owned);
            move |words: &mut [u32]| {
                made.set(made.get() + 1);
                write_union(&owned.view(), key, words);
            }
        };
        for round in 0..3 {
            let (kept, mask) = write_kept(&[1, 3, 6], true, &make(&[1, 3, 6]));
            assert!(kept, "round {round}");
            assert_eq!(mask, naive(&[1, 3, 6]), "round {round}");
            assert_eq!(made.get(), 1, "made once, copied in round {round}");
        }
        // Not worth keeping: nothing made, the mask left to the caller.
        let (kept, mask) = write_kept(&[2, 5, 7], false, &make(&[2, 5, 7]));
        assert!(!kept);
        assert_eq!(mask, vec![0xdead_beef; W as usize]);
        assert_eq!(made.get(), 1);
        // Room for one more, then none.
        assert!(write_kept(&[2, 5, 7], true, &make(&[2, 5, 7])).0);
        let (kept, mask) = write_kept(&[4, 9, 10], true, &make(&[4, 9, 10]));
        assert!(!kept, "past the byte bound");
        assert_eq!(mask, vec![0xdead_beef; W as usize]);
        assert_eq!(made.get(), 2);
        assert_eq!(unions.kept(), 2);
        // A dense union with the same ids as a kept mask is that mask.
        assert_eq!(write(&unions, &owned, &[1, 3, 6]), naive(&[1, 3, 6]));
        assert_eq!(made.get(), 2);
    }

    #[test]
    fn unions_of_small_sets_are_made_and_not_kept() {
        let owned = dwa(40);
        let unions = KeptUnions::default();
        // 8- and 16-word sets: the rest covers under an eighth of the mask.
        for key in [vec![3, 7], vec![7, 11, 15], vec![1, 5], vec![1, 3, 5]] {
            assert_eq!(write(&unions, &owned, &key), naive(&key), "{key:?}");
        }
        assert_eq!(unions.kept(), 0);
        // Beside a whole-mask set, a 64-word set is worth it.
        assert_eq!(write(&unions, &owned, &[2, 4]), naive(&[2, 4]));
        assert_eq!(unions.kept(), 1);
    }

    #[test]
    fn past_the_byte_bound_unions_are_made_and_not_kept() {
        let owned = dwa(40);
        let unions = whole_only(per_union(2) * 5 / 2, SLOTS, PROBES);
        let keys: Vec<Vec<u32>> = (1..=10).map(|a| vec![4 * a - 2, 4 * a]).collect();
        write_exact(&unions, &owned, &keys, 2);
        assert_eq!(unions.kept(), 2);
        assert_eq!(unions.bytes.load(Ordering::Relaxed), 2 * per_union(2));
    }

    #[test]
    fn threads_making_the_same_unions_at_once_get_them_exact_and_kept_once() {
        let owned = dwa(40);
        let unions = whole_only(MAX_KEPT_UNION_BYTES, SLOTS, PROBES);
        let keys: Vec<Vec<u32>> = (1..40).map(|a| vec![a, a + 1]).collect();
        on_four_threads(|t| {
            // All in the same order, so that they reach each new slot together.
            for i in 0..keys.len() * 2 {
                let key = &keys[i % keys.len()];
                assert_eq!(write(&unions, &owned, key), naive(key), "thread {t}");
            }
        });
        let worth: Vec<&Vec<u32>> = keys
            .iter()
            .filter(|k| worth_keeping(&owned.view(), k, W as usize))
            .collect();
        assert_eq!(unions.kept(), worth.len());
        // Bytes reserved by a thread that lost the race for a slot are given back.
        assert_eq!(
            unions.bytes.load(Ordering::Relaxed),
            worth.len() * per_union(2)
        );
    }

    #[test]
    fn a_slot_another_thread_set_first_keeps_its_union_and_takes_no_more_bytes() {
        let owned = dwa(40);
        let unions = KeptUnions::default();
        // What a thread finds when another set the slot between its look and its set.
        let slot = OnceLock::new();
        slot.set(Union {
            key: vec![2, 4].into(),
            words: Held::Whole(naive(&[2, 4]).into()),
        })
        .unwrap();
        let union = unions
            .set_slot(&slot, &[6, 8], W as usize, |words| {
                write_union(&owned.view(), &[6, 8], words)
            })
            .expect("room");
        assert_eq!(*union.key, [2, 4]);
        assert_eq!(unions.bytes.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn past_the_slots_a_key_probes_unions_are_made_and_not_kept() {
        let owned = dwa(60);
        let unions = whole_only(MAX_KEPT_UNION_BYTES, SLOTS, PROBES);
        // More keys than the table has slots: every answer stays exact, and the bytes
        // are those of the unions kept.
        let mut keys = Vec::new();
        for a in 1..=60 {
            for b in a + 1..=60 {
                keys.push(vec![a, b]);
            }
        }
        write_exact(&unions, &owned, &keys, 2);
        assert!(unions.kept() > 0);
        assert_eq!(
            unions.bytes.load(Ordering::Relaxed),
            unions.kept() * per_union(2)
        );
    }

    /// How each kept union is held: (bases, patches, whole unions).
    fn holds(unions: &KeptUnions) -> (usize, usize, usize) {
        let mut kinds = (0, 0, 0);
        for slot in unions.slots.get().into_iter().flatten() {
            match slot.get().map(|u| &u.words) {
                Some(Held::Base(_)) => kinds.0 += 1,
                Some(Held::Patch { .. }) => kinds.1 += 1,
                Some(Held::Whole(_)) => kinds.2 += 1,
                None => {}
            }
        }
        kinds
    }

    /// Unions near a base are held as patches of it, and written exactly. While a base
    /// is free, a union more than 1/[`NEW_BASE_FRACTION`] from its nearest base takes
    /// it; once none is, one within 1/[`MAX_PATCH_FRACTION`] is a patch and one
    /// farther its own words. The bytes are what each holds.
    #[test]
    fn unions_near_a_base_are_patches_and_write_exactly() {
        let owned = dwa(40);
        let unions = KeptUnions::with_limits(MAX_KEPT_UNION_BYTES, SLOTS, PROBES, 2);
        let write_kept = |key: &[u32]| {
            let (kept, mask) = make_kept(&unions, &owned, key);
            let r = kept.unwrap_or_else(|| panic!("{key:?} kept"));
            // Where it is kept writes it again, and nothing in a table that has not.
            let mut again = vec![0xdead_beef; W as usize];
            assert!(unions.write_ref(r, &mut again));
            assert_eq!(again, mask, "{key:?} again");
            assert!(!KeptUnions::default().write_ref(r, &mut again));
            mask
        };
        // Weights 4 and 8 span the whole mask (as do 12 and 16, with other bits); 3 sets
        // 8 words, 1, 5 and 9 two runs of 8, 2 a run of 64.
        let [a, b, c, d, e, f, g]: [&[u32]; 7] = [
            &[4, 8],
            &[3, 4, 8],
            &[2, 4, 8],
            &[12, 16],
            &[2, 3, 4, 8],
            &[1, 4, 8],
            &[4, 5, 8, 9],
        ];
        let differing = |x: &[u32], y: &[u32]| {
            naive(x)
                .iter()
                .zip(naive(y))
                .filter(|(p, q)| **p != *q)
                .count()
        };
        let (near, far) = (
            W as usize / NEW_BASE_FRACTION,
            W as usize / MAX_PATCH_FRACTION,
        );
        assert!(differing(b, a) <= near, "b patches a");
        assert!(differing(c, a) > near, "c takes the second base");
        assert!(
            differing(d, a) > far && differing(d, c) > far,
            "d is its own words"
        );
        assert!(differing(e, c) <= near, "e patches c");
        assert!(differing(f, a) <= near, "f patches a");
        let ga = differing(g, a);
        assert!(
            ga > near && ga <= far && differing(g, c) > ga,
            "g patches a"
        );
        let keys = [a, b, c, d, e, f, g];
        for round in 0..3 {
            for key in keys {
                assert_eq!(write_kept(key), naive(key), "{key:?} round {round}");
            }
        }
        assert_eq!(holds(&unions), (2, 4, 1));
        let key_bytes: usize = keys.iter().map(|k| 4 * k.len()).sum();
        let patches = differing(b, a) + differing(e, c) + differing(f, a) + ga;
        assert_eq!(
            unions.bytes.load(Ordering::Relaxed),
            key_bytes + 4 * (3 * W as usize + 2 * patches)
        );
    }

    /// The same keys, made by four threads at once in different orders: every union
    /// exact, kept once, and no more bases than the bound.
    #[test]
    fn threads_making_patches_at_once_get_them_exact() {
        let owned = dwa(64);
        let unions = KeptUnions::with_limits(MAX_KEPT_UNION_BYTES, SLOTS, PROBES, 3);
        let keys: Vec<Vec<u32>> = (1..64)
            .map(|a| vec![a, 4 * (1 + a % 5)])
            .map(|mut k: Vec<u32>| {
                k.sort_unstable();
                k.dedup();
                k
            })
            .collect();
        on_four_threads(|t| {
            for i in 0..keys.len() * 2 {
                let key = &keys[(i * (2 * t + 1)) % keys.len()];
                let (kept, mask) = make_kept(&unions, &owned, key);
                if kept.is_some() {
                    assert_eq!(mask, naive(key), "thread {t} {key:?}");
                }
            }
        });
        let (bases, patches, whole) = holds(&unions);
        assert!(
            bases <= 3 && patches > 0,
            "{bases} bases, {patches} patches"
        );
        assert_eq!(bases + patches + whole, unions.kept());
        for key in &keys {
            assert_eq!(write(&unions, &owned, key), naive(key), "{key:?}");
        }
    }

    /// A patch is the (index, word) pairs where the union differs, indices ascending,
    /// at every width (blocks and the words after the last whole block), or `None`
    /// past its limit.
    #[test]
    fn a_patch_is_the_differing_words_or_none_past_its_limit() {
        for width in [0usize, 1, 15, 16, 17, 40, 6251] {
            let base: Vec<u32> = (0..width as u32)
                .map(|i| i.wrapping_mul(0x9e37_79b9))
                .collect();
            for changed in [
                vec![],
                vec![0],
                vec![width.saturating_sub(1)],
                (0..width).step_by(7).collect(),
            ] {
                let changed: Vec<usize> = changed.into_iter().filter(|&i| i < width).collect();
                let mut union = base.clone();
                for &i in &changed {
                    union[i] ^= 1 << (i % 32);
                }
                let want: Vec<u32> = changed.iter().flat_map(|&i| [i as u32, union[i]]).collect();
                assert_eq!(
                    patch(&base, &union, changed.len()),
                    Some(want),
                    "{width} {changed:?}"
                );
                if !changed.is_empty() {
                    assert_eq!(patch(&base, &union, changed.len() - 1), None, "{width}");
                }
            }
        }
    }
}
