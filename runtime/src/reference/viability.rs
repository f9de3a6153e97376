//! Which prefixes can still be completed: the "∃ u" of DESIGN.md §1, exactly.
//!
//! Per-terminal greedy lexing couples adjacent lexemes: a lexeme of `t` ending in DFA
//! state `q` lets the next lexeme start only with a byte that does not extend `q`.
//! So "a lexeme is live and the parser expects it" does not imply that a completion
//! exists (`start: A B`, `A: /a+/`, `B: "a"` has no sentence at all). This module
//! abstracts each lexeme to its interface — the byte class it starts with and the
//! *exit class* (the set of bytes allowed right after it) it ends with — computes,
//! per grammar symbol and per rule suffix, which (first, exit) pairs its derivations
//! can have, and lets the recognizer ask, at run time, which exit classes of the
//! current lexeme still leave a valid continuation. Ignore lexemes are folded into
//! the "allowed first bytes after exit class e" relation, since they may stand between
//! any two lexemes.

use stackmask_formats::{ByteDfa, Grammar, Symbol};
use std::collections::HashMap;

/// A set of exit classes (or of byte classes), as a bitset.
pub(crate) type Bits = Vec<u64>;

fn bits(n: usize) -> Bits {
    vec![0; n.div_ceil(64).max(1)]
}
fn set(b: &mut Bits, i: usize) {
    b[i / 64] |= 1 << (i % 64);
}
fn get(b: &Bits, i: usize) -> bool {
    b[i / 64] >> (i % 64) & 1 != 0
}
/// `a |= b`; returns whether `a` changed.
pub(crate) fn union_into(a: &mut Bits, b: &Bits) -> bool {
    let mut changed = false;
    for (x, y) in a.iter_mut().zip(b) {
        changed |= *y & !*x != 0;
        *x |= y;
    }
    changed
}
pub(crate) fn intersects(a: &Bits, b: &Bits) -> bool {
    a.iter().zip(b).any(|(x, y)| x & y != 0)
}
fn ones(b: &Bits) -> impl Iterator<Item = usize> + '_ {
    b.iter().enumerate().flat_map(|(w, &word)| {
        (0..64)
            .filter(move |i| word >> i & 1 != 0)
            .map(move |i| w * 64 + i)
    })
}

/// The (first byte class → exit classes) relation of a symbol string, plus whether
/// it derives the empty string.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Rel {
    nullable: bool,
    by_first: Vec<Bits>,
}

/// Grammar-level tables for exact viability.
#[derive(Debug)]
pub(crate) struct Viability {
    /// Number of exit classes.
    classes: usize,
    num_byte_classes: usize,
    /// Per exit class: byte classes allowed to start the next non-ignore lexeme.
    allowed_first: Vec<Bits>,
    /// Per terminal, per DFA state: exit classes some completion of the lexeme reaches.
    reach: Vec<Vec<Bits>>,
    /// Per rule (augmented rule last), per dot position: relation of `rhs[dot..]`.
    suffix: Vec<Vec<Rel>>,
    /// Rule evaluations the nonterminal fixpoint took (set-up work, for tests).
    pub(crate) evaluations: usize,
}

impl Viability {
    /// Builds the tables; `rules` is the augmented rule list as `(lhs, rhs)`.
    pub(crate) fn new(
        g: &Grammar,
        dfas: &[ByteDfa],
        rules: &[(u32, Vec<Symbol>)],
        num_nonterminals: usize,
    ) -> Self {
        // Exit classes: the set of bytes allowed after a lexeme ending in an accepting state.
        let mut intern: HashMap<[u64; 4], usize> = HashMap::new();
        let mut class_bytes: Vec<[u64; 4]> = Vec::new();
        let mut exit_of: Vec<Vec<Option<usize>>> = Vec::new();
        for (t, dfa) in dfas.iter().enumerate() {
            let lazy = g.terminals[t].lazy;
            let per_state = (0..dfa.num_states() as u32)
                .map(|q| {
                    dfa.is_accepting(q).then(|| {
                        let mut allowed = [0u64; 4];
                        for b in 0..=255u8 {
                            if lazy || !dfa.extends(q, b) {
                                allowed[b as usize / 64] |= 1 << (b % 64);
                            }
                        }
                        let n = class_bytes.len();
                        *intern.entry(allowed).or_insert_with(|| {
                            class_bytes.push(allowed);
                            n
                        })
                    })
                })
                .collect();
            exit_of.push(per_state);
        }
        let classes = class_bytes.len();

        // Byte classes: bytes that no start transition and no exit class tells apart.
        let mut signature_class: HashMap<Vec<u32>, u16> = HashMap::new();
        let mut byte_class = [0u16; 256];
        for b in 0..256usize {
            let mut sig: Vec<u32> = dfas.iter().map(|d| d.next(d.start, b as u8)).collect();
            sig.extend(
                class_bytes
                    .iter()
                    .map(|c| (c[b / 64] >> (b % 64) & 1) as u32),
            );
            let n = signature_class.len() as u16;
            byte_class[b] = *signature_class.entry(sig).or_insert(n);
        }
        let num_byte_classes = signature_class.len();
        let mut representative = vec![0u8; num_byte_classes];
        for b in (0..256usize).rev() {
            representative[byte_class[b] as usize] = b as u8;
        }

        // Exit classes reachable from each DFA state (greedy: any accepting state on the
        // way; lazy: the lexeme ends at the first one, whose class allows every byte).
        let reach: Vec<Vec<Bits>> = dfas
            .iter()
            .enumerate()
            .map(|(t, dfa)| {
                let n = dfa.num_states();
                let mut r: Vec<Bits> = (0..n)
                    .map(|q| {
                        let mut b = bits(classes);
                        if let Some(c) = exit_of[t][q] {
                            set(&mut b, c);
                        }
                        b
                    })
                    .collect();
                if g.terminals[t].lazy {
                    let all = (0..n).find_map(|q| exit_of[t][q]);
                    for (q, rq) in r.iter_mut().enumerate() {
                        if let (true, Some(c)) = (dfa.is_live(q as u32), all) {
                            set(rq, c);
                        }
                    }
                    return r;
                }
                let mut changed = true;
                while changed {
                    changed = false;
                    for q in 1..n {
                        for b in 0..=255u8 {
                            let s = dfa.next(q as u32, b) as usize;
                            if s != 0 && s != q {
                                let (src, dst) = if s < q {
                                    let (lo, hi) = r.split_at_mut(q);
                                    (&lo[s], &mut hi[0])
                                } else {
                                    let (lo, hi) = r.split_at_mut(s);
                                    (&hi[0], &mut lo[q])
                                };
                                changed |= union_into(dst, src);
                            }
                        }
                    }
                }
                r
            })
            .collect();

        // (first byte class → exit classes) of one lexeme of each terminal.
        let lexeme_rel: Vec<Rel> = dfas
            .iter()
            .enumerate()
            .map(|(t, d)| Rel {
                nullable: false,
                by_first: representative
                    .iter()
                    .map(|&b| reach[t][d.next(d.start, b) as usize].clone())
                    .collect(),
            })
            .collect();

        // Allowed first bytes after an exit class, with any chain of ignore lexemes between.
        let class_allows = |c: usize, fc: usize| {
            let b = representative[fc] as usize;
            class_bytes[c][b / 64] >> (b % 64) & 1 != 0
        };
        let allowed_first = (0..classes)
            .map(|c| {
                let mut seen = bits(classes);
                set(&mut seen, c);
                let mut stack = vec![c];
                while let Some(e) = stack.pop() {
                    for &it in &g.ignore {
                        for fc in (0..num_byte_classes).filter(|&fc| class_allows(e, fc)) {
                            for e2 in
                                ones(&lexeme_rel[it as usize].by_first[fc]).collect::<Vec<_>>()
                            {
                                if !get(&seen, e2) {
                                    set(&mut seen, e2);
                                    stack.push(e2);
                                }
                            }
                        }
                    }
                }
                let mut af = bits(num_byte_classes);
                for e in ones(&seen) {
                    for fc in 0..num_byte_classes {
                        if class_allows(e, fc) {
                            set(&mut af, fc);
                        }
                    }
                }
                af
            })
            .collect();

        let mut v = Viability {
            classes,
            num_byte_classes,
            allowed_first,
            reach,
            suffix: Vec::new(),
            evaluations: 0,
        };

        // Fixpoint: relation of every nonterminal.
        let empty = Rel {
            nullable: false,
            by_first: vec![bits(classes); num_byte_classes],
        };
        let epsilon = Rel {
            nullable: true,
            ..empty.clone()
        };
        // A worklist over rules: a rule is evaluated again only when the relation of a
        // nonterminal in its right-hand side grew. Sweeping every rule until nothing
        // changes took one sweep per link of a chain `a0: "(" a1 ")"`, `a1: ...`: time
        // quadratic in the number of rules (issue 11).
        let mut nt_rel = vec![empty.clone(); num_nonterminals];
        let mut users: Vec<Vec<usize>> = vec![Vec::new(); num_nonterminals];
        for (r, (_, rhs)) in rules.iter().enumerate() {
            for s in rhs {
                if let Symbol::Nonterminal(n) = *s {
                    if users[n as usize].last() != Some(&r) {
                        users[n as usize].push(r);
                    }
                }
            }
        }
        // Rules in reverse order first: a rule's right-hand side is usually defined
        // after it, so its value is ready when the rule is taken.
        let mut queued = vec![true; rules.len()];
        let mut work: Vec<usize> = (0..rules.len()).collect();
        while let Some(r) = work.pop() {
            queued[r] = false;
            v.evaluations += 1;
            let (lhs, rhs) = &rules[r];
            let new = v.string_rel(rhs, &lexeme_rel, &nt_rel, &epsilon);
            let cur = &mut nt_rel[*lhs as usize];
            let mut changed = false;
            if new.nullable && !cur.nullable {
                cur.nullable = true;
                changed = true;
            }
            for (a, b) in cur.by_first.iter_mut().zip(&new.by_first) {
                changed |= union_into(a, b);
            }
            if changed {
                for &u in &users[*lhs as usize] {
                    if !queued[u] {
                        queued[u] = true;
                        work.push(u);
                    }
                }
            }
        }
        // Suffix relations right to left: each is one concatenation onto the next.
        v.suffix = rules
            .iter()
            .map(|(_, rhs)| {
                let mut out = vec![epsilon.clone(); rhs.len() + 1];
                for d in (0..rhs.len()).rev() {
                    out[d] = v.string_rel(&rhs[d..=d], &lexeme_rel, &nt_rel, &out[d + 1]);
                }
                out
            })
            .collect();
        v
    }

    fn string_rel(&self, syms: &[Symbol], lexeme: &[Rel], nt: &[Rel], epsilon: &Rel) -> Rel {
        let mut acc = epsilon.clone();
        for s in syms.iter().rev() {
            let x = match *s {
                Symbol::Terminal(t) => &lexeme[t as usize],
                Symbol::Nonterminal(n) => &nt[n as usize],
            };
            acc = self.concat(x, &acc);
        }
        acc
    }

    /// Relation of `x` followed by `y`.
    fn concat(&self, x: &Rel, y: &Rel) -> Rel {
        // follow[e1] = exit classes reachable through y when the lexeme before y exits with e1.
        let follow: Vec<Bits> = (0..self.classes)
            .map(|e1| {
                let mut f = bits(self.classes);
                for fc in ones(&self.allowed_first[e1]) {
                    union_into(&mut f, &y.by_first[fc]);
                }
                f
            })
            .collect();
        let mut by_first: Vec<Bits> = x
            .by_first
            .iter()
            .map(|exits| {
                let mut out = bits(self.classes);
                for e1 in ones(exits) {
                    union_into(&mut out, &follow[e1]);
                }
                out
            })
            .collect();
        for (fc, out) in by_first.iter_mut().enumerate() {
            if x.nullable {
                union_into(out, &y.by_first[fc]);
            }
            if y.nullable {
                union_into(out, &x.by_first[fc]);
            }
        }
        Rel {
            nullable: x.nullable && y.nullable,
            by_first,
        }
    }

    /// An empty set of exit classes.
    pub(crate) fn no_classes(&self) -> Bits {
        bits(self.classes)
    }

    /// Every exit class (what the end of input accepts after the last lexeme).
    pub(crate) fn all_classes(&self) -> Bits {
        let mut b = bits(self.classes);
        for c in 0..self.classes {
            set(&mut b, c);
        }
        b
    }

    /// Given the continuation sets after an item's rule (`after_any`: completions,
    /// `after_nonempty`: completions with at least one more non-ignore lexeme), the
    /// same two sets before the suffix `rhs[dot..]` of `rule`: the exit classes of the
    /// preceding lexeme from which a valid completion exists.
    pub(crate) fn before_suffix(
        &self,
        rule: usize,
        dot: usize,
        after_any: &Bits,
        after_nonempty: &Bits,
    ) -> (Bits, Bits) {
        let rel = &self.suffix[rule][dot];
        let mut firsts = bits(self.num_byte_classes);
        for (fc, exits) in rel.by_first.iter().enumerate() {
            if intersects(exits, after_any) {
                set(&mut firsts, fc);
            }
        }
        let mut through = bits(self.classes);
        for (e, af) in self.allowed_first.iter().enumerate() {
            if intersects(af, &firsts) {
                set(&mut through, e);
            }
        }
        let mut any = through.clone();
        let mut nonempty = through;
        if rel.nullable {
            union_into(&mut any, after_any);
            union_into(&mut nonempty, after_nonempty);
        }
        (any, nonempty)
    }

    /// Whether a lexeme of terminal `t` now in DFA state `state` can end with an exit
    /// class in `targets`.
    pub(crate) fn lexeme_viable(&self, t: u32, state: u32, targets: &Bits) -> bool {
        intersects(&self.reach[t as usize][state as usize], targets)
    }
}
