//! Grammar analyses shared by later stages: FIRST and FOLLOW sets over terminals.

use stackmask_formats::{Grammar, Symbol};

/// A set of terminal ids (one bit each; the extra id `terminals.len()` is end of input).
pub type TerminalSet = Vec<u64>;

/// `a |= b`; returns whether `a` changed.
pub fn union_into(a: &mut TerminalSet, b: &TerminalSet) -> bool {
    let mut changed = false;
    for (x, y) in a.iter_mut().zip(b) {
        changed |= *y & !*x != 0;
        *x |= y;
    }
    changed
}

/// Members of a terminal set.
pub fn members(s: &TerminalSet) -> impl Iterator<Item = u32> + '_ {
    s.iter().enumerate().flat_map(|(w, &word)| {
        (0..64)
            .filter(move |i| word >> i & 1 != 0)
            .map(move |i| (w * 64 + i) as u32)
    })
}

/// FIRST sets and nullability of every nonterminal.
#[derive(Debug, Clone)]
pub struct FirstSets {
    /// Words per set (room for every terminal plus end of input).
    pub words: usize,
    /// FIRST of each nonterminal.
    pub first: Vec<TerminalSet>,
    /// Nullability of each nonterminal.
    pub nullable: Vec<bool>,
}

impl FirstSets {
    /// Computes FIRST sets by fixpoint. `extra` adds rules `(lhs, rhs)` beyond the
    /// grammar's (the LR stage's augmented rule) over `num_nonterminals` symbols; their
    /// left-hand sides are new symbols that no grammar rule uses.
    ///
    /// A worklist over rules: a rule is re-read only when the FIRST set of a
    /// nonterminal in its nullable prefix grows. Sweeping every rule until nothing
    /// changed took one sweep per link of a chain of rules (`a0: a1`, …, `a{n}: "x"`):
    /// quadratic, most of the 14 s `check` spent on a 10,000-rule chain.
    pub fn new(g: &Grammar, extra: &[(u32, Vec<Symbol>)], num_nonterminals: usize) -> Self {
        let words = (g.terminals.len() + 1).div_ceil(64);
        let mut nullable = g.nullable_nonterminals();
        nullable.resize(num_nonterminals, false);
        for (lhs, rhs) in extra {
            if rhs
                .iter()
                .all(|s| matches!(s, Symbol::Nonterminal(n) if nullable[*n as usize]))
            {
                nullable[*lhs as usize] = true;
            }
        }
        let rules: Vec<(u32, &[Symbol])> = g
            .rules
            .iter()
            .map(|r| (r.lhs, r.rhs.as_slice()))
            .chain(extra.iter().map(|(l, r)| (*l, r.as_slice())))
            .collect();
        // The rules to re-read when a nonterminal's FIRST grows: those where it is in
        // the nullable prefix of the right-hand side.
        let mut readers: Vec<Vec<u32>> = vec![Vec::new(); num_nonterminals];
        for (i, &(_, rhs)) in rules.iter().enumerate() {
            for s in rhs {
                let Symbol::Nonterminal(n) = *s else { break };
                readers[n as usize].push(i as u32);
                if !nullable[n as usize] {
                    break;
                }
            }
        }
        let mut sets = FirstSets {
            words,
            first: vec![vec![0; words]; num_nonterminals],
            nullable,
        };
        let mut work: Vec<u32> = (0..rules.len() as u32).rev().collect();
        let mut queued = vec![true; rules.len()];
        while let Some(i) = work.pop() {
            queued[i as usize] = false;
            let (lhs, rhs) = rules[i as usize];
            let (f, _) = sets.of_string(rhs);
            if union_into(&mut sets.first[lhs as usize], &f) {
                for &j in &readers[lhs as usize] {
                    if !queued[j as usize] {
                        queued[j as usize] = true;
                        work.push(j);
                    }
                }
            }
        }
        sets
    }

    /// FIRST of a symbol string and whether it is nullable.
    pub fn of_string(&self, syms: &[Symbol]) -> (TerminalSet, bool) {
        let mut acc = vec![0u64; self.words];
        for s in syms {
            match *s {
                Symbol::Terminal(t) => {
                    acc[t as usize / 64] |= 1 << (t % 64);
                    return (acc, false);
                }
                Symbol::Nonterminal(n) => {
                    union_into(&mut acc, &self.first[n as usize]);
                    if !self.nullable[n as usize] {
                        return (acc, false);
                    }
                }
            }
        }
        (acc, true)
    }
}

/// For each terminal, the terminals that can come right after it in a sentential
/// form (ignore terminals not included).
pub fn terminal_follow(g: &Grammar) -> Vec<TerminalSet> {
    let first = FirstSets::new(g, &[], g.nonterminals.len());
    let words = first.words;
    let mut follow_nt: Vec<TerminalSet> = vec![vec![0; words]; g.nonterminals.len()];
    let mut follow_t: Vec<TerminalSet> = vec![vec![0; words]; g.terminals.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for r in &g.rules {
            for (i, s) in r.rhs.iter().enumerate() {
                let (mut f, nullable) = first.of_string(&r.rhs[i + 1..]);
                if nullable {
                    let lhs_follow = follow_nt[r.lhs as usize].clone();
                    union_into(&mut f, &lhs_follow);
                }
                let target = match *s {
                    Symbol::Terminal(t) => &mut follow_t[t as usize],
                    Symbol::Nonterminal(n) => &mut follow_nt[n as usize],
                };
                changed |= union_into(target, &f);
            }
        }
    }
    follow_t
}
