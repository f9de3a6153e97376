//! The stackmask compiler: turns a grammar and a tokenizer into the tables the runtime
//! reads.
//!
//! Stages, in the order data flows: [`frontend`] (Lark text → grammar IR),
//! [`lexer`] (terminal regexes → byte DFAs, minimized by [`dfa_minimize`]), [`lr`] (canonical LR(1) tables),
//! [`lexer_configs`] (interned lexer configurations), [`vocab`] (tokenizers →
//! vocabulary and token trie), then the compiled mask path: [`terminal_dwa`] (per
//! lexer boundary, the terminal sequences each token realises, as token classes;
//! [`lexeme_bodies`] keeps the part inside one lexeme per vocabulary, [`wide_children`]
//! the trie's wide nodes' children by byte),
//! [`template`] (what a terminal does to a stack top), [`parser_dwa`] (their
//! composition into the automaton `get_mask` runs over the stack) and [`minimize`]
//! (equivalent automaton states merged across boundaries); [`artifact`]
//! writes it all, [`pipeline`] wires the stages.

#![warn(missing_docs)]

pub mod adjacency;
pub mod adjacency_product;
pub mod analysis;
pub mod artifact;
pub mod budget;
pub mod dfa_minimize;
pub mod frontend;
pub mod lexeme_bodies;
pub mod lexer;
pub mod lexer_configs;
pub mod lr;
pub mod minimize;
pub mod parser_dwa;
pub mod pipeline;
pub mod template;
pub mod terminal_dwa;
#[cfg(test)]
mod test_rng;
pub mod vocab;
pub mod wide_children;

pub use frontend::{parse_grammar, GrammarError, GrammarErrorKind};
