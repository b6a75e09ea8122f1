//! # The NEFF container (docs/runtime.md §2.3 "container parse")
//!
//! Owns the byte-level NEFF file, as real compilers write it (docs/neff.md
//! §2–§3.3):
//!
//! * [`header`]: the 1024-byte little-endian header ([`NeffHeader`], docs/neff.md §2.1), the acceptance
//!   rules for it (docs/neff.md §2.3), and the payload hash with its MD5 word-reversal quirk
//!   ([`payload_hash`], docs/neff.md §2.2);
//! * [`container`]: [`Neff::parse`], which checks the header, optionally verifies the hash
//!   (`NEURON_RT_VALIDATE_HASH`), gunzips the single gzip member, requires the zero tail that
//!   pads the payload to a multiple of [`PAYLOAD_BLOCK`], and walks the ustar archive into an
//!   in-memory member table (docs/neff.md §3, §3.3) — never touching the host filesystem, bounded by
//!   [`Limits`];
//! * [`file`]: [`read_file`], the one bounded way to read a NEFF from a path (regular files
//!   under a size limit only);
//! * [`writer`]: [`NeffWriter`], which produces the same layout byte-deterministically (used by
//!   `fixtures` and tests).
//!
//! What the members *mean* (`neff.json`, `kelf-N.json`, `def.json`, …) belongs to
//! [`crate::manifest`]; the UUID-keyed parse cache to [`crate::tnc`].

pub mod container;
pub mod file;
pub mod header;
pub mod ustar;
pub mod writer;

pub use container::{Limits, Neff, ParseOptions, VALIDATE_HASH_ENV};
pub use file::read_file;
pub use header::{payload_hash, swap_md5_words, HashAlgo, NeffHeader, HEADER_SIZE, MAX_NEFF_MAJOR};
pub use writer::NeffWriter;

/// The generation a NEFF names in its kelf manifest (`None` for `*`, any generation): the one
/// "target of a NEFF" every caller (the CLI's `run` and `profile`, the conformance harness)
/// uses. Errors are the parse's or [`TopManifests::target`](crate::manifest::TopManifests::target)'s.
pub fn target_of(bytes: &[u8]) -> crate::Result<Option<nrt_hal::Target>> {
    let neff = Neff::parse(bytes, &ParseOptions::default())?;
    crate::manifest::top_manifests(&neff)?.target()
}

/// Whether `bytes` starts like a NEFF: a header whose `header_size` field is [`HEADER_SIZE`],
/// followed by a gzip member (docs/neff.md §2.1, §3) — what tells a whole NEFF from an engine
/// stream (`<Engine>.bin`, whose first byte is the `0xB1` record) for tools that take either.
pub fn looks_like_neff(bytes: &[u8]) -> bool {
    let field = header::off::HEADER_SIZE;
    bytes.len() > HEADER_SIZE + 2
        && bytes[field..field + 8] == (HEADER_SIZE as u64).to_le_bytes()
        && bytes[HEADER_SIZE..HEADER_SIZE + 2] == [0x1f, 0x8b]
}

/// The payload (gzip member + zero tail) is padded to a multiple of this many bytes
/// (libarchive's default block size, docs/neff.md §3).
pub const PAYLOAD_BLOCK: usize = 10_240;
