//! `stackmask bench --compare-masks`: stackmask's mask beside a peer's at every step of
//! the bench's traces (the peer's masks come from its driver's dump,
//! `stackmask_peers::mask_dump`). Every differing step is checked against stackmask's
//! reference path (Earley + token trie, DESIGN.md §1), so the report says, token by
//! token, which side the definition agrees with. Steps are grouped by what differs
//! (EOS and/or text tokens, in which direction), with examples of each group.

use stackmask_peers::mask_dump::read_record;
use stackmask_peers::trace_file::TraceFile;
use stackmask_runtime::reference::ReferenceMatcher;
use stackmask_runtime::{Engine, Matcher};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::io::BufReader;
use std::path::Path;
use std::sync::Arc;

/// What differs at one step, the key steps are grouped by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DiffKind {
    /// EOS allowed by the peer only.
    pub eos_peer_only: bool,
    /// EOS allowed by stackmask only.
    pub eos_ours_only: bool,
    /// Text tokens allowed by the peer only.
    pub text_peer_only: bool,
    /// Text tokens allowed by stackmask only.
    pub text_ours_only: bool,
}

impl DiffKind {
    fn describe(&self, peer: &str) -> String {
        let mut parts = vec![];
        if self.eos_peer_only {
            parts.push(format!("EOS only in {peer}"));
        }
        if self.eos_ours_only {
            parts.push("EOS only in stackmask".to_string());
        }
        if self.text_peer_only {
            parts.push(format!("text tokens only in {peer}"));
        }
        if self.text_ours_only {
            parts.push("text tokens only in stackmask".to_string());
        }
        parts.join(" + ")
    }
}

/// The ids set in `a` and not in `b`.
pub fn only_in(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = vec![];
    for (w, (&x, &y)) in a.iter().zip(b).enumerate() {
        let mut bits = x & !y;
        while bits != 0 {
            out.push(w as u32 * 32 + bits.trailing_zeros());
            bits &= bits - 1;
        }
    }
    out
}

fn bit(mask: &[u32], t: u32) -> bool {
    mask[t as usize / 32] >> (t % 32) & 1 == 1
}

/// The key of a differing step.
pub fn classify(peer_only: &[u32], ours_only: &[u32], eos: u32) -> DiffKind {
    DiffKind {
        eos_peer_only: peer_only.contains(&eos),
        eos_ours_only: ours_only.contains(&eos),
        text_peer_only: peer_only.iter().any(|&t| t != eos),
        text_ours_only: ours_only.iter().any(|&t| t != eos),
    }
}

#[derive(Default)]
struct Group {
    steps: usize,
    /// Differing tokens where the reference mask has stackmask's bit / the peer's bit.
    reference_with_ours: usize,
    reference_with_peer: usize,
    examples: Vec<String>,
}

/// Compares the dump at `dump` (written by `peer`'s driver for `file`) with stackmask's
/// masks and its reference path; returns the report text and whether every differing
/// token is decided in stackmask's favour by the reference path.
pub fn compare(
    engine: &Arc<Engine>,
    file: &TraceFile,
    peer: &str,
    dump: &Path,
    examples: usize,
) -> Result<(String, bool), String> {
    let words = engine.mask_words();
    if words != file.vocab.mask_words() {
        return Err("the trace file's vocabulary is not the artifact's".into());
    }
    let vocab = engine.vocab();
    let eos = vocab.eos;
    let reference = engine.reference()?;
    let f = std::fs::File::open(dump).map_err(|e| format!("{}: {e}", dump.display()))?;
    let mut input = BufReader::new(f);
    let mut ours = Matcher::new(engine.clone());
    let mut refm = ReferenceMatcher::new(reference.clone());
    let (mut mask, mut ref_mask) = (vec![0u32; words], vec![0u32; words]);
    let mut groups: BTreeMap<DiffKind, Group> = BTreeMap::new();
    let (mut current, mut committed, mut compared) = (usize::MAX, 0usize, 0usize);
    let mut text: Vec<u8> = vec![];
    let mut ours_wrong = 0usize;
    while let Some(rec) = read_record(&mut input, words)? {
        let trace = file.traces.get(rec.trace).ok_or_else(|| {
            format!(
                "the dump names trace {} of {}",
                rec.trace,
                file.traces.len()
            )
        })?;
        if rec.trace != current {
            (current, committed) = (rec.trace, 0);
            ours.reset();
            refm = ReferenceMatcher::new(reference.clone());
            text.clear();
        }
        if rec.step < committed || rec.step > trace.tokens.len() {
            return Err(format!(
                "dump record out of order: trace {} step {}",
                rec.trace, rec.step
            ));
        }
        for &t in &trace.tokens[committed..rec.step] {
            ours.commit(t).map_err(|e| format!("{}: {e}", trace.name))?;
            refm.commit(t)
                .map_err(|e| format!("{}: reference: {e}", trace.name))?;
            text.extend_from_slice(vocab.token_bytes(t));
        }
        committed = rec.step;
        compared += 1;
        ours.try_fill_mask(&mut mask)
            .map_err(|e| format!("{}: step {}: {e}", trace.name, rec.step))?;
        if mask == rec.mask {
            continue;
        }
        let peer_only = only_in(&rec.mask, &mask);
        let ours_only = only_in(&mask, &rec.mask);
        refm.fill_mask(&mut ref_mask);
        let g = groups
            .entry(classify(&peer_only, &ours_only, eos))
            .or_default();
        g.steps += 1;
        for &t in peer_only.iter().chain(&ours_only) {
            if bit(&ref_mask, t) == bit(&mask, t) {
                g.reference_with_ours += 1;
            } else {
                g.reference_with_peer += 1;
                ours_wrong += 1;
            }
        }
        if g.examples.len() < examples {
            let show = |ids: &[u32]| -> String {
                let mut s: Vec<String> = ids
                    .iter()
                    .take(6)
                    .map(|&t| match vocab.is_normal(t) {
                        true => format!("{:?}", String::from_utf8_lossy(vocab.token_bytes(t))),
                        false => format!("<special {t}>"),
                    })
                    .collect();
                if ids.len() > 6 {
                    s.push(format!("… ({} in all)", ids.len()));
                }
                s.join(" ")
            };
            let tail = &text[text.len().saturating_sub(50)..];
            g.examples.push(format!(
                "{} step {} after …{:?}\n      only in {peer}: {}\n      only in stackmask: {}",
                trace.name,
                rec.step,
                String::from_utf8_lossy(tail),
                show(&peer_only),
                show(&ours_only)
            ));
        }
    }
    let differing: usize = groups.values().map(|g| g.steps).sum();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{peer} vs stackmask: {compared} steps compared, {differing} differ"
    );
    for (kind, g) in &groups {
        let _ = writeln!(
            out,
            "  {} — {} steps; reference path agrees with stackmask on {} differing tokens, with {peer} on {}",
            kind.describe(peer),
            g.steps,
            g.reference_with_ours,
            g.reference_with_peer
        );
        for e in &g.examples {
            let _ = writeln!(out, "    {e}");
        }
    }
    Ok((out, ours_wrong == 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_are_listed_and_classified() {
        let peer = [0b1010u32, 1 << 3];
        let ours = [0b0110u32, 0];
        assert_eq!(only_in(&peer, &ours), vec![3, 35]);
        assert_eq!(only_in(&ours, &peer), vec![2]);
        let k = classify(&[3, 35], &[2], 35);
        assert_eq!(
            k,
            DiffKind {
                eos_peer_only: true,
                eos_ours_only: false,
                text_peer_only: true,
                text_ours_only: true
            }
        );
        assert_eq!(
            k.describe("glrmask"),
            "EOS only in glrmask + text tokens only in glrmask + text tokens only in stackmask"
        );
        let k = classify(&[], &[35], 35);
        assert_eq!(k.describe("llguidance"), "EOS only in stackmask");
    }
}
