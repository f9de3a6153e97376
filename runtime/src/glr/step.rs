//! One GLR step: all reductions on a lookahead terminal, then the shift.
//!
//! Reductions enumerate the GSS paths of the rule's length; nodes created in the step
//! merge by LR state, and when a merge adds an edge to a node that was already
//! processed, every step node is processed again (Farshi's fix, in its simple form:
//! recognition needs no forest, and re-processing is idempotent because an existing
//! edge is never added twice). This is what keeps ε-rules and hidden left recursion
//! correct.

use super::gss::{Layered, NONE};
use stackmask_formats::{Action, TablesRef};

/// Reusable buffers for [`step`], so the steady state allocates nothing.
#[derive(Clone, Debug, Default)]
pub(crate) struct StepScratch {
    /// Nodes created by reductions in this step: (LR state, node).
    reduced: Vec<(u32, u32)>,
    /// Nodes whose actions are still to be processed.
    work: Vec<u32>,
    /// Pending shifts: (target state, from node).
    shifts: Vec<(u32, u32)>,
    /// Path enumeration stack: (node, remaining length).
    paths: Vec<(u32, u32)>,
    /// Path ends found.
    ends: Vec<u32>,
    /// Nodes created by the shift: (LR state, node).
    shifted: Vec<(u32, u32)>,
}

/// Runs reductions on lookahead `t` from `heads`, then shifts `t`, appending the new
/// head nodes to `out`. With `t == eof`, there is no shift: returns whether Accept
/// was reached. Nodes are written to `gss.over`.
pub(crate) fn step(
    tables: &TablesRef<'_>,
    gss: &mut Layered<'_>,
    heads: &[u32],
    t: u32,
    s: &mut StepScratch,
    out: &mut Vec<u32>,
) -> bool {
    s.reduced.clear();
    s.shifts.clear();
    s.shifted.clear();
    s.work.clear();
    s.work.extend_from_slice(heads);
    let mut accepted = false;
    // Heads are processed once; step nodes again whenever an edge is added to one.
    let mut first_round = true;
    loop {
        let mut new_edge = false;
        while let Some(v) = s.work.pop() {
            let state = gss.node(v).state;
            for a in tables.decoded_actions(state, t) {
                match a {
                    Action::Shift(target) => {
                        if first_round || !s.shifts.contains(&(target, v)) {
                            s.shifts.push((target, v));
                        }
                    }
                    Action::Accept => accepted = true,
                    Action::Reduce(r) => {
                        let len = tables.rule_len[r as usize];
                        let lhs = tables.rule_lhs[r as usize];
                        paths(gss, v, len, s);
                        for i in 0..s.ends.len() {
                            let u = s.ends[i];
                            let Some(target) = tables.goto(gss.node(u).state, lhs) else {
                                continue;
                            };
                            match s.reduced.iter().find(|&&(st, _)| st == target) {
                                Some(&(_, w)) => new_edge |= gss.add_edge(w, u),
                                None => {
                                    let w = gss.new_node(target, u);
                                    s.reduced.push((target, w));
                                    s.work.push(w);
                                }
                            }
                        }
                    }
                }
            }
        }
        if !new_edge {
            break;
        }
        // A merge added a path: redo the reductions of every step node.
        first_round = false;
        s.work.extend(s.reduced.iter().map(|&(_, w)| w));
    }
    for i in 0..s.shifts.len() {
        let (target, from) = s.shifts[i];
        match s.shifted.iter().find(|&&(st, _)| st == target) {
            Some(&(_, w)) => {
                gss.add_edge(w, from);
            }
            None => {
                let w = gss.new_node(target, from);
                s.shifted.push((target, w));
                out.push(w);
            }
        }
    }
    accepted
}

/// Collects into `s.ends` the end nodes of all paths of `len` edges from `v`.
fn paths(gss: &Layered<'_>, v: u32, len: u32, s: &mut StepScratch) {
    s.ends.clear();
    s.paths.clear();
    s.paths.push((v, len));
    while let Some((node, left)) = s.paths.pop() {
        if left == 0 {
            if !s.ends.contains(&node) {
                s.ends.push(node);
            }
            continue;
        }
        let mut e = gss.node(node).first_edge;
        while e != NONE {
            let edge = gss.edge(e);
            s.paths.push((edge.to, left - 1));
            e = edge.next;
        }
    }
}
