//! Tokenizer vocabularies: token ids → bytes and kinds, a canonical encoder, and the token
//! trie built over them.
//!
//! Masks are defined over *bytes* (DESIGN.md §1), so every tokenizer is reduced to a
//! [`Vocabulary`]: for each id in the tokenizer's full range, the bytes the token stands
//! for and whether it is `Normal` text, a `Special` control token (never in a mask except
//! EOS) or `Unused` (a gap in the id range). The encoder is kept next to it because the
//! tests and the `trace` command need the *canonical* tokenization of real documents.
//!
//! Supported specs (the `--tokenizer` argument):
//!
//! - `tiktoken:o200k_base`, `tiktoken:cl100k_base` — OpenAI BPEs, rank files embedded in
//!   `tiktoken-rs` (works offline). See [`tiktoken`].
//! - `hf:PATH/tokenizer.json` — a Hugging Face tokenizer, byte-level BPE (GPT-2 alphabet)
//!   or SentencePiece style (`▁` for space, `<0xNN>` byte fallback). See [`hf`].
//! - `bytes` — 256 single-byte tokens plus EOS; the smallest vocabulary in which every
//!   byte string is reachable, handy for tests. See [`bytes`].

pub mod bytes;
mod error;
pub mod hf;
pub mod tiktoken;
pub mod tiktoken_split;
pub mod trie;

use std::fmt;

pub use error::VocabError;
use stackmask_formats::Vocabulary;
pub use trie::build_trie;

/// A loaded tokenizer: the vocabulary plus a canonical encoder.
pub struct Tokenizer {
    /// Token bytes and kinds over the tokenizer's full id range; `vocab.eos` is the EOS id.
    pub vocab: Vocabulary,
    encoder: Encoder,
    /// Whether [`Tokenizer::encode`] prepends a space (SentencePiece dummy prefix).
    dummy_prefix: bool,
}

/// The private encoding back ends. Kept as an enum (not a trait object) because there
/// are exactly three and each needs different input handling.
enum Encoder {
    /// A tiktoken encoding; `'static` because it is cached for the life of the process.
    Tiktoken(&'static tiktoken::Encoding),
    /// A Hugging Face tokenizer, boxed because it is large and the other variants are not.
    Hf(Box<tokenizers::Tokenizer>),
    /// Identity: byte `b` is token `b`.
    Bytes,
}

impl fmt::Debug for Tokenizer {
    // The encoders are big opaque structures; the vocabulary's name and size say which
    // tokenizer this is.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokenizer")
            .field("name", &self.vocab.name)
            .field("len", &self.vocab.len())
            .field("eos", &self.vocab.eos)
            .field("dummy_prefix", &self.dummy_prefix)
            .finish_non_exhaustive()
    }
}

/// Loads a tokenizer from a spec: `tiktoken:o200k_base`, `tiktoken:cl100k_base`,
/// `hf:PATH/tokenizer.json` (a directory holding `tokenizer.json` also works) or `bytes`.
///
/// The vocabulary's `name` is the spec itself, so an artifact records exactly what the
/// user asked for.
pub fn load_tokenizer(spec: &str) -> Result<Tokenizer, VocabError> {
    if spec == "bytes" {
        return Ok(Tokenizer {
            vocab: bytes::vocabulary(),
            encoder: Encoder::Bytes,
            dummy_prefix: false,
        });
    }
    if let Some(name) = spec.strip_prefix("tiktoken:") {
        let encoding =
            tiktoken::load(name).ok_or_else(|| VocabError::UnknownSpec(spec.to_string()))?;
        return Ok(Tokenizer {
            vocab: encoding.vocab.clone(),
            encoder: Encoder::Tiktoken(encoding),
            dummy_prefix: false,
        });
    }
    if let Some(path) = spec.strip_prefix("hf:") {
        return Ok(hf_tokenizer(hf::load(std::path::Path::new(path), spec)?));
    }
    Err(VocabError::UnknownSpec(spec.to_string()))
}

/// Runs a call into a tokenizer library, turning a panic of the library into its
/// message: bad input must end in an error, and the libraries panic on some (the
/// `tokenizers` crate on a BPE merge longer than every vocabulary entry, found by the
/// `tokenizer_json` fuzz target).
pub(crate) fn library_call<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| {
        p.downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "the tokenizer library panicked".to_string())
    })
}

/// Loads a Hugging Face `tokenizer.json` from its contents, as `hf:PATH` does from the
/// file; `path` names it in errors and `name` becomes the vocabulary's name. For
/// callers that hold the file in memory (the `tokenizer_json` fuzz target).
pub fn load_hf_json(
    data: &[u8],
    path: &std::path::Path,
    name: &str,
) -> Result<Tokenizer, VocabError> {
    Ok(hf_tokenizer(hf::from_json_bytes(
        data,
        path.to_path_buf(),
        name,
    )?))
}

fn hf_tokenizer(loaded: hf::Loaded) -> Tokenizer {
    Tokenizer {
        vocab: loaded.vocab,
        encoder: Encoder::Hf(Box::new(loaded.tokenizer)),
        dummy_prefix: loaded.dummy_prefix,
    }
}

impl Tokenizer {
    /// Canonical tokenization of `text`, without special tokens: text that spells a
    /// special token (`<|endoftext|>`) is encoded as ordinary text, and no BOS/EOS is
    /// added.
    ///
    /// The concatenated token bytes equal the input bytes, with two documented exceptions
    /// for Hugging Face tokenizers, both inherited from the tokenizer's own normalizer so
    /// that the ids match the model's real tokenization:
    ///
    /// - **SentencePiece dummy prefix**: tokenizers that prepend `▁` to the text (Llama 2,
    ///   Phi-3; see [`Tokenizer::adds_dummy_prefix`]) produce tokens whose bytes are
    ///   `b" "` followed by the input, for non-empty input (empty input gives no tokens).
    /// - **Unicode normalization**: a tokenizer with a normalizer (Qwen2 has NFC) encodes the
    ///   normalized text, so a non-normalized input comes back normalized.
    ///
    /// `tiktoken` and Hugging Face tokenizers encode text: input that is not valid UTF-8
    /// is [`VocabError::InvalidUtf8`]. The `bytes` tokenizer takes any bytes. Any
    /// failure of a tokenizer library, a panic included, is [`VocabError::Encode`].
    pub fn encode(&self, text: &[u8]) -> Result<Vec<u32>, VocabError> {
        let encode = || match &self.encoder {
            Encoder::Bytes => Ok(text.iter().map(|&b| u32::from(b)).collect()),
            Encoder::Tiktoken(encoding) => encoding.encode(as_utf8(text)?),
            Encoder::Hf(tok) => {
                let enc = tok
                    .encode_fast(as_utf8(text)?, false)
                    .map_err(|e| VocabError::Encode(e.to_string()))?;
                Ok(enc.get_ids().to_vec())
            }
        };
        // The encoders keep no state a panic could leave half-updated (the tokenizers'
        // caches are rebuilt on demand), so going on after one is sound.
        library_call(encode).unwrap_or_else(|what| Err(VocabError::Encode(what)))
    }

    /// Tokens whose bytes are exactly `text`: [`Tokenizer::encode`], without the
    /// SentencePiece dummy-prefix space (a `trace` checks the document, not a space
    /// before it). Where the space merged into the first token (`"▁hello"`), the rest of
    /// that token is spelled with the longest normal tokens that match it (every byte has
    /// one: byte-fallback tokens); elsewhere the ids are the canonical ones.
    pub fn encode_exact(&self, text: &[u8]) -> Result<Vec<u32>, VocabError> {
        let mut ids = self.encode(text)?;
        if !self.dummy_prefix || ids.is_empty() {
            return Ok(ids);
        }
        let first = self.vocab.token_bytes(ids[0]);
        let Some(rest) = first.strip_prefix(b" ") else {
            return Ok(ids); // No prefix was added (the check below reports a mismatch).
        };
        let spelled = self.longest_match_spelling(rest)?;
        ids.splice(0..1, spelled);
        if self.decode(&ids) != text {
            return Err(VocabError::Encode(
                "the tokens without the dummy-prefix space do not spell the input".into(),
            ));
        }
        Ok(ids)
    }

    /// Normal tokens spelling `bytes`, longest match first (short: one token's bytes).
    fn longest_match_spelling(&self, mut bytes: &[u8]) -> Result<Vec<u32>, VocabError> {
        let by_bytes: std::collections::HashMap<&[u8], u32> = (0..self.vocab.len() as u32)
            .filter(|&id| self.vocab.kind(id) == stackmask_formats::TokenKind::Normal)
            .map(|id| (self.vocab.token_bytes(id), id))
            .collect();
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let (len, id) = (1..=bytes.len())
                .rev()
                .find_map(|n| by_bytes.get(&bytes[..n]).map(|&id| (n, id)))
                .ok_or_else(|| {
                    VocabError::Encode(format!("no token spells the byte {:#04x}", bytes[0]))
                })?;
            out.push(id);
            bytes = &bytes[len..];
        }
        Ok(out)
    }

    /// The end-of-sequence token id (a `Special` token; the only special a mask can hold).
    pub fn eos(&self) -> u32 {
        self.vocab.eos
    }

    /// Whether [`Tokenizer::encode`] prepends a space to non-empty input (SentencePiece
    /// dummy prefix). Callers that need the token bytes to spell exactly their text (e.g.
    /// a trace whose grammar forbids leading whitespace) check this. Detected at load time
    /// by encoding a probe text, so it reflects what the encoder really does.
    pub fn adds_dummy_prefix(&self) -> bool {
        self.dummy_prefix
    }

    /// Concatenated bytes of `ids` (any kind; specials give their content).
    pub fn decode(&self, ids: &[u32]) -> Vec<u8> {
        ids.iter()
            .flat_map(|&id| self.vocab.token_bytes(id))
            .copied()
            .collect()
    }
}

/// Text encoders take `&str`: report where the input stops being UTF-8.
fn as_utf8(text: &[u8]) -> Result<&str, VocabError> {
    std::str::from_utf8(text).map_err(|e| VocabError::InvalidUtf8 {
        offset: e.valid_up_to(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackmask_formats::TokenKind;

    #[test]
    fn unknown_specs_are_errors() {
        for spec in ["", "tiktoken:", "tiktoken:gpt2", "hf", "byte", "bytes:"] {
            match load_tokenizer(spec) {
                Err(VocabError::UnknownSpec(s)) => assert_eq!(s, spec),
                other => panic!("{spec:?}: expected UnknownSpec, got {other:?}"),
            }
        }
        assert!(matches!(
            load_tokenizer("hf:/nonexistent/tokenizer.json"),
            Err(VocabError::Io { .. })
        ));
    }

    #[test]
    fn bytes_tokenizer_roundtrips_any_bytes() {
        let t = load_tokenizer("bytes").unwrap();
        assert_eq!(t.vocab.len(), 257);
        assert_eq!(t.eos(), 256);
        assert_eq!(t.vocab.kind(256), TokenKind::Special);
        let text: Vec<u8> = (0..=255u8).rev().chain([0xff, 0xfe, b'a']).collect();
        let ids = t.encode(&text).unwrap();
        assert_eq!(ids.len(), text.len());
        assert_eq!(t.decode(&ids), text);
        assert!(!t.adds_dummy_prefix());
    }

    #[test]
    fn text_encoders_reject_invalid_utf8() {
        let t = load_tokenizer("tiktoken:cl100k_base").unwrap();
        match t.encode(b"ab\xffc") {
            Err(VocabError::InvalidUtf8 { offset }) => assert_eq!(offset, 2),
            other => panic!("expected InvalidUtf8, got {other:?}"),
        }
    }

    #[test]
    fn tokenizer_is_send_and_sync() {
        // The compiler shares one tokenizer across rayon workers.
        fn check<T: Send + Sync>() {}
        check::<Tokenizer>();
    }
}
