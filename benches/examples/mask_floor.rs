//! How far `fill_mask` is from the cost of writing the mask: repeated masks at fixed
//! points of a document (with and without the matcher's mask cache), each weight of
//! the Parser DWA OR-ed alone (and zeroed + OR-ed against written, the choice a mask
//! outside the cache makes), and a plain 25 KB memset and memcpy beside them.
//!
//! `cargo run --release -p stackmask-benches --example mask_floor -- ARTIFACT DOCUMENT [--weights] [--at BYTES]`

use stackmask_runtime::{Engine, Matcher};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

const REPEATS: u32 = 200_000;

fn per_call_us(mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..REPEATS {
        f();
    }
    start.elapsed().as_secs_f64() * 1e6 / REPEATS as f64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, artifact, document, rest @ ..] = &args[..] else {
        eprintln!("usage: mask_floor ARTIFACT DOCUMENT [--weights] [--at BYTES]");
        std::process::exit(2);
    };
    let engine = Arc::new(Engine::load(artifact).expect("artifact"));
    let text = std::fs::read(document).expect("document");
    let words = engine.mask_words();
    let mut mask = vec![0u32; words];
    let cuts = match rest.iter().position(|a| a == "--at") {
        Some(i) => vec![rest[i + 1].parse().expect("--at BYTES")],
        None => vec![text.len() / 3, text.len() / 2, 2 * text.len() / 3],
    };
    for slots in [0, 8] {
        let mut m = Matcher::new(engine.clone());
        m.set_mask_cache_slots(slots);
        for &cut in &cuts {
            m.reset();
            m.commit_bytes(&text[..cut])
                .expect("a prefix of the document");
            let us = per_call_us(|| m.fill_mask(black_box(&mut mask)));
            let tokens: u32 = mask.iter().map(|w| w.count_ones()).sum();
            println!(
                "fill_mask, {slots} cache slots, after {cut} bytes: {us:.3} µs ({tokens} tokens)"
            );
        }
    }
    if rest.iter().any(|a| a == "--weights") {
        let dwa = engine.parser_dwa();
        for w in 1..(dwa.weight_index.len() - 1) as u32 {
            let words: u32 = dwa
                .chunks_of(w)
                .iter()
                .map(|&c| dwa.chunk_table[3 * c as usize + 1])
                .sum();
            let us = per_call_us(|| dwa.or_weight(w, black_box(&mut mask)));
            // The two ways a mask not kept in the cache starts from its largest weight
            // (`kept_unions::write_union`): zeroed then OR-ed, or written.
            let zero_or = per_call_us(|| {
                black_box(&mut mask).fill(0);
                dwa.or_weight(w, black_box(&mut mask));
            });
            let write = per_call_us(|| dwa.write_weight(w, black_box(&mut mask)));
            println!(
                "weight {w}: {} chunks, {words} words: OR {us:.3} µs, zero + OR {zero_or:.3} µs, write {write:.3} µs",
                dwa.chunk_count(w)
            );
        }
    }
    let src = vec![0x5555u32; words];
    println!(
        "memcpy: {:.3} µs",
        per_call_us(|| black_box(&mut mask).copy_from_slice(black_box(&src)))
    );
    println!(
        "memset: {:.3} µs",
        per_call_us(|| black_box(&mut mask).fill(0))
    );
}
