//! Strings with length bounds (`maxLength: 1024`) as a chain of chunk lexemes.
//!
//! One terminal `"[any character]{0,1024}"` is exact, but its DFA needs a state per
//! count and per byte of a character in progress (~12,000 states), and every state a
//! token can end in is a lexer boundary that the compiler walks the whole token trie
//! from (`terminal_dwa`); `maxLength: 65535` is past the lexer's NFA limit altogether.
//! Instead the string is written as the lexemes `"`, then `j` *middle chunks* of
//! exactly [`CHUNK_CHARS`] characters, then a *tail* of fewer than [`CHUNK_CHARS`]
//! characters and the closing quote. A text of `n` characters splits in exactly one
//! way (`j = n / CHUNK_CHARS`: a middle chunk never contains a quote, a tail is shorter
//! than a chunk), so the grammar counts chunks with one nonterminal per `j` and the
//! tail's bounds finish the count — the language is exactly the strings of
//! `min..=max` characters. Under the one-byte lookahead rule nothing changes either: a
//! middle chunk has one length and cannot be extended, and a tail ends in a quote.
//! The lexer's states are then bounded by the chunk size, not the length: every
//! chunked string shares the middle chunk and the tail of `0..CHUNK_CHARS` characters,
//! and only the tails at a bound are its own.
//!
//! Only for compact whitespace: with free whitespace an ignored run could stand between
//! two chunks, inside the string.
//!
//! **Blocks.** One nonterminal per count makes the LR automaton one state per count
//! (`maxLength: 32767`: 4,096 counts, 12,000 LR states), and every lexer boundary inside
//! the string reads that count off the stack: each such boundary's Parser DWA had a
//! state and a transition per count, 0.1–0.2 s of compile each. Past
//! [`BLOCKED_FROM_CHUNKS`] chunks the count has two digits instead ([`block_plan`]):
//! whole blocks of `b` chunks read (`O(a)`, counted), then the chunks of the current
//! block as a flat run (`block → chunk^b`, `rest → chunk^r tail`, `r < b`), where the
//! parser only shifts: a token inside a block reads one state off the stack. A text
//! still splits one way (`a`, `r` and the tail are the quotient and remainders of its
//! length), the parser still decides with one token of lookahead (the `b`-th chunk
//! always closes a block: a rest is shorter), and the LR states inside a block do not
//! depend on `a` except through the few distinct rest bounds — about `2·√counts` states.

/// Limit on the chunks a counted string reads (`maxLength`, `minLength` over
/// [`CHUNK_CHARS`]): 8,388,608 characters, checked in 0.65 s and 300 MB. A blocked
/// count's rest rules grow with the count itself (`block` rests of up to `block`
/// chunks, `block` ≈ √count): a fuzzed `maxLength` of 422 million characters took 45 s
/// and 22 GB. Real schemas stay far below (SchemaStore's largest: 262,144).
pub const MAX_STRING_CHUNKS: u64 = 1 << 20;

/// Characters in one middle chunk (chosen by measuring compile time, artifact size and
/// lexer boundaries on MaskBench schemas with o200k: README, "MaskBench subset").
pub const CHUNK_CHARS: u64 = 8;

/// One chunk count `j` (`j` middle chunks read): what may follow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Another middle chunk, leading to this step index.
    pub more: Option<usize>,
    /// A tail of `lo..=hi` characters (then the quote) ends the string here.
    pub tail: Option<(u64, u64)>,
}

/// The steps for strings of `min..=max` characters (`max = None`: unbounded) with
/// chunks of `chunk` characters; step 0 is the start. Empty if `min > max`.
pub fn plan(min: u64, max: Option<u64>, chunk: u64) -> Vec<Step> {
    if max.is_some_and(|m| m < min) {
        return Vec::new();
    }
    // Unbounded: past the last step that `min` needs, one step loops on itself.
    let top = match max {
        Some(m) => m / chunk,
        None => min / chunk + 1,
    };
    (0..=top)
        .map(|j| {
            let read = j * chunk;
            let more = match max {
                Some(m) if read + chunk <= m => Some(j as usize + 1),
                Some(_) => None,
                None => Some((j + 1).min(top) as usize),
            };
            let lo = min.saturating_sub(read);
            let hi = match max {
                Some(m) => (chunk - 1).min(m - read),
                None => chunk - 1,
            };
            Step {
                more,
                tail: (lo <= hi).then_some((lo, hi)),
            }
        })
        .collect()
}

/// Chunk counts from which a bounded string counts in blocks ([`block_plan`]).
pub const BLOCKED_FROM_CHUNKS: u64 = 64;

/// Chunks per block for strings of at most `chunks` whole chunks: about the square root,
/// so that the two digits of the count have about as many values each.
pub fn block_size(chunks: u64) -> u64 {
    ((chunks + 1) as f64).sqrt().ceil().max(2.0) as u64
}

/// After `a` whole blocks: whether another may follow, and the characters `lo..=hi`
/// (fewer than a block's) that may end the string there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockStep {
    /// Another whole block may follow.
    pub more: bool,
    /// The rest of the string after `a` blocks: `lo..=hi` characters.
    pub rest: Option<(u64, u64)>,
}

/// The steps, per number of whole blocks `a` (index), for strings of `min..=max`
/// characters in blocks of `block` chunks of `chunk` characters.
pub fn block_plan(min: u64, max: u64, chunk: u64, block: u64) -> Vec<BlockStep> {
    if max < min {
        return Vec::new();
    }
    let span = block * chunk;
    (0..=max / span)
        .map(|a| {
            let read = a * span;
            let lo = min.saturating_sub(read);
            let hi = (span - 1).min(max - read);
            BlockStep {
                more: read + span <= max,
                rest: (lo <= hi).then_some((lo, hi)),
            }
        })
        .collect()
}

/// How a rest of `lo..=hi` characters (fewer than `block` chunks) splits: per count
/// `r` of whole chunks, the tail lengths `t_lo..=t_hi` (`t < chunk`) that complete it.
pub fn rest_splits(lo: u64, hi: u64, chunk: u64, block: u64) -> Vec<(u64, u64, u64)> {
    (0..block)
        .filter_map(|r| {
            let read = r * chunk;
            if hi < read {
                return None;
            }
            let t_lo = lo.saturating_sub(read);
            let t_hi = (chunk - 1).min(hi - read);
            (t_lo <= t_hi).then_some((r, t_lo, t_hi))
        })
        .collect()
}

/// Whether a string's length bounds call for chunks of `chunk` characters: a bound
/// reaches a whole chunk (below, the single terminal is no larger than a tail).
pub fn is_chunked(min: Option<u64>, max: Option<u64>, chunk: u64) -> bool {
    max.is_some_and(|m| m >= chunk) || min.is_some_and(|m| m >= chunk)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lengths the steps derive, each with the number of its derivations.
    fn lengths(steps: &[Step], chunk: u64, cap: u64) -> Vec<(u64, usize)> {
        let mut out: Vec<(u64, usize)> = Vec::new();
        if steps.is_empty() {
            return out;
        }
        // (step, characters read) pairs, breadth first, cut at `cap` characters.
        let mut frontier = vec![(0usize, 0u64)];
        while let Some((s, read)) = frontier.pop() {
            if let Some((lo, hi)) = steps[s].tail {
                for n in lo..=hi {
                    match out.iter_mut().find(|(l, _)| *l == read + n) {
                        Some(e) => e.1 += 1,
                        None => out.push((read + n, 1)),
                    }
                }
            }
            if let Some(next) = steps[s].more {
                if read + chunk <= cap {
                    frontier.push((next, read + chunk));
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn every_length_in_bounds_once() {
        for chunk in [1u64, 2, 4, 5] {
            for min in 0..14u64 {
                for max in (0..20u64).map(Some).chain([None]) {
                    let steps = plan(min, max, chunk);
                    let cap = 30;
                    let got = lengths(&steps, chunk, cap);
                    let want: Vec<(u64, usize)> = (min..=max.unwrap_or(cap))
                        .filter(|n| *n + chunk <= cap)
                        .map(|n| (n, 1))
                        .collect();
                    let got: Vec<(u64, usize)> =
                        got.into_iter().filter(|(n, _)| *n + chunk <= cap).collect();
                    assert_eq!(got, want, "chunk {chunk} min {min} max {max:?}");
                }
            }
        }
    }

    /// The block plan derives every length in bounds exactly once, and the count of
    /// chunks in a block never reaches the block (the parser closes it there).
    #[test]
    fn blocks_derive_every_length_in_bounds_once() {
        for chunk in [1u64, 2, 3] {
            for block in [2u64, 3, 5] {
                let span = chunk * block;
                for min in 0..(3 * span + 2) {
                    for max in min.saturating_sub(1)..(4 * span + 2) {
                        let plan = block_plan(min, max, chunk, block);
                        let mut count = vec![0usize; (5 * span + 4) as usize];
                        for (a, step) in plan.iter().enumerate() {
                            if a > 0 {
                                assert!(plan[a - 1].more, "block {a} reachable");
                            }
                            let Some((lo, hi)) = step.rest else { continue };
                            assert!(hi < span);
                            for (r, t_lo, t_hi) in rest_splits(lo, hi, chunk, block) {
                                assert!(r < block && t_hi < chunk);
                                for t in t_lo..=t_hi {
                                    count[(a as u64 * span + r * chunk + t) as usize] += 1;
                                }
                            }
                        }
                        for (n, &c) in count.iter().enumerate() {
                            let want = usize::from((min..=max).contains(&(n as u64)));
                            assert_eq!(c, want, "chunk {chunk} block {block} {min}..={max}: {n}");
                        }
                    }
                }
            }
        }
        assert_eq!(block_size(4095), 64);
        assert_eq!(block_size(BLOCKED_FROM_CHUNKS), 9);
    }

    #[test]
    fn chunked_from_one_whole_chunk() {
        let c = CHUNK_CHARS;
        assert!(is_chunked(None, Some(65535), c) && is_chunked(Some(c), None, c));
        assert!(is_chunked(Some(1), Some(c), c));
        assert!(!is_chunked(Some(1), Some(c - 1), c) && !is_chunked(Some(1), None, c));
        assert!(!is_chunked(None, None, c));
    }
}
