//! Shared setup for the criterion benches and the latency harness.

#![warn(missing_docs)]

pub mod peer;
pub mod percentiles;
pub mod workload;
