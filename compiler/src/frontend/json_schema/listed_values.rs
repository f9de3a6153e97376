//! Which listed values (`enum`/`const`) a schema accepts, decided by a full JSON
//! Schema validator (the `jsonschema` crate).
//!
//! Beside a finite list of values every keyword is decidable: the language is the
//! listed values that validate, so `not`, `oneOf`, `if`/`then`/`else`,
//! `dependencies`, `uniqueItems`, `multipleOf` on fractions and the rest need no
//! grammar of their own there. Writing a validator for them would duplicate a
//! well-kept library; this module asks it, per flattened schema, once per value.
//!
//! `$ref`s inside the schema resolve against the whole document, which is registered
//! under [`ROOT_URI`] (fragment-only references are made absolute against it). A schema the library cannot build (a
//! reference outside the document, say) gives no verdict, and the caller falls back
//! to what it can decide itself or reports the keyword.

use super::Draft;
use jsonschema::{Registry, Validator};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// The URI the schema document is registered under.
const ROOT_URI: &str = "urn:stackmask:schema-root";

/// Validators of flattened schemas, built on demand against one document.
pub struct ListedValues<'a> {
    registry: Option<Registry<'a>>,
    draft: jsonschema::Draft,
    /// Per schema (serialized): its validator, or `None` if it does not build.
    validators: HashMap<String, Option<Validator>>,
}

impl<'a> ListedValues<'a> {
    /// For the schema document `root`, read as `draft`.
    pub fn new(root: &'a Value, draft: Draft) -> Self {
        // The document's own `$schema` names the draft exactly (2019-09 and 6 are
        // read as 2020-12 and 7 by the grammar, where they agree, but not everywhere).
        let declared = root.get("$schema").and_then(Value::as_str).unwrap_or("");
        let draft = [
            ("2020-12", jsonschema::Draft::Draft202012),
            ("2019-09", jsonschema::Draft::Draft201909),
            ("draft-07", jsonschema::Draft::Draft7),
            ("draft-06", jsonschema::Draft::Draft6),
            ("draft-04", jsonschema::Draft::Draft4),
        ]
        .into_iter()
        .find(|(name, _)| declared.contains(name))
        .map_or(
            match draft {
                Draft::Draft2020 => jsonschema::Draft::Draft202012,
                Draft::Draft7 => jsonschema::Draft::Draft7,
                Draft::Draft4 => jsonschema::Draft::Draft4,
            },
            |(_, d)| d,
        );
        let registry = Registry::new()
            .draft(draft)
            .add(ROOT_URI, root)
            .and_then(|b| b.prepare())
            .ok();
        ListedValues {
            registry,
            draft,
            validators: HashMap::new(),
        }
    }

    /// Per value: whether it validates against the schema `m` (formats asserted, as
    /// the grammar asserts them); `None` for each if the library cannot build `m`.
    pub fn verdicts(&mut self, m: &Map<String, Value>, values: &[Value]) -> Vec<Option<bool>> {
        let validator = self.registry.as_ref().and_then(|registry| {
            let key = serde_json::to_string(m).expect("a JSON value serializes");
            let draft = self.draft;
            self.validators
                .entry(key)
                .or_insert_with(|| {
                    jsonschema::options()
                        .with_draft(draft)
                        .with_registry(registry)
                        .should_validate_formats(true)
                        .build(&rooted(&Value::Object(m.clone())))
                        .ok()
                })
                .as_ref()
        });
        values
            .iter()
            .map(|v| validator.map(|x| x.is_valid(v)))
            .collect()
    }
}

/// `schema` with its document-relative references (`#/definitions/x`, `#anchor`)
/// made absolute against [`ROOT_URI`]: in the validator a fragment-only reference
/// would resolve inside the flattened schema itself. Listed values (`enum`, `const`,
/// annotations) are data, not schemas, and are left alone.
fn rooted(schema: &Value) -> Value {
    match schema {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("$ref", Value::String(r)) if r.starts_with('#') => {
                            Value::String(format!("{ROOT_URI}{r}"))
                        }
                        ("enum" | "const" | "default" | "examples", _) => v.clone(),
                        _ => rooted(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(rooted).collect()),
        _ => schema.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn not_one_of_and_refs_into_the_document_are_decided() {
        let root = json!({
            "$id": "https://example.com/s.json",
            "definitions": {"notFalse": {"not": {"enum": [{"a": false}]}}}
        });
        let mut lv = ListedValues::new(&root, Draft::Draft2020);
        let m = map(json!({
            "enum": [{"a": 0}, {"a": false}, 3, [1, 1]],
            "$ref": "#/definitions/notFalse",
            "not": {"oneOf": [{"const": 3}, {"type": "string"}]},
            "uniqueItems": true
        }));
        let verdicts = lv.verdicts(&m, m["enum"].as_array().unwrap());
        assert_eq!(
            verdicts,
            [Some(true), Some(false), Some(false), Some(false)]
        );
    }

    #[test]
    fn formats_are_asserted_and_unbuildable_schemas_give_no_verdict() {
        let root = json!({});
        let mut lv = ListedValues::new(&root, Draft::Draft7);
        let m = map(json!({"format": "email"}));
        assert_eq!(
            lv.verdicts(&m, &[json!("a@b.org"), json!("not an email")]),
            [Some(true), Some(false)]
        );
        let remote = map(json!({"$ref": "https://example.com/elsewhere.json"}));
        assert_eq!(lv.verdicts(&remote, &[json!(1)]), [None]);
    }
}
