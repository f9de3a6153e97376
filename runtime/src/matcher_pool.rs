//! The buffers of dropped matchers, kept by their engine for the next `Matcher::new`
//! or `Matcher::clone`.
//!
//! A serving stack starts a matcher per request and drops it at the end. A new
//! matcher's buffers (the GSS, the mask walk's per-weight table, its memo, the mask
//! cache's 25 KB slots) are allocated and first touched by its first masks and
//! commits, which made those calls several times slower than the same calls of a
//! matcher that was `reset()`: over MaskBench's valid instances, one fresh matcher
//! each, get_mask's p99 was 10 µs against 6 µs with a reset one. So a dropped
//! matcher leaves its buffers here, and `Matcher::new` takes them back, reset to the
//! start of input with every setting at its default: a new matcher is then a reset
//! one, and allocates nothing once the pool holds buffers.
//!
//! A clone (beam search, parallel sampling) takes a set the same way and copies its
//! original's parse, rollback window and settings into it, so a beam that ends and
//! another that starts trade buffers instead of freeing and allocating them.
//!
//! Nothing a matcher parsed survives: the state is reset as `Matcher::reset` resets
//! it (the walk's memo forgets every stack node, since the stack's low-water mark
//! starts over), or a clone's copy replaces it (and the walk's memo is emptied: the
//! copied stack's low-water mark says nothing about the stack the memo was of). What
//! the mask cache keeps does survive, and stays exact: a stored mask is the union of
//! the token sets its key lists, a function of the engine alone, and one pool serves
//! one engine.
//!
//! Bounded: at most [`MAX_POOLED_MATCHERS`] sets of buffers, and none whose parse state holds
//! more than [`MAX_POOLED_STATE_BYTES`] (a matcher with unlimited rollback over a long
//! document): those are freed as before.

use crate::glr::{DwaWalk, GlrState};
use crate::session::Session;
use std::sync::Mutex;

/// Sets of buffers an engine keeps: a request's worth for this many concurrent
/// requests ending at once. Each is about half a megabyte once warm (the mask cache's
/// 8 slots of 25 KB, the walk's memo, the GSS of a nesting depth's worth).
pub const MAX_POOLED_MATCHERS: usize = 16;

/// The most parse-state bytes a kept set of buffers may hold.
pub const MAX_POOLED_STATE_BYTES: usize = 4 << 20;

/// What a matcher owns besides its engine.
#[derive(Debug)]
pub(crate) struct MatcherParts {
    pub state: GlrState,
    pub session: Session,
    pub walk: DwaWalk,
}

/// An engine's kept buffers.
#[derive(Debug, Default)]
pub(crate) struct MatcherPool {
    kept: Mutex<Vec<MatcherParts>>,
}

impl MatcherPool {
    /// Buffers a dropped matcher left, if any (as they were left: the caller resets them).
    pub fn take(&self) -> Option<MatcherParts> {
        // A panic while the lock was held leaves a consistent Vec (pushes and pops
        // are single calls), so a poisoned lock is still usable.
        self.kept.lock().unwrap_or_else(|e| e.into_inner()).pop()
    }

    /// Keeps `parts` for a later matcher, unless the pool is full or they hold more
    /// than [`MAX_POOLED_STATE_BYTES`] of parse state (then they are freed).
    pub fn put(&self, parts: MatcherParts) {
        if parts.state.retained_bytes() > MAX_POOLED_STATE_BYTES {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() < MAX_POOLED_MATCHERS {
            kept.push(parts);
        }
    }

    /// Sets of buffers kept now.
    pub fn len(&self) -> usize {
        self.kept.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}
