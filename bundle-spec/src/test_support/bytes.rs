//! Content for tests that need bytes of a known kind.

/// `len` bytes that do not compress (as a gzip layer's), from a xorshift stream: the same for the
/// same `seed`, different for another.
#[must_use]
pub fn incompressible(len: usize, seed: u8) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64 ^ u64::from(seed);
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}
