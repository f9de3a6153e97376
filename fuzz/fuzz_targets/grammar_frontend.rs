//! Arbitrary bytes as Lark grammar source, through the front end, the lexer and the
//! LR(1) construction under small limits: an error is fine, a panic, an abort or a run
//! past the limits is a bug.

#![no_main]

use libfuzzer_sys::fuzz_target;
use stackmask_compiler::pipeline;

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(lexed) = pipeline::lex_grammar_source(source, "fuzz.lark") else {
        return;
    };
    let _ = pipeline::compile_parser(&lexed, stackmask_fuzz::MAX_LR_STATES);
});
