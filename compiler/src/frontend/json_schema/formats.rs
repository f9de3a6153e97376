//! `format` values as regular languages over characters, where that is exact.
//!
//! Each supported format is the full grammar of its RFC written as a regex (no
//! approximation): `date`, `time`, `date-time` (RFC 3339 §5.6, with month lengths, leap
//! years and leap seconds only at 23:59:60 UTC — finitely many offsets, so regular),
//! `duration` (RFC 3339 Appendix A), `uuid` (RFC 4122), `ipv4` (dotted quad, no leading
//! zeros), `ipv6` (RFC 4291 §2.2 text forms, no zone), `email` (RFC 5321 `Mailbox`),
//! `uri` / `uri-reference` (RFC 3986), `json-pointer` (RFC 6901),
//! `relative-json-pointer`. Formats that are not regular or whose limits cannot be
//! expressed together with their syntax (`hostname`'s 253-character total, `regex`,
//! `idn-*`, `iri*`, `uri-template`) are reported by the caller; formats the
//! specification does not define are annotations (listed as warnings).

/// The character-level Rust regex of a format, or `None` if it has no exact one here.
pub fn format_regex(name: &str) -> Option<String> {
    Some(match name {
        "date" => date(),
        "time" => time(),
        "date-time" => format!("(?:{})[Tt](?:{})", date(), time()),
        "duration" => duration(),
        "uuid" => {
            let h = "[0-9A-Fa-f]";
            format!("{h}{{8}}-{h}{{4}}-{h}{{4}}-{h}{{4}}-{h}{{12}}")
        }
        "ipv4" => ipv4(),
        "ipv6" => ipv6(),
        "email" => email(),
        "uri" => uri(),
        "uri-reference" => format!("(?:{})|(?:{})", uri(), relative_ref()),
        "json-pointer" => "(?:/(?:[^~/]|~[01])*)*".to_string(),
        "relative-json-pointer" => "(?:0|[1-9][0-9]*)(?:#|(?:/(?:[^~/]|~[01])*)*)".to_string(),
        _ => return None,
    })
}

/// Why a format the specification defines has no exact regular form here (for the
/// error message); `None` for the supported ones and for unknown names.
pub fn why_not(name: &str) -> Option<&'static str> {
    Some(match name {
        "hostname" | "idn-hostname" => {
            "its 253-character total length cannot be expressed together with the label syntax"
        }
        "idn-email" | "iri" | "iri-reference" => {
            "internationalized forms (IDNA/RFC 3987) are not implemented"
        }
        "regex" => "ECMA-262 regex syntax is not a regular language",
        "uri-template" => "RFC 6570 templates are not implemented",
        _ => return None,
    })
}

fn date() -> String {
    let d = "[0-9]";
    let year = format!("{d}{{4}}");
    let leap = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)";
    format!(
        "{year}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))|{leap}-02-29"
    )
}

/// RFC 3339 `full-time`; second 60 only where the time is 23:59 UTC.
///
/// The leap-second times are grouped by local hour, then minute, each with the one or
/// two offsets that make it 23:59 UTC: the same language as one alternative per
/// offset, but the pattern is a third shorter and its NFA shares the prefixes (the
/// lexer's determinization and minimization of `date-time` still take ~0.2 s, once per
/// process: its DFA has 11,000 states whatever the pattern).
fn time() -> String {
    let frac = "(?:\\.[0-9]+)?";
    let offset = "(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])";
    // Per local minute of the day: the offsets that put it at 23:59 UTC
    // (local = 23:59 UTC + offset).
    let mut offsets: Vec<Vec<String>> = vec![Vec::new(); 24 * 60];
    offsets[23 * 60 + 59].push("[Zz]|[+-]00:00".to_string());
    for sign in [1i32, -1] {
        for oh in 0..24 {
            for om in 0..60 {
                if oh == 0 && om == 0 {
                    continue;
                }
                let local = (23 * 60 + 59 + sign * (oh * 60 + om)).rem_euclid(24 * 60);
                let sign = if sign > 0 { '+' } else { '-' };
                offsets[local as usize].push(format!("\\{sign}{oh:02}:{om:02}"));
            }
        }
    }
    let hours: Vec<String> = (0..24)
        .map(|h| {
            let minutes: Vec<String> = (0..60)
                .filter(|m| !offsets[h * 60 + m].is_empty())
                .map(|m| format!("{m:02}:60{frac}(?:{})", offsets[h * 60 + m].join("|")))
                .collect();
            format!("{h:02}:(?:{})", minutes.join("|"))
        })
        .collect();
    format!(
        "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]{frac}{offset}|{}",
        hours.join("|")
    )
}

fn duration() -> String {
    let n = "[0-9]+";
    let second = format!("{n}S");
    let minute = format!("{n}M(?:{second})?");
    let hour = format!("{n}H(?:{minute})?");
    let time = format!("T(?:{hour}|{minute}|{second})");
    let day = format!("{n}D");
    let month = format!("{n}M(?:{day})?");
    let year = format!("{n}Y(?:{month})?");
    let date = format!("(?:{day}|{month}|{year})(?:{time})?");
    format!("P(?:{date}|{time}|{n}W)")
}

fn ipv4() -> String {
    let octet = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
    format!("{octet}(?:\\.{octet}){{3}}")
}

fn ipv6() -> String {
    let h = "[0-9A-Fa-f]{1,4}";
    let ls32 = format!("(?:{h}:{h}|{})", ipv4());
    // RFC 3986 §3.2.2 IPv6address, the nine forms.
    let forms = [
        format!("(?:{h}:){{6}}{ls32}"),
        format!("::(?:{h}:){{5}}{ls32}"),
        format!("(?:{h})?::(?:{h}:){{4}}{ls32}"),
        format!("(?:(?:{h}:){{0,1}}{h})?::(?:{h}:){{3}}{ls32}"),
        format!("(?:(?:{h}:){{0,2}}{h})?::(?:{h}:){{2}}{ls32}"),
        format!("(?:(?:{h}:){{0,3}}{h})?::{h}:{ls32}"),
        format!("(?:(?:{h}:){{0,4}}{h})?::{ls32}"),
        format!("(?:(?:{h}:){{0,5}}{h})?::{h}"),
        format!("(?:(?:{h}:){{0,6}}{h})?::"),
    ];
    forms.join("|")
}

fn email() -> String {
    let atext = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]";
    let dot_string = format!("{atext}+(?:\\.{atext}+)*");
    let quoted = "\"(?:[\\x20\\x21\\x23-\\x5B\\x5D-\\x7E]|\\\\[\\x20-\\x7E])*\"";
    let label = "[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?";
    let domain = format!("{label}(?:\\.{label})*");
    let literal = format!(
        "\\[(?:{}|IPv6:(?:{})|[A-Za-z0-9-]*[A-Za-z0-9]:[\\x21-\\x5A\\x5E-\\x7E]+)\\]",
        ipv4(),
        ipv6()
    );
    format!("(?:{dot_string}|{quoted})@(?:{domain}|{literal})")
}

/// RFC 3986 pieces shared by `uri` and `relative-ref`.
struct UriParts {
    authority: String,
    abempty: String,
    absolute: String,
    pchar: String,
    pchar_nc: String,
    query: String,
}

fn uri_parts() -> UriParts {
    let unreserved = "A-Za-z0-9._~\\-";
    let sub_delims = "!$&'()*+,;=";
    let pct = "%[0-9A-Fa-f]{2}";
    let pchar = format!("(?:[{unreserved}{sub_delims}:@]|{pct})");
    let pchar_nc = format!("(?:[{unreserved}{sub_delims}@]|{pct})");
    let userinfo = format!("(?:[{unreserved}{sub_delims}:]|{pct})*");
    let reg_name = format!("(?:[{unreserved}{sub_delims}]|{pct})*");
    let ipvfuture = format!("v[0-9A-Fa-f]+\\.[{unreserved}{sub_delims}:]+");
    let ip_literal = format!("\\[(?:{}|{ipvfuture})\\]", ipv6());
    let host = format!("(?:{ip_literal}|{}|{reg_name})", ipv4());
    let authority = format!("(?:{userinfo}@)?{host}(?::[0-9]*)?");
    let abempty = format!("(?:/{pchar}*)*");
    let absolute = format!("/(?:{pchar}+(?:/{pchar}*)*)?");
    let query = format!("(?:{pchar}|[/?])*");
    UriParts {
        authority,
        abempty,
        absolute,
        pchar,
        pchar_nc,
        query,
    }
}

/// `[scheme ":"] hier-part [ "?" query ] [ "#" fragment ]`: with a scheme (URI, where
/// the path may be rootless) or without (relative-ref, whose first segment has no `:`).
fn uri_like(with_scheme: bool) -> String {
    let p = uri_parts();
    let first = if with_scheme { &p.pchar } else { &p.pchar_nc };
    let (pchar, query) = (&p.pchar, &p.query);
    let hier = format!(
        "//{}{}|{}|{first}+(?:/{pchar}*)*|",
        p.authority, p.abempty, p.absolute
    );
    let scheme = if with_scheme {
        "[A-Za-z][A-Za-z0-9+.-]*:"
    } else {
        ""
    };
    format!("{scheme}(?:{hier})(?:\\?{query})?(?:#{query})?")
}

fn uri() -> String {
    uri_like(true)
}

fn relative_ref() -> String {
    uri_like(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(name: &str, s: &str) -> bool {
        regex_automata::meta::Regex::new(&format!("^(?:{})$", format_regex(name).unwrap()))
            .unwrap()
            .is_match(s)
    }

    #[test]
    fn formats_accept_and_reject_by_their_rfcs() {
        assert!(full("date", "2020-02-29") && !full("date", "2021-02-29"));
        assert!(full("date", "2000-02-29") && !full("date", "1900-02-29"));
        assert!(!full("date", "2020-04-31"));
        assert!(full("time", "23:59:60Z") && full("time", "15:59:60-08:00"));
        assert!(!full("time", "22:59:60Z") && full("time", "08:30:06.283185Z"));
        assert!(full("ipv6", "::1") && full("ipv6", "1::d6:192.168.0.1"));
        assert!(!full("ipv6", "1:2:3:4:5:6:7:8:9") && !full("ipv4", "01.2.3.4"));
        assert!(full("email", "joe.bloggs@example.com") && !full("email", "a..b@c"));
        assert!(full("uri", "http://a.b/c?d#e") && !full("uri", "//a.b/c"));
        assert!(full("uri-reference", "//a.b/c") && !full("uri-reference", "\\\\a"));
        assert!(full("duration", "P4DT12H30M5S") && !full("duration", "PT1D"));
        assert!(!full("duration", "P"));
    }

    /// Second 60 with every local time and every offset (and `Z`): accepted exactly
    /// where local time minus offset is 23:59, by arithmetic independent of the regex.
    #[test]
    fn leap_seconds_at_23_59_utc_only() {
        let re = regex_automata::meta::Regex::new(&format!("^(?:{})$", time())).unwrap();
        let mut offsets: Vec<(String, i32)> = vec![("Z".into(), 0), ("z".into(), 0)];
        for oh in 0..24 {
            for om in 0..60 {
                for (sign, k) in [('+', 1), ('-', -1)] {
                    offsets.push((format!("{sign}{oh:02}:{om:02}"), k * (oh * 60 + om)));
                }
            }
        }
        let mut accepted = 0;
        for local in 0..24 * 60 {
            for (i, (text, minutes)) in offsets.iter().enumerate() {
                // Every local minute with the offsets that fit it, and a sample of the
                // others (all of them is 4 million matches).
                let utc = (local - minutes).rem_euclid(24 * 60);
                if utc != 23 * 60 + 59 && !(i + local as usize).is_multiple_of(97) {
                    continue;
                }
                let t = format!("{:02}:{:02}:60.5{text}", local / 60, local % 60);
                assert_eq!(re.is_match(&t), utc == 23 * 60 + 59, "{t}");
                accepted += usize::from(utc == 23 * 60 + 59);
            }
        }
        // Every local minute but 23:59 has two offsets (`local - 23:59`, behind, and
        // `local + 00:01`, ahead); 23:59 has Z, z, +00:00 and -00:00.
        assert_eq!(accepted, 2 * (24 * 60 - 1) + 4);
        assert!(re.is_match("12:30:59.25+01:00") && !re.is_match("24:00:00Z"));
    }
}
