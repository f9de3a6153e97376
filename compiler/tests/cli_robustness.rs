//! The command-line tool on hostile paths and inputs (issue 11): outputs that are not
//! regular files or are the input, artifacts that are FIFOs or directories, traces that
//! must spell exactly the file, options that do not go together. Every case must end in
//! an answer or a clear error, quickly, never a hang.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs the CLI; a run past `limit` is killed and fails the test (a hang). Output is
/// drained while it runs, so a long message cannot block the child on a full pipe.
fn run_within(args: &[&str], limit: Duration) -> (i32, String, String) {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_stackmask"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run stackmask");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            String::from_utf8_lossy(&v).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for stackmask") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("stackmask {args:?} still running after {limit:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        status.code().unwrap_or(-1),
        out.join().unwrap(),
        err.join().unwrap(),
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

    // A directory is not replaced: the artifact goes into it, as `cp` would put it.
    let sub = dir.join("out");
    std::fs::create_dir(&sub).unwrap();
    let (code, _, err) = run(&["compile", s(&g), "--tokenizer", "bytes", "-o", s(&sub)]);
    assert_eq!(code, 0, "{err}");
    assert!(sub.is_dir());
    assert!(sub.join("g.smask").is_file());
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
    std::fs::remove_dir_all(&sub).unwrap();

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

/// Issue 11 (10): a 1 MB anonymous literal gave a 1 MB error message (its name is its
/// text); names in messages are shortened, keeping both ends and the length.
#[test]
fn a_huge_literal_gives_a_short_message() {
    let dir = scratch("huge-literal");
    let g = dir.join("big.lark");
    std::fs::write(&g, format!("start: \"{}\"\n", "a".repeat(1_000_000))).unwrap();
    let (code, _, err) = run(&["check", s(&g)]);
    assert_eq!(code, 2, "{}", &err[..err.len().min(500)]);
    assert!(err.len() < 1000, "a {}-byte message", err.len());
    assert!(err.contains("(1000002 bytes)"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 11 (10): `check` said nothing wrong (exit 0) about a grammar `compile` refuses;
/// under the same limit (`--max-lr-states`) both now refuse it, with exit 2.
#[test]
fn check_refuses_what_compile_refuses() {
    let dir = scratch("check-limits");
    let g = dir.join("g.lark");
    std::fs::write(&g, "start: \"a\" b\nb: \"b\" \"c\"\n").unwrap();
    let out = dir.join("g.smask");
    let limit = ["--max-lr-states", "3"];
    let (code, _, err) = run(&[
        &["compile", s(&g), "--tokenizer", "bytes", "-o", s(&out)][..],
        &limit,
    ]
    .concat());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("max_lr_states"), "{err}");
    let (code, _, err) = run(&[&["check", s(&g)][..], &limit].concat());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("max_lr_states"), "{err}");
    // Within the limits, both succeed.
    let (code, _, err) = run(&["check", s(&g)]);
    assert_eq!(code, 0, "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 11 (10): a document ending in a newline, under a grammar that `%ignore`s
/// whitespace, is not a sentence (DESIGN.md §1: ignored lexemes only between two
/// lexemes); `validate` said only "incomplete". It now names the rule and the terminal.
#[test]
fn validate_names_the_trailing_ignore_rule() {
    let dir = scratch("trailing-ignore");
    let g = dir.join("g.lark");
    std::fs::write(&g, "start: \"a\" \"b\"\nWS: /[ \\n]+/\n%ignore WS\n").unwrap();
    let art = dir.join("g.smask");
    let (code, _, err) = run(&["compile", s(&g), "--tokenizer", "bytes", "-o", s(&art)]);
    assert_eq!(code, 0, "{err}");
    let doc = dir.join("doc.txt");
    std::fs::write(&doc, "a b\n").unwrap();
    let (code, _, err) = run(&["validate", s(&art), s(&doc)]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("a sentence up to byte 3"), "{err}");
    assert!(
        err.contains("`WS`") && err.contains("never after the last one"),
        "{err}"
    );
    // Not said where it does not apply.
    std::fs::write(&doc, "a\n").unwrap();
    let (code, _, err) = run(&["validate", s(&art), s(&doc)]);
    assert_eq!(code, 1, "{err}");
    assert!(!err.contains("never after the last one"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--time-limit`: a zero limit ends `compile` and `check` with exit 2 and the named
/// error (limit, value, stage, flag), and `compile` writes nothing; a bad value is a
/// usage error; a generous one compiles.
#[test]
fn time_limit_ends_compile_and_check_with_the_named_error() {
    let dir = scratch("time-limit");
    let g = dir.join("g.lark");
    std::fs::write(&g, "start: \"a\" b\nb: \"b\" \"c\"\n").unwrap();
    let out = dir.join("g.smask");
    let compile = ["compile", s(&g), "--tokenizer", "bytes", "-o", s(&out)];
    let (code, _, err) = run(&[&compile[..], &["--time-limit", "0"]].concat());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("time limit of 0 s (time_limit) in the front end stage")
            && err.contains("--time-limit"),
        "{err}"
    );
    assert!(!out.exists() && !dir.join("g.smask.tmp").exists());
    let (code, _, err) = run(&["check", s(&g), "--time-limit", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("time_limit"), "{err}");
    for bad in ["-1", "soon", "inf"] {
        let arg = format!("--time-limit={bad}");
        let (code, _, err) = run(&[&compile[..], &[arg.as_str()]].concat());
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("--time-limit"), "{bad}: {err}");
    }
    let (code, _, err) = run(&[&compile[..], &["--time-limit", "600"]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(out.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `bench --peer`: the trace file handed to a driver holds the bench's traces and
/// vocabulary, the driver's rows are merged into the table (with ratios) and the JSON
/// array, its rejections reported; bad peer arguments are clear errors. The driver here
/// is a shell script printing a fixed report (the real ones are built apart).
#[test]
fn bench_merges_a_peer_drivers_report() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("bench-peer");
    let g = grammar(&dir);
    let art = dir.join("g.smask");
    let (code, _, err) = run(&["compile", s(&g), "--tokenizer", "bytes", "-o", s(&art)]);
    assert_eq!(code, 0, "{err}");
    let doc = dir.join("doc.txt");
    std::fs::write(&doc, "aaa").unwrap();
    let seen = dir.join("seen.json");
    let report = r#"{"engine":"glrmask","version":"0.5.0","route":"fake","notes":["a note"],"rows":[{"engine":"glrmask","grammar":"g","vocab":"bytes","op":"get_mask","count":7,"mean_us":1000.0,"p50_us":1000.0,"p90_us":1000.0,"p99_us":1000.0,"p999_us":1000.0,"max_us":1000.0}],"rejections":[{"trace":0,"step":2,"token":97,"error":"fake refusal"}]}"#;
    let driver = dir.join("driver.sh");
    std::fs::write(
        &driver,
        format!("#!/bin/sh\ncp \"$2\" {}\necho '{report}'\n", s(&seen)),
    )
    .unwrap();
    std::fs::set_permissions(&driver, std::fs::Permissions::from_mode(0o755)).unwrap();
    let peer = format!("glrmask={}", s(&driver));
    let base = [
        "bench",
        s(&art),
        "--docs",
        s(&doc),
        "--repeats",
        "1",
        "--walks",
        "1",
    ];
    let with = |extra: &[&str]| run(&[&base[..], extra].concat());

    let (code, out, err) = with(&["--peer", &peer, "--grammar", s(&g)]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.starts_with("get_mask"))
        .unwrap();
    assert!(lines[i].contains("stackmask"), "{out}");
    assert!(
        lines[i + 1].contains("glrmask") && lines[i + 1].contains("1000"),
        "{out}"
    );
    assert!(
        lines[i + 2].contains("÷stackmask") && lines[i + 2].contains('×'),
        "{out}"
    );
    assert!(out.contains("glrmask: a note"), "{out}");
    assert!(
        out.contains("glrmask REJECTS token 97 (\"a\")") && out.contains("fake refusal"),
        "{out}"
    );
    // The trace file: the document's tokens (bytes: id = byte), then one random walk.
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(file["format"], "stackmask-traces/1");
    assert_eq!(file["grammar"], "start: \"a\"+\n");
    assert_eq!(file["traces"][0]["tokens"], serde_json::json!([97, 97, 97]));
    assert_eq!(file["traces"][1]["name"], "random walk 0");
    assert_eq!(file["vocab"]["tokens"][97], "61");
    assert_eq!(file["vocab"]["eos"], 256);

    let (code, out, err) = with(&["--peer", &peer, "--grammar", s(&g), "--json"]);
    assert_eq!(code, 0, "{err}");
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    let engines: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["engine"].as_str().unwrap())
        .collect();
    assert!(
        engines.contains(&"stackmask") && engines.contains(&"glrmask"),
        "{out}"
    );
    assert!(err.contains("fake refusal"), "{err}");

    // --write-floor adds the bare copy of a mask, timed over the same calls, for
    // get_mask only.
    let (code, out, err) = with(&["--write-floor", "--json"]);
    assert_eq!(code, 0, "{err}");
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rows = rows.as_array().unwrap();
    let floor: Vec<_> = rows
        .iter()
        .filter(|r| r["engine"] == "write-floor")
        .collect();
    let masks = rows
        .iter()
        .find(|r| r["engine"] == "stackmask" && r["op"] == "get_mask")
        .unwrap();
    assert_eq!(floor.len(), 1, "{out}");
    assert_eq!(floor[0]["op"], "get_mask");
    assert_eq!(floor[0]["count"], masks["count"], "{out}");

    // --machine-gaps: one line on how often the machine stopped the thread, after the
    // table (on stderr beside --json); a duration that is no duration is refused.
    let (code, out, err) = with(&["--machine-gaps", "0.05"]);
    assert_eq!(code, 0, "{err}");
    // Each step's median over the passes: what recurs, beside the table's percentiles.
    assert!(
        out.contains("stackmask, each step's median over the 1 passes (")
            && out.contains("get_mask ")
            && out.contains("; mask + commit "),
        "{out}"
    );
    let last = out.lines().last().unwrap();
    assert!(
        last.starts_with("machine: one thread reading the clock for ")
            && last.contains("a 2 µs call meets one"),
        "{out}"
    );
    let (code, out, err) = with(&["--machine-gaps", "0.05", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        serde_json::from_str::<serde_json::Value>(&out).is_ok(),
        "{out}"
    );
    assert!(err.contains("machine: one thread"), "{err}");
    for bad in ["0", "-1", "NaN", "601"] {
        let (code, _, err) = with(&[&format!("--machine-gaps={bad}")]);
        assert_eq!(code, 2, "--machine-gaps {bad}");
        assert!(err.contains("give a number of seconds"), "{err}");
    }

    let (code, _, err) = with(&["--peer", &peer]);
    assert_eq!(code, 2);
    assert!(err.contains("--peer needs --grammar"), "{err}");
    let other = dir.join("other.lark");
    std::fs::write(&other, "start: \"b\"+\n").unwrap();
    let (code, _, err) = with(&["--peer", &peer, "--grammar", s(&other)]);
    assert_eq!(code, 2);
    assert!(err.contains("is not the grammar"), "{err}");
    let (code, _, err) = with(&["--peer", "xgrammar", "--grammar", s(&g)]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown engine `xgrammar`"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compile_many_grammars_into_a_directory() {
    let dir = scratch("many");
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let int = write("int.json", r#"{"type": "integer", "minimum": 0}"#);
    let word = write("word.json", r#"{"enum": ["x", "y"]}"#);
    let bad = write("bad.json", r#"{"type": "array", "contains": {}}"#);
    let lark = write("q.lark", "start: \"q\"+\n");
    let out = dir.join("out");
    let (code, stdout, stderr) = run(&[
        "compile",
        s(&int),
        s(&word),
        s(&bad),
        s(&lark),
        "--tokenizer",
        "bytes",
        "-o",
        s(&out),
    ]);
    // One failure is reported by name, the others still compile: exit 2 at the end.
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("bad.json") && stderr.contains("contains"),
        "{stderr}"
    );
    assert!(
        stdout.contains("compiled 3 of 4 grammars (1 failed)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("p50 ") && stdout.contains("max "),
        "{stdout}"
    );
    assert!(!out.join("bad.smask").exists());
    // Each artifact is its own grammar's.
    let doc = write("doc.txt", "17");
    let text = write("word.txt", "\"y\"");
    let qs = write("q.txt", "qqq");
    for (artifact, good, other) in [
        ("int", &doc, &text),
        ("word", &text, &doc),
        ("q", &qs, &doc),
    ] {
        let a = out.join(format!("{artifact}.smask"));
        assert_eq!(run(&["validate", s(&a), s(good)]).0, 0, "{artifact}");
        assert_eq!(run(&["validate", s(&a), s(other)]).0, 1, "{artifact}");
    }
    // One grammar into an existing directory goes there too.
    let (code, _, stderr) = run(&["compile", s(&int), "--tokenizer", "bytes", "-o", s(&dir)]);
    assert_eq!(code, 0, "{stderr}");
    assert!(dir.join("int.smask").is_file());
}

#[test]
fn compile_many_refuses_clashing_names_and_a_file_for_a_directory() {
    let dir = scratch("many-clash");
    std::fs::create_dir_all(dir.join("x")).unwrap();
    std::fs::create_dir_all(dir.join("y")).unwrap();
    let a = dir.join("x/a.json");
    let b = dir.join("y/a.json");
    std::fs::write(&a, r#"{"type": "integer"}"#).unwrap();
    std::fs::write(&b, r#"{"type": "string"}"#).unwrap();
    let out = dir.join("out");
    let (code, _, stderr) = run(&[
        "compile",
        s(&a),
        s(&b),
        "--tokenizer",
        "bytes",
        "-o",
        s(&out),
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("would both be written to"), "{stderr}");
    assert!(
        !out.exists(),
        "nothing is written before the names are checked"
    );
    let file = dir.join("file.smask");
    std::fs::write(&file, b"x").unwrap();
    let (code, _, stderr) = run(&[
        "compile",
        s(&a),
        s(&b),
        "--tokenizer",
        "bytes",
        "-o",
        s(&file),
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("the output is a directory"), "{stderr}");
}

/// Boundaries left to the run-time token-trie walk (past the per-boundary budget) are
/// a warning naming the count and the flags, from `compile` of one grammar and of many;
/// with the default budget JSON has none and nothing is said.
#[test]
fn boundaries_left_to_the_trie_walk_are_a_warning() {
    let dir = scratch("fallback");
    let json = Path::new(env!("CARGO_MANIFEST_DIR")).join("../grammars/json.lark");
    let out = dir.join("json.smask");
    let args = |extra: &[&'static str]| {
        let mut a = vec!["compile", s(&json), "--tokenizer", "bytes", "-o", s(&out)];
        a.extend_from_slice(extra);
        a.iter().map(|x| x.to_string()).collect::<Vec<_>>()
    };
    let run_args = |a: Vec<String>| run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let (code, stdout, stderr) = run_args(args(&[]));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(!stderr.contains("left to the run-time"), "{stderr}");
    let (code, stdout, stderr) = run_args(args(&["--boundary-dwa-states", "1"]));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("lexer boundaries left to the run-time token-trie walk")
            && stderr.contains("--boundary-dwa-states"),
        "{stderr}"
    );
    let many = dir.join("many");
    let expr = Path::new(env!("CARGO_MANIFEST_DIR")).join("../grammars/expr.lark");
    let (code, stdout, stderr) = run(&[
        "compile",
        s(&json),
        s(&expr),
        "--tokenizer",
        "bytes",
        "-o",
        s(&many),
        "--boundary-dwa-states",
        "1",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("json.lark: ") && stderr.contains("left to the run-time"),
        "{stderr}"
    );
    assert!(many.join("expr.smask").is_file() && many.join("json.smask").is_file());
}

/// `validate` and `trace` take the compiled matcher's GLR work limits: each given limit
/// is the one that stops a parse, by name; a limit met deciding whether the text is a
/// sentence at its end is that error, not "incomplete"; the defaults `--help` shows are
/// the runtime's; and the reference path of `trace --grammar`, which has no such
/// limits, refuses them.
#[test]
fn work_limits_are_flags_of_validate_and_trace() {
    use stackmask_runtime::glr;
    let dir = scratch("work-limits");
    let compile = |name: &str, grammar: &str| {
        let g = dir.join(format!("{name}.lark"));
        std::fs::write(&g, grammar).unwrap();
        let art = dir.join(format!("{name}.smask"));
        let (code, _, err) = run(&["compile", s(&g), "--tokenizer", "bytes", "-o", s(&art)]);
        assert_eq!(code, 0, "{err}");
        (g, art)
    };
    let (ambiguous_g, ambiguous) = compile("ambiguous", "start: start start | \"a\"\n");
    let (_, chain) = compile("chain", "start: \"a\" start | \"a\"\n");
    let doc = dir.join("doc.txt");
    std::fs::write(&doc, "aaaa").unwrap();
    let validate =
        |art: &PathBuf, flags: &[&str]| run(&[&["validate", s(art), s(&doc)][..], flags].concat());
    let (code, _, err) = validate(&ambiguous, &[]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = validate(&ambiguous, &["--work-burst", "2", "--work-per-byte", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("at most 2 units plus 0 per byte") && err.contains("work_burst"),
        "{err}"
    );
    let (code, _, err) = validate(&ambiguous, &["--max-step-work", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("more than 0 units") && err.contains("max_step_work"),
        "{err}"
    );
    // Every byte of the chain within the limit; deciding that the text ends a sentence not.
    let (code, _, err) = validate(&chain, &["--max-step-work", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("at its end") && err.contains("max_step_work"),
        "{err}"
    );
    let (code, _, err) = run(&[
        "trace",
        s(&ambiguous),
        "--text",
        s(&doc),
        "--tokenizer",
        "bytes",
        "--work-burst",
        "2",
        "--work-per-byte",
        "0",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("work_burst"), "{err}");
    // Every boundary left to the token-trie walk, which parses under the limits: the
    // limit that cuts it is the error, not a token "not in the mask".
    let walked = dir.join("walked.smask");
    let (code, _, err) = run(&[
        "compile",
        s(&ambiguous_g),
        "--tokenizer",
        "bytes",
        "--boundary-dwa-states",
        "1",
        "-o",
        s(&walked),
    ]);
    assert_eq!(code, 0, "{err}");
    let trace_walked = |flags: &[&str]| {
        let args = [
            "trace",
            s(&walked),
            "--text",
            s(&doc),
            "--tokenizer",
            "bytes",
        ];
        run(&[&args[..], flags].concat())
    };
    let (code, out, err) = trace_walked(&[]);
    assert_eq!(code, 0, "{out}\n{err}");
    let (code, _, err) = trace_walked(&["--max-step-work", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(": the mask: ") && err.contains("max_step_work"),
        "{err}"
    );
    let (code, _, err) = run(&[
        "trace",
        "--grammar",
        s(&ambiguous_g),
        "--tokenizer",
        "bytes",
        "--text",
        s(&doc),
        "--work-burst",
        "2",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("the reference path of --grammar has no such limits"),
        "{err}"
    );
    let (code, help, err) = run(&["validate", "--help"]);
    assert_eq!(code, 0, "{err}");
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for default in [
        glr::DEFAULT_MAX_STEP_WORK,
        glr::DEFAULT_WORK_PER_BYTE,
        glr::DEFAULT_WORK_BURST,
    ] {
        assert!(help.contains(&format!("[default: {default}]")), "{help}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
