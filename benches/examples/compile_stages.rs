//! Where a schema's compile time goes: every MaskBench schema compiled for one prepared
//! tokenizer, each stage timed on its own, as percentiles over the schemas.
//!
//! ```sh
//! cargo run --release -p stackmask-benches --example compile_stages -- \
//!     [--tokenizer tiktoken:o200k_base] [--step N] [--dir PATH] \
//!     [--property-order declared|sorted|any|any-or-declared] [--each] [--self-contained]
//! ```
//!
//! Stages: `schema` (schema text to grammar IR), `lexer` (terminal regexes to DFAs),
//! `lr` (LR(1) tables
//! and lexer configurations), `mask path` (Terminal DWAs, templates, Parser DWA),
//! `artifact` and `load`: as Python's `Compiler` does, the grammar's sections alone and
//! `Engine::from_bytes_sharing` over a vocabulary validated once; with
//! `--self-contained`, as `stackmask compile` writes files, the vocabulary and trie
//! included and `Engine::from_bytes`, which validates them. The stages run one after another on
//! the calling thread, except the mask path, which builds boundaries on every core.
//! `--each` also prints every schema's stage times (ms, in that order, then the total).

/// The allocator the `stackmask` binary and the Python module use.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use serde_json::Value;
use stackmask_benches::percentiles::{histogram, row};
use stackmask_compiler::artifact::{build_artifact, build_grammar_artifact, ArtifactInputs};
use stackmask_compiler::budget::Deadline;
use stackmask_compiler::frontend::json_schema::{
    schema_text_to_grammar, PropertyOrder, SchemaOptions,
};
use stackmask_compiler::lexer::{compile_lexer_within, LexerLimits};
use stackmask_compiler::pipeline::PipelineError;
use stackmask_compiler::{pipeline, vocab};
use stackmask_formats::artifact::AlignedBytes;
use stackmask_runtime::{Engine, SharedVocab};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let mut spec = "tiktoken:o200k_base".to_string();
    let mut dir = PathBuf::from("../shared/corpus/jsonschemabench/maskbench_data_subset");
    let mut step = 1usize;
    let mut each = false;
    let mut self_contained = false;
    let mut schema_options = SchemaOptions::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--tokenizer" => spec = value(),
            "--dir" => dir = PathBuf::from(value()),
            "--step" => step = value().parse().expect("--step N"),
            "--each" => each = true,
            "--self-contained" => self_contained = true,
            "--property-order" => {
                let v = value();
                schema_options.order = PropertyOrder::from_name(&v)
                    .unwrap_or_else(|| panic!("--property-order: unknown order {v}"));
            }
            other => panic!("unknown argument {other}"),
        }
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let files: Vec<PathBuf> = files.into_iter().step_by(step.max(1)).collect();

    let tokenizer = vocab::load_tokenizer(&spec).expect("tokenizer");
    let trie = vocab::build_trie(&tokenizer.vocab);
    let shared = Arc::new(
        SharedVocab::new(tokenizer.vocab.clone(), trie.clone()).expect("shared vocabulary"),
    );
    let trie = pipeline::PreparedTrie::new(trie);
    let prepared = pipeline::VocabInputs {
        spec: &spec,
        vocab: &tokenizer.vocab,
        trie: &trie,
    };
    let options = pipeline::CompileOptions::default();
    let names = [
        "schema",
        "lexer",
        "lr",
        "mask path",
        "artifact",
        "load",
        "total",
    ];
    let mut hists: Vec<_> = names.iter().map(|_| histogram()).collect();
    let mut compiled = 0usize;
    for path in &files {
        let file: Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json");
        let text = file["schema"].to_string();
        let name = path.display().to_string();
        let deadline = Deadline::unlimited();
        let mut times = [0u64; 7];
        let mut lap = {
            let mut last = Instant::now();
            move |i: usize, times: &mut [u64; 7]| {
                let now = Instant::now();
                times[i] = (now - last).as_nanos() as u64;
                last = now;
            }
        };
        let Ok(schema) = schema_text_to_grammar(&text, &name, &schema_options) else {
            continue;
        };
        lap(0, &mut times);
        let Ok(dfas) = compile_lexer_within::<PipelineError>(
            &schema.grammar,
            &LexerLimits::default(),
            &deadline,
        ) else {
            continue;
        };
        let lexed = pipeline::LexedGrammar {
            grammar: schema.grammar,
            dfas,
        };
        lap(1, &mut times);
        let Ok(parser) =
            pipeline::compile_owned_parser_within(lexed, options.lr_limits(), &deadline)
        else {
            continue;
        };
        lap(2, &mut times);
        let Ok((dwa, stats)) = pipeline::compile_mask_within(
            &parser,
            prepared.vocab,
            prepared.trie,
            &options,
            &deadline,
            &|_, _| {},
        ) else {
            continue;
        };
        lap(3, &mut times);
        let inputs = ArtifactInputs {
            grammar_source: &text,
            grammar_name: &name,
            tokenizer: &spec,
            vocab: prepared.vocab,
            trie: prepared.trie.trie(),
            parser_dwa: &dwa,
            dwa_stats: stats,
        };
        if self_contained {
            let bytes = build_artifact(&parser, &inputs).expect("artifact");
            lap(4, &mut times);
            Engine::from_bytes(AlignedBytes::from_slice(&bytes)).expect("load");
        } else {
            let bytes =
                build_grammar_artifact(&parser, &inputs, shared.content_hash()).expect("artifact");
            lap(4, &mut times);
            Engine::from_bytes_sharing(AlignedBytes::from_slice(&bytes), shared.clone())
                .expect("load");
        }
        lap(5, &mut times);
        times[6] = times[..6].iter().sum();
        if each {
            let ms: Vec<String> = times
                .iter()
                .map(|t| format!("{:.1}", *t as f64 / 1e6))
                .collect();
            println!("{name}: {} ms", ms.join(" "));
        }
        for (h, t) in hists.iter_mut().zip(times) {
            h.record(t.max(1)).expect("in range");
        }
        compiled += 1;
    }
    println!(
        "{compiled} of {} schemas compiled for {spec}; per stage, over the schemas (ms shown as µs/1000):",
        files.len()
    );
    for (n, h) in names.iter().zip(&hists) {
        println!("{}", row(n, h));
    }
}
