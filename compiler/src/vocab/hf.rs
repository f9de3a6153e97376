//! Hugging Face `tokenizer.json` files.
//!
//! Two readers of the same file, on purpose:
//!
//! - the `tokenizers` crate encodes text, so the canonical tokenization is exactly the
//!   library's (pre-tokenizer regexes, merges, normalizers included);
//! - our own reading of the JSON (serde_json) gives each id's **bytes**, which the library
//!   does not expose: its decoders work on whole sequences and return lossy `String`s, and
//!   the GPT-2 byte↔char table is private.
//!
//! Token strings are turned into bytes according to the tokenizer's style, detected from
//! its configuration (see [`detect_style`]):
//!
//! - **byte-level BPE** (GPT-2, Qwen2, Llama 3): every char of a token stands for one byte
//!   through the GPT-2 alphabet ([`byte_to_char`]);
//! - **SentencePiece** (Llama 2, Phi-3, Mistral): the meta symbol `▁` stands for a space,
//!   `<0xNN>` byte-fallback tokens for the byte `0xNN`, everything else is its UTF-8.
//!
//! Kinds: `added_tokens` with `special: true` are `Special`; added tokens with
//! `special: false` are `Normal` with their `content` bytes (the library matches their
//! content in the text and its decoder returns the content verbatim, so those bytes are
//! what the model writes). Also `Special`: the model's `unk_token` (it stands for unknown
//! text, not for its spelling). `Unused`: ids absent from both lists, entries spelled
//! `[PAD<id>]` at their own id (the padding rows llama.cpp's converter adds; Phi-3 has 53
//! of them, typed UNUSED in the GGUF it was converted from), and any token whose bytes
//! would be empty (a Normal token must advance the text).
//!
//! EOS is the first of [`EOS_CANDIDATES`] (`<|endoftext|>`, then `</s>`, `<|end_of_text|>`,
//! `<eos>`) found among the special added tokens; a file with none of them is an error.
//!
//! After loading, a probe text is encoded and the token bytes are checked to spell it
//! (optionally after a dummy-prefix space): a tokenizer we misread is an error at load
//! time, not wrong masks later.

use std::path::{Path, PathBuf};

use serde_json::Value;
use stackmask_formats::{TokenKind, Vocabulary};

use super::VocabError;

/// Contents of the end-of-sequence token, in lookup order: the first one present among
/// the *special* added tokens is EOS. `<|endoftext|>` comes first because tokenizers that
/// have both (Phi-3: `</s>` = 2, `<|endoftext|>` = 32000) end generation with it;
/// `<|end_of_text|>` is Llama 3's and `<eos>` Gemma's.
pub const EOS_CANDIDATES: [&str; 4] = ["<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>"];

/// Encoded at load time to check our token bytes against the library: ASCII punctuation,
/// whitespace, digits, non-ASCII letters and an emoji (byte fallback in SentencePiece).
const PROBE: &str = "Hello, world!\n\t{\"a\": [12, 3.5]}  Grüße 日本 🦙";

/// How the token strings of a `tokenizer.json` spell bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// GPT-2 byte-level alphabet: each char is one byte.
    ByteLevel,
    /// SentencePiece: `meta` (normally `▁`) is a space, `<0xNN>` is a byte.
    SentencePiece {
        /// The meta symbol standing for a space.
        meta: char,
    },
}

/// The result of loading a `tokenizer.json`.
pub(super) struct Loaded {
    pub vocab: Vocabulary,
    pub tokenizer: tokenizers::Tokenizer,
    pub dummy_prefix: bool,
}

/// GPT-2's byte → char table: the printable bytes `!..=~`, `¡..=¬`, `®..=ÿ` map to
/// themselves, the other 68 bytes in increasing order to U+0100, U+0101, … (so space is
/// `Ġ` U+0120 and newline `Ċ` U+010A). Computed the way GPT-2's `bytes_to_unicode` does,
/// because `tokenizers` keeps its copy private.
const BYTE_TO_CHAR: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut next = 256u16;
    let mut b = 0usize;
    while b < 256 {
        let printable =
            (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
        if printable {
            table[b] = b as u16;
        } else {
            table[b] = next;
            next += 1;
        }
        b += 1;
    }
    table
};

/// Inverse of [`BYTE_TO_CHAR`], indexed by code point (all of them are below 324).
const CHAR_TO_BYTE: [i16; 324] = {
    let mut inv = [-1i16; 324];
    let mut b = 0usize;
    while b < 256 {
        inv[BYTE_TO_CHAR[b] as usize] = b as i16;
        b += 1;
    }
    inv
};

/// The char standing for byte `b` in GPT-2's byte-level alphabet.
pub fn byte_to_char(b: u8) -> char {
    // All table entries are below U+0144: valid scalar values.
    char::from_u32(u32::from(BYTE_TO_CHAR[b as usize])).expect("table holds valid chars")
}

/// The byte a char of GPT-2's byte-level alphabet stands for, `None` outside the alphabet.
pub fn char_to_byte(c: char) -> Option<u8> {
    CHAR_TO_BYTE
        .get(c as usize)
        .and_then(|&b| u8::try_from(b).ok())
}

/// The bytes a model-vocabulary token string stands for, `None` if the string is not
/// valid in that style (a char outside the byte-level alphabet).
pub fn token_bytes(style: Style, token: &str) -> Option<Vec<u8>> {
    match style {
        Style::ByteLevel => token.chars().map(char_to_byte).collect(),
        Style::SentencePiece { meta } => {
            if let Some(b) = byte_fallback(token) {
                return Some(vec![b]);
            }
            Some(token.replace(meta, " ").into_bytes())
        }
    }
}

/// `<0xNN>` → `0xNN`, the same test as the library's `ByteFallback` decoder (six chars,
/// two hex digits of either case).
fn byte_fallback(token: &str) -> Option<u8> {
    if token.len() == 6 && token.starts_with("<0x") && token.ends_with('>') {
        u8::from_str_radix(&token[3..5], 16).ok()
    } else {
        None
    }
}

/// Whether `v` or anything nested in it is an object with `"type": ty` (pre-tokenizers,
/// decoders and normalizers nest in `Sequence`s).
fn find_type<'a>(v: &'a Value, ty: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) => {
            if m.get("type").and_then(Value::as_str) == Some(ty) {
                return Some(v);
            }
            m.values().find_map(|x| find_type(x, ty))
        }
        Value::Array(a) => a.iter().find_map(|x| find_type(x, ty)),
        _ => None,
    }
}

/// Detects the style from the configuration: a `ByteLevel` pre-tokenizer or decoder means
/// byte-level; otherwise a `Metaspace` pre-tokenizer/decoder, a `ByteFallback` decoder,
/// `byte_fallback: true` on the model, or a `▁` replacement in the normalizer or decoder
/// means SentencePiece. Anything else (WordPiece, plain word-level) is an error, because
/// we could not say which bytes its tokens stand for.
pub fn detect_style(root: &Value) -> Result<Style, String> {
    let null = Value::Null;
    let pre = root.get("pre_tokenizer").unwrap_or(&null);
    let dec = root.get("decoder").unwrap_or(&null);
    let norm = root.get("normalizer").unwrap_or(&null);
    let model = root.get("model").unwrap_or(&null);
    if find_type(pre, "ByteLevel").is_some() || find_type(dec, "ByteLevel").is_some() {
        return Ok(Style::ByteLevel);
    }
    if let Some(ms) = find_type(pre, "Metaspace").or_else(|| find_type(dec, "Metaspace")) {
        let meta = ms
            .get("replacement")
            .and_then(Value::as_str)
            .and_then(|s| s.chars().next())
            .unwrap_or('▁');
        return Ok(Style::SentencePiece { meta });
    }
    let meta_replace = |v: &Value| {
        let mut found = false;
        walk_replaces(v, &mut |pattern, content| {
            found |= pattern.contains('▁') || content.contains('▁')
        });
        found
    };
    if model.get("byte_fallback").and_then(Value::as_bool) == Some(true)
        || find_type(dec, "ByteFallback").is_some()
        || meta_replace(norm)
        || meta_replace(dec)
    {
        return Ok(Style::SentencePiece { meta: '▁' });
    }
    let ty = |v: &Value| {
        v.get("type")
            .and_then(Value::as_str)
            .unwrap_or("none")
            .to_string()
    };
    Err(format!(
        "model {}, pre_tokenizer {}, decoder {}: neither byte-level BPE nor SentencePiece",
        ty(model),
        ty(pre),
        ty(dec)
    ))
}

/// Calls `f(pattern, content)` for every `Replace` normalizer/decoder with a string pattern.
fn walk_replaces(v: &Value, f: &mut dyn FnMut(&str, &str)) {
    match v {
        Value::Object(m) => {
            if m.get("type").and_then(Value::as_str) == Some("Replace") {
                let pattern = m
                    .get("pattern")
                    .and_then(|p| p.get("String"))
                    .and_then(Value::as_str);
                let content = m.get("content").and_then(Value::as_str);
                if let (Some(p), Some(c)) = (pattern, content) {
                    f(p, c);
                }
            }
            m.values().for_each(|x| walk_replaces(x, f));
        }
        Value::Array(a) => a.iter().for_each(|x| walk_replaces(x, f)),
        _ => {}
    }
}

/// Reads an id out of a JSON number.
fn as_id(v: &Value) -> Option<u32> {
    v.as_u64().and_then(|x| u32::try_from(x).ok())
}

/// The model vocabulary as `(token, id)` pairs: a `{token: id}` map (BPE, WordPiece,
/// WordLevel) or a `[[token, score], …]` list whose index is the id (Unigram).
fn model_vocab(model: &Value) -> Result<Vec<(String, u32)>, String> {
    match model.get("vocab") {
        Some(Value::Object(m)) => m
            .iter()
            .map(|(t, id)| {
                as_id(id)
                    .map(|id| (t.clone(), id))
                    .ok_or_else(|| format!("bad id for token {t:?}"))
            })
            .collect(),
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let t = e
                    .get(0)
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("bad Unigram entry {i}"))?;
                let id = u32::try_from(i).map_err(|_| "vocabulary too large".to_string())?;
                Ok((t.to_string(), id))
            })
            .collect(),
        _ => Err("model.vocab is missing".into()),
    }
}

/// One entry of `added_tokens`.
struct Added {
    id: u32,
    content: String,
    special: bool,
}

fn added_tokens(root: &Value) -> Result<Vec<Added>, String> {
    let Some(list) = root.get("added_tokens") else {
        return Ok(Vec::new());
    };
    let list = list.as_array().ok_or("added_tokens is not a list")?;
    list.iter()
        .enumerate()
        .map(|(i, a)| {
            let id = a
                .get("id")
                .and_then(as_id)
                .ok_or_else(|| format!("added_tokens[{i}]: bad id"))?;
            let content = a
                .get("content")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("added_tokens[{i}]: no content"))?;
            let special = a.get("special").and_then(Value::as_bool).unwrap_or(false);
            Ok(Added {
                id,
                content: content.to_string(),
                special,
            })
        })
        .collect()
}

/// Builds the vocabulary from the parsed JSON (see the module documentation for the
/// rules). `name` becomes the vocabulary's name. Also returns the added tokens, whose ids
/// `load` checks against the library's.
fn vocabulary(
    root: &Value,
    path: &Path,
    name: &str,
) -> Result<(Vocabulary, Vec<Added>), VocabError> {
    let malformed = |message: String| VocabError::Malformed {
        path: path.to_path_buf(),
        message,
    };
    let bad = |id: u32, token: &str, reason: String| VocabError::BadToken {
        path: path.to_path_buf(),
        id,
        token: token.to_string(),
        reason,
    };
    let style = detect_style(root).map_err(|detail| VocabError::UnsupportedStyle {
        path: path.to_path_buf(),
        detail,
    })?;
    let model = root
        .get("model")
        .ok_or_else(|| malformed("no model".into()))?;
    let vocab = model_vocab(model).map_err(malformed)?;
    let added = added_tokens(root).map_err(malformed)?;

    let len = vocab
        .iter()
        .map(|&(_, id)| id)
        .chain(added.iter().map(|a| a.id))
        .max()
        .map_or(0, |m| m as usize + 1);
    // The mask width is the largest id + 1, and tables are sized by it: a stray huge id
    // (`"a": 4294967295`) must be an error, not a 100 GB allocation. Real files leave
    // at most a few gaps (padding to a multiple of 64 or 128).
    let listed = vocab.len() + added.len();
    if len > 2 * listed + 1024 {
        return Err(malformed(format!(
            "token ids go up to {} but only {listed} tokens are listed",
            len - 1
        )));
    }
    let mut entries: Vec<Option<(Vec<u8>, TokenKind)>> = vec![None; len];
    // Which ids are taken, and by what, to report clashes precisely.
    let mut taken: Vec<Option<&str>> = vec![None; len];

    // Added tokens first: they override the model entry with the same id (GPT-2 lists
    // `<|endoftext|>` in both), since the library matches them before the model sees text.
    for a in &added {
        let slot = a.id as usize;
        if let Some(other) = taken[slot] {
            return Err(bad(
                a.id,
                &a.content,
                format!("added twice (also as {other:?})"),
            ));
        }
        taken[slot] = Some(&a.content);
        let kind = if a.special {
            TokenKind::Special
        } else {
            TokenKind::Normal
        };
        if kind == TokenKind::Normal && a.content.is_empty() {
            continue; // an empty Normal token cannot advance the text: Unused
        }
        entries[slot] = Some((a.content.as_bytes().to_vec(), kind));
    }
    let added_ids: Vec<bool> = {
        let mut v = vec![false; len];
        added.iter().for_each(|a| v[a.id as usize] = true);
        v
    };

    let unk = model.get("unk_token").and_then(Value::as_str);
    for (token, id) in &vocab {
        let slot = *id as usize;
        if added_ids[slot] {
            continue;
        }
        if let Some(other) = taken[slot] {
            return Err(bad(*id, token, format!("id also used by {other:?}")));
        }
        taken[slot] = Some(token);
        if *token == format!("[PAD{id}]") {
            continue; // converter padding row: Unused
        }
        if Some(token.as_str()) == unk {
            entries[slot] = Some((token.as_bytes().to_vec(), TokenKind::Special));
            continue;
        }
        let bytes = token_bytes(style, token).ok_or_else(|| {
            bad(
                *id,
                token,
                format!("not a valid {style:?} token (char outside the byte alphabet)"),
            )
        })?;
        if !bytes.is_empty() {
            entries[slot] = Some((bytes, TokenKind::Normal));
        }
    }

    let eos = EOS_CANDIDATES
        .iter()
        .find_map(|c| {
            added
                .iter()
                .find(|a| a.special && a.content == *c)
                .map(|a| a.id)
        })
        .ok_or_else(|| VocabError::NoEos {
            path: path.to_path_buf(),
            candidates: EOS_CANDIDATES.join(", "),
        })?;
    Ok((Vocabulary::from_entries(name, entries, eos), added))
}

/// Loads `path` (a `tokenizer.json`, or a directory holding one).
pub(super) fn load(path: &Path, name: &str) -> Result<Loaded, VocabError> {
    let path: PathBuf = if path.is_dir() {
        path.join("tokenizer.json")
    } else {
        path.to_path_buf()
    };
    let data = std::fs::read(&path).map_err(|source| VocabError::Io {
        path: path.clone(),
        source,
    })?;
    from_json_bytes(&data, path, name)
}

/// Loads the contents of a `tokenizer.json` held in memory; `path` names it in errors.
/// (The fuzz target `tokenizer_json` calls this on arbitrary bytes.)
pub(super) fn from_json_bytes(
    data: &[u8],
    path: PathBuf,
    name: &str,
) -> Result<Loaded, VocabError> {
    let root: Value = serde_json::from_slice(data).map_err(|e| VocabError::Malformed {
        path: path.clone(),
        message: e.to_string(),
    })?;
    let (vocab, added) = vocabulary(&root, &path, name)?;
    // The library panics on some files it should refuse: a panic is an error too.
    let mut tokenizer = super::library_call(|| tokenizers::Tokenizer::from_bytes(data))
        .unwrap_or_else(|panic| Err(format!("the library panicked: {panic}").into()))
        .map_err(|source| VocabError::HfLoad {
            path: path.clone(),
            source,
        })?;
    // Text spelling a special token is ordinary text for us (like tiktoken's
    // `encode_ordinary`): the model's own output never contains specials except EOS.
    tokenizer.set_encode_special_tokens(true);

    // The library ignores the `id` of an added token that is not in the model vocabulary
    // and numbers such tokens itself, in list order from the model's size. A file whose
    // ids disagree would make our bytes describe other ids than the encoder emits.
    // (The library drops added tokens with empty content; so do we, as Unused/Special.)
    for a in added.iter().filter(|a| !a.content.is_empty()) {
        let lib = tokenizer.token_to_id(&a.content);
        if lib != Some(a.id) {
            return Err(VocabError::BadToken {
                path,
                id: a.id,
                token: a.content.clone(),
                reason: format!(
                    "the tokenizers library gives this added token id {lib:?} (added tokens \
                     missing from the model vocabulary must follow it in id order)"
                ),
            });
        }
    }

    let ids = super::library_call(|| tokenizer.encode_fast(PROBE, false))
        .unwrap_or_else(|panic| Err(format!("the library panicked: {panic}").into()))
        .map_err(|e| VocabError::HfLoad {
            path: path.clone(),
            source: e,
        })?
        .get_ids()
        .to_vec();
    let got: Vec<u8> = ids
        .iter()
        .flat_map(|&id| {
            if (id as usize) < vocab.len() {
                vocab.token_bytes(id)
            } else {
                b"\xff<out of range>"
            }
        })
        .copied()
        .collect();
    let dummy_prefix = if got == PROBE.as_bytes() {
        false
    } else if got.first() == Some(&b' ') && &got[1..] == PROBE.as_bytes() {
        true
    } else {
        return Err(VocabError::Inconsistent {
            path,
            probe: PROBE.to_string(),
            got: String::from_utf8_lossy(&got).into_owned(),
        });
    };
    Ok(Loaded {
        vocab,
        tokenizer,
        dummy_prefix,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{build_trie, load_tokenizer, Tokenizer};
    use super::*;
    use std::path::PathBuf;

    fn dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/tokenizers")
    }

    fn load(name: &str) -> Tokenizer {
        let p = dir().join(format!("{name}.tokenizer.json"));
        load_tokenizer(&format!("hf:{}", p.display())).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// The reference strings: llama.cpp writes each test string followed by
    /// `"\n__ggml_vocab_test__\n"`, so splitting on that separator gives the strings plus
    /// one empty tail. The `.out` file has one line of space-separated ids per string.
    fn reference(name: &str) -> Vec<(String, Vec<u32>)> {
        let inp = std::fs::read_to_string(dir().join(format!("{name}.reference.inp"))).unwrap();
        let out = std::fs::read_to_string(dir().join(format!("{name}.reference.out"))).unwrap();
        let mut texts: Vec<&str> = inp.split("\n__ggml_vocab_test__\n").collect();
        assert_eq!(
            texts.pop(),
            Some(""),
            "{name}: input must end with a separator"
        );
        let ids: Vec<Vec<u32>> = out
            .lines()
            .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
            .collect();
        assert_eq!(texts.len(), 46, "{name}");
        assert_eq!(ids.len(), 46, "{name}");
        texts.into_iter().map(String::from).zip(ids).collect()
    }

    /// Encodes every reference string and compares ids; returns the number that match.
    fn check_reference(name: &str, t: &Tokenizer) {
        let mut failures = Vec::new();
        for (i, (text, want)) in reference(name).iter().enumerate() {
            let got = t.encode(text.as_bytes()).unwrap();
            if &got != want {
                failures.push(format!("#{i} {text:?}: got {got:?}, want {want:?}"));
                continue;
            }
            // The token bytes spell the text (after the dummy-prefix space, if any).
            let mut expect = Vec::new();
            if t.adds_dummy_prefix() && !text.is_empty() {
                expect.push(b' ');
            }
            expect.extend_from_slice(text.as_bytes());
            assert_eq!(t.decode(&got), expect, "{name} #{i} {text:?}");
            assert!(
                got.iter().all(|&id| t.vocab.kind(id) == TokenKind::Normal),
                "{name} #{i}"
            );
        }
        assert!(
            failures.is_empty(),
            "{name}: {} of 46 differ:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }

    #[test]
    fn byte_level_table() {
        assert_eq!(byte_to_char(b' '), 'Ġ');
        assert_eq!(byte_to_char(b'\n'), 'Ċ');
        assert_eq!(byte_to_char(0), '\u{100}');
        assert_eq!(byte_to_char(0x7f), '\u{121}');
        assert_eq!(byte_to_char(0xad), '\u{143}');
        assert_eq!(byte_to_char(b'a'), 'a');
        assert_eq!(byte_to_char(0xe9), 'é');
        let mut seen = std::collections::HashSet::new();
        for b in 0..=255u8 {
            assert!(seen.insert(byte_to_char(b)), "byte {b} collides");
            assert_eq!(char_to_byte(byte_to_char(b)), Some(b));
        }
        assert_eq!(char_to_byte('▁'), None);
        assert_eq!(char_to_byte('\u{144}'), None);
        assert_eq!(char_to_byte(' '), None); // space is not in the alphabet, `Ġ` is
    }

    #[test]
    fn sentencepiece_token_bytes() {
        let sp = Style::SentencePiece { meta: '▁' };
        assert_eq!(token_bytes(sp, "▁the").unwrap(), b" the");
        assert_eq!(token_bytes(sp, "<0x0A>").unwrap(), b"\n");
        assert_eq!(token_bytes(sp, "<0xff>").unwrap(), [0xff]);
        assert_eq!(token_bytes(sp, "<0xZZ>").unwrap(), b"<0xZZ>");
        assert_eq!(token_bytes(sp, "▁▁").unwrap(), b"  ");
        assert_eq!(token_bytes(Style::ByteLevel, "Ġthe").unwrap(), b" the");
        assert_eq!(token_bytes(Style::ByteLevel, "▁the"), None);
    }

    #[test]
    fn gpt2() {
        let t = load("gpt-2");
        let v = &t.vocab;
        assert_eq!(v.len(), 50257);
        assert_eq!(t.eos(), 50256);
        assert_eq!(v.kind(50256), TokenKind::Special);
        assert_eq!(v.token_bytes(50256), b"<|endoftext|>");
        assert_eq!(v.token_bytes(262), b" the"); // "Ġthe"
        assert_eq!(v.token_bytes(1169), b"the");
        assert_eq!(v.token_bytes(198), b"\n"); // "Ċ"
        assert_eq!(v.token_bytes(995), b" world");
        assert_eq!(v.token_bytes(0), b"!");
        // Ids 0..256 are the 256 single bytes.
        let mut singles: Vec<u8> = (0..256)
            .map(|i| v.token_bytes(i))
            .inspect(|b| assert_eq!(b.len(), 1))
            .map(|b| b[0])
            .collect();
        singles.sort_unstable();
        assert_eq!(singles, (0..=255).collect::<Vec<u8>>());
        assert_eq!(
            v.kinds.iter().filter(|&&k| k == TokenKind::Normal).count(),
            50256
        );
        assert!(!t.adds_dummy_prefix());
        check_reference("gpt-2", &t);
    }

    #[test]
    fn qwen2() {
        let t = load("qwen2");
        let v = &t.vocab;
        assert_eq!(v.len(), 151_936);
        assert_eq!(t.eos(), 151_643);
        assert_eq!(v.token_bytes(151_643), b"<|endoftext|>");
        assert_eq!(v.kind(151_644), TokenKind::Special); // <|im_start|>
        assert_eq!(v.kind(151_935), TokenKind::Special); // [PAD151935], listed as added special
        assert_eq!(v.token_bytes(279), b" the");
        assert_eq!(v.token_bytes(256), b"  ");
        assert_eq!(v.token_bytes(1879), b" world");
        assert_eq!(v.token_bytes(198), b"\n");
        // "âį¨" (151640) is the byte-level spelling of U+2368 "⍨" = E2 8D A8.
        assert_eq!(v.token_bytes(151_640), "⍨".as_bytes());
        assert_eq!(
            v.kinds.iter().filter(|&&k| k == TokenKind::Normal).count(),
            151_643
        );
        assert!(!t.adds_dummy_prefix());
        check_reference("qwen2", &t);
    }

    #[test]
    fn phi3() {
        let t = load("phi-3");
        let v = &t.vocab;
        assert_eq!(v.len(), 32064);
        assert_eq!(t.eos(), 32000);
        assert_eq!(v.token_bytes(32000), b"<|endoftext|>");
        for id in [0, 1, 2, 32000, 32010] {
            assert_eq!(v.kind(id), TokenKind::Special, "id {id}");
        }
        assert_eq!(v.token_bytes(13), b"\n"); // <0x0A>
        assert_eq!(v.token_bytes(3), b"\0"); // <0x00>
        assert_eq!(v.token_bytes(258), [0xff]); // <0xFF>
        assert_eq!(v.token_bytes(278), b" the"); // ▁the
        assert_eq!(v.token_bytes(29871), b" "); // ▁
        assert_eq!(v.token_bytes(259), b"  "); // ▁▁
        assert_eq!(v.token_bytes(12199), b"hello");
        assert_eq!(v.token_bytes(22172), b" hello");
        // [PAD32011]..[PAD32063] are padding rows, not text.
        for id in 32011..32064 {
            assert_eq!(v.kind(id), TokenKind::Unused, "id {id}");
        }
        assert_eq!(
            v.kinds.iter().filter(|&&k| k == TokenKind::Normal).count(),
            32000 - 3
        );
        assert!(t.adds_dummy_prefix());
        assert_eq!(t.decode(&t.encode(b"hello").unwrap()), b" hello");
        assert_eq!(t.encode(b"").unwrap(), Vec::<u32>::new());
        check_reference("phi-3", &t);
    }

    #[test]
    fn special_text_is_encoded_as_text() {
        let t = load("gpt-2");
        let ids = t.encode(b"a<|endoftext|>b").unwrap();
        assert!(!ids.contains(&50256), "{ids:?}");
        assert_eq!(t.decode(&ids), b"a<|endoftext|>b");
    }

    #[test]
    fn every_normal_token_has_bytes_and_trie_holds_them() {
        for name in ["gpt-2", "qwen2", "phi-3"] {
            let t = load(name);
            let v = &t.vocab;
            let normal = (0..v.len() as u32).filter(|&i| v.kind(i) == TokenKind::Normal);
            assert!(
                normal.clone().all(|i| !v.token_bytes(i).is_empty()),
                "{name}"
            );
            let trie = build_trie(v);
            assert_eq!(trie.token_ids.len(), normal.count(), "{name}");
            super::super::trie::tests::check_invariants(v, &trie);
        }
    }

    /// A small synthetic tokenizer.json to exercise the rules the real files do not:
    /// non-special added tokens, duplicate ids, missing EOS, unsupported styles.
    fn synthetic(added: &str, extra_vocab: &str, pre: &str) -> String {
        let mut vocab: Vec<String> = (0..=255u8)
            .map(|b| format!("{:?}: {b}", byte_to_char(b).to_string()))
            .collect();
        vocab.push(format!("{:?}: 256", "Ġt"));
        let extra = if extra_vocab.is_empty() {
            String::new()
        } else {
            format!(", {extra_vocab}")
        };
        format!(
            r#"{{"version":"1.0","truncation":null,"padding":null,"added_tokens":[{added}],
            "normalizer":null,"pre_tokenizer":{pre},"post_processor":null,
            "decoder":null,
            "model":{{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":null,
            "end_of_word_suffix":null,"fuse_unk":false,"byte_fallback":false,"ignore_merges":false,
            "vocab":{{{}{extra}}},"merges":[["Ġ","t"]]}}}}"#,
            vocab.join(", ")
        )
    }

    const BYTE_LEVEL: &str =
        r#"{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":true}"#;
    const EOS: &str = r#"{"id":257,"content":"</s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}"#;

    fn load_str(json: &str) -> Result<Tokenizer, VocabError> {
        let dir = std::env::temp_dir().join(format!("stackmask-vocab-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("{:016x}.json", {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            json.hash(&mut h);
            h.finish()
        }));
        std::fs::write(&p, json).unwrap();
        let r = load_tokenizer(&format!("hf:{}", p.display()));
        let _ = std::fs::remove_file(&p);
        r
    }

    #[test]
    fn synthetic_added_tokens() {
        // Model vocabulary: the 256 bytes (id = byte), " t" = 256, " x" = 260, "</s>" = 261;
        // ids 257 and 258 are holes. `<tool>` is added, non-special, not in the model: the
        // library numbers it from the model's size (259 entries), matching its JSON id.
        let tool = r#"{"id":259,"content":"<tool>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":false}"#;
        let eos = EOS.replace(r#""id":257"#, r#""id":261"#);
        let json = synthetic(
            &format!("{tool}, {eos}"),
            r#""Ġx": 260, "</s>": 261"#,
            BYTE_LEVEL,
        );
        let t = load_str(&json).unwrap();
        let v = &t.vocab;
        assert_eq!(v.len(), 262);
        assert_eq!(t.eos(), 261);
        assert_eq!(v.kind(261), TokenKind::Special);
        assert_eq!(v.token_bytes(256), b" t");
        assert_eq!(v.token_bytes(260), b" x");
        assert_eq!(v.kind(257), TokenKind::Unused);
        assert_eq!(v.kind(258), TokenKind::Unused);
        assert_eq!(v.kind(259), TokenKind::Normal);
        assert_eq!(v.token_bytes(259), b"<tool>");
        // The library matches non-special added tokens in text: our bytes must agree.
        let ids = t.encode(b"x<tool> t").unwrap();
        assert_eq!(ids, [u32::from(b'x'), 259, 256]);
        assert_eq!(t.decode(&ids), b"x<tool> t");
        // Special text stays text, even when the special is also a model token.
        assert!(!t.encode(b"</s>").unwrap().contains(&261));
    }

    /// Found by the `tokenizer_json` fuzz target: tokenizers 0.23.2 sizes its merge
    /// buffer by the longest vocabulary entry and panics (slice index out of range) on a
    /// merge whose result is longer; loading must end in an error, not that panic.
    #[test]
    fn bpe_merge_longer_than_every_token_is_an_error_not_a_panic() {
        let json = synthetic(EOS, "", BYTE_LEVEL).replace(r#"[["Ġ","t"]]"#, r#"[["Ġt","Ġt"]]"#);
        assert!(json.contains(r#"[["Ġt","Ġt"]]"#));
        let loaded = super::super::load_hf_json(json.as_bytes(), Path::new("merge.json"), "hf:m");
        match loaded {
            Err(e @ VocabError::HfLoad { .. }) => {
                assert!(e.to_string().contains("panicked"), "{e}")
            }
            other => panic!("expected HfLoad, got {:?}", other.map(|t| t.vocab.len())),
        }
    }

    #[test]
    fn synthetic_errors() {
        // No EOS among the special added tokens.
        assert!(matches!(
            load_str(&synthetic("", "", BYTE_LEVEL)),
            Err(VocabError::NoEos { .. })
        ));
        // `</s>` present but not special: not an EOS.
        let not_special = EOS.replace(r#""special":true"#, r#""special":false"#);
        assert!(matches!(
            load_str(&synthetic(&not_special, "", BYTE_LEVEL)),
            Err(VocabError::NoEos { .. })
        ));
        // An added token whose JSON id is not the one the library assigns.
        let far = EOS.replace(r#""id":257"#, r#""id":300"#);
        assert!(matches!(
            load_str(&synthetic(&far, "", BYTE_LEVEL)),
            Err(VocabError::BadToken { id: 300, .. })
        ));
        // The well-formed variant loads.
        assert_eq!(
            load_str(&synthetic(EOS, "", BYTE_LEVEL)).unwrap().eos(),
            257
        );
        // Two tokens with one id.
        assert!(matches!(
            load_str(&synthetic(EOS, r#""Ġa": 256"#, BYTE_LEVEL)),
            Err(VocabError::BadToken { id: 256, .. })
        ));
        // A char outside the byte-level alphabet.
        assert!(matches!(
            load_str(&synthetic(EOS, r#""▁a": 290"#, BYTE_LEVEL)),
            Err(VocabError::BadToken { id: 290, .. })
        ));
        // Neither byte-level nor SentencePiece.
        let ws = r#"{"type":"Whitespace"}"#;
        assert!(matches!(
            load_str(&synthetic(EOS, "", ws)),
            Err(VocabError::UnsupportedStyle { .. })
        ));
        // Not JSON at all.
        assert!(matches!(load_str("{"), Err(VocabError::Malformed { .. })));
        // An id far past the tokens listed: an error before any table is sized by it.
        match load_str(&synthetic(EOS, r#""Ġa": 4294967295"#, BYTE_LEVEL)) {
            Err(VocabError::Malformed { message, .. }) => {
                assert!(message.contains("ids go up to 4294967295"), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }
}
