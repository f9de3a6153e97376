//! `allOf` (and `$ref` beside other keywords) by merging: the conjunction of two schema
//! objects as one schema object, keyword by keyword, where that is exact.
//!
//! Merging is exact for: `type` (intersection, `integer` ⊂ `number`), `enum`/`const`
//! (intersection), `required` (union), `properties`/`patternProperties` (per key
//! `allOf`; a property only one side declares meets the other side's
//! `additionalProperties`), `additionalProperties`/`items`/`additionalItems`/
//! `propertyNames` (`allOf`), lower bounds (max), upper bounds (min), `multipleOf` on
//! integers (lcm), `uniqueItems` (or), `not` (`not (a or b)`), `dependencies`/
//! `dependentRequired`/`dependentSchemas` (per name, both conditions). Equal values of other
//! keywords merge; different `pattern`s, `format`s or `prefixItems` lists cannot be
//! written as one and are reported by the caller.

use serde_json::{json, Map, Value};

/// Merges two schema objects (`$ref`, `allOf`, `anyOf`, `oneOf` already taken out).
/// `Err` names the keyword that has no exact merge.
pub fn merge(
    a: &Map<String, Value>,
    b: &Map<String, Value>,
) -> Result<Map<String, Value>, (String, String)> {
    let has = |m: &Map<String, Value>, k: &str| m.get(k).is_some_and(|v| v != &json!({}));
    if (has(a, "patternProperties") && has(b, "additionalProperties"))
        || (has(b, "patternProperties") && has(a, "additionalProperties"))
    {
        return Err((
            "patternProperties".into(),
            "`allOf` of `patternProperties` on one side and `additionalProperties` on the other"
                .into(),
        ));
    }
    let positional = |m: &Map<String, Value>| {
        m.contains_key("prefixItems") || m.get("items").is_some_and(Value::is_array)
    };
    let any_items = |m: &Map<String, Value>| {
        ["items", "prefixItems", "additionalItems"]
            .iter()
            .any(|k| m.contains_key(*k))
    };
    if (positional(a) && any_items(b) || positional(b) && any_items(a))
        && ["items", "prefixItems", "additionalItems"]
            .iter()
            .any(|k| a.get(*k) != b.get(*k))
    {
        return Err((
            "prefixItems".into(),
            "`allOf` of positional items (`prefixItems`/`items` array) with other item schemas (each applies relative to its own schema object)".into(),
        ));
    }
    let mut out = a.clone();
    // Properties first: each side's additionalProperties applies to the other's names.
    let props = merged_properties(a, b)?;
    if let Some(p) = props {
        out.insert("properties".into(), Value::Object(p));
    }
    for (k, vb) in b {
        if k == "properties" {
            continue;
        }
        let Some(va) = a.get(k) else {
            out.insert(k.clone(), vb.clone());
            continue;
        };
        if va == vb {
            continue;
        }
        let merged = match k.as_str() {
            "type" => {
                let ta = types_of(va);
                let tb = types_of(vb);
                let mut t: Vec<Value> = Vec::new();
                for x in &ta {
                    for y in &tb {
                        let m = match (x.as_str(), y.as_str()) {
                            (p, q) if p == q => Some(p),
                            ("number", "integer") | ("integer", "number") => Some("integer"),
                            _ => None,
                        };
                        if let Some(m) = m {
                            if !t.iter().any(|v| v == m) {
                                t.push(json!(m));
                            }
                        }
                    }
                }
                Value::Array(t)
            }
            "enum" | "const" => {
                let ea = enum_of(k, va);
                let eb = enum_of(k, vb);
                let both: Vec<Value> = ea.into_iter().filter(|x| eb.contains(x)).collect();
                out.remove("const");
                out.insert("enum".into(), Value::Array(both));
                continue;
            }
            "required" => {
                let mut r = va.as_array().cloned().unwrap_or_default();
                for x in vb.as_array().into_iter().flatten() {
                    if !r.contains(x) {
                        r.push(x.clone());
                    }
                }
                Value::Array(r)
            }
            "patternProperties" => {
                let (Some(ma), Some(mb)) = (va.as_object(), vb.as_object()) else {
                    return Err((k.clone(), "not an object".into()));
                };
                let mut m = ma.clone();
                for (p, s) in mb {
                    let v = match ma.get(p) {
                        Some(x) => json!({"allOf": [x, s]}),
                        None => s.clone(),
                    };
                    m.insert(p.clone(), v);
                }
                Value::Object(m)
            }
            "additionalProperties" | "items" | "additionalItems" | "propertyNames"
                if !va.is_array() && !vb.is_array() =>
            {
                json!({"allOf": [va, vb]})
            }
            "minimum" | "exclusiveMinimum" | "minLength" | "minItems" | "minProperties" => {
                if va.as_f64() >= vb.as_f64() { va.clone() } else { vb.clone() }
            }
            "maximum" | "exclusiveMaximum" | "maxLength" | "maxItems" | "maxProperties" => {
                if va.as_f64() <= vb.as_f64() { va.clone() } else { vb.clone() }
            }
            "multipleOf" => match (va.as_u64(), vb.as_u64()) {
                (Some(x), Some(y)) if x > 0 && y > 0 => json!(x / gcd(x, y) * y),
                _ => return Err((k.clone(), "two different non-integer `multipleOf`s".into())),
            },
            "uniqueItems" => json!(va.as_bool() == Some(true) || vb.as_bool() == Some(true)),
            "nullable" => json!(va.as_bool() == Some(true) && vb.as_bool() == Some(true)),
            "not" => json!({"anyOf": [va, vb]}),
            "dependencies" | "dependentRequired" | "dependentSchemas" => {
                let (Some(ma), Some(mb)) = (va.as_object(), vb.as_object()) else {
                    return Err((k.clone(), "not an object".into()));
                };
                // A name both sides constrain: both conditions (a list of names is
                // the schema requiring them).
                let as_schema = |v: &Value| {
                    if v.is_array() {
                        json!({ "required": v })
                    } else {
                        v.clone()
                    }
                };
                let mut m = ma.clone();
                for (name, d) in mb {
                    let v = match ma.get(name) {
                        Some(x) if x != d => json!({"allOf": [as_schema(x), as_schema(d)]}),
                        _ => d.clone(),
                    };
                    m.insert(name.clone(), v);
                }
                Value::Object(m)
            }
            _ if super::keywords::classify(k) == super::keywords::KeywordClass::Annotation => {
                continue
            }
            _ => {
                return Err((
                    k.clone(),
                    format!("`allOf` with two different `{k}` values (their conjunction has no single form here)"),
                ))
            }
        };
        out.insert(k.clone(), merged);
    }
    Ok(out)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// `type` as a list of names.
pub fn types_of(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(|x| x.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    }
}

fn enum_of(k: &str, v: &Value) -> Vec<Value> {
    if k == "const" {
        vec![v.clone()]
    } else {
        v.as_array().cloned().unwrap_or_default()
    }
}

/// The merged `properties`, or `None` if neither side has any.
fn merged_properties(
    a: &Map<String, Value>,
    b: &Map<String, Value>,
) -> Result<Option<Map<String, Value>>, (String, String)> {
    let pa = a.get("properties").and_then(Value::as_object);
    let pb = b.get("properties").and_then(Value::as_object);
    if pa.is_none() && pb.is_none() {
        return Ok(None);
    }
    let empty = Map::new();
    let (pa, pb) = (pa.unwrap_or(&empty), pb.unwrap_or(&empty));
    // What side `s` says about a name it does not declare.
    let other = |s: &Map<String, Value>, name: &str| -> Result<Option<Value>, (String, String)> {
        if s.get("patternProperties")
            .is_some_and(|p| p.as_object().is_some_and(|m| !m.is_empty()))
        {
            let pats = s["patternProperties"].as_object().expect("checked");
            let mut hits = Vec::new();
            for (p, sch) in pats {
                let re = super::ecma_regex::translate(p)
                    .ok()
                    .and_then(|r| regex_automata::meta::Regex::new(&r).ok())
                    .ok_or_else(|| {
                        (
                            "patternProperties".to_string(),
                            format!("pattern `{p}` cannot be translated"),
                        )
                    })?;
                if re.is_match(name) {
                    hits.push(sch.clone());
                }
            }
            if !hits.is_empty() {
                return Ok(Some(json!({"allOf": hits})));
            }
        }
        Ok(s.get("additionalProperties").cloned())
    };
    let mut out = pa.clone();
    for (k, vb) in pb {
        let v = match pa.get(k) {
            Some(va) => json!({"allOf": [va, vb]}),
            None => match other(a, k)? {
                Some(x) => json!({"allOf": [x, vb]}),
                None => vb.clone(),
            },
        };
        out.insert(k.clone(), v);
    }
    for (k, va) in pa {
        if !pb.contains_key(k) {
            if let Some(x) = other(b, k)? {
                out.insert(k.clone(), json!({"allOf": [va, x]}));
            }
        }
    }
    Ok(Some(out))
}
