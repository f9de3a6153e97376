//! The compiled parser: byte-level lexing with per-terminal DFAs feeding a GLR parser
//! over a graph-structured stack.
//!
//! The structure mirrors the reference recognizer on purpose (so differences are
//! bugs in one of them, not in a shared idea): lexemes in progress carry their origin
//! boundary; a lexeme ends only when the next byte shows that the greedy rule lets it
//! end; the *frontier* at a boundary is the set of GSS heads that lexemes starting
//! there continue from. The Earley sets of the reference become GSS heads, and
//! "which terminals may start here" becomes a per-LR-state bitset — exact because
//! the tables are canonical LR(1).
//!
//! Everything lives in append-only arenas indexed by byte position; popping bytes is
//! a truncation, and a warmed-up parser (after [`GlrState::reset`]) allocates nothing.

mod gss;
mod step;

use gss::{Gss, Layered};
use stackmask_formats::TablesRef;
use std::cell::RefCell;
use step::StepScratch;

/// A lexeme in progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Lexeme {
    terminal: u32,
    /// Global DFA state.
    state: u32,
    /// Boundary (byte position) where it started; its frontier has the heads.
    origin: u32,
    ignore: bool,
}

/// Arena lengths before a byte, to undo it.
#[derive(Clone, Copy, Debug)]
struct Mark {
    nodes: u32,
    edges: u32,
    heads: u32,
    lexemes: u32,
}

/// The parser state. Methods take the tables explicitly so that the state can live
/// beside an `Arc` of the engine that owns (or maps) them.
#[derive(Clone, Debug)]
pub struct GlrState {
    gss: Gss,
    /// Heads of every frontier; frontier `p` is `heads[frontiers[p]..frontiers[p + 1]]`.
    heads: Vec<u32>,
    frontiers: Vec<u32>,
    /// Lexemes in progress after `p` bytes: `lexemes[frames[p]..frames[p + 1]]`.
    lexemes: Vec<Lexeme>,
    frames: Vec<u32>,
    /// Per consumed byte: arena lengths before it.
    marks: Vec<Mark>,
    scratch: StepScratch,
    overlay: Gss,
    /// Scratch for [`GlrState::is_accepting`], which must not change the state.
    accept_scratch: RefCell<(StepScratch, Gss, Vec<u32>)>,
    new_heads: Vec<u32>,
    expected: Vec<u64>,
}

impl GlrState {
    /// The state at the start of input.
    pub fn new(tables: &TablesRef<'_>) -> Self {
        let mut s = GlrState {
            gss: Gss::default(),
            heads: Vec::new(),
            frontiers: Vec::new(),
            lexemes: Vec::new(),
            frames: Vec::new(),
            marks: Vec::new(),
            scratch: StepScratch::default(),
            overlay: Gss::default(),
            accept_scratch: RefCell::new(Default::default()),
            new_heads: Vec::new(),
            expected: vec![0; tables.expected_words as usize],
        };
        s.reset(tables);
        s
    }

    /// Back to the start of input, keeping every buffer's capacity.
    pub fn reset(&mut self, tables: &TablesRef<'_>) {
        self.gss.clear();
        self.gss.nodes.push(gss::Node {
            state: tables.start_state,
            first_edge: gss::NONE,
        });
        self.heads.clear();
        self.frontiers.clear();
        self.frontiers.push(0);
        self.lexemes.clear();
        self.frames.clear();
        self.frames.extend([0, 0]);
        self.marks.clear();
    }

    /// Bytes consumed so far.
    pub fn bytes_consumed(&self) -> usize {
        self.marks.len()
    }

    /// Number of GSS nodes (for statistics).
    pub fn gss_nodes(&self) -> usize {
        self.gss.nodes.len()
    }

    fn frame(&self, p: usize) -> std::ops::Range<usize> {
        self.frames[p] as usize..self.frames[p + 1] as usize
    }

    /// Consumes one byte if the input stays a viable prefix; otherwise returns
    /// `false` and changes nothing.
    pub fn push_byte(&mut self, tables: &TablesRef<'_>, b: u8) -> bool {
        let p = self.marks.len();
        let mark = Mark {
            nodes: self.gss.nodes.len() as u32,
            edges: self.gss.edges.len() as u32,
            heads: self.heads.len() as u32,
            lexemes: self.lexemes.len() as u32,
        };

        // 1. The frontier at p: the heads after every lexeme that b lets end here.
        self.new_heads.clear();
        self.overlay.clear();
        if p == 0 {
            self.new_heads.push(0);
        } else {
            for i in self.frame(p) {
                let lx = self.lexemes[i];
                if !tables.may_end(lx.terminal, lx.state, Some(b)) {
                    continue;
                }
                let (hs, he) = (
                    self.frontiers[lx.origin as usize] as usize,
                    self.frontiers[lx.origin as usize + 1] as usize,
                );
                if lx.ignore {
                    self.new_heads.extend_from_slice(&self.heads[hs..he]);
                } else {
                    let mut layered = Layered {
                        base: &self.gss,
                        over: &mut self.overlay,
                    };
                    step::step(
                        tables,
                        &mut layered,
                        &self.heads[hs..he],
                        lx.terminal,
                        &mut self.scratch,
                        &mut self.new_heads,
                    );
                }
            }
            self.new_heads.sort_unstable();
            self.new_heads.dedup();
        }
        self.gss.append(&self.overlay);
        self.heads.extend_from_slice(&self.new_heads);
        self.frontiers.push(self.heads.len() as u32);

        // 2. Lexemes starting at p with byte b.
        self.expected.fill(0);
        for &h in &self.new_heads {
            let st = self.gss.nodes[h as usize].state as usize * tables.expected_words as usize;
            for (w, e) in self.expected.iter_mut().enumerate() {
                *e |= tables.expected[st + w];
            }
        }
        let any_expected = self.expected.iter().any(|&w| w != 0);
        for w in 0..self.expected.len() {
            let mut bits = self.expected[w];
            while bits != 0 {
                let t = (w * 64) as u32 + bits.trailing_zeros();
                bits &= bits - 1;
                let s = tables.dfa_next(tables.dfa_start[t as usize], b);
                if s != 0 {
                    self.lexemes.push(Lexeme {
                        terminal: t,
                        state: s,
                        origin: p as u32,
                        ignore: false,
                    });
                }
            }
        }
        if any_expected && (p > 0 || tables.allow_initial_skip) {
            for &t in tables.ignore {
                let s = tables.dfa_next(tables.dfa_start[t as usize], b);
                if s != 0 {
                    self.lexemes.push(Lexeme {
                        terminal: t,
                        state: s,
                        origin: p as u32,
                        ignore: true,
                    });
                }
            }
        }

        // 3. Lexemes in progress that go on with b.
        for i in self.frame(p) {
            let lx = self.lexemes[i];
            if tables.lazy[lx.terminal as usize] != 0 && tables.dfa_accepting(lx.state) {
                continue;
            }
            let s = tables.dfa_next(lx.state, b);
            if s != 0 {
                self.lexemes.push(Lexeme { state: s, ..lx });
            }
        }

        if self.lexemes.len() == mark.lexemes as usize {
            self.gss.truncate(mark.nodes as usize, mark.edges as usize);
            self.heads.truncate(mark.heads as usize);
            self.frontiers.pop();
            return false;
        }
        self.frames.push(self.lexemes.len() as u32);
        self.marks.push(mark);
        true
    }

    /// Undoes the last `n` bytes.
    pub fn pop_bytes(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        let m = self.marks.len() - n;
        let mark = self.marks[m];
        self.gss.truncate(mark.nodes as usize, mark.edges as usize);
        self.heads.truncate(mark.heads as usize);
        self.frontiers.truncate(m + 1);
        self.lexemes.truncate(mark.lexemes as usize);
        self.frames.truncate(m + 2);
        self.marks.truncate(m);
    }

    /// Whether the bytes consumed so far form a sentence.
    pub fn is_accepting(&self, tables: &TablesRef<'_>) -> bool {
        let p = self.marks.len();
        let eof = tables.num_terminals - 1;
        let mut guard = self.accept_scratch.borrow_mut();
        let (scratch, overlay, heads) = &mut *guard;
        overlay.clear();
        let mut layered = Layered {
            base: &self.gss,
            over: overlay,
        };
        if p == 0 {
            heads.clear();
            return step::step(tables, &mut layered, &[0], eof, scratch, heads);
        }
        for i in self.frame(p) {
            let lx = self.lexemes[i];
            if lx.ignore || !tables.may_end(lx.terminal, lx.state, None) {
                continue;
            }
            let (hs, he) = (
                self.frontiers[lx.origin as usize] as usize,
                self.frontiers[lx.origin as usize + 1] as usize,
            );
            heads.clear();
            step::step(
                tables,
                &mut layered,
                &self.heads[hs..he],
                lx.terminal,
                scratch,
                heads,
            );
            let shifted = std::mem::take(heads);
            let mut none = Vec::new();
            let accepted = step::step(tables, &mut layered, &shifted, eof, scratch, &mut none);
            *heads = shifted;
            if accepted {
                return true;
            }
        }
        false
    }
}

/// A [`GlrState`] bound to its tables: the [`crate::ByteRecognizer`] view.
pub struct GlrRecognizer<'a, 's> {
    /// The tables.
    pub tables: TablesRef<'a>,
    /// The state.
    pub state: &'s mut GlrState,
}

impl crate::ByteRecognizer for GlrRecognizer<'_, '_> {
    fn push_byte(&mut self, byte: u8) -> bool {
        self.state.push_byte(&self.tables, byte)
    }
    fn pop_bytes(&mut self, n: usize) {
        self.state.pop_bytes(n)
    }
    fn bytes_consumed(&self) -> usize {
        self.state.bytes_consumed()
    }
    fn is_accepting(&self) -> bool {
        self.state.is_accepting(&self.tables)
    }
}
