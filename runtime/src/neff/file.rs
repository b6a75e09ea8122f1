//! Reading a NEFF (or any input file) from a path, bounded: a path that is not a regular file
//! (a FIFO, a device such as `/dev/zero`, a directory) or a file larger than the limit is
//! refused at once with `NRT_INVALID` naming it, before any byte is read. The read itself is
//! capped at the limit, so a file that grows while being read cannot exceed it either.

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};

/// The default limit: 4 GiB (`NRT_EMU_MAX_NEFF_FILE_BYTES` overrides it, see
/// [`crate::config::RuntimeConfig::max_neff_file`]).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 4 << 30;

/// The bytes of the regular file at `path`, at most `max_bytes` of them.
pub fn read_file(path: &Path, max_bytes: u64) -> Result<Vec<u8>> {
    let shown = path.display();
    let meta =
        std::fs::metadata(path).map_err(|e| Error::failure(format!("cannot read {shown}: {e}")))?;
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file (a device, FIFO or socket)"
        };
        return Err(Error::invalid(format!(
            "{shown} is {what}; a NEFF or input file must be a regular file"
        )));
    }
    if meta.len() > max_bytes {
        return Err(Error::invalid(format!(
            "{shown} is {} bytes, more than the limit of {max_bytes} bytes (NRT_EMU_MAX_NEFF_FILE_BYTES)",
            meta.len()
        )));
    }
    let f = std::fs::File::open(path)
        .map_err(|e| Error::failure(format!("cannot read {shown}: {e}")))?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::failure(format!("cannot read {shown}: {e}")))?;
    if bytes.len() as u64 > max_bytes {
        return Err(Error::invalid(format!(
            "{shown} grew past the limit of {max_bytes} bytes while being read (NRT_EMU_MAX_NEFF_FILE_BYTES)"
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::NrtStatus;

    #[test]
    fn devices_directories_and_large_files_are_refused_by_name() {
        let e = read_file(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert_eq!(e.status, NrtStatus::Invalid);
        assert!(
            e.message.contains("/dev/zero") && e.message.contains("regular file"),
            "{e}"
        );
        let e = read_file(Path::new("/"), 1 << 20).unwrap_err();
        assert!(e.message.contains("directory"), "{e}");
        let dir = std::env::temp_dir().join(format!("nrt-read-file-{}", std::process::id()));
        std::fs::write(&dir, [7u8; 100]).unwrap();
        assert_eq!(read_file(&dir, 100).unwrap(), vec![7u8; 100]);
        let e = read_file(&dir, 99).unwrap_err();
        assert!(
            e.message.contains("100 bytes") && e.message.contains("limit of 99"),
            "{e}"
        );
        std::fs::remove_file(&dir).unwrap();
        let e = read_file(Path::new("/nonexistent/x.neff"), 10).unwrap_err();
        assert!(e.message.contains("/nonexistent/x.neff"), "{e}");
    }
}
