//! `$ref` resolution inside one schema document: JSON pointers (`#/$defs/a`), anchors
//! (`#name`, from `$anchor` and draft-7 `$id: "#name"`), and `$id`s of subschemas
//! (`other.json#/x` where some subschema says `"$id": "other.json"` or ends with it).
//! References to documents that are not embedded are reported (no network, no files).

use serde_json::Value;
use std::collections::HashMap;

/// Where anchors and `$id`s point, built once per document.
#[derive(Debug, Default)]
pub struct RefIndex {
    /// (resource pointer, anchor name) → pointer.
    anchors: HashMap<(String, String), String>,
    /// `$id` base (without fragment) → pointer of the resource.
    ids: Vec<(String, String)>,
}

/// Appends a reference token to a JSON pointer (escaping `~` and `/`).
pub fn child(pointer: &str, token: &str) -> String {
    format!("{pointer}/{}", token.replace('~', "~0").replace('/', "~1"))
}

impl RefIndex {
    /// Indexes every `$anchor` and `$id` in the document.
    pub fn new(root: &Value) -> Self {
        let mut index = RefIndex::default();
        index.walk(root, "#", "#");
        index
    }

    fn walk(&mut self, v: &Value, ptr: &str, resource: &str) {
        match v {
            Value::Object(m) => {
                let mut resource = resource.to_string();
                for key in ["$id", "id"] {
                    if let Some(Value::String(id)) = m.get(key) {
                        if let Some(a) = id.strip_prefix('#') {
                            self.anchors
                                .entry((resource.clone(), a.into()))
                                .or_insert_with(|| ptr.into());
                        } else if ptr != "#" {
                            let base = id.split('#').next().unwrap_or("");
                            self.ids.push((base.to_string(), ptr.to_string()));
                            resource = ptr.to_string();
                        }
                    }
                }
                if let Some(Value::String(a)) = m.get("$anchor") {
                    self.anchors
                        .entry((resource.clone(), a.clone()))
                        .or_insert_with(|| ptr.into());
                }
                for (k, c) in m {
                    // Values of these are data, not schemas.
                    if matches!(k.as_str(), "enum" | "const" | "examples" | "default") {
                        continue;
                    }
                    self.walk(c, &child(ptr, k), &resource);
                }
            }
            Value::Array(a) => {
                for (i, c) in a.iter().enumerate() {
                    self.walk(c, &child(ptr, &i.to_string()), resource);
                }
            }
            _ => {}
        }
    }

    /// The JSON pointer (`#/...`) a `$ref` value points at, or why not.
    pub fn resolve(&self, root: &Value, reference: &str) -> Result<String, String> {
        let (base, fragment) = match reference.split_once('#') {
            Some((b, f)) => (b, f),
            None => (reference, ""),
        };
        let start = if base.is_empty() || root_id_matches(root, base) {
            "#".to_string()
        } else {
            // Nested `$id`s are matched by their text (exact, or one ending in `/base`):
            // base-URI resolution is not implemented, so a match must be unique.
            let hits: Vec<&(String, String)> = self
                .ids
                .iter()
                .filter(|(id, _)| {
                    id == base
                        || id.ends_with(&format!("/{base}"))
                        || base.ends_with(&format!("/{id}"))
                })
                .collect();
            match hits.as_slice() {
                [(_, p)] => p.clone(),
                [] => {
                    return Err(format!(
                        "`$ref` to another document `{reference}` (only references inside the schema are resolved)"
                    ))
                }
                _ => {
                    return Err(format!(
                        "`$ref` `{reference}` matches several `$id`s (base-URI resolution is not implemented)"
                    ))
                }
            }
        };
        if fragment.is_empty() {
            return Ok(start);
        }
        if !fragment.starts_with('/') {
            let decoded = percent_decode(fragment);
            if base.is_empty() {
                // `#name`: the anchor must be unique in the document (its resource
                // would otherwise depend on the referring schema's base URI).
                let hits: Vec<&String> = self
                    .anchors
                    .iter()
                    .filter(|((_, a), _)| *a == decoded)
                    .map(|(_, p)| p)
                    .collect();
                return match hits.as_slice() {
                    [p] => Ok((*p).clone()),
                    [] => Err(format!("`$ref` to an unknown anchor `#{fragment}`")),
                    _ => Err(format!(
                        "anchor `#{fragment}` is defined in several resources (base-URI resolution is not implemented)"
                    )),
                };
            }
            return self
                .anchors
                .get(&(start, decoded))
                .cloned()
                .ok_or_else(|| format!("`$ref` to an unknown anchor `{reference}`"));
        }
        let mut ptr = start;
        let mut node =
            lookup(root, &ptr).ok_or_else(|| format!("`$ref` `{reference}` does not resolve"))?;
        for raw in fragment[1..].split('/') {
            let token = percent_decode(raw).replace("~1", "/").replace("~0", "~");
            node = match node {
                Value::Object(m) => m.get(&token),
                Value::Array(a) => token.parse::<usize>().ok().and_then(|i| a.get(i)),
                _ => None,
            }
            .ok_or_else(|| format!("`$ref` `{reference}` does not resolve"))?;
            ptr = child(&ptr, &token);
        }
        Ok(ptr)
    }
}

fn root_id_matches(root: &Value, base: &str) -> bool {
    root.get("$id")
        .or_else(|| root.get("id"))
        .and_then(Value::as_str)
        .is_some_and(|id| id.split('#').next() == Some(base))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The value at a `#/...` pointer of this module's form.
pub fn lookup<'a>(root: &'a Value, pointer: &str) -> Option<&'a Value> {
    let path = pointer.strip_prefix('#')?;
    if path.is_empty() {
        return Some(root);
    }
    root.pointer(path)
}
