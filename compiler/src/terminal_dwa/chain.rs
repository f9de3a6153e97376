//! Chain walks: a Terminal DWA walk over stretches where every lexing thread is on one
//! word, as a lazily built DFA instead of stepping threads per trie node.
//!
//! Where all threads share their word, what the next byte does to them is a function
//! of the byte, their lexeme states and the word's last terminal (which terminals may
//! start after it): they go on or die on the same word, or the lexemes that end all
//! end with the same terminal and the survivors go on together on the word one longer.
//! Such a set of (kind, lexeme state) with its last terminal is a *chain state*, and
//! its transitions are worked out once per byte and then only looked up: a walk from
//! inside a chunked string (`maxLength`) goes through chunk after chunk this way, on a
//! few dozen chain states, where stepping every thread at each of the trie's 400,000
//! nodes was most of a MaskBench tail schema's compile. Where the survivors end up on
//! different words the transition is an *exit*, and that trie node and its subtree
//! are walked thread by thread as before.
//!
//! A chain walk adds the same words, in the same order, and the same token classes as
//! stepping the threads node by node (a byte that ends a lexeme makes its word's child
//! even where nothing can follow it, so the transition remembers those terminals and
//! the walk makes the same children), so the Terminal DWA it yields is the same one.

use super::{
    FinalCheck, Kind, LexemeSet, Lexing, TerminalDwaError, Thread, Walk, WalkScratch, NONE,
};
use rustc_hash::FxHashMap;

/// Lexemes on one word and that word's last terminal ([`NONE`] for the empty word).
type ChainKey = (u32, LexemeSet);

/// The chain states and transitions one boundary's walk has needed so far.
#[derive(Default)]
pub(super) struct ChainDfa {
    /// Per chain state: its key and the final checks of a token that ends in it.
    states: Vec<(ChainKey, Box<[FinalCheck]>)>,
    ids: FxHashMap<ChainKey, u32>,
    /// Per state × byte: an index into `edges`, or [`ChainDfa::UNKNOWN`].
    trans: Vec<u32>,
    edges: Vec<Edge>,
    /// The terminals whose words' children transitions make, as ranges of `edges`.
    touched: Vec<u32>,
    /// Per trie depth: the chain state and the word of the walk's current path.
    path: Vec<(u32, u32)>,
    /// Scratch: the lexemes after a byte, each with the terminal it is after.
    next: Vec<(u32, Kind, u32)>,
}

/// What a byte does from a chain state.
#[derive(Clone, Copy, Debug)]
struct Edge {
    /// The next chain state, [`ChainDfa::DEAD`] or [`ChainDfa::EXIT`].
    to: u32,
    /// The terminal the survivors' word is one longer by, or [`NONE`].
    emit: u32,
    /// `touched[first..end]`: the terminals of the lexemes that end on the byte, in
    /// the order the threads step (each makes its word's child).
    touched: (u32, u32),
}

impl ChainDfa {
    const UNKNOWN: u32 = u32::MAX;
    /// No lexeme goes on: the subtree holds nothing.
    const DEAD: u32 = u32::MAX;
    /// The survivors are on different words: walked thread by thread from here.
    const EXIT: u32 = u32::MAX - 1;
    /// Most chain states per boundary; a transition to a state past it is an exit
    /// (1 KB of transitions a state).
    const MAX_STATES: usize = 4096;

    /// The chain state of `lexemes` on a word ending with `last`, made if new;
    /// `None` past [`ChainDfa::MAX_STATES`].
    fn intern(&mut self, lexing: &Lexing<'_>, last: u32, lexemes: LexemeSet) -> Option<u32> {
        let key = (last, lexemes);
        if let Some(&s) = self.ids.get(&key) {
            return Some(s);
        }
        if self.states.len() >= Self::MAX_STATES {
            return None;
        }
        let checks = lexing.checks_of(&key.1);
        let s = self.states.len() as u32;
        self.ids.insert(key.clone(), s);
        self.states.push((key, checks.into()));
        self.trans.resize(self.trans.len() + 256, Self::UNKNOWN);
        Some(s)
    }

    /// The transition of chain state `s` on byte `b`, worked out on first use exactly
    /// as [`Lexing::step`] steps each of its threads.
    fn edge(&mut self, lexing: &Lexing<'_>, s: u32, b: u8) -> Edge {
        let cell = s as usize * 256 + b as usize;
        if let Some(e) = self.edges.get(self.trans[cell] as usize) {
            return *e;
        }
        let t = &lexing.tables;
        let last = self.states[s as usize].0 .0;
        let first = self.touched.len() as u32;
        let mut next = std::mem::take(&mut self.next);
        let mut started = Vec::new();
        next.clear();
        for &(kind, state) in self.states[s as usize].0 .1.iter() {
            let term = t.dfa_term[state as usize];
            if t.may_end(term, state, Some(b)) {
                let after = match kind {
                    Kind::Group | Kind::Fresh => {
                        self.touched.push(term);
                        term
                    }
                    _ => NONE,
                };
                let last_after = if after == NONE { last } else { after };
                started.clear();
                lexing.start_lexemes(0, last_after, b, true, &mut started);
                next.extend(started.iter().map(|th| (after, th.kind, th.state)));
            } else {
                let n = t.dfa_next(state, b);
                if t.dfa_live(n) {
                    next.push((NONE, kind, n));
                }
            }
        }
        let touched = (first, self.touched.len() as u32);
        let edge = match next.first() {
            None => Edge {
                to: Self::DEAD,
                emit: NONE,
                touched,
            },
            Some(&(emit, ..)) if next.iter().all(|&(e, ..)| e == emit) => {
                let mut lexemes: Vec<(Kind, u32)> = next.iter().map(|&(_, k, q)| (k, q)).collect();
                lexemes.sort_unstable();
                lexemes.dedup();
                let last_after = if emit == NONE { last } else { emit };
                match self.intern(lexing, last_after, lexemes.into()) {
                    Some(to) => Edge { to, emit, touched },
                    None => Self::exit(),
                }
            }
            Some(_) => Self::exit(),
        };
        if edge.to == Self::EXIT {
            // The threads step themselves from here, making their own children.
            self.touched.truncate(first as usize);
        }
        self.next = next;
        self.trans[cell] = self.edges.len() as u32;
        self.edges.push(edge);
        edge
    }

    /// The lexemes of the chain walk's path at trie depth `depth`.
    pub(super) fn lexemes_at(&self, depth: usize) -> &[(Kind, u32)] {
        let (s, _) = self.path[depth];
        &self.states[s as usize].0 .1
    }

    fn exit() -> Edge {
        Edge {
            to: Self::EXIT,
            emit: NONE,
            touched: (0, 0),
        }
    }
}

impl Walk<'_, '_, '_> {
    /// Walks the subtree of trie node `from` as a chain walk, where its threads
    /// (after its byte) are all on one word: `true`. `false`, with nothing added,
    /// otherwise.
    pub(super) fn by_chain(
        &mut self,
        from: usize,
        threads: &[Thread],
    ) -> Result<bool, TerminalDwaError> {
        let Some(&Thread { word, .. }) = threads.first() else {
            return Ok(false);
        };
        if !self.lexing.chain_walks
            || !threads
                .iter()
                .all(|th| th.word == word && th.kind != Kind::Start)
        {
            return Ok(false);
        }
        if self.scratch.chain.states.len() >= ChainDfa::MAX_STATES {
            // Full: started afresh (no chain walk is under way here).
            self.scratch.chain = ChainDfa::default();
        }
        let last = self.words.last[word as usize];
        let lexemes: LexemeSet = threads.iter().map(|th| (th.kind, th.state)).collect();
        let Some(s) = self.scratch.chain.intern(self.lexing, last, lexemes) else {
            return Ok(false);
        };
        let d = self.trie.nodes[from].depth as usize;
        let path = &mut self.scratch.chain.path;
        if path.len() <= d {
            path.resize(d + 1, (0, 0));
        }
        path[d] = (s, word);
        self.chain_tokens(from, s, word);
        self.below::<true>(from)?;
        Ok(true)
    }

    /// [`Walk::enter`] for a chain walk: follows trie node `i`'s byte from its
    /// parent's chain state. `false` if nothing below it is left to walk (no lexeme
    /// goes on, or the threads went on thread by thread from there).
    pub(super) fn chain_enter(&mut self, i: usize) -> Result<bool, TerminalDwaError> {
        self.poll.tick()?;
        let node = &self.trie.nodes[i];
        let d = node.depth as usize;
        let chain = &mut self.scratch.chain;
        let (s, word) = chain.path[d - 1];
        let edge = chain.edge(self.lexing, s, node.byte);
        for &term in &chain.touched[edge.touched.0 as usize..edge.touched.1 as usize] {
            self.words.child(word, term);
        }
        match edge.to {
            ChainDfa::DEAD => Ok(false),
            ChainDfa::EXIT => {
                let WalkScratch { levels, chain, .. } = &mut self.scratch;
                if levels.len() < d {
                    levels.resize_with(d, Vec::new);
                }
                let parent = &mut levels[d - 1];
                parent.clear();
                parent.extend(
                    (chain.states[s as usize].0 .1.iter()).map(|&(kind, state)| Thread {
                        word,
                        kind,
                        state,
                    }),
                );
                if self.enter(i)? {
                    self.below::<false>(i)?;
                }
                Ok(false)
            }
            to => {
                let word = if edge.emit == NONE {
                    word
                } else {
                    self.words.child(word, edge.emit)
                };
                let path = &mut self.scratch.chain.path;
                if path.len() <= d {
                    path.resize(d + 1, (0, 0));
                }
                path[d] = (to, word);
                self.chain_tokens(i, to, word);
                self.check_size()?;
                Ok(true)
            }
        }
    }

    /// Adds the tokens ending at trie node `node` to the class of chain state `s` on
    /// `word` (as [`Lexing::add_tokens`] would for its threads).
    fn chain_tokens(&mut self, node: usize, s: u32, word: u32) {
        let n = &self.trie.nodes[node];
        if n.num_tokens == 0 {
            return;
        }
        let range = (n.first_token, n.first_token + n.num_tokens);
        let key = (word, s);
        let k = if self.chain_last.0 == key {
            self.chain_last.1
        } else if let Some(&k) = self.chain_classes.get(&key) {
            k
        } else {
            let outcome: Vec<(u32, FinalCheck)> = (self.scratch.chain.states[s as usize].1)
                .iter()
                .map(|&c| (word, c))
                .collect();
            let k = self.classes.class_of(&outcome);
            self.chain_classes.insert(key, k);
            k
        };
        self.chain_last = (key, k);
        self.classes.tokens[k as usize].add(range);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Lexing, TerminalDwa};
    use crate::budget::{Deadline, Stage};
    use crate::lexeme_bodies::PreparedTrie;
    use crate::pipeline;
    use crate::test_rng::XorShift;
    use stackmask_formats::{TokenKind, Vocabulary};

    /// Every boundary's Terminal DWA with chain walks equals the one walked thread by
    /// thread, node for node and class for class: grammars whose lexemes end inside
    /// tokens one after another (a chunked string's fixed-length chunks and its tail,
    /// keywords beside names, ignored spaces and comments between lexemes, greedy
    /// and lazy terminals) over random vocabularies with long tokens.
    #[test]
    fn chain_walks_build_the_terminal_dwas_of_thread_by_thread_walks() {
        let grammars = [
            r#"
start: item ("," item)*
item: NAME | "\"" CHUNK* TAIL | "," "\"" CHUNK? TAIL
NAME: /'[ab]{1,20}'/
CHUNK: /[ab]{4}/
TAIL: /[abc]{0,3}"/
"#,
            r#"
start: (WORD | "ab" | "abc" | NUM | "(" start ")")*
WORD: /[a-c]+/
NUM: /[0-9]+(\.[0-9]+)?/
COMMENT: /#[^\n]*/
%ignore " "
%ignore COMMENT
"#,
            r#"
start: pair+
pair: KEY ":" VALUE ";"?
KEY: /[ab]+?/
VALUE: /[ab0-9]{2}/ | /c+/
%ignore /[ \n]+/
"#,
        ];
        let mut rng = XorShift(0xc4a1_0e57);
        let mut chained = 0;
        for (g, source) in grammars.iter().enumerate() {
            let lexed = pipeline::lex_grammar_source(source, "chain.lark")
                .unwrap_or_else(|e| panic!("grammar {g}: {e}"));
            let compiled = pipeline::compile_parser(&lexed, 100_000).expect("tables");
            let tables = compiled.tables.view();
            for case in 0..3 {
                let alphabet = b"abc09.'\",:;()# \n";
                let entries = (0..1500)
                    .map(|i| {
                        let len = match i % 3 {
                            0 => 1 + rng.below(3),
                            _ => 1 + rng.below(14),
                        } as usize;
                        let skew = |r: &mut XorShift| match r.below(3) {
                            0 => alphabet[r.below(alphabet.len() as u64) as usize],
                            _ => b"ab"[r.below(2) as usize],
                        };
                        Some((
                            (0..len).map(|_| skew(&mut rng)).collect(),
                            TokenKind::Normal,
                        ))
                    })
                    .chain([Some((b"<eos>".to_vec(), TokenKind::Special))])
                    .collect();
                let vocab = Vocabulary::from_entries("chain", entries, 1500);
                let trie = PreparedTrie::new(crate::vocab::build_trie(&vocab));
                let chain = Lexing::new(tables, &trie);
                let mut plain = Lexing::new(tables, &trie);
                plain.chain_walks = false;
                let deadline = Deadline::unlimited();
                let build = |lexing: &Lexing<'_>, b| -> TerminalDwa {
                    let mut poll = deadline.poll(Stage::TerminalDwa);
                    lexing.build(b, 1 << 20, &mut poll).expect("within limits")
                };
                for b in chain.boundaries() {
                    assert!(
                        build(&chain, b) == build(&plain, b),
                        "grammar {g} case {case} boundary {b:?}: the Terminal DWAs differ"
                    );
                }
                let pool = chain.chains.lock().expect("no walk panicked");
                chained += pool.iter().map(|c| c.edges.len()).sum::<usize>();
            }
        }
        // The chain walks ran (and took transitions), so the equality is about them.
        assert!(chained > 1000, "only {chained} chain transitions");
    }
}
