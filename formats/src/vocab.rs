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
    ///
    /// A `Normal` entry with no bytes becomes `Unused`. Read literally, DESIGN.md §1
    /// would allow such a token after every viable prefix (`w·ε·u` is a sentence
    /// whenever `w·u` is), but it stands for no text: a decoder that samples it makes
    /// no progress and may do so forever. So it is treated like an unused id — never in
    /// a mask, refused by `commit` — and classifying it here keeps `commit`, `fill_mask`
    /// and the token trie (which holds only non-empty tokens) consistent for every
    /// tokenizer.
    pub fn from_entries(name: &str, entries: Vec<Option<(Vec<u8>, TokenKind)>>, eos: u32) -> Self {
        let mut bytes = Vec::new();
        let mut offsets = vec![0u32];
        let mut kinds = Vec::with_capacity(entries.len());
        for e in entries {
            match e {
                Some((b, TokenKind::Normal)) if b.is_empty() => kinds.push(TokenKind::Unused),
                Some((b, k)) => {
                    bytes.extend_from_slice(&b);
                    kinds.push(k);
                }
                None => kinds.push(TokenKind::Unused),
            }
            offsets.push(bytes.len() as u32);
        }
        Vocabulary {
            name: name.to_string(),
            bytes,
            offsets,
            kinds,
            eos,
        }
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

/// A borrowed vocabulary: from a [`Vocabulary`] or from artifact sections.
#[derive(Clone, Copy, Debug)]
pub struct VocabRef<'a> {
    /// Concatenated token bytes.
    pub bytes: &'a [u8],
    /// `len + 1` offsets into `bytes`.
    pub offsets: &'a [u32],
    /// Kinds: either the owned enum or the artifact's byte codes.
    pub kinds: KindsRef<'a>,
    /// EOS.
    pub eos: u32,
}

/// Token kinds, borrowed in either representation.
#[derive(Clone, Copy, Debug)]
pub enum KindsRef<'a> {
    /// From a [`Vocabulary`].
    Owned(&'a [TokenKind]),
    /// Byte codes ([`crate::layout::kind_code`]), validated.
    Codes(&'a [u8]),
}

impl Vocabulary {
    /// Borrows the vocabulary.
    pub fn view(&self) -> VocabRef<'_> {
        VocabRef {
            bytes: &self.bytes,
            offsets: &self.offsets,
            kinds: KindsRef::Owned(&self.kinds),
            eos: self.eos,
        }
    }

    /// A hash of everything a mask depends on (ids, bytes, kinds, EOS), stored in
    /// artifacts so that a mismatched tokenizer is caught at load.
    pub fn content_hash(&self) -> u64 {
        let mut h = crate::artifact::ContentHasher::new();
        h.update(&(self.len() as u64).to_le_bytes());
        h.update(&self.eos.to_le_bytes());
        h.update(&self.bytes);
        h.update(bytemuck::cast_slice(&self.offsets));
        let codes: Vec<u8> = self.kinds.iter().map(|&k| kind_to_code(k)).collect();
        h.update(&codes);
        h.finish()
    }
}

/// The byte code of a token kind.
pub fn kind_to_code(k: TokenKind) -> u8 {
    use crate::layout::kind_code::*;
    match k {
        TokenKind::Normal => NORMAL,
        TokenKind::Special => SPECIAL,
        TokenKind::Unused => UNUSED,
    }
}

impl<'a> VocabRef<'a> {
    /// Number of token ids.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Whether there are no token ids.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of token `id` (`id < len()`).
    pub fn token_bytes(&self, id: u32) -> &'a [u8] {
        &self.bytes[self.offsets[id as usize] as usize..self.offsets[id as usize + 1] as usize]
    }

    /// The kind of token `id` (`id < len()`).
    pub fn kind(&self, id: u32) -> TokenKind {
        use crate::layout::kind_code::*;
        match self.kinds {
            KindsRef::Owned(k) => k[id as usize],
            KindsRef::Codes(c) => match c[id as usize] {
                NORMAL => TokenKind::Normal,
                SPECIAL => TokenKind::Special,
                _ => TokenKind::Unused,
            },
        }
    }

    /// Whether token `id` is an ordinary token (validated vocabularies give every
    /// ordinary token at least one byte).
    pub fn is_normal(&self, id: u32) -> bool {
        match self.kinds {
            KindsRef::Owned(k) => k[id as usize] == TokenKind::Normal,
            KindsRef::Codes(c) => c[id as usize] == crate::layout::kind_code::NORMAL,
        }
    }

    /// Checks offsets and kinds, so the accessors above cannot go out of bounds.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.len();
        if self.offsets.first() != Some(&0) || self.offsets.windows(2).any(|w| w[0] > w[1]) {
            return Err("vocabulary: offsets are not monotone from 0".into());
        }
        if self.offsets[n] as usize != self.bytes.len() {
            return Err("vocabulary: offsets do not cover the token bytes".into());
        }
        let kinds_len = match self.kinds {
            KindsRef::Owned(k) => k.len(),
            KindsRef::Codes(c) => {
                if c.iter().any(|&k| k > crate::layout::kind_code::UNUSED) {
                    return Err("vocabulary: unknown token kind code".into());
                }
                c.len()
            }
        };
        if kinds_len != n || self.eos as usize >= n {
            return Err("vocabulary: kinds or EOS out of range".into());
        }
        // An empty ordinary token would be committable but never in a mask (see
        // `Vocabulary::from_entries`, which classifies such tokens as unused).
        if let Some(id) =
            (0..n as u32).find(|&id| self.is_normal(id) && self.token_bytes(id).is_empty())
        {
            return Err(format!(
                "vocabulary: ordinary token {id} has no bytes (it must be unused)"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_ordinary_tokens_are_unused() {
        use TokenKind::*;
        let v = Vocabulary::from_entries(
            "v",
            vec![
                Some((b"a".to_vec(), Normal)),
                Some((Vec::new(), Normal)),
                Some((Vec::new(), Special)),
                Some((b"<eos>".to_vec(), Special)),
            ],
            3,
        );
        assert_eq!(v.kinds, [Normal, Unused, Special, Special]);
        assert!(v.token_bytes(1).is_empty());
        v.view().validate().unwrap();
    }

    #[test]
    fn validation_refuses_an_empty_ordinary_token() {
        let v = Vocabulary {
            name: "v".into(),
            bytes: b"a".to_vec(),
            offsets: vec![0, 1, 1],
            kinds: vec![TokenKind::Normal, TokenKind::Normal],
            eos: 0,
        };
        let e = v.view().validate().unwrap_err();
        assert!(e.contains("ordinary token 1 has no bytes"), "{e}");
        let codes = [crate::layout::kind_code::NORMAL; 2];
        let r = VocabRef {
            kinds: KindsRef::Codes(&codes),
            ..v.view()
        };
        assert!(r.validate().is_err());
    }
}
