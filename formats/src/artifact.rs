//! The `.smask` artifact container: one file, written once by the offline compiler,
//! mapped read-only by every serving process and used in place.
//!
//! This module knows nothing about what the sections *contain* (the compiler and the
//! runtime decide that); it provides a generic, versioned, checksummed, sectioned
//! container with a writer ([`ArtifactWriter`]) and a fully validating reader
//! ([`Artifact::parse`]). The byte layout is specified in `formats/ARTIFACT.md`.
//!
//! Why the layout is what it is:
//!
//! - **A fixed 64-byte header, then a table of 32-byte section entries, then payloads.**
//!   Everything the loader needs to validate the file is in one contiguous prefix, so a
//!   single checksum covers it, and every field sits at a fixed, naturally aligned offset.
//! - **Payloads start at multiples of 64 bytes.** An mmap base is page-aligned, so every
//!   section is then 64-byte aligned in memory: any `#[repr(C)]` [`Pod`] array (element
//!   alignment up to 64, i.e. a cache line) can be borrowed in place with
//!   [`Artifact::pod`], with no copy and no `unsafe`. A `Vec<u8>` read from disk is only
//!   1-aligned, which is why [`AlignedBytes`] exists.
//! - **Little-endian throughout**, including the in-place arrays (every host we serve on
//!   is little-endian; on a big-endian host [`Artifact::pod`] refuses rather than
//!   misreads).
//! - **A checksum per section and one over header + table (xxh3-64),** and every byte
//!   outside the sections must be zero, so *every* byte of the file is covered: a
//!   truncated, corrupted or hand-edited file is an error at load time, never a panic or
//!   a wrong mask later. xxh3 runs at memory bandwidth (well over 10 GB/s with SSE2), so
//!   verifying a tens-of-MB artifact costs a few milliseconds, inside the 10 ms budget.
//! - **Hashes of the grammar source and of the vocabulary in the header,** so a serving
//!   process can refuse an artifact built for another tokenizer
//!   ([`Artifact::expect_hashes`]). Compute them with [`content_hash`].
//! - **Metadata in bincode** (`bincode::config::standard()`, decoded with a size limit
//!   bounded by the section's length, so a corrupt length prefix cannot allocate more
//!   than a small multiple of the file), **large arrays as raw `Pod` slices.**

use std::fmt;
use std::io::Read;
use std::ops::Deref;
use std::path::{Path, PathBuf};

use bytemuck::{Pod, PodCastError, Zeroable};
use serde::de::DeserializeOwned;
use serde::Serialize;
use thiserror::Error;
use xxhash_rust::xxh3::{xxh3_64, Xxh3Default};

#[cfg(test)]
mod tests;

/// The 8 bytes every artifact starts with. The `\0\r\n` tail makes text-mode transfers
/// and "is this a text file" heuristics visibly damage the file, as in PNG.
pub const MAGIC: [u8; 8] = *b"SMASK\0\r\n";

/// The format version this build writes and the only one it reads. Any change to the
/// container layout bumps it, and so does a change to what a stackmask artifact must
/// contain (see `ARTIFACT.md`, "Versioning"): version 2 added the Parser DWA and
/// version 3 the ignore follow sets (exact masks at greedy dead ends) and version 4
/// factored Parser DWA states (forks) and run-encoded token sets, version 5 token-set
/// chunks aligned to 8-word blocks, and version 6 the LR tables stored by row
/// displacement (sections `LRAB`/`LRAK`/`LRAX`, `LRGB`/`LRGK`/`LRGT`), version 7
/// lexer tables with a column per byte class (section `DFAC`), and version 8 a
/// terminal's language as a difference in `META`'s grammar (`Terminal::difference`), so
/// an older artifact is refused with a "recompile" message instead of a missing
/// section, a bincode error or a validation error.
pub const FORMAT_VERSION: u32 = 8;

/// Length in bytes of the fixed header (format versions 1 and 2).
pub const HEADER_LEN: usize = 64;

/// Length in bytes of one section-table entry.
pub const ENTRY_LEN: usize = 32;

/// Every section payload starts at a file offset that is a multiple of this.
pub const SECTION_ALIGN: usize = 64;

/// The largest element alignment a section may declare (it must also be a power of two).
pub const MAX_ELEMENT_ALIGN: u32 = 64;

/// Largest bincode size limit [`Artifact::bincode`] uses: decoding a section may claim
/// at most this many bytes of decoded data (256 MiB), however long the section. Arrays
/// that large belong in [`Artifact::pod`] sections anyway;
/// [`Artifact::bincode_with_limit`] sets any limit.
pub const BINCODE_LIMIT: usize = 256 << 20;

/// Decoded bytes a well-formed bincode payload claims per payload byte, at most.
///
/// bincode's limit counts what decoding *claims*, before it allocates: every integer
/// claims its in-memory size (8 for a `u64` or a length prefix, whose varint encoding
/// is at least 1 byte), and a string or byte vector claims its length, which its bytes
/// occupy in the payload. So a payload of `n` bytes claims at most `8 n` unless a
/// length prefix lies; [`Artifact::bincode`] caps the limit near that, and a 12-byte
/// section claiming a 200 MB string fails before anything is allocated.
pub const BINCODE_EXPANSION: usize = 8;

/// The smallest limit [`Artifact::bincode`] uses, so that tiny sections need no care.
const BINCODE_MIN_LIMIT: usize = 1 << 12;

// Header field offsets (format versions 1 and 2). See ARTIFACT.md.
const OFF_VERSION: usize = 8;
const OFF_HEADER_LEN: usize = 12;
const OFF_FLAGS: usize = 16;
const OFF_COUNT: usize = 20;
const OFF_FILE_LEN: usize = 24;
const OFF_GRAMMAR_HASH: usize = 32;
const OFF_VOCAB_HASH: usize = 40;
const OFF_RESERVED: usize = 48;
const OFF_HEADER_CHECKSUM: usize = 56;

// Section-table entry field offsets.
const ENT_KIND: usize = 0;
const ENT_ALIGN: usize = 4;
const ENT_OFFSET: usize = 8;
const ENT_LEN: usize = 16;
const ENT_CHECKSUM: usize = 24;

/// The hash used for the grammar and vocabulary fields of the header: xxh3-64 of
/// `bytes`. Deterministic across platforms and releases (the algorithm is frozen by
/// its specification), which is what the header comparison needs. It is not a
/// cryptographic hash: it detects accidents, not adversaries.
pub fn content_hash(bytes: &[u8]) -> u64 {
    xxh3_64(bytes)
}

/// Streaming form of [`content_hash`], for inputs that are not one contiguous slice
/// (e.g. a vocabulary's token bytes followed by its kinds): `update` with each piece,
/// then `finish`. The result equals [`content_hash`] of the concatenation, so pieces are
/// not delimited: length-prefix variable-length pieces when the split matters.
#[derive(Clone)]
pub struct ContentHasher(Xxh3Default);

impl ContentHasher {
    /// A hasher that has seen no bytes.
    pub fn new() -> Self {
        ContentHasher(Xxh3Default::new())
    }

    /// Feeds more bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The hash of everything fed so far (the hasher can keep going).
    pub fn finish(&self) -> u64 {
        self.0.digest()
    }
}

impl Default for ContentHasher {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ContentHasher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ContentHasher")
            .field(&format_args!("{:016x}", self.finish()))
            .finish()
    }
}

/// What a section holds, as a `u32` in the section table. By convention the value is a
/// four-character ASCII tag read little-endian ([`SectionKind::from_tag`]), so it shows
/// up readably in a hex dump and in error messages (`section "LRTB"`). The container
/// gives kinds no meaning; the crates that write and read a section agree on its kind.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SectionKind(pub u32);

impl SectionKind {
    /// A kind from its raw table value.
    pub const fn new(raw: u32) -> Self {
        SectionKind(raw)
    }

    /// A kind from a four-byte tag, e.g. `SectionKind::from_tag(*b"META")`. Change the
    /// tag (`b"LRT2"`) when a section's encoding changes incompatibly.
    pub const fn from_tag(tag: [u8; 4]) -> Self {
        SectionKind(u32::from_le_bytes(tag))
    }

    /// The raw table value.
    pub const fn raw(self) -> u32 {
        self.0
    }

    /// The four tag bytes (the raw value in little-endian order).
    pub const fn tag(self) -> [u8; 4] {
        self.0.to_le_bytes()
    }
}

impl fmt::Display for SectionKind {
    /// `"META"` when the tag is printable ASCII, otherwise the raw value in hex.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tag = self.tag();
        if tag.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
            // All ASCII, so each byte is one char.
            let s: String = tag.iter().map(|&b| char::from(b)).collect();
            write!(f, "\"{s}\"")
        } else {
            write!(f, "{:#010x}", self.0)
        }
    }
}

impl fmt::Debug for SectionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SectionKind({self})")
    }
}

/// Everything that can be wrong with an artifact, or with a request to read or write
/// one. Messages say what is wrong and where: the byte offset, the section, the values
/// found and expected.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ArtifactError {
    /// The input is shorter than the fixed header.
    #[error("not a stackmask artifact: {len} bytes, shorter than the {needed}-byte header")]
    TooShort {
        /// Length of the input.
        len: usize,
        /// Length of the fixed header.
        needed: usize,
    },
    /// The first 8 bytes are not [`MAGIC`].
    #[error(
        "not a stackmask artifact: bytes 0..8 are b\"{}\", expected b\"{}\"",
        .found.escape_ascii(),
        MAGIC.escape_ascii()
    )]
    BadMagic {
        /// The 8 bytes found at offset 0.
        found: [u8; 8],
    },
    /// The format version (offset 8) is not one this build reads.
    #[error(
        "unsupported artifact format version {found} at offset 8 (this build reads version \
         {supported}); recompile the artifact with a matching stackmask"
    )]
    UnsupportedVersion {
        /// Version recorded in the file.
        found: u32,
        /// The version this build reads ([`FORMAT_VERSION`]).
        supported: u32,
    },
    /// The header length field (offset 12) is not [`HEADER_LEN`].
    #[error("header length {found} at offset 12, expected {expected} for format version {FORMAT_VERSION}")]
    BadHeaderLength {
        /// Value found.
        found: u32,
        /// Value required.
        expected: u32,
    },
    /// The file length recorded at offset 24 differs from the actual length.
    #[error(
        "file length mismatch: the header (offset 24) records {recorded} bytes but the input \
         is {actual} bytes (truncated, or trailing data)"
    )]
    LengthMismatch {
        /// Length recorded in the header.
        recorded: u64,
        /// Actual length of the input.
        actual: u64,
    },
    /// The section table (offset 64, `count` entries) does not fit in the file.
    #[error(
        "section table of {count} entries spans bytes 64..{end}, past the end of the \
         {file_len}-byte file (corrupt section count at offset 20)"
    )]
    TableOutOfBounds {
        /// Section count from the header.
        count: u32,
        /// Where the table would end.
        end: u64,
        /// Length of the file.
        file_len: u64,
    },
    /// The checksum over the header and section table does not match.
    #[error(
        "header checksum mismatch: offset 56 stores {stored:#018x}, the header and section \
         table (bytes 0..{table_end}) hash to {computed:#018x}: corrupt header or table"
    )]
    HeaderChecksum {
        /// Checksum stored at offset 56.
        stored: u64,
        /// Checksum computed over bytes `0..56` and `64..table_end`.
        computed: u64,
        /// End of the section table.
        table_end: u64,
    },
    /// Flag bits this build does not know are set (offset 16).
    #[error("unknown header flags {flags:#010x} at offset 16 (format version {FORMAT_VERSION} defines none)")]
    UnknownFlags {
        /// The flags field.
        flags: u32,
    },
    /// The reserved header field (offset 48) is not zero.
    #[error("reserved header field at offset 48 is {value:#x}, must be 0")]
    ReservedNotZero {
        /// The value found.
        value: u64,
    },
    /// A section declares an element alignment that is not a power of two in 1..=64.
    #[error(
        "section {kind} (table entry {index}): element alignment {align} is not a power of two \
         between 1 and 64"
    )]
    BadAlignment {
        /// The section.
        kind: SectionKind,
        /// Its index in the section table (or in the writer's insertion order).
        index: usize,
        /// The declared alignment.
        align: u32,
    },
    /// A section's file offset is not a multiple of [`SECTION_ALIGN`].
    #[error("section {kind} (table entry {index}): offset {offset} is not a multiple of 64")]
    MisalignedSection {
        /// The section.
        kind: SectionKind,
        /// Its index in the section table.
        index: usize,
        /// Its file offset.
        offset: u64,
    },
    /// A section starts inside the header or the section table.
    #[error(
        "section {kind} (table entry {index}): offset {offset} lies inside the header and \
         section table, which end at {table_end}"
    )]
    SectionInHeader {
        /// The section.
        kind: SectionKind,
        /// Its index in the section table.
        index: usize,
        /// Its file offset.
        offset: u64,
        /// End of the section table.
        table_end: u64,
    },
    /// A section extends past the end of the file (or `offset + length` overflows).
    #[error(
        "section {kind} (table entry {index}): {len} bytes at offset {offset} extend past the \
         end of the {file_len}-byte file"
    )]
    SectionOutOfBounds {
        /// The section.
        kind: SectionKind,
        /// Its index in the section table.
        index: usize,
        /// Its file offset.
        offset: u64,
        /// Its length.
        len: u64,
        /// Length of the file.
        file_len: u64,
    },
    /// Two table entries have the same kind.
    #[error("duplicate section {kind}: table entries {first} and {second}")]
    DuplicateSection {
        /// The repeated kind.
        kind: SectionKind,
        /// Index of the first entry with that kind.
        first: usize,
        /// Index of the second.
        second: usize,
    },
    /// Two sections share bytes.
    #[error(
        "sections overlap: {first} occupies bytes {first_start}..{first_end} and {second} \
         occupies {second_start}..{second_end}"
    )]
    Overlap {
        /// The section that starts first.
        first: SectionKind,
        /// Its start offset.
        first_start: u64,
        /// Its end offset.
        first_end: u64,
        /// The section that starts inside it.
        second: SectionKind,
        /// Its start offset.
        second_start: u64,
        /// Its end offset.
        second_end: u64,
    },
    /// A byte outside the header, the table and every section is not zero.
    #[error("byte {value:#04x} at offset {offset} lies outside every section and must be zero")]
    NonZeroPadding {
        /// File offset of the byte.
        offset: u64,
        /// Its value.
        value: u8,
    },
    /// A section's payload does not match its checksum.
    #[error(
        "section {kind} (bytes {offset}..{end}): checksum mismatch, table stores \
         {stored:#018x}, payload hashes to {computed:#018x}: corrupt data"
    )]
    SectionChecksum {
        /// The section.
        kind: SectionKind,
        /// Start offset of its payload.
        offset: u64,
        /// End offset of its payload.
        end: u64,
        /// Checksum stored in the table.
        stored: u64,
        /// Checksum of the payload.
        computed: u64,
    },
    /// A section the caller asked for is not in the artifact.
    #[error("artifact has no section {0}")]
    MissingSection(SectionKind),
    /// A section was asked for as `&[T]` but declares a smaller element alignment than
    /// `T` needs: it was written as something else.
    #[error(
        "section {kind}: declared element alignment {declared} is less than the \
         {required}-byte alignment of {type_name} (written as a different type?)"
    )]
    PodAlignment {
        /// The section.
        kind: SectionKind,
        /// The requested element type.
        type_name: &'static str,
        /// `align_of::<T>()`.
        required: usize,
        /// Alignment declared in the table.
        declared: u32,
    },
    /// The section is not aligned in memory for `T`: the buffer the artifact was parsed
    /// from does not start at a 64-byte aligned address.
    #[error(
        "section {kind} (file offset {offset}) is not {required}-byte aligned in memory: parse \
         the artifact from a 64-byte aligned buffer (an mmap, or AlignedBytes), not a Vec<u8>"
    )]
    UnalignedBuffer {
        /// The section.
        kind: SectionKind,
        /// File offset of the section.
        offset: u64,
        /// Alignment the element type needs.
        required: usize,
    },
    /// The section's length is not a whole number of `T`s.
    #[error(
        "section {kind} is {len} bytes, not a whole number of {type_name} ({size} bytes each)"
    )]
    PodLength {
        /// The section.
        kind: SectionKind,
        /// The requested element type.
        type_name: &'static str,
        /// Section length.
        len: u64,
        /// `size_of::<T>()`.
        size: usize,
    },
    /// In-place arrays are little-endian and this host is not.
    #[error("section {kind}: in-place arrays are little-endian and this host is big-endian")]
    BigEndianHost {
        /// The section.
        kind: SectionKind,
    },
    /// A bincode section did not decode as the requested type (corrupt data, wrong
    /// type, or the size limit was hit).
    #[error("section {kind}: bincode decoding as {type_name} failed: {source}")]
    Decode {
        /// The section.
        kind: SectionKind,
        /// The requested type.
        type_name: &'static str,
        /// bincode's error.
        #[source]
        source: bincode::error::DecodeError,
    },
    /// A bincode section decoded but did not use all of its bytes.
    #[error(
        "section {kind}: a {type_name} decoded from the first {used} of its {len} bytes, \
         leaving trailing bytes (written as a different type?)"
    )]
    TrailingBytes {
        /// The section.
        kind: SectionKind,
        /// The requested type.
        type_name: &'static str,
        /// Bytes the value used.
        used: usize,
        /// Section length.
        len: usize,
    },
    /// A value could not be bincode-encoded.
    #[error("section {kind}: bincode encoding failed: {source}")]
    Encode {
        /// The section.
        kind: SectionKind,
        /// bincode's error.
        #[source]
        source: bincode::error::EncodeError,
    },
    /// A writer holds more sections than the table can count.
    #[error("too many sections: the table holds at most {} entries", u32::MAX)]
    TooManySections,
    /// The artifact was built from a different grammar or vocabulary.
    #[error(
        "artifact was compiled for a different {what}: expected hash {expected:016x}, the \
         artifact records {found:016x}"
    )]
    Mismatch {
        /// `"grammar"` or `"vocabulary"`.
        what: &'static str,
        /// The hash the caller expects.
        expected: u64,
        /// The hash recorded in the artifact.
        found: u64,
    },
    /// A file does not fit in this platform's address space.
    #[error("{}: {len} bytes do not fit in this platform's address space", .path.display())]
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// Its length.
        len: u64,
    },
    /// Reading or writing a file failed.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// One validated section-table entry, as [`Artifact::sections`] lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectionInfo {
    /// What the section holds.
    pub kind: SectionKind,
    /// Declared element alignment (a power of two, at most 64).
    pub align: u32,
    /// File offset of the payload (a multiple of 64).
    pub offset: u64,
    /// Payload length in bytes.
    pub len: u64,
    /// xxh3-64 of the payload.
    pub checksum: u64,
}

/// A parsed, fully validated artifact borrowing the bytes it was parsed from (an mmap,
/// or an [`AlignedBytes`]). Every accessor is bounds-checked and returns an error, never
/// panics, whatever the input was.
#[derive(Clone, Debug)]
pub struct Artifact<'a> {
    bytes: &'a [u8],
    flags: u32,
    grammar_hash: u64,
    vocab_hash: u64,
    sections: Vec<SectionInfo>,
}

/// Little-endian `u32` at `at`. Callers pass ranges they have bounds-checked; an
/// out-of-range read yields 0 instead of panicking.
fn le_u32(bytes: &[u8], at: usize) -> u32 {
    at.checked_add(4)
        .and_then(|end| bytes.get(at..end))
        .and_then(|s| <[u8; 4]>::try_from(s).ok())
        .map_or(0, u32::from_le_bytes)
}

/// Little-endian `u64` at `at`; see [`le_u32`].
fn le_u64(bytes: &[u8], at: usize) -> u64 {
    at.checked_add(8)
        .and_then(|end| bytes.get(at..end))
        .and_then(|s| <[u8; 8]>::try_from(s).ok())
        .map_or(0, u64::from_le_bytes)
}

/// `bytes[start..end]` for file offsets given as `u64`, or `None` if out of range
/// (including offsets that do not fit in `usize`).
fn sub(bytes: &[u8], start: u64, end: u64) -> Option<&[u8]> {
    let start = usize::try_from(start).ok()?;
    let end = usize::try_from(end).ok()?;
    bytes.get(start..end)
}

/// The header checksum: xxh3-64 over bytes `0..56` followed by the section table
/// (`64..table_end`); the checksum field itself is skipped.
fn header_checksum(header: &[u8], table: &[u8]) -> u64 {
    let mut h = Xxh3Default::new();
    h.update(header.get(..OFF_HEADER_CHECKSUM).unwrap_or(header));
    h.update(table);
    h.digest()
}

fn is_valid_align(align: u32) -> bool {
    align.is_power_of_two() && align <= MAX_ELEMENT_ALIGN
}

impl<'a> Artifact<'a> {
    /// Parses and validates an artifact. Everything is checked before this returns, in
    /// this order: length ≥ header, magic, format version, header length, recorded file
    /// length == input length, section table within the file, header checksum, flags,
    /// reserved field; then for every section: element alignment, offset a multiple of
    /// 64, `offset + len` (overflow-checked) within the file and past the table; no
    /// duplicate kinds; no overlaps; every byte outside the sections zero; and every
    /// section checksum. Cost: one xxh3 pass over the file.
    ///
    /// `bytes` may have any address, but [`Artifact::pod`] can only borrow arrays in
    /// place when it is 64-byte aligned: an mmap (page-aligned) or an [`AlignedBytes`].
    pub fn parse(bytes: &'a [u8]) -> Result<Artifact<'a>, ArtifactError> {
        let file_len = bytes.len() as u64;
        if let Some(magic) = bytes.get(..MAGIC.len()) {
            if magic != MAGIC {
                let mut found = [0u8; 8];
                found.copy_from_slice(magic);
                return Err(ArtifactError::BadMagic { found });
            }
        }
        if bytes.len() >= OFF_VERSION + 4 {
            let version = le_u32(bytes, OFF_VERSION);
            if version != FORMAT_VERSION {
                return Err(ArtifactError::UnsupportedVersion {
                    found: version,
                    supported: FORMAT_VERSION,
                });
            }
        }
        let Some(header) = bytes.get(..HEADER_LEN) else {
            return Err(ArtifactError::TooShort {
                len: bytes.len(),
                needed: HEADER_LEN,
            });
        };
        let header_len = le_u32(header, OFF_HEADER_LEN);
        if header_len as usize != HEADER_LEN {
            return Err(ArtifactError::BadHeaderLength {
                found: header_len,
                expected: HEADER_LEN as u32,
            });
        }
        let recorded = le_u64(header, OFF_FILE_LEN);
        if recorded != file_len {
            return Err(ArtifactError::LengthMismatch {
                recorded,
                actual: file_len,
            });
        }
        let count = le_u32(header, OFF_COUNT);
        // Cannot overflow: at most 64 + 32 * (2^32 - 1) < 2^38.
        let table_end = HEADER_LEN as u64 + u64::from(count) * ENTRY_LEN as u64;
        let Some(table) = sub(bytes, HEADER_LEN as u64, table_end) else {
            return Err(ArtifactError::TableOutOfBounds {
                count,
                end: table_end,
                file_len,
            });
        };
        let stored = le_u64(header, OFF_HEADER_CHECKSUM);
        let computed = header_checksum(header, table);
        if stored != computed {
            return Err(ArtifactError::HeaderChecksum {
                stored,
                computed,
                table_end,
            });
        }
        let flags = le_u32(header, OFF_FLAGS);
        if flags != 0 {
            return Err(ArtifactError::UnknownFlags { flags });
        }
        let reserved = le_u64(header, OFF_RESERVED);
        if reserved != 0 {
            return Err(ArtifactError::ReservedNotZero { value: reserved });
        }

        // Section entries, each checked on its own.
        let mut sections = Vec::with_capacity(table.len() / ENTRY_LEN);
        for (index, entry) in table.chunks_exact(ENTRY_LEN).enumerate() {
            let info = SectionInfo {
                kind: SectionKind(le_u32(entry, ENT_KIND)),
                align: le_u32(entry, ENT_ALIGN),
                offset: le_u64(entry, ENT_OFFSET),
                len: le_u64(entry, ENT_LEN),
                checksum: le_u64(entry, ENT_CHECKSUM),
            };
            let kind = info.kind;
            if !is_valid_align(info.align) {
                return Err(ArtifactError::BadAlignment {
                    kind,
                    index,
                    align: info.align,
                });
            }
            if info.offset & (SECTION_ALIGN as u64 - 1) != 0 {
                return Err(ArtifactError::MisalignedSection {
                    kind,
                    index,
                    offset: info.offset,
                });
            }
            if info.offset < table_end {
                return Err(ArtifactError::SectionInHeader {
                    kind,
                    index,
                    offset: info.offset,
                    table_end,
                });
            }
            match info.offset.checked_add(info.len) {
                Some(end) if end <= file_len => {}
                _ => {
                    return Err(ArtifactError::SectionOutOfBounds {
                        kind,
                        index,
                        offset: info.offset,
                        len: info.len,
                        file_len,
                    })
                }
            }
            sections.push(info);
        }

        // No duplicate kinds.
        let mut by_kind: Vec<usize> = (0..sections.len()).collect();
        by_kind.sort_by_key(|&i| (sections.get(i).map(|s| s.kind), i));
        for pair in by_kind.windows(2) {
            if let [a, b] = *pair {
                if let (Some(sa), Some(sb)) = (sections.get(a), sections.get(b)) {
                    if sa.kind == sb.kind {
                        return Err(ArtifactError::DuplicateSection {
                            kind: sa.kind,
                            first: a,
                            second: b,
                        });
                    }
                }
            }
        }

        // No overlaps; everything between sections (and after the last) is zero.
        // All ends were checked above: `offset + len` does not overflow.
        let mut by_offset: Vec<&SectionInfo> = sections.iter().collect();
        by_offset.sort_by_key(|s| (s.offset, s.offset + s.len));
        let mut cursor = table_end;
        let mut prev: Option<&SectionInfo> = None;
        for s in by_offset {
            if let Some(p) = prev {
                if s.offset < p.offset + p.len {
                    return Err(ArtifactError::Overlap {
                        first: p.kind,
                        first_start: p.offset,
                        first_end: p.offset + p.len,
                        second: s.kind,
                        second_start: s.offset,
                        second_end: s.offset + s.len,
                    });
                }
            }
            check_zero(bytes, cursor, s.offset)?;
            cursor = s.offset + s.len;
            prev = Some(s);
        }
        check_zero(bytes, cursor, file_len)?;

        // Section checksums.
        for s in &sections {
            let end = s.offset + s.len;
            let payload = sub(bytes, s.offset, end).ok_or(ArtifactError::SectionOutOfBounds {
                kind: s.kind,
                index: 0,
                offset: s.offset,
                len: s.len,
                file_len,
            })?;
            let computed = xxh3_64(payload);
            if computed != s.checksum {
                return Err(ArtifactError::SectionChecksum {
                    kind: s.kind,
                    offset: s.offset,
                    end,
                    stored: s.checksum,
                    computed,
                });
            }
        }

        Ok(Artifact {
            bytes,
            flags,
            grammar_hash: le_u64(header, OFF_GRAMMAR_HASH),
            vocab_hash: le_u64(header, OFF_VOCAB_HASH),
            sections,
        })
    }

    /// The whole artifact.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The container format version (always [`FORMAT_VERSION`] once parsed).
    pub fn version(&self) -> u32 {
        FORMAT_VERSION
    }

    /// The header flags (format version 1 defines none, so always 0).
    pub fn flags(&self) -> u32 {
        self.flags
    }

    /// Hash of the grammar source the artifact was compiled from ([`content_hash`]).
    pub fn grammar_hash(&self) -> u64 {
        self.grammar_hash
    }

    /// Hash of the vocabulary the artifact was compiled for ([`content_hash`]).
    pub fn vocab_hash(&self) -> u64 {
        self.vocab_hash
    }

    /// Checks that the artifact was compiled from this grammar and for this vocabulary;
    /// the grammar is compared first.
    pub fn expect_hashes(&self, grammar_hash: u64, vocab_hash: u64) -> Result<(), ArtifactError> {
        if self.grammar_hash != grammar_hash {
            return Err(ArtifactError::Mismatch {
                what: "grammar",
                expected: grammar_hash,
                found: self.grammar_hash,
            });
        }
        if self.vocab_hash != vocab_hash {
            return Err(ArtifactError::Mismatch {
                what: "vocabulary",
                expected: vocab_hash,
                found: self.vocab_hash,
            });
        }
        Ok(())
    }

    /// All sections, in section-table order (for `stackmask inspect`).
    pub fn sections(&self) -> &[SectionInfo] {
        &self.sections
    }

    /// Whether a section of this kind is present.
    pub fn has_section(&self, kind: SectionKind) -> bool {
        self.sections.iter().any(|s| s.kind == kind)
    }

    /// The table entry of a section, or [`ArtifactError::MissingSection`].
    pub fn section_info(&self, kind: SectionKind) -> Result<&SectionInfo, ArtifactError> {
        self.sections
            .iter()
            .find(|s| s.kind == kind)
            .ok_or(ArtifactError::MissingSection(kind))
    }

    /// The raw payload of a section, borrowed from the input.
    pub fn section(&self, kind: SectionKind) -> Result<&'a [u8], ArtifactError> {
        let info = self.section_info(kind)?;
        let end = info.offset.saturating_add(info.len);
        sub(self.bytes, info.offset, end).ok_or(ArtifactError::SectionOutOfBounds {
            kind,
            index: 0,
            offset: info.offset,
            len: info.len,
            file_len: self.bytes.len() as u64,
        })
    }

    /// A section as an in-place `&[T]`, without copying. Errors (never panics) if the
    /// section declares a smaller element alignment than `T` needs, if its length is
    /// not a multiple of `size_of::<T>()`, or if the buffer is not aligned in memory
    /// (see [`AlignedBytes`]). `T` must have a platform-independent layout:
    /// `#[repr(C)]`, fixed-size integer fields, no `usize`.
    pub fn pod<T: Pod>(&self, kind: SectionKind) -> Result<&'a [T], ArtifactError> {
        let info = *self.section_info(kind)?;
        if cfg!(target_endian = "big") {
            return Err(ArtifactError::BigEndianHost { kind });
        }
        let type_name = std::any::type_name::<T>();
        let required = std::mem::align_of::<T>();
        if (info.align as usize) < required {
            return Err(ArtifactError::PodAlignment {
                kind,
                type_name,
                required,
                declared: info.align,
            });
        }
        let bytes = self.section(kind)?;
        bytemuck::try_cast_slice(bytes).map_err(|e| match e {
            PodCastError::TargetAlignmentGreaterAndInputNotAligned
            | PodCastError::AlignmentMismatch => ArtifactError::UnalignedBuffer {
                kind,
                offset: info.offset,
                required,
            },
            PodCastError::OutputSliceWouldHaveSlop | PodCastError::SizeMismatch => {
                ArtifactError::PodLength {
                    kind,
                    type_name,
                    len: info.len,
                    size: std::mem::size_of::<T>(),
                }
            }
        })
    }

    /// Decodes a bincode section (`bincode::config::standard()`, as
    /// [`ArtifactWriter::add_bincode`] writes it) with a size limit bounded by the
    /// section's length: at least [`BINCODE_EXPANSION`] times the length (4 KiB at
    /// least), at most 4 times that, and never above [`BINCODE_LIMIT`]. A corrupt
    /// length prefix in a small section is therefore an error, not an allocation of
    /// hundreds of megabytes. A decode error, a hit limit, or trailing bytes are errors.
    pub fn bincode<T: DeserializeOwned>(&self, kind: SectionKind) -> Result<T, ArtifactError> {
        let needed = self
            .section(kind)?
            .len()
            .saturating_mul(BINCODE_EXPANSION)
            .max(BINCODE_MIN_LIMIT);
        // bincode takes the limit as a const generic, so the smallest of a few fixed
        // limits (each 4 times the previous) that covers `needed` is used.
        macro_rules! smallest_covering {
            ($($shift:literal)*) => {
                $(
                    if needed <= 1 << $shift {
                        return self.bincode_with_limit::<T, { 1 << $shift }>(kind);
                    }
                )*
            };
        }
        smallest_covering!(12 14 16 18 20 22 24 26);
        self.bincode_with_limit::<T, BINCODE_LIMIT>(kind)
    }

    /// [`Artifact::bincode`] with an explicit size limit: decoding may claim at most
    /// `LIMIT` bytes of decoded data.
    pub fn bincode_with_limit<T: DeserializeOwned, const LIMIT: usize>(
        &self,
        kind: SectionKind,
    ) -> Result<T, ArtifactError> {
        let bytes = self.section(kind)?;
        let type_name = std::any::type_name::<T>();
        let config = bincode::config::standard().with_limit::<LIMIT>();
        let (value, used) =
            bincode::serde::decode_from_slice::<T, _>(bytes, config).map_err(|source| {
                ArtifactError::Decode {
                    kind,
                    type_name,
                    source,
                }
            })?;
        if used != bytes.len() {
            return Err(ArtifactError::TrailingBytes {
                kind,
                type_name,
                used,
                len: bytes.len(),
            });
        }
        Ok(value)
    }
}

/// Checks that `bytes[start..end]` is all zero (padding between sections).
fn check_zero(bytes: &[u8], start: u64, end: u64) -> Result<(), ArtifactError> {
    if start >= end {
        return Ok(());
    }
    let gap = sub(bytes, start, end).ok_or(ArtifactError::LengthMismatch {
        recorded: end,
        actual: bytes.len() as u64,
    })?;
    match gap.iter().position(|&b| b != 0) {
        None => Ok(()),
        Some(i) => Err(ArtifactError::NonZeroPadding {
            offset: start + i as u64,
            value: gap.get(i).copied().unwrap_or(0),
        }),
    }
}

/// A section waiting to be written.
#[derive(Clone, Debug)]
struct PendingSection {
    kind: SectionKind,
    align: u32,
    bytes: Vec<u8>,
}

/// Builds an artifact in memory: add sections, then [`finish`](ArtifactWriter::finish)
/// or [`write_to`](ArtifactWriter::write_to). Sections are laid out in the order they
/// were added, each at the next multiple of 64 bytes.
#[derive(Clone, Debug)]
pub struct ArtifactWriter {
    grammar_hash: u64,
    vocab_hash: u64,
    sections: Vec<PendingSection>,
}

fn align_up(x: usize) -> usize {
    x.div_ceil(SECTION_ALIGN) * SECTION_ALIGN
}

impl ArtifactWriter {
    /// A writer for an artifact compiled from the grammar and vocabulary with these
    /// [`content_hash`]es.
    pub fn new(grammar_hash: u64, vocab_hash: u64) -> Self {
        ArtifactWriter {
            grammar_hash,
            vocab_hash,
            sections: Vec::new(),
        }
    }

    /// Adds a section holding `bytes`, whose elements need `align`-byte alignment (a
    /// power of two, at most 64; use 1 for unstructured bytes). A kind may appear once.
    pub fn add_section(
        &mut self,
        kind: SectionKind,
        bytes: &[u8],
        align: u32,
    ) -> Result<(), ArtifactError> {
        let index = self.sections.len();
        if !is_valid_align(align) {
            return Err(ArtifactError::BadAlignment { kind, index, align });
        }
        if let Some(first) = self.sections.iter().position(|s| s.kind == kind) {
            return Err(ArtifactError::DuplicateSection {
                kind,
                first,
                second: index,
            });
        }
        if u32::try_from(index + 1).is_err() {
            return Err(ArtifactError::TooManySections);
        }
        self.sections.push(PendingSection {
            kind,
            align,
            bytes: bytes.to_vec(),
        });
        Ok(())
    }

    /// Adds a section holding `items` as raw little-endian memory, to be read back in
    /// place with [`Artifact::pod`]. The declared alignment is `align_of::<T>()`, which
    /// must be at most 64.
    pub fn add_pod<T: Pod>(&mut self, kind: SectionKind, items: &[T]) -> Result<(), ArtifactError> {
        let align = u32::try_from(std::mem::align_of::<T>()).unwrap_or(u32::MAX);
        self.add_section(kind, bytemuck::cast_slice(items), align)
    }

    /// Adds a section holding `value` encoded with bincode (`config::standard()`), to be
    /// read back with [`Artifact::bincode`]. Declared alignment 1.
    pub fn add_bincode<T: Serialize + ?Sized>(
        &mut self,
        kind: SectionKind,
        value: &T,
    ) -> Result<(), ArtifactError> {
        let bytes = bincode::serde::encode_to_vec(value, bincode::config::standard())
            .map_err(|source| ArtifactError::Encode { kind, source })?;
        self.add_section(kind, &bytes, 1)
    }

    /// The complete artifact: header, section table, payloads, zero padding; the file
    /// length is padded to a multiple of 64.
    pub fn finish(&self) -> Vec<u8> {
        let table_end = HEADER_LEN + self.sections.len() * ENTRY_LEN;
        let mut offsets = Vec::with_capacity(self.sections.len());
        let mut cursor = align_up(table_end);
        for s in &self.sections {
            offsets.push(cursor);
            cursor = align_up(cursor + s.bytes.len());
        }
        let file_len = cursor;
        let mut out = vec![0u8; file_len];

        let put = |out: &mut [u8], at: usize, field: &[u8]| {
            if let Some(dst) = out.get_mut(at..at + field.len()) {
                dst.copy_from_slice(field);
            }
        };
        put(&mut out, 0, &MAGIC);
        put(&mut out, OFF_VERSION, &FORMAT_VERSION.to_le_bytes());
        put(&mut out, OFF_HEADER_LEN, &(HEADER_LEN as u32).to_le_bytes());
        put(&mut out, OFF_FLAGS, &0u32.to_le_bytes());
        put(
            &mut out,
            OFF_COUNT,
            &(self.sections.len() as u32).to_le_bytes(),
        );
        put(&mut out, OFF_FILE_LEN, &(file_len as u64).to_le_bytes());
        put(&mut out, OFF_GRAMMAR_HASH, &self.grammar_hash.to_le_bytes());
        put(&mut out, OFF_VOCAB_HASH, &self.vocab_hash.to_le_bytes());
        put(&mut out, OFF_RESERVED, &0u64.to_le_bytes());
        for (i, (s, &offset)) in self.sections.iter().zip(&offsets).enumerate() {
            let e = HEADER_LEN + i * ENTRY_LEN;
            put(&mut out, e + ENT_KIND, &s.kind.0.to_le_bytes());
            put(&mut out, e + ENT_ALIGN, &s.align.to_le_bytes());
            put(&mut out, e + ENT_OFFSET, &(offset as u64).to_le_bytes());
            put(&mut out, e + ENT_LEN, &(s.bytes.len() as u64).to_le_bytes());
            put(&mut out, e + ENT_CHECKSUM, &xxh3_64(&s.bytes).to_le_bytes());
            put(&mut out, offset, &s.bytes);
        }
        let checksum = header_checksum(
            out.get(..HEADER_LEN).unwrap_or(&[]),
            out.get(HEADER_LEN..table_end).unwrap_or(&[]),
        );
        put(&mut out, OFF_HEADER_CHECKSUM, &checksum.to_le_bytes());
        out
    }

    /// Writes the artifact to `path` atomically
    /// ([`crate::regular_file::write_atomically`]: a temporary file renamed into place,
    /// removed on error; an existing `path` that is not a regular file is refused).
    pub fn write_to(&self, path: impl AsRef<Path>) -> Result<(), ArtifactError> {
        let path = path.as_ref();
        crate::regular_file::write_atomically(path, &self.finish()).map_err(|source| {
            ArtifactError::Io {
                path: path.to_path_buf(),
                source,
            }
        })
    }
}

/// One 64-byte, 64-aligned block of [`AlignedBytes`] storage.
#[derive(Clone, Copy, Pod, Zeroable)]
#[repr(C, align(64))]
struct Block([u8; 64]);

/// An owned byte buffer whose start is 64-byte aligned, for reading an artifact without
/// mmap (tests, platforms without mmap, small artifacts). A `Vec<u8>` is only 1-aligned,
/// so [`Artifact::pod`] on it fails with [`ArtifactError::UnalignedBuffer`]; an mmap
/// base is page-aligned and needs no copy.
#[derive(Clone, Default)]
pub struct AlignedBytes {
    blocks: Vec<Block>,
    len: usize,
}

impl AlignedBytes {
    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> Self {
        AlignedBytes {
            blocks: vec![Block::zeroed(); len.div_ceil(64)],
            len,
        }
    }

    /// A 64-aligned copy of `bytes`.
    pub fn from_slice(bytes: &[u8]) -> Self {
        let mut out = Self::zeroed(bytes.len());
        out.as_mut_bytes().copy_from_slice(bytes);
        out
    }

    /// Reads a whole file into a 64-aligned buffer.
    pub fn read_file(path: impl AsRef<Path>) -> Result<Self, ArtifactError> {
        let path = path.as_ref();
        let io_err = |source| ArtifactError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut f = crate::regular_file::open_regular(path).map_err(io_err)?;
        let len = f.metadata().map_err(io_err)?.len();
        let len_usize = usize::try_from(len).map_err(|_| ArtifactError::FileTooLarge {
            path: path.to_path_buf(),
            len,
        })?;
        let mut out = Self::zeroed(len_usize);
        f.read_exact(out.as_mut_bytes()).map_err(io_err)?;
        Ok(out)
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        let all: &[u8] = bytemuck::cast_slice(&self.blocks);
        all.get(..self.len).unwrap_or(all)
    }

    /// The bytes, mutably.
    pub fn as_mut_bytes(&mut self) -> &mut [u8] {
        let len = self.len;
        let all: &mut [u8] = bytemuck::cast_slice_mut(&mut self.blocks);
        // `len <= blocks * 64` by construction; the fallback is unreachable.
        if len <= all.len() {
            &mut all[..len]
        } else {
            all
        }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Deref for AlignedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsRef<[u8]> for AlignedBytes {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl From<&[u8]> for AlignedBytes {
    fn from(bytes: &[u8]) -> Self {
        Self::from_slice(bytes)
    }
}

impl fmt::Debug for AlignedBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlignedBytes")
            .field("len", &self.len)
            .finish()
    }
}
