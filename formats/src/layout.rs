//! What a `.smask` artifact contains: its section kinds and its metadata.
//!
//! The container ([`crate::artifact`]) knows nothing of these; this module is the one
//! place where the compiler (writer) and the runtime (reader) agree on them. Large
//! arrays are their own sections so the runtime uses them in place; everything small
//! and structured is the bincode [`ArtifactMeta`].

use crate::artifact::{ArtifactError, ArtifactWriter, SectionKind};
use crate::Grammar;
use crate::{TrieRef, VocabRef};
use serde::{Deserialize, Serialize};

/// Metadata (bincode).
pub const META: SectionKind = SectionKind::from_tag(*b"META");
/// All terminal DFAs merged: transitions (`u32`, one per byte class and state).
pub const DFA_TRANS: SectionKind = SectionKind::from_tag(*b"DFAT");
/// Per byte: its byte class, the column of [`DFA_TRANS`] and [`CONF_NEXT`] it reads
/// (`u8`, 256).
pub const BYTE_CLASS: SectionKind = SectionKind::from_tag(*b"DFAC");
/// Merged DFA state flags (`u8`).
pub const DFA_FLAGS: SectionKind = SectionKind::from_tag(*b"DFAF");
/// Per terminal: start state in the merged table (`u32`).
pub const DFA_START: SectionKind = SectionKind::from_tag(*b"DFAS");
/// Per terminal + 1: first merged state of each terminal's DFA (`u32`), to rebuild
/// per-terminal DFAs for the reference path.
pub const DFA_BASE: SectionKind = SectionKind::from_tag(*b"DFAB");
/// Per terminal: lazy flag (`u8`).
pub const LAZY: SectionKind = SectionKind::from_tag(*b"LAZY");
/// Ignore terminals (`u32`).
pub const IGNORE: SectionKind = SectionKind::from_tag(*b"IGNR");
/// LR action cells, row displacement: per state, the slot of its terminal 0 (`u32`;
/// see [`crate::lr::Comb`]).
pub const LR_ACTION_BASE: SectionKind = SectionKind::from_tag(*b"LRAB");
/// LR action cells: per slot, the owning state or `u32::MAX` (`u32`).
pub const LR_ACTION_CHECK: SectionKind = SectionKind::from_tag(*b"LRAK");
/// LR action index per slot (`u32`, CSR offsets into [`LR_ACTIONS`], slots + 1). Format
/// versions up to 4 had a dense index per (state, terminal) under the tag `LRAI`.
pub const LR_ACTION_INDEX: SectionKind = SectionKind::from_tag(*b"LRAX");
/// LR actions (`u32`, encoded).
pub const LR_ACTIONS: SectionKind = SectionKind::from_tag(*b"LRAC");
/// LR gotos, row displacement: per state, the slot of its nonterminal 0 (`u32`).
pub const LR_GOTO_BASE: SectionKind = SectionKind::from_tag(*b"LRGB");
/// LR gotos: per slot, the owning state or `u32::MAX` (`u32`). Format versions up to 4
/// had a dense goto table under the tag `LRGO`.
pub const LR_GOTO_CHECK: SectionKind = SectionKind::from_tag(*b"LRGK");
/// LR gotos: per slot, the target state (`u32`).
pub const LR_GOTO_TARGET: SectionKind = SectionKind::from_tag(*b"LRGT");
/// Rule left-hand sides (`u32`).
pub const RULE_LHS: SectionKind = SectionKind::from_tag(*b"RLHS");
/// Rule lengths (`u32`).
pub const RULE_LEN: SectionKind = SectionKind::from_tag(*b"RLEN");
/// Per LR state: expected-terminal bitsets (`u64`).
pub const EXPECTED: SectionKind = SectionKind::from_tag(*b"EXPT");
/// Per LR state: expected class (`u32`).
pub const STATE_CLASS: SectionKind = SectionKind::from_tag(*b"LCSC");
/// Start configurations per (expected class, byte) (`u32`).
pub const CLASS_START: SectionKind = SectionKind::from_tag(*b"LCCS");
/// Start configurations of ignore lexemes per byte (`u32`).
pub const IGNORE_START: SectionKind = SectionKind::from_tag(*b"LCIS");
/// Configuration transitions (`u32`, one per byte class and configuration).
pub const CONF_NEXT: SectionKind = SectionKind::from_tag(*b"LCNX");
/// Configuration element index (`u32`, CSR).
pub const CONF_ELEM_INDEX: SectionKind = SectionKind::from_tag(*b"LCEI");
/// Configuration elements (`u32` merged DFA states).
pub const CONF_ELEMS: SectionKind = SectionKind::from_tag(*b"LCEL");
/// Configuration flags (`u8`).
pub const CONF_FLAGS: SectionKind = SectionKind::from_tag(*b"LCFL");
/// Terminal of each merged DFA state (`u32`).
pub const DFA_TERM: SectionKind = SectionKind::from_tag(*b"DFTM");
/// Per merged DFA state: row of the ignore follow sets, or `u32::MAX` (`u32`; empty
/// when no ignore lexeme limits what follows it).
pub const IGNORE_FOLLOW: SectionKind = SectionKind::from_tag(*b"IGFL");
/// Ignore follow sets: terminal bitsets, `expected_words` each (`u64`).
pub const FOLLOW_SETS: SectionKind = SectionKind::from_tag(*b"FLST");
/// Parser DWA: start state per (lexer configuration, ignore flag), then the start
/// of input (`u32`).
pub const PDWA_START: SectionKind = SectionKind::from_tag(*b"PDST");
/// Parser DWA: transition index per state (`u32`, CSR).
pub const PDWA_INDEX: SectionKind = SectionKind::from_tag(*b"PDIX");
/// Parser DWA: LR state of each keyed transition (`u32`).
pub const PDWA_KEYS: SectionKind = SectionKind::from_tag(*b"PDKY");
/// Parser DWA: target of each keyed transition (`u32`).
pub const PDWA_TARGETS: SectionKind = SectionKind::from_tag(*b"PDTG");
/// Parser DWA: weight id of each keyed transition (`u32`).
pub const PDWA_WEIGHTS: SectionKind = SectionKind::from_tag(*b"PDWT");
/// Parser DWA: default target per state (`u32`).
pub const PDWA_DEFAULT: SectionKind = SectionKind::from_tag(*b"PDDF");
/// Parser DWA: default weight per state (`u32`).
pub const PDWA_DEFAULT_WEIGHT: SectionKind = SectionKind::from_tag(*b"PDDW");
/// Token-set weights: index into [`WEIGHT_CHUNKS`] (`u32`, CSR).
pub const WEIGHT_INDEX: SectionKind = SectionKind::from_tag(*b"WTIX");
/// Token-set weights: chunk ids (`u32`).
pub const WEIGHT_CHUNKS: SectionKind = SectionKind::from_tag(*b"WTCK");
/// Token-set chunks: `(start word, length, offset)` triples (`u32`).
pub const CHUNK_TABLE: SectionKind = SectionKind::from_tag(*b"CKTB");
/// Token-set chunks: their mask words (`u32`).
pub const CHUNK_WORDS: SectionKind = SectionKind::from_tag(*b"CKWD");
/// Parser DWA forks: index (`u32`, CSR).
pub const FORK_INDEX: SectionKind = SectionKind::from_tag(*b"FKIX");
/// Parser DWA forks: the automaton states of each fork (`u32`).
pub const FORK_STATES: SectionKind = SectionKind::from_tag(*b"FKST");
/// Vocabulary: concatenated token bytes (`u8`).
pub const VOCAB_BYTES: SectionKind = SectionKind::from_tag(*b"VBYT");
/// Vocabulary: offsets (`u32`, `len + 1`).
pub const VOCAB_OFFSETS: SectionKind = SectionKind::from_tag(*b"VOFF");
/// Vocabulary: kinds (`u8`: 0 normal, 1 special, 2 unused).
pub const VOCAB_KINDS: SectionKind = SectionKind::from_tag(*b"VKND");
/// Token trie nodes ([`crate::TrieNode`]).
pub const TRIE_NODES: SectionKind = SectionKind::from_tag(*b"TRIN");
/// Token trie token ids (`u32`).
pub const TRIE_TOKENS: SectionKind = SectionKind::from_tag(*b"TRIT");

/// The sections of the vocabulary and its trie: in a self-contained artifact, absent
/// from one holding a grammar alone (loaded over a shared vocabulary).
pub const VOCAB_SECTIONS: [SectionKind; 5] = [
    VOCAB_BYTES,
    VOCAB_OFFSETS,
    VOCAB_KINDS,
    TRIE_NODES,
    TRIE_TOKENS,
];

/// Adds the [`VOCAB_SECTIONS`] of `vocab` and `trie` to `w` (kinds as
/// [`kind_code`]s): what `build_artifact` writes and what an engine sharing its
/// vocabulary adds back to save a self-contained file.
pub fn add_vocab_sections(
    w: &mut ArtifactWriter,
    vocab: &VocabRef<'_>,
    trie: &TrieRef<'_>,
) -> Result<(), ArtifactError> {
    let kinds: Vec<u8> = (0..vocab.len() as u32)
        .map(|id| crate::vocab::kind_to_code(vocab.kind(id)))
        .collect();
    w.add_pod(VOCAB_BYTES, vocab.bytes)?;
    w.add_pod(VOCAB_OFFSETS, vocab.offsets)?;
    w.add_pod(VOCAB_KINDS, &kinds)?;
    w.add_pod(TRIE_NODES, trie.nodes)?;
    w.add_pod(TRIE_TOKENS, trie.token_ids)
}

/// Small structured facts about an artifact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactMeta {
    /// Version of the stackmask that wrote it.
    pub stackmask_version: String,
    /// The grammar file name as given to the compiler.
    pub grammar_name: String,
    /// The tokenizer spec (`tiktoken:o200k_base`, `hf:…`, `bytes`).
    pub tokenizer: String,
    /// The normalized grammar, for the embedded reference path (`--check-reference`).
    pub grammar: Grammar,
    /// Number of token ids (the mask width in bits).
    pub vocab_len: u32,
    /// The end-of-sequence token id.
    pub eos: u32,
    /// LR columns: grammar terminals + end of input.
    pub num_terminals: u32,
    /// LR nonterminal columns.
    pub num_nonterminals: u32,
    /// Number of LR states.
    pub num_states: u32,
    /// Initial LR state.
    pub start_state: u32,
    /// Words per state in the expected-terminal sets.
    pub expected_words: u32,
    /// Byte classes: columns per state of the lexer tables.
    pub byte_classes: u32,
    /// Whether ignore lexemes may come first.
    pub allow_initial_skip: bool,
    /// Number of conflicting LR cells (GLR forks), for `inspect`.
    pub conflicts: u32,
    /// Number of interned lexer configurations, for `inspect`.
    pub lexer_configs: u32,
    /// Mask-path statistics, for `inspect`.
    pub mask_stats: MaskStats,
}

/// What the compiled mask path consists of (reported by `inspect` and `compile`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct MaskStats {
    /// Lexer boundaries (configuration and ignore flag, plus the start of input) a
    /// Terminal DWA was built for.
    pub boundaries: u32,
    /// Token classes summed over boundaries (tokens that behave alike from one).
    pub token_classes: u32,
    /// Terminal DWA states (nodes of the terminal-sequence tries) summed over boundaries.
    pub terminal_dwa_states: u32,
    /// Parser DWA states (the stop state included).
    pub parser_dwa_states: u32,
    /// Keyed Parser DWA transitions.
    pub parser_dwa_transitions: u32,
    /// Distinct token-set weights.
    pub weights: u32,
    /// Bytes of the weight words.
    pub weight_bytes: u64,
    /// Boundaries past the per-boundary budget, whose masks the runtime computes with
    /// the token-trie walk.
    pub fallback_boundaries: u32,
}

/// Token kind codes in [`VOCAB_KINDS`].
pub mod kind_code {
    /// [`crate::TokenKind::Normal`].
    pub const NORMAL: u8 = 0;
    /// [`crate::TokenKind::Special`].
    pub const SPECIAL: u8 = 1;
    /// [`crate::TokenKind::Unused`].
    pub const UNUSED: u8 = 2;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifact::{content_hash, FORMAT_VERSION};
    use crate::{Difference, Location, Nonterminal, Rule, Symbol, Terminal};

    /// An `ArtifactMeta` with every field set and every `Option` and enum variant
    /// present, so that any change to how `META` encodes changes its bytes.
    fn every_field() -> ArtifactMeta {
        let terminal = |name: &str, difference| Terminal {
            name: name.into(),
            regex: "[a-z]+".into(),
            lazy: true,
            priority: -2,
            defined_at: Some(Location { line: 3, col: 7 }),
            difference,
        };
        ArtifactMeta {
            stackmask_version: "0.1.0".into(),
            grammar_name: "g.lark".into(),
            tokenizer: "bytes".into(),
            grammar: Grammar {
                source_name: "g.lark".into(),
                terminals: vec![
                    terminal(
                        "KEY",
                        Some(Difference {
                            base: "\"[a-z]*\"".into(),
                            words: vec![b"\"a\"".to_vec()],
                        }),
                    ),
                    terminal("WS", None),
                ],
                nonterminals: vec![Nonterminal {
                    name: "start".into(),
                }],
                rules: vec![Rule {
                    lhs: 0,
                    rhs: vec![Symbol::Terminal(0), Symbol::Nonterminal(0)],
                }],
                start: 0,
                ignore: vec![1],
                allow_initial_skip: true,
            },
            vocab_len: 257,
            eos: 256,
            num_terminals: 3,
            num_nonterminals: 2,
            num_states: 5,
            start_state: 1,
            expected_words: 1,
            byte_classes: 4,
            allow_initial_skip: true,
            conflicts: 1,
            lexer_configs: 6,
            mask_stats: MaskStats {
                boundaries: 1,
                token_classes: 2,
                terminal_dwa_states: 3,
                parser_dwa_states: 4,
                parser_dwa_transitions: 5,
                weights: 6,
                weight_bytes: 7,
                fallback_boundaries: 8,
            },
        }
    }

    /// `META`'s encoding as of the format version it was last checked against: the
    /// version, and the xxh3 of [`every_field`] encoded as the writer encodes it.
    const PINNED: (u32, u64) = (8, 0xd27f_3714_5c2d_2214);

    /// A field added to `ArtifactMeta` or to the grammar IR inside it changes what
    /// `META` holds: artifacts written before it no longer decode (a bincode error,
    /// not "recompile") unless the format version moves with it. Format 7 shipped
    /// `Terminal::difference` without a bump; this catches the next such change.
    #[test]
    fn meta_encoding_changes_only_with_the_format_version() {
        let bytes = bincode::serde::encode_to_vec(every_field(), bincode::config::standard())
            .expect("encodes");
        let found = (FORMAT_VERSION, content_hash(&bytes));
        assert_eq!(
            found, PINNED,
            "META encodes differently from what format version {} pinned: if the encoding \
             changed, bump FORMAT_VERSION (formats/ARTIFACT.md, \"Versioning\") and pin \
             ({}, {:#x}) here",
            PINNED.0, found.0, found.1
        );
    }
}
