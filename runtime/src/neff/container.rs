//! Reading a NEFF: header checks, the optional hash check, one gzip member with its zero tail,
//! and the ustar walk into an in-memory member table (docs/neff.md §2.1–§3,
//! §3.3). Nothing here touches the host filesystem, and every size is checked against
//! [`Limits`] before or while it is read, so a decompression bomb is refused without
//! allocating past the limits.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Read};
use std::sync::Arc;

use flate2::bufread::GzDecoder;

use super::header::{hex, payload_hash, HashAlgo, NeffHeader, HEADER_SIZE};
use super::ustar::{self, BLOCK};
use crate::error::{Error, Result};
use crate::manifest::MemberSource;

/// Environment variable that turns on hash verification (docs/neff.md §2.2; default off).
pub const VALIDATE_HASH_ENV: &str = "NEURON_RT_VALIDATE_HASH";

/// Bounds on what a NEFF payload may expand to, against decompression bombs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most bytes the gzip member may decompress to (the whole tar stream). Default 4 GiB.
    pub max_uncompressed: u64,
    /// Most regular-file members. Default 65 536.
    pub max_members: usize,
    /// Largest single member. Default 2 GiB.
    pub max_member_size: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_uncompressed: 4 << 30,
            max_members: 65_536,
            max_member_size: 2 << 30,
        }
    }
}

/// How [`Neff::parse`] reads a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ParseOptions {
    /// Check the header hash against the payload (`NEURON_RT_VALIDATE_HASH`). Default off.
    pub verify_hash: bool,
    /// Decompression limits.
    pub limits: Limits,
}

impl ParseOptions {
    /// Default limits; `verify_hash` on when `NEURON_RT_VALIDATE_HASH` is `1`, `true` or `yes`
    /// (any case).
    pub fn from_env() -> Self {
        let verify_hash = std::env::var(VALIDATE_HASH_ENV)
            .map(|v| {
                let v = v.trim();
                v == "1" || v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("yes")
            })
            .unwrap_or(false);
        ParseOptions {
            verify_hash,
            limits: Limits::default(),
        }
    }
}

/// A parsed NEFF: its header and its members, held in memory.
///
/// Member names are normalised: a leading `./`, `.` components and repeated slashes are
/// dropped, so `./sg00//def.json` is stored as `sg00/def.json`.
#[derive(Clone)]
pub struct Neff {
    /// The decoded header.
    pub header: NeffHeader,
    members: BTreeMap<String, Arc<Vec<u8>>>,
    order: Vec<String>,
    hash_verified: Option<bool>,
}

impl fmt::Debug for Neff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Neff")
            .field("header", &self.header)
            .field(
                "members",
                &self
                    .members()
                    .map(|(n, b)| (n, b.len()))
                    .collect::<Vec<_>>(),
            )
            .field("hash_verified", &self.hash_verified)
            .finish()
    }
}

impl Neff {
    /// Parses a whole NEFF file.
    ///
    /// Rules, in order (all failures `NRT_INVALID` unless noted):
    /// * at least 1024 bytes; `header_size` 1024; `pkg_version` 1 or 2; NEFF major ≤ 2
    ///   (else `NRT_UNSUPPORTED_NEFF_VERSION`);
    /// * the file is exactly `1024 + data_size` bytes: real compilers write nothing after the
    ///   payload, so a shorter file is truncated and a longer one is not a NEFF we understand;
    /// * with `opts.verify_hash`, the header hash must match [`payload_hash`] of the payload;
    /// * the payload is one gzip member followed only by zero bytes;
    /// * the gzip member holds a ustar archive of regular files (directory entries are
    ///   ignored), each with a checksum-valid header and a relative name without `..`, no
    ///   duplicates, ending in an end-of-archive block followed by nothing but zeros;
    /// * everything within `opts.limits`.
    pub fn parse(bytes: &[u8], opts: &ParseOptions) -> Result<Neff> {
        let header = NeffHeader::parse(bytes)?;
        header.validate()?;
        let available = (bytes.len() - HEADER_SIZE) as u64;
        if header.data_size > available {
            return Err(Error::invalid(format!(
                "NEFF data_size is {} bytes but only {available} bytes follow the header \
                 (file truncated?)",
                header.data_size
            )));
        }
        if header.data_size < available {
            return Err(Error::invalid(format!(
                "NEFF data_size is {} bytes but {available} bytes follow the header \
                 ({} unexpected trailing bytes)",
                header.data_size,
                available - header.data_size
            )));
        }
        let payload = &bytes[HEADER_SIZE..];
        let (hash, unpacked) = if opts.verify_hash {
            // validate() guarantees a known pkg_version.
            let algo = header.hash_algo().unwrap_or(HashAlgo::Md5);
            hash_while_unpacking(algo, payload, &opts.limits)
        } else {
            (None, unpack(payload, &opts.limits))
        };
        // The hash check comes first: a payload that does not match its header is reported as
        // such, whatever the archive inside looks like.
        let hash_verified = match hash {
            Some((algo, computed)) => {
                let n = algo.stored_len();
                if computed[..n] != header.hash[..n] {
                    return Err(Error::invalid(format!(
                        "NEFF hash mismatch: header says {}, payload hashes to {}",
                        header.hash_hex(),
                        hex(&computed[..n])
                    )));
                }
                Some(true)
            }
            None => None,
        };
        let (members, order) = unpacked?;
        Ok(Neff {
            header,
            members,
            order,
            hash_verified,
        })
    }

    /// A member's bytes; a leading `./` on `path` is ignored.
    pub fn member(&self, path: &str) -> Option<&[u8]> {
        self.member_arc(path).map(|a| a.as_slice())
    }

    /// A member's shared buffer (cheap to clone into a cache); a leading `./` is ignored.
    pub fn member_arc(&self, path: &str) -> Option<&Arc<Vec<u8>>> {
        let mut p = path;
        while let Some(rest) = p.strip_prefix("./") {
            p = rest;
        }
        self.members.get(p)
    }

    /// Every member with its bytes, in archive order.
    pub fn members(&self) -> impl Iterator<Item = (&str, &[u8])> + '_ {
        self.order
            .iter()
            .filter_map(|n| self.members.get(n).map(|b| (n.as_str(), b.as_slice())))
    }

    /// How many members the archive holds (directory entries not counted).
    pub fn member_count(&self) -> usize {
        self.order.len()
    }

    /// `Some(true)` when the header hash was checked and matched, `None` when not checked.
    pub fn hash_verified(&self) -> Option<bool> {
        self.hash_verified
    }
}

/// The manifests read a parsed NEFF's members through [`MemberSource`] (sharing the buffers).
impl MemberSource for Neff {
    fn member(&self, path: &str) -> Option<&[u8]> {
        Neff::member(self, path)
    }
    fn member_shared(&self, path: &str) -> Option<Arc<Vec<u8>>> {
        self.member_arc(path).cloned()
    }
}

/// Payloads at least this large are hashed on a second thread while this one inflates.
const PARALLEL_HASH_MIN: usize = 1 << 20;

/// Hashes the (compressed) payload with `algo` and unpacks it, overlapping the two on two
/// threads for a large payload (docs/neff.md §2.2: the hash covers the payload bytes as stored,
/// so it needs nothing from the inflater). Returns the computed hash and the unpack result; the
/// caller checks the hash first, so the errors are those of the serial order.
fn hash_while_unpacking(
    algo: HashAlgo,
    payload: &[u8],
    limits: &Limits,
) -> (Option<(HashAlgo, [u8; 32])>, Result<Members>) {
    if payload.len() < PARALLEL_HASH_MIN {
        return (
            Some((algo, payload_hash(algo, payload))),
            unpack(payload, limits),
        );
    }
    std::thread::scope(|s| {
        let hasher = std::thread::Builder::new()
            .name("neff-hash".into())
            .spawn_scoped(s, move || payload_hash(algo, payload));
        let unpacked = unpack(payload, limits);
        let computed = match hasher {
            Ok(h) => h.join().unwrap_or_else(|_| payload_hash(algo, payload)),
            // No thread to be had: hash here, after the unpack.
            Err(_) => payload_hash(algo, payload),
        };
        (Some((algo, computed)), unpacked)
    })
}

/// A reader that refuses to yield more than `limit` bytes in total.
struct Limited<R> {
    inner: R,
    count: u64,
    limit: u64,
    exceeded: bool,
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let allowed = self.limit - self.count;
        if allowed == 0 {
            let mut probe = [0u8; 1];
            if self.inner.read(&mut probe)? == 0 {
                return Ok(0);
            }
            self.exceeded = true;
            return Err(io::Error::other("max_uncompressed exceeded"));
        }
        let want = buf
            .len()
            .min(usize::try_from(allowed).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.count += n as u64;
        Ok(n)
    }
}

type Stream<'a> = Limited<GzDecoder<&'a [u8]>>;

fn bomb(limits: &Limits, what: &str) -> Error {
    Error::invalid(format!(
        "NEFF payload decompresses to more than {} bytes (Limits::max_uncompressed){what}",
        limits.max_uncompressed
    ))
}

/// Maps a read error from the gzip/limit stack to a runtime error.
fn stream_error(r: &Stream<'_>, limits: &Limits, e: io::Error) -> Error {
    if r.exceeded {
        return bomb(limits, "");
    }
    if e.kind() == io::ErrorKind::UnexpectedEof {
        Error::invalid(format!(
            "truncated gzip payload: {e} after {} decompressed bytes",
            r.count
        ))
    } else {
        Error::invalid(format!(
            "corrupt gzip payload: {e} after {} decompressed bytes",
            r.count
        ))
    }
}

/// Reads until `buf` is full or the stream ends; returns the bytes read.
fn read_full(r: &mut Stream<'_>, limits: &Limits, buf: &mut [u8]) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(stream_error(r, limits, e)),
        }
    }
    Ok(got)
}

fn truncated(at: u64, what: &str) -> Error {
    Error::invalid(format!(
        "truncated gzip payload: tar stream ends at offset {at} inside {what}"
    ))
}

/// Reads exactly `size` bytes of member data straight into the member's shared buffer (no
/// intermediate `Vec`, no second copy). The buffer is zero-initialised memory from the
/// allocator's zeroed path, which for a large member is fresh pages that cost host memory only
/// as the inflater writes them, so a member that declares more than the stream holds costs
/// address space, not memory, until the truncation is found.
fn read_data(r: &mut Stream<'_>, limits: &Limits, size: u64, name: &str) -> Result<Arc<Vec<u8>>> {
    let size = usize::try_from(size).map_err(|_| {
        Error::resource(format!(
            "tar member {name:?} is {size} bytes, too large for this host"
        ))
    })?;
    let mut buf = zeroed_member(size).ok_or_else(|| {
        Error::resource(format!(
            "cannot allocate {size} bytes for tar member {name:?}"
        ))
    })?;
    let data = Arc::get_mut(&mut buf)
        .expect("a fresh Arc is unique")
        .as_mut_slice();
    let got = read_full(r, limits, data)?;
    if got < size {
        return Err(truncated(
            r.count,
            &format!("the data of member {name:?} ({size} bytes declared)"),
        ));
    }
    Ok(buf)
}

/// A zero-filled shared buffer of `size` bytes, or `None` if the host cannot provide it.
fn zeroed_member(size: usize) -> Option<Arc<Vec<u8>>> {
    // `vec![0; n]` aborts on allocation failure; ask the allocator first so that an impossible
    // size is a clear error (the probe reserves address space only and is released at once).
    Vec::<u8>::new().try_reserve_exact(size).ok()?;
    // `vec![0; n]` takes the allocator's zeroed path (`calloc`), which serves a large block
    // with fresh pages: nothing is written until the inflater writes it.
    Some(Arc::new(vec![0u8; size]))
}

/// Skips `n` bytes of the stream (entry padding, ignored directory data).
fn skip(r: &mut Stream<'_>, limits: &Limits, n: u64, what: &str) -> Result<()> {
    let mut left = n;
    let mut scratch = [0u8; BLOCK];
    while left > 0 {
        let want = left.min(BLOCK as u64) as usize;
        let got = read_full(r, limits, &mut scratch[..want])?;
        if got < want {
            return Err(truncated(r.count, what));
        }
        left -= want as u64;
    }
    Ok(())
}

/// What a typeflag means when it is not a regular file or a directory.
fn refused_type(t: u8) -> &'static str {
    match t {
        b'1' => "a hard link",
        b'2' => "a symbolic link",
        b'3' => "a character device",
        b'4' => "a block device",
        b'6' => "a FIFO",
        b'7' => "a contiguous file",
        b'x' => "a pax extended header",
        b'g' => "a pax global header",
        b'L' => "a GNU long-name header",
        b'K' => "a GNU long-link header",
        _ => "an unsupported entry type",
    }
}

/// Checks a member name and returns its normalised form (no leading `./`, no `.` or empty
/// components); the result is empty for a name like `./`.
fn normalise_name(raw: &[u8], at: u64) -> Result<String> {
    let name = std::str::from_utf8(raw).map_err(|_| {
        Error::invalid(format!(
            "tar member name {:?} at offset {at} is not UTF-8",
            raw.escape_ascii().to_string()
        ))
    })?;
    if name.is_empty() {
        return Err(Error::invalid(format!(
            "tar member at offset {at} has an empty name"
        )));
    }
    if name.starts_with('/') {
        return Err(Error::invalid(format!(
            "tar member {name:?} has an absolute path"
        )));
    }
    let mut parts = Vec::new();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                return Err(Error::invalid(format!(
                    "tar member {name:?} has a '..' path component"
                )))
            }
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

type Members = (BTreeMap<String, Arc<Vec<u8>>>, Vec<String>);

/// Gunzips one member from `payload`, checks the zero tail, and walks the tar inside.
fn unpack(payload: &[u8], limits: &Limits) -> Result<Members> {
    let mut r: Stream<'_> = Limited {
        inner: GzDecoder::new(payload),
        count: 0,
        limit: limits.max_uncompressed,
        exceeded: false,
    };
    match unpack_from(&mut r, payload, limits) {
        Ok(m) => Ok(m),
        // A damaged gzip stream usually inflates to garbage before the decoder notices, so the
        // tar reader complains first. On any error, finish inflating: if the gzip layer is
        // broken, that is the problem to report (this costs nothing on the success path).
        Err(e) => {
            let mut sink = [0u8; 8192];
            loop {
                match r.read(&mut sink) {
                    Ok(0) => return Err(e),
                    Ok(_) => {}
                    Err(x) if x.kind() == io::ErrorKind::Interrupted => {}
                    Err(x) if r.exceeded => {
                        let _ = x;
                        return Err(e);
                    }
                    Err(x) => return Err(stream_error(&r, limits, x)),
                }
            }
        }
    }
}

fn unpack_from(r: &mut Stream<'_>, payload: &[u8], limits: &Limits) -> Result<Members> {
    let mut members = BTreeMap::new();
    let mut order = Vec::new();

    loop {
        let at = r.count;
        let mut block = [0u8; BLOCK];
        let got = read_full(r, limits, &mut block)?;
        if got == 0 {
            return Err(Error::invalid(format!(
                "tar archive ends at offset {at} without its end-of-archive block \
                 (truncated gzip payload?)"
            )));
        }
        if got < BLOCK {
            return Err(truncated(r.count, "a tar header block"));
        }
        if block.iter().all(|&b| b == 0) {
            break;
        }
        let entry = ustar::parse_header(&block)
            .map_err(|e| Error::invalid(format!("tar header at offset {at}: {e}")))?;
        let padded = entry.size.saturating_add(ustar::padding(entry.size));
        let shown = String::from_utf8_lossy(&entry.name).into_owned();
        if padded > limits.max_uncompressed - r.count {
            return Err(bomb(
                limits,
                &format!(": tar member {shown:?} declares {} bytes", entry.size),
            ));
        }
        let is_dir = entry.typeflag == b'5'
            || (matches!(entry.typeflag, b'0' | 0) && entry.name.last() == Some(&b'/'));
        if is_dir {
            skip(r, limits, padded, "a directory entry")?;
            continue;
        }
        if !matches!(entry.typeflag, b'0' | 0) {
            return Err(Error::invalid(format!(
                "tar member {shown:?} is {} (typeflag {:?}); a NEFF may hold only regular files",
                refused_type(entry.typeflag),
                char::from(entry.typeflag)
            )));
        }
        let name = normalise_name(&entry.name, at)?;
        if name.is_empty() {
            return Err(Error::invalid(format!(
                "tar member {shown:?} at offset {at} has an empty name"
            )));
        }
        if members.contains_key(&name) {
            return Err(Error::invalid(format!("duplicate tar member {name:?}")));
        }
        if order.len() >= limits.max_members {
            return Err(Error::invalid(format!(
                "NEFF has more than {} members (Limits::max_members)",
                limits.max_members
            )));
        }
        if entry.size > limits.max_member_size {
            return Err(Error::invalid(format!(
                "tar member {name:?} is {} bytes, over {} (Limits::max_member_size)",
                entry.size, limits.max_member_size
            )));
        }
        let data = read_data(r, limits, entry.size, &name)?;
        skip(
            r,
            limits,
            ustar::padding(entry.size),
            &format!("the padding of member {name:?}"),
        )?;
        members.insert(name.clone(), data);
        order.push(name);
    }

    // After the end-of-archive block: only zero blocks until the gzip member ends (this also
    // reads the gzip trailer, which checks the CRC and length).
    let mut scratch = vec![0u8; 64 << 10];
    loop {
        let at = r.count;
        let got = read_full(r, limits, &mut scratch)?;
        if got == 0 {
            break;
        }
        if let Some(i) = scratch[..got].iter().position(|&b| b != 0) {
            return Err(Error::invalid(format!(
                "non-zero data at offset {} after the tar end-of-archive block",
                at + i as u64
            )));
        }
    }

    let rest: &[u8] = r.inner.get_ref();
    let consumed = payload.len() - rest.len();
    if let Some(i) = rest.iter().position(|&b| b != 0) {
        return Err(Error::invalid(format!(
            "trailing garbage after gzip member: non-zero byte at payload offset {} \
             (gzip member is {consumed} bytes, payload {})",
            consumed + i,
            payload.len()
        )));
    }
    Ok((members, order))
}
