//! Child processes that cannot outlive the test process that started them.
//!
//! A `Drop` covers a test that ends or panics, but not a test binary that is killed
//! (`SIGKILL`, an abort, a timeout in CI): its servers would then run on, holding ports and
//! memory, until someone finds them. So each server is started under
//! `setpriv --pdeathsig KILL`, which has the kernel kill it when the thread that started it
//! ends — and that thread is one kept for the whole life of the process (a test's own thread
//! ends when the test does, while a shared server lives on for the next tests).

use std::ffi::OsStr;
use std::io;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::Duration;

type Job = (Command, mpsc::Sender<io::Result<Child>>);

/// `program` run under `setpriv --pdeathsig KILL`; start it with [`spawn`], not
/// `Command::spawn`, or it dies with the calling thread instead of with the process.
pub fn tied(program: impl AsRef<OsStr>) -> Command {
    let mut cmd = Command::new("setpriv");
    cmd.args(["--pdeathsig", "KILL", "--"]).arg(program);
    cmd
}

/// Starts `cmd` (made by [`tied`]) from the thread that lives as long as the process.
pub fn spawn(cmd: Command) -> io::Result<Child> {
    static SPAWNER: OnceLock<mpsc::Sender<Job>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("tied-spawner".to_owned())
            // The static sender is never dropped: this loop, and the thread, end with the
            // process, which is when the kernel is to kill what it started.
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("start the spawner thread");
        tx
    });
    let (reply, answer) = mpsc::channel();
    spawner.send((cmd, reply)).expect("the spawner thread runs");
    answer.recv().expect("the spawner thread answers")
}

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet).
pub fn ended(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X'))
    })
}

/// Waits up to `within` for process `pid` to end; whether it did.
pub fn ends_within(pid: u32, within: Duration) -> bool {
    super::poll::until_blocking(within, || ended(pid))
}

/// Removes what test processes that no longer run left in `tmp` under `gw-test-<pid>-…`: a
/// killed test binary cannot clean up after itself, so the next one does.
pub fn sweep_dead_scratch(tmp: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("gw-test-"))
            .and_then(|n| n.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if ended(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
