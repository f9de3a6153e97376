//! The MaskBench run (issue 9): every schema of the MaskBench subset compiled for one
//! tokenizer, prepared once, by stackmask (strict) and by llguidance 1.9.1; every test
//! instance judged by both; compile time per schema and the latency of every mask and
//! commit over the valid instances, side by side.
//!
//! ```sh
//! cargo run --release -p stackmask-benches --example maskbench -- \
//!     [--tokenizer tiktoken:o200k_base] [--step N] [--dir PATH] [--check-reference] \
//!     [--property-order declared|sorted|any|any-or-declared]
//! ```
//!
//! - Compile is grammar text to a ready matcher: for stackmask the schema front end,
//!   lexer, LR(1), mask path, the artifact of the grammar and
//!   `Engine::from_bytes_sharing` over the vocabulary validated once (what Python's
//!   `Compiler` does; no file is written); for llguidance `TopLevelGrammar` from
//!   `start: %json {…}` to a `Matcher`. Both keep their caches across schemas
//!   (stackmask's: lexeme bodies walked and terminal DFAs built).
//! - Instances are the schema's `tests`, written compactly (`serde_json::to_string`)
//!   and tokenized canonically; a verdict is "every token commits and the end is
//!   accepting" (llguidance: EOS is in its last mask). llguidance is given the same
//!   text form: `x-guidance` with `,`/`:` separators and no free whitespace.
//! - Latency: each valid instance is run twice per engine and only the second pass is
//!   recorded (the first warms caches: llguidance's lazy lexer states, our mask cache),
//!   over the schemas both engines compile; every mask including the last one (EOS).
//!   These machines are shared and noisy: read the ratios.
//! - `--step N` takes every Nth file (default 1: all 294); `--property-order` is
//!   stackmask's (default declared; llguidance keeps declared order).
//! - `--check-reference`: also compares, at every step of every valid instance, the
//!   compiled mask with the reference path's (the Earley/trie walk embedded in the
//!   artifact; milliseconds a mask on a 200k vocabulary) and stops at the first
//!   difference. Not timed.

/// The allocator the `stackmask` binary and the Python module use.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use hdrhistogram::Histogram;
use serde_json::Value;
use stackmask_benches::peer::{LlgEnv, LlgPeer, PeerVocab};
use stackmask_benches::percentiles::{histogram, ratio, row};
use stackmask_compiler::budget::Deadline;
use stackmask_compiler::frontend::json_schema::{PropertyOrder, SchemaOptions};
use stackmask_compiler::{pipeline, vocab};
use stackmask_formats::artifact::AlignedBytes;
use stackmask_runtime::{Engine, Matcher, SharedVocab};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Verdict counts of one engine over the instances of the schemas it compiled.
#[derive(Default)]
struct Verdicts {
    compiled: usize,
    valid_accepted: usize,
    valid_rejected: usize,
    invalid_rejected: usize,
    invalid_accepted: usize,
}

impl Verdicts {
    fn record(&mut self, valid: bool, accepted: bool) {
        match (valid, accepted) {
            (true, true) => self.valid_accepted += 1,
            (true, false) => self.valid_rejected += 1,
            (false, false) => self.invalid_rejected += 1,
            (false, true) => self.invalid_accepted += 1,
        }
    }

    fn line(&self, name: &str, files: usize) -> String {
        format!(
            "  {name:<11} compiles {:>3} / {files} ({:.1}%); valid accepted {}, valid rejected {}, invalid rejected {}, invalid accepted {}",
            self.compiled,
            100.0 * self.compiled as f64 / files.max(1) as f64,
            self.valid_accepted,
            self.valid_rejected,
            self.invalid_rejected,
            self.invalid_accepted
        )
    }
}

/// p50 / p99 / max of compile times, nearest rank.
fn compile_line(name: &str, times: &mut [Duration]) -> String {
    times.sort_unstable();
    if times.is_empty() {
        return format!("  {name:<11} nothing compiled");
    }
    let ms = |q: f64| {
        let rank = ((q * times.len() as f64).ceil() as usize).clamp(1, times.len());
        times[rank - 1].as_secs_f64() * 1e3
    };
    format!(
        "  {name:<11} p50 {:>9.2} ms  p99 {:>9.2} ms  max {:>9.2} ms  (n={})",
        ms(0.5),
        ms(0.99),
        ms(1.0),
        times.len()
    )
}

/// Where one run records its masks and commits (ns), if it is a recorded pass.
type Timers<'a> = Option<(&'a mut Histogram<u64>, &'a mut Histogram<u64>)>;

/// Runs `tokens` through a fresh stackmask matcher: the verdict, with every mask and
/// commit timed into `masks` / `commits` when given.
fn run_ours(engine: &Arc<Engine>, tokens: &[u32], mask: &mut [u32], mut timed: Timers<'_>) -> bool {
    let mut m = Matcher::new(engine.clone());
    for &t in tokens {
        let started = Instant::now();
        m.fill_mask(mask);
        let mask_ns = started.elapsed().as_nanos() as u64;
        let started = Instant::now();
        let ok = m.commit(t).is_ok();
        let commit_ns = started.elapsed().as_nanos() as u64;
        if let Some((masks, commits)) = timed.as_mut() {
            masks.record(mask_ns.max(1)).expect("in range");
            commits.record(commit_ns.max(1)).expect("in range");
        }
        if !ok {
            return false;
        }
    }
    let started = Instant::now();
    m.fill_mask(mask);
    if let Some((masks, _)) = timed.as_mut() {
        masks
            .record((started.elapsed().as_nanos() as u64).max(1))
            .expect("in range");
    }
    m.is_accepting()
}

/// Compares the compiled mask with the reference path's at every step of `tokens`
/// (and after the last); returns the number of masks compared, or the first step
/// where they differ.
fn compare_with_reference(engine: &Arc<Engine>, tokens: &[u32]) -> Result<usize, String> {
    use stackmask_runtime::reference::ReferenceMatcher;
    let reference = engine.reference()?;
    let words = engine.mask_words();
    let (mut ours, mut theirs) = (vec![0u32; words], vec![0u32; words]);
    let mut m = Matcher::new(engine.clone());
    let mut r = ReferenceMatcher::new(reference);
    for (step, &t) in tokens.iter().enumerate() {
        m.fill_mask(&mut ours);
        r.fill_mask(&mut theirs);
        if ours != theirs {
            return Err(format!("masks differ at step {step}"));
        }
        if m.commit(t).is_err() {
            return Ok(step + 1);
        }
        r.commit(t)
            .map_err(|e| format!("reference refused step {step}: {e}"))?;
    }
    m.fill_mask(&mut ours);
    r.fill_mask(&mut theirs);
    if ours != theirs {
        return Err(format!(
            "masks differ after the last token ({})",
            tokens.len()
        ));
    }
    Ok(tokens.len() + 1)
}

/// As [`run_ours`] for llguidance (EOS in the last mask is acceptance).
fn run_llguidance(
    peer: &mut LlgPeer,
    tokens: &[u32],
    eos: u32,
    mask: &mut [u32],
    mut timed: Timers<'_>,
) -> bool {
    if peer.reset().is_err() {
        return false;
    }
    for &t in tokens {
        let Ok(mask_ns) = peer.mask(mask) else {
            return false;
        };
        let commit = peer.commit(t);
        if let (Some((masks, commits)), Ok(commit_ns)) = (timed.as_mut(), &commit) {
            masks.record(mask_ns.max(1)).expect("in range");
            commits.record((*commit_ns).max(1)).expect("in range");
        }
        if commit.is_err() {
            return false;
        }
    }
    let Ok(mask_ns) = peer.mask(mask) else {
        return false;
    };
    if let Some((masks, _)) = timed.as_mut() {
        masks.record(mask_ns.max(1)).expect("in range");
    }
    mask[eos as usize / 32] & (1 << (eos % 32)) != 0
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let spec = arg("--tokenizer").unwrap_or_else(|| "tiktoken:o200k_base".into());
    let step: usize = arg("--step").map_or(1, |s| s.parse().expect("--step N"));
    let check_reference = args.iter().any(|a| a == "--check-reference");
    let order = arg("--property-order").map_or(PropertyOrder::Declared, |o| {
        PropertyOrder::from_name(&o).unwrap_or_else(|| panic!("--property-order {o}?"))
    });
    let schema_options = SchemaOptions {
        order,
        ..SchemaOptions::default()
    };
    let mut compared = 0usize;
    let dir = arg("--dir").map(PathBuf::from).unwrap_or_else(|| {
        stackmask_benches::workload::workspace()
            .join("../shared/corpus/jsonschemabench/maskbench_data_subset")
    });
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let files: Vec<PathBuf> = files.into_iter().step_by(step.max(1)).collect();

    let started = Instant::now();
    let tokenizer = vocab::load_tokenizer(&spec).expect("tokenizer");
    let trie = vocab::build_trie(&tokenizer.vocab);
    let shared = Arc::new(
        SharedVocab::new(tokenizer.vocab.clone(), trie.clone()).expect("shared vocabulary"),
    );
    let trie = pipeline::PreparedTrie::new(trie);
    let ours_setup = started.elapsed();
    let started = Instant::now();
    let env = LlgEnv::new(&PeerVocab::from_vocabulary(&tokenizer.vocab)).expect("llguidance");
    let theirs_setup = started.elapsed();
    let prepared = pipeline::VocabInputs {
        spec: &spec,
        vocab: &tokenizer.vocab,
        trie: &trie,
    };
    let options = pipeline::CompileOptions::default();
    let eos = tokenizer.eos();
    let mut mask = vec![0u32; tokenizer.vocab.mask_words()];

    let (mut ours, mut theirs) = (Verdicts::default(), Verdicts::default());
    let (mut ours_compile, mut theirs_compile) = (Vec::new(), Vec::new());
    let (mut ours_mask, mut ours_commit) = (histogram(), histogram());
    let (mut theirs_mask, mut theirs_commit) = (histogram(), histogram());
    let mut both = 0usize;
    for path in &files {
        let name = path
            .file_name()
            .expect("file")
            .to_string_lossy()
            .into_owned();
        let file: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("read"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let schema = &file["schema"];
        let tests: Vec<(Vec<u32>, bool)> = file["tests"]
            .as_array()
            .map(|ts| {
                ts.iter()
                    .map(|t| {
                        let text = serde_json::to_string(&t["data"]).expect("json");
                        let tokens = tokenizer.encode(text.as_bytes()).expect("encode");
                        (tokens, t["valid"].as_bool().unwrap_or(false))
                    })
                    .collect()
            })
            .unwrap_or_default();

        // stackmask: schema text to a loaded engine.
        let text = schema.to_string();
        let started = Instant::now();
        let deadline = Deadline::unlimited();
        let engine = pipeline::lex_schema_source_within(&text, &name, &schema_options, &deadline)
            .ok()
            .and_then(|(lexed, _warnings)| {
                let compiled =
                    pipeline::compile_parser_within(&lexed, options.lr_limits(), &deadline).ok()?;
                let built = pipeline::build_artifact_for_vocab(
                    &compiled,
                    &text,
                    &name,
                    prepared,
                    pipeline::ArtifactForm::GrammarAlone {
                        vocab_hash: shared.content_hash(),
                    },
                    &options,
                    &deadline,
                    &|_| {},
                )
                .ok()?;
                Engine::from_bytes_sharing(AlignedBytes::from_slice(&built.bytes), shared.clone())
                    .ok()
                    .map(Arc::new)
            });
        let ours_time = started.elapsed();

        // llguidance: the same schema, compact text form.
        let mut with_form = schema.clone();
        if let Value::Object(m) = &mut with_form {
            m.insert(
                "x-guidance".into(),
                serde_json::json!({"item_separator": ",", "key_separator": ":", "whitespace_flexible": false}),
            );
        }
        let started = Instant::now();
        let peer = LlgPeer::with_env(&env, &format!("start: %json {with_form}"));
        let theirs_time = started.elapsed();
        let mut peer = peer.ok();

        if let Some(engine) = &engine {
            ours.compiled += 1;
            ours_compile.push(ours_time);
            for (tokens, valid) in &tests {
                ours.record(*valid, run_ours(engine, tokens, &mut mask, None));
                if check_reference && *valid {
                    compared += compare_with_reference(engine, tokens)
                        .unwrap_or_else(|e| panic!("{name}: compiled vs reference: {e}"));
                }
            }
        }
        if let Some(peer) = peer.as_mut() {
            theirs.compiled += 1;
            theirs_compile.push(theirs_time);
            for (tokens, valid) in &tests {
                theirs.record(*valid, run_llguidance(peer, tokens, eos, &mut mask, None));
            }
        }
        let (Some(engine), Some(peer)) = (&engine, peer.as_mut()) else {
            continue;
        };
        both += 1;
        for (tokens, _) in tests.iter().filter(|(_, valid)| *valid) {
            // The passes above warmed both; these are recorded.
            run_ours(
                engine,
                tokens,
                &mut mask,
                Some((&mut ours_mask, &mut ours_commit)),
            );
            run_llguidance(
                peer,
                tokens,
                eos,
                &mut mask,
                Some((&mut theirs_mask, &mut theirs_commit)),
            );
        }
    }

    println!(
        "MaskBench subset: {} files ({}), property order {order:?}, tokenizer {spec} prepared once (stackmask {:.2} s, llguidance {:.2} s)",
        files.len(),
        dir.display(),
        ours_setup.as_secs_f64(),
        theirs_setup.as_secs_f64()
    );
    if check_reference {
        println!(
            "compiled masks equal the reference path's at all {compared} steps of the valid instances"
        );
    }
    println!("verdicts on the test instances of the schemas each engine compiles:");
    println!("{}", ours.line("stackmask", files.len()));
    println!("{}", theirs.line("llguidance", files.len()));
    println!("compile, schema text to a ready matcher:");
    println!("{}", compile_line("stackmask", &mut ours_compile));
    println!("{}", compile_line("llguidance", &mut theirs_compile));
    println!("latency over the valid instances of the {both} schemas both compile (second pass):");
    println!("{}", row("stackmask get_mask", &ours_mask));
    println!("{}", row("llguidance get_mask", &theirs_mask));
    println!("{}", ratio("get_mask", &ours_mask, &theirs_mask));
    println!("{}", row("stackmask commit", &ours_commit));
    println!("{}", row("llguidance commit", &theirs_commit));
    println!("{}", ratio("commit", &ours_commit, &theirs_commit));
}
