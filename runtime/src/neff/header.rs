//! The 1024-byte NEFF header (docs/neff.md §2.1) and its integrity hash (docs/neff.md §2.2).
//!
//! [`NeffHeader::parse`] only decodes fields at their fixed offsets; [`NeffHeader::validate`]
//! applies the runtime's acceptance rules (header size, packaging version, NEFF version, docs/neff.md §2.3).
//! [`payload_hash`] computes the hash the way real files store it, including the MD5
//! word-reversal quirk of docs/neff.md §2.2.

use md5::{Digest as _, Md5};
use sha2::Sha256;

use crate::error::{Error, Result};
use crate::status::NrtStatus;

/// Size of the NEFF header; the payload starts right after it.
pub const HEADER_SIZE: usize = 1024;

/// Highest NEFF major version this runtime accepts (docs/neff.md §2.3: majors 0..=2).
pub const MAX_NEFF_MAJOR: u64 = 2;

/// Field offsets (docs/neff.md §2.1). Everything is little-endian and naturally aligned. Public for tools
/// that edit header fields in place (the malformed corpus).
pub mod off {
    /// `pkg_version` (u64).
    pub const PKG_VERSION: usize = 0x000;
    /// `header_size` (u64).
    pub const HEADER_SIZE: usize = 0x008;
    /// `data_size` (u64).
    pub const DATA_SIZE: usize = 0x010;
    /// `neff_version_major` (u64).
    pub const NEFF_VERSION_MAJOR: usize = 0x018;
    /// `neff_version_minor` (u64).
    pub const NEFF_VERSION_MINOR: usize = 0x020;
    /// `build_version` (128 bytes).
    pub const BUILD_VERSION: usize = 0x028;
    /// `num_tpb` (u32).
    pub const NUM_TPB: usize = 0x0A8;
    /// `hash` (32 bytes).
    pub const HASH: usize = 0x0AC;
    /// `uuid` (16 bytes).
    pub const UUID: usize = 0x0CC;
    /// `name` (256 bytes, NUL padded).
    pub const NAME: usize = 0x0DC;
    /// `requested_tpb_count` (u32).
    pub const REQUESTED_TPB_COUNT: usize = 0x1DC;
    /// `tpb_per_node` (64 bytes).
    pub const TPB_PER_NODE: usize = 0x1E0;
    /// `feature_bits` (u64).
    pub const FEATURE_BITS: usize = 0x220;
    /// `lnc_size` (u32).
    pub const LNC_SIZE: usize = 0x228;
    /// Zero padding to the end of the header.
    pub const PAD: usize = 0x22C;
}

/// Length of the `name` field, NUL padded.
pub const NAME_LEN: usize = 256;
const BUILD_VERSION_LEN: usize = 128;
const HASH_LEN: usize = 32;
const UUID_LEN: usize = 16;
const TPB_PER_NODE_LEN: usize = 64;

// The fields tile the header exactly up to the padding, and the padding fills it to 1024.
const _: () = {
    assert!(off::BUILD_VERSION + BUILD_VERSION_LEN == off::NUM_TPB);
    assert!(off::NUM_TPB + 4 == off::HASH);
    assert!(off::HASH + HASH_LEN == off::UUID);
    assert!(off::UUID + UUID_LEN == off::NAME);
    assert!(off::NAME + NAME_LEN == off::REQUESTED_TPB_COUNT);
    assert!(off::REQUESTED_TPB_COUNT + 4 == off::TPB_PER_NODE);
    assert!(off::TPB_PER_NODE + TPB_PER_NODE_LEN == off::FEATURE_BITS);
    assert!(off::FEATURE_BITS + 8 == off::LNC_SIZE);
    assert!(off::LNC_SIZE + 4 == off::PAD);
    assert!(off::PAD + 468 == HEADER_SIZE);
};

/// Which digest the header's `hash` field holds, selected by `pkg_version` (docs/neff.md §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashAlgo {
    /// `pkg_version` 2 (every observed file): MD5, stored word-reversed in `hash[0..16]`.
    Md5,
    /// `pkg_version` 1: SHA-256 over all 32 bytes of `hash`.
    Sha256,
}

impl HashAlgo {
    /// The algorithm for a packaging version, `None` for an unknown one.
    pub fn for_pkg_version(pkg_version: u64) -> Option<HashAlgo> {
        match pkg_version {
            1 => Some(HashAlgo::Sha256),
            2 => Some(HashAlgo::Md5),
            _ => None,
        }
    }

    /// How many leading bytes of the 32-byte `hash` field are meaningful.
    pub fn stored_len(self) -> usize {
        match self {
            HashAlgo::Md5 => 16,
            HashAlgo::Sha256 => 32,
        }
    }
}

/// The MD5 digest in the byte order real NEFFs store it: each 4-byte word reversed
/// (docs/neff.md §2.2: md5 `450c45cd ca09dd83 …` is stored `cd450c45 83dd09ca …`).
pub fn swap_md5_words(digest: &[u8; 16]) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (dst, src) in out.chunks_exact_mut(4).zip(digest.chunks_exact(4)) {
        dst.copy_from_slice(src);
        dst.reverse();
    }
    out
}

/// The header `hash` field for `payload` (the whole `data_size` bytes: gzip member plus zero
/// tail). MD5 is word-reversed into bytes 0..16 with bytes 16..32 zero; SHA-256 fills all 32.
pub fn payload_hash(algo: HashAlgo, payload: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    match algo {
        HashAlgo::Md5 => {
            let digest: [u8; 16] = Md5::digest(payload).into();
            out[..16].copy_from_slice(&swap_md5_words(&digest));
        }
        HashAlgo::Sha256 => {
            out.copy_from_slice(&Sha256::digest(payload));
        }
    }
    out
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The decoded 1024-byte NEFF header (docs/neff.md §2.1). Field names follow the official struct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeffHeader {
    /// Packaging version: 1 = tgz + SHA-256, 2 = tgz + MD5.
    pub pkg_version: u64,
    /// Bytes in the header; always 1024.
    pub header_size: u64,
    /// Bytes of payload after the header.
    pub data_size: u64,
    /// NEFF major version.
    pub neff_version_major: u64,
    /// NEFF minor version.
    pub neff_version_minor: u64,
    /// Build information (all zero in observed files).
    pub build_version: [u8; 128],
    /// TPBs (cores) for efficient execution.
    pub num_tpb: u32,
    /// Payload hash as stored (see [`payload_hash`]).
    pub hash: [u8; 32],
    /// Unique NEFF id (the parse-cache key).
    pub uuid: [u8; 16],
    /// NEFF name, up to the first NUL of the 256-byte field (invalid UTF-8 replaced).
    pub name: String,
    /// TPBs requested at compile time.
    pub requested_tpb_count: u32,
    /// TPBs per kelf node, one byte per node.
    pub tpb_per_node: [u8; 64],
    /// Bitset of incompatible NEFF features.
    pub feature_bits: u64,
    /// Logical NeuronCore size needed to run.
    pub lnc_size: u32,
}

use nrt_hal::le::{u32_at, u64_at};

fn array_at<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[at..at + N]);
    a
}

impl NeffHeader {
    /// Decodes the header fields from the first 1024 bytes of `bytes` (more may follow).
    ///
    /// Only the length is checked here; [`NeffHeader::validate`] applies the acceptance rules.
    pub fn parse(bytes: &[u8]) -> Result<NeffHeader> {
        if bytes.len() < HEADER_SIZE {
            return Err(Error::invalid(format!(
                "NEFF is {} bytes, smaller than its {HEADER_SIZE}-byte header",
                bytes.len()
            )));
        }
        let b = &bytes[..HEADER_SIZE];
        let name_field = &b[off::NAME..off::NAME + NAME_LEN];
        let name_len = name_field.iter().position(|&c| c == 0).unwrap_or(NAME_LEN);
        Ok(NeffHeader {
            pkg_version: u64_at(b, off::PKG_VERSION),
            header_size: u64_at(b, off::HEADER_SIZE),
            data_size: u64_at(b, off::DATA_SIZE),
            neff_version_major: u64_at(b, off::NEFF_VERSION_MAJOR),
            neff_version_minor: u64_at(b, off::NEFF_VERSION_MINOR),
            build_version: array_at(b, off::BUILD_VERSION),
            num_tpb: u32_at(b, off::NUM_TPB),
            hash: array_at(b, off::HASH),
            uuid: array_at(b, off::UUID),
            name: String::from_utf8_lossy(&name_field[..name_len]).into_owned(),
            requested_tpb_count: u32_at(b, off::REQUESTED_TPB_COUNT),
            tpb_per_node: array_at(b, off::TPB_PER_NODE),
            feature_bits: u64_at(b, off::FEATURE_BITS),
            lnc_size: u32_at(b, off::LNC_SIZE),
        })
    }

    /// The 1024 header bytes. The name is NUL padded (truncated to 256 bytes if longer); the
    /// padding at 0x22C is zero.
    pub fn to_bytes(&self) -> [u8; HEADER_SIZE] {
        let mut b = [0u8; HEADER_SIZE];
        let mut put = |at: usize, v: &[u8]| b[at..at + v.len()].copy_from_slice(v);
        put(off::PKG_VERSION, &self.pkg_version.to_le_bytes());
        put(off::HEADER_SIZE, &self.header_size.to_le_bytes());
        put(off::DATA_SIZE, &self.data_size.to_le_bytes());
        put(
            off::NEFF_VERSION_MAJOR,
            &self.neff_version_major.to_le_bytes(),
        );
        put(
            off::NEFF_VERSION_MINOR,
            &self.neff_version_minor.to_le_bytes(),
        );
        put(off::BUILD_VERSION, &self.build_version);
        put(off::NUM_TPB, &self.num_tpb.to_le_bytes());
        put(off::HASH, &self.hash);
        put(off::UUID, &self.uuid);
        // At most NAME_LEN bytes, cut at a character boundary so the field stays valid UTF-8.
        let mut cut = self.name.len().min(NAME_LEN);
        while !self.name.is_char_boundary(cut) {
            cut -= 1;
        }
        put(off::NAME, &self.name.as_bytes()[..cut]);
        put(
            off::REQUESTED_TPB_COUNT,
            &self.requested_tpb_count.to_le_bytes(),
        );
        put(off::TPB_PER_NODE, &self.tpb_per_node);
        put(off::FEATURE_BITS, &self.feature_bits.to_le_bytes());
        put(off::LNC_SIZE, &self.lnc_size.to_le_bytes());
        b
    }

    /// The hash algorithm `pkg_version` selects (1 = SHA-256, 2 = MD5), `None` if unknown.
    pub fn hash_algo(&self) -> Option<HashAlgo> {
        HashAlgo::for_pkg_version(self.pkg_version)
    }

    /// The UUID as `8-4-4-4-12` lower-case hex, bytes in stored order.
    pub fn uuid_string(&self) -> String {
        let h = hex(&self.uuid);
        format!(
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        )
    }

    /// The stored hash as hex: 32 characters (the 16 meaningful bytes) for MD5, 64 for SHA-256
    /// and for an unknown packaging version.
    pub fn hash_hex(&self) -> String {
        let len = self.hash_algo().map_or(32, HashAlgo::stored_len);
        hex(&self.hash[..len])
    }

    /// The runtime's acceptance rules for a header (docs/neff.md §2.1, §2.3):
    /// `header_size` must be 1024, `pkg_version` 1 or 2 (`NRT_INVALID` otherwise), and the NEFF
    /// major version at most 2 (`NRT_UNSUPPORTED_NEFF_VERSION` otherwise).
    pub fn validate(&self) -> Result<()> {
        if self.header_size != HEADER_SIZE as u64 {
            return Err(Error::invalid(format!(
                "NEFF header_size is {}, expected {HEADER_SIZE}",
                self.header_size
            )));
        }
        if self.hash_algo().is_none() {
            return Err(Error::invalid(format!(
                "NEFF pkg_version {} is unknown (1 = tgz+sha256, 2 = tgz+md5)",
                self.pkg_version
            )));
        }
        if self.neff_version_major > MAX_NEFF_MAJOR {
            return Err(Error::new(
                NrtStatus::UnsupportedNeffVersion,
                format!(
                    "NEFF version mismatch supported: 0.0-{MAX_NEFF_MAJOR}.x received: {}.{}",
                    self.neff_version_major, self.neff_version_minor
                ),
            ));
        }
        Ok(())
    }
}
