//! Which JSON Schema keywords are annotations, which are enforced, which are not —
//! and the diagnostics that make sure none is silently ignored.

use super::SchemaIssue;

/// How the front end treats a keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeywordClass {
    /// No effect on validity (title, description, …): accepted.
    Annotation,
    /// Enforced by the grammar (some forms may still be reported where they are used).
    Enforced,
    /// An assertion the grammar cannot enforce: an error, or a warning when lenient.
    Unsupported,
    /// Not a JSON Schema keyword: no effect by the specification; listed as a warning.
    Unknown,
}

/// Keywords that never change validity.
pub const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "examples",
    "example",
    "$comment",
    "default",
    "$schema",
    "$id",
    "id",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
    "$vocabulary",
    "$defs",
    "definitions",
    "$anchor",
    "discriminator",
    "markdownDescription",
];

/// Keywords the grammar enforces (see the README's keyword table for the limits).
pub const ENFORCED: &[&str] = &[
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "items",
    "prefixItems",
    "additionalItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "anyOf",
    "allOf",
    "oneOf",
    "not",
    "$ref",
    "nullable",
    "if",
    "then",
    "else",
    "minContains",
    "maxContains",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
];

/// Assertions with no grammar here.
pub const UNSUPPORTED: &[&str] = &[
    "contains",
    "unevaluatedProperties",
    "unevaluatedItems",
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
];

/// Classifies a keyword.
pub fn classify(keyword: &str) -> KeywordClass {
    if ANNOTATIONS.contains(&keyword) {
        KeywordClass::Annotation
    } else if ENFORCED.contains(&keyword) {
        KeywordClass::Enforced
    } else if UNSUPPORTED.contains(&keyword) {
        KeywordClass::Unsupported
    } else {
        KeywordClass::Unknown
    }
}

/// Collected warnings, and the strict/lenient decision for unsupported forms.
#[derive(Debug, Default)]
pub struct Diagnostics {
    /// Downgrade unsupported keywords to warnings.
    pub lenient: bool,
    /// Warnings so far, in the order found, without repeats.
    pub warnings: Vec<SchemaIssue>,
}

impl Diagnostics {
    /// An unsupported keyword (or form of one): an error unless lenient.
    pub fn unsupported(
        &mut self,
        pointer: &str,
        keyword: &str,
        message: impl Into<String>,
    ) -> Result<(), SchemaIssue> {
        let issue = SchemaIssue {
            pointer: pointer.to_string(),
            keyword: Some(keyword.to_string()),
            unsupported: true,
            message: message.into(),
        };
        if self.lenient {
            self.warn(issue);
            Ok(())
        } else {
            Err(issue)
        }
    }

    /// A warning (listed, never an error).
    pub fn warn(&mut self, issue: SchemaIssue) {
        if !self.warnings.contains(&issue) {
            self.warnings.push(issue);
        }
    }
}
