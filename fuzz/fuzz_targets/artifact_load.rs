//! `Engine::from_bytes` on hostile artifacts: an error or an engine, never a panic; an
//! engine that loads must then survive a few matcher operations.
//!
//! Random bytes die at the container checks (magic, lengths, xxh3 checksums), so the
//! first input byte picks how the rest becomes an artifact:
//!
//! - `0`: the rest, as is;
//! - `1`: patches `(offset: u24, byte)` over the whole of a real artifact
//!   (`expr.lark` × `bytes`), then every checksum recomputed from the patched table;
//! - `2`: patches `(offset: u16, byte)` inside one section (chosen by the next byte),
//!   the artifact reassembled by the writer with fresh checksums;
//! - `3`: one section (next byte) replaced by the rest, reassembled the same way.
//!
//! Modes 1–3 reach the section validators of `Engine`, where the bugs would be. With bit
//! 2 of the first byte set, modes 2 and 3 also drop the vocabulary and trie sections and
//! load the rest with `Engine::from_bytes_sharing` over the `bytes` vocabulary (the
//! route of Python's `Compiler`); every other input is also offered to it, to be refused.

#![no_main]

use libfuzzer_sys::fuzz_target;
use stackmask_formats::artifact::AlignedBytes;
use stackmask_formats::layout;
use stackmask_fuzz::compiled_support::Parts;
use stackmask_runtime::{Engine, Matcher, SharedVocab};
use std::sync::{Arc, OnceLock};
use xxhash_rust::xxh3::{xxh3_64, Xxh3Default};

// Container layout (formats/ARTIFACT.md): a 64-byte header whose last 8 bytes are the
// xxh3 of the rest of the header and the table; 32-byte table entries holding the
// payload's offset (8), length (16) and xxh3 (24).
const HEADER_LEN: usize = 64;
const OFF_COUNT: usize = 20;
const OFF_HEADER_CHECKSUM: usize = 56;
const ENTRY_LEN: usize = 32;

fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Recomputes the checksums of whatever table the (patched) header describes, so the
/// container accepts the payloads as they are.
fn fix_checksums(bytes: &mut [u8]) {
    if bytes.len() < HEADER_LEN {
        return;
    }
    let count = u32::from_le_bytes(bytes[OFF_COUNT..OFF_COUNT + 4].try_into().unwrap());
    let table_end = HEADER_LEN.saturating_add((count as usize).saturating_mul(ENTRY_LEN));
    if table_end > bytes.len() {
        return;
    }
    for e in (HEADER_LEN..table_end).step_by(ENTRY_LEN) {
        let (offset, len) = (le_u64(bytes, e + 8), le_u64(bytes, e + 16));
        if let Some(end) = offset
            .checked_add(len)
            .filter(|&end| end <= bytes.len() as u64)
        {
            let sum = xxh3_64(&bytes[offset as usize..end as usize]);
            bytes[e + 24..e + 32].copy_from_slice(&sum.to_le_bytes());
        }
    }
    let mut h = Xxh3Default::new();
    h.update(&bytes[..OFF_HEADER_CHECKSUM]);
    h.update(&bytes[HEADER_LEN..table_end]);
    let sum = h.digest();
    bytes[OFF_HEADER_CHECKSUM..HEADER_LEN].copy_from_slice(&sum.to_le_bytes());
}

/// The `bytes` vocabulary and trie, validated once per process.
fn shared_vocab() -> Arc<SharedVocab> {
    static SHARED: OnceLock<Arc<SharedVocab>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let tokenizer = stackmask_compiler::vocab::load_tokenizer("bytes").unwrap();
            let trie = stackmask_compiler::vocab::build_trie(&tokenizer.vocab);
            Arc::new(SharedVocab::new(tokenizer.vocab, trie).unwrap())
        })
        .clone()
}

fn hostile_artifact(data: &[u8]) -> Option<Vec<u8>> {
    let (&mode, rest) = data.split_first()?;
    let real = stackmask_fuzz::artifact("expr");
    match mode % 4 {
        0 => Some(rest.to_vec()),
        1 => {
            let mut bytes = real.to_vec();
            for p in rest.chunks_exact(4) {
                let at = u32::from_le_bytes([p[0], p[1], p[2], 0]) as usize % bytes.len();
                bytes[at] = p[3];
            }
            fix_checksums(&mut bytes);
            Some(bytes)
        }
        _ => {
            let (&which, rest) = rest.split_first()?;
            let mut parts = Parts::of(real);
            let n = parts.sections.len();
            let section = &mut parts.sections[which as usize % n].bytes;
            if mode % 4 == 2 {
                for p in rest.chunks_exact(3) {
                    if !section.is_empty() {
                        let at = u16::from_le_bytes([p[0], p[1]]) as usize % section.len();
                        section[at] = p[2];
                    }
                }
            } else {
                *section = rest.to_vec();
            }
            if mode & 4 != 0 {
                parts
                    .sections
                    .retain(|s| !layout::VOCAB_SECTIONS.contains(&s.kind));
            }
            Some(parts.assemble())
        }
    }
}

/// Operations on an engine that loaded: masks, commits of the tokens the mask allows
/// and of arbitrary ids, bytes, rollback, and the reference engine's set-up.
fn exercise(engine: Engine, data: &[u8]) {
    let engine = Arc::new(engine);
    let mut m = Matcher::new(engine.clone());
    let mut mask = vec![0u32; engine.mask_words()];
    m.fill_mask(&mut mask);
    let allowed = (0..mask.len() * 32).find(|&t| mask[t / 32] >> (t % 32) & 1 != 0);
    if let Some(t) = allowed {
        let _ = m.commit(t as u32);
        m.fill_mask(&mut mask);
    }
    for &b in data.iter().rev().take(8) {
        let _ = m.commit(u32::from(b));
        let _ = m.accepts_bytes(&[b, b'1']);
    }
    let _ = m.commit_bytes(b"1+2");
    let _ = m.is_accepting();
    let _ = m.rollback(2);
    m.fill_mask(&mut mask);
    let _ = m.fill_mask_by_trie_walk(&mut mask);
    let _ = engine.reference();
}

fuzz_target!(|data: &[u8]| {
    let Some(bytes) = hostile_artifact(data) else {
        return;
    };
    if let Ok(engine) = Engine::from_bytes(AlignedBytes::from_slice(&bytes)) {
        exercise(engine, data);
    }
    if let Ok(engine) = Engine::from_bytes_sharing(AlignedBytes::from_slice(&bytes), shared_vocab())
    {
        exercise(engine, data);
    }
});
