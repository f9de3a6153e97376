//! Terminal DWAs of boundaries that differ only in their lexemes' terminals: built
//! once, and renamed for the others.
//!
//! A JSON Schema's objects each have their own property-name terminals (the names
//! they declare, and "any other name" with its own value schema), and a large schema
//! repeats the same object under many paths (Kubernetes inlines `ObjectMeta`,
//! `Container`, … dozens of times). A boundary inside a name is a lexer
//! configuration of those terminals' states, so the same name prefix under two paths
//! is two boundaries whose lexemes step alike byte for byte and differ only in the
//! terminal they end as; so are two prefixes of one object's names that leave the
//! same declared suffixes (`require-a` and `valid-values-a`, each with `uthor` left,
//! under other literal terminals). Their walks over the token trie are the same walk: the
//! group's lexemes end in the same tokens at the same bytes, and what starts after
//! them depends on the ended terminal only through which terminals may follow it. So
//! when two boundaries have the same [`Likeness`] key, the second's Terminal DWA is the
//! first's with the group's terminals renamed on the edges out of the empty word (the
//! only edges a group lexeme makes: it ends once, as a word's first terminal). Of
//! `kb_225`'s 9,704 boundaries, 8,353 are inside names, and about 4,700 share a walk.
//!
//! The key describes the lexemes by the order of their states, not by the states: the
//! walk sorts threads by state, so boundaries whose states are in the same order walk
//! in the same order and make their words and classes under the same numbers, and
//! the renamed automaton is the one a walk would build. (Where a group's terminal can
//! also start afresh within a token, `WordDag::merge` may join its words to a fresh
//! lexeme's that ends alike in one boundary and not in the other: the word sets are
//! the same either way, as the two terminals have the same followers.)
//!
//! A boundary of one state of a lexeme with many states (a `date-time`'s 11,000) is
//! keyed instead by its state's [`WalkClasses`] class: tokens reach only a few bytes
//! into such a lexeme, and states that end or die at the same bytes that far walk
//! the trie alike. The 11,047 `date-time` boundaries of `o9919` are 1,113 walks.
//! Those classes depend only on the lexeme's own automaton and the trie, so they are
//! kept with the vocabulary for the next grammar with the same lexeme (a `date-time`
//! recurs from schema to schema): see
//! [`PreparedTrie::walk_classes`](crate::lexeme_bodies::PreparedTrie::walk_classes).

use super::{Boundary, Lexing, TerminalDwa, TerminalDwaError, NONE};
use crate::budget::Poll;
use crate::lexeme_bodies::BodyTable;
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::{Arc, Mutex};

/// What a boundary's walk depends on, with its lexemes' states and terminals replaced
/// by their ranks: two boundaries with equal keys have the same Terminal DWA up to the
/// names of the group's terminals.
#[derive(Clone, Debug)]
pub struct Likeness {
    key: Box<[u32]>,
    /// The group's terminals, by rank: the names the key's ranks stand for.
    terms: Box<[u32]>,
}

/// A terminal's states by the walks they start: states in one class end or die at
/// the same bytes of every token (as far as a token can stay in the lexeme), so a
/// boundary of one such state walks the trie as one of another.
///
/// A lexeme of many states (a `date-time`'s 11,000, counting days by year and month;
/// a pattern's `{1,255}`) is a boundary in each, and tokens only reach a few bytes
/// into it (o200k's longest run of digits is three): most of its states differ
/// only past what a token can reach. A walk from a lexeme state reads the codes of
/// the token's bytes (go on, end the lexeme, die) up to the first end or death, and
/// the rest of the walk depends on that position alone; with at most `L` bytes that go
/// on, that is the first `L + 1` codes, which `L + 1` rounds of refinement compare
/// (after a first split on ending at end of input). One lexeme state is one thread,
/// so no sort of threads sees the states' numbers.
pub(super) struct WalkClasses {
    /// The terminal's first state (its states are one block of the merged DFA).
    first: u32,
    /// Per state of the block: its class.
    class: Arc<[u32]>,
}

/// Most lexeme states a key describes: a boundary at the start of a large object's
/// names reaches all its names' states, and only a few such boundaries recur. (A key
/// is worked out for every boundary, shared or not: at 256, keys were 7% of
/// `npmpackagejsonlintrc`'s instructions; at 64, a chunked string's boundaries went
/// unshared.)
const MAX_STATES: usize = 128;

impl Lexing<'_> {
    /// The [`Likeness`] of `boundary`, for a group of grammar lexemes that reach at most
    /// [`MAX_STATES`] states, or of one state of a lexeme of many (keyed by its
    /// [`WalkClasses`] class); `None` for others (and for several lexemes, one of them
    /// narrow with many states: such boundaries never recur, and each would pay for a
    /// key of the most states).
    pub fn likeness(&self, boundary: Boundary) -> Option<Likeness> {
        let Boundary::Group {
            config,
            ignore: false,
        } = boundary
        else {
            return None;
        };
        let t = &self.tables;
        let elems = t.conf_elems(config);
        if let &[s] = elems {
            let term = t.dfa_term[s as usize];
            if self.term_states[term as usize] > BodyTable::MANY_STATES {
                let classes = self.walk_classes(term).as_ref()?;
                let class = classes.class[(s - classes.first) as usize];
                return Some(Likeness {
                    key: [0, term, class].into(),
                    terms: [term].into(),
                });
            }
        }
        let narrow_many = |s: u32| {
            self.term_states[t.dfa_term[s as usize] as usize] > BodyTable::MANY_STATES
                && self.lexeme_runs(s).width() < BodyTable::MIN_WIDTH
        };
        if elems.iter().any(|&s| narrow_many(s)) {
            return None;
        }
        // The states the group's lexemes can reach, by their own transitions.
        let mut seen: FxHashSet<u32> = elems.iter().copied().collect();
        let mut todo: Vec<u32> = elems.to_vec();
        while let Some(s) = todo.pop() {
            for &(_, code) in self.lexeme_runs(s).0.iter() {
                if code < BodyTable::CUT && seen.insert(code) {
                    if seen.len() > MAX_STATES {
                        return None;
                    }
                    todo.push(code);
                }
            }
        }
        let mut states: Vec<u32> = seen.into_iter().collect();
        states.sort_unstable();
        let rank = |s: u32| states.binary_search(&s).expect("a reached state") as u32;
        let mut terms: Vec<u32> = Vec::new();
        let mut key: Vec<u32> = Vec::with_capacity(8 * states.len());
        key.push(elems.len() as u32);
        key.extend(elems.iter().map(|&s| rank(s)));
        key.push(states.len() as u32);
        for &s in &states {
            let term = t.dfa_term[s as usize];
            let slot = match terms.iter().position(|&x| x == term) {
                Some(i) => i,
                None => {
                    terms.push(term);
                    terms.len() - 1
                }
            };
            let runs = &self.lexeme_runs(s).0;
            key.push(slot as u32);
            // What else the walk asks of a state: whether its lexeme ends at end of
            // input, and whether it gets a body (`Lexing::make_body`).
            key.push(
                u32::from(t.may_end(term, s, None))
                    | u32::from(self.term_states[term as usize] > BodyTable::MANY_STATES) << 1,
            );
            key.push(runs.len() as u32);
            for &(last, code) in runs.iter() {
                key.push(u32::from(last));
                key.push(if code < BodyTable::CUT {
                    rank(code)
                } else {
                    code
                });
            }
        }
        // What may follow each terminal (the only way the walk sees it after it ends).
        key.extend(terms.iter().map(|&term| self.follow_row(term)));
        Some(Likeness {
            key: key.into(),
            terms: terms.into(),
        })
    }

    /// Terminal `term`'s [`WalkClasses`], worked out once per grammar and taken from
    /// the vocabulary's when another grammar had the same automaton
    /// ([`PreparedTrie::walk_classes`](crate::lexeme_bodies::PreparedTrie::walk_classes));
    /// `None` if its states are not one block of the merged DFA, or step out of it.
    fn walk_classes(&self, term: u32) -> &Option<WalkClasses> {
        self.walk_classes[term as usize].get_or_init(|| {
            let t = &self.tables;
            let first = t.dfa_term.iter().position(|&x| x == term)? as u32;
            let n = self.term_states[term as usize];
            let block = first..first + n;
            if block
                .clone()
                .any(|s| t.dfa_term.get(s as usize) != Some(&term))
            {
                return None;
            }
            let automaton = self.own_automaton(term, first, n)?;
            let trie = self.trie.trie().view();
            let class = (self.trie).walk_classes(automaton.into(), |a| classes_of_walks(a, trie));
            Some(WalkClasses { first, class })
        })
    }

    /// Terminal `term`'s automaton (its `n` states from `first`) as [`classes_of_walks`]
    /// reads it, in the terminal's own terms, so that every grammar with this terminal
    /// writes the same one: its states numbered from 0, and its own byte classes (the
    /// grammar's classes, which depend on its other terminals, joined where every state
    /// steps them alike), numbered in the order of their first bytes. `None` if a
    /// state steps out of the block.
    ///
    /// Layout: `n`, the number of classes `k`, each byte's class (256), each state's
    /// "may end at end of input" (0 or 1, `n`), then each state's code per class
    /// (`n × k`: [`BodyTable::END`], [`BodyTable::DEAD`] or the next state).
    fn own_automaton(&self, term: u32, first: u32, n: u32) -> Option<Vec<u32>> {
        let t = &self.tables;
        let block = first..first + n;
        // Each state's code per grammar byte class, stepped once (a `date-time`'s
        // 11,000 states times 40 classes).
        let reps = t.class_representatives();
        let k = reps.len();
        let mut codes: Vec<u32> = block
            .clone()
            .flat_map(|s| reps.iter().map(move |&b| self.lexeme_step(s, b)))
            .collect();
        for c in &mut codes {
            if *c < BodyTable::CUT {
                *c = c.checked_sub(first).filter(|&i| i < n)?;
            }
        }
        let mut own = vec![u32::MAX; k];
        let mut columns: FxHashMap<Vec<u32>, u32> = FxHashMap::default();
        let mut order: Vec<usize> = Vec::new();
        for b in 0..=255u8 {
            let g = t.byte_class[b as usize] as usize;
            if own[g] == u32::MAX {
                let column: Vec<u32> = (0..n as usize).map(|i| codes[i * k + g]).collect();
                let next = columns.len() as u32;
                own[g] = *columns.entry(column).or_insert_with(|| {
                    order.push(g);
                    next
                });
            }
        }
        let mut a = Vec::with_capacity(2 + 256 + n as usize * (1 + order.len()));
        a.extend([n, order.len() as u32]);
        a.extend((0..=255u8).map(|b| own[t.byte_class[b as usize] as usize]));
        a.extend(block.map(|s| u32::from(t.may_end(term, s, None))));
        for i in 0..n as usize {
            a.extend(order.iter().map(|&g| codes[i * k + g]));
        }
        Some(a)
    }

    /// An id of terminal `term`'s row of `follows`: equal ids, equal rows.
    fn follow_row(&self, term: u32) -> u32 {
        *self.follow_rows[term as usize].get_or_init(|| {
            let n = self.terminals;
            let row = &self.follows[term as usize * n..(term as usize + 1) * n];
            let mut ids = self
                .follow_row_ids
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let next = ids.len() as u32;
            *ids.entry(row.into()).or_insert(next)
        })
    }
}

/// The Terminal DWAs of a grammar's boundaries, each walked once per [`Likeness`]:
/// the boundaries that share a key are counted up front, the first of them to come
/// walks, and the automaton is dropped once the last has taken its renamed copy.
pub struct RenamedDwas {
    /// Per boundary (by index): its likeness and the slot of its key, for keys that
    /// two or more boundaries share.
    of: Vec<Option<(Likeness, usize)>>,
    /// Per shared key: its automaton once walked.
    slots: Vec<Mutex<Slot>>,
}

/// One shared key's automaton, with the boundaries still to take it.
#[derive(Default)]
struct Slot {
    /// The automaton and the terminals (by rank) of the boundary that walked it.
    built: Option<(Arc<TerminalDwa>, Box<[u32]>)>,
    /// Boundaries still to take it.
    left: usize,
}

impl RenamedDwas {
    /// Finds the boundaries that share a key, from each boundary's
    /// [`Lexing::likeness`] in the order [`RenamedDwas::build`] numbers them (the
    /// caller works them out in parallel).
    pub fn new(likeness: Vec<Option<Likeness>>) -> Self {
        let mut counts: FxHashMap<&[u32], usize> = FxHashMap::default();
        for like in likeness.iter().flatten() {
            *counts.entry(&like.key).or_default() += 1;
        }
        let mut ids: FxHashMap<&[u32], usize> = FxHashMap::default();
        let mut slots: Vec<Mutex<Slot>> = Vec::new();
        let slot_of: Vec<Option<usize>> = (likeness.iter())
            .map(|like| {
                let key: &[u32] = &like.as_ref()?.key;
                let left = counts[key];
                (left > 1).then(|| {
                    *ids.entry(key).or_insert_with(|| {
                        slots.push(Mutex::new(Slot { built: None, left }));
                        slots.len() - 1
                    })
                })
            })
            .collect();
        let of = (likeness.into_iter().zip(slot_of))
            .map(|(like, slot)| Some((like?, slot?)))
            .collect();
        RenamedDwas { of, slots }
    }

    /// The Terminal DWA of boundary number `index`, `boundary`: walked by
    /// [`Lexing::build`], or renamed from the walk of a boundary with the same key.
    pub fn build(
        &self,
        lexing: &Lexing<'_>,
        index: usize,
        boundary: Boundary,
        max_states: usize,
        poll: &mut Poll<'_>,
    ) -> Result<TerminalDwa, TerminalDwaError> {
        let Some((like, slot)) = &self.of[index] else {
            return lexing.build(boundary, max_states, poll);
        };
        // The lock is held while the first boundary walks: the others wait for its
        // automaton rather than walk the same trie (no rayon work is started inside,
        // so a waiting worker cannot be asked to run the walk it waits for).
        let mut slot = self.slots[*slot].lock().unwrap_or_else(|e| e.into_inner());
        if slot.built.is_none() {
            let dwa = lexing.build(boundary, max_states, poll)?;
            slot.built = Some((Arc::new(dwa), like.terms.clone()));
        }
        let (dwa, terms) = slot.built.clone().expect("built above");
        slot.left -= 1;
        if slot.left == 0 {
            slot.built = None;
        }
        drop(slot);
        Ok(renamed(&dwa, &terms, &like.terms, boundary))
    }
}

/// `dwa`, built for a group whose terminals by rank are `from`, for `boundary`, whose
/// terminals by rank are `to`.
fn renamed(dwa: &TerminalDwa, from: &[u32], to: &[u32], boundary: Boundary) -> TerminalDwa {
    let mut out = dwa.clone();
    out.boundary = boundary;
    if from != to {
        for (label, _) in &mut out.succ[0] {
            if *label != NONE {
                let i = from.iter().position(|&t| t == *label);
                *label = to[i.expect("edges out of the empty word end the group's lexemes")];
            }
        }
        out.succ[0].sort_unstable();
    }
    out
}

/// The [`WalkClasses`] classes of a lexeme automaton laid out as
/// [`Lexing::own_automaton`] writes it, over `trie`: per state, its class.
fn classes_of_walks(a: &[u32], trie: stackmask_formats::TrieRef<'_>) -> Vec<u32> {
    let (n, k) = (a[0] as usize, a[1] as usize);
    let byte_class = &a[2..258];
    let ends = &a[258..258 + n];
    let codes = &a[258 + n..];
    let code = |s: usize, c: usize| codes[s * k + c];
    // The most bytes a token can stay in the lexeme: along the token trie, by class
    // pairs that some state goes on with. A state's pairs are the classes it goes on
    // with, times the classes the state after each goes on with: per state, one row
    // of the latter, OR-ed (classes by state by class stepped every state's successors
    // again: 18 M steps for a `date-time`).
    let words = k.div_ceil(64);
    let rows: Vec<Vec<u64>> = (0..n)
        .map(|s| {
            let mut row = vec![0u64; words];
            for c in 0..k {
                if code(s, c) < BodyTable::CUT {
                    row[c / 64] |= 1 << (c % 64);
                }
            }
            row
        })
        .collect();
    let mut first_byte = vec![false; k];
    let mut pair_rows = vec![0u64; k * words];
    for s in 0..n {
        for c1 in 0..k {
            let next = code(s, c1);
            if next >= BodyTable::CUT {
                continue;
            }
            first_byte[c1] = true;
            for (w, &bits) in rows[next as usize].iter().enumerate() {
                pair_rows[c1 * words + w] |= bits;
            }
        }
    }
    let pair: Vec<bool> = (0..k * k)
        .map(|i| pair_rows[(i / k) * words + (i % k) / 64] >> ((i % k) % 64) & 1 != 0)
        .collect();
    let nodes = trie.nodes;
    let mut along: Vec<(bool, usize)> = vec![(true, 0); 1];
    let mut longest = 0usize;
    let mut i = 1;
    while i < nodes.len() {
        let node = &nodes[i];
        let depth = node.depth as usize;
        let class = byte_class[node.byte as usize] as usize;
        let alive = match depth {
            1 => first_byte[class],
            _ => along[depth - 1].0 && pair[along[depth - 1].1 * k + class],
        };
        if !alive {
            i += node.subtree_size as usize;
            continue;
        }
        longest = longest.max(depth);
        along.resize(depth + 1, (false, 0));
        along[depth] = (true, class);
        i += 1;
    }
    // Moore's refinement, one round per byte a walk reads before the lexeme ends or
    // dies: states in one class then step alike along every token.
    let mut class: Vec<u32> = ends.to_vec();
    let mut classes = 0;
    for _ in 0..=longest {
        let mut ids: FxHashMap<Vec<u32>, u32> = FxHashMap::default();
        let next: Vec<u32> = (0..n)
            .map(|s| {
                let mut sig = Vec::with_capacity(k + 1);
                sig.push(class[s]);
                sig.extend((0..k).map(|c| match code(s, c) {
                    c if c >= BodyTable::CUT => c,
                    c => class[c as usize],
                }));
                let fresh = ids.len() as u32;
                *ids.entry(sig).or_insert(fresh)
            })
            .collect();
        class = next;
        if ids.len() == classes {
            break;
        }
        classes = ids.len();
    }
    class
}

#[cfg(test)]
mod tests {
    use super::super::{random_trie, random_trie_of};
    use super::*;
    use crate::budget::{Deadline, Stage};
    use crate::frontend::json_schema::SchemaOptions;
    use crate::pipeline::{self, LexedGrammar};
    use crate::test_rng::XorShift;

    /// Builds every boundary's Terminal DWA through [`RenamedDwas`] and by its own walk,
    /// asserts they are equal (`what` names the case), and returns the renamed set.
    fn renamed_as_walked(lexing: &Lexing<'_>, what: &str) -> RenamedDwas {
        let boundaries = lexing.boundaries();
        let renamed = RenamedDwas::new(boundaries.iter().map(|&b| lexing.likeness(b)).collect());
        let deadline = Deadline::unlimited();
        for (i, &b) in boundaries.iter().enumerate() {
            let mut poll = deadline.poll(Stage::TerminalDwa);
            let built = renamed.build(lexing, i, b, 1 << 20, &mut poll);
            let mut poll = deadline.poll(Stage::TerminalDwa);
            let walked = lexing.build(b, 1 << 20, &mut poll);
            assert!(
                built.expect("within limits") == walked.expect("within limits"),
                "{what} boundary {b:?}: the Terminal DWAs differ"
            );
        }
        renamed
    }

    /// Every boundary's Terminal DWA, renamed from another boundary's walk where their
    /// keys agree, equals its own walk, over random vocabularies: terminals that lex
    /// alike and are followed alike (`A` and `C`; names of the same object under two
    /// properties) share walks, and terminals that lex alike but are followed by other
    /// terminals (`B`) do not, nor do a schema's objects with other names.
    #[test]
    fn renamed_terminal_dwas_are_the_walks_of_their_own_boundaries() {
        let object = r#"{"type": "object", "properties": {"ab": {"type": "integer"}, "abc": {"type": "string"}, "b": {"type": "boolean"}}}"#;
        let other = r#"{"type": "object", "properties": {"ab": {"type": "integer"}, "bc": {"type": "string"}}}"#;
        let schema = format!(
            r#"{{"type": "object", "properties": {{"x": {object}, "y": {object}, "z": {other}, "w": {{"type": "array", "items": {object}}}}}}}"#
        );
        let grammars: [(LexedGrammar, &[u8]); 3] = [
            (
                pipeline::lex_grammar_source(
                    "start: (\"(\" A \")\" | \"[\" B \"]\" | \"{\" C \")\" | D)*\nA: /ab+c?/\nB: /ab+c?/\nC: /ab+c?/\nD: /b+/\n",
                    "renamed.lark",
                )
                .expect("grammar"),
                b"abc()[]{}",
            ),
            (
                pipeline::lex_schema_source(&schema, "renamed.json", &SchemaOptions::default())
                    .expect("schema")
                    .0,
                b"abcxyz\":,{}[]0129tf",
            ),
            // A lexeme of many states, counted: its states are keyed by the walks
            // they start (`WalkClasses`), and those far from the count's end agree.
            (
                pipeline::lex_grammar_source(
                    "start: (A \",\")* A?\nA: /[0-9]{1,300}(x[0-9]{2})?/\n",
                    "renamed.lark",
                )
                .expect("grammar"),
                b"0123456789x,",
            ),
        ];
        let mut rng = XorShift(0x4e4a_3ed1);
        for (g, (lexed, alphabet)) in grammars.iter().enumerate() {
            let compiled = pipeline::compile_parser(lexed, 100_000).expect("tables");
            let tables = compiled.tables.view();
            let mut shared = 0;
            for case in 0..4 {
                let trie = random_trie(&mut rng, alphabet, 800, 5);
                let lexing = Lexing::new(tables, &trie);
                let renamed = renamed_as_walked(&lexing, &format!("grammar {g} case {case}"));
                shared += renamed.of.iter().flatten().count();
                // Every automaton was taken by all its boundaries, and dropped.
                assert!(renamed.slots.iter().all(|s| {
                    let s = s.lock().expect("no walk panicked");
                    s.left == 0 && s.built.is_none()
                }));
            }
            // Boundaries were renamed from others' walks (with other terminals: a
            // walk is never shared between two boundaries of one terminal set, as
            // their configurations would be one), so the equality is about renaming.
            assert!(
                shared > 20,
                "grammar {g}: only {shared} boundaries shared a walk"
            );
        }
    }

    /// Walk classes are kept per vocabulary by the lexeme's own automaton: a grammar
    /// whose other terminals split the bytes differently takes the classes another
    /// grammar worked out for the same lexeme, and a lexeme that tokens reach less far
    /// into (a count of letters, where the vocabulary's letter tokens are short) keeps
    /// its own. Renamed Terminal DWAs stay the walks of their boundaries throughout, so
    /// classes taken for the wrong lexeme (too coarse) would show.
    #[test]
    fn walk_classes_are_kept_per_vocabulary_by_the_lexemes_own_automaton() {
        // Digit runs up to 6 bytes, letter runs up to 2.
        let trie = random_trie_of(
            &mut XorShift(0x3a1c_7e55),
            &[
                (b"0123456789", 400, 6),
                (b"abc", 100, 2),
                (b"0123456789abcxy,;", 200, 3),
            ],
        );
        // (grammar, walk classes kept after it)
        let grammars = [
            ("start: (A \",\")* A?\nA: /[a-c]{1,300}(x[a-c]{2})?/\n", 1),
            ("start: (A \",\")* A?\nA: /[0-9]{1,300}(x[0-9]{2})?/\n", 2),
            // The same lexeme; `B` splits the digits into two grammar byte classes.
            (
                "start: (A \";\" | B)* A?\nA: /[0-9]{1,300}(x[0-9]{2})?/\nB: /[0-4]y/\n",
                2,
            ),
        ];
        for (g, (source, kept)) in grammars.iter().enumerate() {
            let lexed = pipeline::lex_grammar_source(source, "walk-classes.lark").expect("grammar");
            let compiled = pipeline::compile_parser(&lexed, 100_000).expect("tables");
            let tables = compiled.tables.view();
            let lexing = Lexing::new(tables, &trie);
            let renamed = renamed_as_walked(&lexing, &format!("grammar {g}"));
            assert!(
                renamed.of.iter().flatten().count() > 100,
                "grammar {g}: the count's boundaries shared walks"
            );
            assert_eq!(trie.walk_classes_kept(), *kept, "grammar {g}");
        }
    }
}
