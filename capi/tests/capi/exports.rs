//! The export set: the functions the headers declare == the library's export table ==
//! `nm -D --defined-only` of the built library, each at `NRT_2.0.0`, and the SONAME.

use std::collections::BTreeSet;
use std::process::Command;

use crate::support::libnrt;

/// Function names declared in a header's text (comments removed): identifiers `nrt_*`/`nrta_*`
/// directly followed by `(`.
fn declared(text: &str) -> BTreeSet<String> {
    let mut code = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("/*") {
        code.push_str(&rest[..i]);
        rest = rest[i..].find("*/").map_or("", |j| &rest[i + j + 2..]);
    }
    code.push_str(rest);
    let code: String = code
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let bytes = code.as_bytes();
    let mut out = BTreeSet::new();
    let mut i = 0;
    while i < bytes.len() {
        let word_start = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if word_start && (code[i..].starts_with("nrt_") || code[i..].starts_with("nrta_")) {
            let end = code[i..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map_or(code.len(), |e| i + e);
            if code[end..].starts_with('(') {
                out.insert(code[i..end].to_string());
            }
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

#[test]
fn headers_declare_exactly_the_export_table() {
    let mut from_headers = BTreeSet::new();
    for (_, text) in nrt::headers::HEADERS {
        from_headers.extend(declared(text));
    }
    let table: BTreeSet<String> = nrt::export::EXPORTED
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        table.len(),
        nrt::export::EXPORTED.len(),
        "the table lists a name twice"
    );
    assert_eq!(from_headers, table);
    assert_eq!(table.len(), 112);
}

#[test]
fn nm_shows_every_export_at_nrt_2_0_0_and_nothing_else() {
    let so = libnrt();
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&so)
        .output();
    let Ok(out) = out else {
        println!("SKIP: no `nm` (binutils) on PATH");
        return;
    };
    assert!(out.status.success());
    let mut names = BTreeSet::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let sym = line.split_whitespace().last().unwrap();
        let (name, version) = sym
            .split_once("@@")
            .unwrap_or_else(|| panic!("{sym}: exported without the default version NRT_2.0.0"));
        assert_eq!(version, "NRT_2.0.0", "{sym}");
        names.insert(name.to_string());
    }
    let table: BTreeSet<String> = nrt::export::EXPORTED
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(names, table);
    let dynamic = Command::new("readelf").arg("-d").arg(&so).output().unwrap();
    let dynamic = String::from_utf8_lossy(&dynamic.stdout);
    assert!(
        dynamic.contains("Library soname: [libnrt.so.1]"),
        "{dynamic}"
    );
    let bytes = std::fs::read(&so).unwrap();
    let ident = nrt::IDENT.as_bytes();
    assert!(
        bytes.windows(ident.len()).any(|w| w == ident),
        "the identifying string"
    );
}
