//! Writing a NEFF in exactly the layout real compilers produce (docs/neff.md
//! §2.1, §2.2, §3): a ustar archive of regular files in insertion order, ending with two zero
//! blocks; one gzip member (FLG 0, MTIME = [`NeffWriter::gzip_mtime`], XFL 4, OS 3) deflated at
//! the fastest level; zero padding to a multiple of [`PAYLOAD_BLOCK`]; the 1024-byte header
//! with `data_size` and the hash for `pkg_version`. Output is a pure function of the writer's
//! fields: no clock, no host state, no hash-map order.

use std::io::Write as _;

use flate2::write::DeflateEncoder;
use flate2::{Compression, Crc};

use super::header::{off, payload_hash, HashAlgo, NeffHeader, HEADER_SIZE, NAME_LEN};
use super::ustar::{self, BLOCK, MAX_NAME, MAX_SIZE};
use super::PAYLOAD_BLOCK;
use crate::error::{Error, Result};

/// Builds a NEFF file from members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeffWriter {
    /// Packaging version: 2 (MD5, the default) or 1 (SHA-256).
    pub pkg_version: u64,
    /// NEFF (major, minor) version; default (2, 0). Not checked, so tests can write any.
    pub neff_version: (u64, u64),
    /// The NEFF UUID.
    pub uuid: [u8; 16],
    /// The NEFF name (at most 255 bytes, no NUL).
    pub name: String,
    /// `num_tpb`; default 1.
    pub num_tpb: u32,
    /// `requested_tpb_count`; default 1.
    pub requested_tpb_count: u32,
    /// `tpb_per_node`; default `[1, 0, 0, …]`.
    pub tpb_per_node: [u8; 64],
    /// `feature_bits`; default 0.
    pub feature_bits: u64,
    /// `lnc_size`; default 1.
    pub lnc_size: u32,
    /// The gzip header MTIME; default 0.
    pub gzip_mtime: u32,
    members: Vec<(String, Vec<u8>)>,
}

impl NeffWriter {
    /// A writer with the defaults above and no members.
    pub fn new(name: &str, uuid: [u8; 16]) -> Self {
        let mut tpb_per_node = [0u8; 64];
        tpb_per_node[0] = 1;
        NeffWriter {
            pkg_version: 2,
            neff_version: (2, 0),
            uuid,
            name: name.to_owned(),
            num_tpb: 1,
            requested_tpb_count: 1,
            tpb_per_node,
            feature_bits: 0,
            lnc_size: 1,
            gzip_mtime: 0,
            members: Vec::new(),
        }
    }

    /// Appends a member; members are archived in insertion order. Names are checked by
    /// [`NeffWriter::write`].
    pub fn add(&mut self, path: &str, bytes: impl Into<Vec<u8>>) -> &mut Self {
        self.members.push((path.to_owned(), bytes.into()));
        self
    }

    /// The complete NEFF file.
    ///
    /// Fails (`NRT_INVALID`) on an unknown `pkg_version`, a name over 255 bytes or holding a
    /// NUL, and on a member name that is empty, longer than 100 bytes, absolute, not normalised
    /// (`.`, `..` or empty components), holds a NUL, or repeats an earlier member.
    pub fn write(&self) -> Result<Vec<u8>> {
        let algo = HashAlgo::for_pkg_version(self.pkg_version).ok_or_else(|| {
            Error::invalid(format!(
                "NeffWriter: pkg_version {} is unknown (1 = sha256, 2 = md5)",
                self.pkg_version
            ))
        })?;
        if self.name.len() >= NAME_LEN || self.name.contains('\0') {
            return Err(Error::invalid(format!(
                "NeffWriter: NEFF name {:?} must be under {NAME_LEN} bytes without NUL",
                self.name
            )));
        }
        let tar = self.tar()?;
        let gz = gzip_member(&tar, self.gzip_mtime)?;
        let header = NeffHeader {
            pkg_version: self.pkg_version,
            header_size: HEADER_SIZE as u64,
            // Both filled in by `pack`.
            data_size: 0,
            neff_version_major: self.neff_version.0,
            neff_version_minor: self.neff_version.1,
            build_version: [0; 128],
            num_tpb: self.num_tpb,
            hash: [0; 32],
            uuid: self.uuid,
            name: self.name.clone(),
            requested_tpb_count: self.requested_tpb_count,
            tpb_per_node: self.tpb_per_node,
            feature_bits: self.feature_bits,
            lnc_size: self.lnc_size,
        };
        Ok(pack(&header.to_bytes(), &gz, algo))
    }

    /// The uncompressed ustar archive.
    fn tar(&self) -> Result<Vec<u8>> {
        let mut seen = std::collections::BTreeSet::new();
        let total: usize = self
            .members
            .iter()
            .map(|(_, d)| BLOCK + d.len() + BLOCK)
            .sum();
        let mut tar = Vec::with_capacity(total + 2 * BLOCK);
        for (name, data) in &self.members {
            check_member_name(name)?;
            if !seen.insert(name.as_str()) {
                return Err(Error::invalid(format!(
                    "NeffWriter: duplicate member {name:?}"
                )));
            }
            if data.len() as u64 > MAX_SIZE {
                return Err(Error::invalid(format!(
                    "NeffWriter: member {name:?} is {} bytes, over the ustar limit",
                    data.len()
                )));
            }
            let header = ustar::RawHeader::regular_file(name.as_bytes(), data.len() as u64);
            ustar::append(&mut tar, &header, data);
        }
        ustar::finish(&mut tar);
        Ok(tar)
    }
}

fn check_member_name(name: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::invalid(format!(
            "NeffWriter: member name {name:?} {why}"
        )))
    };
    if name.is_empty() {
        return bad("is empty");
    }
    if name.len() > MAX_NAME {
        return bad("is longer than the 100-byte ustar name field");
    }
    if name.contains('\0') {
        return bad("contains NUL");
    }
    if name.starts_with('/') {
        return bad("is absolute");
    }
    if name
        .split('/')
        .any(|p| p.is_empty() || p == "." || p == "..")
    {
        return bad("has an empty, '.' or '..' component");
    }
    Ok(())
}

/// The raw layer under [`NeffWriter::write`], public for tools that build containers no
/// correct writer would (the malformed corpus): `header` (1024 bytes, as laid out by
/// [`NeffHeader::to_bytes`] or edited in place) followed by `gz` zero-padded to a multiple of
/// [`PAYLOAD_BLOCK`] (at least one block), with `data_size` and the `algo` hash of the padded
/// payload written into the header.
pub fn pack(header: &[u8; HEADER_SIZE], gz: &[u8], algo: HashAlgo) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_SIZE + gz.len() + PAYLOAD_BLOCK);
    out.extend_from_slice(header);
    out.extend_from_slice(gz);
    let padded = gz.len().div_ceil(PAYLOAD_BLOCK).max(1) * PAYLOAD_BLOCK;
    out.resize(HEADER_SIZE + padded, 0);
    rehash(&mut out, algo);
    out
}

/// Rewrites `data_size` and the hash of a packed NEFF (`header` + payload) after its payload
/// bytes changed.
pub fn rehash(neff: &mut [u8], algo: HashAlgo) {
    let payload_len = (neff.len() - HEADER_SIZE) as u64;
    neff[off::DATA_SIZE..off::DATA_SIZE + 8].copy_from_slice(&payload_len.to_le_bytes());
    let hash = payload_hash(algo, &neff[HEADER_SIZE..]);
    neff[off::HASH..off::HASH + 32].copy_from_slice(&hash);
}

/// One gzip member: the 10-byte header `1f 8b 08 00 <mtime LE> 04 03`, raw deflate at the
/// fastest level, then CRC-32 and ISIZE little-endian.
pub fn gzip_member(data: &[u8], mtime: u32) -> Result<Vec<u8>> {
    let mut out = vec![0x1f, 0x8b, 8, 0];
    out.extend_from_slice(&mtime.to_le_bytes());
    out.extend_from_slice(&[4, 3]);
    let mut enc = DeflateEncoder::new(out, Compression::fast());
    enc.write_all(data)
        .map_err(|e| Error::failure(format!("NeffWriter: deflate failed: {e}")))?;
    let mut out = enc
        .finish()
        .map_err(|e| Error::failure(format!("NeffWriter: deflate failed: {e}")))?;
    let mut crc = Crc::new();
    crc.update(data);
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&crc.amount().to_le_bytes());
    Ok(out)
}
