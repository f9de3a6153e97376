//! Token-level bookkeeping shared by every matcher: commits as token ids or forced
//! bytes, EOS, rollback by commits. Engines only supply a [`ByteRecognizer`].

use crate::ByteRecognizer;
use stackmask_formats::VocabRef;

/// Why a commit or rollback was refused. A refused commit changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatchError {
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

/// Commit history of one decoding session.
#[derive(Clone, Debug, Default)]
pub(crate) struct Session {
    /// Bytes consumed after each commit.
    commit_ends: Vec<usize>,
    finished: bool,
}

impl Session {
    pub fn finished(&self) -> bool {
        self.finished
    }

    pub fn clear(&mut self) {
        self.commit_ends.clear();
        self.finished = false;
    }

    pub fn commit(
        &mut self,
        rec: &mut dyn ByteRecognizer,
        vocab: VocabRef<'_>,
        token: u32,
    ) -> Result<(), MatchError> {
        if self.finished {
            return Err(MatchError::Finished);
        }
        if token as usize >= vocab.len() {
            return Err(MatchError::UnknownToken(token));
        }
        if token == vocab.eos {
            if !rec.is_accepting() {
                return Err(MatchError::EosNotAllowed);
            }
            self.finished = true;
            self.commit_ends.push(rec.bytes_consumed());
            return Ok(());
        }
        if !vocab.is_normal(token) {
            return Err(MatchError::SpecialToken(token));
        }
        if !rec.push_bytes(vocab.token_bytes(token)) {
            return Err(MatchError::Rejected { token });
        }
        self.commit_ends.push(rec.bytes_consumed());
        Ok(())
    }

    pub fn commit_bytes(
        &mut self,
        rec: &mut dyn ByteRecognizer,
        bytes: &[u8],
    ) -> Result<(), MatchError> {
        if self.finished {
            return Err(MatchError::Finished);
        }
        for (i, &b) in bytes.iter().enumerate() {
            if !rec.push_byte(b) {
                rec.pop_bytes(i);
                return Err(MatchError::RejectedBytes { offset: i });
            }
        }
        self.commit_ends.push(rec.bytes_consumed());
        Ok(())
    }

    pub fn rollback(&mut self, rec: &mut dyn ByteRecognizer, n: usize) -> Result<(), MatchError> {
        let available = self.commit_ends.len();
        if n > available {
            return Err(MatchError::RollbackTooFar {
                requested: n,
                available,
            });
        }
        if n == 0 {
            return Ok(());
        }
        self.commit_ends.truncate(available - n);
        let target = self.commit_ends.last().copied().unwrap_or(0);
        rec.pop_bytes(rec.bytes_consumed() - target);
        self.finished = false;
        Ok(())
    }
}
