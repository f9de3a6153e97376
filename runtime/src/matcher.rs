//! `Matcher`: one decoding session on the compiled path.
//!
//! Cheap to create from an `Arc<Engine>`; `reset()` reuses every buffer, and a dropped
//! matcher leaves its buffers to the engine for the next `Matcher::new` (module
//! `matcher_pool`), so a matcher per request commits and masks without allocating once
//! the engine is warm. A matcher can undo its last
//! [`Matcher::max_rollback`] commits ([`DEFAULT_MAX_ROLLBACK`] unless set) and forgets
//! what only older ones would need, so its memory follows the nesting depth and that
//! window, not the length of the output, and `clone()` (beam search, parallel
//! sampling) copies that much and no scratch buffer, into a dropped matcher's
//! buffers when the engine holds some.
//!
//! `fill_mask` walks the precompiled Parser DWA over the GSS (DESIGN.md §2; see
//! `glr::dwa_walk`): table lookups and sparse ORs, no token trie and no reduce chain.
//! [`Matcher::fill_mask_by_trie_walk`] is the exact token-trie walk over the GLR parser:
//! the masks of boundaries the compiler left to it (past its per-boundary budget), and
//! a cross-check for tests and debugging.

use crate::engine::Engine;
use crate::glr::{DwaWalk, GlrRecognizer, GlrState};
use crate::matcher_pool::MatcherParts;
use crate::session::{MatchError, Session};
use crate::trie_walk;
use std::sync::Arc;

/// Commits a new matcher can undo: speculative decoding rolls back a handful of
/// draft tokens, and a window this size keeps a clone at about a microsecond.
/// [`Matcher::set_max_rollback`] changes it (`usize::MAX`: keep everything).
pub const DEFAULT_MAX_ROLLBACK: usize = 32;

/// A decoding session over an [`Engine`].
#[derive(Debug)]
pub struct Matcher {
    engine: Arc<Engine>,
    state: GlrState,
    session: Session,
    walk: DwaWalk,
}

impl Matcher {
    /// A matcher at the start of input, every setting at its default. It takes the
    /// buffers a dropped matcher of the same engine left, if any (module
    /// `matcher_pool`): then it allocates nothing, and its first masks and commits
    /// cost what a reset matcher's do.
    pub fn new(engine: Arc<Engine>) -> Self {
        let MatcherParts {
            mut state,
            mut session,
            mut walk,
        } = match engine.matcher_pool().take() {
            Some(parts) => parts,
            None => MatcherParts {
                state: GlrState::detached(),
                session: Session::detached(),
                walk: DwaWalk::default(),
            },
        };
        state.reset(&engine.tables());
        state.set_max_step_work(crate::glr::DEFAULT_MAX_STEP_WORK);
        state.set_work_budget(
            crate::glr::DEFAULT_WORK_PER_BYTE,
            crate::glr::DEFAULT_WORK_BURST,
        );
        session.restart(DEFAULT_MAX_ROLLBACK);
        walk.reset_settings();
        Matcher {
            engine,
            state,
            session,
            walk,
        }
    }

    /// How many of the last commits [`Matcher::rollback`] can undo.
    pub fn max_rollback(&self) -> usize {
        self.session.max_rollback()
    }

    /// Sets how many of the last commits [`Matcher::rollback`] can undo
    /// (`usize::MAX`: all, and memory grows with the output). A smaller window takes
    /// effect at the next commit.
    pub fn set_max_rollback(&mut self, max_rollback: usize) {
        self.session.set_max_rollback(max_rollback);
    }

    /// Sets the GLR work one byte may take (GSS edges looked at;
    /// [`crate::glr::DEFAULT_MAX_STEP_WORK`] unless set): a commit whose bytes need more
    /// fails with [`MatchError::WorkLimit`] and changes nothing.
    pub fn set_max_step_work(&mut self, max: u64) {
        self.state.set_max_step_work(max);
    }

    /// Sets the matcher's GLR work budget and fills it: over any stretch of bytes the
    /// parse may do at most `burst` units plus `per_byte` for each byte
    /// ([`crate::glr::DEFAULT_WORK_BURST`], [`crate::glr::DEFAULT_WORK_PER_BYTE`]
    /// unless set; `u64::MAX` for both: no budget). A commit past it fails with
    /// [`MatchError::WorkBudget`] and changes nothing but the budget: the work was done.
    /// This bounds a whole parse linearly in its length, where
    /// [`Matcher::set_max_step_work`] bounds one byte ([`crate::glr::WorkLimit`]).
    pub fn set_work_budget(&mut self, per_byte: u64, burst: u64) {
        self.state.set_work_budget(per_byte, burst);
    }

    /// The work budget: (units per consumed byte, the most it holds).
    pub fn work_budget(&self) -> (u64, u64) {
        self.state.work_budget()
    }

    /// The units the work budget holds now: what the next bytes may spend.
    pub fn work_credit(&self) -> u64 {
        self.state.work_credit()
    }

    /// Sets how many recent masks the matcher keeps to copy instead of recomputing
    /// ([`crate::glr::DEFAULT_MASK_CACHE_SLOTS`] unless set; 0 turns it off). Each
    /// costs one mask of memory (25 KB for a 200k vocabulary); a hit turns a mask of
    /// a hundred scattered token-set chunks into one copy. Masks are exact either way.
    pub fn set_mask_cache_slots(&mut self, slots: usize) {
        self.walk.cache.set_slots(slots);
    }

    /// Sets how many `(stack node, automaton state)` pairs a mask walk steps before it
    /// starts over as a subset walk, which steps each stack node once with the set of
    /// automaton states that reach it ([`crate::glr::SUBSET_WALK_AFTER`], 0, unless set;
    /// 0: always; `u32::MAX`: never). Only speed differs: the pair walk can be faster on
    /// plain stacks, the subset walk is on ambiguous ones (C after a run of `-` signs:
    /// 400 µs a mask → 20 µs). Once a walk has switched on a stack that forks, the next
    /// ones start as subset walks until the stack's remembered nodes are removed (a
    /// rollback). Clones keep the setting.
    pub fn set_subset_walk_after(&mut self, pairs: u32) {
        self.walk.set_subset_walk_after(pairs);
    }

    /// Sets whether the subset walk remembers, from one mask to the next, what it
    /// collects below each stack node it steps with a set of automaton states (the
    /// default: the next mask steps only the nodes above them), or steps every node
    /// reached each time. Only speed differs; for A/B measurements. Clones keep the
    /// setting.
    pub fn set_subset_memo(&mut self, on: bool) {
        self.walk.set_subset_memo(on);
    }

    /// Sets whether sparse token sets (a few hundred tokens spread over the vocabulary,
    /// such as C's "tokens that begin with `+=`") are OR-ed into masks as the words
    /// they set (the default) or as whole chunks of words, as dense ones are. Only
    /// speed differs; for A/B measurements (`benches/examples/mask_cache_ab.rs`).
    /// Clones keep the setting.
    pub fn set_sparse_pairs(&mut self, on: bool) {
        self.walk.set_sparse_pairs(on);
    }

    /// Sets whether masks use the unions the engine keeps for its matchers (the
    /// default, with sparse pairs on): a mask of many chunks that missed this
    /// matcher's cache is copied whole when any matcher of the engine made it before,
    /// and a mask's dense token sets (those not OR-ed as pairs: a quarter or more of
    /// the words they cover are nonzero, like C's sets that span the whole
    /// vocabulary) as one union; or whether every mask is written and OR-ed. The
    /// engine keeps at most [`crate::glr::MAX_KEPT_UNION_BYTES`] of unions. Only speed
    /// differs; for A/B measurements. Clones keep the setting.
    pub fn set_kept_unions(&mut self, on: bool) {
        self.walk.set_kept_unions(on);
    }

    /// How many recent masks the matcher keeps ([`Matcher::set_mask_cache_slots`]).
    pub fn mask_cache_slots(&self) -> usize {
        self.walk.cache.slots()
    }

    /// Commits that [`Matcher::rollback`] can undo now.
    pub fn rollback_available(&self) -> usize {
        self.session.rollback_available()
    }

    /// Back to the start of input, keeping all buffers.
    pub fn reset(&mut self) {
        self.state.reset(&self.engine.tables());
        self.session.clear();
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Commits a token; a rejected token is an error that leaves the matcher unchanged.
    pub fn commit(&mut self, token: u32) -> Result<(), MatchError> {
        let engine = &self.engine;
        let mut rec = GlrRecognizer {
            tables: engine.tables(),
            state: &mut self.state,
        };
        self.session.commit(&mut rec, engine.vocab(), token)
    }

    /// Commits forced bytes (a prompt continuation, forced text); all or nothing.
    pub fn commit_bytes(&mut self, bytes: &[u8]) -> Result<(), MatchError> {
        let mut rec = GlrRecognizer {
            tables: self.engine.tables(),
            state: &mut self.state,
        };
        self.session.commit_bytes(&mut rec, bytes)
    }

    /// Undoes the last `n` commits (at most [`Matcher::rollback_available`]).
    pub fn rollback(&mut self, n: usize) -> Result<(), MatchError> {
        let mut rec = GlrRecognizer {
            tables: self.engine.tables(),
            state: &mut self.state,
        };
        self.session.rollback(&mut rec, n)
    }

    /// Whether the committed bytes form a sentence (EOS allowed). `false` also where
    /// deciding it needed more GLR work than [`Matcher::set_max_step_work`] allows:
    /// [`Matcher::accepting`] tells the two apart.
    pub fn is_accepting(&self) -> bool {
        self.state.is_accepting(&self.engine.tables())
    }

    /// [`Matcher::is_accepting`], with a work limit named: the limit's error where the
    /// check needed more GLR work than one step may take (its `false` would say nothing
    /// about the text), as committing EOS reports it.
    pub fn accepting(&self) -> Result<bool, MatchError> {
        self.named_work_limit(self.is_accepting())
    }

    /// `answer` from a check of the GLR state, or the work limit that cut it short: a
    /// check that fails clears the flag first and sets it only for its own work.
    fn named_work_limit(&self, answer: bool) -> Result<bool, MatchError> {
        match self.state.work_limit_hit() {
            Some(limit) if !answer => Err(limit.into()),
            _ => Ok(answer),
        }
    }

    /// Whether EOS has been committed.
    pub fn is_finished(&self) -> bool {
        self.session.finished()
    }

    /// Bytes committed so far.
    pub fn bytes_consumed(&self) -> usize {
        self.state.bytes_consumed()
    }

    /// Whether `bytes` could be committed now (the matcher is unchanged): what
    /// [`Matcher::commit_bytes`] would do, so nothing after EOS.
    pub fn accepts_bytes(&mut self, bytes: &[u8]) -> bool {
        if self.session.finished() {
            return false;
        }
        let tables = self.engine.tables();
        let mut rec = GlrRecognizer {
            tables,
            state: &mut self.state,
        };
        let ok = crate::ByteRecognizer::push_bytes(&mut rec, bytes);
        if ok {
            crate::ByteRecognizer::pop_bytes(&mut rec, bytes.len());
        }
        ok
    }

    /// [`Matcher::accepts_bytes`], with a work limit named (as [`Matcher::accepting`]):
    /// the limit's error where a byte needed more GLR work than the matcher allows, so
    /// that `false` means the text refuses them.
    pub fn try_accepts_bytes(&mut self, bytes: &[u8]) -> Result<bool, MatchError> {
        // After EOS nothing is pushed, and the flag is an earlier check's.
        if self.session.finished() {
            return Ok(false);
        }
        let answer = self.accepts_bytes(bytes);
        self.named_work_limit(answer)
    }

    /// Writes the allowed next tokens into `mask` (little-endian `u32` words, token `i`
    /// is bit `i % 32` of word `i / 32`), EOS included when the input so far is a
    /// sentence.
    ///
    /// The compiled path does no GLR work, so no work limit applies to it. At a
    /// boundary the compiler left to the token-trie walk (`stackmask info` counts
    /// them; no shipped grammar has one), the walk parses each token's bytes, and a
    /// work limit that cuts one leaves the tokens behind it out: [`Matcher::try_fill_mask`]
    /// names the limit instead.
    ///
    /// # Panics
    ///
    /// If `mask` has fewer than `engine.mask_words()` words.
    pub fn fill_mask(&mut self, mask: &mut [u32]) {
        // The mask without the cut tokens is what this signature can give; callers
        // that set work limits use `try_fill_mask`.
        let _ = self.try_fill_mask(mask);
    }

    /// [`Matcher::fill_mask`], with a work limit named: the limit's error where one cut
    /// a check of the token-trie walk (the mask then lacks the tokens behind it and is
    /// not the step's mask). The matcher is unchanged either way.
    ///
    /// # Panics
    ///
    /// If `mask` has fewer than `engine.mask_words()` words.
    pub fn try_fill_mask(&mut self, mask: &mut [u32]) -> Result<(), MatchError> {
        let words = self.engine.mask_words();
        assert!(
            mask.len() >= words,
            "mask has {} words, needs {words}",
            mask.len()
        );
        if self.session.finished() {
            mask.fill(0);
            return Ok(());
        }
        mask[words..].fill(0);
        let low_water = self.state.take_gss_low_water();
        if !self.walk.fill(
            &self.state,
            low_water,
            &self.engine.parser_dwa(),
            self.engine.sparse_weights(),
            self.engine.kept_unions(),
            &mut mask[..words],
        ) {
            // A boundary the compiler left to the trie walk (past its budget).
            return self.fill_mask_by_trie_walk(mask);
        }
        Ok(())
    }

    /// The mask by walking the token trie over the GLR parser (milliseconds): what
    /// [`Matcher::try_fill_mask`] does at a boundary the compiler left to the walk, and
    /// the same mask as it everywhere else. The walk parses each token's bytes under the
    /// matcher's work limits, from its work budget as it stands (put back after each);
    /// `Err` names a limit that cut a check, and the mask then lacks the tokens behind
    /// it. The matcher is unchanged either way.
    ///
    /// # Panics
    ///
    /// If `mask` has fewer than `engine.mask_words()` words.
    pub fn fill_mask_by_trie_walk(&mut self, mask: &mut [u32]) -> Result<(), MatchError> {
        if self.session.finished() {
            mask.fill(0);
            return Ok(());
        }
        let engine = self.engine.clone();
        let credit = self.state.work_credit();
        let mut rec = SpeculativeGlr {
            glr: GlrRecognizer {
                tables: engine.tables(),
                state: &mut self.state,
            },
            credits: Vec::new(),
        };
        let cut = trie_walk::fill_mask(
            &mut rec,
            engine.trie(),
            engine.meta().vocab_len as usize,
            engine.meta().eos,
            mask,
        );
        self.state.restore_work_credit(credit);
        match cut {
            Some(limit) => Err(limit.into()),
            None => Ok(()),
        }
    }
}

/// The GLR recognizer as the token-trie walk drives it: each token's bytes are parsed
/// from the matcher's state as a commit of them would be, so the work budget is put
/// back as the walk undoes bytes. The walk pushes and pops up to a million bytes; the
/// work they did would otherwise fill or drain the budget of the parse, and judge a
/// token by what the tokens walked before it spent.
struct SpeculativeGlr<'t, 's> {
    glr: GlrRecognizer<'t, 's>,
    /// The budget's credit before each byte still pushed.
    credits: Vec<u64>,
}

impl crate::ByteRecognizer for SpeculativeGlr<'_, '_> {
    fn push_byte(&mut self, byte: u8) -> bool {
        let before = self.glr.state.work_credit();
        let pushed = self.glr.push_byte(byte);
        if pushed {
            self.credits.push(before);
        } else {
            self.glr.state.restore_work_credit(before);
        }
        pushed
    }
    fn pop_bytes(&mut self, n: usize) {
        self.glr.pop_bytes(n);
        if n == 0 {
            return;
        }
        let keep = self.credits.len() - n;
        self.glr.state.restore_work_credit(self.credits[keep]);
        self.credits.truncate(keep);
    }
    fn bytes_consumed(&self) -> usize {
        self.glr.bytes_consumed()
    }
    fn is_accepting(&self) -> bool {
        self.glr.is_accepting()
    }
    fn over_work_limit(&self) -> Option<crate::glr::WorkLimit> {
        self.glr.over_work_limit()
    }
}

/// Leaves the matcher's buffers to its engine for the next [`Matcher::new`].
impl Drop for Matcher {
    fn drop(&mut self) {
        let parts = MatcherParts {
            state: std::mem::replace(&mut self.state, GlrState::detached()),
            session: std::mem::replace(&mut self.session, Session::detached()),
            walk: std::mem::take(&mut self.walk),
        };
        self.engine.matcher_pool().put(parts);
    }
}

/// Copies the parse, its rollback window and every setting. The copy takes the
/// buffers a dropped matcher of the same engine left, if any (module
/// `matcher_pool`), and copies into them: then it allocates nothing and its first
/// masks cost what warm ones do. Otherwise the mask walk's buffers start empty and
/// warm on the copy's first masks.
impl Clone for Matcher {
    fn clone(&self) -> Self {
        let (state, session, walk) = match self.engine.matcher_pool().take() {
            Some(MatcherParts {
                mut state,
                mut session,
                mut walk,
            }) => {
                state.clone_from(&self.state);
                session.clone_from(&self.session);
                walk.adopt_settings_of(&self.walk);
                (state, session, walk)
            }
            None => (
                self.state.clone(),
                self.session.clone(),
                self.walk.with_empty_buffers(),
            ),
        };
        Matcher {
            engine: self.engine.clone(),
            state,
            session,
            walk,
        }
    }
}
