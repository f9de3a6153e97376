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
    /// A special token other than EOS, an unused id, or a token with no bytes (no mask
    /// ever contains one: it would add no text; vocabularies classify such tokens as
    /// unused, see `Vocabulary::from_entries`).
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
        // An empty token is refused even if marked ordinary (a vocabulary assembled by
        // hand): masks never contain it, and commit must not accept what masks refuse.
        if !vocab.is_normal(token) || vocab.token_bytes(token).is_empty() {
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

#[cfg(test)]
mod tests {
    use super::*;
    use stackmask_formats::{KindsRef, TokenKind};

    /// Accepts every byte: only the session's own checks can refuse a commit.
    #[derive(Default)]
    struct Anything(usize);

    impl ByteRecognizer for Anything {
        fn push_byte(&mut self, _: u8) -> bool {
            self.0 += 1;
            true
        }
        fn pop_bytes(&mut self, n: usize) {
            self.0 -= n;
        }
        fn bytes_consumed(&self) -> usize {
            self.0
        }
        fn is_accepting(&self) -> bool {
            true
        }
    }

    #[test]
    fn an_empty_token_is_refused_even_if_marked_ordinary() {
        // Token 1 has no bytes but claims to be ordinary (a vocabulary assembled by
        // hand; `Vocabulary::from_entries` and artifact loading never produce one).
        // No mask contains it, so commit must refuse it too.
        let kinds = [TokenKind::Normal, TokenKind::Normal, TokenKind::Special];
        let vocab = VocabRef {
            bytes: b"a",
            offsets: &[0, 1, 1, 1],
            kinds: KindsRef::Owned(&kinds),
            eos: 2,
        };
        let (mut session, mut rec) = (Session::default(), Anything::default());
        assert_eq!(
            session.commit(&mut rec, vocab, 1),
            Err(MatchError::SpecialToken(1))
        );
        assert_eq!(rec.bytes_consumed(), 0);
        session.commit(&mut rec, vocab, 0).unwrap();
        session.commit(&mut rec, vocab, 2).unwrap();
        assert!(session.finished());
    }
}
