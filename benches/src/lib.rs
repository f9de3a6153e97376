//! Benches live in benches/benches/.
