//! `stackmask bench --peer ENGINE[=PATH]`: hands the bench's traces to a peer's driver
//! program (a separate process: llguidance and glrmask cannot link into one binary) and
//! reads back its percentiles. The drivers and their command line are described in
//! `stackmask_peers::driver`; the file they read in `stackmask_peers::trace_file`.

use stackmask_formats::TokenKind;
use stackmask_peers::report::DriverReport;
use stackmask_peers::trace_file::{Trace, TraceFile, VocabSpec, FORMAT};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The engines a driver exists for.
pub const ENGINES: [&str; 2] = ["llguidance", "glrmask"];

/// One `--peer` argument: the engine and its driver program.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerDriver {
    /// `llguidance` or `glrmask`.
    pub engine: String,
    /// The driver program.
    pub program: PathBuf,
}

/// Parses `ENGINE=PATH`, or `ENGINE` alone for the driver `stackmask-ENGINE-driver` next
/// to `exe_dir` (where `cargo build` puts it).
pub fn parse_peer(arg: &str, exe_dir: &Path) -> Result<PeerDriver, String> {
    let (engine, path) = match arg.split_once('=') {
        Some((e, p)) => (e, Some(PathBuf::from(p))),
        None => (arg, None),
    };
    if !ENGINES.contains(&engine) {
        return Err(format!(
            "--peer {arg}: unknown engine `{engine}` (one of: {})",
            ENGINES.join(", ")
        ));
    }
    let program = path.unwrap_or_else(|| exe_dir.join(format!("stackmask-{engine}-driver")));
    if !program.is_file() {
        return Err(format!(
            "--peer {engine}: no driver program at {} (build it: see BENCHMARKS.md, \"Peers\")",
            program.display()
        ));
    }
    Ok(PeerDriver {
        engine: engine.to_string(),
        program,
    })
}

/// The trace file for `traces` (named) on `tokenizer`'s vocabulary and `grammar`.
pub fn trace_file(
    grammar_name: &str,
    grammar: &str,
    tokenizer: &stackmask_compiler::vocab::Tokenizer,
    spec: &str,
    traces: Vec<Trace>,
    repeats: usize,
) -> TraceFile {
    let v = &tokenizer.vocab;
    let ids = 0..v.len() as u32;
    TraceFile {
        format: FORMAT.into(),
        grammar_name: grammar_name.into(),
        grammar: grammar.into(),
        tokenizer: spec.into(),
        vocab: VocabSpec::new(
            ids.clone().map(|i| v.token_bytes(i)),
            ids.filter(|&i| v.kind(i) != TokenKind::Normal).collect(),
            v.eos,
        ),
        repeats,
        traces,
    }
}

/// Runs `driver` with `args` (`bench TRACES` or `masks TRACES OUT`), its stderr passed
/// through, and parses the report it prints.
pub fn run(driver: &PeerDriver, args: &[&Path]) -> Result<DriverReport, String> {
    let mut cmd = Command::new(&driver.program);
    cmd.args(args).stderr(Stdio::inherit());
    let out = cmd
        .output()
        .map_err(|e| format!("{}: {e}", driver.program.display()))?;
    if !out.status.success() {
        return Err(format!(
            "the {} driver ({}) failed: {}",
            driver.engine,
            driver.program.display(),
            out.status
        ));
    }
    let report = DriverReport::parse(&String::from_utf8_lossy(&out.stdout))
        .map_err(|e| format!("{} driver: {e}", driver.engine))?;
    if report.engine != driver.engine {
        return Err(format!(
            "{} is a driver for {}, not {}",
            driver.program.display(),
            report.engine,
            driver.engine
        ));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_arguments() {
        let dir = std::env::temp_dir().join(format!("smpeer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let glr = dir.join("stackmask-glrmask-driver");
        std::fs::write(&glr, "").unwrap();
        let p = parse_peer("glrmask", &dir).unwrap();
        assert_eq!(
            (p.engine.as_str(), p.program.clone()),
            ("glrmask", glr.clone())
        );
        let p = parse_peer(&format!("llguidance={}", glr.display()), Path::new("/")).unwrap();
        assert_eq!((p.engine.as_str(), p.program), ("llguidance", glr));
        assert!(parse_peer("llguidance", &dir)
            .unwrap_err()
            .contains("no driver program"));
        assert!(parse_peer("xgrammar", &dir)
            .unwrap_err()
            .contains("unknown engine"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
