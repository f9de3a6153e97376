//! The command line every peer driver shares:
//!
//! ```text
//! DRIVER bench TRACES        replay the trace file, print a DriverReport (JSON) on stdout
//! DRIVER masks TRACES OUT    write every step's mask to OUT (see mask_dump), print the report
//! ```
//!
//! A driver's `main` calls [`main`] with a closure that compiles the grammar (recording
//! `compile`, and `load` where the engine can save and load) and hands its matcher to
//! [`drive`]. Exit code 0 with a report, 2 with a message on stderr.

use crate::mask_dump;
use crate::percentiles::Timings;
use crate::replay::{self, Rejection, Subject};
use crate::report::DriverReport;
use crate::trace_file::TraceFile;
use std::path::PathBuf;

/// What the driver was asked to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Mode {
    /// Time every call.
    Bench,
    /// Write every step's mask to the file.
    Masks(PathBuf),
}

/// Parses `bench TRACES` or `masks TRACES OUT` (the arguments after the program name).
pub fn parse_args(args: &[String]) -> Result<(PathBuf, Mode), String> {
    match args {
        [m, traces] if m == "bench" => Ok((traces.into(), Mode::Bench)),
        [m, traces, out] if m == "masks" => Ok((traces.into(), Mode::Masks(out.into()))),
        _ => Err("usage: DRIVER bench TRACES | DRIVER masks TRACES OUT".into()),
    }
}

/// What the engine's closure fills in besides timings.
#[derive(Default)]
pub struct Outcome {
    /// Notes for the report.
    pub notes: Vec<String>,
    /// Refused tokens.
    pub rejections: Vec<Rejection>,
}

/// Runs `mode` on `subject` over the file's traces: the timing loop (recorded into
/// `timings`) or the mask dump. Returns the refused tokens.
pub fn drive<S: Subject + ?Sized>(
    subject: &mut S,
    file: &TraceFile,
    mode: &Mode,
    timings: &mut Timings,
) -> Result<Vec<Rejection>, String> {
    let traces = file.token_traces();
    let words = file.vocab.mask_words();
    match mode {
        Mode::Bench => {
            let r = replay::replay(subject, &traces, words, file.repeats, 0);
            timings.absorb(&r.timings);
            Ok(r.rejections)
        }
        Mode::Masks(path) => {
            let f = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
            mask_dump::dump(subject, &traces, words, &mut std::io::BufWriter::new(f))
        }
    }
}

/// A driver's whole `main`: reads the arguments and the trace file, runs `run`, prints
/// the report. `run` gets the file, the mode and the timings to record into.
pub fn main(
    engine: &str,
    version: &str,
    route: &str,
    run: impl FnOnce(&TraceFile, &Mode, &mut Timings) -> Result<Outcome, String>,
) -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = parse_args(&args).and_then(|(path, mode)| {
        let file = TraceFile::read(&path)?;
        let mut timings = Timings::default();
        let outcome = run(&file, &mode, &mut timings)?;
        Ok(DriverReport {
            engine: engine.into(),
            version: version.into(),
            route: route.into(),
            notes: outcome.notes,
            rows: timings.rows(engine, &file.grammar_name, &file.tokenizer),
            rejections: outcome.rejections,
        })
    });
    match result {
        Ok(report) => {
            println!(
                "{}",
                serde_json::to_string(&report).expect("report serializes")
            );
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{engine} driver: {e}");
            std::process::ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() {
        let a = |s: &[&str]| parse_args(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        assert_eq!(
            a(&["bench", "t.json"]).unwrap(),
            ("t.json".into(), Mode::Bench)
        );
        assert_eq!(
            a(&["masks", "t.json", "m.bin"]).unwrap(),
            ("t.json".into(), Mode::Masks("m.bin".into()))
        );
        assert!(a(&["bench"]).unwrap_err().contains("usage"));
        assert!(a(&["masks", "t.json"]).is_err());
        assert!(a(&["run", "t.json"]).is_err());
    }
}
