//! Open-addressing tables keyed by pairs of ids: the set of `(GSS node, automaton
//! state)` pairs a mask walk has queued ([`PairSet`]), the map from such a pair to what
//! the walk below it yields, kept across masks ([`PairMap`], module `chain_memo`), and
//! the edges of a GLR step's busiest nodes (module `step`). Keys
//! are packed `u64`s in a power-of-two table, emptied by resetting only the slots
//! that were filled.
//!
//! Why not a general hash table: emptying one costs its whole capacity (hashbrown
//! rewrites every control byte), and one walk over an ambiguous stack (C after a run
//! of `--`: 7,600 pairs) grows it for good, so every later mask of that matcher —
//! most of which queue a handful of pairs — would pay for clearing tens of
//! kilobytes. Here emptying costs the pairs inserted since, and an insert is a
//! multiply, a shift and a linear probe in a table kept at most half full.

/// A table from pairs to values of type `V`; see the module docs.
#[derive(Clone, Debug, Default)]
pub(crate) struct PairTable<V> {
    /// Keys, [`EMPTY`] where free; the length is a power of two (or 0).
    slots: Vec<u64>,
    /// The value of each slot (zero-sized for a set).
    values: Vec<V>,
    /// Indices of the filled slots, to empty them.
    filled: Vec<u32>,
}

/// The set of pairs a mask walk has queued.
pub(crate) type PairSet = PairTable<()>;

/// Pairs to `u64` values.
pub(crate) type PairMap = PairTable<u64>;

/// A key no pair packs to: automaton states never reach `u32::MAX` (their ids are
/// below the fork bit).
const EMPTY: u64 = u64::MAX;

impl<V: Copy + Default> PairTable<V> {
    /// Removes every pair, keeping the memory; costs the number of pairs.
    pub fn clear(&mut self) {
        for &i in &self.filled {
            self.slots[i as usize] = EMPTY;
        }
        self.filled.clear();
    }

    /// Number of pairs in the table.
    pub fn len(&self) -> usize {
        self.filled.len()
    }

    /// Adds `(node, d)`; `true` if it was not there.
    #[inline]
    pub fn insert(&mut self, node: u32, d: u32) -> bool {
        self.insert_value(node, d, V::default())
    }

    /// Adds `(node, d)` with `value`; `true` if it was not there (a pair already there
    /// keeps its value).
    #[inline]
    pub fn insert_value(&mut self, node: u32, d: u32, value: V) -> bool {
        let key = (node as u64) << 32 | d as u64;
        debug_assert_ne!(key, EMPTY);
        if 2 * (self.filled.len() + 1) > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = Self::slot(key, self.slots.len());
        loop {
            let slot = self.slots[i];
            if slot == key {
                return false;
            }
            if slot == EMPTY {
                self.slots[i] = key;
                self.values[i] = value;
                self.filled.push(i as u32);
                return true;
            }
            i = (i + 1) & mask;
        }
    }

    /// The value of `(node, d)`, if the pair is there.
    #[inline]
    pub fn get(&self, node: u32, d: u32) -> Option<V> {
        if self.filled.is_empty() {
            return None;
        }
        let key = (node as u64) << 32 | d as u64;
        let mask = self.slots.len() - 1;
        let mut i = Self::slot(key, self.slots.len());
        loop {
            let slot = self.slots[i];
            if slot == key {
                return Some(self.values[i]);
            }
            if slot == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Home slot of `key` in a table of `len` (a power of two, at least 64) slots:
    /// the high bits of a Fibonacci multiply, which mix both halves of the key.
    #[inline]
    fn slot(key: u64, len: usize) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - len.trailing_zeros())) as usize
    }

    /// Doubles the table (allocates only while tables grow past every earlier size).
    #[cold]
    fn grow(&mut self) {
        let len = (2 * self.slots.len()).max(64);
        let entries: Vec<(u64, V)> = self
            .filled
            .iter()
            .map(|&i| (self.slots[i as usize], self.values[i as usize]))
            .collect();
        self.slots = vec![EMPTY; len];
        self.values = vec![V::default(); len];
        self.filled.clear();
        self.filled.reserve(len / 2);
        for (key, value) in entries {
            let mut i = Self::slot(key, len);
            while self.slots[i] != EMPTY {
                i = (i + 1) & (len - 1);
            }
            self.slots[i] = key;
            self.values[i] = value;
            self.filled.push(i as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    /// Against std's set and map, over empties and growth, with keys that collide in the low
    /// bits of either half.
    #[test]
    fn agrees_with_std_collections() {
        let mut set = PairSet::default();
        let mut map = PairMap::default();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for round in 0..6 {
            let mut expected = HashSet::new();
            let mut values = HashMap::new();
            for _ in 0..(500 << round) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let (node, d) = ((x as u32) % 300 * 64, ((x >> 32) as u32) % 90);
                assert_eq!(
                    set.insert(node, d),
                    expected.insert((node, d)),
                    "round {round}"
                );
                let value = x.rotate_left(7);
                let first = map.insert_value(node, d, value);
                assert_eq!(first, !values.contains_key(&(node, d)), "round {round}");
                values.entry((node, d)).or_insert(value);
            }
            assert_eq!(set.len(), expected.len());
            assert_eq!(map.len(), values.len());
            for (&(node, d), &value) in &values {
                assert_eq!(map.get(node, d), Some(value), "round {round}");
                assert_eq!(map.get(node + 1, d), values.get(&(node + 1, d)).copied());
            }
            map.clear();
            assert_eq!(map.get(0, 0), None);
            set.clear();
            assert_eq!(set.len(), 0);
            assert!(set.insert(0, 0) && !set.insert(0, 0));
            set.clear();
        }
    }
}
