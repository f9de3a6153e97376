//! Helpers for the tests of the compiled path (`engine_corruption.rs`,
//! `compiled_jsontestsuite.rs`, `compiled_matcher.rs`): building real artifacts in
//! process, taking them apart into sections and reassembling them with valid
//! checksums (so a corruption reaches the semantic validation of `Engine`), running
//! code that may panic or hang under a guard, and locating the `stackmask` binary.
//!
//! Kept apart from `common/mod.rs`, which other test files share and extend.

#![allow(dead_code)]

use stackmask_compiler::pipeline::{self, LexedGrammar};
use stackmask_compiler::vocab;
use stackmask_formats::artifact::{AlignedBytes, Artifact, ArtifactWriter, SectionKind};
use stackmask_formats::layout::{self, ArtifactMeta};
use stackmask_runtime::{Engine, EngineError};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A grammar compiled for a tokenizer: everything a test may need next to the bytes.
pub struct Built {
    /// `grammars/<name>.lark`.
    pub name: String,
    pub source: String,
    pub lexed: LexedGrammar,
    pub tokenizer: vocab::Tokenizer,
    /// The artifact, as `build_artifact` wrote it.
    pub bytes: Vec<u8>,
}

/// Compiles `grammars/<grammar>.lark` for the tokenizer `spec` into artifact bytes,
/// exactly as `stackmask compile` does (same pipeline functions).
pub fn build(grammar: &str, spec: &str) -> Built {
    let path = workspace_root()
        .join("grammars")
        .join(format!("{grammar}.lark"));
    let source =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let built = pipeline::build_artifact_from_source(
        &source,
        &path.display().to_string(),
        spec,
        &pipeline::CompileOptions::default(),
        |_| {},
    )
    .unwrap_or_else(|e| panic!("{grammar} × {spec}: {e}"));
    let (lexed, tokenizer, bytes) = (built.lexed, built.tokenizer, built.bytes);
    Built {
        name: grammar.to_string(),
        source,
        lexed,
        tokenizer,
        bytes,
    }
}

/// Built artifacts by `(grammar, spec)`, each initialised once.
type BuildCache = Mutex<HashMap<(String, String), &'static OnceLock<Built>>>;

/// [`build`], once per process and `(grammar, spec)`.
pub fn cached(grammar: &str, spec: &str) -> &'static Built {
    static CACHE: OnceLock<BuildCache> = OnceLock::new();
    let cell: &'static OnceLock<Built> = {
        let mut map = CACHE.get_or_init(Default::default).lock().unwrap();
        map.entry((grammar.to_string(), spec.to_string()))
            .or_insert_with(|| Box::leak(Box::new(OnceLock::new())))
    };
    cell.get_or_init(|| build(grammar, spec))
}

/// Loads artifact bytes through a 64-byte aligned copy.
pub fn load(bytes: &[u8]) -> Result<Engine, EngineError> {
    Engine::from_bytes(AlignedBytes::from_slice(bytes))
}

/// Loads artifact bytes that must be valid.
pub fn engine(bytes: &[u8]) -> Arc<Engine> {
    Arc::new(load(bytes).unwrap_or_else(|e| panic!("a valid artifact failed to load: {e}")))
}

// ---------------------------------------------------------------------------------------
// Taking an artifact apart and putting it back together with valid checksums.

/// One section of a parsed artifact, owned.
#[derive(Clone, Debug)]
pub struct Section {
    pub kind: SectionKind,
    pub align: u32,
    pub bytes: Vec<u8>,
}

/// An artifact's header hashes and sections (in table order).
#[derive(Clone, Debug)]
pub struct Parts {
    pub grammar_hash: u64,
    pub vocab_hash: u64,
    pub sections: Vec<Section>,
}

impl Parts {
    /// Splits valid artifact bytes.
    pub fn of(bytes: &[u8]) -> Parts {
        let a = Artifact::parse(bytes).expect("a valid artifact");
        Parts {
            grammar_hash: a.grammar_hash(),
            vocab_hash: a.vocab_hash(),
            sections: a
                .sections()
                .iter()
                .map(|s| Section {
                    kind: s.kind,
                    align: s.align,
                    bytes: a.section(s.kind).unwrap().to_vec(),
                })
                .collect(),
        }
    }

    /// A container with fresh checksums (the writer computes them).
    pub fn assemble(&self) -> Vec<u8> {
        let mut w = ArtifactWriter::new(self.grammar_hash, self.vocab_hash);
        for s in &self.sections {
            w.add_section(s.kind, &s.bytes, s.align).unwrap();
        }
        w.finish()
    }

    pub fn section_mut(&mut self, kind: SectionKind) -> &mut Section {
        self.sections
            .iter_mut()
            .find(|s| s.kind == kind)
            .unwrap_or_else(|| panic!("no section {kind}"))
    }

    pub fn section(&self, kind: SectionKind) -> &Section {
        self.sections
            .iter()
            .find(|s| s.kind == kind)
            .unwrap_or_else(|| panic!("no section {kind}"))
    }

    /// A `u32` array section, decoded.
    pub fn u32s(&self, kind: SectionKind) -> Vec<u32> {
        u32s(&self.section(kind).bytes)
    }

    pub fn set_u32s(&mut self, kind: SectionKind, values: &[u32]) {
        self.section_mut(kind).bytes = from_u32s(values);
    }

    /// Edits a `u32` array section.
    pub fn edit_u32s(&mut self, kind: SectionKind, f: impl FnOnce(&mut Vec<u32>)) {
        let mut v = self.u32s(kind);
        f(&mut v);
        self.set_u32s(kind, &v);
    }

    /// The metadata, decoded.
    pub fn meta(&self) -> ArtifactMeta {
        let (meta, used) = bincode_decode(&self.section(layout::META).bytes);
        assert_eq!(used, self.section(layout::META).bytes.len());
        meta
    }

    /// Edits the metadata (re-encoded as `ArtifactWriter::add_bincode` would).
    pub fn edit_meta(&mut self, f: impl FnOnce(&mut ArtifactMeta)) {
        let mut meta = self.meta();
        f(&mut meta);
        let mut w = ArtifactWriter::new(0, 0);
        w.add_bincode(layout::META, &meta).unwrap();
        let bytes = Parts::of(&w.finish()).sections.remove(0).bytes;
        self.section_mut(layout::META).bytes = bytes;
    }
}

/// bincode-decodes an `ArtifactMeta` the way the runtime does, through a container.
fn bincode_decode(bytes: &[u8]) -> (ArtifactMeta, usize) {
    let mut w = ArtifactWriter::new(0, 0);
    w.add_section(layout::META, bytes, 1).unwrap();
    let out = w.finish();
    let a = Artifact::parse(&out).unwrap();
    (a.bincode(layout::META).unwrap(), bytes.len())
}

pub fn u32s(bytes: &[u8]) -> Vec<u32> {
    assert_eq!(bytes.len() % 4, 0);
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

pub fn from_u32s(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Size of a `TrieNode` record in the `TRIN` section (`byte, reserved[3], depth,
/// subtree_size, first_token, num_tokens`).
pub const TRIE_NODE_SIZE: usize = 20;
/// Field offsets within a trie node record.
pub const TRIE_DEPTH: usize = 4;
pub const TRIE_SUBTREE: usize = 8;
pub const TRIE_FIRST: usize = 12;
pub const TRIE_NUM: usize = 16;

/// Reads a `u32` field of a record.
pub fn get_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

/// Writes a `u32` field of a record.
pub fn put_u32(bytes: &mut [u8], at: usize, v: u32) {
    bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

// ---------------------------------------------------------------------------------------
// Guards.

/// What running a closure under [`guarded`] gave.
#[derive(Debug)]
pub enum Outcome<T> {
    Done(T),
    Panicked(String),
    TimedOut,
}

/// Runs `f` on its own thread: a panic becomes [`Outcome::Panicked`] with its message,
/// and a run longer than `timeout` becomes [`Outcome::TimedOut`] (the thread is left
/// behind; the test fails anyway).
pub fn guarded<T: Send + 'static>(
    timeout: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Outcome<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("guarded".into())
        .spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
            let _ = tx.send(r.map_err(|p| panic_message(&*p)));
        })
        .unwrap();
    match rx.recv_timeout(timeout) {
        Ok(Ok(v)) => Outcome::Done(v),
        Ok(Err(msg)) => Outcome::Panicked(msg),
        Err(_) => Outcome::TimedOut,
    }
}

/// `catch_unwind` on the current thread, with the panic message.
pub fn no_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| panic_message(&*p))
}

pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic payload>".into()
    }
}

// ---------------------------------------------------------------------------------------
// Files and the binary.

/// A fresh directory under the system temp dir, unique per process and `tag`.
pub fn temp_dir(tag: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir =
        std::env::temp_dir().join(format!("stackmask-tests-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Builds the `stackmask` binary once per process, in the profile this test was built
/// with, and returns its path. (`env!("CARGO_BIN_EXE_stackmask")` only exists in the
/// compiler crate's own tests.) The binary sits next to this test's own `deps/`
/// directory (`target/debug/` or `target/release/`).
///
/// The build selects the whole workspace and one of the compiler's integration tests,
/// not `-p stackmask-compiler` alone: a test target brings the workspace's
/// dev-dependencies into feature resolution (llguidance and criterion turn on features
/// of indexmap and zerocopy), so this resolves the features `cargo test --workspace`
/// did and finds the binary that run already built. Selected alone, the compiler got
/// other features, and serde_json and everything above it were rebuilt: 3.7 minutes of
/// a clean CI run.
pub fn stackmask_binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let profile_dir = std::env::current_exe()
            .ok()
            .and_then(|p| Some(p.parent()?.parent()?.file_name()?.to_owned()));
        let mut args = vec![
            "build",
            "--workspace",
            "--bin",
            "stackmask",
            "--test",
            "cli_robustness",
        ];
        if profile_dir.as_deref() == Some(std::ffi::OsStr::new("release")) {
            args.push("--release");
        }
        let status = std::process::Command::new(env!("CARGO"))
            .args(&args)
            .current_dir(workspace_root())
            .status()
            .expect("run cargo build");
        assert!(
            status.success(),
            "cargo build of the stackmask binary failed"
        );
        let exe = format!("stackmask{}", std::env::consts::EXE_SUFFIX);
        let from_exe = std::env::current_exe()
            .ok()
            .and_then(|p| p.parent()?.parent().map(|d| d.join(&exe)));
        let candidates = from_exe
            .into_iter()
            .chain(
                std::env::var_os("CARGO_TARGET_DIR")
                    .map(|d| PathBuf::from(d).join("debug").join(&exe)),
            )
            .chain([workspace_root().join("target/debug").join(&exe)]);
        for c in candidates {
            if c.is_file() {
                return c;
            }
        }
        panic!("stackmask binary not found after cargo build");
    })
}

/// Sorted files of `dir` whose name starts with `prefix`.
pub fn files_with_prefix(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.is_file()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    v.sort();
    v
}

// ---------------------------------------------------------------------------------------
// Masks.

pub fn bit(mask: &[u32], id: u32) -> bool {
    mask[id as usize / 32] >> (id % 32) & 1 == 1
}

/// The first few token ids where two masks differ, for messages.
pub fn mask_diff(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::new();
    for (w, (&x, &y)) in a.iter().zip(b).enumerate() {
        let mut d = x ^ y;
        while d != 0 && out.len() < 10 {
            out.push((w * 32) as u32 + d.trailing_zeros());
            d &= d - 1;
        }
    }
    out
}

pub fn count(mask: &[u32]) -> u32 {
    mask.iter().map(|w| w.count_ones()).sum()
}
