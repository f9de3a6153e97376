//! Arbitrary bytes as a JSON Schema, through the schema front end, the lexer and the
//! LR(1) construction under small limits and a time limit; the first byte picks the
//! options (lenient, whitespace and property-order policies, draft) so every policy is
//! exercised. Every terminal the front end gives as a difference (property names other
//! than the declared ones) is checked against its regex.

#![no_main]

use libfuzzer_sys::fuzz_target;
use stackmask_compiler::frontend::json_schema::{
    schema_text_to_grammar, Draft, PropertyOrder, SchemaOptions, Whitespace,
};
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
    let Ok(schema) = schema_text_to_grammar(text, "fuzz.json", &options) else {
        return;
    };
    let Ok(lexed) =
        pipeline::lex_within_limits(schema.grammar, &stackmask_fuzz::LEXER_LIMITS, &deadline)
    else {
        return;
    };
    // A terminal given as a difference must have its regex's table.
    for t in &lexed.grammar.terminals {
        if let Some(d) = &t.difference {
            match stackmask_compiler::lexer::difference_is_regex(&t.regex, d) {
                Ok(same) => assert!(same, "terminal {}: its difference is not its regex", t.name),
                // A limit (the regex past the state limit): the lexer above refused it too.
                Err(_) => {}
            }
        }
    }
    let limits = LrLimits::states(stackmask_fuzz::MAX_LR_STATES);
    let _ = pipeline::compile_parser_within(&lexed, limits, &deadline);
});
