//! The byte cursor structured targets decode their operations from.
//!
//! Reads never fail: past the end every integer reads as 0, so any byte string is a valid
//! program and libFuzzer's mutations (truncation, insertion) keep producing programs. Writers
//! of seeds use [`Out`], the mirror image, so a seed encodes exactly what the target decodes.

/// Little-endian reader over fuzz bytes.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Input<'a> {
    /// A cursor at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Input { data, pos: 0 }
    }

    /// Whether every byte has been consumed.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    /// Up to `n` bytes (fewer at the end).
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let start = self.pos.min(self.data.len());
        let end = start.saturating_add(n).min(self.data.len());
        self.pos = end;
        &self.data[start..end]
    }

    fn le<const N: usize>(&mut self) -> [u8; N] {
        let mut b = [0u8; N];
        let s = self.bytes(N);
        b[..s.len()].copy_from_slice(s);
        b
    }

    /// One byte.
    pub fn u8(&mut self) -> u8 {
        self.le::<1>()[0]
    }

    /// A `u16`.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.le())
    }

    /// A `u32`.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.le())
    }

    /// A `u64`.
    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.le())
    }

    /// A flag (the low bit of a byte).
    pub fn bool(&mut self) -> bool {
        self.u8() & 1 != 0
    }
}

/// Little-endian writer producing what [`Input`] reads.
#[derive(Debug, Clone, Default)]
pub struct Out(pub Vec<u8>);

impl Out {
    /// One byte.
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }

    /// A `u16`.
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// A `u32`.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// A `u64`.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// A flag.
    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.u8(u8::from(v))
    }

    /// Raw bytes.
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.0.extend_from_slice(b);
        self
    }
}
