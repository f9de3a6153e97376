//! The trace file: the work `stackmask bench` hands to a peer driver, one JSON object.
//!
//! ```json
//! {
//!   "format": "stackmask-traces/1",
//!   "grammar_name": "json",            // the artifact's grammar name (file stem)
//!   "grammar": "start: ws? value ...",  // the Lark text stackmask compiled
//!   "tokenizer": "tiktoken:o200k_base", // the spec, for reports
//!   "vocab": {
//!     "tokens": ["21", "22", ...],      // token i's bytes, lower-case hex
//!     "special": [199999, 200018],      // special token ids (never text; EOS among them)
//!     "eos": 199999
//!   },
//!   "repeats": 20,                      // timed passes after one warm-up pass
//!   "traces": [{"name": "a.json", "tokens": [90, 1, ...]}, ...]   // without EOS
//! }
//! ```
//!
//! Drivers get the vocabulary as bytes so they need no tokenizer code of their own.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// The value of [`TraceFile::format`] this version reads and writes.
pub const FORMAT: &str = "stackmask-traces/1";

/// The vocabulary: token bytes by id, the special ids and EOS.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VocabSpec {
    /// Token `i`'s bytes, hex-encoded.
    pub tokens: Vec<String>,
    /// Ids of special tokens (never allowed as text).
    pub special: Vec<u32>,
    /// The end-of-sequence token.
    pub eos: u32,
}

/// One token trace (a document tokenized canonically, or a random walk).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    /// The document's path or `random walk N`.
    pub name: String,
    /// Token ids, without EOS.
    pub tokens: Vec<u32>,
}

/// See the module documentation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceFile {
    /// Always [`FORMAT`].
    pub format: String,
    /// The grammar's name.
    pub grammar_name: String,
    /// The Lark grammar text.
    pub grammar: String,
    /// The tokenizer spec.
    pub tokenizer: String,
    /// The vocabulary.
    pub vocab: VocabSpec,
    /// Timed passes after one warm-up pass.
    pub repeats: usize,
    /// The traces.
    pub traces: Vec<Trace>,
}

/// Lower-case hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// The bytes of a hex string (either case).
pub fn from_hex(s: &str) -> Result<Vec<u8>, String> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Ok(c - b'0'),
        b'a'..=b'f' => Ok(c - b'a' + 10),
        b'A'..=b'F' => Ok(c - b'A' + 10),
        _ => Err(format!("{:?} is not a hex digit", c as char)),
    };
    let s = s.as_bytes();
    if !s.len().is_multiple_of(2) {
        return Err("odd number of hex digits".into());
    }
    s.chunks(2)
        .map(|p| Ok(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

impl VocabSpec {
    /// The spec of a vocabulary given as token bytes by id.
    pub fn new<'a>(
        tokens: impl IntoIterator<Item = &'a [u8]>,
        special: Vec<u32>,
        eos: u32,
    ) -> Self {
        VocabSpec {
            tokens: tokens.into_iter().map(to_hex).collect(),
            special,
            eos,
        }
    }

    /// Token bytes by id.
    pub fn token_bytes(&self) -> Result<Vec<Vec<u8>>, String> {
        self.tokens
            .iter()
            .enumerate()
            .map(|(i, h)| from_hex(h).map_err(|e| format!("token {i}: {e}")))
            .collect()
    }

    /// `is_special[i]`: token `i` is special (EOS always is).
    pub fn is_special(&self) -> Vec<bool> {
        let mut out = vec![false; self.tokens.len()];
        for &t in self.special.iter().chain([&self.eos]) {
            if let Some(s) = out.get_mut(t as usize) {
                *s = true;
            }
        }
        out
    }

    /// Words of a mask over this vocabulary.
    pub fn mask_words(&self) -> usize {
        self.tokens.len().div_ceil(32)
    }
}

impl TraceFile {
    /// Checks the format tag and that every id is inside the vocabulary.
    pub fn validate(&self) -> Result<(), String> {
        if self.format != FORMAT {
            return Err(format!(
                "trace file format {:?}, this driver reads {FORMAT:?}",
                self.format
            ));
        }
        let n = self.vocab.tokens.len();
        let check = |what: &str, t: u32| {
            if (t as usize) < n {
                Ok(())
            } else {
                Err(format!(
                    "{what} id {t} is outside the vocabulary of {n} tokens"
                ))
            }
        };
        check("eos", self.vocab.eos)?;
        for &t in &self.vocab.special {
            check("special token", t)?;
        }
        for trace in &self.traces {
            for &t in &trace.tokens {
                check(&format!("token of trace {:?}: token", trace.name), t)?;
            }
        }
        Ok(())
    }

    /// Writes the file as JSON.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let text = serde_json::to_string(self).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Reads and validates a file written by [`TraceFile::write`].
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let file: TraceFile = serde_json::from_slice(&text)
            .map_err(|e| format!("{}: not a trace file: {e}", path.display()))?;
        file.validate()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(file)
    }

    /// The token ids of every trace.
    pub fn token_traces(&self) -> Vec<Vec<u32>> {
        self.traces.iter().map(|t| t.tokens.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TraceFile {
        let tokens: Vec<&[u8]> = vec![b"{", b"\"a\"", b"\x00\xff\n", b"", b"<|eos|>"];
        TraceFile {
            format: FORMAT.into(),
            grammar_name: "tiny".into(),
            grammar: "start: \"{\" \"\\\"a\\\"\"\n".into(),
            tokenizer: "list:test".into(),
            vocab: VocabSpec::new(tokens, vec![4], 4),
            repeats: 3,
            traces: vec![
                Trace {
                    name: "doc".into(),
                    tokens: vec![0, 1],
                },
                Trace {
                    name: "random walk 0".into(),
                    tokens: vec![],
                },
            ],
        }
    }

    #[test]
    fn round_trip_through_a_file() {
        let dir = std::env::temp_dir().join(format!("smtf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.json");
        let f = sample();
        f.write(&path).unwrap();
        let back = TraceFile::read(&path).unwrap();
        assert_eq!(back, f);
        let bytes = back.vocab.token_bytes().unwrap();
        assert_eq!(bytes[2], b"\x00\xff\n");
        assert_eq!(bytes[3], b"");
        assert_eq!(back.vocab.tokens[2], "00ff0a");
        assert_eq!(
            back.vocab.is_special(),
            vec![false, false, false, false, true]
        );
        assert_eq!(back.vocab.mask_words(), 1);
        assert_eq!(back.token_traces(), vec![vec![0, 1], vec![]]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn hex() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(from_hex(&to_hex(&all)).unwrap(), all);
        assert_eq!(from_hex("0aFf").unwrap(), vec![10, 255]);
        assert!(from_hex("abc").is_err());
        assert!(from_hex("zz").is_err());
    }

    #[test]
    fn bad_files_are_errors() {
        let mut f = sample();
        f.format = "stackmask-traces/0".into();
        assert!(f.validate().unwrap_err().contains("format"));
        let mut f = sample();
        f.traces[0].tokens.push(5);
        assert!(f.validate().unwrap_err().contains("id 5"));
        let mut f = sample();
        f.vocab.eos = 9;
        assert!(f.validate().unwrap_err().contains("eos"));
        let dir = std::env::temp_dir().join(format!("smtf-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.json");
        std::fs::write(&path, "{\"format\": 1}").unwrap();
        assert!(TraceFile::read(&path)
            .unwrap_err()
            .contains("not a trace file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
