//! Token masks by walking the token trie over any [`ByteRecognizer`].
//!
//! This is the llguidance technique: depth-first over the flat trie, pushing one byte
//! per edge and popping on the way back; a rejected byte skips the whole subtree. It is
//! exact by construction (a token is allowed iff all its bytes are accepted, which for
//! a recognizer that only accepts viable prefixes means a completion exists) and slow
//! by nature; the reference path uses it, and tests use it to cross-check engines.

use crate::ByteRecognizer;
use stackmask_formats::TrieRef;

/// Fills `mask` (little-endian `u32` words, token `i` is bit `i % 32` of word `i / 32`)
/// with every token whose bytes the recognizer accepts next, plus EOS when the input so
/// far is a sentence. The recognizer's bytes are left as they were (a recognizer with a
/// work budget keeps what the walk spent unless it puts it back, as `Matcher`'s does).
/// `mask` must have at least `vocab_len.div_ceil(32)` words; `trie` must be valid
/// ([`TrieRef::validate`]) for `vocab_len`.
///
/// Returns the first work limit ([`ByteRecognizer::over_work_limit`]) that made the
/// recognizer refuse a byte or the sentence check, if one did: the tokens behind it are
/// then missing from `mask`, which is not the step's mask.
#[must_use = "a work limit leaves tokens out of the mask"]
pub fn fill_mask<R: ByteRecognizer + ?Sized>(
    recognizer: &mut R,
    trie: TrieRef<'_>,
    vocab_len: usize,
    eos: u32,
    mask: &mut [u32],
) -> Option<crate::glr::WorkLimit> {
    assert!(
        mask.len() >= vocab_len.div_ceil(32),
        "mask has {} words, needs {}",
        mask.len(),
        vocab_len.div_ceil(32)
    );
    mask.fill(0);
    let mut set = |id: u32| mask[id as usize / 32] |= 1 << (id % 32);
    // Bytes currently pushed = depth of the node whose subtree we are in.
    let mut pushed = 0usize;
    let mut cut = None;
    let mut i = 1;
    while i < trie.nodes.len() {
        let node = &trie.nodes[i];
        let parent_depth = node.depth as usize - 1;
        if pushed > parent_depth {
            recognizer.pop_bytes(pushed - parent_depth);
            pushed = parent_depth;
        }
        if recognizer.push_byte(node.byte) {
            pushed += 1;
            for &t in trie.tokens_at(i) {
                set(t);
            }
            i += 1;
        } else {
            cut = cut.or_else(|| recognizer.over_work_limit());
            i = trie.subtree_end(i);
        }
    }
    recognizer.pop_bytes(pushed);
    if recognizer.is_accepting() {
        set(eos);
    } else {
        cut = cut.or_else(|| recognizer.over_work_limit());
    }
    cut
}
