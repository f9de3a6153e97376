//! Engines sharing one vocabulary (`SharedVocab`, as Python's `Compiler` builds them):
//! an artifact of the grammar alone loads over the shared vocabulary, gives the masks
//! the self-contained artifact gives, saves as the very bytes `stackmask compile`
//! writes, and is refused — with the reason — over another vocabulary, with a
//! vocabulary of its own, or loaded without one.

mod common;
mod compiled_support;

use stackmask_compiler::budget::Deadline;
use stackmask_compiler::pipeline::{self, ArtifactForm, CompileOptions, PreparedTrie, VocabInputs};
use stackmask_compiler::vocab;
use stackmask_formats::artifact::AlignedBytes;
use stackmask_runtime::{Engine, EngineError, Matcher, SharedVocab};
use std::sync::Arc;

/// `grammars/json.lark` compiled for `spec` twice: self-contained, and the grammar alone
/// over a shared vocabulary; with that vocabulary.
fn json_both_ways(spec: &str) -> (Vec<u8>, Vec<u8>, Arc<SharedVocab>, vocab::Tokenizer) {
    let lexed = common::shipped_grammar("json");
    let source = std::fs::read_to_string(common::workspace().join("grammars/json.lark")).unwrap();
    let compiled = pipeline::compile_parser(&lexed, 100_000).unwrap();
    let tokenizer = vocab::load_tokenizer(spec).unwrap();
    // As Python's `Compiler` does: one trie, for compiling and for the engines.
    let trie = Arc::new(vocab::build_trie(&tokenizer.vocab));
    let shared = Arc::new(SharedVocab::new(tokenizer.vocab.clone(), trie.clone()).unwrap());
    let prepared = PreparedTrie::new(trie);
    assert!(
        std::ptr::eq(shared.trie().nodes, prepared.trie().view().nodes),
        "the shared vocabulary and the prepared trie hold one trie, not two"
    );
    let inputs = VocabInputs {
        spec,
        vocab: &tokenizer.vocab,
        trie: &prepared,
    };
    let options = CompileOptions::default();
    let deadline = Deadline::unlimited();
    let build = |form| {
        pipeline::build_artifact_for_vocab(
            &compiled,
            &source,
            "json",
            inputs,
            form,
            &options,
            &deadline,
            &|_| {},
        )
        .unwrap()
        .bytes
    };
    let whole = build(ArtifactForm::SelfContained);
    let alone = build(ArtifactForm::GrammarAlone {
        vocab_hash: shared.content_hash(),
    });
    (whole, alone, shared, tokenizer)
}

#[test]
fn a_grammar_over_a_shared_vocabulary_is_the_self_contained_grammar() {
    let (whole, alone, shared, tokenizer) = json_both_ways("tiktoken:o200k_base");
    assert!(
        alone.len() * 20 < whole.len(),
        "the grammar alone is {} bytes of {}",
        alone.len(),
        whole.len()
    );
    let sharing = Arc::new(
        Engine::from_bytes_sharing(AlignedBytes::from_slice(&alone), shared.clone()).unwrap(),
    );
    let own = Arc::new(Engine::from_bytes(AlignedBytes::from_slice(&whole)).unwrap());
    // Saved, it is the file `stackmask compile` writes, byte for byte.
    assert!(sharing.self_contained_bytes().unwrap()[..] == whole[..]);
    assert!(own.self_contained_bytes().unwrap()[..] == whole[..]);

    // The same masks along a document, and the reference path agrees.
    let doc = br#"{"name": "stackmask", "tags": ["a", "\u00e9"], "n": -1.5e3, "ok": [true, null]}"#;
    let tokens = tokenizer.encode(doc).unwrap();
    let (mut a, mut b) = (Matcher::new(sharing.clone()), Matcher::new(own));
    let mut reference =
        stackmask_runtime::reference::ReferenceMatcher::new(sharing.reference().unwrap());
    let words = sharing.mask_words();
    let (mut ma, mut mb, mut mr) = (vec![0u32; words], vec![0u32; words], vec![0u32; words]);
    for (i, &t) in tokens.iter().chain([&tokenizer.eos()]).enumerate() {
        a.fill_mask(&mut ma);
        b.fill_mask(&mut mb);
        reference.fill_mask(&mut mr);
        assert!(ma == mb && ma == mr, "step {i}");
        a.commit(t).unwrap();
        b.commit(t).unwrap();
        reference.commit(t).unwrap();
    }
    assert!(a.is_finished());
}

#[test]
fn a_grammar_alone_is_refused_where_it_does_not_fit() {
    let (whole, alone, shared, _) = json_both_ways("tiktoken:o200k_base");
    // Without a vocabulary: said so.
    let e = Engine::from_bytes(AlignedBytes::from_slice(&alone)).unwrap_err();
    assert!(e.to_string().contains("the grammar alone"), "{e}");
    // A self-contained artifact does not share one.
    let e = Engine::from_bytes_sharing(AlignedBytes::from_slice(&whole), shared).unwrap_err();
    assert!(e.to_string().contains("carries its own vocabulary"), "{e}");
    // Over another vocabulary: the mismatch.
    let other = vocab::load_tokenizer("tiktoken:cl100k_base").unwrap();
    let trie = vocab::build_trie(&other.vocab);
    let other = Arc::new(SharedVocab::new(other.vocab, trie).unwrap());
    let e = Engine::from_bytes_sharing(AlignedBytes::from_slice(&alone), other).unwrap_err();
    assert!(matches!(e, EngineError::VocabularyMismatch { .. }), "{e}");
}

#[test]
fn a_shared_vocabulary_checks_its_trie() {
    let tokenizer = vocab::load_tokenizer("bytes").unwrap();
    let trie = vocab::build_trie(&tokenizer.vocab);
    assert!(SharedVocab::new(tokenizer.vocab.clone(), trie.clone()).is_ok());
    let mut short = trie.clone();
    short.token_ids.pop();
    let mut deep = trie;
    deep.nodes[5].depth = 2;
    for bad in [short, deep] {
        match SharedVocab::new(tokenizer.vocab.clone(), bad) {
            Err(EngineError::Invalid(e)) => assert!(e.contains("trie"), "{e}"),
            other => panic!("{:?}", other.err()),
        }
    }
}
