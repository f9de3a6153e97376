//! LR tables stored by row displacement (issue 11 item 3): the packed lookups answer
//! exactly what the unpacked rows say, on random and shipped grammars, and on chains
//! of nested or unit rules the tables — and the heap the LR stage peaks at — grow with
//! the rules, not with states × nonterminals (a 20,000-rule chain needed 4.8 GB of dense
//! goto table). Peak heap is counted per thread by a global allocator, so this file is
//! its own test binary and tests running beside it on other threads do not count.

mod common;

use common::{random_grammar, shipped_grammar, GrammarShape, Rng};
use stackmask_compiler::budget::Deadline;
use stackmask_compiler::lr::{self, build_lr, build_sparse_tables, LrError, LrLimits};
use stackmask_compiler::pipeline;
use stackmask_formats::Grammar;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct PeakPerThread;

thread_local! {
    /// Bytes this thread has allocated and not freed (frees of another thread's
    /// allocations may drive it below 0), and the highest it has been since reset.
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    // `try_with`: during thread teardown the locals may be gone; nothing to count then.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: forwards every call to the system allocator unchanged; only counts, in
// const-initialized thread locals (which never allocate).
unsafe impl GlobalAlloc for PeakPerThread {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: PeakPerThread = PeakPerThread;

/// Runs `f` and returns its result with the heap it peaked at above where it started.
fn peak_heap<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let start = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(start));
    let out = f();
    (out, (PEAK.with(Cell::get) - start) as usize)
}

/// Every cell and goto of the packed tables equals the unpacked rows', and the packed
/// tables have no cell the rows lack.
fn assert_packed_equals_rows(g: &Grammar, what: &str) {
    let packed = build_lr(g, 100_000).unwrap_or_else(|e| panic!("{what}: {e}"));
    let rows = build_sparse_tables(g, 100_000).unwrap();
    let t = packed.tables.view();
    assert_eq!(t.num_states as usize + 1, rows.row_start.len(), "{what}");
    let mut dense_cells = 0;
    for s in 0..t.num_states {
        let mut cells = rows.cells(s).peekable();
        for term in 0..t.num_terminals {
            let expected: &[u32] = match cells.peek() {
                Some(&(c, actions)) if c == term => {
                    cells.next();
                    actions
                }
                _ => &[],
            };
            assert_eq!(
                t.actions(s, term),
                expected,
                "{what}: state {s} terminal {term}"
            );
            dense_cells += !expected.is_empty() as usize;
        }
        assert!(
            cells.next().is_none(),
            "{what}: state {s} has cells past the last terminal"
        );
        let mut gotos = rows.gotos(s).peekable();
        for a in 0..t.num_nonterminals {
            let expected = match gotos.peek() {
                Some(&(b, target)) if b == a => {
                    gotos.next();
                    Some(target)
                }
                _ => None,
            };
            assert_eq!(t.goto(s, a), expected, "{what}: state {s} nonterminal {a}");
        }
    }
    assert_eq!(t.action_cells().count(), dense_cells, "{what}");
    assert_eq!(t.gotos().count(), rows.goto_target.len(), "{what}");
    assert_eq!(t.rule_lhs, rows.rule_lhs, "{what}");
    assert_eq!(t.rule_len, rows.rule_len, "{what}");
}

#[test]
fn packed_lookups_equal_the_rows_on_random_and_shipped_grammars() {
    let mut rng = Rng(0x5eed_1a7e);
    let shape = GrammarShape {
        max_nonterminals: 10,
        lazy_percent: 10,
        ignore_regexes: &[" "],
        max_alt_len: 4,
        recursive: true,
    };
    for i in 0..300 {
        let g = random_grammar(&mut rng, &shape);
        assert_packed_equals_rows(&g, &format!("random grammar {i}"));
    }
    for name in ["json", "expr", "toml", "sql", "c"] {
        let lexed = shipped_grammar(name);
        assert_packed_equals_rows(&lexed.grammar, name);
    }
}

/// `start: a0`, then `rule(i)` for each `i < n`, and `a{n}: "x"`.
fn chain(n: usize, rule: impl Fn(usize) -> String) -> Grammar {
    let mut src = String::from("start: a0\n");
    for i in 0..n {
        src += &rule(i);
    }
    src += &format!("a{n}: \"x\"\n");
    pipeline::lex_grammar_source(&src, "chain.lark")
        .unwrap()
        .grammar
}

/// `a0: "(" a1 ")" | "x"`, …, `a{n}: "x"`: every rule nested in the previous one.
fn nested(n: usize) -> Grammar {
    chain(n, |i| format!("a{i}: \"(\" a{} \")\" | \"x\"\n", i + 1))
}

/// `a0: a1`, …, `a{n-1}: a{n}`, `a{n}: "x"`: a chain of unit rules.
fn unit_chain(n: usize) -> Grammar {
    chain(n, |i| format!("a{i}: a{}\n", i + 1))
}

/// Table bytes and peak heap of the LR stage on a chain `scale`× longer: each must
/// grow at most `bound`× (dense tables grew `scale²`×: 16× here).
#[test]
fn chain_tables_and_peak_heap_grow_linearly() {
    let (small, scale) = (500, 4);
    let bound = 1.25 * scale as f64;
    for (what, grammar) in [
        ("nested", nested as fn(usize) -> Grammar),
        ("unit", unit_chain),
    ] {
        let measure = |n: usize| {
            let g = grammar(n);
            let (automaton, peak) = peak_heap(|| build_lr(&g, 200_000).unwrap());
            let t = automaton.tables.view();
            assert!(
                t.num_states as usize > n,
                "{what} {n}: {} states",
                t.num_states
            );
            (t.table_bytes() as f64, peak as f64)
        };
        let (bytes_small, peak_small) = measure(small);
        let (bytes_large, peak_large) = measure(small * scale);
        assert!(
            bytes_large / bytes_small <= bound,
            "{what}: table bytes grew {bytes_small} → {bytes_large}"
        );
        assert!(
            peak_large / peak_small <= bound,
            "{what}: peak heap grew {peak_small} → {peak_large}"
        );
    }
}

/// The grammar: 20,000 nested rules (80,000 states, 20,002 nonterminal
/// columns) aborted allocating 4.8 GB of dense goto table. Packed, it fits in a few
/// MB; with a small `max_table_bytes` it is the named error, not an allocation.
#[test]
fn twenty_thousand_nested_rules_compile_within_the_table_limit() {
    let g = nested(20_000);
    let automaton = build_lr(&g, 200_000).unwrap();
    let t = automaton.tables.view();
    let cells = t.action_cells().count() + t.gotos().count();
    let bytes = t.table_bytes();
    assert!(t.num_states >= 80_000, "{} states", t.num_states);
    // Each cell takes a slot of two u32 arrays plus its action; a few more for the row
    // bases and the slots row displacement leaves free.
    assert!(bytes < 24 * cells as u64, "{bytes} bytes for {cells} cells");
    let err = lr::build_lr_within(
        &g,
        LrLimits {
            max_states: 200_000,
            max_table_bytes: bytes / 2,
        },
        &Deadline::unlimited(),
    )
    .unwrap_err();
    assert!(
        matches!(err, LrError::TableBytes { bytes: b, limit, .. } if b > limit && limit == bytes / 2),
        "{err}"
    );
    let message = err.to_string();
    assert!(message.contains("max_table_bytes"), "{message}");
    assert!(message.contains("--max-table-bytes"), "{message}");
    // The default allows it.
    assert!(bytes < lr::DEFAULT_MAX_TABLE_BYTES);
}
