//! Every citation in the tree resolves: the cited document is in the repository and, when a
//! section is cited (`docs/driver.md §4.4`), that section exists (docs/README.md, "Citing these
//! pages").
//!
//! Scanned: every `.rs`, `.toml`, `.c`, `.h`, `.sh`, `.md` and `.py` file under the workspace
//! root, except build output, VCS data, fuzzing corpora, this file and the re-pointing script
//! (both hold old citations on purpose). A citation is a *source* followed by optional section
//! references joined by `,` `;` `/` `–` `and` `or` (across comment line breaks):
//!
//! | source | resolves to |
//! |---|---|
//! | `path/to/file.md` | that file from the workspace root or the citing file's directory (in `docs/`, the page beside it) |
//! | `DESIGN`, `seed 00N`, `ABI §`, `ISA §`, `reference §` | nothing: documents outside the repository |
//! | `shared/seeds`, `shared/reference`, `../shared/…` of those | nothing |
//!
//! A section `§N` or `§N.M` must be a numbered heading (`## N.` / `### N.M`) of the resolved
//! file. A `§` with no source before it is the citing file's own section inside `docs/`, and an
//! error elsewhere. The module `scan` is self-contained so the test can move with the layout.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod scan {
    use regex::Regex;
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::OnceLock;

    /// What a citation names.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Source {
        /// A markdown file, as written.
        File(String),
        /// A document outside the repository (`DESIGN`, `seed 003`, …), as written.
        Outside(String),
        /// No source: the citing file itself.
        Bare,
    }

    /// One citation found in a text.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Citation {
        /// 1-based line of the source (or of the section for a bare one).
        pub line: usize,
        /// What it cites.
        pub source: Source,
        /// The sections cited (`"4"`, `"4.2"`), in order.
        pub sections: Vec<String>,
    }

    /// A citation that does not resolve.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Problem {
        /// 1-based line.
        pub line: usize,
        /// The citation as found.
        pub cited: String,
        /// Why it does not resolve.
        pub reason: String,
    }

    fn source_re() -> &'static Regex {
        static RE: OnceLock<Regex> = OnceLock::new();
        RE.get_or_init(|| {
            Regex::new(concat!(
                r"(?P<md>[A-Za-z0-9_][A-Za-z0-9_./-]*\.md)\b",
                r"|(?P<out>\bDESIGN\b|\bseed 00\d\b|(?:\.\./)?\bshared/(?:seeds|reference)\b",
                r"|\b(?:ABI|ISA|reference)\b(?:\s|`)*§)",
            ))
            .expect("static regex")
        })
    }

    fn section_re() -> &'static Regex {
        static RE: OnceLock<Regex> = OnceLock::new();
        RE.get_or_init(|| Regex::new(r"§\s?(\d+(?:\.\d+)*)").expect("static regex"))
    }

    fn joiner_re() -> &'static Regex {
        static RE: OnceLock<Regex> = OnceLock::new();
        RE.get_or_init(|| {
            Regex::new(r"^[\s`,;/&–—-]*(?:(?:and|or|to)[\s`,;/&–—-]*)?$").expect("static regex")
        })
    }

    fn leader_re() -> &'static Regex {
        static RE: OnceLock<Regex> = OnceLock::new();
        RE.get_or_init(|| Regex::new(r"\n[ \t]*(?://[/!]?|#+|\*)?").expect("static regex"))
    }

    /// Whether `gap` (the text between two tokens) only joins them: separators, whitespace and
    /// comment leaders after line breaks.
    fn joins(gap: &str) -> bool {
        joiner_re().is_match(&leader_re().replace_all(gap, " "))
    }

    fn line_of(text: &str, at: usize) -> usize {
        text[..at].matches('\n').count() + 1
    }

    /// Every citation in `text`, in order.
    pub fn citations(text: &str) -> Vec<Citation> {
        let mut tokens: Vec<(usize, usize, Option<Source>, Option<String>)> = Vec::new();
        for m in source_re().captures_iter(text) {
            let whole = m.get(0).expect("match");
            if let Some(md) = m.name("md") {
                // Part of a URL: not a repository citation.
                let word_start = text[..md.start()]
                    .rfind(|c: char| c.is_whitespace() || "(<[\"'`".contains(c))
                    .map_or(0, |i| i + 1);
                if text[word_start..md.start()].contains("://") {
                    continue;
                }
                tokens.push((
                    md.start(),
                    md.end(),
                    Some(Source::File(md.as_str().into())),
                    None,
                ));
            } else {
                let out = m.name("out").expect("alternative");
                // `ABI §` and friends end in `§`: the section is scanned separately.
                let end = if out.as_str().ends_with('§') {
                    out.end() - '§'.len_utf8()
                } else {
                    whole.end()
                };
                let name = text[out.start()..end]
                    .trim_end_matches([' ', '`'])
                    .to_string();
                tokens.push((out.start(), end, Some(Source::Outside(name)), None));
            }
        }
        for m in section_re().captures_iter(text) {
            let whole = m.get(0).expect("match");
            tokens.push((whole.start(), whole.end(), None, Some(m[1].to_string())));
        }
        tokens.sort_by_key(|t| t.0);
        let mut out: Vec<Citation> = Vec::new();
        let mut open = false; // whether the last citation can take more sections
        let mut last_end = 0;
        for (start, end, source, section) in tokens {
            if start < last_end {
                continue;
            }
            match (source, section) {
                (Some(source), _) => {
                    out.push(Citation {
                        line: line_of(text, start),
                        source,
                        sections: Vec::new(),
                    });
                    open = true;
                }
                (None, Some(sec)) => {
                    if open && joins(&text[last_end..start]) {
                        out.last_mut().expect("open citation").sections.push(sec);
                    } else {
                        out.push(Citation {
                            line: line_of(text, start),
                            source: Source::Bare,
                            sections: vec![sec],
                        });
                        open = true;
                    }
                }
                (None, None) => unreachable!("a token is a source or a section"),
            }
            last_end = end;
        }
        out
    }

    /// The numbered sections of a markdown page: `## 3. Title` gives `"3"`, `### 3.2 Title`
    /// gives `"3.2"`.
    pub fn sections_of(markdown: &str) -> BTreeSet<String> {
        static RE: OnceLock<Regex> = OnceLock::new();
        let re = RE
            .get_or_init(|| Regex::new(r"(?m)^#{2,4} (\d+(?:\.\d+)*)\.?\s").expect("static regex"));
        re.captures_iter(markdown)
            .map(|c| c[1].to_string())
            .collect()
    }

    /// Checks the citations of one file. `resolve` maps a cited markdown path to the
    /// repository file it names (`None`: not in the repository); `pages` holds the sections of
    /// every markdown file by repository path; `own` is the citing file's repository path.
    pub fn check(
        own: &str,
        text: &str,
        resolve: &dyn Fn(&str) -> Option<String>,
        pages: &BTreeMap<String, BTreeSet<String>>,
    ) -> Vec<Problem> {
        let in_docs = own.starts_with("docs/") && own.ends_with(".md");
        let mut problems = Vec::new();
        for c in citations(text) {
            let shown = match &c.source {
                Source::File(f) | Source::Outside(f) => f.clone(),
                Source::Bare => String::new(),
            };
            let cited = if c.sections.is_empty() {
                shown.clone()
            } else {
                let secs: Vec<String> = c.sections.iter().map(|s| format!("§{s}")).collect();
                format!("{shown} {}", secs.join(", ")).trim().to_string()
            };
            let target = match &c.source {
                Source::Outside(_) => {
                    problems.push(Problem {
                        line: c.line,
                        cited,
                        reason: "cites a document that is not in the repository; cite docs/<page>.md §<n>".into(),
                    });
                    continue;
                }
                Source::Bare if in_docs => own.to_string(),
                Source::Bare => {
                    problems.push(Problem {
                        line: c.line,
                        cited,
                        reason: "a section with no document; write docs/<page>.md §<n>".into(),
                    });
                    continue;
                }
                Source::File(f) => match resolve(f) {
                    Some(t) => t,
                    None => {
                        problems.push(Problem {
                            line: c.line,
                            cited,
                            reason: format!("{f} is not in the repository"),
                        });
                        continue;
                    }
                },
            };
            let have = pages.get(&target);
            for s in &c.sections {
                if !have.is_some_and(|h| h.contains(s)) {
                    problems.push(Problem {
                        line: c.line,
                        cited: cited.clone(),
                        reason: format!("{target} has no section §{s}"),
                    });
                }
            }
        }
        problems
    }
}

/// Files the scan skips by name: they hold old citations on purpose.
const SKIP_FILES: &[&str] = &["docs_citations.rs", "repoint-citations.py"];
/// Directories never scanned.
const SKIP_DIRS: &[&str] = &[
    "target",
    ".git",
    "corpus",
    "artifacts",
    "node_modules",
    "__pycache__",
];
const EXTENSIONS: &[&str] = &["rs", "toml", "c", "h", "sh", "md", "py"];

fn collect(dir: &Path, root: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if p.is_dir() {
            // `fuzz/seeds` is generated, not committed (fuzz/.gitignore).
            let generated = name == "seeds" && p.parent().is_some_and(|d| d.ends_with("fuzz"));
            if !SKIP_DIRS.contains(&name) && !name.starts_with('.') && !generated {
                collect(&p, root, out);
            }
        } else if !SKIP_FILES.contains(&name)
            && p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| EXTENSIONS.contains(&e))
        {
            out.push(p.strip_prefix(root).expect("under root").to_path_buf());
        }
    }
}

fn repo_path(p: &Path) -> String {
    p.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Normalises `a/./b/../c` without touching the filesystem.
fn normalise(p: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::CurDir => {}
            other => parts.push(other.as_os_str().to_string_lossy().into_owned()),
        }
    }
    parts.join("/")
}

#[test]
fn every_citation_in_the_tree_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    collect(root, root, &mut files);
    assert!(
        files.iter().any(|f| repo_path(f) == "docs/ARCHITECTURE.md"),
        "docs/ARCHITECTURE.md must exist (scanned {} files)",
        files.len()
    );
    let known: BTreeSet<String> = files.iter().map(|f| repo_path(f)).collect();
    let mut pages: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut texts = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(root.join(f))
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        if f.extension().is_some_and(|e| e == "md") {
            pages.insert(repo_path(f), scan::sections_of(&text));
        }
        texts.push((f.clone(), text));
    }
    let mut problems = Vec::new();
    let mut citations = 0usize;
    for (f, text) in &texts {
        let own = repo_path(f);
        let dir = f.parent().unwrap_or(Path::new(""));
        let resolve = |cited: &str| -> Option<String> {
            [Path::new(cited).to_path_buf(), dir.join(cited)]
                .iter()
                .map(|p| normalise(p))
                .find(|p| known.contains(p))
        };
        citations += scan::citations(text).len();
        for p in scan::check(&own, text, &resolve, &pages) {
            problems.push(format!("{own}:{}: `{}`: {}", p.line, p.cited, p.reason));
        }
    }
    println!(
        "docs citations: {} files scanned, {citations} citations, {} problems",
        texts.len(),
        problems.len()
    );
    assert!(
        problems.is_empty(),
        "{} citation(s) do not resolve (run scripts/repoint-citations.py, or fix by hand):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[cfg(test)]
mod matcher {
    use super::scan::{check, citations, sections_of, Citation, Source};
    use std::collections::{BTreeMap, BTreeSet};

    fn pages() -> BTreeMap<String, BTreeSet<String>> {
        let mut p = BTreeMap::new();
        p.insert(
            "docs/driver.md".to_string(),
            sections_of("# T\n## 1. A\n### 1.1 B\n## 4. C\n### 4.4 D\n### 4.5 E\n"),
        );
        p.insert(
            "docs/neff.md".to_string(),
            sections_of("## 2. H\n### 2.1 L\n"),
        );
        p
    }

    fn resolve(f: &str) -> Option<String> {
        let f = f.trim_start_matches("./");
        ["docs/driver.md", "docs/neff.md"]
            .into_iter()
            .find(|k| *k == f || k.strip_prefix("docs/") == Some(f))
            .map(String::from)
    }

    #[test]
    fn headings_give_section_numbers() {
        let s = sections_of("## 3. Three\n### 3.2 Sub\n## Not numbered\n#### 3.2.1 Deep\n");
        let want: BTreeSet<String> = ["3", "3.2", "3.2.1"].map(String::from).into();
        assert_eq!(s, want);
    }

    #[test]
    fn groups_take_sections_across_comment_lines() {
        let c = citations(
            "//! see docs/driver.md §4.4, §4.5 and\n//! §1.1; also `docs/neff.md` §2.1–§2\n",
        );
        assert_eq!(
            c,
            vec![
                Citation {
                    line: 1,
                    source: Source::File("docs/driver.md".into()),
                    sections: vec!["4.4".into(), "4.5".into(), "1.1".into()],
                },
                Citation {
                    line: 2,
                    source: Source::File("docs/neff.md".into()),
                    sections: vec!["2.1".into(), "2".into()],
                },
            ]
        );
    }

    #[test]
    fn a_good_sample_passes() {
        let text = "/// (docs/driver.md §4.4, §4.5; docs/neff.md §2.1)\n/// see https://x.invalid/a/driver-abi.md\n";
        assert_eq!(check("hal/src/x.rs", text, &resolve, &pages()), vec![]);
    }

    #[test]
    fn a_bad_sample_fails_with_every_problem_named() {
        let text = [
            "//! ok docs/driver.md §4.4",
            "//! missing section docs/driver.md §4.9, §1",
            "//! missing page docs/exec.md §2",
            "//! old names: driver-abi.md §3.4 and ABI §2.1",
            "//! DESIGN §5, seed 003 §3, `shared/seeds/`",
            "//! a bare (§7) with no page",
        ]
        .join("\n");
        let problems = check("hal/src/x.rs", &text, &resolve, &pages());
        let lines: Vec<(usize, &str)> = problems
            .iter()
            .map(|p| (p.line, p.cited.as_str()))
            .collect();
        assert_eq!(
            lines,
            vec![
                (2, "docs/driver.md §4.9, §1"),
                (3, "docs/exec.md §2"),
                (4, "driver-abi.md §3.4"),
                (4, "ABI §2.1"),
                (5, "DESIGN §5"),
                (5, "seed 003 §3"),
                (5, "shared/seeds"),
                (6, "§7"),
            ],
            "{problems:#?}"
        );
        assert!(problems[0].reason.contains("no section §4.9"));
        assert!(problems[1].reason.contains("not in the repository"));
        assert!(problems[2].reason.contains("not in the repository"));
        assert!(problems[7].reason.contains("no document"));
    }

    #[test]
    fn a_bare_section_in_a_docs_page_is_its_own() {
        let text = "As §4.4 says, and driver.md §1.1.\nBut §9 does not exist.\n";
        let problems = check("docs/driver.md", text, &resolve, &pages());
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert_eq!(problems[0].line, 2);
        assert!(problems[0].reason.contains("no section §9"));
    }
}
