//! Token-level bookkeeping shared by every matcher: commits as token ids or forced
//! bytes, EOS, rollback by commits within a window. Engines only supply a
//! [`ByteRecognizer`].

use crate::ByteRecognizer;
use stackmask_formats::VocabRef;
use std::collections::VecDeque;

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
    /// The parse needed more work for one step than its limit allows (a byte, or
    /// deciding whether the text is a sentence): the grammar is highly ambiguous here.
    /// Nothing was committed.
    #[error(
        "the parse needs more than {limit} units of GLR work for one step, a byte or the \
         check that the text is a sentence (max_step_work): the grammar is too ambiguous \
         here; nothing was committed"
    )]
    WorkLimit {
        /// The limit (GSS edges looked at per byte).
        limit: u64,
    },
    /// The parse ran out of its work budget: over some stretch of bytes it needed more
    /// than `burst` plus `per_byte` for each byte (a highly ambiguous grammar, whose
    /// work grows with the input at every byte). Nothing was committed.
    #[error(
        "the parse needs more GLR work than its budget allows: at most {burst} units plus \
         {per_byte} per byte over any stretch of bytes (work_burst, work_per_byte): the \
         grammar is too ambiguous here; nothing was committed"
    )]
    WorkBudget {
        /// Units each consumed byte adds to the budget.
        per_byte: u64,
        /// Units the budget holds at most.
        burst: u64,
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
    /// `rollback(n)` past the rollback window: the matcher keeps what undoing the
    /// last `window` commits needs, no more (memory stays bounded).
    #[error(
        "cannot roll back {requested} commits: the rollback window keeps the last \
         {window} (max_rollback), of which {available} can be undone now"
    )]
    RollbackBeyondWindow {
        /// Requested.
        requested: usize,
        /// Commits that can be undone now.
        available: usize,
        /// The matcher's `max_rollback`.
        window: usize,
    },
}

impl MatchError {
    /// Whether a work limit refused the commit ([`MatchError::WorkLimit`] or
    /// [`MatchError::WorkBudget`]), not the grammar: the text may well be allowed.
    pub fn is_work_limit(&self) -> bool {
        matches!(
            self,
            MatchError::WorkLimit { .. } | MatchError::WorkBudget { .. }
        )
    }
}

/// The error for a byte refused by a work limit.
impl From<crate::glr::WorkLimit> for MatchError {
    fn from(limit: crate::glr::WorkLimit) -> MatchError {
        match limit {
            crate::glr::WorkLimit::Step(limit) => MatchError::WorkLimit { limit },
            crate::glr::WorkLimit::Budget { per_byte, burst } => {
                MatchError::WorkBudget { per_byte, burst }
            }
        }
    }
}

/// Commit history of one decoding session: where each of the last commits ended,
/// for rolling back at most `max_rollback` of them.
#[derive(Debug)]
pub(crate) struct Session {
    /// Bytes consumed after each of the last `ends.len() - 1` commits, preceded by
    /// where the oldest of them started (0 at the start of input): the furthest a
    /// rollback can return to. At most `max_rollback + 1` entries, never empty.
    ends: VecDeque<usize>,
    /// Commits made (and not rolled back).
    commits: usize,
    finished: bool,
    max_rollback: usize,
}

impl Clone for Session {
    fn clone(&self) -> Self {
        Session {
            ends: self.ends.clone(),
            commits: self.commits,
            finished: self.finished,
            max_rollback: self.max_rollback,
        }
    }

    /// A copy of `source` in this session's buffer (no allocation once it is as
    /// large): a matcher's clone over a dropped matcher's buffers.
    fn clone_from(&mut self, source: &Self) {
        self.ends.clear();
        self.ends.extend(source.ends.iter().copied());
        self.commits = source.commits;
        self.finished = source.finished;
        self.max_rollback = source.max_rollback;
    }
}

/// Unlimited rollback (the reference matcher's, which keeps all its history anyway).
impl Default for Session {
    fn default() -> Self {
        Session::new(usize::MAX)
    }
}

impl Session {
    /// A session that can undo up to `max_rollback` commits (`usize::MAX`: all).
    pub fn new(max_rollback: usize) -> Self {
        let mut s = Session::detached();
        s.restart(max_rollback);
        s
    }

    /// A session owning no buffers, standing in for one moved out of a dropped
    /// matcher (`matcher_pool`); [`Session::restart`] makes it a new session.
    pub fn detached() -> Self {
        Session {
            ends: VecDeque::new(),
            commits: 0,
            finished: false,
            max_rollback: 0,
        }
    }

    /// A new session that can undo up to `max_rollback` commits, in these buffers.
    pub fn restart(&mut self, max_rollback: usize) {
        self.clear();
        self.max_rollback = max_rollback;
    }

    pub fn finished(&self) -> bool {
        self.finished
    }

    pub fn max_rollback(&self) -> usize {
        self.max_rollback
    }

    /// Changes the window; a smaller one forgets at the next commit.
    pub fn set_max_rollback(&mut self, max_rollback: usize) {
        self.max_rollback = max_rollback;
    }

    pub fn clear(&mut self) {
        self.ends.clear();
        self.ends.push_back(0);
        self.commits = 0;
        self.finished = false;
    }

    /// Commits that `rollback` can undo now.
    pub fn rollback_available(&self) -> usize {
        self.ends.len() - 1
    }

    /// Records a commit (ending where `rec` is now) and lets `rec` forget what no rollback
    /// within the window can reach.
    fn record(&mut self, rec: &mut dyn ByteRecognizer) {
        let end = rec.bytes_consumed();
        self.ends.push_back(end);
        self.commits += 1;
        while self.ends.len() > self.max_rollback.saturating_add(1) {
            self.ends.pop_front();
        }
        rec.forget_before(self.ends[0]);
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
                return Err(match rec.over_work_limit() {
                    Some(limit) => limit.into(),
                    None => MatchError::EosNotAllowed,
                });
            }
            self.finished = true;
            self.record(rec);
            return Ok(());
        }
        // An empty token is refused even if marked ordinary (a vocabulary assembled by
        // hand): masks never contain it, and commit must not accept what masks refuse.
        if !vocab.is_normal(token) || vocab.token_bytes(token).is_empty() {
            return Err(MatchError::SpecialToken(token));
        }
        if !rec.push_bytes(vocab.token_bytes(token)) {
            return Err(match rec.over_work_limit() {
                Some(limit) => limit.into(),
                None => MatchError::Rejected { token },
            });
        }
        self.record(rec);
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
                let over = rec.over_work_limit();
                rec.pop_bytes(i);
                return Err(match over {
                    Some(limit) => limit.into(),
                    None => MatchError::RejectedBytes { offset: i },
                });
            }
        }
        self.record(rec);
        Ok(())
    }

    pub fn rollback(&mut self, rec: &mut dyn ByteRecognizer, n: usize) -> Result<(), MatchError> {
        if n > self.commits {
            return Err(MatchError::RollbackTooFar {
                requested: n,
                available: self.commits,
            });
        }
        let available = self.rollback_available();
        if n > available {
            return Err(MatchError::RollbackBeyondWindow {
                requested: n,
                available,
                window: self.max_rollback,
            });
        }
        if n == 0 {
            return Ok(());
        }
        self.ends.truncate(self.ends.len() - n);
        self.commits -= n;
        let target = self.ends[self.ends.len() - 1];
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
