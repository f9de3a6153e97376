//! What `stackmask bench` and the peer drivers (llguidance, glrmask) share, so every engine
//! is timed the same way on the same work:
//!
//! * [`trace_file`]: the JSON file `stackmask bench` writes for the drivers (grammar text,
//!   vocabulary, token traces);
//! * [`replay`]: the timing loop (one warm-up pass, then each call timed on its own);
//! * [`percentiles`]: HDR histograms and the JSON rows of `stackmask bench --json`;
//! * [`mask_dump`]: per-step masks a driver writes for `--compare-masks`;
//! * [`report`]: what a driver prints, and the merged table with ratios per percentile;
//! * [`machine_gaps`]: how often the machine stops a running thread, the floor under
//!   every engine's tail.

#![warn(missing_docs)]

pub mod driver;
pub mod machine_gaps;
pub mod mask_dump;
pub mod percentiles;
pub mod replay;
pub mod report;
pub mod trace_file;
