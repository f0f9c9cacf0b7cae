//! Reloading configuration files without a restart (the clients file, the policies file, the
//! TLS certificate and key): on `SIGHUP`, and whenever a file's modification time or size
//! changes. Polling rather than
//! inotify: one `stat` a second or two is nothing, and it also sees the file replaced by a
//! config-map style symlink swap.

use std::path::{Path, PathBuf};
use std::sync::Weak;
use std::time::{Duration, SystemTime};

/// Calls `reload` on `target` on `SIGHUP` and when one of `files` changes (checked every
/// `every`), for as long as `target` lives.
pub fn watch<T: Send + Sync + 'static>(
    files: Vec<PathBuf>,
    every: Duration,
    target: Weak<T>,
    reload: impl Fn(&T) + Send + 'static,
) {
    tokio::spawn(async move {
        #[cfg(unix)]
        let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
        let mut seen = stamps(&files);
        loop {
            #[cfg(unix)]
            let hangup = async {
                match hup.as_mut() {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            #[cfg(not(unix))]
            let hangup = std::future::pending::<()>();
            let signalled = tokio::select! {
                () = hangup => true,
                () = tokio::time::sleep(every) => false,
            };
            let Some(target) = target.upgrade() else {
                return;
            };
            let now = stamps(&files);
            if signalled || now != seen {
                seen = now;
                reload(&target);
            }
        }
    });
}

fn stamps(files: &[PathBuf]) -> Vec<Option<(SystemTime, u64)>> {
    files.iter().map(|file| stamp(file)).collect()
}

fn stamp(file: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(file).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}
