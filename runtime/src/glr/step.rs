//! One GLR step: all reductions on a lookahead terminal, then the shift.
//!
//! Reductions enumerate the GSS paths of the rule's length; nodes created in the step
//! merge by LR state. When a merge adds an edge to a node that was already processed,
//! paths through that edge may have been missed (Farshi's observation), so the step
//! runs further rounds, enumerating only the paths that use an edge added in the
//! previous round — every other path was seen before — from only the nodes that can
//! reach such an edge. Re-finding a known
//! path is harmless (an existing edge is never added twice), so the rounds end when no
//! edge is added. This is what keeps ε-rules and hidden left recursion correct.
//!
//! A reduction only needs the *ends* of its paths, not the paths themselves, so
//! [`paths`] walks the GSS one level at a time over deduplicated `(node, used a fresh
//! edge)` pairs instead of enumerating paths one by one: on an ambiguous stack the
//! number of paths grows exponentially with the rule length, while a level never holds
//! more pairs than the GSS has nodes. A linear stack has one pair per level, so the
//! common case costs what the path enumeration did.
//!
//! A right-recursive reduce chain (`start: "a" start | "a"` at the end of input) reduces
//! to the same LR state once per link: one node of the step gains an edge per link. So
//! that this stays linear, a new edge is checked against a set once a node has many,
//! and the rounds look for paths through fresh edges only where they can be (fresh
//! edges start at the step's own nodes), not along every edge of such a node.

use super::gss::{Layered, NONE};
use super::pair_set::PairSet;
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
    /// Path ends at the current level: (node, went through a fresh edge), sorted by
    /// node with one entry per node.
    level: Vec<(u32, bool)>,
    /// The next level, being built.
    next_level: Vec<(u32, bool)>,
    /// Path ends found.
    ends: Vec<u32>,
    /// Nodes created by the shift: (LR state, node).
    shifted: Vec<(u32, u32)>,
    /// The first node id of the current step: nodes from it on are this step's.
    first_node: u32,
    /// Per node of this step (by id - `first_node`): its number of edges.
    edge_count: Vec<u32>,
    /// The edges of this step's nodes that have more than [`SCAN_EDGES`] of them: a
    /// right-recursive reduce chain gives one node an edge per link, and scanning its
    /// list for every new edge would be quadratic. A [`PairSet`], not a `HashSet`:
    /// emptying it every step costs what the step put in, not the capacity an earlier
    /// ambiguous step grew it to, and an insert is a multiply, not SipHash (hashing was
    /// a third of the time of a byte after C's run of 74 dashes).
    edge_set: PairSet,
    /// Edges between two nodes of this step, and their sorted copy for the current
    /// round: only through them can a path leave this step's nodes and still reach a
    /// fresh edge (fresh edges start at this step's nodes; older nodes never point to
    /// them).
    inner: Vec<(u32, u32)>,
    inner_sorted: Vec<(u32, u32)>,
    /// `inner` as (to, from), sorted: what leads to a node, for a round's search.
    inner_by_target: Vec<(u32, u32)>,
    /// Per node of this step: the round (`round_stamp`) that last queued it. Stamps
    /// only grow, so entries left by earlier steps never read as this round's, and the
    /// buffer needs no clearing per step.
    queued_in: Vec<u32>,
    /// The current round's number, over every step this scratch has run.
    round_stamp: u32,
    /// Work done so far (edges looked at), for tests of how it grows.
    pub(crate) effort: u64,
    /// `effort` past which a step gives up (the caller's work budget).
    pub(crate) effort_limit: EffortLimit,
    /// Whether a step gave up at `effort_limit`; its nodes are then incomplete.
    pub(crate) exceeded: bool,
}

impl StepScratch {
    /// Empty buffers that continue this one's work count (for a copied parse).
    pub(crate) fn fresh(&self) -> Self {
        StepScratch {
            effort: self.effort,
            effort_limit: self.effort_limit,
            ..Default::default()
        }
    }

    /// What [`StepScratch::fresh`] copies of `source`, in these buffers (every step
    /// clears the buffers it reads before reading them; `queued_in` is read only
    /// against this scratch's own stamps).
    pub(crate) fn continue_from(&mut self, source: &StepScratch) {
        self.effort = source.effort;
        self.effort_limit = source.effort_limit;
        self.exceeded = false;
    }
}

/// A value of `StepScratch::effort` past which steps give up; none by default.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EffortLimit(pub u64);

impl Default for EffortLimit {
    fn default() -> Self {
        EffortLimit(u64::MAX)
    }
}

/// Edges of a node scanned for duplicates before [`StepScratch::edge_set`] takes over.
const SCAN_EDGES: u32 = 16;

/// Creates a node of this step for `state` with an edge to `to`.
fn new_node(gss: &mut Layered<'_>, s: &mut StepScratch, state: u32, to: u32) -> u32 {
    let w = gss.new_node(state, to);
    debug_assert_eq!((w - s.first_node) as usize, s.edge_count.len());
    s.edge_count.push(1);
    if to >= s.first_node {
        s.inner.push((w, to));
    }
    w
}

/// Adds the edge `w → u` (`w` a node of this step) unless it exists; returns whether
/// it was added. Cheap whatever the number of edges `w` already has.
fn link(gss: &mut Layered<'_>, s: &mut StepScratch, w: u32, u: u32) -> bool {
    let local = (w - s.first_node) as usize;
    let count = s.edge_count[local];
    if count < SCAN_EDGES {
        let (exists, seen) = gss.has_edge(w, u);
        s.effort += seen;
        if exists {
            return false;
        }
    } else {
        // One probe: the insert tells whether the edge was there.
        s.effort += 1;
        if !s.edge_set.insert(w, u) {
            return false;
        }
    }
    gss.push_edge(w, u);
    s.edge_count[local] = count + 1;
    if count + 1 == SCAN_EDGES {
        // From now on the set answers for w: it gets all of w's edges.
        let mut e = gss.node(w).first_edge;
        while e != NONE {
            let edge = gss.edge(e);
            s.edge_set.insert(w, edge.to);
            e = edge.next;
        }
    }
    if u >= s.first_node {
        s.inner.push((w, u));
    }
    true
}

/// Runs reductions on lookahead `t` from `heads`, then shifts `t`, appending the new
/// head nodes to `out`. With `t == eof`, there is no shift: returns whether Accept
/// was reached. Nodes are written to `gss.over`.
///
/// Gives up once `s.effort` passes `s.effort_limit`, setting `s.exceeded` (and then
/// `out` and the overlay are incomplete and must be discarded).
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
    s.first_node = gss.node_count();
    s.edge_count.clear();
    s.edge_set.clear();
    s.inner.clear();
    s.work.extend(heads.iter().map(|&h| (h, true)));
    let mut accepted = false;
    loop {
        while let Some((v, full)) = s.work.pop() {
            if s.effort > s.effort_limit.0 {
                s.exceeded = true;
                return false;
            }
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
                                    if link(gss, s, w, u) {
                                        s.added.push((w, u));
                                    }
                                }
                                None => {
                                    let w = new_node(gss, s, target, u);
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
        // Copied rather than swapped, so each buffer keeps its role and a warm scratch
        // never meets a role whose buffer has not grown yet (see `paths`). Sorted, so
        // that `paths` tests an edge with a binary search.
        s.fresh.clear();
        s.fresh.extend_from_slice(&s.added);
        s.added.clear();
        // The round sorts this step's inner edges twice: counted, so that the work
        // limit also bounds a step of many rounds over many ε-edges.
        s.effort += s.inner.len() as u64;
        s.fresh.sort_unstable();
        s.inner_sorted.clear();
        s.inner_sorted.extend_from_slice(&s.inner);
        s.inner_sorted.sort_unstable();
        queue_reaching_fresh(s);
    }
    if s.effort > s.effort_limit.0 {
        // The last reduction went past the limit (its paths may be incomplete).
        s.exceeded = true;
        return false;
    }
    for i in 0..s.shifts.len() {
        let (target, from) = s.shifts[i];
        match s.shifted.iter().find(|&&(st, _)| st == target) {
            Some(&(_, w)) => {
                link(gss, s, w, from);
            }
            None => {
                let w = new_node(gss, s, target, from);
                s.shifted.push((target, w));
                out.push(w);
            }
        }
    }
    accepted
}

/// Queues, for a round through `s.fresh`, the step's nodes that have a path to a
/// fresh edge: the edges' sources and, through edges among the step's nodes, whatever
/// leads to them. No other node has such a path (fresh edges start at this step's
/// nodes, and older nodes never point to them), so the round skips the rest: in a
/// deterministic reduce chain that two lexings of one text rejoin level by level
/// (`++x;` read also as `+ +x;`), every round adds one edge one level down, and
/// visiting every node of the step each round made the step quadratic in the chain.
fn queue_reaching_fresh(s: &mut StepScratch) {
    let stamp = s.round_stamp.wrapping_add(1);
    s.round_stamp = stamp;
    if stamp == 0 {
        // The stamps wrapped: old ones could read as this round's.
        s.queued_in.iter_mut().for_each(|q| *q = 0);
        s.round_stamp = 1;
    }
    let stamp = s.round_stamp;
    s.queued_in.resize(s.edge_count.len(), 0);
    s.inner_by_target.clear();
    s.inner_by_target
        .extend(s.inner.iter().map(|&(from, to)| (to, from)));
    s.inner_by_target.sort_unstable();
    let start = s.work.len();
    for i in 0..s.fresh.len() {
        let w = s.fresh[i].0;
        let local = (w - s.first_node) as usize;
        if s.queued_in[local] != stamp {
            s.queued_in[local] = stamp;
            s.work.push((w, false));
        }
    }
    // `work` doubles as the search's queue: every node it reaches is queued once.
    let mut next = start;
    while next < s.work.len() {
        let to = s.work[next].0;
        next += 1;
        let lo = s.inner_by_target.partition_point(|&(t, _)| t < to);
        for i in lo..s.inner_by_target.len() {
            let (t, from) = s.inner_by_target[i];
            if t != to {
                break;
            }
            s.effort += 1;
            let local = (from - s.first_node) as usize;
            if s.queued_in[local] != stamp {
                s.queued_in[local] = stamp;
                s.work.push((from, false));
            }
        }
    }
}

/// Collects into `s.ends` the end nodes of the paths of `len` edges from `v` — with
/// `through_fresh`, only those using an edge in `s.fresh` (which must be sorted).
///
/// Level by level over `(node, used)` pairs: two paths reaching the same node at the
/// same level have the same continuations, so one pair per node is enough, and a pair
/// that used a fresh edge subsumes one that did not (every end it reaches counts). The
/// cost is `len` times the GSS size at worst, whatever the number of paths.
fn paths(gss: &Layered<'_>, v: u32, len: u32, through_fresh: bool, s: &mut StepScratch) {
    s.ends.clear();
    // While there is one path, follow it without the level buffers: the common case
    // (a stack without forks below the head) stays as cheap as a plain walk. Paths
    // through fresh edges go to the levels, which look only where those can be.
    let (mut node, used, mut left) = (v, !through_fresh, len);
    while left > 0 && !through_fresh {
        s.effort += 1;
        let first = gss.node(node).first_edge;
        if first == NONE {
            return;
        }
        let edge = gss.edge(first);
        if edge.next != NONE {
            break;
        }
        node = edge.to;
        left -= 1;
    }
    if left == 0 {
        if used {
            s.ends.push(node);
        }
        return;
    }
    s.level.clear();
    s.level.push((node, used));
    for _ in 0..left {
        if s.effort > s.effort_limit.0 {
            // `step` sees the limit passed and gives up.
            s.ends.clear();
            return;
        }
        s.next_level.clear();
        for &(node, used) in &s.level {
            if !used {
                // A path that has not used a fresh edge yet can only find one among
                // this step's nodes (fresh edges start there; older nodes never point
                // to them): from such a node, the fresh edges out of it, and its edges
                // to other nodes of this step. Not every edge of it: a node reduced to
                // once per link of a right-recursive chain has one edge per link.
                if node < s.first_node {
                    continue;
                }
                let from = |list: &[(u32, u32)]| {
                    let lo = list.partition_point(|&(f, _)| f < node);
                    let hi = lo + list[lo..].partition_point(|&(f, _)| f == node);
                    lo..hi
                };
                for i in from(&s.fresh) {
                    s.next_level.push((s.fresh[i].1, true));
                }
                for i in from(&s.inner_sorted) {
                    s.next_level.push((s.inner_sorted[i].1, false));
                }
                s.effort += 1;
                continue;
            }
            let mut e = gss.node(node).first_edge;
            while e != NONE {
                let edge = gss.edge(e);
                s.effort += 1;
                s.next_level.push((edge.to, true));
                e = edge.next;
            }
        }
        if s.next_level.is_empty() {
            return;
        }
        if s.next_level.len() > 1 {
            // `true` first, so that deduplicating by node keeps the pair that used a
            // fresh edge.
            s.next_level
                .sort_unstable_by_key(|&(node, used)| (node, !used));
            s.next_level.dedup_by_key(|&mut (node, _)| node);
        }
        // A copy, not a swap: swapping would hand each buffer the other's role on
        // alternate levels, so whether a warm scratch allocates would depend on the
        // parity of every earlier level count, not only on the sizes seen before.
        s.level.clear();
        s.level.extend_from_slice(&s.next_level);
    }
    s.ends.extend(
        s.level
            .iter()
            .filter(|&&(_, used)| used)
            .map(|&(node, _)| node),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::glr::gss::{Edge, Gss, Node};

    /// A GSS from per-node edge lists (edges to older nodes, or any node: `paths` does
    /// not care).
    fn gss_of(edges: &[Vec<u32>]) -> Gss {
        let mut g = Gss::default();
        for (i, to) in edges.iter().enumerate() {
            let mut first = NONE;
            for &t in to.iter().rev() {
                g.edges.push(Edge { to: t, next: first });
                first = g.edges.len() as u32 - 1;
            }
            g.nodes.push(Node {
                state: i as u32,
                first_edge: first,
            });
        }
        g
    }

    fn ends(g: &Gss, v: u32, len: u32, fresh: &[(u32, u32)]) -> Vec<u32> {
        let mut over = Gss::default();
        let layered = Layered {
            base: g,
            over: &mut over,
        };
        let mut s = StepScratch::default();
        s.fresh.extend_from_slice(fresh);
        s.fresh.sort_unstable();
        // Every node counts as one of this step's (`first_node` 0), so every edge is an
        // edge between two of them.
        for (from, node) in g.nodes.iter().enumerate() {
            let mut e = node.first_edge;
            while e != NONE {
                s.inner_sorted.push((from as u32, g.edges[e as usize].to));
                e = g.edges[e as usize].next;
            }
        }
        s.inner_sorted.sort_unstable();
        paths(&layered, v, len, !fresh.is_empty(), &mut s);
        let mut out = s.ends.clone();
        out.sort_unstable();
        out
    }

    /// Every path one by one (what `paths` replaced): the oracle on small graphs.
    fn brute(edges: &[Vec<u32>], v: u32, len: u32, fresh: &[(u32, u32)]) -> Vec<u32> {
        let mut out = Vec::new();
        let mut stack = vec![(v, len, fresh.is_empty())];
        while let Some((node, left, used)) = stack.pop() {
            if left == 0 {
                if used {
                    out.push(node);
                }
                continue;
            }
            for &to in &edges[node as usize] {
                stack.push((to, left - 1, used || fresh.contains(&(node, to))));
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    #[test]
    fn ends_match_path_enumeration_on_random_graphs() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..500 {
            let n = 1 + rand(12) as usize;
            // Mostly edges to older nodes, sometimes to any node (cycles, self-loops).
            let edges: Vec<Vec<u32>> = (0..n)
                .map(|i| {
                    let mut to: Vec<u32> = (0..rand(4))
                        .map(|_| {
                            if i > 0 && rand(5) != 0 {
                                rand(i as u64) as u32
                            } else {
                                rand(n as u64) as u32
                            }
                        })
                        .collect();
                    to.sort_unstable();
                    to.dedup();
                    to
                })
                .collect();
            let all: Vec<(u32, u32)> = edges
                .iter()
                .enumerate()
                .flat_map(|(i, to)| to.iter().map(move |&t| (i as u32, t)))
                .collect();
            let fresh: Vec<(u32, u32)> = if all.is_empty() || rand(3) == 0 {
                Vec::new()
            } else {
                (0..1 + rand(3))
                    .map(|_| all[rand(all.len() as u64) as usize])
                    .collect()
            };
            let g = gss_of(&edges);
            let v = rand(n as u64) as u32;
            let len = rand(6) as u32;
            assert_eq!(
                ends(&g, v, len, &fresh),
                brute(&edges, v, len, &fresh),
                "edges {edges:?}, from {v}, length {len}, fresh {fresh:?}"
            );
        }
    }

    #[test]
    fn exponentially_many_paths_cost_a_level_each() {
        // A ladder: two nodes per level, each with edges to both nodes of the level
        // below, so 2^64 paths of length 64 lead from the top to the bottom. One by one
        // that never ends; level by level it is 64 levels of two pairs.
        const DEPTH: u32 = 64;
        let mut edges = vec![Vec::new(), Vec::new()];
        for level in 1..=DEPTH {
            let below = 2 * (level - 1);
            edges.push(vec![below, below + 1]);
            edges.push(vec![below, below + 1]);
        }
        let g = gss_of(&edges);
        let top = 2 * DEPTH;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send((
                ends(&g, top, DEPTH, &[]),
                ends(&g, top, DEPTH, &[(5, 2)]),
                ends(&g, top, DEPTH - 3, &[(5, 2)]),
                ends(&g, top, DEPTH, &[(5, 0)]),
            ));
        });
        let (all, through, short, none) = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("paths() on a ladder finishes (it took over 20 s)");
        assert_eq!(all, [0, 1]);
        assert_eq!(through, [0, 1]);
        // Paths of length DEPTH - 3 end on level 3, above the fresh edge 5 → 2.
        assert!(short.is_empty());
        assert!(none.is_empty(), "(5, 0) is not an edge");
    }
}
