//! Reading the files settings name (clients, policies, TLS certificate and key, JWT public
//! key), so a missing or unreadable one is refused in the one form, naming its setting.

use std::path::Path;

use super::Invalid;

/// The bytes of `path`, named by `var`; `holding` says what the file should be (it ends the
/// hint: "write the path of a readable <holding>, or leave it unset").
pub fn read_file(var: &str, path: &Path, holding: &str) -> Result<Vec<u8>, Invalid> {
    if path.as_os_str().is_empty() {
        return Err(Invalid::new(
            var,
            "the path is empty",
            format!("write the path of {holding}, or leave it unset"),
        ));
    }
    std::fs::read(path).map_err(|e| {
        Invalid::new(
            var,
            format!("cannot read {}: {e}", path.display()),
            format!("write the path of a readable {holding}, or leave it unset"),
        )
    })
}

/// A TOML error on one line, with where: toml's own text spans several (a snippet and a
/// caret), which would break a refusal, or a log line, apart.
pub fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let message = e.message().trim_end_matches('\n').replace('\n', " ");
    match e.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!("line {line}: {message}")
        }
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_toml_error_is_one_line_with_its_line_number() {
        let text = "[[client]]\nid = \"x\"\nkey_sha256 = \n";
        let e = toml::from_str::<toml::Value>(text).unwrap_err();
        let told = toml_error(text, &e);
        assert!(told.starts_with("line 3: "), "{told}");
        assert!(!told.contains('\n'), "{told}");
    }

    #[test]
    fn a_missing_file_names_its_setting_and_path() {
        let e = read_file(
            "GATEWAY_CLIENTS_FILE",
            Path::new("/nonexistent/clients.toml"),
            "TOML file of API clients",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with(
                "invalid configuration: GATEWAY_CLIENTS_FILE (--clients-file): cannot read \
                 /nonexistent/clients.toml: "
            ),
            "{e}"
        );
        assert!(e.ends_with("or leave it unset"), "{e}");
    }
}
