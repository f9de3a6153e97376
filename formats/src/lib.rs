//! Data types shared by the stackmask compiler and runtime, and the artifact container.
//!
//! This crate holds *data*, not algorithms: the normalized grammar IR, byte-level DFA
//! tables, the vocabulary, the flat token trie, LR tables, and the `.smask` artifact
//! layout. The compiler builds these values; the runtime reads them (in place, from an
//! mmap, where the artifact allows it). Keeping them here lets data flow one way —
//! front end → IR → automata → artifact → runtime — without the runtime depending on
//! the compiler.

#![warn(missing_docs)]

pub mod artifact;
pub mod dfa;
pub mod display_name;
pub mod grammar;
pub mod layout;
pub mod lr;
pub mod parser;
pub mod parser_dwa;
pub mod regular_file;
pub mod trie;
pub mod vocab;

pub use dfa::ByteDfa;
pub use grammar::{
    Difference, Grammar, Location, Nonterminal, NonterminalId, Rule, Symbol, Terminal, TerminalId,
};
pub use lr::{Action, LrTables};
pub use parser::{ParserTables, TablesRef};
pub use parser_dwa::{ParserDwa, ParserDwaRef};
pub use trie::{TokenTrie, TrieNode, TrieRef};
pub use vocab::{KindsRef, TokenKind, VocabRef, Vocabulary};
