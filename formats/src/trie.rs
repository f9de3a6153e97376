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
        &self.token_ids[n.first_token as usize..(n.first_token + n.num_tokens) as usize]
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
        &self.token_ids[n.first_token as usize..(n.first_token + n.num_tokens) as usize]
    }

    /// Index of the first node after the subtree of node `i`.
    #[inline]
    pub fn subtree_end(&self, i: usize) -> usize {
        i + self.nodes[i].subtree_size as usize
    }

    /// Checks the DFS structure (root at depth 0, every child one deeper than its
    /// parent, subtrees nested, token ranges and ids in bounds), so a walk over a
    /// trie read from a file can neither index out of bounds nor loop.
    pub fn validate(&self, vocab_len: usize) -> Result<(), String> {
        let n = self.nodes.len();
        if n == 0 || self.nodes[0].depth != 0 || self.nodes[0].subtree_size as usize != n {
            return Err("trie: bad root".into());
        }
        // Stack of (depth, subtree end) of the open ancestors.
        let mut open: Vec<(u32, usize)> = vec![(0, n)];
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
        if self.token_ids.iter().any(|&t| t as usize >= vocab_len) {
            return Err("trie: token id out of range".into());
        }
        Ok(())
    }
}
