//! JSON Schema → Grammar IR (drafts 2020-12 and 7; 2019-09 where it is the same).
//!
//! The grammar is built directly as IR ([`grammar_gen`]) rather than as Lark text fed
//! to the Lark front end: a schema's errors must point at JSON pointers, string
//! languages are regex-syntax HIR that needs encoding into JSON text before it becomes a
//! terminal (`string_lang`), and a direct builder shares one nonterminal per subschema
//! and per `$ref` with no name mangling. Modules, one idea each:
//! [`refs`] (`$ref`/`$anchor`/`$id` resolution), [`keywords`] (which keywords are
//! annotations, enforced or reported; warnings), [`merge`] (`allOf`), [`listed_values`]
//! (which `enum`/`const` values a schema accepts, by a full validator), [`chunked_string`]
//! (strings with length bounds as chunk lexemes), [`ecma_regex`]
//! (ECMA-262 → Rust regex), [`string_lang`] (character languages → JSON string
//! terminals), [`formats`], [`number_lang`] (numeric ranges), [`presence`] (conditions on which
//! members an object has), [`any_order`] (object members in any order), [`grammar_gen`].
//!
//! Nothing is silently ignored: an assertion keyword (or a form of one) the grammar
//! cannot enforce is a [`SchemaError`] naming the keyword and its JSON pointer, or with
//! [`SchemaOptions::lenient`] a warning in [`SchemaGrammar::warnings`]. Unknown keywords
//! (which JSON Schema itself ignores) are always listed as warnings. The README has the
//! keyword table with the exact semantics and limits.

pub mod any_order;
pub mod chunked_string;
pub mod ecma_regex;
pub mod formats;
pub mod grammar_gen;
pub mod keywords;
pub mod listed_values;
pub mod merge;
pub mod number_lang;
pub mod presence;
pub mod refs;
pub mod string_lang;

#[cfg(test)]
mod tests;

use serde_json::Value;
use stackmask_formats::Grammar;

/// Whitespace between JSON tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Whitespace {
    /// None at all (`{"a":1}`), the default: what models are prompted to emit and the
    /// smallest grammar.
    #[default]
    Compact,
    /// Any run of space, tab, CR, LF between two tokens (not before the first nor after
    /// the last, DESIGN.md §1).
    Free,
}

/// The order of an object's declared properties.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PropertyOrder {
    /// As declared in `properties` (then required names declared nowhere, then
    /// additional properties), the default.
    #[default]
    Declared,
    /// Declared properties sorted by name (then the others, as above).
    Sorted,
    /// Any order: every member anywhere, each declared name at most once (one
    /// nonterminal per set of names written, [`any_order`]); an object past
    /// [`any_order::MAX_ANY_ORDER_STATES`] is an error (lenient: declared order, warned).
    /// `enum`/`const` objects too.
    Any,
    /// Any order where an object is within [`any_order::MAX_ANY_ORDER_STATES`];
    /// past it, declared order with a listed warning (strict mode too): every schema
    /// that compiles in declared order compiles, and accepts at least what it did.
    AnyOrDeclared,
}

impl PropertyOrder {
    /// The names the command line and Python take, with their orders.
    pub const NAMES: [(&'static str, PropertyOrder); 4] = [
        ("declared", PropertyOrder::Declared),
        ("sorted", PropertyOrder::Sorted),
        ("any", PropertyOrder::Any),
        ("any-or-declared", PropertyOrder::AnyOrDeclared),
    ];

    /// The order named `name` (see [`PropertyOrder::NAMES`]).
    pub fn from_name(name: &str) -> Option<PropertyOrder> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, o)| o)
    }

    /// Whether objects are written in any order where feasible.
    pub fn any(self) -> bool {
        matches!(self, PropertyOrder::Any | PropertyOrder::AnyOrDeclared)
    }
}

/// Which draft's rules apply where drafts differ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Draft {
    /// Draft 2020-12 (and 2019-09): `$ref` beside other keywords is a conjunction.
    #[default]
    Draft2020,
    /// Draft 7 (and 6): keywords beside `$ref` are ignored, as that draft says.
    Draft7,
    /// Draft 4 (and 3): as draft 7, and an integer has no fraction (`1.0` is not one).
    Draft4,
}

/// Options of the schema front end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchemaOptions {
    /// Downgrade unsupported keywords to listed warnings (the grammar then accepts a
    /// superset of the schema's language where a warning says so).
    pub lenient: bool,
    /// Whitespace policy.
    pub whitespace: Whitespace,
    /// Property order policy.
    pub order: PropertyOrder,
    /// Draft (by default from `$schema`: draft-06/07 URIs select [`Draft::Draft7`], draft-03/04 [`Draft::Draft4`]).
    pub draft: Draft,
}

/// One problem in a schema: where (JSON pointer), which keyword, what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaIssue {
    /// JSON pointer as a URI fragment (`#/properties/a/pattern`).
    pub pointer: String,
    /// The keyword at fault, if one is.
    pub keyword: Option<String>,
    /// Whether the keyword (or this form of it) is one the grammar cannot enforce, as
    /// opposed to an invalid value, an unknown keyword or a limit.
    pub unsupported: bool,
    /// What is wrong.
    pub message: String,
}

/// The pointer; then, for a keyword the grammar cannot enforce, "unsupported `k`", or
/// for another issue with a keyword, the keyword where the pointer does not end in it;
/// then the message. (An issue with a keyword is not always an unsupported one: `$ref`
/// must be a string; an unknown keyword has no effect.)
impl std::fmt::Display for SchemaIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.keyword {
            Some(k) if self.unsupported => {
                write!(f, "{}: unsupported `{k}`: {}", self.pointer, self.message)
            }
            Some(k) if !self.pointer.ends_with(&refs::child("", k)) => {
                write!(f, "{}: `{k}`: {}", self.pointer, self.message)
            }
            _ => write!(f, "{}: {}", self.pointer, self.message),
        }
    }
}

/// A schema the front end refused, with the file it came from.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: {issue}")]
pub struct SchemaError {
    /// The schema file (or other source name).
    pub source_name: String,
    /// The problem.
    pub issue: SchemaIssue,
}

/// A schema's grammar and the warnings found on the way.
#[derive(Clone, Debug)]
pub struct SchemaGrammar {
    /// The grammar IR; its sentences are the schema's valid instances in canonical
    /// JSON text under the chosen whitespace and order policies.
    pub grammar: Grammar,
    /// Unknown keywords, and in lenient mode the unsupported keywords not enforced.
    pub warnings: Vec<SchemaIssue>,
}

/// The draft a schema declares with `$schema`, if it declares one.
pub fn declared_draft(schema: &Value) -> Option<Draft> {
    let s = schema.get("$schema")?.as_str()?;
    if ["draft-04", "draft-03"].iter().any(|d| s.contains(d)) {
        Some(Draft::Draft4)
    } else if ["draft-06", "draft-07"].iter().any(|d| s.contains(d)) {
        Some(Draft::Draft7)
    } else {
        Some(Draft::Draft2020)
    }
}

/// Builds the grammar of a schema.
pub fn schema_to_grammar(
    schema: &Value,
    source_name: &str,
    options: &SchemaOptions,
) -> Result<SchemaGrammar, SchemaError> {
    let generator = grammar_gen::Generator::new(schema, *options);
    generator
        .build(source_name)
        .map(|(grammar, warnings)| SchemaGrammar { grammar, warnings })
        .map_err(|issue| SchemaError {
            source_name: source_name.to_string(),
            issue,
        })
}

/// Parses schema text (JSON; a syntax error is reported at `line:col`) and builds its
/// grammar; the draft comes from `$schema` unless `options` is not the default draft.
pub fn schema_text_to_grammar(
    text: &str,
    source_name: &str,
    options: &SchemaOptions,
) -> Result<SchemaGrammar, SchemaError> {
    let value: Value = serde_json::from_str(text).map_err(|e| SchemaError {
        source_name: source_name.to_string(),
        issue: SchemaIssue {
            pointer: format!("{}:{}", e.line(), e.column()),
            keyword: None,
            unsupported: false,
            message: format!("invalid JSON: {e}"),
        },
    })?;
    let mut opts = *options;
    if opts.draft == Draft::default() {
        opts.draft = declared_draft(&value).unwrap_or_default();
    }
    schema_to_grammar(&value, source_name, &opts)
}
