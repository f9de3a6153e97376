//! One GLR step: all reductions on a lookahead terminal, then the shift.
//!
//! Reductions enumerate the GSS paths of the rule's length; nodes created in the step
//! merge by LR state. When a merge adds an edge to a node that was already processed,
//! paths through that edge may have been missed (Farshi's observation), so the step
//! runs further rounds over its nodes, enumerating only the paths that use an edge
//! added in the previous round — every other path was seen before. Re-finding a known
//! path is harmless (an existing edge is never added twice), so the rounds end when no
//! edge is added. This is what keeps ε-rules and hidden left recursion correct.

use super::gss::{Layered, NONE};
use stackmask_formats::{Action, TablesRef};

/// Reusable buffers for [`step`], so the steady state allocates nothing.
#[derive(Clone, Debug, Default)]
pub(crate) struct StepScratch {
    /// Nodes created by reductions in this step: (LR state, node).
    reduced: Vec<(u32, u32)>,
    /// Nodes whose actions are still to be processed, and whether all their paths
    /// (`true`) or only those through `fresh` edges are to be enumerated.
    work: Vec<(u32, bool)>,
    /// Edges added to existing nodes in the previous round.
    fresh: Vec<(u32, u32)>,
    /// Edges added to existing nodes in this round.
    added: Vec<(u32, u32)>,
    /// Pending shifts: (target state, from node).
    shifts: Vec<(u32, u32)>,
    /// Path enumeration stack: (node, remaining length, went through a fresh edge).
    paths: Vec<(u32, u32, bool)>,
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
    s.fresh.clear();
    s.added.clear();
    s.work.extend(heads.iter().map(|&h| (h, true)));
    let mut accepted = false;
    loop {
        while let Some((v, full)) = s.work.pop() {
            let state = gss.node(v).state;
            for a in tables.lr.decoded_actions(state, t) {
                match a {
                    // Shifts depend on the state only: recorded on the full pass.
                    Action::Shift(target) if full => s.shifts.push((target, v)),
                    Action::Shift(_) => {}
                    Action::Accept => accepted = true,
                    Action::Reduce(r) => {
                        let len = tables.lr.rule_len[r as usize];
                        if !full && len == 0 {
                            continue;
                        }
                        let lhs = tables.lr.rule_lhs[r as usize];
                        paths(gss, v, len, !full, s);
                        for i in 0..s.ends.len() {
                            let u = s.ends[i];
                            let Some(target) = tables.lr.goto(gss.node(u).state, lhs) else {
                                continue;
                            };
                            match s.reduced.iter().find(|&&(st, _)| st == target) {
                                Some(&(_, w)) => {
                                    if gss.add_edge(w, u) {
                                        s.added.push((w, u));
                                    }
                                }
                                None => {
                                    let w = gss.new_node(target, u);
                                    s.reduced.push((target, w));
                                    s.work.push((w, true));
                                }
                            }
                        }
                    }
                }
            }
        }
        if s.added.is_empty() {
            break;
        }
        // A merge added paths: another round over the step's nodes, through the new edges.
        std::mem::swap(&mut s.fresh, &mut s.added);
        s.added.clear();
        s.work.extend(s.reduced.iter().map(|&(_, w)| (w, false)));
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

/// Collects into `s.ends` the end nodes of the paths of `len` edges from `v` — with
/// `through_fresh`, only those using an edge in `s.fresh`.
fn paths(gss: &Layered<'_>, v: u32, len: u32, through_fresh: bool, s: &mut StepScratch) {
    s.ends.clear();
    s.paths.clear();
    s.paths.push((v, len, !through_fresh));
    while let Some((node, left, used)) = s.paths.pop() {
        if left == 0 {
            if used && !s.ends.contains(&node) {
                s.ends.push(node);
            }
            continue;
        }
        let mut e = gss.node(node).first_edge;
        while e != NONE {
            let edge = gss.edge(e);
            let used = used || s.fresh.contains(&(node, edge.to));
            s.paths.push((edge.to, left - 1, used));
            e = edge.next;
        }
    }
}
