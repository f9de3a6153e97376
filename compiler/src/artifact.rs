//! Artifact stage: everything compiled, written as one `.smask` file (layout in
//! `formats/ARTIFACT.md` and [`stackmask_formats::layout`]).

use crate::parser_dwa::ParserDwaStats;
use crate::pipeline::CompiledParser;
use stackmask_formats::artifact::{content_hash, ArtifactError, ArtifactWriter};
use stackmask_formats::layout::MaskStats;
use stackmask_formats::layout::{self, ArtifactMeta};
use stackmask_formats::{ParserDwa, TokenTrie, Vocabulary};

/// Writes artifact bytes through a temporary file and a rename, so readers (which map
/// the file) never see half a file. The error names the file.
pub fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> Result<(), String> {
    stackmask_formats::regular_file::write_atomically(path, bytes)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// What goes into an artifact besides the compiled tables.
pub struct ArtifactInputs<'a> {
    /// The grammar source text (hashed into the header).
    pub grammar_source: &'a str,
    /// The grammar file name.
    pub grammar_name: &'a str,
    /// The tokenizer spec.
    pub tokenizer: &'a str,
    /// The vocabulary.
    pub vocab: &'a Vocabulary,
    /// Its trie.
    pub trie: &'a TokenTrie,
    /// The Parser DWA.
    pub parser_dwa: &'a ParserDwa,
    /// Its sizes.
    pub dwa_stats: ParserDwaStats,
}

/// The mask-path statistics recorded in an artifact's metadata.
pub fn mask_stats(stats: &ParserDwaStats, dwa: &ParserDwa) -> MaskStats {
    MaskStats {
        boundaries: stats.boundaries as u32,
        token_classes: stats.token_classes as u32,
        terminal_dwa_states: stats.terminal_dwa_states as u32,
        parser_dwa_states: dwa.num_states() as u32,
        parser_dwa_transitions: dwa.keys.len() as u32,
        weights: dwa.num_weights() as u32,
        weight_bytes: dwa.weight_bytes() as u64,
        fallback_boundaries: stats.fallback_boundaries as u32,
    }
}

/// Serializes a compiled grammar and its vocabulary into artifact bytes.
pub fn build_artifact(
    compiled: &CompiledParser,
    inputs: &ArtifactInputs<'_>,
) -> Result<Vec<u8>, ArtifactError> {
    let mut w = grammar_sections(compiled, inputs, inputs.vocab.content_hash())?;
    layout::add_vocab_sections(&mut w, &inputs.vocab.view(), &inputs.trie.view())?;
    Ok(w.finish())
}

/// Serializes a compiled grammar without its vocabulary and trie, for an engine that
/// shares them (`stackmask_runtime::Engine::from_bytes_sharing`): `vocab_hash` is the
/// vocabulary's content hash, computed once for all its grammars. Such bytes are not
/// a file [`stackmask_runtime::Engine::load`] reads (the engine's
/// `self_contained_bytes` are).
pub fn build_grammar_artifact(
    compiled: &CompiledParser,
    inputs: &ArtifactInputs<'_>,
    vocab_hash: u64,
) -> Result<Vec<u8>, ArtifactError> {
    Ok(grammar_sections(compiled, inputs, vocab_hash)?.finish())
}

/// Every section but the vocabulary's and the trie's.
fn grammar_sections(
    compiled: &CompiledParser,
    inputs: &ArtifactInputs<'_>,
    vocab_hash: u64,
) -> Result<ArtifactWriter, ArtifactError> {
    let t = &compiled.tables;
    let lr = &t.lr;
    let meta = ArtifactMeta {
        stackmask_version: env!("CARGO_PKG_VERSION").to_string(),
        grammar_name: inputs.grammar_name.to_string(),
        tokenizer: inputs.tokenizer.to_string(),
        grammar: compiled.lexed.grammar.clone(),
        vocab_len: inputs.vocab.len() as u32,
        eos: inputs.vocab.eos,
        num_terminals: lr.num_terminals,
        num_nonterminals: lr.num_nonterminals,
        num_states: lr.num_states,
        start_state: lr.start_state,
        expected_words: t.expected_words,
        byte_classes: t.byte_classes,
        allow_initial_skip: t.allow_initial_skip,
        conflicts: compiled.automaton.conflicts.len() as u32,
        lexer_configs: t.configs.flags.len() as u32,
        mask_stats: mask_stats(&inputs.dwa_stats, inputs.parser_dwa),
    };
    let mut w = ArtifactWriter::new(content_hash(inputs.grammar_source.as_bytes()), vocab_hash);
    w.add_bincode(layout::META, &meta)?;
    w.add_pod(layout::DFA_TRANS, &t.dfa_trans)?;
    w.add_pod(layout::BYTE_CLASS, &t.byte_class)?;
    w.add_pod(layout::DFA_FLAGS, &t.dfa_flags)?;
    w.add_pod(layout::DFA_START, &t.dfa_start)?;
    w.add_pod(layout::DFA_BASE, &t.dfa_base)?;
    w.add_pod(layout::LAZY, &t.lazy)?;
    w.add_pod(layout::IGNORE, &t.ignore)?;
    w.add_pod(layout::LR_ACTION_BASE, &lr.action_comb.base)?;
    w.add_pod(layout::LR_ACTION_CHECK, &lr.action_comb.check)?;
    w.add_pod(layout::LR_ACTION_INDEX, &lr.action_index)?;
    w.add_pod(layout::LR_ACTIONS, &lr.actions)?;
    w.add_pod(layout::LR_GOTO_BASE, &lr.goto_comb.base)?;
    w.add_pod(layout::LR_GOTO_CHECK, &lr.goto_comb.check)?;
    w.add_pod(layout::LR_GOTO_TARGET, &lr.goto_target)?;
    w.add_pod(layout::RULE_LHS, &lr.rule_lhs)?;
    w.add_pod(layout::RULE_LEN, &lr.rule_len)?;
    w.add_pod(layout::EXPECTED, &t.expected)?;
    let c = &t.configs;
    w.add_pod(layout::STATE_CLASS, &c.state_class)?;
    w.add_pod(layout::CLASS_START, &c.class_start)?;
    w.add_pod(layout::IGNORE_START, &c.ignore_start)?;
    w.add_pod(layout::CONF_NEXT, &c.next)?;
    w.add_pod(layout::CONF_ELEM_INDEX, &c.elem_index)?;
    w.add_pod(layout::CONF_ELEMS, &c.elems)?;
    w.add_pod(layout::CONF_FLAGS, &c.flags)?;
    w.add_pod(layout::DFA_TERM, &c.dfa_term)?;
    w.add_pod(layout::IGNORE_FOLLOW, &t.ignore_follow)?;
    w.add_pod(layout::FOLLOW_SETS, &t.follow_sets)?;
    let d = inputs.parser_dwa;
    w.add_pod(layout::PDWA_START, &d.start)?;
    w.add_pod(layout::PDWA_INDEX, &d.index)?;
    w.add_pod(layout::PDWA_KEYS, &d.keys)?;
    w.add_pod(layout::PDWA_TARGETS, &d.targets)?;
    w.add_pod(layout::PDWA_WEIGHTS, &d.weights)?;
    w.add_pod(layout::PDWA_DEFAULT, &d.default_target)?;
    w.add_pod(layout::PDWA_DEFAULT_WEIGHT, &d.default_weight)?;
    w.add_pod(layout::WEIGHT_INDEX, &d.weight_index)?;
    w.add_pod(layout::WEIGHT_CHUNKS, &d.weight_chunks)?;
    w.add_pod(layout::CHUNK_TABLE, &d.chunk_table)?;
    w.add_pod(layout::CHUNK_WORDS, &d.chunk_words)?;
    w.add_pod(layout::FORK_INDEX, &d.fork_index)?;
    w.add_pod(layout::FORK_STATES, &d.fork_states)?;
    Ok(w)
}
