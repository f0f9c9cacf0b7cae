//! The release-shaped binary as a child process on a free port, for what only a process shows:
//! its threads, its log lines on stdout, its start-up from the environment.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub struct Binary {
    child: Child,
    lines: mpsc::Receiver<String>,
    port: u16,
}

impl Binary {
    /// Starts the binary on the embedded store with its defaults, `RUST_LOG` unset and admin
    /// token `t`; `env` adds to or overrides that.
    pub fn start(env: &[(&str, &str)]) -> Self {
        let (mut cmd, port) = command(env);
        cmd.stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = super::process::spawn(cmd).unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        // Read on a thread of its own: a full pipe would block the binary's logging.
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Self { child, lines, port }
    }

    /// Runs the binary as [`Binary::start`] would, with `args`, to its end (within 10 s): its
    /// exit status, stdout and stderr.
    pub fn run(env: &[(&str, &str)], args: &[&str]) -> Exit {
        let (mut cmd, _) = command(env);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = super::process::spawn(cmd).unwrap();
        // Read while it runs: output larger than a pipe's buffer would block it.
        let (out, err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
        let read = |mut r: Box<dyn std::io::Read + Send>| {
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = r.read_to_string(&mut text);
                text
            })
        };
        let (stdout, stderr) = (read(Box::new(out)), read(Box::new(err)));
        let exited = super::poll::until_blocking(Duration::from_secs(10), || {
            child.try_wait().unwrap().is_some()
        });
        if !exited {
            let _ = child.kill();
            panic!("the binary did not exit within 10 s");
        }
        let status = child.wait().unwrap();
        Exit {
            status,
            stdout: stdout.join().unwrap(),
            stderr: stderr.join().unwrap(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// A GET's JSON answer, whatever its status.
    pub async fn get_json(&self, path: &str) -> serde_json::Value {
        reqwest::get(self.url(path))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Waits until `/readyz` answers 200.
    pub async fn wait_ready(&self) {
        super::poll::eventually(Duration::from_secs(20), "the binary is ready", || async {
            let r = reqwest::get(self.url("/readyz")).await.ok()?;
            (r.status() == 200).then_some(())
        })
        .await;
    }

    /// The next stdout line satisfying `pred`, within 10 s.
    pub fn line(&self, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) if pred(&line) => return line,
                Ok(_) => {}
                Err(_) => break,
            }
        }
        panic!("no such log line");
    }

    pub fn addr(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Sends SIGTERM.
    pub fn sigterm(&self) {
        let killed = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
    }

    /// The exit status, within `within`.
    pub fn wait_exit(&mut self, within: Duration) -> std::process::ExitStatus {
        let mut status = None;
        super::poll::until_blocking(within, || {
            status = self.child.try_wait().unwrap();
            status.is_some()
        });
        status.unwrap_or_else(|| panic!("no exit within {within:?}"))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the process (`SIGTERM`, which writes out every pending log line) and returns
    /// every stdout line not yet taken: all it ever wrote, with no wait for a flush.
    pub fn lines_at_exit(&mut self) -> Vec<String> {
        self.sigterm();
        assert!(self.wait_exit(Duration::from_secs(10)).success());
        // The reader thread ends at the end of the output, closing the channel.
        self.lines.iter().collect()
    }

    /// The stdout lines written so far and not yet taken.
    pub fn lines_so_far(&self) -> Vec<String> {
        self.lines.try_iter().collect()
    }

    /// The names of the process's threads.
    pub fn threads(&self) -> Vec<String> {
        let tasks = format!("/proc/{}/task", self.pid());
        std::fs::read_dir(tasks)
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .map(|n| n.trim().to_owned())
            .collect()
    }
}

/// How a run of the binary ended.
pub struct Exit {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// The binary on a free port, on the embedded store with its defaults, `RUST_LOG` unset and
/// admin token `t`; `env` adds to or overrides that. Start it with `super::process::spawn`,
/// so it ends with the test process.
pub fn command(env: &[(&str, &str)]) -> (Command, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cmd = super::process::tied(env!("CARGO_BIN_EXE_redis-gateway"));
    cmd.env_remove("REDIS_URL")
        .env_remove("RUST_LOG")
        .env_remove("RUST_BACKTRACE")
        .env("GATEWAY_LISTEN", format!("127.0.0.1:{port}"))
        .env("GATEWAY_ADMIN_TOKEN", super::ADMIN_TOKEN)
        .env("GATEWAY_UV_VISITOR_KEY", super::UV_VISITOR_KEY);
    for (k, v) in env {
        cmd.env(k, v);
    }
    (cmd, port)
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
