//! Per-step masks a driver writes for `stackmask bench --compare-masks`.
//!
//! A dump is a sequence of records, all little-endian: `trace: u32`, `step: u32` (tokens
//! committed before the mask), then the mask's words (`u32`, as many as the trace
//! file's vocabulary needs). A trace of n tokens gives n + 1 records (the last one after
//! its final token), fewer if the engine refuses a token.

use crate::replay::{Rejection, Subject};
use std::io::{Read, Write};

/// Writes one record per step of every trace (see the module documentation); returns the
/// tokens the engine refused and the masks it could not compute (each ends its trace;
/// a failed mask after the last token names token `u32::MAX`).
pub fn dump<S: Subject + ?Sized, W: Write>(
    subject: &mut S,
    traces: &[Vec<u32>],
    mask_words: usize,
    out: &mut W,
) -> Result<Vec<Rejection>, String> {
    let mut mask = vec![0u32; mask_words];
    let mut rejections = Vec::new();
    let mut bytes = Vec::with_capacity(8 + 4 * mask_words);
    for (i, trace) in traces.iter().enumerate() {
        subject.reset()?;
        for step in 0..=trace.len() {
            if let Err(e) = subject.fill_mask(&mut mask) {
                rejections.push(Rejection {
                    trace: i,
                    step,
                    token: trace.get(step).copied().unwrap_or(u32::MAX),
                    error: format!("get_mask: {e}"),
                });
                break;
            }
            bytes.clear();
            bytes.extend_from_slice(&(i as u32).to_le_bytes());
            bytes.extend_from_slice(&(step as u32).to_le_bytes());
            for w in &mask {
                bytes.extend_from_slice(&w.to_le_bytes());
            }
            out.write_all(&bytes).map_err(|e| e.to_string())?;
            let Some(&t) = trace.get(step) else { break };
            if let Err(error) = subject.commit(t) {
                rejections.push(Rejection {
                    trace: i,
                    step,
                    token: t,
                    error: format!("commit: {error}"),
                });
                break;
            }
        }
    }
    out.flush().map_err(|e| e.to_string())?;
    Ok(rejections)
}

/// One record of a dump.
#[derive(Clone, Debug, PartialEq)]
pub struct MaskRecord {
    /// Index of the trace.
    pub trace: usize,
    /// Tokens committed before the mask.
    pub step: usize,
    /// The mask.
    pub mask: Vec<u32>,
}

/// Reads the next record of a dump with `mask_words`-word masks; `None` at the end.
pub fn read_record<R: Read>(
    input: &mut R,
    mask_words: usize,
) -> Result<Option<MaskRecord>, String> {
    let mut head = [0u8; 8];
    match input.read_exact(&mut head) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.to_string()),
    }
    let mut body = vec![0u8; 4 * mask_words];
    input
        .read_exact(&mut body)
        .map_err(|e| format!("mask dump ends inside a record: {e}"))?;
    let word = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    Ok(Some(MaskRecord {
        trace: word(&head[..4]) as usize,
        step: word(&head[4..]) as usize,
        mask: body.chunks(4).map(word).collect(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::tests::ab;

    #[test]
    fn dump_and_read_back() {
        let traces = vec![vec![0, 1], vec![1, 1, 0]];
        let mut buf = Vec::new();
        let rejections = dump(&mut ab(None), &traces, 2, &mut buf).unwrap();
        // ab() commits anything, so no rejection.
        assert!(rejections.is_empty());
        let mut input = &buf[..];
        let mut got = vec![];
        while let Some(r) = read_record(&mut input, 2).unwrap() {
            got.push((r.trace, r.step, r.mask));
        }
        assert_eq!(
            got,
            vec![
                (0, 0, vec![0b011, 0]),
                (0, 1, vec![0b011, 0]),
                (0, 2, vec![0b100, 0]),
                (1, 0, vec![0b011, 0]),
                (1, 1, vec![0b100, 0]),
                (1, 2, vec![0b100, 0]),
                (1, 3, vec![0b100, 0]),
            ]
        );
        let mut buf = Vec::new();
        let rejections = dump(&mut ab(Some(1)), &traces, 2, &mut buf).unwrap();
        assert_eq!(rejections.len(), 2);
        assert_eq!((rejections[1].trace, rejections[1].step), (1, 0));
        // Trace 0: masks before `a` and before the refused `b`; trace 1: before its `b`.
        assert_eq!(buf.len(), 3 * (8 + 8));
        // A truncated record is an error, not a short mask.
        let mut cut = &buf[..buf.len() - 1];
        for _ in 0..2 {
            read_record(&mut cut, 2).unwrap().unwrap();
        }
        assert!(read_record(&mut cut, 2)
            .unwrap_err()
            .contains("inside a record"));
    }
}
