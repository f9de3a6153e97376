//! Compile budget: a wall-clock time limit and a cancel flag that every long stage
//! checks cooperatively.
//!
//! A compile cannot be killed from outside without killing its process (and a serving
//! worker compiles on its own threads), so each stage polls the budget: at its start,
//! and every few hundred iterations of its loops through a [`Poll`]. A tick is a counter
//! increment; every [`POLL_EVERY`]th loads the cancel flag and reads the clock, so it
//! costs nothing measurable; the worst delay between a cancel (or the deadline) and the
//! error is one poll interval of the slowest loop, milliseconds. Parallel stages (the Parser DWA's
//! rayon workers) share the budget, so every worker stops at its next poll.
//!
//! A stage that runs out ends the compile with [`BudgetError`] naming the stage; the
//! compile then returns it and writes nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Loop iterations between two clock reads in [`Poll::tick`].
pub const POLL_EVERY: u32 = 256;

/// A flag another thread sets to cancel a compile; clones share the flag.
#[derive(Clone, Debug, Default)]
pub struct CancelFlag(Arc<AtomicBool>);

impl CancelFlag {
    /// A flag not yet set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks every compile holding this flag to stop at its next poll.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`CancelFlag::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// The stage a compile was in when its budget ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Grammar text (Lark or JSON Schema) to grammar IR.
    FrontEnd,
    /// Terminal regexes to byte DFAs.
    Lexer,
    /// The check for greedy dead ends and the grammar × lexeme-adjacency product.
    AdjacencyProduct,
    /// The canonical LR(1) automaton.
    Lr,
    /// The lexer configurations.
    LexerConfigs,
    /// A lexer boundary's Terminal DWA (walks the token trie).
    TerminalDwa,
    /// The Parser DWA (templates composed by subset construction).
    ParserDwa,
    /// Cross-boundary minimization of the Parser DWA.
    Minimize,
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stage::FrontEnd => "front end",
            Stage::Lexer => "lexer DFAs",
            Stage::AdjacencyProduct => "greedy-dead-end check and product",
            Stage::Lr => "LR(1) automaton",
            Stage::LexerConfigs => "lexer configurations",
            Stage::TerminalDwa => "Terminal DWA",
            Stage::ParserDwa => "Parser DWA",
            Stage::Minimize => "Parser DWA minimization",
        })
    }
}

/// A compile ran out of its budget.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    /// The time limit passed.
    #[error("the compile exceeded its time limit of {} s (time_limit) in the {stage} stage; raise it with --time-limit (Python: time_limit=) or simplify the grammar", limit.as_secs_f64())]
    TimeLimit {
        /// The limit.
        limit: Duration,
        /// The stage that was running.
        stage: Stage,
    },
    /// The cancel flag was set.
    #[error("the compile was cancelled in the {stage} stage")]
    Cancelled {
        /// The stage that was running.
        stage: Stage,
    },
}

impl BudgetError {
    /// The stage that was running.
    pub fn stage(&self) -> Stage {
        match self {
            BudgetError::TimeLimit { stage, .. } | BudgetError::Cancelled { stage } => *stage,
        }
    }
}

/// What a compile may spend: part of [`crate::pipeline::CompileOptions`]. The clock
/// starts when the compile does ([`CompileBudget::start`]).
#[derive(Clone, Debug, Default)]
pub struct CompileBudget {
    /// Wall-clock limit of the whole compile (`--time-limit`); `None`: none.
    pub time_limit: Option<Duration>,
    /// Set from another thread to cancel; `None`: cannot be cancelled.
    pub cancel: Option<CancelFlag>,
}

impl CompileBudget {
    /// Starts the clock.
    pub fn start(&self) -> Deadline {
        Deadline {
            limit: self.time_limit,
            // A limit too large for the clock is no limit.
            at: self.time_limit.and_then(|l| Instant::now().checked_add(l)),
            cancel: self.cancel.clone(),
        }
    }
}

/// A started budget, shared by the stages of one compile (and their worker threads).
#[derive(Clone, Debug)]
pub struct Deadline {
    limit: Option<Duration>,
    at: Option<Instant>,
    cancel: Option<CancelFlag>,
}

impl Deadline {
    /// No limit and no cancel: what the functions without a budget argument use.
    pub fn unlimited() -> Self {
        Deadline {
            limit: None,
            at: None,
            cancel: None,
        }
    }

    /// Errors when the compile is cancelled or past its time limit (a zero limit fails
    /// at the first check).
    pub fn check(&self, stage: Stage) -> Result<(), BudgetError> {
        if self.cancel.as_ref().is_some_and(CancelFlag::is_cancelled) {
            return Err(BudgetError::Cancelled { stage });
        }
        if let (Some(limit), Some(at)) = (self.limit, self.at) {
            if Instant::now() >= at {
                return Err(BudgetError::TimeLimit { limit, stage });
            }
        }
        Ok(())
    }

    /// A poller for one stage's loop.
    pub fn poll(&self, stage: Stage) -> Poll<'_> {
        Poll {
            deadline: self,
            stage,
            ticks: 0,
        }
    }
}

/// Checks a [`Deadline`] every [`POLL_EVERY`] ticks of a loop.
pub struct Poll<'a> {
    deadline: &'a Deadline,
    stage: Stage,
    ticks: u32,
}

impl Poll<'_> {
    /// Counts one iteration; checks the deadline on every [`POLL_EVERY`]th.
    #[inline]
    pub fn tick(&mut self) -> Result<(), BudgetError> {
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks.is_multiple_of(POLL_EVERY) {
            self.deadline.check(self.stage)
        } else {
            Ok(())
        }
    }

    /// Checks the deadline now.
    pub fn check(&self) -> Result<(), BudgetError> {
        self.deadline.check(self.stage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_limit_fails_at_the_first_check_and_names_the_stage() {
        let d = CompileBudget {
            time_limit: Some(Duration::ZERO),
            cancel: None,
        }
        .start();
        let e = d.check(Stage::Lr).unwrap_err();
        assert_eq!(
            e,
            BudgetError::TimeLimit {
                limit: Duration::ZERO,
                stage: Stage::Lr
            }
        );
        let m = e.to_string();
        assert!(
            m.contains("time_limit") && m.contains("--time-limit"),
            "{m}"
        );
        assert!(m.contains("LR(1) automaton") && m.contains("0 s"), "{m}");
    }

    #[test]
    fn cancel_is_seen_by_clones_and_polls_check_every_interval() {
        let flag = CancelFlag::new();
        let d = CompileBudget {
            time_limit: Some(Duration::from_secs(3600)),
            cancel: Some(flag.clone()),
        }
        .start();
        assert!(d.check(Stage::ParserDwa).is_ok());
        let mut p = d.poll(Stage::ParserDwa);
        flag.cancel();
        for _ in 1..POLL_EVERY {
            assert!(p.tick().is_ok());
        }
        assert_eq!(
            p.tick(),
            Err(BudgetError::Cancelled {
                stage: Stage::ParserDwa
            })
        );
        assert!(Deadline::unlimited().check(Stage::Lr).is_ok());
    }

    #[test]
    fn a_huge_limit_is_no_limit() {
        let d = CompileBudget {
            time_limit: Some(Duration::MAX),
            cancel: None,
        }
        .start();
        assert!(d.check(Stage::Lexer).is_ok());
    }
}
