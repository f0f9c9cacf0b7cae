//! The repository documents itself (docs/design.md "Shape"): every `docs/<name>.md` that the
//! sources, tests, scripts, benchmarks or the README cite exists, and every section a citation
//! quotes (`docs/api.md "Conventions"`) is a heading of that file, word for word. Nothing points
//! at documents outside the repository, every relative link of README.md and docs/*.md leads to
//! a file that exists (and to a heading of it, when the link names an anchor), and
//! docs/configuration.md lists every setting the code defines, with its flag.
//!
//! Plain `std` on purpose: this reads text files, it needs nothing of the crate.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Where citations are looked for: folders (walked whole) and single files, from the root.
const CITING: [&str; 6] = ["src", "tests", "scripts", "bench", "docs", "README.md"];

/// Where the documents cited must not point outside the repository (the same, and `docs/`).
const SELF_CONTAINED: [&str; 6] = ["src", "tests", "scripts", "bench", "docs", "README.md"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `path` (or `path` itself), sorted so reports are stable.
fn files(path: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if path.is_file() {
        out.push(path.to_owned());
    } else if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .map(|entry| entry.expect("a directory entry").path())
            .collect();
        entries.sort();
        for entry in entries {
            out.extend(files(&entry));
        }
    }
    out
}

/// The text files among `roots` (under `base`), with their paths relative to `base`; files
/// that are not UTF-8 text are skipped.
fn texts(base: &Path, roots: &[&str]) -> Vec<(String, String)> {
    roots
        .iter()
        .flat_map(|r| files(&base.join(r)))
        .filter_map(|path| {
            let text = std::fs::read_to_string(&path).ok()?;
            let rel = path.strip_prefix(base).unwrap_or(&path);
            Some((rel.display().to_string(), text))
        })
        .collect()
}

/// One citation of a document: where it is (`file:line`), the document, the quoted section.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Citation {
    at: String,
    doc: String,
    section: Option<String>,
}

/// The section quoted right after a citation: a space, then `"Section"` (or `\"Section\"`
/// inside a Rust string literal), closed on the same line.
fn quoted(after: &str) -> Option<String> {
    let rest = after.strip_prefix(' ')?;
    let (rest, close) = match rest.strip_prefix("\\\"") {
        Some(rest) => (rest, "\\\""),
        None => (rest.strip_prefix('"')?, "\""),
    };
    let end = rest.find(close)?;
    let section = &rest[..end];
    (!section.is_empty()).then(|| section.to_owned())
}

/// Every `docs/<name>.md` in `text` (not as the tail of a longer path or word), with its
/// quoted section if any.
fn citations(origin: &str, text: &str) -> Vec<Citation> {
    const DIR: &str = "docs/";
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut from = 0;
        while let Some(i) = line[from..].find(DIR) {
            let start = from + i;
            from = start + DIR.len();
            let part_of_more = line[..start]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '-' | '_'));
            if part_of_more {
                continue;
            }
            let rest = &line[from..];
            let name = rest
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
                .count();
            if name == 0 || !rest[name..].starts_with(".md") {
                continue;
            }
            let after = &rest[name + ".md".len()..];
            if after
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphanumeric())
            {
                continue;
            }
            found.push(Citation {
                at: format!("{origin}:{}", n + 1),
                doc: format!("{DIR}{}.md", &rest[..name]),
                section: quoted(after),
            });
        }
    }
    found
}

/// The lines of a markdown text outside fenced code blocks, with their (1-based) numbers.
fn prose(markdown: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut fenced = false;
    markdown.lines().enumerate().filter_map(move |(n, line)| {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            return None;
        }
        (!fenced).then_some((n + 1, line))
    })
}

/// The headings of a markdown text (ATX headings outside fenced code blocks), as written.
fn headings(markdown: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (_, line) in prose(markdown) {
        let level = line.bytes().take_while(|b| *b == b'#').count();
        if (1..=6).contains(&level) && line[level..].starts_with(' ') {
            let text = line[level..].trim().trim_end_matches('#').trim_end();
            out.insert(text.to_owned());
        }
    }
    out
}

/// The anchor a heading gets on GitHub: lower case, punctuation dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The relative links of a markdown text, `[text](target)` outside fenced code, with their
/// line numbers; web addresses are not followed.
fn links(markdown: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose(markdown) {
        for (at, _) in line.match_indices("](") {
            let rest = &line[at + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = &rest[..end];
            if !target.contains("://") && !target.starts_with("mailto:") {
                out.push((n, target.to_owned()));
            }
        }
    }
    out
}

/// Relative links in README.md and docs/*.md (under `base`) that lead nowhere: a missing
/// file, or an anchor that is no heading of its document.
fn broken_links(base: &Path) -> Vec<String> {
    let mut broken = Vec::new();
    for (origin, text) in texts(base, &["README.md", "docs"]) {
        if !origin.ends_with(".md") {
            continue;
        }
        let dir = base.join(&origin).parent().unwrap().to_owned();
        for (n, target) in links(&text) {
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let path = if file.is_empty() {
                base.join(&origin)
            } else {
                dir.join(file)
            };
            if !path.exists() {
                broken.push(format!(
                    "{origin}:{n}: links to {target}, which does not exist"
                ));
                continue;
            }
            if anchor.is_empty() {
                continue;
            }
            let doc = std::fs::read_to_string(&path).unwrap_or_default();
            if !headings(&doc).iter().any(|h| slug(h) == anchor) {
                broken.push(format!(
                    "{origin}:{n}: links to {target}, which has no such heading"
                ));
            }
        }
    }
    broken
}

/// What is wrong with the citations found in `roots` under `base`: one line per broken
/// citation, naming the citing file and line.
fn broken_citations(base: &Path, roots: &[&str]) -> Vec<String> {
    let mut broken = Vec::new();
    for (origin, text) in texts(base, roots) {
        for c in citations(&origin, &text) {
            let Ok(doc) = std::fs::read_to_string(base.join(&c.doc)) else {
                broken.push(format!("{}: cites {}, which does not exist", c.at, c.doc));
                continue;
            };
            if let Some(section) = &c.section {
                if !headings(&doc).contains(section) {
                    broken.push(format!(
                        "{}: cites {} \"{section}\", which has no heading with that text",
                        c.at, c.doc
                    ));
                }
            }
        }
    }
    broken
}

/// Mentions of documents outside the repository: the briefs the docs were written from.
fn outside_mentions(base: &Path, roots: &[&str]) -> Vec<String> {
    // Built here rather than written out, so this file does not trip its own check.
    let dir = ["sha", "red"].concat();
    let mut needles = vec![format!("../{dir}"), format!("/work/{dir}")];
    let briefs = ["API", "DESIGN", "RATELIMIT", "STYLE"].map(|b| format!("{b}.md"));
    needles.extend(briefs.iter().map(|b| format!("{dir}/{b}")));
    let mut found = Vec::new();
    for (origin, text) in texts(base, roots) {
        for (n, line) in text.lines().enumerate() {
            for needle in &needles {
                if line.contains(needle.as_str()) {
                    found.push(format!("{origin}:{}: mentions {needle}", n + 1));
                }
            }
            // A brief's bare name (not `docs/api.md`, not `OPENAPI.md`, not `vendor/README.md`).
            for brief in &briefs {
                for (at, _) in line.match_indices(brief.as_str()) {
                    let before = line[..at].chars().next_back();
                    if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '/') {
                        found.push(format!("{origin}:{}: mentions {brief}", n + 1));
                    }
                }
            }
        }
    }
    found
}

#[test]
fn every_cited_document_and_section_exists() {
    let base = root();
    let all: Vec<Citation> = texts(&base, &CITING)
        .iter()
        .flat_map(|(origin, text)| citations(origin, text))
        .collect();
    assert!(
        all.iter().any(|c| c.section.is_some()),
        "the scan must see the sources' citations: {all:?}"
    );
    let broken = broken_citations(&base, &CITING);
    assert!(
        broken.is_empty(),
        "citations of documents that do not say what is cited:\n{}",
        broken.join("\n")
    );
}

#[test]
fn every_link_of_the_documents_leads_somewhere() {
    let broken = broken_links(&root());
    assert!(
        broken.is_empty(),
        "links that lead nowhere:\n{}",
        broken.join("\n")
    );
}

#[test]
fn nothing_points_outside_the_repository() {
    let found = outside_mentions(&root(), &SELF_CONTAINED);
    assert!(
        found.is_empty(),
        "documents outside the repository are cited (say it in docs/ instead):\n{}",
        found.join("\n")
    );
}

/// Every setting of the clap definition is in docs/configuration.md with its flag, and the page
/// names no `GATEWAY_*` setting the code does not have.
#[test]
fn the_configuration_page_lists_every_setting() {
    let base = root();
    let page = std::fs::read_to_string(base.join("docs/configuration.md"))
        .expect("docs/configuration.md exists");
    // (variable, flag) of each `#[arg(long, env = "...")]`, the flag from the field after it.
    let mut settings = Vec::new();
    for (origin, text) in texts(&base, &["src"]) {
        for (at, _) in text.match_indices("env = \"") {
            let rest = &text[at + "env = \"".len()..];
            let var = &rest[..rest.find('"').expect("a closed string")];
            let field = rest
                .split("pub ")
                .nth(1)
                .and_then(|f| f.split(':').next())
                .unwrap_or_else(|| panic!("{origin}: no field after env = \"{var}\""));
            settings.push((var.to_owned(), format!("--{}", field.replace('_', "-"))));
        }
    }
    assert!(
        settings.len() > 30,
        "the scan must see the settings: {settings:?}"
    );
    let mut missing = Vec::new();
    for (var, flag) in &settings {
        let row = page
            .lines()
            .find(|l| l.starts_with(&format!("| `{var}` |")));
        match row {
            None => missing.push(format!("{var} has no row")),
            Some(row) if !row.contains(&format!("`{flag}`")) => {
                missing.push(format!("{var}: its row does not give the flag {flag}"));
            }
            Some(_) => {}
        }
    }
    let known: BTreeSet<&str> = settings.iter().map(|(v, _)| v.as_str()).collect();
    for (n, line) in page.lines().enumerate() {
        for (at, _) in line.match_indices("GATEWAY_") {
            let name: String = line[at..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if !known.contains(name.as_str()) {
                missing.push(format!(
                    "docs/configuration.md:{}: {name} is not a setting",
                    n + 1
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/configuration.md and the code disagree:\n{}",
        missing.join("\n")
    );
}

/// The checks can fail, and say where: a tree citing a missing document, a missing section and
/// a document outside the repository is reported file by file, line by line.
#[test]
fn the_checks_catch_broken_citations() {
    let base = std::env::temp_dir().join(format!("gw-docs-cited-{}", std::process::id()));
    std::fs::create_dir_all(base.join("docs")).unwrap();
    std::fs::create_dir_all(base.join("src")).unwrap();
    std::fs::write(
        base.join("docs").join("guide.md"),
        "# Guide\n\n## Present\n\n```sh\n# Fenced\n```\n",
    )
    .unwrap();
    let doc = |name: &str| format!("docs/{name}.md");
    let outside = format!("../{}/{}.md", ["sha", "red"].concat(), "API");
    let cites = [
        format!("//! ok: {} \"Present\"", doc("guide")),
        format!("//! ok: {} \\\"Present\\\" inside a string", doc("guide")),
        format!("//! missing section: {} \"Absent\"", doc("guide")),
        format!("//! fenced is no heading: {} \"Fenced\"", doc("guide")),
        format!("//! missing file: {}", doc("nowhere")),
        format!("//! not a citation: web{}, {}x", doc("guide"), doc("guide")),
        format!("//! outside: {outside}"),
    ];
    std::fs::write(base.join("src").join("lib.rs"), cites.join("\n")).unwrap();
    std::fs::write(
        base.join("README.md"),
        format!(
            "[ok]({}#present) [gone]({}) [no]({}#absent) \
             [web](https://example.com/x.md) [self](#guide)\n# Guide\n",
            doc("guide"),
            doc("gone"),
            doc("guide")
        ),
    )
    .unwrap();
    let bad_links = broken_links(&base);
    let broken = broken_citations(&base, &["src"]);
    let outside_found = outside_mentions(&base, &["src"]);
    std::fs::remove_dir_all(&base).unwrap();
    assert_eq!(broken.len(), 3, "{broken:#?}");
    assert!(broken[0].starts_with("src/lib.rs:3: "), "{broken:#?}");
    assert!(broken[0].contains("\"Absent\""), "{broken:#?}");
    assert!(broken[1].starts_with("src/lib.rs:4: "), "{broken:#?}");
    assert!(broken[2].starts_with("src/lib.rs:5: "), "{broken:#?}");
    assert!(broken[2].contains("does not exist"), "{broken:#?}");
    assert_eq!(bad_links.len(), 2, "{bad_links:#?}");
    assert!(bad_links[0].contains(&doc("gone")), "{bad_links:#?}");
    assert!(bad_links[1].contains("#absent"), "{bad_links:#?}");
    assert_eq!(
        slug("Retries: `Idempotency-Key`"),
        "retries-idempotency-key"
    );
    assert_eq!(slug("Flash sale (seckill)"), "flash-sale-seckill");
    assert_eq!(outside_found.len(), 2, "{outside_found:#?}");
    assert!(
        outside_found
            .iter()
            .all(|f| f.starts_with("src/lib.rs:7: ")),
        "{outside_found:#?}"
    );
}
