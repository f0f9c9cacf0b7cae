"""The run: servers (a 3 + 3 Redis Cluster, a private PostgreSQL, two gateways), the
workload's client threads, the fault schedule, a quiet period, the final reads, the checker.
"""

import collections
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse

import check
import schedule

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ADMIN = "chaos-admin-token-0123456789"
REQUEST_TIMEOUT_MS = 10_000


def log(msg):
    print("chaos: " + msg, flush=True)


def free_port(bus=False):
    """A port below the ephemeral range (and its Cluster bus port, +10,000): a server restarted
    on its port must not find it taken by an ephemeral connection meanwhile."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError):
        low = 32768
    rng = random.Random(os.getpid() ^ int(time.time() * 1000))
    for _ in range(1000):
        port = rng.randrange(10_000, max(10_001, low - 10_000))
        if port in free_port.taken:
            continue
        ok = True
        for p in ([port, port + 10_000] if bus else [port]):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
        if ok:
            free_port.taken.add(port)
            return port
    raise RuntimeError("no free port")


free_port.taken = set()


def wait_until(check_fn, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if check_fn():
                return True
        except Exception:  # noqa: BLE001 - a server still starting
            pass
        time.sleep(0.1)
    raise RuntimeError("%s did not happen within %ss" % (what, seconds))


# ---------------------------------------------------------------------------------------------
# Servers


class Proc:
    """A server process in its own session (so a signal reaches it alone), restartable."""

    def __init__(self, name, argv, logdir, env=None):
        self.name, self.argv, self.logdir, self.env = name, argv, logdir, env
        self.p = None
        self.paused = False

    def start(self):
        logf = open(os.path.join(self.logdir, self.name + ".log"), "ab")
        self.p = subprocess.Popen(self.argv, stdout=logf, stderr=subprocess.STDOUT,
                                  env=self.env, start_new_session=True)
        logf.close()

    def kill(self):
        if self.p and self.p.poll() is None:
            if self.paused:
                self.resume()
            self.p.kill()
            self.p.wait()

    def pause(self):
        if self.p and self.p.poll() is None:
            os.kill(self.p.pid, signal.SIGSTOP)
            self.paused = True

    def resume(self):
        if self.p and self.p.poll() is None:
            os.kill(self.p.pid, signal.SIGCONT)
        self.paused = False


class RedisNode(Proc):
    def __init__(self, logdir, node_timeout_ms):
        self.port = free_port(bus=True)
        self.dir = os.path.join(logdir, "redis-%d" % self.port)
        os.makedirs(self.dir)
        # appendonly with appendfsync no: a SIGKILLed server comes back with what it answered
        # (its writes are in the kernel's page cache), as a restarted server with its disk would.
        super().__init__("redis-%d" % self.port, [
            "redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--daemonize", "no",
            "--save", "", "--appendonly", "yes", "--appendfsync", "no", "--dir", self.dir,
            "--cluster-enabled", "yes", "--cluster-node-timeout", str(node_timeout_ms),
            "--cluster-require-full-coverage", "no", "--cluster-replica-validity-factor", "0",
            "--cluster-config-file", "nodes.conf"], logdir)

    def cli(self, *args, timeout=2):
        r = subprocess.run(["timeout", str(timeout), "redis-cli", "-p", str(self.port),
                            *map(str, args)], capture_output=True, text=True)
        if r.returncode != 0 or r.stdout.startswith("Could not connect"):
            return None
        return r.stdout

    def ready(self):
        return (self.cli("PING") or "").strip() == "PONG"


class Cluster:
    def __init__(self, logdir, node_timeout_ms):
        self.nodes = [RedisNode(logdir, node_timeout_ms) for _ in range(6)]
        for n in self.nodes:
            n.start()
        for n in self.nodes:
            wait_until(n.ready, 20, "redis on %d" % n.port)
        r = subprocess.run(["redis-cli", "--cluster", "create",
                            *["127.0.0.1:%d" % n.port for n in self.nodes],
                            "--cluster-replicas", "1", "--cluster-yes"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("cluster create failed: " + r.stdout + r.stderr)
        wait_until(self.healthy, 60, "the cluster becoming ok with 3 replicas in sync")
        # A shard is named by the first slot its master served at creation.
        self.shards = sorted(rng[0] for _, _, rng in self.masters())

    def url(self):
        return "redis-cluster://127.0.0.1:%d?%s" % (self.nodes[0].port, "&".join(
            "node=127.0.0.1:%d" % n.port for n in self.nodes[1:]))

    def by_port(self, port):
        return next(n for n in self.nodes if n.port == port)

    def topology(self):
        """[(id, port, flags, master id, slot ranges)] from the first node that answers."""
        for n in self.nodes:
            if n.paused or not n.p or n.p.poll() is not None:
                continue
            text = n.cli("CLUSTER", "NODES")
            if not text:
                continue
            out = []
            for line in text.splitlines():
                f = line.split()
                if len(f) < 8:
                    continue
                port = int(f[1].split("@")[0].rsplit(":", 1)[1])
                ranges = []
                for r in f[8:]:
                    if r.startswith("["):
                        continue
                    a, _, b = r.partition("-")
                    ranges.append((int(a), int(b or a)))
                out.append((f[0], port, f[2], f[3], ranges))
            return out
        return []

    def masters(self):
        return [(i, p, sorted(r)[0]) for i, p, fl, _, r in self.topology()
                if "master" in fl and "fail" not in fl and r]

    def healthy(self):
        for n in self.nodes:
            info = n.cli("CLUSTER", "INFO")
            if not info or "cluster_state:ok" not in info:
                return False
        topo = self.topology()
        masters = [t for t in topo if "master" in t[2] and "fail" not in t[2] and t[4]]
        replicas = [t for t in topo if "slave" in t[2] and "fail" not in t[2]]
        links = sum(1 for n in self.nodes if "master_link_status:up" in (
            n.cli("INFO", "replication") or ""))
        return len(masters) == 3 and len(replicas) == 3 and links == 3

    def resolve(self, role, shard):
        """The node now in `role` (master/replica) of shard `shard`, or None."""
        slot = self.shards[shard]
        topo = self.topology()
        master = next((t for t in topo if "master" in t[2] and "fail" not in t[2] and any(
            a <= slot <= b for a, b in t[4])), None)
        if master is None:
            return None
        if role == "master":
            return self.by_port(master[1])
        rep = next((t for t in topo if "slave" in t[2] and t[3] == master[0]), None)
        return self.by_port(rep[1]) if rep else None


class Postgres:
    def __init__(self, logdir):
        vers = sorted((int(v), v) for v in os.listdir("/usr/lib/postgresql") if v.isdigit())
        self.bin = "/usr/lib/postgresql/%s/bin" % vers[-1][1]
        self.dir = tempfile.mkdtemp(prefix="gateway-chaos-pg-")
        self.logdir = logdir
        self.port = free_port()
        self.root = os.getuid() == 0
        if self.root:
            subprocess.run(["chown", "-R", "postgres:postgres", self.dir], check=True)
        r = subprocess.run(self.cmd("initdb") + ["-D", self.data, "-U", "postgres", "-A", "trust",
                                                 "-E", "UTF8", "--no-sync"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("initdb failed: " + r.stderr)
        self.p = None

    @property
    def data(self):
        return os.path.join(self.dir, "data")

    def cmd(self, name):
        prog = os.path.join(self.bin, name)
        return ["runuser", "-u", "postgres", "--", prog] if self.root else [prog]

    def start(self):
        logf = open(os.path.join(self.logdir, "postgres.log"), "ab")
        self.p = subprocess.Popen(self.cmd("postgres") + [
            "-D", self.data, "-p", str(self.port), "-k", self.dir,
            "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
            "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
            stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
        logf.close()
        wait_until(lambda: subprocess.run(
            self.cmd("pg_isready") + ["-h", "127.0.0.1", "-p", str(self.port), "-q"]
        ).returncode == 0, 30, "PostgreSQL")

    def stop(self):
        subprocess.run(self.cmd("pg_ctl") + ["-D", self.data, "-m", "fast", "-w", "stop"],
                       capture_output=True)
        if self.p:
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait()
            self.p = None

    def url(self):
        return "postgres://postgres@127.0.0.1:%d/postgres" % self.port

    def rows(self):
        r = subprocess.run(self.cmd("psql") + [
            "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", "postgres", "-At",
            "-c", "SELECT coalesce(json_agg(json_build_object('order_id', order_id, "
            "'voucher_id', voucher_id, 'user_id', user_id)), '[]') FROM seckill_orders"],
            capture_output=True, text=True)
        if r.returncode != 0:
            return None
        return json.loads(r.stdout.strip() or "[]")


# Each instance runs under its own group id, by which the nftables rules of a partition pick its
# packets (inside the run's private network namespace).
GIDS = {"g0": 65533, "g1": 65534}


def in_netns():
    return os.environ.get("CHAOS_NETNS") == "1"


# A limit policy on UV adds (docs/policies.md): one bucket for every caller, through both
# instances, so the checker holds it to the GCRA bound as it does the rate-limit keys. Policies
# apply only with the global limiter on: it runs in shadow mode (decides, refuses nothing).
POLICY = dict(name="uv-all", operation="uvRecord", op="uv", burst=1, count=1, period=1)


def policies_file(logdir):
    path = os.path.join(logdir, "policies.toml")
    with open(path, "w") as f:
        f.write('[[policy]]\nname = "%(name)s"\noperations = ["%(operation)s"]\n'
                'by = "operation"\nburst = %(burst)d\ncount = %(count)d\n'
                'period = %(period)d\n' % POLICY)
    return path


class Gateway(Proc):
    def __init__(self, name, binary, logdir, redis_url, db_url):
        self.port = free_port()
        env = dict(os.environ, REDIS_URL=redis_url, GATEWAY_LISTEN="127.0.0.1:%d" % self.port,
                   GATEWAY_WRITE_REPLICAS="1", GATEWAY_ADMIN_TOKEN=ADMIN,
                   GATEWAY_GLOBAL_LIMIT="shadow", GATEWAY_POLICIES_FILE=policies_file(logdir),
                   GATEWAY_REQUEST_TIMEOUT_MS=str(REQUEST_TIMEOUT_MS),
                   RUST_LOG=os.environ.get("RUST_LOG", "info"), GATEWAY_ACCESS_LOG="off")
        if db_url:
            env["DATABASE_URL"] = db_url
        else:
            env.pop("DATABASE_URL", None)
        argv = [binary]
        if in_netns():
            argv = ["setpriv", "--regid", str(GIDS[name]), "--clear-groups", "--", binary]
        super().__init__(name, argv, logdir, env)

    def ready(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
        try:
            c.request("GET", "/healthz")
            return c.getresponse().status == 200
        finally:
            c.close()


# ---------------------------------------------------------------------------------------------
# History


class History:
    def __init__(self, path):
        self.f = open(path, "w")
        self.lock = threading.Lock()
        self.n = 0
        self.records = []

    def add(self, rec):
        with self.lock:
            if rec.get("type") in ("op", "fence"):
                self.n += 1
                rec["id"] = self.n
            self.records.append(rec)
            self.f.write(json.dumps(rec) + "\n")
            self.f.flush()
        return rec

    def close(self):
        self.f.close()


class Register:
    """The fenced resource the lock holders write to: refuses a token lower than one it
    accepted."""

    def __init__(self, hist):
        self.top = {}
        self.lock = threading.Lock()
        self.hist = hist

    def write(self, client, name, owner, token):
        with self.lock:
            m = self.top.get(name)
            ok = m is None or token >= m
            if ok:
                self.top[name] = token
            self.hist.add(dict(type="fence", client=client, lock=name, owner=owner, token=token,
                               time=time.time(), accepted=ok, max_before=m))
        return ok


# ---------------------------------------------------------------------------------------------
# Workload


class Client:
    def __init__(self, name, ctx, seed):
        self.name, self.ctx = name, ctx
        self.rng = random.Random(seed)
        self.n = 0

    def call(self, op, method, path, body=None, args=None, logical=None, attempt=0,
             key=None, gw=None, admin=False, extra_ms=0):
        gws = self.ctx["gateways"]
        g = gws[gw if gw is not None else self.rng.randrange(len(gws))]
        headers = {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if key:
            headers["Idempotency-Key"] = key
        if admin:
            headers["Authorization"] = "Bearer " + ADMIN
        rec = dict(type="op", client=self.name, gw=g.name, op=op, logical=logical,
                   attempt=attempt, args=args or {}, start=time.time(), end=None, status=None,
                   retry_after=None, error=None, body=None)
        conn = http.client.HTTPConnection("127.0.0.1", g.port,
                                          timeout=(REQUEST_TIMEOUT_MS + extra_ms) / 1000.0 + 10)
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
            rec["status"] = resp.status
            rec["retry_after"] = resp.getheader("Retry-After")
            try:
                rec["body"] = json.loads(raw) if raw else None
            except ValueError:
                rec["body"] = raw.decode(errors="replace")[:500]
        except socket.timeout:
            rec["error"] = "timeout"
        except (OSError, http.client.HTTPException) as e:
            rec["error"] = "conn"
            rec["body"] = type(e).__name__
        finally:
            conn.close()
        rec["end"] = time.time()
        if rec["logical"] is None:
            rec["logical"] = "%s-%d" % (self.name, self.n)
            self.n += 1
        return self.ctx["hist"].add(rec)

    def retried(self, op, method, path, body=None, args=None, key=None, extra_ms=0, tries=8):
        """One logical operation: retried with the same key while its outcome is unknown."""
        logical = "%s-%d" % (self.name, self.n)
        self.n += 1
        gw = self.rng.randrange(len(self.ctx["gateways"]))
        for attempt in range(tries):
            r = self.call(op, method, path, body, args, logical, attempt, key, gw,
                          extra_ms=extra_ms)
            if not check.unknown_outcome(r):
                return r
            if r["error"] == "conn":
                gw = 1 - gw  # that instance may be down: the other one
            try:
                wait = float(r.get("retry_after") or 0.2)
            except ValueError:
                wait = 0.2
            time.sleep(min(1.0, wait) * self.rng.uniform(0.5, 1.0))
            if time.time() > self.ctx["hard_stop"]:
                break
        return r

    # The operations.

    def purchase(self):
        vs = self.ctx["hot"]()
        v = self.rng.choice(vs)
        user = self.rng.randrange(self.ctx["users"])
        key = "%s-buy-%d" % (self.name, self.n)
        self.retried("purchase", "POST", "/v1/seckill/vouchers/%s/orders" % v,
                     {"user_id": user}, dict(voucher=v, user=user, key=key), key=key)

    def lock_cycle(self):
        name = "L%d" % self.rng.randrange(3)
        ttl = self.rng.randrange(500, 2000)
        owner = self.name
        r = self.retried("lock_acquire", "POST", "/v1/locks/" + name,
                         {"owner": owner, "ttl_ms": ttl, "wait_ms": 300},
                         dict(lock=name, owner=owner, ttl_ms=ttl), extra_ms=10_000)
        if r["status"] != 200:
            return
        token = r["body"]["token"]
        self.ctx["register"].write(self.name, name, owner, token)
        time.sleep(self.rng.uniform(0, ttl / 2000.0))
        if self.rng.random() < 0.5:
            r = self.retried("lock_renew", "POST", "/v1/locks/%s/renew" % name,
                             {"owner": owner, "token": token, "ttl_ms": ttl},
                             dict(lock=name, owner=owner, token=token, ttl_ms=ttl))
            if r["status"] != 200:
                return
            self.ctx["register"].write(self.name, name, owner, r["body"]["token"])
            time.sleep(self.rng.uniform(0, ttl / 2000.0))
        self.retried("lock_release", "DELETE", "/v1/locks/%s?%s" % (name, urllib.parse.urlencode(
            dict(owner=owner, token=token))), None, dict(lock=name, owner=owner, token=token))

    def enqueue(self):
        q = self.rng.choice(self.ctx["queues"])
        jid = "%s-j%d" % (self.name, self.n)
        self.retried("enqueue", "POST", "/v1/queues/%s/jobs" % q,
                     {"id": jid, "payload": {"by": self.name},
                      "max_attempts": self.rng.choice([3, 10])},
                     dict(queue=q, id=jid), key=jid)

    def claim_ack(self, q=None, visibility=2000, wait=300, skip=0.1, max_jobs=3):
        q = q or self.rng.choice(self.ctx["queues"])
        r = self.call("claim", "POST", "/v1/queues/%s/claim" % q,
                      {"max": max_jobs, "visibility_ms": visibility, "wait_ms": wait},
                      dict(queue=q, visibility_ms=visibility), extra_ms=20_000)
        if r["status"] != 200:
            return 0
        jobs = r["body"].get("jobs", [])
        for j in jobs:
            if self.rng.random() < skip:
                continue  # let its visibility lapse: delivered again
            # Under a key, a retry of an ack whose answer was lost is told whether the first
            # took effect (204 replayed) or not (409: the claim lapsed).
            key = "%s-ack-%d" % (self.name, self.n)
            self.retried("ack", "POST", "/v1/queues/%s/jobs/%s/ack" % (q, j["id"]),
                         {"receipt": j["receipt"]}, dict(queue=q, id=j["id"],
                                                         receipt=j["receipt"], key=key), key=key)
        return len(jobs)

    def ratelimit(self):
        k = "rl%d" % self.rng.randrange(4)
        key = "%s-rl-%d" % (self.name, self.n)
        self.retried("ratelimit", "POST", "/v1/ratelimit/check",
                     {"key": k, "max_burst": 3, "count_per_period": 2, "period": 1},
                     dict(key=k, max_burst=3, count_per_period=2, period=1), key=key)

    def uv(self):
        page = "page%d" % self.rng.randrange(3)
        key = "%s-uv-%d" % (self.name, self.n)
        self.retried("uv", "POST", "/v1/uv/" + page, {"visitor": "v%d" % self.rng.randrange(500)},
                     dict(page=page), key=key)

    def checkin(self):
        u = self.rng.randrange(1000)
        self.retried("checkin", "POST", "/v1/checkins/%d" % u, None, dict(user=u))

    def loop(self):
        ops = [(self.purchase, 35), (self.lock_cycle, 12), (self.enqueue, 18),
               (self.claim_ack, 18), (self.ratelimit, 7), (self.uv, 5), (self.checkin, 5)]
        fns, weights = zip(*ops)
        while time.time() < self.ctx["stop"]:
            try:
                self.rng.choices(fns, weights)[0]()
            except Exception as e:  # noqa: BLE001 - a workload bug must not end the run silently
                log("client %s: %r" % (self.name, e))
                time.sleep(0.1)


# ---------------------------------------------------------------------------------------------
# Faults


class Faults:
    def __init__(self, ctx, hist):
        self.ctx, self.hist = ctx, hist
        self.busy = set()
        self.lock = threading.Lock()
        self.threads = []

    def inject(self, start, kind, target, duration):
        t = threading.Thread(target=self._one, args=(start, kind, target, duration), daemon=True)
        t.start()
        self.threads.append(t)

    def _claim(self, key):
        with self.lock:
            if key in self.busy:
                return False
            self.busy.add(key)
            return True

    def _free(self, key):
        with self.lock:
            self.busy.discard(key)

    def _one(self, at, kind, target, duration):
        cl, gws, pg = self.ctx["cluster"], self.ctx["gateways"], self.ctx["pg"]
        rec = dict(type="fault", kind=kind, target=target, scheduled=at, duration=duration,
                   node=None, start=time.time(), end=None, note=None)
        try:
            if kind in ("redis_kill", "redis_pause"):
                role, shard = target.split(":")
                node = cl.resolve(role, int(shard))
                if node is None or not self._claim(node.port):
                    rec["note"] = "skipped: no such node now, or it is under another fault"
                    return
                rec["node"] = node.port
                rec["start"] = time.time()
                try:
                    if kind == "redis_kill":
                        node.kill()
                        time.sleep(duration)
                        node.start()
                    else:
                        node.pause()
                        time.sleep(duration)
                        node.resume()
                finally:
                    self._free(node.port)
            elif kind == "failover":
                node = cl.resolve("replica", int(target.split(":")[1]))
                if node is None or not self._claim(node.port):
                    rec["note"] = "skipped: no replica now, or it is under another fault"
                    return
                try:
                    rec["node"] = node.port
                    rec["start"] = time.time()
                    out = node.cli("CLUSTER", "FAILOVER")
                    rec["note"] = (out or "no answer").strip()
                finally:
                    self._free(node.port)
            elif kind == "gateway_kill":
                g = next(g for g in gws if g.name == target)
                if not self._claim(g.name):
                    rec["note"] = "skipped: already down"
                    return
                rec["node"] = g.port
                rec["start"] = time.time()
                try:
                    g.kill()
                    time.sleep(duration)
                    g.start()
                finally:
                    self._free(g.name)
            elif kind == "partition":
                gname, role = target.split("|")
                node = cl.resolve("master", int(role.split(":")[1]))
                if not in_netns():
                    rec["note"] = "skipped: not in a private network namespace (needs root)"
                    return
                if node is None or not self._claim((gname, node.port)):
                    rec["note"] = "skipped: no master now, or already partitioned"
                    return
                rec["node"] = node.port
                with self.lock:
                    self.n = getattr(self, "n", 0) + 1
                    table = "chaos_%d" % self.n
                rec["start"] = time.time()
                try:
                    nft = lambda *a: subprocess.run(["nft", *a], check=True,  # noqa: E731
                                                    capture_output=True)
                    nft("add", "table", "inet", table)
                    nft("add", "chain", "inet", table, "out",
                        "{ type filter hook output priority 0; }")
                    # Dropped, not refused: the gateway's packets to that master vanish.
                    nft("add", "rule", "inet", table, "out", "meta", "skgid", str(GIDS[gname]),
                        "tcp", "dport", str(node.port), "drop")
                    time.sleep(duration)
                finally:
                    subprocess.run(["nft", "delete", "table", "inet", table], capture_output=True)
                    self._free((gname, node.port))
            elif kind == "pg_stop":
                if pg is None or not self._claim("pg"):
                    rec["note"] = "skipped"
                    return
                rec["start"] = time.time()
                try:
                    pg.stop()
                    time.sleep(duration)
                    pg.start()
                finally:
                    self._free("pg")
        except Exception as e:  # noqa: BLE001
            rec["note"] = "error: %r" % e
        finally:
            rec["end"] = time.time()
            self.hist.add(rec)

    def join(self, seconds):
        deadline = time.time() + seconds
        for t in self.threads:
            t.join(max(0.1, deadline - time.time()))


# ---------------------------------------------------------------------------------------------
# The run


def paged(client, op, path, key):
    """Every item of a paged list, through retries; None when it could not be read."""
    items, after = [], None
    for _ in range(1000):
        q = "?limit=100" + ("&after=" + urllib.parse.quote(after) if after else "")
        r = None
        for attempt in range(20):
            r = client.call(op, "GET", path + q, args=dict(path=path), admin=True, gw=0)
            if r["status"] == 200:
                break
            time.sleep(0.5)
        if r["status"] != 200:
            return None
        items += r["body"].get(key, [])
        after = r["body"].get("next")
        if not after:
            return items
    return items


def run(args, sched, quiet):
    binary = args.gateway or os.path.join(os.environ.get("CARGO_TARGET_DIR") or os.path.join(
        ROOT, "target"), "release", "redis-gateway")
    if not os.access(binary, os.X_OK):
        raise SystemExit("chaos: no gateway binary at %s (build it, or give --gateway)" % binary)
    logdir = args.keep or tempfile.mkdtemp(prefix="gateway-chaos-")
    os.makedirs(logdir, exist_ok=True)
    hist = History(os.path.join(logdir, "history.jsonl"))
    log("seed %d, %s min, %d faults scheduled; history and logs in %s" % (
        args.seed, args.minutes, len(sched), logdir))
    log("replay: %s --seed %d --minutes %s%s" % (
        "./scripts/chaos", args.seed, args.minutes, " --no-ledger" if args.no_ledger else ""))
    cluster = pg = None
    gws = []
    try:
        cluster = Cluster(logdir, args.node_timeout_ms)
        if not args.no_ledger:
            pg = Postgres(logdir)
            pg.start()
        gws = [Gateway("g%d" % i, binary, logdir, cluster.url(), pg.url() if pg else None)
               for i in range(2)]
        for g in gws:
            g.start()
        for g in gws:
            wait_until(g.ready, 60, "gateway %s (log %s/%s.log)" % (g.name, logdir, g.name))
        total = args.minutes * 60.0
        t0 = time.time()
        ctx = dict(gateways=gws, hist=hist, cluster=cluster, pg=pg, users=40,
                   queues=["q0", "q1"], stop=t0 + total - quiet, hard_stop=t0 + total)
        ctx["register"] = Register(hist)
        # Vouchers: K of them, each hot for a slice of the fault window: 10 in a 3-minute run,
        # more in a longer one, so each still sells out under faults rather than early on.
        k = max(10, int(args.minutes * 10 / 3))
        vouchers = {}
        admin = Client("admin", ctx, args.seed)
        now = time.time()
        fmt = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))  # noqa: E731
        for i in range(k):
            vid = "v%d" % i
            stock, limit = 30, (1 if i % 3 == 0 else 2)
            for _ in range(30):
                r = admin.call("voucher_put", "PUT", "/v1/seckill/vouchers/" + vid,
                               {"stock": stock, "begin": fmt(now - 60),
                                "end": fmt(now + total + 3600), "per_user_limit": limit},
                               dict(voucher=vid), admin=True, gw=0)
                if r["status"] in (200, 201):
                    break
                time.sleep(0.5)
            else:
                raise RuntimeError("could not create voucher %s: %r" % (vid, r))
            vouchers[vid] = dict(stock=stock, per_user_limit=limit)
        window = max(1.0, total - quiet)

        def hot():
            i = min(k - 1, int((time.time() - t0) / window * k))
            return ["v%d" % j for j in range(max(0, i - 1), i + 1)]

        ctx["hot"] = hot
        hist.add(dict(type="meta", seed=args.seed, minutes=args.minutes, vouchers=vouchers,
                      request_timeout_ms=REQUEST_TIMEOUT_MS, ledger=pg is not None,
                      node_timeout_ms=args.node_timeout_ms, t0=t0, quiet_s=quiet,
                      schedule=sched, gateways={g.name: g.port for g in gws},
                      policies=[POLICY],
                      nodes=[n.port for n in cluster.nodes]))
        clients = [Client("c%d" % i, ctx, args.seed * 1000 + i) for i in range(args.clients)]
        threads = [threading.Thread(target=c.loop, daemon=True) for c in clients]
        for t in threads:
            t.start()
        faults = Faults(ctx, hist)
        for start, kind, target, duration in sched:
            delay = t0 + start - time.time()
            if delay > 0:
                time.sleep(delay)
            log("t=%6.1fs %s %s %s" % (time.time() - t0, kind, target,
                                       ("for %.1fs" % duration) if duration else ""))
            faults.inject(start, kind, target, duration)
        faults.join(60)
        for t in threads:
            t.join(max(0.1, ctx["stop"] + 30 - time.time()))
        log("t=%6.1fs workload stopped; quiet period" % (time.time() - t0))
        # The quiet period: every fault healed; the gateways must recover on their own.
        quiet_end = t0 + total
        probe = Client("probe", ctx, 1)
        while time.time() < quiet_end:
            for i in range(len(gws)):
                probe.call("uv", "POST", "/v1/uv/quiet", {"visitor": "probe"},
                           dict(page="quiet"), gw=i)
            time.sleep(0.5)
        try:
            wait_until(cluster.healthy, 30, "the cluster healthy again")
        except RuntimeError as e:
            log(str(e))
        # Drain the queues: every job enqueued is acked or dead by the end.
        drain = Client("drain", ctx, 2)
        ctx["hard_stop"] = time.time() + 60
        for q in ctx["queues"]:
            idle_since = None
            deadline = time.time() + 45
            while time.time() < deadline:
                n = drain.claim_ack(q, visibility=1000, wait=0, skip=0.0, max_jobs=100)
                if n:
                    idle_since = None
                    continue
                idle_since = idle_since or time.time()
                if time.time() - idle_since > 3:  # past a visibility window of nothing
                    break
                time.sleep(0.3)
            jobs = paged(drain, "dead", "/v1/queues/%s/dead" % q, "jobs")
            if jobs is not None:
                hist.add(dict(type="final", what="dead", queue=q, jobs=[j["id"] for j in jobs]))
        # Final orders, and the ledger once it caught up.
        total_orders = 0
        for vid in vouchers:
            orders = paged(drain, "orders", "/v1/seckill/vouchers/%s/orders" % vid, "orders")
            if orders is not None:
                total_orders += len(orders)
                hist.add(dict(type="final", what="orders", voucher=vid, orders=[
                    dict(order_id=o["order_id"], user_id=o["user_id"]) for o in orders]))
        if pg is not None:
            rows = None
            deadline = time.time() + 60
            while time.time() < deadline:
                rows = pg.rows()
                if rows is not None and len(rows) >= total_orders:
                    break
                time.sleep(1)
            if rows is not None:
                hist.add(dict(type="final", what="pg", rows=rows))
    finally:
        for g in gws:
            g.kill()
        if cluster:
            for n in cluster.nodes:
                n.kill()
        if pg:
            pg.stop()
            shutil.rmtree(pg.dir, ignore_errors=True)
        hist.close()
    return summarize(hist.records, logdir)


def recovery(records):
    """Worst time from a fault's end (the last one active) to the end of the last failed
    request before the next fault began: (seconds, fault)."""
    faults = sorted((r for r in records if r.get("type") == "fault" and r.get("end")),
                    key=lambda r: r["start"])
    fails = sorted((r["end"], r) for r in records if r.get("type") == "op"
                   and (check.unknown_outcome(r) or (r["status"] or 0) >= 500))
    worst = (0.0, None)
    for f in faults:
        if any(g is not f and g["start"] <= f["end"] < g["end"] for g in faults):
            continue  # another fault still active when this one ended
        nxt = min([g["start"] for g in faults if g["start"] > f["end"]] + [float("inf")])
        last = [e for e, r in fails if r["start"] >= f["end"] - 0.001 and e < nxt]
        rec = (max(last) - f["end"]) if last else 0.0
        if rec > worst[0]:
            worst = (rec, f)
    return worst


def summarize(records, logdir):
    ops = [r for r in records if r.get("type") == "op"]
    meta = next((r for r in records if r.get("type") == "meta"), {})
    print()
    print("chaos run: seed %s, %s min, history %s" % (meta.get("seed"), meta.get("minutes"),
                                                      os.path.join(logdir, "history.jsonl")))
    print("operations (requests, by answer):")
    by = collections.defaultdict(collections.Counter)
    for o in ops:
        by[o["op"]][str(o["status"]) if o["status"] is not None else o["error"]] += 1
    for kind in sorted(by):
        print("  %-13s %6d  %s" % (kind, sum(by[kind].values()), ", ".join(
            "%s %d" % kv for kv in sorted(by[kind].items()))))
    faults = [r for r in records if r.get("type") == "fault"]
    fk = collections.Counter(r["kind"] for r in faults if not r.get("note", "") or not
                             r["note"].startswith("skipped"))
    skipped = sum(1 for r in faults if (r.get("note") or "").startswith("skipped"))
    print("faults injected: %d (%s); skipped %d (target busy or absent)" % (
        sum(fk.values()), ", ".join("%s %d" % kv for kv in sorted(fk.items())), skipped))
    worst, f = recovery(records)
    if f:
        print("worst recovery: %.2f s after %s %s ended at t=%.1fs" % (
            worst, f["kind"], f["target"], f["end"] - meta.get("t0", 0)))
    else:
        print("worst recovery: 0 s (no failed request after a fault ended)")
    c = check.check(records)
    check.report(c)
    return 1 if c.violations else 0
