//! The `stackmask._stackmask` extension module: Python bindings over the compiler and
//! the runtime (PyO3, abi3). The public Python API is re-exported, documented and typed
//! by the `stackmask` package (`python/stackmask/`).

#![warn(missing_docs)]

/// mimalloc: compiling a grammar allocates and frees many small buffers per lexer
/// boundary (the Parser DWA builder's thread sets, the Terminal DWA's class sets), and
/// glibc's allocator spent a fifth of a JSON Schema's compile in `malloc`/`free`
/// (MaskBench subset, per schema: p50 14.2 → 13.2 ms, p99 3.6 → 1.6 s; BENCHMARKS.md).
/// The library crates leave the choice to the program; in an extension module it is
/// the allocator of this module's Rust code only (`local_dynamic_tls`: loaded with
/// `dlopen`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod bitmask;
mod errors;
mod grammar;
mod matcher;
mod tokenizer;

use pyo3::prelude::*;

/// Sets the logits of tokens whose bit is clear in `bitmask` to `-inf`, in place (numpy
/// float32/float64; `stackmask.apply_token_bitmask_inplace` dispatches torch tensors to
/// torch operations). `indices`: the rows to apply (default all).
#[pyfunction]
#[pyo3(signature = (logits, bitmask, indices = None))]
fn apply_token_bitmask_inplace_numpy(
    py: Python<'_>,
    logits: &Bound<'_, PyAny>,
    bitmask: &Bound<'_, PyAny>,
    indices: Option<Vec<usize>>,
) -> PyResult<()> {
    bitmask::apply_numpy(py, logits, bitmask, indices)
}

/// The extension module.
#[pymodule]
fn _stackmask(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<tokenizer::Tokenizer>()?;
    m.add_class::<grammar::Compiler>()?;
    m.add_class::<grammar::CancelToken>()?;
    m.add_class::<grammar::Grammar>()?;
    m.add_class::<matcher::Matcher>()?;
    m.add_function(wrap_pyfunction!(matcher::fill_next_token_bitmask_batch, m)?)?;
    m.add_function(wrap_pyfunction!(apply_token_bitmask_inplace_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(matcher::_rust_fill_seconds_per_call, m)?)?;
    Ok(())
}
