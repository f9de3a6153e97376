//! Times glrmask 0.5 (crates.io, public API) on a stackmask trace file: the peer driver
//! `stackmask bench --peer glrmask=PATH` starts. See `stackmask_peers::driver` for the
//! command line and README.md here for how to build it.
//!
//! Mapping onto glrmask:
//! * vocabulary → `Vocab::new` over the non-special tokens only (special tokens and EOS
//!   are left out, so glrmask can never allow them as text); ids stay the trace file's.
//! * grammar → `Grammar::from_lark(..).compile(&vocab)` (timed as `compile`). glrmask
//!   reads `%ignore` the Lark way (ignore lexemes also before the first and after the
//!   last lexeme); stackmask does not (DESIGN.md §1). For a shipped grammar with
//!   `%ignore` an explicit-whitespace copy in `grammars/` with stackmask's language is
//!   used instead (see its header); any other `%ignore` grammar is run as is and the
//!   report says its language differs. `%llguidance` lines (llguidance options) are
//!   dropped: glrmask does not read them (the report says so).
//! * EOS → glrmask's mask covers body tokens; the EOS bit is set from
//!   `ConstraintState::is_accepting()`, inside the timed get_mask.
//! * load → `Constraint::save()` then `Constraint::load(bytes, &vocab)`, timed.

use glrmask::{Constraint, ConstraintState, Grammar, Vocab};
use stackmask_peers::driver::{self, Outcome};
use stackmask_peers::replay::{time_make, Subject};
use stackmask_peers::trace_file::TraceFile;
use std::time::{Duration, Instant};

/// Shipped grammars with `%ignore`, and their explicit-whitespace copies.
const REWRITTEN: &[(&str, &str, &str)] = &[(
    "grammars/c.lark",
    include_str!("../../../grammars/c.lark"),
    include_str!("../grammars/c.lark"),
)];

/// The grammar text glrmask gets for `original`, with notes on what changed.
fn grammar_for_glrmask(original: &str, notes: &mut Vec<String>) -> String {
    if let Some((name, _, copy)) = REWRITTEN.iter().find(|(_, o, _)| *o == original) {
        notes.push(format!(
            "{name}: glrmask gets the explicit-whitespace copy peers/glrmask-driver/{name} (same language as stackmask's)"
        ));
        return copy.to_string();
    }
    let mut kept = Vec::new();
    for line in original.lines() {
        if line.trim_start().starts_with("%llguidance") {
            notes.push(format!(
                "dropped {:?} (an llguidance option glrmask does not read)",
                line.trim()
            ));
        } else {
            kept.push(line);
        }
    }
    if kept.iter().any(|l| l.trim_start().starts_with("%ignore")) {
        notes.push(
            "LANGUAGE DIFFERS: glrmask reads %ignore the Lark way (also before the first and after the last lexeme) and there is no explicit-whitespace copy of this grammar".into(),
        );
    }
    kept.join("\n") + "\n"
}

struct GlrSubject<'a> {
    constraint: &'a Constraint,
    state: ConstraintState<'a>,
    eos: u32,
}

impl Subject for GlrSubject<'_> {
    fn time_new_matcher(&mut self) -> Duration {
        time_make(|| self.constraint.start())
    }

    fn reset(&mut self) -> Result<(), String> {
        self.state = self.constraint.start();
        Ok(())
    }

    fn fill_mask(&mut self, mask: &mut [u32]) -> Result<(), String> {
        self.state.fill_mask(mask);
        if self.state.is_accepting() {
            mask[self.eos as usize / 32] |= 1 << (self.eos % 32);
        }
        Ok(())
    }

    fn commit(&mut self, token: u32) -> Result<(), String> {
        if self.state.commit_token(token) {
            Ok(())
        } else {
            Err(format!("commit_token({token}) returned false"))
        }
    }

    fn time_clone(&mut self) -> Duration {
        time_make(|| self.state.clone())
    }
}

fn main() -> std::process::ExitCode {
    driver::main(
        "glrmask",
        "0.5.0",
        "crate glrmask =0.5.0 (Grammar::from_lark, Grammar::compile, ConstraintState::fill_mask / commit_token)",
        |file: &TraceFile, mode, timings| {
            let mut out = Outcome::default();
            let bytes = file.vocab.token_bytes()?;
            let special = file.vocab.is_special();
            let started = Instant::now();
            let entries: Vec<(u32, Vec<u8>)> = bytes
                .into_iter()
                .enumerate()
                .filter(|(i, _)| !special[*i])
                .map(|(i, b)| (i as u32, b))
                .collect();
            let vocab = Vocab::new(entries);
            out.notes.push(format!(
                "vocabulary setup (Vocab::new, not in compile): {:.1} ms",
                started.elapsed().as_secs_f64() * 1e3
            ));
            let text = grammar_for_glrmask(&file.grammar, &mut out.notes);
            let started = Instant::now();
            let constraint = Grammar::from_lark(&text)
                .and_then(|g| g.compile(&vocab))
                .map_err(|e| format!("glrmask rejects the grammar: {e}"))?;
            timings.record("compile", started.elapsed());
            if *mode == driver::Mode::Bench {
                let saved = constraint.save();
                out.notes.push(format!("saved constraint: {} bytes", saved.len()));
                for _ in 0..3 {
                    let started = Instant::now();
                    let loaded = Constraint::load(&saved[..], &vocab)
                        .map_err(|e| format!("glrmask load: {e}"))?;
                    timings.record("load", started.elapsed());
                    drop(loaded);
                }
            }
            let mut subject = GlrSubject {
                constraint: &constraint,
                state: constraint.start(),
                eos: file.vocab.eos,
            };
            out.rejections = driver::drive(&mut subject, file, mode, timings)?;
            Ok(out)
        },
    )
}
