//! Test harness: real `redis-server` processes (standalone and a 3-master Cluster) started on
//! free ports, and the gateway served in-process over real HTTP.
//!
//! Every server is tied to the test process ([`process`]): killed when its owner drops it, and
//! by the kernel when the test binary ends however it ends, even though the shared servers
//! live in statics that are never dropped.
#![allow(dead_code)]

pub mod binary;
pub mod pages;
pub mod poll;
pub mod postgres;
pub mod process;

use std::collections::HashSet;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use redis_gateway::clock::Clock;
use redis_gateway::config::StoreChoice;
use redis_gateway::settings::Settings;
use reqwest::StatusCode;
use serde_json::Value;

pub const ADMIN_TOKEN: &str = "test-admin-token";

/// Which backend a scenario runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Memory,
    Redis,
    Cluster,
}

/// The server the Redis backends run on: `redis-server` (Redis 7 from the machine's packages)
/// unless `GATEWAY_TEST_SERVER` names another binary (Valkey, Redis 8: ./scripts/test runs the
/// contract suite once per server of its matrix).
pub fn server_binary() -> String {
    std::env::var("GATEWAY_TEST_SERVER").unwrap_or_else(|_| "redis-server".to_owned())
}

/// The module every test server loads (`GATEWAY_TEST_MODULE`, an absolute path: RedisBloom or
/// valkey-bloom), if any: the dedup filters then take the native engine.
pub fn server_module() -> Option<String> {
    std::env::var("GATEWAY_TEST_MODULE")
        .ok()
        .filter(|m| !m.is_empty())
}

/// RedisBloom's module as ./scripts/servers fetches it (`target/servers/redisbloom.so`), when
/// it is there.
pub fn redisbloom_module() -> Option<std::path::PathBuf> {
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    Some(target.join("servers/redisbloom.so")).filter(|m| m.exists())
}

/// Fails loudly (not skips) when Redis is missing: the test command installs it.
fn require_redis() {
    let ok = Command::new(server_binary())
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "redis-server is not installed; run ./scripts/test, which installs it"
    );
}

/// A port for a test server, never handed out twice in this process, and below the kernel's
/// ephemeral range (and its Cluster bus port, +10,000, too): a server stopped and restarted on
/// its port must not find it taken meanwhile by an ephemeral `bind(0)` — another test's
/// gateway listener — or by another test's server, which is what `bind(0)` ports allowed.
fn free_port(also_bus: bool) -> u16 {
    static TAKEN: Mutex<Option<HashSet<u16>>> = Mutex::new(None);
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32_768);
    let (first, end) = (10_000u16, low.saturating_sub(10_000).max(10_001));
    let mut taken = TAKEN.lock().unwrap();
    let taken = taken.get_or_insert_with(HashSet::new);
    // Start where this process's id points, so test binaries run side by side rarely meet.
    let span = u32::from(end - first);
    let start = std::process::id() % span;
    for i in 0..span {
        let port = first + ((start + i) % span) as u16;
        let free = |p: u16| TcpListener::bind(("127.0.0.1", p)).is_ok();
        if !taken.contains(&port) && free(port) && (!also_bus || free(port + 10_000)) {
            taken.insert(port);
            return port;
        }
    }
    panic!("no free port in {first}..{end}");
}

fn scratch_dir(name: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| process::sweep_dead_scratch(&std::env::temp_dir()));
    let dir = std::env::temp_dir().join(format!(
        "gw-test-{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// One `redis-server` process tied to this test process.
#[derive(Debug)]
pub struct RedisProcess {
    pub port: u16,
    dir: PathBuf,
    extra: Vec<String>,
    server: Option<Child>,
}

impl RedisProcess {
    pub fn start(extra: &[&str], cluster_bus: bool) -> Self {
        require_redis();
        for _ in 0..5 {
            let port = free_port(cluster_bus);
            let mut p = Self {
                port,
                dir: scratch_dir(&port.to_string()),
                extra: extra.iter().map(|s| (*s).to_owned()).collect(),
                server: None,
            };
            p.spawn();
            if p.wait_ready(Duration::from_secs(10)) {
                return p;
            }
            p.stop();
        }
        panic!("could not start redis-server");
    }

    fn spawn(&mut self) {
        let log = std::fs::File::create(self.dir.join("log")).expect("create the server log");
        let mut cmd = process::tied(server_binary());
        if let Some(module) = server_module() {
            cmd.args(["--loadmodule", &module]);
        }
        cmd.args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            // In the foreground, so the process started is the server that is killed.
            .args(["--daemonize", "no", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .args(&self.extra)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the server log"))
            .stderr(log);
        self.server = Some(process::spawn(cmd).expect("spawn redis-server"));
    }

    fn wait_ready(&self, within: Duration) -> bool {
        // Ours, not whatever else answers on the port: its `dir` is this server's own.
        poll::until_blocking(within, || {
            self.cli(&["config", "get", "dir"])
                .is_some_and(|o| o.lines().nth(1).map(PathBuf::from) == self.real_dir())
        })
    }

    fn real_dir(&self) -> Option<PathBuf> {
        std::fs::canonicalize(&self.dir).ok()
    }

    /// Runs `redis-cli` against this server; `None` when it cannot connect.
    pub fn cli(&self, args: &[&str]) -> Option<String> {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.success() && !text.starts_with("Could not connect")).then_some(text)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Stops the server at once, as a crash would: `SIGKILL`, which also ends one that is
    /// hung (`SIGSTOP`ped) or busy, where `SHUTDOWN` would wait or never be read.
    pub fn stop(&mut self) {
        if let Some(mut server) = self.server.take() {
            let _ = server.kill();
            let _ = server.wait();
        }
    }

    /// Starts the server again on the same port.
    pub fn restart(&mut self) {
        self.spawn();
        assert!(
            self.wait_ready(Duration::from_secs(10)),
            "redis-server did not come back"
        );
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Joins `nodes` into one Cluster with `replicas` replicas per master (`redis-cli --cluster
/// create`).
fn create_cluster(nodes: &[RedisProcess], replicas: u32) {
    let addrs: Vec<String> = nodes
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.port))
        .collect();
    let out = Command::new("redis-cli")
        .arg("--cluster")
        .arg("create")
        .args(&addrs)
        .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
        .output()
        .expect("run redis-cli --cluster create");
    assert!(
        out.status.success(),
        "cluster create failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// A 3-master Redis Cluster.
#[derive(Debug)]
pub struct RedisCluster {
    pub nodes: Vec<RedisProcess>,
}

impl RedisCluster {
    pub fn start() -> Self {
        let nodes: Vec<RedisProcess> = (0..3)
            .map(|_| {
                RedisProcess::start(
                    &[
                        "--cluster-enabled",
                        "yes",
                        "--cluster-node-timeout",
                        "3000",
                        "--cluster-config-file",
                        "nodes.conf",
                    ],
                    true,
                )
            })
            .collect();
        create_cluster(&nodes, 0);
        let ok = poll::until_blocking(Duration::from_secs(30), || {
            nodes.iter().all(|n| {
                n.cli(&["cluster", "info"])
                    .is_some_and(|i| i.contains("cluster_state:ok"))
            })
        });
        assert!(ok, "cluster did not become ok");
        Self { nodes }
    }

    pub fn url(&self) -> String {
        let seeds: Vec<String> = self.nodes[1..]
            .iter()
            .map(|n| format!("node=127.0.0.1:{}", n.port))
            .collect();
        format!(
            "redis-cluster://127.0.0.1:{}?{}",
            self.nodes[0].port,
            seeds.join("&")
        )
    }
}

/// The standalone server shared by this test binary.
pub fn shared_redis() -> &'static RedisProcess {
    static REDIS: OnceLock<RedisProcess> = OnceLock::new();
    REDIS.get_or_init(|| RedisProcess::start(&[], false))
}

/// The cluster shared by this test binary.
pub fn shared_cluster() -> &'static RedisCluster {
    static CLUSTER: OnceLock<RedisCluster> = OnceLock::new();
    CLUSTER.get_or_init(RedisCluster::start)
}

/// A key prefix no other test uses.
pub fn unique_prefix() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "t{}-{}:",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// The visitor key of test gateways. Fixed, so every run counts alike: a HyperLogLog's estimate
/// of a small set is exact or one off depending on its elements' hashes (50 visitors collide
/// in a register ~8% of the time), and with a key drawn per run an exact count would pass or
/// fail by chance. Tests of the key kept in the store unset it.
pub const UV_VISITOR_KEY: &str = "the test suite's visitor key";

/// Settings for a test gateway: given backend, unique prefix, known admin token, limiter off.
/// On the memory backend the clock is the wall clock moved on by [`Gateway::pass`], so a
/// scenario lets store time pass without sleeping (a Redis store keeps its own clock).
pub fn settings(backend: Backend) -> Settings {
    let mut s = Settings::defaults();
    if backend == Backend::Memory {
        s.clock = Clock::shifted();
    }
    s.store = match backend {
        Backend::Memory => StoreChoice::Memory,
        Backend::Redis => StoreChoice::Redis(shared_redis().url()),
        Backend::Cluster => StoreChoice::Redis(shared_cluster().url()),
    };
    s.key_prefix = unique_prefix();
    s.admin_token = Some(ADMIN_TOKEN.to_owned());
    s.uv.visitor_key = Some(redis_gateway::config::Secret(UV_VISITOR_KEY.to_owned()));
    s.global.enabled = false;
    s.cors_origins.clear();
    s.trusted_proxies.clear();
    // Every test client connects from 127.0.0.1, some with hundreds of requests at once; the
    // per-address cap is tried on its own (tests/connections.rs).
    s.connections.max_per_address = s.connections.max_connections;
    s
}

/// A gateway served in-process on a free port, talked to over real HTTP.
#[derive(Debug)]
pub struct Gateway {
    pub addr: SocketAddr,
    pub client: reqwest::Client,
    /// The store's clock as the test can read and move it: the memory store's own, or the
    /// wall clock for Redis (whose `TIME` runs on this machine's clock), never moved.
    clock: Clock,
    /// Whether [`Gateway::pass`] moves `clock` (the memory store's) rather than waits.
    moves: bool,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Gateway {
    pub async fn start(backend: Backend) -> Self {
        Self::with_settings(settings(backend)).await
    }

    pub async fn with_settings(mut settings: Settings) -> Self {
        // Redis reads its own clock: the HTTP layers' readings must not run ahead of it. The
        // wall clock, then, but one that counts the requests asleep on it (`sleeping`).
        let moves = !matches!(settings.store, StoreChoice::Redis(_));
        if !moves {
            settings.clock = Clock::shifted();
        }
        let clock = settings.clock.clone();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            redis_gateway::run(listener, settings, async {
                let _ = rx.await;
            })
            .await
            .expect("gateway runs");
        });
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        let gw = Self {
            addr,
            client,
            clock,
            moves,
            shutdown: Some(tx),
            task: Some(task),
        };
        gw.wait_ready().await;
        gw
    }

    /// Starts the gateway's graceful shutdown, as SIGTERM does the binary's.
    pub fn shut_down(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }

    async fn wait_ready(&self) {
        poll::eventually(Duration::from_secs(10), "the gateway is ready", || async {
            let r = self.client.get(self.url("/readyz")).send().await.ok()?;
            r.status().is_success().then_some(())
        })
        .await;
    }

    /// Lets `d` of store time pass: the memory store's clock moves on at once, a Redis store's
    /// only by waiting (its clock is Redis's).
    pub async fn pass(&self, d: Duration) {
        if self.moves && self.clock.is_manual() {
            self.clock.advance(d);
        } else {
            // Real time: a Redis store's clock is Redis's own, which no test moves.
            tokio::time::sleep(d).await;
        }
    }

    /// Requests asleep in this gateway's waits (lock acquisitions, claims with `wait_ms`): they
    /// sleep on its clock, which counts them (0 on a clock the test did not make).
    pub fn sleeping(&self) -> usize {
        self.clock.sleeping()
    }

    /// Waits until `n` requests are asleep in this gateway's waits: each made its look and
    /// listens for what wakes it.
    pub async fn until_sleeping(&self, n: usize) {
        let what = format!("{n} requests asleep in the gateway's waits");
        poll::eventually_holds(Duration::from_secs(20), &what, || self.sleeping() >= n).await;
    }

    /// The store's clock, in ms since the Unix epoch (for Redis, this machine's wall clock).
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// A GET's body as text, for what is not JSON (`/metrics`).
    pub async fn text(&self, path: &str) -> String {
        let response = self.client.get(self.url(path)).send().await.unwrap();
        response.text().await.unwrap()
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.send(self.client.get(self.url(path))).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(self.client.post(self.url(path)).json(&body))
            .await
    }

    pub async fn put(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(self.client.put(self.url(path)).json(&body)).await
    }

    #[allow(dead_code)]
    pub async fn admin_get(&self, path: &str) -> (StatusCode, Value) {
        self.send(self.client.get(self.url(path)).bearer_auth(ADMIN_TOKEN))
            .await
    }

    pub async fn admin_put(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(
            self.client
                .put(self.url(path))
                .bearer_auth(ADMIN_TOKEN)
                .json(&body),
        )
        .await
    }

    pub async fn admin_post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(
            self.client
                .post(self.url(path))
                .bearer_auth(ADMIN_TOKEN)
                .json(&body),
        )
        .await
    }

    pub async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.send(self.client.delete(self.url(path))).await
    }

    /// Sends and decodes; every error response must be problem+json with a `code`.
    /// POST `body` under `Idempotency-Key: key`: status, whether the reply says it is a replay
    /// (`Idempotency-Replayed: true`), body.
    #[allow(dead_code)]
    pub async fn post_once(&self, path: &str, key: &str, body: &Value) -> (u16, bool, Value) {
        let r = self
            .client
            .post(self.url(path))
            .header("idempotency-key", key)
            .json(body)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let replayed = r
            .headers()
            .get("idempotency-replayed")
            .is_some_and(|h| h == "true");
        (status, replayed, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn send(&self, req: reqwest::RequestBuilder) -> (StatusCode, Value) {
        let resp = req.send().await.expect("request reaches the gateway");
        let status = resp.status();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let bytes = resp.bytes().await.expect("body");
        let body: Value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or(Value::Null)
        };
        if status.is_client_error() || status.is_server_error() {
            assert_eq!(
                content_type, "application/problem+json",
                "{status} without problem+json: {bytes:?}"
            );
            assert!(body["code"].is_string(), "problem without code: {body}");
            assert_eq!(
                body["status"],
                status.as_u16(),
                "problem status mismatch: {body}"
            );
        }
        (status, body)
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Generates `memory`, `redis` and `cluster` modules, each with one test per scenario; a
/// scenario is `async fn(Backend)` in the invoking module.
#[macro_export]
macro_rules! contract_tests {
    ($($scenario:ident),* $(,)?) => {
        mod memory {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $scenario() { super::$scenario($crate::common::Backend::Memory).await } )*
        }
        mod redis {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $scenario() { super::$scenario($crate::common::Backend::Redis).await } )*
        }
        mod cluster {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $scenario() { super::$scenario($crate::common::Backend::Cluster).await } )*
        }
    };
}

/// One configured API client for a test: id, key, and optional (burst, count, period).
pub type TestClient<'a> = (&'a str, &'a str, Option<(u64, u64, u64)>);

/// A clients file (docs/api.md "Clients and abuse") listing `(id, key, limits)`; keys appear in it
/// only as SHA-256 digests, as operators write them.
#[allow(dead_code)]
pub fn clients_file(clients: &[TestClient<'_>]) -> PathBuf {
    let path = scratch_dir("clients").join("clients.toml");
    write_clients(&path, clients);
    path
}

/// (Re)writes a clients file in place.
#[allow(dead_code)]
pub fn write_clients(path: &std::path::Path, clients: &[TestClient<'_>]) {
    let mut text = String::new();
    for (id, key, limits) in clients {
        text += &format!(
            "[[client]]\nid = \"{id}\"\nkey_sha256 = \"{}\"\n",
            redis_gateway::clients::key_digest_hex(key.as_bytes())
        );
        if let Some((burst, count, period)) = limits {
            text += &format!("burst = {burst}\ncount = {count}\nperiod = {period}\n");
        }
        text += "\n";
    }
    std::fs::write(path, text).expect("write the clients file");
}

/// A Redis Cluster of 3 masters and 3 replicas with a short `cluster-node-timeout`, started
/// per test on its own ports, for failover tests (a killed or hung master is promoted over).
#[derive(Debug)]
pub struct FailoverCluster {
    pub nodes: Vec<RedisProcess>,
}

impl FailoverCluster {
    pub fn start(node_timeout_ms: u64, full_coverage: bool) -> Self {
        let timeout = node_timeout_ms.to_string();
        let coverage = if full_coverage { "yes" } else { "no" };
        let nodes: Vec<RedisProcess> = (0..6)
            .map(|_| {
                RedisProcess::start(
                    &[
                        "--cluster-enabled",
                        "yes",
                        "--cluster-node-timeout",
                        &timeout,
                        "--cluster-require-full-coverage",
                        coverage,
                        "--cluster-replica-validity-factor",
                        "0",
                        "--cluster-config-file",
                        "nodes.conf",
                    ],
                    true,
                )
            })
            .collect();
        create_cluster(&nodes, 1);
        let c = Self { nodes };
        let ok = poll::until_blocking(Duration::from_secs(30), || {
            c.nodes.iter().all(|n| {
                n.cli(&["cluster", "info"])
                    .is_some_and(|i| i.contains("cluster_state:ok"))
            }) && c.masters().len() == 3
                && c.nodes.iter().all(|n| {
                    n.cli(&["cluster", "nodes"])
                        .is_some_and(|t| t.matches("slave").count() == 3)
                })
                && c.nodes
                    .iter()
                    .filter_map(|n| n.cli(&["info", "replication"]))
                    .filter(|i| i.contains("master_link_status:up"))
                    .count()
                    == 3
        });
        assert!(ok, "cluster did not become ok");
        c
    }

    pub fn url(&self) -> String {
        let seeds: Vec<String> = self.nodes[1..]
            .iter()
            .map(|n| format!("node=127.0.0.1:{}", n.port))
            .collect();
        format!(
            "redis-cluster://127.0.0.1:{}?{}",
            self.nodes[0].port,
            seeds.join("&")
        )
    }

    /// The masters serving slots, as seen by the first node that answers: (port, slot ranges).
    pub fn masters(&self) -> Vec<(u16, Vec<(u16, u16)>)> {
        let Some(text) = self
            .nodes
            .iter()
            .find_map(|n| n.cli_timed(&["cluster", "nodes"]))
        else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 9 || !f[2].contains("master") || f[2].contains("fail") {
                continue;
            }
            let port: u16 = f[1]
                .split(['@', ':'])
                .nth(1)
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            let ranges = f[8..]
                .iter()
                .filter(|r| !r.starts_with('['))
                .map(|r| match r.split_once('-') {
                    Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
                    None => (r.parse().unwrap(), r.parse().unwrap()),
                })
                .collect();
            out.push((port, ranges));
        }
        out
    }

    /// The port of the master owning `slot` now (`None` while no live master serves it).
    pub fn owner(&self, slot: u16) -> Option<u16> {
        self.masters()
            .into_iter()
            .find(|(_, r)| r.iter().any(|(a, b)| (*a..=*b).contains(&slot)))
            .map(|(p, _)| p)
    }

    /// The hash slot of a key (or hash tag).
    pub fn keyslot(&self, key: &str) -> u16 {
        self.nodes
            .iter()
            .find_map(|n| n.cli_timed(&["cluster", "keyslot", key]))
            .and_then(|t| t.trim().parse().ok())
            .expect("CLUSTER KEYSLOT")
    }

    /// The node on `port`.
    pub fn node(&self, port: u16) -> &RedisProcess {
        self.nodes.iter().find(|n| n.port == port).expect("node")
    }
}

impl RedisProcess {
    /// `cli`, given up after 2 s (a hung server, `SIGSTOP`ped, would block `redis-cli`).
    pub fn cli_timed(&self, args: &[&str]) -> Option<String> {
        let out = Command::new("timeout")
            .args(["2", "redis-cli", "-p", &self.port.to_string()])
            .args(args)
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.success() && !text.starts_with("Could not connect")).then_some(text)
    }

    /// The server's process id (for `kill -9`, `-STOP`, `-CONT`).
    pub fn pid(&self) -> String {
        self.cli(&["INFO", "server"])
            .and_then(|i| {
                i.lines()
                    .find_map(|l| l.strip_prefix("process_id:"))
                    .map(|p| p.trim().to_owned())
            })
            .expect("INFO server")
    }
}

/// The Redis servers behind `backend` (none for memory).
pub fn servers(backend: Backend) -> Vec<&'static RedisProcess> {
    match backend {
        Backend::Memory => Vec::new(),
        Backend::Redis => vec![shared_redis()],
        Backend::Cluster => shared_cluster().nodes.iter().collect(),
    }
}

/// `TTL key` on the server that holds it (`-c` follows cluster redirects).
pub fn ttl(backend: Backend, key: &str) -> i64 {
    let out = servers(backend)[0]
        .cli(&["-c", "ttl", key])
        .expect("redis-cli answers");
    out.trim()
        .parse()
        .unwrap_or_else(|_| panic!("TTL {key}: {out}"))
}

/// A gateway on a private Redis, so its command counts are the test's own, and the gateway's
/// key prefix.
pub async fn on_private_redis() -> (RedisProcess, Gateway, String) {
    let redis = RedisProcess::start(&[], false);
    let mut s = settings(Backend::Memory);
    s.store = StoreChoice::Redis(redis.url());
    let prefix = s.key_prefix.clone();
    let gw = Gateway::with_settings(s).await;
    (redis, gw, prefix)
}

/// How many script runs (EVALSHA) `redis` has had.
pub fn script_runs(redis: &RedisProcess) -> u64 {
    command_calls(redis, "evalsha")
}

/// How many times `redis` has run `command` (lower case), from scripts too (`INFO
/// commandstats` counts a script's own calls).
pub fn command_calls(redis: &RedisProcess, command: &str) -> u64 {
    let stats = redis
        .cli(&["info", "commandstats"])
        .expect("redis-cli answers");
    let prefix = format!("cmdstat_{command}:calls=");
    stats
        .lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse::<u64>().expect("a count"))
}

/// Enqueues a job into `queue` (which must answer 201): the job's view.
pub async fn enqueue(gw: &Gateway, queue: &str, body: Value) -> Value {
    let (status, reply) = gw.post(&format!("/v1/queues/{queue}/jobs"), body).await;
    assert_eq!(status, 201, "{reply}");
    reply
}

/// Claims from `queue` (which must answer 200): the jobs claimed.
pub async fn claim(gw: &Gateway, queue: &str, body: Value) -> Vec<Value> {
    let (status, reply) = gw.post(&format!("/v1/queues/{queue}/claim"), body).await;
    assert_eq!(status, 200, "{reply}");
    reply["jobs"].as_array().expect("jobs").clone()
}

/// A plain fred client on a private Redis, with `script` loaded: for tests of the Redis client
/// stack itself (vendor/fred, vendor/redis-protocol), below the gateway.
pub async fn fred_on_private_redis(script: &str) -> (RedisProcess, fred::prelude::Client, String) {
    use fred::prelude::*;
    let redis = RedisProcess::start(&[], false);
    let client = Builder::from_config(Config::from_url(&redis.url()).unwrap())
        .build()
        .unwrap();
    client.init().await.unwrap();
    let sha: String = client.script_load(script).await.unwrap();
    (redis, client, sha)
}

/// Reads until the server closes the socket; `None` if it is still open after 5 s.
pub async fn closed_by_server(sock: &mut tokio::net::TcpStream) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(
            Duration::from_secs(5),
            tokio::io::AsyncReadExt::read(sock, &mut buf),
        )
        .await
        {
            Err(_) => return None,
            Ok(Ok(0) | Err(_)) => return Some(got),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// The TCP state of an established connection in /proc/net/tcp.
pub const ESTABLISHED: u8 = 0x01;

/// The server's ends of the connections to `server` made from the local ports `clients`: each
/// one's TCP state and the bytes in its send queue (unsent or unacknowledged), as
/// /proc/net/tcp shows them (for this network namespace: the in-process gateway's and a child
/// binary's alike).
pub fn server_ends(server: SocketAddr, clients: &HashSet<u16>) -> Vec<(u8, u64)> {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp (Linux)");
    let port = |addr: &str| u16::from_str_radix(addr.rsplit(':').next()?, 16).ok();
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            if port(f[1])? != server.port() || !clients.contains(&port(f[2])?) {
                return None;
            }
            let state = u8::from_str_radix(f[3], 16).ok()?;
            let queued = u64::from_str_radix(f[4].split(':').next()?, 16).ok()?;
            Some((state, queued))
        })
        .collect()
}
