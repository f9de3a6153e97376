//! Copying mask words with `memcpy` against `copy_words` (a vector loop), by the
//! distance between source and destination modulo 4 KiB.
//!
//! ```sh
//! cargo run --release -p stackmask-benches --example copy_alias -- [ARTIFACT]
//! ```
//!
//! First a 25 KB mask and a 256-word chunk copied at distances `dst − src` (mod 4096)
//! from 0 to 4088 bytes: glibc's `memcpy` uses `rep movsb` for large blocks, which on AMD
//! Zen cores runs more than ten times slower when the destination lies a few bytes past
//! the source modulo a page (4K aliasing). Then, given an artifact, every token set that
//! masks are written from (`write_weight`: a quarter of the mask or more, long chunks)
//! written into a caller's mask at 16 page offsets, with `memcpy` per chunk (how
//! `write_weight` copied before `copy_words`) and as it does now: how many
//! (token set, offset) pairs take more than 1.5× zeroing the mask and OR-ing the set.

use stackmask_formats::parser_dwa::copy_words;
use stackmask_formats::ParserDwaRef;
use stackmask_runtime::Engine;
use std::hint::black_box;
use std::time::Instant;

/// Nanoseconds per call: the best of `rounds` rounds of `calls` calls.
fn best_ns(rounds: u32, calls: u32, mut f: impl FnMut()) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..rounds {
        let t = Instant::now();
        for _ in 0..calls {
            f();
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e9 / calls as f64);
    }
    best
}

/// Word index in `buf` of the first word at page offset `offset` (bytes).
fn at_page_offset(buf: &[u32], offset: usize) -> usize {
    let misalign = buf.as_ptr() as usize % 4096;
    ((4096 + offset - misalign) % 4096) / 4
}

/// `write_weight` as it was: each chunk copied with `copy_from_slice` (`memcpy`).
fn write_weight_memcpy(dwa: &ParserDwaRef<'_>, w: u32, mask: &mut [u32]) {
    let mut next_free = 0;
    for &c in dwa.chunks_of(w) {
        let (start, words) = dwa.chunk(c);
        mask[next_free..start].fill(0);
        mask[start..start + words.len()].copy_from_slice(words);
        next_free = start + words.len();
    }
    mask[next_free..].fill(0);
}

fn main() {
    let words = 6251; // a 200k-token mask
    let src = vec![0x5555_5555u32; words + 2048];
    let mut dst = vec![0u32; words + 2048];
    println!("copy of n words, dst − src mod 4096 bytes: ns (best of 20 × 50)");
    for n in [words, 256] {
        for distance in [0usize, 8, 16, 32, 64, 256, 1024, 2048, 4088] {
            let d = at_page_offset(&dst, 0);
            let s = at_page_offset(&src, (4096 - distance) % 4096);
            let (to, from) = (&mut dst[d..d + n], &src[s..s + n]);
            let memcpy = best_ns(20, 50, || {
                black_box(&mut *to).copy_from_slice(black_box(from))
            });
            let words_loop = best_ns(20, 50, || copy_words(black_box(&mut *to), black_box(from)));
            println!(
                "  n={n:5} distance {distance:4}: memcpy {memcpy:7.0}  copy_words {words_loop:5.0}"
            );
        }
    }

    let Some(path) = std::env::args().nth(1) else {
        return;
    };
    let engine = Engine::load(&path).expect("artifact");
    let dwa = engine.parser_dwa();
    let width = engine.mask_words();
    let mut buf = vec![0u32; width + 2048];
    let (mut sets, mut slow_memcpy, mut slow_now) = (0, 0, 0);
    let mut worst = (0.0f64, 0u32, 0usize);
    let mut worst_now = (0.0f64, 0u32, 0usize);
    for w in 1..(dwa.weight_index.len() - 1) as u32 {
        let covered = dwa.weight_words(w);
        if covered < width / 4 || covered <= 16 * dwa.chunk_count(w) {
            continue;
        }
        sets += 1;
        for offset in (0..4096).step_by(256) {
            let at = at_page_offset(&buf, offset);
            let mask = &mut buf[at..at + width];
            let or = best_ns(5, 20, || {
                mask.fill(0);
                dwa.or_weight(w, black_box(&mut *mask));
            });
            let old = best_ns(5, 20, || {
                write_weight_memcpy(&dwa, w, black_box(&mut *mask))
            });
            let now = best_ns(5, 20, || dwa.write_weight(w, black_box(&mut *mask)));
            slow_memcpy += usize::from(old > 1.5 * or);
            slow_now += usize::from(now > 1.5 * or);
            if old / or > worst.0 {
                worst = (old / or, w, offset);
            }
            if now / or > worst_now.0 {
                worst_now = (now / or, w, offset);
            }
        }
    }
    println!(
        "{path}: {sets} token sets written whole × 16 page offsets; over 1.5× zero + OR: \
         {slow_memcpy} with memcpy, {slow_now} with copy_words; the worst: {:.1}× with memcpy \
         (set {}, offset {}), {:.1}× with copy_words (set {}, offset {})",
        worst.0, worst.1, worst.2, worst_now.0, worst_now.1, worst_now.2
    );
}
