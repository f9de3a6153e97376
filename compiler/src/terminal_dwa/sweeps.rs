//! Sweeps: a configuration's first bytes and their subtrees walked once, kept per
//! grammar, and replayed for the boundaries whose first bytes mostly lead where the
//! configuration's do, cut down to those first bytes.
//!
//! A boundary inside a property name, where an undeclared name may go on, leads most
//! first bytes into the plain name: every byte but the few that go on in a declared
//! name leaves the "any other name" lexeme alone, in one state, which is the
//! configuration after those bytes. From there every byte steps as it does from that
//! configuration itself, so those first bytes' subtrees yield what they yield at the
//! configuration's own boundary, for every prefix of every declared name of the object
//! (about 80 boundaries an object in `kb_709`). Runs ([`super::runs`]) kept them in
//! pieces of 16 first bytes, each replayed with its own words and classes, and the
//! pieces that held one of the boundary's own bytes, or a byte into a multi-byte
//! character, walked child by child: 40–60 µs a boundary, most of such a schema's
//! compile. The configuration's *sweep* is the walk of all its first bytes, on a word
//! DAG of its own, with the threads each byte leads to. A boundary replays it once,
//! with each class's tokens cut to the subtrees of its first bytes that lead to the
//! same threads and configuration (a first byte's tokens are one range of trie
//! positions), and only the words those tokens reach
//! ([`Subtree::replay_within`](super::Subtree::replay_within)); it walks the others.
//!
//! The replay is the walk of those first bytes in meaning, not in numbering: each token
//! has the same words and final checks, but the words are made in another order, and
//! words no token reaches are left out. So whether a boundary sweeps never depends on
//! what the memo holds or on which boundaries came first (that would make artifacts
//! depend on the order the workers took the boundaries in). It is planned from the
//! grammar before any walk ([`Lexing::plan_sweeps`]): a configuration is swept where at
//! least [`SWEEP_REUSE`] walks lead [`SWEEP_MIN`] first bytes or more to it, and a
//! boundary replays its sweep from the memo, or walked there and then once the memo is
//! full.
//!
//! On the MaskBench subset (`compile_stages`, three interleaved pairs of runs) sweeps
//! took the compile's p99 from 218–222 ms to 194–215 and its max from 539–555 ms to
//! 514–519. Most of what remains of a name's boundary is writing its classes' token
//! ranges (about 870), which a sweep's replay does as the runs' did.

use super::{
    Boundary, FirstBytes, Kind, Lexing, Likeness, Subtree, TerminalDwaError, Thread, Walk, NONE,
};
use rustc_hash::{FxHashMap, FxHashSet};
use stackmask_formats::TrieRef;
use std::sync::Arc;

/// Fewest first bytes that must lead a boundary to one configuration, all its lexemes
/// going on, for the boundary to replay that configuration's sweep: a sweep walks all
/// of the configuration's first bytes, so a boundary that leads fewer there walks its
/// own. A name's or a string's boundary leads 90 or more.
pub(super) const SWEEP_MIN: usize = 32;

/// A configuration's sweep: its first bytes stepped, and their subtrees' walk.
pub(super) struct Sweep {
    /// The first bytes and the threads after each, on the walk's own words.
    stepped: FirstBytes,
    /// The walk, each class's tokens in order (they are cut by ranges).
    walk: Subtree,
}

impl Sweep {
    /// Its size in memo units.
    pub(super) fn size(&self) -> usize {
        self.walk.size() + self.stepped.len() + self.stepped.threads.len()
    }
}

impl Walk<'_, '_, '_> {
    /// Replays the sweep of the configuration that the most of `stepped`'s first
    /// bytes lead to with every thread still on the empty word, where at least
    /// [`Lexing::sweep_min`](super::Lexing) do, for the first bytes that lead where
    /// they lead from it; returns which entries of `stepped` it stood for (`None` for
    /// none).
    pub(super) fn sweep(
        &mut self,
        stepped: &FirstBytes,
    ) -> Result<Option<Vec<bool>>, TerminalDwaError> {
        let lexing = self.lexing;
        if lexing.sweep_min == 0 || stepped.len() < lexing.sweep_min {
            return Ok(None);
        }
        let mut counts: FxHashMap<u32, usize> = FxHashMap::default();
        for (_, after, next) in stepped.iter() {
            if after != NONE && next.iter().all(|th| th.word == 0) {
                *counts.entry(after).or_default() += 1;
            }
        }
        // Ties go to the smaller configuration, whatever order the map holds them in.
        let best = (counts.into_iter()).max_by(|(a, n), (b, m)| n.cmp(m).then_with(|| b.cmp(a)));
        let Some((config, _)) = best.filter(|&(_, n)| n >= lexing.sweep_min) else {
            return Ok(None);
        };
        if !lexing
            .sweep_configs
            .get()
            .is_some_and(|planned| planned.contains(&config))
        {
            return Ok(None);
        }
        let sweep = self.swept(config)?;
        // Both are in trie order: the first bytes that lead where the configuration's
        // lead, and their tokens.
        let mut covered = vec![false; stepped.len()];
        let mut keep: Vec<(u32, u32)> = Vec::new();
        let mut theirs = sweep.stepped.iter().peekable();
        for (i, (c, after, next)) in stepped.iter().enumerate() {
            while theirs.next_if(|&(d, _, _)| d < c).is_some() {}
            let Some(&(d, their_after, their_next)) = theirs.peek() else {
                break;
            };
            if d == c
                && after == their_after
                && next == their_next
                && next.iter().all(|th| th.word == 0)
            {
                covered[i] = true;
                let range = subtree_tokens(self.trie, c as usize);
                match keep.last_mut() {
                    Some(last) if last.1 == range.0 => last.1 = range.1,
                    _ => keep.push(range),
                }
            }
        }
        sweep
            .walk
            .replay_within(&mut self.words, &mut self.classes, &keep);
        self.check_size()?;
        Ok(Some(covered))
    }

    /// The sweep of configuration `config` of grammar lexemes: from the memo, or
    /// walked now.
    fn swept(&mut self, config: u32) -> Result<Arc<Sweep>, TerminalDwaError> {
        let lexing = self.lexing;
        if let Some(sweep) = lexing
            .memo
            .lock()
            .expect("no walk panicked")
            .sweeps
            .get(&config)
        {
            return Ok(sweep.clone());
        }
        let threads: Vec<Thread> = (lexing.tables.conf_elems(config).iter())
            .map(|&state| Thread {
                word: 0,
                kind: Kind::Group,
                state,
            })
            .collect();
        let mut stepped = None;
        let walk = self.on_own_dag(|own| {
            let first = own.step_first_bytes(&threads, Some(config))?;
            own.walk_first_bytes(&first, None)?;
            stepped = Some(first);
            Ok(())
        })?;
        let mut walk = Arc::into_inner(walk).expect("made just now");
        for (_, tokens) in &mut walk.classes {
            tokens.normalize();
        }
        let sweep = Arc::new(Sweep {
            stepped: stepped.expect("walked"),
            walk,
        });
        let mut memo = lexing.memo.lock().expect("no walk panicked");
        if memo.fits_units(sweep.size()) {
            memo.sweeps.insert(config, sweep.clone());
        }
        Ok(sweep)
    }
}

/// The positions in `trie.token_ids` of the tokens in root child `c`'s subtree: the
/// trie is laid out depth first with every node's tokens after its ancestors' and
/// before its later siblings' (a node with none points where its subtree's start), so
/// they run from `c`'s first position to the next root child's.
fn subtree_tokens(trie: TrieRef<'_>, c: usize) -> (u32, u32) {
    let end = trie.subtree_end(c);
    let stop = match trie.nodes.get(end) {
        Some(next) => next.first_token,
        None => trie.token_ids.len() as u32,
    };
    (trie.nodes[c].first_token, stop)
}

impl Lexing<'_> {
    /// The configuration that the most of `boundary`'s first bytes lead to, by the
    /// configurations' byte steps (a group of grammar lexemes only), where at least
    /// [`Lexing::sweep_min`] of the token trie's first bytes do: the configuration
    /// whose sweep the boundary would replay ([`Lexing::plan_sweeps`]).
    pub fn sweep_target(&self, boundary: Boundary) -> Option<u32> {
        let Boundary::Group {
            config,
            ignore: false,
        } = boundary
        else {
            return None;
        };
        if self.sweep_min == 0 {
            return None;
        }
        let t = &self.tables;
        let k = self.root_bytes_by_class.len();
        let row = &t.conf_next[config as usize * k..(config as usize + 1) * k];
        let mut weights: FxHashMap<u32, usize> = FxHashMap::default();
        for (&after, &n) in row.iter().zip(&self.root_bytes_by_class) {
            if after != 0 && n > 0 {
                *weights.entry(after).or_default() += n as usize;
            }
        }
        (weights.into_iter())
            .max_by(|(a, n), (b, m)| n.cmp(m).then_with(|| b.cmp(a)))
            .filter(|&(_, n)| n >= self.sweep_min)
            .map(|(after, _)| after)
    }

    /// Decides which configurations' sweeps the boundaries replay, from each
    /// boundary's [`Lexing::likeness`] and [`Lexing::sweep_target`] (in the order of
    /// [`Lexing::boundaries`]): those that at least [`SWEEP_REUSE`] walks would replay
    /// (boundaries with one likeness key walk once). A sweep costs a walk of its
    /// configuration's first bytes, and a `date-time`'s or a chunked string's
    /// boundaries each lead to a configuration of their own, whose walk likeness
    /// already shares; a property name's lead 80 walks to one. Decided before any walk,
    /// from the grammar alone, so that whether a boundary sweeps does not depend on
    /// the order the workers take the boundaries in.
    pub fn plan_sweeps(&self, likeness: &[Option<Likeness>], targets: &[Option<u32>]) {
        let mut walks: FxHashMap<u32, FxHashSet<Result<&[u32], usize>>> = FxHashMap::default();
        for (i, (like, target)) in likeness.iter().zip(targets).enumerate() {
            if let Some(target) = target {
                let walk = like.as_ref().map_or(Err(i), |like| Ok(&like.key[..]));
                walks.entry(*target).or_default().insert(walk);
            }
        }
        let planned = (walks.into_iter())
            .filter(|(_, walks)| walks.len() >= self.sweep_reuse)
            .map(|(config, _)| config)
            .collect();
        // A second plan for the same grammar would be the same one.
        let _ = self.sweep_configs.set(planned);
    }
}

/// Fewest walks that must lead to a configuration for its sweep to be made: one walk
/// costs about what the sweep does, and each replay a fraction of it.
pub(super) const SWEEP_REUSE: usize = 3;

#[cfg(test)]
mod tests {
    use super::super::{random_trie, FinalCheck, Lexing, TerminalDwa, NONE};
    use crate::budget::{Deadline, Stage};
    use crate::pipeline;
    use crate::test_rng::XorShift;
    use std::collections::{BTreeMap, BTreeSet};

    /// What a Terminal DWA means: per token (its trie position, or `u32::MAX` for end
    /// of sequence), every word it realises with its final check.
    type Meaning = BTreeMap<u32, BTreeSet<(Vec<u32>, FinalCheck)>>;

    fn meaning(dwa: &TerminalDwa) -> Meaning {
        let n = dwa.num_states();
        let mut preds: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n];
        for (from, succ) in dwa.succ.iter().enumerate() {
            for &(label, to) in succ {
                preds[to as usize].push((label, from as u32));
            }
        }
        // A node is made after its predecessors, so one pass in order finds its words.
        let mut words: Vec<BTreeSet<Vec<u32>>> = vec![BTreeSet::new(); n];
        words[0].insert(Vec::new());
        for w in 1..n {
            let mut here = BTreeSet::new();
            for &(label, from) in &preds[w] {
                for word in &words[from as usize] {
                    let mut word = word.clone();
                    if label != NONE {
                        word.push(label);
                    }
                    here.insert(word);
                }
            }
            words[w] = here;
        }
        let mut out = Meaning::new();
        for (w, finals) in dwa.finals.iter().enumerate() {
            for (check, classes) in finals {
                for k in classes.iter() {
                    let tokens = &dwa.class_tokens[k as usize];
                    let positions = (tokens.ranges.iter())
                        .flat_map(|&(a, b)| a..b)
                        .chain(tokens.eos.then_some(u32::MAX));
                    for p in positions {
                        let entry = out.entry(p).or_default();
                        for word in &words[w] {
                            entry.insert((word.clone(), *check));
                        }
                    }
                }
            }
        }
        out
    }

    /// Every boundary's Terminal DWA with sweeps means what the walk without them
    /// means, token by token: property names beside declared names (most first bytes
    /// into the plain name), a group whose lexemes all go on, lexemes that end on the
    /// first byte, ignored spaces, over random vocabularies, with every sweep planned
    /// that one walk leads to. Sweeps were made (the memo holds them); a replay left
    /// uncut, or one that stands for first bytes leading to other threads, fails it.
    #[test]
    fn sweeps_give_every_token_the_words_of_the_walk() {
        let grammars = [
            r#"
start: "{" (pair ("," pair)*)? "}"
pair: (NAME | "\"abc\"" | "\"abd\"" | "\"bcd\"" | "\"b\"") ":" value
value: NUM | NAME | "[" value ("," value)* "]"
NAME: /"[a-d0-9 ]*"/
NUM: /[0-9]+/
"#,
            r#"
start: (WORD | "ab" | "abc" | "b.c" | NUM)*
WORD: /[a-c]+/
NUM: /[0-9]+(\.[0-9]+)?/
%ignore " "
"#,
            r#"
start: (NUM | "x" | "7y")*
NUM: /[0-5]+/
"#,
        ];
        let alphabets: [&[u8]; 3] = [b"abcd09.\",:[]{} ", b"abc019. ", b"0123456789xy"];
        let mut rng = XorShift(0x5eed_5eeb);
        let mut swept = 0;
        for (g, source) in grammars.iter().enumerate() {
            let lexed = pipeline::lex_grammar_source(source, "sweeps.lark")
                .unwrap_or_else(|e| panic!("grammar {g}: {e}"));
            let compiled = pipeline::compile_parser(&lexed, 100_000).expect("tables");
            let tables = compiled.tables.view();
            for (case, sweep_min) in [2, 3, 5].into_iter().enumerate() {
                let trie = random_trie(&mut rng, alphabets[g], 1200, 8);
                let mut sweeps = Lexing::new(tables, &trie);
                sweeps.sweep_min = sweep_min;
                sweeps.sweep_reuse = 1;
                sweeps.run_len = 3;
                let boundaries = sweeps.boundaries();
                let likeness: Vec<_> = boundaries.iter().map(|&b| sweeps.likeness(b)).collect();
                let targets: Vec<_> = boundaries.iter().map(|&b| sweeps.sweep_target(b)).collect();
                sweeps.plan_sweeps(&likeness, &targets);
                let mut plain = Lexing::new(tables, &trie);
                plain.sweep_min = 0;
                plain.run_len = 0;
                let deadline = Deadline::unlimited();
                let build = |lexing: &Lexing<'_>, b| -> TerminalDwa {
                    let mut poll = deadline.poll(Stage::TerminalDwa);
                    lexing.build(b, 1 << 20, &mut poll).expect("within limits")
                };
                // Twice over: the first pass walks sweeps, the second replays them.
                for pass in 0..2 {
                    for b in sweeps.boundaries() {
                        assert_eq!(
                            meaning(&build(&sweeps, b)),
                            meaning(&build(&plain, b)),
                            "grammar {g} case {case} pass {pass} boundary {b:?}"
                        );
                    }
                }
                swept += sweeps.memo.lock().expect("no walk panicked").sweeps.len();
                assert!(plain
                    .memo
                    .lock()
                    .expect("no walk panicked")
                    .sweeps
                    .is_empty());
            }
        }
        assert!(swept > 10, "only {swept} sweeps kept");
    }
}
