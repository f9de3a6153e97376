//! The micro-paths of a request (criterion means; the percentiles are in
//! `stackmask bench`): get_mask on a single-stack parse (JSON inside an object) and on
//! a forked GSS (C, where `return -` forks the stack: C has no reserved words), on an
//! ambiguous one (C inside an identifier after a run of `-` signs, each `--` also two
//! `-`) by the pair walk and by the subset walk, and
//! `Matcher::clone` after one document and after the same document committed ten
//! times over — a clone copies the rollback window and the open stack, not the history,
//! so the two cost the same.

use criterion::{criterion_group, criterion_main, Criterion};
use stackmask_benches::workload;
use stackmask_runtime::Matcher;

fn masks_and_clones(c: &mut Criterion) {
    for w in workload::standard() {
        let json = w.name.starts_with("json");
        let mut group = c.benchmark_group(format!("request/{}", w.name));
        let mut mask = vec![0u32; w.engine.mask_words()];

        // get_mask half-way through the first document (one stack, no fork).
        let (doc, tokens) = &w.docs[0];
        let mut m = Matcher::new(w.engine.clone());
        for &t in &tokens[..tokens.len() / 2] {
            m.commit(t).expect("token in the language");
        }
        group.bench_function(format!("get_mask mid {doc}"), |b| {
            b.iter(|| m.fill_mask(&mut mask))
        });

        if !json {
            // A forked stack: both readings of `-` after `return` stay open.
            let mut f = Matcher::new(w.engine.clone());
            f.commit_bytes(b"int f(int a)\n{\n    return -")
                .expect("a C prefix");
            group.bench_function("get_mask forked GSS", |b| b.iter(|| f.fill_mask(&mut mask)));

            // An ambiguous stack: hundreds of nodes, each read in many automaton states.
            let text = format!(
                "int f(int x)\n{{\n    return x{}\n logWithout_ACC",
                "-".repeat(60)
            );
            for (walk, pairs) in [("pair walk", u32::MAX), ("subset walk", 0)] {
                let mut a = Matcher::new(w.engine.clone());
                a.set_subset_walk_after(pairs);
                a.commit_bytes(text.as_bytes()).expect("a C prefix");
                group.bench_function(format!("get_mask ambiguous GSS, {walk}"), |b| {
                    b.iter(|| a.fill_mask(&mut mask))
                });
            }
        }

        // clone after one document and after ten (a JSON array of ten documents; C:
        // the function repeated).
        let text = std::fs::read(workload::workspace().join(if json {
            "grammars/samples/json/schemastore_package-test.json"
        } else {
            "grammars/samples/c/sort.c"
        }))
        .expect("sample");
        for copies in [1usize, 10] {
            let doc = if json {
                let inner = vec![text.trim_ascii().to_vec(); copies].join(&b","[..]);
                [b"[".to_vec(), inner, b"]".to_vec()].concat()
            } else {
                text.repeat(copies)
            };
            let tokens = w.tokenizer.encode(&doc).expect("tokenizes");
            let mut m = Matcher::new(w.engine.clone());
            for &t in &tokens {
                m.commit(t).expect("token in the language");
            }
            group.bench_function(format!("clone after {} bytes", doc.len()), |b| {
                b.iter(|| m.clone())
            });
        }
        group.finish();
    }
}

criterion_group!(benches, masks_and_clones);
criterion_main!(benches);
