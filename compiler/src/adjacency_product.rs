//! Exact masks at greedy dead ends: the grammar × lexeme-adjacency product.
//!
//! Under DESIGN.md §1 a greedy lexeme that ends in DFA state `q` lets the next lexeme
//! start only with a byte that does not extend `q` (its *exit set*). So a lexeme can be
//! alive and expected and still have no completion: `start: A B`, `A: /a+/`, `B: "a"`
//! has no sentence at all, and in a config grammar with `%ignore /#[^\n]*/`, `key #`
//! has none where `=` must come next. The LR tables and the lexer only know "alive"
//! and "expected"; this stage makes those two facts exact again, so that every later
//! stage — lexer configurations, GLR commit, Terminal DWA, Parser DWA — stays as it is.
//!
//! **Grammar lexemes.** What a lexeme allows next depends only on the exit set of the
//! state it ends in, through the bytes that may start the next grammar lexeme
//! (directly or after ignore lexemes): its *adjacency state*. Each terminal `u` is split
//! by the adjacency state it ends in — `u@b` is `u`'s DFA with only the accepting
//! states of block `b` accepting, so a lexeme of `u@b` is alive exactly while it can
//! still end there, and its transitions stay `u`'s so greedy lexing is unchanged
//! (`ByteDfa::extends`). Which split terminal may follow which is then a local
//! (bigram) constraint on terminal sequences, and the grammar is intersected with it
//! (Bar-Hillel): nonterminal `A[p,q]` derives the sentences of `A` that start where
//! adjacency state `p` allows and end in state `q`. Adjacency states are minimized
//! first (Moore), so a grammar where only one place is tight grows only there. In the
//! product, "alive and expected" implies a completion: canonical LR(1) is exact on
//! viable prefixes, and the product grammar is reduced.
//!
//! **Ignore lexemes** are not in the rules, so the product cannot constrain them. For
//! each ignore DFA state the stage lists the split terminals that can come next if the
//! lexeme ends from there (a `#` comment: only those that can start with a newline);
//! the runtime and the Parser DWA require the parser to expect one of them
//! (`ParserTables::ignore_follow`).
//!
//! Grammars without dead ends (JSON, C, SQL, arithmetic — `adjacency::check_dead_ends`
//! decides) skip this stage entirely.

use crate::adjacency::{allowed_first, exit_bytes, ignore_exits, ByteSet};
use crate::budget::{BudgetError, Deadline, Poll, Stage};
use crate::pipeline::LexedGrammar;
use stackmask_formats::dfa::ReverseEdges;
use stackmask_formats::{ByteDfa, Grammar, Nonterminal, Rule, Symbol, Terminal};
use std::collections::HashMap;

/// Default for [`product`]'s rule limit.
pub const DEFAULT_MAX_PRODUCT_RULES: usize = 1_000_000;

/// The product grammar would exceed its rule limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "making masks exact at greedy dead ends needs more than {limit} rules in the grammar × lexeme-adjacency product (max_product_rules); \
     the dead end nearest the start: {dead_end}"
)]
pub struct ProductLimitError {
    /// The limit.
    pub limit: usize,
    /// Where the grammar dead-ends (`adjacency::DeadEndError`'s message).
    pub dead_end: String,
}

/// Why [`Builder::product_rules`] stopped.
enum Stop {
    /// The rule limit.
    Limit,
    /// The compile's budget.
    Budget(BudgetError),
}

/// The grammar the parser runs on, when it differs from the source grammar.
#[derive(Debug, Clone)]
pub struct Product {
    /// The product grammar and its DFAs (terminal ids are the split terminals').
    pub lexed: LexedGrammar,
    /// Per ignore terminal of the product grammar: per local DFA state, the terminals
    /// that can follow a lexeme ending from there, or `None` where any can.
    pub ignore_follow: Vec<(u32, Vec<Option<Vec<u32>>>)>,
}

/// Builds the product for a grammar with greedy dead ends, or `None` when it has none
/// (then the grammar is exact as it is). Fails past `max_rules` product rules, or when
/// the compile's budget runs out (polled per product nonterminal).
pub fn product<E: From<ProductLimitError> + From<BudgetError>>(
    lexed: &LexedGrammar,
    max_rules: usize,
    deadline: &Deadline,
) -> Result<Option<Product>, E> {
    deadline.check(Stage::AdjacencyProduct)?;
    let dead_end = match crate::adjacency::check_dead_ends(&lexed.grammar, &lexed.dfas) {
        Ok(()) => return Ok(None),
        Err(e) => e.to_string(),
    };
    let g = &lexed.grammar;
    let dfas = &lexed.dfas;
    let adj = Adjacency::new(g, dfas);
    let mut b = Builder {
        g,
        adj: &adj,
        terminals: Vec::new(),
        dfas: Vec::new(),
        split_id: HashMap::new(),
        nonterminals: Vec::new(),
        nt_id: HashMap::new(),
        rules: Vec::new(),
        max_rules,
    };
    b.split_terminals(dfas);
    let ignore: Vec<u32> = g
        .ignore
        .iter()
        .map(|&i| {
            b.terminals.push(g.terminals[i as usize].clone());
            b.dfas.push(dfas[i as usize].clone());
            (b.terminals.len() - 1) as u32
        })
        .collect();
    let start = match b.product_rules(&mut deadline.poll(Stage::AdjacencyProduct)) {
        Ok(start) => start,
        Err(Stop::Budget(e)) => return Err(e.into()),
        Err(Stop::Limit) => {
            return Err(ProductLimitError {
                limit: max_rules,
                dead_end,
            }
            .into())
        }
    };
    let rule_terminals: Vec<u32> = b.split_id.values().copied().collect();
    let ignore_follow = g
        .ignore
        .iter()
        .zip(&ignore)
        .map(|(&i, &new)| {
            (
                new,
                adj.ignore_follow(i, &dfas[i as usize], &b, &rule_terminals),
            )
        })
        .collect();
    let grammar = Grammar {
        source_name: g.source_name.clone(),
        terminals: b.terminals,
        nonterminals: b.nonterminals,
        rules: b.rules,
        start,
        ignore,
        allow_initial_skip: g.allow_initial_skip,
    };
    Ok(Some(Product {
        lexed: LexedGrammar {
            grammar,
            dfas: b.dfas,
        },
        ignore_follow,
    }))
}

/// The lexeme-adjacency automaton over the source grammar's terminals.
struct Adjacency {
    /// Per adjacency state: the bytes that may start the next grammar lexeme.
    allowed: Vec<ByteSet>,
    /// Per terminal, per DFA state: the adjacency states of the accepting states a
    /// lexeme can reach from there (where it can end).
    ends: Vec<Vec<Vec<bool>>>,
    /// `block_targets[p][u]`: the blocks a lexeme of `u` can end in when it starts
    /// where block `p` allows (sorted).
    block_targets: Vec<Vec<Vec<u32>>>,
    /// Minimized: the block of each adjacency state.
    block: Vec<u32>,
    /// Number of blocks.
    blocks: usize,
    /// The block at the start of input.
    initial: u32,
    /// Per terminal, per DFA state: the adjacency state its exit set leads to
    /// (accepting states only).
    state_of: Vec<Vec<Option<u32>>>,
}

impl Adjacency {
    fn new(g: &Grammar, dfas: &[ByteDfa]) -> Self {
        let ign = ignore_exits(g, dfas);
        let mut ids: HashMap<ByteSet, u32> = HashMap::new();
        let mut allowed: Vec<ByteSet> = Vec::new();
        let mut intern = |set: ByteSet| -> u32 {
            let n = allowed.len() as u32;
            *ids.entry(set).or_insert_with(|| {
                allowed.push(set);
                n
            })
        };
        // State 0: the start of input, where any byte may start the first lexeme.
        let initial_state = intern([true; 256]);
        let mut memo: HashMap<ByteSet, u32> = HashMap::new();
        let state_of: Vec<Vec<Option<u32>>> = dfas
            .iter()
            .enumerate()
            .map(|(t, d)| {
                let lazy = g.terminals[t].lazy;
                (0..d.num_states() as u32)
                    .map(|q| {
                        d.is_accepting(q).then(|| {
                            let exit = exit_bytes(d, q, lazy);
                            *memo
                                .entry(exit)
                                .or_insert_with(|| intern(allowed_first(&exit, &ign)))
                        })
                    })
                    .collect()
            })
            .collect();
        let states = allowed.len();
        let ends: Vec<Vec<Vec<bool>>> = dfas
            .iter()
            .enumerate()
            .map(|(t, d)| {
                let lazy = g.terminals[t].lazy;
                let preds = ReverseEdges::new(&d.trans, 256, |q| {
                    q != ByteDfa::DEAD && !(lazy && d.is_accepting(q))
                });
                let mut per_state = vec![vec![false; states]; d.num_states()];
                let mut work = Vec::new();
                for a in 0..states as u32 {
                    let mut marked: Vec<bool> = state_of[t].iter().map(|&s| s == Some(a)).collect();
                    preds.spread_backwards(&mut marked, &mut work);
                    for (q, &m) in marked.iter().enumerate() {
                        per_state[q][a as usize] = m;
                    }
                }
                per_state
            })
            .collect();
        let targets: Vec<Vec<Vec<u32>>> = (0..states)
            .map(|s| {
                dfas.iter()
                    .enumerate()
                    .map(|(u, d)| {
                        let mut out = vec![false; states];
                        for f in (0..=255u8).filter(|&f| allowed[s][f as usize]) {
                            let q = d.next(d.start, f);
                            if q != ByteDfa::DEAD {
                                for (a, &e) in ends[u][q as usize].iter().enumerate() {
                                    out[a] |= e;
                                }
                            }
                        }
                        (0..states as u32).filter(|&a| out[a as usize]).collect()
                    })
                    .collect()
            })
            .collect();
        let rule_terminal = rule_terminals(g);
        let (block, blocks) = minimize(&targets, &rule_terminal);
        let initial = block[initial_state as usize];
        // States of one block agree on every used terminal's targets (that is what
        // the refinement ended on), so any member stands for its block.
        let mut block_targets = vec![Vec::new(); blocks];
        for (s, &b) in block.iter().enumerate() {
            if block_targets[b as usize].is_empty() {
                block_targets[b as usize] =
                    targets[s].iter().map(|ts| blocks_of(ts, &block)).collect();
            }
        }
        Adjacency {
            allowed,
            ends,
            block_targets,
            block,
            blocks,
            initial,
            state_of,
        }
    }

    /// Per DFA state of ignore terminal `i`: the split terminals that can come next
    /// when the lexeme ends from there, `None` where that is all of them.
    fn ignore_follow(
        &self,
        i: u32,
        d: &ByteDfa,
        b: &Builder<'_>,
        rule_terminals: &[u32],
    ) -> Vec<Option<Vec<u32>>> {
        (0..d.num_states())
            .map(|q| {
                let mut first = [false; 256];
                for (a, &e) in self.ends[i as usize][q].iter().enumerate() {
                    if e {
                        for (x, &y) in first.iter_mut().zip(&self.allowed[a]) {
                            *x |= y;
                        }
                    }
                }
                let mut follow: Vec<u32> = rule_terminals
                    .iter()
                    .copied()
                    .filter(|&x| {
                        let dx = &b.dfas[x as usize];
                        (0..=255u8).any(|f| first[f as usize] && dx.is_live(dx.next(dx.start, f)))
                    })
                    .collect();
                follow.sort_unstable();
                (follow.len() < rule_terminals.len()).then_some(follow)
            })
            .collect()
    }
}

/// Per terminal: whether some rule uses it.
fn rule_terminals(g: &Grammar) -> Vec<bool> {
    let mut used = vec![false; g.terminals.len()];
    for s in g.rules.iter().flat_map(|r| &r.rhs) {
        if let Symbol::Terminal(t) = *s {
            used[t as usize] = true;
        }
    }
    used
}

/// The blocks of adjacency states `states`, sorted and deduplicated.
fn blocks_of(states: &[u32], block: &[u32]) -> Vec<u32> {
    let mut out: Vec<u32> = states.iter().map(|&a| block[a as usize]).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Per terminal a rule uses: the blocks a lexeme of it can end in from one state.
type Signature = Vec<(u32, Vec<u32>)>;

/// Moore's partition refinement: two adjacency states are equivalent when, for every
/// terminal a rule uses, a lexeme of it can end in the same blocks. Returns the block
/// of each state and the number of blocks.
fn minimize(targets: &[Vec<Vec<u32>>], used: &[bool]) -> (Vec<u32>, usize) {
    let n = targets.len();
    let mut block = vec![0u32; n];
    let mut count = 1;
    loop {
        let mut ids: HashMap<(u32, Signature), u32> = HashMap::new();
        let next: Vec<u32> = (0..n)
            .map(|s| {
                let signature: Signature = targets[s]
                    .iter()
                    .enumerate()
                    .filter(|&(u, _)| used[u])
                    .map(|(u, ts)| (u as u32, blocks_of(ts, &block)))
                    .collect();
                let k = ids.len() as u32;
                *ids.entry((block[s], signature)).or_insert(k)
            })
            .collect();
        let new_count = ids.len();
        block = next;
        if new_count == count {
            return (block, count);
        }
        count = new_count;
    }
}

/// Builds the product grammar.
struct Builder<'a> {
    g: &'a Grammar,
    adj: &'a Adjacency,
    terminals: Vec<Terminal>,
    dfas: Vec<ByteDfa>,
    /// (source terminal, block) → split terminal.
    split_id: HashMap<(u32, u32), u32>,
    nonterminals: Vec<Nonterminal>,
    /// (source nonterminal, in block, out block) → product nonterminal.
    nt_id: HashMap<(u32, u32, u32), u32>,
    rules: Vec<Rule>,
    max_rules: usize,
}

impl Builder<'_> {
    /// One terminal per (terminal a rule uses, block some lexeme of it ends in).
    fn split_terminals(&mut self, dfas: &[ByteDfa]) {
        let used = rule_terminals(self.g);
        let adj = self.adj;
        for (u, d) in dfas.iter().enumerate() {
            if !used[u] {
                continue;
            }
            let mut blocks: Vec<u32> = adj.state_of[u]
                .iter()
                .flatten()
                .map(|&a| adj.block[a as usize])
                .collect();
            blocks.sort_unstable();
            blocks.dedup();
            for &blk in &blocks {
                let mut split = d.clone();
                for (q, a) in adj.state_of[u].iter().enumerate() {
                    let accepting = a.is_some_and(|a| adj.block[a as usize] == blk);
                    split.flags[q] = if accepting { ByteDfa::ACCEPTING } else { 0 };
                }
                let mut live: Vec<bool> = (0..split.num_states() as u32)
                    .map(|q| split.is_accepting(q))
                    .collect();
                ReverseEdges::new(&split.trans, 256, |_| true)
                    .spread_backwards(&mut live, &mut Vec::new());
                for (q, l) in live.iter().enumerate() {
                    if *l {
                        split.flags[q] |= ByteDfa::LIVE;
                    }
                }
                if !split.is_live(split.start) {
                    continue;
                }
                let src = &self.g.terminals[u];
                let name = if blocks.len() == 1 {
                    src.name.clone()
                } else {
                    format!("{}@{blk}", src.name)
                };
                self.split_id
                    .insert((u as u32, blk), self.terminals.len() as u32);
                self.terminals.push(Terminal {
                    name,
                    ..src.clone()
                });
                self.dfas.push(split);
            }
        }
    }

    /// Per source nonterminal and in block: the out blocks its derivations can reach.
    fn reach(&self) -> Vec<Vec<Vec<bool>>> {
        let k = self.adj.blocks;
        let g = self.g;
        let mut out = vec![vec![vec![false; k]; k]; g.nonterminals.len()];
        let mut changed = true;
        while changed {
            changed = false;
            for r in &g.rules {
                for p in 0..k {
                    let mut cur = vec![false; k];
                    cur[p] = true;
                    for &s in &r.rhs {
                        cur = self.step_set(&out, &cur, s);
                    }
                    for (q, &c) in cur.iter().enumerate() {
                        if c && !out[r.lhs as usize][p][q] {
                            out[r.lhs as usize][p][q] = true;
                            changed = true;
                        }
                    }
                }
            }
        }
        out
    }

    /// The blocks after symbol `s` from any block in `cur`.
    fn step_set(&self, out: &[Vec<Vec<bool>>], cur: &[bool], s: Symbol) -> Vec<bool> {
        let k = self.adj.blocks;
        let mut next = vec![false; k];
        for p in (0..k).filter(|&p| cur[p]) {
            for q in self.after(out, p as u32, s) {
                next[q as usize] = true;
            }
        }
        next
    }

    /// The blocks symbol `s` can end in from block `p`.
    fn after(&self, out: &[Vec<Vec<bool>>], p: u32, s: Symbol) -> Vec<u32> {
        match s {
            // A target block has a lexeme ending in it, so its split exists.
            Symbol::Terminal(u) => self.adj.block_targets[p as usize][u as usize].clone(),
            Symbol::Nonterminal(a) => (0..self.adj.blocks as u32)
                .filter(|&q| out[a as usize][p as usize][q as usize])
                .collect(),
        }
    }

    fn nonterminal(&mut self, a: u32, p: u32, q: u32, work: &mut Vec<(u32, u32, u32)>) -> u32 {
        let n = self.nonterminals.len() as u32;
        let blocks = self.adj.blocks;
        let g = self.g;
        *self.nt_id.entry((a, p, q)).or_insert_with(|| {
            let name = &g.nonterminals[a as usize].name;
            self.nonterminals.push(Nonterminal {
                name: if blocks == 1 {
                    name.clone()
                } else {
                    format!("{name}[{p},{q}]")
                },
            });
            work.push((a, p, q));
            n
        })
    }

    /// Generates the product rules reachable from the start; returns the new start.
    /// Stops past the rule limit or the budget.
    fn product_rules(&mut self, poll: &mut Poll<'_>) -> Result<u32, Stop> {
        let out = self.reach();
        let g = self.g;
        let k = self.adj.blocks as u32;
        // A fresh start symbol: the sentence may end in any block.
        let start = self.nonterminals.len() as u32;
        self.nonterminals.push(Nonterminal {
            name: g.nonterminals[g.start as usize].name.clone(),
        });
        let mut work = Vec::new();
        let p0 = self.adj.initial;
        for q in 0..k {
            if out[g.start as usize][p0 as usize][q as usize] {
                let n = self.nonterminal(g.start, p0, q, &mut work);
                self.rules.push(Rule {
                    lhs: start,
                    rhs: vec![Symbol::Nonterminal(n)],
                });
            }
        }
        while let Some((a, p, q)) = work.pop() {
            poll.tick().map_err(Stop::Budget)?;
            let lhs = self.nt_id[&(a, p, q)];
            for r in g.rules.iter().filter(|r| r.lhs == a) {
                // fin[i][s]: from block s before rhs[i], the rest can end in q.
                let n = r.rhs.len();
                let mut fin = vec![vec![false; k as usize]; n + 1];
                fin[n][q as usize] = true;
                for i in (0..n).rev() {
                    for s in 0..k {
                        fin[i][s as usize] = self
                            .after(&out, s, r.rhs[i])
                            .iter()
                            .any(|&t| fin[i + 1][t as usize]);
                    }
                }
                if !fin[0][p as usize] {
                    continue;
                }
                // Depth-first over the block sequences through the rule.
                let mut stack: Vec<(usize, u32, Vec<Symbol>)> = vec![(0, p, Vec::new())];
                while let Some((i, s, rhs)) = stack.pop() {
                    if i == n {
                        if self.rules.len() >= self.max_rules {
                            return Err(Stop::Limit);
                        }
                        self.rules.push(Rule { lhs, rhs });
                        continue;
                    }
                    for t in self.after(&out, s, r.rhs[i]) {
                        if !fin[i + 1][t as usize] {
                            continue;
                        }
                        let sym = match r.rhs[i] {
                            Symbol::Terminal(u) => Symbol::Terminal(self.split_id[&(u, t)]),
                            Symbol::Nonterminal(x) => {
                                Symbol::Nonterminal(self.nonterminal(x, s, t, &mut work))
                            }
                        };
                        let mut next = rhs.clone();
                        next.push(sym);
                        stack.push((i + 1, t, next));
                    }
                }
            }
        }
        Ok(start)
    }
}
