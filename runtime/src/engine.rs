//! `Engine`: a loaded artifact, shared by every request (`Send + Sync`).
//!
//! The file is memory-mapped and its large arrays are used in place: loading parses
//! the container (every checksum), decodes the metadata, and validates every array
//! the runtime will index — DFA targets, LR actions and gotos, vocabulary offsets,
//! the trie's DFS structure — so that afterwards no index derived from the file can
//! be out of bounds. Cheap semantic checks go with it, where a wrong value would make
//! the parser wrong or slow rather than crash it: DFA liveness flags against the
//! transitions, rule lengths and left-hand sides against the grammar in the metadata,
//! the trie's tokens against the vocabulary's ordinary tokens, the Parser DWA's weights
//! against the tokens a mask may contain. A truncated, corrupted
//! or mismatched file is an [`EngineError`], never a panic.
//!
//! Engines of many grammars compiled for one tokenizer may share its vocabulary and
//! trie ([`SharedVocab`], validated once): their artifacts hold the grammar alone and
//! record the vocabulary's hash, which loading checks.

use crate::reference::ReferenceEngine;
use crate::shared_vocab::{maskable, validate_vocab_and_trie, SharedVocab};
use bytemuck::Pod;
use stackmask_formats::artifact::{
    AlignedBytes, Artifact, ArtifactError, ArtifactWriter, SectionKind,
};
use stackmask_formats::layout::{self, ArtifactMeta};
use stackmask_formats::lr::{validate_lr_grammar, CombRef, LrSlices};
use stackmask_formats::parser::split_dfas;
use stackmask_formats::{
    KindsRef, ParserDwaRef, TablesRef, TokenKind, TokenTrie, TrieNode, TrieRef, VocabRef,
    Vocabulary,
};
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// Why an artifact could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The file could not be opened or mapped.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The container is malformed (truncated, corrupted, wrong version, …).
    #[error("{0}")]
    Artifact(#[from] ArtifactError),
    /// The sections are well-formed but do not describe a consistent parser.
    #[error("invalid artifact contents: {0}")]
    Invalid(String),
    /// The artifact was compiled for another vocabulary.
    #[error("the artifact was compiled for another vocabulary (artifact {artifact:016x}, tokenizer {expected:016x}); recompile it for this tokenizer")]
    VocabularyMismatch {
        /// Hash stored in the artifact.
        artifact: u64,
        /// Hash of the vocabulary in use.
        expected: u64,
    },
}

/// Where the bytes live.
enum Backing {
    /// An mmap of the artifact file (page-aligned, so in-place casts are aligned).
    Mapped(memmap2::Mmap),
    /// A 64-byte-aligned copy (tests, `from_bytes`).
    Owned(AlignedBytes),
}

impl Backing {
    fn bytes(&self) -> &[u8] {
        match self {
            Backing::Mapped(m) => m,
            Backing::Owned(a) => a.as_bytes(),
        }
    }
}

/// The slices `commit` and `fill_mask` read on every call, made once at load:
/// re-slicing some forty arrays from the backing per call (a bounds and an alignment
/// check each) cost 18 ns of a mask and 38 ns of a commit — a fifth of a JSON commit.
#[derive(Clone, Copy)]
struct Views<'a> {
    tables: TablesRef<'a>,
    parser_dwa: ParserDwaRef<'a>,
}

self_cell::self_cell!(
    /// The artifact's bytes and the [`Views`] into them.
    struct Backed {
        owner: Backing,
        #[covariant]
        dependent: Views,
    }
);

/// Byte ranges of the in-place arrays within the backing, all validated at load.
#[derive(Debug, Clone)]
struct Ranges {
    dfa_trans: Range<usize>,
    byte_class: Range<usize>,
    dfa_flags: Range<usize>,
    dfa_start: Range<usize>,
    dfa_base: Range<usize>,
    lazy: Range<usize>,
    ignore: Range<usize>,
    action_base: Range<usize>,
    action_check: Range<usize>,
    action_index: Range<usize>,
    actions: Range<usize>,
    goto_base: Range<usize>,
    goto_check: Range<usize>,
    goto_target: Range<usize>,
    rule_lhs: Range<usize>,
    rule_len: Range<usize>,
    expected: Range<usize>,
    state_class: Range<usize>,
    class_start: Range<usize>,
    ignore_start: Range<usize>,
    conf_next: Range<usize>,
    conf_elem_index: Range<usize>,
    conf_elems: Range<usize>,
    conf_flags: Range<usize>,
    dfa_term: Range<usize>,
    ignore_follow: Range<usize>,
    follow_sets: Range<usize>,
    pdwa_start: Range<usize>,
    pdwa_index: Range<usize>,
    pdwa_keys: Range<usize>,
    pdwa_targets: Range<usize>,
    pdwa_weights: Range<usize>,
    pdwa_default: Range<usize>,
    pdwa_default_weight: Range<usize>,
    weight_index: Range<usize>,
    weight_chunks: Range<usize>,
    chunk_table: Range<usize>,
    chunk_words: Range<usize>,
    fork_index: Range<usize>,
    fork_states: Range<usize>,
}

/// Where an engine's vocabulary and trie are.
#[derive(Debug, Clone)]
enum VocabPart {
    /// In the artifact, at these validated byte ranges.
    InArtifact {
        bytes: Range<usize>,
        offsets: Range<usize>,
        kinds: Range<usize>,
        trie_nodes: Range<usize>,
        trie_tokens: Range<usize>,
    },
    /// Shared with other engines; the artifact holds the grammar alone.
    Shared(Arc<SharedVocab>),
}

/// A loaded artifact.
pub struct Engine {
    backed: Backed,
    meta: ArtifactMeta,
    grammar_hash: u64,
    vocab_hash: u64,
    ranges: Ranges,
    vocab: VocabPart,
    reference: OnceLock<Result<Arc<ReferenceEngine>, String>>,
    /// Sparse weights as (word, bits) pairs, made on first use (module `glr::sparse_weights`).
    sparse_weights: crate::glr::SparseWeights,
    /// Unions of dense weights and whole masks, kept on first use (module
    /// `glr::kept_unions`).
    kept_unions: crate::glr::KeptUnions,
    /// Buffers of dropped matchers, for the next ones (module `matcher_pool`).
    matcher_pool: crate::matcher_pool::MatcherPool,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("grammar", &self.meta.grammar_name)
            .field("tokenizer", &self.meta.tokenizer)
            .finish()
    }
}

impl Engine {
    /// Maps and validates an artifact file.
    pub fn load(path: impl AsRef<Path>) -> Result<Engine, EngineError> {
        let path = path.as_ref();
        let io = |source| EngineError::Io {
            path: path.display().to_string(),
            source,
        };
        // A FIFO, device or directory is refused before it is opened (opening a FIFO
        // blocks until a writer comes).
        let file = stackmask_formats::regular_file::open_regular(path).map_err(io)?;
        // SAFETY: memmap2 requires that the file not be modified or truncated while
        // mapped. Artifacts are written whole to a temporary file and renamed into place
        // (`ArtifactWriter::write_to`), never modified in place, so a reader's mapping
        // stays valid; a file swapped by rename keeps the old inode alive for us.
        // Everything read through the map is validated below before use.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        Self::from_backing(Backing::Mapped(map), None)
    }

    /// Validates an artifact held in memory.
    pub fn from_bytes(bytes: AlignedBytes) -> Result<Engine, EngineError> {
        Self::from_backing(Backing::Owned(bytes), None)
    }

    /// Validates an artifact of a grammar alone (no vocabulary or trie sections: see
    /// `stackmask_compiler::artifact::build_grammar_artifact`) compiled for `vocab`, whose
    /// hash it must record; the engine shares `vocab` with others.
    pub fn from_bytes_sharing(
        bytes: AlignedBytes,
        vocab: Arc<SharedVocab>,
    ) -> Result<Engine, EngineError> {
        Self::from_backing(Backing::Owned(bytes), Some(vocab))
    }

    fn from_backing(
        backing: Backing,
        shared: Option<Arc<SharedVocab>>,
    ) -> Result<Engine, EngineError> {
        let bytes = backing.bytes();
        let base = bytes.as_ptr() as usize;
        let artifact = Artifact::parse(bytes)?;
        let meta: ArtifactMeta = artifact.bincode(layout::META)?;
        fn range<'a, T: Pod>(
            a: &Artifact<'a>,
            base: usize,
            kind: SectionKind,
        ) -> Result<(Range<usize>, &'a [T]), EngineError> {
            let s: &[T] = a.pod(kind)?;
            let start = s.as_ptr() as usize - base;
            Ok((start..start + std::mem::size_of_val(s), s))
        }
        let (r_dfa_trans, _) = range::<u32>(&artifact, base, layout::DFA_TRANS)?;
        let (r_byte_class, _) = range::<u8>(&artifact, base, layout::BYTE_CLASS)?;
        let (r_dfa_flags, _) = range::<u8>(&artifact, base, layout::DFA_FLAGS)?;
        let (r_dfa_start, dfa_start) = range::<u32>(&artifact, base, layout::DFA_START)?;
        let (r_dfa_base, dfa_base) = range::<u32>(&artifact, base, layout::DFA_BASE)?;
        let (r_lazy, _) = range::<u8>(&artifact, base, layout::LAZY)?;
        let (r_ignore, _) = range::<u32>(&artifact, base, layout::IGNORE)?;
        let (r_action_base, _) = range::<u32>(&artifact, base, layout::LR_ACTION_BASE)?;
        let (r_action_check, _) = range::<u32>(&artifact, base, layout::LR_ACTION_CHECK)?;
        let (r_action_index, _) = range::<u32>(&artifact, base, layout::LR_ACTION_INDEX)?;
        let (r_actions, _) = range::<u32>(&artifact, base, layout::LR_ACTIONS)?;
        let (r_goto_base, _) = range::<u32>(&artifact, base, layout::LR_GOTO_BASE)?;
        let (r_goto_check, _) = range::<u32>(&artifact, base, layout::LR_GOTO_CHECK)?;
        let (r_goto_target, _) = range::<u32>(&artifact, base, layout::LR_GOTO_TARGET)?;
        let (r_rule_lhs, _) = range::<u32>(&artifact, base, layout::RULE_LHS)?;
        let (r_rule_len, _) = range::<u32>(&artifact, base, layout::RULE_LEN)?;
        let (r_expected, _) = range::<u64>(&artifact, base, layout::EXPECTED)?;
        let (r_state_class, _) = range::<u32>(&artifact, base, layout::STATE_CLASS)?;
        let (r_class_start, _) = range::<u32>(&artifact, base, layout::CLASS_START)?;
        let (r_ignore_start, _) = range::<u32>(&artifact, base, layout::IGNORE_START)?;
        let (r_conf_next, _) = range::<u32>(&artifact, base, layout::CONF_NEXT)?;
        let (r_conf_elem_index, _) = range::<u32>(&artifact, base, layout::CONF_ELEM_INDEX)?;
        let (r_conf_elems, _) = range::<u32>(&artifact, base, layout::CONF_ELEMS)?;
        let (r_conf_flags, _) = range::<u8>(&artifact, base, layout::CONF_FLAGS)?;
        let (r_dfa_term, _) = range::<u32>(&artifact, base, layout::DFA_TERM)?;
        let (r_ignore_follow, _) = range::<u32>(&artifact, base, layout::IGNORE_FOLLOW)?;
        let (r_follow_sets, _) = range::<u64>(&artifact, base, layout::FOLLOW_SETS)?;
        let (r_pdwa_start, _) = range::<u32>(&artifact, base, layout::PDWA_START)?;
        let (r_pdwa_index, _) = range::<u32>(&artifact, base, layout::PDWA_INDEX)?;
        let (r_pdwa_keys, _) = range::<u32>(&artifact, base, layout::PDWA_KEYS)?;
        let (r_pdwa_targets, _) = range::<u32>(&artifact, base, layout::PDWA_TARGETS)?;
        let (r_pdwa_weights, _) = range::<u32>(&artifact, base, layout::PDWA_WEIGHTS)?;
        let (r_pdwa_default, _) = range::<u32>(&artifact, base, layout::PDWA_DEFAULT)?;
        let (r_pdwa_default_weight, _) =
            range::<u32>(&artifact, base, layout::PDWA_DEFAULT_WEIGHT)?;
        let (r_weight_index, _) = range::<u32>(&artifact, base, layout::WEIGHT_INDEX)?;
        let (r_weight_chunks, _) = range::<u32>(&artifact, base, layout::WEIGHT_CHUNKS)?;
        let (r_chunk_table, _) = range::<u32>(&artifact, base, layout::CHUNK_TABLE)?;
        let (r_chunk_words, _) = range::<u32>(&artifact, base, layout::CHUNK_WORDS)?;
        let (r_fork_index, _) = range::<u32>(&artifact, base, layout::FORK_INDEX)?;
        let (r_fork_states, _) = range::<u32>(&artifact, base, layout::FORK_STATES)?;

        let ranges = Ranges {
            dfa_trans: r_dfa_trans,
            byte_class: r_byte_class,
            dfa_flags: r_dfa_flags,
            dfa_start: r_dfa_start,
            dfa_base: r_dfa_base,
            lazy: r_lazy,
            ignore: r_ignore,
            action_base: r_action_base,
            action_check: r_action_check,
            action_index: r_action_index,
            actions: r_actions,
            goto_base: r_goto_base,
            goto_check: r_goto_check,
            goto_target: r_goto_target,
            rule_lhs: r_rule_lhs,
            rule_len: r_rule_len,
            expected: r_expected,
            state_class: r_state_class,
            class_start: r_class_start,
            ignore_start: r_ignore_start,
            conf_next: r_conf_next,
            conf_elem_index: r_conf_elem_index,
            conf_elems: r_conf_elems,
            conf_flags: r_conf_flags,
            dfa_term: r_dfa_term,
            ignore_follow: r_ignore_follow,
            follow_sets: r_follow_sets,
            pdwa_start: r_pdwa_start,
            pdwa_index: r_pdwa_index,
            pdwa_keys: r_pdwa_keys,
            pdwa_targets: r_pdwa_targets,
            pdwa_weights: r_pdwa_weights,
            pdwa_default: r_pdwa_default,
            pdwa_default_weight: r_pdwa_default_weight,
            weight_index: r_weight_index,
            weight_chunks: r_weight_chunks,
            chunk_table: r_chunk_table,
            chunk_words: r_chunk_words,
            fork_index: r_fork_index,
            fork_states: r_fork_states,
        };
        let tables = tables_in(bytes, &ranges, &meta);
        let invalid = EngineError::Invalid;
        tables.validate().map_err(invalid)?;
        // (The LR state count comes from the metadata; `validate` checked every table
        // against it.)
        if tables.conf_flags.len() != meta.lexer_configs as usize {
            return Err(invalid(
                "configuration count disagrees with the metadata".into(),
            ));
        }
        if dfa_base.len() != dfa_start.len() + 1 {
            return Err(invalid(
                "dfa: per-terminal bases have the wrong length".into(),
            ));
        }
        let (grammar_hash, vocab_hash) = (artifact.grammar_hash(), artifact.vocab_hash());
        let (vocab_part, vocab, maskable) = match &shared {
            None => {
                if !layout::VOCAB_SECTIONS
                    .iter()
                    .any(|&k| artifact.has_section(k))
                {
                    return Err(invalid(
                        "the artifact holds the grammar alone, without its vocabulary: load it sharing a vocabulary (Engine::from_bytes_sharing), or save it with Engine::self_contained_bytes".into(),
                    ));
                }
                let (bytes, vocab_bytes) = range::<u8>(&artifact, base, layout::VOCAB_BYTES)?;
                let (offsets, vocab_offsets) =
                    range::<u32>(&artifact, base, layout::VOCAB_OFFSETS)?;
                let (kinds, vocab_kinds) = range::<u8>(&artifact, base, layout::VOCAB_KINDS)?;
                let (trie_nodes, nodes) = range::<TrieNode>(&artifact, base, layout::TRIE_NODES)?;
                let (trie_tokens, token_ids) = range::<u32>(&artifact, base, layout::TRIE_TOKENS)?;
                let vocab = VocabRef {
                    bytes: vocab_bytes,
                    offsets: vocab_offsets,
                    kinds: KindsRef::Codes(vocab_kinds),
                    eos: meta.eos,
                };
                validate_vocab_and_trie(&vocab, &TrieRef { nodes, token_ids }).map_err(invalid)?;
                let part = VocabPart::InArtifact {
                    bytes,
                    offsets,
                    kinds,
                    trie_nodes,
                    trie_tokens,
                };
                (part, vocab, std::borrow::Cow::Owned(maskable(&vocab)))
            }
            Some(s) => {
                if let Some(kind) = layout::VOCAB_SECTIONS
                    .iter()
                    .find(|&&k| artifact.has_section(k))
                {
                    return Err(invalid(format!(
                        "section {kind}: the artifact carries its own vocabulary; load it on its own, not sharing one"
                    )));
                }
                if vocab_hash != s.content_hash() {
                    return Err(EngineError::VocabularyMismatch {
                        artifact: vocab_hash,
                        expected: s.content_hash(),
                    });
                }
                let part = VocabPart::Shared(s.clone());
                (part, s.vocab(), std::borrow::Cow::Borrowed(s.maskable()))
            }
        };
        if vocab.len() != meta.vocab_len as usize || vocab.eos != meta.eos {
            return Err(invalid(
                "vocabulary size or end of sequence disagrees with the metadata".into(),
            ));
        }
        // The Parser DWA: every index, and weights that name only tokens a mask may
        // contain (ordinary tokens and EOS).
        let dwa = parser_dwa_in(bytes, &ranges);
        dwa.validate(tables.conf_flags.len(), tables.lr.num_states, &maskable)
            .map_err(invalid)?;
        // The rule tables against the grammar in the metadata: a reduction pops
        // `rule_len[r]` stack levels, so each length must be its rule's.
        validate_lr_grammar(tables.lr, &meta.grammar).map_err(invalid)?;
        let backed = Backed::new(backing, |b| {
            let bytes = b.bytes();
            Views {
                tables: tables_in(bytes, &ranges, &meta),
                parser_dwa: parser_dwa_in(bytes, &ranges),
            }
        });
        Ok(Engine {
            backed,
            meta,
            grammar_hash,
            vocab_hash,
            ranges,
            vocab: vocab_part,
            reference: OnceLock::new(),
            sparse_weights: Default::default(),
            kept_unions: Default::default(),
            matcher_pool: Default::default(),
        })
    }

    /// An array at a range validated at load. `cast_slice` cannot fail here: the
    /// range came from `Artifact::pod::<T>`, which checked alignment and length.
    #[inline]
    fn arr<T: Pod>(&self, r: &Range<usize>) -> &[T] {
        arr_in(self.backed.borrow_owner().bytes(), r)
    }

    /// The parser tables, in place.
    #[inline]
    pub fn tables(&self) -> TablesRef<'_> {
        self.backed.borrow_dependent().tables
    }

    /// The vocabulary, in place (in the artifact or the shared vocabulary).
    pub fn vocab(&self) -> VocabRef<'_> {
        match &self.vocab {
            VocabPart::InArtifact {
                bytes,
                offsets,
                kinds,
                ..
            } => VocabRef {
                bytes: self.arr(bytes),
                offsets: self.arr(offsets),
                kinds: KindsRef::Codes(self.arr(kinds)),
                eos: self.meta.eos,
            },
            VocabPart::Shared(s) => s.vocab(),
        }
    }

    /// The token trie, in place (in the artifact or the shared vocabulary).
    pub fn trie(&self) -> TrieRef<'_> {
        match &self.vocab {
            VocabPart::InArtifact {
                trie_nodes,
                trie_tokens,
                ..
            } => TrieRef {
                nodes: self.arr(trie_nodes),
                token_ids: self.arr(trie_tokens),
            },
            VocabPart::Shared(s) => s.trie(),
        }
    }

    /// The Parser DWA, in place.
    #[inline]
    pub fn parser_dwa(&self) -> ParserDwaRef<'_> {
        self.backed.borrow_dependent().parser_dwa
    }

    /// The Parser DWA's sparse weights as pairs, shared by this engine's matchers.
    #[inline]
    pub(crate) fn sparse_weights(&self) -> &crate::glr::SparseWeights {
        &self.sparse_weights
    }

    /// The unions of dense weights kept so far, shared by this engine's matchers.
    #[inline]
    pub(crate) fn kept_unions(&self) -> &crate::glr::KeptUnions {
        &self.kept_unions
    }

    /// Buffers of dropped matchers, kept for the next ones.
    #[inline]
    pub(crate) fn matcher_pool(&self) -> &crate::matcher_pool::MatcherPool {
        &self.matcher_pool
    }

    /// Sets of buffers of dropped matchers this engine keeps now, for
    /// [`crate::Matcher::new`] to take (at most [`crate::MAX_POOLED_MATCHERS`]).
    pub fn pooled_matchers(&self) -> usize {
        self.matcher_pool.len()
    }

    /// The metadata.
    pub fn meta(&self) -> &ArtifactMeta {
        &self.meta
    }

    /// Hash of the grammar source the artifact was compiled from.
    pub fn grammar_hash(&self) -> u64 {
        self.grammar_hash
    }

    /// Hash of the vocabulary the artifact was compiled for.
    pub fn vocab_hash(&self) -> u64 {
        self.vocab_hash
    }

    /// Errors unless the artifact was compiled for a vocabulary with this hash
    /// ([`Vocabulary::content_hash`]).
    pub fn expect_vocabulary(&self, vocab_hash: u64) -> Result<(), EngineError> {
        if vocab_hash != self.vocab_hash {
            return Err(EngineError::VocabularyMismatch {
                artifact: self.vocab_hash,
                expected: vocab_hash,
            });
        }
        Ok(())
    }

    /// Size of the artifact in bytes.
    pub fn artifact_len(&self) -> usize {
        self.backed.borrow_owner().bytes().len()
    }

    /// The artifact's bytes, as loaded: for an engine sharing its vocabulary, the
    /// grammar alone ([`Engine::self_contained_bytes`] is what a file needs).
    pub fn artifact_bytes(&self) -> &[u8] {
        self.backed.borrow_owner().bytes()
    }

    /// The artifact as a file holds it, loadable with [`Engine::load`]: the bytes as
    /// loaded, or for an engine sharing its vocabulary, its sections with the
    /// vocabulary's added.
    pub fn self_contained_bytes(&self) -> Result<std::borrow::Cow<'_, [u8]>, ArtifactError> {
        let VocabPart::Shared(s) = &self.vocab else {
            return Ok(std::borrow::Cow::Borrowed(
                self.backed.borrow_owner().bytes(),
            ));
        };
        let artifact = Artifact::parse(self.backed.borrow_owner().bytes())?;
        let mut w = ArtifactWriter::new(artifact.grammar_hash(), artifact.vocab_hash());
        for info in artifact.sections() {
            w.add_section(info.kind, artifact.section(info.kind)?, info.align)?;
        }
        layout::add_vocab_sections(&mut w, &s.vocab(), &s.trie())?;
        Ok(std::borrow::Cow::Owned(w.finish()))
    }

    /// Words in a mask.
    pub fn mask_words(&self) -> usize {
        (self.meta.vocab_len as usize).div_ceil(32)
    }

    /// The embedded reference path for this artifact's grammar and vocabulary (built
    /// on first use: it copies the vocabulary and trie and rebuilds per-terminal DFAs).
    pub fn reference(&self) -> Result<Arc<ReferenceEngine>, String> {
        self.reference
            .get_or_init(|| {
                let dfas = split_dfas(&self.tables(), self.arr(&self.ranges.dfa_base))?;
                let v = self.vocab();
                let entries = (0..v.len() as u32)
                    .map(|id| {
                        let kind = v.kind(id);
                        (kind != TokenKind::Unused).then(|| (v.token_bytes(id).to_vec(), kind))
                    })
                    .collect();
                let vocab = Vocabulary::from_entries(&self.meta.tokenizer, entries, v.eos);
                let t = self.trie();
                let trie = TokenTrie {
                    nodes: t.nodes.to_vec(),
                    token_ids: t.token_ids.to_vec(),
                };
                ReferenceEngine::new(&self.meta.grammar, dfas, vocab, trie)
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            })
            .clone()
    }
}

/// An array at a range of `bytes` validated at load (`Artifact::pod::<T>` checked its
/// alignment and length, so the cast cannot fail).
#[inline]
fn arr_in<'a, T: Pod>(bytes: &'a [u8], r: &Range<usize>) -> &'a [T] {
    bytemuck::cast_slice(&bytes[r.clone()])
}

/// The parser tables, in place in `bytes`.
fn tables_in<'a>(bytes: &'a [u8], r: &Ranges, meta: &ArtifactMeta) -> TablesRef<'a> {
    TablesRef {
        dfa_trans: arr_in(bytes, &r.dfa_trans),
        byte_class: arr_in(bytes, &r.byte_class),
        byte_classes: meta.byte_classes,
        dfa_flags: arr_in(bytes, &r.dfa_flags),
        dfa_start: arr_in(bytes, &r.dfa_start),
        lazy: arr_in(bytes, &r.lazy),
        ignore: arr_in(bytes, &r.ignore),
        allow_initial_skip: meta.allow_initial_skip,
        lr: LrSlices {
            num_states: meta.num_states,
            num_terminals: meta.num_terminals,
            num_nonterminals: meta.num_nonterminals,
            start_state: meta.start_state,
            action_comb: CombRef {
                base: arr_in(bytes, &r.action_base),
                check: arr_in(bytes, &r.action_check),
            },
            action_index: arr_in(bytes, &r.action_index),
            actions: arr_in(bytes, &r.actions),
            goto_comb: CombRef {
                base: arr_in(bytes, &r.goto_base),
                check: arr_in(bytes, &r.goto_check),
            },
            goto_target: arr_in(bytes, &r.goto_target),
            rule_lhs: arr_in(bytes, &r.rule_lhs),
            rule_len: arr_in(bytes, &r.rule_len),
        },
        expected: arr_in(bytes, &r.expected),
        expected_words: meta.expected_words,
        state_class: arr_in(bytes, &r.state_class),
        class_start: arr_in(bytes, &r.class_start),
        ignore_start: arr_in(bytes, &r.ignore_start),
        conf_next: arr_in(bytes, &r.conf_next),
        conf_elem_index: arr_in(bytes, &r.conf_elem_index),
        conf_elems: arr_in(bytes, &r.conf_elems),
        conf_flags: arr_in(bytes, &r.conf_flags),
        dfa_term: arr_in(bytes, &r.dfa_term),
        ignore_follow: arr_in(bytes, &r.ignore_follow),
        follow_sets: arr_in(bytes, &r.follow_sets),
    }
}

/// The Parser DWA, in place in `bytes`.
fn parser_dwa_in<'a>(bytes: &'a [u8], r: &Ranges) -> ParserDwaRef<'a> {
    ParserDwaRef {
        start: arr_in(bytes, &r.pdwa_start),
        index: arr_in(bytes, &r.pdwa_index),
        keys: arr_in(bytes, &r.pdwa_keys),
        targets: arr_in(bytes, &r.pdwa_targets),
        weights: arr_in(bytes, &r.pdwa_weights),
        default_target: arr_in(bytes, &r.pdwa_default),
        default_weight: arr_in(bytes, &r.pdwa_default_weight),
        weight_index: arr_in(bytes, &r.weight_index),
        weight_chunks: arr_in(bytes, &r.weight_chunks),
        chunk_table: arr_in(bytes, &r.chunk_table),
        chunk_words: arr_in(bytes, &r.chunk_words),
        fork_index: arr_in(bytes, &r.fork_index),
        fork_states: arr_in(bytes, &r.fork_states),
    }
}
