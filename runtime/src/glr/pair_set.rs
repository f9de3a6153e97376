//! The set of `(GSS node, automaton state)` pairs a mask walk has queued: open
//! addressing over a power-of-two table of packed `u64` keys, emptied by resetting
//! only the slots it filled.
//!
//! Why not a general hash set: emptying one costs its whole capacity (hashbrown
//! rewrites every control byte), and one walk over an ambiguous stack (C after a run
//! of `--`: 7,600 pairs) grows it for good, so every later mask of that matcher —
//! most of which queue a handful of pairs — would pay for clearing tens of
//! kilobytes. Here emptying costs the pairs of the last walk, and an insert is a
//! multiply, a shift and a linear probe in a table kept at most half full.

/// The pair set; see the module docs.
#[derive(Debug, Default)]
pub(crate) struct PairSet {
    /// Keys, [`EMPTY`] where free; the length is a power of two (or 0).
    slots: Vec<u64>,
    /// Indices of the filled slots, to empty them.
    filled: Vec<u32>,
}

/// A key no pair packs to: automaton states never reach `u32::MAX` (their ids are
/// below the fork bit).
const EMPTY: u64 = u64::MAX;

impl PairSet {
    /// Removes every pair, keeping the memory; costs the number of pairs.
    pub fn clear(&mut self) {
        for &i in &self.filled {
            self.slots[i as usize] = EMPTY;
        }
        self.filled.clear();
    }

    /// Number of pairs in the set.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.filled.len()
    }

    /// Adds `(node, d)`; `true` if it was not there.
    #[inline]
    pub fn insert(&mut self, node: u32, d: u32) -> bool {
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
                self.filled.push(i as u32);
                return true;
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

    /// Doubles the table (allocates only while walks grow past every earlier one).
    #[cold]
    fn grow(&mut self) {
        let len = (2 * self.slots.len()).max(64);
        let keys: Vec<u64> = self
            .filled
            .iter()
            .map(|&i| self.slots[i as usize])
            .collect();
        self.slots = vec![EMPTY; len];
        self.filled.clear();
        self.filled.reserve(len / 2);
        for key in keys {
            let mut i = Self::slot(key, len);
            while self.slots[i] != EMPTY {
                i = (i + 1) & (len - 1);
            }
            self.slots[i] = key;
            self.filled.push(i as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Against std's set, over empties and growth, with keys that collide in the low
    /// bits of either half.
    #[test]
    fn agrees_with_a_std_set() {
        let mut set = PairSet::default();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for round in 0..6 {
            let mut expected = HashSet::new();
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
            }
            assert_eq!(set.len(), expected.len());
            set.clear();
            assert_eq!(set.len(), 0);
            assert!(set.insert(0, 0) && !set.insert(0, 0));
            set.clear();
        }
    }
}
