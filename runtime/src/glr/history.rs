//! Forgetting the part of a parse that can no longer be undone.
//!
//! Popping bytes is a truncation of append-only arenas, so every byte consumed keeps
//! its mark, its lexeme groups, its frontier and the GSS nodes its steps made: left
//! alone, memory (and the cost of copying a parse for beam search) grows with the
//! input. A matcher only rolls back within a window of commits, so everything before
//! the window can go, except what the parse still stands on: the GSS nodes reachable
//! from heads that lexemes in progress continue from, and those heads themselves
//! (a long string lexeme still refers to the frontier where it started).
//!
//! Forgetting rebuilds the arenas from that: the old nodes that are still reachable
//! keep their order and come first (so "every node of a step is newer than anything
//! a rollback keeps", which truncation relies on, still holds), the window's own
//! nodes, edges, heads and groups follow, shifted down, and the marks are rewritten
//! to match. A rebuild runs only once the arenas have doubled since the previous one,
//! so its cost is amortized O(1) per arena entry, and afterwards the state is
//! O(nesting depth + window) whatever the length of the input.

use super::gss::{Edge, Gss, Node, NONE};
use super::GlrState;

/// Arena entries below which forgetting is not worth a rebuild.
const MIN_REBUILD_ENTRIES: usize = 2048;

/// When the next rebuild is due, and its scratch buffers.
#[derive(Debug, Default)]
pub(super) struct History {
    /// Arena entries right after the last rebuild.
    kept: usize,
    /// `new_id[n]`: the new id of old node `n`, or [`NONE`] if it is dropped.
    new_id: Vec<u32>,
    stack: Vec<u32>,
    /// Disjoint old head ranges still referenced: (start, end, new start).
    ranges: Vec<(u32, u32, u32)>,
    gss: Gss,
    heads: Vec<u32>,
}

impl History {
    pub fn reset(&mut self) {
        self.kept = 0;
    }

    /// Bytes of scratch buffers held (their capacities).
    pub fn retained_bytes(&self) -> usize {
        super::capacity_bytes(&self.new_id)
            + super::capacity_bytes(&self.stack)
            + super::capacity_bytes(&self.ranges)
            + super::capacity_bytes(&self.gss.nodes)
            + super::capacity_bytes(&self.gss.edges)
            + super::capacity_bytes(&self.heads)
    }
}

/// The schedule is part of a parse; the scratch buffers are not (a copy starts
/// with empty ones).
impl Clone for History {
    fn clone(&self) -> Self {
        History {
            kept: self.kept,
            ..Default::default()
        }
    }
}

impl History {
    /// What `clone` copies of `source` (when the next rebuild is due), the scratch
    /// buffers kept.
    pub fn continue_from(&mut self, source: &History) {
        self.kept = source.kept;
    }
}

impl GlrState {
    /// Forgets the bytes before byte `pos` of the input: [`GlrState::pop_bytes`] will
    /// not undo past it. Cheap to call after every commit: the arenas are rebuilt only
    /// when they have doubled since the last rebuild (module docs).
    ///
    /// # Panics
    ///
    /// If `pos > self.bytes_consumed()`.
    pub fn forget_before(&mut self, pos: usize) {
        if self.arena_entries() >= MIN_REBUILD_ENTRIES.max(2 * self.history.kept) {
            self.forget_before_now(pos);
        }
    }

    /// [`GlrState::forget_before`] without waiting for the arenas to grow: rebuilds
    /// them now (tests use it to rebuild at every position).
    ///
    /// # Panics
    ///
    /// If `pos > self.bytes_consumed()`.
    pub fn forget_before_now(&mut self, pos: usize) {
        assert!(
            pos <= self.bytes_consumed(),
            "forget_before({pos}) past the {} bytes consumed",
            self.bytes_consumed()
        );
        if pos > self.base {
            self.rebuild_from(pos - self.base);
        }
        self.history.kept = self.arena_entries();
    }

    fn arena_entries(&self) -> usize {
        self.gss.nodes.len()
            + self.gss.edges.len()
            + self.heads.len()
            + self.groups.len()
            + self.marks.len()
    }

    /// Drops local positions before `k` (0 < k ≤ bytes poppable).
    fn rebuild_from(&mut self, k: usize) {
        let w = self
            .marks
            .get(k)
            .copied()
            .unwrap_or_else(|| self.arena_lengths());
        let g0 = self.frames[k] as usize;
        let h = &mut self.history;

        // 1. Heads: the old ranges kept groups continue from, merged, then the window's.
        h.ranges.clear();
        for g in &self.groups[g0..] {
            if g.heads_start < w.heads {
                h.ranges.push((g.heads_start, g.heads_end, 0));
            }
        }
        h.ranges.sort_unstable();
        let mut merged = 0;
        for i in 0..h.ranges.len() {
            let (s, e, _) = h.ranges[i];
            if merged > 0 && s <= h.ranges[merged - 1].1 {
                let last = &mut h.ranges[merged - 1];
                last.1 = last.1.max(e);
            } else {
                h.ranges[merged] = (s, e, 0);
                merged += 1;
            }
        }
        h.ranges.truncate(merged);
        h.heads.clear();
        for r in &mut h.ranges {
            r.2 = h.heads.len() as u32;
            h.heads
                .extend_from_slice(&self.heads[r.0 as usize..r.1 as usize]);
        }
        let head_prefix = h.heads.len() as u32;
        h.heads.extend_from_slice(&self.heads[w.heads as usize..]);

        // 2. Old nodes still reachable from a kept head. (Window edges need no roots of
        //    their own: every window node was made by a lexeme in progress at `k` or
        //    started later, from heads kept above, and points only into their stacks.)
        h.new_id.clear();
        h.new_id.resize(w.nodes as usize, NONE);
        h.stack.clear();
        for &n in &h.heads {
            if n < w.nodes && h.new_id[n as usize] == NONE {
                h.new_id[n as usize] = 0;
                h.stack.push(n);
            }
        }
        while let Some(n) = h.stack.pop() {
            let mut e = self.gss.nodes[n as usize].first_edge;
            while e != NONE {
                let edge = self.gss.edges[e as usize];
                // Old nodes only point to old nodes (a node gains edges in its own step).
                if h.new_id[edge.to as usize] == NONE {
                    h.new_id[edge.to as usize] = 0;
                    h.stack.push(edge.to);
                }
                e = edge.next;
            }
        }
        let mut old_nodes = 0u32;
        for id in h.new_id.iter_mut() {
            if *id != NONE {
                *id = old_nodes;
                old_nodes += 1;
            }
        }

        // 3. The new GSS: kept old nodes with their edge lists, then the window.
        let new_node = |new_id: &[u32], n: u32| {
            if n < w.nodes {
                new_id[n as usize]
            } else {
                old_nodes + (n - w.nodes)
            }
        };
        h.gss.clear();
        for (n, &id) in h.new_id.iter().enumerate() {
            if id == NONE {
                continue;
            }
            let node = self.gss.nodes[n];
            let mut first_edge = NONE;
            let mut e = node.first_edge;
            while e != NONE {
                let edge = self.gss.edges[e as usize];
                let new_e = h.gss.edges.len() as u32;
                if first_edge == NONE {
                    first_edge = new_e;
                } else {
                    h.gss.edges[new_e as usize - 1].next = new_e;
                }
                h.gss.edges.push(Edge {
                    to: h.new_id[edge.to as usize],
                    next: NONE,
                });
                e = edge.next;
            }
            h.gss.nodes.push(Node {
                state: node.state,
                first_edge,
            });
        }
        let old_edges = h.gss.edges.len() as u32;
        let new_edge = |e: u32| {
            if e == NONE {
                NONE
            } else {
                old_edges + (e - w.edges)
            }
        };
        for node in &self.gss.nodes[w.nodes as usize..] {
            h.gss.nodes.push(Node {
                state: node.state,
                first_edge: new_edge(node.first_edge),
            });
        }
        for edge in &self.gss.edges[w.edges as usize..] {
            h.gss.edges.push(Edge {
                to: new_node(&h.new_id, edge.to),
                next: new_edge(edge.next),
            });
        }
        for head in &mut h.heads {
            *head = new_node(&h.new_id, *head);
        }

        // 4. Groups, frames and marks of the window, renumbered.
        let ranges = &h.ranges;
        let new_head = |i: u32| {
            if i >= w.heads {
                head_prefix + (i - w.heads)
            } else {
                let r = ranges[ranges.partition_point(|r| r.0 <= i) - 1];
                r.2 + (i - r.0)
            }
        };
        self.groups.drain(..g0);
        for g in &mut self.groups {
            let start = new_head(g.heads_start);
            g.heads_end = start + (g.heads_end - g.heads_start);
            g.heads_start = start;
            // Origins are only compared with each other: wrapping keeps them distinct.
            g.origin = g.origin.wrapping_sub(k as u32);
        }
        self.frames.drain(..k);
        for f in &mut self.frames {
            *f -= g0 as u32;
        }
        self.marks.drain(..k);
        for m in &mut self.marks {
            m.nodes = old_nodes + (m.nodes - w.nodes);
            m.edges = old_edges + (m.edges - w.edges);
            m.heads = head_prefix + (m.heads - w.heads);
            m.groups -= g0 as u32;
        }
        // Copied back rather than swapped: each buffer then only ever holds one kind of
        // content, so once warm neither grows (a swap would alternate them).
        self.gss.clear();
        self.gss.append(&h.gss);
        self.heads.clear();
        self.heads.extend_from_slice(&h.heads);
        self.base += k;
    }
}
