//! Helpers shared by the integration tests: paths to the shared corpus, a small
//! deterministic RNG, and brute-force semantics of DESIGN.md §1 for tiny grammars.

#![allow(dead_code)]

use stackmask_formats::{ByteDfa, Grammar, Symbol};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// `../shared` relative to the workspace, where the corpus and tokenizers live.
pub fn shared() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared")
}

/// The workspace root.
pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// xorshift64*: deterministic, seedable, good enough to generate test cases.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// Every string over `alphabet` of length `1..=max`.
pub fn strings(alphabet: &[u8], max: usize) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut layer: Vec<Vec<u8>> = vec![Vec::new()];
    for _ in 0..max {
        layer = layer
            .iter()
            .flat_map(|s| alphabet.iter().map(move |&c| [s.as_slice(), &[c]].concat()))
            .collect();
        out.extend(layer.iter().cloned());
    }
    out
}

/// All sentences of length `<= max_len` of a grammar whose rules are non-recursive and
/// whose terminals have finite languages over `alphabet` (words up to `max_word`),
/// straight from the definition in DESIGN.md §1: choose a terminal sequence the rules
/// derive, a word per terminal, ignore lexemes between lexemes, and keep the strings
/// whose adjacent lexemes satisfy the greedy / lazy rule.
pub fn sentences(
    g: &Grammar,
    dfas: &[ByteDfa],
    alphabet: &[u8],
    max_word: usize,
    max_len: usize,
) -> BTreeSet<Vec<u8>> {
    let words: Vec<Vec<Vec<u8>>> = dfas
        .iter()
        .enumerate()
        .map(|(t, d)| {
            strings(alphabet, max_word)
                .into_iter()
                .filter(|w| d.is_accepting(d.run(w)))
                .filter(|w| {
                    !g.terminals[t].lazy || (1..w.len()).all(|k| !d.is_accepting(d.run(&w[..k])))
                })
                .collect()
        })
        .collect();
    let mut seqs: BTreeSet<Vec<u32>> = BTreeSet::new();
    expand(
        g,
        &[Symbol::Nonterminal(g.start)],
        &mut Vec::new(),
        &mut seqs,
        max_len,
    );
    let mut out = BTreeSet::new();
    for seq in seqs {
        let mut lexemes: Vec<(u32, Vec<u8>)> = Vec::new();
        place(g, dfas, &words, &seq, 0, &mut lexemes, 0, max_len, &mut out);
    }
    out
}

/// Terminal sequences (without ignore terminals) derivable from `todo`, at most `max` long.
fn expand(
    g: &Grammar,
    todo: &[Symbol],
    done: &mut Vec<u32>,
    out: &mut BTreeSet<Vec<u32>>,
    max: usize,
) {
    if done.len() > max {
        return;
    }
    match todo.first() {
        None => {
            out.insert(done.clone());
        }
        Some(Symbol::Terminal(t)) => {
            done.push(*t);
            expand(g, &todo[1..], done, out, max);
            done.pop();
        }
        Some(Symbol::Nonterminal(n)) => {
            for r in g.rules_of(*n) {
                let next: Vec<Symbol> = g.rules[r].rhs.iter().chain(&todo[1..]).copied().collect();
                expand(g, &next, done, out, max);
            }
        }
    }
}

fn greedy_ok(g: &Grammar, dfas: &[ByteDfa], prev: &(u32, Vec<u8>), next_byte: u8) -> bool {
    let d = &dfas[prev.0 as usize];
    g.terminals[prev.0 as usize].lazy || !d.extends(d.run(&prev.1), next_byte)
}

#[allow(clippy::too_many_arguments)]
fn place(
    g: &Grammar,
    dfas: &[ByteDfa],
    words: &[Vec<Vec<u8>>],
    seq: &[u32],
    i: usize,
    lexemes: &mut Vec<(u32, Vec<u8>)>,
    len: usize,
    max_len: usize,
    out: &mut BTreeSet<Vec<u8>>,
) {
    if i == seq.len() {
        // No trailing ignore: the last lexeme placed is a grammar lexeme (or none at all).
        out.insert(lexemes.iter().flat_map(|l| l.1.clone()).collect());
        return;
    }
    let fits = |lexemes: &Vec<(u32, Vec<u8>)>, w: &[u8]| {
        lexemes.last().is_none_or(|p| greedy_ok(g, dfas, p, w[0]))
    };
    for w in &words[seq[i] as usize] {
        if len + w.len() <= max_len && fits(lexemes, w) {
            lexemes.push((seq[i], w.clone()));
            place(
                g,
                dfas,
                words,
                seq,
                i + 1,
                lexemes,
                len + w.len(),
                max_len,
                out,
            );
            lexemes.pop();
        }
    }
    // Ignore lexemes: between lexemes, or first with allow_initial_skip.
    if !lexemes.is_empty() || g.allow_initial_skip {
        for &it in &g.ignore {
            for w in &words[it as usize] {
                if len + w.len() <= max_len && fits(lexemes, w) {
                    lexemes.push((it, w.clone()));
                    place(g, dfas, words, seq, i, lexemes, len + w.len(), max_len, out);
                    lexemes.pop();
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Helpers for the corpus / shipped-grammar / matcher tests.

/// Parses, normalizes and lexes a shipped grammar `grammars/<name>.lark`.
pub fn shipped_grammar(name: &str) -> stackmask_compiler::pipeline::LexedGrammar {
    let path = workspace().join("grammars").join(format!("{name}.lark"));
    stackmask_compiler::pipeline::lex_grammar_file(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A reference engine (no vocabulary needed for byte-level recognition: the `bytes`
/// tokenizer is cheap) for a lexed grammar and tokenizer spec.
pub fn engine_for(
    lexed: &stackmask_compiler::pipeline::LexedGrammar,
    spec: &str,
) -> stackmask_runtime::reference::ReferenceEngine {
    let tok =
        stackmask_compiler::vocab::load_tokenizer(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    stackmask_compiler::pipeline::reference_engine(lexed, &tok)
        .unwrap_or_else(|e| panic!("{spec}: {e}"))
}

/// Whether `bytes` is a sentence, by a fresh recognizer: all bytes pushed and accepting.
/// On rejection, returns the offset of the first refused byte (`Err(len)` if every byte
/// was a viable prefix but the whole is not a sentence).
pub fn recognize(
    engine: &stackmask_runtime::reference::ReferenceEngine,
    bytes: &[u8],
) -> Result<(), usize> {
    use stackmask_runtime::ByteRecognizer;
    let mut rec = engine.recognizer();
    for (i, &b) in bytes.iter().enumerate() {
        if !rec.push_byte(b) {
            return Err(i);
        }
    }
    if rec.is_accepting() {
        Ok(())
    } else {
        Err(bytes.len())
    }
}

/// A grammar IR with its terminals compiled to DFAs, as the pipeline's lexed grammar.
pub fn lexed(g: &Grammar) -> stackmask_compiler::pipeline::LexedGrammar {
    let dfas = g
        .terminals
        .iter()
        .map(|t| {
            stackmask_compiler::lexer::compile_terminal(&t.regex)
                .unwrap_or_else(|e| panic!("{}: {e}", t.regex))
        })
        .collect();
    stackmask_compiler::pipeline::LexedGrammar {
        grammar: g.clone(),
        dfas,
    }
}

/// A vocabulary of ordinary tokens with these bytes (ids in order), then a duplicate id
/// for the first token's bytes, an unused id and the EOS special token (the last id).
pub fn vocab_with_extras(name: &str, tokens: Vec<Vec<u8>>) -> stackmask_formats::Vocabulary {
    use stackmask_formats::{TokenKind, Vocabulary};
    let mut entries: Vec<Option<(Vec<u8>, TokenKind)>> = tokens
        .into_iter()
        .map(|s| Some((s, TokenKind::Normal)))
        .collect();
    if let Some(Some((b, _))) = entries.first().cloned() {
        entries.push(Some((b, TokenKind::Normal)));
    }
    entries.push(None);
    entries.push(Some((b"<eos>".to_vec(), TokenKind::Special)));
    let eos = entries.len() as u32 - 1;
    Vocabulary::from_entries(name, entries, eos)
}

/// Sorted file paths in `dir` (files only, not recursive).
pub fn files_in(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

/// Whether token `id` is set in a little-endian `u32` mask.
pub fn mask_has(mask: &[u32], id: u32) -> bool {
    mask[id as usize / 32] >> (id % 32) & 1 == 1
}

/// The set token ids of a mask.
pub fn mask_ids(mask: &[u32]) -> Vec<u32> {
    let mut out = Vec::new();
    for (w, &word) in mask.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            out.push((w * 32) as u32 + bits.trailing_zeros());
            bits &= bits - 1;
        }
    }
    out
}

/// Terminal regexes random grammars draw from: literals, classes, bounded and
/// unbounded repetition, and alternations whose branches are prefixes of each other.
pub const RANDOM_TERMINALS: &[&str] = &[
    "a",
    "b",
    "ab",
    "ba",
    "aa",
    "[ab]",
    "[ab]{1,2}",
    "a{1,2}",
    "b[ab]?",
    "ca?",
    "c",
    "a|bc",
    "a|ab",
    "b|ba+",
    "a+",
    "[ab]+",
    "b*a",
    "(ab)+",
    "c[ab]*",
    // After "ca" this can only end before a non-"a"; after "cb", before anything: a
    // lexeme whose possible endings shrink as it grows (greedy dead ends need it).
    "c(a+|b)",
];

/// How a random grammar may look.
pub struct GrammarShape {
    /// At most this many nonterminals.
    pub max_nonterminals: usize,
    /// Percent chance that a terminal is lazy.
    pub lazy_percent: u64,
    /// Regexes an ignore terminal may have (30% of grammars get one).
    pub ignore_regexes: &'static [&'static str],
    /// At most this many symbols in an alternative after the first.
    pub max_alt_len: usize,
    /// Whether rules may refer to any nonterminal (recursion) or only to later ones
    /// (a finite language that brute force can enumerate).
    pub recursive: bool,
}

/// A random grammar over [`RANDOM_TERMINALS`]. Each nonterminal's first alternative
/// uses terminals only, so every nonterminal is productive.
pub fn random_grammar(rng: &mut Rng, shape: &GrammarShape) -> Grammar {
    use stackmask_formats::{Nonterminal, Rule, Terminal};
    let nt = 1 + rng.below(shape.max_nonterminals);
    let nterm = 1 + rng.below(4);
    let terminal = |name: String, regex: &str, lazy: bool| Terminal {
        name,
        regex: regex.into(),
        lazy,
        priority: 0,
        defined_at: None,
        difference: None,
    };
    let mut terminals: Vec<Terminal> = (0..nterm)
        .map(|i| {
            terminal(
                format!("T{i}"),
                RANDOM_TERMINALS[rng.below(RANDOM_TERMINALS.len())],
                rng.chance(shape.lazy_percent),
            )
        })
        .collect();
    let mut ignore = Vec::new();
    if rng.chance(30) {
        terminals.push(terminal(
            "IGN".into(),
            shape.ignore_regexes[rng.below(shape.ignore_regexes.len())],
            false,
        ));
        ignore.push(nterm as u32);
    }
    let mut rules = Vec::new();
    for lhs in 0..nt as u32 {
        for alt in 0..1 + rng.below(3) {
            let len = if alt == 0 {
                1 + rng.below(2)
            } else {
                rng.below(shape.max_alt_len + 1)
            };
            let rhs = (0..len)
                .map(|_| {
                    let later = nt - lhs as usize - 1;
                    if alt > 0 && shape.recursive && rng.chance(45) {
                        Symbol::Nonterminal(rng.below(nt) as u32)
                    } else if alt > 0 && !shape.recursive && later > 0 && rng.chance(40) {
                        Symbol::Nonterminal(lhs + 1 + rng.below(later) as u32)
                    } else if !ignore.is_empty() && rng.chance(10) {
                        // The ignore terminal used in a rule too: it is then required there.
                        Symbol::Terminal(nterm as u32)
                    } else {
                        Symbol::Terminal(rng.below(nterm) as u32)
                    }
                })
                .collect();
            rules.push(Rule { lhs, rhs });
        }
    }
    Grammar {
        source_name: "random".into(),
        terminals,
        nonterminals: (0..nt)
            .map(|i| Nonterminal {
                name: format!("n{i}"),
            })
            .collect(),
        rules,
        start: 0,
        ignore,
        allow_initial_skip: rng.chance(20),
    }
}

/// `f` of every item, spread over the machine's cores (at most four threads, items
/// interleaved), in the items' order. For checks whose cases are independent: run one
/// by one they left a CI machine's second core idle for a minute at a time. A panic in
/// `f` (a failed case, whose message is already printed) is passed on as it is.
pub fn map_on_cores<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4)
        .min(items.len().max(1));
    let f = &f;
    let mut out: Vec<(usize, R)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                scope.spawn(move || {
                    (w..items.len())
                        .step_by(workers)
                        .map(|i| (i, f(&items[i])))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    out.sort_by_key(|&(i, _)| i);
    out.into_iter().map(|(_, r)| r).collect()
}
