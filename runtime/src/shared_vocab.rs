//! `SharedVocab`: one vocabulary and token trie, validated and hashed once, shared by
//! the engines of every grammar compiled for it.
//!
//! An artifact file carries its vocabulary and trie (12 MB for a 200k vocabulary), and
//! loading it checksums and validates them: milliseconds per grammar, most of what a
//! small JSON Schema costs to compile and load. A serving process compiles grammar after
//! grammar for one tokenizer; their engines share a [`SharedVocab`] instead and hold
//! artifacts of the grammar alone ([`crate::Engine::from_bytes_sharing`]), which record
//! the vocabulary's hash, checked at load.

use crate::engine::EngineError;
use stackmask_formats::{TokenTrie, TrieRef, VocabRef, Vocabulary};
use std::sync::Arc;

/// A vocabulary with its token trie, validated, for engines that share it.
pub struct SharedVocab {
    vocab: Vocabulary,
    /// Shared with the compiler's prepared trie where both are made from one build
    /// (Python's `Compiler`): 9 MB for o200k (421,661 nodes, 200k ids), once.
    trie: Arc<TokenTrie>,
    hash: u64,
    /// The tokens a mask may hold (ordinary tokens and EOS), as mask words: what an
    /// engine's Parser DWA weights are validated against.
    maskable: Vec<u32>,
}

impl std::fmt::Debug for SharedVocab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedVocab")
            .field("name", &self.vocab.name)
            .field("tokens", &self.vocab.len())
            .field("hash", &format_args!("{:016x}", self.hash))
            .finish()
    }
}

impl SharedVocab {
    /// Validates `trie` against `vocab` (as loading an artifact does) and hashes the
    /// vocabulary ([`Vocabulary::content_hash`]).
    pub fn new(
        vocab: Vocabulary,
        trie: impl Into<Arc<TokenTrie>>,
    ) -> Result<SharedVocab, EngineError> {
        let trie = trie.into();
        let v = vocab.view();
        validate_vocab_and_trie(&v, &trie.view()).map_err(EngineError::Invalid)?;
        let maskable = maskable(&v);
        let hash = vocab.content_hash();
        Ok(SharedVocab {
            vocab,
            trie,
            hash,
            maskable,
        })
    }

    /// The vocabulary.
    pub fn vocab(&self) -> VocabRef<'_> {
        self.vocab.view()
    }

    /// The token trie.
    pub fn trie(&self) -> TrieRef<'_> {
        self.trie.view()
    }

    /// The vocabulary's [`Vocabulary::content_hash`].
    pub fn content_hash(&self) -> u64 {
        self.hash
    }

    /// The tokens a mask may hold, as mask words.
    pub(crate) fn maskable(&self) -> &[u32] {
        &self.maskable
    }
}

/// Checks a vocabulary, then its trie against it (DFS structure, token ranges, the
/// tokens' bytes), as loading an artifact does: afterwards no index either gives can
/// be out of bounds.
pub(crate) fn validate_vocab_and_trie(
    vocab: &VocabRef<'_>,
    trie: &TrieRef<'_>,
) -> Result<(), String> {
    vocab.validate()?;
    trie.validate(vocab.len())?;
    trie.validate_tokens(vocab)
}

/// The tokens a mask may hold (ordinary tokens and EOS) of a validated vocabulary, as
/// mask words.
pub(crate) fn maskable(vocab: &VocabRef<'_>) -> Vec<u32> {
    let mut words = vec![0u32; vocab.len().div_ceil(32)];
    for id in 0..vocab.len() as u32 {
        if vocab.is_normal(id) || id == vocab.eos {
            words[id as usize / 32] |= 1 << (id % 32);
        }
    }
    words
}
