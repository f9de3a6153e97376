//! String values: regexes over the *decoded* characters → terminals over JSON text.
//!
//! Keywords constrain a string's value (its characters after unescaping), but a
//! terminal matches the JSON text. Every string language is therefore built as a
//! regex-syntax [`Hir`] over characters (from `pattern`, `format`, lengths, key sets)
//! and then *encoded*: each character becomes the ways it may be written in canonical
//! JSON text. Canonical means: every character raw except `"` (written `\"`), `\`
//! (`\\`) and U+0000–U+001F (their short escape `\b \f \n \r \t` where one exists, or
//! `\u00XX` in either case of hex digit). `\/` and `\uXXXX` for other characters are not
//! accepted. This is exactly what serde_json, Python's `json.dumps(ensure_ascii=False)`
//! and JavaScript's `JSON.stringify` produce, and it keeps "one value, one lexeme"
//! simple enough to be exact: a string literal is accepted iff its decoded value is in
//! the language.

use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Look, Repetition};
use stackmask_formats::Difference;

/// Every Unicode scalar value.
pub fn any_char() -> Hir {
    Hir::class(Class::Unicode(every_char()))
}

/// Every Unicode scalar value, as a class.
pub fn every_char() -> ClassUnicode {
    ClassUnicode::new([ClassUnicodeRange::new('\0', '\u{10FFFF}')])
}

/// `sub{min,max}` (greedy; the language is all that matters).
pub fn repeat(sub: Hir, min: u32, max: Option<u32>) -> Hir {
    Hir::repetition(Repetition {
        min,
        max,
        greedy: true,
        sub: Box::new(sub),
    })
}

/// Any string of characters.
pub fn any_string() -> Hir {
    repeat(any_char(), 0, None)
}

/// Parses a Rust-syntax regex over characters.
pub fn parse_chars(pattern: &str) -> Result<Hir, String> {
    regex_syntax::ParserBuilder::new()
        .unicode(true)
        .build()
        .parse(pattern)
        .map_err(|e| {
            let msg = e.to_string();
            msg.lines()
                .rev()
                .find(|l| l.starts_with("error:"))
                .map(|l| l.trim_start_matches("error:").trim().to_string())
                .unwrap_or(msg)
        })
}

/// The set of strings an ECMA pattern matches *somewhere in* (JSON Schema patterns are
/// unanchored): `^`/`$` at the ends of a top-level alternative anchor it, anywhere
/// else they are reported (unless another alternative already matches every string).
///
/// A part that matches the empty string where an end is left open matches every
/// string somewhere, so the result is then `.*` itself, and an alternation with such an
/// alternative is too: the other alternatives add nothing, yet their automaton stays —
/// a fuzzed pattern of empty alternatives beside a 90-character literal took 6.7 s of
/// determinization for a language that is every string.
pub fn unanchored(pattern: &Hir) -> Hir {
    match pattern.kind() {
        HirKind::Alternation(alts) => {
            let alts: Vec<Hir> = alts.iter().map(unanchored).collect();
            let every = any_string();
            if alts.contains(&every) {
                return every;
            }
            Hir::alternation(alts)
        }
        HirKind::Capture(c) => unanchored(&c.sub),
        _ => {
            let mut parts: Vec<Hir> = match pattern.kind() {
                HirKind::Concat(v) => v.clone(),
                _ => vec![pattern.clone()],
            };
            // A capture group wrapping the whole rest (`^(a|b)$`) keeps its anchors outside.
            let mut start = false;
            while parts
                .first()
                .is_some_and(|h| matches!(h.kind(), HirKind::Look(Look::Start)))
            {
                parts.remove(0);
                start = true;
            }
            let mut end = false;
            while parts
                .last()
                .is_some_and(|h| matches!(h.kind(), HirKind::Look(Look::End)))
            {
                parts.pop();
                end = true;
            }
            // `^(^a|b$)$`-style nesting: a single remaining alternation is distributed.
            if start || end {
                if let [only] = parts.as_slice() {
                    if let HirKind::Capture(c) = only.kind() {
                        if matches!(c.sub.kind(), HirKind::Alternation(_)) {
                            parts = vec![(*c.sub).clone()];
                        }
                    }
                }
            }
            let core = Hir::concat(parts);
            let props = core.properties();
            if !(start && end) && props.minimum_len() == Some(0) && props.look_set().is_empty() {
                return any_string();
            }
            let mut out = Vec::new();
            if !start {
                out.push(any_string());
            }
            out.push(core);
            if !end {
                out.push(any_string());
            }
            Hir::concat(out)
        }
    }
}

/// Bounds on the number of characters of the strings in a language (`None`: unbounded).
pub fn char_len(h: &Hir) -> (u64, Option<u64>) {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => (0, Some(0)),
        HirKind::Literal(l) => {
            let n = String::from_utf8_lossy(&l.0).chars().count() as u64;
            (n, Some(n))
        }
        HirKind::Class(_) => (1, Some(1)),
        HirKind::Repetition(r) => {
            let (lo, hi) = char_len(&r.sub);
            let max = match (r.max, hi) {
                (_, Some(0)) => Some(0),
                (Some(m), Some(h)) => Some(h.saturating_mul(m as u64)),
                _ => None,
            };
            (lo.saturating_mul(r.min as u64), max)
        }
        HirKind::Capture(c) => char_len(&c.sub),
        HirKind::Concat(v) => v.iter().map(char_len).fold((0, Some(0)), |(a, b), (c, d)| {
            (a + c, b.zip(d).map(|(x, y)| x.saturating_add(y)))
        }),
        HirKind::Alternation(v) => {
            let parts: Vec<_> = v.iter().map(char_len).collect();
            let lo = parts.iter().map(|p| p.0).min().unwrap_or(0);
            let hi = parts.iter().try_fold(0u64, |m, p| p.1.map(|h| m.max(h)));
            (lo, hi)
        }
    }
}

/// The language `h` restricted to strings of `min..=max` characters, where that can be
/// written as a regex: either every string of `h` already has such a length, or `h` is a
/// concatenation of fixed-length parts and exactly one repetition of single characters
/// whose bounds can absorb the limits (`^[a-z][a-z0-9]*$` with `maxLength: 8`), or
/// [`by_exact_lengths`] writes it (`minLength: 1` alone; a few lengths one by one).
pub fn with_length(h: Hir, min: u64, max: Option<u64>) -> Option<Hir> {
    let (lo, hi) = char_len(&h);
    if lo >= min && max.is_none_or(|m| hi.is_some_and(|h| h <= m)) {
        return Some(h);
    }
    let parts: Vec<Hir> = match h.kind() {
        HirKind::Concat(v) => v.clone(),
        _ => vec![h.clone()],
    };
    let flat = flatten(parts);
    let mut variable = None;
    let mut fixed = 0u64;
    for (i, p) in flat.iter().enumerate() {
        match char_len(p) {
            (a, Some(b)) if a == b => fixed += a,
            _ => {
                let HirKind::Repetition(r) = p.kind() else {
                    return by_exact_lengths(&h, min, max);
                };
                if char_len(&r.sub) != (1, Some(1)) || variable.is_some() {
                    return by_exact_lengths(&h, min, max);
                }
                variable = Some(i);
            }
        }
    }
    let Some(i) = variable else {
        return by_exact_lengths(&h, min, max);
    };
    let HirKind::Repetition(r) = flat[i].kind() else {
        unreachable!("checked above")
    };
    let new_min = (r.min as u64).max(min.saturating_sub(fixed));
    let new_max = match (r.max, max) {
        (Some(a), Some(b)) => Some((a as u64).min(b.checked_sub(fixed)?)),
        (Some(a), None) => Some(a as u64),
        (None, Some(b)) => Some(b.checked_sub(fixed)?),
        (None, None) => None,
    };
    if new_max.is_some_and(|m| m < new_min) {
        return Some(Hir::fail());
    }
    let mut out = flat.clone();
    out[i] = repeat(
        (*r.sub).clone(),
        u32::try_from(new_min).ok()?,
        match new_max {
            Some(m) => Some(u32::try_from(m).ok()?),
            None => None,
        },
    );
    Some(Hir::concat(out))
}

/// Most lengths [`by_exact_lengths`] writes out one by one.
pub const MAX_EXACT_LENGTHS: u64 = 32;

/// `h` restricted to `min..=max` characters where the other forms of [`with_length`]
/// do not apply: with only a minimum of 1 (and the maximum implied), the non-empty
/// strings of `h` ([`non_empty`]); with a range of at most [`MAX_EXACT_LENGTHS`]
/// lengths, the union over each length `n` of [`exact_length`].
fn by_exact_lengths(h: &Hir, min: u64, max: Option<u64>) -> Option<Hir> {
    let (_, hi) = char_len(h);
    let max_implied = max.is_none_or(|m| hi.is_some_and(|h| h <= m));
    if min <= 1 && max_implied {
        return Some(non_empty(h));
    }
    let max = max?;
    if max < min || max - min >= MAX_EXACT_LENGTHS {
        return None;
    }
    let alts = (min..=max)
        .map(|n| exact_length(h, n))
        .collect::<Option<Vec<_>>>()?;
    Some(Hir::alternation(alts))
}

/// The non-empty strings of `h`.
pub fn non_empty(h: &Hir) -> Hir {
    let nullable = |h: &Hir| h.properties().minimum_len() == Some(0);
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => Hir::fail(),
        HirKind::Literal(_) | HirKind::Class(_) => h.clone(),
        HirKind::Capture(c) => non_empty(&c.sub),
        HirKind::Alternation(v) => Hir::alternation(v.iter().map(non_empty).collect()),
        // A non-empty repetition starts with a non-empty copy of `sub`.
        HirKind::Repetition(r) => match r.max {
            Some(0) => Hir::fail(),
            max => Hir::concat(vec![
                non_empty(&r.sub),
                repeat(
                    (*r.sub).clone(),
                    r.min.saturating_sub(1),
                    max.map(|m| m - 1),
                ),
            ]),
        },
        // Non-empty: the first part is, or it is empty and the rest is non-empty.
        HirKind::Concat(v) => match v.split_first() {
            None => Hir::fail(),
            Some((first, rest)) => {
                let rest_h = Hir::concat(rest.to_vec());
                let mut alts = vec![Hir::concat(vec![non_empty(first), rest_h.clone()])];
                if nullable(first) {
                    alts.push(non_empty(&rest_h));
                }
                Hir::alternation(alts)
            }
        },
    }
}

/// Most alternatives [`exact_length`] writes (splits of a length over a concatenation).
pub const MAX_EXACT_SPLITS: usize = 4096;

/// The strings of `h` with exactly `n` characters, written by structure: an
/// alternation per alternative, a repetition of a fixed-length `sub` with the count `n`
/// needs, a concatenation as the union over every split of `n` between its first part
/// and the rest. `None` past [`MAX_EXACT_SPLITS`] splits, or for a repetition whose
/// `sub` has several lengths.
pub fn exact_length(h: &Hir, n: u64) -> Option<Hir> {
    let mut budget = MAX_EXACT_SPLITS;
    exact_length_within(h, n, &mut budget)
}

fn exact_length_within(h: &Hir, n: u64, budget: &mut usize) -> Option<Hir> {
    let (lo, hi) = char_len(h);
    if n < lo || hi.is_some_and(|h| n > h) {
        return Some(Hir::fail());
    }
    if hi == Some(lo) {
        return Some(h.clone());
    }
    match h.kind() {
        HirKind::Capture(c) => exact_length_within(&c.sub, n, budget),
        HirKind::Alternation(v) => v
            .iter()
            .map(|a| exact_length_within(a, n, budget))
            .collect::<Option<Vec<_>>>()
            .map(Hir::alternation),
        HirKind::Repetition(r) => {
            let (k, k_hi) = char_len(&r.sub);
            if k_hi != Some(k) {
                return None;
            }
            if k == 0 || !n.is_multiple_of(k) {
                return Some(Hir::fail());
            }
            let count = u32::try_from(n / k).ok()?;
            let fits = count >= r.min && r.max.is_none_or(|m| count <= m);
            Some(if fits {
                repeat((*r.sub).clone(), count, Some(count))
            } else {
                Hir::fail()
            })
        }
        HirKind::Concat(v) => {
            let Some((first, rest)) = v.split_first() else {
                return Some(Hir::fail());
            };
            let rest = Hir::concat(rest.to_vec());
            let (f_lo, f_hi) = char_len(first);
            let (r_lo, r_hi) = char_len(&rest);
            let from = f_lo.max(r_hi.map_or(0, |h| n.saturating_sub(h)));
            let to = f_hi.unwrap_or(n).min(n.saturating_sub(r_lo));
            let mut alts = Vec::new();
            for m in from..=to {
                *budget = budget.checked_sub(1)?;
                alts.push(Hir::concat(vec![
                    exact_length_within(first, m, budget)?,
                    exact_length_within(&rest, n - m, budget)?,
                ]));
            }
            Some(Hir::alternation(alts))
        }
        _ => None,
    }
}

/// Concatenations inside a concatenation (through capture groups), flattened.
fn flatten(parts: Vec<Hir>) -> Vec<Hir> {
    let mut out = Vec::new();
    for p in parts {
        match p.kind() {
            HirKind::Concat(v) => out.extend(flatten(v.clone())),
            HirKind::Capture(c) if matches!(c.sub.kind(), HirKind::Concat(_)) => {
                out.extend(flatten(vec![(*c.sub).clone()]))
            }
            _ => out.push(p),
        }
    }
    out
}

/// Whether a pattern (searched unanchored) matches every string: [`unanchored`] finds
/// it so (a part that matches the empty string with an end left open, `^[a-z]*`,
/// `(a|)$`, or an alternation with one).
pub fn is_universal(pattern: &Hir) -> bool {
    unanchored(pattern) == any_string()
}

/// The class `C` if a pattern's language (searched unanchored) is exactly `C*`
/// (`^[a-zA-Z0-9_]*$`).
pub fn class_star(pattern: &Hir) -> Option<ClassUnicode> {
    let mut u = unanchored(pattern);
    loop {
        u = match u.kind() {
            HirKind::Capture(c) => (*c.sub).clone(),
            HirKind::Concat(v) if v.len() == 1 => v[0].clone(),
            _ => break,
        };
    }
    match u.kind() {
        HirKind::Repetition(r) if r.min == 0 && r.max.is_none() => match r.sub.kind() {
            HirKind::Class(Class::Unicode(c)) => Some(c.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// The strings with a character outside the class `c`: the complement of `c*`.
pub fn outside_class_star(c: &ClassUnicode) -> Hir {
    let mut other = ClassUnicode::new([ClassUnicodeRange::new('\0', '\u{10FFFF}')]);
    other.difference(c);
    if other.ranges().is_empty() {
        return Hir::fail();
    }
    Hir::concat(vec![
        any_string(),
        Hir::class(Class::Unicode(other)),
        any_string(),
    ])
}

/// The strings of a language, if it is finite with at most `limit` of them (sorted).
pub fn finite_strings(h: &Hir, limit: usize) -> Option<Vec<String>> {
    let product = |a: &[String], b: &[String]| -> Option<Vec<String>> {
        if a.len().saturating_mul(b.len()) > limit {
            return None;
        }
        Some(
            a.iter()
                .flat_map(|x| b.iter().map(move |y| format!("{x}{y}")))
                .collect(),
        )
    };
    let mut out = match h.kind() {
        HirKind::Empty => vec![String::new()],
        HirKind::Literal(l) => vec![String::from_utf8(l.0.to_vec()).ok()?],
        HirKind::Class(Class::Unicode(c)) => {
            let mut out = Vec::new();
            for r in c.ranges() {
                for ch in r.start()..=r.end() {
                    out.push(ch.to_string());
                    if out.len() > limit {
                        return None;
                    }
                }
            }
            out
        }
        HirKind::Class(Class::Bytes(_)) | HirKind::Look(_) => return None,
        HirKind::Capture(c) => finite_strings(&c.sub, limit)?,
        HirKind::Concat(v) => {
            let mut acc = vec![String::new()];
            for p in v {
                acc = product(&acc, &finite_strings(p, limit)?)?;
            }
            acc
        }
        HirKind::Alternation(v) => {
            let mut out = Vec::new();
            for p in v {
                out.extend(finite_strings(p, limit)?);
                if out.len() > limit {
                    return None;
                }
            }
            out
        }
        HirKind::Repetition(r) => {
            let sub = finite_strings(&r.sub, limit)?;
            let max = r.max?;
            let (mut out, mut cur) = (Vec::new(), vec![String::new()]);
            for i in 0..=max {
                if i >= r.min {
                    out.extend(cur.iter().cloned());
                }
                if i < max {
                    cur = product(&cur, &sub)?;
                }
                if out.len() > limit {
                    return None;
                }
            }
            out
        }
    };
    out.sort();
    out.dedup();
    Some(out)
}

/// Every string except the given ones (a finite set of JSON object keys, say).
pub fn none_of(words: &[String]) -> Hir {
    none_of_within(words, &every_char())
}

/// The language of [`string_terminal`]`(`[`none_of_within`]`(words, alphabet))` as a
/// [`Difference`]: the string terminal of `alphabet*` minus the words' JSON texts. `None`
/// where a word has a control character: those have several spellings (`\n`,
/// `\u000a`, `\u000A`), so a word is not one text.
pub fn none_of_difference(words: &[String], alphabet: &ClassUnicode) -> Option<Difference> {
    if words.iter().flat_map(|w| w.chars()).any(|c| c < '\u{20}') {
        return None;
    }
    let all = repeat(Hir::class(Class::Unicode(alphabet.clone())), 0, None);
    Some(Difference {
        base: string_terminal(&all).ok()?,
        words: words.iter().map(|w| literal_text(w).into_bytes()).collect(),
    })
}

/// Every string of characters in the class `alphabet` except the given words.
pub fn none_of_within(words: &[String], alphabet: &ClassUnicode) -> Hir {
    let inside = |c: &char| {
        alphabet
            .ranges()
            .iter()
            .any(|r| r.start() <= *c && *c <= r.end())
    };
    let mut keys: Vec<Vec<char>> = words
        .iter()
        .map(|w| w.chars().collect::<Vec<char>>())
        .filter(|w| w.iter().all(inside))
        .collect();
    keys.sort();
    keys.dedup();
    // A string that is not a key either leaves the keys' trie at some character and
    // goes on freely, or stays on it and ends where no key does. The free rest is one
    // `alphabet*` after the whole trie, not one per trie node, and so is leaving by a
    // character no key has anywhere (all of non-ASCII, escapes, quotes for most
    // names): a copy per trie node made determinization build thousands of equivalent
    // states (UTF-8 and escape sequences) for a few dozen names.
    let mut key_chars =
        ClassUnicode::new(keys.iter().flatten().map(|&c| ClassUnicodeRange::new(c, c)));
    key_chars.intersect(alphabet);
    let mut elsewhere = alphabet.clone();
    elsewhere.difference(&key_chars);
    let mut leave: Vec<Hir> = leave_trie(&keys, 0, &key_chars).into_iter().collect();
    if elsewhere.ranges().iter().next().is_some() {
        leave.push(Hir::concat(vec![
            on_trie(&keys, 0),
            Hir::class(Class::Unicode(elsewhere)),
        ]));
    }
    let mut alts = Vec::new();
    if !leave.is_empty() {
        alts.push(Hir::concat(vec![
            Hir::alternation(leave),
            repeat(Hir::class(Class::Unicode(alphabet.clone())), 0, None),
        ]));
    }
    alts.extend(end_on_trie(&keys, 0));
    Hir::alternation(alts)
}

/// The keys with more than `depth` characters, grouped by their character at `depth`
/// (`keys` sorted).
fn children(keys: &[Vec<char>], depth: usize) -> Vec<(char, Vec<Vec<char>>)> {
    let mut out: Vec<(char, Vec<Vec<char>>)> = Vec::new();
    for k in keys.iter().filter(|k| k.len() > depth) {
        match out.last_mut() {
            Some((c, sub)) if *c == k[depth] => sub.push(k.clone()),
            _ => out.push((k[depth], vec![k.clone()])),
        }
    }
    out
}

/// The strings that follow the trie of `keys` from `depth` and then leave it by a
/// character of `alphabet` no key has next; `None` for none. (Never an empty
/// alternation: its text form `[a&&b]` does not survive a `%json` block's round trip
/// through Lark.)
fn leave_trie(keys: &[Vec<char>], depth: usize, alphabet: &ClassUnicode) -> Option<Hir> {
    let children = children(keys, depth);
    let mut other = alphabet.clone();
    other.difference(&ClassUnicode::new(
        children.iter().map(|&(c, _)| ClassUnicodeRange::new(c, c)),
    ));
    let mut alts = Vec::new();
    if other.ranges().iter().next().is_some() {
        alts.push(Hir::class(Class::Unicode(other)));
    }
    for (c, sub) in &children {
        if let Some(rest) = leave_trie(sub, depth + 1, alphabet) {
            alts.push(Hir::concat(vec![
                Hir::literal(c.to_string().into_bytes()),
                rest,
            ]));
        }
    }
    (!alts.is_empty()).then(|| Hir::alternation(alts))
}

/// The strings that follow the trie of `keys` from `depth` (ending anywhere on it).
fn on_trie(keys: &[Vec<char>], depth: usize) -> Hir {
    let mut alts = vec![Hir::empty()];
    for (c, sub) in children(keys, depth) {
        alts.push(Hir::concat(vec![
            Hir::literal(c.to_string().into_bytes()),
            on_trie(&sub, depth + 1),
        ]));
    }
    Hir::alternation(alts)
}

/// The strings that follow the trie of `keys` from `depth` and end where no key does;
/// `None` for none (as [`leave_trie`]).
fn end_on_trie(keys: &[Vec<char>], depth: usize) -> Option<Hir> {
    let mut alts = Vec::new();
    if !keys.iter().any(|k| k.len() == depth) {
        alts.push(Hir::empty());
    }
    for (c, sub) in children(keys, depth) {
        if let Some(rest) = end_on_trie(&sub, depth + 1) {
            alts.push(Hir::concat(vec![
                Hir::literal(c.to_string().into_bytes()),
                rest,
            ]));
        }
    }
    (!alts.is_empty()).then(|| Hir::alternation(alts))
}

/// Limit on the state pairs [`texts_disjoint`] visits (beyond it: not decided).
pub const MAX_DISJOINT_PAIRS: usize = 100_000;

/// Whether two terminal regexes match no common text: a search of their product DFA
/// for a pair of accepting states. `None` when either regex is past a lexer limit or
/// the search passes [`MAX_DISJOINT_PAIRS`] (undecided, which callers treat as "may
/// overlap").
pub fn texts_disjoint(a: &str, b: &str) -> Option<bool> {
    let da = crate::lexer::compile_terminal(a).ok()?;
    let db = crate::lexer::compile_terminal(b).ok()?;
    let start = (da.start, db.start);
    let mut seen = std::collections::HashSet::from([start]);
    let mut todo = vec![start];
    while let Some((x, y)) = todo.pop() {
        if da.is_accepting(x) && db.is_accepting(y) {
            return Some(false);
        }
        for byte in 0..=255u8 {
            let next = (da.next(x, byte), db.next(y, byte));
            if da.is_live(next.0) && db.is_live(next.1) && seen.insert(next) {
                if seen.len() > MAX_DISJOINT_PAIRS {
                    return None;
                }
                todo.push(next);
            }
        }
    }
    Some(true)
}

/// The canonical JSON text of a string value (quotes included), as serde_json writes it.
pub fn literal_text(value: &str) -> String {
    serde_json::to_string(value).expect("a string serializes")
}

/// The terminal regex for the JSON string literals whose values are in `chars`.
pub fn string_terminal(chars: &Hir) -> Result<String, String> {
    let quote = || Hir::literal(b"\"".to_vec());
    Ok(Hir::concat(vec![quote(), encode(chars)?, quote()]).to_string())
}

/// Rewrites a character-level regex into one over canonical JSON string text (no
/// quotes).
pub fn encode(h: &Hir) -> Result<Hir, String> {
    Ok(match h.kind() {
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(l) => {
            let s = std::str::from_utf8(&l.0)
                .map_err(|_| "a pattern that matches non-UTF-8 bytes".to_string())?;
            // Text with nothing to escape is its own encoding (what the concatenation
            // of its characters' literals is): every declared property name, most
            // enum values.
            if !s.chars().any(is_special) {
                return Ok(h.clone());
            }
            Hir::concat(s.chars().map(encode_char).collect())
        }
        HirKind::Class(Class::Unicode(c)) => encode_class(c),
        HirKind::Class(Class::Bytes(b)) => {
            let ranges = b.ranges().iter().map(|r| {
                if r.end() < 0x80 {
                    Ok(ClassUnicodeRange::new(r.start() as char, r.end() as char))
                } else {
                    Err("a byte class outside ASCII".to_string())
                }
            });
            encode_class(&ClassUnicode::new(ranges.collect::<Result<Vec<_>, _>>()?))
        }
        HirKind::Look(_) => {
            return Err(
                "an anchor `^`/`$` that is not at the start/end of a top-level alternative".into(),
            )
        }
        HirKind::Repetition(r) => Hir::repetition(Repetition {
            sub: Box::new(encode(&r.sub)?),
            ..r.clone()
        }),
        HirKind::Capture(c) => encode(&c.sub)?,
        HirKind::Concat(v) => Hir::concat(v.iter().map(encode).collect::<Result<_, _>>()?),
        HirKind::Alternation(v) => {
            Hir::alternation(v.iter().map(encode).collect::<Result<_, _>>()?)
        }
    })
}

/// The characters that must be escaped in JSON text.
fn special() -> ClassUnicode {
    ClassUnicode::new([
        ClassUnicodeRange::new('\0', '\u{1F}'),
        ClassUnicodeRange::new('"', '"'),
        ClassUnicodeRange::new('\\', '\\'),
    ])
}

/// Whether `c` is in [`special`].
fn is_special(c: char) -> bool {
    c < '\u{20}' || c == '"' || c == '\\'
}

fn encode_class(c: &ClassUnicode) -> Hir {
    let mut plain = c.clone();
    plain.difference(&special());
    let mut escaped = c.clone();
    escaped.intersect(&special());
    let mut alts = Vec::new();
    if plain.ranges().iter().next().is_some() {
        alts.push(Hir::class(Class::Unicode(plain)));
    }
    for r in escaped.ranges() {
        for ch in r.start()..=r.end() {
            alts.push(special_spellings(ch));
        }
    }
    Hir::alternation(alts)
}

/// [`encode_char`] of a [`special`] character, written once per process: a class
/// that holds the control characters (any character but a key's next one, at every
/// node of a property-name trie) spells out all 32, each a few `format!`s, and that
/// was most of a names-heavy schema's front end.
fn special_spellings(c: char) -> Hir {
    static SPELLINGS: std::sync::OnceLock<Vec<Hir>> = std::sync::OnceLock::new();
    let spellings = SPELLINGS.get_or_init(|| {
        (0..=0x7f_u8)
            .map(char::from)
            .map(|c| {
                if is_special(c) {
                    encode_char(c)
                } else {
                    Hir::empty()
                }
            })
            .collect()
    });
    spellings[c as usize].clone()
}

/// The canonical spellings of one character in JSON string text.
fn encode_char(c: char) -> Hir {
    let lit = |s: &str| Hir::literal(s.as_bytes().to_vec());
    match c {
        '"' => lit("\\\""),
        '\\' => lit("\\\\"),
        '\0'..='\u{1F}' => {
            let mut spellings = Vec::new();
            let short = match c {
                '\u{8}' => Some("\\b"),
                '\u{C}' => Some("\\f"),
                '\n' => Some("\\n"),
                '\r' => Some("\\r"),
                '\t' => Some("\\t"),
                _ => None,
            };
            spellings.extend(short.map(lit));
            let lower = format!("\\u00{:02x}", c as u32);
            let upper = format!("\\u00{:02X}", c as u32);
            spellings.push(lit(&lower));
            if upper != lower {
                spellings.push(lit(&upper));
            }
            Hir::alternation(spellings)
        }
        _ => Hir::literal(c.to_string().into_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(re: &str, s: &str) -> bool {
        regex_automata::meta::Regex::new(&format!("^(?:{re})$"))
            .unwrap()
            .is_match(s)
    }

    #[test]
    fn encoding_follows_canonical_json_text() {
        let t = string_terminal(&any_string()).unwrap();
        for s in ["", "a\"b", "\\", "\n\u{1}", "é😀"] {
            assert!(full(&t, &literal_text(s)), "{s:?}");
        }
        assert!(full(&t, "\"\\u000A\""));
        assert!(!full(&t, "\"\\u0041\""));
        assert!(!full(&t, "\"a\"b\""));
        assert!(!full(&t, "\"\n\""));
    }

    /// The shortcuts in [`encode`] give the regex the character-by-character
    /// encoding gives: a literal with nothing to escape is returned as it is, and a
    /// class's special characters take their kept spellings. Random strings and
    /// classes over plain, multi-byte and special characters.
    #[test]
    fn shortcut_encodings_are_the_character_by_character_ones() {
        let chars = [
            'a', 'Z', ' ', 'é', '😀', '"', '\\', '\n', '\u{1}', '\u{1f}', '/',
        ];
        let mut rng = crate::test_rng::XorShift(0x0dd0_f00d_1234_5678);
        for _ in 0..2000 {
            let len = 1 + rng.below(6) as usize;
            let text: String = (0..len)
                .map(|_| chars[rng.below(chars.len() as u64) as usize])
                .collect();
            let by_chars = Hir::concat(text.chars().map(encode_char).collect());
            let literal = Hir::literal(text.clone().into_bytes());
            assert_eq!(encode(&literal).unwrap(), by_chars, "{text:?}");
            let class = ClassUnicode::new(text.chars().map(|c| ClassUnicodeRange::new(c, c)));
            let mut plain = class.clone();
            plain.difference(&special());
            let mut escaped = class.clone();
            escaped.intersect(&special());
            let mut alts = Vec::new();
            if plain.ranges().iter().next().is_some() {
                alts.push(Hir::class(Class::Unicode(plain)));
            }
            alts.extend(
                escaped
                    .ranges()
                    .iter()
                    .flat_map(|r| r.start()..=r.end())
                    .map(encode_char),
            );
            assert_eq!(encode_class(&class), Hir::alternation(alts), "{text:?}");
        }
        assert_eq!(
            string_terminal(&any_string()).unwrap(),
            string_terminal(&repeat(any_char(), 0, None)).unwrap()
        );
    }

    #[test]
    fn keys_other_than_a_set() {
        let keys = ["a".to_string(), "ab".to_string()];
        let t = string_terminal(&none_of(&keys)).unwrap();
        for (s, ok) in [
            ("", true),
            ("a", false),
            ("ab", false),
            ("abc", true),
            ("b", true),
        ] {
            assert_eq!(full(&t, &literal_text(s)), ok, "{s:?}");
        }
    }

    /// Every string of up to four characters over `abcé` against random key sets,
    /// within the whole alphabet and within `[a-c]`.
    #[test]
    fn keys_other_than_a_set_by_brute_force() {
        let chars = ['a', 'b', 'c', 'é'];
        let mut all: Vec<String> = vec![String::new()];
        for len in 1..=4 {
            let mut more: Vec<String> = all
                .iter()
                .filter(|s| s.chars().count() == len - 1)
                .flat_map(|s| chars.iter().map(move |c| format!("{s}{c}")))
                .collect();
            all.append(&mut more);
        }
        let abc = class_star(&parse_chars("^[a-c]*$").unwrap()).unwrap();
        let mut rng = crate::test_rng::XorShift(0x6b65_7973);
        for case in 0..40 {
            // Half the key sets leave characters out (`c`, `é`): strings then leave
            // the trie by a character no key has.
            let keys: Vec<String> = all
                .iter()
                .filter(|s| case % 2 == 0 || s.chars().all(|c| "ab".contains(c)))
                .filter(|_| rng.below(23) == 0)
                .cloned()
                .collect();
            let regex = |hir: &Hir| {
                let t = string_terminal(hir).unwrap();
                regex_automata::meta::Regex::new(&format!("^(?:{t})$")).unwrap()
            };
            let anywhere = regex(&none_of(&keys));
            let within = regex(&none_of_within(&keys, &abc));
            for s in &all {
                let key = keys.contains(s);
                let in_abc = s.chars().all(|c| "abc".contains(c));
                let text = literal_text(s);
                assert_eq!(anywhere.is_match(&text), !key, "{s:?} {keys:?}");
                assert_eq!(within.is_match(&text), !key && in_abc, "{s:?} {keys:?}");
            }
        }
    }

    #[test]
    fn names_within_a_class_star_and_outside_it() {
        let c = class_star(&parse_chars("^[a-c]*$").unwrap()).unwrap();
        let keys = ["ab".to_string(), "x".to_string()];
        let inside = string_terminal(&none_of_within(&keys, &c)).unwrap();
        let outside = string_terminal(&outside_class_star(&c)).unwrap();
        for (s, i, o) in [
            ("", true, false),
            ("ab", false, false),
            ("abc", true, false),
            ("x", false, true),
            ("ax", false, true),
        ] {
            assert_eq!(full(&inside, &literal_text(s)), i, "{s:?}");
            assert_eq!(full(&outside, &literal_text(s)), o, "{s:?}");
        }
        assert!(class_star(&parse_chars("^[a-c]+$").unwrap()).is_none());
        // Unanchored, `[a-c]*` matches (the empty string) in every string.
        let every = class_star(&parse_chars("[a-c]*").unwrap()).unwrap();
        assert_eq!(every.ranges(), [ClassUnicodeRange::new('\0', '\u{10FFFF}')]);
    }

    #[test]
    fn universal_and_finite_patterns() {
        let p = |re: &str| parse_chars(re).unwrap();
        assert!(is_universal(&p(".*")) && is_universal(&p("a?")));
        assert!(!is_universal(&p("^.*$")) && !is_universal(&p("a")));
        assert!(is_universal(&p("^[a-z]*")) && !is_universal(&p("a$")));
        assert!(is_universal(&p("(a|)$")) && !is_universal(&p("^(a|)$")));
        let words = finite_strings(&unanchored(&p("^[a-c]x?$")), 16).unwrap();
        assert_eq!(words, ["a", "ax", "b", "bx", "c", "cx"]);
        assert!(finite_strings(&unanchored(&p("a")), 16).is_none());
        assert!(finite_strings(&p("[a-z]{4}"), 1000).is_none());
    }

    #[test]
    fn disjoint_texts_by_product_search() {
        let t = |re: &str| string_terminal(&parse_chars(re).unwrap()).unwrap();
        assert_eq!(
            texts_disjoint(&t("[0-9]+[xX]"), &t("([0-9]+[smh] ?)+")),
            Some(true)
        );
        assert_eq!(texts_disjoint(&t("[0-9]+[xX]"), &t("[0-9]*x")), Some(false));
        assert_eq!(texts_disjoint(&t(""), &t("a*")), Some(false));
        assert_eq!(texts_disjoint(&t(""), &t("a+")), Some(true));
    }

    #[test]
    fn lengths_fold_into_one_repetition() {
        let p = parse_chars("[a-z][a-z0-9]*").unwrap();
        let h = with_length(p, 2, Some(3)).unwrap();
        let t = string_terminal(&h).unwrap();
        assert!(full(&t, "\"ab\"") && full(&t, "\"a1b\""));
        assert!(!full(&t, "\"a\"") && !full(&t, "\"abcd\""));
        let two_vars = parse_chars("a*b*").unwrap();
        assert!(with_length(two_vars, 0, Some(40)).is_none());
    }

    #[test]
    fn unanchored_patterns_match_where_the_regex_finds_a_match() {
        // The string language is the set of strings the pattern matches somewhere in,
        // as a search by regex-automata finds; nullable parts with an open end make it
        // every string, and then it is `.*` itself.
        let cases = [
            ("(ab||c)", true),
            ("(|a)b", false),
            ("^(a|)", true),
            ("(a|)$", true),
            ("^(a|)$", false),
            ("^a*$", false),
            ("a*", true),
            ("b|c*", true),
            ("(ab|c)d", false),
            ("^ab|c$", false),
            ("x?", true),
            ("^$", false),
        ];
        for (re, every) in cases {
            let search = regex_automata::meta::Regex::new(re).unwrap();
            let h = unanchored(&parse_chars(re).unwrap());
            assert_eq!(h == any_string(), every, "{re}");
            let t = string_terminal(&h).unwrap();
            let whole = regex_automata::meta::Regex::new(&format!("^(?:{t})$")).unwrap();
            for s in all_strings(&['a', 'b', 'c', 'd'], 4) {
                assert_eq!(
                    whole.is_match(&literal_text(&s)),
                    search.is_match(&s),
                    "{re} {s:?}"
                );
            }
        }
    }

    /// Every string over `alphabet` up to `len` characters.
    fn all_strings(alphabet: &[char], len: usize) -> Vec<String> {
        let mut out = vec![String::new()];
        let mut layer = vec![String::new()];
        for _ in 0..len {
            layer = layer
                .iter()
                .flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}")))
                .collect();
            out.extend(layer.iter().cloned());
        }
        out
    }

    #[test]
    fn lengths_by_exact_length_and_non_empty() {
        let cases = [
            ("[a-c]{2}", 2, Some(2)),
            ("[a-c]{2}", 1, Some(3)),
            ("a*b*", 0, Some(3)),
            ("a*b*", 2, Some(3)),
            ("(ab|cc)*a?", 3, Some(4)),
            ("^(a+b)?(c+)?$", 1, None),
            ("^(ab)?c*(ba)?$", 1, Some(9)),
            ("^(ab)?c*(ba)?$", 3, Some(3)),
            ("b", 0, Some(4)),
        ];
        for (re, min, max) in cases {
            let h = unanchored(&parse_chars(re).unwrap());
            let got =
                with_length(h.clone(), min, max).unwrap_or_else(|| panic!("{re} {min} {max:?}"));
            let compile = |h: &Hir| {
                let t = string_terminal(h).unwrap();
                regex_automata::meta::Regex::new(&format!("^(?:{t})$")).unwrap()
            };
            let (t, whole) = (compile(&got), compile(&h));
            for s in all_strings(&['a', 'b', 'c'], 6) {
                let n = s.chars().count() as u64;
                let text = literal_text(&s);
                let want = whole.is_match(&text) && n >= min && max.is_none_or(|m| n <= m);
                assert_eq!(t.is_match(&text), want, "{re} {min} {max:?} {s:?}");
            }
        }
        // Wide ranges of lengths over two free parts stay reported.
        let h = parse_chars("[a-c]*x[a-c]*").unwrap();
        assert!(with_length(h, 2, Some(200)).is_none());
    }
}
