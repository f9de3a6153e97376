//! Builds the flat DFS-order [`TokenTrie`] over a vocabulary's `Normal` tokens.
//!
//! Sorting the token byte strings lexicographically already lists them in the trie's
//! pre-order (a prefix sorts before its extensions, siblings by byte), so the builder is
//! one pass over the sorted tokens with a stack of open nodes: no pointer-based trie is
//! ever materialised, which matters at 200k tokens.

use stackmask_formats::trie::TrieNode;
use stackmask_formats::{TokenKind, TokenTrie, Vocabulary};

/// Builds the token trie: only `TokenKind::Normal` tokens with non-empty bytes (specials,
/// unused ids and empty tokens can never be part of the text a mask constrains); nodes in
/// DFS order with children sorted by byte; several ids with the same bytes share one node,
/// their ids listed in increasing order.
pub fn build_trie(vocab: &Vocabulary) -> TokenTrie {
    let mut tokens: Vec<(&[u8], u32)> = (0..vocab.len() as u32)
        .filter(|&id| vocab.kind(id) == TokenKind::Normal)
        .map(|id| (vocab.token_bytes(id), id))
        .filter(|(b, _)| !b.is_empty())
        .collect();
    tokens.sort_unstable();

    let mut nodes = vec![TrieNode::new(0, 0, 0, 0, 0)];
    let mut token_ids = Vec::with_capacity(tokens.len());
    // `path[d]` is the index of the open node at depth `d` (path[0] = root); the bytes of
    // the deepest open node are `prev[..path.len() - 1]`.
    let mut path: Vec<usize> = vec![0];
    let mut prev: &[u8] = &[];
    for (bytes, id) in tokens {
        let common = bytes.iter().zip(prev).take_while(|(a, b)| a == b).count();
        // Close the nodes below the common prefix: their subtrees are complete.
        while path.len() > common + 1 {
            let i = path.pop().expect("non-empty");
            nodes[i].subtree_size = (nodes.len() - i) as u32;
        }
        for (d, &b) in bytes.iter().enumerate().skip(common) {
            path.push(nodes.len());
            // No tokens yet: point at the end so `tokens_at` is an empty, valid slice.
            nodes.push(TrieNode::new(b, d as u32 + 1, 0, token_ids.len() as u32, 0));
        }
        let node = &mut nodes[*path.last().expect("non-empty")];
        if node.num_tokens == 0 {
            node.first_token = token_ids.len() as u32;
        }
        node.num_tokens += 1;
        token_ids.push(id);
        prev = bytes;
    }
    while let Some(i) = path.pop() {
        nodes[i].subtree_size = (nodes.len() - i) as u32;
    }
    TokenTrie { nodes, token_ids }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::vocab::load_tokenizer;

    /// Checks every structural invariant of `trie` against `vocab`; used by the HF tests
    /// too. Panics with the first violation.
    pub(crate) fn check_invariants(vocab: &Vocabulary, trie: &TokenTrie) {
        let nodes = &trie.nodes;
        assert!(!nodes.is_empty());
        assert_eq!(nodes[0].depth, 0);
        assert_eq!(
            nodes[0].subtree_size as usize,
            nodes.len(),
            "root spans the whole trie"
        );
        let mut seen = vec![false; vocab.len()];
        let mut next_token = 0usize;
        // Iterative DFS that follows the flat layout: children of `i` start at `i + 1` and
        // each is skipped by its subtree size; this must land exactly on `subtree_end(i)`.
        let mut path: Vec<u8> = Vec::new();
        fn visit(
            trie: &TokenTrie,
            vocab: &Vocabulary,
            i: usize,
            path: &mut Vec<u8>,
            seen: &mut [bool],
            next_token: &mut usize,
        ) {
            let n = trie.nodes[i];
            assert_eq!(n.depth as usize, path.len(), "node {i} depth");
            assert!(n.subtree_size >= 1, "node {i}");
            // Tokens are stored in node order, contiguously.
            if n.num_tokens > 0 {
                assert_eq!(
                    n.first_token as usize, *next_token,
                    "node {i} tokens out of order"
                );
            }
            *next_token += n.num_tokens as usize;
            let ids = trie.tokens_at(i);
            assert!(
                ids.windows(2).all(|w| w[0] < w[1]),
                "node {i} ids not increasing: {ids:?}"
            );
            for &id in ids {
                assert_eq!(vocab.token_bytes(id), &path[..], "token {id} at node {i}");
                assert_eq!(vocab.kind(id), TokenKind::Normal, "token {id}");
                assert!(
                    !std::mem::replace(&mut seen[id as usize], true),
                    "token {id} twice"
                );
            }
            let end = trie.subtree_end(i);
            assert!(end <= trie.nodes.len(), "node {i} subtree overruns");
            let mut j = i + 1;
            let mut last_byte: Option<u8> = None;
            let mut sum = 1usize;
            while j < end {
                let c = trie.nodes[j];
                assert!(
                    last_byte.is_none_or(|b| b < c.byte),
                    "children of {i} not sorted by byte"
                );
                last_byte = Some(c.byte);
                path.push(c.byte);
                visit(trie, vocab, j, path, seen, next_token);
                path.pop();
                sum += c.subtree_size as usize;
                j += c.subtree_size as usize;
            }
            assert_eq!(j, end, "children of {i} overrun its subtree");
            assert_eq!(sum, n.subtree_size as usize, "node {i} subtree size");
            // No dead branches: a leaf other than the root ends some token.
            if i != 0 && n.subtree_size == 1 {
                assert!(n.num_tokens > 0, "leaf {i} holds no token");
            }
        }
        visit(trie, vocab, 0, &mut path, &mut seen, &mut next_token);
        assert_eq!(next_token, trie.token_ids.len());
        // Exactly the Normal tokens with bytes are present.
        for id in 0..vocab.len() as u32 {
            let want = vocab.kind(id) == TokenKind::Normal && !vocab.token_bytes(id).is_empty();
            assert_eq!(seen[id as usize], want, "token {id} ({:?})", vocab.kind(id));
        }
    }

    fn node(byte: u8, depth: u32, size: u32, first: u32, count: u32) -> TrieNode {
        TrieNode::new(byte, depth, size, first, count)
    }

    #[test]
    fn small_vocabulary_exact_layout() {
        use TokenKind::*;
        let entries = vec![
            Some((b"ab".to_vec(), Normal)),   // 0
            Some((b"a".to_vec(), Normal)),    // 1
            Some((b"b".to_vec(), Normal)),    // 2
            Some((b"ab".to_vec(), Normal)),   // 3: same bytes as 0
            Some((b"<s>".to_vec(), Special)), // 4: absent
            None,                             // 5: unused, absent
            Some((b"ac".to_vec(), Normal)),   // 6
            Some((Vec::new(), Normal)),       // 7: empty, absent
            Some((b"ab".to_vec(), Special)),  // 8: same bytes as a Normal token, still absent
            Some((b"bcd".to_vec(), Normal)),  // 9: "bc" is an inner node without tokens
        ];
        let v = Vocabulary::from_entries("t", entries, 4);
        let t = build_trie(&v);
        assert_eq!(
            t.nodes,
            vec![
                node(0, 0, 7, 0, 0),    // root
                node(b'a', 1, 3, 0, 1), // "a": [1]
                node(b'b', 2, 1, 1, 2), // "ab": [0, 3]
                node(b'c', 2, 1, 3, 1), // "ac": [6]
                node(b'b', 1, 3, 4, 1), // "b": [2]
                node(b'c', 2, 2, 5, 0), // "bc": none
                node(b'd', 3, 1, 5, 1), // "bcd": [9]
            ]
        );
        assert_eq!(t.token_ids, [1, 0, 3, 6, 2, 9]);
        assert_eq!(t.tokens_at(2), [0, 3]);
        assert!(t.tokens_at(5).is_empty());
        check_invariants(&v, &t);
    }

    #[test]
    fn empty_vocabulary_is_a_root() {
        let v =
            Vocabulary::from_entries("e", vec![Some((b"<eos>".to_vec(), TokenKind::Special))], 0);
        let t = build_trie(&v);
        assert_eq!(t.nodes, vec![node(0, 0, 1, 0, 0)]);
        assert!(t.token_ids.is_empty());
        check_invariants(&v, &t);
    }

    #[test]
    fn invariant_checker_catches_corruption() {
        // The checker must be able to fail, or the tests above prove nothing.
        let v = load_tokenizer("bytes").unwrap().vocab;
        let good = build_trie(&v);
        check_invariants(&v, &good);
        let corruptions: [fn(&mut TokenTrie); 4] = [
            |t| t.nodes[3].subtree_size += 1,
            |t| t.nodes[5].byte = 200,
            |t| t.token_ids.swap(0, 1),
            |t| t.nodes[7].depth = 2,
        ];
        for (k, c) in corruptions.iter().enumerate() {
            let mut bad = good.clone();
            c(&mut bad);
            let r = std::panic::catch_unwind(|| check_invariants(&v, &bad));
            assert!(r.is_err(), "corruption {k} not detected");
        }
    }

    #[test]
    fn bytes_vocabulary() {
        let v = load_tokenizer("bytes").unwrap().vocab;
        let t = build_trie(&v);
        assert_eq!(t.nodes.len(), 257);
        for b in 0..=255u8 {
            let n = t.nodes[b as usize + 1];
            assert_eq!((n.byte, n.depth, n.subtree_size), (b, 1, 1));
            assert_eq!(t.tokens_at(b as usize + 1), [u32::from(b)]);
        }
        check_invariants(&v, &t);
    }

    /// Finds the node spelling `bytes` by walking children with subtree skips.
    fn find(t: &TokenTrie, bytes: &[u8]) -> Option<usize> {
        let mut i = 0;
        for &b in bytes {
            let end = t.subtree_end(i);
            let mut j = i + 1;
            while j < end && t.nodes[j].byte != b {
                j = t.subtree_end(j);
            }
            if j >= end {
                return None;
            }
            i = j;
        }
        Some(i)
    }

    #[test]
    fn o200k() {
        let tok = load_tokenizer("tiktoken:o200k_base").unwrap();
        let v = &tok.vocab;
        let t = build_trie(v);
        assert_eq!(t.token_ids.len(), 199_998);
        check_invariants(v, &t);
        for id in tok.encode(" hello world, 日本語 🦙".as_bytes()).unwrap() {
            let i = find(&t, v.token_bytes(id)).expect("token reachable");
            assert!(t.tokens_at(i).contains(&id));
        }
        // Specials are not in the trie, not even as text.
        assert!(find(&t, b"<|endoftext|>").is_none_or(|i| !t.tokens_at(i).contains(&199_999)));
        assert!(!t.token_ids.contains(&199_999) && !t.token_ids.contains(&200_018));
    }
}
