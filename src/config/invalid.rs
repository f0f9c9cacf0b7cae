//! The one form of every refusal to start: `invalid configuration: VARIABLE (--flag): what is
//! wrong; what to write`. One form, so whoever reads it finds the setting in the environment
//! or on the command line alike, and is told what would be accepted rather than only what was
//! not.

use std::ffi::OsStr;
use std::fmt;
use std::sync::OnceLock;

/// A setting refused at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    var: String,
    flag: Option<String>,
    what: String,
    hint: String,
}

impl Invalid {
    /// `var` refused for `what`, with `hint` saying what to write instead. `what` must never
    /// hold a secret: the line reaches logs and terminals.
    pub fn new(var: &str, what: impl Into<String>, hint: impl Into<String>) -> Self {
        let flag = flag_of(var);
        debug_assert!(
            flag.is_some() || COMMAND.get().is_none(),
            "{var} is not a setting of the command line"
        );
        Self {
            var: var.to_owned(),
            flag,
            what: one_line(what.into()),
            hint: one_line(hint.into()),
        }
    }

    /// The variable refused.
    pub fn var(&self) -> &str {
        &self.var
    }

    /// What is wrong with it, without the setting's name or the hint (for a log line that
    /// names the setting in a field of its own).
    pub fn what(&self) -> &str {
        &self.what
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid configuration: {}", self.var)?;
        if let Some(flag) = &self.flag {
            write!(f, " (--{flag})")?;
        }
        write!(f, ": {}; {}", self.what, self.hint)
    }
}

impl std::error::Error for Invalid {}

/// The whole command line's definition, registered by the composition that puts every
/// domain's flags together (`src/settings.rs`): config names no domain, so it cannot build it.
static COMMAND: OnceLock<fn() -> clap::Command> = OnceLock::new();

#[cfg(not(test))]
fn registered() -> Option<fn() -> clap::Command> {
    COMMAND.get().copied()
}

// config's own unit tests make refusals without the binary's start-up: the whole command
// line stands registered for them.
#[cfg(test)]
fn registered() -> Option<fn() -> clap::Command> {
    Some(*COMMAND.get_or_init(|| <crate::settings::Config as clap::CommandFactory>::command))
}

/// Registers the command line whose flags refusals name (the first registration stays).
pub fn register_command(command: fn() -> clap::Command) {
    let _ = COMMAND.set(command);
}

/// The long flag of the setting read from `var`, from the clap definition itself so that the
/// two names printed can never disagree with `--help`.
pub(super) fn flag_of(var: &str) -> Option<String> {
    registered()?()
        .get_arguments()
        .find(|a| a.get_env() == Some(OsStr::new(var)))
        .and_then(|a| a.get_long())
        .map(str::to_owned)
}

/// The refusal is one line on stderr: a parser's multi-line text would break it apart.
fn one_line(text: String) -> String {
    if text.contains(['\n', '\r']) {
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    } else {
        text
    }
}

/// `GATEWAY_LISTEN` could not be bound: the address is in use, not this machine's, or a port
/// below 1024 without the right to it.
pub fn listen_refused(addr: std::net::SocketAddr, e: &std::io::Error) -> Invalid {
    use std::io::ErrorKind;
    let hint = match e.kind() {
        ErrorKind::AddrInUse => format!(
            "stop what listens there, or write another port, e.g. {}:{}",
            addr.ip(),
            addr.port().checked_add(1).unwrap_or(8080)
        ),
        ErrorKind::AddrNotAvailable => format!(
            "write an address of this machine, or {} to listen on every interface",
            std::net::SocketAddr::from(([0, 0, 0, 0], addr.port()))
        ),
        ErrorKind::PermissionDenied => {
            "write a port above 1023, or give the process the right to bind this one".to_owned()
        }
        _ => "write an address this machine can listen on, e.g. 127.0.0.1:8080".to_owned(),
    };
    Invalid::new(
        "GATEWAY_LISTEN",
        format!("cannot listen on {addr}: {e}"),
        hint,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_comes_from_the_clap_definition() {
        assert_eq!(
            flag_of("GATEWAY_GLOBAL_BURST").as_deref(),
            Some("global-burst")
        );
        assert_eq!(flag_of("REDIS_URL").as_deref(), Some("redis-url"));
        assert_eq!(flag_of("NO_SUCH_VARIABLE"), None);
    }

    #[test]
    fn the_form_is_variable_flag_what_hint_on_one_line() {
        let e = Invalid::new("GATEWAY_MAX_BATCH", "must be\nat least 1", "write 1000");
        assert_eq!(
            e.to_string(),
            "invalid configuration: GATEWAY_MAX_BATCH (--max-batch): must be at least 1; write 1000"
        );
    }

    #[test]
    fn a_port_in_use_suggests_the_next_one() {
        let e = std::io::Error::from(std::io::ErrorKind::AddrInUse);
        let text = listen_refused("127.0.0.1:8080".parse().unwrap(), &e).to_string();
        assert!(
            text.starts_with(
                "invalid configuration: GATEWAY_LISTEN (--listen): cannot listen on \
                 127.0.0.1:8080: "
            ),
            "{text}"
        );
        assert!(text.ends_with("e.g. 127.0.0.1:8081"), "{text}");
    }
}
