//! What the fuzz targets share: the real artifacts they start from (built once per
//! process, with the same pipeline and helpers as the integration tests) and the small
//! compile limits and time limit under which arbitrary grammars must end in an answer or
//! a named error.

#![warn(missing_docs)]

/// The integration tests' helpers for real artifacts (build, take apart into
/// sections, reassemble with fresh checksums), shared rather than copied.
#[path = "../../tests/tests/compiled_support/mod.rs"]
#[allow(missing_docs)]
pub mod compiled_support;

use stackmask_compiler::budget::{CompileBudget, Deadline};
use stackmask_runtime::Engine;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// LR(1) states a fuzzed grammar may build: small, so every input ends fast, and a
/// grammar past it must end in the named limit error.
pub const MAX_LR_STATES: usize = 2_000;

/// The time limit the front-end targets compile under, as a serving stack would
/// (`--time-limit`): every stage polls it, so an input that runs much past it (the
/// fuzz runs' `-timeout` is 60 s) is a stretch of work that does not poll — a bug.
pub const TIME_LIMIT: Duration = Duration::from_secs(10);

/// A compile budget of [`TIME_LIMIT`], started now.
pub fn deadline() -> Deadline {
    CompileBudget {
        time_limit: Some(TIME_LIMIT),
        cancel: None,
    }
    .start()
}

/// The shipped grammars the matcher targets decode operations against, by input byte.
pub const GRAMMARS: [&str; 2] = ["expr", "json"];

/// `grammars/<name>.lark` compiled for the `bytes` tokenizer, once per process.
pub fn artifact(name: &str) -> &'static [u8] {
    &compiled_support::cached(name, "bytes").bytes
}

/// The engine of [`artifact`], loaded once per process.
pub fn engine(index: usize) -> Arc<Engine> {
    static ENGINES: [OnceLock<Arc<Engine>>; GRAMMARS.len()] = [OnceLock::new(), OnceLock::new()];
    ENGINES[index]
        .get_or_init(|| compiled_support::engine(artifact(GRAMMARS[index])))
        .clone()
}
