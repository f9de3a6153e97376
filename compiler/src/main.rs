//! `stackmask`: the command-line tool (DESIGN.md §4).
//!
//! Exit codes: 0 success; 1 the input was checked and is not accepted (a token not
//! in its mask, a document that is not a sentence, masks that disagree); 2 usage
//! errors, unreadable files, invalid grammars or artifacts.

/// mimalloc: compiling a grammar allocates and frees many small buffers per lexer
/// boundary (the Parser DWA builder's thread sets, the Terminal DWA's class sets), and
/// glibc's allocator spent a fifth of a JSON Schema's compile in `malloc`/`free`
/// (MaskBench subset, per schema: p50 14.2 → 13.2 ms, p99 3.6 → 1.6 s; BENCHMARKS.md).
/// The library crates leave the choice to the program.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use stackmask_compiler::budget::{CompileBudget, Deadline};
use stackmask_compiler::parser_dwa::ParserDwaLimits;
use stackmask_compiler::pipeline::{self, LexedGrammar};
use stackmask_compiler::{lr, vocab};
use stackmask_formats::artifact::{AlignedBytes, Artifact};
use stackmask_formats::display_name::short as short_name;
use stackmask_runtime::reference::ReferenceMatcher;
use stackmask_runtime::{Engine, Matcher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod latency;
mod mask_compare;
mod peer_drivers;

#[derive(Parser)]
#[command(
    name = "stackmask",
    version,
    about = "Grammar-constrained decoding: compile grammars to token-mask tables"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Parse and normalize a grammar, print a summary and the LR conflicts (GLR forks).
    Check {
        /// The grammar (.lark) or JSON Schema (.json).
        grammar: PathBuf,
        #[command(flatten)]
        source: SourceArgs,
        /// Limit on LR(1) states, as for `compile`: past it the grammar is refused.
        #[arg(long, default_value_t = lr::DEFAULT_MAX_STATES)]
        max_lr_states: usize,
        /// Limit on the bytes of the LR tables, as for `compile`.
        #[arg(long, value_name = "BYTES", default_value_t = lr::DEFAULT_MAX_TABLE_BYTES)]
        max_table_bytes: u64,
        /// Wall-clock limit in seconds, as for `compile` (default: none).
        #[arg(long, value_name = "SECS", value_parser = parse_time_limit)]
        time_limit: Option<Duration>,
    },
    /// Compile a grammar for a tokenizer into an artifact (.smask); or several grammars
    /// (schemas) for one tokenizer, prepared once, into a directory.
    Compile {
        /// The grammar (.lark) or JSON Schema (.json); with several, or when -o is an
        /// existing directory, each is written to DIR/STEM.smask.
        #[arg(required = true, num_args = 1..)]
        grammars: Vec<PathBuf>,
        #[command(flatten)]
        source: SourceArgs,
        /// Tokenizer: tiktoken:o200k_base | tiktoken:cl100k_base | hf:PATH/tokenizer.json | bytes.
        #[arg(long)]
        tokenizer: String,
        /// Output file; with several grammars, a directory (created if missing).
        #[arg(short, long)]
        output: PathBuf,
        /// Limit on LR(1) states; compilation stops with an error past it.
        #[arg(long, default_value_t = lr::DEFAULT_MAX_STATES)]
        max_lr_states: usize,
        /// Limit on the bytes of the LR tables (row-displacement action and goto
        /// tables, actions, expected-terminal sets); checked before they are allocated.
        #[arg(long, value_name = "BYTES", default_value_t = lr::DEFAULT_MAX_TABLE_BYTES)]
        max_table_bytes: u64,
        /// Limit on Parser DWA states (all lexer boundaries together).
        #[arg(long, default_value_t = ParserDwaLimits::default().max_states)]
        max_dwa_states: usize,
        /// Limit on the bytes of the Parser DWA's distinct token sets.
        #[arg(long, default_value_t = ParserDwaLimits::default().max_weight_bytes)]
        max_weight_bytes: usize,
        /// Limit on the Terminal DWA states of one lexer boundary.
        #[arg(long, default_value_t = ParserDwaLimits::default().max_terminal_states)]
        max_terminal_dwa_states: usize,
        /// Parser DWA states of one lexer boundary past which its masks are left to
        /// the run-time token-trie walk.
        #[arg(long, default_value_t = ParserDwaLimits::default().boundary_states)]
        boundary_dwa_states: usize,
        /// Simulation steps for one lexer boundary past which its masks are left to
        /// the run-time token-trie walk (bounds compile time).
        #[arg(long, default_value_t = ParserDwaLimits::default().boundary_steps)]
        boundary_dwa_steps: usize,
        /// Reductions one terminal may trigger before it is shifted (a chain of unit
        /// rules that long); past it the compile stops with an error naming the limit.
        #[arg(long, default_value_t = ParserDwaLimits::default().template_reductions)]
        max_template_reductions: u32,
        /// Wall-clock limit of the whole compile in seconds (fractions allowed); past
        /// it every stage stops and nothing is written (default: none).
        #[arg(long, value_name = "SECS", value_parser = parse_time_limit)]
        time_limit: Option<Duration>,
    },
    /// Print what an artifact contains: sizes, states, hashes.
    Inspect {
        /// The artifact.
        artifact: PathBuf,
    },
    /// Exit 0 if FILE is a sentence of the artifact's grammar; else exit 1 with where it fails.
    Validate {
        /// The artifact.
        artifact: PathBuf,
        /// The document.
        file: PathBuf,
        #[command(flatten)]
        work: WorkArgs,
    },
    /// Tokenize a document canonically and check, step by step, that every next token
    /// is in the mask, and that EOS is allowed at the end. Runs the compiled path on an
    /// ARTIFACT, or the reference path on --grammar and --tokenizer.
    Trace {
        /// The artifact (compiled path).
        artifact: Option<PathBuf>,
        /// The grammar (.lark), for the reference path without an artifact.
        #[arg(long, conflicts_with = "artifact", requires = "tokenizer")]
        grammar: Option<PathBuf>,
        /// Tokenizer spec; with an artifact, defaults to the one it was compiled for.
        #[arg(long)]
        tokenizer: Option<String>,
        /// The document.
        #[arg(long)]
        text: PathBuf,
        /// Print one JSON line per step (DESIGN.md §4).
        #[arg(long)]
        jsonl: bool,
        /// With an artifact: also compute every mask on the embedded reference path and
        /// fail on the first difference.
        #[arg(long, requires = "artifact")]
        check_reference: bool,
        #[command(flatten)]
        work: WorkArgs,
    },
    /// Latency percentiles (p50 … p99.9, max) of get_mask, commit, mask+commit,
    /// new matcher, clone and load, replaying the documents in DIR (tokenized
    /// canonically) and seeded random walks; one core, the first pass not recorded.
    Bench {
        /// The artifact.
        artifact: PathBuf,
        /// A directory of documents (every regular file in it), or one document.
        #[arg(long)]
        docs: PathBuf,
        /// Timed passes over the traces (after one warm-up pass).
        #[arg(long, default_value_t = 20)]
        repeats: usize,
        /// Random walks sampled from the masks, added to the documents.
        #[arg(long, default_value_t = 8)]
        walks: usize,
        /// Tokens per random walk at most.
        #[arg(long, default_value_t = 200)]
        walk_len: usize,
        /// Seed of the random walks.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print a JSON array of rows instead of the table.
        #[arg(long)]
        json: bool,
        /// Also list the N slowest get_mask calls, with the text before each.
        #[arg(long, default_value_t = 0)]
        slowest: usize,
        /// Also time, in the same loop over the same traces, a bare copy of a stored
        /// full mask (engine `write-floor`): what any engine that writes the mask pays.
        #[arg(long)]
        write_floor: bool,
        /// Also read the clock in a tight loop for SECS (above 0, at most 600) after the
        /// timed runs and say how often the machine stopped the thread, and for how long:
        /// on a shared VM no max below the longest gap can be told apart from a stall, and
        /// gaps can move the p99.9 of calls of a few microseconds.
        #[arg(long, value_name = "SECS", value_parser = parse_gap_seconds)]
        machine_gaps: Option<Duration>,
        #[command(flatten)]
        peers: PeerArgs,
    },
}

/// `bench`'s peers: drivers of other engines run over the same traces.
#[derive(clap::Args)]
struct PeerArgs {
    /// Also time a peer over the same traces: llguidance or glrmask, with the path of its
    /// driver program (ENGINE=PATH), or ENGINE alone for stackmask-ENGINE-driver next to
    /// this binary. Repeatable. Needs --grammar.
    #[arg(long = "peer", value_name = "ENGINE[=PATH]")]
    peer: Vec<String>,
    /// The Lark grammar the artifact was compiled from (the peers compile it).
    #[arg(long)]
    grammar: Option<PathBuf>,
    /// Instead of timing: compare every step's mask with each peer's, and check each
    /// difference against the reference path.
    #[arg(long, requires = "grammar")]
    compare_masks: bool,
    /// With --compare-masks: examples printed per kind of difference.
    #[arg(long, default_value_t = 3)]
    examples: usize,
    /// Keep the trace file handed to the drivers here (default: a temporary file).
    #[arg(long)]
    traces_out: Option<PathBuf>,
    /// Seconds after which a peer's driver is stopped and reported as not finished.
    #[arg(long)]
    peer_timeout: Option<u64>,
}

/// The GLR work limits of the compiled matcher `validate` and `trace` run (README
/// "Limits"): a pathologically ambiguous grammar ends in a named error within them. Not
/// given, the runtime's defaults (`glr::DEFAULT_*`, shown in `--help`). The reference
/// path of `trace --grammar` has no such limits, so there they are refused.
#[derive(clap::Args, Clone, Copy)]
struct WorkArgs {
    /// Most units of GLR work (GSS edges looked at) for one byte (max_step_work)
    /// [default: 20000000].
    #[arg(long, value_name = "UNITS")]
    max_step_work: Option<u64>,
    /// Units of work each consumed byte adds to the parse's budget (work_per_byte)
    /// [default: 1000].
    #[arg(long, value_name = "UNITS")]
    work_per_byte: Option<u64>,
    /// Most units the parse's budget holds (work_burst): over any n bytes the parse
    /// does at most work_burst + n × work_per_byte units [default: 100000000].
    #[arg(long, value_name = "UNITS")]
    work_burst: Option<u64>,
}

impl WorkArgs {
    /// Sets the limits given on `m`, the others left at their defaults.
    fn apply(self, m: &mut Matcher) {
        if let Some(max) = self.max_step_work {
            m.set_max_step_work(max);
        }
        let (per_byte, burst) = m.work_budget();
        m.set_work_budget(
            self.work_per_byte.unwrap_or(per_byte),
            self.work_burst.unwrap_or(burst),
        );
    }

    /// Whether any limit was given.
    fn any(self) -> bool {
        self.max_step_work.is_some() || self.work_per_byte.is_some() || self.work_burst.is_some()
    }
}

/// How to read the grammar file: Lark, or JSON Schema (by `.json` or `--format`).
#[derive(clap::Args)]
struct SourceArgs {
    /// Grammar format: lark | json-schema (default: json-schema for *.json, else lark).
    #[arg(long)]
    format: Option<String>,
    /// JSON Schema: unsupported keywords become listed warnings instead of errors.
    #[arg(long)]
    lenient: bool,
    /// JSON Schema: whitespace between tokens: compact (none) | free.
    #[arg(long, default_value = "compact")]
    whitespace: String,
    /// JSON Schema: property order: declared | sorted | any | any-or-declared (any
    /// order, declared order with a listed warning for objects past the any-order limit).
    #[arg(long, default_value = "declared")]
    property_order: String,
}

/// `--time-limit SECS`: a non-negative number of seconds.
fn parse_time_limit(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    Duration::try_from_secs_f64(secs)
        .map_err(|_| format!("`{s}`: the time limit must be a finite number of seconds, 0 or more"))
}

/// `--machine-gaps SECS`: a number of seconds above 0, at most 600 (a clock loop, not a
/// time limit: it always runs that long).
fn parse_gap_seconds(s: &str) -> Result<Duration, String> {
    match s.parse::<f64>() {
        Ok(secs) if secs > 0.0 && secs <= 600.0 => Ok(Duration::from_secs_f64(secs)),
        _ => Err(format!(
            "`{s}`: give a number of seconds above 0, at most 600"
        )),
    }
}

/// Reads and lexes the grammar in either format, printing schema warnings to stderr;
/// returns it with its source text. Front end and lexer poll `deadline`.
fn load_source(
    path: &Path,
    args: &SourceArgs,
    deadline: &Deadline,
) -> Result<(LexedGrammar, String), Failure> {
    use stackmask_compiler::frontend::json_schema::{PropertyOrder, SchemaOptions, Whitespace};
    let is_schema = match args.format.as_deref() {
        Some("json-schema") => true,
        Some("lark") => false,
        Some(other) => {
            return Err(format!("unknown --format `{other}` (lark | json-schema)").into())
        }
        None => path.extension().is_some_and(|e| e == "json"),
    };
    let source = pipeline::read_grammar_file(path)?;
    let name = path.display().to_string();
    if !is_schema {
        return Ok((
            pipeline::lex_grammar_source_within(&source, &name, deadline)?,
            source,
        ));
    }
    let options = SchemaOptions {
        lenient: args.lenient,
        whitespace: match args.whitespace.as_str() {
            "compact" => Whitespace::Compact,
            "free" => Whitespace::Free,
            w => return Err(format!("unknown --whitespace `{w}` (compact | free)").into()),
        },
        order: PropertyOrder::from_name(&args.property_order).ok_or_else(|| {
            let names: Vec<&str> = PropertyOrder::NAMES.iter().map(|(n, _)| *n).collect();
            format!(
                "unknown --property-order `{}` ({})",
                args.property_order,
                names.join(" | ")
            )
        })?,
        ..Default::default()
    };
    let (lexed, warnings) = pipeline::lex_schema_source_within(&source, &name, &options, deadline)?;
    for w in &warnings {
        eprintln!("warning: {name}: {w}");
    }
    Ok((lexed, source))
}

/// A failure and its exit code.
struct Failure {
    code: u8,
    message: String,
}

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure {
            code: 2,
            message: e.to_string(),
        }
    }
}

fn rejected(message: String) -> Failure {
    Failure { code: 1, message }
}

/// A refused commit of the compiled matcher: a work limit is no verdict on the text, so
/// it is an error (exit 2, as in `validate`); anything else a rejection.
fn commit_failure(e: stackmask_runtime::MatchError) -> Failure {
    if e.is_work_limit() {
        e.into()
    } else {
        rejected(e.to_string())
    }
}

/// Writes to stdout; a closed pipe (`| head`) ends the program quietly.
macro_rules! out {
    ($($arg:tt)*) => {
        if writeln!(std::io::stdout().lock(), $($arg)*).is_err() {
            std::process::exit(0);
        }
    };
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check {
            grammar,
            source,
            max_lr_states,
            max_table_bytes,
            time_limit,
        } => check(
            &grammar,
            &source,
            lr::LrLimits {
                max_states: max_lr_states,
                max_table_bytes,
            },
            time_limit,
        ),
        Command::Compile {
            grammars,
            source,
            tokenizer,
            output,
            max_lr_states,
            max_table_bytes,
            max_dwa_states,
            max_weight_bytes,
            max_terminal_dwa_states,
            boundary_dwa_states,
            boundary_dwa_steps,
            max_template_reductions,
            time_limit,
        } => compile(
            &grammars,
            &source,
            &tokenizer,
            &output,
            &pipeline::CompileOptions {
                max_lr_states,
                max_table_bytes,
                dwa: ParserDwaLimits {
                    max_states: max_dwa_states,
                    max_weight_bytes,
                    max_terminal_states: max_terminal_dwa_states,
                    boundary_states: boundary_dwa_states,
                    boundary_steps: boundary_dwa_steps,
                    template_reductions: max_template_reductions,
                },
                budget: CompileBudget {
                    time_limit,
                    cancel: None,
                },
            },
        ),
        Command::Inspect { artifact } => inspect(&artifact),
        Command::Bench {
            artifact,
            docs,
            repeats,
            walks,
            walk_len,
            seed,
            json,
            slowest,
            write_floor,
            machine_gaps,
            peers,
        } => bench(
            &artifact,
            &docs,
            &latency::BenchConfig {
                repeats,
                walks,
                walk_len,
                seed,
                write_floor,
            },
            json,
            slowest,
            &peers,
            machine_gaps,
        ),
        Command::Validate {
            artifact,
            file,
            work,
        } => validate(&artifact, &file, work),
        Command::Trace {
            artifact,
            grammar,
            tokenizer,
            text,
            jsonl,
            check_reference,
            work,
        } => match (artifact, grammar) {
            (Some(a), None) => trace_artifact(
                &a,
                tokenizer.as_deref(),
                &text,
                jsonl,
                check_reference,
                work,
            ),
            (None, Some(_)) if check_reference => Err(Failure {
                code: 2,
                message: "--check-reference compares an ARTIFACT's compiled masks with its \
                          reference path; with --grammar there is only the reference path"
                    .into(),
            }),
            (None, Some(_)) if work.any() => Err(Failure {
                code: 2,
                message: "--max-step-work, --work-per-byte and --work-burst limit the compiled \
                          path's GLR parser (an ARTIFACT); the reference path of --grammar has \
                          no such limits"
                    .into(),
            }),
            (None, Some(g)) => {
                trace_reference(&g, tokenizer.as_deref().unwrap_or_default(), &text, jsonl)
            }
            _ => Err(Failure {
                code: 2,
                message: "trace needs an ARTIFACT, or --grammar and --tokenizer".into(),
            }),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("error: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

/// Exit 0 when `compile` would get past the grammar (front end, lexer, LR tables and
/// lexer configurations under the same limits); exit 2, as `compile`, when it would not.
fn check(
    path: &Path,
    args: &SourceArgs,
    lr_limits: lr::LrLimits,
    time_limit: Option<Duration>,
) -> Result<(), Failure> {
    let deadline = CompileBudget {
        time_limit,
        cancel: None,
    }
    .start();
    let (LexedGrammar { grammar, dfas }, _) = load_source(path, args, &deadline)?;
    let nullable = grammar.nullable_nonterminals();
    out!("{}: ok", path.display());
    out!(
        "  {} terminals ({} ignored, {} lazy), {} nonterminals ({} nullable), {} rules, start {}",
        grammar.terminals.len(),
        grammar.ignore.len(),
        grammar.terminals.iter().filter(|t| t.lazy).count(),
        grammar.nonterminals.len(),
        nullable.iter().filter(|&&n| n).count(),
        grammar.rules.len(),
        grammar.nonterminals[grammar.start as usize].name,
    );
    let states: usize = dfas.iter().map(|d| d.num_states()).sum();
    out!("  lexer: {states} DFA states over {} terminals", dfas.len());
    for (i, (t, d)) in grammar.terminals.iter().zip(&dfas).enumerate() {
        let mut tags = Vec::new();
        if grammar.is_ignore(i as u32) {
            tags.push("ignore");
        }
        if t.lazy {
            tags.push("lazy");
        }
        out!(
            "    {:<24} {:>6} states  {}",
            t.name,
            d.num_states(),
            tags.join(",")
        );
    }
    let lexed = LexedGrammar { grammar, dfas };
    let started = Instant::now();
    match pipeline::compile_parser_within(&lexed, lr_limits, &deadline) {
        Ok(compiled) => {
            let t = &compiled.tables.lr;
            out!(
                "  LR(1): {} states, {} actions, {} table bytes, built in {:.1} ms; {} conflicting cells (GLR forks){}",
                t.num_states,
                t.actions.len(),
                t.view().table_bytes(),
                started.elapsed().as_secs_f64() * 1e3,
                compiled.automaton.conflicts.len(),
                if compiled.automaton.conflicts.is_empty() { "" } else { ":" }
            );
            if let Err(dead_end) =
                stackmask_compiler::adjacency::check_dead_ends(&lexed.grammar, &lexed.dfas)
            {
                let p = &compiled.lexed.grammar;
                out!("  greedy dead ends: {dead_end}");
                out!(
                    "  exact through the grammar x lexeme-adjacency product: {} terminals, {} nonterminals, {} rules",
                    p.terminals.len(),
                    p.nonterminals.len(),
                    p.rules.len()
                );
            }
            let report = compiled.automaton.conflict_report(&compiled.lexed.grammar);
            if !report.is_empty() {
                out!("{}", report.trim_end());
            }
        }
        Err(e) => {
            return Err(Failure {
                code: 2,
                message: format!("{}: `compile` would refuse it: {e}", path.display()),
            })
        }
    }
    Ok(())
}

fn spinner(msg: &str) -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(msg.to_string());
    bar.enable_steady_tick(std::time::Duration::from_millis(100));
    bar
}

/// `compile`: one grammar to one file, or several (or one into an existing directory)
/// to DIR/STEM.smask each.
fn compile(
    paths: &[PathBuf],
    args: &SourceArgs,
    spec: &str,
    output: &Path,
    options: &pipeline::CompileOptions,
) -> Result<(), Failure> {
    match paths {
        [path] if !output.is_dir() => compile_one(path, args, spec, output, options),
        _ => compile_many(paths, args, spec, output, options),
    }
}

fn compile_one(
    path: &Path,
    args: &SourceArgs,
    spec: &str,
    output: &Path,
    options: &pipeline::CompileOptions,
) -> Result<(), Failure> {
    let started = Instant::now();
    let tokenizer_file = spec.strip_prefix("hf:").map(Path::new);
    check_output(
        output,
        &[Some(path), tokenizer_file]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>(),
    )?;
    // The clock starts before the front end, which it bounds too.
    let deadline = options.budget.start();
    let (lexed, source) = load_source(path, args, &deadline)?;
    let bar = spinner("reading");
    let built = pipeline::build_artifact_from_lexed(
        lexed,
        &source,
        &path.display().to_string(),
        spec,
        options,
        &deadline,
        |stage| bar.set_message(stage.to_string()),
    );
    bar.finish_and_clear();
    let built = built?;
    check_output(output, &[path])?;
    stackmask_formats::regular_file::write_atomically(output, &built.bytes)
        .map_err(|e| format!("output {}: {e}", output.display()))?;
    let lr = &built.compiled.tables.lr;
    out!(
        "{} → {}: {:.2} MB in {:.2} s\n  {} terminals, {} LR(1) states, {} GLR forks, {} DFA states, {} lexer configurations, {} tokens, {} trie nodes",
        path.display(),
        output.display(),
        built.bytes.len() as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        built.compiled.lexed.grammar.terminals.len(),
        lr.num_states,
        built.compiled.automaton.conflicts.len(),
        built.compiled.tables.dfa_flags.len(),
        built.compiled.tables.configs.flags.len(),
        built.tokenizer.vocab.len(),
        built.trie.nodes.len()
    );
    let stats = stackmask_compiler::artifact::mask_stats(&built.dwa_stats, &built.parser_dwa);
    print_mask_stats(&stats);
    warn_fallback(path, stats.fallback_boundaries);
    Ok(())
}

/// Boundaries left to the run-time token-trie walk cost milliseconds a mask on a large
/// vocabulary, which lands in the tail latency: say so where it is decided.
fn warn_fallback(path: &Path, boundaries: u32) {
    if boundaries > 0 {
        eprintln!(
            "warning: {}: {boundaries} lexer boundaries left to the run-time token-trie walk (a mask there takes milliseconds on a large vocabulary); raise --boundary-dwa-states / --boundary-dwa-steps to compile them",
            path.display()
        );
    }
}

/// Several grammars for one tokenizer, as a serving stack compiles schemas: the
/// tokenizer is loaded and its trie built once; each grammar then has its own time limit,
/// and a failing one is reported and the others still compiled (exit 2 if any failed).
/// Ends with the compile-time percentiles per grammar, tokenizer prepared.
fn compile_many(
    paths: &[PathBuf],
    args: &SourceArgs,
    spec: &str,
    dir: &Path,
    options: &pipeline::CompileOptions,
) -> Result<(), Failure> {
    if dir.exists() && !dir.is_dir() {
        return Err(format!(
            "output {}: with several grammars the output is a directory, and this is not one",
            dir.display()
        )
        .into());
    }
    let mut outputs: Vec<PathBuf> = Vec::with_capacity(paths.len());
    for (i, path) in paths.iter().enumerate() {
        let stem = path
            .file_stem()
            .ok_or_else(|| format!("{}: not a file name", path.display()))?;
        let out = dir.join(stem).with_extension("smask");
        if let Some(j) = outputs.iter().position(|o| *o == out) {
            return Err(format!(
                "{} and {} would both be written to {}: rename one",
                paths[j].display(),
                paths[i].display(),
                out.display()
            )
            .into());
        }
        let inputs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
        check_output(&out, &inputs)?;
        outputs.push(out);
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("output {}: {e}", dir.display()))?;
    let started = Instant::now();
    let tokenizer = vocab::load_tokenizer(spec)?;
    let trie = pipeline::PreparedTrie::new(vocab::build_trie(&tokenizer.vocab));
    out!(
        "tokenizer {spec}: {} tokens, prepared once in {:.2} s",
        tokenizer.vocab.len(),
        started.elapsed().as_secs_f64()
    );
    let prepared = pipeline::VocabInputs {
        spec,
        vocab: &tokenizer.vocab,
        trie: &trie,
    };
    let mut times = Vec::with_capacity(paths.len());
    let mut failed = 0usize;
    for (path, out) in paths.iter().zip(&outputs) {
        let started = Instant::now();
        match compile_for_vocab(path, args, prepared, options) {
            Ok((bytes, fallback)) => {
                warn_fallback(path, fallback);
                let elapsed = started.elapsed();
                times.push(elapsed);
                stackmask_formats::regular_file::write_atomically(out, &bytes)
                    .map_err(|e| format!("output {}: {e}", out.display()))?;
                out!(
                    "{} → {}: {:.2} MB in {:.1} ms",
                    path.display(),
                    out.display(),
                    bytes.len() as f64 / 1e6,
                    elapsed.as_secs_f64() * 1e3
                );
            }
            Err(f) => {
                failed += 1;
                let name = path.display().to_string();
                if f.message.starts_with(&name) {
                    eprintln!("error: {}", f.message);
                } else {
                    eprintln!("error: {name}: {}", f.message);
                }
            }
        }
    }
    times.sort_unstable();
    let ms = |q: f64| -> f64 {
        // Nearest rank: the smallest time at or above fraction q of the grammars.
        let rank = ((q * times.len() as f64).ceil() as usize).clamp(1, times.len());
        times[rank - 1].as_secs_f64() * 1e3
    };
    if times.is_empty() {
        out!("compiled 0 of {} grammars", paths.len());
    } else {
        out!(
            "compiled {} of {} grammars ({failed} failed) in {:.2} s; per grammar, tokenizer prepared: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            times.len(),
            paths.len(),
            started.elapsed().as_secs_f64(),
            ms(0.5),
            ms(0.99),
            ms(1.0)
        );
    }
    if failed > 0 {
        return Err(format!("{failed} of {} grammars failed (errors above)", paths.len()).into());
    }
    Ok(())
}

/// One grammar of [`compile_many`]: front end to artifact bytes, under its own budget.
fn compile_for_vocab(
    path: &Path,
    args: &SourceArgs,
    prepared: pipeline::VocabInputs<'_>,
    options: &pipeline::CompileOptions,
) -> Result<(Vec<u8>, u32), Failure> {
    let deadline = options.budget.start();
    let (lexed, source) = load_source(path, args, &deadline)?;
    let compiled = pipeline::compile_owned_parser_within(lexed, options.lr_limits(), &deadline)?;
    let built = pipeline::build_artifact_for_vocab(
        &compiled,
        &source,
        &path.display().to_string(),
        prepared,
        pipeline::ArtifactForm::SelfContained,
        options,
        &deadline,
        &|_| {},
    )?;
    Ok((built.bytes, built.dwa_stats.fallback_boundaries as u32))
}

/// One line on the compiled mask path (`compile` and `inspect`).
fn print_mask_stats(ms: &stackmask_formats::layout::MaskStats) {
    out!(
        "  mask path: {} lexer boundaries ({} left to the trie walk), {} token classes, {} Terminal DWA states; Parser DWA {} states, {} transitions, {} token sets ({:.2} MB)",
        ms.boundaries,
        ms.fallback_boundaries,
        ms.token_classes,
        ms.terminal_dwa_states,
        ms.parser_dwa_states,
        ms.parser_dwa_transitions,
        ms.weights,
        ms.weight_bytes as f64 / 1e6
    );
}

/// Refuses an output that would destroy something: an existing path that is not a
/// regular file (a device such as `/dev/full`, a FIFO, a directory), or one of the
/// inputs. Checked before compiling, so a bad `-o` costs nothing.
fn check_output(output: &Path, inputs: &[&Path]) -> Result<(), Failure> {
    let Ok(meta) = std::fs::metadata(output) else {
        return Ok(()); // Does not exist (yet): the write creates it.
    };
    stackmask_formats::regular_file::check_regular(output)
        .map_err(|e| format!("output {}: {e}", output.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        for input in inputs {
            if let Ok(m) = std::fs::metadata(input) {
                if (m.dev(), m.ino()) == (meta.dev(), meta.ino()) {
                    return Err(format!(
                        "output {} is the input {}: refusing to overwrite it",
                        output.display(),
                        input.display()
                    )
                    .into());
                }
            }
        }
    }
    #[cfg(not(unix))]
    for input in inputs {
        if std::fs::canonicalize(input).ok() == std::fs::canonicalize(output).ok() {
            return Err(format!(
                "output {} is the input {}: refusing to overwrite it",
                output.display(),
                input.display()
            )
            .into());
        }
    }
    let _ = meta;
    Ok(())
}

fn inspect(path: &Path) -> Result<(), Failure> {
    let bytes = AlignedBytes::read_file(path)?;
    let artifact = Artifact::parse(bytes.as_bytes())?;
    let engine = Engine::from_bytes(bytes.clone())?;
    let m = engine.meta();
    out!(
        "{}: stackmask artifact v{} ({:.2} MB), written by stackmask {}",
        path.display(),
        artifact.version(),
        bytes.len() as f64 / 1e6,
        m.stackmask_version
    );
    out!(
        "  grammar   {} (hash {:016x})",
        m.grammar_name,
        artifact.grammar_hash()
    );
    out!(
        "  tokenizer {} (hash {:016x}): {} ids, EOS {}",
        m.tokenizer,
        artifact.vocab_hash(),
        m.vocab_len,
        m.eos
    );
    out!(
        "  {} terminals, {} nonterminals, {} rules; {} LR(1) states, {} GLR forks; {} lexer DFA states, {} lexer configurations",
        m.grammar.terminals.len(),
        m.grammar.nonterminals.len(),
        m.grammar.rules.len(),
        m.num_states,
        m.conflicts,
        engine.tables().dfa_flags.len(),
        m.lexer_configs
    );
    print_mask_stats(&m.mask_stats);
    out!("  sections:");
    for s in artifact.sections() {
        out!(
            "    {:<8} {:>12} bytes at offset {}",
            s.kind.to_string(),
            s.len,
            s.offset
        );
    }
    Ok(())
}

fn line_col(text: &[u8], offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = before.len()
        - before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1)
        + 1;
    (line, col)
}

/// Bytes `validate` commits at a time (each commit is all or nothing, so its bytes
/// stay undoable until it completes).
const VALIDATE_CHUNK: usize = 4096;

fn validate(artifact: &Path, file: &Path, work: WorkArgs) -> Result<(), Failure> {
    let engine = Arc::new(Engine::load(artifact)?);
    let text = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut m = Matcher::new(engine);
    work.apply(&mut m);
    // No rollback: the matcher keeps no history, so memory follows the nesting depth
    // and the chunk size, not the file size.
    m.set_max_rollback(0);
    let committed = text
        .chunks(VALIDATE_CHUNK)
        .enumerate()
        .try_for_each(|(i, chunk)| match m.commit_bytes(chunk) {
            Err(stackmask_runtime::MatchError::RejectedBytes { offset }) => {
                Err(stackmask_runtime::MatchError::RejectedBytes {
                    offset: i * VALIDATE_CHUNK + offset,
                })
            }
            other => other,
        });
    match committed {
        Err(stackmask_runtime::MatchError::RejectedBytes { offset }) => {
            let (line, col) = line_col(&text, offset);
            Err(rejected(format!("{}: rejected at byte {offset} (line {line}, column {col}): no sentence continues {:?}{}", file.display(), String::from_utf8_lossy(&text[offset.saturating_sub(20)..=offset]), trailing_ignore_hint(m.engine(), &text, work))))
        }
        Err(e) if e.is_work_limit() => {
            // Committed a chunk at a time: the work ran out within the next chunk.
            let start = m.bytes_consumed();
            let end = (start + VALIDATE_CHUNK).min(text.len());
            Err(format!("{}: in bytes {start}..{end}: {e}", file.display()).into())
        }
        Err(e) => Err(e.into()),
        Ok(()) => match m.accepting() {
            Ok(true) => {
                out!("{}: ok ({} bytes)", file.display(), text.len());
                Ok(())
            }
            Err(e) => Err(format!("{}: at its end: {e}", file.display()).into()),
            Ok(false) => {
                let (line, col) = line_col(&text, text.len());
                Err(rejected(format!(
                    "{}: incomplete at byte {} (line {line}, column {col}): every byte is allowed \
                 but the text stops before a sentence ends{}",
                    file.display(),
                    text.len(),
                    trailing_ignore_hint(m.engine(), &text, work)
                )))
            }
        },
    }
}

/// Why a text is refused (rejected in its trailing whitespace, or incomplete), when the
/// reason is the rule users trip on: it is a sentence followed by whitespace, the grammar
/// `%ignore`s lexemes, and DESIGN.md §1 allows them between two lexemes, not after the
/// last. Empty when that is not the case.
fn trailing_ignore_hint(engine: &Arc<Engine>, text: &[u8], work: WorkArgs) -> String {
    let trimmed = text.trim_ascii_end();
    if trimmed.len() == text.len() || engine.meta().grammar.ignore.is_empty() {
        return String::new();
    }
    // Under the user's work limits: the hint parses the text again.
    let mut m = Matcher::new(engine.clone());
    work.apply(&mut m);
    if m.commit_bytes(trimmed).is_err() || m.accepting() != Ok(true) {
        return String::new();
    }
    let g = &engine.meta().grammar;
    let names: Vec<String> = g
        .ignore
        .iter()
        .map(|&t| format!("`{}`", short_name(&g.terminals[t as usize].name)))
        .collect();
    format!(
        ";\n  the text is a sentence up to byte {}, then ends in {:?}: ignored lexemes ({}) may \
         come between two lexemes, never after the last one (DESIGN.md §1). A grammar that \
         allows trailing whitespace says so in its rules, e.g. `start: value WS?`",
        trimmed.len(),
        short_name(&String::from_utf8_lossy(&text[trimmed.len()..])),
        names.join(", ")
    )
}

/// FNV-1a 64 over the ascending allowed token ids, each as 4 little-endian bytes
/// (DESIGN.md §4), and the number of allowed tokens.
fn mask_hash(mask: &[u32]) -> (u64, usize) {
    let mut h: u64 = 0xcbf29ce484222325;
    let mut count = 0;
    for (w, &word) in mask.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let id = (w * 32 + bits.trailing_zeros() as usize) as u32;
            bits &= bits - 1;
            count += 1;
            for b in id.to_le_bytes() {
                h ^= b as u64;
                h = h.wrapping_mul(0x100000001b3);
            }
        }
    }
    (h, count)
}

/// The token-by-token loop shared by both paths: `mask` fills the mask for the
/// current step, `commit` commits a token.
fn run_trace(
    tokenizer: &vocab::Tokenizer,
    text: &Path,
    jsonl: bool,
    mask_words: usize,
    mut mask: impl FnMut(&mut [u32]) -> Result<(), Failure>,
    mut commit: impl FnMut(u32) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let bytes = std::fs::read(text).map_err(|e| format!("{}: {e}", text.display()))?;
    // Exactly the file's bytes: no SentencePiece dummy-prefix space before them.
    let tokens = tokenizer.encode_exact(&bytes)?;
    let eos = tokenizer.eos();
    let mut buf = vec![0u32; mask_words];
    let started = Instant::now();
    for (step, &token) in tokens.iter().chain(std::iter::once(&eos)).enumerate() {
        mask(&mut buf)?;
        let (hash, allowed) = mask_hash(&buf);
        if jsonl {
            out!("{{\"step\":{step},\"token\":{token},\"allowed\":{allowed},\"hash\":\"{hash:016x}\"}}");
        }
        if buf
            .get(token as usize / 32)
            .is_none_or(|w| w & (1 << (token % 32)) == 0)
        {
            let what = if token == eos {
                "EOS".to_string()
            } else {
                format!(
                    "token {token} {:?}",
                    String::from_utf8_lossy(tokenizer.vocab.token_bytes(token))
                )
            };
            return Err(rejected(format!(
                "step {step}: {what} is not in the mask ({allowed} tokens allowed)"
            )));
        }
        commit(token).map_err(|f| Failure {
            message: format!("step {step}: {}", f.message),
            ..f
        })?;
    }
    if !jsonl {
        out!(
            "{}: {} tokens, every token in its mask, EOS allowed at the end ({:.1} ms)",
            text.display(),
            tokens.len(),
            started.elapsed().as_secs_f64() * 1e3
        );
    }
    Ok(())
}

fn trace_reference(grammar: &Path, spec: &str, text: &Path, jsonl: bool) -> Result<(), Failure> {
    let lexed = pipeline::lex_grammar_file(grammar)?;
    let tokenizer = vocab::load_tokenizer(spec)?;
    let engine = Arc::new(pipeline::reference_engine(&lexed, &tokenizer)?);
    let matcher = std::cell::RefCell::new(ReferenceMatcher::new(engine));
    run_trace(
        &tokenizer,
        text,
        jsonl,
        tokenizer.vocab.mask_words(),
        |m| {
            matcher.borrow_mut().fill_mask(m);
            Ok(())
        },
        |t| {
            matcher
                .borrow_mut()
                .commit(t)
                .map_err(|e| rejected(e.to_string()))
        },
    )
}

fn trace_artifact(
    artifact: &Path,
    spec: Option<&str>,
    text: &Path,
    jsonl: bool,
    check_reference: bool,
    work: WorkArgs,
) -> Result<(), Failure> {
    let engine = Arc::new(Engine::load(artifact)?);
    let spec = spec.unwrap_or(&engine.meta().tokenizer).to_string();
    let tokenizer = vocab::load_tokenizer(&spec)?;
    engine.expect_vocabulary(tokenizer.vocab.content_hash())?;
    let reference = if check_reference {
        Some(ReferenceMatcher::new(engine.reference()?))
    } else {
        None
    };
    let mut matcher = Matcher::new(engine.clone());
    work.apply(&mut matcher);
    let state = std::cell::RefCell::new((
        matcher,
        reference,
        vec![0u32; engine.mask_words()],
        Vec::<u8>::new(),
    ));
    let step = std::cell::Cell::new(0usize);
    let vocab = &tokenizer.vocab;
    let eos = tokenizer.eos();
    let describe = |ids: Vec<u32>| -> String {
        let shown: Vec<String> = ids
            .iter()
            .take(20)
            .map(|&id| {
                if id == eos {
                    format!("{id} EOS")
                } else {
                    format!("{id} {:?}", String::from_utf8_lossy(vocab.token_bytes(id)))
                }
            })
            .collect();
        let more = ids.len().saturating_sub(20);
        format!(
            "[{}{}]",
            shown.join(", "),
            if more > 0 {
                format!(", … {more} more")
            } else {
                String::new()
            }
        )
    };
    run_trace(
        &tokenizer,
        text,
        jsonl,
        engine.mask_words(),
        |m| {
            let (matcher, reference, other, prefix) = &mut *state.borrow_mut();
            // A work limit that cut the token-trie walk's checks (at a boundary the
            // compiler left to it) is an error (exit 2), not a token outside the mask.
            matcher.try_fill_mask(m).map_err(|e| Failure {
                code: 2,
                message: format!("step {}: the mask: {e}", step.get()),
            })?;
            if let Some(r) = reference {
                r.fill_mask(other);
                if other != m {
                    let only = |a: &[u32], b: &[u32]| -> Vec<u32> {
                        (0..a.len() * 32)
                            .filter(|&i| (a[i / 32] & !b[i / 32]) >> (i % 32) & 1 != 0)
                            .map(|i| i as u32)
                            .collect()
                    };
                    let tail = &prefix[prefix.len().saturating_sub(120)..];
                    return Err(rejected(format!(
                        "step {} (after {} bytes, ending {:?}): compiled and reference masks differ\n  only in the compiled mask: {}\n  only in the reference mask: {}",
                        step.get(),
                        prefix.len(),
                        String::from_utf8_lossy(tail),
                        describe(only(m, other)),
                        describe(only(other, m))
                    )));
                }
            }
            step.set(step.get() + 1);
            Ok(())
        },
        |t| {
            let (matcher, reference, _, prefix) = &mut *state.borrow_mut();
            matcher.commit(t).map_err(commit_failure)?;
            if let Some(r) = reference {
                r.commit(t)
                    .map_err(|e| rejected(format!("reference: {e}")))?;
            }
            if t != eos {
                prefix.extend_from_slice(vocab.token_bytes(t));
            }
            Ok(())
        },
    )
}

/// `bench --compare-masks`: each driver dumps its masks over the trace file at `traces`,
/// compared step by step with ours and the reference path. Exit 1 if the reference path
/// sides with a peer on any differing token (a stackmask bug).
fn compare_with_peers(
    engine: &Arc<Engine>,
    file: &stackmask_peers::trace_file::TraceFile,
    traces: &Path,
    drivers: &[peer_drivers::PeerDriver],
    examples: usize,
    timeout: Option<std::time::Duration>,
) -> Result<(), Failure> {
    let mut all_ours = true;
    for d in drivers {
        let dump = std::env::temp_dir().join(format!(
            "stackmask-masks-{}-{}.bin",
            d.engine,
            std::process::id()
        ));
        let report = peer_drivers::run(d, &[Path::new("masks"), traces, &dump], timeout);
        let compared = report.and_then(|report| {
            for n in &report.notes {
                out!("{}: {n}", report.engine);
            }
            for r in &report.rejections {
                out!(
                    "{} REJECTS token {} of {} at step {}: {}",
                    report.engine,
                    r.token,
                    file.traces[r.trace].name,
                    r.step,
                    r.error
                );
            }
            mask_compare::compare(engine, file, &d.engine, &dump, examples)
        });
        let _ = std::fs::remove_file(&dump);
        let (text, ours) = compared?;
        out!("{}", text.trim_end());
        all_ours &= ours;
    }
    if all_ours {
        Ok(())
    } else {
        Err(rejected(
            "the reference path sides with a peer on some token: a stackmask bug".into(),
        ))
    }
}

fn bench(
    artifact: &Path,
    docs: &Path,
    cfg: &latency::BenchConfig,
    json: bool,
    slowest: usize,
    peer_args: &PeerArgs,
    machine_gaps: Option<Duration>,
) -> Result<(), Failure> {
    let engine = Arc::new(Engine::load(artifact)?);
    let spec = engine.meta().tokenizer.clone();
    let tokenizer = vocab::load_tokenizer(&spec)?;
    engine.expect_vocabulary(tokenizer.vocab.content_hash())?;
    let mut files: Vec<PathBuf> = if docs.is_dir() {
        std::fs::read_dir(docs)
            .map_err(|e| format!("{}: {e}", docs.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect()
    } else {
        vec![docs.to_path_buf()]
    };
    files.sort();
    let mut traces = Vec::new();
    let mut tokens = 0;
    for f in &files {
        let bytes = std::fs::read(f).map_err(|e| format!("{}: {e}", f.display()))?;
        let trace = tokenizer.encode(&bytes)?;
        let mut m = Matcher::new(engine.clone());
        if let Some(i) = trace.iter().position(|&t| m.commit(t).is_err()) {
            return Err(rejected(format!(
                "{}: token {i} is not accepted by the grammar; bench replays sentences only",
                f.display()
            )));
        }
        tokens += trace.len();
        traces.push(trace);
    }
    let walks = latency::random_walks(&engine, tokenizer.eos(), cfg);
    let walk_tokens: usize = walks.iter().map(Vec::len).sum();
    traces.extend(walks);
    let grammar = latency::grammar_name(&engine.meta().grammar_name);
    let trace_name = |i: usize| {
        files
            .get(i)
            .map(|f| f.display().to_string())
            .unwrap_or_else(|| format!("random walk {}", i - files.len()))
    };
    let timeout = peer_args.peer_timeout.map(std::time::Duration::from_secs);
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    let drivers = peer_args
        .peer
        .iter()
        .map(|p| peer_drivers::parse_peer(p, &exe_dir))
        .collect::<Result<Vec<_>, _>>()?;
    let peer_work = match (&peer_args.grammar, drivers.is_empty()) {
        (_, true) if peer_args.compare_masks => {
            return Err("--compare-masks needs at least one --peer".into())
        }
        (_, true) => None,
        (None, false) => {
            return Err("--peer needs --grammar (the grammar the peers compile)".into())
        }
        (Some(g), false) => {
            let source = pipeline::read_grammar_file(g)?;
            let lexed = pipeline::lex_grammar_source(&source, &g.display().to_string())?;
            // The artifact holds the grammar after the adjacency product, if it needed one.
            let product = stackmask_compiler::adjacency_product::product::<pipeline::CompileError>(
                &lexed,
                stackmask_compiler::adjacency_product::DEFAULT_MAX_PRODUCT_RULES,
                &stackmask_compiler::budget::Deadline::unlimited(),
            )?;
            let compiled = product.map_or(lexed.grammar, |p| p.lexed.grammar);
            if compiled != engine.meta().grammar {
                return Err(format!(
                    "{} is not the grammar {} was compiled from",
                    g.display(),
                    artifact.display()
                )
                .into());
            }
            let named = traces
                .iter()
                .enumerate()
                .map(|(i, t)| stackmask_peers::trace_file::Trace {
                    name: trace_name(i),
                    tokens: t.clone(),
                })
                .collect();
            let file =
                peer_drivers::trace_file(&grammar, &source, &tokenizer, &spec, named, cfg.repeats);
            let path = peer_args.traces_out.clone().unwrap_or_else(|| {
                std::env::temp_dir().join(format!("stackmask-traces-{}.json", std::process::id()))
            });
            file.write(&path)?;
            Some((file, path))
        }
    };
    if peer_args.compare_masks {
        let (file, path) = peer_work.as_ref().expect("checked above");
        let result = compare_with_peers(&engine, file, path, &drivers, peer_args.examples, timeout);
        if peer_args.traces_out.is_none() {
            let _ = std::fs::remove_file(path);
        }
        return result;
    }
    let (mut rows, slow, medians) = latency::run(&engine, artifact, &traces, cfg, slowest)?;
    let four = |v: [f64; 4]| format!("{:.2} / {:.2} / {:.2} / {:.2}", v[0], v[1], v[2], v[3]);
    let mut notes = vec![format!(
        "stackmask, each step's median over the {} passes ({} steps: what recurs at every pass), µs p50 / p99 / p99.9 / max: get_mask {}; mask + commit {}",
        cfg.repeats,
        medians.steps,
        four(medians.get_mask),
        four(medians.mask_commit)
    )];
    if let Some((file, path)) = &peer_work {
        for d in &drivers {
            let report = peer_drivers::run(d, &[Path::new("bench"), path], timeout);
            let report = match report {
                Ok(r) => r,
                Err(e) => {
                    notes.push(format!("{}: {e}", d.engine));
                    continue;
                }
            };
            notes.push(format!(
                "{} {}: {}",
                report.engine, report.version, report.route
            ));
            notes.extend(
                report
                    .notes
                    .iter()
                    .map(|n| format!("{}: {n}", report.engine)),
            );
            for r in &report.rejections {
                notes.push(format!(
                    "{} REJECTS token {} ({:?}) of {} at step {}: {}",
                    report.engine,
                    r.token,
                    String::from_utf8_lossy(tokenizer.vocab.token_bytes(r.token)),
                    file.traces[r.trace].name,
                    r.step,
                    r.error
                ));
            }
            if report.rejections.is_empty() {
                notes.push(format!(
                    "{} accepts every token of every trace",
                    report.engine
                ));
            }
            rows.extend(report.rows);
        }
        if peer_args.traces_out.is_none() {
            let _ = std::fs::remove_file(path);
        }
    }
    if let Some(d) = machine_gaps {
        notes.push(stackmask_peers::machine_gaps::measure(d).summary());
    }
    if json {
        for n in &notes {
            eprintln!("{n}");
        }
        out!("{}", stackmask_peers::report::rows_json(&rows));
        return Ok(());
    }
    out!(
        "{grammar} × {spec}: {} documents ({tokens} tokens) + {} random walks ({walk_tokens} tokens, seed {}), {} timed passes after 1 warm-up; clone timed on one pass",
        files.len(),
        cfg.walks,
        cfg.seed,
        cfg.repeats
    );
    out!("{}", stackmask_peers::report::table(&rows).trim_end());
    for n in &notes {
        out!("{n}");
    }
    for s in &slow {
        let text: Vec<u8> = traces[s.trace][..s.step]
            .iter()
            .flat_map(|&t| tokenizer.vocab.token_bytes(t).to_vec())
            .collect();
        let tail = String::from_utf8_lossy(&text[text.len().saturating_sub(60)..]).into_owned();
        let name = trace_name(s.trace);
        out!(
            "slow get_mask {:>9.2} µs  {name} step {}: …{tail:?}",
            s.us,
            s.step
        );
    }
    Ok(())
}
