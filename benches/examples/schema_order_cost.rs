//! What `--property-order any` costs on the MaskBench subset, beside declared order:
//! per schema (strict mode, draft from `$schema`), the grammar's size, the largest
//! any-order object (member nonterminals under one pointer: objects built at the same
//! pointer, such as `anyOf` branches merged with their parent, add up), and compile
//! times by stage — front end
//! (schema → grammar + lexer DFAs), LR(1), and with `--mask` the compiled mask path
//! (Terminal/Parser DWAs) for the tokenizer, loaded once.
//! `cargo run -p stackmask-benches --example schema_order_cost -- [TOKENIZER] [--mask] [--step N]`
//! (TOKENIZER default `hf:../shared/tokenizers/qwen2.tokenizer.json`, from the repo root).

use stackmask_compiler::budget::Deadline;
use stackmask_compiler::frontend::json_schema::{self, PropertyOrder, SchemaOptions};
use stackmask_compiler::pipeline::{self, CompileOptions, LexedGrammar};
use std::collections::HashMap;
use std::time::Instant;

const MASKBENCH: &str = "../shared/corpus/jsonschemabench/maskbench_data_subset";

#[derive(Default)]
struct Totals {
    compiled: usize,
    refused: usize,
    limit: usize,
    rules: Vec<usize>,
    largest_object: Vec<usize>,
    front_ms: Vec<f64>,
    lr_ms: Vec<f64>,
    mask_ms: Vec<f64>,
    total_ms: Vec<f64>,
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mask = args.iter().any(|a| a == "--mask");
    let step = args
        .iter()
        .position(|a| a == "--step")
        .and_then(|i| args.get(i + 1))
        .map_or(1, |s| s.parse().expect("--step N"));
    let spec = args
        .iter()
        .find(|a| !a.starts_with("--") && a.parse::<usize>().is_err())
        .cloned()
        .unwrap_or_else(|| "hf:../shared/tokenizers/qwen2.tokenizer.json".into());
    let tokenizer = stackmask_compiler::vocab::load_tokenizer(&spec).expect("tokenizer");
    let trie = stackmask_compiler::vocab::build_trie(&tokenizer.vocab);
    let mut paths: Vec<_> = std::fs::read_dir(MASKBENCH)
        .expect("run from the repo root")
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    let mut totals: HashMap<&str, Totals> = HashMap::new();
    for path in paths.iter().step_by(step) {
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let schema = &doc["schema"];
        let name = path.file_name().unwrap().to_string_lossy();
        for (mode, order) in [
            ("declared", PropertyOrder::Declared),
            ("any", PropertyOrder::Any),
        ] {
            let t = totals.entry(mode).or_default();
            let opts = SchemaOptions {
                order,
                draft: json_schema::declared_draft(schema).unwrap_or_default(),
                ..Default::default()
            };
            let started = Instant::now();
            let g = match json_schema::schema_to_grammar(schema, &name, &opts) {
                Ok(g) => g.grammar,
                Err(e) => {
                    if e.issue.message.contains("any-order objects") {
                        t.limit += 1;
                        println!("{mode} {name}: {e}");
                    }
                    t.refused += 1;
                    continue;
                }
            };
            let Ok(dfas) = stackmask_compiler::lexer::compile_lexer(&g) else {
                t.refused += 1;
                continue;
            };
            let mut per_object: HashMap<&str, usize> = HashMap::new();
            for nt in &g.nonterminals {
                if let Some(rest) = nt.name.strip_prefix("any-order members@") {
                    *per_object
                        .entry(rest.split('#').next().unwrap())
                        .or_default() += 1;
                }
            }
            t.largest_object
                .push(per_object.values().copied().max().unwrap_or(0));
            t.rules.push(g.rules.len());
            let lexed = LexedGrammar { grammar: g, dfas };
            let front = started.elapsed().as_secs_f64() * 1e3;
            let options = CompileOptions::default();
            let lr_start = Instant::now();
            let compiled = match pipeline::compile_parser_within(
                &lexed,
                options.lr_limits(),
                &Deadline::unlimited(),
            ) {
                Ok(c) => c,
                Err(e) => {
                    println!("{mode} {name}: LR: {e}");
                    t.refused += 1;
                    continue;
                }
            };
            let lr = lr_start.elapsed().as_secs_f64() * 1e3;
            let mut mask_ms = 0.0;
            if mask {
                let m_start = Instant::now();
                if let Err(e) = pipeline::compile_mask(&compiled, &tokenizer.vocab, &trie, &options)
                {
                    println!("{mode} {name}: mask path: {e}");
                    t.refused += 1;
                    continue;
                }
                mask_ms = m_start.elapsed().as_secs_f64() * 1e3;
                t.mask_ms.push(mask_ms);
            }
            t.compiled += 1;
            t.front_ms.push(front);
            t.lr_ms.push(lr);
            t.total_ms.push(front + lr + mask_ms);
            println!(
                "{mode} {name}: {:.0} ms (front {front:.0}, LR {lr:.0}, mask {mask_ms:.0}), {} rules, {} LR states, largest any-order object {} nonterminals",
                front + lr + mask_ms,
                lexed.grammar.rules.len(),
                compiled.tables.lr.num_states,
                t.largest_object.last().unwrap(),
            );
        }
    }
    for mode in ["declared", "any"] {
        let t = totals.get_mut(mode).unwrap();
        let rules: usize = t.rules.iter().sum();
        let largest = t.largest_object.iter().copied().max().unwrap_or(0);
        println!(
            "{mode}: {} compiled, {} refused ({} at the any-order limit); grammar rules total {rules}, max {}; largest any-order object {largest} member nonterminals",
            t.compiled,
            t.refused,
            t.limit,
            t.rules.iter().max().unwrap_or(&0),
        );
        for (stage, v) in [
            ("front end", &mut t.front_ms),
            ("LR(1)", &mut t.lr_ms),
            ("mask path", &mut t.mask_ms),
            ("total", &mut t.total_ms),
        ] {
            if !v.is_empty() {
                println!(
                    "  {stage:<10} ms p50 {:.2} p99 {:.1} max {:.1}",
                    pct(v, 0.5),
                    pct(v, 0.99),
                    pct(v, 1.0)
                );
            }
        }
    }
}
