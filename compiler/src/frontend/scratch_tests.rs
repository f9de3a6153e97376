#[test]
fn scratch() {
    let mut files: Vec<_> = std::fs::read_dir("/tmp/scratch")
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    for p in files {
        let text = std::fs::read_to_string(&p).unwrap();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let r = std::panic::catch_unwind(|| super::parse_grammar(&text, &name));
        match r {
            Ok(Ok(g)) => println!(
                "OK {name} {} rules {} terms",
                g.rules.len(),
                g.terminals.len()
            ),
            Ok(Err(e)) => println!("ERR{} {e}", if e.kind.is_unsupported() { "-U" } else { "" }),
            Err(_) => println!("PANIC {name}"),
        }
    }
}
