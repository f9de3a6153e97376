//! What a driver prints (a [`DriverReport`], one JSON object on stdout) and how
//! `stackmask bench` merges the reports with its own rows: one table with the peer /
//! stackmask ratio of every column, or (`--json`) one array of [`Row`]s.

use crate::percentiles::{Row, OPS};
use crate::replay::Rejection;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// A driver's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DriverReport {
    /// `llguidance` or `glrmask`.
    pub engine: String,
    /// The engine's version as the driver was built with it.
    pub version: String,
    /// How the engine was reached, e.g. `crate glrmask =0.5.0, Grammar::from_lark`.
    pub route: String,
    /// Anything a reader of the numbers must know (grammar rewrites, warnings).
    pub notes: Vec<String>,
    /// Percentile rows (compile, load, get_mask, ...).
    pub rows: Vec<Row>,
    /// Tokens of the traces the engine refused.
    pub rejections: Vec<Rejection>,
}

impl DriverReport {
    /// Parses a driver's stdout; every row must name the report's engine.
    pub fn parse(text: &str) -> Result<Self, String> {
        let r: DriverReport =
            serde_json::from_str(text.trim()).map_err(|e| format!("not a driver report: {e}"))?;
        if let Some(row) = r.rows.iter().find(|row| row.engine != r.engine) {
            return Err(format!(
                "the {} driver reported a row for engine {:?}",
                r.engine, row.engine
            ));
        }
        if let Some(row) = r.rows.iter().find(|row| !OPS.contains(&row.op.as_str())) {
            return Err(format!(
                "the {} driver reported an unknown op {:?}",
                r.engine, row.op
            ));
        }
        Ok(r)
    }
}

/// The rows as one JSON array (the output of `stackmask bench --json`).
pub fn rows_json(rows: &[Row]) -> String {
    serde_json::to_string(rows).expect("rows serialize")
}

/// `x` with 3 significant digits at most (never scientific notation).
fn short(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// One table: per operation, stackmask's row, then each peer's row and below it the
/// ratio peer / stackmask of every column (×2.0 = the peer takes twice as long).
pub fn table(rows: &[Row]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<12} {:<11} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "op", "engine", "count", "mean µs", "p50", "p90", "p99", "p99.9", "max"
    );
    for op in OPS {
        let of_op: Vec<&Row> = rows.iter().filter(|r| r.op == op).collect();
        let ours = of_op.iter().find(|r| r.engine == "stackmask");
        let ordered = ours
            .into_iter()
            .chain(of_op.iter().filter(|r| r.engine != "stackmask"));
        for (k, r) in ordered.enumerate() {
            let cols: String = r
                .columns()
                .iter()
                .map(|&c| format!(" {:>9}", short(c)))
                .collect();
            let name = if k == 0 { op } else { "" };
            let _ = writeln!(out, "{name:<12} {:<11} {:>8}{cols}", r.engine, r.count);
            if r.engine == "stackmask" {
                continue;
            }
            let ratios: String = match ours {
                Some(o) => r
                    .columns()
                    .iter()
                    .zip(o.columns())
                    .map(|(&p, s)| {
                        let cell = if s > 0.0 {
                            format!("×{}", short(p / s))
                        } else {
                            "—".into()
                        };
                        format!(" {cell:>9}")
                    })
                    .collect(),
                None => " (stackmask not timed in this run)".into(),
            };
            let _ = writeln!(out, "{:<12} {:<11} {:>8}{ratios}", "", "÷stackmask", "");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(engine: &str, op: &str, p50: f64) -> Row {
        Row {
            engine: engine.into(),
            grammar: "json".into(),
            vocab: "tiktoken:o200k_base".into(),
            op: op.into(),
            count: 10,
            mean_us: p50,
            p50_us: p50,
            p90_us: 2.0 * p50,
            p99_us: 4.0 * p50,
            p999_us: 8.0 * p50,
            max_us: 16.0 * p50,
        }
    }

    #[test]
    fn table_puts_stackmask_first_and_divides_by_it() {
        let rows = vec![
            row("llguidance", "get_mask", 3.0),
            row("stackmask", "get_mask", 1.5),
            row("glrmask", "compile", 50_000.0),
            row("glrmask", "get_mask", 0.75),
        ];
        let t = table(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 1 + 5 + 2, "{t}");
        assert!(lines[1].starts_with("get_mask     stackmask"), "{t}");
        assert!(lines[1].ends_with("     24.0"), "{t}");
        assert!(
            lines[2].contains("llguidance") && lines[2].ends_with("     48.0"),
            "{t}"
        );
        // llguidance / stackmask = 2 in every column.
        assert_eq!(lines[3].matches("×2.00").count(), 6, "{t}");
        assert!(lines[4].contains("glrmask"), "{t}");
        assert_eq!(lines[5].matches("×0.50").count(), 6, "{t}");
        assert!(
            lines[6].starts_with("compile") && lines[6].contains("50000"),
            "{t}"
        );
        assert!(lines[7].contains("stackmask not timed"), "{t}");
    }

    #[test]
    fn json_rows_keep_the_documented_keys() {
        let text = rows_json(&[row("glrmask", "clone", 2.0)]);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let obj = v[0].as_object().unwrap();
        let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "engine", "grammar", "vocab", "op", "count", "mean_us", "p50_us", "p90_us",
                "p99_us", "p999_us", "max_us"
            ]
        );
        assert_eq!(obj["p999_us"], 16.0);
        assert_eq!(obj["engine"], "glrmask");
    }

    #[test]
    fn driver_reports_are_checked() {
        let mut r = DriverReport {
            engine: "glrmask".into(),
            version: "0.5.0".into(),
            route: "crate".into(),
            notes: vec![],
            rows: vec![row("glrmask", "get_mask", 1.0)],
            rejections: vec![],
        };
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(DriverReport::parse(&text).unwrap(), r);
        r.rows.push(row("stackmask", "commit", 1.0));
        let text = serde_json::to_string(&r).unwrap();
        assert!(DriverReport::parse(&text)
            .unwrap_err()
            .contains("\"stackmask\""));
        r.rows.pop();
        r.rows.push(row("glrmask", "mask", 1.0));
        let text = serde_json::to_string(&r).unwrap();
        assert!(DriverReport::parse(&text)
            .unwrap_err()
            .contains("unknown op"));
        assert!(DriverReport::parse("warning: x")
            .unwrap_err()
            .contains("not a driver report"));
    }
}
