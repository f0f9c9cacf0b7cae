//! The test harness's own promises: no server a test starts outlives it — not when its owner
//! drops it, not when the whole test process is killed — and the suite waits on the wall clock
//! only where it says why.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::binary::Binary;
use common::postgres::Postgres;
use common::process::{ended, ends_within};
use common::RedisProcess;

/// Set for the child test process of [`servers_die_with_a_killed_test_process`].
const CHILD: &str = "GW_HARNESS_CHILD";

/// The child's side: starts one server of each kind, says their process ids (and the
/// PostgreSQL folder), and waits to be killed.
#[test]
#[ignore = "the child of servers_die_with_a_killed_test_process"]
fn child_holding_servers() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let redis = RedisProcess::start(&[], false);
    let pg = Postgres::start();
    let gateway = Binary::start(&[]);
    println!(
        "servers {} {} {} {}",
        redis.pid(),
        pg.pid(),
        gateway.pid(),
        pg.dir().display()
    );
    loop {
        std::thread::park();
    }
}

/// A test binary killed with `SIGKILL` runs no `Drop` and no handler: its servers still end,
/// and the next test process removes the folders they left.
#[test]
fn servers_die_with_a_killed_test_process() {
    let mut cmd = common::process::tied(std::env::current_exe().unwrap());
    cmd.args([
        "child_holding_servers",
        "--exact",
        "--ignored",
        "--nocapture",
    ])
    .env(CHILD, "1")
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    let mut child = common::process::spawn(cmd).unwrap();
    let said = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("servers ").map(str::to_owned))
        .expect("the child says its servers");
    let said: Vec<&str> = said.split_whitespace().collect();
    let pids: Vec<u32> = said[..3].iter().map(|p| p.parse().unwrap()).collect();
    assert!(pids.iter().all(|&p| !ended(p)), "{said:?}");

    child.kill().unwrap();
    child.wait().unwrap();
    for (pid, what) in pids.iter().zip(["redis-server", "postgres", "the gateway"]) {
        assert!(
            ends_within(*pid, Duration::from_secs(10)),
            "{what} ({pid}) outlived its killed test process"
        );
    }
    let left = std::path::Path::new(said[3]);
    assert!(left.exists(), "a killed process cannot clean up");
    common::process::sweep_dead_scratch(left.parent().unwrap());
    assert!(!left.exists(), "the dead process's folder is swept");
}

/// A server hung with `SIGSTOP` reads no `SHUTDOWN`: dropping it still ends it.
#[test]
fn a_dropped_server_ends_even_when_hung() {
    let redis = RedisProcess::start(&[], false);
    let pid = redis.pid();
    let stopped = Command::new("kill").args(["-STOP", &pid]).status().unwrap();
    assert!(stopped.success());
    drop(redis);
    assert!(
        ended(pid.parse().unwrap()),
        "redis-server {pid} outlived its owner"
    );

    let gateway = Binary::start(&[]);
    let pid = gateway.pid();
    drop(gateway);
    assert!(ended(pid), "the gateway {pid} outlived its owner");
}

/// The most pauses on the wall clock the suite may hold. Each one is time every run spends
/// whatever the machine, or a verdict that depends on its load: one more must replace
/// another, or wait on a condition instead (`common::poll`), or on a clock the test moves.
const MOST_SLEEPS: usize = 20;

/// Every `sleep(` in `tests/`: (file, line number, whether the comment above it says why real
/// time is needed).
fn sleeps(dir: &std::path::Path, out: &mut Vec<(String, usize, bool)>) {
    let needle = concat!("sleep", "(");
    for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let path = entry.path();
        if path.is_dir() {
            sleeps(&path, out);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !line.contains(needle) || line.trim_start().starts_with("//") {
                continue;
            }
            // The comment block right above it.
            let says_why = lines[..i]
                .iter()
                .rev()
                .map(|l| l.trim_start())
                .take_while(|l| l.starts_with("//"))
                .any(|l| l.to_lowercase().contains("real time"));
            let name = path.strip_prefix(dir.parent().unwrap()).unwrap();
            out.push((name.display().to_string(), i + 1, says_why));
        }
    }
}

#[test]
fn the_suite_sleeps_little_and_says_why() {
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut found = Vec::new();
    sleeps(&tests, &mut found);
    assert!(found.len() > 1, "the check finds the pauses: {found:?}");
    let silent: Vec<String> = found
        .iter()
        .filter(|(_, _, why)| !why)
        .map(|(file, line, _)| format!("{file}:{line}"))
        .collect();
    assert!(
        silent.is_empty(),
        "pauses on the wall clock without a `// Real time: why` comment above: {silent:?}"
    );
    assert!(
        found.len() <= MOST_SLEEPS,
        "{} pauses on the wall clock in tests/, at most {MOST_SLEEPS}: wait on a condition \
         (tests/common/poll.rs) or a clock the test moves instead",
        found.len()
    );
}
