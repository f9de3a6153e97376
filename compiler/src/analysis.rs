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
    terminal_follow_counted(g).0
}

/// [`terminal_follow`], with the number of set unions it made (its work, for tests).
///
/// Two parts, so that the work is linear in the grammar for a fixed number of
/// terminals (a repeated sweep over the rules until nothing changes took one sweep per
/// link of a chain of rules written in the other order: quadratic). First, each rule
/// read right to left once gives every symbol the FIRST of what follows it, and records
/// where that suffix is nullable: there the symbol also gets everything that follows the
/// rule's left-hand side. Second, those "gets FOLLOW of" edges are propagated with a
/// worklist over nonterminals whose FOLLOW grew.
pub(crate) fn terminal_follow_counted(g: &Grammar) -> (Vec<TerminalSet>, usize) {
    let first = FirstSets::new(g, &[], g.nonterminals.len());
    let words = first.words;
    let mut follow_nt: Vec<TerminalSet> = vec![vec![0; words]; g.nonterminals.len()];
    let mut follow_t: Vec<TerminalSet> = vec![vec![0; words]; g.terminals.len()];
    // Per nonterminal: the symbols that get its FOLLOW (a nullable suffix after them).
    let mut inherits: Vec<Vec<Symbol>> = vec![Vec::new(); g.nonterminals.len()];
    let mut unions = 0usize;
    let mut suffix = vec![0u64; words];
    for r in &g.rules {
        suffix.fill(0);
        let mut nullable = true;
        for &s in r.rhs.iter().rev() {
            let target = match s {
                Symbol::Terminal(t) => &mut follow_t[t as usize],
                Symbol::Nonterminal(n) => &mut follow_nt[n as usize],
            };
            union_into(target, &suffix);
            unions += 1;
            if nullable {
                inherits[r.lhs as usize].push(s);
            }
            match s {
                Symbol::Terminal(t) => {
                    suffix.fill(0);
                    suffix[t as usize / 64] |= 1 << (t % 64);
                    nullable = false;
                }
                Symbol::Nonterminal(n) => {
                    if first.nullable[n as usize] {
                        union_into(&mut suffix, &first.first[n as usize]);
                    } else {
                        suffix.copy_from_slice(&first.first[n as usize]);
                        nullable = false;
                    }
                    unions += 1;
                }
            }
        }
    }
    for list in &mut inherits {
        list.sort_unstable();
        list.dedup();
    }
    let mut queued = vec![true; g.nonterminals.len()];
    let mut work: Vec<u32> = (0..g.nonterminals.len() as u32).collect();
    let mut from = vec![0u64; words];
    while let Some(a) = work.pop() {
        queued[a as usize] = false;
        from.copy_from_slice(&follow_nt[a as usize]);
        for &s in &inherits[a as usize] {
            unions += 1;
            match s {
                Symbol::Terminal(t) => {
                    union_into(&mut follow_t[t as usize], &from);
                }
                Symbol::Nonterminal(n) => {
                    if union_into(&mut follow_nt[n as usize], &from) && !queued[n as usize] {
                        queued[n as usize] = true;
                        work.push(n);
                    }
                }
            }
        }
    }
    (follow_t, unions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackmask_formats::grammar::{Nonterminal, Rule, Terminal};

    /// The former definition, a sweep over every rule until nothing changes: the
    /// least fixpoint both must reach.
    fn follow_by_sweeps(g: &Grammar) -> Vec<TerminalSet> {
        let first = FirstSets::new(g, &[], g.nonterminals.len());
        let mut follow_nt: Vec<TerminalSet> = vec![vec![0; first.words]; g.nonterminals.len()];
        let mut follow_t: Vec<TerminalSet> = vec![vec![0; first.words]; g.terminals.len()];
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

    fn grammar(terminals: u32, nonterminals: u32, rules: Vec<Rule>) -> Grammar {
        Grammar {
            source_name: "test".into(),
            terminals: (0..terminals)
                .map(|t| Terminal {
                    name: format!("T{t}"),
                    regex: format!("t{t}"),
                    lazy: false,
                    priority: 0,
                    defined_at: None,
                    difference: None,
                })
                .collect(),
            nonterminals: (0..nonterminals)
                .map(|n| Nonterminal {
                    name: format!("n{n}"),
                })
                .collect(),
            rules,
            start: 0,
            ignore: Vec::new(),
            allow_initial_skip: false,
        }
    }

    #[test]
    fn follow_sets_equal_the_sweep_fixpoint_on_random_grammars() {
        let mut rng = crate::test_rng::XorShift(0x2545_f491_4f6c_dd1d);
        let mut below = |n: u32| rng.below(n as u64) as u32;
        let mut nonempty = 0;
        for _ in 0..400 {
            let (nt, t) = (1 + below(8), 1 + below(70));
            let rules = (0..1 + below(16))
                .map(|_| Rule {
                    lhs: below(nt),
                    rhs: (0..below(5))
                        .map(|_| match below(3) {
                            0 => Symbol::Terminal(below(t)),
                            _ => Symbol::Nonterminal(below(nt)),
                        })
                        .collect(),
                })
                .collect();
            let g = grammar(t, nt, rules);
            let want = follow_by_sweeps(&g);
            nonempty += want.iter().filter(|s| s.iter().any(|&w| w != 0)).count();
            assert_eq!(terminal_follow(&g), want, "{:?}", g.rules);
        }
        assert!(
            nonempty > 1000,
            "the grammars must give follow sets: {nonempty}"
        );
    }

    /// A chain of unit rules from the nonterminal that a `T0` follows down to `T1`,
    /// numbered up or down and written in either order: a sweep in rule order moved
    /// FOLLOW one link per sweep, and a worklist must not revisit the chain per link.
    /// The work must grow with the chain, not its square.
    #[test]
    fn follow_work_is_linear_on_chains_in_either_order() {
        let chain = |len: u32, rules_reversed: bool, numbered_down: bool| {
            let id = |i: u32| if numbered_down { len - i } else { i };
            // n(len) is followed by T0; n(i+1) → n(i); n(0) → T1.
            let mut rules: Vec<Rule> = (0..len)
                .map(|i| Rule {
                    lhs: id(i + 1),
                    rhs: vec![Symbol::Nonterminal(id(i))],
                })
                .collect();
            rules.push(Rule {
                lhs: id(0),
                rhs: vec![Symbol::Terminal(1)],
            });
            rules.push(Rule {
                lhs: id(len),
                rhs: vec![Symbol::Nonterminal(id(len)), Symbol::Terminal(0)],
            });
            if rules_reversed {
                rules.reverse();
            }
            grammar(2, len + 1, rules)
        };
        for case in [(false, false), (true, false), (false, true), (true, true)] {
            let (small, big) = (chain(500, case.0, case.1), chain(2000, case.0, case.1));
            let (follow, w_small) = terminal_follow_counted(&small);
            let (_, w_big) = terminal_follow_counted(&big);
            // T1 ends every string the chain derives, so T0 follows it.
            assert_eq!(follow[1][0] & 1, 1, "{case:?}");
            assert!(w_big <= 5 * w_small, "{case:?}: {w_small} -> {w_big}");
        }
    }
}
