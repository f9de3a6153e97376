//! Runs of first bytes: a Terminal DWA walk's root children, taken several at a time
//! and memoized per grammar.
//!
//! A boundary's walk starts with every child of the token trie's root (a first byte).
//! After most first bytes no lexeme has ended yet, and what the child's subtree yields
//! then depends only on the threads after the byte, not on the boundary. Boundaries
//! inside long lexemes share most of those: a property name's boundaries (one per
//! prefix of a declared name, thousands in a large schema) differ only in the few
//! first bytes that go on in a name, and stepping into the other 200 one by one, each
//! a shared body walk and its exits, was most of their walks. A *run* is a stretch of
//! consecutive such children; its walk, on a word DAG of its own, is kept and
//! replayed where the same run comes again ([`super::Subtree::replay`] adds the same words in
//! the same order and the same classes as walking it in place).

use super::{LexemeSet, TerminalDwaError, Thread, Walk};

/// A run's memo key ([`Walk::walk_run`]): per root child, its index, the configuration
/// after its byte (or [`super::NONE`]) and its threads' (kind, lexeme state).
pub(super) type RunKey = Box<[(u32, u32, LexemeSet)]>;

/// Root children walked as one run ([`Walk::walk_run`]): long enough that replaying a
/// run costs far less than stepping into its children one by one, short enough that
/// the few first bytes where a boundary differs from its neighbours leave most runs
/// the same.
pub(super) const RUN_LEN: usize = 16;

impl Walk<'_, '_, '_> {
    /// Walks root children `run` (each with its threads after its byte, all on the
    /// empty word, in trie order) as [`Walk::first_byte`] would one by one; a run seen
    /// before is replayed from the memo (see the module docs). A run is memoized the
    /// second time it is seen: most runs of other boundaries are seen once, and walking
    /// them on a DAG of their own to replay costs more. Runs shorter than half a
    /// [`RUN_LEN`] are walked child by child.
    pub(super) fn walk_run(
        &mut self,
        run: &[(u32, u32, LexemeSet)],
    ) -> Result<(), TerminalDwaError> {
        let lexing = self.lexing;
        let thread = |kind, state| Thread {
            word: 0,
            kind,
            state,
        };
        let threads = |lexemes: &LexemeSet| -> Vec<Thread> {
            lexemes
                .iter()
                .map(|&(kind, state)| thread(kind, state))
                .collect()
        };
        if lexing.run_len == 0 || run.len() < lexing.run_len.div_ceil(2) {
            for (c, after, lexemes) in run {
                self.first_byte(*c as usize, &threads(lexemes), *after)?;
            }
            return Ok(());
        }
        let key: RunKey = run.into();
        let hash = {
            use std::hash::BuildHasher;
            rustc_hash::FxBuildHasher.hash_one(&key)
        };
        let known = {
            let mut memo = lexing.memo.lock().expect("no walk panicked");
            match memo.runs.get(&key) {
                Some(sub) => Some(Some(sub.clone())),
                None => (!memo.runs_seen.insert(hash)).then_some(None),
            }
        };
        let sub = match known {
            Some(Some(sub)) => sub,
            Some(None) => {
                // Seen before: walked on a DAG of its own, memoized, replayed.
                let sub = self.on_own_dag(|own| {
                    run.iter().try_for_each(|(c, after, lexemes)| {
                        own.first_byte(*c as usize, &threads(lexemes), *after)
                    })
                })?;
                let mut memo = lexing.memo.lock().expect("no walk panicked");
                if memo.fits(&sub) {
                    memo.runs.insert(key, sub.clone());
                }
                sub
            }
            None => {
                for (c, after, lexemes) in run {
                    self.first_byte(*c as usize, &threads(lexemes), *after)?;
                }
                return Ok(());
            }
        };
        sub.replay(&mut self.words, &mut self.classes);
        self.check_size()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{random_trie, Lexing, TerminalDwa};
    use crate::budget::{Deadline, Stage};
    use crate::lexeme_bodies::PreparedTrie;
    use crate::pipeline;
    use crate::test_rng::XorShift;
    use stackmask_formats::{TokenKind, Vocabulary};

    /// Every boundary's Terminal DWA with memoized runs equals the one walked child by
    /// child, node for node and class for class: names beside declared names (a
    /// property name's boundaries), a group of lexemes that all go on (configuration
    /// bodies), lexemes that end on the first byte (which cut a run), ignored spaces,
    /// over random vocabularies whose first bytes make runs of several lengths.
    #[test]
    fn memoized_runs_build_the_terminal_dwas_of_walks_child_by_child() {
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
            // Digits that end a number come after digits that go on in it, so words
            // are made inside a run of first bytes.
            r#"
start: (NUM | "x" | "7y")*
NUM: /[0-5]+/
"#,
        ];
        let alphabets: [&[u8]; 3] = [b"abcd09.\",:[]{} ", b"abc019. ", b"0123456789xy"];
        let mut rng = XorShift(0x5eed_0f2a);
        let mut memoized = 0;
        for (g, source) in grammars.iter().enumerate() {
            let lexed = pipeline::lex_grammar_source(source, "runs.lark")
                .unwrap_or_else(|e| panic!("grammar {g}: {e}"));
            let compiled = pipeline::compile_parser(&lexed, 100_000).expect("tables");
            let tables = compiled.tables.view();
            for (case, run_len) in [2, 3, 4, 8].into_iter().enumerate() {
                let trie = random_trie(&mut rng, alphabets[g], 1200, 8);
                let mut runs = Lexing::new(tables, &trie);
                runs.run_len = run_len;
                let mut plain = Lexing::new(tables, &trie);
                plain.run_len = 0;
                let deadline = Deadline::unlimited();
                let build = |lexing: &Lexing<'_>, b| -> TerminalDwa {
                    let mut poll = deadline.poll(Stage::TerminalDwa);
                    lexing.build(b, 1 << 20, &mut poll).expect("within limits")
                };
                // Twice over, so that the second pass replays what the first memoized.
                for pass in 0..2 {
                    for b in runs.boundaries() {
                        assert!(
                            build(&runs, b) == build(&plain, b),
                            "grammar {g} case {case} pass {pass} boundary {b:?}: the Terminal DWAs differ"
                        );
                    }
                }
                memoized += runs.memo.lock().expect("no walk panicked").runs.len();
                assert!(plain.memo.lock().expect("no walk panicked").runs.is_empty());
            }
        }
        // Words made by stepping a first byte come after those of the run before it:
        // at `6` `SHORT` ends (its word is made) while `LONG` goes on, and the run
        // `0`…`5` before it first makes `LONG`'s word (in `0x`, where both end).
        let lexed = pipeline::lex_grammar_source(
            "start: (LONG | SHORT | \"x\")*\nLONG: /[0-6]+/\nSHORT: /[0-5]+/\n",
            "runs.lark",
        )
        .expect("grammar");
        let compiled = pipeline::compile_parser(&lexed, 100_000).expect("tables");
        let tables = compiled.tables.view();
        let tokens = [
            "0", "1", "2", "3", "4", "5", "6", "x", "0x", "6x", "60", "16",
        ];
        let entries = (tokens.iter())
            .map(|t| Some((t.as_bytes().to_vec(), TokenKind::Normal)))
            .chain([Some((b"<eos>".to_vec(), TokenKind::Special))])
            .collect();
        let vocab = Vocabulary::from_entries("runs", entries, tokens.len() as u32);
        let trie = PreparedTrie::new(crate::vocab::build_trie(&vocab));
        let mut runs = Lexing::new(tables, &trie);
        runs.run_len = 2;
        let mut plain = Lexing::new(tables, &trie);
        plain.run_len = 0;
        let deadline = Deadline::unlimited();
        for b in runs.boundaries() {
            let mut poll = deadline.poll(Stage::TerminalDwa);
            let with_runs = runs.build(b, 1 << 20, &mut poll).expect("within limits");
            let mut poll = deadline.poll(Stage::TerminalDwa);
            let child_by_child = plain.build(b, 1 << 20, &mut poll).expect("within limits");
            assert!(
                with_runs == child_by_child,
                "boundary {b:?}: the Terminal DWAs differ"
            );
        }

        // Runs were memoized (and so replayed: a run is kept the second time it is
        // seen), so the equality is about them.
        assert!(memoized > 20, "only {memoized} runs memoized");
    }
}
