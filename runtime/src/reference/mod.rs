//! The reference path: an Earley recognizer over bytes and a token-trie walk.
//!
//! It implements DESIGN.md §1 directly, shares only the grammar IR and the terminal
//! DFAs with the compiled path, and precomputes nothing beyond nullability, so it is
//! the oracle every faster path is checked against. Clarity beats speed here.

mod earley;
mod viability;

pub use earley::EarleyRecognizer;

use crate::{trie_walk, ByteRecognizer};
use stackmask_formats::{ByteDfa, Grammar, TokenKind, TokenTrie, Vocabulary};
use std::sync::Arc;

/// Why the reference path refused something.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    /// The grammar and the DFAs do not fit together.
    #[error("invalid grammar: {0}")]
    InvalidGrammar(String),
    /// A token id outside the vocabulary.
    #[error("token {0} is not in the vocabulary")]
    UnknownToken(u32),
    /// A special token other than EOS, or an unused id.
    #[error("token {0} is a special or unused token")]
    SpecialToken(u32),
    /// The token's bytes leave no valid completion.
    #[error("token {token} is not allowed here")]
    Rejected {
        /// The token.
        token: u32,
    },
    /// The forced bytes leave no valid completion.
    #[error("the bytes are not allowed here (rejected at byte {offset})")]
    RejectedBytes {
        /// Offset of the first rejected byte within the committed bytes.
        offset: usize,
    },
    /// EOS was committed where the input is not a sentence.
    #[error("end of sequence is not allowed here")]
    EosNotAllowed,
    /// Nothing can be committed after EOS.
    #[error("the sequence has already ended")]
    Finished,
    /// `rollback(n)` with more commits than were made.
    #[error("cannot roll back {requested} commits, only {available} were made")]
    RollbackTooFar {
        /// Requested.
        requested: usize,
        /// Available.
        available: usize,
    },
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
    pub fn new(grammar: &Grammar, dfas: Vec<ByteDfa>, vocab: Vocabulary, trie: TokenTrie) -> Result<Self, ReferenceError> {
        Ok(ReferenceEngine { grammar: Arc::new(earley::EarleyGrammar::new(grammar, dfas)?), vocab, trie })
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
    /// Bytes consumed after each commit (for rollback).
    commit_ends: Vec<usize>,
    finished: bool,
}

impl ReferenceMatcher {
    /// A matcher at the start of input.
    pub fn new(engine: Arc<ReferenceEngine>) -> Self {
        let recognizer = engine.recognizer();
        ReferenceMatcher { engine, recognizer, commit_ends: Vec::new(), finished: false }
    }

    /// Commits a token; a rejected token leaves the matcher unchanged.
    pub fn commit(&mut self, token: u32) -> Result<(), ReferenceError> {
        if self.finished {
            return Err(ReferenceError::Finished);
        }
        let vocab = &self.engine.vocab;
        if token as usize >= vocab.len() {
            return Err(ReferenceError::UnknownToken(token));
        }
        if token == vocab.eos {
            if !self.recognizer.is_accepting() {
                return Err(ReferenceError::EosNotAllowed);
            }
            self.finished = true;
            self.commit_ends.push(self.recognizer.bytes_consumed());
            return Ok(());
        }
        if vocab.kind(token) != TokenKind::Normal {
            return Err(ReferenceError::SpecialToken(token));
        }
        if !self.recognizer.push_bytes(vocab.token_bytes(token)) {
            return Err(ReferenceError::Rejected { token });
        }
        self.commit_ends.push(self.recognizer.bytes_consumed());
        Ok(())
    }

    /// Commits forced bytes (not necessarily a token); all or nothing.
    pub fn commit_bytes(&mut self, bytes: &[u8]) -> Result<(), ReferenceError> {
        if self.finished {
            return Err(ReferenceError::Finished);
        }
        for (i, &b) in bytes.iter().enumerate() {
            if !self.recognizer.push_byte(b) {
                self.recognizer.pop_bytes(i);
                return Err(ReferenceError::RejectedBytes { offset: i });
            }
        }
        self.commit_ends.push(self.recognizer.bytes_consumed());
        Ok(())
    }

    /// Undoes the last `n` commits (tokens or byte strings).
    pub fn rollback(&mut self, n: usize) -> Result<(), ReferenceError> {
        let available = self.commit_ends.len();
        if n > available {
            return Err(ReferenceError::RollbackTooFar { requested: n, available });
        }
        if n == 0 {
            return Ok(());
        }
        self.commit_ends.truncate(available - n);
        let target = self.commit_ends.last().copied().unwrap_or(0);
        let consumed = self.recognizer.bytes_consumed();
        self.recognizer.pop_bytes(consumed - target);
        self.finished = false;
        Ok(())
    }

    /// Whether the committed bytes form a sentence (EOS is allowed).
    pub fn is_accepting(&self) -> bool {
        self.recognizer.is_accepting()
    }

    /// Whether EOS has been committed.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Number of committed bytes.
    pub fn bytes_consumed(&self) -> usize {
        self.recognizer.bytes_consumed()
    }

    /// Writes the mask of allowed next tokens into `mask` (at least
    /// `vocab.mask_words()` words). After EOS the mask is empty.
    pub fn fill_mask(&mut self, mask: &mut [u32]) {
        if self.finished {
            mask.fill(0);
            return;
        }
        let engine = self.engine.clone();
        trie_walk::fill_mask(&mut self.recognizer, &engine.vocab, &engine.trie, mask);
    }
}
