//! `Matcher`: one decoding session over a `Grammar`, with the operations serving stacks
//! call per request (accept, validate, rollback, fill a bitmask row, jump-forward).
//!
//! Every commit goes through the runtime's `Matcher`, which leaves its state unchanged
//! when a token is rejected; mask calls release the GIL, and the batch fill runs rows in
//! parallel on rayon's pool.

use crate::bitmask::Rows;
use crate::errors::{match_error, InvalidTokenError};
use crate::grammar::Grammar;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rayon::prelude::*;
use stackmask_runtime::{MatchError, Matcher as Session};
use std::sync::{Mutex, PoisonError};

/// Forced bytes are computed one byte at a time; a grammar that forces more than this
/// many bytes in a row gets the first ones (the next call continues).
const MAX_FORCED_BYTES: usize = 1 << 16;

/// A decoding session: the committed text so far and what may come next.
#[pyclass(module = "stackmask")]
pub struct Matcher {
    // Python objects may be shared between threads, so a pyclass must be `Sync`; the
    // runtime's matcher keeps scratch buffers in a `RefCell` and is only `Send`. Every
    // method takes `&mut self` (PyO3's borrow flag makes that exclusive), so the mutex
    // is reached with `get_mut` and never locked.
    inner: Mutex<Session>,
}

impl Matcher {
    fn from_session(s: Session) -> Self {
        Matcher {
            inner: Mutex::new(s),
        }
    }

    /// The runtime matcher (no locking: `&mut self` is exclusive).
    fn session(&mut self) -> &mut Session {
        // A panic inside a mask call cannot leave the session half-updated in a way that
        // matters more than the panic itself, which Python already saw as an exception.
        self.inner.get_mut().unwrap_or_else(PoisonError::into_inner)
    }

    /// Commits a token: `Ok(false)` for a rejection (state unchanged), an error for an
    /// id outside the vocabulary.
    fn commit(&mut self, token: u32) -> PyResult<bool> {
        match self.session().commit(token) {
            Ok(()) => Ok(true),
            Err(MatchError::UnknownToken(_)) => Err(InvalidTokenError::new_err(format!(
                "token {token} is not in the vocabulary ({} tokens)",
                self.session().engine().meta().vocab_len
            ))),
            Err(e) if e.is_work_limit() => Err(match_error(e)),
            Err(_) => Ok(false),
        }
    }

    /// Commits `tokens` in order until the first rejection; returns how many were
    /// committed, and the error if an id outside the vocabulary stopped it. They stay
    /// committed only if `keep_all` and every one was accepted; otherwise they are
    /// undone and the matcher is as before.
    ///
    /// The rollback window is widened to `tokens.len()` meanwhile (so the undo cannot
    /// fail) and restored afterwards (it takes effect at the next commit).
    fn commit_prefix(&mut self, tokens: &[u32], keep_all: bool) -> (usize, PyResult<()>) {
        let window = self.session().max_rollback();
        self.session().set_max_rollback(window.max(tokens.len()));
        let mut result = (tokens.len(), Ok(()));
        for (i, &t) in tokens.iter().enumerate() {
            match self.commit(t) {
                Ok(true) => continue,
                Ok(false) => result = (i, Ok(())),
                Err(e) => result = (i, Err(e)),
            }
            break;
        }
        if !(keep_all && result.0 == tokens.len()) {
            self.session()
                .rollback(result.0)
                .expect("rolling back commits just made, within the widened window");
        }
        self.session().set_max_rollback(window);
        result
    }
}

#[pymethods]
impl Matcher {
    /// A matcher at the start of input that can roll back its last `max_rollback`
    /// commits (memory and `copy()` cost grow with it; `None`: unlimited).
    #[new]
    ///
    /// `max_step_work` bounds the parsing work one byte may take (GSS edges looked at;
    /// default 20 million): a commit past it raises `WorkLimitError` and changes nothing.
    /// `work_per_byte` and `work_burst` bound a whole parse (defaults 1,000 and 100
    /// million): over any stretch of bytes it may do at most `work_burst` plus
    /// `work_per_byte` per byte, or a commit raises `WorkLimitError` (`2**64 - 1` for
    /// both: no budget).
    ///
    /// `mask_cache` is how many recent masks are kept to be copied instead of recomputed
    /// (one mask of memory each, 25 KB for a 200k vocabulary; 0: none).
    #[pyo3(signature = (grammar, max_rollback = stackmask_runtime::DEFAULT_MAX_ROLLBACK, max_step_work = None, mask_cache = stackmask_runtime::glr::DEFAULT_MASK_CACHE_SLOTS, work_per_byte = stackmask_runtime::glr::DEFAULT_WORK_PER_BYTE, work_burst = stackmask_runtime::glr::DEFAULT_WORK_BURST))]
    fn new(
        grammar: &Grammar,
        max_rollback: Option<usize>,
        max_step_work: Option<u64>,
        mask_cache: usize,
        work_per_byte: u64,
        work_burst: u64,
    ) -> Self {
        let mut s = Session::new(grammar.engine.clone());
        s.set_max_rollback(max_rollback.unwrap_or(usize::MAX));
        s.set_mask_cache_slots(mask_cache);
        if let Some(work) = max_step_work {
            s.set_max_step_work(work);
        }
        s.set_work_budget(work_per_byte, work_burst);
        Matcher::from_session(s)
    }

    /// How many of the last commits `rollback` can undo (`None`: unlimited).
    #[getter]
    fn max_rollback(&mut self) -> Option<usize> {
        Some(self.session().max_rollback()).filter(|&w| w != usize::MAX)
    }

    /// How many recent masks are kept to be copied instead of recomputed.
    #[getter]
    fn mask_cache(&mut self) -> usize {
        self.session().mask_cache_slots()
    }

    /// Commits token `id`. Returns `False` (and changes nothing) if the grammar does not
    /// allow it here, if it is a special token other than EOS, or after EOS; raises
    /// `InvalidTokenError` for an id outside the vocabulary. EOS is accepted when the
    /// text so far is complete, and terminates the matcher.
    fn accept_token(&mut self, id: u32) -> PyResult<bool> {
        self.commit(id)
    }

    /// Commits all of `ids` or none: returns `False` and changes nothing if any is
    /// rejected.
    fn accept_tokens(&mut self, ids: Vec<u32>) -> PyResult<bool> {
        let (n, status) = self.commit_prefix(&ids, true);
        status.map(|()| n == ids.len())
    }

    /// Commits raw bytes (forced text, a jump-forward): all or nothing. Counts as one
    /// commit for `rollback`.
    fn accept_bytes(&mut self, data: &[u8]) -> PyResult<bool> {
        match self.session().commit_bytes(data) {
            Ok(()) => Ok(true),
            Err(e) if e.is_work_limit() => Err(match_error(e)),
            Err(_) => Ok(false),
        }
    }

    /// How many of `ids`, from the first, would be accepted in a row (speculative
    /// decoding); the matcher is unchanged afterwards.
    fn validate_tokens(&mut self, ids: Vec<u32>) -> PyResult<usize> {
        let (n, status) = self.commit_prefix(&ids, false);
        status.map(|()| n)
    }

    /// Undoes the last `n` accepted tokens (or `accept_bytes` calls); raises
    /// `RollbackError` if fewer were made or `n` is past the rollback window
    /// (`max_rollback`). Rolling back EOS un-terminates.
    fn rollback(&mut self, n: usize) -> PyResult<()> {
        self.session().rollback(n).map_err(match_error)
    }

    /// Writes the allowed next tokens into row `index` of `bitmask` (int32, shape
    /// `(batch, words)` or `(words,)`, C-contiguous, numpy or CPU torch tensor; no copy).
    /// Bit `i % 32` of word `i / 32` is token `i`. The GIL is released while filling.
    /// Raises `WorkLimitError` where a work limit cut the token-trie walk the compiler
    /// left a boundary to (the row is then not the mask).
    #[pyo3(signature = (bitmask, index = 0))]
    fn fill_next_token_bitmask(
        &mut self,
        py: Python<'_>,
        bitmask: &Bound<'_, PyAny>,
        index: usize,
    ) -> PyResult<()> {
        let rows = Rows::new(bitmask, self.session().engine().mask_words())?;
        rows.check_index(index)?;
        let words = rows.words();
        let session = self.session();
        rows.with_words(|all| {
            let row = &mut all[index * words..(index + 1) * words];
            py.detach(|| session.try_fill_mask(row))
        })?
        .map_err(match_error)
    }

    /// Whether the text so far is a complete sentence (EOS would be accepted). Raises
    /// `WorkLimitError` where deciding it needs more GLR work than `max_step_work`
    /// allows (a `False` would say nothing about the text).
    fn is_accepting(&mut self) -> PyResult<bool> {
        self.session().accepting().map_err(match_error)
    }

    /// Whether EOS has been accepted (nothing more can be).
    fn is_terminated(&mut self) -> bool {
        self.session().is_finished()
    }

    /// Back to the start of input (buffers are kept).
    fn reset(&mut self) {
        self.session().reset();
    }

    /// An independent copy of this matcher (same grammar, same history).
    fn copy(&mut self) -> Self {
        Matcher::from_session(self.session().clone())
    }

    fn __copy__(&mut self) -> Self {
        self.copy()
    }

    fn __deepcopy__(&mut self, _memo: &Bound<'_, PyAny>) -> Self {
        self.copy()
    }

    /// The jump-forward text: the bytes every continuation must start with (empty when
    /// the text so far is complete, i.e. EOS is possible, or after EOS). The matcher is
    /// unchanged; commit them with `accept_bytes` to skip ahead.
    fn forced_bytes<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let session = self.session();
        // A work limit met on the way is raised (`WorkLimitError`): a `false` it caused
        // would read as a byte the grammar refuses, and force the wrong bytes.
        let forced = py.detach(|| -> Result<Vec<u8>, MatchError> {
            let mut out = Vec::new();
            if session.is_finished() {
                return Ok(out);
            }
            let mut walk = || -> Result<(), MatchError> {
                while out.len() < MAX_FORCED_BYTES && !session.accepting()? {
                    let mut only = None;
                    for b in 0..=255u8 {
                        if session.try_accepts_bytes(&[b])? {
                            if only.is_some() {
                                only = None;
                                break;
                            }
                            only = Some(b);
                        }
                    }
                    let Some(b) = only else { break };
                    // A work budget spent by the checks above can refuse it: raised.
                    session.commit_bytes(&[b])?;
                    out.push(b);
                }
                Ok(())
            };
            let walked = walk();
            session
                .rollback(out.len())
                .expect("rolling back commits just made");
            walked.map(|()| out)
        });
        Ok(PyBytes::new(py, &forced.map_err(match_error)?))
    }

    /// Number of bytes committed so far.
    #[getter]
    fn bytes_consumed(&mut self) -> usize {
        self.session().bytes_consumed()
    }

    fn __repr__(&mut self) -> String {
        format!(
            "Matcher(bytes_consumed={}, accepting={}, terminated={})",
            self.session().bytes_consumed(),
            self.session().is_accepting(),
            self.session().is_finished()
        )
    }
}

/// Fills row `indices[i]` of `bitmask` for `matchers[i]`, all rows in parallel (rayon)
/// with the GIL released. A matcher may appear only once. Raises `WorkLimitError` as
/// `Matcher.fill_next_token_bitmask` does, for the first such matcher in the batch
/// (named by its index; its row is then not its mask, the others' rows are).
#[pyfunction]
#[pyo3(signature = (matchers, bitmask, indices = None))]
pub fn fill_next_token_bitmask_batch(
    py: Python<'_>,
    matchers: Vec<Bound<'_, Matcher>>,
    bitmask: &Bound<'_, PyAny>,
    indices: Option<Vec<usize>>,
) -> PyResult<()> {
    let indices = indices.unwrap_or_else(|| (0..matchers.len()).collect());
    if indices.len() != matchers.len() {
        return Err(PyValueError::new_err(format!(
            "{} matchers but {} indices",
            matchers.len(),
            indices.len()
        )));
    }
    let min_words = matchers
        .iter()
        .map(|m| m.borrow_mut().session().engine().mask_words())
        .max()
        .unwrap_or(0);
    let rows = Rows::new(bitmask, min_words)?;
    let mut seen = vec![false; rows.len()];
    for &i in &indices {
        rows.check_index(i)?;
        if std::mem::replace(&mut seen[i], true) {
            return Err(PyValueError::new_err(format!(
                "row {i} appears twice in indices"
            )));
        }
    }
    let mut guards = Vec::with_capacity(matchers.len());
    for m in &matchers {
        guards.push(m.try_borrow_mut().map_err(|_| {
            PyValueError::new_err(
                "a matcher appears twice in the batch (or is in use by another thread)",
            )
        })?);
    }
    let words = rows.words();
    rows.with_words(|all| {
        let mut slots: Vec<Option<&mut [u32]>> = all.chunks_mut(words).map(Some).collect();
        let mut work: Vec<(&mut Session, &mut [u32])> = guards
            .iter_mut()
            .zip(&indices)
            .map(|(g, &i)| (g.session(), slots[i].take().expect("indices are distinct")))
            .collect();
        // Every row is filled; the first error in batch order is raised, naming its
        // matcher (rayon's `Result` collect would stop at whichever it met first).
        let results: Vec<Result<(), MatchError>> = py.detach(|| {
            work.par_iter_mut()
                .map(|(session, row)| session.try_fill_mask(row))
                .collect()
        });
        results
    })?
    .into_iter()
    .enumerate()
    .find_map(|(i, r)| r.err().map(|e| (i, e)))
    .map_or(Ok(()), |(i, e)| {
        let err = match_error(e);
        let message = format!("matchers[{i}]: {}", err.value(py));
        Err(PyErr::from_type(err.get_type(py), message))
    })
}

/// Benchmark aid (`python/bench/overhead.py`): `iterations` Rust `fill_mask` calls on
/// row `index`, timed inside Rust with the GIL released; returns the seconds per call.
/// Compared with timing `fill_next_token_bitmask` from Python, it gives the per-call
/// cost of the Python layer.
#[pyfunction]
pub fn _rust_fill_seconds_per_call(
    py: Python<'_>,
    mut matcher: PyRefMut<'_, Matcher>,
    bitmask: &Bound<'_, PyAny>,
    index: usize,
    iterations: u32,
) -> PyResult<f64> {
    let session = matcher.session();
    let rows = Rows::new(bitmask, session.engine().mask_words())?;
    rows.check_index(index)?;
    let words = rows.words();
    rows.with_words(|all| {
        let row = &mut all[index * words..(index + 1) * words];
        py.detach(|| {
            let started = std::time::Instant::now();
            for _ in 0..iterations {
                session.fill_mask(std::hint::black_box(&mut *row));
            }
            started.elapsed().as_secs_f64() / f64::from(iterations.max(1))
        })
    })
}
