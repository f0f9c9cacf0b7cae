//! The shape of docs/design.md "Shape", checked on the sources so it holds without anyone
//! remembering it. One checker reads every file of `src/` line by line (comments and unit tests
//! skipped) and sorts it into one of four places:
//!
//! - a domain's **core** (`src/<domain>/` but its HTTP layer and backends): no axum, no app
//!   state, no HTTP error type or HTTP-layer module, no backend, no `fred`, and of the store
//!   only `store::error` and the `store_trait!` that declares its trait;
//! - a domain's **backends** (`memory.rs`, `redis.rs` or `redis/`, beside their `.lua`
//!   scripts): nothing of the HTTP layer; `fred` only in the Redis one;
//! - a domain's **HTTP layer** (`http.rs` or `http/`);
//! - **shared** code (everything else but the composition: `lib.rs`, `openapi.rs`, `state.rs`,
//!   and the operations routes of `ops.rs` with their `readiness.rs` probe): never names a
//!   domain, and has no backend of one.
//!
//! Lua lives in `.lua` files, never inside Rust.

use std::fs;
use std::path::{Path, PathBuf};

/// The domains: each a folder of `src/`.
const DOMAINS: [&str; 9] = [
    "checkins",
    "uv",
    "geo",
    "seckill",
    "ratelimit",
    "dedup",
    "locks",
    "queues",
    "ledger",
];

/// Files outside the domains that may name them: where the domains are put together.
const COMPOSITION: [&str; 5] = ["lib.rs", "openapi.rs", "ops.rs", "readiness.rs", "state.rs"];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Place {
    Core,
    Memory,
    Redis,
    Http,
    Shared,
    Composition,
}

fn place(rel: &Path) -> Place {
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
    if !DOMAINS.contains(&parts[0].as_str()) {
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

/// `(line number, code)` of every line before the unit tests that is not a comment.
fn code_lines(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, l)| !l.trim_start().starts_with("#[cfg(test)]"))
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l))
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
fn names_domain(line: &str) -> Option<&'static str> {
    DOMAINS.into_iter().find(|d| {
        line.contains(&format!("crate::{d}::"))
            || line.contains(&format!("crate::{d};"))
            || line.contains(&format!("crate::{d}}}"))
            || line.contains(&format!("crate::{d},"))
    })
}

/// Why `line`, in a file at `place` (`rel` from `src/`), breaks the shape.
fn broken(place: Place, rel: &str, line: &str) -> Option<String> {
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
                if !(rest.starts_with("::error") || rest.starts_with("::store_trait!")) {
                    return Some(
                        "the store (a core names `store::error` and `store_trait!`)".to_owned(),
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
            let domain = names_domain(line)?;
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
        let place = place(rel);
        let rel = rel.to_string_lossy().replace('\\', "/");
        for (n, line) in code_lines(&text) {
            if let Some(why) = broken(place, &rel, line) {
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

/// Each domain keeps its backends in its folder, and the store keeps none.
#[test]
fn every_domain_has_its_backends_in_its_folder() {
    let src = src();
    for domain in DOMAINS {
        let dir = src.join(domain);
        assert!(dir.join("mod.rs").exists(), "src/{domain}/mod.rs");
        assert!(dir.join("memory.rs").exists(), "src/{domain}/memory.rs");
        assert!(
            dir.join("redis.rs").exists() || dir.join("redis/mod.rs").exists(),
            "src/{domain}/redis.rs or redis/"
        );
        assert!(
            !src.join("store/memory")
                .join(format!("{domain}.rs"))
                .exists()
                && !src
                    .join("store/redis")
                    .join(format!("{domain}.rs"))
                    .exists(),
            "{domain}'s backend is still under src/store/"
        );
    }
}

/// The store's error is a leaf: the domains' traits name it, so it names nothing of the crate.
#[test]
fn the_store_error_is_a_leaf() {
    let text = fs::read_to_string(src().join("store/error.rs")).unwrap();
    for (n, line) in code_lines(&text) {
        assert!(
            !line.contains("crate::") && !line.contains("super::"),
            "src/store/error.rs:{n} imports from the crate: {line}"
        );
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
        "use crate::state::AppState;\nuse crate::store::Store;\ncrate::store::store_trait! {}\n#[cfg(test)]\nmod tests { use axum::Json; }\n",
    );
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
    write("calendar.rs", "fn f() { redis.call('GET') }\n");
    let found = check(&root);
    fs::remove_dir_all(&root).unwrap();
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
    assert!(has("calendar.rs", "Lua inside Rust"), "{found:#?}");
}
