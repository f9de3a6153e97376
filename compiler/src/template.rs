//! Templates: what one terminal does to an LR stack known only near its top.
//!
//! Shifting terminal `t` first runs the reductions the LR table prescribes on `t`,
//! each popping its rule's length and pushing a goto, until a state shifts `t`. The
//! chain depends on the stack below the top, but only on as much of it as the
//! reductions pop: reading states top-down, the chain either shifts `t` on top of the
//! states it could see, or pops all of them and must see the next state down before
//! it can take its goto. That reading is the per-terminal *template* of DESIGN.md §2;
//! GLR conflicts make it branch. [`apply`] runs it on a known stack top and lists
//! every branch's outcome; the Parser DWA construction composes templates along a
//! token's terminals (pushes and pops cancel on the known part) and keeps only what
//! must be read from the real stack.

use stackmask_formats::lr::LrSlices;
use stackmask_formats::Action;

/// Reductions in one template run before the compile gives up, by default
/// (`--max-template-reductions`, [`crate::parser_dwa::ParserDwaLimits`]).
pub const DEFAULT_MAX_REDUCTIONS: u32 = 10_000;

/// States one template run may push beyond the stack top it started from. Without a
/// shift, only ε-reductions push more than they pop; a run past this bound comes
/// from ε-rules that recurse without consuming input (hidden left recursion through
/// nullable symbols), whose stacks the GLR runtime folds into GSS cycles but whose
/// templates have no bound.
pub const MAX_GROWTH: usize = 64;

/// How one branch of the template ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// The terminal was shifted: the known stack after it (bottom first).
    Shifted(Vec<u32>),
    /// End of input was accepted.
    Accepted,
    /// A reduction popped every known state: `pops` more states of the real stack
    /// are popped, then the goto on `goto` from the state below them is pushed and
    /// the terminal's chain goes on.
    NeedsDeeper {
        /// Real states to pop after the known ones.
        pops: u32,
        /// The nonterminal reduced to.
        goto: u32,
    },
}

/// A template's reductions did not end within their limit / [`MAX_GROWTH`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the reductions before terminal {terminal} from LR state {state} {limit}; the compiled mask path cannot bound them")]
pub struct ReductionChainError {
    /// The terminal.
    pub terminal: u32,
    /// The LR state where the chain started.
    pub state: u32,
    /// Which bound the chain passed.
    pub limit: ChainLimit,
}

/// The bound a [`ReductionChainError`] names: the two have different causes, and the
/// message says which.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ChainLimit {
    /// More than this many reductions without a shift (the limit in force).
    #[error("take over {0} reductions without a shift (a chain of rules that long, such as thousands of unit rules in a row — raise the limit with --max-template-reductions — or ε-rules that recurse without consuming input)")]
    Reductions(u32),
    /// More than [`MAX_GROWTH`] states pushed without a shift.
    #[error("push over {MAX_GROWTH} states without a shift (ε-rules that recurse without consuming input)")]
    Growth,
}

/// Runs terminal `t`'s template on `known` (a stack top, bottom first, not empty)
/// and appends every branch's [`Effect`] to `out`; at most `max_reductions`
/// reductions before a shift.
pub fn apply(
    lr: &LrSlices<'_>,
    known: &[u32],
    t: u32,
    max_reductions: u32,
    out: &mut Vec<Effect>,
) -> Result<(), ReductionChainError> {
    let state = *known
        .last()
        .expect("a template runs on a non-empty stack top");
    let error = |limit| ReductionChainError {
        terminal: t,
        state,
        limit,
    };
    let mut budget = max_reductions;
    let mut work = vec![known.to_vec()];
    while let Some(stack) = work.pop() {
        let top = *stack.last().expect("non-empty");
        for action in lr.decoded_actions(top, t) {
            match action {
                Action::Shift(s) => {
                    let mut v = stack.clone();
                    v.push(s);
                    out.push(Effect::Shifted(v));
                }
                Action::Accept => out.push(Effect::Accepted),
                Action::Reduce(rule) => {
                    let n = lr.rule_len[rule as usize] as usize;
                    let lhs = lr.rule_lhs[rule as usize];
                    if n >= stack.len() {
                        out.push(Effect::NeedsDeeper {
                            pops: (n - stack.len()) as u32,
                            goto: lhs,
                        });
                        continue;
                    }
                    budget = budget
                        .checked_sub(1)
                        .ok_or(error(ChainLimit::Reductions(max_reductions)))?;
                    let keep = stack.len() - n;
                    if let Some(g) = lr.goto(stack[keep - 1], lhs) {
                        let mut v = stack[..keep].to_vec();
                        v.push(g);
                        if v.len() > known.len() + MAX_GROWTH {
                            return Err(error(ChainLimit::Growth));
                        }
                        work.push(v);
                    }
                }
            }
        }
    }
    Ok(())
}
