//! A flat token trie in depth-first order (the layout of llguidance's toktrie).
//!
//! Node 0 is the root (the empty string). The children of a node follow it directly,
//! each followed by its own subtree, so a walk that rejects a byte skips the whole
//! subtree by adding `subtree_size` to the index: no pointers, cache-friendly.

use serde::{Deserialize, Serialize};

/// One trie node. `#[repr(C)]` without padding, so an artifact section can be used
/// in place as `&[TrieNode]`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, bytemuck::Pod, bytemuck::Zeroable,
)]
#[repr(C)]
pub struct TrieNode {
    /// The byte on the edge from the parent (0 for the root).
    pub byte: u8,
    /// Always zero: makes the layout explicit (no implicit padding).
    pub reserved: [u8; 3],
    /// Depth in bytes (root = 0).
    pub depth: u32,
    /// Number of nodes in this subtree, this node included.
    pub subtree_size: u32,
    /// Index into [`TokenTrie::token_ids`] of the first token ending at this node.
    pub first_token: u32,
    /// Number of tokens ending exactly at this node (several ids can share bytes).
    pub num_tokens: u32,
}

impl TrieNode {
    /// A node (the `reserved` bytes zero, as the layout requires).
    pub fn new(byte: u8, depth: u32, subtree_size: u32, first_token: u32, num_tokens: u32) -> Self {
        TrieNode {
            byte,
            reserved: [0; 3],
            depth,
            subtree_size,
            first_token,
            num_tokens,
        }
    }
}

/// The trie over the `Normal` tokens of a vocabulary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenTrie {
    /// Nodes in DFS order; node 0 is the root.
    pub nodes: Vec<TrieNode>,
    /// Token ids, grouped by the node they end at, in node order.
    pub token_ids: Vec<u32>,
}

impl TokenTrie {
    /// Token ids ending exactly at node `i`.
    #[inline]
    pub fn tokens_at(&self, i: usize) -> &[u32] {
        let n = &self.nodes[i];
        &self.token_ids[n.first_token as usize..n.first_token as usize + n.num_tokens as usize]
    }

    /// Index of the first node after the subtree of node `i`.
    #[inline]
    pub fn subtree_end(&self, i: usize) -> usize {
        i + self.nodes[i].subtree_size as usize
    }
}

/// A borrowed token trie: from a [`TokenTrie`] or straight from an artifact section.
#[derive(Clone, Copy, Debug)]
pub struct TrieRef<'a> {
    /// Nodes in DFS order.
    pub nodes: &'a [TrieNode],
    /// Token ids grouped by node.
    pub token_ids: &'a [u32],
}

impl TokenTrie {
    /// Borrows the trie.
    pub fn view(&self) -> TrieRef<'_> {
        TrieRef {
            nodes: &self.nodes,
            token_ids: &self.token_ids,
        }
    }
}

impl<'a> TrieRef<'a> {
    /// Token ids ending exactly at node `i`.
    #[inline]
    pub fn tokens_at(&self, i: usize) -> &'a [u32] {
        let n = &self.nodes[i];
        &self.token_ids[n.first_token as usize..n.first_token as usize + n.num_tokens as usize]
    }

    /// Index of the first node after the subtree of node `i`.
    #[inline]
    pub fn subtree_end(&self, i: usize) -> usize {
        i + self.nodes[i].subtree_size as usize
    }

    /// Checks the DFS structure (root at depth 0, every child one deeper than its
    /// parent, subtrees nested, token ranges and ids in bounds), so a walk over a
    /// trie read from a file can neither index out of bounds nor loop. The token
    /// ranges of the nodes that have tokens must follow each other in node order and
    /// cover `token_ids` exactly (as the builder writes them), so that `token_ids` is
    /// the list of what the walk reports, each entry once; the root has none (it
    /// spells the empty string).
    pub fn validate(&self, vocab_len: usize) -> Result<(), String> {
        let n = self.nodes.len();
        if n == 0 || self.nodes[0].depth != 0 || self.nodes[0].subtree_size as usize != n {
            return Err("trie: bad root".into());
        }
        if self.nodes[0].num_tokens != 0 {
            return Err("trie: tokens at the root (the empty string)".into());
        }
        // Where the next node with tokens must start its range.
        let mut cursor = 0usize;
        // The open ancestors of the node being checked, by depth: `ends[d]` is the
        // subtree end of the chain's node at depth `d`, for `d < open` (entries past
        // it are stale). A node at depth `d` nests iff its parent, the chain's node at
        // depth `d - 1`, is open (its subtree reaches past the node and holds the
        // node's) and is the deepest open node: the chain's node at depth `d`, if there
        // is one, has ended. Subtrees nest, so the open nodes are a prefix of the chain
        // and these are the checks of a stack of ancestors popped until the parent
        // (the stack's pops, a loop of varying length, took a sixth of a 200k-token
        // artifact's load).
        let mut ends: Vec<usize> = Vec::with_capacity(64);
        ends.push(n);
        let mut open = 1usize;
        for (i, node) in self.nodes.iter().enumerate() {
            let end = i
                .checked_add(node.subtree_size as usize)
                .ok_or("trie: subtree size overflows")?;
            if node.subtree_size == 0 || end > n || node.reserved != [0; 3] {
                return Err(format!("trie: node {i} has a bad subtree"));
            }
            let range_end = node.first_token as usize + node.num_tokens as usize;
            if range_end > self.token_ids.len() {
                return Err(format!("trie: node {i} token range out of bounds"));
            }
            if node.num_tokens != 0 {
                if node.first_token as usize != cursor {
                    return Err(format!(
                        "trie: node {i}'s tokens do not follow the previous node's"
                    ));
                }
                cursor = range_end;
            }
            if i > 0 {
                let d = node.depth as usize;
                // `end > i` (the subtree check above), so a parent that holds the
                // node's subtree is still open at `i`.
                if d == 0 || d > open || end > ends[d - 1] || (d < open && ends[d] > i) {
                    return Err(format!("trie: node {i} is not nested in its parent"));
                }
                if d == ends.len() {
                    ends.push(end);
                } else {
                    ends[d] = end;
                }
                open = d + 1;
            }
        }
        if cursor != self.token_ids.len() {
            return Err("trie: the nodes' token ranges do not cover the token ids".into());
        }
        if self.token_ids.iter().any(|&t| t as usize >= vocab_len) {
            return Err("trie: token id out of range".into());
        }
        Ok(())
    }

    /// Checks the trie's tokens against its vocabulary, after [`TrieRef::validate`]:
    /// every listed token is an ordinary token, none is listed twice, and every
    /// ordinary token is listed. Then a mask walk over the trie offers the tokens
    /// `commit` accepts and no others. `vocab` must be validated.
    ///
    /// Whether each token sits at the node whose byte path spells its bytes is not
    /// checked here: see `formats/ARTIFACT.md` (it would more than double the load
    /// time of a 200k-token artifact).
    pub fn validate_tokens(&self, vocab: &crate::VocabRef<'_>) -> Result<(), String> {
        let n = vocab.len();
        let mut seen = vec![0u64; n.div_ceil(64)];
        // `validate` made `token_ids` exactly the listed tokens, in node order.
        for &id in self.token_ids {
            if !vocab.is_normal(id) {
                return Err(format!("trie: token {id} is not an ordinary token"));
            }
            let (w, b) = (id as usize / 64, 1u64 << (id % 64));
            if seen[w] & b != 0 {
                return Err(format!("trie: token {id} is listed twice"));
            }
            seen[w] |= b;
        }
        let normal = (0..n as u32).filter(|&id| vocab.is_normal(id)).count();
        if self.token_ids.len() != normal {
            return Err(format!(
                "trie: lists {} tokens, but the vocabulary has {normal} ordinary tokens",
                self.token_ids.len()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A damage to the fixture and the message it must produce.
    type Edit = (fn(&mut TokenTrie), &'static str);
    use crate::{TokenKind, Vocabulary};

    /// Tokens 0 = "a", 1 = "ab", 2 = "b", 3 = EOS; the trie the compiler builds.
    fn fixture() -> (Vocabulary, TokenTrie) {
        use TokenKind::*;
        let v = Vocabulary::from_entries(
            "v",
            vec![
                Some((b"a".to_vec(), Normal)),
                Some((b"ab".to_vec(), Normal)),
                Some((b"b".to_vec(), Normal)),
                Some((b"<eos>".to_vec(), Special)),
            ],
            3,
        );
        let t = TokenTrie {
            nodes: vec![
                TrieNode::new(0, 0, 4, 0, 0),
                TrieNode::new(b'a', 1, 2, 0, 1),
                TrieNode::new(b'b', 2, 1, 1, 1),
                TrieNode::new(b'b', 1, 1, 2, 1),
            ],
            token_ids: vec![0, 1, 2],
        };
        (v, t)
    }

    fn check(v: &Vocabulary, t: &TokenTrie) -> Result<(), String> {
        t.view().validate(v.len())?;
        t.view().validate_tokens(&v.view())
    }

    #[test]
    fn trie_tokens_must_be_the_ordinary_tokens_once() {
        let (v, good) = fixture();
        check(&v, &good).unwrap();
        let cases: [Edit; 5] = [
            (|t| t.token_ids[2] = 3, "token 3 is not an ordinary token"),
            (|t| t.token_ids[2] = 0, "token 0 is listed twice"),
            (
                |t| {
                    t.nodes[3].num_tokens = 0;
                    t.token_ids.pop();
                },
                "lists 2 tokens, but the vocabulary has 3",
            ),
            (
                |t| {
                    t.nodes[0].num_tokens = 1;
                },
                "tokens at the root",
            ),
            (
                |t| {
                    t.nodes[2].first_token = 0;
                },
                "node 2's tokens do not follow",
            ),
        ];
        for (edit, message) in cases {
            let mut t = good.clone();
            edit(&mut t);
            let e = check(&v, &t).unwrap_err();
            assert!(e.contains(message), "{message:?} not in {e:?}");
        }
    }

    /// The structure checks as first written, with a stack of open ancestors popped
    /// until the parent: the reference the depth-indexed checks must agree with.
    fn validate_by_stack(trie: &TrieRef<'_>, vocab_len: usize) -> Result<(), String> {
        let this = trie;
        let n = this.nodes.len();
        if n == 0 || this.nodes[0].depth != 0 || this.nodes[0].subtree_size as usize != n {
            return Err("trie: bad root".into());
        }
        if this.nodes[0].num_tokens != 0 {
            return Err("trie: tokens at the root (the empty string)".into());
        }
        // Where the next node with tokens must start its range.
        let mut cursor = 0usize;
        // Stack of (depth, subtree end) of the open ancestors.
        let mut open: Vec<(u32, usize)> = vec![(0, n)];
        for (i, node) in this.nodes.iter().enumerate() {
            let end = i
                .checked_add(node.subtree_size as usize)
                .ok_or("trie: subtree size overflows")?;
            if node.subtree_size == 0 || end > n || node.reserved != [0; 3] {
                return Err(format!("trie: node {i} has a bad subtree"));
            }
            let range_end = node.first_token as usize + node.num_tokens as usize;
            if range_end > this.token_ids.len() {
                return Err(format!("trie: node {i} token range out of bounds"));
            }
            if node.num_tokens != 0 {
                if node.first_token as usize != cursor {
                    return Err(format!(
                        "trie: node {i}'s tokens do not follow the previous node's"
                    ));
                }
                cursor = range_end;
            }
            if i > 0 {
                while open.last().is_some_and(|&(_, e)| i >= e) {
                    open.pop();
                }
                let &(parent_depth, parent_end) =
                    open.last().ok_or("trie: node outside the root")?;
                if node.depth != parent_depth + 1 || end > parent_end {
                    return Err(format!("trie: node {i} is not nested in its parent"));
                }
                open.push((node.depth, end));
            }
        }
        if cursor != this.token_ids.len() {
            return Err("trie: the nodes' token ranges do not cover the token ids".into());
        }
        if this.token_ids.iter().any(|&t| t as usize >= vocab_len) {
            return Err("trie: token id out of range".into());
        }
        Ok(())
    }

    /// Random tries, valid ones (random shapes, tokens at random nodes) and the same
    /// with one field of one node changed: `validate` gives the stack walk's answer,
    /// the same error at the same node, every time.
    #[test]
    fn nesting_checks_agree_with_a_stack_of_ancestors() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut below = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n.max(1)
        };
        let (mut valid, mut refused) = (0, 0);
        for round in 0..20_000 {
            // A random tree in preorder: each new node's parent is a node on the
            // current chain (so depths stay consistent), then subtree sizes.
            let n = 1 + below(30) as usize;
            let mut depth = vec![0u32];
            let mut parent = vec![usize::MAX];
            let mut chain = vec![0usize];
            for i in 1..n {
                chain.truncate(1 + below(chain.len() as u64) as usize);
                let p = *chain.last().unwrap();
                depth.push(depth[p] + 1);
                parent.push(p);
                chain.push(i);
            }
            let mut size = vec![1u32; n];
            for i in (1..n).rev() {
                size[parent[i]] += size[i];
            }
            let mut t = TokenTrie {
                nodes: Vec::new(),
                token_ids: Vec::new(),
            };
            for i in 0..n {
                let k = if i == 0 { 0 } else { below(3) as u32 };
                let first = t.token_ids.len() as u32;
                t.token_ids.extend(first..first + k);
                t.nodes
                    .push(TrieNode::new(b'a', depth[i], size[i], first, k));
            }
            let vocab_len = t.token_ids.len() + 1;
            if round % 4 != 0 {
                let i = below(n as u64) as usize;
                let node = &mut t.nodes[i];
                let nudge = |v: u32, r: u64| match r {
                    0 => v.wrapping_add(1),
                    1 => v.wrapping_sub(1),
                    2 => 0,
                    _ => (r % 40) as u32,
                };
                let r = below(8);
                match below(4) {
                    0 => node.depth = nudge(node.depth, r),
                    1 => node.subtree_size = nudge(node.subtree_size, r),
                    2 => node.first_token = nudge(node.first_token, r),
                    _ => node.num_tokens = nudge(node.num_tokens, r),
                }
            }
            if round % 1000 == 1 {
                // Depths far past the parent's, where an index could stray.
                let i = n - 1;
                t.nodes[i].depth = [u32::MAX, t.nodes[i].depth + 2, 1 << 31][round / 1000 % 3];
            }
            let want = validate_by_stack(&t.view(), vocab_len);
            assert_eq!(t.view().validate(vocab_len), want, "round {round}: {t:?}");
            if want.is_ok() {
                valid += 1;
            } else {
                refused += 1;
            }
        }
        assert!(
            valid > 5_000 && refused > 5_000,
            "{valid} valid, {refused} refused"
        );
    }
}
