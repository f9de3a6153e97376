//! Shared setup for the criterion benches and the latency harness.

pub mod peer;
pub mod workload;
