//! Bitmask arrays shared with Python without copying: numpy int32 arrays, and torch
//! tensors through `Tensor.numpy()` (which shares the CPU tensor's memory).
//!
//! A bitmask is `(batch, words)` int32 with `words >= ceil(vocab_size / 32)` (vLLM pads
//! the vocabulary); token `i` is bit `i % 32` of word `i / 32` (DESIGN.md §1). Words past
//! the vocabulary are written as zeros.

use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// A borrowed array viewed as numpy: a numpy array as is, a CPU torch tensor through
/// its `numpy()` view (same memory). Anything else is a `TypeError`.
pub fn as_numpy<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Bound<'py, PyAny>> {
    if obj.is_instance_of::<numpy::PyUntypedArray>() {
        return Ok(obj.clone());
    }
    if obj.hasattr("__dlpack__")? && obj.hasattr("numpy")? && obj.hasattr("device")? {
        let device = obj.getattr("device")?.getattr("type")?;
        if device.extract::<String>()? != "cpu" {
            return Err(PyValueError::new_err(format!(
                "{what} must be on the CPU (got a tensor on {device}); fill a CPU tensor and \
                 copy it to the device"
            )));
        }
        return obj.call_method0("numpy");
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be a numpy array or a CPU torch tensor, got {}",
        obj.get_type().name()?
    )))
}

/// Explains a wrong dtype.
fn dtype_error(obj: &Bound<'_, PyAny>, what: &str, expected: &str) -> PyErr {
    let got = obj
        .getattr("dtype")
        .map(|d| d.to_string())
        .unwrap_or_else(|_| "?".into());
    PyTypeError::new_err(format!("{what} must have dtype {expected}, got {got}"))
}

/// Runs `f` on the elements of a C-contiguous array, holding numpy's write borrow
/// (which refuses read-only arrays and arrays already borrowed elsewhere in Rust).
fn with_elements<T: numpy::Element, R>(
    arr: &Bound<'_, PyArrayDyn<T>>,
    what: &str,
    f: impl FnOnce(&mut [T]) -> R,
) -> PyResult<R> {
    let mut rw = arr
        .try_readwrite()
        .map_err(|e| PyValueError::new_err(format!("{what} is not writable: {e}")))?;
    let elements = rw
        .as_slice_mut()
        .map_err(|e| PyValueError::new_err(format!("{what} must be C-contiguous: {e}")))?;
    Ok(f(elements))
}

/// `(rows, columns)` of a 1-D (one row) or 2-D array.
fn rows_and_columns(shape: &[usize], what: &str) -> PyResult<(usize, usize)> {
    match *shape {
        [n] => Ok((1, n)),
        [r, n] => Ok((r, n)),
        _ => Err(PyValueError::new_err(format!(
            "{what} must be 1-D or 2-D, got {} dimensions",
            shape.len()
        ))),
    }
}

/// A bitmask checked for dtype (int32), dimensions (1-D is one row), C-contiguity and
/// width.
pub struct Rows<'py> {
    array: Bound<'py, PyArrayDyn<i32>>,
    rows: usize,
    words: usize,
}

impl<'py> Rows<'py> {
    /// Checks a bitmask whose rows need at least `min_words` words.
    pub fn new(obj: &Bound<'py, PyAny>, min_words: usize) -> PyResult<Self> {
        let arr = as_numpy(obj, "bitmask")?;
        let array = arr
            .cast::<PyArrayDyn<i32>>()
            .map_err(|_| dtype_error(&arr, "bitmask", "int32"))?
            .clone();
        let (rows, words) = rows_and_columns(array.shape(), "bitmask")?;
        if !array.is_c_contiguous() {
            return Err(PyValueError::new_err(
                "bitmask must be C-contiguous (a row-major array, not a strided view)",
            ));
        }
        if words < min_words {
            return Err(PyValueError::new_err(format!(
                "bitmask rows have {words} words, the vocabulary needs {min_words} \
                 (ceil(vocab_size / 32))"
            )));
        }
        Ok(Rows { array, rows, words })
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Words per row.
    pub fn words(&self) -> usize {
        self.words
    }

    /// Errors unless `index` is a row.
    pub fn check_index(&self, index: usize) -> PyResult<()> {
        if index >= self.rows {
            return Err(PyValueError::new_err(format!(
                "index {index} is out of range for a bitmask of {} rows",
                self.rows
            )));
        }
        Ok(())
    }

    /// Runs `f` on the whole array as `u32` words (rows one after the other).
    pub fn with_words<R>(&self, f: impl FnOnce(&mut [u32]) -> R) -> PyResult<R> {
        with_elements(&self.array, "bitmask", |w| f(bytemuck::cast_slice_mut(w)))
    }
}

/// Sets the logits of tokens whose bit is clear to `-inf`, row by row (`rows` are the
/// row indices to apply, in both arrays). Columns past the bitmask are disallowed.
fn apply_rows<F: Copy + Send + Sync>(
    logits: &mut [F],
    vocab: usize,
    mask: &[u32],
    words: usize,
    rows: &[usize],
    neg_inf: F,
) {
    for &r in rows {
        let row = &mut logits[r * vocab..(r + 1) * vocab];
        let bits = &mask[r * words..(r + 1) * words];
        for (j, x) in row.iter_mut().enumerate() {
            let allowed = bits.get(j / 32).is_some_and(|w| w >> (j % 32) & 1 == 1);
            if !allowed {
                *x = neg_inf;
            }
        }
    }
}

/// `apply_token_bitmask_inplace(logits, bitmask, indices=None)` for numpy float32 or
/// float64 logits of shape `(batch, vocab)` or `(vocab,)`.
pub fn apply_numpy(
    py: Python<'_>,
    logits: &Bound<'_, PyAny>,
    bitmask: &Bound<'_, PyAny>,
    indices: Option<Vec<usize>>,
) -> PyResult<()> {
    let mask = Rows::new(bitmask, 0)?;
    let untyped = logits
        .cast::<numpy::PyUntypedArray>()
        .map_err(|_| PyTypeError::new_err("logits must be a numpy array (or a torch tensor)"))?;
    let (batch, vocab) = rows_and_columns(untyped.shape(), "logits")?;
    if mask.len() != batch {
        return Err(PyValueError::new_err(format!(
            "logits have {batch} rows but the bitmask has {}",
            mask.len()
        )));
    }
    let rows: Vec<usize> = indices.unwrap_or_else(|| (0..batch).collect());
    for &r in &rows {
        mask.check_index(r)?;
    }
    let words = mask.words();
    mask.with_words(|bits| {
        let bits: &[u32] = bits;
        if let Ok(a) = logits.cast::<PyArrayDyn<f32>>() {
            with_elements(a, "logits", |data| {
                py.detach(|| apply_rows(data, vocab, bits, words, &rows, f32::NEG_INFINITY))
            })
        } else if let Ok(a) = logits.cast::<PyArrayDyn<f64>>() {
            with_elements(a, "logits", |data| {
                py.detach(|| apply_rows(data, vocab, bits, words, &rows, f64::NEG_INFINITY))
            })
        } else {
            Err(dtype_error(logits, "logits", "float32 or float64"))
        }
    })?
}
