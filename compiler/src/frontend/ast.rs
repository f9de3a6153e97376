//! Syntax tree of a Lark grammar, as the LALRPOP parser builds it.
//!
//! It mirrors the source closely (EBNF operators, groups, aliases, templates, directives)
//! and keeps byte offsets so that normalization can point errors at the right place.
//! Nothing here is checked yet: names may be undefined, literals empty, regexes invalid.

/// A name as written, with its byte offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Name {
    /// The name.
    pub text: String,
    /// Byte offset in the source.
    pub pos: usize,
}

impl Name {
    /// Whether the name is a terminal's (upper case) rather than a rule's.
    pub fn is_terminal(&self) -> bool {
        super::token::is_terminal_name(&self.text)
    }
}

/// One top-level item of a grammar file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// A rule or terminal definition.
    Def(Def),
    /// `%ignore expansions`.
    Ignore {
        /// What to ignore (usually one terminal name or literal).
        body: Expansions,
        /// Source text of `body`, names an anonymous ignore terminal.
        text: String,
        /// Byte offset of `body`.
        pos: usize,
    },
    /// `%import path.NAME [-> ALIAS]` or `%import path (A, B)`.
    Import {
        /// Module path components (`common`, or `grammars`, `ab` for `.grammars.ab`).
        module: Vec<Name>,
        /// Whether the path starts with `.` (relative to the grammar file).
        relative: bool,
        /// Imported names with their optional aliases.
        names: Vec<(Name, Option<Name>)>,
        /// Byte offset of the `%import`.
        pos: usize,
    },
    /// `%declare NAME ...`.
    Declare {
        /// Byte offset of the `%declare`.
        pos: usize,
    },
    /// `%override def` or `%extend def` (only meaningful with grammar imports).
    Override {
        /// `%override` or `%extend`.
        directive: &'static str,
        /// Byte offset of the directive.
        pos: usize,
    },
    /// `%llguidance {json}`.
    Llguidance {
        /// The JSON object's text.
        json: String,
        /// Byte offset of the directive.
        pos: usize,
    },
}

/// A rule (`name: ...`) or terminal (`NAME: ...`) definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Def {
    /// The defined name (its position is the definition's position).
    pub name: Name,
    /// Lark's `?` (inline if one child) — tree shaping only, the language is unchanged.
    pub inline: bool,
    /// Lark's `!` (keep all tokens) — tree shaping only.
    pub keep_tokens: bool,
    /// Template parameters (`_sep{x, s}: ...`); empty for an ordinary definition.
    pub params: Vec<Name>,
    /// llguidance attributes (`NAME[lazy]`, `name[max_tokens=5]`): each name, and
    /// whether it was given a value.
    pub attrs: Vec<(Name, bool)>,
    /// `name.N`: the priority, if given.
    pub priority: Option<i64>,
    /// The right-hand side.
    pub body: Expansions,
}

/// Alternatives separated by `|`.
pub type Expansions = Vec<Alternative>;

/// One alternative: a sequence of expressions, with an optional `-> alias` (tree shaping
/// only, ignored).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alternative {
    /// The sequence; empty for an ε alternative.
    pub items: Vec<Expr>,
    /// Byte offset of the alternative.
    pub pos: usize,
}

/// An atom with an optional postfix operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expr {
    /// The operand.
    pub atom: Atom,
    /// `?`, `*`, `+`, `~ n..m`, `{n,m}`, or none.
    pub op: Option<Op>,
    /// Byte offset of the expression.
    pub pos: usize,
}

/// A postfix operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `?`: zero or one.
    Opt,
    /// `*`: zero or more.
    Star,
    /// `+`: one or more.
    Plus,
    /// `~ n`, `~ n..m`, `{n}`, `{n,}`, `{,m}`, `{n,m}`: between `min` and `max`
    /// (unbounded if `None`) repetitions. Not yet checked (`min <= max`).
    Repeat {
        /// Minimum count.
        min: i64,
        /// Maximum count.
        max: Option<i64>,
    },
}

/// An operand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Atom {
    /// `( expansions )`.
    Group(Expansions),
    /// `[ expansions ]`: optional.
    Maybe(Expansions),
    /// A rule or terminal name.
    Name(Name),
    /// A string or regex literal.
    Literal(Literal),
    /// `"a".."z"`.
    Range {
        /// The start literal.
        from: Literal,
        /// The end literal.
        to: Literal,
        /// Source text, names the anonymous terminal.
        text: String,
    },
    /// `name{arg, ...}`: a template instantiation.
    Template {
        /// The template.
        name: Name,
        /// The arguments.
        args: Vec<Atom>,
    },
    /// `%json { schema }` (llguidance): the JSON values the schema admits, as JSON
    /// Schema compiles them (compact, declared property order, strict).
    Json {
        /// The schema object's text.
        json: String,
        /// Byte offset of `%json`.
        pos: usize,
    },
}

/// A `"..."` or `/.../` literal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Literal {
    /// String or regex.
    pub kind: LiteralKind,
    /// For strings: the decoded value. For regexes: the body as written.
    pub value: String,
    /// Flags: `i` for strings; any of `imslux` for regexes.
    pub flags: String,
    /// Source text (quotes or slashes and flags included).
    pub text: String,
    /// Byte offset in the source.
    pub pos: usize,
}

/// Kinds of [`Literal`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LiteralKind {
    /// `"..."`.
    Str,
    /// `/.../`.
    Regex,
}
