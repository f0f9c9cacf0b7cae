//! The `redis-gateway` binary: parse configuration, start telemetry, bind, serve.
//!
//! Everything else lives in the library so tests can build the same app in-process.

use std::io::Write;

use anyhow::Context;
use redis_gateway::config::{listen_refused, Command};
use redis_gateway::settings::Config;
use redis_gateway::StartError;

/// mimalloc rather than the system allocator: measured (perf, the UV add row),
/// glibc's malloc and free were 15% of the gateway's CPU per request.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A refusal to start is one line on stderr and exit status 1: what is wrong and what to do,
/// without the stack trace `anyhow` adds to `main`'s error when `RUST_BACKTRACE` is set.
fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    let config = Config::load()?;
    match config.command {
        Some(Command::Openapi) => {
            let document = redis_gateway::openapi::document_json();
            let mut out = std::io::stdout().lock();
            let written = out
                .write_all(document.as_bytes())
                .and_then(|()| out.flush());
            return match written {
                // The reader has what it wanted and hung up (`openapi | head`): not a failure.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => other.context("cannot write the OpenAPI document"),
            };
        }
        Some(Command::Healthcheck) => {
            return tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
                .block_on(redis_gateway::healthcheck::check(config.common.listen))
                .map_err(|e| anyhow::anyhow!("unhealthy: {e}"));
        }
        None => {}
    }
    let _telemetry = redis_gateway::telemetry::init(config.common.log_format);
    let settings = config.settings()?;
    let listener = std::net::TcpListener::bind(settings.listen)
        .map_err(|e| listen_refused(settings.listen, &e))?;
    // Before any connection can be accepted, connecting to the store included.
    redis_gateway::serve::bound_unsent(&listener);
    redis_gateway::workers::run(listener, settings).map_err(stopped)
}

/// A setting refused while the state was built (a file it names, a domain's check) is a
/// refusal to start like any other, in the same form, not the gateway stopping.
fn stopped(e: std::io::Error) -> anyhow::Error {
    match e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<StartError>())
    {
        Some(StartError::Config(invalid)) => invalid.clone().into(),
        _ => anyhow::Error::new(e).context("gateway stopped with an error"),
    }
}
