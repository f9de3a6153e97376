//! Minimal byte DFAs for terminals (Hopcroft's partition refinement).
//!
//! Every lexer state a token can end in is a lexer configuration, and every
//! configuration is a boundary the compiler builds a Terminal DWA for (a walk of the
//! whole token trie). A terminal DFA with equivalent states therefore multiplies the
//! compile's main cost: a JSON Schema's "any name but `length`" came out of
//! determinization with 200 states where 24 do. regex-automata can minimize too, but
//! its minimizer took minutes on a 53,000-state `maxLength: 4096` string; this one runs
//! Hopcroft's algorithm over byte equivalence classes, O(classes · n log n).
//!
//! Equivalent states have the same future (Myhill–Nerode), so every property the lexer
//! and the runtime read off a state — accepting, may the lexeme go on, which bytes
//! end it — is unchanged: minimization changes no language and no lexing decision.

/// A DFA's table by byte class: one column per class of bytes no state tells apart,
/// the classes in the order of their first bytes.
pub struct ClassRows {
    /// `width` targets per state.
    pub rows: Vec<u32>,
    /// Columns per state: the classes.
    pub width: usize,
    /// Per byte: its class's column.
    pub column: [u8; 256],
}

impl ClassRows {
    /// The classes of `trans` (256 targets per state).
    pub fn of(trans: &[u32]) -> ClassRows {
        let n = trans.len() / 256;
        let (reps, column) = byte_classes(trans, n);
        let rows = (0..n)
            .flat_map(|s| reps.iter().map(move |&b| trans[s * 256 + b as usize]))
            .collect();
        ClassRows {
            rows,
            width: reps.len(),
            column,
        }
    }
}

/// The table of `rows` (`width` columns a state) with 256 columns, byte `b` taking
/// column `column[b]`.
pub fn widen(rows: &[u32], width: usize, column: &[u8; 256]) -> Vec<u32> {
    let mut trans = vec![0u32; rows.len() / width * 256];
    for (row, out) in rows.chunks_exact(width).zip(trans.chunks_exact_mut(256)) {
        for (t, &c) in out.iter_mut().zip(column) {
            *t = row[c as usize];
        }
    }
    trans
}

/// Minimizes a DFA given by byte class (state 0 the dead state, every transition to
/// itself), started at `start`: `rows` has `width` targets per state,
/// one per class, the classes in the order of their first bytes. Returns the minimal
/// DFA in the same columns, the dead state still 0, with its start state and all
/// states reachable from it; widened with the classes' bytes it is the minimization of
/// the widened input, state for state (the renumbering visits the classes
/// in the order their first bytes are visited). A lexer's terminal comes out of
/// determinization by class (a `date-time`: 23,000 states of 29 classes), and 256
/// columns a state made the minimization read and write nine times the cells.
pub fn minimize_rows(
    rows: &[u32],
    width: usize,
    accepting: &[bool],
    start: u32,
) -> (Vec<u32>, Vec<bool>, u32) {
    let n = accepting.len();
    let k = width;
    debug_assert_eq!(rows.len(), n * k);
    // Per (class, target), the sources (CSR).
    let mut inv_start = vec![0u32; k * n + 1];
    for s in 0..n {
        for c in 0..k {
            inv_start[c * n + rows[s * k + c] as usize + 1] += 1;
        }
    }
    for i in 1..inv_start.len() {
        inv_start[i] += inv_start[i - 1];
    }
    let mut fill = inv_start.clone();
    let mut inv = vec![0u32; k * n];
    for s in 0..n {
        for c in 0..k {
            let slot = &mut fill[c * n + rows[s * k + c] as usize];
            inv[*slot as usize] = s as u32;
            *slot += 1;
        }
    }

    let mut p = Partition::new(accepting);
    // Worklist of (block, class) splitters, with membership flags.
    let mut pending: Vec<(u32, u32)> = Vec::new();
    let mut in_pending: Vec<bool> = Vec::new();
    let smaller = if p.len(0) <= p.len(1) { 0 } else { 1 };
    for c in 0..k as u32 {
        pending.push((smaller, c));
    }
    in_pending.resize(p.blocks() * k, false);
    for c in 0..k {
        in_pending[smaller as usize * k + c] = true;
    }
    let mut touched: Vec<u32> = Vec::new();
    let mut splitter: Vec<u32> = Vec::new();
    while let Some((b, c)) = pending.pop() {
        in_pending[b as usize * k + c as usize] = false;
        // Mark every state with a transition on class `c` into block `b` (copied
        // first: marking reorders blocks, `b` among them).
        let (lo, hi) = p.range(b);
        splitter.clear();
        splitter.extend_from_slice(&p.elems[lo..hi]);
        for &t in &splitter {
            let t = t as usize;
            let srcs = &inv[inv_start[c as usize * n + t] as usize
                ..inv_start[c as usize * n + t + 1] as usize];
            for &s in srcs {
                if p.mark(s) {
                    touched.push(p.block_of[s as usize]);
                }
            }
        }
        touched.sort_unstable();
        touched.dedup();
        for &d in &touched {
            if let Some(new) = p.split(d) {
                in_pending.resize(p.blocks() * k, false);
                for a in 0..k {
                    // (d, a) pending: both halves must be; else the smaller half suffices.
                    let add = if in_pending[d as usize * k + a] || p.len(new) <= p.len(d) {
                        new
                    } else {
                        d
                    };
                    if !in_pending[add as usize * k + a] {
                        in_pending[add as usize * k + a] = true;
                        pending.push((add, a as u32));
                    }
                }
            }
        }
        touched.clear();
    }

    // Renumber: the dead state's block 0, the start's 1, then breadth-first.
    let mut id = vec![u32::MAX; p.blocks()];
    id[p.block_of[0] as usize] = 0;
    let mut order = vec![p.block_of[0]];
    if id[p.block_of[start as usize] as usize] == u32::MAX {
        id[p.block_of[start as usize] as usize] = 1;
        order.push(p.block_of[start as usize]);
    }
    let mut out_trans = Vec::new();
    let mut out_accepting = Vec::new();
    let mut i = 0;
    while i < order.len() {
        let rep = p.elems[p.range(order[i]).0] as usize;
        out_accepting.push(accepting[rep]);
        for c in 0..k {
            let t = p.block_of[rows[rep * k + c] as usize] as usize;
            if id[t] == u32::MAX {
                id[t] = order.len() as u32;
                order.push(t as u32);
            }
            out_trans.push(id[t]);
        }
        i += 1;
    }
    (
        out_trans,
        out_accepting,
        id[p.block_of[start as usize] as usize],
    )
}

/// Bytes no transition tells apart, one representative byte each (the smallest of its
/// class, in increasing order), refined row by row
/// ([`stackmask_formats::dfa::refine_byte_classes`]), with each byte's class as an
/// index into them.
fn byte_classes(trans: &[u32], n: usize) -> (Vec<u8>, [u8; 256]) {
    let mut rep = [0u8; 256];
    stackmask_formats::dfa::refine_byte_classes(&mut rep, &trans[..n * 256]);
    let reps: Vec<u8> = (0..=255u8).filter(|&b| rep[b as usize] == b).collect();
    let mut column = [0u8; 256];
    for (c, r) in column.iter_mut().zip(rep) {
        // A class's first byte is its representative, so the search finds it.
        *c = reps.partition_point(|&x| x < r) as u8;
    }
    (reps, column)
}

/// A partition of the states into blocks, each a range of `elems`; a block's marked
/// states are moved to the front of its range.
struct Partition {
    elems: Vec<u32>,
    /// Position of each state in `elems`.
    loc: Vec<u32>,
    block_of: Vec<u32>,
    /// Per block: start, end and number of marked states.
    start: Vec<u32>,
    end: Vec<u32>,
    marked: Vec<u32>,
}

impl Partition {
    /// Blocks 0 (non-accepting) and 1 (accepting), the latter possibly empty.
    fn new(accepting: &[bool]) -> Self {
        let mut elems: Vec<u32> = (0..accepting.len() as u32)
            .filter(|&s| !accepting[s as usize])
            .collect();
        let cut = elems.len() as u32;
        elems.extend((0..accepting.len() as u32).filter(|&s| accepting[s as usize]));
        let mut loc = vec![0u32; elems.len()];
        for (i, &s) in elems.iter().enumerate() {
            loc[s as usize] = i as u32;
        }
        let block_of = accepting.iter().map(|&a| u32::from(a)).collect();
        Partition {
            loc,
            block_of,
            start: vec![0, cut],
            end: vec![cut, elems.len() as u32],
            marked: vec![0, 0],
            elems,
        }
    }

    fn blocks(&self) -> usize {
        self.start.len()
    }

    fn len(&self, b: u32) -> u32 {
        self.end[b as usize] - self.start[b as usize]
    }

    fn range(&self, b: u32) -> (usize, usize) {
        (
            self.start[b as usize] as usize,
            self.end[b as usize] as usize,
        )
    }

    /// Marks state `s`; true if its block had no marked state before.
    fn mark(&mut self, s: u32) -> bool {
        let b = self.block_of[s as usize] as usize;
        let pos = self.loc[s as usize];
        let first_unmarked = self.start[b] + self.marked[b];
        if pos < first_unmarked {
            return false; // Already marked.
        }
        let other = self.elems[first_unmarked as usize];
        self.elems.swap(pos as usize, first_unmarked as usize);
        self.loc[other as usize] = pos;
        self.loc[s as usize] = first_unmarked;
        self.marked[b] += 1;
        self.marked[b] == 1
    }

    /// Splits block `b` into its marked and unmarked states when both are non-empty:
    /// the marked ones become a new block, whose id is returned. Clears the marks.
    fn split(&mut self, b: u32) -> Option<u32> {
        let b = b as usize;
        let m = std::mem::take(&mut self.marked[b]);
        if m == 0 || m == self.end[b] - self.start[b] {
            return None;
        }
        let new = self.start.len() as u32;
        let (lo, cut) = (self.start[b], self.start[b] + m);
        self.start.push(lo);
        self.end.push(cut);
        self.marked.push(0);
        self.start[b] = cut;
        for i in lo..cut {
            self.block_of[self.elems[i as usize] as usize] = new;
        }
        Some(new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 256-column form: minimizes a DFA given as `trans` (`256` targets per state, state 0 the dead state
    /// with every transition to itself) and `accepting`, started at `start`. Returns the
    /// minimal DFA in the same form, with the dead state still 0, its start state, and all
    /// states reachable from it.
    fn minimize(trans: &[u32], accepting: &[bool], start: u32) -> (Vec<u32>, Vec<bool>, u32) {
        debug_assert_eq!(trans.len(), accepting.len() * 256);
        let by_class = ClassRows::of(trans);
        let (rows, accepting, start) =
            minimize_rows(&by_class.rows, by_class.width, accepting, start);
        (
            widen(&rows, by_class.width, &by_class.column),
            accepting,
            start,
        )
    }

    /// A DFA from `(state, byte, target)` edges over `n` states (0 dead).
    fn dfa(n: usize, edges: &[(u32, u8, u32)]) -> Vec<u32> {
        let mut t = vec![0u32; n * 256];
        for &(s, b, to) in edges {
            t[s as usize * 256 + b as usize] = to;
        }
        t
    }

    /// Whether two DFAs accept the same strings up to length `len` over `alphabet`.
    fn same_language(
        a: (&[u32], &[bool], u32),
        b: (&[u32], &[bool], u32),
        alphabet: &[u8],
        len: usize,
    ) -> bool {
        let mut frontier = vec![(a.2, b.2)];
        for _ in 0..=len {
            let mut next = Vec::new();
            for &(x, y) in &frontier {
                if a.1[x as usize] != b.1[y as usize] {
                    return false;
                }
                for &c in alphabet {
                    next.push((
                        a.0[x as usize * 256 + c as usize],
                        b.0[y as usize * 256 + c as usize],
                    ));
                }
            }
            next.sort_unstable();
            next.dedup();
            frontier = next;
        }
        true
    }

    #[test]
    fn merges_equivalent_states_and_keeps_the_language() {
        // (a|b)c with the two branches as separate states 2 and 3.
        let t = dfa(5, &[(1, b'a', 2), (1, b'b', 3), (2, b'c', 4), (3, b'c', 4)]);
        let acc = [false, false, false, false, true];
        let (mt, ma, ms) = minimize(&t, &acc, 1);
        assert_eq!(ma.len(), 4, "dead, start, after a|b, after c");
        assert!(same_language((&t, &acc, 1), (&mt, &ma, ms), b"abcd", 4));
        assert_eq!(ms, 1);
        assert!(mt[..256].iter().all(|&x| x == 0), "state 0 stays dead");
    }

    #[test]
    fn keeps_states_that_differ_in_their_future() {
        // "ab" | "cd": after `a` and after `c` the futures differ.
        let t = dfa(6, &[(1, b'a', 2), (1, b'c', 3), (2, b'b', 4), (3, b'd', 5)]);
        let acc = [false, false, false, false, true, true];
        let (mt, ma, ms) = minimize(&t, &acc, 1);
        assert_eq!(ma.len(), 5);
        assert!(same_language((&t, &acc, 1), (&mt, &ma, ms), b"abcdx", 4));
    }

    #[test]
    fn a_long_chain_stays_a_chain() {
        // a{1,2000}: already minimal; must stay so and be quick (Hopcroft, not Moore).
        let n = 2002;
        let edges: Vec<(u32, u8, u32)> = (1..n as u32 - 1).map(|s| (s, b'a', s + 1)).collect();
        let t = dfa(n, &edges);
        let acc: Vec<bool> = (0..n).map(|s| s >= 2).collect();
        let (_, ma, _) = minimize(&t, &acc, 1);
        assert_eq!(ma.len(), n);
    }

    #[test]
    fn byte_classes_are_the_bytes_with_equal_columns() {
        let mut rng = crate::test_rng::XorShift(0x2545f4914f6cdd1d);
        for _ in 0..200 {
            let n = 1 + rng.below(20) as usize;
            // A few column shapes, each byte given one, then single cells changed: two
            // bytes split wherever one row tells them apart, the last row included.
            let shapes: Vec<Vec<u32>> = (0..1 + rng.below(6))
                .map(|_| (0..n).map(|_| rng.below(4) as u32).collect())
                .collect();
            let mut t = vec![0u32; n * 256];
            for b in 0..256 {
                let shape = &shapes[rng.below(shapes.len() as u64) as usize];
                for s in 0..n {
                    t[s * 256 + b] = shape[s];
                }
            }
            for _ in 0..rng.below(4) {
                let cell = rng.below((n * 256) as u64) as usize;
                t[cell] = 7;
            }
            let column = |b: usize| (0..n).map(|s| t[s * 256 + b]).collect::<Vec<u32>>();
            let expected: Vec<u8> = (0..=255u8)
                .filter(|&b| (0..b).all(|a| column(a as usize) != column(b as usize)))
                .collect();
            assert_eq!(byte_classes(&t, n).0, expected);
        }
    }

    #[test]
    fn by_class_is_by_byte_widened_state_for_state() {
        // `minimize_rows` on a table by class, widened, against `minimize` on the
        // widened table: the same automaton, numbered alike, also where two classes
        // have the same column (which `minimize` merges into one).
        let mut rng = crate::test_rng::XorShift(0x5851f42d4c957f2d);
        for _ in 0..300 {
            let n = 2 + rng.below(30) as usize;
            let width = 1 + rng.below(6) as usize;
            // Classes as runs of bytes, in order: column `c` from byte `cuts[c]`.
            let mut cuts: Vec<usize> = (1..width).map(|_| 1 + rng.below(255) as usize).collect();
            cuts.sort_unstable();
            cuts.dedup();
            let width = cuts.len() + 1;
            let mut column = [0u8; 256];
            for (b, c) in column.iter_mut().enumerate() {
                *c = cuts.partition_point(|&x| x <= b) as u8;
            }
            let mut rows = vec![0u32; n * width];
            for s in 1..n {
                for c in 0..width {
                    if rng.below(3) != 0 {
                        rows[s * width + c] = rng.below(n as u64) as u32;
                    }
                }
            }
            let acc: Vec<bool> = (0..n).map(|s| s != 0 && rng.below(3) == 0).collect();
            let (mr, ma, ms) = minimize_rows(&rows, width, &acc, 1);
            let wide = widen(&rows, width, &column);
            let (mt, mta, mts) = minimize(&wide, &acc, 1);
            assert_eq!((widen(&mr, width, &column), &ma, ms), (mt, &mta, mts));
        }
    }

    #[test]
    fn random_dfas_keep_their_language() {
        let mut rng = crate::test_rng::XorShift(0x9e3779b97f4a7c15);
        let mut rand = |m: u64| rng.below(m);
        for _ in 0..300 {
            let n = 2 + rand(12) as usize;
            let mut t = vec![0u32; n * 256];
            for s in 1..n {
                for c in b"abc" {
                    t[s * 256 + *c as usize] = rand(n as u64) as u32;
                }
            }
            let acc: Vec<bool> = (0..n).map(|s| s != 0 && rand(3) == 0).collect();
            let (mt, ma, ms) = minimize(&t, &acc, 1);
            assert!(ma.len() <= n);
            assert!(same_language((&t, &acc, 1), (&mt, &ma, ms), b"abcz", 8));
            // Minimal: minimizing again changes nothing.
            let (_, ma2, _) = minimize(&mt, &ma, ms);
            assert_eq!(ma2.len(), ma.len());
        }
    }
}
