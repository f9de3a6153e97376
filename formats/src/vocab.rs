//! A tokenizer vocabulary reduced to what masks need: each token id's bytes and kind.

use serde::{Deserialize, Serialize};

/// What a token id is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TokenKind {
    /// An ordinary token: its bytes are text the model emits.
    Normal,
    /// A special / added control token (never in a mask, except EOS).
    Special,
    /// An id in the tokenizer's range with no token behind it (never in a mask).
    Unused,
}

/// The vocabulary: token bytes and kinds over the tokenizer's full id range.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vocabulary {
    /// Name of the tokenizer (the SPEC it was loaded from).
    pub name: String,
    /// Concatenated token bytes; token `i` is `bytes[offsets[i]..offsets[i + 1]]`.
    pub bytes: Vec<u8>,
    /// `len() + 1` offsets into `bytes`.
    pub offsets: Vec<u32>,
    /// Kind of each token id.
    pub kinds: Vec<TokenKind>,
    /// The end-of-sequence token id (a `Special` token).
    pub eos: u32,
}

impl Vocabulary {
    /// Builds a vocabulary from per-id entries (`None` = unused id).
    pub fn from_entries(name: &str, entries: Vec<Option<(Vec<u8>, TokenKind)>>, eos: u32) -> Self {
        let mut bytes = Vec::new();
        let mut offsets = vec![0u32];
        let mut kinds = Vec::with_capacity(entries.len());
        for e in entries {
            match e {
                Some((b, k)) => {
                    bytes.extend_from_slice(&b);
                    kinds.push(k);
                }
                None => kinds.push(TokenKind::Unused),
            }
            offsets.push(bytes.len() as u32);
        }
        Vocabulary { name: name.to_string(), bytes, offsets, kinds, eos }
    }

    /// Number of token ids: the mask width in bits.
    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    /// Whether the vocabulary is empty.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// Bytes of token `id`.
    pub fn token_bytes(&self, id: u32) -> &[u8] {
        &self.bytes[self.offsets[id as usize] as usize..self.offsets[id as usize + 1] as usize]
    }

    /// Kind of token `id`.
    pub fn kind(&self, id: u32) -> TokenKind {
        self.kinds[id as usize]
    }

    /// Number of `u32` words in a mask over this vocabulary.
    pub fn mask_words(&self) -> usize {
        self.len().div_ceil(32)
    }
}
