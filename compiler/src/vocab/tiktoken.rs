//! OpenAI tiktoken BPEs (`o200k_base`, `cl100k_base`) through `tiktoken-rs`.
//!
//! Token bytes come from the BPE's own decoder (`decode_bytes(&[id])`), and the special
//! tokens and their ids from its special-token table, so nothing about the rank files is
//! hard-coded here: the id range is `0..=max special id` (specials sit above the ranks in
//! every tiktoken encoding), an id the decoder does not know is `Unused` (o200k has a gap
//! at 199998, cl100k at 100256 and 100261..=100275), and EOS is `<|endoftext|>`.
//!
//! Loading o200k takes ~0.3 s, so both the BPE (a `tiktoken-rs` singleton) and the derived
//! vocabulary are cached for the life of the process.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use stackmask_formats::{TokenKind, Vocabulary};
use tiktoken_rs::CoreBPE;

use super::tiktoken_split::Split;
use super::VocabError;

/// The special token used as EOS in every tiktoken encoding.
const ENDOFTEXT: &str = "<|endoftext|>";

/// One tiktoken encoding: the library's BPE, our vocabulary of it, and what the
/// long-input path of [`Encoding::encode`] needs, built when first used.
pub struct Encoding {
    /// The library's BPE (a `tiktoken-rs` singleton).
    pub bpe: &'static CoreBPE,
    /// Token bytes and kinds, named `tiktoken:NAME`.
    pub vocab: Vocabulary,
    /// The pre-tokenizer split without backtracking.
    split: fn() -> Split,
    /// The same ranks under a pattern that keeps the whole text as one piece: encoding a
    /// piece with it runs the library's own byte-pair merge and nothing else.
    piece_bpe: OnceLock<Result<(Split, CoreBPE), String>>,
}

/// Where an encoding's parts come from: the library's singleton and our split.
type Parts = (fn() -> &'static CoreBPE, fn() -> Split);

/// The named tiktoken encoding, or `None` if the name is not supported.
pub fn load(name: &str) -> Option<&'static Encoding> {
    static O200K: OnceLock<Encoding> = OnceLock::new();
    static CL100K: OnceLock<Encoding> = OnceLock::new();
    let (cell, (bpe, split)): (&OnceLock<Encoding>, Parts) = match name {
        "o200k_base" => (&O200K, (tiktoken_rs::o200k_base_singleton, Split::o200k)),
        "cl100k_base" => (&CL100K, (tiktoken_rs::cl100k_base_singleton, Split::cl100k)),
        _ => return None,
    };
    Some(cell.get_or_init(|| {
        let bpe = bpe();
        Encoding {
            bpe,
            vocab: vocabulary(&format!("tiktoken:{name}"), bpe),
            split,
            piece_bpe: OnceLock::new(),
        }
    }))
}

impl Encoding {
    /// Canonical tokenization without special tokens, exactly the library's
    /// `encode_ordinary`, for text of any length.
    ///
    /// The library's split fails on very long whitespace runs (a `fancy-regex` stack
    /// overflow, see [`super::tiktoken_split`]); then the text is encoded piece by piece:
    /// the same pieces found without backtracking, each merged by the library's BPE. Any
    /// failure is an error, never a panic.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, VocabError> {
        match self.bpe.encode(text, &HashSet::new()) {
            Ok((ids, _)) => Ok(ids),
            Err(_) => self.encode_by_pieces(text),
        }
    }

    /// The long-input path of [`Encoding::encode`], public for the tests that prove it
    /// gives the library's tokens.
    pub fn encode_by_pieces(&self, text: &str) -> Result<Vec<u32>, VocabError> {
        let (split, whole) = self
            .piece_bpe
            .get_or_init(|| self.piece_encoder())
            .as_ref()
            .map_err(|e| VocabError::Encode(e.clone()))?;
        let mut ids = Vec::new();
        split.pieces(
            text,
            |piece| {
                let (piece_ids, _) = whole
                    .encode(piece, &HashSet::new())
                    .map_err(|e| VocabError::Encode(e.to_string()))?;
                ids.extend(piece_ids);
                Ok(())
            },
            |at| {
                VocabError::Encode(format!(
                    "no pre-tokenizer piece starts at byte {at} of the input"
                ))
            },
        )?;
        Ok(ids)
    }

    /// A BPE with this encoding's ranks (rank = id for every normal token) whose pattern
    /// `(?s:.+)` has no look-around, so the library matches it without backtracking.
    fn piece_encoder(&self) -> Result<(Split, CoreBPE), String> {
        let ranks = (0..self.vocab.len() as u32)
            .filter(|&id| self.vocab.kind(id) == TokenKind::Normal)
            .map(|id| (self.vocab.token_bytes(id).to_vec(), id))
            .collect();
        let bpe = CoreBPE::new(ranks, Default::default(), "(?s:.+)").map_err(|e| e.to_string())?;
        Ok(((self.split)(), bpe))
    }
}

/// Derives the vocabulary from a BPE: every id up to the largest special id, with its
/// bytes from the decoder.
fn vocabulary(name: &str, bpe: &CoreBPE) -> Vocabulary {
    // The library keeps the special-token table private; encoding each special's text
    // with specials allowed yields its id.
    let specials: HashMap<u32, String> = bpe
        .special_tokens()
        .into_iter()
        .map(|s| {
            let ids = bpe.encode_with_special_tokens(s);
            assert_eq!(ids.len(), 1, "special token {s:?} encodes to {ids:?}");
            (ids[0], s.to_string())
        })
        .collect();
    let eos = *specials
        .iter()
        .find(|(_, s)| s.as_str() == ENDOFTEXT)
        .map(|(id, _)| id)
        .expect("every tiktoken encoding has <|endoftext|>");
    let len = specials.keys().max().map_or(0, |&m| m + 1);
    let entries = (0..len)
        .map(|id| {
            if let Some(s) = specials.get(&id) {
                return Some((s.as_bytes().to_vec(), TokenKind::Special));
            }
            // An unknown id is a gap in the rank file. Ranks never decode to nothing, but
            // a Normal token must have bytes (the trie and masks rely on it).
            match bpe.decode_bytes(&[id]) {
                Ok(b) if !b.is_empty() => Some((b, TokenKind::Normal)),
                _ => None,
            }
        })
        .collect();
    Vocabulary::from_entries(name, entries, eos)
}

#[cfg(test)]
mod tests {
    use super::super::{load_tokenizer, Encoder};
    use super::*;

    fn count(v: &Vocabulary, k: TokenKind) -> usize {
        v.kinds.iter().filter(|&&x| x == k).count()
    }

    #[test]
    fn o200k_layout() {
        let t = load_tokenizer("tiktoken:o200k_base").unwrap();
        let v = &t.vocab;
        assert_eq!(v.name, "tiktoken:o200k_base");
        assert_eq!(v.len(), 200_019);
        for id in 0..=199_997 {
            assert_eq!(v.kind(id), TokenKind::Normal, "id {id}");
            assert!(!v.token_bytes(id).is_empty(), "id {id}");
        }
        assert_eq!(v.kind(199_998), TokenKind::Unused);
        assert!(v.token_bytes(199_998).is_empty());
        assert_eq!(t.eos(), 199_999);
        assert_eq!(v.kind(199_999), TokenKind::Special);
        assert_eq!(v.token_bytes(199_999), b"<|endoftext|>");
        assert_eq!(v.kind(200_018), TokenKind::Special);
        assert_eq!(v.token_bytes(200_018), b"<|endofprompt|>");
        for id in 200_000..200_018 {
            assert_eq!(v.kind(id), TokenKind::Unused, "id {id}");
        }
        assert_eq!(count(v, TokenKind::Normal), 199_998);
        assert_eq!(count(v, TokenKind::Special), 2);
        // The 256 single bytes are all tokens (o200k is byte-level): masks may rely on it.
        let singles: std::collections::HashSet<u8> = (0..v.len() as u32)
            .filter(|&i| v.token_bytes(i).len() == 1)
            .map(|i| v.token_bytes(i)[0])
            .collect();
        assert_eq!(singles.len(), 256);
    }

    #[test]
    fn cl100k_layout() {
        let t = load_tokenizer("tiktoken:cl100k_base").unwrap();
        let v = &t.vocab;
        assert_eq!(v.len(), 100_277);
        for id in 0..=100_255 {
            assert_eq!(v.kind(id), TokenKind::Normal, "id {id}");
            assert!(!v.token_bytes(id).is_empty(), "id {id}");
        }
        assert_eq!(v.kind(100_256), TokenKind::Unused);
        assert_eq!(t.eos(), 100_257);
        for id in 100_257..=100_260 {
            assert_eq!(v.kind(id), TokenKind::Special, "id {id}");
        }
        for id in 100_261..100_276 {
            assert_eq!(v.kind(id), TokenKind::Unused, "id {id}");
        }
        assert_eq!(v.kind(100_276), TokenKind::Special);
        assert_eq!(v.token_bytes(100_257), b"<|endoftext|>");
        assert_eq!(count(v, TokenKind::Special), 5);
    }

    #[test]
    fn known_ids() {
        // Checked against tiktoken (Python) and tiktoken-rs: o200k "hello" = 24912,
        // " world" = 2375; cl100k "hello" = 15339, " world" = 1917.
        let o = load_tokenizer("tiktoken:o200k_base").unwrap();
        assert_eq!(o.encode(b"hello world").unwrap(), [24912, 2375]);
        assert_eq!(o.vocab.token_bytes(24912), b"hello");
        assert_eq!(o.vocab.token_bytes(2375), b" world");
        let c = load_tokenizer("tiktoken:cl100k_base").unwrap();
        assert_eq!(c.encode(b"hello world").unwrap(), [15339, 1917]);
        assert_eq!(c.vocab.token_bytes(15339), b"hello");
        assert_eq!(c.vocab.token_bytes(1917), b" world");
    }

    #[test]
    fn encode_roundtrips_through_token_bytes() {
        let samples: &[&str] = &[
            "",
            "hello world",
            "{\"key\": [1, 2.5e-3, true, null]}\n",
            "Grüße aus Köln — naïve façade",
            "日本語のテキストと中文",
            "emoji 🦙🎉👩‍👩‍👧 flags 🇫🇷",
            "<|endoftext|> is plain text here",
            "  leading and trailing spaces \t\r\n",
        ];
        for spec in ["tiktoken:o200k_base", "tiktoken:cl100k_base"] {
            let t = load_tokenizer(spec).unwrap();
            for s in samples {
                let ids = t.encode(s.as_bytes()).unwrap();
                assert_eq!(t.decode(&ids), s.as_bytes(), "{spec}: {s:?}");
                assert!(
                    ids.iter().all(|&id| t.vocab.kind(id) == TokenKind::Normal),
                    "{spec}: {s:?} encoded to a non-normal token: {ids:?}"
                );
                // Our bytes agree with the library's own decoder.
                let Encoder::Tiktoken(encoding) = t.encoder else {
                    unreachable!()
                };
                assert_eq!(encoding.bpe.decode_bytes(&ids).unwrap(), t.decode(&ids));
            }
            // Non-ASCII text must not degenerate into one token per byte.
            let ids = t.encode("日本語のテキスト".as_bytes()).unwrap();
            assert!(ids.len() < "日本語のテキスト".len() / 2, "{spec}: {ids:?}");
        }
    }

    /// Issue 11 (1): a million spaces then `1` overflowed fancy-regex's stack and the
    /// library panicked (`unwrap()` on `StackOverflow`). It encodes now, to the pieces'
    /// tokens: the spaces but the last, then `" "`, then `"1"`.
    #[test]
    fn million_spaces_then_digit_encode() {
        let text = format!("{}1", " ".repeat(1_000_000));
        for spec in ["tiktoken:o200k_base", "tiktoken:cl100k_base"] {
            let t = load_tokenizer(spec).unwrap();
            let ids = t.encode(text.as_bytes()).unwrap();
            assert_eq!(t.decode(&ids), text.as_bytes(), "{spec}");
            let tail: Vec<&[u8]> = ids[ids.len() - 2..]
                .iter()
                .map(|&id| t.vocab.token_bytes(id))
                .collect();
            assert_eq!(tail, [&b" "[..], b"1"], "{spec}");
        }
    }

    /// Random text over the characters each pattern alternative cares about.
    fn random_text(rng: &mut crate::test_rng::XorShift, max_len: usize) -> String {
        const CHARS: &[&str] = &[
            " ", " ", " ", "\n", "\r", "\t", "\u{a0}", "\u{3000}", "a", "Z", "é", "É", "\u{301}",
            "ǅ", "ʰ", "日", "7", "٣", "'", "s", "t", "re", "LL", "d", "/", "{", "\"", "!?", "🦙",
            "\u{200d}", "_", "-", ".",
        ];
        let mut next = || rng.next();
        let len = (next() % max_len as u64) as usize;
        (0..len)
            .map(|_| CHARS[(next() % CHARS.len() as u64) as usize])
            .collect()
    }

    /// The piece-by-piece path gives the library's tokens wherever the library works:
    /// random texts, whitespace runs of every length up to 300 before every kind of
    /// character, and runs of 100,000 characters.
    #[test]
    fn piece_path_matches_the_library() {
        for name in ["o200k_base", "cl100k_base"] {
            let e = load(name).unwrap();
            let check = |text: &str| {
                assert_eq!(
                    e.encode_by_pieces(text).unwrap(),
                    e.bpe.encode_ordinary(text),
                    "{name}: {text:?}"
                );
            };
            let mut rng = crate::test_rng::XorShift(0x9e37_79b9_7f4a_7c15);
            for _ in 0..3000 {
                check(&random_text(&mut rng, 40));
            }
            for n in 1..300 {
                for ws in [" ", "\n", "\t", " \n", "\u{3000}"] {
                    let run = ws.repeat(n);
                    for after in ["", "1", "a", "A", "{", "'s", "\n", " x"] {
                        check(&format!("x{run}{after}"));
                        check(&format!("!{run}{after}"));
                    }
                }
            }
            for ws in [" ", "\n", " \n", "\r\n"] {
                let run = ws.repeat(100_000 / ws.len());
                check(&format!("{run}1"));
                check(&format!("a{run}"));
            }
            check(&"ab".repeat(50_000));
            check(&"{".repeat(100_000));
        }
    }
}
