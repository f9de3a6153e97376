//! Commit latency per token (criterion): the canonical token traces of real JSON and
//! C documents with o200k_base, committed one token at a time on the compiled path.
//! Criterion reports the mean per token (throughput in elements); the percentiles
//! are in the `latency` harness.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use stackmask_benches::workload;
use stackmask_runtime::Matcher;

fn commit(c: &mut Criterion) {
    for w in workload::standard() {
        let mut group = c.benchmark_group(format!("commit/{}", w.name));
        for (doc, tokens) in &w.docs {
            group.throughput(Throughput::Elements(tokens.len() as u64));
            let mut m = Matcher::new(w.engine.clone());
            group.bench_function(doc.as_str(), |b| {
                b.iter(|| {
                    m.reset();
                    for &t in tokens {
                        m.commit(t).expect("token in the language");
                    }
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, commit);
criterion_main!(benches);
