//! Artifact load time (criterion): `Engine::load` of a compiled artifact file — map it,
//! check every checksum, validate every index — for the shipped JSON and C grammars
//! with o200k_base (DESIGN.md §6: load ≤ 10 ms). The file is written once to the temp
//! directory; after the first iteration it is in the page cache, which is the serving
//! case (many processes mapping one artifact).

use criterion::{criterion_group, criterion_main, Criterion};
use stackmask_benches::workload;
use stackmask_runtime::Engine;

fn load(c: &mut Criterion) {
    let mut group = c.benchmark_group("load");
    for grammar in ["json.lark", "c.lark"] {
        let spec = "tiktoken:o200k_base";
        let (_, built) = workload::build(grammar, spec);
        let file = std::env::temp_dir().join(format!(
            "stackmask-bench-{}-{}.smask",
            std::process::id(),
            grammar.trim_end_matches(".lark")
        ));
        std::fs::write(&file, &built.bytes).expect("write the artifact");
        group.bench_function(format!("{grammar} × {spec}"), |b| {
            b.iter(|| Engine::load(&file).expect("a valid artifact"))
        });
        let _ = std::fs::remove_file(&file);
    }
    group.finish();
}

criterion_group!(benches, load);
criterion_main!(benches);
