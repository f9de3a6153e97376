//! The steady state of commit and fill_mask allocates nothing: after a warm-up pass
//! over a document and `reset()`, filling every mask and committing the same document
//! again (and rolling back, and asking `is_accepting`) makes zero heap allocations, in
//! the matcher, in a warmed clone of it, in a new matcher made after they were
//! dropped (it takes their buffers), and in clones made of that one (they take the
//! buffers of the clones dropped before). Counted with a global allocator, so
//! this file is its own test binary.

mod common;

use common::workspace;
use stackmask_compiler::{pipeline, vocab};
use stackmask_formats::artifact::AlignedBytes;
use stackmask_runtime::{Engine, Matcher};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn engine(grammar: &str, spec: &str) -> (Arc<Engine>, vocab::Tokenizer) {
    let path = workspace().join("grammars").join(grammar);
    let source = std::fs::read_to_string(&path).unwrap();
    let built = pipeline::build_artifact_from_source(
        &source,
        grammar,
        spec,
        &pipeline::CompileOptions::default(),
        |_| {},
    )
    .unwrap();
    let engine = Engine::from_bytes(AlignedBytes::from_slice(&built.bytes)).unwrap();
    (Arc::new(engine), built.tokenizer)
}

fn run(m: &mut Matcher, tokens: &[u32], eos: u32, mask: &mut [u32]) {
    for (i, &t) in tokens.iter().enumerate() {
        m.fill_mask(mask);
        assert!(
            mask[t as usize / 32] >> (t % 32) & 1 == 1,
            "token {i} not in its mask"
        );
        m.commit(t).unwrap();
        if i % 7 == 3 {
            m.rollback(1).unwrap();
            m.commit(t).unwrap();
        }
        let _ = m.is_accepting();
    }
    m.fill_mask(mask);
    m.commit(eos).unwrap();
}

#[test]
fn commit_and_fill_mask_do_not_allocate_when_warm() {
    for (grammar, doc) in [
        (
            "json.lark",
            "grammars/samples/json/schemastore_package-test.json",
        ),
        ("c.lark", "grammars/samples/c/sort.c"),
    ] {
        let (engine, tokenizer) = engine(grammar, "bytes");
        let text = std::fs::read(workspace().join(doc)).unwrap();
        let tokens = tokenizer.encode(&text).unwrap();
        let cold = ALLOCATIONS.load(Ordering::Relaxed);
        let mut mask = vec![0u32; engine.mask_words()];
        let mut m = Matcher::new(engine);
        run(&mut m, &tokens, tokenizer.eos(), &mut mask);
        // The counter works: the cold pass grows every arena.
        assert!(
            ALLOCATIONS.load(Ordering::Relaxed) - cold > 10,
            "{grammar}: the cold pass should allocate"
        );
        m.reset();
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        run(&mut m, &tokens, tokenizer.eos(), &mut mask);
        let after = ALLOCATIONS.load(Ordering::Relaxed);
        assert_eq!(
            after - before,
            0,
            "{grammar}: {} allocations in the warm pass over {} tokens",
            after - before,
            tokens.len()
        );
        // A clone (beam search) starts with empty scratch buffers: once it has warmed
        // them on one pass, it too commits and masks without allocating.
        let mut c = m.clone();
        c.reset();
        run(&mut c, &tokens, tokenizer.eos(), &mut mask);
        c.reset();
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        run(&mut c, &tokens, tokenizer.eos(), &mut mask);
        let after = ALLOCATIONS.load(Ordering::Relaxed);
        assert_eq!(after - before, 0, "{grammar}: a warm clone allocated");
        // Dropped, a matcher leaves its buffers to the engine: a new matcher takes
        // them, and its whole pass, `Matcher::new` included, allocates nothing.
        let engine = c.engine().clone();
        drop(c);
        drop(m);
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        let mut n = Matcher::new(engine);
        run(&mut n, &tokens, tokenizer.eos(), &mut mask);
        let after = ALLOCATIONS.load(Ordering::Relaxed);
        assert_eq!(
            after - before,
            0,
            "{grammar}: a new matcher after a dropped one allocated"
        );
        // A clone (beam search) takes a dropped matcher's buffers too and copies the
        // parse into them: cloned at every tenth step of a pass, each clone masking,
        // committing and dropped, nothing allocates once a pass like it has warmed
        // the buffers (a clone's first mask walks the whole stack, which the walk's
        // memo of a matcher masking step by step never records at once).
        let beams = |n: &mut Matcher, mask: &mut [u32]| {
            n.reset();
            for (i, &t) in tokens.iter().enumerate() {
                if i % 10 == 0 {
                    let mut beam = n.clone();
                    beam.fill_mask(mask);
                    beam.commit(t).unwrap();
                }
                n.fill_mask(mask);
                n.commit(t).unwrap();
            }
        };
        beams(&mut n, &mut mask);
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        beams(&mut n, &mut mask);
        let after = ALLOCATIONS.load(Ordering::Relaxed);
        assert_eq!(
            after - before,
            0,
            "{grammar}: clones over dropped buffers allocated"
        );
    }
}
