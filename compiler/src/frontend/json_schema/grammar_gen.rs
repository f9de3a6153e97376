//! Schema → Grammar IR, built directly (one nonterminal per distinct subschema).
//!
//! Every subschema becomes a nonterminal whose alternatives are the JSON types it
//! allows; `$ref`s and identical subschemas share one nonterminal (memoized by the
//! schema's JSON text, so recursion through `$ref` terminates). `allOf` and `$ref` with
//! siblings are merged into one schema object first ([`super::merge`]); `anyOf`/`oneOf`
//! distribute over the rest of their schema (`S ∧ (A ∨ B) = (S ∧ A) ∨ (S ∧ B)`).
//! Objects and arrays with counts become counter nonterminals (`M(slot, count)`).

use super::any_order::{self, Built, Named};
use super::keywords::{self, Diagnostics, KeywordClass};
use super::listed_values::ListedValues;
use super::presence::{self, Presence};
use super::refs::{self, child, RefIndex};
use super::{
    chunked_string, ecma_regex, formats, merge, number_lang, string_lang, Draft, PropertyOrder,
    SchemaIssue, SchemaOptions, Whitespace,
};
use regex_syntax::hir::Hir;
use serde_json::{json, Map, Value};
use stackmask_formats::{Difference, Grammar, Nonterminal, Rule, Symbol, Terminal};
use std::collections::HashMap;

type R<T> = Result<T, SchemaIssue>;

/// Limit on nonterminals (anyOf products and counters can multiply).
pub const MAX_NONTERMINALS: usize = 200_000;
/// Limit on counted positions of one array or object (`maxItems: 100000`).
pub const MAX_COUNTED: u64 = 1024;
/// Limit on the values of a `uniqueItems` array's item list (one nonterminal per
/// subset used).
pub const MAX_UNIQUE_DOMAIN: usize = 12;
/// Limit on nested `allOf`/`$ref` inlining (a cycle through `allOf` never ends).
const MAX_INLINE_DEPTH: usize = 64;

fn issue(pointer: &str, keyword: Option<&str>, message: impl Into<String>) -> SchemaIssue {
    SchemaIssue {
        pointer: pointer.to_string(),
        keyword: keyword.map(String::from),
        unsupported: false,
        message: message.into(),
    }
}

/// Whether a root object is a JSONSchemaBench (MaskBench) test file rather than a
/// schema: a `schema` object beside a `tests` array and no keyword that constrains
/// anything. Read as a schema it accepts every JSON value, which is rarely what was
/// meant, so the warning about `schema` says where the schema is.
fn looks_like_a_benchmark_file(root: &Map<String, Value>) -> bool {
    matches!(root.get("schema"), Some(Value::Object(_) | Value::Bool(_)))
        && matches!(root.get("tests"), Some(Value::Array(_)))
        && root
            .keys()
            .all(|k| !matches!(keywords::classify(k), KeywordClass::Enforced))
}

/// A schema object with `$ref` and `allOf` inlined and `anyOf`/`oneOf` set apart.
struct Flat {
    map: Map<String, Value>,
    groups: Vec<Group>,
    never: bool,
}

/// One `anyOf` or `oneOf` list.
#[derive(Clone)]
struct Group {
    branches: Vec<Value>,
    pointer: String,
    one_of: bool,
}

/// The builder: grammar under construction plus the schema context.
pub struct Generator<'a> {
    root: &'a Value,
    opts: SchemaOptions,
    refs: RefIndex,
    listed: ListedValues<'a>,
    /// Warnings (lenient mode, unknown keywords).
    pub diags: Diagnostics,
    terminals: Vec<Terminal>,
    term_by_regex: HashMap<String, u32>,
    nonterminals: Vec<Nonterminal>,
    rules: Vec<Rule>,
    memo: HashMap<String, u32>,
    /// The characters of chunked strings, by their bounds (`minLength`, `maxLength`).
    string_bodies: HashMap<(u64, Option<u64>), u32>,
    /// String terminals written so far, by their characters' regex: a schema repeats
    /// a few (a `date-time` in every record type), and encoding one as JSON text and
    /// printing it was most of the front end's time on such schemas. `Hir` has no
    /// `Hash`; the distinct ones per schema are few, so they are searched in turn.
    string_terminals: Vec<(Hir, Result<String, String>)>,
    /// The regexes of `lo..=hi` string characters (a chunked string's chunk and end
    /// terminals), by their bounds: every chunked string of a schema with the same
    /// `maxLength` has the same ones.
    chars_terminals: HashMap<(u64, u64), Result<String, String>>,
    /// The regexes of "any other name" terminals, by their language as a
    /// [`Difference`] (which is their names' language, [`string_lang::none_of_within`]
    /// of the declared names and an alphabet, written otherwise): a large schema
    /// repeats an object under many paths (Kubernetes inlines `ObjectMeta` dozens of
    /// times), and each wrote the same regex of its names' trie again.
    name_terminals: HashMap<(String, Vec<Vec<u8>>), Written>,
}

/// A terminal's regex as written, or why it cannot be.
type Written = Result<String, String>;

impl any_order::RuleSink for Generator<'_> {
    fn nonterminal(&mut self, name: &str) -> R<u32> {
        self.new_nt(name)
    }

    fn add_rule(&mut self, lhs: u32, rhs: Vec<Symbol>) {
        self.rule(lhs, rhs);
    }

    fn over_limit(&mut self, issue: SchemaIssue) -> R<()> {
        let message = if self.opts.order == PropertyOrder::AnyOrDeclared {
            format!(
                "{}; written in declared order (--property-order any-or-declared)",
                issue.message
            )
        } else if self.diags.lenient {
            format!("{}; lenient: declared order", issue.message)
        } else {
            return Err(issue);
        };
        self.diags.warn(SchemaIssue { message, ..issue });
        Ok(())
    }
}

/// The `format` strings' languages, parsed and written as terminals once per process:
/// a fixed set of regexes (`date-time` alone is a 2 KB one), which schema after schema
/// parsed and encoded again — most of the front end's time on the schemas with formats.
struct FormatStrings {
    /// Per format name: its characters' regex and, once asked, its string terminal.
    known: HashMap<String, (Hir, Option<Result<String, String>>)>,
}

impl FormatStrings {
    fn shared() -> std::sync::MutexGuard<'static, Option<FormatStrings>> {
        static SHARED: std::sync::Mutex<Option<FormatStrings>> = std::sync::Mutex::new(None);
        // Inserts are single calls: a poisoned lock still holds a consistent map.
        SHARED.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Format `name`'s characters, parsed from its regex `re` the first time.
    fn chars(name: &str, re: &str) -> Result<Hir, String> {
        let mut shared = Self::shared();
        let cache = shared.get_or_insert_with(|| FormatStrings {
            known: HashMap::new(),
        });
        if let Some((h, _)) = cache.known.get(name) {
            return Ok(h.clone());
        }
        let h = string_lang::parse_chars(re)?;
        cache.known.insert(name.to_string(), (h.clone(), None));
        Ok(h)
    }

    /// Whether `h` is format `name`'s characters as parsed (no length bounds on them).
    fn is_format(name: &str, h: &Hir) -> bool {
        let shared = Self::shared();
        shared
            .as_ref()
            .and_then(|c| c.known.get(name))
            .is_some_and(|(k, _)| k == h)
    }

    /// The string terminal of format `name`, whose characters are `h`.
    fn terminal(name: &str, h: &Hir) -> Result<String, String> {
        if let Some(Some((_, Some(text)))) = Self::shared().as_ref().map(|c| c.known.get(name)) {
            return text.clone();
        }
        // Written outside the lock (milliseconds for the largest).
        let text = string_lang::string_terminal(h);
        if let Some(entry) = Self::shared().as_mut().and_then(|c| c.known.get_mut(name)) {
            entry.1 = Some(text.clone());
        }
        text
    }
}

const ALL_TYPES: [&str; 6] = ["null", "boolean", "number", "string", "array", "object"];

impl<'a> Generator<'a> {
    /// A generator for one schema document.
    pub fn new(root: &'a Value, opts: SchemaOptions) -> Self {
        Generator {
            root,
            opts,
            refs: RefIndex::new(root),
            listed: ListedValues::new(root, opts.draft),
            diags: Diagnostics {
                lenient: opts.lenient,
                warnings: Vec::new(),
            },
            terminals: Vec::new(),
            term_by_regex: HashMap::new(),
            nonterminals: Vec::new(),
            rules: Vec::new(),
            memo: HashMap::new(),
            string_bodies: HashMap::new(),
            string_terminals: Vec::new(),
            chars_terminals: HashMap::new(),
            name_terminals: HashMap::new(),
        }
    }

    /// Builds the grammar whose start symbol derives the root schema's values.
    pub fn build(mut self, source_name: &str) -> R<(Grammar, Vec<SchemaIssue>)> {
        let start = self.new_nt("start")?;
        let root = self.value_nt(self.root, "#")?;
        self.rules.push(Rule {
            lhs: start,
            rhs: vec![Symbol::Nonterminal(root)],
        });
        let mut ignore = Vec::new();
        if self.opts.whitespace == Whitespace::Free {
            ignore.push(self.term("WS", "[ \\t\\n\\r]+"));
        }
        let grammar = Grammar {
            source_name: source_name.to_string(),
            terminals: self.terminals,
            nonterminals: self.nonterminals,
            rules: self.rules,
            start,
            ignore,
            allow_initial_skip: false,
        };
        let grammar = prune(grammar).unwrap_or_else(|| empty_language(source_name));
        Ok((grammar, self.diags.warnings))
    }

    fn new_nt(&mut self, name: &str) -> R<u32> {
        if self.nonterminals.len() >= MAX_NONTERMINALS {
            return Err(issue(
                "#",
                None,
                format!("the schema expands to more than {MAX_NONTERMINALS} nonterminals (the limit on grammar size)"),
            ));
        }
        self.nonterminals.push(Nonterminal {
            name: name.to_string(),
        });
        Ok(self.nonterminals.len() as u32 - 1)
    }

    fn term(&mut self, name: &str, regex: &str) -> u32 {
        if let Some(&t) = self.term_by_regex.get(regex) {
            return t;
        }
        self.terminals.push(Terminal {
            name: name.to_string(),
            regex: regex.to_string(),
            lazy: false,
            priority: 0,
            defined_at: None,
            difference: None,
        });
        let t = self.terminals.len() as u32 - 1;
        self.term_by_regex.insert(regex.to_string(), t);
        t
    }

    fn lit(&mut self, text: &str) -> Symbol {
        let name = text.to_string();
        Symbol::Terminal(self.term(&name, &regex_syntax::escape(text)))
    }

    fn rule(&mut self, lhs: u32, rhs: Vec<Symbol>) {
        self.rules.push(Rule { lhs, rhs });
    }

    /// The nonterminal of a subschema (shared by every place with the same schema).
    fn value_nt(&mut self, schema: &Value, ptr: &str) -> R<u32> {
        let key = serde_json::to_string(schema).expect("a JSON value serializes");
        if let Some(&nt) = self.memo.get(&key) {
            return Ok(nt);
        }
        let nt = self.new_nt(&format!("value@{ptr}"))?;
        self.memo.insert(key, nt);
        self.fill(nt, schema, ptr)?;
        Ok(nt)
    }

    fn fill(&mut self, nt: u32, schema: &Value, ptr: &str) -> R<()> {
        let flat = self.flatten(schema, ptr, 0)?;
        if flat.never {
            return Ok(());
        }
        // Groups that only say which members an object has are enforced by the member
        // automaton (exactly, `oneOf` included); the others distribute.
        let props = properties_of(&flat.map);
        let mut conditions = Vec::new();
        let mut distributed = None;
        for (i, g) in flat.groups.iter().enumerate() {
            match self.group_presence(g, &props, 0)? {
                Some(p) => conditions.push(p),
                None => {
                    distributed = Some(i);
                    break;
                }
            }
        }
        let Some(gi) = distributed else {
            return self.typed(nt, &flat.map, ptr, conditions);
        };
        let group = flat.groups[gi].clone();
        if group.one_of
            && !self.disjoint(&group.branches, &group.pointer)?
            && !self.disjoint_beside(&flat.map, &group)
        {
            self.diags.unsupported(
                &group.pointer,
                "oneOf",
                "`oneOf` whose branches are not provably disjoint (exactly-one cannot be checked by a grammar); lenient: read as `anyOf`",
            )?;
        }
        let mut rest = flat.map.clone();
        let others: Vec<Value> = flat
            .groups
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != gi)
            .map(|(_, g)| json!({ if g.one_of { "oneOf" } else { "anyOf" }: g.branches }))
            .collect();
        let trivial = rest.is_empty() && others.is_empty();
        if !others.is_empty() {
            rest.insert("allOf".into(), Value::Array(others));
        }
        for (i, b) in group.branches.iter().enumerate() {
            let p = child(&group.pointer, &i.to_string());
            let c = if trivial {
                self.value_nt(b, &p)?
            } else {
                self.value_nt(&json!({"allOf": [Value::Object(rest.clone()), b]}), &p)?
            };
            self.rule(nt, vec![Symbol::Nonterminal(c)]);
        }
        Ok(())
    }

    /// Reports unsupported and unknown keywords of one schema object.
    fn check_keywords(&mut self, m: &Map<String, Value>, ptr: &str) -> R<()> {
        for k in m.keys() {
            match keywords::classify(k) {
                KeywordClass::Annotation | KeywordClass::Enforced => {}
                KeywordClass::Unsupported => {
                    let msg = match k.as_str() {
                        "contains" => "`contains` is not supported",
                        "unevaluatedProperties" | "unevaluatedItems" => {
                            "`unevaluated*` keywords are not supported"
                        }
                        _ => "dynamic references are not supported",
                    };
                    self.diags.unsupported(&child(ptr, k), k, msg)?;
                }
                KeywordClass::Unknown => {
                    let mut msg =
                        "unknown keyword: no effect (JSON Schema ignores unknown keywords)"
                            .to_string();
                    if ptr == "#" && k == "schema" && looks_like_a_benchmark_file(m) {
                        msg.push_str(
                            "; this looks like a JSONSchemaBench (MaskBench) file, whose \
                             schema is its `schema` member: compile that member \
                             (`jq .schema FILE`), not the file",
                        );
                    }
                    self.diags.warn(issue(&child(ptr, k), Some(k), msg))
                }
            }
        }
        if self.opts.draft != Draft::Draft2020 {
            for k in ["contentMediaType", "contentEncoding"] {
                if m.contains_key(k) {
                    self.diags.unsupported(
                        &child(ptr, k),
                        k,
                        "draft 7 lets validators assert content; decoding content is not supported",
                    )?;
                }
            }
        }
        if ptr == "#" {
            if let Some(Value::String(s)) = m.get("$schema") {
                if !s.contains("json-schema.org/") {
                    self.diags.unsupported(
                        &child(ptr, "$schema"),
                        "$schema",
                        format!("meta-schema `{s}` (custom vocabularies are not supported)"),
                    )?;
                }
            }
        }
        Ok(())
    }

    fn flatten(&mut self, schema: &Value, ptr: &str, depth: usize) -> R<Flat> {
        if depth > MAX_INLINE_DEPTH {
            return Err(issue(
                ptr,
                Some("allOf"),
                format!("`allOf`/`$ref` nested deeper than {MAX_INLINE_DEPTH} (a reference cycle through `allOf`?)"),
            ));
        }
        let m = match schema {
            Value::Bool(b) => {
                return Ok(Flat {
                    map: Map::new(),
                    groups: Vec::new(),
                    never: !b,
                })
            }
            Value::Object(m) => m,
            _ => return Err(issue(ptr, None, "a schema must be an object or a boolean")),
        };
        self.check_keywords(m, ptr)?;
        let mut parts: Vec<(Flat, String)> = Vec::new();
        if let Some(r) = m.get("$ref") {
            let rp = child(ptr, "$ref");
            let r = r
                .as_str()
                .ok_or_else(|| issue(&rp, Some("$ref"), "`$ref` must be a string"))?;
            let target_ptr = self
                .refs
                .resolve(self.root, r)
                .map_err(|e| issue(&rp, Some("$ref"), e))?;
            let target = refs::lookup(self.root, &target_ptr)
                .ok_or_else(|| issue(&rp, Some("$ref"), format!("`{r}` does not resolve")))?;
            let f = self.flatten(target, &target_ptr, depth + 1)?;
            if self.opts.draft != Draft::Draft2020 {
                // Draft 7: "all other properties in a $ref object MUST be ignored".
                return Ok(f);
            }
            parts.push((f, target_ptr));
        }
        let mut own = Map::new();
        let mut groups = Vec::new();
        for (k, v) in m {
            let kp = child(ptr, k);
            match k.as_str() {
                "$ref" => {}
                "allOf" => {
                    let arr = v
                        .as_array()
                        .ok_or_else(|| issue(&kp, Some("allOf"), "`allOf` must be an array"))?;
                    for (i, b) in arr.iter().enumerate() {
                        let bp = child(&kp, &i.to_string());
                        let f = self.flatten(b, &bp, depth + 1)?;
                        parts.push((f, bp));
                    }
                }
                "anyOf" | "oneOf" => {
                    let arr = v
                        .as_array()
                        .ok_or_else(|| issue(&kp, Some(k), format!("`{k}` must be an array")))?;
                    groups.push(Group {
                        branches: arr.clone(),
                        pointer: kp,
                        one_of: k == "oneOf",
                    });
                }
                // `if` without `then`/`else` has no effect; with them it is kept for
                // `typed` (enforced where it only speaks about member presence).
                "if" | "then" | "else" => {
                    if m.contains_key("if") && (m.contains_key("then") || m.contains_key("else")) {
                        own.insert(k.clone(), v.clone());
                    }
                }
                "minContains" | "maxContains" => {}
                // `propertyNames: false` holds of non-objects and of `{}` only, so its
                // negation is exactly a non-empty object.
                "not" if *v == json!({"propertyNames": false}) => {
                    let map = json!({"type": "object", "minProperties": 1});
                    let map = map.as_object().expect("an object literal").clone();
                    let f = Flat {
                        map,
                        groups: Vec::new(),
                        never: false,
                    };
                    parts.push((f, kp));
                }
                _ => {
                    if keywords::classify(k) == KeywordClass::Enforced {
                        own.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        if own.get("nullable") == Some(&Value::Bool(true)) {
            if let Some(t) = own.get("type") {
                let mut ts = merge::types_of(t);
                if !ts.iter().any(|t| t == "null") {
                    ts.push("null".into());
                }
                own.insert("type".into(), json!(ts));
            }
            if let Some(Value::Array(e)) = own.get_mut("enum") {
                if !e.contains(&Value::Null) {
                    e.push(Value::Null);
                }
            }
        }
        own.remove("nullable");
        let mut flat = Flat {
            map: own,
            groups,
            never: false,
        };
        for (p, pp) in parts {
            if p.never {
                flat.never = true;
            }
            match merge::merge(&flat.map, &p.map) {
                Ok(mm) => flat.map = mm,
                Err((kw, msg)) => {
                    self.diags.unsupported(&child(&pp, &kw), &kw, msg)?;
                    // Lenient: keep the first side's value.
                    for (k, v) in p.map {
                        flat.map.entry(k).or_insert(v);
                    }
                }
            }
            flat.groups.extend(p.groups);
        }
        Ok(flat)
    }

    /// Whether the branches of a `oneOf` can never both match one value: they allow
    /// disjoint types, or disjoint `const`/`enum` sets, or are objects whose shared
    /// required property has disjoint `const`/`enum` values.
    fn disjoint(&mut self, branches: &[Value], ptr: &str) -> R<bool> {
        let mut infos = Vec::new();
        for (i, b) in branches.iter().enumerate() {
            let f = self.flatten(b, &child(ptr, &i.to_string()), 0)?;
            if !f.groups.is_empty() {
                return Ok(false);
            }
            infos.push(f.map);
        }
        for i in 0..infos.len() {
            for j in i + 1..infos.len() {
                if !pair_disjoint(self, &infos[i], &infos[j])? {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Whether a `oneOf`'s branches are disjoint once each is taken together with the
    /// sibling keywords `siblings` (`{"type": "object", "oneOf": [{"required": ["a"], ...`):
    /// the values `fill` writes for branch `i` are those of `allOf: [siblings, branch i]`,
    /// so these being pairwise disjoint is exactly what `oneOf` needs. The other groups
    /// beside the `oneOf` only shrink each branch further and are left out. The check
    /// runs strictly and leaves no warnings: a merge it cannot do (two `pattern`s) means
    /// "not proven", never an approximation.
    fn disjoint_beside(&mut self, siblings: &Map<String, Value>, group: &Group) -> bool {
        if siblings.is_empty() {
            return false;
        }
        let merged: Vec<Value> = group
            .branches
            .iter()
            .map(|b| json!({"allOf": [Value::Object(siblings.clone()), b]}))
            .collect();
        self.strictly(|g| g.disjoint(&merged, &group.pointer))
            .unwrap_or(false)
    }

    /// Runs `f` in strict mode and drops the warnings it adds: for proofs, where an
    /// unsupported keyword must mean "not proven", never a lenient approximation.
    fn strictly<T>(&mut self, f: impl FnOnce(&mut Self) -> R<T>) -> Option<T> {
        let (lenient, seen) = (self.diags.lenient, self.diags.warnings.len());
        self.diags.lenient = false;
        let out = f(self);
        self.diags.lenient = lenient;
        self.diags.warnings.truncate(seen);
        out.ok()
    }

    /// The condition an `anyOf`/`oneOf` states, if each branch only says which members
    /// an object has ([`Self::presence_of`]).
    fn group_presence(
        &mut self,
        g: &Group,
        props: &Map<String, Value>,
        depth: usize,
    ) -> R<Option<Presence>> {
        let mut parts = Vec::new();
        for (i, b) in g.branches.iter().enumerate() {
            match self.presence_of(b, &child(&g.pointer, &i.to_string()), props, depth + 1)? {
                Some(p) => parts.push(p),
                None => return Ok(None),
            }
        }
        Ok(Some(if g.one_of {
            Presence::One(parts)
        } else {
            Presence::Any(parts)
        }))
    }

    /// The condition a schema states, if all it says is which members an object has:
    /// `required`, `type: "object"`, `properties` whose schemas are `false` (absent) or
    /// implied by the object's own declared schema `props` of that name, and `not`,
    /// `anyOf`/`oneOf`/`allOf`, `if`/`then`/`else` of such schemas. `None` otherwise.
    fn presence_of(
        &mut self,
        schema: &Value,
        ptr: &str,
        props: &Map<String, Value>,
        depth: usize,
    ) -> R<Option<Presence>> {
        if depth > MAX_INLINE_DEPTH {
            return Ok(None);
        }
        let f = self.flatten(schema, ptr, 0)?;
        if f.never {
            return Ok(Some(Presence::Const(false)));
        }
        let mut parts = Vec::new();
        for (k, v) in &f.map {
            let kp = child(ptr, k);
            match k.as_str() {
                "required" => {
                    for n in v.as_array().into_iter().flatten() {
                        let Some(n) = n.as_str() else {
                            return Ok(None);
                        };
                        parts.push(Presence::Has(n.to_string()));
                    }
                }
                "type" if merge::types_of(v) == ["object"] => parts.push(Presence::IsObject),
                "properties" => {
                    for (q, s) in v.as_object().into_iter().flatten() {
                        let sp = child(&kp, q);
                        let sf = self.flatten(s, &sp, 0)?;
                        if sf.never {
                            parts.push(Presence::Lacks(q.clone()));
                            continue;
                        }
                        let implied = (sf.groups.is_empty() && sf.map.is_empty())
                            || self.implied(props.get(q), &sf, &sp)?;
                        if !implied {
                            return Ok(None);
                        }
                    }
                }
                // Names outside a finite set: each name of the set is absent.
                "propertyNames" => match excluded_names(self.flatten(v, &kp, 0)?) {
                    Some(names) => parts.extend(names.into_iter().map(Presence::Lacks)),
                    None => return Ok(None),
                },
                "not" => match self.presence_of(v, &kp, props, depth + 1)? {
                    Some(p) => parts.push(Presence::Not(Box::new(p))),
                    None => return Ok(None),
                },
                "if" => match self.if_presence(&f.map, ptr, props, depth)? {
                    Some(p) => parts.push(p),
                    None => return Ok(None),
                },
                "then" | "else" => {}
                _ => return Ok(None),
            }
        }
        for g in &f.groups {
            match self.group_presence(g, props, depth)? {
                Some(p) => parts.push(p),
                None => return Ok(None),
            }
        }
        Ok(Some(Presence::All(parts)))
    }

    /// `if`/`then`/`else` of a flat schema as a presence condition, if all three are
    /// ones (a missing `then`/`else` holds).
    fn if_presence(
        &mut self,
        m: &Map<String, Value>,
        ptr: &str,
        props: &Map<String, Value>,
        depth: usize,
    ) -> R<Option<Presence>> {
        let part = |g: &mut Self, k: &str| -> R<Option<Presence>> {
            match m.get(k) {
                None => Ok(Some(Presence::Const(true))),
                Some(s) => g.presence_of(s, &child(ptr, k), props, depth + 1),
            }
        };
        let (Some(c), Some(t), Some(e)) =
            (part(self, "if")?, part(self, "then")?, part(self, "else")?)
        else {
            return Ok(None);
        };
        Ok(Some(Presence::Any(vec![
            Presence::All(vec![c.clone(), t]),
            Presence::All(vec![Presence::Not(Box::new(c)), e]),
        ])))
    }

    /// Whether every value the declared schema `base` allows also satisfies the flat
    /// schema `s` (`s` adds nothing when merged into `base`). A name with no declared
    /// schema is not known to imply anything.
    fn implied(&mut self, base: Option<&Value>, s: &Flat, ptr: &str) -> R<bool> {
        let Some(base) = base else {
            return Ok(false);
        };
        let bf = self.flatten(base, ptr, 0)?;
        Ok(bf.never
            || (s.groups.is_empty()
                && bf.groups.is_empty()
                && merge::merge(&bf.map, &s.map).is_ok_and(|m| m == bf.map)))
    }

    /// Alternatives for the types a flat schema allows.
    /// `conditions`: presence conditions from `anyOf`/`oneOf` groups (see [`Self::fill`]).
    fn typed(
        &mut self,
        nt: u32,
        m: &Map<String, Value>,
        ptr: &str,
        mut conditions: Vec<Presence>,
    ) -> R<()> {
        let types = allowed_types(m, ptr)?;
        if let Some(values) = enum_values(m) {
            // A full validator decides every keyword beside a list; where it cannot
            // build the schema, only what `instance_ok` decides is allowed.
            let verdicts = self.listed.verdicts(m, &values);
            if verdicts.iter().any(Option::is_none) {
                self.check_enum_siblings(m, ptr)?;
            }
            // Presence conditions taken out of `anyOf`/`oneOf` groups (`fill`) are not
            // in `m`: each value is checked against them here.
            let groups = Presence::All(conditions);
            for (v, verdict) in values.into_iter().zip(verdicts) {
                let ok = verdict.unwrap_or_else(|| self.instance_ok(&v, m));
                let present = |k: &str| v.as_object().is_some_and(|o| o.contains_key(k));
                if value_has_type(&v, &types) && ok && groups.eval(&present, v.is_object()) {
                    let syms = self.const_symbols(&v, ptr)?;
                    self.rule(nt, syms);
                }
            }
            return Ok(());
        }
        let props = properties_of(m);
        let mut not_types = Vec::new();
        if let Some(n) = m.get("not") {
            let np = child(ptr, "not");
            match self.presence_of(n, &np, &props, 0)? {
                Some(p) if !not_type_form(n) => conditions.push(Presence::Not(Box::new(p))),
                _ => {
                    self.check_not(m, ptr)?;
                    not_types = self::not_types(m);
                }
            }
        }
        if m.contains_key("if") {
            match self.if_presence(m, ptr, &props, 0)? {
                Some(p) => conditions.push(p),
                None => self.diags.unsupported(
                    &child(ptr, "if"),
                    "if",
                    "`if`/`then`/`else` is supported only where all three speak about which members an object has (`required`, `not`, `anyOf`/`oneOf` of them)",
                )?,
            }
        }
        let conditions = Presence::All(conditions);
        // On a non-object `required` holds vacuously, so the conditions are a constant.
        let non_objects = conditions.eval(&|_| true, false);
        for t in types
            .iter()
            .filter(|t| !not_types.contains(t) && (non_objects || *t == "object"))
        {
            match t.as_str() {
                "null" => {
                    let s = self.lit("null");
                    self.rule(nt, vec![s]);
                }
                "boolean" => {
                    for b in ["true", "false"] {
                        let s = self.lit(b);
                        self.rule(nt, vec![s]);
                    }
                }
                "number" if not_types.iter().any(|x| x == "integer") => {
                    // Numbers that are not integers: a nonzero fraction and no exponent
                    // (whether `1.5e1` is integral is not a regular property).
                    if m.keys().any(|k| {
                        matches!(
                            k.as_str(),
                            "minimum"
                                | "maximum"
                                | "exclusiveMinimum"
                                | "exclusiveMaximum"
                                | "multipleOf"
                        )
                    }) {
                        self.diags.unsupported(
                            &child(ptr, "not"),
                            "not",
                            "`not: {\"type\": \"integer\"}` beside numeric bounds",
                        )?;
                    }
                    let re = "-?(?:0|[1-9][0-9]*)\\.0*[1-9][0-9]*";
                    let s = Symbol::Terminal(self.term("NON_INTEGER", re));
                    self.rule(nt, vec![s]);
                }
                "integer" | "number" => {
                    if let Some(re) = self.number_regex(m, ptr, t == "integer")? {
                        let name = if t == "integer" { "INTEGER" } else { "NUMBER" };
                        let s = Symbol::Terminal(self.term(name, &re));
                        self.rule(nt, vec![s]);
                    }
                }
                "string" if self.chunked_string(nt, m, ptr)? => {}
                "string" => {
                    if let Some(re) = self.string_regex(m, ptr)? {
                        // Named by pointer: a lexer limit on this terminal then says where it is.
                        let s = Symbol::Terminal(self.term(&format!("string at {ptr}"), &re));
                        self.rule(nt, vec![s]);
                    }
                }
                "array" => self.array(nt, m, ptr)?,
                "object" => self.object(nt, m, ptr, &conditions)?,
                _ => unreachable!("allowed_types checks names"),
            }
        }
        Ok(())
    }

    /// `not`: the forms with an exact grammar are `not: {type: ...}` (the complement of
    /// the types) and `not: {}`/`true` (nothing); others are reported.
    fn check_not(&mut self, m: &Map<String, Value>, ptr: &str) -> R<()> {
        if !not_type_form(&m["not"]) {
            self.diags.unsupported(
                &child(ptr, "not"),
                "not",
                "`not` is supported only as `not: {\"type\": ...}`, a boolean, or a condition on which members an object has",
            )?;
        }
        Ok(())
    }

    /// The JSON values of an `enum`/`const` are written as they are; other assertions
    /// beside them must be ones [`Self::instance_ok`] can decide.
    fn check_enum_siblings(&mut self, m: &Map<String, Value>, ptr: &str) -> R<()> {
        for k in m.keys() {
            let decidable = matches!(
                k.as_str(),
                "type"
                    | "enum"
                    | "const"
                    | "minLength"
                    | "maxLength"
                    | "pattern"
                    | "format"
                    | "minimum"
                    | "maximum"
                    | "exclusiveMinimum"
                    | "exclusiveMaximum"
                    | "multipleOf"
                    | "minItems"
                    | "maxItems"
                    | "minProperties"
                    | "maxProperties"
                    | "required"
            ) || keywords::classify(k) == KeywordClass::Annotation;
            let decidable = decidable
                && (k != "format" || m[k].as_str().and_then(formats::format_regex).is_some())
                && (k != "pattern"
                    || m[k]
                        .as_str()
                        .and_then(|p| ecma_regex::translate(p).ok())
                        .is_some_and(|r| regex_automata::meta::Regex::new(&r).is_ok()));
            if !decidable {
                self.diags.unsupported(
                    &child(ptr, k),
                    k,
                    format!("`{k}` beside `enum`/`const` is not checked against the listed values"),
                )?;
            }
        }
        Ok(())
    }

    /// Whether a listed value satisfies the (decidable) assertions of a flat schema.
    fn instance_ok(&self, v: &Value, m: &Map<String, Value>) -> bool {
        let num = |k: &str| m.get(k).and_then(Value::as_f64);
        match v {
            Value::String(s) => {
                let n = s.chars().count() as f64;
                if num("minLength").is_some_and(|x| n < x)
                    || num("maxLength").is_some_and(|x| n > x)
                {
                    return false;
                }
                if let Some(Value::String(p)) = m.get("pattern") {
                    let ok = ecma_regex::translate(p)
                        .ok()
                        .and_then(|r| regex_automata::meta::Regex::new(&r).ok())
                        .is_some_and(|re| re.is_match(s));
                    if !ok {
                        return false;
                    }
                }
                if let Some(Value::String(f)) = m.get("format") {
                    if let Some(re) = formats::format_regex(f) {
                        let ok = regex_automata::meta::Regex::new(&format!("^(?:{re})$"))
                            .is_ok_and(|re| re.is_match(s));
                        if !ok {
                            return false;
                        }
                    }
                }
                true
            }
            Value::Number(x) => {
                let x = x.as_f64().unwrap_or(f64::NAN);
                !(num("minimum").is_some_and(|b| x < b)
                    || num("maximum").is_some_and(|b| x > b)
                    || num("exclusiveMinimum").is_some_and(|b| x <= b)
                    || num("exclusiveMaximum").is_some_and(|b| x >= b)
                    || num("multipleOf").is_some_and(|k| (x / k).fract() != 0.0))
            }
            Value::Array(a) => {
                let n = a.len() as f64;
                !(num("minItems").is_some_and(|b| n < b) || num("maxItems").is_some_and(|b| n > b))
            }
            Value::Object(o) => {
                let n = o.len() as f64;
                let req_ok = m.get("required").and_then(Value::as_array).is_none_or(|r| {
                    r.iter()
                        .all(|k| k.as_str().is_some_and(|k| o.contains_key(k)))
                });
                req_ok
                    && !(num("minProperties").is_some_and(|b| n < b)
                        || num("maxProperties").is_some_and(|b| n > b))
            }
            _ => true,
        }
    }

    /// The grammar symbols of one JSON value, written compactly in its own key order
    /// (objects in any order under [`PropertyOrder::Any`]; `ptr`: where it is listed).
    fn const_symbols(&mut self, v: &Value, ptr: &str) -> R<Vec<Symbol>> {
        Ok(match v {
            Value::Array(a) => {
                let mut out = vec![self.lit("[")];
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(self.lit(","));
                    }
                    out.extend(self.const_symbols(x, ptr)?);
                }
                out.push(self.lit("]"));
                out
            }
            Value::Object(o) => {
                if self.opts.order.any() {
                    if let Some(syms) = self.const_object_any_order(o, ptr)? {
                        return Ok(syms);
                    }
                }
                let mut out = vec![self.lit("{")];
                for (i, (k, x)) in o.iter().enumerate() {
                    if i > 0 {
                        out.push(self.lit(","));
                    }
                    out.push(self.lit(&string_lang::literal_text(k)));
                    out.push(self.lit(":"));
                    out.extend(self.const_symbols(x, ptr)?);
                }
                out.push(self.lit("}"));
                out
            }
            Value::Number(n) => {
                // 1 and 1.0 are the same JSON Schema value.
                let f = n.as_f64().unwrap_or(f64::NAN);
                if f.fract() == 0.0 && f.abs() < 1e30 {
                    let i = f as i128;
                    let re = number_lang::integer_regex(number_lang::IntRange {
                        lo: Some(i),
                        hi: Some(i),
                    })
                    .expect("a one-value range");
                    Symbol::Terminal(self.term(&n.to_string(), &re))
                } else {
                    self.lit(&n.to_string())
                }
                .into_vec()
            }
            other => vec![self.lit(&other.to_string())],
        })
    }

    /// A listed object with its members in any order (every member required);
    /// `None` past the any-order limit in lenient mode (then in listed order).
    fn const_object_any_order(
        &mut self,
        o: &Map<String, Value>,
        ptr: &str,
    ) -> R<Option<Vec<Symbol>>> {
        let mut named = Vec::new();
        for (k, x) in o {
            let value = self.new_nt(&format!("listed member {k}@{ptr}"))?;
            let syms = self.const_symbols(x, ptr)?;
            self.rule(value, syms);
            named.push(Named {
                key: self.lit(&string_lang::literal_text(k)),
                value,
                bit: 0,
                required: true,
            });
        }
        let members = any_order::Members {
            named,
            extras: Vec::new(),
            assignments: vec![0],
            min: 0,
            max: None,
            comma: self.lit(","),
            colon: self.lit(":"),
        };
        Ok(match any_order::build(self, &members, ptr)? {
            Built::Members(start) => Some(vec![
                self.lit("{"),
                Symbol::Nonterminal(start),
                self.lit("}"),
            ]),
            Built::NoObject => unreachable!("every member required, no condition"),
            Built::DeclaredOrder => None,
        })
    }

    fn number_regex(
        &mut self,
        m: &Map<String, Value>,
        ptr: &str,
        integer: bool,
    ) -> R<Option<String>> {
        let bound = |k: &str| -> R<Option<f64>> {
            match m.get(k) {
                None => Ok(None),
                Some(Value::Number(n)) => Ok(n.as_f64()),
                Some(Value::Bool(_)) => Ok(None),
                Some(_) => Err(issue(
                    &child(ptr, k),
                    Some(k),
                    format!("`{k}` must be a number"),
                )),
            }
        };
        let mut lo = bound("minimum")?;
        let mut hi = bound("maximum")?;
        let mut lo_ex = bound("exclusiveMinimum")?;
        let mut hi_ex = bound("exclusiveMaximum")?;
        // Draft 4: boolean exclusiveMinimum/exclusiveMaximum modify minimum/maximum.
        if m.get("exclusiveMinimum") == Some(&Value::Bool(true)) {
            lo_ex = lo.take();
        }
        if m.get("exclusiveMaximum") == Some(&Value::Bool(true)) {
            hi_ex = hi.take();
        }
        let mut integer = integer;
        if let Some(k) = m.get("multipleOf") {
            let k = k.as_f64().unwrap_or(0.0);
            if k == 1.0 {
                integer = true;
            } else if k > 0.0 && integer && k.fract() == 0.0 {
                self.diags.unsupported(
                    &child(ptr, "multipleOf"),
                    "multipleOf",
                    format!("`multipleOf: {k}` on integers is not supported (only 1)"),
                )?;
            } else if k > 0.0 {
                let digits = (-k.log10()).round();
                let is_power = digits >= 0.0 && (10f64.powf(-digits) - k).abs() < 1e-12 * k;
                if !is_power || lo.or(hi).or(lo_ex).or(hi_ex).is_some() || digits > 50.0 {
                    self.diags.unsupported(
                        &child(ptr, "multipleOf"),
                        "multipleOf",
                        format!("`multipleOf: {k}` is supported only as 1, or as 10^-n on numbers without bounds"),
                    )?;
                } else {
                    return Ok(Some(format!(
                        "-?(?:0|[1-9][0-9]*)(?:\\.[0-9]{{1,{}}})?",
                        digits as u32
                    )));
                }
            }
        }
        let to_i = |x: f64, k: &str| -> R<i128> {
            if x.is_finite() && x.abs() < 1e36 {
                Ok(x as i128)
            } else {
                Err(issue(
                    &child(ptr, k),
                    Some(k),
                    format!("bound {x} is out of the supported range (|x| < 1e36)"),
                ))
            }
        };
        if integer {
            let mut l: Option<i128> = None;
            let mut h: Option<i128> = None;
            if let Some(x) = lo {
                l = Some(to_i(x.ceil(), "minimum")?);
            }
            if let Some(x) = lo_ex {
                let v = to_i(x.floor(), "exclusiveMinimum")? + 1;
                l = Some(l.map_or(v, |a| a.max(v)));
            }
            if let Some(x) = hi {
                h = Some(to_i(x.floor(), "maximum")?);
            }
            if let Some(x) = hi_ex {
                let v = to_i(x.ceil(), "exclusiveMaximum")? - 1;
                h = Some(h.map_or(v, |a| a.min(v)));
            }
            if l.zip(h).is_some_and(|(a, b)| a > b) {
                return Ok(None);
            }
            let range = number_lang::IntRange { lo: l, hi: h };
            return Ok(if self.opts.draft == Draft::Draft4 {
                number_lang::plain_integer_regex(range)
            } else {
                number_lang::integer_regex(range)
            });
        }
        if lo.or(hi).or(lo_ex).or(hi_ex).is_none() {
            return Ok(Some(number_lang::ANY_NUMBER.to_string()));
        }
        // Non-integers: the tighter of inclusive/exclusive wins.
        let (l, l_key) = match (lo, lo_ex) {
            (Some(a), Some(b)) if b >= a => (Some((b, true)), "exclusiveMinimum"),
            (Some(a), _) => (Some((a, false)), "minimum"),
            (None, Some(b)) => (Some((b, true)), "exclusiveMinimum"),
            (None, None) => (None, "minimum"),
        };
        let (h, h_key) = match (hi, hi_ex) {
            (Some(a), Some(b)) if b <= a => (Some((b, true)), "exclusiveMaximum"),
            (Some(a), _) => (Some((a, false)), "maximum"),
            (None, Some(b)) => (Some((b, true)), "exclusiveMaximum"),
            (None, None) => (None, "maximum"),
        };
        let l = l.map(|(x, e)| to_i(x, l_key).map(|_| (x, e))).transpose()?;
        let h = h.map(|(x, e)| to_i(x, h_key).map(|_| (x, e))).transpose()?;
        if l.iter().chain(&h).all(|(x, _)| x.fract() == 0.0) {
            let (l, h) = (
                l.map(|(x, e)| (x as i128, e)),
                h.map(|(x, e)| (x as i128, e)),
            );
            return Ok(number_lang::number_regex(
                l.map(|b| b.0),
                l.is_some_and(|b| b.1),
                h.map(|b| b.0),
                h.is_some_and(|b| b.1),
            ));
        }
        // Decimal bounds: compared digit by digit (`number_lang::decimal_regex`).
        let dec =
            |b: Option<(f64, bool)>| b.and_then(|(x, e)| number_lang::DecimalBound::from_f64(x, e));
        Ok(number_lang::decimal_regex(dec(l).as_ref(), dec(h).as_ref()))
    }

    /// The character language of a string schema (pattern, format, lengths).
    fn string_chars(&mut self, m: &Map<String, Value>, ptr: &str) -> R<Option<Hir>> {
        let mut core: Option<(Hir, &str)> = None;
        if let Some(p) = m.get("pattern") {
            let kp = child(ptr, "pattern");
            let p = p
                .as_str()
                .ok_or_else(|| issue(&kp, Some("pattern"), "`pattern` must be a string"))?;
            match ecma_regex::translate(p)
                .map_err(|e| e.0)
                .and_then(|r| string_lang::parse_chars(&r))
            {
                Ok(h) => core = Some((string_lang::unanchored(&h), "pattern")),
                Err(e) => self
                    .diags
                    .unsupported(&kp, "pattern", format!("pattern `{p}`: {e}"))?,
            }
        }
        if let Some(f) = m.get("format") {
            let kp = child(ptr, "format");
            let f = f
                .as_str()
                .ok_or_else(|| issue(&kp, Some("format"), "`format` must be a string"))?;
            match formats::format_regex(f) {
                Some(re) if core.is_none() => {
                    let h = FormatStrings::chars(f, &re).map_err(|e| {
                        issue(&kp, Some("format"), format!("internal format regex: {e}"))
                    })?;
                    core = Some((h, "format"));
                }
                Some(_) => self.diags.unsupported(
                    &kp,
                    "format",
                    "`format` together with `pattern` (their intersection is not written as one regex)",
                )?,
                None => match formats::why_not(f) {
                    Some(why) => {
                        self.diags
                            .unsupported(&kp, "format", format!("format `{f}`: {why}"))?
                    }
                    // Not a format the specification defines: an annotation, which
                    // validators (the `jsonschema` crate too) ignore; listed.
                    None => self.diags.warn(issue(
                        &kp,
                        Some("format"),
                        format!("unknown format `{f}`: no effect (JSON Schema validators ignore unknown formats)"),
                    )),
                },
            }
        }
        let (min, max) = (count(m, "minLength", ptr)?, count(m, "maxLength", ptr)?);
        let h = match (core, min.is_some() || max.is_some()) {
            (None, _) => string_lang::repeat(
                string_lang::any_char(),
                min.unwrap_or(0).min(u32::MAX as u64) as u32,
                max.map(|x| x.min(u32::MAX as u64) as u32),
            ),
            (Some((h, _)), false) => h,
            (Some((h, what)), true) => {
                match string_lang::with_length(h.clone(), min.unwrap_or(0), max) {
                    Some(x) => x,
                    None => {
                        let kw = if max.is_some() {
                            "maxLength"
                        } else {
                            "minLength"
                        };
                        self.diags.unsupported(
                            &child(ptr, kw),
                            kw,
                            format!("`{kw}` together with this `{what}` (their intersection is not written as one regex)"),
                        )?;
                        h
                    }
                }
            }
        };
        Ok(Some(h))
    }

    /// A string with only length bounds, written as chunk lexemes ([`chunked_string`]);
    /// `false` if the schema is not such a string, its bounds are below one chunk, or
    /// whitespace is free (where an ignored run could stand between chunks).
    fn chunked_string(&mut self, nt: u32, m: &Map<String, Value>, ptr: &str) -> R<bool> {
        let (min, max) = (count(m, "minLength", ptr)?, count(m, "maxLength", ptr)?);
        let chunk = chunked_string::CHUNK_CHARS;
        if self.opts.whitespace != Whitespace::Compact
            || m.contains_key("pattern")
            || m.contains_key("format")
            || !chunked_string::is_chunked(min, max, chunk)
        {
            return Ok(false);
        }
        let (mut min, mut max) = (min.unwrap_or(0), max);
        if max.is_some_and(|x| x < min) {
            return Ok(true);
        }
        // Past the limit (lenient): no upper bound, or no lower one — a superset.
        let limit = chunked_string::MAX_STRING_CHUNKS * chunk;
        for (kw, n) in [("maxLength", max.unwrap_or(0)), ("minLength", min)] {
            if n / chunk > chunked_string::MAX_STRING_CHUNKS {
                self.diags.unsupported(
                    &child(ptr, kw),
                    kw,
                    format!("{n} characters: more than {limit} (the limit on counted string lengths; lenient: read as no bound)"),
                )?;
                if kw == "maxLength" {
                    max = None;
                } else {
                    min = 0;
                }
            }
        }
        let quote = self.lit("\"");
        if min == 0 {
            self.rule(nt, vec![quote, quote]);
        }
        let body = match self.string_bodies.get(&(min, max)) {
            Some(&body) => body,
            None => {
                let body = self.string_body(min, max, chunk, ptr)?;
                self.string_bodies.insert((min, max), body);
                body
            }
        };
        self.rule(nt, vec![quote, Symbol::Nonterminal(body), quote]);
        Ok(true)
    }

    /// The characters of a chunked string of `min..=max` characters (`min` ≥ 1), without
    /// its quotes: `k` middle chunks, then a tail of fewer characters than a chunk.
    ///
    /// The chunks are counted left-recursively — `R(k) → R(j) chunk`, and the body
    /// `→ R(j) tail(j)` — so the parse stack stays a few entries deep inside the string
    /// whatever its length (a right-recursive count would push one entry per chunk and
    /// pop them all in one reduction chain at the end). The quotes stay outside the
    /// body so that every body item's lookahead is the closing quote: canonical LR(1)
    /// then builds the count's states once, not once per context the string stands in
    /// (what follows the closing quote). Bodies are shared by every string with the same
    /// bounds, whatever else their schemas say (`description`...).
    fn string_body(&mut self, min: u64, max: Option<u64>, chunk: u64, ptr: &str) -> R<u32> {
        let body = self.new_nt(&format!("string of {min}..{max:?} characters at {ptr}"))?;
        if let Some(max) = max.filter(|m| m / chunk >= chunked_string::BLOCKED_FROM_CHUNKS) {
            self.blocked_string_body(body, min, max, chunk, ptr)?;
            return Ok(body);
        }
        let steps = chunked_string::plan(min, max, chunk);
        // counts[j - 1]: `j` chunks read.
        let counts: Vec<u32> = (1..steps.len())
            .map(|j| self.new_nt(&format!("string at {ptr} after {j} chunks")))
            .collect::<R<_>>()?;
        let read = |j: usize| (j > 0).then(|| Symbol::Nonterminal(counts[j - 1]));
        let mid = self.string_chars_terminal(chunk, chunk, "string chunk", ptr)?;
        for (j, step) in steps.iter().enumerate() {
            if let Some(k) = step.more {
                self.rule(counts[k - 1], read(j).into_iter().chain([mid]).collect());
            }
            let Some((lo, hi)) = step.tail else { continue };
            if lo == 0 && j > 0 {
                self.rule(body, read(j).into_iter().collect());
            }
            if lo.max(1) <= hi {
                let tail = self.string_chars_terminal(lo.max(1), hi, "string end", ptr)?;
                self.rule(body, read(j).into_iter().chain([tail]).collect());
            }
        }
        Ok(body)
    }

    /// The rules of `body`, a chunked string of `min..=max` characters (`min` ≥ 1) past
    /// [`chunked_string::BLOCKED_FROM_CHUNKS`] chunks, counted in blocks: `O(a) → O(a-1)
    /// block` (left recursive, as in [`Self::string_body`]), `block → chunk^b`, and
    /// `body → O(a) rest`, where a rest is `chunk^r tail` within the bounds left after
    /// `a` blocks. The rests are interned by their bounds, so the LR states inside a
    /// block are shared by every `a` with the same rest; the parse stack holds at most
    /// a block's chunks, popped by one reduction per block.
    fn blocked_string_body(
        &mut self,
        body: u32,
        min: u64,
        max: u64,
        chunk: u64,
        ptr: &str,
    ) -> R<()> {
        let block = chunked_string::block_size(max / chunk);
        let plan = chunked_string::block_plan(min, max, chunk, block);
        let mid = self.string_chars_terminal(chunk, chunk, "string chunk", ptr)?;
        // A block and a rest are flat runs of chunks, not a count: inside a block the
        // parser only shifts, so a token that stays inside reads one stack state.
        let whole = self.new_nt(&format!("string at {ptr}: a block of {block} chunks"))?;
        self.rule(whole, vec![mid; block as usize]);
        // blocks[a - 1]: `a` whole blocks read.
        let blocks: Vec<u32> = (1..plan.len())
            .map(|a| self.new_nt(&format!("string at {ptr} after {a} blocks")))
            .collect::<R<_>>()?;
        for a in 1..plan.len() {
            let mut rhs: Vec<Symbol> = (a > 1)
                .then(|| Symbol::Nonterminal(blocks[a - 2]))
                .into_iter()
                .collect();
            rhs.push(Symbol::Nonterminal(whole));
            self.rule(blocks[a - 1], rhs);
        }
        let mut rests: HashMap<(u64, u64), u32> = HashMap::new();
        for (a, step) in plan.iter().enumerate() {
            let Some((lo, hi)) = step.rest else { continue };
            let read = (a > 0).then(|| Symbol::Nonterminal(blocks[a - 1]));
            if lo == 0 && a > 0 {
                self.rule(body, read.into_iter().collect());
            }
            let lo = lo.max(1);
            if lo > hi {
                continue;
            }
            let rest = match rests.get(&(lo, hi)) {
                Some(&rest) => rest,
                None => {
                    let rest = self.new_nt(&format!(
                        "string at {ptr}: {lo}..{hi} characters after whole blocks"
                    ))?;
                    for (r, t_lo, t_hi) in chunked_string::rest_splits(lo, hi, chunk, block) {
                        let prefix = vec![mid; r as usize];
                        if t_lo == 0 && r > 0 {
                            self.rule(rest, prefix.clone());
                        }
                        if t_lo.max(1) <= t_hi {
                            let tail =
                                self.string_chars_terminal(t_lo.max(1), t_hi, "string end", ptr)?;
                            self.rule(rest, prefix.into_iter().chain([tail]).collect());
                        }
                    }
                    rests.insert((lo, hi), rest);
                    rest
                }
            };
            self.rule(
                body,
                read.into_iter()
                    .chain([Symbol::Nonterminal(rest)])
                    .collect(),
            );
        }
        Ok(())
    }

    /// The terminal of `lo..=hi` string characters (no quotes), named `what at ptr`.
    fn string_chars_terminal(&mut self, lo: u64, hi: u64, what: &str, ptr: &str) -> R<Symbol> {
        let regex = match self.chars_terminals.get(&(lo, hi)) {
            Some(regex) => regex.clone(),
            None => {
                let h = string_lang::repeat(string_lang::any_char(), lo as u32, Some(hi as u32));
                let regex = string_lang::encode(&h).map(|h| h.to_string());
                self.chars_terminals.insert((lo, hi), regex.clone());
                regex
            }
        };
        let regex = regex.map_err(|e| {
            issue(
                ptr,
                Some("maxLength"),
                format!("cannot write as JSON text: {e}"),
            )
        })?;
        Ok(Symbol::Terminal(
            self.term(&format!("{what} at {ptr}"), &regex),
        ))
    }

    fn string_regex(&mut self, m: &Map<String, Value>, ptr: &str) -> R<Option<String>> {
        let Some(h) = self.string_chars(m, ptr)? else {
            return Ok(None);
        };
        let format = m.get("format").and_then(Value::as_str);
        let known = self.string_terminals.iter().find(|(k, _)| *k == h);
        let text = match known {
            Some((_, text)) => text.clone(),
            None if format.is_some_and(|f| FormatStrings::is_format(f, &h)) => {
                let text = FormatStrings::terminal(format.unwrap_or_default(), &h);
                self.string_terminals.push((h, text.clone()));
                text
            }
            None => {
                let text = string_lang::string_terminal(&h);
                self.string_terminals.push((h, text.clone()));
                text
            }
        };
        text.map(Some).map_err(|e| {
            issue(
                ptr,
                Some("pattern"),
                format!("cannot write as JSON text: {e}"),
            )
        })
    }

    fn array(&mut self, nt: u32, m: &Map<String, Value>, ptr: &str) -> R<()> {
        let mut prefix: Vec<(Value, String)> = Vec::new();
        let mut rest: Value = json!(true);
        let mut rest_ptr = ptr.to_string();
        let items = m.get("items");
        if let Some(Value::Array(p)) = m.get("prefixItems") {
            for (i, s) in p.iter().enumerate() {
                prefix.push((s.clone(), child(&child(ptr, "prefixItems"), &i.to_string())));
            }
            if let Some(it) = items {
                rest = it.clone();
                rest_ptr = child(ptr, "items");
            }
        } else if let Some(Value::Array(p)) = items {
            for (i, s) in p.iter().enumerate() {
                prefix.push((s.clone(), child(&child(ptr, "items"), &i.to_string())));
            }
            if let Some(a) = m.get("additionalItems") {
                rest = a.clone();
                rest_ptr = child(ptr, "additionalItems");
            }
        } else if let Some(it) = items {
            rest = it.clone();
            rest_ptr = child(ptr, "items");
        }
        let min = count(m, "minItems", ptr)?.unwrap_or(0);
        let mut max = count(m, "maxItems", ptr)?;
        if rest == json!(false) {
            let p = prefix.len() as u64;
            max = Some(max.map_or(p, |x| x.min(p)));
        }
        if m.get("uniqueItems") == Some(&Value::Bool(true)) && max.is_none_or(|x| x > 1) {
            if prefix.is_empty() {
                if let Some(domain) = self.finite_domain(&rest, &rest_ptr)? {
                    return self.unique_array(nt, &domain, min, max, ptr);
                }
            }
            self.diags.unsupported(
                &child(ptr, "uniqueItems"),
                "uniqueItems",
                format!("`uniqueItems: true` is supported only with `maxItems` ≤ 1 or items from a list of at most {MAX_UNIQUE_DOMAIN} scalar values"),
            )?;
        }
        if max.is_some_and(|x| x < min) {
            return Ok(());
        }
        let cap = max.unwrap_or((prefix.len() as u64).max(min).max(1));
        check_counter(cap, max.is_some(), ptr, ("maxItems", "minItems"))?;
        let mut item_nts = Vec::new();
        for (s, p) in &prefix {
            item_nts.push(self.value_nt(s, p)?);
        }
        let rest_nt = self.value_nt(&rest, &rest_ptr)?;
        let pos: Vec<u32> = (0..=cap)
            .map(|i| self.new_nt(&format!("items@{ptr}#{i}")))
            .collect::<R<_>>()?;
        let (open, close, comma) = (self.lit("["), self.lit("]"), self.lit(","));
        for i in 0..=cap {
            if i >= min {
                self.rule(pos[i as usize], vec![]);
            }
            if max.is_some_and(|x| i >= x) {
                continue;
            }
            let next = if max.is_none() {
                (i + 1).min(cap)
            } else {
                i + 1
            };
            let item = item_nts.get(i as usize).copied().unwrap_or(rest_nt);
            let mut rhs = Vec::new();
            if i > 0 {
                rhs.push(comma);
            }
            rhs.push(Symbol::Nonterminal(item));
            rhs.push(Symbol::Nonterminal(pos[next as usize]));
            self.rule(pos[i as usize], rhs);
        }
        self.rule(nt, vec![open, Symbol::Nonterminal(pos[0]), close]);
        Ok(())
    }

    /// `conditions`: which members the object may have together ([`presence`]), beside
    /// the ones its `dependencies`/`dependentRequired`/`dependentSchemas` add here.
    /// The values a schema allows, if they are a list of at most [`MAX_UNIQUE_DOMAIN`]
    /// scalars (`enum`/`const` decided by the validator), each once (`1` and `1.0` are
    /// one value).
    fn finite_domain(&mut self, schema: &Value, ptr: &str) -> R<Option<Vec<Value>>> {
        let f = self.flatten(schema, ptr, 0)?;
        if f.never {
            return Ok(Some(Vec::new()));
        }
        let Some(values) = enum_values(&f.map).filter(|_| f.groups.is_empty()) else {
            return Ok(None);
        };
        let types = allowed_types(&f.map, ptr)?;
        let verdicts = self.listed.verdicts(&f.map, &values);
        let mut out: Vec<Value> = Vec::new();
        for (v, ok) in values.into_iter().zip(verdicts) {
            let (Some(ok), false) = (ok, v.is_array() || v.is_object()) else {
                return Ok(None);
            };
            let v = match v.as_f64() {
                Some(x) if x.fract() == 0.0 && x.abs() < 1e15 => json!(x as i64),
                _ => v,
            };
            if ok && value_has_type(&v, &types) && !out.contains(&v) {
                out.push(v);
            }
        }
        Ok((out.len() <= MAX_UNIQUE_DOMAIN).then_some(out))
    }

    /// `uniqueItems: true` over a finite list of values: one nonterminal per set of
    /// values used so far (reachable sets only), so no value repeats.
    fn unique_array(
        &mut self,
        nt: u32,
        domain: &[Value],
        min: u64,
        max: Option<u64>,
        ptr: &str,
    ) -> R<()> {
        let items = domain
            .iter()
            .map(|v| self.const_symbols(v, ptr))
            .collect::<R<Vec<Vec<Symbol>>>>()?;
        let (open, close, comma) = (self.lit("["), self.lit("]"), self.lit(","));
        let mut table: HashMap<u32, u32> = HashMap::new();
        let start = self.new_nt(&format!("unique@{ptr}#0"))?;
        table.insert(0, start);
        let mut work = vec![0u32];
        while let Some(set) = work.pop() {
            let here = table[&set];
            let n = u64::from(set.count_ones());
            if n >= min {
                self.rule(here, vec![]);
            }
            if max.is_some_and(|x| n >= x) {
                continue;
            }
            for (i, item) in items.iter().enumerate() {
                let next = set | (1 << i);
                if next == set {
                    continue;
                }
                let then = match table.get(&next) {
                    Some(&x) => x,
                    None => {
                        let x = self.new_nt(&format!("unique@{ptr}#{next:b}"))?;
                        table.insert(next, x);
                        work.push(next);
                        x
                    }
                };
                let mut rhs = if n > 0 { vec![comma] } else { vec![] };
                rhs.extend(item.iter().copied());
                rhs.push(Symbol::Nonterminal(then));
                self.rule(here, rhs);
            }
        }
        self.rule(nt, vec![open, Symbol::Nonterminal(start), close]);
        Ok(())
    }

    fn object(
        &mut self,
        nt: u32,
        m: &Map<String, Value>,
        ptr: &str,
        conditions: &Presence,
    ) -> R<()> {
        let mut props: Vec<(String, Value)> = m
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        if self.opts.order == PropertyOrder::Sorted {
            props.sort_by(|a, b| a.0.cmp(&b.0));
        }
        let required: Vec<String> = m
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let patterns: Vec<(String, Value)> = m
            .get("patternProperties")
            .and_then(Value::as_object)
            .map(|p| p.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        let additional = m.get("additionalProperties").cloned();
        let names = m.get("propertyNames").cloned();
        let pp = child(ptr, "patternProperties");
        let mut pattern_res = Vec::new();
        for (p, _) in &patterns {
            let re = ecma_regex::translate(p)
                .map_err(|e| e.0)
                .and_then(|r| {
                    regex_automata::meta::Regex::new(&r)
                        .map(|re| (re, r))
                        .map_err(|e| e.to_string())
                })
                .map_err(|e| {
                    issue(
                        &child(&pp, p),
                        Some("patternProperties"),
                        format!("pattern `{p}`: {e}"),
                    )
                })?;
            pattern_res.push(re);
        }
        let matching = |k: &str| -> Vec<Value> {
            patterns
                .iter()
                .zip(&pattern_res)
                .filter(|(_, (re, _))| re.is_match(k))
                .map(|((_, s), _)| s.clone())
                .collect()
        };
        // Slots: declared properties, then required names declared nowhere.
        let mut slots: Vec<(String, Value, bool, String)> = Vec::new();
        let mut declared: Vec<String> = Vec::new();
        for (k, s) in &props {
            let mut all = vec![s.clone()];
            all.extend(matching(k));
            let schema = if all.len() == 1 {
                s.clone()
            } else {
                json!({"allOf": all})
            };
            slots.push((
                k.clone(),
                schema,
                required.contains(k),
                child(&child(ptr, "properties"), k),
            ));
            declared.push(k.clone());
        }
        for k in &required {
            if !declared.contains(k) {
                let hits = matching(k);
                let schema = if !hits.is_empty() {
                    json!({"allOf": hits})
                } else {
                    additional.clone().unwrap_or(json!(true))
                };
                slots.push((k.clone(), schema, true, child(ptr, "required")));
                declared.push(k.clone());
            }
        }
        // Presence conditions; a name they mention that is declared nowhere may still
        // occur as an additional member (in any order among them): it is taken out of
        // the additional names and written as its own literal, so the automaton sees
        // it, with the schema an additional member of that name would have.
        let formula = self.dependency_conditions(m, ptr, conditions)?;
        let mut mentioned = Vec::new();
        formula.names(&mut mentioned);
        let mut loose: Vec<(String, Value, String)> = Vec::new();
        let undeclared: Vec<String> = mentioned
            .iter()
            .filter(|k| !declared.contains(k))
            .cloned()
            .collect();
        for k in &undeclared {
            // As for a required name declared nowhere (above).
            let hits = matching(k);
            let schema = if !hits.is_empty() {
                json!({"allOf": hits})
            } else if additional.as_ref() != Some(&json!(false)) {
                additional.clone().unwrap_or(json!(true))
            } else {
                continue; // cannot occur
            };
            loose.push((k.clone(), schema, child(ptr, "additionalProperties")));
            declared.push(k.clone());
        }
        // propertyNames on declared names: decided here, per name.
        if let Some(n) = &names {
            let np = child(ptr, "propertyNames");
            let f = self.flatten(n, &np, 0)?;
            let mut kept = Vec::new();
            for s in slots {
                let ok = !f.never && f.groups.is_empty() && self.name_ok(&s.0, &f.map);
                if !f.groups.is_empty() {
                    self.diags.unsupported(
                        &np,
                        "propertyNames",
                        "`anyOf`/`oneOf` inside `propertyNames`",
                    )?;
                }
                if ok {
                    kept.push(s);
                } else if s.2 {
                    return Ok(()); // a required name is not allowed: no object.
                }
            }
            slots = kept;
        }
        // Members after the declared ones.
        // Each with its names' language as a difference, where it is one (the lexer's
        // shortcut: `Difference`).
        let mut extras: Vec<(Hir, Value, String, Option<Difference>)> = Vec::new();
        let trivial = |v: &Value| v == &json!(true) || v == &json!({});
        let additional_false = additional.as_ref() == Some(&json!(false));
        let patterns_matter = patterns.iter().any(|(_, s)| !trivial(s));
        // Patterns that match every name (`.*`): every other name gets all their
        // schemas and `additionalProperties` never applies.
        let universal = patterns_matter
            && names.is_none()
            && patterns
                .iter()
                .zip(&pattern_res)
                .all(|((_, s), (_, rust))| {
                    trivial(s)
                        || string_lang::parse_chars(rust)
                            .is_ok_and(|h| string_lang::is_universal(&h))
                });
        // One pattern `^C*$` beside additional members: names in `C*` get its schema,
        // the others (a character outside `C`) `additionalProperties`.
        let star = (!additional_false && names.is_none() && patterns.len() == 1 && patterns_matter)
            .then(|| string_lang::parse_chars(&pattern_res[0].1).ok())
            .flatten()
            .and_then(|h| string_lang::class_star(&h))
            .filter(|_| declared.iter().all(|k| pattern_res[0].0.is_match(k)));
        if let (false, Some(c)) = (universal, star) {
            let inside = string_lang::none_of_within(&declared, &c);
            let difference = string_lang::none_of_difference(&declared, &c);
            extras.push((inside, patterns[0].1.clone(), pp.clone(), difference));
            let v = additional.clone().unwrap_or(json!(true));
            let outside = string_lang::outside_class_star(&c);
            if outside.properties().minimum_len().is_some() {
                extras.push((outside, v, child(ptr, "additionalProperties"), None));
            }
        } else if universal {
            let schemas: Vec<Value> = patterns
                .iter()
                .filter(|(_, s)| !trivial(s))
                .map(|(_, s)| s.clone())
                .collect();
            extras.push((
                string_lang::none_of(&declared),
                json!({ "allOf": schemas }),
                pp.clone(),
                string_lang::none_of_difference(&declared, &string_lang::every_char()),
            ));
        } else if !patterns.is_empty() && (additional_false || patterns_matter) {
            if !additional_false {
                self.diags.unsupported(
                    &pp,
                    "patternProperties",
                    "`patternProperties` with `additionalProperties` other than false (the other names are a regex complement)",
                )?;
            }
            let first = &patterns[0].1;
            if patterns.iter().any(|(_, s)| s != first) {
                self.diags.unsupported(
                    &pp,
                    "patternProperties",
                    "several `patternProperties` with different schemas (names matching two patterns would need both)",
                )?;
            }
            for ((p, s), (re, rust)) in patterns.iter().zip(&pattern_res) {
                let h = string_lang::parse_chars(rust)
                    .map_err(|e| issue(&child(&pp, p), Some("patternProperties"), e))?;
                let mut h = string_lang::unanchored(&h);
                if let Some(k) = declared.iter().find(|k| re.is_match(k)) {
                    // A finite set of names minus the declared ones is a list; otherwise
                    // it would need a regex difference.
                    match string_lang::finite_strings(&h, MAX_COUNTED as usize) {
                        Some(words) => {
                            h = Hir::alternation(
                                words
                                    .into_iter()
                                    .filter(|w| !declared.contains(w))
                                    .map(|w| Hir::literal(w.into_bytes()))
                                    .collect(),
                            )
                        }
                        None => self.diags.unsupported(
                            &child(&pp, p),
                            "patternProperties",
                            format!("declared property `{k}` also matches pattern `{p}`"),
                        )?,
                    }
                }
                if h.properties().minimum_len().is_some() {
                    extras.push((h, s.clone(), child(&pp, p), None));
                }
            }
            if !additional_false {
                // Lenient (strict stopped above): other names with the additional
                // schema too, so the grammar stays a superset.
                let keys = string_lang::none_of(&declared);
                let difference =
                    string_lang::none_of_difference(&declared, &string_lang::every_char());
                let v = additional.clone().unwrap_or(json!(true));
                extras.push((keys, v, child(ptr, "additionalProperties"), difference));
            }
        } else if !additional_false {
            let mut keys = string_lang::none_of(&declared);
            // Only `keys` as it stands is a difference: `propertyNames` replaces it below.
            let difference = names
                .is_none()
                .then(|| string_lang::none_of_difference(&declared, &string_lang::every_char()))
                .flatten();
            if let Some(n) = &names {
                let np = child(ptr, "propertyNames");
                if !declared.is_empty() {
                    self.diags.unsupported(
                        &np,
                        "propertyNames",
                        "`propertyNames` with both declared and additional properties (the names would be a regex intersection)",
                    )?;
                } else {
                    let f = self.flatten(n, &np, 0)?;
                    if !f.groups.is_empty() {
                        self.diags.unsupported(
                            &np,
                            "propertyNames",
                            "`anyOf`/`oneOf` inside `propertyNames`",
                        )?;
                    }
                    let strings = allowed_types(&f.map, &np)?.iter().any(|t| t == "string");
                    if f.never || !strings {
                        keys = Hir::fail();
                    } else if let Some(values) = enum_values(&f.map) {
                        self.check_enum_siblings(&f.map, &np)?;
                        let words: Vec<Hir> = values
                            .iter()
                            .filter(|v| self.name_ok_value(v, &f.map))
                            .filter_map(|v| v.as_str().map(|s| Hir::literal(s.as_bytes().to_vec())))
                            .collect();
                        keys = Hir::alternation(words);
                    } else if let Some(h) = self.string_chars(&f.map, &np)? {
                        keys = h;
                    }
                }
            }
            let ap = child(ptr, "additionalProperties");
            extras.push((
                keys,
                additional.clone().unwrap_or(json!(true)),
                ap,
                difference,
            ));
        }
        // Names no string can be (`propertyNames` that allow none) are no member: no
        // terminal whose language is empty (the lexer refuses those in Lark text, where a
        // `%json` block's terminals end up).
        extras.retain(|(h, ..)| h.properties().minimum_len().is_some());
        let n_req = slots.iter().filter(|s| s.2).count() as u64;
        let mut min = count(m, "minProperties", ptr)?.unwrap_or(0);
        let mut max = count(m, "maxProperties", ptr)?;
        if max.is_some_and(|x| x < n_req.max(min)) {
            return Ok(());
        }
        if min <= n_req {
            min = 0;
        }
        if extras.is_empty() && loose.is_empty() && max.is_some_and(|x| x >= slots.len() as u64) {
            max = None;
        }
        let cap = max.unwrap_or(min.max(1));
        check_counter(cap, max.is_some(), ptr, ("maxProperties", "minProperties"))?;
        // Symbols of each slot and extra member.
        let colon = self.lit(":");
        let comma = self.lit(",");
        let mut slot_syms = Vec::new();
        for (k, s, req, p) in &slots {
            let key = self.lit(&string_lang::literal_text(k));
            let v = self.value_nt(s, p)?;
            slot_syms.push((key, v, *req));
        }
        let mut extra_syms = Vec::new();
        for (h, s, p, difference) in &extras {
            let re = match difference {
                Some(d) => self
                    .name_terminals
                    .entry((d.base.clone(), d.words.clone()))
                    .or_insert_with(|| string_lang::string_terminal(h))
                    .clone(),
                None => string_lang::string_terminal(h),
            }
            .map_err(|e| issue(p, Some("patternProperties"), e))?;
            let key = self.term(&format!("property name at {p}"), &re);
            if let Some(d) = difference {
                self.terminals[key as usize].difference = Some(d.clone());
            }
            let key = Symbol::Terminal(key);
            let v = self.value_nt(s, p)?;
            extra_syms.push((key, v));
        }
        // The presence automaton's start: the satisfying assignments of the names the
        // conditions mention (required ones present, ones with no slot absent).
        // Reported at the object: its conditions may come from several keywords, and
        // those of `anyOf`/`oneOf` groups were taken out of the schema before this.
        if mentioned.len() > presence::MAX_PRESENCE_NAMES {
            return Err(issue(
                ptr,
                None,
                format!(
                    "the object's presence conditions (`required` under `anyOf`/`oneOf`/`not`/`if`, dependencies) mention {} member names: more than {} (the limit on presence conditions)",
                    mentioned.len(),
                    presence::MAX_PRESENCE_NAMES
                ),
            ));
        }
        let slot_of = |k: &str| slots.iter().find(|s| s.0 == k);
        let initial =
            presence::satisfying(&formula, &mentioned, |i| match slot_of(&mentioned[i]) {
                None if loose.iter().any(|l| l.0 == mentioned[i]) => None,
                None => Some(false),
                Some(s) => s.2.then_some(true),
            });
        let mut loose_syms = Vec::new();
        for (k, s, p) in &loose {
            let key = self.lit(&string_lang::literal_text(k));
            let v = self.value_nt(s, p)?;
            let bit = mentioned
                .iter()
                .position(|x| x == k)
                .expect("a mentioned name");
            loose_syms.push((key, v, 1u32 << bit));
        }
        let var: Vec<Option<usize>> = slots
            .iter()
            .map(|s| mentioned.iter().position(|k| *k == s.0))
            .collect();
        if self.opts.order.any() {
            let mut named: Vec<Named> = slot_syms
                .iter()
                .zip(&var)
                .map(|(&(key, value, required), b)| Named {
                    key,
                    value,
                    bit: b.map_or(0, |b| 1 << b),
                    required,
                })
                .collect();
            named.extend(loose_syms.iter().map(|&(key, value, bit)| Named {
                key,
                value,
                bit,
                required: false,
            }));
            let members = any_order::Members {
                named,
                extras: extra_syms.clone(),
                assignments: initial.clone(),
                min,
                max,
                comma,
                colon,
            };
            match any_order::build(self, &members, ptr)? {
                Built::Members(start) => {
                    let (open, close) = (self.lit("{"), self.lit("}"));
                    self.rule(nt, vec![open, Symbol::Nonterminal(start), close]);
                    return Ok(());
                }
                Built::NoObject => return Ok(()),
                Built::DeclaredOrder => {}
            }
        }
        // Nonterminal (slot index, members so far, presence state, loose names used,
        // phase), made on first use. Decided slots' bits are cleared from the state; a
        // loose name's bit stays, and `used` says it was written. Additional members may
        // come first (`{"$schema": …, …}`, the way configuration files begin) or last:
        // the phase says which is still open, so that each text has one parse — before
        // any named member they are leading ones (and an object of additional members
        // only is all leading), after one they are trailing ones.
        type Key = (usize, u64, presence::Assignments, u32, u8);
        // Nothing written yet / only leading additional members / a named one written.
        const FRESH: u8 = 0;
        const LEADING: u8 = 1;
        const NAMED: u8 = 2;
        let n = slot_syms.len();
        let mut table: HashMap<Key, u32> = HashMap::new();
        let mut work = Vec::new();
        // States plus the assignments they carry (`presence::MAX_MEMBER_AUTOMATON`).
        let mut size = 0usize;
        let mut get = |g: &mut Self, work: &mut Vec<Key>, key: Key| -> R<u32> {
            if let Some(&x) = table.get(&key) {
                return Ok(x);
            }
            size += 1 + key.2.len();
            if size > presence::MAX_MEMBER_AUTOMATON {
                return Err(issue(
                    ptr,
                    None,
                    format!(
                        "the members of this object need an automaton of more than {} units, its states plus the presence assignments they carry (the limit on one object's members under presence conditions: {} names mentioned, {} of them declared nowhere and so written in any order)",
                        presence::MAX_MEMBER_AUTOMATON,
                        mentioned.len(),
                        loose.len(),
                    ),
                ));
            }
            let x = g.new_nt(&format!(
                "members@{ptr}#{}.{}.{}",
                key.0,
                key.1,
                table.len()
            ))?;
            table.insert(key.clone(), x);
            work.push(key);
            Ok(x)
        };
        if initial.is_empty() {
            return Ok(());
        }
        let start = get(self, &mut work, (0, 0, initial, 0, FRESH))?;
        while let Some((i, c, state, used, phase)) = work.pop() {
            let here = get(self, &mut work, (i, c, state.clone(), used, phase))?;
            let next_c = if max.is_none() {
                (c + 1).min(cap)
            } else {
                c + 1
            };
            let can_add = max.is_none_or(|x| c < x);
            let sep = if c > 0 { vec![comma] } else { vec![] };
            // `[,] key : value` then the members after it.
            let member = |key: Symbol, v: u32, then: u32| -> Vec<Symbol> {
                let mut rhs = sep.clone();
                rhs.extend([
                    key,
                    colon,
                    Symbol::Nonterminal(v),
                    Symbol::Nonterminal(then),
                ]);
                rhs
            };
            // Leading additional members: at the first slot, before any named member.
            if i == 0 && phase != NAMED && can_add {
                let then = get(self, &mut work, (0, next_c, state.clone(), used, LEADING))?;
                for &(key, v) in &extra_syms {
                    self.rule(here, member(key, v, then));
                }
            }
            if let Some(&(key, v, req)) = slot_syms.get(i) {
                let (absent, present) = match var[i] {
                    Some(b) => presence::split(&state, b),
                    None => (state.clone(), state),
                };
                if !req && !absent.is_empty() {
                    let skip = get(self, &mut work, (i + 1, c, absent, used, phase))?;
                    self.rule(here, vec![Symbol::Nonterminal(skip)]);
                }
                if can_add && !present.is_empty() {
                    let then = get(self, &mut work, (i + 1, next_c, present, used, NAMED))?;
                    self.rule(here, member(key, v, then));
                }
            } else {
                // The end: the loose names not written are absent.
                if c >= min && state.iter().any(|a| a & !used == 0) {
                    self.rule(here, vec![]);
                }
                if can_add {
                    // Trailing additional members: after a named one.
                    if phase == NAMED {
                        let then = get(self, &mut work, (n, next_c, state.clone(), used, NAMED))?;
                        for &(key, v) in &extra_syms {
                            self.rule(here, member(key, v, then));
                        }
                    }
                    for &(key, v, bit) in &loose_syms {
                        let with: presence::Assignments =
                            state.iter().copied().filter(|a| a & bit != 0).collect();
                        if used & bit == 0 && !with.is_empty() {
                            let then = get(self, &mut work, (n, next_c, with, used | bit, NAMED))?;
                            self.rule(here, member(key, v, then));
                        }
                    }
                }
            }
        }
        let (open, close) = (self.lit("{"), self.lit("}"));
        self.rule(nt, vec![open, Symbol::Nonterminal(start), close]);
        Ok(())
    }

    /// `conditions` and the object's `dependencies`/`dependentRequired`/
    /// `dependentSchemas` as one presence condition. A dependent schema that says more
    /// than which members are present is reported (lenient: left out).
    fn dependency_conditions(
        &mut self,
        m: &Map<String, Value>,
        ptr: &str,
        conditions: &Presence,
    ) -> R<Presence> {
        let props = properties_of(m);
        let mut parts = vec![conditions.clone()];
        for kw in ["dependencies", "dependentRequired", "dependentSchemas"] {
            let Some(d) = m.get(kw) else {
                continue;
            };
            let kp = child(ptr, kw);
            let d = d
                .as_object()
                .ok_or_else(|| issue(&kp, Some(kw), format!("`{kw}` must be an object")))?;
            for (name, v) in d {
                let np = child(&kp, name);
                let cond = match v {
                    Value::Array(a) => a
                        .iter()
                        .map(|x| x.as_str().map(|s| Presence::Has(s.to_string())))
                        .collect::<Option<Vec<_>>>()
                        .map(Presence::All),
                    schema => self.presence_of(schema, &np, &props, 0)?,
                };
                match cond {
                    Some(c) => parts.push(Presence::implies(Presence::Has(name.clone()), c)),
                    None => self.diags.unsupported(
                        &np,
                        kw,
                        "a dependent schema that constrains member values, not only which members are present",
                    )?,
                }
            }
        }
        Ok(Presence::All(parts))
    }

    fn name_ok_value(&self, v: &Value, m: &Map<String, Value>) -> bool {
        v.as_str().is_some_and(|s| self.name_ok(s, m))
    }

    /// Whether a property name satisfies a flat `propertyNames` schema.
    fn name_ok(&self, name: &str, m: &Map<String, Value>) -> bool {
        let v = Value::String(name.to_string());
        let types = allowed_types(m, "#").unwrap_or_default();
        let listed = enum_values(m).is_none_or(|e| e.contains(&v));
        value_has_type(&v, &types) && listed && self.instance_ok(&v, m)
    }
}

/// Counter nonterminals are bounded ([`MAX_COUNTED`]); the error names the keyword
/// that set the bound (`keywords`: the upper one, the lower one).
fn check_counter(cap: u64, has_max: bool, ptr: &str, keywords: (&str, &str)) -> R<()> {
    if cap <= MAX_COUNTED {
        return Ok(());
    }
    let kw = if has_max { keywords.0 } else { keywords.1 };
    Err(issue(
        &child(ptr, kw),
        Some(kw),
        format!("{cap} counted positions: more than {MAX_COUNTED} (the limit on counters)"),
    ))
}

/// A count keyword (`minLength`, `maxItems`, …): a non-negative integer, also when
/// written as `2.0`.
fn count(m: &Map<String, Value>, k: &str, ptr: &str) -> R<Option<u64>> {
    match m.get(k) {
        None => Ok(None),
        Some(v) => match v.as_u64().or_else(|| {
            v.as_f64()
                .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 1e18)
                .map(|f| f as u64)
        }) {
            Some(n) => Ok(Some(n)),
            None => Err(issue(
                &child(ptr, k),
                Some(k),
                format!("`{k}` must be a non-negative integer"),
            )),
        },
    }
}

/// Small helper: one symbol as a rule body.
trait IntoVec {
    fn into_vec(self) -> Vec<Symbol>;
}

impl IntoVec for Symbol {
    fn into_vec(self) -> Vec<Symbol> {
        vec![self]
    }
}

fn pair_disjoint(g: &mut Generator<'_>, a: &Map<String, Value>, b: &Map<String, Value>) -> R<bool> {
    let ta = allowed_types(a, "#")?;
    let tb = allowed_types(b, "#")?;
    let overlap = ta.iter().any(|x| {
        tb.iter().any(|y| {
            x == y || (x == "number" && y == "integer") || (x == "integer" && y == "number")
        })
    });
    if !overlap {
        return Ok(true);
    }
    if let (Some(ea), Some(eb)) = (enum_values(a), enum_values(b)) {
        return Ok(!ea.iter().any(|x| eb.contains(x)));
    }
    if let Some(ea) = enum_values(a) {
        return Ok(!ea.iter().any(|x| might_match(x, b) && g.instance_ok(x, b)));
    }
    if let Some(eb) = enum_values(b) {
        return Ok(!eb.iter().any(|x| might_match(x, a) && g.instance_ok(x, a)));
    }
    // Strings only: their languages (pattern, format, lengths) share no string.
    let strings_only = |t: &[String]| t.iter().all(|t| t == "string");
    if strings_only(&ta) && strings_only(&tb) {
        let texts = g.strictly(|g| Ok((g.string_regex(a, "#")?, g.string_regex(b, "#")?)));
        if let Some((Some(ra), Some(rb))) = texts {
            if string_lang::texts_disjoint(&ra, &rb) == Some(true) {
                return Ok(true);
            }
        }
    }
    // Objects only, discriminated by a property both require with disjoint values.
    if ta.iter().all(|t| t == "object") || tb.iter().all(|t| t == "object") {
        let req = |m: &Map<String, Value>| -> Vec<String> {
            m.get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        };
        let (ra, rb) = (req(a), req(b));
        // A name one side requires and the other cannot have.
        let forbids = |m: &Map<String, Value>, k: &str| {
            let declared = m.get("properties").and_then(|p| p.get(k));
            let patterns = m
                .get("patternProperties")
                .and_then(Value::as_object)
                .is_some_and(|p| !p.is_empty());
            match declared {
                Some(v) => v == &Value::Bool(false),
                None => !patterns && m.get("additionalProperties") == Some(&Value::Bool(false)),
            }
        };
        let objects_only = |t: &[String]| t.iter().all(|t| t == "object");
        if objects_only(&ta) && ra.iter().any(|k| forbids(b, k))
            || objects_only(&tb) && rb.iter().any(|k| forbids(a, k))
        {
            return Ok(true);
        }
        for k in ra.iter().filter(|k| rb.contains(k)) {
            let pa = a.get("properties").and_then(|p| p.get(k));
            let pb = b.get("properties").and_then(|p| p.get(k));
            if let (Some(Value::Object(pa)), Some(Value::Object(pb))) = (pa, pb) {
                if let (Some(ea), Some(eb)) = (enum_values(pa), enum_values(pb)) {
                    if !ea.iter().any(|x| eb.contains(x)) {
                        return Ok(true);
                    }
                }
            }
        }
    }
    Ok(false)
}

/// The names a flat `propertyNames` schema excludes, if it is `not` of a finite list
/// (`{"not": {"enum": ["a", "b"]}}`, `{"not": {"const": "a"}}`) and nothing else: the
/// names it allows are exactly those outside the list (non-string values name nothing).
fn excluded_names(f: Flat) -> Option<Vec<String>> {
    if f.never || !f.groups.is_empty() || f.map.len() != 1 {
        return None;
    }
    let inner = f.map.get("not")?.as_object()?;
    if inner.len() != 1 {
        return None;
    }
    let listed = enum_values(inner)?;
    Some(
        listed
            .iter()
            .filter_map(|v| v.as_str().map(String::from))
            .collect(),
    )
}

/// The declared `properties` of a flat schema.
fn properties_of(m: &Map<String, Value>) -> Map<String, Value> {
    m.get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// Whether a value could satisfy a schema's types (a cheap overlap test for `oneOf`).
fn might_match(v: &Value, m: &Map<String, Value>) -> bool {
    allowed_types(m, "#").is_ok_and(|t| value_has_type(v, &t))
}

/// The JSON types a flat schema allows (`integer` listed only without `number`).
fn allowed_types(m: &Map<String, Value>, ptr: &str) -> R<Vec<String>> {
    let mut out: Vec<String> = match m.get("type") {
        None => ALL_TYPES.iter().map(|s| s.to_string()).collect(),
        Some(t) => {
            // A `type` that is neither a name nor an array of names is an invalid schema,
            // not "no type allowed" (which is what dropping its entries would make it).
            let names = match t {
                Value::String(_) => true,
                Value::Array(a) => a.iter().all(Value::is_string),
                _ => false,
            };
            if !names {
                return Err(issue(
                    &child(ptr, "type"),
                    Some("type"),
                    format!("invalid `type` {t}: expected a type name or an array of type names"),
                ));
            }
            let ts = merge::types_of(t);
            for x in &ts {
                if !ALL_TYPES.contains(&x.as_str()) && x != "integer" {
                    return Err(issue(
                        &child(ptr, "type"),
                        Some("type"),
                        format!("unknown type `{x}`"),
                    ));
                }
            }
            ts
        }
    };
    if out.iter().any(|t| t == "number") {
        out.retain(|t| t != "integer");
    }
    out.dedup();
    Ok(out)
}

fn enum_values(m: &Map<String, Value>) -> Option<Vec<Value>> {
    if let Some(c) = m.get("const") {
        let mut v = vec![c.clone()];
        if let Some(Value::Array(e)) = m.get("enum") {
            v.retain(|x| e.contains(x));
        }
        return Some(v);
    }
    m.get("enum").and_then(Value::as_array).cloned()
}

fn value_has_type(v: &Value, types: &[String]) -> bool {
    let has = |t: &str| types.iter().any(|x| x == t);
    match v {
        Value::Null => has("null"),
        Value::Bool(_) => has("boolean"),
        Value::Number(n) => {
            has("number") || (has("integer") && n.as_f64().is_some_and(|f| f.fract() == 0.0))
        }
        Value::String(_) => has("string"),
        Value::Array(_) => has("array"),
        Value::Object(_) => has("object"),
    }
}

/// Whether `not`'s schema is a boolean or only `type` (with annotations).
fn not_type_form(n: &Value) -> bool {
    match n {
        Value::Bool(_) => true,
        Value::Object(o) => o
            .keys()
            .all(|k| k == "type" || keywords::classify(k) == KeywordClass::Annotation),
        _ => false,
    }
}

/// Types excluded by `not: {type: ...}`; `not: true`/`{}` excludes all.
fn not_types(m: &Map<String, Value>) -> Vec<String> {
    match m.get("not") {
        Some(Value::Bool(true)) => ALL_TYPES
            .iter()
            .map(|s| s.to_string())
            .chain(["integer".to_string()])
            .collect(),
        Some(Value::Object(o)) => match o.get("type") {
            Some(t) => {
                let mut ts = merge::types_of(t);
                if ts.iter().any(|t| t == "number") {
                    ts.push("integer".into());
                }
                ts
            }
            None if o
                .keys()
                .all(|k| keywords::classify(k) == KeywordClass::Annotation) =>
            {
                ALL_TYPES
                    .iter()
                    .map(|s| s.to_string())
                    .chain(["integer".to_string()])
                    .collect()
            }
            None => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// The grammar of a schema no value satisfies (`false`, `enum: []`, contradictions):
/// one terminal that matches nothing.
fn empty_language(source_name: &str) -> Grammar {
    Grammar {
        source_name: source_name.to_string(),
        terminals: vec![Terminal {
            name: "NOTHING".into(),
            regex: "[a&&b]".into(),
            lazy: false,
            priority: 0,
            defined_at: None,
            difference: None,
        }],
        nonterminals: vec![Nonterminal {
            name: "start".into(),
        }],
        rules: vec![Rule {
            lhs: 0,
            rhs: vec![Symbol::Terminal(0)],
        }],
        start: 0,
        ignore: Vec::new(),
        allow_initial_skip: false,
    }
}

/// Removes unproductive and unreachable symbols; `None` if the start derives nothing.
fn prune(g: Grammar) -> Option<Grammar> {
    let n = g.nonterminals.len();
    let mut productive = vec![false; n];
    let mut changed = true;
    while changed {
        changed = false;
        for r in &g.rules {
            if !productive[r.lhs as usize]
                && r.rhs.iter().all(|s| match s {
                    Symbol::Terminal(_) => true,
                    Symbol::Nonterminal(x) => productive[*x as usize],
                })
            {
                productive[r.lhs as usize] = true;
                changed = true;
            }
        }
    }
    if !productive[g.start as usize] {
        return None;
    }
    let rules: Vec<&Rule> = g
        .rules
        .iter()
        .filter(|r| {
            productive[r.lhs as usize]
                && r.rhs.iter().all(|s| match s {
                    Symbol::Terminal(_) => true,
                    Symbol::Nonterminal(x) => productive[*x as usize],
                })
        })
        .collect();
    let mut by_lhs: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, r) in rules.iter().enumerate() {
        by_lhs[r.lhs as usize].push(i);
    }
    let mut reach = vec![false; n];
    let mut term_used = vec![false; g.terminals.len()];
    for &t in &g.ignore {
        term_used[t as usize] = true;
    }
    let mut stack = vec![g.start];
    reach[g.start as usize] = true;
    while let Some(x) = stack.pop() {
        for &ri in &by_lhs[x as usize] {
            for s in &rules[ri].rhs {
                match *s {
                    Symbol::Terminal(t) => term_used[t as usize] = true,
                    Symbol::Nonterminal(y) => {
                        if !reach[y as usize] {
                            reach[y as usize] = true;
                            stack.push(y);
                        }
                    }
                }
            }
        }
    }
    let mut nt_map = vec![u32::MAX; n];
    let mut nonterminals = Vec::new();
    for (i, nt) in g.nonterminals.iter().enumerate() {
        if reach[i] {
            nt_map[i] = nonterminals.len() as u32;
            nonterminals.push(nt.clone());
        }
    }
    let mut t_map = vec![u32::MAX; g.terminals.len()];
    let mut terminals = Vec::new();
    for (i, t) in g.terminals.iter().enumerate() {
        if term_used[i] {
            t_map[i] = terminals.len() as u32;
            terminals.push(t.clone());
        }
    }
    let map_sym = |s: &Symbol| match *s {
        Symbol::Terminal(t) => Symbol::Terminal(t_map[t as usize]),
        Symbol::Nonterminal(x) => Symbol::Nonterminal(nt_map[x as usize]),
    };
    let rules = rules
        .iter()
        .filter(|r| reach[r.lhs as usize])
        .map(|r| Rule {
            lhs: nt_map[r.lhs as usize],
            rhs: r.rhs.iter().map(map_sym).collect(),
        })
        .collect();
    Some(Grammar {
        source_name: g.source_name,
        terminals,
        nonterminals,
        rules,
        start: nt_map[g.start as usize],
        ignore: g.ignore.iter().map(|&t| t_map[t as usize]).collect(),
        allow_initial_skip: g.allow_initial_skip,
    })
}
