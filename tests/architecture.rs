//! The arrows of DESIGN.md "Shape", checked on the sources so they hold without anyone
//! remembering them: a domain's core (everything in `src/<domain>/` but its HTTP layer)
//! imports no axum, no app state, no HTTP error type, no backend and of the store only its
//! error type's leaf module; `fred` (Redis) types appear only inside the Redis backend.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// The code of a file without its unit tests (which may build whatever they need).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    match text.find("#[cfg(test)]") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// What a domain core may not name: the layers above it and the backends below its trait.
const FORBIDDEN_IN_DOMAIN_CORES: [&str; 7] = [
    "axum",
    "AppState",
    "crate::state",
    "ApiError",
    "crate::error",
    "crate::store::redis",
    "crate::store::memory",
];

/// The violations of the rules in `root`: (file, what it names).
fn violations(root: &Path) -> Vec<(String, &'static str)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(root).unwrap() {
        let dir = entry.unwrap().path();
        // A domain is a folder with an HTTP layer; its core is everything else in it.
        if !dir.join("http.rs").exists() {
            continue;
        }
        for file in rust_files(&dir) {
            if file.file_name().is_some_and(|n| n == "http.rs") {
                continue;
            }
            let text = code(&file);
            for word in FORBIDDEN_IN_DOMAIN_CORES {
                if text.contains(word) {
                    found.push((file.display().to_string(), word));
                }
            }
            // Of the store, a core names only its error type's leaf module, never the
            // aggregator that knows every backend.
            if text
                .match_indices("crate::store::")
                .any(|(at, _)| !text[at..].starts_with("crate::store::error::"))
            {
                found.push((file.display().to_string(), "crate::store (aggregator)"));
            }
        }
    }
    let redis = root.join("store").join("redis");
    for file in rust_files(root) {
        if !file.starts_with(&redis) && code(&file).contains("fred::") {
            found.push((file.display().to_string(), "fred::"));
        }
    }
    found
}

#[test]
fn arrows_run_one_way() {
    let found = violations(&src());
    assert!(found.is_empty(), "layering violations: {found:#?}");
}

/// The check itself must be able to fail: a copy of a domain whose core names the app state
/// and a Redis type is caught.
#[test]
fn the_check_catches_a_violation() {
    let root = std::env::temp_dir().join(format!("gw-arch-{}", std::process::id()));
    let domain = root.join("demo");
    std::fs::create_dir_all(&domain).unwrap();
    std::fs::write(domain.join("http.rs"), "use axum::Json;\n").unwrap();
    std::fs::write(
        domain.join("mod.rs"),
        "use crate::state::AppState;\nuse crate::store::StoreError;\nfn f(_: &AppState) {}\n#[cfg(test)]\nmod tests { use axum::Json; }\n",
    )
    .unwrap();
    std::fs::write(root.join("other.rs"), "use fred::prelude::*;\n").unwrap();
    let found = violations(&root);
    std::fs::remove_dir_all(&root).unwrap();
    let words: Vec<&str> = found.iter().map(|(_, w)| *w).collect();
    assert!(words.contains(&"AppState"), "{found:?}");
    assert!(words.contains(&"crate::state"), "{found:?}");
    assert!(words.contains(&"fred::"), "{found:?}");
    assert!(words.contains(&"crate::store (aggregator)"), "{found:?}");
    assert!(
        !words.contains(&"axum"),
        "http.rs and unit tests may use axum: {found:?}"
    );
}
