//! Arbitrary bytes as a JSON Schema, through the schema front end, the lexer and the
//! LR(1) construction under small limits and a time limit; the first byte picks the
//! options (lenient, whitespace and property-order policies, draft) so every policy is
//! exercised.

#![no_main]

use libfuzzer_sys::fuzz_target;
use stackmask_compiler::frontend::json_schema::{Draft, PropertyOrder, SchemaOptions, Whitespace};
use stackmask_compiler::lr::LrLimits;
use stackmask_compiler::pipeline;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, text)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let options = SchemaOptions {
        lenient: flags & 1 != 0,
        whitespace: if flags & 2 != 0 {
            Whitespace::Free
        } else {
            Whitespace::default()
        },
        order: if flags & 0x20 != 0 {
            PropertyOrder::Any
        } else if flags & 4 != 0 {
            PropertyOrder::Sorted
        } else {
            PropertyOrder::default()
        },
        draft: match (flags >> 3) & 3 {
            1 => Draft::Draft7,
            2 => Draft::Draft4,
            _ => Draft::default(),
        },
    };
    let deadline = stackmask_fuzz::deadline();
    let Ok((lexed, _warnings)) =
        pipeline::lex_schema_source_within(text, "fuzz.json", &options, &deadline)
    else {
        return;
    };
    let limits = LrLimits::states(stackmask_fuzz::MAX_LR_STATES);
    let _ = pipeline::compile_parser_within(&lexed, limits, &deadline);
});
