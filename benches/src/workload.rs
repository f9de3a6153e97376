//! Benchmark workloads: a shipped grammar compiled in-process for a real tokenizer,
//! with real documents tokenized canonically.

use stackmask_compiler::{pipeline, vocab};
use stackmask_formats::artifact::AlignedBytes;
use stackmask_runtime::Engine;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A compiled grammar, its tokenizer, and token traces of real documents.
pub struct Workload {
    /// `grammar × tokenizer`, for reports.
    pub name: String,
    /// Grammar source (the peer compiles it too).
    pub grammar_source: String,
    /// The loaded engine.
    pub engine: Arc<Engine>,
    /// The tokenizer.
    pub tokenizer: vocab::Tokenizer,
    /// (document name, canonical tokens).
    pub docs: Vec<(String, Vec<u32>)>,
}

/// The workspace root.
pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Compiles the shipped grammar `grammars/<grammar>` for `spec` in process: its source
/// and everything the build made (the artifact bytes among it).
pub fn build(grammar: &str, spec: &str) -> (String, pipeline::Built) {
    let path = workspace().join("grammars").join(grammar);
    let source = std::fs::read_to_string(&path).expect("grammar");
    let built = pipeline::build_artifact_from_source(
        &source,
        grammar,
        spec,
        &pipeline::CompileOptions::default(),
        |_| {},
    )
    .unwrap_or_else(|e| panic!("{grammar} × {spec}: {e}"));
    (source, built)
}

impl Workload {
    /// Compiles `grammars/<grammar>` for `spec` and tokenizes `docs` (paths relative to
    /// the workspace).
    pub fn new(grammar: &str, spec: &str, docs: &[&str]) -> Workload {
        let (grammar_source, built) = build(grammar, spec);
        let engine =
            Arc::new(Engine::from_bytes(AlignedBytes::from_slice(&built.bytes)).expect("engine"));
        let tokenizer = built.tokenizer;
        let docs = docs
            .iter()
            .map(|d| {
                let text = std::fs::read(workspace().join(d)).expect("document");
                let name = Path::new(d)
                    .file_name()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                (name, tokenizer.encode(&text).expect("tokenizes"))
            })
            .collect();
        Workload {
            name: format!("{} × {spec}", grammar.trim_end_matches(".lark")),
            grammar_source,
            engine,
            tokenizer,
            docs,
        }
    }

    /// Total tokens over all documents.
    pub fn total_tokens(&self) -> usize {
        self.docs.iter().map(|d| d.1.len()).sum()
    }
}

/// The standard workloads: JSON and C with o200k_base on the shipped samples.
pub fn standard() -> Vec<Workload> {
    vec![
        Workload::new(
            "json.lark",
            "tiktoken:o200k_base",
            &[
                "grammars/samples/json/schemastore_package-test.json",
                "grammars/samples/json/schemastore_popxf-1.0_Wlnu.json",
                "grammars/samples/json/schemastore_tsconfig-lib.json",
                "grammars/samples/json/handwritten_deep_nesting_whitespace.json",
            ],
        ),
        Workload::new(
            "c.lark",
            "tiktoken:o200k_base",
            &[
                "grammars/samples/c/sort.c",
                "grammars/samples/c/linked_list.c",
                "grammars/samples/c/string_utils.c",
                "grammars/samples/c/tokenizer.c",
            ],
        ),
    ]
}
