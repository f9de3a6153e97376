//! The stages wired together: grammar file + tokenizer spec → what an engine needs.
//!
//! Both the command-line tool and the tests go through these functions, so a grammar
//! is always normalized, lexed and paired with a vocabulary the same way.

use crate::budget::{BudgetError, CompileBudget, Deadline, Stage};
pub use crate::lexeme_bodies::PreparedTrie;
use crate::{frontend, lexer, vocab};
use stackmask_formats::{ByteDfa, Grammar};
use stackmask_runtime::reference::{ReferenceEngine, ReferenceError};
use std::borrow::Cow;
use std::path::Path;

/// Any failure on the way from files to an engine, with a message that names the file.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The grammar file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The grammar text is invalid.
    #[error("{0}")]
    Grammar(#[from] frontend::GrammarError),
    /// A terminal's regex could not be compiled.
    #[error("{0}")]
    Lexer(#[from] lexer::LexerError),
    /// The tokenizer could not be loaded.
    #[error("{0}")]
    Vocab(#[from] vocab::VocabError),
    /// The reference engine refused the grammar.
    #[error("{0}")]
    Reference(#[from] ReferenceError),
    /// The JSON Schema front end refused the schema (naming the keyword and pointer).
    #[error("{0}")]
    Schema(#[from] frontend::json_schema::SchemaError),
    /// The compile's time limit passed, or it was cancelled.
    #[error("{0}")]
    Budget(#[from] BudgetError),
}

/// A grammar after the front end and the lexer stage.
#[derive(Debug, Clone)]
pub struct LexedGrammar {
    /// The normalized grammar.
    pub grammar: Grammar,
    /// One DFA per terminal, in terminal-id order.
    pub dfas: Vec<ByteDfa>,
}

/// Parses, normalizes and lexes grammar text.
pub fn lex_grammar_source(source: &str, source_name: &str) -> Result<LexedGrammar, PipelineError> {
    lex_grammar_source_within(source, source_name, &Deadline::unlimited())
}

/// [`lex_grammar_source`] under a compile budget (checked before and after the front
/// end, before each terminal's DFA and while it is determinized).
pub fn lex_grammar_source_within(
    source: &str,
    source_name: &str,
    deadline: &Deadline,
) -> Result<LexedGrammar, PipelineError> {
    deadline.check(Stage::FrontEnd)?;
    let grammar = frontend::parse_grammar(source, source_name)?;
    lex_within(grammar, deadline)
}

/// The lexer stage under a budget and the default [`lexer::LexerLimits`].
fn lex_within(
    grammar: stackmask_formats::Grammar,
    deadline: &Deadline,
) -> Result<LexedGrammar, PipelineError> {
    lex_within_limits(grammar, &Default::default(), deadline)
}

/// The lexer stage of a grammar under a budget and explicit size limits (the fuzz
/// targets' small ones, so inputs end in the named limit error fast).
pub fn lex_within_limits(
    grammar: stackmask_formats::Grammar,
    limits: &lexer::LexerLimits,
    deadline: &Deadline,
) -> Result<LexedGrammar, PipelineError> {
    deadline.check(Stage::FrontEnd)?;
    let dfas = lexer::compile_lexer_within::<PipelineError>(&grammar, limits, deadline)?;
    Ok(LexedGrammar { grammar, dfas })
}

/// Builds and lexes the grammar of a JSON Schema (text); also returns the warnings
/// (unknown keywords; with `options.lenient`, the unsupported keywords not enforced).
pub fn lex_schema_source(
    text: &str,
    source_name: &str,
    options: &frontend::json_schema::SchemaOptions,
) -> Result<(LexedGrammar, Vec<frontend::json_schema::SchemaIssue>), PipelineError> {
    lex_schema_source_within(text, source_name, options, &Deadline::unlimited())
}

/// [`lex_schema_source`] under a compile budget (checked as in
/// [`lex_grammar_source_within`]).
pub fn lex_schema_source_within(
    text: &str,
    source_name: &str,
    options: &frontend::json_schema::SchemaOptions,
    deadline: &Deadline,
) -> Result<(LexedGrammar, Vec<frontend::json_schema::SchemaIssue>), PipelineError> {
    deadline.check(Stage::FrontEnd)?;
    let sg = frontend::json_schema::schema_text_to_grammar(text, source_name, options)?;
    Ok((lex_within(sg.grammar, deadline)?, sg.warnings))
}

/// Reads a grammar file as text (invalid UTF-8 is a located grammar error).
pub fn read_grammar_file(path: &Path) -> Result<String, PipelineError> {
    let bytes = std::fs::read(path).map_err(|source| PipelineError::Io {
        path: path.display().to_string(),
        source,
    })?;
    Ok(frontend::grammar_text(bytes, &path.display().to_string())?)
}

/// Reads a grammar file, then [`lex_grammar_source`].
pub fn lex_grammar_file(path: &Path) -> Result<LexedGrammar, PipelineError> {
    let source = read_grammar_file(path)?;
    lex_grammar_source(&source, &path.display().to_string())
}

/// A reference engine for a lexed grammar and a loaded tokenizer.
pub fn reference_engine(
    lexed: &LexedGrammar,
    tokenizer: &vocab::Tokenizer,
) -> Result<ReferenceEngine, PipelineError> {
    let trie = vocab::build_trie(&tokenizer.vocab);
    Ok(ReferenceEngine::new(
        &lexed.grammar,
        lexed.dfas.clone(),
        tokenizer.vocab.clone(),
        trie,
    )?)
}

/// Why the compiled path refused a grammar.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// The grammar × lexeme-adjacency product for greedy dead ends grew past its
    /// limit (see [`crate::adjacency_product`]).
    #[error("{0}")]
    Product(#[from] crate::adjacency_product::ProductLimitError),
    /// The LR automaton could not be built.
    #[error("{0}")]
    Lr(crate::lr::LrError),
    /// Too many lexer configurations.
    #[error("{0}")]
    Configs(#[from] crate::lexer_configs::ConfigLimitError),
    /// The Parser DWA could not be built within its limits.
    #[error("{0}")]
    ParserDwa(crate::parser_dwa::ParserDwaError),
    /// The compile's time limit passed, or it was cancelled (whichever stage saw it).
    #[error("{0}")]
    Budget(#[from] BudgetError),
}

impl From<crate::lr::LrError> for CompileError {
    fn from(e: crate::lr::LrError) -> Self {
        match e {
            crate::lr::LrError::Budget(b) => CompileError::Budget(b),
            e => CompileError::Lr(e),
        }
    }
}

impl From<crate::parser_dwa::ParserDwaError> for CompileError {
    fn from(e: crate::parser_dwa::ParserDwaError) -> Self {
        match e {
            crate::parser_dwa::ParserDwaError::Budget(b) => CompileError::Budget(b),
            e => CompileError::ParserDwa(e),
        }
    }
}

/// Limits of a compile; every one ends in an error that names it.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// LR(1) states (`--max-lr-states`).
    pub max_lr_states: usize,
    /// Bytes of the LR tables (`--max-table-bytes`).
    pub max_table_bytes: u64,
    /// Parser DWA limits (`--max-dwa-states`, `--max-weight-bytes`).
    pub dwa: crate::parser_dwa::ParserDwaLimits,
    /// Time limit (`--time-limit`) and cancel flag of the whole compile.
    pub budget: CompileBudget,
}

impl CompileOptions {
    /// The limits of the LR stage.
    pub fn lr_limits(&self) -> crate::lr::LrLimits {
        crate::lr::LrLimits {
            max_states: self.max_lr_states,
            max_table_bytes: self.max_table_bytes,
        }
    }
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            max_lr_states: crate::lr::DEFAULT_MAX_STATES,
            max_table_bytes: crate::lr::DEFAULT_MAX_TABLE_BYTES,
            dwa: Default::default(),
            budget: Default::default(),
        }
    }
}

/// The compiled parser of a grammar: LR(1) automaton and the flat runtime tables.
#[derive(Debug, Clone)]
pub struct CompiledParser {
    /// The grammar the tables parse: the source grammar, or where it has greedy dead
    /// ends its exact product ([`crate::adjacency_product`]), whose terminals are the
    /// source's split by where their lexemes may end. Terminal and nonterminal ids in
    /// the tables, the Parser DWA and the artifact are this grammar's.
    pub lexed: LexedGrammar,
    /// The automaton, with its conflicts for reports (its tables are moved into
    /// [`Self::tables`]`.lr`, so they are not kept twice).
    pub automaton: crate::lr::LrAutomaton,
    /// The tables the GLR runtime reads.
    pub tables: stackmask_formats::ParserTables,
}

/// Builds the compiled parser for a lexed grammar.
pub fn compile_parser(
    lexed: &LexedGrammar,
    max_lr_states: usize,
) -> Result<CompiledParser, CompileError> {
    compile_parser_within(
        lexed,
        crate::lr::LrLimits::states(max_lr_states),
        &Deadline::unlimited(),
    )
}

/// [`compile_parser`] under a compile budget (polled by every stage in it).
pub fn compile_parser_within(
    lexed: &LexedGrammar,
    limits: crate::lr::LrLimits,
    deadline: &Deadline,
) -> Result<CompiledParser, CompileError> {
    compile_parser_from(Cow::Borrowed(lexed), limits, deadline)
}

/// [`compile_parser_within`] on a grammar the caller hands over: the parser keeps it
/// instead of a copy. A large schema's terminal tables are megabytes (`kb_709`: 4,514
/// states of 256 transitions), and copying them was 2–4 ms of its serial stages.
pub fn compile_owned_parser_within(
    lexed: LexedGrammar,
    limits: crate::lr::LrLimits,
    deadline: &Deadline,
) -> Result<CompiledParser, CompileError> {
    compile_parser_from(Cow::Owned(lexed), limits, deadline)
}

/// The parser of `lexed`, borrowed (copied only if the parser keeps it as it is) or
/// owned.
fn compile_parser_from(
    lexed: Cow<'_, LexedGrammar>,
    limits: crate::lr::LrLimits,
    deadline: &Deadline,
) -> Result<CompiledParser, CompileError> {
    let product = crate::adjacency_product::product::<CompileError>(
        &lexed,
        crate::adjacency_product::DEFAULT_MAX_PRODUCT_RULES,
        deadline,
    )?;
    let (lexed, ignore_follow) = match product {
        Some(p) => (p.lexed, p.ignore_follow),
        None => (lexed.into_owned(), Vec::new()),
    };
    let mut automaton = crate::lr::build_lr_within(&lexed.grammar, limits, deadline)?;
    let g = &lexed.grammar;
    let lazy: Vec<bool> = g.terminals.iter().map(|t| t.lazy).collect();
    let mut tables = stackmask_formats::ParserTables::new(
        &lexed.dfas,
        &lazy,
        &g.ignore,
        g.allow_initial_skip,
        // Moved, not cloned: the runtime tables are the only copy (the automaton
        // keeps its conflicts and counts for reports).
        std::mem::take(&mut automaton.tables),
    );
    tables.configs = crate::lexer_configs::build_lexer_configs::<CompileError>(
        &tables,
        crate::lexer_configs::DEFAULT_MAX_CONFIGS,
        deadline,
    )?;
    set_ignore_follow(&mut tables, &ignore_follow);
    Ok(CompiledParser {
        lexed,
        automaton,
        tables,
    })
}

/// Stores the product's ignore follow sets in the tables, per merged DFA state (left
/// empty when no ignore lexeme limits its followers).
fn set_ignore_follow(
    tables: &mut stackmask_formats::ParserTables,
    ignore_follow: &[(u32, Vec<Option<Vec<u32>>>)],
) {
    use stackmask_formats::parser::NO_FOLLOW_LIMIT;
    if ignore_follow
        .iter()
        .all(|(_, per)| per.iter().all(Option::is_none))
    {
        return;
    }
    let words = tables.expected_words as usize;
    let mut index = vec![NO_FOLLOW_LIMIT; tables.dfa_flags.len()];
    let mut rows: std::collections::HashMap<&[u32], u32> = Default::default();
    let mut sets = Vec::new();
    for (t, per_state) in ignore_follow {
        let base = tables.dfa_base[*t as usize];
        // Local state q > 0 is merged state base + q - 1 (ParserTables::new).
        for (q, follow) in per_state.iter().enumerate().skip(1) {
            if let Some(follow) = follow {
                let n = rows.len() as u32;
                let row = *rows.entry(follow.as_slice()).or_insert_with(|| {
                    let mut set = vec![0u64; words];
                    for &x in follow {
                        set[x as usize / 64] |= 1 << (x % 64);
                    }
                    sets.extend(set);
                    n
                });
                index[(base + q as u32 - 1) as usize] = row;
            }
        }
    }
    tables.ignore_follow = index;
    tables.follow_sets = sets;
}

/// Any failure on the way from grammar text and a tokenizer spec to artifact bytes.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// Front end, lexer, tokenizer.
    #[error("{0}")]
    Pipeline(#[from] PipelineError),
    /// The compiled path refused the grammar or hit a limit.
    #[error("{0}")]
    Compile(#[from] CompileError),
    /// The artifact could not be encoded.
    #[error("{0}")]
    Artifact(#[from] stackmask_formats::artifact::ArtifactError),
}

/// Everything [`build_artifact_from_source`] produced along the way.
#[derive(Debug)]
pub struct Built {
    /// The source grammar, lexed (the tables parse `compiled.lexed`, which differs
    /// where the grammar has greedy dead ends).
    pub lexed: LexedGrammar,
    /// The compiled parser.
    pub compiled: CompiledParser,
    /// The tokenizer (for encoding documents).
    pub tokenizer: vocab::Tokenizer,
    /// The trie over its vocabulary.
    pub trie: stackmask_formats::TokenTrie,
    /// The Parser DWA (the compiled mask path).
    pub parser_dwa: stackmask_formats::ParserDwa,
    /// Its sizes.
    pub dwa_stats: crate::parser_dwa::ParserDwaStats,
    /// The artifact.
    pub bytes: Vec<u8>,
}

/// The whole compile: grammar text + tokenizer spec → artifact bytes. `progress` is
/// told the name of each stage as it starts, and in the Parser DWA stage how many
/// lexer boundaries are built (from the worker threads, hence `Sync`); the CLI shows
/// it, others pass `|_| {}`. The budget's clock starts here.
pub fn build_artifact_from_source(
    source: &str,
    grammar_name: &str,
    spec: &str,
    options: &CompileOptions,
    progress: impl Fn(&str) + Sync,
) -> Result<Built, BuildError> {
    let deadline = options.budget.start();
    progress("front end and lexer");
    let lexed = lex_grammar_source_within(source, grammar_name, &deadline)?;
    build_artifact_from_lexed(
        lexed,
        source,
        grammar_name,
        spec,
        options,
        &deadline,
        progress,
    )
}

/// The compile after the front end: a lexed grammar (from any front end) + tokenizer
/// spec → artifact bytes. `source` is hashed into the artifact as the grammar source.
/// `deadline` is `options.budget` started by the caller (before its front end, which it
/// bounds too); every stage polls it, and nothing is returned past it.
pub fn build_artifact_from_lexed(
    lexed: LexedGrammar,
    source: &str,
    grammar_name: &str,
    spec: &str,
    options: &CompileOptions,
    deadline: &Deadline,
    progress: impl Fn(&str) + Sync,
) -> Result<Built, BuildError> {
    progress("LR(1) automaton and lexer configurations");
    let compiled = compile_parser_within(&lexed, options.lr_limits(), deadline)?;
    progress("tokenizer");
    let tokenizer = vocab::load_tokenizer(spec).map_err(PipelineError::from)?;
    progress("token trie");
    let trie = PreparedTrie::new(vocab::build_trie(&tokenizer.vocab));
    let for_vocab = build_artifact_for_vocab(
        &compiled,
        source,
        grammar_name,
        VocabInputs {
            spec,
            vocab: &tokenizer.vocab,
            trie: &trie,
        },
        ArtifactForm::SelfContained,
        options,
        deadline,
        &progress,
    )?;
    Ok(Built {
        lexed,
        compiled,
        tokenizer,
        trie: trie.into_trie(),
        parser_dwa: for_vocab.parser_dwa,
        dwa_stats: for_vocab.dwa_stats,
        bytes: for_vocab.bytes,
    })
}

/// A vocabulary prepared for compiling: what [`build_artifact_for_vocab`] reads, loaded
/// and built once by callers that compile many grammars for one tokenizer (`stackmask
/// compile` of several schemas, Python's `Compiler`).
#[derive(Clone, Copy)]
pub struct VocabInputs<'a> {
    /// The tokenizer spec recorded in the artifact (`tiktoken:o200k_base`, …).
    pub spec: &'a str,
    /// The vocabulary masks are defined over.
    pub vocab: &'a stackmask_formats::Vocabulary,
    /// Its token trie, with the lexeme bodies walked over it so far (shared by the
    /// grammars compiled for it: make it once per vocabulary).
    pub trie: &'a PreparedTrie,
}

/// What [`build_artifact_for_vocab`] produced.
#[derive(Debug)]
pub struct BuiltForVocab {
    /// The Parser DWA (the compiled mask path).
    pub parser_dwa: stackmask_formats::ParserDwa,
    /// Its sizes.
    pub dwa_stats: crate::parser_dwa::ParserDwaStats,
    /// The artifact.
    pub bytes: Vec<u8>,
}

/// What [`build_artifact_for_vocab`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArtifactForm {
    /// A file `stackmask compile` writes and `Engine::load` reads: the grammar with its
    /// vocabulary and trie.
    SelfContained,
    /// The grammar alone, for an engine that shares its vocabulary with others
    /// (`stackmask_runtime::Engine::from_bytes_sharing`, as Python's `Compiler` builds
    /// them): it records `vocab_hash` (the vocabulary's content hash, computed once),
    /// so no grammar copies, checksums or validates the vocabulary again.
    GrammarAlone {
        /// `SharedVocab::content_hash` of the vocabulary.
        vocab_hash: u64,
    },
}

/// The stages after the LR tables for a prepared vocabulary: Terminal DWAs, templates
/// and Parser DWA, then the artifact bytes in `form`. `progress` is told each stage's
/// name, and in the Parser DWA stage how many lexer boundaries are built.
#[allow(clippy::too_many_arguments)]
pub fn build_artifact_for_vocab(
    compiled: &CompiledParser,
    source: &str,
    grammar_name: &str,
    vocab: VocabInputs<'_>,
    form: ArtifactForm,
    options: &CompileOptions,
    deadline: &Deadline,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<BuiltForVocab, BuildError> {
    progress("Terminal DWAs, templates and Parser DWA");
    let (parser_dwa, dwa_stats) = compile_mask_within(
        compiled,
        vocab.vocab,
        vocab.trie,
        options,
        deadline,
        &|done, total| {
            progress(&format!(
                "Terminal DWAs, templates and Parser DWA: {done}/{total} lexer boundaries"
            ))
        },
    )?;
    progress("artifact");
    let inputs = crate::artifact::ArtifactInputs {
        grammar_source: source,
        grammar_name,
        tokenizer: vocab.spec,
        vocab: vocab.vocab,
        trie: vocab.trie.trie(),
        parser_dwa: &parser_dwa,
        dwa_stats,
    };
    let bytes = match form {
        ArtifactForm::SelfContained => crate::artifact::build_artifact(compiled, &inputs)?,
        ArtifactForm::GrammarAlone { vocab_hash } => {
            crate::artifact::build_grammar_artifact(compiled, &inputs, vocab_hash)?
        }
    };
    Ok(BuiltForVocab {
        parser_dwa,
        dwa_stats,
        bytes,
    })
}

/// The compiled mask path of a grammar for a vocabulary: Terminal DWAs per lexer
/// boundary, templates, and their composition into the Parser DWA. The budget's clock
/// starts here. (Compiling many grammars for one vocabulary, use
/// [`compile_mask_within`] with one [`PreparedTrie`].)
pub fn compile_mask(
    compiled: &CompiledParser,
    vocab: &stackmask_formats::Vocabulary,
    trie: &stackmask_formats::TokenTrie,
    options: &CompileOptions,
) -> Result<
    (
        stackmask_formats::ParserDwa,
        crate::parser_dwa::ParserDwaStats,
    ),
    CompileError,
> {
    let deadline = options.budget.start();
    let trie = PreparedTrie::new(trie.clone());
    compile_mask_within(compiled, vocab, &trie, options, &deadline, &|_, _| {})
}

/// [`compile_mask`] on a clock already started, over a prepared trie, telling
/// `progress(done, total)` as lexer boundaries are built (from the worker threads).
pub fn compile_mask_within(
    compiled: &CompiledParser,
    vocab: &stackmask_formats::Vocabulary,
    trie: &PreparedTrie,
    options: &CompileOptions,
    deadline: &Deadline,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<
    (
        stackmask_formats::ParserDwa,
        crate::parser_dwa::ParserDwaStats,
    ),
    CompileError,
> {
    let tables = compiled.tables.view();
    let g = &compiled.lexed.grammar;
    let describe = |b: crate::terminal_dwa::Boundary| -> String {
        use crate::terminal_dwa::Boundary;
        match b {
            Boundary::Initial => "the start of input".to_string(),
            Boundary::Group { config, ignore } => {
                let mut names: Vec<&str> = tables
                    .conf_elems(config)
                    .iter()
                    .map(|&e| {
                        g.terminals[tables.dfa_term[e as usize] as usize]
                            .name
                            .as_str()
                    })
                    .collect();
                names.dedup();
                format!(
                    "{} lexemes of {} in progress",
                    if ignore { "ignore" } else { "grammar" },
                    names.join(", ")
                )
            }
        }
    };
    Ok(crate::parser_dwa::build_parser_dwa(
        tables,
        trie,
        vocab.len(),
        vocab.eos,
        options.dwa,
        deadline,
        &describe,
        progress,
    )?)
}
