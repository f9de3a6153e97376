//! The graph-structured stack (Tomita): LR stacks sharing their common parts.
//!
//! Nodes and edges live in append-only arenas, so undoing bytes is a truncation.
//! That works because a node only gains edges during the GLR step that created it
//! (nodes merge by LR state within one reduce/shift step, never across steps), and
//! every node of a step is newer than anything a rollback keeps.
//!
//! A step that must not change the stack (the acceptance test) writes its nodes to an
//! *overlay*: a second arena whose ids continue after the base arena's. Appending the
//! overlay to the base then keeps every id, which is also how normal steps commit.

/// "No edge".
pub(crate) const NONE: u32 = u32::MAX;

/// A GSS node: an LR state and the head of its list of edges to predecessors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    pub state: u32,
    pub first_edge: u32,
}

/// An edge to a predecessor node, linked to the node's next edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Edge {
    pub to: u32,
    pub next: u32,
}

/// Node and edge arenas.
#[derive(Clone, Debug, Default)]
pub(crate) struct Gss {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    /// The fewest nodes the arena has held since [`Gss::take_low_water`]: nodes below
    /// it are the same nodes, with the same edges, as then. Whatever is derived from
    /// them (the mask walk's memo, `chain_memo`) stays true exactly that long.
    low_water: u32,
}

impl Gss {
    /// Removes every node and edge (ids are reused afterwards).
    pub fn clear(&mut self) {
        self.nodes.clear();
        self.edges.clear();
        self.low_water = 0;
    }

    /// Becomes a copy of `source` in these arenas (no allocation once they are as
    /// large).
    pub fn copy_from(&mut self, source: &Gss) {
        self.nodes.clone_from(&source.nodes);
        self.edges.clone_from(&source.edges);
        self.low_water = source.low_water;
    }

    /// Keeps the first `nodes` nodes and `edges` edges.
    pub fn truncate(&mut self, nodes: usize, edges: usize) {
        self.nodes.truncate(nodes);
        self.edges.truncate(edges);
        self.low_water = self.low_water.min(self.nodes.len() as u32);
    }

    /// The fewest nodes held since the last call (see the field), and starts counting
    /// again from now.
    pub fn take_low_water(&mut self) -> u32 {
        std::mem::replace(&mut self.low_water, self.nodes.len() as u32)
    }

    /// Appends an overlay built on top of `self` (its ids continue ours).
    pub fn append(&mut self, overlay: &Gss) {
        self.nodes.extend_from_slice(&overlay.nodes);
        self.edges.extend_from_slice(&overlay.edges);
    }
}

/// A base GSS with an overlay on top: reads go to either, writes to the overlay.
pub(crate) struct Layered<'a> {
    pub base: &'a Gss,
    pub over: &'a mut Gss,
}

impl Layered<'_> {
    #[inline]
    pub fn node(&self, id: u32) -> Node {
        let b = self.base.nodes.len() as u32;
        if id < b {
            self.base.nodes[id as usize]
        } else {
            self.over.nodes[(id - b) as usize]
        }
    }

    #[inline]
    pub fn edge(&self, id: u32) -> Edge {
        let b = self.base.edges.len() as u32;
        if id < b {
            self.base.edges[id as usize]
        } else {
            self.over.edges[(id - b) as usize]
        }
    }

    /// Creates a node (in the overlay) with one edge to `to`.
    pub fn new_node(&mut self, state: u32, to: u32) -> u32 {
        let edge = (self.base.edges.len() + self.over.edges.len()) as u32;
        self.over.edges.push(Edge { to, next: NONE });
        let id = (self.base.nodes.len() + self.over.nodes.len()) as u32;
        self.over.nodes.push(Node {
            state,
            first_edge: edge,
        });
        id
    }

    /// Whether the edge `from → to` exists, and how many edges were looked at.
    pub fn has_edge(&self, from: u32, to: u32) -> (bool, u64) {
        let mut e = self.node(from).first_edge;
        let mut seen = 0;
        while e != NONE {
            let edge = self.edge(e);
            seen += 1;
            if edge.to == to {
                return (true, seen);
            }
            e = edge.next;
        }
        (false, seen)
    }

    /// Adds the edge `from → to`, which must not exist yet; `from` must be an overlay
    /// node.
    pub fn push_edge(&mut self, from: u32, to: u32) {
        let b = self.base.nodes.len() as u32;
        let id = (self.base.edges.len() + self.over.edges.len()) as u32;
        let local = (from - b) as usize;
        self.over.edges.push(Edge {
            to,
            next: self.over.nodes[local].first_edge,
        });
        self.over.nodes[local].first_edge = id;
    }

    /// Number of nodes, base and overlay.
    pub fn node_count(&self) -> u32 {
        (self.base.nodes.len() + self.over.nodes.len()) as u32
    }
}
