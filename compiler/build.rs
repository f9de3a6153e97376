//! Build script: generates the Lark grammar parser from `src/frontend/lark.lalrpop`.
//!
//! Only `src/frontend` is scanned (not the whole crate, which `process_root` would do);
//! the parser lands in `$OUT_DIR/frontend/lark.rs`, where `lalrpop_mod!` includes it.

use std::path::PathBuf;

fn main() {
    let out_dir =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("frontend");
    lalrpop::Configuration::new()
        .set_in_dir("src/frontend")
        .set_out_dir(out_dir)
        .emit_rerun_directives(true)
        .process()
        .expect("generating the Lark grammar parser");
}
