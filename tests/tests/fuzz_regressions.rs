//! Defects found by the fuzz targets (`fuzz/`, README "Fuzzing"), one test each, named
//! for the defect and built from the minimized input the fuzzer wrote.

mod compiled_support;

use compiled_support::{cached, engine};
use stackmask_runtime::{MatchError, Matcher};

/// `matcher_ops`: after EOS nothing can be committed (`commit_bytes` says `Finished`),
/// yet `accepts_bytes` answered from the parse as if the sequence had not ended, so it
/// said yes to bytes `commit_bytes` then refused: `[]`, and `+1` after `1`.
#[test]
fn accepts_bytes_is_false_after_eos() {
    let built = cached("expr", "bytes");
    let mut m = Matcher::new(engine(&built.bytes));
    m.commit_bytes(b"1").unwrap();
    m.commit(built.tokenizer.vocab.eos).unwrap();
    assert!(matches!(m.commit_bytes(b""), Err(MatchError::Finished)));
    assert!(matches!(m.commit_bytes(b"+1"), Err(MatchError::Finished)));
    assert!(!m.accepts_bytes(b""), "accepts_bytes([]) after EOS");
    assert!(!m.accepts_bytes(b"+1"), "accepts_bytes(\"+1\") after EOS");
}
