//! The POSIX ustar header block (docs/neff.md §3): encoding the one kind of
//! entry NEFFs hold, a regular file, and decoding the fields the reader needs.
//!
//! Layout of the 512-byte block: name[100] @0, mode[8] @100, uid[8] @108, gid[8] @116,
//! size[12] @124, mtime[12] @136, chksum[8] @148, typeflag @156, linkname[100] @157,
//! magic[6] @257, version[2] @263, uname[32] @265, gname[32] @297, devmajor[8] @329,
//! devminor[8] @337, prefix[155] @345.

/// Size of a tar block.
pub const BLOCK: usize = 512;

/// Longest member name the writer stores (the `name` field; `prefix` is never used).
pub const MAX_NAME: usize = 100;

/// Largest size an 11-digit octal `size` field can hold.
pub const MAX_SIZE: u64 = 0o77_777_777_777;

const NAME: usize = 0;
const MODE: usize = 100;
const UID: usize = 108;
const GID: usize = 116;
const SIZE: usize = 124;
const MTIME: usize = 136;
const CHKSUM: usize = 148;
const TYPEFLAG: usize = 156;
const LINKNAME: usize = 157;
const MAGIC: usize = 257;
const VERSION: usize = 263;
const UNAME: usize = 265;
const GNAME: usize = 297;
const DEVMAJOR: usize = 329;
const DEVMINOR: usize = 337;
const PREFIX: usize = 345;

/// Bytes of padding after `size` bytes of member data to reach a block boundary.
pub fn padding(size: u64) -> u64 {
    (BLOCK as u64 - size % BLOCK as u64) % BLOCK as u64
}

/// A raw header block, written field by field (as the `tar` crate's `Header` exposes its
/// fields): the writer's layer, also used to build archives no correct writer would (links,
/// bad names, bad checksums) for the malformed corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawHeader(pub [u8; BLOCK]);

impl RawHeader {
    /// The header block of a regular file as real NEFFs carry it: typeflag `0`, mode 0664,
    /// uid/gid 1000, uname/gname `nobody`, mtime 0, magic `ustar\0`, version `00`, checksum
    /// set. A `name` longer than the 100-byte field is cut; `size` above [`MAX_SIZE`] keeps
    /// its low 11 octal digits.
    pub fn regular_file(name: &[u8], size: u64) -> RawHeader {
        let mut h = RawHeader([0u8; BLOCK]);
        h.set_name(name);
        h.octal(MODE, 8, 0o664);
        h.octal(UID, 8, 1000);
        h.octal(GID, 8, 1000);
        h.octal(SIZE, 12, size);
        h.octal(MTIME, 12, 0);
        h.0[TYPEFLAG] = b'0';
        h.put(MAGIC, b"ustar\0");
        h.put(VERSION, b"00");
        h.put(UNAME, b"nobody");
        h.put(GNAME, b"nobody");
        h.octal(DEVMAJOR, 8, 0);
        h.octal(DEVMINOR, 8, 0);
        h.set_checksum();
        h
    }

    fn put(&mut self, at: usize, v: &[u8]) {
        self.0[at..at + v.len()].copy_from_slice(v);
    }

    /// `width - 1` octal digits (the low ones) and a NUL.
    fn octal(&mut self, at: usize, width: usize, value: u64) {
        let digits = width - 1;
        let s = format!("{value:0digits$o}");
        self.put(at, &s.as_bytes()[s.len() - digits..]);
        self.0[at + digits] = 0;
    }

    /// Sets the `name` field (cut to 100 bytes; the rest NUL).
    pub fn set_name(&mut self, name: &[u8]) {
        let n = name.len().min(MAX_NAME);
        self.0[NAME..NAME + MAX_NAME].fill(0);
        self.put(NAME, &name[..n]);
    }

    /// Sets the `typeflag` byte (`b'0'` file, `b'1'` hard link, `b'2'` symlink, `b'5'` directory).
    pub fn set_typeflag(&mut self, typeflag: u8) {
        self.0[TYPEFLAG] = typeflag;
    }

    /// Sets the `linkname` field (cut to 100 bytes).
    pub fn set_linkname(&mut self, link: &[u8]) {
        let n = link.len().min(100);
        self.0[LINKNAME..LINKNAME + 100].fill(0);
        self.put(LINKNAME, &link[..n]);
    }

    /// Recomputes `chksum`: the unsigned byte sum of the block with the field as spaces, six
    /// octal digits, NUL, space.
    pub fn set_checksum(&mut self) {
        self.put(CHKSUM, b"        ");
        let sum: u32 = self.0.iter().map(|&b| u32::from(b)).sum();
        self.put(CHKSUM, format!("{sum:06o}\0 ").as_bytes());
    }
}

/// The header block of a regular file as real NEFFs carry it ([`RawHeader::regular_file`]).
///
/// The caller guarantees `name.len() <= MAX_NAME` and `size <= MAX_SIZE`.
pub fn regular_file_header(name: &str, size: u64) -> [u8; BLOCK] {
    RawHeader::regular_file(name.as_bytes(), size).0
}

/// Appends one member — its header block, `data`, and zero padding to a block boundary — to
/// `tar`.
pub fn append(tar: &mut Vec<u8>, header: &RawHeader, data: &[u8]) {
    tar.extend_from_slice(&header.0);
    tar.extend_from_slice(data);
    tar.resize(tar.len() + padding(data.len() as u64) as usize, 0);
}

/// Ends an archive: two zero blocks.
pub fn finish(tar: &mut Vec<u8>) {
    tar.resize(tar.len() + 2 * BLOCK, 0);
}

/// A decoded header block (only what the reader uses).
#[derive(Debug)]
pub struct Entry {
    /// Raw member name bytes: `prefix/name` for POSIX ustar, `name` otherwise.
    pub name: Vec<u8>,
    /// The typeflag byte.
    pub typeflag: u8,
    /// Declared data size.
    pub size: u64,
}

/// Why a header block could not be decoded.
#[derive(Debug)]
pub enum HeaderError {
    /// The `magic` field is not `ustar`.
    BadMagic([u8; 6]),
    /// The `chksum` field is not octal.
    BadChecksumField,
    /// The checksum does not match the block.
    ChecksumMismatch {
        /// The value in the `chksum` field.
        stored: u64,
        /// The unsigned byte sum of the block.
        computed: u64,
    },
    /// The `size` field is not octal (base-256 sizes are refused).
    BadSize,
}

impl std::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeaderError::BadMagic(m) => {
                write!(
                    f,
                    "not a ustar header (magic {:?})",
                    m.escape_ascii().to_string()
                )
            }
            HeaderError::BadChecksumField => write!(f, "tar header checksum field is not octal"),
            HeaderError::ChecksumMismatch { stored, computed } => write!(
                f,
                "tar header checksum mismatch: stored {stored:o}, computed {computed:o} (octal)"
            ),
            HeaderError::BadSize => write!(
                f,
                "tar header size field is not octal (base-256 sizes are not supported)"
            ),
        }
    }
}

/// Parses an octal numeric field: optional leading spaces, octal digits, then NUL/space
/// terminators. An empty field is 0. `None` for anything else or on overflow.
fn parse_octal(field: &[u8]) -> Option<u64> {
    let start = field.iter().position(|&c| c != b' ')?;
    let field = &field[start..];
    let end = field
        .iter()
        .position(|&c| c == 0 || c == b' ')
        .unwrap_or(field.len());
    if field[end..].iter().any(|&c| c != 0 && c != b' ') {
        return None;
    }
    field[..end].iter().try_fold(0u64, |acc, &c| {
        if !(b'0'..=b'7').contains(&c) {
            return None;
        }
        acc.checked_mul(8)?.checked_add(u64::from(c - b'0'))
    })
}

fn cstr(field: &[u8]) -> &[u8] {
    let end = field.iter().position(|&c| c == 0).unwrap_or(field.len());
    &field[..end]
}

/// Decodes a (non-zero) header block, checking magic and checksum.
pub fn parse_header(h: &[u8; BLOCK]) -> Result<Entry, HeaderError> {
    let magic: [u8; 6] = h[MAGIC..MAGIC + 6].try_into().unwrap_or([0; 6]);
    if &magic[..5] != b"ustar" {
        return Err(HeaderError::BadMagic(magic));
    }
    let stored = parse_octal(&h[CHKSUM..CHKSUM + 8]).ok_or(HeaderError::BadChecksumField)?;
    let (unsigned, signed) = h.iter().enumerate().fold((0u64, 0i64), |(u, s), (i, &b)| {
        let b = if (CHKSUM..CHKSUM + 8).contains(&i) {
            b' '
        } else {
            b
        };
        (u + u64::from(b), s + i64::from(b as i8))
    });
    // Historic writers summed signed chars; accept either form as tar implementations do.
    if stored != unsigned && i64::try_from(stored).ok() != Some(signed) {
        return Err(HeaderError::ChecksumMismatch {
            stored,
            computed: unsigned,
        });
    }
    if h[SIZE] & 0x80 != 0 {
        return Err(HeaderError::BadSize);
    }
    let size = parse_octal(&h[SIZE..SIZE + 12]).ok_or(HeaderError::BadSize)?;
    let mut name = Vec::new();
    // POSIX ustar ("ustar\0" + "00") may split long names into prefix/name; the GNU layout
    // ("ustar  \0") uses those bytes for other fields.
    let prefix = cstr(&h[PREFIX..PREFIX + 155]);
    if &magic == b"ustar\0" && !prefix.is_empty() {
        name.extend_from_slice(prefix);
        name.push(b'/');
    }
    name.extend_from_slice(cstr(&h[NAME..NAME + 100]));
    Ok(Entry {
        name,
        typeflag: h[TYPEFLAG],
        size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn octal_fields() {
        assert_eq!(parse_octal(b"0000664\0"), Some(0o664));
        assert_eq!(parse_octal(b"  123 \0"), Some(0o123));
        assert_eq!(parse_octal(b"\0\0\0"), Some(0));
        assert_eq!(parse_octal(b"12x\0"), None);
        assert_eq!(parse_octal(b"12\0 3"), None);
        assert_eq!(parse_octal(b"77777777777777777777777"), None);
    }

    #[test]
    fn header_round_trip() {
        let h = regular_file_header("sg00/def.json", 1234);
        let e = parse_header(&h).unwrap();
        assert_eq!(e.name, b"sg00/def.json");
        assert_eq!(e.size, 1234);
        assert_eq!(e.typeflag, b'0');
        assert_eq!(&h[CHKSUM + 6..CHKSUM + 8], b"\0 ");
    }
}
