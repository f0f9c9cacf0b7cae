//! A private PostgreSQL for tests, from Debian's `postgresql` package (`initdb` + `postgres` on
//! a free port, trust authentication, no fsync), tied to the test process like the Redis
//! servers (`super::process`).
//!
//! PostgreSQL refuses to run as root, and these tests often do (containers, CI): then every
//! PostgreSQL command runs as the `postgres` user through `runuser`, and the data directory is
//! handed to that user.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{free_port, process, scratch_dir};

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
    server: Option<Child>,
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
            server: None,
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
        let postgres = self.bin.join("postgres");
        let mut cmd = if self.as_postgres {
            // `runuser` changes user, which clears a parent-death signal: it gets one (from
            // `tied`) and so does the server it starts as `postgres`, whose parent it stays.
            let mut c = process::tied("runuser");
            c.args([
                "-u",
                "postgres",
                "--",
                "setpriv",
                "--pdeathsig",
                "KILL",
                "--",
            ])
            .arg(postgres);
            c
        } else {
            process::tied(postgres)
        };
        let log = std::fs::File::create(self.dir.join("log")).expect("create the server log");
        cmd.arg("-D")
            .arg(self.data())
            .args(["-p", &self.port.to_string(), "-k"])
            .arg(&self.dir)
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            .args(["-c", "synchronous_commit=off", "-c", "full_page_writes=off"])
            // Each line names its database: a test counts the errors of its own.
            .args(["-c", "log_line_prefix=%m [%p] %d "])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the server log"))
            .stderr(log);
        self.server = Some(process::spawn(cmd).expect("spawn postgres"));
        self.wait_ready();
    }

    fn wait_ready(&self) {
        let ready = super::poll::until_blocking(Duration::from_secs(30), || {
            self.command("pg_isready")
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-q"])
                .status()
                .is_ok_and(|s| s.success())
        });
        if !ready {
            let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
            panic!("PostgreSQL did not start:\n{log}");
        }
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
        // Killed whether or not `pg_ctl` could stop it: a server left running is the failure
        // this guards against.
        if let Some(mut server) = self.server.take() {
            let _ = server.kill();
            let _ = server.wait();
        }
    }

    /// Starts it again on the same port with the same data.
    pub fn restart(&mut self) {
        self.spawn();
    }

    /// Errors the server logged in database `db` whose text contains `what`.
    pub fn errors(&self, db: &str, what: &str) -> usize {
        let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
        let tag = format!("] {db} ERROR:");
        log.lines()
            .filter(|l| l.contains(&tag) && l.contains(what))
            .count()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The server's (postmaster's) process id, from its lock file.
    pub fn pid(&self) -> u32 {
        std::fs::read_to_string(self.data().join("postmaster.pid"))
            .ok()
            .and_then(|t| t.lines().next()?.trim().parse().ok())
            .expect("postmaster.pid")
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
