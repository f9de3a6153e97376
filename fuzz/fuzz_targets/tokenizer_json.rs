//! Arbitrary bytes as a Hugging Face `tokenizer.json`, through the vocabulary loader
//! (our reading of the JSON, the `tokenizers` library's, and the probe that checks they
//! agree): an error is fine, a panic or an abort is a bug. A tokenizer that loads must
//! then build its trie and encode a text without panicking.

#![no_main]

use libfuzzer_sys::fuzz_target;
use stackmask_compiler::vocab;

fuzz_target!(
    init: {
        // libfuzzer-sys's panic hook aborts on every panic, even one the loader catches
        // (it turns the `tokenizers` library's panics into errors, see
        // `vocab::library_call`). Back to the default hook: a panic that escapes the
        // loader still aborts, in libfuzzer-sys's wrapper around this function.
        drop(std::panic::take_hook());
    },
    |data: &[u8]| {
        let path = std::path::Path::new("fuzz/tokenizer.json");
        if let Ok(tokenizer) = vocab::load_hf_json(data, path, "hf:fuzz") {
            let _ = vocab::build_trie(&tokenizer.vocab);
            let _ = tokenizer.encode(b"{\"a\": [1, 2.5]} x\n");
            let _ = tokenizer.encode_exact("Grüße 🦙".as_bytes());
        }
    }
);
