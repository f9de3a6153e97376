//! `Tokenizer`: a vocabulary (token id → bytes and kind) plus, when it came from a real
//! tokenizer, its canonical encoder.
//!
//! Every source ends in the same [`Vocabulary`] the command-line compiler uses, so an
//! artifact compiled from Python and one compiled by `stackmask compile` for the same
//! tokenizer have the same vocabulary hash and load in either.

use crate::errors::{vocab_error, InvalidTokenError, TokenizerError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use stackmask_compiler::vocab::{self, load_tokenizer};
use stackmask_formats::{TokenKind, Vocabulary};
use std::sync::Arc;

/// What a [`Tokenizer`] holds; shared (not copied) by compilers made from it.
pub struct LoadedVocab {
    /// The vocabulary masks are defined over.
    pub vocab: Vocabulary,
    /// The canonical encoder, absent for explicit token lists.
    pub encoder: Option<vocab::Tokenizer>,
}

/// A tokenizer's vocabulary (and encoder, when it has one).
#[pyclass(module = "stackmask", frozen)]
pub struct Tokenizer {
    /// The loaded vocabulary, shared with compilers.
    pub inner: Arc<LoadedVocab>,
}

impl Tokenizer {
    fn from_loaded(t: vocab::Tokenizer) -> Self {
        Tokenizer {
            inner: Arc::new(LoadedVocab {
                vocab: t.vocab.clone(),
                encoder: Some(t),
            }),
        }
    }

    /// The vocabulary.
    pub fn vocab(&self) -> &Vocabulary {
        &self.inner.vocab
    }
}

/// Errors unless `id` is a token id of `v`.
fn check_id(v: &Vocabulary, id: u32) -> PyResult<()> {
    if id as usize >= v.len() {
        return Err(InvalidTokenError::new_err(format!(
            "token {id} is not in the vocabulary ({} tokens)",
            v.len()
        )));
    }
    Ok(())
}

/// Loads a spec with the GIL released (loading a 200k vocabulary takes a fraction of a
/// second).
fn load_spec(py: Python<'_>, spec: &str) -> PyResult<Tokenizer> {
    let t = py.detach(|| load_tokenizer(spec)).map_err(vocab_error)?;
    Ok(Tokenizer::from_loaded(t))
}

#[pymethods]
impl Tokenizer {
    /// A tiktoken BPE by name: `"o200k_base"` or `"cl100k_base"` (rank files are built in;
    /// no network access).
    #[staticmethod]
    fn from_tiktoken(py: Python<'_>, name: &str) -> PyResult<Self> {
        load_spec(py, &format!("tiktoken:{name}"))
    }

    /// A Hugging Face `tokenizer.json` (or a directory holding one): byte-level BPE or
    /// SentencePiece style. EOS is the first special added token among `<|endoftext|>`,
    /// `</s>`, `<|end_of_text|>`, `<eos>`.
    #[staticmethod]
    fn from_hf_file(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Self> {
        load_spec(py, &format!("hf:{}", path.display()))
    }

    /// A Hugging Face tokenizer given as its `tokenizer.json` text (what
    /// `tokenizers.Tokenizer.to_str()` returns).
    #[staticmethod]
    fn from_hf_json(py: Python<'_>, json: &str) -> PyResult<Self> {
        // The loader reads files (and names them in its errors); a private temporary
        // file keeps one code path for both sources.
        let dir = std::env::temp_dir().join(format!(
            "stackmask-tokenizer-{}-{:x}",
            std::process::id(),
            stackmask_formats::artifact::content_hash(json.as_bytes())
        ));
        std::fs::create_dir_all(&dir)
            .map_err(|e| TokenizerError::new_err(format!("{}: {e}", dir.display())))?;
        let path = dir.join("tokenizer.json");
        let written = std::fs::write(&path, json)
            .map_err(|e| TokenizerError::new_err(format!("{}: {e}", path.display())));
        let loaded = written.and_then(|()| {
            py.detach(|| load_tokenizer(&format!("hf:{}", path.display())))
                .map_err(|e| {
                    // Name the input for what it is, not for the file it passed through.
                    let message = e
                        .to_string()
                        .replace(&path.display().to_string(), "<tokenizer.json text>");
                    TokenizerError::new_err(message)
                })
        });
        let _ = std::fs::remove_dir_all(&dir);
        let mut loaded = loaded?;
        "hf:<tokenizer.json text>".clone_into(&mut loaded.vocab.name);
        Ok(Tokenizer::from_loaded(loaded))
    }

    /// An explicit vocabulary: `tokens[i]` is the bytes of token `i` (`None` for an
    /// unused id). `eos_id` and every id in `special_ids` are special tokens: never text,
    /// never in a mask except EOS. An empty non-special token counts as unused. Such a
    /// tokenizer has no encoder (`encode` raises).
    #[staticmethod]
    #[pyo3(signature = (tokens, eos_id, special_ids = Vec::new(), name = "explicit".to_string()))]
    fn from_tokens(
        tokens: Vec<Option<Vec<u8>>>,
        eos_id: u32,
        special_ids: Vec<u32>,
        name: String,
    ) -> PyResult<Self> {
        let n = tokens.len();
        let mut special = vec![false; n];
        for &id in special_ids.iter().chain([&eos_id]) {
            *special.get_mut(id as usize).ok_or_else(|| {
                TokenizerError::new_err(format!(
                    "special token id {id} is outside the vocabulary of {n} tokens"
                ))
            })? = true;
        }
        let entries = tokens
            .into_iter()
            .zip(special)
            .map(|(bytes, special)| match (bytes, special) {
                (Some(b), true) => Some((b, TokenKind::Special)),
                (None, true) => Some((Vec::new(), TokenKind::Special)),
                (Some(b), false) if !b.is_empty() => Some((b, TokenKind::Normal)),
                _ => None,
            })
            .collect();
        Ok(Tokenizer {
            inner: Arc::new(LoadedVocab {
                vocab: Vocabulary::from_entries(&name, entries, eos_id),
                encoder: None,
            }),
        })
    }

    /// Number of token ids (the mask width in bits; rows of a bitmask need
    /// `ceil(vocab_size / 32)` int32 words).
    #[getter]
    fn vocab_size(&self) -> usize {
        self.vocab().len()
    }

    /// The end-of-sequence token id.
    #[getter]
    fn eos_id(&self) -> u32 {
        self.vocab().eos
    }

    /// The tokenizer's name (its spec, e.g. `tiktoken:o200k_base`).
    #[getter]
    fn name(&self) -> &str {
        &self.vocab().name
    }

    /// Hash of everything a mask depends on (ids, bytes, kinds, EOS); artifacts record
    /// it and `load` checks it.
    #[getter]
    fn vocab_hash(&self) -> u64 {
        self.vocab().content_hash()
    }

    /// The bytes of token `id` (special tokens give their name).
    fn token_bytes<'py>(&self, py: Python<'py>, id: u32) -> PyResult<Bound<'py, PyBytes>> {
        let v = self.vocab();
        check_id(v, id)?;
        Ok(PyBytes::new(py, v.token_bytes(id)))
    }

    /// Whether token `id` is special (EOS and control tokens).
    fn is_special(&self, id: u32) -> PyResult<bool> {
        let v = self.vocab();
        check_id(v, id)?;
        Ok(v.kind(id) == TokenKind::Special)
    }

    /// Canonical tokenization of `text` (str or UTF-8 bytes), without special tokens.
    fn encode(&self, py: Python<'_>, text: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
        let bytes: Vec<u8> = match text.extract::<String>() {
            Ok(s) => s.into_bytes(),
            Err(_) => text.extract::<Vec<u8>>()?,
        };
        let Some(encoder) = &self.inner.encoder else {
            return Err(TokenizerError::new_err(
                "this tokenizer was built from an explicit token list and has no encoder",
            ));
        };
        py.detach(|| encoder.encode(&bytes)).map_err(vocab_error)
    }

    /// Concatenated bytes of `ids`.
    fn decode<'py>(&self, py: Python<'py>, ids: Vec<u32>) -> PyResult<Bound<'py, PyBytes>> {
        let v = self.vocab();
        let mut out = Vec::new();
        for id in ids {
            check_id(v, id)?;
            out.extend_from_slice(v.token_bytes(id));
        }
        Ok(PyBytes::new(py, &out))
    }

    fn __repr__(&self) -> String {
        let v = self.vocab();
        format!(
            "Tokenizer(name={:?}, vocab_size={}, eos_id={})",
            v.name,
            v.len(),
            v.eos
        )
    }
}
