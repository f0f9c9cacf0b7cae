//! A Redis Cluster: one fred client per master and the gateway's own slot table. A node that
//! fails or hangs is marked down and probed; the slot table is re-read on the signs of a
//! change (see `mod.rs`), never on a timer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use fred::prelude::*;
use fred::types::config::Server;
use fred::types::{ClusterHash, CustomCommand};

mod masters;

use super::replicas::{Durability, Replicas};
use super::slots::{masters, slot_of};

/// Timeouts in a row after which a node counts as hung (down).
const TIMEOUTS_DOWN: u32 = 3;
/// The slot table is re-read at most this often.
const REFRESH_EVERY: Duration = Duration::from_millis(100);
/// How often a down node is pinged.
const PROBE_EVERY: Duration = Duration::from_millis(200);
const NO_OWNER: u16 = u16::MAX;

/// Builds one fred client for one server (the store's settings: timeouts, one attempt,
/// reconnect policy).
pub(in crate::store::redis) type MakeClient =
    Arc<dyn Fn(Config) -> Result<Client, Error> + Send + Sync>;

/// The slot table and the refresh stamp sit behind std locks, not Tokio's: they are held only
/// to read or swap a few fields, never across an `.await`.
pub(crate) struct Cluster {
    base: Config,
    make: MakeClient,
    timeout: Duration,
    /// `GATEWAY_WRITE_REPLICAS` > 0: every master gets a wait connection.
    durability: Option<Durability>,
    seeds: Vec<Server>,
    topo: RwLock<Topo>,
    refreshing: AtomicBool,
    last_refresh: Mutex<Option<Instant>>,
}

#[derive(Default)]
struct Topo {
    /// Slot → index in `owners`, or [`NO_OWNER`].
    slots: Vec<u16>,
    owners: Vec<Arc<Node>>,
    /// Every node with a client, by `host:port` (owners and seeds).
    nodes: HashMap<String, Arc<Node>>,
}

pub(crate) struct Node {
    addr: String,
    pub(super) client: Client,
    /// This node's wait connection (`GATEWAY_WRITE_REPLICAS` > 0 only).
    pub(super) replicas: Option<Arc<Replicas>>,
    timeouts: AtomicU32,
    hung: AtomicBool,
    probing: AtomicBool,
}

impl Node {
    fn usable(&self) -> bool {
        !self.hung.load(Ordering::Relaxed) && self.client.state() == ClientState::Connected
    }
}

/// A node that does not serve: why the request was not sent.
fn down_error(addr: &str) -> Error {
    Error::new(ErrorKind::IO, format!("Redis node {addr} is down"))
}

fn addr_of(s: &Server) -> String {
    format!("{}:{}", s.host, s.port)
}

/// A node state as a metric: 1 serving, 0 down.
fn gauge(addr: &str, up: bool) {
    metrics::gauge!("gateway_redis_node_up", "node" => addr.to_owned()).set(if up {
        1.0
    } else {
        0.0
    });
}

impl Cluster {
    pub(super) fn new(
        base: Config,
        make: MakeClient,
        timeout: Duration,
        durability: Option<Durability>,
    ) -> Arc<Self> {
        let seeds = base.server.hosts();
        Arc::new(Cluster {
            base,
            make,
            timeout,
            durability,
            seeds,
            topo: RwLock::new(Topo {
                slots: vec![NO_OWNER; 16384],
                ..Default::default()
            }),
            refreshing: AtomicBool::new(false),
            last_refresh: Mutex::new(None),
        })
    }

    /// The node serving the slot of a command whose first key is `key` (`None`: any serving
    /// node).
    pub(super) fn pick(self: &Arc<Self>, key: Option<&[u8]>) -> Result<Arc<Node>, Error> {
        self.node_for(slot_of(key))
    }

    /// The default `INFO` from any serving node: every one asked at once, the first answer
    /// taken (asked in turn, each hung master cost a whole store timeout before the next).
    pub(super) async fn info(self: &Arc<Self>) -> Result<String, Error> {
        let nodes: Vec<Arc<Node>> = {
            let topo = self.topo.read().unwrap();
            topo.owners.iter().filter(|n| n.usable()).cloned().collect()
        };
        let ask = |node: Arc<Node>| async move {
            let result = node.client.info(Some(fred::types::InfoKind::Default)).await;
            self.observe(&node, &result);
            result
        };
        let asked: Vec<_> = nodes.into_iter().map(|n| Box::pin(ask(n))).collect();
        let answer = if asked.is_empty() {
            Err(Error::new(ErrorKind::IO, "no Redis node serves"))
        } else {
            futures::future::select_ok(asked)
                .await
                .map(|(text, _)| text)
        };
        answer.inspect_err(|_| self.refresh())
    }

    /// Each master serving slots and the replicas acknowledging it (`None`: its `INFO` failed).
    pub(super) async fn replication(self: &Arc<Self>) -> Vec<(String, Option<u32>)> {
        let owners: Vec<Arc<Node>> = self.topo.read().unwrap().owners.clone();
        let asked = owners.iter().map(|node| async move {
            let info = if node.usable() {
                let info = node
                    .client
                    .info::<String>(Some(fred::types::InfoKind::Replication));
                match tokio::time::timeout(super::replicas::INFO_WAIT, info).await {
                    Ok(info) => {
                        self.observe(node, &info);
                        info.ok()
                    }
                    Err(_) => None,
                }
            } else {
                None
            };
            (
                node.addr.clone(),
                info.as_deref().map(super::replicas::acking_replicas),
            )
        });
        futures::future::join_all(asked).await
    }

    fn new_node(&self, host: &str, port: u16) -> Result<Arc<Node>, Error> {
        let mut config = self.base.clone();
        config.server = ServerConfig::new_centralized(host, port);
        let replicas = match &self.durability {
            Some(d) => Some(Replicas::new(|| (self.make)(config.clone()), d.clone())?),
            None => None,
        };
        let client = (self.make)(config)?;
        client.connect();
        let addr = format!("{host}:{port}");
        gauge(&addr, false);
        Ok(Arc::new(Node {
            addr,
            client,
            replicas,
            timeouts: AtomicU32::new(0),
            hung: AtomicBool::new(false),
            probing: AtomicBool::new(false),
        }))
    }

    /// Starts connecting to the seeds.
    pub(in crate::store::redis) fn seed(&self) {
        let mut topo = self.topo.write().unwrap();
        for s in &self.seeds {
            if let Ok(n) = self.new_node(&s.host, s.port) {
                topo.nodes.insert(addr_of(s), n);
            }
        }
    }

    /// Returns once the slot table is read, however long that takes (saying so in the log
    /// after `wait`), and every master is connected (a node still connecting counts as down),
    /// waited for until `wait` is over, at least half a second.
    pub(in crate::store::redis) async fn start(self: &Arc<Self>, wait: Duration) {
        let deadline = Instant::now() + wait;
        let mut said = false;
        while !self.clone().refresh_now().await {
            if !said && Instant::now() >= deadline {
                said = true;
                tracing::warn!("Redis is not reachable yet; retrying in the background");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let owners: Vec<Arc<Node>> = self.topo.read().unwrap().owners.clone();
        let all = futures::future::join_all(owners.iter().map(|n| n.client.wait_for_connect()));
        let left = deadline.saturating_duration_since(Instant::now());
        let left = left.max(Duration::from_millis(500));
        let _ = tokio::time::timeout(left, all).await;
        // Their wait connections too (`GATEWAY_WRITE_REPLICAS`).
        let waits = owners.iter().filter_map(|n| n.replicas.as_ref());
        futures::future::join_all(waits.map(|r| r.connected(left))).await;
        for n in &owners {
            gauge(&n.addr, n.usable());
        }
    }

    fn node_for(self: &Arc<Self>, slot: Option<u16>) -> Result<Arc<Node>, Error> {
        let topo = self.topo.read().unwrap();
        let node = match slot {
            Some(slot) => match topo.slots.get(slot as usize) {
                Some(&o) if o != NO_OWNER => Some(topo.owners[o as usize].clone()),
                _ => None,
            },
            None => topo
                .owners
                .iter()
                .chain(topo.nodes.values())
                .find(|n| n.usable())
                .cloned(),
        };
        drop(topo);
        match node {
            Some(n) if n.usable() => Ok(n),
            Some(n) => {
                self.refresh();
                Err(down_error(&n.addr))
            }
            None => {
                self.refresh();
                Err(Error::new(ErrorKind::IO, "no Redis node serves this slot"))
            }
        }
    }

    pub(super) fn observe<T>(self: &Arc<Self>, node: &Arc<Node>, result: &Result<T, Error>) {
        match result {
            Ok(_) => {
                node.timeouts.store(0, Ordering::Relaxed);
            }
            Err(e) => match e.kind() {
                ErrorKind::Timeout => {
                    if node.timeouts.fetch_add(1, Ordering::Relaxed) + 1 >= TIMEOUTS_DOWN
                        && !node.hung.swap(true, Ordering::Relaxed)
                    {
                        tracing::warn!(node = %node.addr, "Redis node timed out repeatedly; marked down");
                        gauge(&node.addr, false);
                        self.probe(node.clone());
                        self.refresh();
                    }
                }
                ErrorKind::IO | ErrorKind::Canceled | ErrorKind::Cluster => self.refresh(),
                _ => {
                    let d = e.details();
                    if ["MOVED", "ASK", "CLUSTERDOWN", "TRYAGAIN"]
                        .iter()
                        .any(|p| d.starts_with(p))
                    {
                        self.refresh();
                    }
                }
            },
        }
    }

    /// Pings a hung node until it answers.
    fn probe(self: &Arc<Self>, node: Arc<Node>) {
        if node.probing.swap(true, Ordering::Relaxed) {
            return;
        }
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(PROBE_EVERY).await;
                if weak.upgrade().is_none() {
                    break;
                }
                let ping = node.client.ping::<String>(None);
                if let Ok(Ok(_)) = tokio::time::timeout(PROBE_EVERY, ping).await {
                    node.timeouts.store(0, Ordering::Relaxed);
                    node.hung.store(false, Ordering::Relaxed);
                    gauge(&node.addr, true);
                    tracing::info!(node = %node.addr, "Redis node answers again");
                    break;
                }
            }
            node.probing.store(false, Ordering::Relaxed);
        });
    }

    /// Re-reads the slot table in the background (at most every [`REFRESH_EVERY`]).
    fn refresh(self: &Arc<Self>) {
        {
            let mut last = self.last_refresh.lock().unwrap();
            if last.is_some_and(|t| t.elapsed() < REFRESH_EVERY) {
                return;
            }
            *last = Some(Instant::now());
        }
        if self.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let me = self.clone();
        tokio::spawn(async move {
            me.clone().refresh_now().await;
            me.refreshing.store(false, Ordering::Release);
        });
    }

    /// Asks the serving nodes for `CLUSTER SLOTS` and rebuilds the slot table from the first
    /// answer. Returns whether a table was read.
    async fn refresh_now(self: Arc<Self>) -> bool {
        let askers: Vec<Arc<Node>> = {
            let topo = self.topo.read().unwrap();
            let mut v: Vec<Arc<Node>> = topo
                .nodes
                .values()
                .filter(|n| n.usable())
                .cloned()
                .collect();
            v.sort_by_key(|n| topo.owners.iter().all(|o| !Arc::ptr_eq(o, n)));
            v
        };
        let wait = self.timeout.min(Duration::from_millis(500));
        for n in askers {
            let cmd = CustomCommand::new_static("CLUSTER", ClusterHash::Random, false);
            let reply =
                tokio::time::timeout(wait, n.client.custom::<Value, _>(cmd, vec!["SLOTS"])).await;
            let Ok(Ok(Value::Array(entries))) = reply else {
                continue;
            };
            let host = n
                .addr
                .rsplit_once(':')
                .map(|(h, _)| h.to_owned())
                .unwrap_or_default();
            if self.rebuild(&host, &entries) {
                return true;
            }
        }
        false
    }

    fn rebuild(&self, asked_host: &str, entries: &[Value]) -> bool {
        let parsed = masters(asked_host, entries);
        if parsed.is_empty() {
            return false;
        }
        let mut topo = self.topo.write().unwrap();
        let mut owners: Vec<Arc<Node>> = Vec::new();
        let mut slots = vec![NO_OWNER; 16384];
        for (a, b, host, port) in parsed {
            let addr = format!("{host}:{port}");
            let node = match topo.nodes.get(&addr) {
                Some(n) => n.clone(),
                None => match self.new_node(&host, port) {
                    Ok(n) => {
                        topo.nodes.insert(addr.clone(), n.clone());
                        n
                    }
                    Err(_) => continue,
                },
            };
            let i = match owners.iter().position(|o| Arc::ptr_eq(o, &node)) {
                Some(i) => i,
                None => {
                    owners.push(node);
                    owners.len() - 1
                }
            };
            for s in a..=b.min(16383) {
                slots[s as usize] = i as u16;
            }
        }
        for n in topo.nodes.values() {
            gauge(&n.addr, n.usable());
        }
        topo.owners = owners;
        topo.slots = slots;
        true
    }
}
