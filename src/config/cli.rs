//! Reading the command line and environment into [`Config`]: clap's own refusal names the
//! flag (`--global-burst <GLOBAL_BURST>`) even when the value came from the environment,
//! which sends someone who set `GATEWAY_GLOBAL_BURST=abc` looking for a flag they never
//! passed; here such a refusal is told again naming the variable as well.

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, FromArgMatches};

use super::Config;

impl Config {
    /// Parses the process's arguments and environment. `Err` carries a message naming the
    /// setting a value could not be read for; `--help`, `--version` and other usage errors are
    /// clap's (printed, then the process exits as clap does).
    pub fn load() -> Result<Self, String> {
        let matches = match Self::command().try_get_matches() {
            Ok(m) => m,
            Err(e) => return Err(explain(&e).unwrap_or_else(|| e.exit())),
        };
        Self::from_arg_matches(&matches).map_err(|e| e.to_string())
    }
}

/// A refused value retold as `<VARIABLE>=<value> (--flag): <why>`, or `None` for an error
/// that is not about one setting's value.
fn explain(e: &clap::Error) -> Option<String> {
    if !matches!(
        e.kind(),
        ErrorKind::ValueValidation | ErrorKind::InvalidValue
    ) {
        return None;
    }
    let Some(ContextValue::String(shown)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let Some(ContextValue::String(value)) = e.get(ContextKind::InvalidValue) else {
        return None;
    };
    // `shown` is the flag as clap prints it: `--global-burst <GLOBAL_BURST>`.
    let long = shown.split_whitespace().next()?.strip_prefix("--")?;
    let command = Config::command();
    let arg = command
        .get_arguments()
        .find(|a| a.get_long() == Some(long))?;
    let why = match (e.kind(), e.get(ContextKind::ValidValue)) {
        (ErrorKind::InvalidValue, Some(ContextValue::Strings(valid))) => {
            format!("expected one of {}", valid.join(", "))
        }
        _ => std::error::Error::source(e)
            .map_or_else(|| "invalid value".to_owned(), ToString::to_string),
    };
    let var = arg.get_env().and_then(|v| v.to_str());
    // The variable is named when it holds the refused value (the flag, when given, wins over
    // it; then the flag is what was wrong). A hidden value (a password's) is never repeated.
    let from_env = var.is_some_and(|v| std::env::var_os(v).is_some_and(|set| set == **value));
    let shown_value = if arg.is_hide_env_values_set() {
        "…"
    } else {
        value.as_str()
    };
    Some(match var {
        Some(var) if from_env => format!("{var}={shown_value} (--{long}): {why}"),
        Some(var) => format!("--{long} {shown_value} ({var}): {why}"),
        None => format!("--{long} {shown_value}: {why}"),
    })
}
