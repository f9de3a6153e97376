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

use stackmask_compiler::artifact::{build_artifact, ArtifactInputs};
use stackmask_compiler::budget::{CompileBudget, Deadline};
use stackmask_compiler::lexer::LexerLimits;
use stackmask_compiler::pipeline;
use stackmask_formats::{TokenKind, Vocabulary};
use stackmask_runtime::Engine;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// LR(1) states a fuzzed grammar may build: small, so every input ends fast, and a
/// grammar past it must end in the named limit error.
pub const MAX_LR_STATES: usize = 2_000;

/// The lexer limits the front-end targets build under: small, like [`MAX_LR_STATES`],
/// so a regex that determinizes to thousands of states ends in the named limit error
/// quickly. Under the defaults (65,536 states a terminal) a 178-byte grammar of
/// `.`-runs built 51,082 states, and in the instrumented build (where compare tracing
/// makes regex-automata's determinization several times slower) such inputs ran to
/// [`TIME_LIMIT`]: a tenth of the corpus took 90% of the time, and the campaign's rate
/// was tens of executions a second. Real terminals have tens to a few hundred states.
pub const LEXER_LIMITS: LexerLimits = LexerLimits {
    nfa_bytes: 4 << 20,
    determinize_bytes: 4 << 20,
    terminal_states: 1_024,
    total_states: 4_096,
};

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

/// The engines the matcher targets run, by input byte: each of [`GRAMMARS`] for the
/// `bytes` tokenizer, then `json.lark` for [`spread_vocab`].
pub const MATCHER_ENGINES: usize = GRAMMARS.len() + 1;

/// The engine of index `index` (below [`MATCHER_ENGINES`]), loaded once per process.
pub fn engine(index: usize) -> Arc<Engine> {
    static ENGINES: [OnceLock<Arc<Engine>>; MATCHER_ENGINES] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    ENGINES[index]
        .get_or_init(|| match GRAMMARS.get(index) {
            Some(name) => compiled_support::engine(artifact(name)),
            None => compiled_support::engine(&spread_artifact()),
        })
        .clone()
}

/// A vocabulary laid out as real ones are, for the mask's chunk layout: the `bytes`
/// tokenizer's 257 tokens span 9 words of mask, so every token set is one short chunk
/// and a mask is never written from a long one. Here every byte is a token 12 times
/// over, on consecutive ids (JSON's string content is then a run of 36 words of ASCII
/// and one of 19 of UTF-8 lead bytes: chunks long enough that a mask is written from
/// them rather than OR-ed), JSON's multi-byte lexemes are tokens, and runs of filler
/// tokens (`0xff` first, which no grammar reads, so never in a mask) before the
/// control bytes, between ASCII and the rest and before the multi-byte tokens put gaps
/// between a set's chunks. 3,572 tokens with EOS, the last.
pub fn spread_vocab() -> Vocabulary {
    let mut tokens: Vec<Vec<u8>> = Vec::new();
    let mut fillers = 0u16;
    let mut filler_run = |tokens: &mut Vec<Vec<u8>>, n: usize| {
        for _ in 0..n {
            tokens.push(vec![0xff, (fillers >> 8) as u8, fillers as u8]);
            fillers += 1;
        }
    };
    for b in 0..=255u8 {
        match b {
            0 => filler_run(&mut tokens, 150),
            0x80 => filler_run(&mut tokens, 214),
            _ => {}
        }
        for _ in 0..12 {
            tokens.push(vec![b]);
        }
    }
    filler_run(&mut tokens, 97);
    for t in [
        "\"", "\":", "\",", "{\"", "\"}", "\"]", "[\"", ": ", ", ", "true", "false", "null", "tr",
        "ue", "fal", "se", "nu", "ll", "10", "0.", ".5", "e+", "E-", "-1", "123", "\\n", "\\u",
        "00", "ab", "abc", "\n  ", "  ", "[]", "{}", "[{", "}]", "},", "],",
    ] {
        tokens.push(t.as_bytes().to_vec());
    }
    let mut entries: Vec<Option<(Vec<u8>, TokenKind)>> = tokens
        .into_iter()
        .map(|t| Some((t, TokenKind::Normal)))
        .collect();
    entries.push(Some((b"<eos>".to_vec(), TokenKind::Special)));
    let eos = entries.len() as u32 - 1;
    Vocabulary::from_entries("spread", entries, eos)
}

/// `grammars/json.lark` compiled for [`spread_vocab`] into artifact bytes, with the
/// pipeline functions `stackmask compile` uses.
pub fn spread_artifact() -> Vec<u8> {
    let path = compiled_support::workspace_root().join("grammars/json.lark");
    let lexed = pipeline::lex_grammar_file(&path).expect("json.lark lexes");
    let compiled = pipeline::compile_parser(&lexed, 100_000).expect("json.lark compiles");
    let vocab = spread_vocab();
    let trie = stackmask_compiler::vocab::build_trie(&vocab);
    let options = pipeline::CompileOptions::default();
    let (parser_dwa, dwa_stats) =
        pipeline::compile_mask(&compiled, &vocab, &trie, &options).expect("its mask path");
    let source = std::fs::read_to_string(&path).expect("json.lark");
    let inputs = ArtifactInputs {
        grammar_source: &source,
        grammar_name: "json",
        tokenizer: "spread",
        vocab: &vocab,
        trie: &trie,
        parser_dwa: &parser_dwa,
        dwa_stats,
    };
    build_artifact(&compiled, &inputs).expect("the artifact")
}
