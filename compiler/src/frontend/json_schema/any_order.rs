//! Object members in any order ([`super::PropertyOrder::Any`]).
//!
//! The members an object may have fall in two kinds: *named* members (declared
//! properties, required names declared nowhere, names a presence condition mentions),
//! each written at most once, and *additional* members (a key terminal whose names
//! exclude every named one), written any number of times. In any order, what the
//! grammar must remember after a prefix of members is exactly the set of named members
//! written so far (to forbid a repeat, to know which required ones remain and whether
//! the presence condition can still hold) and, when `minProperties`/`maxProperties`
//! count additional members too, how many members were written. One nonterminal per
//! reachable (set, count) state, made by a search from the empty object:
//!
//! ```text
//! M(S, c) → ε                               if S holds every required name, the
//!                                           presence condition holds on S, c ≥ min
//!         | [","] key_i ":" V_i M(S+i, c+1)  for each named i ∉ S
//!         | [","] extra ":" V   M(S, c+1)    for each additional member kind
//! ```
//!
//! Every alternative starts with a different key terminal, so the grammar is
//! deterministic (no GLR fork chooses an order). Its size is exponential in the number
//! of named members (2^n sets), so the search stops at [`MAX_ANY_ORDER_STATES`] states
//! and the caller reports the limit (or, lenient, falls back to declared order).

use super::presence::Assignments;
use super::SchemaIssue;
use stackmask_formats::Symbol;
use std::collections::{HashMap, HashSet};

/// Limit on the member states of one any-order object (one nonterminal each). An
/// object of 11 optional names with additional members has 2^11 + 1 states and fits;
/// 12 names (4,097) do not. Measured on MaskBench (`schema_order_cost` example, dev
/// profile, Qwen2 vocabulary): each state costs about 2 × (names still to write)
/// LR(1) states, and the compiled mask path grows with them: objects of up to 1,032
/// states took up to 9× the declared-order compile (42 s against 4.8 s), one of 4,356
/// states 30× (383 s against 12.4 s).
pub const MAX_ANY_ORDER_STATES: usize = 2_100;

/// Where grammar symbols and rules go (the schema grammar builder).
pub trait RuleSink {
    /// A new nonterminal named `name` (an error at the grammar size limit).
    fn nonterminal(&mut self, name: &str) -> Result<u32, SchemaIssue>;
    /// Adds the rule `lhs → rhs`.
    fn add_rule(&mut self, lhs: u32, rhs: Vec<Symbol>);
    /// An object past [`MAX_ANY_ORDER_STATES`]: an error, or (lenient) `Ok` after
    /// listing a warning, and the object is written in declared order.
    fn over_limit(&mut self, issue: SchemaIssue) -> Result<(), SchemaIssue>;
}

/// A named member: written at most once.
#[derive(Clone, Copy)]
pub struct Named {
    /// The key literal.
    pub key: Symbol,
    /// The value's nonterminal.
    pub value: u32,
    /// The name's bit in the presence assignments (0 if no condition mentions it).
    pub bit: u32,
    /// The member must be present.
    pub required: bool,
}

/// What [`build`] made.
#[derive(Debug, PartialEq, Eq)]
pub enum Built {
    /// The nonterminal of the members between `{` and `}`.
    Members(u32),
    /// No member list is valid: no object at all.
    NoObject,
    /// Past the limit, lenient: nothing built, the caller writes declared order.
    DeclaredOrder,
}

/// One object's members, as the any-order automaton needs them.
pub struct Members {
    /// Named members (at most 63: bit `i` of a state is `named[i]`).
    pub named: Vec<Named>,
    /// Additional member kinds: key terminal (no named key matches it), value nonterminal.
    pub extras: Vec<(Symbol, u32)>,
    /// The satisfying assignments of the presence condition (bits as in `named`);
    /// `[0]` when there is no condition.
    pub assignments: Assignments,
    /// Members at least (`minProperties`).
    pub min: u64,
    /// Members at most (`maxProperties`).
    pub max: Option<u64>,
    /// The `,` and `:` terminals.
    pub comma: Symbol,
    /// See `comma`.
    pub colon: Symbol,
}

/// A state: the named members written (bit set), the members written (capped where
/// only "at least `min`" matters).
type State = (u64, u64);

/// Builds the members of an object in any order. `pointer`: the object's (it names
/// the nonterminals and the limit error).
pub fn build(sink: &mut dyn RuleSink, m: &Members, pointer: &str) -> Result<Built, SchemaIssue> {
    let Some(states) = explore(m) else {
        sink.over_limit(SchemaIssue {
            pointer: pointer.to_string(),
            keyword: None,
            unsupported: false,
            message: format!(
                "members in any order: an object of {} named members needs more than {MAX_ANY_ORDER_STATES} member states (the limit on any-order objects, one nonterminal per set of names written); use `--property-order declared`",
                m.named.len()
            ),
        })?;
        return Ok(Built::DeclaredOrder);
    };
    if states.is_empty() {
        return Ok(Built::NoObject);
    }
    let mut nts = HashMap::with_capacity(states.len());
    for &(s, c) in &states {
        let x = sink.nonterminal(&format!("any-order members@{pointer}#{s:x}.{c}"))?;
        nts.insert((s, c), x);
    }
    // One nonterminal per member kind, with and without the comma before it, shared by
    // every state: the LR automaton then has two states per (set, member) pair instead
    // of one per symbol of the member.
    let mut member_nts: HashMap<(Symbol, u32, bool), u32> = HashMap::new();
    let mut live = Liveness::new(m);
    for &state in &states {
        let here = nts[&state];
        for step in steps(m, state, &mut live) {
            match step {
                Step::End => sink.add_rule(here, vec![]),
                Step::Member { key, value, then } => {
                    let comma = state.1 > 0;
                    let member = match member_nts.get(&(key, value, comma)) {
                        Some(&x) => x,
                        None => {
                            let x = sink.nonterminal(&format!("any-order member@{pointer}"))?;
                            let mut rhs = if comma { vec![m.comma] } else { vec![] };
                            rhs.extend([key, m.colon, Symbol::Nonterminal(value)]);
                            sink.add_rule(x, rhs);
                            member_nts.insert((key, value, comma), x);
                            x
                        }
                    };
                    let rest = Symbol::Nonterminal(nts[&then]);
                    sink.add_rule(here, vec![Symbol::Nonterminal(member), rest]);
                }
            }
        }
    }
    Ok(Built::Members(nts[&(0, 0)]))
}

/// The reachable states from the empty object, in order of discovery; `None` past
/// [`MAX_ANY_ORDER_STATES`] (or 64 named members, beyond the bit set); empty if the
/// empty object's state cannot occur (no assignment).
fn explore(m: &Members) -> Option<Vec<State>> {
    if m.named.len() >= 64 {
        return None;
    }
    let mut live = Liveness::new(m);
    if !live.possible(0) {
        return Some(Vec::new());
    }
    let mut seen: HashSet<State> = HashSet::from([(0, 0)]);
    let mut order = vec![(0, 0)];
    let mut i = 0;
    while i < order.len() {
        for step in steps(m, order[i], &mut live) {
            if let Step::Member { then, .. } = step {
                if seen.insert(then) {
                    if order.len() >= MAX_ANY_ORDER_STATES {
                        return None;
                    }
                    order.push(then);
                }
            }
        }
        i += 1;
    }
    Some(order)
}

/// One alternative of a state's nonterminal.
enum Step {
    /// The object may end here.
    End,
    /// A member, then the members of state `then`.
    Member {
        key: Symbol,
        value: u32,
        then: State,
    },
}

/// Whether some satisfying assignment is still reachable from a set of names
/// (memoized by the set's presence bits).
struct Liveness<'m> {
    assignments: &'m Assignments,
    memo: HashMap<u32, bool>,
    named: Vec<u32>,
}

impl<'m> Liveness<'m> {
    fn new(m: &'m Members) -> Self {
        Liveness {
            assignments: &m.assignments,
            memo: HashMap::new(),
            named: m.named.iter().map(|n| n.bit).collect(),
        }
    }

    /// The presence bits of a set of named members.
    fn bits(&self, set: u64) -> u32 {
        self.named
            .iter()
            .enumerate()
            .filter(|(i, _)| set & (1 << i) != 0)
            .fold(0, |acc, (_, b)| acc | b)
    }

    /// Some assignment has every name of `set` present (more may follow).
    fn possible(&mut self, set: u64) -> bool {
        let p = self.bits(set);
        let assignments = self.assignments;
        *self
            .memo
            .entry(p)
            .or_insert_with(|| assignments.iter().any(|a| a & p == p))
    }

    /// The condition holds on an object whose named members are exactly `set`.
    fn holds(&self, set: u64) -> bool {
        self.assignments.binary_search(&self.bits(set)).is_ok()
    }
}

/// The alternatives of a state (only those leading to states that can still end).
fn steps(m: &Members, (set, c): State, live: &mut Liveness<'_>) -> Vec<Step> {
    let mut out = Vec::new();
    let required = m
        .named
        .iter()
        .enumerate()
        .filter(|(_, n)| n.required)
        .fold(0u64, |acc, (i, _)| acc | 1 << i);
    let missing = |s: u64| u64::from((required & !s).count_ones());
    if missing(set) == 0 && c >= m.min && live.holds(set) {
        out.push(Step::End);
    }
    // The count is exact up to `max`; without `max` only "at least `min`" matters,
    // and `c > 0` (a comma before the next member), so it saturates there.
    let next_c = match m.max {
        Some(_) => c + 1,
        None => (c + 1).min(m.min.max(1)),
    };
    // Room for one more member and then every required one still missing.
    let room = |s: u64| m.max.is_none_or(|x| c + 1 + missing(s) <= x);
    for (i, n) in m.named.iter().enumerate() {
        let next = set | (1 << i);
        if next != set && room(next) && live.possible(next) {
            out.push(Step::Member {
                key: n.key,
                value: n.value,
                then: (next, next_c),
            });
        }
    }
    if room(set) {
        for &(key, value) in &m.extras {
            out.push(Step::Member {
                key,
                value,
                then: (set, next_c),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::accepts;
    use super::super::{schema_to_grammar, PropertyOrder, SchemaOptions};
    use serde_json::{json, Value};

    fn any(lenient: bool) -> SchemaOptions {
        SchemaOptions {
            order: PropertyOrder::Any,
            lenient,
            ..Default::default()
        }
    }

    /// Every sequence of up to `len` members drawn from `members` (repeats included):
    /// the objects written from them, each with the member names in order.
    fn objects(members: &[(&str, &str)], len: usize) -> Vec<(String, Vec<String>)> {
        let mut out = vec![(Vec::new(), Vec::new())];
        let mut layer = out.clone();
        for _ in 0..len {
            let mut next = Vec::new();
            for (texts, names) in &layer {
                for (name, value) in members {
                    let mut t: Vec<String> = texts.clone();
                    t.push(format!("\"{name}\":{value}"));
                    let mut n: Vec<String> = names.clone();
                    n.push(name.to_string());
                    next.push((t, n));
                }
            }
            out.extend(next.iter().cloned());
            layer = next;
        }
        out.into_iter()
            .map(|(t, n)| (format!("{{{}}}", t.join(",")), n))
            .collect()
    }

    /// Judges every object of `members` up to `len` against an independent oracle;
    /// returns how many were valid.
    fn check_all(
        schema: &Value,
        members: &[(&str, &str)],
        len: usize,
        valid: impl Fn(&[String]) -> bool,
    ) -> usize {
        let ok = accepts(schema, &any(false));
        let mut n_valid = 0;
        for (text, names) in objects(members, len) {
            let want = valid(&names);
            n_valid += usize::from(want);
            assert_eq!(ok(&text), want, "{text}");
        }
        n_valid
    }

    fn distinct(names: &[String], declared: &[&str]) -> bool {
        declared
            .iter()
            .all(|d| names.iter().filter(|n| n == d).count() <= 1)
    }

    fn has(names: &[String], n: &str) -> bool {
        names.iter().any(|x| x == n)
    }

    #[test]
    fn every_order_accepted_repeats_and_missing_required_rejected() {
        let s = json!({"type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
            "required": ["a", "c"], "additionalProperties": {"type": "null"}});
        let members = [
            ("a", "1"),
            ("b", "\"x\""),
            ("c", "true"),
            ("x", "null"),
            ("y", "null"),
        ];
        let n = check_all(&s, &members, 5, |names| {
            distinct(names, &["a", "b", "c"]) && has(names, "a") && has(names, "c")
        });
        // All orders of {a, c}, {a, b, c}, with 0..=3 additional members among them.
        assert!(n > 500, "{n}");
        let ok = accepts(&s, &any(false));
        assert!(!ok(r#"{"c":true,"a":"1"}"#), "values are still checked");
        assert!(!ok(r#"{"x":1,"c":true,"a":1}"#), "additional values too");
    }

    #[test]
    fn counts_are_exact_in_any_order() {
        let s = json!({"properties": {"a": {}, "b": {}}, "required": ["b"],
            "minProperties": 2, "maxProperties": 3});
        let members = [("a", "1"), ("b", "2"), ("x", "3")];
        check_all(&s, &members, 5, |names| {
            distinct(names, &["a", "b"]) && has(names, "b") && (2..=3).contains(&names.len())
        });
    }

    #[test]
    fn presence_conditions_hold_in_any_order() {
        // a needs b; not both b and c; c needs the undeclared d; nothing else.
        let s = json!({"properties": {"a": {}, "b": {}, "c": {}},
            "dependentRequired": {"a": ["b"], "c": ["d"]},
            "not": {"required": ["b", "c"]},
            "patternProperties": {"^[d-e]$": {}}, "additionalProperties": false});
        let members = [("a", "1"), ("b", "2"), ("c", "3"), ("d", "4"), ("e", "5")];
        check_all(&s, &members, 5, |names| {
            distinct(names, &["a", "b", "c", "d"])
                && (!has(names, "a") || has(names, "b"))
                && !(has(names, "b") && has(names, "c"))
                && (!has(names, "c") || has(names, "d"))
        });
    }

    #[test]
    fn listed_objects_in_any_order() {
        let s = json!({"enum": [{"p": 1, "q": {"r": 2, "s": [{"t": 3, "u": 4}]}}, {}]});
        let ok = accepts(&s, &any(false));
        for doc in [
            r#"{"p":1,"q":{"r":2,"s":[{"t":3,"u":4}]}}"#,
            r#"{"q":{"s":[{"u":4,"t":3}],"r":2},"p":1}"#,
            r#"{"q":{"r":2,"s":[{"u":4,"t":3}]},"p":1}"#,
            "{}",
        ] {
            assert!(ok(doc), "{doc}");
        }
        for doc in [
            r#"{"p":1}"#,
            r#"{"p":1,"p":1,"q":{"r":2,"s":[{"t":3,"u":4}]}}"#,
            r#"{"q":{"s":[{"u":4}],"r":2},"p":1}"#,
            r#"{"q":{"r":2,"s":[{"t":3,"u":4}]},"p":2}"#,
        ] {
            assert!(!ok(doc), "{doc}");
        }
        // Declared order keeps the listed order.
        let listed = accepts(&s, &SchemaOptions::default());
        assert!(!listed(r#"{"q":{"r":2,"s":[{"t":3,"u":4}]},"p":1}"#));
    }

    #[test]
    fn the_limit_is_an_error_naming_it_or_a_lenient_fallback() {
        let props: serde_json::Map<String, Value> =
            (0..12).map(|i| (format!("p{i}"), json!({}))).collect();
        let s = json!({"properties": {"inner": {"properties": props}}});
        let e = schema_to_grammar(&s, "s.json", &any(false)).unwrap_err();
        assert_eq!(e.issue.pointer, "#/properties/inner");
        assert!(e.issue.keyword.is_none());
        assert!(
            e.to_string().contains("(the limit on any-order objects")
                && e.to_string().contains("--property-order declared"),
            "{e}"
        );
        let g = schema_to_grammar(&s, "s.json", &any(true)).unwrap();
        assert_eq!(g.warnings.len(), 1, "{:?}", g.warnings);
        assert!(g.warnings[0].message.contains("lenient: declared order"));
        let ok = accepts(&s, &any(true));
        assert!(ok(r#"{"inner":{"p0":1,"p11":2}}"#));
        assert!(!ok(r#"{"inner":{"p11":2,"p0":1}}"#));
        // any-or-declared: the same fallback in strict mode, listed; the outer object
        // (within the limit) stays in any order.
        let auto = SchemaOptions {
            order: PropertyOrder::AnyOrDeclared,
            ..Default::default()
        };
        let s = json!({"properties": {"inner": {"properties": props}, "x": {"type": "integer"}}});
        let g = schema_to_grammar(&s, "s.json", &auto).unwrap();
        assert_eq!(g.warnings.len(), 1, "{:?}", g.warnings);
        assert!(g.warnings[0].message.contains("any-or-declared"));
        assert_eq!(g.warnings[0].pointer, "#/properties/inner");
        let ok = accepts(&s, &auto);
        assert!(ok(r#"{"x":1,"inner":{"p0":1,"p11":2}}"#));
        assert!(ok(r#"{"inner":{"p0":1,"p11":2},"x":1}"#));
        assert!(!ok(r#"{"inner":{"p11":2,"p0":1}}"#));
        assert!(!ok(r#"{"x":1,"x":2}"#));
        // 11 optional names and additional members fit (2^11 + 1 states).
        let props: serde_json::Map<String, Value> =
            (0..11).map(|i| (format!("p{i}"), json!({}))).collect();
        let g = schema_to_grammar(&json!({ "properties": props }), "s.json", &any(false));
        assert!(g.is_ok_and(|g| g.warnings.is_empty()));
        // A listed object of 12 members is past it too.
        let listed: serde_json::Map<String, Value> =
            (0..12).map(|i| (format!("p{i}"), json!(i))).collect();
        let e = schema_to_grammar(&json!({ "const": listed }), "s.json", &any(false));
        assert!(e.is_err_and(|e| e.issue.pointer == "#"));
    }

    #[test]
    fn any_order_grammars_are_deterministic() {
        let s = json!({"properties": {"a": {"type": "integer"}, "b": {"const": {"x": 1, "y": 2}}},
            "required": ["a"], "dependentRequired": {"b": ["z"]}, "additionalProperties": {"type": "string"}});
        super::super::tests::assert_deterministic(&s, &any(false));
    }
}
