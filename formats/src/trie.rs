//! A flat token trie in depth-first order (the layout of llguidance's toktrie).
//!
//! Node 0 is the root (the empty string). The children of a node follow it directly,
//! each followed by its own subtree, so a walk that rejects a byte skips the whole
//! subtree by adding `subtree_size` to the index: no pointers, cache-friendly.

use serde::{Deserialize, Serialize};

/// One trie node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrieNode {
    /// The byte on the edge from the parent (0 for the root).
    pub byte: u8,
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
