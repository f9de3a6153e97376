//! Conditions on which members an object has, and the finite automaton that enforces
//! them while members are written in their fixed order.
//!
//! `dependencies`/`dependentRequired`/`dependentSchemas`, `not`, `anyOf`/`oneOf` and
//! `if`/`then`/`else` often only say which names an object has (`required` inside
//! `not`, "a needs b", "exactly one of these"). Such a condition is a Boolean formula
//! over the presence of finitely many names. Members are generated in a fixed order,
//! each declared one present or absent, so the formula is enforced exactly by a finite
//! state: the set of satisfying assignments still consistent with the members decided
//! so far, restricted to the names still to come ([`Assignments::split`]). Equal states
//! share one nonterminal, so the usual forms ("a needs b", "not both") stay small.

/// A formula over the presence of object members.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Presence {
    /// Always (`true`) or never (`false`).
    Const(bool),
    /// The object has this member (`required`); true of every non-object.
    Has(String),
    /// The object lacks this member (`properties: {name: false}`); true of every non-object.
    Lacks(String),
    /// The instance is an object (`type: "object"`).
    IsObject,
    /// Negation (`not`).
    Not(Box<Presence>),
    /// Conjunction (`allOf`, several keywords).
    All(Vec<Presence>),
    /// Disjunction (`anyOf`).
    Any(Vec<Presence>),
    /// Exactly one (`oneOf`).
    One(Vec<Presence>),
}

/// Limit on the distinct names one object's presence conditions mention (all 2^n
/// assignments are enumerated once).
pub const MAX_PRESENCE_NAMES: usize = 16;

impl Presence {
    /// `a` implies `b`.
    pub fn implies(a: Presence, b: Presence) -> Presence {
        Presence::Any(vec![Presence::Not(Box::new(a)), b])
    }

    /// The names the formula mentions, each once, in order of first mention.
    pub fn names(&self, out: &mut Vec<String>) {
        match self {
            Presence::Has(n) | Presence::Lacks(n) => {
                if !out.contains(n) {
                    out.push(n.clone());
                }
            }
            Presence::Not(p) => p.names(out),
            Presence::All(v) | Presence::Any(v) | Presence::One(v) => {
                v.iter().for_each(|p| p.names(out))
            }
            Presence::Const(_) | Presence::IsObject => {}
        }
    }

    /// Its value on an object whose members are given by `has`, or on a non-object
    /// (`has` is then not asked: `required` and `properties` hold vacuously there).
    pub fn eval(&self, has: &dyn Fn(&str) -> bool, object: bool) -> bool {
        match self {
            Presence::Const(b) => *b,
            Presence::Has(n) => !object || has(n),
            Presence::Lacks(n) => !object || !has(n),
            Presence::IsObject => object,
            Presence::Not(p) => !p.eval(has, object),
            Presence::All(v) => v.iter().all(|p| p.eval(has, object)),
            Presence::Any(v) => v.iter().any(|p| p.eval(has, object)),
            Presence::One(v) => v.iter().filter(|p| p.eval(has, object)).count() == 1,
        }
    }
}

/// Limit on one object's member automaton (declared order), counted as its states plus
/// the presence assignments they carry. A state's work (its splits, the lookups of its
/// successors) is proportional to its assignments times the names to decide, so this
/// bounds the work too: names a condition mentions and no schema declares are
/// written in any order, and the automaton tracks which were written, so sixteen of
/// them under an `anyOf` of `required`s made 65,537 states of some 30,000 assignments
/// each (29 million in all, 3 s, then more LR(1) states than their limit). The largest
/// real object measured needs 1,022 (SchemaStore, 2026-11-30; MaskBench subset: 263).
pub const MAX_MEMBER_AUTOMATON: usize = 1 << 20;

/// A set of presence assignments (bit `i` set: name `i` is present), sorted and
/// without repeats: one state of the member automaton.
pub type Assignments = Vec<u32>;

/// The assignments of `names` that satisfy `formula` on an object, where `fixed(i)`
/// pins name `i` (a required name is present; a name that cannot occur is absent).
pub fn satisfying(
    formula: &Presence,
    names: &[String],
    fixed: impl Fn(usize) -> Option<bool>,
) -> Assignments {
    assert!(names.len() <= MAX_PRESENCE_NAMES, "checked by the caller");
    let mut out = Vec::new();
    for a in 0u32..(1u32 << names.len()) {
        let bit = |i: usize| a & (1 << i) != 0;
        if (0..names.len()).any(|i| fixed(i).is_some_and(|f| f != bit(i))) {
            continue;
        }
        let has = |n: &str| names.iter().position(|x| x == n).is_some_and(bit);
        if formula.eval(&has, true) {
            out.push(a);
        }
    }
    out
}

/// The states after deciding name `bit`: (absent, present), each with that bit
/// cleared (it is decided) so that states differing only in the past merge. An empty
/// set means that choice is impossible.
pub fn split(state: &Assignments, bit: usize) -> (Assignments, Assignments) {
    let m = 1u32 << bit;
    let mut absent: Assignments = state.iter().filter(|a| *a & m == 0).copied().collect();
    let mut present: Assignments = state
        .iter()
        .filter(|a| *a & m != 0)
        .map(|a| a & !m)
        .collect();
    absent.dedup();
    present.sort_unstable();
    present.dedup();
    (absent, present)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has(n: &str) -> Presence {
        Presence::Has(n.into())
    }

    #[test]
    fn one_of_required_on_objects_and_non_objects() {
        let f = Presence::One(vec![has("a"), has("b")]);
        let names = vec!["a".to_string(), "b".to_string()];
        assert_eq!(satisfying(&f, &names, |_| None), [0b01, 0b10]);
        // Both branches hold vacuously on a string: `oneOf` fails there.
        assert!(!f.eval(&|_| true, false));
        assert!(Presence::Lacks("a".into()).eval(&|_| true, false));
    }

    #[test]
    fn states_forget_decided_names() {
        // a → b, as the automaton sees it in order a, b.
        let f = Presence::implies(has("a"), has("b"));
        let names = vec!["a".to_string(), "b".to_string()];
        let s = satisfying(&f, &names, |_| None);
        assert_eq!(s, [0b00, 0b10, 0b11]);
        let (without_a, with_a) = split(&s, 0);
        assert_eq!(without_a, [0b00, 0b10]);
        assert_eq!(with_a, [0b10]);
        let (b_absent, b_present) = split(&with_a, 1);
        assert!(b_absent.is_empty() && b_present == [0]);
        // A required name is pinned.
        assert_eq!(satisfying(&f, &names, |i| (i == 0).then_some(true)), [0b11]);
    }
}
