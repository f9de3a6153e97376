//! The Python exception hierarchy and the conversion of every Rust error into it.
//!
//! All exceptions derive from `stackmask.StackmaskError` and carry the Rust message
//! unchanged (grammar errors keep their `file:line:col`, limits name the limit), so a
//! user sees exactly what the command-line tool would print.

use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use stackmask_compiler::budget::BudgetError;
use stackmask_compiler::pipeline::{BuildError, CompileError, PipelineError};
use stackmask_compiler::vocab::VocabError;
use stackmask_runtime::{EngineError, MatchError};

pyo3::create_exception!(
    stackmask,
    StackmaskError,
    PyException,
    "Base class of every error stackmask raises."
);
pyo3::create_exception!(
    stackmask,
    GrammarError,
    StackmaskError,
    "The grammar (or regex) is invalid or uses an unsupported feature; the message starts \
     with `name:line:col:` and the attributes `source_name`, `line`, `col` say where."
);
pyo3::create_exception!(
    stackmask,
    CompileLimitError,
    StackmaskError,
    "A compile hit one of its limits (LR states, Parser DWA states, token-set bytes, lexer \
     configurations, ...); the message names the limit."
);
pyo3::create_exception!(
    stackmask,
    CompileTimeLimit,
    CompileLimitError,
    "A compile ran past its `time_limit`; the message names the limit, its value and the \
     stage that was running. Nothing was built."
);
pyo3::create_exception!(
    stackmask,
    CompileCancelled,
    StackmaskError,
    "A compile was cancelled through its `CancelToken`; the message names the stage that \
     was running. Nothing was built."
);
pyo3::create_exception!(
    stackmask,
    TokenizerError,
    StackmaskError,
    "A tokenizer could not be loaded, or a text could not be encoded."
);
pyo3::create_exception!(
    stackmask,
    ArtifactError,
    StackmaskError,
    "An artifact file is unreadable, truncated, corrupted, or compiled for another vocabulary."
);
pyo3::create_exception!(
    stackmask,
    InvalidTokenError,
    StackmaskError,
    "A token id outside the vocabulary."
);
pyo3::create_exception!(
    stackmask,
    RollbackError,
    StackmaskError,
    "`rollback(n)` asked to undo more commits than were made."
);

pyo3::create_exception!(
    stackmask,
    WorkLimitError,
    StackmaskError,
    "A commit, `is_accepting` or `forced_bytes` needed more parsing work than the matcher allows: for one step, a byte or the check that the text is a sentence (`max_step_work`), or over a stretch of bytes (`work_burst` plus `work_per_byte` a byte): a highly ambiguous grammar; nothing was committed."
);

/// Registers the exception classes on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("StackmaskError", py.get_type::<StackmaskError>())?;
    m.add("GrammarError", py.get_type::<GrammarError>())?;
    m.add("CompileLimitError", py.get_type::<CompileLimitError>())?;
    m.add("CompileTimeLimit", py.get_type::<CompileTimeLimit>())?;
    m.add("CompileCancelled", py.get_type::<CompileCancelled>())?;
    m.add("TokenizerError", py.get_type::<TokenizerError>())?;
    m.add("ArtifactError", py.get_type::<ArtifactError>())?;
    m.add("InvalidTokenError", py.get_type::<InvalidTokenError>())?;
    m.add("RollbackError", py.get_type::<RollbackError>())?;
    m.add("WorkLimitError", py.get_type::<WorkLimitError>())?;
    Ok(())
}

/// A `GrammarError` with its location as attributes.
fn grammar_error(e: &stackmask_compiler::GrammarError) -> PyErr {
    let err = GrammarError::new_err(e.to_string());
    Python::attach(|py| {
        let value = err.value(py);
        // Setting attributes on a fresh exception instance cannot fail in practice; if it
        // did, the message still carries the location.
        let _ = value.setattr("source_name", e.source_name.clone());
        let _ = value.setattr("line", e.line);
        let _ = value.setattr("col", e.col);
    });
    err
}

/// Tokenizer errors.
pub fn vocab_error(e: VocabError) -> PyErr {
    TokenizerError::new_err(e.to_string())
}

/// Front end, lexer and tokenizer errors.
pub fn pipeline_error(e: PipelineError) -> PyErr {
    match e {
        PipelineError::Grammar(g) => grammar_error(&g),
        PipelineError::Vocab(v) => vocab_error(v),
        PipelineError::Io { .. } => ArtifactError::new_err(e.to_string()),
        PipelineError::Budget(b) => budget_error(&b),
        // A schema error names the keyword and its JSON pointer: a grammar error.
        PipelineError::Lexer(_) | PipelineError::Reference(_) | PipelineError::Schema(_) => {
            GrammarError::new_err(e.to_string())
        }
    }
}

/// Compiled-path errors: every one is a limit of the compile.
pub fn compile_error(e: CompileError) -> PyErr {
    match e {
        CompileError::Budget(b) => budget_error(&b),
        e => CompileLimitError::new_err(e.to_string()),
    }
}

/// A spent time limit or a cancel.
fn budget_error(e: &BudgetError) -> PyErr {
    match e {
        BudgetError::TimeLimit { .. } => CompileTimeLimit::new_err(e.to_string()),
        BudgetError::Cancelled { .. } => CompileCancelled::new_err(e.to_string()),
    }
}

/// Whole-compile errors.
pub fn build_error(e: BuildError) -> PyErr {
    match e {
        BuildError::Pipeline(p) => pipeline_error(p),
        BuildError::Compile(c) => compile_error(c),
        BuildError::Artifact(a) => ArtifactError::new_err(a.to_string()),
    }
}

/// Artifact loading errors.
pub fn engine_error(e: EngineError) -> PyErr {
    ArtifactError::new_err(e.to_string())
}

/// Matcher misuse that is not a plain rejection (rejections are `False` results).
pub fn match_error(e: MatchError) -> PyErr {
    match e {
        MatchError::UnknownToken(_) => InvalidTokenError::new_err(e.to_string()),
        MatchError::WorkLimit { .. } | MatchError::WorkBudget { .. } => {
            WorkLimitError::new_err(e.to_string())
        }
        MatchError::RollbackTooFar { .. } | MatchError::RollbackBeyondWindow { .. } => {
            RollbackError::new_err(e.to_string())
        }
        _ => PyValueError::new_err(e.to_string()),
    }
}
