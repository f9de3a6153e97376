//! GLR work per consumed byte on every shipped grammar's samples (× `bytes`): the average
//! and the most one byte took, and where. These are the figures the work budget's
//! defaults are documented against (`glr::DEFAULT_WORK_PER_BYTE`, README "Limits").
//!
//! ```sh
//! cargo run --release -p stackmask-benches --example byte_work
//! ```

use stackmask_benches::workload;
use stackmask_formats::artifact::AlignedBytes;
use stackmask_runtime::{Engine, Matcher};
use std::sync::Arc;

fn main() {
    for grammar in ["json", "expr", "toml", "sql", "c"] {
        let (_, built) = workload::build(&format!("{grammar}.lark"), "bytes");
        let engine =
            Arc::new(Engine::from_bytes(AlignedBytes::from_slice(&built.bytes)).expect("engine"));
        let dir = workload::workspace().join("grammars/samples").join(grammar);
        let (mut most, mut total, mut bytes) = (0u64, 0u64, 0u64);
        let mut where_most = String::new();
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .expect("samples")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        for path in files {
            let text = std::fs::read(&path).expect("sample");
            let mut m = Matcher::new(engine.clone());
            // No refill and a budget that never runs out: each byte's drop in credit is
            // exactly its work.
            m.set_work_budget(0, 1 << 60);
            for (i, &b) in text.iter().enumerate() {
                let before = m.work_credit();
                m.commit_bytes(&[b])
                    .expect("a shipped sample is a sentence");
                let work = before - m.work_credit();
                total += work;
                bytes += 1;
                if work > most {
                    most = work;
                    where_most = format!("{} byte {i}", path.display());
                }
            }
        }
        println!(
            "{grammar}: {:.2} units a byte on average, {most} at most ({where_most})",
            total as f64 / bytes as f64
        );
    }
}
