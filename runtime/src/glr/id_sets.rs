//! Interned sets of small ids (automaton states, weights), with their unions
//! remembered: the subset walk (module `subset_walk`) steps sets of Parser DWA states
//! and collects sets of weights, and on an ambiguous stack the same few sets come back
//! at every node, so each is stored once and compared, stepped and unioned by id.

use super::pair_set::PairTable;
use rustc_hash::FxHasher;
use std::hash::Hasher;

/// The empty set's id.
pub(crate) const EMPTY_SET: u32 = 0;

/// Interned sorted sets of `u32` ids; id 0 is the empty set.
#[derive(Debug, Default)]
pub(crate) struct IdSets {
    /// Every set's ids, one after the other.
    words: Vec<u32>,
    /// Set id → its range of `words`; `spans[0]` is the empty set.
    spans: Vec<(u32, u32)>,
    /// Open-addressing table of set ids + 1 (0: free) by their contents' hash.
    table: Vec<u32>,
    /// Unions already taken: `(a, b)` with `a < b` → the union's id.
    unions: PairTable<u32>,
    /// Scratch for a set being built.
    scratch: Vec<u32>,
}

impl IdSets {
    /// Forgets every set (memory kept).
    pub fn clear(&mut self) {
        self.words.clear();
        self.spans.clear();
        self.table.iter_mut().for_each(|s| *s = 0);
        self.unions.clear();
    }

    /// Number of weight ids held.
    pub fn words(&self) -> usize {
        self.words.len()
    }

    /// Number of sets (the empty set included once any was made).
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// The ids of set `id`, ascending.
    #[inline]
    pub fn get(&self, id: u32) -> &[u32] {
        if id == EMPTY_SET {
            return &[];
        }
        let (start, end) = self.spans[id as usize];
        &self.words[start as usize..end as usize]
    }

    /// The set of `ids` (any order, repeats allowed).
    pub fn of(&mut self, ids: &[u32]) -> u32 {
        if ids.is_empty() {
            return EMPTY_SET;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.extend_from_slice(ids);
        scratch.sort_unstable();
        scratch.dedup();
        let id = self.intern(&scratch);
        self.scratch = scratch;
        id
    }

    /// The union of sets `a` and `b`.
    pub fn union(&mut self, a: u32, b: u32) -> u32 {
        let (a, b) = (a.min(b), a.max(b));
        if a == EMPTY_SET || a == b {
            return b;
        }
        if let Some(u) = self.unions.get(a, b) {
            return u;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let (x, y) = (self.get(a), self.get(b));
        let (mut i, mut j) = (0, 0);
        while i < x.len() && j < y.len() {
            let (p, q) = (x[i], y[j]);
            scratch.push(p.min(q));
            i += usize::from(p <= q);
            j += usize::from(q <= p);
        }
        scratch.extend_from_slice(&x[i..]);
        scratch.extend_from_slice(&y[j..]);
        let u = self.intern(&scratch);
        self.scratch = scratch;
        self.unions.insert_value(a, b, u);
        u
    }

    /// The id of the sorted, repeat-free, non-empty `ids`, added if new.
    fn intern(&mut self, ids: &[u32]) -> u32 {
        if self.spans.is_empty() {
            self.spans.push((0, 0));
        }
        if 2 * self.spans.len() >= self.table.len() {
            self.grow();
        }
        let mask = self.table.len() - 1;
        let mut i = Self::hash(ids) as usize & mask;
        loop {
            let slot = self.table[i];
            if slot == 0 {
                break;
            }
            if self.get(slot - 1) == ids {
                return slot - 1;
            }
            i = (i + 1) & mask;
        }
        let id = self.spans.len() as u32;
        let start = self.words.len() as u32;
        self.words.extend_from_slice(ids);
        self.spans.push((start, self.words.len() as u32));
        self.table[i] = id + 1;
        id
    }

    fn hash(ids: &[u32]) -> u64 {
        let mut h = FxHasher::default();
        for &w in ids {
            h.write_u32(w);
        }
        h.finish()
    }

    /// Doubles the table (allocates only while it grows past every earlier size).
    #[cold]
    fn grow(&mut self) {
        let len = (2 * self.table.len()).max(64);
        self.table = vec![0; len];
        for id in 1..self.spans.len() as u32 {
            let mut i = Self::hash(self.get(id)) as usize & (len - 1);
            while self.table[i] != 0 {
                i = (i + 1) & (len - 1);
            }
            self.table[i] = id + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeSet, HashMap};

    /// Sets built from lists and by unions agree with `BTreeSet`s, equal sets get one id,
    /// and clearing forgets them.
    #[test]
    fn sets_agree_with_btreesets() {
        let mut sets = IdSets::default();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for round in 0..3 {
            let mut made: Vec<(u32, BTreeSet<u32>)> = vec![(EMPTY_SET, BTreeSet::new())];
            let mut by_contents: HashMap<Vec<u32>, u32> = HashMap::new();
            for _ in 0..2_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let (id, expected) = if x.is_multiple_of(3) {
                    let len = (x >> 8) as usize % 6;
                    let ids: Vec<u32> = (0..len)
                        .map(|k| ((x >> (16 + 5 * k)) % 24) as u32 + 1)
                        .collect();
                    (sets.of(&ids), ids.into_iter().collect::<BTreeSet<u32>>())
                } else {
                    let a = &made[(x >> 20) as usize % made.len()];
                    let b = &made[(x >> 40) as usize % made.len()];
                    let expected: BTreeSet<u32> = a.1.union(&b.1).copied().collect();
                    let (ia, ib) = (a.0, b.0);
                    (sets.union(ia, ib), expected)
                };
                let contents: Vec<u32> = expected.iter().copied().collect();
                assert_eq!(sets.get(id), &contents[..], "round {round}");
                assert_eq!(
                    *by_contents.entry(contents).or_insert(id),
                    id,
                    "one id a set"
                );
                made.push((id, expected));
            }
            sets.clear();
            assert_eq!(sets.of(&[3, 1, 3]), 1, "ids start over after a clear");
            assert_eq!(sets.get(1), &[1, 3]);
            sets.clear();
        }
    }
}
