//! The UDMA submission descriptor, memory-to-memory copy pairs, ring geometry and ring-id phases
//! (docs/driver.md §4).
//!
//! # The descriptor
//!
//! Every descriptor is 16 bytes, 16-byte aligned, little endian:
//!
//! | bytes | TX (m2s, source side) | RX (s2m, destination side) |
//! |---|---|---|
//! | 0–3 | `len_ctrl` | `len_ctrl` |
//! | 4–7 | `meta_ctrl` ([`TxMeta`]) | `buf2_ptr_lo` (always 0) |
//! | 8–15 | `buf_ptr`: source address | `buf_ptr`: destination address |
//!
//! One type, [`Desc`], is both: its type parameter is the [`Direction`], [`TxDesc`] =
//! `Desc<Tx>` and [`RxDesc`] = `Desc<Rx>`, which differ only in bytes 4–7 and the name of the
//! address.
//!
//! `len_ctrl` packs the byte length in bits 15:0 (the value 0 stands for 65,536), the 2-bit ring
//! id in bits 25:24 and the [`LenCtrlFlags`] FIRST (26), LAST (27), INT_EN (28) and DMB (30).
//! Bits 23:16, 29 and 31 carry nothing the driver defines.
//!
//! **Decoding policy for unused bits.** [`LenCtrl::from_raw`] is total and keeps those bits in
//! [`LenCtrl::unused`], so a simulator can report exactly what it fetched. The typed views
//! [`TxDesc::decode`] and [`RxDesc::decode`] are strict: they reject a descriptor with an unused
//! `len_ctrl` bit set ([`UdmaError::UnusedLenCtrlBits`]) and an RX descriptor whose
//! `buf2_ptr_lo` is not zero ([`UdmaError::RxBuf2NotZero`]), because nothing this platform builds
//! ever sets them. Everything else in a raw descriptor is valid: every 16-bit length decodes
//! (0 → 65,536) and every 2-bit ring id is a ring id.
//!
//! # Copies
//!
//! A memory-to-memory copy is a sequence of *pairs*: a TX descriptor on the queue's m2s ring and
//! an RX descriptor on its s2m ring, each pair one packet (TX FIRST|LAST) of at most
//! [`MAX_DESC_BYTES`]. See [`M2mCopy`].
//!
//! # Converting copies (this platform's own descriptor kind)
//!
//! A DMA that converts elements between dtypes in flight (a NEFF `cast` descriptor) has no
//! public descriptor encoding. This platform defines one: a pair whose TX `meta_ctrl` is
//! [`TxMeta::convert`] — the M2M word with `ssmae_op` = [`TxMeta::SSMAE_OP_CONVERT_VALUE`]
//! (`0b011`, **ours**), the source dtype's `nrt_dtype_t` code in bits 7:4 and the
//! destination's in bits 11:8. The TX length counts source bytes and the RX length
//! destination bytes, both for the same whole number of elements; element k of the source is
//! converted (floats round to nearest even) and written as element k of the destination. The
//! driver never builds such a pair; [`ConvertCopy`] does. Plain copies are unchanged.
//!
//! # Rings
//!
//! [`RingGeometry`] enforces the driver's size and placement rules (docs/driver.md §4.4). [`RingProducer`]
//! hands out slots and their ring ids (docs/driver.md §4.3: the first pass uses id 1, each wrap of the producer
//! index to 0 advances the id `(id + 1) & 3`); [`RingCursor`] is the consumer-side mirror a
//! simulator uses to check the ring id of each descriptor it fetches.

use crate::addr::{AddrOverflow, DeviceAddr};
use crate::dtype::Dtype;
use bitflags::bitflags;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Size of one descriptor in bytes.
pub const DESC_SIZE: usize = 16;
/// Largest byte count one descriptor can carry (`MAX_DMA_DESC_SIZE`); it is encoded as length 0.
pub const MAX_DESC_BYTES: u64 = 65536;
/// `len_ctrl` bits 15:0: the length field.
pub const LEN_MASK: u32 = 0x0000_FFFF;
/// Shift of the 2-bit ring id in `len_ctrl` (`M2S_DESC_RING_ID_SHIFT`/`S2M_DESC_RING_ID_SHIFT`).
pub const RING_ID_SHIFT: u32 = 24;
/// `len_ctrl` bits 25:24: the ring id.
pub const RING_ID_MASK: u32 = 0x3 << RING_ID_SHIFT;
/// `len_ctrl` bits no field is defined in: 23:16 (between the length and the ring id), 29 and
/// 31 (marked unused by the driver).
pub const UNUSED_LEN_CTRL_MASK: u32 = 0x00FF_0000 | (1 << 29) | (1 << 31);
/// Largest ring id (the field is 2 bits wide).
pub const MAX_RING_ID: u8 = 3;
/// Ring id of the first pass through a freshly initialised ring (`UDMA_INITIAL_RING_ID`).
pub const INITIAL_RING_ID: u8 = 1;

/// Errors from building, decoding or placing UDMA descriptors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UdmaError {
    /// A descriptor length outside `1..=65536`.
    #[error("descriptor length {len} is outside 1..={MAX_DESC_BYTES}")]
    BadLength {
        /// The rejected length.
        len: u64,
    },
    /// A ring id that does not fit the 2-bit field.
    #[error("ring id {ring_id} does not fit in 2 bits (0..=3)")]
    BadRingId {
        /// The rejected ring id.
        ring_id: u8,
    },
    /// A `len_ctrl` word with a bit of [`UNUSED_LEN_CTRL_MASK`] set.
    #[error("len_ctrl has unused bits set: {bits:#010x}")]
    UnusedLenCtrlBits {
        /// The offending bits (a subset of [`UNUSED_LEN_CTRL_MASK`]).
        bits: u32,
    },
    /// An RX descriptor whose `buf2_ptr_lo` word is not zero.
    #[error("RX descriptor buf2_ptr_lo is {value:#010x}, expected 0")]
    RxBuf2NotZero {
        /// The word found at bytes 4..8.
        value: u32,
    },
    /// Fewer than 16 bytes were given for a descriptor.
    #[error("descriptor needs {DESC_SIZE} bytes, got {len}")]
    Truncated {
        /// Bytes available.
        len: usize,
    },
    /// Address arithmetic left the 64-bit space.
    #[error(transparent)]
    Addr(#[from] AddrOverflow),
    /// A copy needs more pairs than the largest ring can hold.
    #[error("copy needs {pairs} descriptor pairs, more than a ring can hold ({max})")]
    TooManyPairs {
        /// Pairs the copy needs.
        pairs: u64,
        /// The limit ([`RingGeometry::MAX_DESCS`]).
        max: u64,
    },
    /// A ring with fewer than [`RingGeometry::MIN_DESCS`] descriptors.
    #[error("ring of {count} descriptors is smaller than the minimum {min}", min = RingGeometry::MIN_DESCS)]
    RingTooSmall {
        /// The rejected count.
        count: u32,
    },
    /// A ring with more than [`RingGeometry::MAX_DESCS`] descriptors.
    #[error("ring of {count} descriptors is larger than the maximum {max}", max = RingGeometry::MAX_DESCS)]
    RingTooLarge {
        /// The rejected count.
        count: u32,
    },
    /// A ring whose count is not a multiple of 16 (its end would not be 256-byte aligned).
    #[error("ring of {count} descriptors is not a multiple of {m} (256-byte end alignment)", m = RingGeometry::COUNT_MULTIPLE)]
    RingNotMultiple {
        /// The rejected count.
        count: u32,
    },
    /// A ring base address that is not 256-byte aligned.
    #[error("ring base {base} is not {a}-byte aligned", a = RingGeometry::BASE_ALIGN)]
    RingBaseMisaligned {
        /// The rejected base.
        base: DeviceAddr,
    },
    /// A slot index at or past the ring's end.
    #[error("slot {slot} is outside a ring of {count} descriptors")]
    SlotOutOfRange {
        /// The rejected slot.
        slot: u32,
        /// The ring size.
        count: u32,
    },
    /// More slots requested in one reservation than the ring has.
    #[error("cannot reserve {n} slots at once in a ring of {count}")]
    ReserveTooMany {
        /// Slots requested.
        n: u64,
        /// The ring size.
        count: u32,
    },
    /// A fetched descriptor carries the wrong ring id for its pass (the prefetcher's
    /// "prefetch ring id" error).
    #[error("descriptor at slot {slot} has ring id {found}, expected {expected}")]
    RingIdMismatch {
        /// Slot the descriptor was fetched from.
        slot: u32,
        /// The ring id of the current pass.
        expected: u8,
        /// The ring id in the descriptor.
        found: u8,
    },
}

bitflags! {
    /// The single-bit control flags of `len_ctrl`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct LenCtrlFlags: u32 {
        /// First descriptor of a packet (m2s), bit 26.
        const FIRST = 1 << 26;
        /// Last descriptor of a packet (m2s), bit 27.
        const LAST = 1 << 27;
        /// Interrupt on completion (m2s and s2m), bit 28.
        const INT_EN = 1 << 28;
        /// Data memory barrier: wait for all previous transfers (m2s), bit 30.
        const DMB = 1 << 30;
    }
}

bitflags! {
    /// The TX `meta_ctrl` word (`sdma_cme_desc_word`). Named flags are the bits the driver sets;
    /// every other bit is retained as-is (the word also holds multi-bit fields such as
    /// `ssmae_op`, bits 25:23, see [`TxMeta::ssmae_op`]).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct TxMeta: u32 {
        /// `last_block`, bit 0.
        const LAST_BLOCK = 1 << 0;
        /// `first_block`, bit 1.
        const FIRST_BLOCK = 1 << 1;
        /// `copy_source_data`, bit 19.
        const COPY_SOURCE_DATA = 1 << 19;
        /// `ssmae_op` = 0b010 (bits 25:23), the memory-to-memory operation: bit 24.
        const SSMAE_OP_M2M = (TxMeta::SSMAE_OP_M2M_VALUE as u32) << TxMeta::SSMAE_OP_SHIFT;
        /// `write_barrier`, bit 26: the driver's "set barrier" on v2/v3.
        const WRITE_BARRIER = 1 << 26;
        const _ = !0;
    }
}

impl TxMeta {
    /// Shift of the 3-bit `ssmae_op` field.
    pub const SSMAE_OP_SHIFT: u32 = 23;
    /// Mask of the `ssmae_op` field (bits 25:23).
    pub const SSMAE_OP_MASK: u32 = 0x7 << Self::SSMAE_OP_SHIFT;
    /// The `ssmae_op` value of a memory-to-memory copy.
    pub const SSMAE_OP_M2M_VALUE: u8 = 0b010;
    /// The word the driver writes into every copy's TX descriptor: `0x01080003`.
    pub const M2M: TxMeta = TxMeta::from_bits_retain(0x0108_0003);
    /// [`TxMeta::M2M`] with the write barrier: `0x05080003`.
    pub const M2M_WRITE_BARRIER: TxMeta = TxMeta::from_bits_retain(0x0508_0003);

    /// The 3-bit `ssmae_op` field.
    pub const fn ssmae_op(self) -> u8 {
        ((self.bits() & Self::SSMAE_OP_MASK) >> Self::SSMAE_OP_SHIFT) as u8
    }

    /// The `ssmae_op` value of this platform's converting copy (**ours**; see the module
    /// docs).
    pub const SSMAE_OP_CONVERT_VALUE: u8 = 0b011;

    /// The TX meta word of a converting copy from `from` to `to` elements.
    pub const fn convert(from: Dtype, to: Dtype) -> TxMeta {
        let base = TxMeta::M2M.bits() & !Self::SSMAE_OP_MASK;
        TxMeta::from_bits_retain(
            base | (Self::SSMAE_OP_CONVERT_VALUE as u32) << Self::SSMAE_OP_SHIFT
                | (from.code() as u32) << 4
                | (to.code() as u32) << 8,
        )
    }

    /// The (source, destination) dtypes of a converting copy's meta word; `None` for any
    /// other word (including one naming an unknown dtype code).
    pub fn conversion(self) -> Option<(Dtype, Dtype)> {
        if self.ssmae_op() != Self::SSMAE_OP_CONVERT_VALUE {
            return None;
        }
        let code = |shift: u32| ((self.bits() >> shift) & 0xF) as u8;
        Some((Dtype::from_code(code(4))?, Dtype::from_code(code(8))?))
    }
}

/// A converting copy of `elements` elements (see the module docs): one pair per piece of at
/// most 64 KiB on either side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConvertCopy {
    /// First source byte.
    pub src: DeviceAddr,
    /// First destination byte.
    pub dst: DeviceAddr,
    /// Elements converted.
    pub elements: u64,
    /// Source dtype.
    pub from: Dtype,
    /// Destination dtype.
    pub to: Dtype,
}

impl ConvertCopy {
    /// Builds the pairs, one (TX, RX) ring-id tuple from `ids` per pair.
    pub fn build<S: RingIdSource>(&self, mut ids: S) -> Result<Vec<CopyPair>, UdmaError> {
        let (ss, ds) = (self.from.size() as u64, self.to.size() as u64);
        let per = MAX_DESC_BYTES / ss.max(ds);
        self.src.checked_add(self.elements * ss)?;
        self.dst.checked_add(self.elements * ds)?;
        let meta = TxMeta::convert(self.from, self.to);
        let mut out = Vec::new();
        let mut done = 0u64;
        while done < self.elements {
            let n = (self.elements - done).min(per);
            let (tx_id, rx_id) = ids.next_ring_ids();
            out.push(CopyPair {
                tx: TxDesc::new(
                    n * ss,
                    tx_id,
                    LenCtrlFlags::FIRST | LenCtrlFlags::LAST,
                    meta,
                    self.src.checked_add(done * ss)?,
                )?,
                rx: RxDesc::new(
                    n * ds,
                    rx_id,
                    LenCtrlFlags::empty(),
                    self.dst.checked_add(done * ds)?,
                )?,
            });
            done += n;
        }
        Ok(out)
    }
}

/// The raw 16-byte descriptor, as it sits in a ring.
///
/// The zerocopy derives give in-place views of ring memory in host byte order; every platform
/// this project runs on is little endian, as the wire is. [`UdmaDesc::to_bytes`] and
/// [`UdmaDesc::from_bytes`] convert explicitly and are correct on any host.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct UdmaDesc {
    /// Length, ring id and control flags.
    pub len_ctrl: u32,
    /// TX: the [`TxMeta`] word. RX: `buf2_ptr_lo`, always 0.
    pub meta_ctrl: u32,
    /// TX: source address. RX: destination address (`buf1_ptr`).
    pub buf_ptr: u64,
}

const _: () = assert!(core::mem::size_of::<UdmaDesc>() == DESC_SIZE);
const _: () = assert!(core::mem::offset_of!(UdmaDesc, len_ctrl) == 0);
const _: () = assert!(core::mem::offset_of!(UdmaDesc, meta_ctrl) == 4);
const _: () = assert!(core::mem::offset_of!(UdmaDesc, buf_ptr) == 8);

impl UdmaDesc {
    /// The 16 little-endian wire bytes.
    #[inline]
    pub fn to_bytes(&self) -> [u8; DESC_SIZE] {
        let mut out = [0u8; DESC_SIZE];
        out[0..4].copy_from_slice(&self.len_ctrl.to_le_bytes());
        out[4..8].copy_from_slice(&self.meta_ctrl.to_le_bytes());
        out[8..16].copy_from_slice(&self.buf_ptr.to_le_bytes());
        out
    }

    /// Reads a descriptor from its 16 wire bytes.
    #[inline]
    pub fn from_bytes(bytes: &[u8; DESC_SIZE]) -> UdmaDesc {
        let u32_at =
            |o: usize| u32::from_le_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]);
        let mut ptr = [0u8; 8];
        ptr.copy_from_slice(&bytes[8..16]);
        UdmaDesc {
            len_ctrl: u32_at(0),
            meta_ctrl: u32_at(4),
            buf_ptr: u64::from_le_bytes(ptr),
        }
    }

    /// Reads a descriptor from the first 16 bytes of `bytes`; an error if there are fewer.
    pub fn from_slice(bytes: &[u8]) -> Result<UdmaDesc, UdmaError> {
        let head: &[u8; DESC_SIZE] = bytes
            .get(..DESC_SIZE)
            .and_then(|b| b.try_into().ok())
            .ok_or(UdmaError::Truncated { len: bytes.len() })?;
        Ok(UdmaDesc::from_bytes(head))
    }

    /// The decoded `len_ctrl` word (total: keeps unused bits).
    pub fn len_ctrl_view(&self) -> LenCtrl {
        LenCtrl::from_raw(self.len_ctrl)
    }

    /// The ring id in bits 25:24.
    pub const fn ring_id(&self) -> u8 {
        ((self.len_ctrl & RING_ID_MASK) >> RING_ID_SHIFT) as u8
    }

    /// The byte count the descriptor moves (1..=65536; a length field of 0 means 65,536).
    pub const fn byte_len(&self) -> u32 {
        decode_len(self.len_ctrl)
    }

    /// The buffer address (TX source or RX destination).
    pub const fn addr(&self) -> DeviceAddr {
        DeviceAddr::new(self.buf_ptr)
    }
}

/// The 16-bit length field for a byte count in `1..=65536` (65,536 encodes as 0).
pub fn encode_len(len: u64) -> Result<u32, UdmaError> {
    if len == 0 || len > MAX_DESC_BYTES {
        return Err(UdmaError::BadLength { len });
    }
    Ok((len as u32) & LEN_MASK)
}

/// The byte count of a `len_ctrl` word: bits 15:0, with 0 meaning 65,536.
pub const fn decode_len(len_ctrl: u32) -> u32 {
    match len_ctrl & LEN_MASK {
        0 => MAX_DESC_BYTES as u32,
        n => n,
    }
}

fn check_ring_id(ring_id: u8) -> Result<u8, UdmaError> {
    if ring_id > MAX_RING_ID {
        Err(UdmaError::BadRingId { ring_id })
    } else {
        Ok(ring_id)
    }
}

/// A `len_ctrl` word taken apart. Decoding never fails and loses nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LenCtrl {
    /// Byte count, 1..=65536.
    pub len: u32,
    /// Ring id, 0..=3.
    pub ring_id: u8,
    /// The named control flags.
    pub flags: LenCtrlFlags,
    /// The [`UNUSED_LEN_CTRL_MASK`] bits exactly as found (0 in every descriptor this platform
    /// builds).
    pub unused: u32,
}

impl LenCtrl {
    /// Splits a raw `len_ctrl` word.
    pub const fn from_raw(raw: u32) -> LenCtrl {
        LenCtrl {
            len: decode_len(raw),
            ring_id: ((raw & RING_ID_MASK) >> RING_ID_SHIFT) as u8,
            flags: LenCtrlFlags::from_bits_truncate(raw),
            unused: raw & UNUSED_LEN_CTRL_MASK,
        }
    }

    /// Builds a `len_ctrl` word, checking the length (1..=65536) and ring id (0..=3).
    pub fn encode(len: u64, ring_id: u8, flags: LenCtrlFlags) -> Result<u32, UdmaError> {
        let len = encode_len(len)?;
        let ring_id = check_ring_id(ring_id)?;
        Ok(LenCtrl::with_ring_id(len | flags.bits(), ring_id))
    }

    /// `len_ctrl` with its ring id replaced by `ring_id` (taken modulo 4): how a producer stamps
    /// a word checked once (with ring id 0) onto each slot it fills.
    #[inline]
    pub const fn with_ring_id(len_ctrl: u32, ring_id: u8) -> u32 {
        (len_ctrl & !RING_ID_MASK) | (((ring_id as u32) << RING_ID_SHIFT) & RING_ID_MASK)
    }

    /// Rejects a word with unused bits set.
    fn strict(raw: u32) -> Result<LenCtrl, UdmaError> {
        let view = LenCtrl::from_raw(raw);
        if view.unused != 0 {
            return Err(UdmaError::UnusedLenCtrlBits { bits: view.unused });
        }
        Ok(view)
    }
}

/// The direction of a descriptor, the type parameter of [`Desc`]: [`Tx`] (m2s, the source side)
/// or [`Rx`] (s2m, the destination side). The two directions differ only in the word at bytes
/// 4–7 and the name of the address.
pub trait Direction: sealed::Sealed + Copy + Eq + std::hash::Hash + 'static {
    /// What the direction keeps of the word at bytes 4–7: [`TxMeta`] on TX, nothing on RX.
    type Meta: Copy + Eq + std::hash::Hash + std::fmt::Debug;
    /// The descriptor's type name ([`TxDesc`] or [`RxDesc`]), for `Debug`.
    const NAME: &'static str;
    /// What the address is: `src` (TX) or `dst` (RX).
    const ADDR: &'static str;
    /// The word at bytes 4–7.
    fn meta_word(meta: Self::Meta) -> u32;
    /// Reads the word at bytes 4–7.
    fn read_meta(word: u32) -> Result<Self::Meta, UdmaError>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Tx {}
    impl Sealed for super::Rx {}
}

/// TX, m2s: the descriptor reads its buffer; bytes 4–7 are the `meta_ctrl` word ([`TxMeta`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tx {}

/// RX, s2m: the descriptor writes its buffer; bytes 4–7 (`buf2_ptr_lo`) are always 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rx {}

impl Direction for Tx {
    type Meta = TxMeta;
    const NAME: &'static str = "TxDesc";
    const ADDR: &'static str = "src";
    fn meta_word(meta: TxMeta) -> u32 {
        meta.bits()
    }
    fn read_meta(word: u32) -> Result<TxMeta, UdmaError> {
        Ok(TxMeta::from_bits_retain(word))
    }
}

impl Direction for Rx {
    type Meta = ();
    const NAME: &'static str = "RxDesc";
    const ADDR: &'static str = "dst";
    fn meta_word((): ()) -> u32 {
        0
    }
    fn read_meta(word: u32) -> Result<(), UdmaError> {
        if word != 0 {
            return Err(UdmaError::RxBuf2NotZero { value: word });
        }
        Ok(())
    }
}

/// A descriptor of direction `D`, [`TxDesc`] or [`RxDesc`]. Only valid descriptors can be
/// built: the length is in `1..=65536` and the ring id in `0..=3`. RX descriptors carry the
/// flags unchanged, though of them only [`LenCtrlFlags::INT_EN`] means anything on RX, so
/// decoding is lossless.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Desc<D: Direction> {
    len: u32,
    ring_id: u8,
    flags: LenCtrlFlags,
    meta: D::Meta,
    addr: DeviceAddr,
}

/// A TX (m2s, source-side) descriptor.
pub type TxDesc = Desc<Tx>;

/// An RX (s2m, destination-side) descriptor.
pub type RxDesc = Desc<Rx>;

impl<D: Direction> Desc<D> {
    fn build(
        len: u64,
        ring_id: u8,
        flags: LenCtrlFlags,
        meta: D::Meta,
        addr: DeviceAddr,
    ) -> Result<Desc<D>, UdmaError> {
        encode_len(len)?;
        check_ring_id(ring_id)?;
        Ok(Desc {
            len: len as u32,
            ring_id,
            flags,
            meta,
            addr,
        })
    }

    /// Byte count, 1..=65536.
    pub const fn len(&self) -> u32 {
        self.len
    }

    /// Always false: a descriptor moves at least one byte.
    pub const fn is_empty(&self) -> bool {
        false
    }

    /// Ring id, 0..=3.
    pub const fn ring_id(&self) -> u8 {
        self.ring_id
    }

    /// Control flags.
    pub const fn flags(&self) -> LenCtrlFlags {
        self.flags
    }

    /// The buffer address: the source of a TX descriptor, the destination of an RX one.
    pub const fn addr(&self) -> DeviceAddr {
        self.addr
    }

    /// The raw descriptor.
    pub fn encode(&self) -> UdmaDesc {
        UdmaDesc {
            len_ctrl: (self.len & LEN_MASK)
                | (self.ring_id as u32) << RING_ID_SHIFT
                | self.flags.bits(),
            meta_ctrl: D::meta_word(self.meta),
            buf_ptr: self.addr.raw(),
        }
    }

    /// The 16 wire bytes.
    pub fn to_bytes(&self) -> [u8; DESC_SIZE] {
        self.encode().to_bytes()
    }

    /// Reads a raw descriptor in this direction; fails if an unused `len_ctrl` bit is set, or
    /// (RX) `buf2_ptr_lo` is not zero.
    pub fn decode(raw: &UdmaDesc) -> Result<Desc<D>, UdmaError> {
        let lc = LenCtrl::strict(raw.len_ctrl)?;
        Ok(Desc {
            len: lc.len,
            ring_id: lc.ring_id,
            flags: lc.flags,
            meta: D::read_meta(raw.meta_ctrl)?,
            addr: DeviceAddr::new(raw.buf_ptr),
        })
    }
}

impl<D: Direction> std::fmt::Debug for Desc<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = f.debug_struct(D::NAME);
        s.field("len", &self.len)
            .field("ring_id", &self.ring_id)
            .field("flags", &self.flags);
        if std::mem::size_of::<D::Meta>() != 0 {
            s.field("meta", &self.meta);
        }
        s.field(D::ADDR, &self.addr).finish()
    }
}

impl Desc<Tx> {
    /// A TX descriptor reading `len` bytes at `src`.
    pub fn new(
        len: u64,
        ring_id: u8,
        flags: LenCtrlFlags,
        meta: TxMeta,
        src: DeviceAddr,
    ) -> Result<TxDesc, UdmaError> {
        Desc::build(len, ring_id, flags, meta, src)
    }

    /// The `meta_ctrl` word.
    pub const fn meta(&self) -> TxMeta {
        self.meta
    }

    /// Source address.
    pub const fn src(&self) -> DeviceAddr {
        self.addr
    }
}

impl Desc<Rx> {
    /// An RX descriptor writing `len` bytes at `dst` (`buf2_ptr_lo` = 0).
    pub fn new(
        len: u64,
        ring_id: u8,
        flags: LenCtrlFlags,
        dst: DeviceAddr,
    ) -> Result<RxDesc, UdmaError> {
        Desc::build(len, ring_id, flags, (), dst)
    }

    /// Destination address.
    pub const fn dst(&self) -> DeviceAddr {
        self.addr
    }
}

/// Which barrier a copy's last data pair carries (docs/driver.md §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Barrier {
    /// No barrier.
    #[default]
    None,
    /// TX `len_ctrl` DMB (bit 30): wait for all previous transfers.
    Dmb,
    /// TX meta WRITE_BARRIER (bit 26) — what the driver's "set barrier" means on v2 and v3.
    WriteBarrier,
}

/// Where a copy's pairs get their ring ids from.
pub trait RingIdSource {
    /// The (TX, RX) ring ids for the next pair; a source backed by rings reserves one slot on
    /// each ring.
    fn next_ring_ids(&mut self) -> (u8, u8);
}

/// A [`RingIdSource`] that gives every pair the same ring id on both rings (checked when the
/// pairs are built: an id above 3 is an error then).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FixedRingId(pub u8);

impl RingIdSource for FixedRingId {
    fn next_ring_ids(&mut self) -> (u8, u8) {
        (self.0, self.0)
    }
}

impl<T: RingIdSource + ?Sized> RingIdSource for &mut T {
    fn next_ring_ids(&mut self) -> (u8, u8) {
        (**self).next_ring_ids()
    }
}

/// One TX/RX descriptor pair: one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CopyPair {
    /// The TX (source) descriptor, for the m2s ring.
    pub tx: TxDesc,
    /// The RX (destination) descriptor, for the s2m ring.
    pub rx: RxDesc,
}

/// A memory-to-memory copy, to be split into ≤ 64 KiB [`CopyPair`]s.
///
/// Each pair is one packet: TX `FIRST|LAST`, TX meta [`TxMeta::M2M`], RX without flags unless
/// `rx_int_en`. The barrier (if any) goes on the **last** pair only, as the driver does
/// (docs/driver.md §9.3). A zero-length copy has no pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct M2mCopy {
    /// First source byte.
    pub src: DeviceAddr,
    /// First destination byte.
    pub dst: DeviceAddr,
    /// Bytes to copy.
    pub len: u64,
    /// Barrier on the last pair.
    pub barrier: Barrier,
    /// Set INT_EN on every RX descriptor (the driver never does).
    pub rx_int_en: bool,
}

impl M2mCopy {
    /// A copy of `len` bytes with no barrier and no RX interrupt.
    pub const fn new(src: DeviceAddr, dst: DeviceAddr, len: u64) -> M2mCopy {
        M2mCopy {
            src,
            dst,
            len,
            barrier: Barrier::None,
            rx_int_en: false,
        }
    }

    /// The same copy with `barrier` on its last pair.
    pub const fn with_barrier(mut self, barrier: Barrier) -> M2mCopy {
        self.barrier = barrier;
        self
    }

    /// The same copy with INT_EN on its RX descriptors.
    pub const fn with_rx_int_en(mut self, on: bool) -> M2mCopy {
        self.rx_int_en = on;
        self
    }

    /// How many pairs the copy needs: `ceil(len / 65536)`.
    pub const fn pair_count(&self) -> u64 {
        self.len.div_ceil(MAX_DESC_BYTES)
    }

    /// Builds the pairs, taking one (TX, RX) ring-id tuple from `ids` per pair.
    ///
    /// Errors, all detected before `ids` is consulted: the source or destination range leaves
    /// the address space ([`UdmaError::Addr`]), or the copy needs more pairs than the largest
    /// ring holds ([`UdmaError::TooManyPairs`]). A ring id above 3 from `ids` is
    /// [`UdmaError::BadRingId`].
    pub fn build<S: RingIdSource>(&self, mut ids: S) -> Result<Vec<CopyPair>, UdmaError> {
        self.src.checked_add(self.len)?;
        self.dst.checked_add(self.len)?;
        let pairs = self.pair_count();
        let max = u64::from(RingGeometry::MAX_DESCS);
        if pairs > max {
            return Err(UdmaError::TooManyPairs { pairs, max });
        }
        let mut out = Vec::with_capacity(pairs as usize);
        let mut offset = 0u64;
        while offset < self.len {
            let piece = (self.len - offset).min(MAX_DESC_BYTES);
            let last = offset + piece == self.len;
            let (tx_id, rx_id) = ids.next_ring_ids();
            let mut tx_flags = LenCtrlFlags::FIRST | LenCtrlFlags::LAST;
            let mut meta = TxMeta::M2M;
            if last {
                match self.barrier {
                    Barrier::None => {}
                    Barrier::Dmb => tx_flags |= LenCtrlFlags::DMB,
                    Barrier::WriteBarrier => meta = TxMeta::M2M_WRITE_BARRIER,
                }
            }
            let rx_flags = if self.rx_int_en {
                LenCtrlFlags::INT_EN
            } else {
                LenCtrlFlags::empty()
            };
            out.push(CopyPair {
                tx: TxDesc::new(piece, tx_id, tx_flags, meta, self.src.checked_add(offset)?)?,
                rx: RxDesc::new(piece, rx_id, rx_flags, self.dst.checked_add(offset)?)?,
            });
            offset += piece;
        }
        Ok(out)
    }
}

/// The ring id of pass `pass` (0-based) through a ring: 1, 2, 3, 0, 1, …
pub const fn expected_ring_id(pass: u64) -> u8 {
    ((INITIAL_RING_ID as u64 + pass) & 3) as u8
}

/// The ring id after `id` when the index wraps: `(id + 1) & 3`.
pub const fn next_ring_id(id: u8) -> u8 {
    id.wrapping_add(1) & 3
}

/// A validated ring size (docs/driver.md §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RingGeometry {
    count: u32,
}

impl RingGeometry {
    /// Fewest descriptors a ring may have (`UDMA_MIN_Q_SIZE`).
    pub const MIN_DESCS: u32 = 32;
    /// Most descriptors a ring may have (`UDMA_MAX_Q_SIZE` = 2^24 − 16).
    pub const MAX_DESCS: u32 = (1 << 24) - 16;
    /// The count must be a multiple of this, so the ring's end is 256-byte aligned.
    pub const COUNT_MULTIPLE: u32 = 16;
    /// Required alignment of a ring's base address, in bytes.
    pub const BASE_ALIGN: u64 = 256;

    /// A ring of `count` descriptors: 32 ≤ count ≤ 2^24 − 16, count a multiple of 16.
    /// A power of two is not required (runtime version 7 and later).
    pub const fn new(count: u32) -> Result<RingGeometry, UdmaError> {
        if count < Self::MIN_DESCS {
            Err(UdmaError::RingTooSmall { count })
        } else if count > Self::MAX_DESCS {
            Err(UdmaError::RingTooLarge { count })
        } else if !count.is_multiple_of(Self::COUNT_MULTIPLE) {
            Err(UdmaError::RingNotMultiple { count })
        } else {
            Ok(RingGeometry { count })
        }
    }

    /// Number of descriptors.
    pub const fn count(&self) -> u32 {
        self.count
    }

    /// Bytes of ring memory: `count * 16`.
    pub const fn byte_size(&self) -> u64 {
        self.count as u64 * DESC_SIZE as u64
    }

    /// Whether the count is a power of two (needed only by the driver's own wrap helpers).
    pub const fn is_power_of_two(&self) -> bool {
        self.count.is_power_of_two()
    }

    /// Checks that a ring base address is 256-byte aligned.
    pub const fn check_base(base: DeviceAddr) -> Result<(), UdmaError> {
        if base.is_aligned(Self::BASE_ALIGN) {
            Ok(())
        } else {
            Err(UdmaError::RingBaseMisaligned { base })
        }
    }

    /// Byte offset of `slot` from the ring base.
    pub const fn slot_offset(&self, slot: u32) -> Result<u64, UdmaError> {
        if slot >= self.count {
            Err(UdmaError::SlotOutOfRange {
                slot,
                count: self.count,
            })
        } else {
            Ok(slot as u64 * DESC_SIZE as u64)
        }
    }

    /// Device address of `slot` in a ring at `base` (the base is checked for alignment).
    pub fn slot_addr(&self, base: DeviceAddr, slot: u32) -> Result<DeviceAddr, UdmaError> {
        Self::check_base(base)?;
        Ok(base.checked_add(self.slot_offset(slot)?)?)
    }

    /// Checks that a ring at `base` is aligned and does not run past the end of the address space.
    pub fn check_placement(&self, base: DeviceAddr) -> Result<(), UdmaError> {
        Self::check_base(base)?;
        base.checked_add(self.byte_size())?;
        Ok(())
    }
}

/// A slot handed out by a [`RingProducer`] or expected by a [`RingCursor`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Slot {
    /// Index in the ring, `0..count`.
    pub index: u32,
    /// The ring id a descriptor in this slot must carry for this pass.
    pub ring_id: u8,
}

/// Position in a ring plus its ring-id phase; shared by producer and consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct RingPos {
    geom: RingGeometry,
    index: u32,
    ring_id: u8,
    total: u64,
}

impl RingPos {
    const fn new(geom: RingGeometry) -> Self {
        RingPos {
            geom,
            index: 0,
            ring_id: INITIAL_RING_ID,
            total: 0,
        }
    }

    fn current(&self) -> Slot {
        Slot {
            index: self.index,
            ring_id: self.ring_id,
        }
    }

    fn step(&mut self) -> Slot {
        let slot = self.current();
        self.index += 1;
        if self.index == self.geom.count {
            self.index = 0;
            self.ring_id = next_ring_id(self.ring_id);
        }
        self.total += 1;
        slot
    }

    fn check_n(&self, n: u64) -> Result<(), UdmaError> {
        if n > u64::from(self.geom.count) {
            Err(UdmaError::ReserveTooMany {
                n,
                count: self.geom.count,
            })
        } else {
            Ok(())
        }
    }
}

/// The producer side of one descriptor ring: the next slot to fill and its ring id.
///
/// A fresh producer starts at slot 0 with ring id 1; each time its index wraps to 0 the ring id
/// advances `(id + 1) & 3`. It does not know the consumer's head: keeping from overwriting
/// descriptors the engine has not yet fetched is the caller's business (the runtime knows when
/// its executions complete).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RingProducer {
    pos: RingPos,
}

impl RingProducer {
    /// A producer for a freshly initialised ring.
    pub const fn new(geom: RingGeometry) -> RingProducer {
        RingProducer {
            pos: RingPos::new(geom),
        }
    }

    /// The ring's geometry.
    pub const fn geometry(&self) -> RingGeometry {
        self.pos.geom
    }

    /// The next slot to be filled.
    pub const fn index(&self) -> u32 {
        self.pos.index
    }

    /// The ring id the next slot gets.
    pub const fn ring_id(&self) -> u8 {
        self.pos.ring_id
    }

    /// Descriptors reserved since the ring was initialised.
    pub const fn pushes(&self) -> u64 {
        self.pos.total
    }

    /// The pass (0-based) the next slot belongs to.
    pub const fn pass(&self) -> u64 {
        self.pos.total / self.pos.geom.count as u64
    }

    /// The next slot without reserving it.
    pub fn peek(&self) -> Slot {
        self.pos.current()
    }

    /// Reserves the next slot.
    pub fn reserve(&mut self) -> Slot {
        self.pos.step()
    }

    /// Reserves `n` consecutive slots (wrapping); at most the ring size at once.
    pub fn reserve_n(&mut self, n: u32) -> Result<Vec<Slot>, UdmaError> {
        self.pos.check_n(u64::from(n))?;
        Ok((0..n).map(|_| self.pos.step()).collect())
    }

    /// Byte offset of `slot` from the ring base.
    pub const fn slot_offset(&self, slot: u32) -> Result<u64, UdmaError> {
        self.pos.geom.slot_offset(slot)
    }
}

/// The consumer-side mirror of [`RingProducer`]: which slot the engine fetches next and the ring
/// id a descriptor there must carry. A simulator checks each fetched descriptor with
/// [`RingCursor::check`] and then calls [`RingCursor::advance`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RingCursor {
    pos: RingPos,
}

impl RingCursor {
    /// A cursor at the head of a freshly initialised (or reset) ring.
    pub const fn new(geom: RingGeometry) -> RingCursor {
        RingCursor {
            pos: RingPos::new(geom),
        }
    }

    /// The ring's geometry.
    pub const fn geometry(&self) -> RingGeometry {
        self.pos.geom
    }

    /// The slot fetched next.
    pub const fn index(&self) -> u32 {
        self.pos.index
    }

    /// The ring id expected at the next slot.
    pub const fn expected_ring_id(&self) -> u8 {
        self.pos.ring_id
    }

    /// Descriptors consumed since the ring was initialised.
    pub const fn consumed(&self) -> u64 {
        self.pos.total
    }

    /// The next slot and its expected ring id.
    pub fn peek(&self) -> Slot {
        self.pos.current()
    }

    /// Checks the ring id of a descriptor fetched from the next slot.
    pub fn check(&self, desc: &UdmaDesc) -> Result<(), UdmaError> {
        let found = desc.ring_id();
        if found == self.pos.ring_id {
            Ok(())
        } else {
            Err(UdmaError::RingIdMismatch {
                slot: self.pos.index,
                expected: self.pos.ring_id,
                found,
            })
        }
    }

    /// Moves past one slot, returning the slot just passed.
    pub fn advance(&mut self) -> Slot {
        self.pos.step()
    }

    /// Moves past `n` slots (at most the ring size at once).
    pub fn advance_by(&mut self, n: u32) -> Result<(), UdmaError> {
        self.pos.check_n(u64::from(n))?;
        for _ in 0..n {
            self.pos.step();
        }
        Ok(())
    }
}

/// The producers of one DMA queue's TX (m2s) and RX (s2m) rings. As a [`RingIdSource`] it
/// reserves one slot on each ring per pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QueueProducer {
    /// The TX ring.
    pub tx: RingProducer,
    /// The RX ring.
    pub rx: RingProducer,
}

impl QueueProducer {
    /// Producers for freshly initialised TX and RX rings.
    pub const fn new(tx: RingGeometry, rx: RingGeometry) -> QueueProducer {
        QueueProducer {
            tx: RingProducer::new(tx),
            rx: RingProducer::new(rx),
        }
    }
}

impl RingIdSource for QueueProducer {
    fn next_ring_ids(&mut self) -> (u8, u8) {
        (self.tx.reserve().ring_id, self.rx.reserve().ring_id)
    }
}
