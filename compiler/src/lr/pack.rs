//! Row displacement: packs the sparse rows of an LR table into a [`Comb`].
//!
//! Each row gets a base such that its cells land on free slots; rows are placed longest
//! first, each at the first base that fits (first fit, as yacc and bison do). A
//! "next free slot" forest with path halving finds free slots without rescanning the
//! occupied ones, and the search for one row gives up after a bounded number of probes
//! and appends the row after the last slot instead, so packing stays near-linear in
//! the cells however fragmented the comb gets (at worst it wastes the gaps).

use stackmask_formats::lr::Comb;

/// Slot probes one row may spend looking for a place before it is appended at the end,
/// on top of a few per cell.
const PROBES_PER_ROW: usize = 1024;

/// The comb would need more slots than allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooManySlots {
    /// Slots the comb needed when it passed the limit.
    pub slots: usize,
}

/// Free-slot finder: `next[p]` leads to the smallest free slot at or after `p` (a
/// union-find over "occupied slot → the slot after it").
struct FreeSlots {
    next: Vec<u32>,
}

impl FreeSlots {
    /// The first free slot at or after `p` (slots past the end are free).
    fn find(&mut self, mut p: usize) -> usize {
        while p < self.next.len() && self.next[p] as usize != p {
            let up = self.next[p] as usize;
            if up < self.next.len() {
                // Path halving: point at the grandparent.
                self.next[p] = self.next[up];
            }
            p = up;
        }
        p
    }

    fn grow(&mut self, len: usize) {
        while self.next.len() < len {
            self.next.push(self.next.len() as u32);
        }
    }

    fn occupy(&mut self, p: usize) {
        self.next[p] = p as u32 + 1;
    }
}

/// Packs `rows` (each a strictly increasing list of columns below `columns`) into a
/// comb whose row `r` owns exactly the slots `base[r] + c` of its columns `c`, with
/// every `base[r] + columns` within the slots. Fails when that would take more than
/// `max_slots` slots (or more than a `u32` can index).
pub(crate) fn pack<'a>(
    rows: impl ExactSizeIterator<Item = &'a [u32]>,
    columns: u32,
    max_slots: usize,
) -> Result<Comb, TooManySlots> {
    let max_slots = max_slots.min(u32::MAX as usize);
    let n = rows.len();
    let mut order: Vec<(usize, &[u32])> = rows.enumerate().collect();
    // Longest rows first: they are the hardest to fit, the short ones fill the gaps.
    order.sort_by_key(|&(r, cols)| (std::cmp::Reverse(cols.len()), r));
    let mut base = vec![0u32; n];
    let mut check: Vec<u32> = Vec::new();
    let mut free = FreeSlots { next: Vec::new() };
    for (r, cols) in order {
        let Some(&first) = cols.first() else {
            continue; // An empty row owns no slot; base 0 reads only others' slots.
        };
        let first = first as usize;
        let mut probes = PROBES_PER_ROW + 4 * cols.len();
        let mut at = free.find(first);
        let b = loop {
            let b = at - first;
            let fits = cols[1..].iter().all(|&c| {
                probes = probes.saturating_sub(1);
                check.get(b + c as usize).is_none_or(|&o| o == Comb::FREE)
            });
            if fits {
                break b;
            }
            probes = probes.saturating_sub(1);
            if probes == 0 {
                // Past every slot in use, so every column is free there.
                break check.len().max(first) - first;
            }
            at = free.find(at + 1);
        };
        let end = b + *cols.last().unwrap() as usize + 1;
        if end > max_slots {
            return Err(TooManySlots { slots: end });
        }
        if end > check.len() {
            check.resize(end, Comb::FREE);
            free.grow(end);
        }
        for &c in cols {
            check[b + c as usize] = r as u32;
            free.occupy(b + c as usize);
        }
        base[r] = b as u32;
    }
    // Every lookup `base + column` must stay within the slots.
    let len = base
        .iter()
        .map(|&b| b as usize + columns as usize)
        .max()
        .unwrap_or(0)
        .max(check.len());
    if len > max_slots {
        return Err(TooManySlots { slots: len });
    }
    check.resize(len, Comb::FREE);
    Ok(Comb { base, check })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows_of(rows: &[Vec<u32>]) -> impl ExactSizeIterator<Item = &[u32]> {
        rows.iter().map(|r| r.as_slice())
    }

    /// Every cell of every row is found, nothing else is, and the comb is small.
    #[test]
    fn packed_rows_read_back_exactly() {
        let mut rng = crate::test_rng::XorShift(0x9e3779b97f4a7c15);
        let mut next = |n: u64| rng.below(n);
        for round in 0..50 {
            let columns = 1 + next(60) as u32;
            let rows: Vec<Vec<u32>> = (0..1 + next(80))
                .map(|_| {
                    let density = next(100);
                    (0..columns).filter(|_| next(100) < density / 3).collect()
                })
                .collect();
            let comb = pack(rows_of(&rows), columns, usize::MAX).unwrap();
            let view = comb.view();
            for (r, cols) in rows.iter().enumerate() {
                for c in 0..columns {
                    assert_eq!(
                        view.slot(r as u32, c).is_some(),
                        cols.contains(&c),
                        "round {round}: row {r} column {c}"
                    );
                }
            }
            let cells: usize = rows.iter().map(Vec::len).sum();
            assert_eq!(view.cells().count(), cells);
            assert!(comb.check.len() <= rows.len() * columns as usize + columns as usize);
        }
    }

    /// A chain of one-cell rows in distinct columns (the goto rows of nested rules)
    /// packs into about one slot per cell, not rows × columns.
    #[test]
    fn diagonal_rows_pack_densely() {
        let n = 5000u32;
        let rows: Vec<Vec<u32>> = (0..n).map(|i| vec![i]).collect();
        let comb = pack(rows_of(&rows), n, usize::MAX).unwrap();
        assert!(
            comb.check.len() <= 2 * n as usize + 1,
            "{}",
            comb.check.len()
        );
        let err = pack(rows_of(&rows), n, 100).unwrap_err();
        assert!(err.slots > 100);
    }
}
