//! The stackmask compiler: turns a grammar and a tokenizer into the tables the runtime
//! reads.
//!
//! Stages, in the order data flows: [`frontend`] (Lark text → grammar IR),
//! [`lexer`] (terminal regexes → byte DFAs), [`vocab`] (tokenizers → vocabulary and
//! token trie).

#![warn(missing_docs)]

pub mod adjacency;
pub mod analysis;
pub mod artifact;
pub mod frontend;
pub mod lexer;
pub mod lexer_configs;
pub mod lr;
pub mod pipeline;
pub mod vocab;

pub use frontend::{parse_grammar, GrammarError, GrammarErrorKind};
