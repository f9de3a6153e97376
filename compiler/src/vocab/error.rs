//! The error type of the vocabulary layer.
//!
//! Every failure names what was being loaded (spec, path, token id) so a user who passes
//! the wrong file or an unsupported tokenizer sees why, not a bare parse error.

use std::path::PathBuf;

/// Why a tokenizer could not be loaded, or a text could not be encoded.
#[derive(Debug, thiserror::Error)]
pub enum VocabError {
    /// The `--tokenizer` spec is not one of the supported forms.
    #[error(
        "unknown tokenizer spec `{0}`: expected tiktoken:o200k_base, tiktoken:cl100k_base, \
         hf:PATH/tokenizer.json or bytes"
    )]
    UnknownSpec(String),

    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A `tokenizer.json` is not valid JSON, or lacks a field we need.
    #[error("{path}: malformed tokenizer.json: {message}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },

    /// The Hugging Face `tokenizers` library rejected the file.
    #[error("{path}: the tokenizers library cannot load it: {source}")]
    HfLoad {
        /// The file.
        path: PathBuf,
        /// The library's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// The tokenizer is neither byte-level BPE nor SentencePiece style, so we cannot tell
    /// which bytes its tokens stand for.
    #[error("{path}: unsupported tokenizer style: {detail}")]
    UnsupportedStyle {
        /// The file.
        path: PathBuf,
        /// What was found.
        detail: String,
    },

    /// A vocabulary entry cannot be turned into bytes (or clashes with another entry).
    #[error("{path}: token id {id} ({token:?}): {reason}")]
    BadToken {
        /// The file.
        path: PathBuf,
        /// The token id.
        id: u32,
        /// The token string as written in the file.
        token: String,
        /// Why it was rejected.
        reason: String,
    },

    /// No end-of-sequence token was found among the special added tokens.
    #[error("{path}: no end-of-sequence token: none of {candidates} is a special added token")]
    NoEos {
        /// The file.
        path: PathBuf,
        /// The contents that were looked for, in lookup order.
        candidates: String,
    },

    /// The tokenizer's encoder does not reproduce a probe text from the token bytes we
    /// derived, i.e. our reading of the vocabulary disagrees with the library.
    #[error(
        "{path}: token bytes disagree with the encoder: {probe:?} encodes to tokens whose \
         bytes are {got:?}"
    )]
    Inconsistent {
        /// The file.
        path: PathBuf,
        /// The probe text.
        probe: String,
        /// The concatenated bytes of its tokens (lossily shown as text).
        got: String,
    },

    /// The encoder works on text and the input is not valid UTF-8.
    #[error("input is not valid UTF-8 (first invalid byte at offset {offset}); this tokenizer encodes text only")]
    InvalidUtf8 {
        /// Offset of the first invalid byte.
        offset: usize,
    },

    /// The Hugging Face encoder failed on an input.
    #[error("encoding failed: {0}")]
    Encode(String),
}
