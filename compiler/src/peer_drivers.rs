//! `stackmask bench --peer ENGINE[=PATH]`: hands the bench's traces to a peer's driver
//! program (a separate process: llguidance and glrmask cannot link into one binary) and
//! reads back its percentiles. The drivers and their command line are described in
//! `stackmask_peers::driver`; the file they read in `stackmask_peers::trace_file`.

use stackmask_formats::TokenKind;
use stackmask_peers::report::DriverReport;
use stackmask_peers::trace_file::{Trace, TraceFile, VocabSpec, FORMAT};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
/// through, and parses the report it prints. With a `timeout` the driver is killed when
/// it runs longer (a peer's compile can take minutes on a large grammar).
pub fn run(
    driver: &PeerDriver,
    args: &[&Path],
    timeout: Option<Duration>,
) -> Result<DriverReport, String> {
    let mut child = Command::new(&driver.program)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("{}: {e}", driver.program.display()))?;
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        stdout.read_to_end(&mut text).map(|_| text)
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if timeout.is_some_and(|t| started.elapsed() > t) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "the {} driver did not finish within the --peer-timeout of {} s",
                driver.engine,
                timeout.unwrap_or_default().as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = reader
        .join()
        .map_err(|_| "reading the driver's output failed".to_string())?
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!(
            "the {} driver ({}) failed: {status}",
            driver.engine,
            driver.program.display()
        ));
    }
    let report = DriverReport::parse(&String::from_utf8_lossy(&stdout))
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

    /// A fake driver (a shell script): its report is parsed, a wrong engine, a failure
    /// and a hang are errors.
    #[test]
    fn running_drivers() {
        let dir = std::env::temp_dir().join(format!("smrun-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = |name: &str, body: &str| {
            use std::os::unix::fs::PermissionsExt;
            let p = dir.join(name);
            std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            PeerDriver {
                engine: "glrmask".into(),
                program: p,
            }
        };
        let report = r#"{"engine":"glrmask","version":"0.5.0","route":"r","notes":["n"],"rows":[],"rejections":[]}"#;
        let ok = script("ok", &format!("echo '{report}'"));
        let r = run(&ok, &[Path::new("bench"), Path::new("t.json")], None).unwrap();
        assert_eq!(r.notes, vec!["n".to_string()]);
        let other = script(
            "other",
            &format!("echo '{}'", report.replace("glrmask", "llguidance")),
        );
        assert!(run(&other, &[], None)
            .unwrap_err()
            .contains("driver for llguidance"));
        let fails = script("fails", "exit 3");
        assert!(run(&fails, &[], None).unwrap_err().contains("failed"));
        let hangs = script("hangs", "sleep 5");
        let e = run(&hangs, &[], Some(Duration::from_millis(200))).unwrap_err();
        assert!(e.contains("--peer-timeout"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
