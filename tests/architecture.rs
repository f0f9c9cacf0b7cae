//! The shape of docs/design.md "Shape", checked on the sources so it holds without anyone
//! remembering it. One checker reads every file of `src/` line by line (comments and unit tests
//! skipped) and sorts it into one of four places:
//!
//! - a domain's **core** (`src/<domain>/` but its HTTP layer and backends): no axum, no app
//!   state, no HTTP error type or HTTP-layer module, no backend, no `fred`, and of the store
//!   only the leaves `store::error` and `store::channels` and the `store_trait!` that declares
//!   its trait;
//! - a domain's **backends** (`memory.rs`, `redis.rs` or `redis/`, beside their `.lua`
//!   scripts): nothing of the HTTP layer; `fred` only in the Redis one;
//! - a domain's **HTTP layer** (`http.rs` or `http/`);
//! - **shared** code (everything else but the composition: `lib.rs`, `openapi.rs`, `state.rs`,
//!   `settings.rs`, and the operations routes of `ops.rs` with their `readiness.rs` probe):
//!   never names a domain, defines none of a domain's settings (those live in
//!   `src/<domain>/settings.rs`), and has no backend of one.
//!
//! Lua lives in `.lua` files, never inside Rust.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The domains, found rather than listed, so a new one is checked from its first commit: each
/// folder of `src/` that serves routes (`http.rs` or `http/`) or keeps state of its own
/// (`memory.rs`, the embedded backend). The shared folders (`store/`, `middleware/`,
/// `config/`, …) have neither.
fn domains(src: &Path) -> Vec<String> {
    let mut found: Vec<String> = fs::read_dir(src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|dir| {
            dir.is_dir()
                && (dir.join("http.rs").exists()
                    || dir.join("http").is_dir()
                    || dir.join("memory.rs").exists())
        })
        .map(|dir| dir.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    found.sort();
    found
}

/// Files outside the domains that may name them: where the domains are put together.
const COMPOSITION: [&str; 4] = ["lib.rs", "openapi.rs", "ops.rs", "settings.rs"];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Place {
    Core,
    Memory,
    Redis,
    Http,
    Shared,
    Composition,
}

fn place(rel: &Path, domains: &[String]) -> Place {
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.len() == 1 {
        return if COMPOSITION.contains(&parts[0].as_str()) {
            Place::Composition
        } else {
            Place::Shared
        };
    }
    if !domains.contains(&parts[0]) {
        return Place::Shared;
    }
    match parts[1].as_str() {
        "http.rs" | "http" => Place::Http,
        "memory.rs" | "memory" => Place::Memory,
        "redis.rs" | "redis" => Place::Redis,
        _ => Place::Core,
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `(line number, line)` of the whole file but its unit tests: every item under
/// `#[cfg(test)]` is skipped to the end of its braces (or its `;`), wherever it stands, so code
/// after a test module is read too.
fn without_tests(text: &str) -> Vec<(usize, &str)> {
    let mut kept = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        if !line.trim_start().starts_with("#[cfg(test)]") {
            kept.push((i + 1, line));
            continue;
        }
        // Skip the gated item: to its `;` if it has no body, else to its closing brace.
        let mut braces = Braces::default();
        for (_, line) in lines.by_ref() {
            braces.read(line);
            let ends = line.trim_end().ends_with(';');
            if (braces.opened && braces.depth <= 0) || (!braces.opened && ends) {
                break;
            }
        }
    }
    kept
}

/// Brace depth over lines of Rust, not counting braces in strings, chars and comments (a test
/// module's `"{"` or `'}'` must not end it early).
#[derive(Default)]
struct Braces {
    depth: i32,
    opened: bool,
    /// Inside a string since an earlier line: `Some(n)` for a raw string with `n` `#`s, where
    /// `None` inside means a plain one.
    string: Option<Option<usize>>,
}

impl Braces {
    fn read(&mut self, line: &str) {
        let b = line.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if let Some(raw) = self.string {
                match raw {
                    None if b[i] == b'\\' => i += 1,
                    None if b[i] == b'"' => self.string = None,
                    Some(n)
                        if b[i] == b'"'
                            && b[i + 1..].iter().take(n).filter(|&&c| c == b'#').count() == n =>
                    {
                        self.string = None;
                        i += n;
                    }
                    _ => {}
                }
                i += 1;
                continue;
            }
            match b[i] {
                b'/' if b.get(i + 1) == Some(&b'/') => return,
                b'"' => self.string = Some(None),
                b'r' if matches!(b.get(i + 1), Some(b'"' | b'#'))
                    && (i == 0 || !b[i - 1].is_ascii_alphanumeric()) =>
                {
                    let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                    if b.get(i + 1 + hashes) == Some(&b'"') {
                        self.string = Some(Some(hashes));
                        i += 1 + hashes;
                    }
                }
                // A char literal: `'{'`, `'\''`; a lifetime (`'a`) has no closing quote after it.
                b'\'' if b.get(i + 2) == Some(&b'\'') => i += 2,
                b'\'' if b.get(i + 1) == Some(&b'\\') && b.get(i + 3) == Some(&b'\'') => i += 3,
                b'{' => {
                    self.depth += 1;
                    self.opened = true;
                }
                b'}' => self.depth -= 1,
                _ => {}
            }
            i += 1;
        }
    }
}

/// [`without_tests`], less comments: the lines whose code the rules read.
fn code_lines(text: &str) -> Vec<(usize, &str)> {
    without_tests(text)
        .into_iter()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .collect()
}

/// Whether `line` has `w` as a whole word.
fn word(line: &str, w: &str) -> bool {
    line.match_indices(w).any(|(i, _)| {
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !ident(line[..i].chars().next_back()) && !ident(line[i + w.len()..].chars().next())
    })
}

/// The HTTP layer's words: a core or a backend names none of them.
fn names_http(line: &str) -> Option<&'static str> {
    if word(line, "axum") || word(line, "utoipa_axum") {
        return Some("axum (the HTTP layer)");
    }
    if word(line, "AppState") || line.contains("crate::state") {
        return Some("the app state");
    }
    if word(line, "ApiError") || word(line, "ApiResult") || line.contains("crate::error") {
        return Some("the HTTP error type");
    }
    for http in [
        "crate::extract",
        "crate::auth",
        "crate::middleware",
        "crate::openapi",
        "crate::ops",
    ] {
        if line.contains(http) {
            return Some("an HTTP-layer module");
        }
    }
    None
}

fn names_fred(line: &str) -> bool {
    line.contains("fred::") || word(line, "fred")
}

/// The domain a line of shared code names, if any.
fn names_domain<'d>(line: &str, domains: &'d [String]) -> Option<&'d str> {
    domains.iter().map(String::as_str).find(|d| {
        line.contains(&format!("crate::{d}::"))
            || line.contains(&format!("crate::{d};"))
            || line.contains(&format!("crate::{d}}}"))
            || line.contains(&format!("crate::{d},"))
    })
}

/// The domain whose setting a line of shared code defines, by its variable's name
/// (`env = "GATEWAY_GEO_MAX_PLACES"`, `GATEWAY_QUEUE_MAX_JOBS`): a domain's settings live in
/// its folder, so `config/` holds only what the domains share.
fn names_domain_setting<'d>(line: &str, domains: &'d [String]) -> Option<&'d str> {
    let at = line.find("env = \"GATEWAY_")?;
    let var = &line[at + "env = \"GATEWAY_".len()..];
    domains.iter().map(String::as_str).find(|d| {
        let plural = d.to_ascii_uppercase();
        let singular = match plural.strip_suffix("IES") {
            Some(stem) => format!("{stem}Y"),
            None => plural.strip_suffix('S').unwrap_or(&plural).to_owned(),
        };
        [plural.as_str(), singular.as_str()]
            .iter()
            .any(|name| var.starts_with(&format!("{name}_")))
    })
}

/// Why `line`, in a file at `place` (`rel` from `src/`), breaks the shape.
fn broken(place: Place, rel: &str, line: &str, domains: &[String]) -> Option<String> {
    match place {
        Place::Core => {
            if let Some(why) = names_http(line) {
                return Some(why.to_owned());
            }
            // `mod.rs` may re-export its HTTP entry points for the composition.
            if line.contains("http::") && !line.trim_start().starts_with("pub use http::") {
                return Some("the domain's HTTP layer".to_owned());
            }
            if names_fred(line) {
                return Some("fred (the Redis client)".to_owned());
            }
            for (i, _) in line.match_indices("crate::store") {
                let rest = &line[i + "crate::store".len()..];
                if !(rest.starts_with("::error")
                    || rest.starts_with("::channels")
                    || rest.starts_with("::store_trait!"))
                {
                    return Some(
                        "the store (a core names `store::error`, `store::channels` and `store_trait!`)"
                            .to_owned(),
                    );
                }
            }
            None
        }
        Place::Memory | Place::Redis => {
            if let Some(why) = names_http(line) {
                return Some(why.to_owned());
            }
            (place == Place::Memory && names_fred(line))
                .then(|| "fred (in the memory backend)".to_owned())
        }
        Place::Http | Place::Composition => {
            names_fred(line).then(|| "fred (the Redis client)".to_owned())
        }
        Place::Shared => {
            if names_fred(line) && !rel.starts_with("store/redis/") {
                return Some("fred (outside the Redis backends)".to_owned());
            }
            if let Some(domain) = names_domain_setting(line, domains) {
                return Some(format!(
                    "a setting of the domain `{domain}` (it belongs in src/{domain}/settings.rs)"
                ));
            }
            let domain = names_domain(line, domains)?;
            Some(format!(
                "the domain `{domain}` (shared code names no domain)"
            ))
        }
    }
}

/// Every break of the shape under `src`: `file:line: why: code`.
fn check(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let domains = domains(src);
    let mut found = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(src).unwrap();
        let text = fs::read_to_string(file).unwrap();
        if text.contains("redis.call(") {
            found.push(format!(
                "{}: Lua inside Rust (keep each script in a .lua file)",
                rel.display()
            ));
        }
        let place = place(rel, &domains);
        let rel = rel.to_string_lossy().replace('\\', "/");
        for (n, line) in code_lines(&text) {
            if let Some(why) = broken(place, &rel, line, &domains) {
                found.push(format!("src/{rel}:{n}: {why}: {}", line.trim()));
            }
        }
    }
    found
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn the_code_keeps_the_shape() {
    let found = check(&src());
    assert!(
        found.is_empty(),
        "docs/design.md \"Shape\": http -> domain core <- backends, shared code names no domain\n{}",
        found.join("\n")
    );
}

/// The top-level module a file of `src/` (`rel`) belongs to: its first folder, or its file's
/// stem. `None` for the crate's root (`lib.rs`, `main.rs`), which only puts the modules
/// together and is imported by none.
fn module_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_string_lossy();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_owned();
    (!matches!(name.as_str(), "lib" | "main")).then_some(name)
}

/// The top-level modules named by `crate::` paths in `code`, grouped ones too
/// (`crate::{a, b::c}`, over several lines), each with the byte offset it is named at.
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Each top-level element of the group starts a path: split at depth-0 commas.
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' | ',' if depth == 0 => {
                        let element = &group[start..i];
                        let skipped = element.len() - element.trim_start().len();
                        let offset = at + "crate::{".len() + start + skipped;
                        found.push((offset, ident(element.trim_start())));
                        if c == '}' {
                            break;
                        }
                        start = i + 1;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
        } else {
            found.push((at, ident(rest)));
        }
    }
    found.retain(|(_, m)| !m.is_empty());
    found
}

/// Which top-level modules each module of `src` imports, with where it first does:
/// `from -> to -> "file:line"`. Unit tests and comments are not read.
fn module_imports(src: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let modules: BTreeSet<String> = files
        .iter()
        .filter_map(|f| module_of(f.strip_prefix(src).unwrap()))
        .collect();
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for file in &files {
        let rel = file.strip_prefix(src).unwrap();
        let Some(from) = module_of(rel) else { continue };
        let text = fs::read_to_string(file).unwrap();
        let lines = code_lines(&text);
        let code: String = lines.iter().map(|(_, l)| format!("{l}\n")).collect();
        for (at, to) in crate_paths(&code) {
            if to == from || !modules.contains(&to) {
                continue;
            }
            let n = lines[code[..at].matches('\n').count()].0;
            graph
                .entry(from.clone())
                .or_default()
                .entry(to)
                .or_insert_with(|| format!("src/{}:{n}", rel.display()));
        }
    }
    graph
}

/// Every circle of top-level modules under `src` (modules that import each other, directly
/// or around a loop), each with the imports that close it.
fn module_circles(src: &Path) -> Vec<String> {
    let graph = module_imports(src);
    let reaches = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_owned()];
        while let Some(m) = todo.pop() {
            for next in graph.get(&m).into_iter().flat_map(BTreeMap::keys) {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    // A circle is a set of modules each of which reaches every other: one per set.
    let mut circles: Vec<String> = Vec::new();
    let mut placed = BTreeSet::new();
    for m in graph.keys() {
        if placed.contains(m) {
            continue;
        }
        let from_m = reaches(m);
        let circle: BTreeSet<String> = from_m
            .iter()
            .filter(|o| reaches(o).contains(m))
            .cloned()
            .collect();
        if circle.is_empty() {
            continue;
        }
        let ties: Vec<String> = circle
            .iter()
            .flat_map(|a| {
                graph[a]
                    .iter()
                    .filter(|(b, _)| circle.contains(*b))
                    .map(move |(b, at)| format!("  {a} -> {b} ({at})"))
            })
            .collect();
        circles.push(format!(
            "{}:\n{}",
            circle.iter().cloned().collect::<Vec<_>>().join(", "),
            ties.join("\n")
        ));
        placed.extend(circle);
    }
    circles
}

/// docs/design.md "Shape": modules import one way, so each can be read, tested and changed
/// with only what is below it in mind; the crate's root alone puts them all together.
#[test]
fn modules_import_one_way() {
    let circles = module_circles(&src());
    assert!(
        circles.is_empty(),
        "top-level modules that import each other:\n{}",
        circles.join("\n")
    );
}

/// Longest a source file may be, its unit tests not counted (docs/design.md "Shape", small parts).
const MAX_FILE_LINES: usize = 450;
/// Longest a function may be, from its `fn` line to its closing brace.
const MAX_FN_LINES: usize = 80;

/// Every file of `src` longer than [`MAX_FILE_LINES`] and every function longer than
/// [`MAX_FN_LINES`], unit tests aside.
fn too_long(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(src).unwrap().display().to_string();
        let text = fs::read_to_string(file).unwrap();
        let lines = without_tests(&text);
        if lines.len() > MAX_FILE_LINES {
            found.push(format!(
                "src/{rel}: {} lines besides its tests (at most {MAX_FILE_LINES})",
                lines.len()
            ));
        }
        for (at, (n, line)) in lines.iter().enumerate() {
            let Some(name) = fn_name(line) else { continue };
            let mut braces = Braces::default();
            let end = lines[at..].iter().find(|(_, l)| {
                braces.read(l);
                (braces.opened && braces.depth <= 0)
                    || (!braces.opened && l.trim_end().ends_with(';'))
            });
            let length = end.map_or(0, |(last, _)| last - n + 1);
            if braces.opened && length > MAX_FN_LINES {
                found.push(format!(
                    "src/{rel}:{n}: fn {name} is {length} lines (at most {MAX_FN_LINES})"
                ));
            }
        }
    }
    found
}

/// The name of the function `line` begins, if it begins one.
fn fn_name(line: &str) -> Option<&str> {
    let code = line.split("//").next()?.trim_start();
    let at = code.find("fn ")?;
    let before = &code[..at];
    let modifiers = [
        "pub",
        "pub(crate)",
        "pub(super)",
        "async",
        "const",
        "unsafe",
        "extern",
    ];
    if !before.split_whitespace().all(|w| modifiers.contains(&w)) {
        return None;
    }
    let rest = &code[at + 3..];
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    (end > 0).then(|| &rest[..end])
}

#[test]
fn files_and_functions_stay_small() {
    let found = too_long(&src());
    assert!(
        found.is_empty(),
        "docs/design.md \"Shape\", small parts: split these into parts named for what they do\n{}",
        found.join("\n")
    );
}

/// Each domain that keeps state keeps both its backends in its folder, and the store keeps
/// none: no backend file named for a domain, and no store trait declared outside a domain.
#[test]
fn every_domain_has_its_backends_in_its_folder() {
    let src = src();
    for domain in domains(&src) {
        let dir = src.join(&domain);
        assert!(dir.join("mod.rs").exists(), "src/{domain}/mod.rs");
        assert_eq!(
            dir.join("memory.rs").exists(),
            dir.join("redis.rs").exists() || dir.join("redis/mod.rs").exists(),
            "src/{domain}: an embedded backend (memory.rs) and a Redis one (redis.rs or redis/), \
             or neither"
        );
        for backend in ["store/memory", "store/redis"] {
            assert!(
                !src.join(backend).join(format!("{domain}.rs")).exists(),
                "{domain}'s backend is still under src/{backend}/"
            );
        }
    }
    let mut files = Vec::new();
    rust_files(&src.join("store"), &mut files);
    for file in files {
        let text = fs::read_to_string(&file).unwrap();
        for (n, line) in code_lines(&text) {
            assert!(
                !line.trim_start().starts_with("store_trait! {")
                    && !line.contains("::store_trait! {"),
                "{}:{n}: a store trait belongs to its domain's folder",
                file.display()
            );
        }
    }
}

/// The domains the composition leaves out: each domain folder implements `crate::domain::Domain`
/// once and has its line in the list of `settings.rs`, which makes its flags, settings, slice
/// and routes (docs/design.md "Shape": adding a domain).
fn uncomposed(src: &Path) -> Vec<String> {
    let list = fs::read_to_string(src.join("settings.rs")).unwrap_or_default();
    let mut found = Vec::new();
    for domain in domains(src) {
        if !list.contains(&format!("    {domain}: crate::{domain}::Domain,")) {
            found.push(format!(
                "src/settings.rs: no `{domain}: crate::{domain}::Domain,` in the list of domains"
            ));
        }
        let mut files = Vec::new();
        rust_files(&src.join(&domain), &mut files);
        let implemented = files.iter().any(|f| {
            fs::read_to_string(f)
                .unwrap()
                .contains("impl crate::domain::Domain for Domain {")
        });
        if !implemented {
            found.push(format!(
                "src/{domain}/: no `impl crate::domain::Domain for Domain`"
            ));
        }
    }
    found
}

#[test]
fn every_domain_is_composed() {
    let found = uncomposed(&src());
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Comments and docs say why, not which issue: the tracker's numbers mean nothing to a reader
/// of the repository. Every source, test, document, benchmark and script file.
#[test]
fn no_comment_cites_an_issue_number() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("tests"), &mut files);
    // The docs, the benchmark and the scripts too: a maintainer reads them without the tracker.
    for dir in ["docs", "bench", "scripts"] {
        every_file(&root.join(dir), &mut files);
    }
    let mut found = Vec::new();
    for file in files {
        let Ok(text) = fs::read_to_string(&file) else {
            continue; // not text
        };
        for (n, line) in text.lines().enumerate() {
            if cites_issue(line) {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "say the reason instead:\n{}",
        found.join("\n")
    );
}

fn every_file(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            every_file(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// Whether `line` names an issue by its number: the word, then digits.
fn cites_issue(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    lower.match_indices("issue").any(|(i, _)| {
        let rest = lower[i + "issue".len()..].trim_start_matches('s');
        rest.strip_prefix(' ')
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
    })
}

#[test]
fn an_issue_number_is_caught() {
    // Spelled apart, so this file does not cite one itself.
    assert!(cites_issue(&format!("// fewer boxes ({} 19).", "issue")));
    assert!(cites_issue(&format!("//! {} 21 and 42", "Issues")));
    assert!(!cites_issue("// an issue of load, 19 times"));
}

/// The store's error is a leaf: the domains' traits name it, so it names nothing of the crate.
#[test]
fn the_store_leaves_a_core_names_are_leaves() {
    for leaf in ["store/error.rs", "store/channels.rs"] {
        let text = fs::read_to_string(src().join(leaf)).unwrap();
        for (n, line) in code_lines(&text) {
            assert!(
                !line.contains("crate::") && !line.contains("super::"),
                "src/{leaf}:{n} imports from the crate: {line}"
            );
        }
    }
}

/// The checker itself can fail: a tree that breaks each rule once is caught on each.
#[test]
fn the_check_catches_each_break() {
    let root = std::env::temp_dir().join(format!("gw-arch-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    let write = |rel: &str, text: &str| {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    };
    write("uv/http.rs", "use axum::Json;\nuse fred::prelude::*;\n");
    write(
        "uv/mod.rs",
        "use crate::state::AppState;\nuse crate::store::Store;\ncrate::store::store_trait! {}\n#[cfg(test)]\nmod tests { use axum::Json; }\nuse axum::Router;\n",
    );
    // A test module whose strings and chars hold braces, and code after it.
    write(
        "geo/mod.rs",
        "#[cfg(test)]\nmod tests {\n    const C: char = '}';\n    const S: &str = \"}}\";\n    use axum::Json;\n}\nuse fred::Client;\n",
    );
    write("geo/memory.rs", "");
    // A domain nobody listed: found by its routes.
    write("news/http.rs", "");
    write("ratelimit/http.rs", "");
    write("middleware/feed.rs", "use crate::news::Item;\n");
    write("uv/memory.rs", "use fred::types::Value;\n");
    write(
        "uv/redis.rs",
        "use fred::types::Value;\nuse crate::error::ApiError;\n",
    );
    write("store/group.rs", "use crate::uv::Recorded;\n");
    write("store/redis/route.rs", "use fred::prelude::*;\n");
    write(
        "middleware/ratelimit/mod.rs",
        "use crate::ratelimit::logic::Gcra;\n",
    );
    write("middleware/observe.rs", "use crate::geo::Place;\n");
    write("lib.rs", "use crate::uv::router;\n");
    write("settings.rs", "use crate::uv::Flags;\n");
    write(
        "config/mod.rs",
        "    #[arg(long, env = \"GATEWAY_GEO_MAX_PLACES\")]\n    #[arg(long, env = \"GATEWAY_MAX_BATCH\")]\n    #[arg(long, env = \"GATEWAY_RATELIMIT_MAX_TTL_S\")]\n",
    );
    write("calendar.rs", "fn f() { redis.call('GET') }\n");
    // A circle through a grouped import over several lines, and one through the app state.
    write(
        "paging.rs",
        "use crate::{\n    clock::Clock,\n    types::{Day, Name},\n};\n",
    );
    write(
        "clock.rs",
        "// crate::calendar in a comment is no import\nuse crate::paging::Page;\n",
    );
    write("state.rs", "use crate::uv::Recorded;\n");
    let circles = module_circles(&root);
    let found = check(&root);
    let long_fn = format!("fn long() {{\n{}}}\n", "    step();\n".repeat(80));
    write("queues/long.rs", &long_fn);
    write(
        "queues/short.rs",
        &format!("fn short() {{\n{}}}\n", "    step();\n".repeat(78)),
    );
    write(
        "locks/long.rs",
        &"const A: u8 = 1;\n".repeat(MAX_FILE_LINES + 1),
    );
    write(
        "locks/tested.rs",
        &format!(
            "const A: u8 = 1;\n#[cfg(test)]\nmod tests {{\n{}}}\n",
            "const B: u8 = 1;\n".repeat(MAX_FILE_LINES)
        ),
    );
    let long = too_long(&root);
    // uv is in the list and implements the trait; news does neither; geo only the trait.
    write(
        "settings.rs",
        "use crate::uv::Flags;\ndomains! {\n    uv: crate::uv::Domain,\n}\n",
    );
    write("uv/part.rs", "impl crate::domain::Domain for Domain {\n}\n");
    write(
        "geo/part.rs",
        "impl crate::domain::Domain for Domain {\n}\n",
    );
    let uncomposed = uncomposed(&root);
    fs::remove_dir_all(&root).unwrap();
    let left_out = |d: &str| {
        uncomposed
            .iter()
            .filter(|f| f.contains(&format!("`{d}")))
            .count()
            + uncomposed
                .iter()
                .filter(|f| f.contains(&format!("src/{d}/")))
                .count()
    };
    assert_eq!(
        (left_out("uv"), left_out("geo"), left_out("news")),
        (0, 1, 2),
        "{uncomposed:#?}"
    );
    let has = |file: &str, why: &str| found.iter().any(|f| f.contains(file) && f.contains(why));
    assert!(has("uv/http.rs", "fred"), "{found:#?}");
    assert!(has("uv/mod.rs", "app state"), "{found:#?}");
    assert!(has("uv/mod.rs:2", "the store"), "{found:#?}");
    assert!(
        !has("uv/mod.rs:3", "the store"),
        "store_trait! is allowed: {found:#?}"
    );
    assert!(
        !found.iter().any(|f| f.contains("uv/mod.rs:5")),
        "unit tests are skipped: {found:#?}"
    );
    assert!(has("uv/memory.rs", "fred"), "{found:#?}");
    assert!(!has("uv/redis.rs:1", "fred"), "{found:#?}");
    assert!(has("uv/redis.rs:2", "HTTP error"), "{found:#?}");
    assert!(has("store/group.rs", "`uv`"), "{found:#?}");
    assert!(
        !found.iter().any(|f| f.contains("store/redis/route.rs")),
        "{found:#?}"
    );
    assert!(has("middleware/ratelimit", "`ratelimit`"), "{found:#?}");
    assert!(has("middleware/observe.rs", "`geo`"), "{found:#?}");
    assert!(!found.iter().any(|f| f.contains("lib.rs")), "{found:#?}");
    assert!(
        !found.iter().any(|f| f.starts_with("src/settings.rs")),
        "the composition of the settings: {found:#?}"
    );
    assert!(
        has("config/mod.rs:1", "a setting of the domain `geo`"),
        "{found:#?}"
    );
    assert!(!has("config/mod.rs:2", "setting"), "shared: {found:#?}");
    assert!(has("config/mod.rs:3", "`ratelimit`"), "{found:#?}");
    assert!(has("calendar.rs", "Lua inside Rust"), "{found:#?}");
    assert!(
        has("uv/mod.rs:6", "axum"),
        "read past the test module: {found:#?}"
    );
    assert!(!has("geo/mod.rs:5", "axum"), "{found:#?}");
    assert!(has("geo/mod.rs:7", "fred"), "braces in strings: {found:#?}");
    assert!(has("middleware/feed.rs", "`news`"), "{found:#?}");
    let circle = |what: &str| circles.iter().any(|c| c.starts_with(what));
    assert!(circle("clock, paging:"), "{circles:#?}");
    assert!(circle("state, store, uv:"), "{circles:#?}");
    assert!(
        circles
            .iter()
            .any(|c| c.contains("paging -> clock (src/paging.rs:2)")),
        "{circles:#?}"
    );
    assert_eq!(circles.len(), 2, "no other: {circles:#?}");
    let long_has = |what: &str| long.iter().any(|f| f.contains(what));
    assert!(
        long_has("queues/long.rs:1: fn long is 82 lines"),
        "{long:#?}"
    );
    assert!(!long_has("queues/short.rs"), "{long:#?}");
    assert!(long_has("locks/long.rs: 451 lines"), "{long:#?}");
    assert!(
        !long_has("locks/tested.rs"),
        "tests are not counted: {long:#?}"
    );
}
