//! Numbers: JSON number text whose value lies in a range, as exact regexes.
//!
//! Integer ranges are finite unions of digit patterns (the classic range-to-regex
//! construction on decimal strings without leading zeros). An integer value may be
//! written `n`, `-0` (for zero) or with a zero fraction (`1.0`, as serde_json prints an
//! integral f64); exponent forms (`1e2`) are not accepted for `integer`, because "the
//! value is integral" is not a regular property of mantissa-and-exponent text.
//!
//! A `number` with bounds is accepted without exponent (same reason: comparing
//! `15e-1` with `1.5` needs arithmetic on the exponent). Integer bounds go through the
//! integer ranges; decimal bounds (`maximum: 10.5`) compare the fraction digit by digit
//! ([`decimal_regex`]). Without bounds a `number` is the full RFC 8259 number syntax.

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

/// A decimal bound on a number: magnitude `int.frac` (fraction digits without trailing
/// zeros), its sign, and whether it is exclusive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecimalBound {
    /// The value is below zero.
    pub negative: bool,
    /// Integer part of the magnitude.
    pub int: u128,
    /// Fraction digits of the magnitude (ASCII, no trailing `0`).
    pub frac: Vec<u8>,
    /// `exclusiveMinimum`/`exclusiveMaximum`.
    pub exclusive: bool,
}

impl DecimalBound {
    /// The bound written by `f64`'s shortest round-trip decimal (`10.5`, `0.001`);
    /// `None` for |x| ≥ 1e36 or non-finite values.
    pub fn from_f64(x: f64, exclusive: bool) -> Option<DecimalBound> {
        if !x.is_finite() || x.abs() >= 1e36 {
            return None;
        }
        let text = format!("{}", x.abs());
        let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
        Some(DecimalBound {
            negative: x < 0.0,
            int: int.parse().ok()?,
            frac: frac.trim_end_matches('0').as_bytes().to_vec(),
            exclusive,
        })
    }

    fn is_zero(&self) -> bool {
        self.int == 0 && self.frac.is_empty()
    }

    /// The same magnitude as a bound on `|x|` (sign dropped).
    fn magnitude(&self) -> DecimalBound {
        DecimalBound {
            negative: false,
            ..self.clone()
        }
    }
}

/// JSON text without exponent of the numbers `x` with `lo ≤ x ≤ hi` (`<` where a bound
/// is exclusive), for decimal bounds; `None`: empty. Values are compared exactly as
/// decimals (`10.50001` is above `10.5`), digit by digit: the text splits into the
/// sign, the integer part (a range of magnitudes) and the fraction, whose digits are
/// compared with each bound's while they are equal so far.
pub fn decimal_regex(lo: Option<&DecimalBound>, hi: Option<&DecimalBound>) -> Option<String> {
    let zero = DecimalBound {
        negative: false,
        int: 0,
        frac: Vec::new(),
        exclusive: false,
    };
    let mut alts = Vec::new();
    // x >= 0, written without `-`: |x| from max(lo, 0) to hi.
    let hi_non_negative = hi.is_none_or(|h| !h.negative);
    if hi_non_negative {
        let from = match lo {
            Some(l) if !l.negative => l.clone(),
            _ => zero.clone(),
        };
        alts.extend(magnitudes_between(&from, hi));
    }
    // `-y`: y = -x from max(-hi, 0) to -lo (y = 0 is `-0`, in range when 0 is).
    let lo_non_positive = lo.is_none_or(|l| l.negative || l.is_zero());
    if lo_non_positive {
        let from = match hi {
            Some(h) if h.negative || h.is_zero() => h.magnitude(),
            _ => zero.clone(),
        };
        let to = lo.map(DecimalBound::magnitude);
        alts.extend(magnitudes_between(&from, to.as_ref()).map(|m| format!("-{m}")));
    }
    (!alts.is_empty()).then(|| format!("(?:{})", alts.join("|")))
}

/// Texts `I(.F)?` (no sign) of the values from `lo` to `hi` (both non-negative).
fn magnitudes_between(lo: &DecimalBound, hi: Option<&DecimalBound>) -> Option<String> {
    let tight = |b: &DecimalBound| Some((b.frac.clone(), b.exclusive));
    let mut alts = Vec::new();
    // Integer parts strictly between the bounds': any fraction.
    if hi.is_none_or(|h| h.int >= lo.int + 2) {
        if let Some(m) = magnitudes(lo.int + 1, hi.map(|h| h.int - 1)) {
            alts.push(format!("{m}(?:\\.[0-9]+)?"));
        }
    }
    // The integer part of `lo` (and of `hi` when they share it).
    if hi.is_none_or(|h| h.int >= lo.int) {
        let upper = hi.filter(|h| h.int == lo.int).and_then(tight);
        if let Some(f) = fraction(tight(lo), upper) {
            alts.push(format!("{}{f}", lo.int));
        }
    }
    // The integer part of `hi` above `lo`'s.
    if let Some(h) = hi.filter(|h| h.int > lo.int) {
        if let Some(f) = fraction(None, tight(h)) {
            alts.push(format!("{}{f}", h.int));
        }
    }
    (!alts.is_empty()).then(|| format!("(?:{})", alts.join("|")))
}

/// A fraction bound still equal so far: its digits and whether it is exclusive.
type Tight = Option<(Vec<u8>, bool)>;

/// The text after an integer part (nothing, or `.` and digits) whose fraction lies
/// between `lo` and `hi` (`None`: that side is free); `None` if there is none.
fn fraction(lo: Tight, hi: Tight) -> Option<String> {
    let mut alts = Vec::new();
    if stop_allowed(0, &lo, &hi) {
        alts.push(String::new());
    }
    if let Some(d) = fraction_digits(0, &lo, &hi, false) {
        alts.push(format!("\\.{d}"));
    }
    (!alts.is_empty()).then(|| format!("(?:{})", alts.join("|")))
}

/// Whether the fraction may end after `i` digits equal to the tight bounds' so far.
fn stop_allowed(i: usize, lo: &Tight, hi: &Tight) -> bool {
    // Ending is below a bound with digits left (it has no trailing zeros), equal to
    // one without.
    let lo_ok = lo.as_ref().is_none_or(|(d, excl)| i >= d.len() && !excl);
    let hi_ok = hi.as_ref().is_none_or(|(d, excl)| i < d.len() || !excl);
    lo_ok && hi_ok
}

/// Digit strings from position `i` on (empty only if `may_stop`), the earlier digits
/// being equal to those of the tight bounds; `None` if there are none.
fn fraction_digits(i: usize, lo: &Tight, hi: &Tight, may_stop: bool) -> Option<String> {
    let past = |t: &Tight| t.as_ref().is_none_or(|(d, _)| i >= d.len());
    if past(lo) && past(hi) {
        // Every remaining bound digit is 0: a tight `lo` is passed by any nonzero digit,
        // a tight `hi` by any nonzero digit too.
        let body = match (lo, hi) {
            (None, None) => "[0-9]*".to_string(),
            (Some((_, excl)), None) => {
                if *excl {
                    "[0-9]*[1-9][0-9]*".into()
                } else {
                    "[0-9]*".into()
                }
            }
            (_, Some((_, excl))) => {
                let lo_excl = lo.as_ref().is_some_and(|(_, e)| *e);
                if *excl || lo_excl {
                    return None;
                }
                "0*".into()
            }
        };
        return Some(if may_stop {
            body
        } else {
            match body.as_str() {
                "[0-9]*" => "[0-9]+".into(),
                "0*" => "0+".into(),
                _ => body,
            }
        });
    }
    let mut alts = Vec::new();
    if may_stop && stop_allowed(i, lo, hi) {
        alts.push(String::new());
    }
    // Digits grouped by what they leave tight: (lo still tight, hi still tight).
    let digit_at = |t: &Tight| t.as_ref().map(|(d, _)| d.get(i).copied().unwrap_or(b'0'));
    let (l, h) = (digit_at(lo), digit_at(hi));
    let mut groups: Vec<((bool, bool), Vec<u8>)> = Vec::new();
    for d in b'0'..=b'9' {
        if l.is_some_and(|l| d < l) || h.is_some_and(|h| d > h) {
            continue;
        }
        let key = (l == Some(d), h == Some(d));
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(d),
            None => groups.push((key, vec![d])),
        }
    }
    for ((lt, ht), digits) in groups {
        let next_lo = if lt { lo.clone() } else { None };
        let next_hi = if ht { hi.clone() } else { None };
        if let Some(rest) = fraction_digits(i + 1, &next_lo, &next_hi, true) {
            let class = if digits.len() == 1 {
                (digits[0] as char).to_string()
            } else {
                digit_class(digits[0], *digits.last().expect("non-empty"))
            };
            alts.push(format!("{class}{rest}"));
        }
    }
    (!alts.is_empty()).then(|| format!("(?:{})", alts.join("|")))
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
    fn decimal_bounds_compare_digit_by_digit() {
        let b = |x: f64, e: bool| DecimalBound::from_f64(x, e).unwrap();
        let cases: Vec<(Option<DecimalBound>, Option<DecimalBound>)> = vec![
            (None, Some(b(10.5, false))),
            (None, Some(b(10.5, true))),
            (Some(b(-0.25, false)), Some(b(1.05, true))),
            (Some(b(-2.5, true)), Some(b(-0.5, false))),
            (Some(b(0.0, true)), Some(b(0.3, false))),
            (Some(b(0.05, false)), None),
            (Some(b(1.5, false)), Some(b(1.75, false))),
            (Some(b(1.5, true)), Some(b(1.5, false))),
            (Some(b(1.5, false)), Some(b(1.5, false))),
            (Some(b(-1.0, true)), Some(b(0.0, true))),
            (Some(b(0.5, false)), Some(b(2.0, false))),
            (Some(b(-2.0, false)), Some(b(-0.5, true))),
        ];
        for (lo, hi) in cases {
            let r = decimal_regex(lo.as_ref(), hi.as_ref()).map(|s| re(&s));
            // Thousandths from -12 to 12, in several spellings of each value.
            for k in -12000i64..=12000 {
                let x = k as f64 / 1000.0;
                let inside = |b: &Option<DecimalBound>, below: bool| {
                    b.as_ref().is_none_or(|b| {
                        let v: f64 = format!(
                            "{}{}.{}",
                            if b.negative { "-" } else { "" },
                            b.int,
                            if b.frac.is_empty() {
                                "0".to_string()
                            } else {
                                String::from_utf8(b.frac.clone()).unwrap()
                            }
                        )
                        .parse()
                        .unwrap();
                        match (below, b.exclusive) {
                            (true, false) => v <= x,
                            (true, true) => v < x,
                            (false, false) => x <= v,
                            (false, true) => x < v,
                        }
                    })
                };
                let want = inside(&lo, true) && inside(&hi, false);
                let (sign, m) = (if k < 0 { "-" } else { "" }, k.unsigned_abs());
                for text in [
                    format!("{sign}{}.{:03}", m / 1000, m % 1000),
                    format!("{sign}{}.{:03}00", m / 1000, m % 1000),
                    format!("{x}"),
                ] {
                    let got = r.as_ref().is_some_and(|r| r.is_match(&text));
                    assert_eq!(got, want, "{text} in {lo:?} .. {hi:?}");
                }
            }
            if let Some(r) = &r {
                assert!(
                    !r.is_match("1e1")
                        && !r.is_match("01.5")
                        && !r.is_match("1.")
                        && !r.is_match(".5")
                );
            }
        }
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
