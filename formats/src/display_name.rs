//! Names in messages. Anonymous terminals are named by their literal or regex, which can
//! be as long as the grammar (a 1 MB literal); a message quoting it whole would be as
//! long. Messages quote names through [`short`], which keeps the start and the end of a
//! long name and says how long it was.

use std::borrow::Cow;

/// Names up to this many bytes are shown whole.
pub const MAX_SHOWN: usize = 80;

/// `name` if it is at most [`MAX_SHOWN`] bytes; else its first 60 and last 12
/// characters around `…`, with its length in bytes.
pub fn short(name: &str) -> Cow<'_, str> {
    if name.len() <= MAX_SHOWN {
        return Cow::Borrowed(name);
    }
    let head: String = name.chars().take(60).collect();
    let tail: String = {
        let mut t: Vec<char> = name.chars().rev().take(12).collect();
        t.reverse();
        t.into_iter().collect()
    };
    Cow::Owned(format!("{head}…{tail} ({} bytes)", name.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_keep_both_ends_and_their_length() {
        assert_eq!(short("\"abc\""), "\"abc\"");
        let long = format!("\"{}\"", "é".repeat(500_000));
        let s = short(&long);
        assert!(s.len() < 200, "{s}");
        assert!(
            s.starts_with("\"éé") && s.ends_with("éé\" (1000002 bytes)"),
            "{s}"
        );
    }
}
