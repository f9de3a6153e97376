//! Bitmask arrays shared with Python without copying: numpy int32 arrays, and torch
//! tensors through `Tensor.numpy()` (which shares the CPU tensor's memory).
//!
//! A bitmask is `(batch, words)` int32 with `words >= ceil(vocab_size / 32)` (vLLM pads
//! the vocabulary); token `i` is bit `i % 32` of word `i / 32` (DESIGN.md §1). Words past
//! the vocabulary are written as zeros.

use numpy::{PyArray1, PyArray2, PyArrayDescrMethods, PyArrayMethods, PyUntypedArrayMethods};
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

/// A bitmask as a writable 2-D int32 C-contiguous array (a 1-D array is one row).
pub enum Rows<'py> {
    /// `(batch, words)`.
    Two(Bound<'py, PyArray2<i32>>),
    /// `(words,)`.
    One(Bound<'py, PyArray1<i32>>),
}

impl<'py> Rows<'py> {
    /// Checks dtype, dimensions, contiguity and writability of a bitmask.
    pub fn new(obj: &Bound<'py, PyAny>, min_words: usize) -> PyResult<Self> {
        let arr = as_numpy(obj, "bitmask")?;
        let rows = if let Ok(a) = arr.cast::<PyArray2<i32>>() {
            Rows::Two(a.clone())
        } else if let Ok(a) = arr.cast::<PyArray1<i32>>() {
            Rows::One(a.clone())
        } else if let Ok(a) = arr.cast::<numpy::PyUntypedArray>() {
            if a.dtype().is_equiv_to(&numpy::dtype::<i32>(arr.py())) {
                return Err(PyValueError::new_err(format!(
                    "bitmask must be 1-D or 2-D, got {} dimensions",
                    a.ndim()
                )));
            }
            return Err(dtype_error(&arr, "bitmask", "int32"));
        } else {
            return Err(dtype_error(&arr, "bitmask", "int32"));
        };
        let (contiguous, words) = match &rows {
            Rows::Two(a) => (a.is_c_contiguous(), a.shape()[1]),
            Rows::One(a) => (a.is_c_contiguous(), a.shape()[0]),
        };
        if !contiguous {
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
        Ok(rows)
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            Rows::Two(a) => a.shape()[0],
            Rows::One(_) => 1,
        }
    }

    /// Words per row.
    pub fn words(&self) -> usize {
        match self {
            Rows::Two(a) => a.shape()[1],
            Rows::One(a) => a.shape()[0],
        }
    }

    /// Errors unless `index` is a row.
    pub fn check_index(&self, index: usize) -> PyResult<()> {
        if index >= self.len() {
            return Err(PyValueError::new_err(format!(
                "index {index} is out of range for a bitmask of {} rows",
                self.len()
            )));
        }
        Ok(())
    }

    /// Runs `f` on the whole array as `u32` words, holding numpy's write borrow (which
    /// refuses arrays that are read-only or already borrowed elsewhere in Rust).
    pub fn with_words<R>(&self, f: impl FnOnce(&mut [u32]) -> R) -> PyResult<R> {
        let mut borrowed;
        let mut borrowed1;
        let slice: &mut [i32] = match self {
            Rows::Two(a) => {
                borrowed = a.try_readwrite().map_err(writable_error)?;
                borrowed.as_slice_mut().map_err(contiguity_error)?
            }
            Rows::One(a) => {
                borrowed1 = a.try_readwrite().map_err(writable_error)?;
                borrowed1.as_slice_mut().map_err(contiguity_error)?
            }
        };
        Ok(f(bytemuck::cast_slice_mut(slice)))
    }
}

fn writable_error(e: numpy::BorrowError) -> PyErr {
    PyValueError::new_err(format!("bitmask is not writable: {e}"))
}

fn contiguity_error(e: numpy::AsSliceError) -> PyErr {
    PyValueError::new_err(format!("bitmask must be C-contiguous: {e}"))
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
    let (batch, vocab, ndim) = {
        let a = logits.cast::<numpy::PyUntypedArray>().map_err(|_| {
            PyTypeError::new_err("logits must be a numpy array (or a torch tensor)")
        })?;
        let s = a.shape();
        match s.len() {
            1 => (1, s[0], 1),
            2 => (s[0], s[1], 2),
            n => {
                return Err(PyValueError::new_err(format!(
                    "logits must be 1-D or 2-D, got {n} dimensions"
                )))
            }
        }
    };
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
    mask.with_words(|bits| -> PyResult<()> {
        let bits: &[u32] = bits;
        macro_rules! apply {
            ($t:ty) => {{
                let mut guard;
                let mut guard1;
                let data: &mut [$t] = if ndim == 2 {
                    let a = logits.cast::<PyArray2<$t>>()?;
                    guard = a.try_readwrite().map_err(|e| {
                        PyValueError::new_err(format!("logits are not writable: {e}"))
                    })?;
                    guard
                        .as_slice_mut()
                        .map_err(|_| PyValueError::new_err("logits must be C-contiguous"))?
                } else {
                    let a = logits.cast::<PyArray1<$t>>()?;
                    guard1 = a.try_readwrite().map_err(|e| {
                        PyValueError::new_err(format!("logits are not writable: {e}"))
                    })?;
                    guard1
                        .as_slice_mut()
                        .map_err(|_| PyValueError::new_err("logits must be C-contiguous"))?
                };
                py.detach(|| apply_rows(data, vocab, bits, words, &rows, <$t>::NEG_INFINITY));
                Ok(())
            }};
        }
        if logits.cast::<PyArray2<f32>>().is_ok() || logits.cast::<PyArray1<f32>>().is_ok() {
            apply!(f32)
        } else if logits.cast::<PyArray2<f64>>().is_ok() || logits.cast::<PyArray1<f64>>().is_ok() {
            apply!(f64)
        } else {
            Err(dtype_error(logits, "logits", "float32 or float64"))
        }
    })?
}
