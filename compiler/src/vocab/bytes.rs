//! The `bytes` tokenizer: token `b` is the single byte `b` (ids 0..=255), EOS is id 256.
//!
//! It is the smallest vocabulary over which every byte string has exactly one
//! tokenization, which makes masks easy to reason about in tests and lets a grammar be
//! exercised without a real tokenizer.

use stackmask_formats::{TokenKind, Vocabulary};

/// The EOS id of the `bytes` vocabulary (right after the 256 byte tokens).
pub const EOS: u32 = 256;

/// The bytes stored for the EOS token. Special tokens carry their textual name for
/// display only; they are never part of the text a mask constrains.
pub const EOS_NAME: &[u8] = b"<eos>";

/// Builds the 257-entry `bytes` vocabulary (named `bytes`, like its spec).
pub fn vocabulary() -> Vocabulary {
    let entries = (0..=255u8)
        .map(|b| Some((vec![b], TokenKind::Normal)))
        .chain(std::iter::once(Some((
            EOS_NAME.to_vec(),
            TokenKind::Special,
        ))))
        .collect();
    Vocabulary::from_entries("bytes", entries, EOS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        let v = vocabulary();
        assert_eq!(v.name, "bytes");
        assert_eq!(v.len(), 257);
        assert_eq!(v.mask_words(), 9);
        for b in 0..=255u8 {
            assert_eq!(v.token_bytes(u32::from(b)), [b]);
            assert_eq!(v.kind(u32::from(b)), TokenKind::Normal);
        }
        assert_eq!(v.eos, EOS);
        assert_eq!(v.kind(EOS), TokenKind::Special);
    }
}
