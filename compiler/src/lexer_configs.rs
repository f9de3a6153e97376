//! Lexer configurations: the lexemes that started at one boundary, stepped together.
//!
//! A *configuration* is the set of merged-DFA states (see
//! [`stackmask_formats::ParserTables`]) still alive for the lexemes that started at the
//! same boundary — one state per terminal, since each terminal's DFA is deterministic.
//! Configurations are interned to small integers at compile time with a byte
//! transition table, so the runtime advances all lexemes of a boundary with one
//! lookup. Which lexemes start depends on the terminals the LR state expects; states
//! with equal expected sets share an *expected class*, and the start configuration is
//! a table indexed by (class, first byte). Ignore lexemes start from their own
//! configuration (they are allowed in different places, DESIGN.md §1).
//!
//! The greedy / lazy rules are built into the transitions: a lazy lexeme in an
//! accepting state does not go on (it must end there), and a lexeme whose DFA dies is
//! dropped; whether a lexeme may *end* before a byte is decided at run time from the
//! accepting elements of the configuration.

use crate::budget::{BudgetError, Deadline, Stage};
use rustc_hash::FxHashMap;
use stackmask_formats::parser::LexerConfigs;
use stackmask_formats::ParserTables;
use std::collections::HashMap;

/// Default limit on the number of interned configurations.
pub const DEFAULT_MAX_CONFIGS: usize = 1 << 18;

/// The configuration table would exceed its limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the lexer needs more than {limit} configurations (max_lexer_configs); the grammar's terminals overlap too much")]
pub struct ConfigLimitError {
    /// The limit.
    pub limit: usize,
}

/// Configurations by their sorted states. Interning runs 256 times per configuration
/// and expected class, mostly on configurations already seen (most often the empty
/// one), so a lookup neither allocates nor hashes slowly.
struct Interner {
    ids: FxHashMap<Vec<u32>, u32>,
    sets: Vec<Vec<u32>>,
    limit: usize,
}

impl Interner {
    fn intern(&mut self, set: &[u32]) -> Result<u32, ConfigLimitError> {
        if set.is_empty() && !self.sets.is_empty() {
            return Ok(0);
        }
        if let Some(&id) = self.ids.get(set) {
            return Ok(id);
        }
        if self.sets.len() >= self.limit {
            return Err(ConfigLimitError { limit: self.limit });
        }
        let id = self.sets.len() as u32;
        self.ids.insert(set.to_vec(), id);
        self.sets.push(set.to_vec());
        Ok(id)
    }
}

/// Builds the configuration tables for parser tables whose DFA and LR parts are set;
/// fails past `limit` configurations, or when the compile's budget runs out (polled
/// per configuration).
pub fn build_lexer_configs<E: From<ConfigLimitError> + From<BudgetError>>(
    t: &ParserTables,
    limit: usize,
    deadline: &Deadline,
) -> Result<LexerConfigs, E> {
    deadline.check(Stage::LexerConfigs)?;
    let mut poll = deadline.poll(Stage::LexerConfigs);
    let view = t.view();
    let terminals = t.dfa_start.len();
    let mut interner = Interner {
        ids: FxHashMap::default(),
        sets: Vec::new(),
        limit: limit.max(1),
    };
    interner.intern(&[])?; // 0: nothing alive.

    // Expected classes.
    let words = t.expected_words as usize;
    let mut class_of_set: HashMap<&[u64], u32> = HashMap::new();
    let mut state_class = Vec::with_capacity(t.lr.num_states as usize);
    let mut class_sets: Vec<&[u64]> = Vec::new();
    for s in 0..t.lr.num_states as usize {
        let set = &t.expected[s * words..(s + 1) * words];
        let n = class_sets.len() as u32;
        let c = *class_of_set.entry(set).or_insert_with(|| {
            class_sets.push(set);
            n
        });
        state_class.push(c);
    }
    let start_of = |terms: &mut dyn Iterator<Item = u32>, b: u8, v: &mut Vec<u32>| {
        v.clear();
        v.extend(
            terms
                .map(|term| view.dfa_next(t.dfa_start[term as usize], b))
                .filter(|&g| view.dfa_live(g)),
        );
        v.sort_unstable();
    };
    let mut scratch = Vec::new();
    // The bytes of a byte class start the same lexemes: each class's first byte is
    // stepped, the others copy it (the same sets, interned in the same order).
    let reps = view.class_representatives();
    let rep_of = |b: u8| reps[view.byte_class[b as usize] as usize] as usize;
    let mut class_start = Vec::with_capacity(class_sets.len() * 256);
    for set in &class_sets {
        poll.tick()?;
        let members: Vec<u32> = (0..terminals as u32)
            .filter(|&x| set[x as usize / 64] >> (x % 64) & 1 != 0)
            .collect();
        let row = class_start.len();
        for b in 0..=255u8 {
            let id = if rep_of(b) < b as usize {
                class_start[row + rep_of(b)]
            } else {
                start_of(&mut members.iter().copied(), b, &mut scratch);
                interner.intern(&scratch)?
            };
            class_start.push(id);
        }
    }
    let mut ignore_start: Vec<u32> = Vec::with_capacity(256);
    for b in 0..=255u8 {
        let id = if rep_of(b) < b as usize {
            ignore_start[rep_of(b)]
        } else {
            start_of(&mut t.ignore.iter().copied(), b, &mut scratch);
            interner.intern(&scratch)?
        };
        ignore_start.push(id);
    }

    // Terminal of every merged DFA state.
    let mut dfa_term = vec![u32::MAX; t.dfa_flags.len()];
    for term in 0..terminals {
        for g in t.dfa_base[term]..t.dfa_base[term + 1] {
            dfa_term[g as usize] = term as u32;
        }
    }

    // Close under byte transitions, one byte per byte class (the DFAs step every byte
    // of a class alike).
    let mut next = Vec::new();
    let mut i = 0;
    let mut going_on: Vec<u32> = Vec::new();
    while i < interner.sets.len() {
        poll.tick()?;
        going_on.clear();
        going_on.extend(
            interner.sets[i].iter().filter(|&&g| {
                !(t.lazy[dfa_term[g as usize] as usize] != 0 && view.dfa_accepting(g))
            }),
        );
        for &b in &reps {
            scratch.clear();
            scratch.extend(
                going_on
                    .iter()
                    .map(|&g| view.dfa_next(g, b))
                    // Live, not merely nonzero: a split terminal's lexeme can be extended
                    // into a state where it can no longer end (`ByteDfa::extends`).
                    .filter(|&g| view.dfa_live(g)),
            );
            scratch.sort_unstable();
            next.push(interner.intern(&scratch)?);
        }
        i += 1;
    }
    let mut elem_index = vec![0u32];
    let mut elems = Vec::new();
    let mut flags = Vec::with_capacity(interner.sets.len());
    for set in &interner.sets {
        elems.extend_from_slice(set);
        elem_index.push(elems.len() as u32);
        flags.push(set.iter().any(|&g| view.dfa_accepting(g)) as u8);
    }
    Ok(LexerConfigs {
        state_class,
        class_start,
        ignore_start,
        next,
        elem_index,
        elems,
        flags,
        dfa_term,
    })
}

#[cfg(test)]
mod tests {
    use crate::pipeline;

    /// Every expected class's and the ignore lexemes' start configuration, per byte,
    /// holds the lexemes that byte starts, stepped byte by byte here (the stage steps
    /// one byte per byte class): grammars whose terminals split the bytes into many
    /// classes (letters, digits, case, punctuation, non-ASCII).
    #[test]
    fn start_configurations_hold_the_lexemes_each_byte_starts() {
        let grammars = [
            "start: (NAME | NUM | \"if\" | \"+\" | \"é\")*\nNAME: /[a-z_][a-z0-9_]*/\nNUM: /[0-9]+/\n%ignore /[ \\t]+/\n%ignore /#[^\\n]*/\n",
            "start: \"[\" item (\",\" item)* \"]\"\nitem: WORD | \"A\" | \"Ab\"\nWORD: /[A-Za-z]+/\n",
        ];
        for source in grammars {
            let lexed = pipeline::lex_grammar_source(source, "configs.lark").expect("grammar");
            let compiled = pipeline::compile_parser(&lexed, 100_000).expect("tables");
            let t = compiled.tables.view();
            let starts = |terms: &mut dyn Iterator<Item = u32>, b: u8| -> Vec<u32> {
                let mut v: Vec<u32> = terms
                    .map(|term| t.dfa_next(t.dfa_start[term as usize], b))
                    .filter(|&g| t.dfa_live(g))
                    .collect();
                v.sort_unstable();
                v
            };
            let words = t.expected_words as usize;
            let terminals = t.dfa_start.len() as u32;
            for s in 0..t.lr.num_states as usize {
                let k = t.state_class[s] as usize;
                let set = &t.expected[s * words..(s + 1) * words];
                for b in 0..=255u8 {
                    let mut members =
                        (0..terminals).filter(|&x| set[x as usize / 64] >> (x % 64) & 1 != 0);
                    let c = t.class_start[k * 256 + b as usize];
                    assert_eq!(
                        t.conf_elems(c),
                        starts(&mut members, b),
                        "state {s} byte {b}"
                    );
                }
            }
            for b in 0..=255u8 {
                let c = t.ignore_start[b as usize];
                let expected = starts(&mut t.ignore.iter().copied(), b);
                assert_eq!(t.conf_elems(c), expected, "ignore byte {b}");
            }
        }
    }
}
