//! The reference path: an Earley recognizer over bytes and a token-trie walk.
//!
//! It implements DESIGN.md §1 directly, shares only the grammar IR and the terminal
//! DFAs with the compiled path, and precomputes only grammar-level facts (nullability,
//! and the first-byte / exit-class relations that decide whether a prefix can still be
//! completed under greedy lexing, `viability.rs`), so it is the oracle every faster
//! path is checked against. Clarity beats speed here.

mod earley;
mod viability;

pub use earley::EarleyRecognizer;

use crate::session::{MatchError, Session};
use crate::{trie_walk, ByteRecognizer};
use stackmask_formats::{ByteDfa, Grammar, TokenTrie, Vocabulary};
use std::sync::Arc;

/// Why the reference path refused a grammar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    /// The grammar and the DFAs do not fit together.
    #[error("invalid grammar: {0}")]
    InvalidGrammar(String),
}

/// Everything the reference path needs, shared by all its matchers.
#[derive(Debug)]
pub struct ReferenceEngine {
    grammar: Arc<earley::EarleyGrammar>,
    vocab: Vocabulary,
    trie: TokenTrie,
}

impl ReferenceEngine {
    /// Builds the reference engine from a normalized grammar, its terminal DFAs (in
    /// terminal-id order), a vocabulary and its trie.
    pub fn new(
        grammar: &Grammar,
        dfas: Vec<ByteDfa>,
        vocab: Vocabulary,
        trie: TokenTrie,
    ) -> Result<Self, ReferenceError> {
        Ok(ReferenceEngine {
            grammar: Arc::new(earley::EarleyGrammar::new(grammar, dfas)?),
            vocab,
            trie,
        })
    }

    /// Work the set-up did: rule evaluations of its fixpoint over the nonterminals. Tests
    /// compare it across grammar sizes (it must grow linearly on chains of rules).
    pub fn setup_work(&self) -> usize {
        self.grammar.setup_work()
    }

    /// The vocabulary.
    pub fn vocab(&self) -> &Vocabulary {
        &self.vocab
    }

    /// A byte-level recognizer for the grammar, at the start of input.
    pub fn recognizer(&self) -> EarleyRecognizer {
        EarleyRecognizer::new(self.grammar.clone())
    }
}

/// One decoding session on the reference path: commit tokens, ask for masks.
#[derive(Clone, Debug)]
pub struct ReferenceMatcher {
    engine: Arc<ReferenceEngine>,
    recognizer: EarleyRecognizer,
    session: Session,
}

impl ReferenceMatcher {
    /// A matcher at the start of input.
    pub fn new(engine: Arc<ReferenceEngine>) -> Self {
        let recognizer = engine.recognizer();
        ReferenceMatcher {
            engine,
            recognizer,
            session: Session::default(),
        }
    }

    /// Commits a token; a rejected token leaves the matcher unchanged.
    pub fn commit(&mut self, token: u32) -> Result<(), MatchError> {
        self.session
            .commit(&mut self.recognizer, self.engine.vocab.view(), token)
    }

    /// Commits forced bytes (not necessarily a token); all or nothing.
    pub fn commit_bytes(&mut self, bytes: &[u8]) -> Result<(), MatchError> {
        self.session.commit_bytes(&mut self.recognizer, bytes)
    }

    /// Undoes the last `n` commits (tokens or byte strings).
    pub fn rollback(&mut self, n: usize) -> Result<(), MatchError> {
        self.session.rollback(&mut self.recognizer, n)
    }

    /// Whether the committed bytes form a sentence (EOS is allowed).
    pub fn is_accepting(&self) -> bool {
        self.recognizer.is_accepting()
    }

    /// Whether EOS has been committed.
    pub fn is_finished(&self) -> bool {
        self.session.finished()
    }

    /// Number of committed bytes.
    pub fn bytes_consumed(&self) -> usize {
        self.recognizer.bytes_consumed()
    }

    /// Writes the mask of allowed next tokens into `mask` (at least
    /// `vocab.mask_words()` words). After EOS the mask is empty.
    pub fn fill_mask(&mut self, mask: &mut [u32]) {
        if self.session.finished() {
            mask.fill(0);
            return;
        }
        let engine = self.engine.clone();
        let cut = trie_walk::fill_mask(
            &mut self.recognizer,
            engine.trie.view(),
            engine.vocab.len(),
            engine.vocab.eos,
            mask,
        );
        debug_assert!(cut.is_none(), "the Earley recognizer has no work limits");
    }
}
