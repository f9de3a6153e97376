//! Composition → Parser DWA: Terminal DWAs and templates become one automaton that
//! reads the parse stack top-down and yields token sets.
//!
//! For one boundary, a token class is valid on a stack iff one of its words can be
//! shifted there and its final check holds on the stack after. Reading the stack one
//! LR state at a time, every word is simulated with the templates of its terminals
//! over the part of the stack seen so far (a walk over the Terminal DWA, memoized on
//! `(node, known stack)` and cut where every class below is decided); a simulation
//! that pops everything it has seen becomes a *thread* `(Terminal DWA node, terminal
//! in progress, states still to pop, nonterminal to goto)` that waits for the next
//! state down. Pushes made while simulating live only in the known part and cancel
//! against later pops; what is left pushed when a word ends is dropped (commit does
//! the real update). An
//! automaton state is the set of waiting threads plus the classes still undecided;
//! the subset construction over those states, with the classes each step proves
//! valid as the transition's weight, is the deterministic Parser DWA. A state without
//! threads decides everything: the walk stops (bounded lookback).
//!
//! End of sequence is a class like the others (its word ends the lexeme in progress
//! and reads end of input), so the runtime needs no reduce chain for it either.

use crate::template::{self, Effect, ReductionChainError};
use crate::terminal_dwa::{Boundary, ClassSet, FinalCheck, Lexing, TerminalDwa, NONE};
use rayon::prelude::*;
use stackmask_formats::{ParserDwa, TablesRef, TrieRef};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Limits of the Parser DWA construction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParserDwaLimits {
    /// Automaton states over all boundaries (`--max-dwa-states`).
    pub max_states: usize,
    /// Bytes of distinct token-set weights (`--max-weight-bytes`).
    pub max_weight_bytes: usize,
    /// Terminal DWA states of one boundary (`--max-terminal-dwa-states`).
    pub max_terminal_states: usize,
    /// Automaton states of one boundary before it is left to the run-time trie walk
    /// (`--boundary-dwa-states`).
    pub boundary_states: usize,
    /// Simulation steps for one boundary before it is left to the run-time trie walk
    /// (`--boundary-dwa-steps`): bounds the compile time per boundary.
    pub boundary_steps: usize,
}

impl Default for ParserDwaLimits {
    fn default() -> Self {
        ParserDwaLimits {
            max_states: 1 << 21,
            max_weight_bytes: 1 << 30,
            max_terminal_states: 1 << 22,
            boundary_states: 5_000,
            boundary_steps: 4_000_000,
        }
    }
}

/// Why the Parser DWA could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParserDwaError {
    /// Too many automaton states.
    #[error("the Parser DWA needs more than {limit} states (max_dwa_states, raise it with --max-dwa-states); the limit was reached after {boundary}")]
    States {
        /// The limit.
        limit: usize,
        /// The lexer boundary being built, described with its terminals.
        boundary: String,
    },
    /// Too many weight bytes.
    #[error("the Parser DWA's token sets need more than {limit} bytes (max_weight_bytes, raise it with --max-weight-bytes)")]
    WeightBytes {
        /// The limit.
        limit: usize,
    },
    /// A Terminal DWA is too large.
    #[error(
        "{source}; the limit was reached with {boundary} (raise it with --max-terminal-dwa-states)"
    )]
    TerminalDwa {
        /// The limit error.
        source: crate::terminal_dwa::TerminalDwaLimitError,
        /// The lexer boundary, described with its terminals.
        boundary: String,
    },
    /// A template did not end.
    #[error("{0}")]
    ReductionChain(#[from] ReductionChainError),
    /// One stack state read needed too many simulation steps.
    #[error("reading one stack state needed more than {limit} simulation steps (the tokens' terminal sequences are too ambiguous); the limit was reached with {boundary}")]
    Simulation {
        /// The limit.
        limit: usize,
        /// The lexer boundary, described with its terminals.
        boundary: String,
    },
}

/// What one transition costs against [`ParserDwaLimits::boundary_steps`] besides its
/// simulation steps.
const STEP_COST: usize = 20;

/// Simulation steps for one stack state read before the compile gives up.
pub const MAX_SIMULATION_STEPS: usize = 4_000_000;

/// Why one step of the subset construction failed.
enum StepError {
    Chain(ReductionChainError),
    Budget,
    /// The boundary's whole budget ([`ParserDwaLimits::boundary_steps`]) is spent.
    BoundaryBudget,
}

impl From<ReductionChainError> for StepError {
    fn from(e: ReductionChainError) -> Self {
        StepError::Chain(e)
    }
}

/// A waiting simulation: see the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Thread {
    /// Terminal DWA node: the words shifted so far, plus `term` if that is pending.
    node: u32,
    /// The terminal whose template is in progress ([`NONE`]: none, continue at `node`).
    term: u32,
    /// Real states to pop before the goto.
    pops: u32,
    /// Nonterminal to goto on the state after the pops ([`NONE`]: the state read
    /// becomes the top as it is — only at the start).
    goto: u32,
}

/// An automaton state of one boundary.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    threads: Vec<Thread>,
    undecided: ClassSet,
}

/// One automaton state's transitions: keyed `(LR state, target, weight)`, and the
/// default target.
type LocalState = (Vec<(u32, u32, u32)>, u32);

/// One boundary's automaton, with local state ids (0 = stop) and class-set weights.
struct BoundaryDwa {
    start: u32,
    /// Per local state: keyed transitions `(LR state, target, weight)` and default target.
    states: Vec<LocalState>,
    /// Per local weight id: the token words (`(index << 32) | bits`); 0 is empty.
    weights: Vec<Vec<u64>>,
    classes: usize,
    terminal_states: usize,
}

/// Sizes, for the compile summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParserDwaStats {
    /// Boundaries.
    pub boundaries: usize,
    /// Token classes summed over boundaries.
    pub token_classes: usize,
    /// Terminal DWA states summed over boundaries.
    pub terminal_dwa_states: usize,
    /// Boundaries past their per-boundary budget, left to the run-time trie walk.
    pub fallback_boundaries: usize,
}

/// Builds the Parser DWA of a grammar for a vocabulary of `vocab_len` ids.
pub fn build_parser_dwa(
    tables: TablesRef<'_>,
    trie: TrieRef<'_>,
    vocab_len: usize,
    eos: u32,
    limits: ParserDwaLimits,
    describe: &(dyn Fn(Boundary) -> String + Sync),
) -> Result<(ParserDwa, ParserDwaStats), ParserDwaError> {
    let lexing = Lexing::new(tables);
    let boundaries = lexing.boundaries();
    let lr = tables.lr;
    let mut goto_states: Vec<Vec<u32>> = vec![Vec::new(); lr.num_nonterminals as usize];
    for s in 0..lr.num_states {
        for (a, states) in goto_states.iter_mut().enumerate() {
            if lr.goto(s, a as u32).is_some() {
                states.push(s);
            }
        }
    }
    let counter = AtomicUsize::new(1);
    let built: Vec<Option<BoundaryDwa>> = boundaries
        .par_iter()
        .map(|&b| {
            let t0 = std::time::Instant::now();
            let tdwa = lexing
                .build(b, trie, eos, limits.max_terminal_states)
                .map_err(|source| ParserDwaError::TerminalDwa {
                    source,
                    boundary: describe(b),
                })?;
            let t1 = t0.elapsed();
            let builder = Builder {
                tables,
                tdwa: &tdwa,
                goto_states: &goto_states,
                heads: lexing.head_states(b),
            };
            let r = builder.build(vocab_len, &counter, &limits, &|| describe(b));
            // Per-boundary sizes and times, for finding what makes a grammar expensive.
            if std::env::var_os("STACKMASK_DEBUG_DWA").is_some() {
                if let Ok(Some(d)) = &r {
                    eprintln!(
                        "{}: {} classes, {} tdwa states, {:?}; {} dwa states, {} trans, {} weights, {:?}",
                        describe(b),
                        tdwa.num_classes(),
                        tdwa.num_states(),
                        t1,
                        d.states.len(),
                        d.states.iter().map(|s| s.0.len()).sum::<usize>(),
                        d.weights.len(),
                        t0.elapsed()
                    );
                }
            }
            r
        })
        .collect::<Result<_, _>>()?;

    let mut out = ParserDwa {
        start: Vec::new(),
        index: vec![0, 0],
        keys: Vec::new(),
        targets: Vec::new(),
        weights: Vec::new(),
        default_target: vec![ParserDwa::STOP],
        weight_index: vec![0, 0],
        weight_words: Vec::new(),
    };
    let mut weight_ids: HashMap<Vec<u64>, u32> = HashMap::new();
    weight_ids.insert(Vec::new(), 0);
    let mut starts: HashMap<Boundary, u32> = HashMap::new();
    let mut stats = ParserDwaStats {
        boundaries: built.len(),
        ..Default::default()
    };
    for (b, dwa) in boundaries.iter().zip(&built) {
        let Some(dwa) = dwa else {
            stats.fallback_boundaries += 1;
            starts.insert(*b, ParserDwa::FALLBACK);
            continue;
        };
        stats.token_classes += dwa.classes;
        stats.terminal_dwa_states += dwa.terminal_states;
        // Local state s > 0 becomes offset + s - 1; local 0 stays STOP.
        let offset = out.default_target.len() as u32;
        let global = |s: u32| {
            if s == 0 {
                ParserDwa::STOP
            } else {
                offset + s - 1
            }
        };
        let mut local_weight = Vec::with_capacity(dwa.weights.len());
        for words in &dwa.weights {
            let next = weight_ids.len() as u32;
            let id = *weight_ids.entry(words.clone()).or_insert_with(|| {
                out.weight_words.extend_from_slice(words);
                out.weight_index.push(out.weight_words.len() as u32);
                next
            });
            local_weight.push(id);
        }
        if out.weight_words.len() * 8 > limits.max_weight_bytes {
            return Err(ParserDwaError::WeightBytes {
                limit: limits.max_weight_bytes,
            });
        }
        for (keys, default) in &dwa.states[1..] {
            for &(r, target, w) in keys {
                out.keys.push(r);
                out.targets.push(global(target));
                out.weights.push(local_weight[w as usize]);
            }
            out.index.push(out.keys.len() as u32);
            out.default_target.push(global(*default));
        }
        starts.insert(*b, global(dwa.start));
    }
    let configs = tables.conf_flags.len() as u32;
    for c in 0..configs {
        for ignore in [false, true] {
            let b = Boundary::Group { config: c, ignore };
            out.start
                .push(starts.get(&b).copied().unwrap_or(ParserDwa::STOP));
        }
    }
    out.start.push(starts[&Boundary::Initial]);
    Ok((out, stats))
}

/// Builds one boundary's automaton by subset construction.
struct Builder<'a> {
    tables: TablesRef<'a>,
    tdwa: &'a TerminalDwa,
    goto_states: &'a [Vec<u32>],
    /// The LR states a head of this boundary can be in (the first state read).
    heads: Vec<u32>,
}

/// What one step (one LR state read) produced.
struct Step<'a> {
    b: &'a Builder<'a>,
    undecided: &'a ClassSet,
    accepted: ClassSet,
    threads: Vec<Thread>,
    /// `(node, known stack)` pairs explored in this step.
    seen: std::collections::HashSet<(u32, Vec<u32>)>,
    budget: usize,
}

impl Builder<'_> {
    /// The boundary's automaton, or `None` past the per-boundary budget.
    fn build(
        &self,
        vocab_len: usize,
        counter: &AtomicUsize,
        limits: &ParserDwaLimits,
        describe: &dyn Fn() -> String,
    ) -> Result<Option<BoundaryDwa>, ParserDwaError> {
        let max_states = limits.max_states;
        let mut steps_left = limits.boundary_steps;
        let k = self.tdwa.num_classes();
        let mut ids: HashMap<Key, u32> = HashMap::new();
        let mut keys: Vec<Key> = Vec::new();
        let stop = Key {
            threads: Vec::new(),
            undecided: ClassSet::empty(k),
        };
        ids.insert(stop.clone(), 0);
        keys.push(stop);
        let mut weight_ids: HashMap<ClassSet, u32> = HashMap::new();
        weight_ids.insert(ClassSet::empty(k), 0);
        let mut weight_sets = vec![ClassSet::empty(k)];

        let start_key = self.normalize(
            vec![Thread {
                node: 0,
                term: NONE,
                pops: 0,
                goto: NONE,
            }],
            self.tdwa.classes_below[0].clone(),
        );
        let mut intern = |key: Key, keys: &mut Vec<Key>| -> Result<u32, ParserDwaError> {
            if let Some(&id) = ids.get(&key) {
                return Ok(id);
            }
            if counter.load(Ordering::Relaxed) >= max_states {
                return Err(ParserDwaError::States {
                    limit: max_states,
                    boundary: describe(),
                });
            }
            let id = keys.len() as u32;
            ids.insert(key.clone(), id);
            keys.push(key);
            Ok(id)
        };
        let start = intern(start_key, &mut keys)?;
        let mut states: Vec<LocalState> = vec![(Vec::new(), 0)];
        let mut d = 1;
        while d < keys.len() {
            if keys.len() > limits.boundary_states {
                return Ok(None);
            }
            let key = keys[d].clone();
            // Default: only threads still popping survive a state without a key.
            let waiting: Vec<Thread> = key
                .threads
                .iter()
                .filter(|t| t.pops > 0)
                .map(|t| Thread {
                    pops: t.pops - 1,
                    ..*t
                })
                .collect();
            let default_key = self.normalize(waiting, key.undecided.clone());
            let default = intern(default_key.clone(), &mut keys)?;
            let mut candidates: Vec<u32> = Vec::new();
            let ready = key.threads.iter().filter(|t| t.pops == 0);
            if ready.clone().any(|t| t.goto == NONE) {
                // Only the start state reads the head (it has no other thread).
                candidates.extend_from_slice(&self.heads);
            } else {
                for t in ready {
                    candidates.extend_from_slice(&self.goto_states[t.goto as usize]);
                }
                candidates.sort_unstable();
                candidates.dedup();
            }
            let mut trans = Vec::new();
            for r in candidates {
                let (next, accepted) = match self.step(&key, r, &mut steps_left) {
                    Ok(x) => x,
                    Err(StepError::BoundaryBudget) => return Ok(None),
                    Err(StepError::Chain(e)) => return Err(e.into()),
                    Err(StepError::Budget) => {
                        return Err(ParserDwaError::Simulation {
                            limit: MAX_SIMULATION_STEPS,
                            boundary: describe(),
                        })
                    }
                };
                if accepted.is_empty() && next == default_key {
                    continue;
                }
                let target = intern(next, &mut keys)?;
                let w = *weight_ids.entry(accepted.clone()).or_insert_with(|| {
                    weight_sets.push(accepted);
                    weight_sets.len() as u32 - 1
                });
                trans.push((r, target, w));
            }
            states.push((trans, default));
            d += 1;
        }
        counter.fetch_add(keys.len() - 1, Ordering::Relaxed);
        if counter.load(Ordering::Relaxed) > max_states {
            return Err(ParserDwaError::States {
                limit: max_states,
                boundary: describe(),
            });
        }
        let weights = weight_sets
            .iter()
            .map(|set| self.token_words(set, vocab_len))
            .collect();
        Ok(Some(BoundaryDwa {
            start,
            states,
            weights,
            classes: k,
            terminal_states: self.tdwa.num_states(),
        }))
    }

    /// The token words of a class set.
    fn token_words(&self, set: &ClassSet, vocab_len: usize) -> Vec<u64> {
        let mut dense = vec![0u32; vocab_len.div_ceil(32)];
        for class in set.iter() {
            for &t in &self.tdwa.class_tokens[class as usize] {
                dense[t as usize / 32] |= 1 << (t % 32);
            }
        }
        dense
            .iter()
            .enumerate()
            .filter(|(_, &w)| w != 0)
            .map(|(i, &w)| (i as u64) << 32 | w as u64)
            .collect()
    }

    /// Drops threads no undecided class needs and classes no thread can decide.
    fn normalize(&self, mut threads: Vec<Thread>, mut undecided: ClassSet) -> Key {
        let below = &self.tdwa.classes_below;
        threads.retain(|t| below[t.node as usize].intersects(&undecided));
        threads.sort_unstable();
        threads.dedup();
        let mut live = ClassSet(vec![0; undecided.0.len()]);
        for t in &threads {
            live.union_with(&below[t.node as usize]);
        }
        undecided.intersect_with(&live);
        if undecided.is_empty() {
            threads.clear();
        }
        Key { threads, undecided }
    }

    /// Reads LR state `r` in automaton state `key`: the next state and the classes
    /// decided valid.
    fn step(
        &self,
        key: &Key,
        r: u32,
        steps_left: &mut usize,
    ) -> Result<(Key, ClassSet), StepError> {
        let mut s = Step {
            b: self,
            undecided: &key.undecided,
            accepted: ClassSet(vec![0; key.undecided.0.len()]),
            threads: Vec::new(),
            seen: Default::default(),
            budget: MAX_SIMULATION_STEPS,
        };
        for th in &key.threads {
            if th.pops > 0 {
                s.threads.push(Thread {
                    pops: th.pops - 1,
                    ..*th
                });
                continue;
            }
            let mut known = vec![r];
            if th.goto != NONE {
                match self.tables.lr.goto(r, th.goto) {
                    Some(g) => known.push(g),
                    None => continue,
                }
            }
            if th.term == NONE {
                s.explore(th.node, &known)?;
            } else {
                s.resume(th.node, th.term, &known)?;
            }
        }
        // A step costs its simulation plus a fixed share for normalizing and
        // interning its result, so that many cheap steps count too.
        let spent = MAX_SIMULATION_STEPS - s.budget + STEP_COST;
        *steps_left = steps_left
            .checked_sub(spent)
            .ok_or(StepError::BoundaryBudget)?;
        let accepted = s.accepted;
        let mut undecided = key.undecided.clone();
        undecided.remove_all(&accepted);
        Ok((self.normalize(s.threads, undecided), accepted))
    }
}

impl Step<'_> {
    /// Whether some class after `node` is still undecided in this step.
    fn live(&self, node: u32) -> bool {
        let below = &self.b.tdwa.classes_below[node as usize].0;
        below
            .iter()
            .zip(&self.undecided.0)
            .zip(&self.accepted.0)
            .any(|((b, u), a)| b & u & !a != 0)
    }

    /// Everything shifted up to `node`, stack top `known`: check the finals, then go
    /// on along each successor.
    fn explore(&mut self, node: u32, known: &[u32]) -> Result<(), StepError> {
        if !self.live(node) || !self.seen.insert((node, known.to_vec())) {
            return Ok(());
        }
        self.budget = self.budget.checked_sub(1).ok_or(StepError::Budget)?;
        let t = &self.b.tables;
        let tdwa = self.b.tdwa;
        let top = *known.last().expect("non-empty");
        for (check, classes) in &tdwa.finals[node as usize] {
            let holds = match *check {
                FinalCheck::Always => true,
                FinalCheck::Expect(x) => t.expects(top, x),
                FinalCheck::AnyExpected => t.expects_any(top),
                FinalCheck::ExpectAny(row) => t.expects_any_of(top, row),
            };
            if holds {
                self.accepted.union_masked(classes, self.undecided);
            }
        }
        for &(label, next) in &tdwa.succ[node as usize] {
            if label == NONE {
                self.explore(next, known)?;
            } else if self.live(next) {
                self.resume(next, label, known)?;
            }
        }
        Ok(())
    }

    /// Runs `term`'s template on `known`, then continues at `node` (the node the
    /// terminal leads to) with each outcome.
    fn resume(&mut self, node: u32, term: u32, known: &[u32]) -> Result<(), StepError> {
        let mut effects = Vec::new();
        template::apply(&self.b.tables.lr, known, term, &mut effects)?;
        for e in effects {
            match e {
                Effect::Shifted(v) => self.explore(node, &v)?,
                Effect::Accepted => self.explore(node, known)?,
                Effect::NeedsDeeper { pops, goto } => self.threads.push(Thread {
                    node,
                    term,
                    pops,
                    goto,
                }),
            }
        }
        Ok(())
    }
}
