//! The export set: the functions the headers declare == the library's export table ==
//! `nm -D --defined-only` of the built library, each at `NRT_2.0.0`, and the SONAME.

use std::collections::BTreeSet;
use std::process::Command;

use crate::support::libnrt;

/// Function names declared in a header's text (comments removed): identifiers `nrt_*`/`nrta_*`/`nec_*`
/// directly followed by `(`.
pub fn declared(text: &str) -> BTreeSet<String> {
    let code = strip_comments(text);
    let bytes = code.as_bytes();
    let mut out = BTreeSet::new();
    let mut i = 0;
    while i < bytes.len() {
        let word_start = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if word_start
            && ["nrt_", "nrta_", "nec_"]
                .iter()
                .any(|p| code[i..].starts_with(p))
        {
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

/// The pointer parameters of every function the headers declare, by function, in order: each
/// parameter whose declaration has a `*` or is the callback typedef (a function pointer).
pub fn pointer_params() -> std::collections::BTreeMap<String, Vec<String>> {
    let mut out = std::collections::BTreeMap::new();
    for (_, text) in nrt::headers::HEADERS {
        let code = strip_comments(text);
        for name in declared(text) {
            let at = code
                .match_indices(&format!("{name}("))
                .map(|(i, _)| i)
                .find(|&i| {
                    i == 0 || {
                        let c = code.as_bytes()[i - 1];
                        !(c.is_ascii_alphanumeric() || c == b'_')
                    }
                })
                .unwrap();
            let args = &code[at + name.len() + 1..];
            let mut depth = 1;
            let end = args
                .char_indices()
                .find(|&(_, c)| {
                    match c {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .unwrap()
                .0;
            let ptrs = args[..end]
                .split(',')
                .filter(|p| p.contains('*') || p.contains("NRT_ASYNC_EXEC_STATUS_CALLBACK"))
                .map(|p| {
                    p.trim()
                        .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .next()
                        .unwrap()
                        .to_string()
                })
                .collect();
            out.insert(name, ptrs);
        }
    }
    out
}

fn strip_comments(text: &str) -> String {
    let mut code = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("/*") {
        code.push_str(&rest[..i]);
        rest = rest[i..].find("*/").map_or("", |j| &rest[i + j + 2..]);
    }
    code.push_str(rest);
    code.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
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
    assert_eq!(table.len(), 143);
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

#[test]
fn docs_list_every_export_as_implemented_or_with_its_status() {
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/c-api.md"),
    )
    .unwrap();
    let section = page
        .split("### 8.2 Every exported function")
        .nth(1)
        .expect("docs/c-api.md has section 8.2");
    let section = section.split("\n#").next().unwrap();
    let mut listed = BTreeSet::new();
    for row in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = row.split(" | ").collect();
        let name = cells[0].trim_start_matches("| ").trim_matches('`');
        let what = cells.get(2).map_or("", |c| c.trim_end_matches(" |"));
        assert!(
            what.starts_with("implemented") || what.starts_with("returns "),
            "{name}: {what:?} is neither \"implemented\" nor \"returns <status>: <why>\""
        );
        assert!(listed.insert(name.to_string()), "{name} is listed twice");
    }
    let table: BTreeSet<String> = nrt::export::EXPORTED
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        listed, table,
        "docs/c-api.md §8.2 against the exported functions"
    );
}
