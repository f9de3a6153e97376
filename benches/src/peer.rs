//! Peer comparison: drive llguidance (the strongest peer, DESIGN §1) on a Lark grammar, a
//! vocabulary and a token trace, so the latency harness can print its numbers beside ours.
//!
//! How the pieces map onto llguidance 1.9.1:
//!
//! * vocabulary → [`toktrie::TokTrie`] over the token byte strings (id = index). Special
//!   tokens (and always the EOS token) get toktrie's special marker, a leading `0xFF` byte,
//!   so the grammar can never produce them as text; EOS is passed in [`toktrie::TokRxInfo`].
//!   The `TokEnv` reports a *non-canonical* tokenizer, which by itself stops llguidance from
//!   forcing tokens.
//! * forcing → additionally turned off in the grammar with llguidance's own directive
//!   `%llguidance {"no_forcing": true}` (DESIGN §1), appended to the grammar text. Several
//!   `%llguidance` lines are merged, so a grammar's own options (e.g. `allow_initial_skip`)
//!   still apply.
//! * grammar → `TopLevelGrammar::from_lark`, compiled by a `ParserFactory` (built once per
//!   vocabulary, see [`LlgEnv`]) into a `TokenParser`, wrapped in a [`llguidance::Matcher`].
//! * step → `Matcher::compute_mask_or_eos` (a `SimpleVob`, already the u32 little-endian
//!   layout of DESIGN §1) and `Matcher::consume_token`.
//!
//! Differences from stackmask's semantics that a comparison must keep in mind are listed
//! in the doc of [`LlgPeer`].

use stackmask_peers::replay::{time_make, Subject};
use std::sync::Arc;
use std::time::{Duration, Instant};

use llguidance::api::{ParserLimits, StopReason, TopLevelGrammar};
use llguidance::earley::SlicedBiasComputer;
use llguidance::{Matcher, ParserFactory};
use toktrie::{InferenceCapabilities, TokEnv, TokRxInfo, TokTrie, TokenId, TokenizerEnv};

/// The directive that turns llguidance's token forcing off (spelling checked against
/// llguidance 1.9.1 `api::LLGuidanceOptions::no_forcing`, read by the Lark front end).
pub const NO_FORCING_DIRECTIVE: &str = "%llguidance {\"no_forcing\": true}";

/// A vocabulary as the harness knows it: token `i` has bytes `tokens[i]`.
#[derive(Clone, Debug)]
pub struct PeerVocab {
    /// Token bytes by id.
    pub tokens: Vec<Vec<u8>>,
    /// `special[i]`: token `i` is a special token, never allowed as text.
    pub special: Vec<bool>,
    /// The end-of-sequence token.
    pub eos: u32,
}

impl PeerVocab {
    /// The vocabulary of one of our tokenizers: every token that is not a normal text
    /// token (special, control) is special.
    pub fn from_vocabulary(v: &stackmask_formats::Vocabulary) -> PeerVocab {
        PeerVocab {
            tokens: (0..v.len() as u32)
                .map(|i| v.token_bytes(i).to_vec())
                .collect(),
            special: (0..v.len() as u32)
                .map(|i| v.kind(i) != stackmask_formats::TokenKind::Normal)
                .collect(),
            eos: v.eos,
        }
    }
}

/// The byte string llguidance sees for token `i`.
fn llg_bytes(vocab: &PeerVocab, i: usize) -> Vec<u8> {
    let bytes = &vocab.tokens[i];
    if !(vocab.special[i] || i == vocab.eos as usize) {
        return bytes.clone();
    }
    if bytes.first() == Some(&TokTrie::SPECIAL_TOKEN_MARKER) {
        return bytes.clone();
    }
    let mut out = vec![TokTrie::SPECIAL_TOKEN_MARKER];
    if bytes.is_empty() {
        // toktrie's numeric special-token spelling, `\xFF[id]`.
        out.extend_from_slice(format!("[{i}]").as_bytes());
    } else {
        out.extend_from_slice(bytes);
    }
    out
}

/// Token environment: the trie plus greedy tokenization, declared non-canonical so that
/// llguidance never forces tokens (the grammar directive turns forcing off as well).
struct PeerTokEnv {
    trie: TokTrie,
    canonical: bool,
}

impl TokenizerEnv for PeerTokEnv {
    fn tok_trie(&self) -> &TokTrie {
        &self.trie
    }

    fn tokenize_bytes(&self, s: &[u8]) -> Vec<TokenId> {
        self.trie.greedy_tokenize(s)
    }

    fn tokenize_is_canonical(&self) -> bool {
        self.canonical
    }
}

/// llguidance's per-vocabulary state (token trie, `TokEnv`, `ParserFactory` with its
/// token-slicing bias computer). Building it costs time proportional to the vocabulary;
/// build it once and create one [`LlgPeer`] per grammar with [`LlgPeer::with_env`].
pub struct LlgEnv {
    factory: ParserFactory,
    n_vocab: usize,
    eos: u32,
}

impl LlgEnv {
    /// llguidance's token environment for `vocab`.
    pub fn new(vocab: &PeerVocab) -> Result<Self, String> {
        Self::build(vocab, false)
    }

    fn build(vocab: &PeerVocab, canonical: bool) -> Result<Self, String> {
        let n = vocab.tokens.len();
        if n == 0 {
            return Err("empty vocabulary".into());
        }
        if vocab.special.len() != n {
            return Err(format!(
                "special has {} entries, tokens has {n}",
                vocab.special.len()
            ));
        }
        if vocab.eos as usize >= n {
            return Err(format!(
                "eos id {} out of range (vocabulary {n})",
                vocab.eos
            ));
        }
        let n_u32 = u32::try_from(n).map_err(|_| "vocabulary too large".to_string())?;
        let words: Vec<Vec<u8>> = (0..n).map(|i| llg_bytes(vocab, i)).collect();
        let info = TokRxInfo::new(n_u32, vocab.eos);
        let trie = std::panic::catch_unwind(|| TokTrie::from(&info, &words))
            .map_err(|_| "toktrie rejected the vocabulary".to_string())?;
        let tok_env: TokEnv = Arc::new(PeerTokEnv { trie, canonical });
        let mut factory = ParserFactory::new(
            &tok_env,
            InferenceCapabilities::default(),
            &SlicedBiasComputer::general_slices(),
        )
        .map_err(|e| format!("llguidance ParserFactory: {e}"))?;
        factory.quiet();
        // Default limits (llguidance as shipped), only without the grammar/state dump in errors.
        let limits: &mut ParserLimits = factory.limits_mut();
        limits.verbose_errors = false;
        Ok(LlgEnv {
            factory,
            n_vocab: n,
            eos: vocab.eos,
        })
    }

    /// Number of token ids (the mask width).
    pub fn vocab_size(&self) -> usize {
        self.n_vocab
    }
}

/// llguidance driven step by step on one grammar.
///
/// Caveats for comparisons with stackmask (DESIGN §1):
/// * llguidance's lexer is greedy across all lexemes the parser allows at a point, ours is
///   greedy per terminal; grammars whose lexing is ambiguous (`s: "a" "bc" | "ab" "d"`) give
///   different masks. JSON and most data formats agree.
/// * The special-marker byte `0xFF` starts every special token here; a vocabulary's plain
///   single-byte token `0xFF` therefore looks special to llguidance too (harmless: `0xFF`
///   never occurs in UTF-8 text). An empty non-special token is never allowed by llguidance.
/// * When no token at all is allowed, llguidance reports an error (`NoExtensionBias`)
///   instead of an empty mask.
/// * `commit` times `Matcher::consume_token`, which includes llguidance's `check_stop`.
pub struct LlgPeer {
    /// Fresh matcher; its clones share llguidance's lexer cache (warm [`LlgPeer::reset`]).
    pristine: Matcher,
    /// Deep copy taken before any step, for [`LlgPeer::reset_cold`].
    cold: Matcher,
    matcher: Matcher,
    n_vocab: usize,
    eos: u32,
    /// EOS has been consumed; the trace is over.
    done: bool,
    warnings: Vec<String>,
}

impl LlgPeer {
    /// Builds the vocabulary environment and the matcher for `lark_grammar`.
    pub fn new(lark_grammar: &str, vocab: &PeerVocab) -> Result<Self, String> {
        Self::with_env(&LlgEnv::new(vocab)?, lark_grammar)
    }

    /// Builds a matcher for `lark_grammar` on an existing vocabulary environment.
    pub fn with_env(env: &LlgEnv, lark_grammar: &str) -> Result<Self, String> {
        Self::build(env, lark_grammar, true)
    }

    fn build(env: &LlgEnv, lark_grammar: &str, no_forcing: bool) -> Result<Self, String> {
        // Appended, not prepended, so line numbers in llguidance's errors match the file.
        let text = if no_forcing {
            format!("{lark_grammar}\n{NO_FORCING_DIRECTIVE}\n")
        } else {
            lark_grammar.to_string()
        };
        let parser = env
            .factory
            .create_parser(TopLevelGrammar::from_lark(text))
            .map_err(|e| format!("llguidance rejected the grammar: {e}"))?;
        let mut pristine = Matcher::new(Ok(parser));
        if let Some(e) = pristine.get_error() {
            return Err(format!("llguidance matcher: {e}"));
        }
        let warnings = pristine.grammar_warnings();
        let cold = pristine.deep_clone();
        let matcher = pristine.clone();
        Ok(LlgPeer {
            pristine,
            cold,
            matcher,
            n_vocab: env.n_vocab,
            eos: env.eos,
            done: false,
            warnings,
        })
    }

    /// Grammar warnings llguidance reported while compiling.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Number of token ids (the mask width).
    pub fn vocab_size(&self) -> usize {
        self.n_vocab
    }

    /// Computes the mask for the current step into `mask` (len = ceil(n/32) words), returns
    /// nanoseconds spent (llguidance's `compute_mask` plus the copy into `mask`).
    pub fn mask(&mut self, mask: &mut [u32]) -> Result<u64, String> {
        let words = self.n_vocab.div_ceil(32);
        if mask.len() != words {
            return Err(format!(
                "mask has {} words, vocabulary of {} needs {words}",
                mask.len(),
                self.n_vocab
            ));
        }
        if self.done {
            return Err("EOS already consumed".into());
        }
        let t0 = Instant::now();
        // After the grammar can take no more bytes llguidance stops itself (NoExtension);
        // `_or_eos` then returns {EOS}, which is the mask in our semantics.
        let r = self.matcher.compute_mask_or_eos();
        let r = r.map(|v| {
            let src = v.as_slice();
            let k = src.len().min(words);
            mask[..k].copy_from_slice(&src[..k]);
            mask[k..].fill(0);
        });
        let ns = t0.elapsed().as_nanos() as u64;
        r.map_err(|e| format!("llguidance compute_mask: {e}"))?;
        Ok(ns)
    }

    /// Consumes one token, returns nanoseconds spent. A token the grammar does not allow
    /// is an error (and the matcher must then be [`reset`](Self::reset)).
    pub fn commit(&mut self, token: u32) -> Result<u64, String> {
        if token as usize >= self.n_vocab {
            return Err(format!("token {token} out of range"));
        }
        if self.done {
            return Err("EOS already consumed".into());
        }
        let t0 = Instant::now();
        let r = if token == self.eos
            && !self.matcher.is_error()
            && self.matcher.stop_reason() == StopReason::NoExtension
        {
            // llguidance stopped itself because the sentence is complete: EOS is the
            // one allowed token, but `consume_token` refuses anything once stopped.
            Ok(())
        } else {
            self.matcher.consume_token(token)
        };
        let ns = t0.elapsed().as_nanos() as u64;
        r.map_err(|e| format!("llguidance consume_token({token}): {e}"))?;
        if token == self.eos {
            self.done = true;
        }
        Ok(ns)
    }

    /// Back to the start of the grammar, keeping llguidance's lazily built lexer states
    /// (warm, as a server reusing a compiled grammar would). Also recovers from errors.
    pub fn reset(&mut self) -> Result<(), String> {
        self.matcher = self.pristine.clone();
        self.done = false;
        match self.matcher.get_error() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Back to the start with the lexer cache as it was right after grammar compilation
    /// (cold first-token latency).
    pub fn reset_cold(&mut self) -> Result<(), String> {
        self.matcher = self.cold.deep_clone();
        self.done = false;
        match self.matcher.get_error() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// The timing loop's view of llguidance (`stackmask_peers::replay`): a new matcher is a
/// clone of the freshly compiled one (what a server does per request), a clone is
/// `Matcher::clone` of the working matcher.
impl Subject for LlgPeer {
    fn time_new_matcher(&mut self) -> Duration {
        time_make(|| self.pristine.clone())
    }

    fn reset(&mut self) -> Result<(), String> {
        LlgPeer::reset(self)
    }

    fn fill_mask(&mut self, mask: &mut [u32]) -> Result<(), String> {
        self.mask(mask).map(drop)
    }

    fn commit(&mut self, token: u32) -> Result<(), String> {
        LlgPeer::commit(self, token).map(drop)
    }

    fn time_clone(&mut self) -> Duration {
        time_make(|| self.matcher.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TINY: &str = r#"
start: "[" NUM ("," NUM)* "]"
NUM: /[0-9]+/
"#;

    /// All 256 single bytes, then `extra` multi-byte tokens, then the specials.
    /// Returns (vocab, id of first extra token).
    fn vocab(extra: &[&str]) -> (PeerVocab, usize) {
        let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        let first = tokens.len();
        tokens.extend(extra.iter().map(|s| s.as_bytes().to_vec()));
        let mut special = vec![false; tokens.len()];
        tokens.push(b"<|pad|>".to_vec());
        special.push(true);
        tokens.push(b"<|endoftext|>".to_vec());
        special.push(true);
        let eos = tokens.len() as u32 - 1;
        (
            PeerVocab {
                tokens,
                special,
                eos,
            },
            first,
        )
    }

    fn words(v: &PeerVocab) -> usize {
        v.tokens.len().div_ceil(32)
    }

    fn bit(mask: &[u32], t: usize) -> bool {
        mask[t / 32] >> (t % 32) & 1 == 1
    }

    fn allowed(mask: &[u32]) -> Vec<usize> {
        (0..mask.len() * 32).filter(|&t| bit(mask, t)).collect()
    }

    fn id(v: &PeerVocab, s: &str) -> u32 {
        v.tokens.iter().position(|t| t == s.as_bytes()).unwrap() as u32
    }

    #[test]
    fn tiny_grammar_masks() {
        let (v, _) = vocab(&["[1", "12", ",3", "1]", "]]"]);
        let mut p = LlgPeer::new(TINY, &v).unwrap();
        let mut m = vec![0u32; words(&v)];
        let pad = v.eos - 1;

        // Start: only tokens beginning with '['.
        p.mask(&mut m).unwrap();
        assert_eq!(allowed(&m), vec![b'[' as usize, id(&v, "[1") as usize]);
        // EOS not allowed at the start, and committing it fails.
        assert!(!bit(&m, v.eos as usize));

        p.commit(b'[' as u32).unwrap();
        p.commit(b'1' as u32).unwrap();
        let ns = p.mask(&mut m).unwrap();
        assert!(ns > 0);
        for c in b'0'..=b'9' {
            assert!(bit(&m, c as usize), "digit {}", c as char);
        }
        for t in [
            b',' as u32,
            b']' as u32,
            id(&v, "12"),
            id(&v, ",3"),
            id(&v, "1]"),
        ] {
            assert!(bit(&m, t as usize), "token {t}");
        }
        for t in [
            b'[' as u32,
            id(&v, "[1"),
            id(&v, "]]"),
            v.eos,
            pad,
            0xFF,
            b' ' as u32,
        ] {
            assert!(!bit(&m, t as usize), "token {t}");
        }
        assert_eq!(allowed(&m).len(), 10 + 5);

        // A disallowed token errors, and the matcher stays unusable until reset.
        assert!(p.commit(b'[' as u32).is_err());
        assert!(p.mask(&mut m).is_err());
        p.reset().unwrap();

        // Multi-byte trace; EOS only at the end.
        let trace = [id(&v, "[1"), id(&v, "12"), id(&v, ",3"), id(&v, "1]")];
        for &t in &trace {
            p.mask(&mut m).unwrap();
            assert!(bit(&m, t as usize));
            assert!(!bit(&m, v.eos as usize));
            p.commit(t).unwrap();
        }
        p.mask(&mut m).unwrap();
        assert_eq!(allowed(&m), vec![v.eos as usize]);
        assert!(p.commit(b',' as u32).is_err());
        p.reset().unwrap();
        for &t in &trace {
            p.commit(t).unwrap();
        }
        p.commit(v.eos).unwrap();
        assert!(p.mask(&mut m).is_err());
        assert!(p.commit(v.eos).is_err());

        // EOS before the end is rejected.
        p.reset().unwrap();
        p.commit(id(&v, "[1")).unwrap();
        assert!(p.commit(v.eos).is_err());
        // Special tokens are rejected as text.
        p.reset().unwrap();
        assert!(p.commit(pad).is_err());
        p.reset_cold().unwrap();
        p.mask(&mut m).unwrap();
        assert_eq!(allowed(&m), vec![b'[' as usize, id(&v, "[1") as usize]);
    }

    #[test]
    fn bad_inputs() {
        let (v, _) = vocab(&[]);
        let mut p = LlgPeer::new(TINY, &v).unwrap();
        let mut short = vec![0u32; words(&v) - 1];
        assert!(p.mask(&mut short).is_err());
        assert!(p.commit(v.tokens.len() as u32).is_err());
        assert!(LlgPeer::new("start: UNDEFINED", &v).is_err());
        let mut bad = v.clone();
        bad.special.pop();
        assert!(LlgPeer::new(TINY, &bad).is_err());
    }

    /// The directive really is what turns forcing off: with a tokenizer that claims to be
    /// canonical, llguidance without it allows only the canonical token for a forced string.
    #[test]
    fn no_forcing_directive() {
        let g = "start: \"abc\" NUM\nNUM: /[0-9]+/\n";
        let (v, _) = vocab(&["ab", "abc"]);
        let env = LlgEnv::build(&v, true).unwrap();
        let mut m = vec![0u32; words(&v)];

        let mut forced = LlgPeer::build(&env, g, false).unwrap();
        forced.mask(&mut m).unwrap();
        assert_eq!(allowed(&m), vec![id(&v, "abc") as usize]);

        let mut free = LlgPeer::build(&env, g, true).unwrap();
        free.mask(&mut m).unwrap();
        let want: Vec<usize> = ["a", "ab", "abc"]
            .iter()
            .map(|s| id(&v, s) as usize)
            .collect();
        assert_eq!(allowed(&m), want);

        // The default (non-canonical) environment does not force either.
        let mut p = LlgPeer::new(g, &v).unwrap();
        p.mask(&mut m).unwrap();
        assert_eq!(allowed(&m), want);
    }

    fn json_grammar() -> String {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../grammars/json.lark");
        std::fs::read_to_string(path).unwrap()
    }

    /// Greedy longest-match tokenization over the vocabulary (test helper only).
    fn tokenize(v: &PeerVocab, s: &[u8]) -> Vec<u32> {
        let mut out = vec![];
        let mut i = 0;
        while i < s.len() {
            let (t, len) = v
                .tokens
                .iter()
                .enumerate()
                .filter(|(t, b)| !v.special[*t] && !b.is_empty() && s[i..].starts_with(b))
                .map(|(t, b)| (t as u32, b.len()))
                .max_by_key(|&(_, l)| l)
                .unwrap();
            out.push(t);
            i += len;
        }
        out
    }

    #[test]
    fn json_grammar_loads_and_runs() {
        let (v, _) = vocab(&[
            "{\"", "\":", "\": ", "true", "false", "null", ", ", ",\n  ", "\n", "  ", "é", "\\u00",
            "1.", "e3", "}\n", "]}", "\"a", "\"b",
        ]);
        let mut p = LlgPeer::new(&json_grammar(), &v).unwrap();
        let mut m = vec![0u32; words(&v)];

        let doc = " {\"a\": [1, -2.5e3, true, null],\n  \"b\": \"x\\u00e9\\n\u{e9}\"}\n ";
        let trace = tokenize(&v, doc.as_bytes());
        // The value is complete once `}` is in: from then on EOS is allowed.
        let n_open = trace.len() - 2;
        assert_eq!(v.tokens[trace[n_open] as usize], b"}\n");
        for (i, &t) in trace.iter().enumerate() {
            p.mask(&mut m).unwrap();
            assert_eq!(bit(&m, v.eos as usize), i > n_open, "step {i}");
            assert!(
                bit(&m, t as usize),
                "token {:?}",
                String::from_utf8_lossy(&v.tokens[t as usize])
            );
            p.commit(t).unwrap();
        }
        // Trailing whitespace may continue, EOS now allowed, nothing else.
        p.mask(&mut m).unwrap();
        // (The extra "\n" token duplicates byte token 10: both are allowed.)
        let mut want: Vec<usize> = (0..v.tokens.len())
            .filter(|&t| !v.special[t] && v.tokens[t].iter().all(|b| b" \t\r\n".contains(b)))
            .collect();
        want.push(v.eos as usize);
        assert_eq!(want.len(), 4 + 2 + 1);
        assert_eq!(allowed(&m), want);
        p.commit(v.eos).unwrap();

        // Top-level scalar: after `12` digits, '.', 'e', ws, and EOS.
        p.reset().unwrap();
        p.commit(b'1' as u32).unwrap();
        p.commit(b'2' as u32).unwrap();
        p.mask(&mut m).unwrap();
        for c in b"0123456789.eE \t\r\n" {
            assert!(bit(&m, *c as usize), "{}", *c as char);
        }
        assert!(bit(&m, v.eos as usize));
        assert!(bit(&m, id(&v, "e3") as usize));
        assert!(!bit(&m, b'-' as usize) && !bit(&m, b'+' as usize) && !bit(&m, b',' as usize));

        // Inside a string: control bytes and invalid UTF-8 excluded, UTF-8 lead bytes in.
        p.reset().unwrap();
        p.commit(b'"' as u32).unwrap();
        p.mask(&mut m).unwrap();
        assert!(!bit(&m, 0x0A) && !bit(&m, 0x1F) && bit(&m, 0x20) && bit(&m, 0x7F));
        assert!(bit(&m, 0xC3) && bit(&m, 0xF0) && !bit(&m, 0x80) && !bit(&m, 0xC0));
        assert!(!bit(&m, 0xF5) && !bit(&m, 0xFF));
        assert!(bit(&m, id(&v, "é") as usize) && bit(&m, id(&v, "\\u00") as usize));
        // `0` cannot be followed by a digit.
        p.reset().unwrap();
        p.commit(b'0' as u32).unwrap();
        p.mask(&mut m).unwrap();
        assert!(!bit(&m, b'1' as usize) && bit(&m, b'.' as usize));
    }
}
