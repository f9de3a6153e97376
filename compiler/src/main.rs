//! `stackmask`: the command-line tool (DESIGN.md §4).

use clap::{Parser, Subcommand};
use stackmask_compiler::pipeline::{self, LexedGrammar};
use stackmask_compiler::vocab;
use stackmask_runtime::reference::ReferenceMatcher;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Parser)]
#[command(name = "stackmask", version, about = "Grammar-constrained decoding: compile grammars to token-mask tables")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Parse and normalize a grammar, print a summary.
    Check {
        /// The grammar (.lark).
        grammar: PathBuf,
    },
    /// Tokenize a document canonically and check, step by step, that every next token
    /// is in the mask, and that EOS is allowed at the end.
    Trace {
        /// The grammar (.lark).
        #[arg(long)]
        grammar: PathBuf,
        /// Tokenizer: tiktoken:o200k_base | tiktoken:cl100k_base | hf:PATH/tokenizer.json | bytes.
        #[arg(long)]
        tokenizer: String,
        /// The document.
        #[arg(long)]
        text: PathBuf,
        /// Print one JSON line per step (DESIGN.md §4).
        #[arg(long)]
        jsonl: bool,
    },
}

/// A failure, with the exit code it maps to (1: the input is not accepted, 2: usage or
/// unreadable input).
struct Failure {
    code: u8,
    message: String,
}

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure { code: 2, message: e.to_string() }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check { grammar } => check(&grammar),
        Command::Trace { grammar, tokenizer, text, jsonl } => trace(&grammar, &tokenizer, &text, jsonl),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("error: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

fn check(path: &std::path::Path) -> Result<(), Failure> {
    let LexedGrammar { grammar, dfas } = pipeline::lex_grammar_file(path)?;
    let nullable = grammar.nullable_nonterminals();
    println!("{}: ok", path.display());
    println!(
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
    println!("  lexer: {states} DFA states over {} terminals", dfas.len());
    for (i, (t, d)) in grammar.terminals.iter().zip(&dfas).enumerate() {
        let mut tags = Vec::new();
        if grammar.is_ignore(i as u32) {
            tags.push("ignore");
        }
        if t.lazy {
            tags.push("lazy");
        }
        println!("    {:<24} {:>6} states  {}", t.name, d.num_states(), tags.join(","));
    }
    Ok(())
}

/// FNV-1a 64 over the ascending allowed token ids, each as 4 little-endian bytes.
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

fn trace(grammar: &std::path::Path, spec: &str, text: &std::path::Path, jsonl: bool) -> Result<(), Failure> {
    let lexed = pipeline::lex_grammar_file(grammar)?;
    let tokenizer = vocab::load_tokenizer(spec)?;
    let bytes = std::fs::read(text).map_err(|e| format!("{}: {e}", text.display()))?;
    let tokens = tokenizer.encode(&bytes)?;
    let engine = Arc::new(pipeline::reference_engine(&lexed, &tokenizer)?);
    let mut matcher = ReferenceMatcher::new(engine);
    let eos = tokenizer.eos();
    let mut mask = vec![0u32; tokenizer.vocab.mask_words()];
    let started = std::time::Instant::now();
    for (step, &token) in tokens.iter().chain(std::iter::once(&eos)).enumerate() {
        matcher.fill_mask(&mut mask);
        let (hash, allowed) = mask_hash(&mask);
        if jsonl {
            println!("{{\"step\":{step},\"token\":{token},\"allowed\":{allowed},\"hash\":\"{hash:016x}\"}}");
        }
        if mask[token as usize / 32] & (1 << (token % 32)) == 0 {
            let what = if token == eos { "EOS".to_string() } else { format!("token {token} {:?}", String::from_utf8_lossy(tokenizer.vocab.token_bytes(token))) };
            return Err(Failure {
                code: 1,
                message: format!("step {step}: {what} is not in the mask ({allowed} tokens allowed) after {} bytes", matcher.bytes_consumed()),
            });
        }
        matcher.commit(token).map_err(|e| Failure { code: 1, message: format!("step {step}: {e}") })?;
    }
    if !jsonl {
        println!(
            "{}: {} tokens, every token in its mask, EOS allowed at the end ({:.1} ms)",
            text.display(),
            tokens.len(),
            started.elapsed().as_secs_f64() * 1e3
        );
    }
    Ok(())
}
