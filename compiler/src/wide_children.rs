//! The token trie's wide nodes with their children by byte, so that a walk that only a
//! few bytes keep alive visits only those children.
//!
//! The trie is flat (DFS order, a subtree is a range of nodes): a node's children are
//! found by jumping from one to the next over their subtrees, each jump a likely cache
//! miss. A Terminal DWA walk steps every child of every node it reaches, yet inside a
//! narrow lexeme (a `date-time` digit, a number) only a handful of bytes go on: under
//! the trie node `1` of a 200k vocabulary, hundreds of children are stepped to find the
//! ten digits. For nodes with many children this index lists them by byte, so a walk
//! that knows which bytes can go on ([`WideChildren::select`]) reaches them directly,
//! in the same (byte) order as the sequential walk: the result does not change.

use stackmask_formats::TrieRef;

/// A byte set as 256 bits.
pub type ByteSet = [u64; 4];

/// The children of the trie's wide nodes, by byte (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct WideChildren {
    /// Per trie node: its index in `nodes`, or [`WideChildren::NARROW`].
    at: Vec<u32>,
    nodes: Vec<WideNode>,
    /// Per wide node, its children's indices in byte order, one run after another.
    children: Vec<u32>,
}

/// One wide node: which bytes it has children for, and where they are listed.
#[derive(Clone, Copy, Debug)]
struct WideNode {
    bytes: ByteSet,
    first: u32,
    count: u32,
}

impl WideChildren {
    /// Fewest children for a node to be indexed: below it, stepping every child costs
    /// about what finding the live ones would.
    pub const MIN_CHILDREN: usize = 16;
    const NARROW: u32 = u32::MAX;

    /// Indexes `trie`'s nodes with at least [`WideChildren::MIN_CHILDREN`] children
    /// (one pass over the nodes: each is one node's child).
    pub fn new(trie: TrieRef<'_>) -> Self {
        let mut index = WideChildren {
            at: vec![Self::NARROW; trie.nodes.len()],
            ..Default::default()
        };
        let mut kids: Vec<u32> = Vec::new();
        for p in 0..trie.nodes.len() {
            let end = trie.subtree_end(p);
            if trie.nodes[p].subtree_size as usize <= Self::MIN_CHILDREN {
                continue; // too few nodes below it to have that many children
            }
            kids.clear();
            let mut c = p + 1;
            while c < end {
                kids.push(c as u32);
                c = trie.subtree_end(c);
            }
            if kids.len() < Self::MIN_CHILDREN {
                continue;
            }
            let mut bytes = [0u64; 4];
            for &c in &kids {
                let b = trie.nodes[c as usize].byte;
                bytes[b as usize / 64] |= 1 << (b % 64);
            }
            index.at[p] = index.nodes.len() as u32;
            index.nodes.push(WideNode {
                bytes,
                first: index.children.len() as u32,
                count: kids.len() as u32,
            });
            index.children.extend_from_slice(&kids);
        }
        index
    }

    /// Whether `node` is indexed (a cheap test before working out the live bytes).
    pub fn is_wide(&self, node: usize) -> bool {
        self.at.get(node).is_some_and(|&w| w != Self::NARROW)
    }

    /// The children of `node` whose byte is in `live`, in byte order, if `node` is
    /// indexed and at most half its children are live (otherwise stepping them all in
    /// order is as cheap): `None` means "walk the children as usual".
    pub fn select(&self, node: usize, live: &ByteSet) -> Option<impl Iterator<Item = usize> + '_> {
        let w = *self.nodes.get(*self.at.get(node)? as usize)?;
        let sel: ByteSet = std::array::from_fn(|i| w.bytes[i] & live[i]);
        let n: u32 = sel.iter().map(|x| x.count_ones()).sum();
        if 2 * n > w.count {
            return None;
        }
        let list = &self.children[w.first as usize..(w.first + w.count) as usize];
        Some((0..4).flat_map(move |i| {
            // Children before word i, then the rank of each selected bit within it.
            let before: u32 = w.bytes[..i].iter().map(|x| x.count_ones()).sum();
            let mut bits = sel[i];
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let b = bits.trailing_zeros();
                bits &= bits - 1;
                let rank = before + (w.bytes[i] & ((1u64 << b) - 1)).count_ones();
                Some(list[rank as usize] as usize)
            })
        }))
    }
}

/// Adds bytes `lo..=hi` to `set`.
pub fn insert_range(set: &mut ByteSet, lo: u8, hi: u8) {
    for b in lo..=hi {
        set[b as usize / 64] |= 1 << (b % 64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::XorShift;
    use crate::vocab::build_trie;
    use stackmask_formats::{TokenKind, Vocabulary};

    /// A vocabulary with wide nodes: every two-byte string over a 40-byte alphabet
    /// under a few first bytes, and some longer tokens.
    fn vocab(rng: &mut XorShift) -> Vocabulary {
        let mut tokens: Vec<Vec<u8>> = Vec::new();
        for first in [b'a', b'1', 0xe2] {
            tokens.push(vec![first]);
            for _ in 0..60 {
                let second = 0x20 + rng.below(96) as u8;
                let mut t = vec![first, second];
                for _ in 0..rng.below(3) {
                    t.push(0x20 + rng.below(96) as u8);
                }
                tokens.push(t);
            }
        }
        tokens.sort();
        tokens.dedup();
        let entries = tokens
            .into_iter()
            .map(|t| Some((t, TokenKind::Normal)))
            .collect();
        Vocabulary::from_entries("wide", entries, 0)
    }

    #[test]
    fn selected_children_are_the_live_children_in_order() {
        let mut rng = XorShift(0x00c1_1d5e);
        for _ in 0..20 {
            let trie = build_trie(&vocab(&mut rng));
            let view = trie.view();
            let index = WideChildren::new(view);
            let mut wide = 0;
            for p in 0..view.nodes.len() {
                let mut all = Vec::new();
                let mut c = p + 1;
                while c < view.subtree_end(p) {
                    all.push(c);
                    c = view.subtree_end(c);
                }
                assert_eq!(index.is_wide(p), all.len() >= WideChildren::MIN_CHILDREN);
                wide += index.is_wide(p) as usize;
                for _ in 0..20 {
                    let mut live = [0u64; 4];
                    for _ in 0..rng.below(12) {
                        let lo = rng.below(256) as u8;
                        insert_range(&mut live, lo, lo.saturating_add(rng.below(4) as u8));
                    }
                    let want: Vec<usize> = all
                        .iter()
                        .copied()
                        .filter(|&c| {
                            let b = view.nodes[c].byte;
                            live[b as usize / 64] >> (b % 64) & 1 == 1
                        })
                        .collect();
                    match index.select(p, &live) {
                        Some(got) => {
                            assert!(index.is_wide(p));
                            assert!(2 * want.len() <= all.len());
                            assert_eq!(got.collect::<Vec<_>>(), want);
                        }
                        None => assert!(!index.is_wide(p) || 2 * want.len() > all.len()),
                    }
                }
            }
            assert!(wide >= 3, "the test vocabulary has wide nodes");
        }
    }
}
