#!/usr/bin/env python3
"""Check the shipped grammars with Python, independently of the Rust code.

Two recognizers are run on every document:

* ``lark``   -- Python Lark, ``Lark(text, parser='earley', lexer='dynamic')``. Its lexing
  is not stackmask's: it %ignores anywhere (also before the first and after the last
  lexeme) and it matches each terminal with Python ``re`` leftmost-first semantics.
* ``design`` -- a small recognizer written here that follows DESIGN.md §1 exactly
  (per-terminal greedy lexing with one character of lookahead, %ignore only between two
  lexemes, all readings kept) on top of Lark's own grammar loader (rules, terminals and
  %import are taken from ``Lark``). Terminal liveness ("can this prefix still be extended
  to a match?") uses the ``regex`` module's partial matching. It works on characters, not
  bytes: the only difference from §1 is that the lookahead is the next character rather
  than its first byte, which cannot matter for these grammars (every terminal that can
  continue with a non-ASCII character can also continue with all of them).

It also reports LALR(1) conflicts (Lark's LALR analysis of Lark's BNF expansion; the
Rust normalisation expands EBNF differently, so counts are indicative only).

Usage: python3 grammars/tools/check_grammars.py [--corpus /work/shared/corpus] [-v]
Needs: pip install lark regex interegular
"""

import argparse
import collections
import glob
import os
import sys

import regex
from lark import Lark
from lark.common import ParserConf
from lark.parsers.lalr_analysis import LALR_Analyzer

HERE = os.path.dirname(os.path.abspath(__file__))
GRAMMARS = os.path.dirname(HERE)

sys.setrecursionlimit(100000)


# ---------------------------------------------------------------------------------------
# DESIGN §1 recognizer
# ---------------------------------------------------------------------------------------

class DesignRecognizer:
    def __init__(self, lark_inst, allow_initial_skip=False):
        self.allow_initial_skip = allow_initial_skip
        self.ignore = set(lark_inst.ignore_tokens)
        self.terms = []
        for t in lark_inst.terminals:
            src = t.pattern.to_regexp()
            self.terms.append((t.name, regex.compile(src)))
        self.rules = [(r.origin.name, tuple(s.name for s in r.expansion)) for r in lark_inst.rules]
        self.term_names = {n for n, _ in self.terms}
        self.by_origin = collections.defaultdict(list)
        for idx, (o, _) in enumerate(self.rules):
            self.by_origin[o].append(idx)
        # nullable nonterminals
        self.nullable = set()
        changed = True
        while changed:
            changed = False
            for o, exp in self.rules:
                if o not in self.nullable and all(s in self.nullable for s in exp):
                    self.nullable.add(o)
                    changed = True

    def candidates(self, s, i):
        """All lexemes (terminal, end) starting at i that satisfy the greedy rule of §1."""
        n = len(s)
        out = []
        for name, pat in self.terms:
            if pat.fullmatch(s[i:i + 1], partial=True) is None:
                continue
            # liveness is prefix-closed: find J = largest j with s[i:j] live.
            lo = i + 1  # live
            step = 1
            hi = None  # first known dead
            while True:
                j = lo + step
                if j > n:
                    j = n
                    if j == lo:
                        break
                if pat.fullmatch(s[i:j], partial=True) is not None:
                    lo = j
                    if j == n:
                        break
                    step *= 2
                else:
                    hi = j
                    break
            if hi is not None:
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    if pat.fullmatch(s[i:mid], partial=True) is not None:
                        lo = mid
                    else:
                        hi = mid
            J = lo
            if pat.fullmatch(s[i:J]) is not None:
                out.append((name, J))
        return out

    def recognize(self, s):
        """Returns (accepted, furthest position reached)."""
        n = len(s)
        rules = self.rules
        sets = {}  # key = pos*2 + ign -> dict(items=set, by_next=defaultdict(list))

        def get(key):
            st = sets.get(key)
            if st is None:
                st = {'items': set(), 'by_next': collections.defaultdict(list), 'todo': []}
                sets[key] = st
            return st

        def add(st, item):
            if item in st['items']:
                return
            st['items'].add(item)
            st['todo'].append(item)
            r, dot, _ = item
            exp = rules[r][1]
            if dot < len(exp):
                st['by_next'][exp[dot]].append(item)

        start = get(0)
        for r in self.by_origin['start']:
            add(start, (r, 0, 0))
        furthest = 0
        accepted = False
        for pos in range(n + 1):
            for ign in (0, 1):
                key = pos * 2 + ign
                st = sets.get(key)
                if st is None:
                    continue
                furthest = pos
                # closure: predict + complete
                todo = st['todo']
                while todo:
                    r, dot, org = todo.pop()
                    origin, exp = rules[r]
                    if dot < len(exp):
                        sym = exp[dot]
                        if sym not in self.term_names:
                            for r2 in self.by_origin[sym]:
                                add(st, (r2, 0, key))
                            if sym in self.nullable:
                                add(st, (r, dot + 1, org))
                    else:
                        ost = sets[org]
                        for (pr, pdot, porg) in list(ost['by_next'].get(origin, ())):
                            add(st, (pr, pdot + 1, porg))
                if pos == n:
                    if ign == 0:
                        for (r, dot, org) in st['items']:
                            if org == 0 and rules[r][0] == 'start' and dot == len(rules[r][1]):
                                accepted = True
                    continue
                scan_ready = None
                for (t, j) in self.candidates(s, pos):
                    if t in self.ignore:
                        if pos == 0 and not self.allow_initial_skip:
                            continue
                        if scan_ready is None:
                            scan_ready = [it for it in st['items']
                                          if it[1] < len(rules[it[0]][1])
                                          and rules[it[0]][1][it[1]] in self.term_names]
                        dst = get(j * 2 + 1)
                        for it in scan_ready:
                            add(dst, it)
                        dst['todo'].clear()  # scan-ready items need no closure
                    else:
                        items = st['by_next'].get(t)
                        if not items:
                            continue
                        dst = get(j * 2)
                        for (r, dot, org) in items:
                            add(dst, (r, dot + 1, org))
                del st['todo']
        return accepted, furthest


# ---------------------------------------------------------------------------------------
# LALR conflicts
# ---------------------------------------------------------------------------------------

def lalr_conflicts(lark_inst, show=False):
    conf = ParserConf(lark_inst.rules, {}, ['start'])
    a = LALR_Analyzer(conf, debug=False, strict=False)
    a.compute_lr0_states()
    a.compute_reads_relations()
    a.compute_includes_lookback()
    a.compute_lookaheads()
    sr = collections.Counter()
    rr = collections.Counter()
    for itemset in a.lr0_itemsets:
        for la, rs in itemset.lookaheads.items():
            if len(rs) > 1:
                rr[la.name] += 1
            if la in itemset.transitions:
                sr[la.name] += 1
            if show and (len(rs) > 1 or la in itemset.transitions):
                print('conflict on', la.name, 'reduce', [str(r) for r in rs])
                for item in itemset.closure:
                    print('     ', item)
    return len(a.lr0_itemsets), sr, rr


def lalr_conflicts_epsilon_rules(text, show=False):
    """Same, but with every `x?`, `x*` and `x+` turned into a nonterminal of its own
    (`opt: | x`, `star: | star x`, `plus: x | plus x`; one per distinct x), the other usual
    way to normalise EBNF. Lark itself splices `?` and `*` into the parent rule as alternatives, which can
    hide conflicts that an epsilon-rule normalisation shows (and vice versa)."""
    from lark import load_grammar as lg
    inline_args = lg.inline_args

    @inline_args
    class EpsilonEBNF(lg.EBNF_to_BNF):
        def expr(self, rule, op, *args):
            if op.value == '~':
                mn, mx = (int(args[0]),) * 2 if len(args) == 1 else map(int, args)
                return self._generate_repeats(rule, mn, mx)
            key = ('epsilon-variant', op.value, rule)
            if key in self.rules_cache:
                return self.rules_cache[key]
            name = self._name_rule({'?': 'opt', '*': 'star', '+': 'plus'}[op.value])
            t = lg.NonTerminal(name)
            self.rules_cache[key] = t
            empty = lg.ST('expansion', [])
            if op.value == '?':
                alts = [lg.ST('expansion', [rule]), empty]
            elif op.value == '*':
                alts = [empty, lg.ST('expansion', [t, rule])]
            else:
                alts = [lg.ST('expansion', [rule]), lg.ST('expansion', [t, rule])]
            self.new_rules.append((name, lg.ST('expansions', alts), self.rule_options))
            return t

    orig = lg.EBNF_to_BNF
    lg.EBNF_to_BNF = EpsilonEBNF
    try:
        inst = Lark(text, parser='earley', lexer='dynamic')
    finally:
        lg.EBNF_to_BNF = orig
    return lalr_conflicts(inst, show)


# ---------------------------------------------------------------------------------------

def load(name):
    text = open(os.path.join(GRAMMARS, name + '.lark'), encoding='utf-8').read()
    return Lark(text, parser='earley', lexer='dynamic')


def read_utf8(path):
    data = open(path, 'rb').read()
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError:
        return None


def lark_accepts(parser, text):
    try:
        parser.parse(text)
        return True, ''
    except Exception as e:  # noqa: BLE001 -- any failure is a rejection
        msg = str(e).strip().splitlines()
        return False, (type(e).__name__ + ': ' + (msg[0] if msg else ''))[:160]


def check_samples(name, parser, rec, verbose):
    rows = []
    ok = True
    # edge_ignore/: %ignore'd text before the first or after the last lexeme -- not a
    # sentence under DESIGN §1, but Python Lark ignores it anywhere and accepts.
    for sub, want, want_lark in (('', True, True), ('invalid', False, False),
                                 ('edge_ignore', False, True)):
        d = os.path.join(GRAMMARS, 'samples', name, sub)
        for path in sorted(glob.glob(os.path.join(d, '*'))):
            if os.path.isdir(path) or path.endswith('.md'):
                continue
            text = read_utf8(path)
            la, lmsg = lark_accepts(parser, text)
            da, far = rec.recognize(text)
            good = (la == want_lark) and (da == want)
            ok &= good
            rows.append((os.path.relpath(path, GRAMMARS), want, la, da, far, lmsg))
            if verbose or not good:
                print(f"  {'ok ' if good else 'BAD'} {os.path.relpath(path, GRAMMARS)}: "
                      f"want={'accept' if want else 'reject'}{'' if want == want_lark else ' (lark: accept)'} lark={la} design={da} "
                      f"(design reached {far}/{len(text)}) {lmsg if not la else ''}")
    print(f"{name}: {len(rows)} sample documents, {'all as expected' if ok else 'MISMATCHES'}")
    return ok


def json_suite(parser, rec, corpus, verbose):
    d = os.path.join(corpus, 'JSONTestSuite', 'test_parsing')
    res = collections.Counter()
    disagreements = []
    for path in sorted(glob.glob(os.path.join(d, '*.json'))):
        base = os.path.basename(path)
        kind = base[0]
        text = read_utf8(path)
        if text is None:
            res[(kind, 'not-utf8')] += 1
            continue
        la, lmsg = lark_accepts(parser, text)
        da, _ = rec.recognize(text)
        res[(kind, 'lark', la)] += 1
        res[(kind, 'design', da)] += 1
        want = {'y': True, 'n': False}.get(kind)
        if want is not None and (la != want or da != want):
            disagreements.append((base, want, la, da, lmsg))
        if kind == 'i':
            res[('i-detail', base, la, da)] += 1
    print('JSONTestSuite:')
    for k in sorted(res, key=str):
        if k[0] != 'i-detail':
            print('  ', k, res[k])
    for k in sorted(res, key=str):
        if k[0] == 'i-detail':
            print('   i:', k[1], 'lark=', k[2], 'design=', k[3])
    for row in disagreements:
        print('  DISAGREE', row)
    return not disagreements


def sqlfluff(parser, rec, corpus, verbose):
    import re as _re
    d = os.path.join(corpus, 'sqlfluff', 'test', 'fixtures', 'dialects', 'ansi')
    acc_l = acc_d = 0
    rows = []
    files = sorted(glob.glob(os.path.join(d, '*.sql')))
    for path in files:
        text = read_utf8(path)
        # DESIGN §1 allows no %ignore before the first / after the last lexeme: strip
        # leading and trailing whitespace and comments for the design recognizer.
        stripped = text
        while True:
            s2 = _re.sub(r'\A(\s+|--[^\n]*|/\*(.|\n)*?\*/)', '', stripped)
            s2 = _re.sub(r'(\s+|--[^\n]*)\Z', '', s2)
            if s2 == stripped:
                break
            stripped = s2
        la, lmsg = lark_accepts(parser, text)
        da, far = rec.recognize(stripped)
        acc_l += la
        acc_d += da
        rows.append((os.path.basename(path), la, da, lmsg))
    disagree = [r[0] for r in rows if r[1] != r[2]]
    print(f"sqlfluff ansi: {len(files)} files, lark accepts {acc_l}, design accepts {acc_d}, "
          f"disagreements: {disagree or 'none'}")
    for r in rows:
        if verbose or r[1] or r[2]:
            print('   ', 'ACCEPT' if r[1] else 'reject', 'design=' + str(r[2]), r[0],
                  '' if r[1] else r[3][:100])
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--corpus', default='/work/shared/corpus')
    ap.add_argument('-v', '--verbose', action='store_true')
    ap.add_argument('--only', nargs='*')
    args = ap.parse_args()
    all_ok = True
    for name in args.only or ['json', 'expr', 'sql', 'c']:
        parser = load(name)
        nstates, sr, rr = lalr_conflicts(parser)
        print(f"{name}: LALR(1) states={nstates}, shift/reduce conflicts={sum(sr.values())} "
              f"{dict(sr)}, reduce/reduce conflicts={sum(rr.values())} {dict(rr)}")
        text = open(os.path.join(GRAMMARS, name + '.lark'), encoding='utf-8').read()
        nstates, sr, rr = lalr_conflicts_epsilon_rules(text)
        print(f"{name}: with epsilon-rule EBNF expansion: LALR(1) states={nstates}, "
              f"shift/reduce={sum(sr.values())} {dict(sr)}, "
              f"reduce/reduce={sum(rr.values())} {dict(rr)}")
        rec = DesignRecognizer(parser)
        all_ok &= check_samples(name, parser, rec, args.verbose)
        if name == 'json' and os.path.isdir(args.corpus):
            all_ok &= json_suite(parser, rec, args.corpus, args.verbose)
        if name == 'sql' and os.path.isdir(args.corpus):
            sqlfluff(parser, rec, args.corpus, args.verbose)
    print('ALL OK' if all_ok else 'SOME CHECKS FAILED')
    return 0 if all_ok else 1


if __name__ == '__main__':
    sys.exit(main())
