//! Strings with large length bounds (`maxLength: 65535`) as a chain of chunk lexemes.
//!
//! One terminal `"[any character]{0,65535}"` is exact but its NFA copies the encoded
//! character 65,535 times (past the lexer's 64 MiB limit) and its DFA would need a
//! state per count. Instead the string is written as the lexemes `"`, then `j` *middle
//! chunks* of exactly [`CHUNK_CHARS`] characters, then a *tail* of fewer than
//! [`CHUNK_CHARS`] characters and the closing quote. A text of `n` characters splits in
//! exactly one way (`j = n / CHUNK_CHARS`: a middle chunk never contains a quote, a
//! tail is shorter than a chunk), so the grammar counts chunks with one nonterminal
//! per `j` and the tail's bounds finish the count — the language is exactly the strings
//! of `min..=max` characters. Under the one-byte lookahead rule nothing changes either:
//! a middle chunk has one length and cannot be extended, and a tail ends in a quote.
//!
//! Only for compact whitespace: with free whitespace an ignored run could stand between
//! two chunks, inside the string.

/// Characters in one middle chunk.
pub const CHUNK_CHARS: u64 = 256;

/// Length bounds above which a string is chunked (below, one terminal is small).
pub const LONG_STRING_CHARS: u64 = 1024;

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

/// Whether a string schema's lengths call for chunks.
pub fn is_long(min: Option<u64>, max: Option<u64>) -> bool {
    max.is_some_and(|m| m > LONG_STRING_CHARS) || min.is_some_and(|m| m > LONG_STRING_CHARS)
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

    #[test]
    fn long_means_past_the_threshold() {
        assert!(is_long(None, Some(65535)) && is_long(Some(2000), None));
        assert!(!is_long(Some(3), Some(LONG_STRING_CHARS)) && !is_long(None, None));
    }
}
