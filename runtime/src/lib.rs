//! The stackmask runtime: answers "which tokens may come next?" for a grammar.
//!
//! Two engines share one byte-level contract ([`ByteRecognizer`]) and DESIGN.md §1's
//! semantics: the [`reference`] path (an Earley recognizer plus a token-trie walk, no
//! precomputation, the oracle) and the compiled path (a GLR parser over generated
//! tables, loaded from an artifact).

#![warn(missing_docs)]

pub mod engine;
pub mod glr;
mod matcher;
mod matcher_pool;
pub mod reference;
mod session;
pub mod shared_vocab;

pub use engine::{Engine, EngineError};
pub use matcher::{Matcher, DEFAULT_MAX_ROLLBACK};
pub use matcher_pool::{MAX_POOLED_MATCHERS, MAX_POOLED_STATE_BYTES};
pub use session::MatchError;
pub use shared_vocab::SharedVocab;
pub mod trie_walk;

/// An incremental recognizer of the byte-level language of a grammar.
///
/// Every engine implements this; the token-trie walk, the differential tests and the
/// `validate` command only need these four operations.
pub trait ByteRecognizer {
    /// Consumes one byte if the input stays a viable prefix; returns `false` (and
    /// changes nothing) otherwise.
    fn push_byte(&mut self, byte: u8) -> bool;
    /// Undoes the last `n` consumed bytes.
    ///
    /// # Panics
    ///
    /// Implementations panic if `n > bytes_consumed()` (a caller bug: nothing can be
    /// undone below the start of input).
    fn pop_bytes(&mut self, n: usize);
    /// Number of bytes consumed so far.
    fn bytes_consumed(&self) -> usize;
    /// Whether the bytes consumed so far form a sentence.
    fn is_accepting(&self) -> bool;
    /// Promises that no byte before position `pos` will be popped again, so the
    /// recognizer may free what only undoing them needs. The default keeps all.
    fn forget_before(&mut self, pos: usize) {
        let _ = pos;
    }
    /// If the last refused byte (or `false` from `is_accepting`) was refused because
    /// it needed more work than the recognizer's limits allow: which limit. The default
    /// has none.
    fn over_work_limit(&self) -> Option<glr::WorkLimit> {
        None
    }

    /// Consumes `bytes` entirely or not at all.
    fn push_bytes(&mut self, bytes: &[u8]) -> bool {
        for (i, &b) in bytes.iter().enumerate() {
            if !self.push_byte(b) {
                self.pop_bytes(i);
                return false;
            }
        }
        true
    }
}
