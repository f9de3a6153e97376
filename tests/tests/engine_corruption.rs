//! `Engine` on damaged artifacts: a truncated, bit-flipped, mislabelled or internally
//! inconsistent file is an `EngineError` — never a panic, and never an engine whose
//! matcher panics later (DESIGN.md §2 "Artifact": "Loading validates every index and
//! length: a truncated, corrupted or mismatched file is a clear error, never a panic or
//! undefined behaviour").
//!
//! Real artifacts are built in process (`json.lark` × `bytes`, and `json.lark` ×
//! `tiktoken:o200k_base` for the tests that need a real vocabulary). Container damage
//! is checked against the error `formats/ARTIFACT.md` prescribes for it. Semantic
//! damage is made by rebuilding a container with `ArtifactWriter` from the original
//! sections with one array altered, so the checksums are valid and the damage reaches
//! `Engine`'s own validation.

mod common;
mod compiled_support;

use common::Rng;
use compiled_support::{
    cached, get_u32, guarded, load, no_panic, put_u32, temp_dir, Outcome, Parts, TRIE_DEPTH,
    TRIE_FIRST, TRIE_NODE_SIZE, TRIE_NUM, TRIE_SUBTREE,
};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use stackmask_formats::artifact::{
    content_hash, AlignedBytes, Artifact, ArtifactError, SectionKind, FORMAT_VERSION,
};
use stackmask_formats::layout;
use stackmask_runtime::{Engine, EngineError, Matcher};
use std::sync::Arc;
use std::time::Duration;

const HEADER: usize = 64;
const ENTRY: usize = 32;

fn json_bytes() -> &'static [u8] {
    &cached("json", "bytes").bytes
}

fn json_o200k() -> &'static [u8] {
    &cached("json", "tiktoken:o200k_base").bytes
}

/// Loads `bytes` and returns the error, failing on success or on a panic.
fn load_err(bytes: &[u8], what: &str) -> EngineError {
    match no_panic(|| load(bytes)) {
        Err(p) => panic!("{what}: Engine::from_bytes panicked: {p}"),
        Ok(Ok(_)) => panic!("{what}: a damaged artifact loaded"),
        Ok(Err(e)) => e,
    }
}

/// An artifact of format 7 as `stackmask compile grammars/expr.lark --tokenizer bytes`
/// wrote it before `META`'s grammar gained `Terminal::difference` (which format 8
/// marks): it must be refused as an older format, not fail in bincode's decoder.
#[test]
fn a_format_7_artifact_is_refused_with_recompile() {
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/expr_bytes_format7.smask"
    ))
    .expect("the fixture");
    match load_err(&bytes, "format 7") {
        e @ EngineError::Artifact(ArtifactError::UnsupportedVersion {
            found: 7,
            supported,
        }) => {
            assert_eq!(supported, FORMAT_VERSION);
            assert!(e.to_string().contains("recompile"), "{e}");
        }
        e => panic!("format 7 artifact: {e:?}"),
    }
}

/// Re-seals the header: recomputes the header checksum (xxh3-64 of bytes 0..56 and the
/// section table, ARTIFACT.md) after a header field was edited on purpose.
fn reseal(bytes: &mut [u8]) {
    let count = u32::from_le_bytes(bytes[20..24].try_into().unwrap()) as usize;
    let table_end = HEADER + ENTRY * count;
    let mut covered = bytes[..56].to_vec();
    covered.extend_from_slice(&bytes[HEADER..table_end]);
    let sum = content_hash(&covered);
    bytes[56..64].copy_from_slice(&sum.to_le_bytes());
}

/// A sample JSON document with a bit of everything, as bytes.
const DOC: &[u8] = br#" {"a": [1, -2.5e3, true, false, null], "b\u00e9": {"c": "d\n"}, "e": []} "#;

/// An expression for `expr.lark` (ambiguous, with `%ignore WS`).
const EXPR_DOC: &[u8] = b"1 + 2 * (3 - -4) / 5 - 6";

/// Drives a matcher over a loaded engine: commits bytes (a JSON document, then random
/// bytes), masks, acceptance, rollback, random tokens. Used on engines whose tables
/// passed validation but may still be strange; it must not panic.
fn exercise(engine: Arc<Engine>, doc: &[u8], seed: u64) {
    let mut rng = Rng(seed | 1);
    let words = engine.mask_words();
    let vocab_len = engine.meta().vocab_len;
    let mut mask = vec![0u32; words];
    let mut m = Matcher::new(engine.clone());
    m.fill_mask(&mut mask);
    let _ = m.is_accepting();
    for chunk in doc.chunks(7) {
        if m.commit_bytes(chunk).is_err() {
            break;
        }
    }
    let _ = m.is_accepting();
    m.fill_mask(&mut mask);
    let _ = m.rollback(2);
    m.fill_mask(&mut mask);
    m.reset();
    for _ in 0..40 {
        const ALPHABET: &[u8] = b"{}[],:\" 0123456789.eE+-*/()truefalsn\\\n";
        let b = [ALPHABET[rng.below(ALPHABET.len())]];
        let _ = m.commit_bytes(&b);
        if rng.chance(20) {
            let _ = m.is_accepting();
        }
    }
    m.fill_mask(&mut mask);
    let _ = m.accepts_bytes(b"1");
    let mut c = m.clone();
    for _ in 0..20 {
        let t = rng.below(vocab_len as usize + 2) as u32;
        let _ = c.commit(t);
    }
    c.fill_mask(&mut mask);
    let _ = c.rollback(5);
    let _ = c.commit(engine.meta().eos);
    c.fill_mask(&mut mask);
}

// ---------------------------------------------------------------------------------------
// Container damage.

#[test]
fn valid_artifacts_load() {
    for bytes in [json_bytes(), json_o200k()] {
        let e = load(bytes).expect("a valid artifact loads");
        assert_eq!(e.artifact_len(), bytes.len());
    }
}

#[test]
fn truncation_at_section_boundaries_and_random_positions_is_an_error() {
    let bytes = json_bytes();
    let len = bytes.len();
    let a = Artifact::parse(bytes).unwrap();
    let table_end = HEADER + ENTRY * a.sections().len();
    let mut cuts = vec![
        0,
        1,
        7,
        8,
        11,
        12,
        24,
        63,
        64,
        65,
        table_end - 1,
        table_end,
        len - 1,
    ];
    for s in a.sections() {
        let (start, end) = (s.offset as usize, (s.offset + s.len) as usize);
        for c in [
            start - 1,
            start,
            start + 1,
            end - 1,
            end,
            end + 1,
            end.next_multiple_of(64) - 1,
        ] {
            cuts.push(c);
        }
    }
    let mut rng = Rng(0x7c0ffee);
    cuts.extend((0..200).map(|_| rng.below(len)));
    cuts.retain(|&c| c < len);
    cuts.sort_unstable();
    cuts.dedup();
    for cut in cuts {
        let e = load_err(&bytes[..cut], &format!("cut at {cut} of {len}"));
        // ARTIFACT.md: shorter than the header → TooShort (the magic and version checks
        // pass on a prefix of a valid header); otherwise the recorded length differs.
        if cut < HEADER {
            assert!(
                matches!(e, EngineError::Artifact(ArtifactError::TooShort { len: l, needed: 64 }) if l == cut),
                "cut at {cut}: {e:?}"
            );
        } else {
            assert!(
                matches!(e, EngineError::Artifact(ArtifactError::LengthMismatch { recorded, actual })
                    if recorded == len as u64 && actual == cut as u64),
                "cut at {cut}: {e:?}"
            );
        }
    }
}

#[test]
fn truncating_the_o200k_artifact_at_section_boundaries_is_an_error() {
    let bytes = json_o200k();
    let len = bytes.len();
    let a = Artifact::parse(bytes).unwrap();
    let mut cuts = vec![0, 63, 64];
    for s in a.sections() {
        cuts.push(s.offset as usize);
        cuts.push((s.offset + s.len) as usize);
        cuts.push((s.offset + s.len / 2) as usize);
    }
    cuts.retain(|&c| c < len);
    cuts.sort_unstable();
    cuts.dedup();
    for cut in cuts {
        let e = load_err(&bytes[..cut], &format!("o200k cut at {cut} of {len}"));
        assert!(
            matches!(
                e,
                EngineError::Artifact(
                    ArtifactError::TooShort { .. } | ArtifactError::LengthMismatch { .. }
                )
            ),
            "cut at {cut}: {e:?}"
        );
    }
}

#[test]
fn single_bit_flips_anywhere_are_errors() {
    let bytes = json_bytes();
    let a = Artifact::parse(bytes).unwrap();
    let sections: Vec<_> = a.sections().to_vec();
    let table_end = HEADER + ENTRY * sections.len();
    let mut rng = Rng(0xb17_f11b);
    // Every bit of the header and the section table; ~120 bits of every payload (first
    // and last byte included); ~300 bits of padding.
    let mut bits: Vec<usize> = (0..table_end * 8).collect();
    let mut padding = Vec::new();
    let mut cursor = table_end;
    let mut by_offset = sections.clone();
    by_offset.sort_by_key(|s| s.offset);
    for s in &by_offset {
        let (start, end) = (s.offset as usize, (s.offset + s.len) as usize);
        padding.extend(cursor..start);
        cursor = end;
        if end > start {
            bits.push(start * 8 + rng.below(8));
            bits.push((end - 1) * 8 + rng.below(8));
            for _ in 0..120 {
                bits.push(start * 8 + rng.below((end - start) * 8));
            }
        }
    }
    padding.extend(cursor..bytes.len());
    for _ in 0..300.min(padding.len()) {
        bits.push(padding[rng.below(padding.len())] * 8 + rng.below(8));
    }
    let mut copy = AlignedBytes::from_slice(bytes);
    let mut checked = 0;
    for bit in bits {
        let (at, mask) = (bit / 8, 1u8 << (bit % 8));
        copy.as_mut_bytes()[at] ^= mask;
        let result = no_panic(|| Engine::from_bytes(copy.clone()));
        copy.as_mut_bytes()[at] ^= mask;
        let e = match result {
            Err(p) => panic!("bit {bit} (byte {at}): panicked: {p}"),
            Ok(Ok(_)) => panic!("bit {bit} (byte {at}): a flipped artifact loaded"),
            Ok(Err(e)) => e,
        };
        let EngineError::Artifact(ae) = &e else {
            panic!("bit {bit} (byte {at}): expected a container error, got {e:?}");
        };
        let in_section = sections
            .iter()
            .find(|s| (s.offset as usize..(s.offset + s.len) as usize).contains(&at));
        // What ARTIFACT.md's validation order says each region's damage is reported as.
        let ok = match at {
            0..8 => matches!(ae, ArtifactError::BadMagic { .. }),
            8..12 => matches!(
                ae,
                ArtifactError::UnsupportedVersion {
                    supported: FORMAT_VERSION,
                    ..
                }
            ),
            12..16 => matches!(ae, ArtifactError::BadHeaderLength { .. }),
            24..32 => matches!(ae, ArtifactError::LengthMismatch { .. }),
            20..24 => matches!(
                ae,
                ArtifactError::TableOutOfBounds { .. } | ArtifactError::HeaderChecksum { .. }
            ),
            _ if at < table_end => matches!(ae, ArtifactError::HeaderChecksum { .. }),
            _ => match in_section {
                Some(s) => {
                    matches!(ae, ArtifactError::SectionChecksum { kind, .. } if *kind == s.kind)
                }
                None => {
                    matches!(ae, ArtifactError::NonZeroPadding { offset, .. } if *offset == at as u64)
                }
            },
        };
        assert!(ok, "bit {bit} (byte {at}): unexpected error {ae:?}");
        checked += 1;
    }
    assert!(checked > 3000, "only {checked} flips");
}

#[test]
fn wrong_magic_and_version_are_specific_errors() {
    let bytes = json_bytes();
    for magic in [
        *b"SMASK\0\n\n",
        *b"\x7fELF\x02\x01\x01\0",
        [0u8; 8],
        *b"smask\0\r\n",
    ] {
        let mut b = bytes.to_vec();
        b[..8].copy_from_slice(&magic);
        match load_err(&b, "bad magic") {
            EngineError::Artifact(ArtifactError::BadMagic { found }) => assert_eq!(found, magic),
            e => panic!("magic {magic:?}: {e:?}"),
        }
    }
    // Every older version is a real older artifact (no Parser DWA; no ignore follow
    // sets; dense LR tables; lexer columns per byte; no terminal differences in META):
    // refused, with "recompile".
    for version in (0..FORMAT_VERSION).chain([FORMAT_VERSION + 1, u32::MAX]) {
        for resealed in [false, true] {
            let mut b = bytes.to_vec();
            b[8..12].copy_from_slice(&version.to_le_bytes());
            if resealed {
                reseal(&mut b);
            }
            match load_err(&b, "bad version") {
                e @ EngineError::Artifact(ArtifactError::UnsupportedVersion {
                    found,
                    supported,
                }) => {
                    assert_eq!((found, supported), (version, FORMAT_VERSION));
                    assert!(e.to_string().contains("recompile"), "{e}");
                }
                e => panic!("version {version}: {e:?}"),
            }
        }
    }
    // A file that is not an artifact at all, of a few lengths.
    for text in [&b""[..], b"{}", b"SMASK", &[b'x'; 200][..]] {
        let e = load_err(text, "not an artifact");
        assert!(matches!(e, EngineError::Artifact(_)), "{e:?}");
    }
    // Header fields that must be zero, with a valid header checksum.
    let mut b = bytes.to_vec();
    b[16..20].copy_from_slice(&1u32.to_le_bytes());
    reseal(&mut b);
    assert!(matches!(
        load_err(&b, "flags"),
        EngineError::Artifact(ArtifactError::UnknownFlags { flags: 1 })
    ));
    let mut b = bytes.to_vec();
    b[48..56].copy_from_slice(&7u64.to_le_bytes());
    reseal(&mut b);
    assert!(matches!(
        load_err(&b, "reserved"),
        EngineError::Artifact(ArtifactError::ReservedNotZero { value: 7 })
    ));
}

#[test]
fn vocabulary_mismatch_is_reported() {
    let bytes_hash = cached("json", "bytes").tokenizer.vocab.content_hash();
    let o200k_hash = cached("json", "tiktoken:o200k_base")
        .tokenizer
        .vocab
        .content_hash();
    assert_ne!(bytes_hash, o200k_hash);
    let small = load(json_bytes()).unwrap();
    let big = load(json_o200k()).unwrap();
    assert_eq!(small.vocab_hash(), bytes_hash);
    assert_eq!(big.vocab_hash(), o200k_hash);
    small.expect_vocabulary(bytes_hash).unwrap();
    big.expect_vocabulary(o200k_hash).unwrap();
    match small.expect_vocabulary(o200k_hash) {
        Err(EngineError::VocabularyMismatch { artifact, expected }) => {
            assert_eq!((artifact, expected), (bytes_hash, o200k_hash));
        }
        other => panic!("{other:?}"),
    }
    match big.expect_vocabulary(bytes_hash) {
        Err(EngineError::VocabularyMismatch { artifact, expected }) => {
            assert_eq!((artifact, expected), (o200k_hash, bytes_hash));
        }
        other => panic!("{other:?}"),
    }
    // The grammar hash is the content hash of the grammar source.
    assert_eq!(
        small.grammar_hash(),
        content_hash(cached("json", "bytes").source.as_bytes())
    );
    assert_eq!(small.grammar_hash(), big.grammar_hash());
}

// ---------------------------------------------------------------------------------------
// Semantic damage behind valid checksums.

/// What a crafted corruption must lead to.
enum Expect {
    /// `EngineError::Invalid`.
    Invalid,
    /// A container-level error matching the predicate.
    Container(fn(&ArtifactError) -> bool),
    /// Either an error, or an engine whose matchers (and reference path) work without
    /// panicking or hanging: the damage is harmless or merely changes the language.
    ErrOrHarmless,
}

struct Case {
    name: &'static str,
    edit: Box<dyn Fn(&mut Parts)>,
    expect: Expect,
}

fn case(name: &'static str, expect: Expect, edit: impl Fn(&mut Parts) + 'static) -> Case {
    Case {
        name,
        edit: Box::new(edit),
        expect,
    }
}

fn meta(p: &Parts) -> layout::ArtifactMeta {
    p.meta()
}

fn states(p: &Parts) -> u32 {
    p.meta().num_states
}

/// Number of merged lexer DFA states.
fn dfa_states(p: &Parts) -> u32 {
    p.section(layout::DFA_FLAGS).bytes.len() as u32
}

/// Number of grammar terminals (the end-of-input terminal's id).
fn terminals(p: &Parts) -> u32 {
    p.u32s(layout::DFA_START).len() as u32
}

/// Byte classes: columns per state of the lexer tables.
fn byte_classes(p: &Parts) -> usize {
    p.meta().byte_classes as usize
}

/// Number of interned lexer configurations.
fn configs(p: &Parts) -> u32 {
    p.section(layout::CONF_FLAGS).bytes.len() as u32
}

/// Index of the first element satisfying `p`.
/// The first symbol of the first grammar rule in META that has one.
fn first_symbol(m: &mut layout::ArtifactMeta) -> &mut stackmask_formats::Symbol {
    let rule = m.grammar.rules.iter_mut().find(|r| !r.rhs.is_empty());
    &mut rule.expect("a rule with symbols").rhs[0]
}

fn find(v: &[u32], p: impl Fn(u32) -> bool) -> usize {
    v.iter().position(|&x| p(x)).expect("an element to corrupt")
}

fn crafted_cases() -> Vec<Case> {
    use layout::*;
    use Expect::*;
    vec![
        // LR actions.
        case("LR shift to a state out of range", Invalid, move |p| {
            let n = states(p);
            p.edit_u32s(LR_ACTIONS, |a| {
                let i = find(a, |c| c & 3 == 0);
                a[i] = n << 2;
            })
        }),
        case("LR shift to state u32::MAX >> 2", Invalid, |p| {
            p.edit_u32s(LR_ACTIONS, |a| {
                let i = find(a, |c| c & 3 == 0);
                a[i] = !3;
            })
        }),
        case("LR reduce by a rule out of range", Invalid, |p| {
            let rules = p.u32s(RULE_LEN).len() as u32;
            p.edit_u32s(LR_ACTIONS, |a| {
                let i = find(a, |c| c & 3 == 1);
                a[i] = (rules << 2) | 1;
            })
        }),
        case("LR action with kind bits 3", Invalid, |p| {
            p.edit_u32s(LR_ACTIONS, |a| a[0] = 3)
        }),
        case("LR accept code with payload bits", Invalid, |p| {
            p.edit_u32s(LR_ACTIONS, |a| a[0] = 6)
        }),
        case("LR action index not monotone", Invalid, |p| {
            p.edit_u32s(LR_ACTION_INDEX, |a| {
                let i = (1..a.len()).find(|&i| a[i] > a[i - 1]).unwrap();
                a.swap(i - 1, i);
            })
        }),
        case("LR action index does not start at 0", Invalid, |p| {
            p.edit_u32s(LR_ACTION_INDEX, |a| a[0] = 1)
        }),
        case("LR action index points past the actions", Invalid, |p| {
            p.edit_u32s(LR_ACTION_INDEX, |a| *a.last_mut().unwrap() += 1)
        }),
        case("LR action index one entry short", Invalid, |p| {
            p.edit_u32s(LR_ACTION_INDEX, |a| {
                a.pop();
            })
        }),
        case("LR actions one entry short", Invalid, |p| {
            p.edit_u32s(LR_ACTIONS, |a| {
                a.pop();
            })
        }),
        // Gotos and rules.
        case("goto out of range", Invalid, move |p| {
            let n = states(p);
            p.edit_u32s(LR_GOTO_TARGET, |g| {
                let i = find(g, |x| x != u32::MAX);
                g[i] = n;
            })
        }),
        case(
            "goto slot where there was none, owned by a state out of range",
            Invalid,
            move |p| {
                let n = states(p);
                p.edit_u32s(LR_GOTO_CHECK, |g| {
                    let i = find(g, |x| x == u32::MAX);
                    g[i] = n + 5;
                })
            },
        ),
        case("goto targets one entry short", Invalid, |p| {
            p.edit_u32s(LR_GOTO_TARGET, |g| {
                g.pop();
            })
        }),
        case("goto checks one entry short", Invalid, |p| {
            p.edit_u32s(LR_GOTO_CHECK, |g| {
                g.pop();
            })
        }),
        case("goto row base past the slots", Invalid, |p| {
            p.edit_u32s(LR_GOTO_BASE, |b| b[0] = u32::MAX)
        }),
        case("goto row bases one entry short", Invalid, |p| {
            p.edit_u32s(LR_GOTO_BASE, |b| {
                b.pop();
            })
        }),
        // Row displacement of the action cells.
        case("LR action row base past the slots", Invalid, |p| {
            let slots = p.u32s(LR_ACTION_CHECK).len() as u32;
            p.edit_u32s(LR_ACTION_BASE, |b| b[0] = slots)
        }),
        case("LR action row base u32::MAX", Invalid, |p| {
            p.edit_u32s(LR_ACTION_BASE, |b| {
                let last = b.len() - 1;
                b[last] = u32::MAX;
            })
        }),
        case(
            "LR action slot owned by a state out of range",
            Invalid,
            move |p| {
                let n = states(p);
                p.edit_u32s(LR_ACTION_CHECK, |c| {
                    let i = find(c, |x| x != u32::MAX);
                    c[i] = n;
                })
            },
        ),
        case("LR action slot freed, its actions kept", Invalid, |p| {
            p.edit_u32s(LR_ACTION_CHECK, |c| {
                let i = find(c, |x| x != u32::MAX);
                c[i] = u32::MAX;
            })
        }),
        case("LR action slot owned outside its row", Invalid, |p| {
            // Slot 0 given to the state whose row starts furthest on: past its row.
            let bases = p.u32s(LR_ACTION_BASE);
            let s = (0..bases.len()).max_by_key(|&s| bases[s]).unwrap() as u32;
            p.edit_u32s(LR_ACTION_CHECK, |c| c[0] = s)
        }),
        case("LR action checks one entry short", Invalid, |p| {
            p.edit_u32s(LR_ACTION_CHECK, |c| {
                c.pop();
            })
        }),
        case("rule lhs out of range", Invalid, move |p| {
            let nn = meta(p).num_nonterminals;
            p.edit_u32s(RULE_LHS, |r| r[0] = nn)
        }),
        case("rule tables of different lengths", Invalid, |p| {
            p.edit_u32s(RULE_LEN, |r| {
                r.pop();
            })
        }),
        // One rule's length or left-hand side off, everything else intact: in range,
        // so only the cross-check with the grammar in the metadata can see it.
        case("one rule one symbol longer", Invalid, |p| {
            p.edit_u32s(RULE_LEN, |r| r[0] += 1)
        }),
        case("one rule one symbol shorter", Invalid, |p| {
            p.edit_u32s(RULE_LEN, |r| {
                let i = find(r, |l| l > 0);
                r[i] -= 1;
            })
        }),
        case("the augmented rule of length 2", Invalid, |p| {
            p.edit_u32s(RULE_LEN, |r| *r.last_mut().unwrap() = 2)
        }),
        case("two rules' left-hand sides swapped", Invalid, |p| {
            p.edit_u32s(RULE_LHS, |r| {
                let first = r[0];
                let i = find(r, |a| a != first);
                r.swap(0, i);
            })
        }),
        case("META: grammar has one rule fewer", Invalid, |p| {
            p.edit_meta(|m| {
                m.grammar.rules.pop();
            })
        }),
        // Lexer DFAs.
        case("DFA transition out of range", Invalid, move |p| {
            let n = dfa_states(p);
            p.edit_u32s(DFA_TRANS, |t| {
                let i = find(t, |x| x != 0);
                t[i] = n;
            })
        }),
        case("DFA transition u32::MAX", Invalid, |p| {
            p.edit_u32s(DFA_TRANS, |t| {
                let l = t.len();
                t[l - 1] = u32::MAX;
            })
        }),
        case("DFA dead state 0 has a transition", Invalid, |p| {
            let c = p.section(BYTE_CLASS).bytes[b'{' as usize] as usize;
            p.edit_u32s(DFA_TRANS, |t| t[c] = 1)
        }),
        // Byte classes: the column every lexer step reads.
        case("byte class past the class count", Invalid, move |p| {
            let k = byte_classes(p) as u8;
            p.section_mut(BYTE_CLASS).bytes[b'"' as usize] = k;
        }),
        case("byte class table one byte short", Invalid, |p| {
            p.section_mut(BYTE_CLASS).bytes.pop();
        }),
        case("META: no byte classes", Invalid, |p| {
            p.edit_meta(|m| m.byte_classes = 0)
        }),
        case(
            "META: one byte class more than the tables have",
            Invalid,
            |p| p.edit_meta(|m| m.byte_classes += 1),
        ),
        case("DFA dead state 0 is accepting", Invalid, |p| {
            p.section_mut(DFA_FLAGS).bytes[0] = 1;
        }),
        // Liveness: "transition != 0" must mean "can still reach an accepting state".
        case("DFA live flag cleared on a live state", Invalid, |p| {
            let f = &mut p.section_mut(DFA_FLAGS).bytes;
            let s = f
                .iter()
                .position(|&x| x == 2)
                .expect("a live, non-accepting state");
            f[s] = 0;
        }),
        case(
            "DFA final state made non-accepting (live, but cannot accept)",
            Invalid,
            |p| {
                let t = p.u32s(DFA_TRANS);
                let k = byte_classes(p);
                let f = &mut p.section_mut(DFA_FLAGS).bytes;
                let s = (1..f.len())
                    .find(|&s| f[s] == 3 && t[s * k..(s + 1) * k].iter().all(|&x| x == 0))
                    .expect("an accepting state with no way on");
                f[s] = 2;
            },
        ),
        case("DFA start state out of range", Invalid, move |p| {
            let n = dfa_states(p);
            p.edit_u32s(DFA_START, |s| s[0] = n)
        }),
        case("DFA transition table one state short", Invalid, |p| {
            let k = byte_classes(p);
            p.edit_u32s(DFA_TRANS, |t| t.truncate(t.len() - k))
        }),
        case("DFA flags one state short", Invalid, |p| {
            p.section_mut(DFA_FLAGS).bytes.pop();
        }),
        case("per-terminal DFA bases of the wrong length", Invalid, |p| {
            p.edit_u32s(DFA_BASE, |b| {
                b.pop();
            })
        }),
        case("one lazy flag too many", Invalid, |p| {
            p.section_mut(LAZY).bytes.push(0);
        }),
        case("one lazy flag too few", Invalid, |p| {
            p.section_mut(LAZY).bytes.pop();
        }),
        case("ignore terminal out of range", Invalid, move |p| {
            let n = terminals(p);
            p.edit_u32s(IGNORE, |i| i.push(n))
        }),
        case("expected-terminal sets one word short", Invalid, |p| {
            let b = &mut p.section_mut(EXPECTED).bytes;
            b.truncate(b.len() - 8);
        }),
        // Interned lexer configurations.
        case(
            "LR state with an expected class out of range",
            Invalid,
            |p| {
                let classes = p.u32s(CLASS_START).len() as u32 / 256;
                p.edit_u32s(STATE_CLASS, |c| c[0] = classes)
            },
        ),
        case("expected classes one state short", Invalid, |p| {
            p.edit_u32s(STATE_CLASS, |c| {
                c.pop();
            })
        }),
        case(
            "class start configuration out of range",
            Invalid,
            move |p| {
                let n = configs(p);
                p.edit_u32s(CLASS_START, |c| c[b'"' as usize] = n)
            },
        ),
        case("class start table not 256 per class", Invalid, |p| {
            p.edit_u32s(CLASS_START, |c| {
                c.pop();
            })
        }),
        case(
            "ignore start configuration out of range",
            Invalid,
            move |p| {
                let n = configs(p);
                p.edit_u32s(IGNORE_START, |c| c[b' ' as usize] = n)
            },
        ),
        case("ignore start table of 255 bytes", Invalid, |p| {
            p.edit_u32s(IGNORE_START, |c| {
                c.pop();
            })
        }),
        case("configuration transition out of range", Invalid, move |p| {
            let n = configs(p);
            p.edit_u32s(CONF_NEXT, |c| {
                let l = c.len();
                c[l - 1] = n;
            })
        }),
        case(
            "configuration transitions one configuration short",
            Invalid,
            |p| {
                let k = byte_classes(p);
                p.edit_u32s(CONF_NEXT, |c| c.truncate(c.len() - k))
            },
        ),
        case("configuration element index not monotone", Invalid, |p| {
            p.edit_u32s(CONF_ELEM_INDEX, |c| {
                let i = (1..c.len()).find(|&i| c[i] > c[i - 1]).unwrap();
                c.swap(i - 1, i);
            })
        }),
        case(
            "configuration element index past the elements",
            Invalid,
            |p| p.edit_u32s(CONF_ELEM_INDEX, |c| *c.last_mut().unwrap() += 1),
        ),
        case("configuration element is the dead state", Invalid, |p| {
            p.edit_u32s(CONF_ELEMS, |c| c[0] = 0)
        }),
        case(
            "configuration element past the DFA states",
            Invalid,
            move |p| {
                let n = dfa_states(p);
                p.edit_u32s(CONF_ELEMS, |c| c[0] = n)
            },
        ),
        case("configuration accepting flag flipped", Invalid, |p| {
            let f = &mut p.section_mut(CONF_FLAGS).bytes;
            let l = f.len();
            f[l - 1] ^= 1;
            f[1] ^= 1;
        }),
        case("one configuration flag too many", Invalid, |p| {
            p.section_mut(CONF_FLAGS).bytes.push(0);
        }),
        case("META: configuration count disagrees", Invalid, |p| {
            p.edit_meta(|m| m.lexer_configs += 1)
        }),
        case("terminal of a DFA state out of range", Invalid, move |p| {
            let t = terminals(p);
            p.edit_u32s(DFA_TERM, |d| d[1] = t)
        }),
        case("terminal of the dead state is not u32::MAX", Invalid, |p| {
            p.edit_u32s(DFA_TERM, |d| d[0] = 0)
        }),
        case("terminal-of-state table one short", Invalid, |p| {
            p.edit_u32s(DFA_TERM, |d| {
                d.pop();
            })
        }),
        // Token trie.
        case("trie node with subtree size 0", Invalid, |p| {
            put_u32(
                &mut p.section_mut(TRIE_NODES).bytes,
                TRIE_NODE_SIZE + TRIE_SUBTREE,
                0,
            )
        }),
        case("trie node subtree past the end", Invalid, |p| {
            let b = &mut p.section_mut(TRIE_NODES).bytes;
            let n = (b.len() / TRIE_NODE_SIZE) as u32;
            put_u32(b, TRIE_NODE_SIZE + TRIE_SUBTREE, n);
        }),
        case("trie node subtree size u32::MAX", Invalid, |p| {
            let b = &mut p.section_mut(TRIE_NODES).bytes;
            let at = (b.len() / TRIE_NODE_SIZE - 1) * TRIE_NODE_SIZE;
            put_u32(b, at + TRIE_SUBTREE, u32::MAX);
        }),
        case("trie root does not span the trie", Invalid, |p| {
            let b = &mut p.section_mut(TRIE_NODES).bytes;
            let s = get_u32(b, TRIE_SUBTREE);
            put_u32(b, TRIE_SUBTREE, s - 1);
        }),
        case(
            "trie node one subtree larger (overlaps its sibling)",
            Invalid,
            |p| {
                let b = &mut p.section_mut(TRIE_NODES).bytes;
                let s = get_u32(b, TRIE_NODE_SIZE + TRIE_SUBTREE);
                put_u32(b, TRIE_NODE_SIZE + TRIE_SUBTREE, s + 1);
            },
        ),
        case(
            "trie child two levels deeper than its parent",
            Invalid,
            |p| {
                let b = &mut p.section_mut(TRIE_NODES).bytes;
                put_u32(b, TRIE_NODE_SIZE + TRIE_DEPTH, 2);
            },
        ),
        case("trie root at depth 1", Invalid, |p| {
            put_u32(&mut p.section_mut(TRIE_NODES).bytes, TRIE_DEPTH, 1)
        }),
        case("trie node reserved bytes not zero", Invalid, |p| {
            p.section_mut(TRIE_NODES).bytes[TRIE_NODE_SIZE + 2] = 1;
        }),
        case("trie node token range out of bounds", Invalid, |p| {
            let len = p.u32s(TRIE_TOKENS).len() as u32;
            let b = &mut p.section_mut(TRIE_NODES).bytes;
            put_u32(b, TRIE_NODE_SIZE + TRIE_FIRST, len);
            put_u32(b, TRIE_NODE_SIZE + TRIE_NUM, 1);
        }),
        case("trie node token count u32::MAX", Invalid, |p| {
            put_u32(
                &mut p.section_mut(TRIE_NODES).bytes,
                TRIE_NODE_SIZE + TRIE_NUM,
                u32::MAX,
            )
        }),
        case("trie token id past the vocabulary", Invalid, move |p| {
            let n = meta(p).vocab_len;
            p.edit_u32s(TRIE_TOKENS, |t| t[0] = n)
        }),
        // The trie against the vocabulary: every ordinary token once, nothing else.
        case("trie token listed twice", Invalid, |p| {
            p.edit_u32s(TRIE_TOKENS, |t| t[1] = t[0])
        }),
        case(
            "trie token range starts past the previous node's",
            Invalid,
            |p| {
                let b = &mut p.section_mut(TRIE_NODES).bytes;
                let i = (1..b.len() / TRIE_NODE_SIZE)
                    .find(|&i| get_u32(b, i * TRIE_NODE_SIZE + TRIE_NUM) > 0)
                    .expect("a node with tokens");
                put_u32(b, i * TRIE_NODE_SIZE + TRIE_FIRST, 1);
            },
        ),
        case("trie root lists a token", Invalid, |p| {
            let b = &mut p.section_mut(TRIE_NODES).bytes;
            put_u32(b, TRIE_FIRST, 0);
            put_u32(b, TRIE_NUM, 1);
        }),
        case("trie node lists one token fewer", Invalid, |p| {
            let b = &mut p.section_mut(TRIE_NODES).bytes;
            let i = (1..b.len() / TRIE_NODE_SIZE)
                .find(|&i| get_u32(b, i * TRIE_NODE_SIZE + TRIE_NUM) > 0)
                .expect("a node with tokens");
            let n = get_u32(b, i * TRIE_NODE_SIZE + TRIE_NUM);
            put_u32(b, i * TRIE_NODE_SIZE + TRIE_NUM, n - 1);
        }),
        case(
            "trie nodes not a whole number of records",
            Container(|e| matches!(e, ArtifactError::PodLength { .. })),
            |p| {
                p.section_mut(TRIE_NODES).bytes.extend([0; 4]);
            },
        ),
        // Vocabulary.
        case("vocabulary offset past the end", Invalid, |p| {
            let len = p.section(VOCAB_BYTES).bytes.len() as u32;
            p.edit_u32s(VOCAB_OFFSETS, |o| *o.last_mut().unwrap() = len + 1)
        }),
        case("vocabulary offset u32::MAX in the middle", Invalid, |p| {
            p.edit_u32s(VOCAB_OFFSETS, |o| o[3] = u32::MAX)
        }),
        case("vocabulary offsets do not start at 0", Invalid, |p| {
            p.edit_u32s(VOCAB_OFFSETS, |o| o[0] = 1)
        }),
        case("vocabulary bytes one short", Invalid, |p| {
            p.section_mut(VOCAB_BYTES).bytes.pop();
        }),
        case("token kind code 7", Invalid, |p| {
            p.section_mut(VOCAB_KINDS).bytes[0] = 7;
        }),
        case("token kind code 3 on the last token", Invalid, |p| {
            *p.section_mut(VOCAB_KINDS).bytes.last_mut().unwrap() = 3;
        }),
        case("one token kind too few", Invalid, |p| {
            p.section_mut(VOCAB_KINDS).bytes.pop();
        }),
        case("an ordinary token with no bytes", Invalid, |p| {
            // Token 0's bytes move to token 1: offsets stay monotone and covering.
            p.edit_u32s(VOCAB_OFFSETS, |o| o[1] = o[0])
        }),
        // Metadata.
        case(
            "META: terminal count one more than the tables",
            Invalid,
            |p| p.edit_meta(|m| m.num_terminals += 1),
        ),
        case(
            "META: terminal count one less than the tables",
            Invalid,
            |p| p.edit_meta(|m| m.num_terminals -= 1),
        ),
        case(
            "META: grammar has one terminal fewer than the tables",
            Invalid,
            |p| {
                p.edit_meta(|m| {
                    m.grammar.terminals.pop();
                })
            },
        ),
        case("META: state count disagrees", Invalid, |p| {
            p.edit_meta(|m| m.num_states += 1)
        }),
        case("META: start state out of range", Invalid, |p| {
            p.edit_meta(|m| m.start_state = m.num_states)
        }),
        case("META: nonterminal count one more", Invalid, |p| {
            p.edit_meta(|m| m.num_nonterminals += 1)
        }),
        case("META: nonterminal count 0", Invalid, |p| {
            p.edit_meta(|m| m.num_nonterminals = 0)
        }),
        case("META: vocabulary size disagrees", Invalid, |p| {
            p.edit_meta(|m| m.vocab_len += 1)
        }),
        case("META: EOS past the vocabulary", Invalid, |p| {
            p.edit_meta(|m| m.eos = m.vocab_len)
        }),
        case("META: expected-set width disagrees", Invalid, |p| {
            p.edit_meta(|m| m.expected_words += 1)
        }),
        case(
            "META: trailing byte",
            Container(|e| matches!(e, ArtifactError::TrailingBytes { .. })),
            |p| {
                p.section_mut(META).bytes.push(0);
            },
        ),
        case(
            "META: truncated",
            Container(|e| matches!(e, ArtifactError::Decode { .. })),
            |p| {
                let b = &mut p.section_mut(META).bytes;
                b.truncate(b.len() / 2);
            },
        ),
        // Container-level consistency the engine relies on.
        case(
            "missing LR goto section",
            Container(
                |e| matches!(e, ArtifactError::MissingSection(k) if *k == layout::LR_GOTO_TARGET),
            ),
            |p| {
                p.sections.retain(|s| s.kind != LR_GOTO_TARGET);
            },
        ),
        case(
            "DFA transitions declared 1-aligned",
            Container(|e| matches!(e, ArtifactError::PodAlignment { .. })),
            |p| {
                p.section_mut(DFA_TRANS).align = 1;
            },
        ),
        case(
            "DFA transitions with 2 stray bytes",
            Container(|e| matches!(e, ArtifactError::PodLength { .. })),
            |p| {
                p.section_mut(DFA_TRANS).bytes.extend([0, 0]);
            },
        ),
        // Damage that passes every length and index check. The engine may load, but
        // then nothing may panic.
        case(
            "expected set names the end-of-input terminal",
            Invalid,
            move |p| {
                let t = terminals(p); // end of input = number of grammar terminals
                let words = meta(p).expected_words as usize;
                let start = meta(p).start_state as usize * words;
                let b = &mut p.section_mut(EXPECTED).bytes;
                let at = (start + t as usize / 64) * 8;
                let mut w = u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
                w |= 1 << (t % 64);
                b[at..at + 8].copy_from_slice(&w.to_le_bytes());
            },
        ),
        case(
            "expected set names a terminal past the end",
            Invalid,
            move |p| {
                let words = meta(p).expected_words as usize;
                let at = (meta(p).start_state as usize * words + words - 1) * 8;
                let b = &mut p.section_mut(EXPECTED).bytes;
                let mut w = u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
                w |= 1 << 63;
                b[at..at + 8].copy_from_slice(&w.to_le_bytes());
            },
        ),
        case("every expected bit set in every state", Invalid, |p| {
            for x in p.section_mut(EXPECTED).bytes.iter_mut() {
                *x = 0xff;
            }
        }),
        case("rule length u32::MAX", Invalid, |p| {
            p.edit_u32s(RULE_LEN, |r| r.iter_mut().for_each(|x| *x = u32::MAX))
        }),
        case("every rule of length 0", Invalid, |p| {
            p.edit_u32s(RULE_LEN, |r| r.iter_mut().for_each(|x| *x = 0))
        }),
        case("every goto to the start state", ErrOrHarmless, move |p| {
            let s = meta(p).start_state;
            p.edit_u32s(LR_GOTO_TARGET, |g| g.iter_mut().for_each(|x| *x = s))
        }),
        case(
            "goto slots given to the next state",
            ErrOrHarmless,
            move |p| {
                let n = states(p);
                p.edit_u32s(LR_GOTO_CHECK, |c| {
                    c.iter_mut()
                        .filter(|x| **x != u32::MAX)
                        .for_each(|x| *x = (*x + 1) % n)
                })
            },
        ),
        case("per-terminal DFA bases scrambled", ErrOrHarmless, |p| {
            p.edit_u32s(DFA_BASE, |b| b.reverse())
        }),
        case(
            "META: grammar rule names a nonterminal out of range",
            ErrOrHarmless,
            |p| {
                p.edit_meta(|m| {
                    // Replaced, not appended, so the rule keeps the length the LR
                    // tables give it and the damage reaches the reference path.
                    let n = m.grammar.nonterminals.len() as u32;
                    *first_symbol(m) = stackmask_formats::Symbol::Nonterminal(n + 3);
                })
            },
        ),
        case(
            "META: grammar rule names a terminal out of range",
            ErrOrHarmless,
            |p| {
                p.edit_meta(|m| {
                    let n = m.grammar.terminals.len() as u32;
                    *first_symbol(m) = stackmask_formats::Symbol::Terminal(n + 3);
                })
            },
        ),
        case("META: grammar start out of range", ErrOrHarmless, |p| {
            p.edit_meta(|m| m.grammar.start = m.grammar.nonterminals.len() as u32)
        }),
        case(
            "META: grammar ignore terminal out of range",
            ErrOrHarmless,
            |p| p.edit_meta(|m| m.grammar.ignore.push(m.grammar.terminals.len() as u32 + 1)),
        ),
        case("trie token is EOS", Invalid, move |p| {
            let eos = meta(p).eos;
            p.edit_u32s(TRIE_TOKENS, |t| t[0] = eos)
        }),
        case("every token special", Invalid, |p| {
            p.section_mut(VOCAB_KINDS)
                .bytes
                .iter_mut()
                .for_each(|k| *k = 1)
        }),
        case("every configuration transition to 0", ErrOrHarmless, |p| {
            p.edit_u32s(CONF_NEXT, |c| c.iter_mut().for_each(|x| *x = 0))
        }),
        case("every class start is configuration 1", ErrOrHarmless, |p| {
            p.edit_u32s(CLASS_START, |c| c.iter_mut().for_each(|x| *x = 1))
        }),
        case("every LR state in expected class 0", ErrOrHarmless, |p| {
            p.edit_u32s(STATE_CLASS, |c| c.iter_mut().for_each(|x| *x = 0))
        }),
        case("terminals of DFA states rotated", ErrOrHarmless, move |p| {
            let t = terminals(p);
            p.edit_u32s(DFA_TERM, |d| {
                d[1..].iter_mut().for_each(|x| *x = (*x + 1) % t)
            })
        }),
        case("ignore lexemes start everywhere", ErrOrHarmless, |p| {
            let c = p.u32s(CLASS_START);
            p.edit_u32s(IGNORE_START, |i| i.copy_from_slice(&c[..256]))
        }),
        // Trie paths are not checked against the token bytes at load (ARTIFACT.md
        // says why): a wrong mask, never a panic.
        case("trie node byte changed", ErrOrHarmless, |p| {
            p.section_mut(TRIE_NODES).bytes[TRIE_NODE_SIZE] ^= 0x40;
        }),
        case("trie tokens of two nodes swapped", ErrOrHarmless, |p| {
            p.edit_u32s(TRIE_TOKENS, |t| t.swap(0, 1))
        }),
        case("allow_initial_skip flipped", ErrOrHarmless, |p| {
            p.edit_meta(|m| m.allow_initial_skip = !m.allow_initial_skip)
        }),
        // The Parser DWA: every index is checked at load.
        case("Parser DWA start state out of range", Invalid, |p| {
            let n = p.u32s(PDWA_DEFAULT).len() as u32;
            p.edit_u32s(PDWA_START, |s| {
                let last = s.len() - 1;
                s[last] = n;
            })
        }),
        case("Parser DWA target out of range", Invalid, |p| {
            let n = p.u32s(PDWA_DEFAULT).len() as u32;
            p.edit_u32s(PDWA_TARGETS, |t| t[0] = n)
        }),
        case("Parser DWA default target out of range", Invalid, |p| {
            let n = p.u32s(PDWA_DEFAULT).len() as u32;
            p.edit_u32s(PDWA_DEFAULT, |t| {
                let last = t.len() - 1;
                t[last] = n + 7;
            })
        }),
        case("Parser DWA key is not an LR state", Invalid, move |p| {
            let n = states(p);
            p.edit_u32s(PDWA_KEYS, |k| {
                let last = k.len() - 1;
                k[last] = n;
            })
        }),
        case("Parser DWA keys not increasing", Invalid, |p| {
            let index = p.u32s(PDWA_INDEX);
            let at = (0..index.len() - 1)
                .find(|&d| index[d + 1] - index[d] >= 2)
                .expect("a state with two keys");
            p.edit_u32s(PDWA_KEYS, |k| {
                let i = index[at] as usize;
                k.swap(i, i + 1)
            })
        }),
        case("Parser DWA transition index not monotone", Invalid, |p| {
            p.edit_u32s(PDWA_INDEX, |x| {
                let i = (1..x.len()).find(|&i| x[i] > x[i - 1]).unwrap();
                x[i - 1] = x[i] + 1;
            })
        }),
        case("Parser DWA weight id out of range", Invalid, |p| {
            let n = p.u32s(WEIGHT_INDEX).len() as u32;
            p.edit_u32s(PDWA_WEIGHTS, |w| w[0] = n)
        }),
        case("Parser DWA weight index past the words", Invalid, |p| {
            p.edit_u32s(WEIGHT_INDEX, |w| {
                let last = w.len() - 1;
                w[last] += 1;
            })
        }),
        case("weight chunk beyond the mask", Invalid, |p| {
            let mask_words = p.meta().vocab_len.div_ceil(32);
            p.edit_u32s(CHUNK_TABLE, |t| {
                let last = t.len() - 3;
                t[last] = mask_words;
            })
        }),
        case("weight chunk not aligned to blocks", Invalid, |p| {
            p.edit_u32s(CHUNK_TABLE, |t| t[0] += 1)
        }),
        case("weight chunk past the chunk words", Invalid, |p| {
            p.edit_u32s(CHUNK_TABLE, |t| *t.last_mut().unwrap() += 1)
        }),
        case("weight chunk id out of range", Invalid, |p| {
            let chunks = p.u32s(CHUNK_TABLE).len() as u32 / 3;
            p.edit_u32s(WEIGHT_CHUNKS, |c| c[0] = chunks)
        }),
        case("weight chunk table not made of triples", Invalid, |p| {
            p.edit_u32s(CHUNK_TABLE, |t| t.push(0))
        }),
        case("weight names a token past the vocabulary", Invalid, |p| {
            // A new weight of one new chunk: the bytes vocabulary has 257 ids, so bit
            // 31 of word 8 is no token.
            let words = p.u32s(CHUNK_WORDS).len() as u32;
            p.edit_u32s(CHUNK_WORDS, |w| w.push(1 << 31));
            let chunks = p.u32s(CHUNK_TABLE).len() as u32 / 3;
            p.edit_u32s(CHUNK_TABLE, |t| t.extend([8, 1, words]));
            p.edit_u32s(WEIGHT_CHUNKS, |c| c.push(chunks));
            let len = p.u32s(WEIGHT_CHUNKS).len() as u32;
            p.edit_u32s(WEIGHT_INDEX, |w| w.push(len))
        }),
        case("Parser DWA default weight out of range", Invalid, |p| {
            let n = p.u32s(WEIGHT_INDEX).len() as u32;
            p.edit_u32s(PDWA_DEFAULT_WEIGHT, |w| w[1] = n)
        }),
        case("Parser DWA default weights too short", Invalid, |p| {
            p.edit_u32s(PDWA_DEFAULT_WEIGHT, |w| {
                w.pop();
            })
        }),
        case(
            "Parser DWA target names a fork that does not exist",
            Invalid,
            |p| {
                let forks = p.u32s(FORK_INDEX).len() as u32 - 1;
                p.edit_u32s(PDWA_TARGETS, |t| {
                    t[0] = stackmask_formats::ParserDwa::FORK | forks
                })
            },
        ),
        case("Parser DWA fork of one state", Invalid, |p| {
            p.edit_u32s(FORK_STATES, |f| f.push(1));
            let len = p.u32s(FORK_STATES).len() as u32;
            p.edit_u32s(FORK_INDEX, |f| f.push(len))
        }),
        case("Parser DWA fork naming the stop state", Invalid, |p| {
            p.edit_u32s(FORK_STATES, |f| f.extend([0, 1]));
            let len = p.u32s(FORK_STATES).len() as u32;
            p.edit_u32s(FORK_INDEX, |f| f.push(len))
        }),
        case("Parser DWA fork index past its states", Invalid, |p| {
            p.edit_u32s(FORK_INDEX, |f| *f.last_mut().unwrap() += 1)
        }),
        case("Parser DWA start table too short", Invalid, |p| {
            p.edit_u32s(PDWA_START, |s| {
                s.pop();
            })
        }),
        // Consistent but wrong tables: wrong masks, never a panic or a hang.
        case(
            "every Parser DWA transition to the stop state",
            ErrOrHarmless,
            |p| p.edit_u32s(PDWA_TARGETS, |t| t.iter_mut().for_each(|x| *x = 0)),
        ),
        case(
            "every Parser DWA transition back to its start",
            ErrOrHarmless,
            |p| {
                let start = p.u32s(PDWA_START);
                let s = *start.last().unwrap();
                p.edit_u32s(PDWA_TARGETS, |t| t.iter_mut().for_each(|x| *x = s));
                p.edit_u32s(PDWA_DEFAULT, |t| t[1..].iter_mut().for_each(|x| *x = s));
            },
        ),
        case("Parser DWA weights rotated", ErrOrHarmless, |p| {
            let n = p.u32s(WEIGHT_INDEX).len() as u32 - 1;
            p.edit_u32s(PDWA_WEIGHTS, |w| {
                w.iter_mut().for_each(|x| *x = (*x + 1) % n)
            })
        }),
    ]
}

/// Runs the reference path and a matcher on an engine that loaded, under a guard.
fn harmless(engine: Engine, seed: u64) -> Result<(), String> {
    let engine = Arc::new(engine);
    match guarded(Duration::from_secs(20), move || {
        exercise(engine.clone(), DOC, seed);
        exercise(engine.clone(), EXPR_DOC, seed);
        // The embedded reference path rebuilds DFAs and a grammar from the artifact:
        // an error is fine, a panic is not.
        if let Ok(r) = engine.reference() {
            let mut rm = stackmask_runtime::reference::ReferenceMatcher::new(r);
            let _ = rm.commit_bytes(DOC);
            let _ = rm.is_accepting();
            let mut mask = vec![0u32; engine.mask_words()];
            rm.fill_mask(&mut mask);
        }
    }) {
        Outcome::Done(()) => Ok(()),
        Outcome::Panicked(p) => Err(format!("panicked: {p}")),
        Outcome::TimedOut => Err("did not finish within 20 s".into()),
    }
}

#[test]
fn crafted_semantic_corruption_is_invalid_never_a_panic() {
    let mut failures = Vec::new();
    // JSON (no ignore terminals, no conflicts) and expr (%ignore WS, GLR forks).
    for grammar in ["json", "expr"] {
        let good = &cached(grammar, "bytes").bytes;
        let original = Parts::of(good);
        // The reassembly itself is faithful.
        assert_eq!(&original.assemble(), good, "{grammar}: reassembly");
        for (i, c) in crafted_cases().into_iter().enumerate() {
            let mut parts = original.clone();
            (c.edit)(&mut parts);
            let bytes = parts.assemble();
            assert_ne!(
                &bytes, good,
                "{grammar} {}: the edit changed nothing",
                c.name
            );
            let result = match no_panic(|| load(&bytes)) {
                Ok(r) => r,
                Err(p) => {
                    failures.push(format!(
                        "{grammar} {}: Engine::from_bytes panicked: {p}",
                        c.name
                    ));
                    continue;
                }
            };
            let verdict = match (&c.expect, result) {
                (Expect::Invalid, Err(EngineError::Invalid(_))) => Ok(()),
                (Expect::Container(pred), Err(EngineError::Artifact(e))) if pred(&e) => Ok(()),
                (Expect::ErrOrHarmless, Err(_)) => Ok(()),
                (Expect::ErrOrHarmless, Ok(engine)) => harmless(engine, i as u64 + 1),
                (_, Ok(_)) => Err("loaded".to_string()),
                (_, Err(e)) => Err(format!("wrong error: {e:?}")),
            };
            if let Err(why) = verdict {
                failures.push(format!("{grammar} {}: {why}", c.name));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------------------
// Random damage behind valid checksums.

/// One mutation: `(section index, position, kind, value)`; indices are reduced modulo
/// the section count and length.
#[derive(Clone, Debug)]
enum Mutation {
    /// XOR a byte with a nonzero value.
    Xor {
        section: usize,
        at: usize,
        value: u8,
    },
    /// Overwrite an aligned `u32` with an interesting value.
    Word {
        section: usize,
        at: usize,
        value: u32,
    },
    /// Truncate or extend a section by a few bytes.
    Resize { section: usize, delta: i8 },
}

fn arb_mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), any::<usize>(), 1..=255u8)
            .prop_map(|(section, at, value)| Mutation::Xor { section, at, value }),
        4 => (any::<usize>(), any::<usize>(), prop_oneof![
                Just(0u32), Just(1), Just(2), Just(3), Just(u32::MAX), Just(u32::MAX - 1),
                0..64u32, 0..5000u32, any::<u32>()
            ])
            .prop_map(|(section, at, value)| Mutation::Word { section, at, value }),
        1 => (any::<usize>(), -8..=8i8)
            .prop_map(|(section, delta)| Mutation::Resize { section, delta }),
    ]
}

fn apply(parts: &mut Parts, m: &Mutation) {
    let n = parts.sections.len();
    match *m {
        Mutation::Xor { section, at, value } => {
            let b = &mut parts.sections[section % n].bytes;
            if !b.is_empty() {
                let i = at % b.len();
                b[i] ^= value;
            }
        }
        Mutation::Word { section, at, value } => {
            let b = &mut parts.sections[section % n].bytes;
            if b.len() >= 4 {
                let i = (at % (b.len() / 4)) * 4;
                b[i..i + 4].copy_from_slice(&value.to_le_bytes());
            }
        }
        Mutation::Resize { section, delta } => {
            let b = &mut parts.sections[section % n].bytes;
            if delta < 0 {
                let k = (-delta as usize).min(b.len());
                b.truncate(b.len() - k);
            } else {
                b.extend(std::iter::repeat_n(0xa5, delta as usize));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("STACKMASK_CORRUPTION_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(1000),
        max_shrink_iters: 64,
        failure_persistence: None,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed_c0de),
        ..ProptestConfig::default()
    })]

    #[test]
    fn resealed_random_mutations_never_panic(
        expr in any::<bool>(),
        mutations in prop::collection::vec(arb_mutation(), 1..4),
        seed in any::<u64>(),
    ) {
        // JSON (no ignore terminals, conflict-free) and expr (%ignore WS, GLR forks).
        let (grammar, doc): (&str, &'static [u8]) =
            if expr { ("expr", EXPR_DOC) } else { ("json", DOC) };
        let mut parts = Parts::of(&cached(grammar, "bytes").bytes);
        let n = parts.sections.len();
        let what: Vec<String> = mutations.iter().map(|m| {
            let section = match *m {
                Mutation::Xor { section, .. }
                | Mutation::Word { section, .. }
                | Mutation::Resize { section, .. } => section,
            };
            format!("{} {m:?}", parts.sections[section % n].kind)
        }).collect();
        for m in &mutations {
            apply(&mut parts, m);
        }
        let bytes = parts.assemble();
        let outcome = guarded(Duration::from_secs(20), move || {
            match load(&bytes) {
                Err(_) => None,
                Ok(engine) => {
                    exercise(Arc::new(engine), doc, seed);
                    Some(())
                }
            }
        });
        match outcome {
            Outcome::Done(_) => {}
            Outcome::Panicked(p) => prop_assert!(false, "{} {:?}: panicked: {}", grammar, what, p),
            Outcome::TimedOut => prop_assert!(false, "{} {:?}: did not finish within 20 s", grammar, what),
        }
    }
}

/// The random mutations above are not vacuous: with the same generator, some resealed
/// artifacts still load (and get exercised) and some reach `EngineError::Invalid`.
#[test]
fn resealed_mutations_reach_the_semantic_checks() {
    let original = Parts::of(json_bytes());
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = prop::collection::vec(arb_mutation(), 1..4);
    let (mut loaded, mut invalid, mut container) = (0, 0, 0);
    for _ in 0..400 {
        let mutations = strategy.new_tree(&mut runner).unwrap().current();
        let mut parts = original.clone();
        for m in &mutations {
            apply(&mut parts, m);
        }
        match load(&parts.assemble()) {
            Ok(_) => loaded += 1,
            Err(EngineError::Invalid(_)) => invalid += 1,
            Err(_) => container += 1,
        }
    }
    eprintln!(
        "400 resealed mutations: {loaded} loaded, {invalid} invalid, {container} container errors"
    );
    assert!(
        loaded >= 20 && invalid >= 20,
        "{loaded} loaded, {invalid} invalid"
    );
}

// ---------------------------------------------------------------------------------------
// Engine::load on files.

#[test]
fn load_from_files() {
    let dir = temp_dir("engine-load");
    let bytes = json_bytes();

    let good = dir.join("json.smask");
    std::fs::write(&good, bytes).unwrap();
    let mapped = Arc::new(Engine::load(&good).expect("a valid artifact file loads"));
    let owned = load(bytes).unwrap();
    assert_eq!(mapped.meta(), owned.meta());
    assert_eq!(mapped.artifact_len(), bytes.len());
    let mut m = Matcher::new(mapped.clone());
    m.commit_bytes(DOC).unwrap();
    assert!(m.is_accepting());

    let missing = dir.join("does-not-exist.smask");
    match Engine::load(&missing) {
        Err(EngineError::Io { path, source }) => {
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            assert!(path.contains("does-not-exist.smask"), "{path}");
        }
        other => panic!("missing file: {other:?}"),
    }

    let empty = dir.join("empty.smask");
    std::fs::write(&empty, b"").unwrap();
    match no_panic(|| Engine::load(&empty)) {
        Err(p) => panic!("empty file: panicked: {p}"),
        Ok(Ok(_)) => panic!("empty file loaded"),
        Ok(Err(EngineError::Io { .. }))
        | Ok(Err(EngineError::Artifact(ArtifactError::TooShort { len: 0, .. }))) => {}
        Ok(Err(e)) => panic!("empty file: unexpected error {e:?}"),
    }

    let truncated = dir.join("truncated.smask");
    std::fs::write(&truncated, &bytes[..bytes.len() - 64]).unwrap();
    assert!(matches!(
        Engine::load(&truncated),
        Err(EngineError::Artifact(ArtifactError::LengthMismatch { .. }))
    ));

    let flipped = dir.join("flipped.smask");
    let mut b = bytes.to_vec();
    let last = b.len() / 2;
    b[last] ^= 0x10;
    std::fs::write(&flipped, &b).unwrap();
    assert!(matches!(
        Engine::load(&flipped),
        Err(EngineError::Artifact(_))
    ));

    assert!(
        Engine::load(&dir).is_err(),
        "a directory is not an artifact"
    );

    // The big artifact through the file path too.
    let big = dir.join("json-o200k.smask");
    std::fs::write(&big, json_o200k()).unwrap();
    let e = Engine::load(&big).unwrap();
    e.expect_vocabulary(
        cached("json", "tiktoken:o200k_base")
            .tokenizer
            .vocab
            .content_hash(),
    )
    .unwrap();
    assert_eq!(e.mask_words(), (e.meta().vocab_len as usize).div_ceil(32));

    let _ = std::fs::remove_dir_all(&dir);
}

/// The ignore follow sets (only grammars with greedy dead ends have them: the
/// shipped TOML grammar): every index and bit is checked at load.
#[test]
fn corrupt_ignore_follow_sets_are_invalid() {
    let good = &cached("toml", "bytes").bytes;
    let original = Parts::of(good);
    let rows_len = original.section(layout::FOLLOW_SETS).bytes.len();
    assert!(rows_len > 0, "toml has ignore follow sets");
    let limited = original
        .u32s(layout::IGNORE_FOLLOW)
        .iter()
        .position(|&r| r != u32::MAX)
        .expect("a limited ignore state");
    let cases: Vec<Case> = vec![
        case("row out of range", Expect::Invalid, move |p| {
            p.edit_u32s(layout::IGNORE_FOLLOW, |x| x[limited] = 1 << 20)
        }),
        case("index shorter than the DFA", Expect::Invalid, |p| {
            p.edit_u32s(layout::IGNORE_FOLLOW, |x| {
                x.pop();
            })
        }),
        case("sets without an index", Expect::Invalid, |p| {
            p.set_u32s(layout::IGNORE_FOLLOW, &[])
        }),
        case("a set names end of input", Expect::Invalid, |p| {
            let eof = p.meta().num_terminals - 1;
            let s = &mut p.section_mut(layout::FOLLOW_SETS).bytes;
            s[(eof / 8) as usize] |= 1 << (eof % 8);
        }),
        case("sets of the wrong width", Expect::Invalid, move |p| {
            p.section_mut(layout::FOLLOW_SETS)
                .bytes
                .truncate(rows_len - 8)
        }),
    ];
    for Case { name, edit, .. } in cases {
        let mut parts = original.clone();
        edit(&mut parts);
        let bytes = parts.assemble();
        assert_ne!(&bytes, good, "{name}: the edit changed nothing");
        match no_panic(|| load(&bytes)) {
            Ok(Err(EngineError::Invalid(m))) => {
                assert!(m.contains("ignore follow sets"), "{name}: {m}")
            }
            Ok(other) => panic!("{name}: {:?}", other.map(|_| "loaded")),
            Err(p) => panic!("{name}: panicked: {p}"),
        }
    }
}

#[test]
fn section_kinds_are_the_documented_ones() {
    // Every section the runtime reads is present in a compiled artifact, once.
    let a = Artifact::parse(json_bytes()).unwrap();
    let kinds: Vec<SectionKind> = a.sections().iter().map(|s| s.kind).collect();
    for k in [
        layout::META,
        layout::DFA_TRANS,
        layout::BYTE_CLASS,
        layout::DFA_FLAGS,
        layout::DFA_START,
        layout::DFA_BASE,
        layout::LAZY,
        layout::IGNORE,
        layout::LR_ACTION_BASE,
        layout::LR_ACTION_CHECK,
        layout::LR_ACTION_INDEX,
        layout::LR_ACTIONS,
        layout::LR_GOTO_BASE,
        layout::LR_GOTO_CHECK,
        layout::LR_GOTO_TARGET,
        layout::RULE_LHS,
        layout::RULE_LEN,
        layout::EXPECTED,
        layout::STATE_CLASS,
        layout::CLASS_START,
        layout::IGNORE_START,
        layout::CONF_NEXT,
        layout::CONF_ELEM_INDEX,
        layout::CONF_ELEMS,
        layout::CONF_FLAGS,
        layout::DFA_TERM,
        layout::IGNORE_FOLLOW,
        layout::FOLLOW_SETS,
        layout::VOCAB_BYTES,
        layout::VOCAB_OFFSETS,
        layout::VOCAB_KINDS,
        layout::TRIE_NODES,
        layout::TRIE_TOKENS,
        layout::PDWA_START,
        layout::PDWA_INDEX,
        layout::PDWA_KEYS,
        layout::PDWA_TARGETS,
        layout::PDWA_WEIGHTS,
        layout::PDWA_DEFAULT,
        layout::PDWA_DEFAULT_WEIGHT,
        layout::WEIGHT_INDEX,
        layout::WEIGHT_CHUNKS,
        layout::CHUNK_TABLE,
        layout::CHUNK_WORDS,
        layout::FORK_INDEX,
        layout::FORK_STATES,
    ] {
        assert_eq!(kinds.iter().filter(|&&x| x == k).count(), 1, "{k}");
    }
}
