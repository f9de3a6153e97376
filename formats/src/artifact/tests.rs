//! Tests of the artifact container: round trips, every truncation, every bit flip,
//! hand-crafted structural errors, accessor errors, and proptests that nothing panics.

use super::*;
use bincode::error::DecodeError;
use proptest::prelude::*;
use serde::Deserialize;
use std::fs;

const META: SectionKind = SectionKind::from_tag(*b"META");
const U32S: SectionKind = SectionKind::from_tag(*b"U32S");
const EDGES: SectionKind = SectionKind::from_tag(*b"EDGE");
const RAW: SectionKind = SectionKind::from_tag(*b"RAW_");
const LINES: SectionKind = SectionKind::from_tag(*b"LINE");
const EMPTY: SectionKind = SectionKind::from_tag(*b"NONE");
const ABSENT: SectionKind = SectionKind::from_tag(*b"ABST");

const GRAMMAR_HASH: u64 = 0x1111_2222_3333_4444;
const VOCAB_HASH: u64 = 0xaaaa_bbbb_cccc_dddd;

/// An in-place array element with mixed field sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
struct Edge {
    from: u32,
    to: u32,
    weight: u64,
}

/// A cache-line-aligned element: exercises the 64-byte alignment guarantee.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
#[repr(C, align(64))]
struct Line([u32; 16]);

/// An element whose alignment exceeds what the container allows.
#[derive(Clone, Copy, Pod, Zeroable)]
#[repr(C, align(128))]
struct TooAligned([u8; 128]);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Mode {
    Greedy,
    Lazy { priority: i32 },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Meta {
    name: String,
    states: Vec<u32>,
    eos: Option<u64>,
    modes: Vec<Mode>,
}

fn meta() -> Meta {
    Meta {
        name: "json × o200k".into(),
        states: vec![0, 1, 70_000, u32::MAX],
        eos: Some(199_999),
        modes: vec![Mode::Greedy, Mode::Lazy { priority: -3 }],
    }
}

fn edges() -> Vec<Edge> {
    (0..5)
        .map(|i| Edge {
            from: i,
            to: i * 7 + 1,
            weight: u64::MAX - u64::from(i),
        })
        .collect()
}

/// A small artifact with sections of odd lengths (so there is padding between them).
fn sample_writer() -> ArtifactWriter {
    let mut w = ArtifactWriter::new(GRAMMAR_HASH, VOCAB_HASH);
    w.add_pod(U32S, &[1u32, 2, 3, 0xdead_beef, 5]).unwrap();
    w.add_bincode(META, &meta()).unwrap();
    w.add_pod(EDGES, &edges()).unwrap();
    w.add_section(RAW, b"raw bytes, align 1", 1).unwrap();
    w.add_pod::<u64>(EMPTY, &[]).unwrap();
    w
}

fn sample() -> Vec<u8> {
    sample_writer().finish()
}

/// A larger artifact (~70 KB) for random bit flips.
fn big_sample() -> Vec<u8> {
    let mut w = sample_writer();
    let words: Vec<u64> = (0..8000u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .collect();
    w.add_pod(SectionKind::from_tag(*b"BITS"), &words).unwrap();
    let lines: Vec<Line> = (0..64u32).map(|i| Line([i; 16])).collect();
    w.add_pod(LINES, &lines).unwrap();
    w.finish()
}

fn parse_err(bytes: &[u8]) -> ArtifactError {
    let buf = AlignedBytes::from_slice(bytes);
    match Artifact::parse(&buf) {
        Ok(_) => panic!("parse accepted a bad artifact"),
        Err(e) => e,
    }
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// Offset of field `field` of table entry `i`.
fn entry(i: usize, field: usize) -> usize {
    HEADER_LEN + i * ENTRY_LEN + field
}

/// Recomputes every checksum of arbitrary bytes that look enough like an artifact
/// (section checksums for entries whose range is in the file, then the header
/// checksum), so tests can reach the structural checks behind the checksums.
/// Never panics.
fn reseal(b: &mut [u8]) {
    if b.len() < HEADER_LEN {
        return;
    }
    let count = u64::from(le_u32(b, OFF_COUNT));
    let table_end = HEADER_LEN as u64 + count * ENTRY_LEN as u64;
    if table_end > b.len() as u64 {
        return;
    }
    let table_end = table_end as usize;
    for i in 0..count as usize {
        let off = le_u64(b, entry(i, ENT_OFFSET));
        let len = le_u64(b, entry(i, ENT_LEN));
        if let Some(end) = off.checked_add(len) {
            if end <= b.len() as u64 {
                let c = xxh3_64(&b[off as usize..end as usize]);
                put_u64(b, entry(i, ENT_CHECKSUM), c);
            }
        }
    }
    let c = header_checksum(&b[..HEADER_LEN], &b[HEADER_LEN..table_end]);
    put_u64(b, OFF_HEADER_CHECKSUM, c);
}

/// Parses and calls every accessor with several types; must never panic. Returns
/// whether the parse succeeded. Also renders every error message.
fn exercise(bytes: &[u8]) -> bool {
    let art = match Artifact::parse(bytes) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.to_string();
            return false;
        }
    };
    let mut kinds = vec![META, U32S, EDGES, RAW, LINES, EMPTY, ABSENT];
    kinds.extend(art.sections().iter().map(|s| s.kind));
    let _ = (
        art.version(),
        art.flags(),
        art.grammar_hash(),
        art.vocab_hash(),
        art.bytes().len(),
    );
    let errs: Vec<Option<ArtifactError>> = kinds
        .iter()
        .flat_map(|&k| {
            let _ = art.has_section(k);
            [
                art.section_info(k).err(),
                art.section(k).err(),
                art.pod::<u8>(k).err(),
                art.pod::<u16>(k).err(),
                art.pod::<u32>(k).err(),
                art.pod::<u64>(k).err(),
                art.pod::<Edge>(k).err(),
                art.pod::<Line>(k).err(),
                art.pod::<()>(k).err(),
                art.bincode::<Meta>(k).err(),
                art.bincode::<Vec<String>>(k).err(),
                art.bincode::<String>(k).err(),
                art.bincode::<u64>(k).err(),
                art.bincode::<Vec<Vec<u8>>>(k).err(),
                art.bincode_with_limit::<Vec<u8>, 64>(k).err(),
                art.expect_hashes(GRAMMAR_HASH, VOCAB_HASH).err(),
                art.expect_hashes(0, 0).err(),
            ]
        })
        .collect();
    for e in errs.into_iter().flatten() {
        let _ = e.to_string();
    }
    true
}

/// A deterministic xorshift generator for reproducible random positions.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn round_trip_of_several_sections() {
    let bytes = sample();
    assert_eq!(bytes.len() % SECTION_ALIGN, 0);
    let buf = AlignedBytes::from_slice(&bytes);
    let art = Artifact::parse(&buf).unwrap();
    assert_eq!(art.version(), FORMAT_VERSION);
    assert_eq!(art.flags(), 0);
    assert_eq!(art.grammar_hash(), GRAMMAR_HASH);
    assert_eq!(art.vocab_hash(), VOCAB_HASH);
    art.expect_hashes(GRAMMAR_HASH, VOCAB_HASH).unwrap();

    assert_eq!(art.pod::<u32>(U32S).unwrap(), &[1, 2, 3, 0xdead_beef, 5]);
    assert_eq!(art.pod::<Edge>(EDGES).unwrap(), edges().as_slice());
    assert_eq!(art.bincode::<Meta>(META).unwrap(), meta());
    assert_eq!(art.section(RAW).unwrap(), b"raw bytes, align 1");
    assert_eq!(art.pod::<u64>(EMPTY).unwrap(), &[] as &[u64]);

    // Table order = insertion order; offsets 64-aligned, ascending, past the table.
    let kinds: Vec<_> = art.sections().iter().map(|s| s.kind).collect();
    assert_eq!(kinds, [U32S, META, EDGES, RAW, EMPTY]);
    let table_end = (HEADER_LEN + 5 * ENTRY_LEN) as u64;
    let mut prev_end = table_end;
    for s in art.sections() {
        assert_eq!(s.offset % 64, 0, "{s:?}");
        assert!(s.offset >= prev_end, "{s:?}");
        assert_eq!(s.checksum, xxh3_64(art.section(s.kind).unwrap()));
        prev_end = s.offset + s.len;
    }
    assert_eq!(art.section_info(EDGES).unwrap().align, 8);
    assert_eq!(art.section_info(RAW).unwrap().align, 1);
    assert_eq!(art.section_info(META).unwrap().len, {
        let enc = bincode::serde::encode_to_vec(meta(), bincode::config::standard()).unwrap();
        enc.len() as u64
    });
    assert!(!art.has_section(ABSENT));
    assert!(matches!(art.section(ABSENT), Err(ArtifactError::MissingSection(k)) if k == ABSENT));
    assert!(matches!(
        art.pod::<u32>(ABSENT),
        Err(ArtifactError::MissingSection(_))
    ));
    assert!(matches!(
        art.bincode::<Meta>(ABSENT),
        Err(ArtifactError::MissingSection(_))
    ));
    assert!(exercise(&buf));
}

#[test]
fn header_layout_is_as_documented() {
    let b = sample();
    assert_eq!(&b[0..8], b"SMASK\0\r\n");
    assert_eq!(le_u32(&b, 8), FORMAT_VERSION);
    assert_eq!(le_u32(&b, 12), 64);
    assert_eq!(le_u32(&b, 16), 0);
    assert_eq!(le_u32(&b, 20), 5);
    assert_eq!(le_u64(&b, 24), b.len() as u64);
    assert_eq!(le_u64(&b, 32), GRAMMAR_HASH);
    assert_eq!(le_u64(&b, 40), VOCAB_HASH);
    assert_eq!(le_u64(&b, 48), 0);
    let mut h = Xxh3Default::new();
    h.update(&b[..56]);
    h.update(&b[64..64 + 5 * 32]);
    assert_eq!(le_u64(&b, 56), h.digest());
    // First entry: U32S, align 4, first payload at align_up(224) = 256, 20 bytes.
    assert_eq!(&b[64..68], b"U32S");
    assert_eq!(le_u32(&b, 68), 4);
    assert_eq!(le_u64(&b, 72), 256);
    assert_eq!(le_u64(&b, 80), 20);
    assert_eq!(le_u64(&b, 88), xxh3_64(&b[256..276]));
    assert_eq!(le_u32(&b, 256), 1);
}

#[test]
fn empty_artifact() {
    let bytes = ArtifactWriter::new(7, 8).finish();
    assert_eq!(bytes.len(), HEADER_LEN);
    let art = Artifact::parse(&bytes).unwrap();
    assert!(art.sections().is_empty());
    let e = art.section(META).unwrap_err();
    assert!(matches!(e, ArtifactError::MissingSection(k) if k == META));
    assert_eq!(e.to_string(), "artifact has no section \"META\"");
}

#[test]
fn cache_line_aligned_elements() {
    let lines: Vec<Line> = (0..3u32).map(|i| Line([i * 3; 16])).collect();
    let mut w = ArtifactWriter::new(0, 0);
    w.add_section(RAW, b"x", 1).unwrap();
    w.add_pod(LINES, &lines).unwrap();
    let buf = AlignedBytes::from_slice(&w.finish());
    let art = Artifact::parse(&buf).unwrap();
    assert_eq!(art.section_info(LINES).unwrap().align, 64);
    assert_eq!(art.pod::<Line>(LINES).unwrap(), lines.as_slice());
}

#[test]
fn truncation_at_every_byte_is_an_error() {
    for bytes in [sample(), ArtifactWriter::new(1, 2).finish()] {
        for cut in 0..bytes.len() {
            let e = parse_err(&bytes[..cut]);
            match e {
                ArtifactError::TooShort { len, needed: 64 } if cut < HEADER_LEN => {
                    assert_eq!(len, cut)
                }
                ArtifactError::LengthMismatch { recorded, actual } if cut >= HEADER_LEN => {
                    assert_eq!((recorded, actual), (bytes.len() as u64, cut as u64))
                }
                e => panic!("cut at {cut}: unexpected {e}"),
            }
        }
        // Trailing data is caught the same way.
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(matches!(
            parse_err(&longer),
            ArtifactError::LengthMismatch { .. }
        ));
    }
}

/// A truncation that also rewrites the recorded length (and reseals the header) must
/// still be caught, by the section bounds, wherever it cuts a section.
#[test]
fn consistent_truncation_at_section_boundaries() {
    let bytes = sample();
    let art = Artifact::parse(&bytes).unwrap();
    let table_end = HEADER_LEN + art.sections().len() * ENTRY_LEN;
    let mut cuts: Vec<usize> = (table_end..bytes.len()).collect();
    for s in art.sections() {
        let (o, e) = (s.offset as usize, (s.offset + s.len) as usize);
        cuts.extend([o.saturating_sub(1), o, o + 1, e.saturating_sub(1), e, e + 1]);
    }
    for cut in cuts
        .into_iter()
        .filter(|&c| c >= table_end && c <= bytes.len())
    {
        let mut t = bytes[..cut].to_vec();
        put_u64(&mut t, OFF_FILE_LEN, cut as u64);
        reseal(&mut t);
        let cuts_a_section = art.sections().iter().any(|s| s.offset + s.len > cut as u64);
        match Artifact::parse(&t) {
            Err(ArtifactError::SectionOutOfBounds { file_len, .. }) if cuts_a_section => {
                assert_eq!(file_len, cut as u64)
            }
            // Only trailing padding was cut: still a valid artifact.
            Ok(_) if !cuts_a_section => {}
            other => panic!("cut at {cut}: unexpected {other:?}"),
        }
    }
}

#[test]
fn every_single_bit_flip_is_caught_by_the_right_check() {
    let bytes = sample();
    let art = Artifact::parse(&bytes).unwrap();
    let sections = art.sections().to_vec();
    let table_end = HEADER_LEN + sections.len() * ENTRY_LEN;
    for pos in 0..bytes.len() {
        for bit in 0..8 {
            let mut b = bytes.clone();
            b[pos] ^= 1 << bit;
            let e = parse_err(&b);
            let in_section = sections
                .iter()
                .find(|s| (s.offset..s.offset + s.len).contains(&(pos as u64)));
            let ok = match (&e, pos) {
                (ArtifactError::BadMagic { .. }, 0..=7) => true,
                (
                    ArtifactError::UnsupportedVersion {
                        supported: FORMAT_VERSION,
                        ..
                    },
                    8..=11,
                ) => true,
                (ArtifactError::BadHeaderLength { .. }, 12..=15) => true,
                (
                    ArtifactError::TableOutOfBounds { .. } | ArtifactError::HeaderChecksum { .. },
                    20..=23,
                ) => true,
                (ArtifactError::LengthMismatch { .. }, 24..=31) => true,
                (ArtifactError::HeaderChecksum { .. }, p) if p < table_end => true,
                (ArtifactError::SectionChecksum { kind, .. }, _) => {
                    in_section.map(|s| s.kind) == Some(*kind)
                }
                (ArtifactError::NonZeroPadding { offset, value }, _) => {
                    in_section.is_none() && *offset == pos as u64 && *value == 1 << bit
                }
                _ => false,
            };
            assert!(ok, "flip of bit {bit} at {pos}: unexpected {e}");
        }
    }
}

#[test]
fn random_bit_flips_in_a_larger_artifact() {
    let bytes = big_sample();
    assert!(bytes.len() > 60_000);
    let mut buf = AlignedBytes::from_slice(&bytes);
    Artifact::parse(&buf).unwrap();
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    for _ in 0..3000 {
        let pos = (rng.next() % bytes.len() as u64) as usize;
        let bit = rng.next() % 8;
        buf.as_mut_bytes()[pos] ^= 1 << bit;
        assert!(
            Artifact::parse(&buf).is_err(),
            "flip of bit {bit} at {pos} went unnoticed"
        );
        buf.as_mut_bytes()[pos] ^= 1 << bit;
    }
    Artifact::parse(&buf).unwrap();
}

#[test]
fn wrong_magic_and_version() {
    let mut b = sample();
    b[..8].copy_from_slice(b"\x7fELF\x02\x01\x01\0");
    let e = parse_err(&b);
    assert!(matches!(e, ArtifactError::BadMagic { found } if &found == b"\x7fELF\x02\x01\x01\0"));
    assert!(e.to_string().contains("not a stackmask artifact"), "{e}");
    assert!(matches!(
        parse_err(b"PK\x03\x04 a zip file, long enough to hold a header ........"),
        ArtifactError::BadMagic { .. }
    ));

    for version in (0..FORMAT_VERSION).chain([FORMAT_VERSION + 1, u32::MAX]) {
        let mut b = sample();
        put_u32(&mut b, OFF_VERSION, version);
        reseal(&mut b);
        let e = parse_err(&b);
        assert!(
            matches!(e, ArtifactError::UnsupportedVersion { found, supported: FORMAT_VERSION } if found == version),
            "{e}"
        );
        assert!(e.to_string().contains(&format!("version {version}")), "{e}");
        // A short file of a future version still reports the version, not "too short".
        assert!(matches!(
            parse_err(&b[..20]),
            ArtifactError::UnsupportedVersion { .. }
        ));
    }
}

#[test]
fn wrong_hashes() {
    let buf = AlignedBytes::from_slice(&sample());
    let art = Artifact::parse(&buf).unwrap();
    let e = art.expect_hashes(GRAMMAR_HASH ^ 1, VOCAB_HASH).unwrap_err();
    assert!(matches!(
        e,
        ArtifactError::Mismatch { what: "grammar", expected, found: GRAMMAR_HASH }
            if expected == GRAMMAR_HASH ^ 1
    ));
    assert!(e.to_string().contains("1111222233334444"), "{e}");
    let e = art.expect_hashes(GRAMMAR_HASH, 42).unwrap_err();
    assert!(matches!(
        e,
        ArtifactError::Mismatch {
            what: "vocabulary",
            expected: 42,
            found: VOCAB_HASH
        }
    ));
    // Both wrong: the grammar is reported first.
    assert!(matches!(
        art.expect_hashes(1, 2),
        Err(ArtifactError::Mismatch {
            what: "grammar",
            ..
        })
    ));
}

/// Structural errors behind a valid header checksum: each gets its specific error.
#[test]
fn crafted_structural_errors() {
    // Two sections: A (100 bytes at 128) and B (10 bytes at 256).
    let base = {
        let mut w = ArtifactWriter::new(1, 2);
        w.add_section(RAW, &[7u8; 100], 1).unwrap();
        w.add_section(META, &[9u8; 10], 1).unwrap();
        w.finish()
    };
    {
        let art = Artifact::parse(&base).unwrap();
        let offs: Vec<_> = art.sections().iter().map(|s| (s.offset, s.len)).collect();
        assert_eq!(offs, [(128, 100), (256, 10)]);
        assert_eq!(base.len(), 320);
    }
    let craft = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut b = base.clone();
        edit(&mut b);
        reseal(&mut b);
        parse_err(&b)
    };

    let e = craft(&|b| put_u64(b, entry(1, ENT_OFFSET), 192));
    assert!(
        matches!(
            e,
            ArtifactError::Overlap {
                first: RAW,
                first_start: 128,
                first_end: 228,
                second: META,
                second_start: 192,
                second_end: 202
            }
        ),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "sections overlap: \"RAW_\" occupies bytes 128..228 and \"META\" occupies 192..202"
    );
    // Same start: still an overlap.
    assert!(matches!(
        craft(&|b| put_u64(b, entry(1, ENT_OFFSET), 128)),
        ArtifactError::Overlap { .. }
    ));

    let e = craft(&|b| put_u64(b, entry(1, ENT_LEN), 65));
    assert!(
        matches!(
            e,
            ArtifactError::SectionOutOfBounds {
                kind: META,
                index: 1,
                offset: 256,
                len: 65,
                file_len: 320
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("\"META\""), "{e}");
    for (off, len) in [(128, u64::MAX), (!63u64, 64), (!63u64, 0), (1 << 40, 1)] {
        let e = craft(&|b| {
            put_u64(b, entry(0, ENT_OFFSET), off);
            put_u64(b, entry(0, ENT_LEN), len);
        });
        assert!(
            matches!(
                e,
                ArtifactError::SectionOutOfBounds {
                    kind: RAW,
                    index: 0,
                    ..
                }
            ),
            "{off} {len}: {e}"
        );
    }

    let e = craft(&|b| put_u64(b, entry(1, ENT_OFFSET), 264));
    assert!(
        matches!(
            e,
            ArtifactError::MisalignedSection {
                kind: META,
                index: 1,
                offset: 264
            }
        ),
        "{e}"
    );

    for off in [0, 64] {
        let e = craft(&|b| put_u64(b, entry(0, ENT_OFFSET), off));
        assert!(
            matches!(
                e,
                ArtifactError::SectionInHeader {
                    kind: RAW,
                    table_end: 128,
                    ..
                }
            ),
            "{e}"
        );
    }

    for align in [0, 3, 12, 128, u32::MAX] {
        let e = craft(&|b| put_u32(b, entry(1, ENT_ALIGN), align));
        assert!(
            matches!(e, ArtifactError::BadAlignment { kind: META, index: 1, align: a } if a == align),
            "{e}"
        );
    }

    let e = craft(&|b| put_u32(b, entry(1, ENT_KIND), RAW.raw()));
    assert!(
        matches!(
            e,
            ArtifactError::DuplicateSection {
                kind: RAW,
                first: 0,
                second: 1
            }
        ),
        "{e}"
    );

    let e = craft(&|b| put_u32(b, OFF_COUNT, u32::MAX));
    assert!(
        matches!(
            e,
            ArtifactError::TableOutOfBounds {
                count: u32::MAX,
                ..
            }
        ),
        "{e}"
    );
    let e = craft(&|b| put_u32(b, OFF_COUNT, 9));
    assert!(
        matches!(
            e,
            ArtifactError::TableOutOfBounds {
                count: 9,
                end: 352,
                file_len: 320
            }
        ),
        "{e}"
    );

    let e = craft(&|b| put_u32(b, OFF_FLAGS, 4));
    assert!(matches!(e, ArtifactError::UnknownFlags { flags: 4 }), "{e}");
    let e = craft(&|b| put_u64(b, OFF_RESERVED, 1 << 63));
    assert!(
        matches!(e, ArtifactError::ReservedNotZero { value } if value == 1 << 63),
        "{e}"
    );
    let e = craft(&|b| put_u32(b, OFF_HEADER_LEN, 72));
    assert!(
        matches!(
            e,
            ArtifactError::BadHeaderLength {
                found: 72,
                expected: 64
            }
        ),
        "{e}"
    );

    // Padding between sections and after the last one must be zero.
    for pos in [228, 255, 266, 319] {
        let e = craft(&|b| b[pos] = 0x5a);
        assert!(
            matches!(e, ArtifactError::NonZeroPadding { offset, value: 0x5a } if offset == pos as u64),
            "{pos}: {e}"
        );
    }

    // A wrong section checksum behind a valid header checksum.
    let mut b = base.clone();
    put_u64(&mut b, entry(1, ENT_CHECKSUM), 12345);
    let c = header_checksum(&b[..64], &b[64..128]);
    put_u64(&mut b, OFF_HEADER_CHECKSUM, c);
    let e = parse_err(&b);
    assert!(
        matches!(
            e,
            ArtifactError::SectionChecksum {
                kind: META,
                offset: 256,
                end: 266,
                stored: 12345,
                ..
            }
        ),
        "{e}"
    );
    // And a wrong header checksum.
    let mut b = base.clone();
    b[OFF_GRAMMAR_HASH] ^= 1;
    assert!(matches!(
        parse_err(&b),
        ArtifactError::HeaderChecksum { table_end: 128, .. }
    ));

    // Zero-length sections are fine anywhere after the table, even at the very end.
    let ok = {
        let mut b = base.clone();
        put_u64(&mut b, entry(1, ENT_OFFSET), 320);
        put_u64(&mut b, entry(1, ENT_LEN), 0);
        for x in &mut b[256..266] {
            *x = 0;
        }
        reseal(&mut b);
        b
    };
    let art = Artifact::parse(&ok).unwrap();
    assert_eq!(art.section(META).unwrap(), b"");
}

#[test]
fn pod_accessor_errors() {
    let mut w = ArtifactWriter::new(0, 0);
    w.add_section(RAW, &[1, 2, 3, 4, 5, 6, 7, 8], 1).unwrap();
    w.add_section(U32S, &[0u8; 6], 4).unwrap();
    w.add_pod(EDGES, &edges()).unwrap();
    let bytes = w.finish();
    let buf = AlignedBytes::from_slice(&bytes);
    let art = Artifact::parse(&buf).unwrap();

    // Declared alignment 1 cannot be read as u32.
    let e = art.pod::<u32>(RAW).unwrap_err();
    assert!(
        matches!(
            e,
            ArtifactError::PodAlignment {
                kind: RAW,
                required: 4,
                declared: 1,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(art.pod::<u8>(RAW).unwrap(), &[1, 2, 3, 4, 5, 6, 7, 8]);

    // 6 bytes are not a whole number of u32.
    let e = art.pod::<u32>(U32S).unwrap_err();
    assert!(
        matches!(
            e,
            ArtifactError::PodLength {
                kind: U32S,
                len: 6,
                size: 4,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("u32"), "{e}");
    assert_eq!(art.pod::<u16>(U32S).unwrap().len(), 3);

    // 80 bytes of Edge are not a whole number of 64-byte Lines; and Line needs 64.
    assert!(matches!(
        art.pod::<Line>(EDGES),
        Err(ArtifactError::PodAlignment { required: 64, .. })
    ));
    assert!(matches!(
        art.pod::<[u64; 3]>(EDGES),
        Err(ArtifactError::PodLength { size: 24, .. })
    ));

    // A buffer that is not aligned: parsing works, in-place arrays do not.
    let mut shifted = AlignedBytes::zeroed(bytes.len() + 1);
    shifted.as_mut_bytes()[1..].copy_from_slice(&bytes);
    let art = Artifact::parse(&shifted[1..]).unwrap();
    let e = art.pod::<Edge>(EDGES).unwrap_err();
    assert!(
        matches!(
            e,
            ArtifactError::UnalignedBuffer {
                kind: EDGES,
                required: 8,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("AlignedBytes"), "{e}");
    assert_eq!(art.pod::<u8>(RAW).unwrap().len(), 8);
    assert_eq!(art.section(EDGES).unwrap().len(), 5 * 16);
}

#[test]
fn bincode_accessor_errors() {
    let good = bincode::serde::encode_to_vec(meta(), bincode::config::standard()).unwrap();
    let mut trailing = good.clone();
    trailing.push(0);
    // A String whose varint length claims 2^40 bytes.
    let mut huge = vec![253u8];
    huge.extend_from_slice(&(1u64 << 40).to_le_bytes());
    huge.extend_from_slice(b"abc");

    let mut w = ArtifactWriter::new(0, 0);
    w.add_section(META, &trailing, 1).unwrap();
    w.add_section(RAW, &[0xff, 0xff, 0xff], 1).unwrap();
    w.add_section(U32S, &huge, 1).unwrap();
    w.add_bincode(EDGES, &vec![7u8; 100]).unwrap();
    let bytes = w.finish();
    let art = Artifact::parse(&bytes).unwrap();

    let e = art.bincode::<Meta>(META).unwrap_err();
    assert!(
        matches!(e, ArtifactError::TrailingBytes { kind: META, used, len, .. }
            if used == good.len() && len == good.len() + 1),
        "{e}"
    );
    assert!(matches!(
        art.bincode::<Meta>(RAW),
        Err(ArtifactError::Decode { kind: RAW, .. })
    ));
    let e = art.bincode::<String>(U32S).unwrap_err();
    assert!(
        matches!(
            e,
            ArtifactError::Decode {
                source: DecodeError::LimitExceeded,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(art.bincode::<Vec<u8>>(EDGES).unwrap(), vec![7u8; 100]);
    assert!(matches!(
        art.bincode_with_limit::<Vec<u8>, 16>(EDGES),
        Err(ArtifactError::Decode {
            source: DecodeError::LimitExceeded,
            ..
        })
    ));
    // The limit counts decoded bytes: 8 for the length, 100 for the elements.
    assert_eq!(
        art.bincode_with_limit::<Vec<u8>, 108>(EDGES).unwrap().len(),
        100
    );
    assert!(art.bincode_with_limit::<Vec<u8>, 107>(EDGES).is_err());
}

#[test]
fn bincode_limit_follows_the_section_length() {
    // 8 bytes whose varint length prefix claims a 200 MiB string: under the 256 MiB
    // cap, so only a limit tied to the section's length refuses it before allocating.
    let mut lying = vec![252u8];
    lying.extend_from_slice(&(200u32 << 20).to_le_bytes());
    lying.extend_from_slice(b"abc");
    // Well-formed payloads at the worst claimed/encoded ratio (8: an integer or a
    // length prefix claims 8 bytes and takes 1) still decode.
    let small_ints = vec![1u64; 100_000];
    let empty_strings = vec![String::new(); 50_000];

    let mut w = ArtifactWriter::new(0, 0);
    w.add_section(RAW, &lying, 1).unwrap();
    w.add_bincode(U32S, &small_ints).unwrap();
    w.add_bincode(EDGES, &empty_strings).unwrap();
    let bytes = w.finish();
    let art = Artifact::parse(&bytes).unwrap();

    let e = art.bincode::<String>(RAW).unwrap_err();
    assert!(
        matches!(
            e,
            ArtifactError::Decode {
                source: DecodeError::LimitExceeded,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(art.bincode::<Vec<u64>>(U32S).unwrap(), small_ints);
    assert_eq!(art.bincode::<Vec<String>>(EDGES).unwrap(), empty_strings);
}

#[test]
fn writer_rejects_bad_sections() {
    let mut w = ArtifactWriter::new(0, 0);
    w.add_section(RAW, b"a", 1).unwrap();
    assert!(matches!(
        w.add_section(RAW, b"b", 1),
        Err(ArtifactError::DuplicateSection {
            kind: RAW,
            first: 0,
            second: 1
        })
    ));
    for align in [0, 3, 128] {
        assert!(matches!(
            w.add_section(META, b"", align),
            Err(ArtifactError::BadAlignment { align: a, .. }) if a == align
        ));
    }
    assert!(matches!(
        w.add_pod(META, &[TooAligned([0; 128])]),
        Err(ArtifactError::BadAlignment { align: 128, .. })
    ));
    // Rejected sections left no trace.
    let art_bytes = w.finish();
    let art = Artifact::parse(&art_bytes).unwrap();
    assert_eq!(art.sections().len(), 1);
    assert_eq!(art.section(RAW).unwrap(), b"a");
}

#[test]
fn write_to_is_atomic_and_reads_back() {
    let dir = std::env::temp_dir().join(format!("smask-artifact-test-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("out.smask");
    fs::write(&path, b"an older artifact").unwrap();

    let w = sample_writer();
    w.write_to(&path).unwrap();
    let buf = AlignedBytes::read_file(&path).unwrap();
    assert_eq!(buf.as_bytes(), w.finish().as_slice());
    assert_eq!(buf.as_ptr() as usize % 64, 0);
    let art = Artifact::parse(&buf).unwrap();
    assert_eq!(art.pod::<Edge>(EDGES).unwrap(), edges().as_slice());
    let names: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["out.smask"], "temporary files left behind");

    let missing = dir.join("no-such-dir").join("x.smask");
    let e = w.write_to(&missing).unwrap_err();
    assert!(
        matches!(&e, ArtifactError::Io { path, .. } if path == &missing),
        "{e}"
    );
    assert!(matches!(
        AlignedBytes::read_file(&missing),
        Err(ArtifactError::Io { .. })
    ));
    let names: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["out.smask"]);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn aligned_bytes() {
    for len in [0, 1, 63, 64, 65, 1000] {
        let src: Vec<u8> = (0..len).map(|i| i as u8).collect();
        let a = AlignedBytes::from_slice(&src);
        assert_eq!(a.len(), len);
        assert_eq!(a.is_empty(), len == 0);
        assert_eq!(&*a, src.as_slice());
        assert_eq!(a.as_ptr() as usize % 64, 0);
        assert_eq!(AlignedBytes::from(src.as_slice()).as_ref(), src.as_slice());
    }
}

#[test]
fn content_hash_is_xxh3_64() {
    // Known answer of XXH3_64bits(""), seed 0: pins the algorithm.
    assert_eq!(content_hash(b""), 0x2d06_8005_38d3_94c2);
    let data: Vec<u8> = (0..10_000u32).map(|i| (i * 31 % 251) as u8).collect();
    for split in [0, 1, 17, 240, 4096, 10_000] {
        let mut h = ContentHasher::new();
        h.update(&data[..split]);
        h.update(&data[split..]);
        assert_eq!(h.finish(), content_hash(&data));
    }
    assert_ne!(content_hash(b"a"), content_hash(b"b"));
}

#[test]
fn section_kind_display() {
    assert_eq!(META.to_string(), "\"META\"");
    assert_eq!(META.tag(), *b"META");
    assert_eq!(SectionKind::new(META.raw()), META);
    assert_eq!(SectionKind(0x0102_0304).to_string(), "0x01020304");
    assert_eq!(format!("{RAW:?}"), "SectionKind(\"RAW_\")");
}

fn arb_mutations() -> impl Strategy<Value = Vec<(usize, u8)>> {
    prop::collection::vec((any::<usize>(), any::<u8>()), 0..8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..700)) {
        let buf = AlignedBytes::from_slice(&bytes);
        exercise(&buf);
    }

    /// Random bytes behind a valid magic/version/length prefix, resealed, reach the
    /// section checks.
    #[test]
    fn random_tables_never_panic(
        count in 0u32..6,
        rest in prop::collection::vec(any::<u8>(), 0..600),
        entries in prop::collection::vec((any::<u32>(), 0u32..130, 0u64..800, 0u64..300), 0..6),
    ) {
        let mut b = vec![0u8; HEADER_LEN];
        b[..8].copy_from_slice(&MAGIC);
        put_u32(&mut b, OFF_VERSION, FORMAT_VERSION);
        put_u32(&mut b, OFF_HEADER_LEN, HEADER_LEN as u32);
        put_u32(&mut b, OFF_COUNT, count);
        for (kind, align, offset, len) in &entries {
            let mut e = [0u8; ENTRY_LEN];
            put_u32(&mut e, ENT_KIND, kind % 4);
            put_u32(&mut e, ENT_ALIGN, *align);
            put_u64(&mut e, ENT_OFFSET, offset & !63);
            put_u64(&mut e, ENT_LEN, *len);
            b.extend_from_slice(&e);
        }
        b.extend_from_slice(&rest);
        let n = b.len() as u64;
        put_u64(&mut b, OFF_FILE_LEN, n);
        reseal(&mut b);
        let buf = AlignedBytes::from_slice(&b);
        exercise(&buf);
    }

    /// Mutations of a valid artifact: any change is an error unless resealed; nothing
    /// panics either way.
    #[test]
    fn mutations_of_a_valid_artifact(
        muts in arb_mutations(),
        cut in any::<Option<usize>>(),
        extra in prop::collection::vec(any::<u8>(), 0..3),
        fix_len in any::<bool>(),
        reseal_it in any::<bool>(),
    ) {
        let orig = sample();
        let mut b = orig.clone();
        for (pos, v) in &muts {
            let i = pos % b.len();
            b[i] = *v;
        }
        if let Some(c) = cut {
            b.truncate(c % (orig.len() + 1));
        }
        b.extend_from_slice(&extra);
        if fix_len && b.len() >= HEADER_LEN {
            let n = b.len() as u64;
            put_u64(&mut b, OFF_FILE_LEN, n);
        }
        if reseal_it {
            reseal(&mut b);
        }
        let buf = AlignedBytes::from_slice(&b);
        let parsed = exercise(&buf);
        if b != orig && !reseal_it {
            prop_assert!(!parsed, "an unsealed change went unnoticed");
        }
        if b == orig {
            prop_assert!(parsed);
        }
    }

    /// Random writer input round-trips exactly, and every accessor on random contents
    /// returns (an error) without panicking.
    #[test]
    fn random_writer_input_round_trips(
        sections in prop::collection::vec((0u32..12, prop::collection::vec(any::<u8>(), 0..200), 0u32..7), 0..8),
        gh in any::<u64>(),
        vh in any::<u64>(),
    ) {
        let mut w = ArtifactWriter::new(gh, vh);
        let mut expected: Vec<(SectionKind, Vec<u8>, u32)> = Vec::new();
        for (k, data, align_exp) in sections {
            let kind = [META, U32S, EDGES, RAW, LINES, EMPTY].get(k as usize).copied()
                .unwrap_or(SectionKind(k));
            let align = 1u32 << align_exp;
            match w.add_section(kind, &data, align) {
                Ok(()) => expected.push((kind, data, align)),
                Err(ArtifactError::DuplicateSection { .. }) => {
                    prop_assert!(expected.iter().any(|(k, _, _)| *k == kind));
                }
                Err(e) => prop_assert!(false, "unexpected {}", e),
            }
        }
        let bytes = w.finish();
        let buf = AlignedBytes::from_slice(&bytes);
        let art = Artifact::parse(&buf).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(art.sections().len(), expected.len());
        prop_assert_eq!((art.grammar_hash(), art.vocab_hash()), (gh, vh));
        for (s, (kind, data, align)) in art.sections().iter().zip(&expected) {
            prop_assert_eq!(s.kind, *kind);
            prop_assert_eq!(s.align, *align);
            prop_assert_eq!(art.section(*kind).unwrap(), data.as_slice());
        }
        prop_assert!(exercise(&buf));
    }
}
