//! A byte-level Earley recognizer with per-terminal DFAs (DESIGN.md §1, directly).
//!
//! Earley items live at *lexeme boundaries*; lexemes in progress are carried as
//! `(terminal, DFA state, origin boundary)`. The greedy rule "the next byte must not
//! extend a greedy lexeme that ends here" needs the byte after the lexeme, so a lexeme
//! is only ended — and the Earley set at that boundary only built — when the next byte
//! arrives (or, for acceptance, at the end of input, where no condition applies).
//!
//! `%ignore` lexemes are transparent: an ignore lexeme from boundary `k` to `p` makes
//! the items of set `k` available again at `p`. They may start only where a lexeme
//! has ended (or at 0 with `allow_initial_skip`) and only where some terminal is still
//! expected, so they are never trailing.
//!
//! All state is kept in append-only arenas indexed by byte position, so popping bytes
//! (token-trie walks, rollback) is a truncation.

use super::viability::{union_into, Bits, Viability};
use super::ReferenceError;
use stackmask_formats::{ByteDfa, Grammar, Symbol};
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// The grammar in the flat form the recognizer walks, augmented with `S' → S`.
#[derive(Debug)]
pub(crate) struct EarleyGrammar {
    dfas: Vec<ByteDfa>,
    lazy: Vec<bool>,
    ignore: Vec<u32>,
    allow_initial_skip: bool,
    lhs: Vec<u32>,
    rhs_start: Vec<u32>,
    syms: Vec<Symbol>,
    rules_by_lhs: Vec<Vec<u32>>,
    nullable: Vec<bool>,
    start_rule: u32,
    viability: Viability,
}

impl EarleyGrammar {
    /// Rule evaluations the set-up's fixpoint took (see [`super::ReferenceEngine::setup_work`]).
    pub(crate) fn setup_work(&self) -> usize {
        self.viability.evaluations
    }

    pub(crate) fn new(g: &Grammar, dfas: Vec<ByteDfa>) -> Result<Self, ReferenceError> {
        let bad = |m: String| Err(ReferenceError::InvalidGrammar(m));
        if dfas.len() != g.terminals.len() {
            return bad(format!(
                "{} terminals but {} DFAs",
                g.terminals.len(),
                dfas.len()
            ));
        }
        let nt = g.nonterminals.len() as u32;
        if g.start >= nt {
            return bad("start symbol out of range".into());
        }
        for r in &g.rules {
            if r.lhs >= nt {
                return bad("rule left-hand side out of range".into());
            }
            for s in &r.rhs {
                match *s {
                    Symbol::Terminal(t) if t as usize >= dfas.len() => {
                        return bad("terminal out of range".into())
                    }
                    Symbol::Nonterminal(n) if n >= nt => {
                        return bad("nonterminal out of range".into())
                    }
                    _ => {}
                }
            }
        }
        if g.ignore.iter().any(|&t| t as usize >= dfas.len()) {
            return bad("ignore terminal out of range".into());
        }
        let mut lhs = Vec::new();
        let mut rhs_start = vec![0u32];
        let mut syms = Vec::new();
        let mut rules_by_lhs = vec![Vec::new(); nt as usize + 1];
        let augmented = std::iter::once((nt, vec![Symbol::Nonterminal(g.start)]));
        for (i, (l, rhs)) in g
            .rules
            .iter()
            .map(|r| (r.lhs, r.rhs.clone()))
            .chain(augmented)
            .enumerate()
        {
            lhs.push(l);
            syms.extend(rhs);
            rhs_start.push(syms.len() as u32);
            rules_by_lhs[l as usize].push(i as u32);
        }
        let mut nullable = g.nullable_nonterminals();
        nullable.push(nullable[g.start as usize]);
        let flat_rules: Vec<(u32, Vec<Symbol>)> = (0..lhs.len())
            .map(|r| {
                (
                    lhs[r],
                    syms[rhs_start[r] as usize..rhs_start[r + 1] as usize].to_vec(),
                )
            })
            .collect();
        let viability = Viability::new(g, &dfas, &flat_rules, nt as usize + 1);
        Ok(EarleyGrammar {
            viability,
            lazy: g.terminals.iter().map(|t| t.lazy).collect(),
            dfas,
            ignore: g.ignore.clone(),
            allow_initial_skip: g.allow_initial_skip,
            lhs,
            rhs_start,
            syms,
            rules_by_lhs,
            nullable,
            start_rule: g.rules.len() as u32,
        })
    }

    #[inline]
    fn next_symbol(&self, it: Item) -> Option<Symbol> {
        let i = self.rhs_start[it.rule as usize] + it.dot;
        (i < self.rhs_start[it.rule as usize + 1]).then(|| self.syms[i as usize])
    }

    /// Whether greedy/lazy lexing lets a lexeme of `t` in DFA state `state` end before
    /// `next` (`None` = end of input).
    #[inline]
    fn may_end(&self, t: u32, state: u32, next: Option<u8>) -> bool {
        let dfa = &self.dfas[t as usize];
        dfa.is_accepting(state)
            && (self.lazy[t as usize] || next.is_none_or(|b| !dfa.extends(state, b)))
    }
}

/// An Earley item `rule` with the dot before `rhs[dot]`, started at boundary `origin`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Item {
    rule: u32,
    dot: u32,
    origin: u32,
}

impl Item {
    fn advance(self) -> Item {
        Item {
            dot: self.dot + 1,
            ..self
        }
    }
}

/// A lexeme in progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Lexeme {
    terminal: u32,
    state: u32,
    origin: u32,
    ignore: bool,
    /// Index into `targets`: the exit classes this lexeme may end with and still
    /// leave a completion.
    target: u32,
}

/// FxHash-style hasher: items are three small integers, SipHash is needless here.
#[derive(Default, Clone, Copy)]
struct ItemHasher(u64);

impl Hasher for ItemHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type ItemSet = HashSet<Item, BuildHasherDefault<ItemHasher>>;

/// The Earley recognizer state; see the module docs.
#[derive(Clone, Debug)]
pub struct EarleyRecognizer {
    g: Arc<EarleyGrammar>,
    /// All Earley items; set `p` is `items[sets[p].0..sets[p].1]`.
    items: Vec<Item>,
    /// One Earley set per consumed byte position (empty where no lexeme ended).
    sets: Vec<(u32, u32)>,
    /// All lexemes; those in progress after `p` bytes are `lexemes[frames[p]..frames[p + 1]]`.
    lexemes: Vec<Lexeme>,
    frames: Vec<u32>,
    /// Per set: for each nonterminal expected there, the continuation sets (any /
    /// non-empty) after it (see [`Viability::before_suffix`]).
    conts: Vec<Vec<(u32, Bits, Bits)>>,
    /// Exit-class targets of lexemes; `target_marks[p]` is the length before byte `p`.
    targets: Vec<Bits>,
    target_marks: Vec<u32>,
    scratch: Vec<Item>,
    seen: ItemSet,
    expected: Vec<bool>,
}

impl EarleyRecognizer {
    pub(crate) fn new(g: Arc<EarleyGrammar>) -> Self {
        let n = g.dfas.len();
        EarleyRecognizer {
            g,
            items: Vec::new(),
            sets: Vec::new(),
            lexemes: Vec::new(),
            frames: vec![0, 0],
            conts: Vec::new(),
            targets: Vec::new(),
            target_marks: Vec::new(),
            scratch: Vec::new(),
            seen: ItemSet::default(),
            expected: vec![false; n],
        }
    }

    fn frame(&self, p: usize) -> std::ops::Range<usize> {
        self.frames[p] as usize..self.frames[p + 1] as usize
    }

    fn set(&self, p: usize) -> &[Item] {
        let (s, e) = self.sets[p];
        &self.items[s as usize..e as usize]
    }

    /// The kernel of the Earley set at boundary `p` (= bytes consumed) given the next
    /// byte (`None` = end of input): the items that the lexemes ending here produce.
    fn kernel(&self, next: Option<u8>, with_ignore: bool, out: &mut Vec<Item>) {
        let p = self.sets.len();
        out.clear();
        if p == 0 {
            out.push(Item {
                rule: self.g.start_rule,
                dot: 0,
                origin: 0,
            });
            return;
        }
        for lx in &self.lexemes[self.frame(p)] {
            if !self.g.may_end(lx.terminal, lx.state, next) {
                continue;
            }
            let origin = self.set(lx.origin as usize);
            if lx.ignore {
                if with_ignore {
                    out.extend_from_slice(origin);
                }
            } else {
                let t = Symbol::Terminal(lx.terminal);
                out.extend(
                    origin
                        .iter()
                        .filter(|&&it| self.g.next_symbol(it) == Some(t))
                        .map(|it| it.advance()),
                );
            }
        }
    }

    /// Completes `work` (the kernel of set `p`) to a full Earley set in place: predict,
    /// complete, and step over nullable nonterminals at prediction time (Aycock &
    /// Horspool), so completions of items that started at `p` itself are never needed.
    fn close(
        g: &EarleyGrammar,
        items: &[Item],
        sets: &[(u32, u32)],
        p: u32,
        work: &mut Vec<Item>,
        seen: &mut ItemSet,
    ) {
        seen.clear();
        work.retain(|&it| seen.insert(it));
        let mut i = 0;
        while i < work.len() {
            let it = work[i];
            i += 1;
            match g.next_symbol(it) {
                None if it.origin != p => {
                    let a = Some(Symbol::Nonterminal(g.lhs[it.rule as usize]));
                    let (s, e) = sets[it.origin as usize];
                    for &parent in &items[s as usize..e as usize] {
                        if g.next_symbol(parent) == a && seen.insert(parent.advance()) {
                            work.push(parent.advance());
                        }
                    }
                }
                Some(Symbol::Nonterminal(a)) => {
                    for &r in &g.rules_by_lhs[a as usize] {
                        let predicted = Item {
                            rule: r,
                            dot: 0,
                            origin: p,
                        };
                        if seen.insert(predicted) {
                            work.push(predicted);
                        }
                    }
                    if g.nullable[a as usize] && seen.insert(it.advance()) {
                        work.push(it.advance());
                    }
                }
                _ => {}
            }
        }
    }
}

impl EarleyRecognizer {
    /// Continuation sets before `rhs[dot..]` of an item of `rule` started at `origin`,
    /// while set `p` is being built with continuation table `current`.
    fn item_cont(
        &self,
        rule: u32,
        dot: u32,
        origin: u32,
        p: usize,
        current: &[(u32, Bits, Bits)],
    ) -> (Bits, Bits) {
        let v = &self.g.viability;
        let (any, nonempty);
        let after = if rule == self.g.start_rule {
            any = v.all_classes();
            nonempty = v.no_classes();
            (&any, &nonempty)
        } else {
            let a = self.g.lhs[rule as usize];
            let table = if origin as usize == p {
                current
            } else {
                &self.conts[origin as usize][..]
            };
            match table.iter().find(|e| e.0 == a) {
                Some((_, x, y)) => (x, y),
                None => {
                    any = v.no_classes();
                    nonempty = v.no_classes();
                    (&any, &nonempty)
                }
            }
        };
        v.before_suffix(rule as usize, dot as usize, after.0, after.1)
    }

    /// The continuation table of set `p` (items `work`): a fixpoint, because items
    /// predicted at `p` are their own parents' parents under left recursion.
    fn set_conts(&self, work: &[Item], p: usize) -> Vec<(u32, Bits, Bits)> {
        let v = &self.g.viability;
        let mut table: Vec<(u32, Bits, Bits)> = Vec::new();
        for &it in work {
            if let Some(Symbol::Nonterminal(a)) = self.g.next_symbol(it) {
                if !table.iter().any(|e| e.0 == a) {
                    table.push((a, v.no_classes(), v.no_classes()));
                }
            }
        }
        let mut changed = true;
        while changed {
            changed = false;
            for &it in work {
                if let Some(Symbol::Nonterminal(a)) = self.g.next_symbol(it) {
                    let (any, nonempty) = self.item_cont(it.rule, it.dot + 1, it.origin, p, &table);
                    let entry = table
                        .iter_mut()
                        .find(|e| e.0 == a)
                        .expect("entry created above");
                    changed |= union_into(&mut entry.1, &any);
                    changed |= union_into(&mut entry.2, &nonempty);
                }
            }
        }
        table
    }
}

impl EarleyRecognizer {
    /// Starts a lexeme of `t` at boundary `p` with byte `b` if that leaves it alive and
    /// able to end in one of the exit classes in `target`.
    fn start_lexeme(&mut self, t: u32, b: u8, p: usize, ignore: bool, target: Bits) {
        let dfa = &self.g.dfas[t as usize];
        let state = dfa.next(dfa.start, b);
        if state != ByteDfa::DEAD && self.g.viability.lexeme_viable(t, state, &target) {
            let target_index = self.targets.len() as u32;
            self.lexemes.push(Lexeme {
                terminal: t,
                state,
                origin: p as u32,
                ignore,
                target: target_index,
            });
            self.targets.push(target);
        }
    }
}

impl crate::ByteRecognizer for EarleyRecognizer {
    fn push_byte(&mut self, b: u8) -> bool {
        let p = self.sets.len();
        let (items_before, lexemes_before) = (self.items.len(), self.lexemes.len());

        // 1. The Earley set at boundary p, now that the next byte is known.
        let mut work = std::mem::take(&mut self.scratch);
        self.kernel(Some(b), true, &mut work);
        if !work.is_empty() {
            Self::close(
                &self.g,
                &self.items,
                &self.sets,
                p as u32,
                &mut work,
                &mut self.seen,
            );
        }
        let table = self.set_conts(&work, p);
        self.target_marks.push(self.targets.len() as u32);

        // 2. Lexemes starting at p with byte b, kept only if they can still end in an
        //    exit class that leaves a completion.
        let g = self.g.clone();
        for &it in &work {
            if let Some(Symbol::Terminal(t)) = self.g.next_symbol(it) {
                if std::mem::replace(&mut self.expected[t as usize], true) {
                    continue;
                }
                let mut target = g.viability.no_classes();
                for &j in &work {
                    if self.g.next_symbol(j) == Some(Symbol::Terminal(t)) {
                        union_into(
                            &mut target,
                            &self.item_cont(j.rule, j.dot + 1, j.origin, p, &table).0,
                        );
                    }
                }
                self.start_lexeme(t, b, p, false, target);
            }
        }
        for &it in &work {
            if let Some(Symbol::Terminal(t)) = self.g.next_symbol(it) {
                self.expected[t as usize] = false;
            }
        }
        if !work.is_empty() && !self.g.ignore.is_empty() && (p > 0 || self.g.allow_initial_skip) {
            let mut target = g.viability.no_classes();
            for &j in &work {
                union_into(
                    &mut target,
                    &self.item_cont(j.rule, j.dot, j.origin, p, &table).1,
                );
            }
            for &t in &g.ignore {
                self.start_lexeme(t, b, p, true, target.clone());
            }
        }
        self.items.extend_from_slice(&work);
        self.sets
            .push((items_before as u32, self.items.len() as u32));
        self.conts.push(table);
        self.scratch = work;

        // 3. Lexemes in progress that go on with b (a greedy one that b extends did
        //    not end above; a lazy one that matched has ended).
        for i in self.frame(p) {
            let lx = self.lexemes[i];
            let dfa = &self.g.dfas[lx.terminal as usize];
            if self.g.lazy[lx.terminal as usize] && dfa.is_accepting(lx.state) {
                continue;
            }
            let s = dfa.next(lx.state, b);
            if s != ByteDfa::DEAD
                && self
                    .g
                    .viability
                    .lexeme_viable(lx.terminal, s, &self.targets[lx.target as usize])
            {
                self.lexemes.push(Lexeme { state: s, ..lx });
            }
        }

        if self.lexemes.len() == lexemes_before {
            self.items.truncate(items_before);
            self.sets.pop();
            self.conts.pop();
            let mark = self.target_marks.pop().expect("pushed above");
            self.targets.truncate(mark as usize);
            return false;
        }
        self.frames.push(self.lexemes.len() as u32);
        true
    }

    fn pop_bytes(&mut self, n: usize) {
        // The trait's documented panic, with a message instead of an underflow.
        assert!(
            n <= self.sets.len(),
            "pop_bytes({n}) with only {} bytes consumed",
            self.sets.len()
        );
        let m = self.sets.len() - n;
        if n == 0 {
            return;
        }
        self.items.truncate(self.sets[m].0 as usize);
        self.sets.truncate(m);
        self.conts.truncate(m);
        self.targets.truncate(self.target_marks[m] as usize);
        self.target_marks.truncate(m);
        self.lexemes.truncate(self.frames[m + 1] as usize);
        self.frames.truncate(m + 2);
    }

    fn bytes_consumed(&self) -> usize {
        self.sets.len()
    }

    fn is_accepting(&self) -> bool {
        let mut work = Vec::new();
        self.kernel(None, false, &mut work);
        let mut seen = ItemSet::default();
        Self::close(
            &self.g,
            &self.items,
            &self.sets,
            self.sets.len() as u32,
            &mut work,
            &mut seen,
        );
        let done = Item {
            rule: self.g.start_rule,
            dot: 1,
            origin: 0,
        };
        work.contains(&done)
    }
}
