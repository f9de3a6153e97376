//! Arbitrary bytes as Lark grammar source, through the front end, the lexer and the
//! LR(1) construction under small limits (`stackmask_fuzz::LEXER_LIMITS`,
//! `MAX_LR_STATES`) and a time limit: an error is fine, a panic, an abort or a run past
//! the limits is a bug.

#![no_main]

use libfuzzer_sys::fuzz_target;
use stackmask_compiler::frontend;
use stackmask_compiler::lr::LrLimits;
use stackmask_compiler::pipeline;

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let deadline = stackmask_fuzz::deadline();
    let Ok(grammar) = frontend::parse_grammar(source, "fuzz.lark") else {
        return;
    };
    let Ok(lexed) = pipeline::lex_within_limits(grammar, &stackmask_fuzz::LEXER_LIMITS, &deadline)
    else {
        return;
    };
    let limits = LrLimits::states(stackmask_fuzz::MAX_LR_STATES);
    let _ = pipeline::compile_parser_within(&lexed, limits, &deadline);
});
