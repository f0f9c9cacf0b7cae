//! The arrows of docs/design.md "Shape", checked on the sources so they hold without anyone
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

/// The finer rules, read line by line from the code (comment lines skipped): besides the words
/// above, a domain core (and the shared `calendar.rs` and `types.rs`) names no HTTP-layer module
/// and no store aggregator — from the store only the leaf `store::error` —, that leaf imports
/// nothing from the crate, and Lua lives in `.lua` files, never inside Rust.
mod imports {
    use std::fs;
    use std::path::{Path, PathBuf};

    fn src() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
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

    /// `(line number, code)` of every line that is not a comment.
    fn code_lines(path: &Path) -> Vec<(usize, String)> {
        fs::read_to_string(path)
            .unwrap()
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim_start().starts_with("//"))
            .map(|(i, l)| (i + 1, l.to_owned()))
            .collect()
    }

    fn is_http_layer(domain: &Path, file: &Path) -> bool {
        let rel = file.strip_prefix(domain).unwrap();
        rel == Path::new("http.rs") || rel.starts_with("http")
    }

    /// The files of every domain core: each `src/<dir>/` with a `mod.rs`, other than the store and
    /// the middleware (layers, not domains), minus its HTTP layer; and the shared domain modules.
    fn domain_core_files(src: &Path) -> Vec<PathBuf> {
        let mut files = vec![src.join("calendar.rs"), src.join("types.rs")];
        for entry in fs::read_dir(src).unwrap() {
            let dir = entry.unwrap().path();
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            // The ledger still drives the Redis backend directly (its ingester holds a
            // `RedisStore`, its dead-letter routes match on `Store::Redis`): known debt, to go
            // behind a trait of its own like the other domains' stores.
            if !dir.is_dir()
                || !dir.join("mod.rs").exists()
                || ["store", "middleware", "ledger"].contains(&name.as_str())
            {
                continue;
            }
            let mut all = Vec::new();
            rust_files(&dir, &mut all);
            files.extend(all.into_iter().filter(|f| !is_http_layer(&dir, f)));
        }
        files.sort();
        files
    }

    /// Why `line` of a domain core breaks the layering, if it does.
    fn upward_import(line: &str) -> Option<&'static str> {
        let word = |w: &str| {
            line.match_indices(w).any(|(i, _)| {
                let before = line[..i].chars().next_back();
                let after = line[i + w.len()..].chars().next();
                let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                !ident(before) && !ident(after)
            })
        };
        if word("axum") || word("utoipa_axum") {
            return Some("axum (the HTTP layer)");
        }
        if word("AppState") || line.contains("crate::state") {
            return Some("the app state");
        }
        if word("ApiError") || word("ApiResult") || line.contains("crate::error") {
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
        // `mod.rs` may re-export its HTTP entry points (`pub use http::router;`) for the
        // composition root; anything else reaching into `http` is the core leaning on it.
        if line.contains("http::") && !line.trim_start().starts_with("pub use http::") {
            return Some("the domain's HTTP layer");
        }
        if word("fred") {
            return Some("fred (the Redis client)");
        }
        for (i, _) in line.match_indices("crate::store") {
            let rest = &line[i + "crate::store".len()..];
            if rest.starts_with("::redis") || rest.starts_with("::memory") {
                return Some("a store backend");
            }
            if !(rest.starts_with("::error::") || rest.starts_with("::error;")) {
                return Some("the store aggregator (name `crate::store::error` only)");
            }
        }
        None
    }

    #[test]
    fn domain_cores_import_nothing_above_or_beside_them() {
        let src = src();
        let files = domain_core_files(&src);
        assert!(
            files.iter().any(|f| f.ends_with("checkins/mod.rs")),
            "the check must see the domains: {files:?}"
        );
        let mut broken = Vec::new();
        for file in &files {
            for (n, line) in code_lines(file) {
                if let Some(why) = upward_import(&line) {
                    let rel = file.strip_prefix(&src).unwrap().display();
                    broken.push(format!("src/{rel}:{n} imports {why}: {}", line.trim()));
                }
            }
        }
        assert!(
        broken.is_empty(),
        "arrows run one way (docs/design.md \"Shape\"): http -> domain -> store trait <- backends\n{}",
        broken.join("\n")
    );
    }

    #[test]
    fn the_store_error_is_a_leaf() {
        let path = src().join("store/error.rs");
        for (n, line) in code_lines(&path) {
            assert!(
            !line.contains("crate::") && !line.contains("super::"),
            "src/store/error.rs:{n} imports from the crate; domains depend on it, so it must not: {line}"
        );
        }
    }

    #[test]
    fn fred_stays_in_the_redis_backend() {
        let src = src();
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let redis = src.join("store/redis");
        let leaks: Vec<String> = files
            .iter()
            .filter(|f| !f.starts_with(&redis))
            .flat_map(|f| {
                code_lines(f)
                    .into_iter()
                    .filter(|(_, l)| l.contains("fred::") || l.trim_start().starts_with("use fred"))
                    .map(move |(n, l)| format!("{}:{n}: {}", f.display(), l.trim()))
            })
            .collect();
        assert!(
            leaks.is_empty(),
            "fred types outside src/store/redis/ (no Redis types above the store layer):\n{}",
            leaks.join("\n")
        );
    }

    #[test]
    fn lua_lives_in_lua_files() {
        let mut files = Vec::new();
        rust_files(&src(), &mut files);
        let inline: Vec<String> = files
            .iter()
            .filter(|f| fs::read_to_string(f).unwrap().contains("redis.call("))
            .map(|f| f.display().to_string())
            .collect();
        assert!(
            inline.is_empty(),
            "Lua written inside .rs files (keep each script in its own .lua file): {inline:?}"
        );
    }
}
