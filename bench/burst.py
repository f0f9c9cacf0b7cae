"""The sale burst: a voucher with stock 1,000 and 200 connections of distinct
buyers buying until it is sold out, on a single Redis and on a 3-master Redis Cluster, each with
its own gateway (and, when PostgreSQL is installed, the order ledger on).

Each burst checks what a flash sale must get right — exactly 1,000 sold, every sale listed once
in the voucher's orders (1,000 distinct buyers, the order ids the purchases answered), and with
the ledger on every order in `seckill_orders` once — and measures the p99 of the 201s.

The client is bench/burst_client.rs (built with `cargo build --release --example
burst_client`, one Tokio thread): all 200 connections are open before the first request, each
sends its next purchase when its answer comes (closed loop, as wrk), and a request's latency
runs from its write to the last byte of its answer. wrk cannot stop at sold out or time the
201s apart from the refusals that follow; a first client in Python spent more time per request
than the gateway, and its own queueing doubled the p99.
"""

import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

import harness
import seeds

STOCK = 1_000
CONNECTIONS = 200
P99_GOAL_MS = 20.0


# ---------------------------------------------------------------------------------------------
# The stores


def cluster_port():
    """A free port a Cluster node can use: its bus listens 10,000 higher, so at most 55,535."""
    while True:
        port = harness.free_port()
        if port > 55_535:
            continue
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 10_000))
            return port
        except OSError:
            continue


def redis_server(procs, logdir, name, extra=(), port=None):
    port = port or harness.free_port()
    d = os.path.join(logdir, name)
    os.makedirs(d, exist_ok=True)
    procs.start(name, ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                       "--appendonly", "no", "--dir", d, *extra])
    r = harness.Redis(port)
    harness.wait_until(lambda: r.cli("PING") == "PONG", 10, name)
    return port


def cluster(procs, logdir):
    """Three masters, no replicas (as tests/common/mod.rs's RedisCluster); the gateway's URL."""
    ports = [redis_server(procs, logdir, "burst-cluster-%d" % i,
                          ("--cluster-enabled", "yes", "--cluster-node-timeout", "3000",
                           "--cluster-config-file", "nodes.conf"), cluster_port())
             for i in range(3)]
    r = subprocess.run(["redis-cli", "--cluster", "create"] +
                       ["127.0.0.1:%d" % p for p in ports] +
                       ["--cluster-replicas", "0", "--cluster-yes"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("redis-cli --cluster create failed:\n" + r.stdout + r.stderr)
    harness.wait_until(lambda: all("cluster_state:ok" in harness.Redis(p).cli("CLUSTER", "INFO")
                                   for p in ports), 30, "the burst's Redis Cluster")
    return "redis-cluster://127.0.0.1:%d?%s" % (
        ports[0], "&".join("node=127.0.0.1:%d" % p for p in ports[1:]))


def pg_bin():
    """Where initdb and friends live: /usr/lib/postgresql/<newest>/bin, else PATH; None."""
    try:
        versions = sorted((int(v), v) for v in os.listdir("/usr/lib/postgresql") if v.isdigit())
    except OSError:
        versions = []
    for _, v in reversed(versions):
        d = os.path.join("/usr/lib/postgresql", v, "bin")
        if os.path.exists(os.path.join(d, "initdb")):
            return d
    found = shutil.which("initdb")
    return os.path.dirname(found) if found else None


DIRS = []  # PostgreSQL's directories, removed by cleanup() once it is stopped


def cleanup():
    while DIRS:
        shutil.rmtree(DIRS.pop(), ignore_errors=True)


class Postgres:
    """A private PostgreSQL (trust authentication, no fsync), as tests/common/postgres.rs starts
    one: PostgreSQL refuses to run as root, so then it runs as the `postgres` user."""

    def __init__(self, procs, logdir):
        self.bin = pg_bin()
        if not self.bin:
            raise RuntimeError("PostgreSQL is not installed (no initdb)")
        self.as_postgres = os.geteuid() == 0
        # Not under the run's log directory, which only its owner may enter.
        self.dir = tempfile.mkdtemp(prefix="gateway-bench-pg-")
        DIRS.append(self.dir)
        if self.as_postgres:
            subprocess.run(["chown", "-R", "postgres:postgres", self.dir], check=True)
        data = os.path.join(self.dir, "data")
        r = subprocess.run(self.cmd("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E",
                                    "UTF8", "--no-sync"), capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("initdb failed: " + r.stderr)
        self.port = harness.free_port()
        procs.start("postgres", self.cmd(
            "postgres", "-D", data, "-p", str(self.port), "-k", self.dir,
            "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
            "-c", "synchronous_commit=off", "-c", "full_page_writes=off"))
        harness.wait_until(lambda: subprocess.run(
            self.cmd("pg_isready", "-h", "127.0.0.1", "-p", str(self.port), "-q")).returncode == 0,
            30, "PostgreSQL")

    def cmd(self, name, *args):
        argv = [os.path.join(self.bin, name), *args]
        return ["runuser", "-u", "postgres", "--"] + argv if self.as_postgres else argv

    def sql(self, db, query):
        r = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                            "-d", db, "-tAc", query], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("psql: " + r.stderr)
        return r.stdout.strip()

    def database(self, name):
        self.sql("postgres", "CREATE DATABASE %s" % name)
        return "postgres://postgres@127.0.0.1:%d/%s" % (self.port, name)


# ---------------------------------------------------------------------------------------------
# The client


def run_client(client, port, voucher, first_user):
    """bench/burst_client.rs's answers: [(status, ms, user, body)], and the burst's length."""
    t0 = time.perf_counter()
    r = subprocess.run([client, str(port), voucher, str(first_user), str(CONNECTIONS)],
                       capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError("burst_client failed: " + r.stderr)
    out = []
    for line in r.stdout.splitlines():
        status, us, user, body = line.split(" ", 3)
        try:
            answer = json.loads(body)
        except ValueError:
            answer = {}
        out.append((int(status), int(us) / 1000, int(user), answer))
    return out, seconds


# ---------------------------------------------------------------------------------------------
# One burst and its checks


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None


def orders(gw, voucher):
    out, after = [], None
    while True:
        path = "/v1/seckill/vouchers/%s/orders?limit=1000" % voucher
        if after:
            path += "&after=" + after
        st, _, body = gw.call("GET", path, admin=True)
        if st != 200:
            raise RuntimeError("listing orders answered %s: %s" % (st, body))
        out += body["orders"]
        after = body.get("next")
        if not after:
            return out


def one_burst(client, gw_port, voucher, first_user, pg=None, db=None):
    gw = harness.Http(gw_port)
    now = time.time()
    st, _, body = gw.call("PUT", "/v1/seckill/vouchers/%s" % voucher, dict(
        stock=STOCK, begin=seeds.rfc3339(now - 3600), end=seeds.rfc3339(now + 86400),
        per_user_limit=1), admin=True)
    if st not in (200, 201):
        raise RuntimeError("creating voucher %s answered %s: %s" % (voucher, st, body))
    out, seconds = run_client(client, gw_port, voucher, first_user)
    sales = [o for o in out if o[0] == 201]
    refusals = [o for o in out if o[0] == 409 and o[3].get("code") == "sold_out"]
    problems = []
    other = len(out) - len(sales) - len(refusals)
    if other:
        problems.append("%d answers neither 201 nor 409 sold_out (first: %s %s)" % (
            other, *next((o[0], o[3]) for o in out if o not in sales and o not in refusals)))
    if len(sales) != STOCK:
        problems.append("%d purchases answered 201, not %d" % (len(sales), STOCK))
    st, _, v = gw.call("GET", "/v1/seckill/vouchers/%s" % voucher)
    if st != 200 or v.get("sold") != STOCK or v.get("stock") != 0:
        problems.append("the voucher says %s %s, not sold %d, stock 0" % (st, v, STOCK))
    listed = orders(gw, voucher)
    users = [o["user_id"] for o in listed]
    ids = {o["order_id"] for o in listed}
    if len(listed) != STOCK or len(set(users)) != STOCK:
        problems.append("%d orders listed, %d distinct buyers (want %d of each)" % (
            len(listed), len(set(users)), STOCK))
    if set(users) != {o[2] for o in sales} or ids != {o[3].get("order_id") for o in sales}:
        problems.append("the orders listed are not the purchases answered 201")
    ledger = None
    if pg:
        # The ingester copies orders from the voucher's stream: wait until they are all in.
        deadline, count = time.time() + 60, (0, 0)
        while time.time() < deadline:
            row = pg.sql(db, "SELECT count(*), count(DISTINCT user_id) FROM seckill_orders "
                             "WHERE voucher_id = '%s'" % voucher)
            count = tuple(int(x) for x in row.split("|"))
            if count[0] >= STOCK:
                break
            time.sleep(0.2)
        got = pg.sql(db, "SELECT order_id FROM seckill_orders WHERE voucher_id = '%s'" % voucher)
        ledger = count[0] == STOCK and count[1] == STOCK and set(got.split()) == ids
        if not ledger:
            problems.append("the ledger holds %d orders of %d distinct buyers, not the %d sold"
                            % (count[0], count[1], STOCK))
    lat = [o[1] for o in sales]
    return dict(lat=lat, p50=percentile(lat, 0.5), p99=percentile(lat, 0.99), max=max(lat or [0]),
                seconds=seconds, sold=len(sales), refused=len(refusals), listed=len(listed),
                ledger=ledger, problems=problems)


# ---------------------------------------------------------------------------------------------


def measure(procs, logdir, gateway, base_env, args):
    """`args.runs` + 2 bursts on each store, alternating; {store: [burst]} and a note on the
    ledger."""
    client = os.path.join(os.path.dirname(gateway), "examples", "burst_client")
    pg, note = None, None
    try:
        if os.environ.get("BENCH_BURST_LEDGER") == "off":
            raise RuntimeError("BENCH_BURST_LEDGER=off")
        pg = Postgres(procs, logdir)
    except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
        note = "ledger not checked: %s" % e
    stores = {"single Redis": "redis://127.0.0.1:%d" % redis_server(procs, logdir, "burst-redis"),
              "3-master Cluster": cluster(procs, logdir)}
    gws = {}
    for i, (store, url) in enumerate(stores.items()):
        port = harness.free_port()
        env = dict(base_env, REDIS_URL=url, GATEWAY_LISTEN="127.0.0.1:%d" % port,
                   GATEWAY_GLOBAL_LIMIT="off")
        db = None
        if pg:
            db = "burst%d" % i
            env["DATABASE_URL"] = pg.database(db)
        name = "gateway-burst-%d" % i
        procs.start(name, [gateway], env=env)
        harness.wait_until(lambda: harness.Http(port).call("GET", "/readyz")[0] == 200, 30,
                           "%s (log: %s)" % (name, procs.log_tail(name)))
        gws[store] = (port, db)
    out = {s: [] for s in stores}
    user = 1_000_000
    # A first burst on each, not reported: a fresh gateway's first purchases load its scripts
    # and open its connections, which a sale on a serving gateway does not pay.
    for store, (port, _) in gws.items():
        user += 100_000
        one_burst(client, port, "burst-warm-up", user)
    # Two more bursts than alternations elsewhere: a burst's p99 is its 10th-slowest sale.
    for i in range(args.runs + 2):
        for store, (port, db) in gws.items():
            user += 100_000
            b = one_burst(client, port, "burst-%d" % i, user, pg, db)
            harness.log("burst, %s, run %d/%d: %d sold, p99 %.2f ms%s" % (
                store, i + 1, args.runs + 2, b["sold"], b["p99"] or 0,
                "; " + "; ".join(b["problems"]) if b["problems"] else ""))
            out[store].append(b)
    return out, note


def report(results, note):
    """Markdown lines, goals [(text, ok)] and failures of the sale-burst section."""
    lines = ["## Sale burst (stock 1,000, 200 connections)", "",
             "A voucher with stock {0:,}, per-user limit 1; {1} connections, all open before the "
             "first purchase, each buying for a new user as soon as its last answer came, until "
             "it is answered `409 sold_out` (`bench/burst.py`, its client `bench/burst_client.rs`). "
             "Each store "
             "has its own gateway (global layer off) and, when PostgreSQL is installed, the "
             "order ledger on. Checked every burst: exactly {0:,} answered 201, the voucher says "
             "`sold` {0} and `stock` 0, its orders listing holds {0:,} orders of {0:,} distinct "
             "buyers — the purchases answered 201, each once — and the ledger the same {0:,} "
             "order ids. "
             "Latency runs from a request's write to its answer's last byte, on the client. Goal: p99 of the "
             "201s ≤ {2:g} ms.".format(STOCK, CONNECTIONS, P99_GOAL_MS), "",
             "| store | bursts | sold / listed, each burst | ledger | 201 p50 / p99 / max ms "
             "(every burst's 201s together) | p99 of each burst | burst length (median) |",
             "|---|---:|---|---|---:|---|---:|"]
    goals, failures = [], []
    for store, bursts in results.items():
        seconds = statistics.median(b["seconds"] for b in bursts)
        lat = [x for b in bursts for x in b["lat"]]
        p50, p99 = percentile(lat, 0.5), percentile(lat, 0.99)
        ok = all(not b["problems"] for b in bursts)
        ledger = "off" if bursts[0]["ledger"] is None else (
            "✓ every order once" if all(b["ledger"] for b in bursts) else "**MISSING**")
        lines.append("| %s | %d | %s | %s | %.2f / %.2f / %.2f | %s | %.0f ms |" % (
            store, len(bursts), ", ".join("%d / %d" % (b["sold"], b["listed"]) for b in bursts),
            ledger, p50, p99, max(lat), ", ".join("%.2f" % b["p99"] for b in bursts),
            seconds * 1000))
        goals.append(("sale burst, %s: exactly %d sold, each listed once%s, every burst" % (
            store, STOCK, "" if ledger == "off" else " and in the ledger"), ok))
        goals.append(("sale burst, %s: p99 of the 201s %.2f ms, %d bursts together (goal ≤ %g ms)"
                      % (store, p99, len(bursts), P99_GOAL_MS), p99 <= P99_GOAL_MS))
        for b in bursts:
            failures += ["sale burst, %s: %s" % (store, p) for p in b["problems"]]
    lines.append("")
    if note:
        lines += ["Note: " + note, ""]
    return lines, goals, failures
