//! The normalized grammar IR: a plain BNF grammar over regular terminals.
//!
//! Everything EBNF (`? * + [] ~ n..m`, groups, `?rule` inlining, `_rule` inlining) is
//! gone by the time a grammar reaches this form; what remains is what both the LR
//! construction and the Earley reference need: numbered terminals (each a Rust-syntax
//! regex over bytes that never matches the empty string), numbered nonterminals, and
//! productions. Empty productions (`A → ε`) are allowed.

use serde::{Deserialize, Serialize};

/// Index into [`Grammar::terminals`].
pub type TerminalId = u32;
/// Index into [`Grammar::nonterminals`].
pub type NonterminalId = u32;

/// A 1-based line and column in a grammar source file, for error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct Location {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, counted in characters.
    pub col: u32,
}

/// A terminal: a regular language over bytes, lexed greedily (one byte of lookahead)
/// unless `lazy`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Terminal {
    /// Display name (`NUMBER`, or the quoted literal for anonymous terminals).
    pub name: String,
    /// Fully expanded pattern in Rust `regex` syntax (terminal references inlined,
    /// literals escaped, flags applied as inline groups).
    pub regex: String,
    /// Lazy terminals end at their first match and carry no lookahead condition.
    pub lazy: bool,
    /// Declared priority (`NAME.N:`); see the README for what it does (nothing, in GLR).
    pub priority: i32,
    /// Where the terminal was defined (first use, for anonymous literals).
    pub defined_at: Option<Location>,
    /// `regex`'s language as a difference, when the front end that wrote `regex`
    /// knows it: a shortcut to the same automaton, never a change of language.
    pub difference: Option<Difference>,
}

/// A terminal's language as a regular language minus finitely many words: JSON
/// object keys other than the declared ones are the JSON string terminal minus the
/// declared keys' texts. As a regex that is a complement-shaped alternation over the
/// keys' trie, whose determinization took milliseconds per terminal; as a difference,
/// the lexer builds `base` once (it is the same in schema after schema) and walks its
/// automaton beside the words' trie.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Difference {
    /// The regular language (Rust `regex` syntax, as [`Terminal::regex`]).
    pub base: String,
    /// The words taken out of it.
    pub words: Vec<Vec<u8>>,
}

/// A nonterminal (a rule name after normalization; generated helpers get `__` names).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nonterminal {
    /// Display name.
    pub name: String,
}

/// A grammar symbol on a right-hand side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Symbol {
    /// A terminal.
    Terminal(TerminalId),
    /// A nonterminal.
    Nonterminal(NonterminalId),
}

/// A production `lhs → rhs`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Rule {
    /// Left-hand side.
    pub lhs: NonterminalId,
    /// Right-hand side; empty for an ε-production.
    pub rhs: Vec<Symbol>,
}

/// A normalized grammar.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grammar {
    /// Name of the source (a file path), used in messages.
    pub source_name: String,
    /// All terminals, ignore terminals included.
    pub terminals: Vec<Terminal>,
    /// All nonterminals.
    pub nonterminals: Vec<Nonterminal>,
    /// All productions.
    pub rules: Vec<Rule>,
    /// The start symbol.
    pub start: NonterminalId,
    /// Terminals declared with `%ignore`: allowed between two lexemes.
    pub ignore: Vec<TerminalId>,
    /// `%llguidance {"allow_initial_skip": true}`: ignore lexemes may also come first.
    pub allow_initial_skip: bool,
}

impl Grammar {
    /// The productions whose left-hand side is `nt`, as indices into `rules`.
    pub fn rules_of(&self, nt: NonterminalId) -> impl Iterator<Item = usize> + '_ {
        self.rules
            .iter()
            .enumerate()
            .filter(move |(_, r)| r.lhs == nt)
            .map(|(i, _)| i)
    }

    /// Whether `t` is an ignore terminal.
    pub fn is_ignore(&self, t: TerminalId) -> bool {
        self.ignore.contains(&t)
    }

    /// Human-readable name of a symbol.
    pub fn symbol_name(&self, s: Symbol) -> &str {
        match s {
            Symbol::Terminal(t) => &self.terminals[t as usize].name,
            Symbol::Nonterminal(n) => &self.nonterminals[n as usize].name,
        }
    }
}

impl Grammar {
    /// Which nonterminals derive the empty string (a fixpoint over the rules).
    pub fn nullable_nonterminals(&self) -> Vec<bool> {
        // Per rule, how many right-hand-side symbols are not known nullable yet (a
        // terminal never is); a rule at 0 makes its left-hand side nullable. Each
        // nonterminal found nullable counts down the rules using it, once per use:
        // linear, where sweeping all rules until nothing changes took one sweep per
        // link of a rule chain written in the wrong order (quadratic).
        let mut pending: Vec<usize> = self.rules.iter().map(|r| r.rhs.len()).collect();
        let mut uses: Vec<Vec<u32>> = vec![Vec::new(); self.nonterminals.len()];
        for (i, r) in self.rules.iter().enumerate() {
            for s in &r.rhs {
                if let Symbol::Nonterminal(n) = *s {
                    uses[n as usize].push(i as u32);
                }
            }
        }
        let mut nullable = vec![false; self.nonterminals.len()];
        let mut found: Vec<u32> = Vec::new();
        for (i, r) in self.rules.iter().enumerate() {
            if pending[i] == 0 && !nullable[r.lhs as usize] {
                nullable[r.lhs as usize] = true;
                found.push(r.lhs);
            }
        }
        while let Some(n) = found.pop() {
            for &i in &uses[n as usize] {
                pending[i as usize] -= 1;
                let lhs = self.rules[i as usize].lhs as usize;
                if pending[i as usize] == 0 && !nullable[lhs] {
                    nullable[lhs] = true;
                    found.push(lhs as u32);
                }
            }
        }
        nullable
    }
}
