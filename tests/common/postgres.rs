//! A private PostgreSQL for tests, from Debian's `postgresql` package (`initdb` + `postgres` on
//! a free port, trust authentication, no fsync), under a watchdog like the Redis servers.
//!
//! PostgreSQL refuses to run as root, and these tests often do (containers, CI): then every
//! PostgreSQL command runs as the `postgres` user through `runuser`, and the data directory is
//! handed to that user.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{free_port, scratch_dir};

/// Where `initdb` and friends live: `/usr/lib/postgresql/<newest>/bin`, else `PATH`.
fn bin_dir() -> Option<PathBuf> {
    let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    dirs.sort();
    dirs.pop().map(|(_, d)| d)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// One PostgreSQL server.
#[derive(Debug)]
pub struct Postgres {
    pub port: u16,
    dir: PathBuf,
    bin: PathBuf,
    as_postgres: bool,
    watchdog: Option<Child>,
}

impl Postgres {
    pub fn start() -> Self {
        let bin = bin_dir().or_else(|| {
            Command::new("initdb")
                .arg("--version")
                .output()
                .is_ok()
                .then(PathBuf::new)
        });
        let bin = bin.expect(
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb); \
             run ./scripts/test, which installs it",
        );
        let dir = scratch_dir("pg");
        let as_postgres = is_root();
        let mut pg = Self {
            port: free_port(false),
            dir,
            bin,
            as_postgres,
            watchdog: None,
        };
        if as_postgres {
            let ok = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&pg.dir)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "chown the PostgreSQL test directory to postgres");
        }
        let out = pg
            .command("initdb")
            .args(["-D"])
            .arg(pg.data())
            .args(["-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"])
            .output()
            .expect("run initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        pg.spawn();
        pg
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// A PostgreSQL command, as the `postgres` user when we are root.
    fn command(&self, name: &str) -> Command {
        let program = self.bin.join(name);
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    }

    fn spawn(&mut self) {
        let server = format!(
            "{bin} -D {data} -p {port} -k {dir} -c listen_addresses=127.0.0.1 -c fsync=off \
             -c synchronous_commit=off -c full_page_writes=off",
            bin = self.bin.join("postgres").display(),
            data = self.data().display(),
            port = self.port,
            dir = self.dir.display(),
        );
        // Polls /proc rather than `kill -0`: as the postgres user it may not signal the test.
        let script = format!(
            "{server} >{dir}/log 2>&1 & child=$!\n\
             trap 'kill -INT $child 2>/dev/null' TERM INT\n\
             while [ -d /proc/{test} ] && kill -0 $child 2>/dev/null; do sleep 0.2; done\n\
             kill -INT $child 2>/dev/null; wait $child 2>/dev/null\n\
             [ -d /proc/{test} ] || rm -rf {dir}",
            dir = self.dir.display(),
            test = std::process::id(),
        );
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--", "sh", "-c", &script]);
            c
        } else {
            let mut c = Command::new("sh");
            c.args(["-c", &script]);
            c
        };
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn postgres");
        self.watchdog = Some(child);
        self.wait_ready();
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let ok = self
                .command("pg_isready")
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-q"])
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
        panic!("PostgreSQL did not start:\n{log}");
    }

    /// Connection URL of database `db`.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// Stops the server at once (fast shutdown: sessions are cut, as in an outage).
    pub fn stop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "fast", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if let Some(mut w) = self.watchdog.take() {
            let _ = w.wait();
        }
    }

    /// Starts it again on the same port with the same data.
    pub fn restart(&mut self) {
        self.spawn();
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
