//! The URLs and origins settings hold (`REDIS_URL`, `DATABASE_URL`, `GATEWAY_CORS_ORIGINS`),
//! checked at start-up so that a mistake is one line saying what to write, not a client
//! library's error later (fred's "Url Error: InvalidPort", told twice) or nothing at all (a
//! CORS origin that never matches, which a browser reports as "Failed to fetch"). A URL is
//! never repeated whole in a refusal: it may carry a password.

use std::str::FromStr;

use url::{ParseError, Url};

use super::Invalid;

/// The schemes of a `REDIS_URL`: what fred reads as standalone Redis or Cluster, each plain or
/// TLS, and that the gateway's routing serves (`src/store/redis/`). fred reads any other
/// scheme as standalone Redis (`http://host:6379` connected), so it is refused here.
const REDIS_SCHEMES: [&str; 4] = ["redis", "rediss", "redis-cluster", "rediss-cluster"];

const REDIS_FORMS: &str = "redis://host:port[/db], rediss:// (TLS), \
                           redis-cluster://host:port[?node=host:port…] or rediss-cluster:// \
                           (Cluster, TLS)";

/// `REDIS_URL`: a scheme of [`REDIS_SCHEMES`], a host, a port within 1..=65535, a database
/// number (standalone only), and `node=host:port` seeds (Cluster only).
pub(super) fn redis_url(url: &str) -> Result<(), Invalid> {
    let wrong_scheme =
        |what: String| Invalid::new("REDIS_URL", what, format!("write {REDIS_FORMS}"));
    let scheme = scheme(url).map_err(wrong_scheme)?;
    if !REDIS_SCHEMES.contains(&scheme.as_str()) {
        return Err(wrong_scheme(format!("unsupported scheme {scheme}://")));
    }
    let refuse = |what: String| {
        Invalid::new(
            "REDIS_URL",
            what,
            format!(
                "write {scheme}://host:port with a port within 1..=65535, e.g. \
                 {scheme}://127.0.0.1:6379"
            ),
        )
    };
    let cluster = scheme.ends_with("-cluster");
    let parsed = Url::parse(url).map_err(|e| refuse(url_error(e, url)))?;
    let host = parsed.host_str().unwrap_or_default();
    if host.is_empty() {
        return Err(refuse("no host".to_owned()));
    }
    if parsed.port() == Some(0) {
        return Err(refuse(
            "port 0 (the port must be within 1..=65535)".to_owned(),
        ));
    }
    let database = parsed.path().trim_start_matches('/');
    let port = parsed.port().unwrap_or(6379);
    let hint = |to: &str| format!("write {scheme}://{host}:{port}{to}");
    if !cluster && !database.is_empty() && database.parse::<u8>().is_err() {
        return Err(Invalid::new(
            "REDIS_URL",
            format!("the database {database:?} is not a number from 0 to 255"),
            hint("/0, or leave the database out for 0"),
        ));
    }
    if cluster && !matches!(database, "" | "0") {
        return Err(Invalid::new(
            "REDIS_URL",
            format!("a Cluster has database 0 only, not {database:?}"),
            hint(", without a database"),
        ));
    }
    for (key, value) in parsed.query_pairs() {
        seed(cluster, &key, &value)?;
    }
    Ok(())
}

/// One `key=value` of a `REDIS_URL`'s query: fred reads `node` seeds of a Cluster URL and
/// ignores everything else without a word.
fn seed(cluster: bool, key: &str, value: &str) -> Result<(), Invalid> {
    let refuse = |what: String| {
        Invalid::new(
            "REDIS_URL",
            what,
            "write ?node=host:port seeds on a Cluster URL only, e.g. \
             redis-cluster://10.0.0.1:7000?node=10.0.0.2:7000&node=10.0.0.3:7000",
        )
    };
    if key != "node" {
        return Err(refuse(format!("unknown parameter {key:?}")));
    }
    if !cluster {
        return Err(refuse(format!(
            "node={value} is a Cluster seed, and the scheme is not redis-cluster:// or \
             rediss-cluster://"
        )));
    }
    match value.split(':').collect::<Vec<_>>()[..] {
        [host, port] if !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0) => Ok(()),
        _ => Err(refuse(format!(
            "the seed node={value} is not host:port with a port within 1..=65535"
        ))),
    }
}

/// `DATABASE_URL`: a PostgreSQL URL that sqlx reads, as the ledger will.
pub(crate) fn database_url(url: &str) -> Result<(), Invalid> {
    let refuse = |what: String| {
        Invalid::new(
            "DATABASE_URL",
            what,
            "write postgres://user:password@host:port/database, e.g. \
             postgres://gateway@127.0.0.1:5432/gateway",
        )
    };
    let scheme = scheme(url).map_err(refuse)?;
    if scheme != "postgres" && scheme != "postgresql" {
        return Err(refuse(format!("unsupported scheme {scheme}://")));
    }
    Url::parse(url).map_err(|e| refuse(url_error(e, url)))?;
    // sqlx's error wraps the reason in "error with configuration: …": the reason alone.
    sqlx::postgres::PgConnectOptions::from_str(url).map_err(|e| {
        let reason = std::error::Error::source(&e).map_or_else(|| e.to_string(), |s| s.to_string());
        refuse(format!("cannot be read: {reason}"))
    })?;
    Ok(())
}

/// The lowercase scheme of `url`, or what to say when it has none. A "scheme" holding `@` or
/// longer than any real one is the start of a URL without one (`user:pass@host`), and is not
/// repeated.
fn scheme(url: &str) -> Result<String, String> {
    match url.split_once("://") {
        Some((scheme, _)) if scheme.len() <= 32 && !scheme.contains(['@', ':']) => {
            Ok(scheme.to_ascii_lowercase())
        }
        _ => Err("no scheme".to_owned()),
    }
}

/// A URL parse error as what to fix; the URL itself is not repeated, only its port.
fn url_error(e: ParseError, url: &str) -> String {
    match e {
        ParseError::InvalidPort => match port_text(url) {
            Some(port) => format!("port {port} is not a number within 1..=65535"),
            None => "the port is not a number within 1..=65535".to_owned(),
        },
        ParseError::EmptyHost => "no host".to_owned(),
        ParseError::InvalidIpv4Address
        | ParseError::InvalidIpv6Address
        | ParseError::InvalidDomainCharacter
        | ParseError::IdnaError => "the host is not a valid name or address".to_owned(),
        other => format!("not a URL ({other})"),
    }
}

/// The port as written in `url`'s authority, after any user information (which may hold a
/// password, so is never part of what is returned).
fn port_text(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let port = match host_port.strip_prefix('[') {
        Some(v6) => v6.split_once(']')?.1.strip_prefix(':')?,
        None => host_port.split_once(':')?.1,
    };
    // Bounded, so a stray long string is not echoed.
    (port.len() <= 12).then_some(port)
}

const CORS: &str = "GATEWAY_CORS_ORIGINS";

/// `GATEWAY_CORS_ORIGINS`: `*` alone, or origins as browsers send them in `Origin`. The list
/// is compared byte for byte with that header, so an origin written any other way (a trailing
/// slash, no scheme, capitals, the default port) matches no request, and every call from the
/// page fails in the browser with no word from the gateway.
pub(super) fn cors_origins(list: &[String]) -> Result<Vec<String>, Invalid> {
    let origins: Vec<String> = list
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    if origins.len() > 1 && origins.iter().any(|o| o == "*") {
        return Err(Invalid::new(
            CORS,
            "* is listed with other origins, and allows every origin",
            "write * alone, or the origins without it",
        ));
    }
    for origin in origins.iter().filter(|o| *o != "*") {
        cors_origin(origin)?;
    }
    Ok(origins)
}

/// One origin: `scheme://host[:port]`, lowercase, nothing after the host or port, the port
/// left out when it is the scheme's default (browsers leave it out).
fn cors_origin(text: &str) -> Result<(), Invalid> {
    let canonical = origin_of(text);
    let refuse = |why: &str| {
        Invalid::new(
            CORS,
            format!("{text:?} {why}"),
            format!(
                "write scheme://host[:port] with nothing after it, as browsers send it: \
                 {canonical}"
            ),
        )
    };
    let Some((scheme, rest)) = text.split_once("://") else {
        return Err(refuse("has no scheme (http:// or https://)"));
    };
    if rest.contains(['/', '?', '#']) {
        return Err(refuse(
            "has a path, query or fragment (a trailing slash too)",
        ));
    }
    if rest.contains('@') {
        return Err(refuse("has user information"));
    }
    let (host, port) = split_host_port(rest);
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._:[]".contains(c));
    if !scheme_ok || !host_ok {
        return Err(refuse("is not scheme://host[:port]"));
    }
    if port.is_some_and(|p| p.parse::<u16>().map_or(true, |p| p == 0)) {
        return Err(refuse("has a port that is not a number within 1..=65535"));
    }
    if text != canonical {
        return Err(refuse(
            "is not as browsers send it (lowercase, without the scheme's default port)",
        ));
    }
    Ok(())
}

/// `host` and `port` of `host[:port]` (`[v6][:port]` too).
fn split_host_port(authority: &str) -> (&str, Option<&str>) {
    let after_host = match authority.find(']') {
        Some(end) if authority.starts_with('[') => end + 1,
        _ => 0,
    };
    match authority[after_host..].rfind(':') {
        Some(i) => (
            &authority[..after_host + i],
            Some(&authority[after_host + i + 1..]),
        ),
        None => (authority, None),
    }
}

/// The origin a browser would send for what `text` names: its scheme (`http` when it has
/// none) and host and port, lowercase, without the default port (or one that is no port)
/// or anything after.
fn origin_of(text: &str) -> String {
    let (scheme, rest) = text.split_once("://").unwrap_or(("http", text));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let (scheme, authority) = (scheme.to_ascii_lowercase(), authority.to_ascii_lowercase());
    let default_port = match scheme.as_str() {
        "http" => Some("80"),
        "https" => Some("443"),
        _ => None,
    };
    let authority = match split_host_port(&authority) {
        (host, Some(port))
            if Some(port) == default_port || port.parse::<u16>().map_or(true, |p| p == 0) =>
        {
            host.to_owned()
        }
        _ => authority,
    };
    format!("{scheme}://{authority}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(url: &str) -> String {
        redis_url(url).unwrap_err().to_string()
    }

    #[test]
    fn redis_urls_the_gateway_can_use() {
        for url in [
            "redis://127.0.0.1:6379",
            "redis://localhost",
            "redis://:pw@127.0.0.1:6379/3",
            "rediss://user:pw@redis.example:6380/0",
            "redis-cluster://10.0.0.1:7000?node=10.0.0.2:7000&node=10.0.0.3:7000",
            "rediss-cluster://u:p@[::1]:7000",
            "REDIS://127.0.0.1:6379",
        ] {
            assert_eq!(redis_url(url), Ok(()), "{url}");
        }
    }

    #[test]
    fn a_bad_port_is_named_and_the_password_is_not() {
        let e = refused("redis://:s3cret@127.0.0.1:99999");
        assert!(
            e.starts_with(
                "invalid configuration: REDIS_URL (--redis-url): port 99999 is not a number \
                 within 1..=65535; write redis://host:port with a port within 1..=65535, e.g. \
                 redis://127.0.0.1:6379"
            ),
            "{e}"
        );
        assert!(!e.contains("s3cret"), "{e}");
        assert!(refused("redis://127.0.0.1:0").contains("port 0"));
        assert!(refused("redis://127.0.0.1:port").contains("port port is not"));
    }

    #[test]
    fn hosts_databases_and_seeds() {
        assert!(
            refused("redis://:6379").contains("no host"),
            "{}",
            refused("redis://:6379")
        );
        assert!(refused("redis://h:6379/x").contains("database \"x\""));
        assert!(refused("redis://h:6379/256").contains("0 to 255"));
        assert!(refused("redis-cluster://h:7000/2").contains("database 0 only"));
        assert!(refused("redis://h:6379?node=h2:6379").contains("Cluster seed"));
        assert!(refused("redis-cluster://h:7000?node=h2").contains("node=h2 is not host:port"));
        assert!(refused("redis-cluster://h:7000?node=h2:70000").contains("node=h2:70000"));
        assert!(refused("redis://h:6379?timeout=5").contains("unknown parameter \"timeout\""));
    }

    #[test]
    fn schemes_other_than_redis_are_refused_with_the_accepted_ones() {
        for url in [
            "localhost:6379",
            "user:s3cret@localhost:6379",
            "http://h:6379",
        ] {
            let e = refused(url);
            assert!(e.contains("redis-cluster://"), "{e}");
            assert!(!e.contains("s3cret"), "{e}");
        }
        assert!(refused("http://h:6379").contains("unsupported scheme http://"));
    }

    #[test]
    fn database_urls() {
        assert_eq!(database_url("postgres://u:p@127.0.0.1:5432/db"), Ok(()));
        assert_eq!(
            database_url("postgresql:///db?host=/run/postgresql"),
            Ok(())
        );
        let e = database_url("postgres://u:s3cret@h:99999/db")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("DATABASE_URL (--database-url): port 99999"),
            "{e}"
        );
        assert!(!e.contains("s3cret"), "{e}");
        let e = database_url("mysql://h/db").unwrap_err().to_string();
        assert!(e.contains("unsupported scheme mysql://"), "{e}");
    }

    #[test]
    fn origins_as_browsers_send_them() {
        let list = |s: &str| cors_origins(&s.split(',').map(str::to_owned).collect::<Vec<_>>());
        assert_eq!(list("*"), Ok(vec!["*".to_owned()]));
        assert_eq!(list(""), Ok(vec![]));
        for ok in [
            "http://127.0.0.1:18500",
            "https://app.example.com",
            "http://[::1]:3000",
            "chrome-extension://abcdef",
        ] {
            assert_eq!(list(ok), Ok(vec![ok.to_owned()]), "{ok}");
        }
        for (bad, write) in [
            ("http://127.0.0.1:18500/", "http://127.0.0.1:18500"),
            ("localhost:3000", "http://localhost:3000"),
            ("https://App.Example.com", "https://app.example.com"),
            ("https://app.example.com:443", "https://app.example.com"),
            ("http://app.example/path?q=1", "http://app.example"),
            ("http://app.example:0", "http://app.example"),
        ] {
            let e = list(bad).unwrap_err().to_string();
            assert!(
                e.starts_with("invalid configuration: GATEWAY_CORS_ORIGINS (--cors-origins): "),
                "{e}"
            );
            assert!(
                e.ends_with(&format!("as browsers send it: {write}")),
                "{bad}: {e}"
            );
        }
        assert!(list("*,http://a.example").is_err());
    }
}
