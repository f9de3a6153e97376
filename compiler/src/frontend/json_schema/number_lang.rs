//! Numbers: JSON number text whose value lies in a range, as exact regexes.
//!
//! Integer ranges are finite unions of digit patterns (the classic range-to-regex
//! construction on decimal strings without leading zeros). An integer value may be
//! written `n`, `-0` (for zero) or with a zero fraction (`1.0`, as serde_json prints an
//! integral f64); exponent forms (`1e2`) are not accepted for `integer`, because "the
//! value is integral" is not a regular property of mantissa-and-exponent text.
//!
//! A `number` with bounds is accepted without exponent (same reason: comparing
//! `15e-1` with `1.5` needs arithmetic on the exponent); bounds must be integers there
//! (a non-integer bound is reported by the caller). Without bounds a `number` is the
//! full RFC 8259 number syntax.

/// RFC 8259 `number`.
pub const ANY_NUMBER: &str = "-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?";

/// A nonzero fraction (`.5`, `.050`).
const NONZERO_FRACTION: &str = "\\.0*[1-9][0-9]*";
/// A zero fraction, optional.
const ZERO_FRACTION: &str = "(?:\\.0+)?";

/// The decimal text (no sign, no leading zeros) of the integers in `lo..=hi`
/// (`hi = None`: unbounded); `None` if the range is empty.
fn magnitudes(lo: u128, hi: Option<u128>) -> Option<String> {
    if hi.is_some_and(|h| h < lo) {
        return None;
    }
    let lo_s = lo.to_string();
    let mut alts = Vec::new();
    let top_len = hi.map(|h| h.to_string().len());
    for len in lo_s.len()..=top_len.unwrap_or(lo_s.len()) {
        let min_here = if len == lo_s.len() {
            lo
        } else {
            10u128.pow(len as u32 - 1)
        };
        let max_here = match hi {
            Some(h) if len == top_len.unwrap_or(0) => h,
            _ => 10u128.pow(len as u32) - 1,
        };
        if min_here <= max_here {
            alts.push(between(
                min_here.to_string().as_bytes(),
                max_here.to_string().as_bytes(),
            ));
        }
    }
    if hi.is_none() {
        alts.push(format!("[1-9][0-9]{{{},}}", lo_s.len()));
    }
    Some(format!("(?:{})", alts.join("|")))
}

fn digit_class(a: u8, b: u8) -> String {
    if a == b {
        (a as char).to_string()
    } else {
        format!("[{}-{}]", a as char, b as char)
    }
}

fn free(n: usize) -> String {
    match n {
        0 => String::new(),
        1 => "[0-9]".into(),
        _ => format!("[0-9]{{{n}}}"),
    }
}

/// Digit strings of equal length between `lo` and `hi` (inclusive).
fn between(lo: &[u8], hi: &[u8]) -> String {
    if lo.is_empty() {
        return String::new();
    }
    if lo[0] == hi[0] {
        return format!("{}{}", lo[0] as char, between(&lo[1..], &hi[1..]));
    }
    let rest = lo.len() - 1;
    let mut alts = vec![format!("{}{}", lo[0] as char, at_least(&lo[1..]))];
    if lo[0] + 1 < hi[0] {
        alts.push(format!(
            "{}{}",
            digit_class(lo[0] + 1, hi[0] - 1),
            free(rest)
        ));
    }
    alts.push(format!("{}{}", hi[0] as char, at_most(&hi[1..])));
    format!("(?:{})", alts.join("|"))
}

fn at_least(s: &[u8]) -> String {
    if s.iter().all(|&d| d == b'0') {
        return free(s.len());
    }
    let mut alts = vec![format!("{}{}", s[0] as char, at_least(&s[1..]))];
    if s[0] < b'9' {
        alts.push(format!(
            "{}{}",
            digit_class(s[0] + 1, b'9'),
            free(s.len() - 1)
        ));
    }
    format!("(?:{})", alts.join("|"))
}

fn at_most(s: &[u8]) -> String {
    if s.iter().all(|&d| d == b'9') {
        return free(s.len());
    }
    let mut alts = vec![format!("{}{}", s[0] as char, at_most(&s[1..]))];
    if s[0] > b'0' {
        alts.push(format!(
            "{}{}",
            digit_class(b'0', s[0] - 1),
            free(s.len() - 1)
        ));
    }
    format!("(?:{})", alts.join("|"))
}

/// Integer part text (no sign) for magnitudes `lo..=hi`, `0` included when `lo == 0`.
fn int_part(lo: u128, hi: Option<u128>) -> Option<String> {
    if lo == 0 {
        let pos = magnitudes(1, hi);
        Some(match pos {
            Some(p) => format!("(?:0|{p})"),
            None => "0".into(),
        })
    } else {
        magnitudes(lo, hi)
    }
}

/// Inclusive integer bounds (`None`: unbounded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntRange {
    /// Smallest allowed value.
    pub lo: Option<i128>,
    /// Largest allowed value.
    pub hi: Option<i128>,
}

/// The signed integers of a range: `None` if there are none.
fn signed_integers(r: IntRange) -> Option<String> {
    let mut alts = Vec::new();
    // Negative values -m, m >= 1: need -m >= lo (m <= -lo) and -m <= hi (m >= -hi).
    let any_negative = r.lo.is_none_or(|l| l <= -1);
    if any_negative {
        let m_lo = r.hi.map_or(1, |h| (-h).max(1)) as u128;
        let m_hi = r.lo.map(|l| (-l) as u128);
        if let Some(m) = magnitudes(m_lo, m_hi) {
            alts.push(format!("-{m}"));
        }
    }
    if r.lo.is_none_or(|l| l <= 0) && r.hi.is_none_or(|h| h >= 0) {
        alts.push("-?0".into());
    }
    let p_lo = r.lo.map_or(1, |l| l.max(1)) as u128;
    if r.hi.is_none_or(|h| h >= 1) {
        let p_hi = r.hi.map(|h| h as u128);
        if let Some(m) = magnitudes(p_lo, p_hi) {
            alts.push(m);
        }
    }
    if alts.is_empty() {
        None
    } else {
        Some(format!("(?:{})", alts.join("|")))
    }
}

/// JSON text of the integer values in `r` without a fraction (draft 4's `integer`).
pub fn plain_integer_regex(r: IntRange) -> Option<String> {
    signed_integers(r)
}

/// JSON text of the integer values in `r` (zero fractions allowed); `None`: empty.
pub fn integer_regex(r: IntRange) -> Option<String> {
    signed_integers(r).map(|s| format!("{s}{ZERO_FRACTION}"))
}

/// JSON text (no exponent) of the numbers `x` with `lo ≤ x ≤ hi` (or `<` where
/// `lo_excl`/`hi_excl`), for integer bounds; `None`: empty.
pub fn number_regex(
    lo: Option<i128>,
    lo_excl: bool,
    hi: Option<i128>,
    hi_excl: bool,
) -> Option<String> {
    let mut alts = Vec::new();
    // Integral values.
    let ir = IntRange {
        lo: lo.map(|l| if lo_excl { l + 1 } else { l }),
        hi: hi.map(|h| if hi_excl { h - 1 } else { h }),
    };
    if ir.lo.zip(ir.hi).is_none_or(|(a, b)| a <= b) {
        alts.extend(integer_regex(ir));
    }
    // Non-integral positive x = I.F (F ≠ 0), x in (I, I+1): needs I >= lo and I+1 <= hi.
    let p_lo = lo.map_or(0, |l| l.max(0));
    let p_hi = hi.map(|h| h - 1);
    if p_hi.is_none_or(|h| h >= p_lo) {
        if let Some(i) = int_part(p_lo as u128, p_hi.map(|h| h as u128)) {
            alts.push(format!("{i}{NONZERO_FRACTION}"));
        }
    }
    // Non-integral negative x = -(I.F), x in (-(I+1), -I): needs -(I+1) >= lo, -I <= hi.
    let n_lo = hi.map_or(0, |h| (-h).max(0));
    let n_hi = lo.map(|l| -l - 1);
    if n_hi.is_none_or(|h| h >= n_lo) {
        if let Some(i) = int_part(n_lo as u128, n_hi.map(|h| h as u128)) {
            alts.push(format!("-{i}{NONZERO_FRACTION}"));
        }
    }
    if alts.is_empty() {
        None
    } else {
        Some(format!("(?:{})", alts.join("|")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn re(s: &str) -> regex_automata::meta::Regex {
        regex_automata::meta::Regex::new(&format!("^(?:{s})$")).unwrap()
    }

    #[test]
    fn integer_ranges_are_exact() {
        for (lo, hi) in [
            (Some(-37i128), Some(1234i128)),
            (Some(5), None),
            (None, Some(-3)),
            (Some(0), Some(0)),
            (Some(-1000), Some(-999)),
            (Some(10), Some(99)),
        ] {
            let r = re(&integer_regex(IntRange { lo, hi }).unwrap());
            for v in -2000i128..2000 {
                let inside = lo.is_none_or(|l| v >= l) && hi.is_none_or(|h| v <= h);
                assert_eq!(r.is_match(&v.to_string()), inside, "{lo:?}..{hi:?} {v}");
                assert_eq!(r.is_match(&format!("{v}.0")), inside, "{v}.0");
            }
            assert!(!r.is_match("01") && !r.is_match("1e1"));
        }
        assert!(integer_regex(IntRange {
            lo: Some(3),
            hi: Some(2)
        })
        .is_none());
    }

    #[test]
    fn number_ranges_are_exact_on_decimals() {
        for (lo, le, hi, he) in [
            (Some(0i128), false, None, false),
            (Some(0), true, Some(10i128), true),
            (Some(-3), false, Some(2), true),
            (None, false, Some(-2), false),
        ] {
            let r = re(&number_regex(lo, le, hi, he).unwrap());
            for tenths in -100i128..100 {
                let text = format!(
                    "{}{}.{}",
                    if tenths < 0 { "-" } else { "" },
                    tenths.abs() / 10,
                    tenths.abs() % 10
                );
                let x = tenths as f64 / 10.0;
                let inside = lo.is_none_or(|l| if le { x > l as f64 } else { x >= l as f64 })
                    && hi.is_none_or(|h| if he { x < h as f64 } else { x <= h as f64 });
                assert_eq!(r.is_match(&text), inside, "{text} in {lo:?}{le} {hi:?}{he}");
            }
        }
    }
}
