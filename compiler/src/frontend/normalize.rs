//! Lark syntax tree → normalized BNF [`Grammar`] IR.
//!
//! What happens here, in order:
//!
//! 1. Definitions and directives are collected; duplicates, `%declare`, `%override`,
//!    imports from anything but the built-in libraries, unknown `%llguidance` keys and
//!    unsupported attributes are rejected.
//! 2. Every terminal definition is expanded to one regex ([`super::terminals`]) and
//!    validated, whether used or not.
//! 3. Every rule body is turned into BNF productions. EBNF becomes generated helper
//!    nonterminals named `__{rule}_{kind}_{n}`: `x*` → `H: H x | ε` (left recursion, which
//!    LR prefers), `x+` → `H: H x | x`, `x?`/`[x]` → `H: x | ε`, a group with several
//!    alternatives → `H: a | b`, `x ~ n..m` → `n` copies of `x` then a chain of
//!    `U_k: x U_{k-1} | ε`. Helpers with identical productions are shared. Templates
//!    (`_sep{x, s}`) are instantiated per distinct argument list. Anonymous literals become
//!    terminals, deduplicated by regex, reusing a named terminal with exactly that regex
//!    (as Lark does). `""` in a rule means ε (llguidance's reading; Lark rejects it).
//! 4. Unreachable rules and unused terminals are dropped (ignore terminals are kept);
//!    reachable rules that derive no terminal string, derivation cycles `A ⇒+ A`, and
//!    used terminals that match the empty string are errors.
//!
//! What is deliberately *not* modelled, because it changes only Lark's parse tree, not the
//! language: `?rule` and `_rule` inlining (kept as ordinary rules), `!rule`, `-> alias`,
//! and rule priorities `rule.N` (parsed and ignored; GLR keeps every parse). Terminal
//! priorities `TERM.N` are stored in [`Terminal::priority`].

use std::collections::{HashMap, HashSet};

use stackmask_formats::grammar::{Grammar, Nonterminal, Rule, Symbol, Terminal};

use super::ast::{Atom, Def, Expansions, Expr, Item, Literal, Name, Op};
use super::common;
use super::error::{GrammarErrorKind, LineIndex, PosError};
use super::regex_translate;
use super::terminals::{self, Binding, TerminalExpander};

/// Largest `~ n..m` count expanded in rules (each repetition is a copy of the symbols).
const MAX_RULE_REPEAT: i64 = 10_000;
/// Largest number of template instantiations: a template that instantiates itself with
/// ever-growing arguments would otherwise never stop.
const MAX_TEMPLATE_INSTANCES: usize = 10_000;
/// Deepest nesting of template instantiations (each level is a recursive call here).
const MAX_TEMPLATE_DEPTH: usize = 64;
/// Most right-hand-side symbols that `~ n..m` repetitions may add in all: nested
/// repetitions multiply (`("a" ~ 10000) ~ 10000` is 10^8 symbols).
const MAX_REPEAT_SYMBOLS: usize = 1 << 20;

/// A right-hand-side symbol during normalization (`SelfRef` only in helper templates).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum PSym {
    /// Index into `Normalizer::terminals`.
    T(usize),
    /// Index into `Normalizer::nts`.
    N(usize),
    /// The helper being defined (replaced by its index once allocated).
    SelfRef,
}

type Alts = Vec<Vec<PSym>>;
type Env = HashMap<String, Atom>;

struct Nt {
    name: String,
    /// Byte offset of the definition (or of the expression a helper came from).
    pos: usize,
    prods: Alts,
    /// For generated helpers: the rule they were generated for.
    owner: Option<usize>,
}

struct TermEntry {
    name: String,
    regex: String,
    lazy: bool,
    priority: i64,
    pos: usize,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum TermKey {
    Named(String),
    Anonymous(String),
}

struct Normalizer<'a> {
    rules: HashMap<&'a str, &'a Def>,
    expander: TerminalExpander<'a>,
    /// Regex → the first non-lazy named terminal with exactly that regex.
    named_by_regex: HashMap<String, String>,
    nts: Vec<Nt>,
    nt_by_name: HashMap<String, usize>,
    helpers: HashMap<Alts, usize>,
    helper_count: usize,
    template_instances: usize,
    /// Template instantiations in progress (the recursion depth of [`Self::instantiate`]).
    template_depth: usize,
    /// Symbols added by `~ n..m` repetitions so far.
    repeat_symbols: usize,
    /// Helpers for `x*` and `x+`, whose loop production `H → H x` is a cycle when `x`
    /// derives ε without being ε ([`Self::make_loops_epsilon_free`]).
    loops: Vec<usize>,
    terminals: Vec<TermEntry>,
    term_by_key: HashMap<TermKey, usize>,
    /// `%json` schema text → its copied start nonterminal.
    json_schemas: HashMap<String, usize>,
}

/// Normalizes a parsed grammar. `index` maps the source's byte offsets to locations.
pub fn normalize(
    items: &[Item],
    index: &LineIndex<'_>,
    source_name: &str,
) -> Result<Grammar, PosError> {
    // 1. Collect definitions and directives.
    let mut defined: HashMap<&str, usize> = HashMap::new();
    let claim = |defined: &HashMap<&str, usize>, name: &Name| -> Result<(), PosError> {
        match defined.get(name.text.as_str()) {
            Some(&first) => {
                let loc = index.location(first);
                Err(PosError::new(
                    name.pos,
                    GrammarErrorKind::Duplicate {
                        name: name.text.clone(),
                        first_line: loc.line,
                        first_col: loc.col,
                    },
                ))
            }
            None => Ok(()),
        }
    };
    let mut rules: HashMap<&str, &Def> = HashMap::new();
    let mut rule_order: Vec<&Def> = Vec::new();
    let mut term_order: Vec<&str> = Vec::new();
    let mut bindings: HashMap<&str, Binding<'_>> = HashMap::new();
    let mut ignores = Vec::new();
    let mut allow_initial_skip = false;
    for item in items {
        match item {
            Item::Def(def) => {
                claim(&defined, &def.name)?;
                defined.insert(&def.name.text, def.name.pos);
                check_attributes(def)?;
                // llguidance's `rule[lazy]: ...` makes the rule one lazy lexeme: a terminal
                // under the rule's name (its body may then only use terminals).
                if def.name.is_terminal() || is_lazy(def) {
                    if !def.params.is_empty() {
                        return Err(PosError::new(
                            def.name.pos,
                            GrammarErrorKind::UnsupportedSyntax {
                                feature: "terminal templates".into(),
                            },
                        ));
                    }
                    term_order.push(&def.name.text);
                    bindings.insert(&def.name.text, Binding::Def(def));
                } else {
                    rules.insert(&def.name.text, def);
                    rule_order.push(def);
                }
            }
            Item::Import {
                module,
                relative,
                names,
                pos,
            } => {
                let lib = match module.as_slice() {
                    [only] if !*relative => common::library(&only.text),
                    _ => None,
                };
                let Some(lib) = lib else {
                    let path: Vec<&str> = module.iter().map(|n| n.text.as_str()).collect();
                    let dot = if *relative { "." } else { "" };
                    let directive = format!(
                        "`%import` from `{dot}{}` (only the built-in `common` and `unicode` \
                         libraries can be imported)",
                        path.join(".")
                    );
                    let kind = GrammarErrorKind::UnsupportedDirective { directive };
                    return Err(PosError::new(*pos, kind));
                };
                for (name, alias) in names {
                    let found = lib.items.iter().find_map(|i| match i {
                        Item::Def(d) if d.name.text == name.text => Some(d.name.text.as_str()),
                        _ => None,
                    });
                    let Some(lib_name) = found else {
                        let full = format!("{}.{}", lib.name, name.text);
                        let kind = GrammarErrorKind::UndefinedSymbol {
                            what: "terminal",
                            name: full,
                        };
                        return Err(PosError::new(name.pos, kind));
                    };
                    let target = alias.as_ref().unwrap_or(name);
                    if !target.is_terminal() {
                        let kind = GrammarErrorKind::Syntax {
                            found: format!("rule name `{}`", target.text),
                            expected: vec!["a terminal name for the imported terminal".into()],
                        };
                        return Err(PosError::new(target.pos, kind));
                    }
                    claim(&defined, target)?;
                    defined.insert(&target.text, target.pos);
                    term_order.push(&target.text);
                    let binding = Binding::Import {
                        lib,
                        name: lib_name,
                        pos: target.pos,
                    };
                    bindings.insert(&target.text, binding);
                }
            }
            Item::Declare { pos } => {
                let directive = "`%declare` (terminals made by a post-lexer, like Python's \
                                 _INDENT/_DEDENT, are not regular languages)";
                let kind = GrammarErrorKind::UnsupportedDirective {
                    directive: directive.into(),
                };
                return Err(PosError::new(*pos, kind));
            }
            Item::Override { directive, pos } => {
                let directive = format!(
                    "`{directive}` (it only applies to rules imported from other grammars)"
                );
                let kind = GrammarErrorKind::UnsupportedDirective { directive };
                return Err(PosError::new(*pos, kind));
            }
            Item::Llguidance { json, pos } => {
                allow_initial_skip |= parse_llguidance(json).map_err(|k| PosError::new(*pos, k))?
            }
            Item::Ignore { body, text, pos } => ignores.push((body, text, *pos)),
        }
    }

    let mut n = Normalizer {
        rules,
        expander: TerminalExpander::new(bindings, rule_order.iter().map(|d| d.name.text.as_str())),
        named_by_regex: HashMap::new(),
        nts: Vec::new(),
        nt_by_name: HashMap::new(),
        helpers: HashMap::new(),
        helper_count: 0,
        template_instances: 0,
        template_depth: 0,
        repeat_symbols: 0,
        loops: Vec::new(),
        terminals: Vec::new(),
        term_by_key: HashMap::new(),
        json_schemas: HashMap::new(),
    };

    // 2. Expand (and so validate) every terminal.
    for &name in &term_order {
        let regex = n.expander.regex_of(name, 0)?;
        let lazy = matches!(n.expander.binding(name), Some(Binding::Def(d)) if is_lazy(d));
        if !lazy {
            n.named_by_regex
                .entry(regex)
                .or_insert_with(|| name.to_string());
        }
    }

    // 3. Rules to BNF. Allocate every ordinary rule first so that names resolve.
    for def in rule_order.iter().filter(|d| d.params.is_empty()) {
        n.nt_by_name.insert(def.name.text.clone(), n.nts.len());
        n.nts.push(Nt {
            name: def.name.text.clone(),
            pos: def.name.pos,
            prods: Vec::new(),
            owner: None,
        });
    }
    for def in rule_order.iter().filter(|d| d.params.is_empty()) {
        let id = n.nt_by_name[&def.name.text];
        let prods = n.convert_alts(id, &def.body, &Env::new())?;
        n.nts[id].prods = prods;
    }

    let mut ignore = Vec::new();
    for (body, text, pos) in ignores {
        let t = n.ignore_terminal(body, text, pos)?;
        if !ignore.contains(&t) {
            ignore.push(t);
        }
    }

    let start = match n.nt_by_name.get("start") {
        Some(&start) => start,
        // `start[lazy]: ...` is a terminal: wrap it in a rule.
        None if n.expander.is_defined("start") => {
            let Some(Binding::Def(def)) = n.expander.binding("start") else {
                unreachable!("only rules can be named `start`")
            };
            let t = n.named_terminal("start", def.name.pos)?;
            n.nts.push(Nt {
                name: "start".into(),
                pos: def.name.pos,
                prods: vec![vec![PSym::T(t)]],
                owner: None,
            });
            n.nts.len() - 1
        }
        None => return Err(PosError::new(0, GrammarErrorKind::NoStartRule)),
    };

    // 4. Clean up and check.
    let reachable = n.reachable(start);
    n.check_productive(&reachable)?;
    n.make_loops_epsilon_free(&reachable);
    let reachable = n.reachable(start);
    n.check_cycles(&reachable)?;
    n.build(
        start,
        &reachable,
        &ignore,
        allow_initial_skip,
        index,
        source_name,
    )
}

/// Rejects attributes other than `lazy` (without a value, on a non-template).
fn check_attributes(def: &Def) -> Result<(), PosError> {
    for (attr, has_value) in &def.attrs {
        let reason = if attr.text != "lazy" {
            "only `lazy` is supported"
        } else if *has_value {
            "`lazy` takes no value"
        } else if !def.params.is_empty() {
            "a template cannot be lazy"
        } else {
            continue;
        };
        return Err(PosError::new(
            attr.pos,
            GrammarErrorKind::UnsupportedAttribute {
                name: attr.text.clone(),
                reason: reason.to_string(),
            },
        ));
    }
    Ok(())
}

fn is_lazy(def: &Def) -> bool {
    def.attrs.iter().any(|(a, _)| a.text == "lazy")
}

/// `%llguidance {...}`: returns `allow_initial_skip`. `"no_forcing": true` is accepted
/// and has no effect: stackmask never forces tokens (every token with a completion is
/// in the mask), which is what that key asks llguidance for; `false` asks for forcing,
/// which stackmask does not do, so it is refused.
fn parse_llguidance(json: &str) -> Result<bool, GrammarErrorKind> {
    let invalid = |message: String| GrammarErrorKind::InvalidDirective { message };
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| invalid(format!("`%llguidance` JSON: {e}")))?;
    let obj = value
        .as_object()
        .ok_or_else(|| invalid("`%llguidance` takes a JSON object".into()))?;
    let mut allow = false;
    for (key, v) in obj {
        match key.as_str() {
            "allow_initial_skip" => {
                allow = v
                    .as_bool()
                    .ok_or_else(|| invalid("`allow_initial_skip` must be true or false".into()))?
            }
            "no_forcing" if v.as_bool() == Some(true) => {}
            other => {
                return Err(GrammarErrorKind::UnsupportedDirective {
                    directive: format!("`%llguidance` key `{other}`"),
                })
            }
        }
    }
    Ok(allow)
}

/// State of [`Normalizer::make_loops_epsilon_free`]: the ε-free copies made so far.
struct EpsilonFree {
    /// Per nonterminal (copies included, as they are made): derives ε.
    nullable: Vec<bool>,
    /// Per nonterminal: derives a non-empty string.
    nonempty: Vec<bool>,
    /// Nonterminal → its ε-free copy.
    copies: HashMap<usize, usize>,
    /// Copies whose productions are still to be written: (original, copy).
    pending: Vec<(usize, usize)>,
}

impl EpsilonFree {
    fn is_nullable(&self, s: &PSym) -> bool {
        matches!(s, PSym::N(b) if self.nullable[*b])
    }

    /// The alternatives deriving what `seq` derives except ε: for each position `i`
    /// whose prefix `seq[..i]` is nullable and whose symbol can be non-empty,
    /// `(seq[i] without ε) seq[i+1..]`. Linear in `seq`, unlike expanding every subset.
    fn without_epsilon(&mut self, n: &mut Normalizer<'_>, seq: &[PSym]) -> Alts {
        let mut alts = Vec::new();
        for (i, s) in seq.iter().enumerate() {
            let rest = &seq[i + 1..];
            match *s {
                PSym::N(b) if self.nullable[b] => {
                    if self.nonempty[b] {
                        let copy = self.copy_of(n, b);
                        alts.push(
                            std::iter::once(PSym::N(copy))
                                .chain(rest.iter().cloned())
                                .collect(),
                        );
                    }
                }
                _ => {
                    alts.push(seq[i..].to_vec());
                    break;
                }
            }
        }
        alts
    }

    fn copy_of(&mut self, n: &mut Normalizer<'_>, b: usize) -> usize {
        if let Some(&copy) = self.copies.get(&b) {
            return copy;
        }
        let copy = n.nts.len();
        let mut name = format!("__{}_nonempty", n.nts[b].name.trim_start_matches("__"));
        while n.nt_by_name.contains_key(&name) {
            name.push('_');
        }
        n.nt_by_name.insert(name.clone(), copy);
        n.nts.push(Nt {
            name,
            pos: n.nts[b].pos,
            prods: Vec::new(),
            owner: Some(n.nts[b].owner.unwrap_or(b)),
        });
        self.nullable.push(false);
        self.nonempty.push(true);
        self.copies.insert(b, copy);
        self.pending.push((b, copy));
        copy
    }
}

fn dedup(alts: Alts) -> Alts {
    let mut seen = HashSet::new();
    alts.into_iter()
        .filter(|a| seen.insert(a.clone()))
        .collect()
}

/// Display text of a template argument, used in instance names.
fn render_arg(atom: &Atom) -> String {
    match atom {
        Atom::Name(n) => n.text.clone(),
        Atom::Literal(l) => l.text.clone(),
        Atom::Range { text, .. } => text.clone(),
        Atom::Template { name, args } => format!(
            "{}{{{}}}",
            name.text,
            args.iter().map(render_arg).collect::<Vec<_>>().join(", ")
        ),
        Atom::Group(_) | Atom::Maybe(_) => "(...)".to_string(),
        Atom::Json { .. } => "%json {...}".to_string(),
    }
}

/// Replaces template parameters in an argument by the caller's arguments.
fn substitute(atom: &Atom, env: &Env) -> Atom {
    match atom {
        Atom::Name(n) => env.get(&n.text).cloned().unwrap_or_else(|| atom.clone()),
        Atom::Template { name, args } => Atom::Template {
            name: name.clone(),
            args: args.iter().map(|a| substitute(a, env)).collect(),
        },
        _ => atom.clone(),
    }
}

impl<'a> Normalizer<'a> {
    fn convert_alts(
        &mut self,
        owner: usize,
        body: &Expansions,
        env: &Env,
    ) -> Result<Alts, PosError> {
        let mut alts = Vec::with_capacity(body.len());
        for alt in body {
            let mut seq = Vec::new();
            for expr in &alt.items {
                self.convert_expr(owner, expr, env, &mut seq)?;
            }
            alts.push(seq);
        }
        Ok(dedup(alts))
    }

    fn convert_expr(
        &mut self,
        owner: usize,
        expr: &Expr,
        env: &Env,
        out: &mut Vec<PSym>,
    ) -> Result<(), PosError> {
        let alts = self.convert_atom(owner, &expr.atom, env)?;
        match expr.op {
            None => self.emit_group(owner, alts, expr.pos, out),
            Some(Op::Opt) => {
                let mut alts = alts;
                alts.push(Vec::new());
                self.emit_group(owner, alts, expr.pos, out)
            }
            Some(Op::Star) => self.emit_star(owner, alts, expr.pos, out),
            Some(Op::Plus) => self.emit_plus(owner, alts, expr.pos, out),
            Some(Op::Repeat { min, max }) => {
                terminals::check_repeat(min, max, MAX_RULE_REPEAT)
                    .map_err(|k| PosError::new(expr.pos, k))?;
                self.emit_repeat(owner, alts, min, max, expr.pos, out)?
            }
        }
        Ok(())
    }

    /// The alternatives an atom stands for (a single one-symbol alternative for names).
    fn convert_atom(&mut self, owner: usize, atom: &Atom, env: &Env) -> Result<Alts, PosError> {
        Ok(match atom {
            Atom::Group(body) => self.convert_alts(owner, body, env)?,
            Atom::Maybe(body) => {
                let mut alts = self.convert_alts(owner, body, env)?;
                alts.push(Vec::new());
                dedup(alts)
            }
            Atom::Name(name) => {
                if let Some(arg) = env.get(&name.text) {
                    let arg = arg.clone();
                    return self.convert_atom(owner, &arg, &Env::new());
                }
                vec![vec![self.name_symbol(name)?]]
            }
            Atom::Literal(lit) => match self.literal_terminal(lit)? {
                Some(t) => vec![vec![PSym::T(t)]],
                None => vec![Vec::new()],
            },
            Atom::Range { from, to, text } => {
                let regex = terminals::range_piece(from, to)?.re;
                vec![vec![PSym::T(
                    self.anonymous_terminal(regex, text, from.pos),
                )]]
            }
            Atom::Template { name, args } => {
                let args: Vec<Atom> = args.iter().map(|a| substitute(a, env)).collect();
                vec![vec![PSym::N(self.instantiate(name, &args)?)]]
            }
            Atom::Json { json, pos } => vec![vec![PSym::N(self.embed_json(json, *pos)?)]],
        })
    }

    /// `%json {schema}`: the schema's grammar (from the JSON Schema front end, default
    /// options) copied in under `__json…` names; returns its start nonterminal. Its
    /// terminals are shared with equal anonymous ones. The same schema text twice is
    /// one copy.
    fn embed_json(&mut self, json: &str, pos: usize) -> Result<usize, PosError> {
        use super::json_schema::{schema_to_grammar, SchemaOptions};
        use stackmask_formats::Symbol;
        if let Some(&nt) = self.json_schemas.get(json) {
            return Ok(nt);
        }
        let fail = |message: String| PosError::new(pos, GrammarErrorKind::JsonSchema { message });
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| fail(format!("invalid JSON: {e}")))?;
        let sg = schema_to_grammar(&value, "%json", &SchemaOptions::default())
            .map_err(|e| fail(e.issue.to_string()))?;
        // Lark has no channel for warnings: what would be listed is refused instead,
        // so nothing in the schema goes unenforced without a word.
        if let Some(w) = sg.warnings.first() {
            return Err(fail(format!(
                "{w} (a warning, which a Lark grammar cannot list: refused){}",
                if sg.warnings.len() > 1 {
                    format!(", and {} more", sg.warnings.len() - 1)
                } else {
                    String::new()
                }
            )));
        }
        let g = sg.grammar;
        if !g.ignore.is_empty() {
            return Err(fail("a schema grammar with ignored lexemes".into()));
        }
        let terminals: Vec<usize> = g
            .terminals
            .iter()
            .map(|t| {
                if t.lazy {
                    let id = self.terminals.len();
                    self.terminals.push(TermEntry {
                        name: t.name.clone(),
                        regex: t.regex.clone(),
                        lazy: true,
                        priority: 0,
                        pos,
                    });
                    id
                } else {
                    self.anonymous_terminal(t.regex.clone(), &t.name, pos)
                }
            })
            .collect();
        let k = self.json_schemas.len();
        let base = self.nts.len();
        for nt in &g.nonterminals {
            let mut name = format!("__json{k}_{}", nt.name);
            while self.nt_by_name.contains_key(&name) {
                name.push('_');
            }
            self.nt_by_name.insert(name.clone(), self.nts.len());
            self.nts.push(Nt {
                name,
                pos,
                prods: Vec::new(),
                owner: None,
            });
        }
        for r in &g.rules {
            let rhs = r
                .rhs
                .iter()
                .map(|s| match *s {
                    Symbol::Terminal(t) => PSym::T(terminals[t as usize]),
                    Symbol::Nonterminal(n) => PSym::N(base + n as usize),
                })
                .collect();
            self.nts[base + r.lhs as usize].prods.push(rhs);
        }
        let start = base + g.start as usize;
        self.json_schemas.insert(json.to_string(), start);
        Ok(start)
    }

    /// The terminal `name` refers to, or an "undefined terminal" error at its use.
    fn defined_terminal(&mut self, name: &Name) -> Result<usize, PosError> {
        if !self.expander.is_defined(&name.text) {
            return Err(PosError::new(
                name.pos,
                GrammarErrorKind::UndefinedSymbol {
                    what: "terminal",
                    name: name.text.clone(),
                },
            ));
        }
        self.named_terminal(&name.text, name.pos)
    }

    fn name_symbol(&mut self, name: &Name) -> Result<PSym, PosError> {
        if name.is_terminal() || self.expander.is_defined(&name.text) {
            return Ok(PSym::T(self.defined_terminal(name)?));
        }
        match self.rules.get(name.text.as_str()) {
            None => Err(PosError::new(
                name.pos,
                GrammarErrorKind::UndefinedSymbol {
                    what: "rule",
                    name: name.text.clone(),
                },
            )),
            Some(def) if !def.params.is_empty() => Err(PosError::new(
                name.pos,
                GrammarErrorKind::Template {
                    name: name.text.clone(),
                    message: format!(
                        "is a template and needs {} argument(s): `{}{{...}}`",
                        def.params.len(),
                        name.text
                    ),
                },
            )),
            Some(_) => Ok(PSym::N(self.nt_by_name[&name.text])),
        }
    }

    fn instantiate(&mut self, name: &Name, args: &[Atom]) -> Result<usize, PosError> {
        let template_error = |message: String| {
            PosError::new(
                name.pos,
                GrammarErrorKind::Template {
                    name: name.text.clone(),
                    message,
                },
            )
        };
        let def = match self.rules.get(name.text.as_str()) {
            None => {
                return Err(PosError::new(
                    name.pos,
                    GrammarErrorKind::UndefinedSymbol {
                        what: "template",
                        name: name.text.clone(),
                    },
                ))
            }
            Some(def) => *def,
        };
        if def.params.is_empty() {
            return Err(template_error(
                "is not a template, but is given arguments".into(),
            ));
        }
        if def.params.len() != args.len() {
            return Err(template_error(format!(
                "takes {} argument(s), but {} are given",
                def.params.len(),
                args.len()
            )));
        }
        let key = format!(
            "{}{{{}}}",
            name.text,
            args.iter().map(render_arg).collect::<Vec<_>>().join(", ")
        );
        if let Some(&id) = self.nt_by_name.get(&key) {
            return Ok(id);
        }
        self.template_instances += 1;
        if self.template_instances > MAX_TEMPLATE_INSTANCES {
            return Err(template_error(format!(
                "more than {MAX_TEMPLATE_INSTANCES} instantiations (does it instantiate itself \
                 with growing arguments?)"
            )));
        }
        let id = self.nts.len();
        self.nt_by_name.insert(key.clone(), id);
        self.nts.push(Nt {
            name: key,
            pos: name.pos,
            prods: Vec::new(),
            owner: None,
        });
        if self.template_depth >= MAX_TEMPLATE_DEPTH {
            return Err(PosError::new(
                name.pos,
                GrammarErrorKind::LimitExceeded {
                    what: format!(
                        "template `{}`: instantiations nested in instantiations (does it \
                         instantiate itself with growing arguments?)",
                        name.text
                    ),
                    limit: format!("{MAX_TEMPLATE_DEPTH} levels"),
                },
            ));
        }
        let env: Env = def
            .params
            .iter()
            .map(|p| p.text.clone())
            .zip(args.iter().cloned())
            .collect();
        self.template_depth += 1;
        let prods = self.convert_alts(id, &def.body, &env);
        self.template_depth -= 1;
        self.nts[id].prods = prods?;
        Ok(id)
    }

    /// Allocates (or finds) the helper with productions `prods`, where `SelfRef` stands
    /// for the helper itself.
    fn helper(&mut self, owner: usize, kind: &str, prods: Alts, pos: usize) -> usize {
        let prods = dedup(prods);
        if let Some(&id) = self.helpers.get(&prods) {
            return id;
        }
        let id = self.nts.len();
        let mut name = format!("__{}_{}_{}", self.nts[owner].name, kind, self.helper_count);
        self.helper_count += 1;
        while self.nt_by_name.contains_key(&name) {
            name.push('_');
        }
        self.helpers.insert(prods.clone(), id);
        let prods = prods
            .into_iter()
            .map(|alt| {
                alt.into_iter()
                    .map(|s| if s == PSym::SelfRef { PSym::N(id) } else { s })
                    .collect()
            })
            .collect();
        self.nt_by_name.insert(name.clone(), id);
        let owner = Some(self.nts[owner].owner.unwrap_or(owner));
        self.nts.push(Nt {
            name,
            pos,
            prods,
            owner,
        });
        id
    }

    /// A group: spliced in if it has one alternative, else a helper.
    fn emit_group(&mut self, owner: usize, alts: Alts, pos: usize, out: &mut Vec<PSym>) {
        let mut alts = dedup(alts);
        if alts.len() == 1 {
            out.append(&mut alts[0]);
            return;
        }
        let kind = if alts.iter().any(Vec::is_empty) {
            "opt"
        } else {
            "group"
        };
        let id = self.helper(owner, kind, alts, pos);
        out.push(PSym::N(id));
    }

    /// `x*` → `H: H x | ε`. Empty alternatives of `x` are dropped (`(a|)*` is `a*`), so
    /// that no `H → H` production appears.
    fn emit_star(&mut self, owner: usize, alts: Alts, pos: usize, out: &mut Vec<PSym>) {
        let items: Alts = dedup(alts.into_iter().filter(|a| !a.is_empty()).collect());
        if items.is_empty() {
            return;
        }
        let mut prods: Alts = items
            .into_iter()
            .map(|a| std::iter::once(PSym::SelfRef).chain(a).collect())
            .collect();
        prods.push(Vec::new());
        let id = self.helper(owner, "star", prods, pos);
        self.loops.push(id);
        out.push(PSym::N(id));
    }

    /// `x+` → `H: H x | x` (or `x*` when `x` has an empty alternative).
    fn emit_plus(&mut self, owner: usize, alts: Alts, pos: usize, out: &mut Vec<PSym>) {
        if alts.iter().any(Vec::is_empty) {
            return self.emit_star(owner, alts, pos, out);
        }
        let items = dedup(alts);
        let mut prods: Alts = items
            .iter()
            .map(|a| {
                std::iter::once(PSym::SelfRef)
                    .chain(a.iter().cloned())
                    .collect()
            })
            .collect();
        prods.extend(items);
        let id = self.helper(owner, "plus", prods, pos);
        self.loops.push(id);
        out.push(PSym::N(id));
    }

    /// `x ~ min..max`: `min` copies, then up to `max - min` optional ones as a chain
    /// `U_k: x U_{k-1} | ε` (linear size, unambiguous); `max = None` ends in `x*`.
    fn emit_repeat(
        &mut self,
        owner: usize,
        alts: Alts,
        min: i64,
        max: Option<i64>,
        pos: usize,
        out: &mut Vec<PSym>,
    ) -> Result<(), PosError> {
        let alts = dedup(alts);
        if alts.iter().all(Vec::is_empty) {
            return Ok(());
        }
        let unit: Vec<PSym> = if alts.len() == 1 {
            alts[0].clone()
        } else {
            let kind = if alts.iter().any(Vec::is_empty) {
                "opt"
            } else {
                "group"
            };
            vec![PSym::N(self.helper(owner, kind, alts.clone(), pos))]
        };
        let copies = max.unwrap_or(min).max(min) as usize;
        self.repeat_symbols = self
            .repeat_symbols
            .saturating_add(copies.saturating_mul(unit.len()));
        if self.repeat_symbols > MAX_REPEAT_SYMBOLS {
            return Err(PosError::new(
                pos,
                GrammarErrorKind::LimitExceeded {
                    what: "symbols written out by `~ n..m` repetitions".into(),
                    limit: format!("{MAX_REPEAT_SYMBOLS} symbols in all"),
                },
            ));
        }
        for _ in 0..min {
            out.extend(unit.iter().cloned());
        }
        match max {
            None => self.emit_star(owner, alts, pos, out),
            Some(max) if max > min => {
                let mut prev: Option<usize> = None;
                for _ in min..max {
                    let mut more = unit.clone();
                    more.extend(prev.map(PSym::N));
                    prev = Some(self.helper(owner, "rep", vec![more, Vec::new()], pos));
                }
                out.extend(prev.map(PSym::N));
            }
            Some(_) => {}
        }
        Ok(())
    }

    fn named_terminal(&mut self, name: &str, use_pos: usize) -> Result<usize, PosError> {
        let key = TermKey::Named(name.to_string());
        if let Some(&t) = self.term_by_key.get(&key) {
            return Ok(t);
        }
        let regex = self.expander.regex_of(name, use_pos)?;
        let (lazy, priority, pos) = match self.expander.binding(name) {
            Some(Binding::Def(d)) => (is_lazy(d), d.priority.unwrap_or(0), d.name.pos),
            Some(Binding::Import { pos, .. }) => (false, 0, pos),
            None => unreachable!("checked by the caller"),
        };
        let t = self.terminals.len();
        self.terminals.push(TermEntry {
            name: name.to_string(),
            regex,
            lazy,
            priority,
            pos,
        });
        self.term_by_key.insert(key, t);
        Ok(t)
    }

    fn anonymous_terminal(&mut self, regex: String, text: &str, pos: usize) -> usize {
        let key = TermKey::Anonymous(regex.clone());
        if let Some(&t) = self.term_by_key.get(&key) {
            return t;
        }
        let t = self.terminals.len();
        self.terminals.push(TermEntry {
            name: text.to_string(),
            regex,
            lazy: false,
            priority: 0,
            pos,
        });
        self.term_by_key.insert(key, t);
        t
    }

    /// A literal used in a rule: `None` for `""` (ε), else its terminal — a named one if
    /// one has exactly this regex, as Lark does.
    fn literal_terminal(&mut self, lit: &Literal) -> Result<Option<usize>, PosError> {
        let regex = terminals::literal_piece(lit)
            .map_err(|k| PosError::new(lit.pos, k))?
            .re;
        if regex.is_empty() {
            return Ok(None);
        }
        if let Some(name) = self.named_by_regex.get(&regex).cloned() {
            return self.named_terminal(&name, lit.pos).map(Some);
        }
        Ok(Some(self.anonymous_terminal(regex, &lit.text, lit.pos)))
    }

    fn ignore_terminal(
        &mut self,
        body: &Expansions,
        text: &str,
        pos: usize,
    ) -> Result<usize, PosError> {
        // `%ignore NAME`: that terminal (or an error for a rule).
        if let [alt] = body.as_slice() {
            if let [Expr {
                atom: Atom::Name(name),
                op: None,
                ..
            }] = alt.items.as_slice()
            {
                if !name.is_terminal()
                    && !self.expander.is_defined(&name.text)
                    && self.rules.contains_key(name.text.as_str())
                {
                    return Err(PosError::new(
                        name.pos,
                        GrammarErrorKind::IgnoreRule {
                            name: name.text.clone(),
                        },
                    ));
                }
                return self.defined_terminal(name);
            }
        }
        let regex = self.expander.expand_expression(body, "%ignore")?;
        if let Some(name) = self.named_by_regex.get(&regex).cloned() {
            return self.named_terminal(&name, pos);
        }
        Ok(self.anonymous_terminal(regex, text, pos))
    }

    fn reachable(&self, start: usize) -> Vec<bool> {
        let mut seen = vec![false; self.nts.len()];
        let mut stack = vec![start];
        seen[start] = true;
        while let Some(a) = stack.pop() {
            for s in self.nts[a].prods.iter().flatten() {
                if let PSym::N(b) = *s {
                    if !seen[b] {
                        seen[b] = true;
                        stack.push(b);
                    }
                }
            }
        }
        seen
    }

    fn check_productive(&self, reachable: &[bool]) -> Result<(), PosError> {
        let productive = self.fixpoint(|p, productive| {
            p.iter().all(|s| match s {
                PSym::N(b) => productive[*b],
                _ => true,
            })
        });
        let Some(first) = (0..self.nts.len()).find(|&a| reachable[a] && !productive[a]) else {
            return Ok(());
        };
        // Every unproductive rule uses another one in each alternative; follow those uses
        // to a recursion without a base case and blame a user-written rule on it, rather
        // than `start`, which is only unproductive because of it.
        let mut walk = vec![first];
        let cycle_start = loop {
            let a = *walk.last().expect("walk is never empty");
            let next = self.nts[a]
                .prods
                .iter()
                .flatten()
                .find_map(|s| match *s {
                    PSym::N(b) if !productive[b] => Some(b),
                    _ => None,
                })
                .expect("an unproductive rule uses an unproductive rule");
            if let Some(i) = walk.iter().position(|&x| x == next) {
                break i;
            }
            walk.push(next);
        };
        let cycle = &walk[cycle_start..];
        let culprit = cycle
            .iter()
            .copied()
            .find(|&a| self.nts[a].owner.is_none())
            .unwrap_or_else(|| self.nts[cycle[0]].owner.expect("helpers have owners"));
        Err(PosError::new(
            self.nts[culprit].pos,
            GrammarErrorKind::Unproductive {
                rule: self.nts[culprit].name.clone(),
            },
        ))
    }

    /// Least fixpoint over the productions: `a` is marked when some production of `a`
    /// satisfies `holds` given the marks so far. `holds` may depend only on the
    /// production's symbols and the marks of its nonterminals, monotonically.
    ///
    /// A worklist: a production is re-checked only when one of its nonterminals gets
    /// marked. Sweeping all rules until nothing changed took one sweep per link of a
    /// rule chain (`a0: a1`, …, `a{n}: "x"`): quadratic, 2 s of `check` at 20,000 rules.
    fn fixpoint(&self, holds: impl Fn(&[PSym], &[bool]) -> bool) -> Vec<bool> {
        // Per nonterminal, the productions using it as `(user, production)`, each once.
        let mut uses: Vec<Vec<(usize, usize)>> = vec![Vec::new(); self.nts.len()];
        for (a, nt) in self.nts.iter().enumerate() {
            for (i, p) in nt.prods.iter().enumerate() {
                for s in p {
                    if let PSym::N(b) = *s {
                        // Only this production appends to `uses[b]` while it is read.
                        if uses[b].last() != Some(&(a, i)) {
                            uses[b].push((a, i));
                        }
                    }
                }
            }
        }
        let mut marked = vec![false; self.nts.len()];
        let mut found = Vec::new();
        for (a, nt) in self.nts.iter().enumerate() {
            if nt.prods.iter().any(|p| holds(p, &marked)) {
                marked[a] = true;
                found.push(a);
            }
        }
        while let Some(b) = found.pop() {
            for &(a, i) in &uses[b] {
                if !marked[a] && holds(&self.nts[a].prods[i], &marked) {
                    marked[a] = true;
                    found.push(a);
                }
            }
        }
        marked
    }

    /// Which nonterminals derive ε.
    fn nullable(&self) -> Vec<bool> {
        self.fixpoint(|p, nullable| p.iter().all(|s| matches!(s, PSym::N(b) if nullable[*b])))
    }

    /// `x*` and `x+` where `x` derives ε without being ε (`("a"?)*`, or `a*` with a
    /// nullable rule `a`): the loop production `H → H x` makes `H ⇒ H`, a cycle the LR
    /// stages cannot take. It becomes `H → H x'` where `x'` derives what `x` derives
    /// except ε — the same language, since `(x')* = x*` — built from ε-free copies
    /// `N'` of the nullable nonterminals that can begin `x`.
    ///
    /// Runs after [`Self::check_productive`], so every reachable nonterminal derives
    /// some string and "derives a non-empty string" is a matter of having a terminal.
    fn make_loops_epsilon_free(&mut self, reachable: &[bool]) {
        let mut eps = EpsilonFree {
            nullable: self.nullable(),
            nonempty: self.fixpoint(|p, nonempty| {
                p.iter().any(|s| match *s {
                    PSym::N(b) => nonempty[b],
                    _ => true,
                })
            }),
            copies: HashMap::new(),
            pending: Vec::new(),
        };
        for h in self.loops.clone() {
            if !reachable[h] {
                continue;
            }
            let prods = std::mem::take(&mut self.nts[h].prods);
            let mut rewritten = Vec::with_capacity(prods.len());
            for p in prods {
                let is_cycle =
                    p.first() == Some(&PSym::N(h)) && p[1..].iter().all(|s| eps.is_nullable(s));
                if !is_cycle {
                    rewritten.push(p);
                    continue;
                }
                for alt in eps.without_epsilon(self, &p[1..]) {
                    rewritten.push(std::iter::once(PSym::N(h)).chain(alt).collect());
                }
            }
            self.nts[h].prods = dedup(rewritten);
        }
        while let Some((original, copy)) = eps.pending.pop() {
            let mut prods = Vec::new();
            for p in self.nts[original].prods.clone() {
                prods.extend(eps.without_epsilon(self, &p));
            }
            self.nts[copy].prods = dedup(prods);
        }
    }

    /// Finds `A ⇒+ A`: edges `A → B` for productions `A → α B β` with `α`, `β` nullable.
    fn check_cycles(&self, reachable: &[bool]) -> Result<(), PosError> {
        let n = self.nts.len();
        let nullable = self.nullable();
        let is_nullable = |s: &PSym| matches!(s, PSym::N(b) if nullable[*b]);
        let mut edges: Vec<Vec<usize>> = vec![Vec::new(); n];
        for a in (0..n).filter(|&a| reachable[a]) {
            for p in &self.nts[a].prods {
                for (j, s) in p.iter().enumerate() {
                    if let PSym::N(b) = *s {
                        if p[..j].iter().all(is_nullable)
                            && p[j + 1..].iter().all(is_nullable)
                            && !edges[a].contains(&b)
                        {
                            edges[a].push(b);
                        }
                    }
                }
            }
        }
        // Iterative DFS with colours; a grey successor closes a cycle.
        let mut colour = vec![0u8; n];
        for root in (0..n).filter(|&a| reachable[a]) {
            if colour[root] != 0 {
                continue;
            }
            let mut path: Vec<(usize, usize)> = vec![(root, 0)];
            colour[root] = 1;
            while let Some(&mut (a, ref mut next)) = path.last_mut() {
                if let Some(&b) = edges[a].get(*next) {
                    *next += 1;
                    match colour[b] {
                        0 => {
                            colour[b] = 1;
                            path.push((b, 0));
                        }
                        1 => {
                            let from = path
                                .iter()
                                .position(|&(x, _)| x == b)
                                .expect("grey nodes are on the path");
                            let mut cycle: Vec<String> = path[from..]
                                .iter()
                                .map(|&(x, _)| self.nts[x].name.clone())
                                .collect();
                            cycle.push(self.nts[b].name.clone());
                            return Err(PosError::new(
                                self.nts[b].pos,
                                GrammarErrorKind::CyclicUnitRules { cycle },
                            ));
                        }
                        _ => {}
                    }
                } else {
                    colour[a] = 2;
                    path.pop();
                }
            }
        }
        Ok(())
    }

    fn build(
        self,
        start: usize,
        reachable: &[bool],
        ignore: &[usize],
        allow_initial_skip: bool,
        index: &LineIndex<'_>,
        source_name: &str,
    ) -> Result<Grammar, PosError> {
        let mut nt_map = vec![u32::MAX; self.nts.len()];
        let mut nonterminals = Vec::new();
        for (a, nt) in self.nts.iter().enumerate().filter(|(a, _)| reachable[*a]) {
            nt_map[a] = nonterminals.len() as u32;
            nonterminals.push(Nonterminal {
                name: nt.name.clone(),
            });
        }
        // Terminals in order of first use, then the ignore terminals.
        let mut t_map = vec![u32::MAX; self.terminals.len()];
        let mut order = Vec::new();
        let used = self
            .nts
            .iter()
            .enumerate()
            .filter(|(a, _)| reachable[*a])
            .flat_map(|(_, nt)| nt.prods.iter().flatten())
            .filter_map(|s| if let PSym::T(t) = s { Some(*t) } else { None })
            .chain(ignore.iter().copied());
        for t in used {
            if t_map[t] == u32::MAX {
                t_map[t] = order.len() as u32;
                order.push(t);
            }
        }
        let mut terminals = Vec::with_capacity(order.len());
        for &t in &order {
            let e = &self.terminals[t];
            let hir = regex_translate::parse_hir(&e.regex).map_err(|k| PosError::new(e.pos, k))?;
            match hir.properties().minimum_len() {
                Some(0) => {
                    return Err(PosError::new(
                        e.pos,
                        GrammarErrorKind::EmptyTerminal {
                            name: e.name.clone(),
                        },
                    ))
                }
                // regex-syntax: no minimum length means no match at all (`[^\s\S]`).
                None => {
                    return Err(PosError::new(
                        e.pos,
                        GrammarErrorKind::EmptyLanguageTerminal {
                            name: e.name.clone(),
                        },
                    ))
                }
                Some(_) => {}
            }
            terminals.push(Terminal {
                name: e.name.clone(),
                regex: e.regex.clone(),
                lazy: e.lazy,
                priority: e.priority.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32,
                defined_at: Some(index.location(e.pos)),
                difference: None,
            });
        }
        let mut rules = Vec::new();
        for (a, nt) in self.nts.iter().enumerate().filter(|(a, _)| reachable[*a]) {
            for p in &nt.prods {
                let rhs = p
                    .iter()
                    .map(|s| match *s {
                        PSym::T(t) => Symbol::Terminal(t_map[t]),
                        PSym::N(b) => Symbol::Nonterminal(nt_map[b]),
                        PSym::SelfRef => unreachable!("replaced when the helper is allocated"),
                    })
                    .collect();
                rules.push(Rule {
                    lhs: nt_map[a],
                    rhs,
                });
            }
        }
        Ok(Grammar {
            source_name: source_name.to_string(),
            terminals,
            nonterminals,
            rules,
            start: nt_map[start],
            ignore: ignore.iter().map(|&t| t_map[t]).collect(),
            allow_initial_skip,
        })
    }
}
