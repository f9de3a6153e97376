//! `Compiler` (a tokenizer's vocabulary prepared once: its token trie) and `Grammar` (a
//! compiled artifact, in memory or memory-mapped from a file).
//!
//! A compile runs the same stages as `stackmask compile` (front end, LR(1) tables,
//! Parser DWA, artifact) with the GIL released, then loads the artifact bytes through
//! the same validating loader as a file, so a compiled and a loaded grammar behave the
//! same.

use crate::errors::{build_error, compile_error, engine_error, pipeline_error, ArtifactError};
use crate::tokenizer::{LoadedVocab, Tokenizer};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use stackmask_compiler::artifact::write_atomically;
use stackmask_compiler::budget::{CancelFlag, Deadline};
use stackmask_compiler::frontend::json_schema::{PropertyOrder, SchemaOptions, Whitespace};
use stackmask_compiler::pipeline::PreparedTrie;
use stackmask_compiler::pipeline::{
    build_artifact_for_vocab, compile_owned_parser_within, lex_grammar_source_within,
    lex_schema_source_within, ArtifactForm, CompileOptions, LexedGrammar, VocabInputs,
};
use stackmask_compiler::vocab::build_trie;
use stackmask_formats::artifact::AlignedBytes;
use stackmask_runtime::{Engine, SharedVocab};
use std::sync::Arc;
use std::time::Instant;

/// Compiles grammars for one tokenizer; the vocabulary's token trie is built once, and
/// the lexeme bodies walked over it are shared by the grammars it compiles, as is the
/// validated vocabulary their engines read (each grammar's artifact holds the grammar
/// alone; `save` writes a self-contained file).
#[pyclass(module = "stackmask", frozen)]
pub struct Compiler {
    vocab: Arc<LoadedVocab>,
    trie: Arc<PreparedTrie>,
    shared: Arc<SharedVocab>,
}

/// A compiled grammar for one vocabulary; matchers share it (it is immutable).
#[pyclass(module = "stackmask", frozen)]
pub struct Grammar {
    /// The loaded artifact.
    pub engine: Arc<Engine>,
    compile_seconds: Option<f64>,
    /// JSON Schema keywords not enforced (`lenient=True`), as `#/pointer: message`.
    warnings: Vec<String>,
}

/// Turns a literal regex into the body of a Lark regex literal `/.../`: a `/` that is
/// not already escaped closes the literal in Lark, so it is escaped; line breaks are
/// written as escapes (a literal may not span lines without the `x` flag).
fn lark_regex_body(pattern: &str) -> Result<String, String> {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let next = chars
                    .next()
                    .ok_or_else(|| "the regex ends with a lone backslash".to_string())?;
                out.push('\\');
                out.push(next);
            }
            '/' => out.push_str("\\/"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    Ok(out)
}

/// A cancel flag for compiles: pass it as `cancel=` and call `cancel()` from another
/// thread; the compile stops at its next poll with `CompileCancelled`.
#[pyclass(module = "stackmask", frozen)]
pub struct CancelToken {
    flag: CancelFlag,
}

#[pymethods]
impl CancelToken {
    /// A token not yet cancelled.
    #[new]
    fn new() -> Self {
        CancelToken {
            flag: CancelFlag::new(),
        }
    }

    /// Cancels every compile given this token (running or started later).
    fn cancel(&self) {
        self.flag.cancel();
    }

    /// Whether `cancel()` was called.
    #[getter]
    fn cancelled(&self) -> bool {
        self.flag.is_cancelled()
    }
}

/// How often a waiting compile call takes the GIL to run Python's signal handlers.
const SIGNAL_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Runs `job` (a compile, on a clock started here) on a scoped thread while the calling
/// thread waits with the GIL released, taking it every [`SIGNAL_POLL`] to run Python's
/// signal handlers: Ctrl-C (a `KeyboardInterrupt`, or whatever a handler raises) sets
/// the compile's cancel flag, waits for the worker to stop (it polls the flag), and is
/// raised. Without this, a long compile could not be interrupted from Python at all.
fn run_interruptible<T: Send>(
    py: Python<'_>,
    options: &mut CompileOptions,
    job: impl FnOnce(&CompileOptions, &Deadline) -> PyResult<T> + Send,
) -> PyResult<T> {
    let cancel = options
        .budget
        .cancel
        .get_or_insert_with(CancelFlag::new)
        .clone();
    let deadline = options.budget.start();
    let options = &*options;
    std::thread::scope(|scope| {
        let (done, finished) = std::sync::mpsc::channel();
        let deadline = &deadline;
        let worker = scope.spawn(move || {
            // The receiver waits until the result is sent, or has returned an error
            // after the worker stopped: sending cannot fail while it matters.
            let _ = done.send(job(options, deadline));
        });
        let mut finished = finished;
        loop {
            // The receiver moves into the GIL-free closure and back (it is `Send`, a
            // reference to it is not).
            let (waited, back) = py.detach(move || (finished.recv_timeout(SIGNAL_POLL), finished));
            finished = back;
            match waited {
                Ok(result) => return result,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    // The worker ended without a result: it panicked; re-raise that.
                    match worker.join() {
                        Err(panic) => std::panic::resume_unwind(panic),
                        Ok(()) => unreachable!("the worker sends its result before it ends"),
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(interrupt) = py.check_signals() {
                        cancel.cancel();
                        // The worker stops at its next poll; its result is dropped.
                        let _ = py.detach(move || finished.recv());
                        return Err(interrupt);
                    }
                }
            }
        }
    })
}

impl Compiler {
    /// The whole compile, GIL-free: grammar text → validated engine.
    fn build(
        &self,
        source: &str,
        name: &str,
        options: &CompileOptions,
        deadline: &Deadline,
    ) -> Result<Engine, PyErr> {
        let lexed = lex_grammar_source_within(source, name, deadline).map_err(pipeline_error)?;
        self.build_lexed(lexed, source, name, options, deadline)
    }

    /// The compile after the front end (Lark or JSON Schema), GIL-free.
    fn build_lexed(
        &self,
        lexed: LexedGrammar,
        source: &str,
        name: &str,
        options: &CompileOptions,
        deadline: &Deadline,
    ) -> Result<Engine, PyErr> {
        let compiled = compile_owned_parser_within(lexed, options.lr_limits(), deadline)
            .map_err(compile_error)?;
        let vocab = &self.vocab.vocab;
        let built = build_artifact_for_vocab(
            &compiled,
            source,
            name,
            VocabInputs {
                spec: &vocab.name,
                vocab,
                trie: &self.trie,
            },
            ArtifactForm::GrammarAlone {
                vocab_hash: self.shared.content_hash(),
            },
            options,
            deadline,
            &|_| {},
        )
        .map_err(build_error)?;
        Engine::from_bytes_sharing(AlignedBytes::from_slice(&built.bytes), self.shared.clone())
            .map_err(engine_error)
    }

    fn compile(
        &self,
        py: Python<'_>,
        source: &str,
        name: &str,
        mut options: CompileOptions,
    ) -> PyResult<Grammar> {
        let started = Instant::now();
        let engine = run_interruptible(py, &mut options, |options, deadline| {
            self.build(source, name, options, deadline)
        })?;
        Ok(Grammar {
            engine: Arc::new(engine),
            compile_seconds: Some(started.elapsed().as_secs_f64()),
            warnings: Vec::new(),
        })
    }
}

/// Compile limits from keyword arguments (`None` keeps the default); `time_limit` in
/// seconds, `cancel` a [`CancelToken`]; `boundary_dwa_states` is `--boundary-dwa-states`
/// (a boundary whose automaton would pass it is left to the run-time token-trie walk).
fn options(
    max_lr_states: Option<usize>,
    max_dwa_states: Option<usize>,
    max_weight_bytes: Option<usize>,
    max_table_bytes: Option<u64>,
    boundary_dwa_states: Option<usize>,
    time_limit: Option<f64>,
    cancel: Option<PyRef<'_, CancelToken>>,
) -> PyResult<CompileOptions> {
    let mut o = CompileOptions::default();
    if let Some(secs) = time_limit {
        o.budget.time_limit = Some(std::time::Duration::try_from_secs_f64(secs).map_err(|_| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "time_limit must be a finite number of seconds, 0 or more (got {secs})"
            ))
        })?);
    }
    o.budget.cancel = cancel.map(|c| c.flag.clone());
    if let Some(v) = max_lr_states {
        o.max_lr_states = v;
    }
    if let Some(v) = max_table_bytes {
        o.max_table_bytes = v;
    }
    if let Some(v) = max_dwa_states {
        o.dwa.max_states = v;
    }
    if let Some(v) = max_weight_bytes {
        o.dwa.max_weight_bytes = v;
    }
    if let Some(v) = boundary_dwa_states {
        o.dwa.boundary_states = v;
    }
    Ok(o)
}

#[pymethods]
impl Compiler {
    /// Prepares `tokenizer`'s vocabulary (its token trie) for compiling; releases the GIL.
    #[new]
    fn new(py: Python<'_>, tokenizer: &Tokenizer) -> PyResult<Self> {
        let vocab = tokenizer.inner.clone();
        let (trie, shared) = py.detach(|| {
            // One trie for compiling and for the engines' shared vocabulary.
            let trie = Arc::new(build_trie(&vocab.vocab));
            let shared = SharedVocab::new(vocab.vocab.clone(), trie.clone());
            (trie, shared)
        });
        Ok(Compiler {
            vocab,
            trie: Arc::new(PreparedTrie::new(trie)),
            shared: Arc::new(shared.map_err(engine_error)?),
        })
    }

    /// Compiles a Lark grammar (`name` appears in error locations). The GIL is released.
    /// `boundary_dwa_states` (every compile method): a lexer boundary whose automaton
    /// would need more states is left to the run-time token-trie walk.
    /// Limits end in `CompileLimitError` naming the limit; past `time_limit` seconds,
    /// `CompileTimeLimit` (a `CompileLimitError`); `cancel.cancel()` from another thread
    /// and Ctrl-C stop the compile too (`CompileCancelled`, `KeyboardInterrupt`).
    #[pyo3(signature = (source, name = "<grammar>", *, max_lr_states = None, max_dwa_states = None, max_weight_bytes = None, max_table_bytes = None, boundary_dwa_states = None, time_limit = None, cancel = None))]
    #[allow(clippy::too_many_arguments)]
    fn compile_lark(
        &self,
        py: Python<'_>,
        source: &str,
        name: &str,
        max_lr_states: Option<usize>,
        max_dwa_states: Option<usize>,
        max_weight_bytes: Option<usize>,
        max_table_bytes: Option<u64>,
        boundary_dwa_states: Option<usize>,
        time_limit: Option<f64>,
        cancel: Option<PyRef<'_, CancelToken>>,
    ) -> PyResult<Grammar> {
        let o = options(
            max_lr_states,
            max_dwa_states,
            max_weight_bytes,
            max_table_bytes,
            boundary_dwa_states,
            time_limit,
            cancel,
        )?;
        self.compile(py, source, name, o)
    }

    /// Compiles a regex (Python `re` syntax, as in a Lark regex literal; flags go inline,
    /// e.g. `(?i)`): the sentences are the strings the regex matches in full. It must not
    /// match the empty string. `time_limit` and `cancel` as for `compile_lark`.
    #[pyo3(signature = (pattern, *, max_lr_states = None, max_dwa_states = None, max_weight_bytes = None, max_table_bytes = None, boundary_dwa_states = None, time_limit = None, cancel = None))]
    #[allow(clippy::too_many_arguments)]
    fn compile_regex(
        &self,
        py: Python<'_>,
        pattern: &str,
        max_lr_states: Option<usize>,
        max_dwa_states: Option<usize>,
        max_weight_bytes: Option<usize>,
        max_table_bytes: Option<u64>,
        boundary_dwa_states: Option<usize>,
        time_limit: Option<f64>,
        cancel: Option<PyRef<'_, CancelToken>>,
    ) -> PyResult<Grammar> {
        let body = lark_regex_body(pattern)
            .map_err(|m| crate::errors::GrammarError::new_err(format!("<regex>: {m}")))?;
        let source = format!("start: /{body}/\n");
        let o = options(
            max_lr_states,
            max_dwa_states,
            max_weight_bytes,
            max_table_bytes,
            boundary_dwa_states,
            time_limit,
            cancel,
        )?;
        self.compile(py, &source, "<regex>", o)
    }

    /// Compiles a JSON Schema (a `str` of JSON, or a `dict`) into a grammar of its
    /// valid instances in canonical form (README, "JSON Schema"). An unsupported keyword
    /// raises `GrammarError` naming it and its JSON pointer; with `lenient=True` it is
    /// listed in `Grammar.warnings` instead. `whitespace` is `"compact"` (none) or
    /// `"free"`; `property_order` is `"declared"`, `"sorted"`, `"any"` or `"any-or-declared"`. The GIL is released.
    /// `time_limit` and `cancel` as for `compile_lark`.
    #[pyo3(signature = (schema, *, lenient = false, whitespace = "compact", property_order = "declared", max_lr_states = None, max_dwa_states = None, max_weight_bytes = None, max_table_bytes = None, boundary_dwa_states = None, time_limit = None, cancel = None))]
    #[allow(clippy::too_many_arguments)]
    fn compile_json_schema(
        &self,
        py: Python<'_>,
        schema: &Bound<'_, PyAny>,
        lenient: bool,
        whitespace: &str,
        property_order: &str,
        max_lr_states: Option<usize>,
        max_dwa_states: Option<usize>,
        max_weight_bytes: Option<usize>,
        max_table_bytes: Option<u64>,
        boundary_dwa_states: Option<usize>,
        time_limit: Option<f64>,
        cancel: Option<PyRef<'_, CancelToken>>,
    ) -> PyResult<Grammar> {
        let text: String = match schema.extract::<String>() {
            Ok(text) => text,
            Err(_) => py
                .import("json")?
                .call_method1("dumps", (schema,))?
                .extract()?,
        };
        let bad = |what: &str, v: &str| {
            pyo3::exceptions::PyValueError::new_err(format!("unknown {what} {v:?}"))
        };
        let schema_options = SchemaOptions {
            lenient,
            whitespace: match whitespace {
                "compact" => Whitespace::Compact,
                "free" => Whitespace::Free,
                v => return Err(bad("whitespace", v)),
            },
            order: PropertyOrder::from_name(property_order)
                .ok_or_else(|| bad("property_order", property_order))?,
            ..Default::default()
        };
        let mut o = options(
            max_lr_states,
            max_dwa_states,
            max_weight_bytes,
            max_table_bytes,
            boundary_dwa_states,
            time_limit,
            cancel,
        )?;
        let started = Instant::now();
        let (engine, warnings) = run_interruptible(py, &mut o, |o, deadline| {
            let (lexed, issues) =
                lex_schema_source_within(&text, "<schema>", &schema_options, deadline)
                    .map_err(pipeline_error)?;
            let engine = self.build_lexed(lexed, &text, "<schema>", o, deadline)?;
            Ok::<_, PyErr>((engine, issues.iter().map(|i| i.to_string()).collect()))
        })?;
        Ok(Grammar {
            engine: Arc::new(engine),
            compile_seconds: Some(started.elapsed().as_secs_f64()),
            warnings,
        })
    }

    /// Loads an artifact file (memory-mapped) compiled for this compiler's vocabulary.
    fn load(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<Grammar> {
        load_checked(py, &path, &self.vocab.vocab)
    }

    /// The tokenizer's vocabulary size.
    #[getter]
    fn vocab_size(&self) -> usize {
        self.vocab.vocab.len()
    }
}

/// Maps `path` and checks that it was compiled for `vocab`.
fn load_checked(
    py: Python<'_>,
    path: &std::path::Path,
    vocab: &stackmask_formats::Vocabulary,
) -> PyResult<Grammar> {
    let engine = py.detach(|| {
        let engine = Engine::load(path)?;
        engine.expect_vocabulary(vocab.content_hash())?;
        Ok::<_, stackmask_runtime::EngineError>(engine)
    });
    Ok(Grammar {
        engine: Arc::new(engine.map_err(engine_error)?),
        compile_seconds: None,
        warnings: Vec::new(),
    })
}

#[pymethods]
impl Grammar {
    /// Loads an artifact file (memory-mapped, every section validated) and checks that
    /// it was compiled for `tokenizer`'s vocabulary.
    #[staticmethod]
    fn load(py: Python<'_>, path: std::path::PathBuf, tokenizer: &Tokenizer) -> PyResult<Self> {
        load_checked(py, &path, tokenizer.vocab())
    }

    /// Writes the artifact to `path` (through a temporary file and a rename).
    fn save(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
        py.detach(|| {
            let bytes = self
                .engine
                .self_contained_bytes()
                .map_err(|e| format!("{}: {e}", path.display()))?;
            write_atomically(&path, &bytes)
        })
        .map_err(ArtifactError::new_err)
    }

    /// JSON Schema keywords this grammar does not enforce (`lenient=True` compiles).
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    /// Number of token ids of the vocabulary.
    #[getter]
    fn vocab_size(&self) -> usize {
        self.engine.meta().vocab_len as usize
    }

    /// int32 words per bitmask row: `ceil(vocab_size / 32)`.
    #[getter]
    fn bitmask_words(&self) -> usize {
        self.engine.mask_words()
    }

    /// The end-of-sequence token id.
    #[getter]
    fn eos_id(&self) -> u32 {
        self.engine.meta().eos
    }

    /// Sizes of the compiled grammar, as a dict.
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = self.engine.meta();
        let ms = &m.mask_stats;
        let d = PyDict::new(py);
        d.set_item("grammar_name", &m.grammar_name)?;
        d.set_item("tokenizer", &m.tokenizer)?;
        d.set_item("vocab_size", m.vocab_len)?;
        d.set_item("eos_id", m.eos)?;
        d.set_item("terminals", m.num_terminals)?;
        d.set_item("nonterminals", m.num_nonterminals)?;
        d.set_item("lr_states", m.num_states)?;
        d.set_item("lr_conflicts", m.conflicts)?;
        d.set_item("lexer_configs", m.lexer_configs)?;
        d.set_item("boundaries", ms.boundaries)?;
        d.set_item("fallback_boundaries", ms.fallback_boundaries)?;
        d.set_item("token_classes", ms.token_classes)?;
        d.set_item("terminal_dwa_states", ms.terminal_dwa_states)?;
        d.set_item("parser_dwa_states", ms.parser_dwa_states)?;
        d.set_item("parser_dwa_transitions", ms.parser_dwa_transitions)?;
        d.set_item("token_sets", ms.weights)?;
        d.set_item("token_set_bytes", ms.weight_bytes)?;
        d.set_item("artifact_bytes", self.engine.artifact_len())?;
        d.set_item("grammar_hash", self.engine.grammar_hash())?;
        d.set_item("vocab_hash", self.engine.vocab_hash())?;
        d.set_item("compile_seconds", self.compile_seconds)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let m = self.engine.meta();
        format!(
            "Grammar(name={:?}, tokenizer={:?}, vocab_size={})",
            m.grammar_name, m.tokenizer, m.vocab_len
        )
    }
}
