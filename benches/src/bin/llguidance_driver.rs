//! Times llguidance 1.9.1 on a stackmask trace file: the peer driver
//! `stackmask bench --peer llguidance=PATH` starts (command line: `stackmask_peers::driver`).
//! How vocabulary, special tokens, EOS and forcing map onto llguidance: `stackmask_benches::peer`.
//!
//! `compile` times the grammar → ready `Matcher` step (`LlgPeer::with_env`); the
//! per-vocabulary setup (token trie, `ParserFactory`) is built once before and reported in
//! the notes. llguidance cannot save a compiled grammar, so there is no `load` row.

use stackmask_benches::peer::{LlgEnv, LlgPeer, PeerVocab};
use stackmask_peers::driver::{self, Outcome};
use stackmask_peers::trace_file::TraceFile;
use std::time::Instant;

fn main() -> std::process::ExitCode {
    driver::main(
        "llguidance",
        "1.9.1",
        "crate llguidance =1.9.1 (TopLevelGrammar::from_lark, ParserFactory::create_parser, Matcher::compute_mask_or_eos / consume_token), %llguidance {\"no_forcing\": true}",
        |file: &TraceFile, mode, timings| {
            let mut out = Outcome::default();
            let vocab = PeerVocab {
                tokens: file.vocab.token_bytes()?,
                special: file.vocab.is_special(),
                eos: file.vocab.eos,
            };
            let started = Instant::now();
            let env = LlgEnv::new(&vocab)?;
            out.notes.push(format!(
                "vocabulary setup (token trie, ParserFactory; not in compile): {:.1} ms",
                started.elapsed().as_secs_f64() * 1e3
            ));
            let started = Instant::now();
            let mut peer = LlgPeer::with_env(&env, &file.grammar)?;
            timings.record("compile", started.elapsed());
            out.notes
                .extend(peer.warnings().iter().map(|w| format!("llguidance warning: {w}")));
            out.rejections = driver::drive(&mut peer, file, mode, timings)?;
            Ok(out)
        },
    )
}
