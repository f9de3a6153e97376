//! The unit tests' random cases come from one xorshift64 generator: repeatable from
//! its seed (a failure reproduces), no statistical quality needed.

/// xorshift64 (Marsaglia); the state must not be 0.
pub(crate) struct XorShift(pub u64);

impl XorShift {
    /// The next value of the sequence.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value below `n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
