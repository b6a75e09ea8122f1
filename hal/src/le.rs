//! Little-endian byte helpers, the one set every crate uses for fixed-layout buffers (NEFF
//! headers, ABI structs in tests, descriptor and tensor bytes). All wire integers of the
//! platform are little-endian.
//!
//! The `*_at` readers and `put_*` writers index like slices: they panic when the field runs
//! past the buffer, so they are for buffers whose length the caller has already checked.

/// The u32 at byte `at` of `b`.
pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("a 4-byte slice"))
}

/// The u64 at byte `at` of `b`.
pub fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("an 8-byte slice"))
}

/// Writes `v` at byte `at` of `b`.
pub fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Writes `v` at byte `at` of `b`.
pub fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// f32 values as little-endian bytes.
pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Little-endian bytes as f32 values (a trailing partial element is ignored).
pub fn bytes_f32(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip() {
        let mut b = [0u8; 12];
        put_u32(&mut b, 0, 0x0403_0201);
        put_u64(&mut b, 4, 0x0C0B_0A09_0807_0605);
        assert_eq!(b, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
        assert_eq!(
            (u32_at(&b, 0), u64_at(&b, 4)),
            (0x0403_0201, 0x0C0B_0A09_0807_0605)
        );
        assert_eq!(bytes_f32(&f32_bytes(&[1.5, -2.0])), [1.5, -2.0]);
    }
}
