//! What the link tests share: the device's hello and a deterministic number stream.

use telering_embedded_io::link::Hello;

/// The hello of the device the tests play.
pub const HELLO: Hello<'static> = Hello {
    agent: "dpu0-fw",
    firmware_version: "2.1.0",
    ticks_per_second: 1_000_000,
    ring_capacity: 64,
};

/// Deterministic pseudo-random numbers (xorshift64).
pub struct Rng(pub u64);

impl Rng {
    /// The next number.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// The next number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
