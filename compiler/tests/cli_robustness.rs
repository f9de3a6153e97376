//! The command-line tool on hostile paths and inputs (issue 11): outputs that are not
//! regular files or are the input, artifacts that are FIFOs or directories, traces that
//! must spell exactly the file, options that do not go together. Every case must end in
//! an answer or a clear error, quickly, never a hang.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs the CLI; a run past `limit` is killed and fails the test (a hang).
fn run_within(args: &[&str], limit: Duration) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_stackmask"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run stackmask");
    let started = Instant::now();
    loop {
        if child.try_wait().expect("wait for stackmask").is_some() {
            break;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("stackmask {args:?} still running after {limit:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("collect output");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn run(args: &[&str]) -> (i32, String, String) {
    run_within(args, Duration::from_secs(120))
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stackmask-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A tiny grammar written into `dir`.
fn grammar(dir: &Path) -> PathBuf {
    let g = dir.join("g.lark");
    std::fs::write(&g, "start: \"a\"+\n").unwrap();
    g
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path)
        .map(|m| m.file_type().is_fifo())
        .unwrap_or(false)
}

/// Files whose name says they are temporary, left in `dir`.
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("tmp"))
        .collect()
}

/// Issue 11 (7): `-o` on a FIFO replaced it with a regular file (as on `/dev/full`,
/// which root replaced with a file); `-o` on a directory failed at the rename and left
/// `OUT.smask.tmp` behind.
#[test]
fn compile_refuses_outputs_that_are_not_regular_files() {
    let dir = scratch("outputs");
    let g = grammar(&dir);
    let fifo = dir.join("out.fifo");
    mkfifo(&fifo);
    let (code, _, err) = run(&["compile", s(&g), "--tokenizer", "bytes", "-o", s(&fifo)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("FIFO"), "{err}");
    assert!(is_fifo(&fifo), "the FIFO was replaced");

    let sub = dir.join("out");
    std::fs::create_dir(&sub).unwrap();
    let (code, _, err) = run(&["compile", s(&g), "--tokenizer", "bytes", "-o", s(&sub)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is a directory"), "{err}");
    assert!(sub.is_dir());
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));

    // A regular output still works, atomically, with nothing left behind.
    let out = dir.join("g.smask");
    let (code, _, err) = run(&["compile", s(&g), "--tokenizer", "bytes", "-o", s(&out)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.is_file());
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 11 (7): `-o grammar.lark` overwrote the grammar with the artifact.
#[test]
fn compile_refuses_to_overwrite_its_input() {
    let dir = scratch("input");
    let g = grammar(&dir);
    let before = std::fs::read(&g).unwrap();
    let (code, _, err) = run(&["compile", s(&g), "--tokenizer", "bytes", "-o", s(&g)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("refusing to overwrite"), "{err}");
    assert_eq!(std::fs::read(&g).unwrap(), before);
    // Through another name of the same file too.
    let link = dir.join("link.lark");
    std::os::unix::fs::symlink(&g, &link).unwrap();
    let (code, _, err) = run(&["compile", s(&g), "--tokenizer", "bytes", "-o", s(&link)]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(std::fs::read(&g).unwrap(), before);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 11 (8): a FIFO given as the artifact blocked `inspect` and `validate` forever;
/// a directory gave "No such device".
#[test]
fn artifacts_that_are_not_regular_files_are_refused_at_once() {
    let dir = scratch("artifacts");
    let fifo = dir.join("a.smask");
    mkfifo(&fifo);
    let doc = dir.join("doc.txt");
    std::fs::write(&doc, "a").unwrap();
    let limit = Duration::from_secs(20);
    for args in [
        vec!["inspect", s(&fifo)],
        vec!["validate", s(&fifo), s(&doc)],
        vec!["trace", s(&fifo), "--text", s(&doc)],
    ] {
        let (code, _, err) = run_within(&args, limit);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("FIFO or pipe, not a regular file"), "{err}");
    }
    for args in [vec!["inspect", s(&dir)], vec!["validate", s(&dir), s(&doc)]] {
        let (code, _, err) = run_within(&args, limit);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("is a directory"), "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 11 (9): with phi-3 (SentencePiece), `trace` traced a dummy-prefix space the
/// file does not contain and failed at step 0 (`token 29871 " "`), while `validate`
/// accepted the file.
#[test]
fn trace_with_sentencepiece_traces_exactly_the_file() {
    let (code, out, err) = run(&[
        "trace",
        "--grammar",
        "../grammars/expr.lark",
        "--tokenizer",
        "hf:../../shared/tokenizers/phi-3.tokenizer.json",
        "--text",
        "../grammars/samples/expr/flat_operators.txt",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("every token in its mask"), "{out}");
}

/// Issue 11 (10): `--check-reference` compares the compiled path with the reference
/// path; with `--grammar` there is no compiled path, and the flag was silently ignored.
#[test]
fn trace_check_reference_needs_an_artifact() {
    let dir = scratch("check-reference");
    let g = grammar(&dir);
    let doc = dir.join("doc.txt");
    std::fs::write(&doc, "aa").unwrap();
    let (code, _, err) = run(&[
        "trace",
        "--grammar",
        s(&g),
        "--tokenizer",
        "bytes",
        "--text",
        s(&doc),
        "--check-reference",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--check-reference"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
