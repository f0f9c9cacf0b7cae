//! Reading the command line and environment into the composition's `Config` (any clap
//! parser: config does not know every domain's flags). clap's own refusal names the
//! flag (`--global-burst <GLOBAL_BURST>`) even when the value came from the environment, and
//! gives the parser's text ("invalid digit found in string"); here such a refusal is told again
//! in the one form of [`Invalid`]: the variable, its flag, the rule the value breaks, and what
//! to write.

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Arg, Parser};

use super::parse::Rule;
use super::Invalid;

/// Parses the process's arguments and environment into `C`. `Err` is a value refused for one
/// setting; `--help`, `--version` and other usage errors are clap's (printed, then the process
/// exits as clap does).
pub fn load<C: Parser>() -> Result<C, Invalid> {
    let matches = match C::command().try_get_matches() {
        Ok(m) => m,
        Err(e) => return Err(explain(&e, &C::command()).unwrap_or_else(|| e.exit())),
    };
    Ok(C::from_arg_matches(&matches).unwrap_or_else(|e| e.exit()))
}

/// A refused value retold as an [`Invalid`], or `None` for an error that is not about one
/// setting's value.
fn explain(e: &clap::Error, command: &clap::Command) -> Option<Invalid> {
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
    let arg = command
        .get_arguments()
        .find(|a| a.get_long() == Some(long))?;
    let var = arg.get_env()?.to_str()?;
    let rule = match (e.kind(), e.get(ContextKind::ValidValue)) {
        (ErrorKind::InvalidValue, Some(ContextValue::Strings(valid))) => match &valid[..] {
            [rest @ .., last] if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => valid.join(", "),
        },
        _ => match std::error::Error::source(e) {
            Some(source) => match source.downcast_ref::<Rule>() {
                Some(Rule(rule)) => rule.clone(),
                None => format!("readable ({source})"),
            },
            None => "readable".to_owned(),
        },
    };
    // The flag wins over the variable when both are given: when the refused value is not the
    // variable's, it is the flag that was wrong, and the line says so.
    let from_env = std::env::var_os(var).is_some_and(|set| set == **value);
    let got = if arg.is_hide_env_values_set() {
        "a value not shown here".to_owned()
    } else if from_env {
        format!("{value:?}")
    } else {
        format!("{value:?} from --{long}")
    };
    Some(Invalid::new(
        var,
        format!("must be {rule}, got {got}"),
        hint(arg, &rule),
    ))
}

/// What to write: the default when there is one (always valid), else the rule.
fn hint(arg: &Arg, rule: &str) -> String {
    let default = arg
        .get_default_values()
        .iter()
        .filter_map(|v| v.to_str())
        .collect::<Vec<_>>()
        .join(",");
    if default.is_empty() {
        format!("write {rule}, or leave it unset")
    } else {
        format!("write e.g. {default} (the default)")
    }
}
