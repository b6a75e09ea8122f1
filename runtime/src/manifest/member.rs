//! Member access for the manifest parsers: the [`MemberSource`] trait through which they read a
//! NEFF's members (so the manifests do not depend on the container type), and the joining of a
//! member path written inside a manifest to that manifest's directory (docs/neff.md §3.3).

use std::collections::{BTreeMap, HashMap};

/// Read access to the members of a NEFF (path → bytes).
///
/// Paths are the tar member names with no leading `./` (`neff.json`, `sg00/def.json`).
pub trait MemberSource {
    /// The bytes of member `path`, if present.
    fn member(&self, path: &str) -> Option<&[u8]>;

    /// Member `path`'s bytes as a shared buffer, when the source holds them as one (a parsed
    /// NEFF does), so a consumer keeping the whole member needs no copy. `None` by default.
    fn member_shared(&self, path: &str) -> Option<std::sync::Arc<Vec<u8>>> {
        let _ = path;
        None
    }
}

impl<S: MemberSource + ?Sized> MemberSource for &S {
    fn member(&self, path: &str) -> Option<&[u8]> {
        (**self).member(path)
    }
    fn member_shared(&self, path: &str) -> Option<std::sync::Arc<Vec<u8>>> {
        (**self).member_shared(path)
    }
}

impl MemberSource for BTreeMap<String, Vec<u8>> {
    fn member(&self, path: &str) -> Option<&[u8]> {
        self.get(path).map(Vec::as_slice)
    }
}

impl MemberSource for HashMap<String, Vec<u8>> {
    fn member(&self, path: &str) -> Option<&[u8]> {
        self.get(path).map(Vec::as_slice)
    }
}

/// Joins member path `rel`, written inside a manifest, to the directory `dir` of that
/// manifest (`""` for the top level): `("sg00", "PE.json")` → `sg00/PE.json`. A leading `./`
/// is dropped from both parts.
pub fn join_member(dir: &str, rel: &str) -> String {
    let rel = rel.trim_start_matches("./");
    let dir = dir.trim_start_matches("./").trim_end_matches('/');
    if dir.is_empty() {
        rel.to_string()
    } else {
        format!("{dir}/{rel}")
    }
}

/// The directory part of a member path (`sg00/def.json` → `sg00`, `neff.json` → ``).
pub fn member_dir(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

/// Looks up member `rel` of a manifest living in `dir`: first `dir/rel`, then (for writers that
/// already spell the full path) `rel` itself. Returns the path found and the bytes.
pub fn resolve_member<'a>(
    src: &'a (impl MemberSource + ?Sized),
    dir: &str,
    rel: &str,
) -> Option<(String, &'a [u8])> {
    let joined = join_member(dir, rel);
    if let Some(b) = src.member(&joined) {
        return Some((joined, b));
    }
    let plain = rel.trim_start_matches("./");
    src.member(plain).map(|b| (plain.to_string(), b))
}
