#!/usr/bin/env python3
"""The benchmark harness behind ./scripts/bench (standard library only).

Starts a private redis-server (no persistence) and the release gateway on free loopback ports,
seeds data, then for each row alternates a wrk run against the gateway endpoint with a
redis-benchmark run of the raw Redis command(s) it maps to (same connection count, no
pipelining). Each side's throughput, p50 and p99 are the medians over the alternations; the
table shows gateway / raw. Endpoints that answer 404/405 (not merged yet) are shown as n/a,
with the raw side measured once so every reference command is still exercised.
"""

import argparse
import csv
import datetime
import http.client
import io
import json
import os
import platform
import random
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Where ./scripts/bench's `cargo build --release` put the binary (the floor and the burst client
# are in examples/ beside it).
GATEWAY = os.path.join(os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target"),
                       "release", "redis-gateway")
BENCH = os.path.join(ROOT, "bench")
ADMIN_TOKEN = "bench-admin-token"
PREFIX = "gw:"
GEO_POINTS = 100_000
GEO_CENTER = (116.40, 39.90)
SECKILL_STOCK = 50_000_000
QUEUE_JOBS = 200_000  # seeded for the claim+ack row (it drains them)
QUEUE_PAYLOAD = '{"to":"user@example.com","template":"welcome","locale":"en"}'

# ---------------------------------------------------------------------------------------------
# Rows. `raw` is the redis-benchmark command; `{sha:x}` is the SHA of bench/lua/x.lua.
# `keyspace` is redis-benchmark's -r (each __rand_int__ becomes a 12-digit number below it).
# The raw side is information: what the same Redis work costs sent bare. The throughput
# targets against it are retired; a row's goals today are against its peer or the
# floor (bench/peers.py), and `p99_ms` (the cheap rows) here.

ROWS = [
    dict(id="checkin", label="check-in `POST /v1/checkins/{user}`", scenario="checkin",
         probe=("POST", "/v1/checkins/1", None), expect=200,
         raw=["SETBIT", "bench:ck:__rand_int__", "5", "1"], keyspace=1_000_000, p99_ms=5.0,
         cheap=True),
    dict(id="uv", label="UV `POST /v1/uv/{page}` (1 visitor)", scenario="uv",
         probe=("POST", "/v1/uv/bench", {"visitor": "probe"}), expect=200,
         raw=["PFADD", "bench:uv", "v__rand_int__"], keyspace=1_000_000, p99_ms=5.0,
         cheap=True),
    # The UV add again, over HTTP/2 (h2c) with h2load: fewer connections, many streams each,
    # as a load balancer or a mobile client multiplexes. Every request carries the same
    # visitor (h2load sends one body), so Redis's PFADD changes nothing after the first.
    # Its goal: no more gateway CPU per request than the HTTP/1.1 UV row.
    dict(id="uv_h2", label="UV add over h2 (h2load, 10 connections × 20 streams)",
         scenario="uv", h2_streams=20, conns=10,
         probe=("POST", "/v1/uv/bench", {"visitor": "probe"}), expect=200,
         raw=["PFADD", "bench:uv", "v__rand_int__"], keyspace=1_000_000, cpu_vs="uv"),
    dict(id="ratelimit", label="rate-limit `POST /v1/ratelimit/check`", scenario="ratelimit",
         probe=("POST", "/v1/ratelimit/check",
                {"key": "probe", "max_burst": 100, "count_per_period": 50, "period": 1}),
         expect=200,
         raw=["EVALSHA", "{sha:gcra}", "1", "bench:rl:__rand_int__", "100", "50", "1", "1"],
         keyspace=10_000, p99_ms=5.0, cheap=True),
    dict(id="seckill", label="seckill purchase `POST …/orders` (201)", scenario="seckill",
         probe=("POST", "/v1/seckill/vouchers/bench/orders", {"user_id": 4_000_000_000}),
         expect=201,
         raw=["EVALSHA", "{sha:seckill}", "4", "bench:sk", "bench:sk:buyers", "bench:sk:uo",
              "bench:sk:orders", "u__rand_int__"],
         keyspace=1_000_000_000),
    dict(id="seckill_soldout", label="seckill purchase, sold out (409)",
         scenario="seckill_soldout", probe=("POST", "/v1/seckill/vouchers/bench-soldout/orders",
                                            {"user_id": 424242}), expect=409,
         raw=["EVALSHA", "{sha:seckill}", "4", "bench:sk0", "bench:sk0:buyers", "bench:sk0:uo",
              "bench:sk0:orders", "u__rand_int__"],
         keyspace=1_000_000),
    dict(id="dedup", label="dedup `POST /v1/dedup/{f}/filter` (10 items)", scenario="dedup",
         probe=("POST", "/v1/dedup/bench/filter", {"items": ["probe"]}), expect=200,
         raw=["EVALSHA", "{sha:bloom}", "1", "bench:bf"] + ["news-__rand_int__"] * 10,
         keyspace=50_000),
    # Locks: an acquisition is SET NX PX (plus the fencing counter, in one script); a release
    # is the compare-and-delete script. The release row releases with a token nobody holds, so
    # both sides do the same GET-and-compare and delete nothing (409 lock_lost).
    dict(id="lock_acquire", label="lock acquire `POST /v1/locks/{name}`", scenario="lock_acquire",
         probe=("POST", "/v1/locks/bench-probe", {"owner": "bench", "ttl_ms": 1000}),
         expect=200, raw=["SET", "bench:lk:__rand_int__", "bench", "NX", "PX", "1000"],
         keyspace=1_000_000),
    dict(id="lock_release", label="lock release `DELETE /v1/locks/{name}` (not held, 409)",
         scenario="lock_release",
         probe=("DELETE", "/v1/locks/bench-probe?owner=bench&token=1", None), expect=409,
         raw=["EVALSHA", "{sha:unlock}", "1", "bench:lk:__rand_int__", "bench:1"],
         keyspace=1_000_000),
    dict(id="nearby", label="nearby, 100k dense points, 5 km, count 20", scenario="nearby",
         probe=("GET", "/v1/geo/bench/nearby?lon=116.40&lat=39.90&radius=5&unit=km"
                "&count=20&order=asc", None), expect=200,
         raw=["GEOSEARCH", "bench:geo:{dense}", "FROMLONLAT", "116.40", "39.90", "BYRADIUS",
              "5", "km", "ASC", "COUNT", "20"], keyspace=None),
    dict(id="enqueue", label="enqueue `POST /v1/queues/{q}/jobs`", scenario="enqueue",
         probe=("POST", "/v1/queues/bench/jobs", {"payload": {"probe": True}}), expect=201,
         raw=["EVALSHA", "{sha:enqueue}", "2", "bench:q:{e}:due", "bench:q:{e}:pay",
              "j__rand_int__", QUEUE_PAYLOAD], keyspace=1_000_000_000),
    dict(id="claim_ack", label="claim + ack (alternate requests)", scenario="claim_ack",
         probe=("POST", "/v1/queues/bench-claim/claim", {"visibility_ms": 60000}), expect=200,
         raw=["EVALSHA", "{sha:claim_ack}", "2", "bench:q:{c}:due", "bench:q:{c}:flight"],
         keyspace=None),
]


# ---------------------------------------------------------------------------------------------
# Parsing


def parse_rb_csv(text):
    """redis-benchmark --csv → {rps, p50, p99} (ms); None when no data row is present."""
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    if len(rows) < 2 or rows[0][:2] != ["test", "rps"]:
        return None
    head = rows[0]
    # The figures from the end of the row: the command's name comes first and is not escaped
    # (a JSON payload's quotes split it into several fields).
    data = dict(zip(head[1:], rows[-1][-(len(head) - 1):]))
    try:
        return dict(rps=float(data["rps"]), p50=float(data["p50_latency_ms"]),
                    p99=float(data["p99_latency_ms"]))
    except (KeyError, ValueError):
        return None


_UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}


def _ms(value, unit):
    return float(value) * _UNIT_MS[unit]


def parse_wrk(text):
    """wrk --latency text → {rps, p50, p99 (ms), requests, non2xx, socket_errors}."""
    out = dict(non2xx=0, socket_errors=0)
    m = re.search(r"^Requests/sec:\s+([\d.]+)", text, re.M)
    if not m:
        return None
    out["rps"] = float(m.group(1))
    m = re.search(r"^\s*(\d+) requests in", text, re.M)
    out["requests"] = int(m.group(1)) if m else 0
    for pct, key in (("50", "p50"), ("99", "p99")):
        m = re.search(r"^\s*%s(?:\.0+)?%%\s+([\d.]+)(us|ms|s|m|h)\s*$" % pct, text, re.M)
        if not m:
            return None
        out[key] = _ms(m.group(1), m.group(2))
    m = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    if m:
        out["non2xx"] = int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if m:
        out["socket_errors"] = sum(int(x) for x in m.groups())
    return out


# ---------------------------------------------------------------------------------------------
# Processes


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Procs:
    def __init__(self, logdir):
        self.logdir = logdir
        self.procs = []

    def start(self, name, argv, env=None):
        log = open(os.path.join(self.logdir, name + ".log"), "wb")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                             start_new_session=True)
        self.procs.append((name, p))
        return p

    def log_tail(self, name, lines=20):
        try:
            with open(os.path.join(self.logdir, name + ".log"), errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def stop_all(self):
        for _, p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for _, p in reversed(self.procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        self.procs = []


def wait_until(check, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if check():
                return
        except (OSError, subprocess.CalledProcessError):
            pass
        time.sleep(0.1)
    sys.exit("bench: %s did not come up within %ss" % (what, seconds))


class Http:
    def __init__(self, port):
        self.port = port

    def call(self, method, path, body=None, admin=False):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if admin:
            headers["Authorization"] = "Bearer " + ADMIN_TOKEN
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        conn.close()
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = raw.decode(errors="replace")
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, payload


class Redis:
    def __init__(self, port):
        self.port = port

    def cli(self, *args, stdin=None):
        r = subprocess.run(["redis-cli", "-p", str(self.port), *map(str, args)], input=stdin,
                           capture_output=True, text=True, check=True)
        return r.stdout.strip()

    def pipe(self, commands):
        """Sends many commands at once (redis-cli --pipe, RESP-encoded)."""
        buf = io.StringIO()
        for cmd in commands:
            buf.write("*%d\r\n" % len(cmd))
            for a in map(str, cmd):
                buf.write("$%d\r\n%s\r\n" % (len(a.encode()), a))
        r = subprocess.run(["redis-cli", "-p", str(self.port), "--pipe"], input=buf.getvalue(),
                           capture_output=True, text=True)
        if r.returncode != 0 or "errors: 0" not in r.stdout:
            sys.exit("bench: redis-cli --pipe failed: " + r.stdout + r.stderr)


# ---------------------------------------------------------------------------------------------
# Load generators


_TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid):
    """CPU seconds (user + system, all threads) a process has used so far."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (OSError, IndexError, ValueError):
        return 0.0


def children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


class CpuMeter:
    """CPU µs per request of each process around one load-generator run: where the two
    shared cores go (the load generator is the one child process that runs at the time)."""

    def __init__(self, pids):
        self.pids = pids
        self.before = {n: proc_cpu(p) for n, p in pids.items()}
        self.client = children_cpu()

    def per_request(self, requests):
        out = {n: proc_cpu(p) - self.before[n] for n, p in self.pids.items()}
        out["client"] = children_cpu() - self.client
        return {n: v * 1e6 / max(requests, 1) for n, v in out.items()}


PIDS = {}


def run_wrk(port, scenario, conns, threads, duration, base=0, extra_env=None):
    env = dict(os.environ, BENCH_SCENARIO=scenario, BENCH_BASE=str(base), **(extra_env or {}))
    argv = ["wrk", "-t", str(min(threads, conns)), "-c", str(conns), "-d", "%ss" % duration,
            "--timeout", "5s", "--latency", "-s", os.path.join(BENCH, "wrk.lua"),
            "http://127.0.0.1:%d" % port]
    meter = CpuMeter({"gateway": PIDS[port], "redis": PIDS["redis"]})
    r = subprocess.run(argv, capture_output=True, text=True, env=env)
    parsed = parse_wrk(r.stdout)
    if r.returncode != 0 or parsed is None:
        sys.exit("bench: wrk failed (%s):\n%s%s" % (" ".join(argv), r.stdout, r.stderr))
    parsed["cpu"] = meter.per_request(parsed["requests"])
    return parsed


def parse_h2load(text, log_file):
    """h2load's summary, and its per-request log for the percentiles (it prints none) →
    {rps, p50, p99 (ms), requests, non2xx, socket_errors}."""
    m = re.search(r"^finished in [\d.]+s, ([\d.]+) req/s", text, re.M)
    done = re.search(r"^requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded, "
                     r"(\d+) failed, (\d+) errored, (\d+) timeout", text, re.M)
    codes = re.search(r"^status codes: (\d+) 2xx", text, re.M)
    if not (m and done and codes):
        return None
    with open(log_file) as f:
        took = sorted(int(line.split("\t")[2]) for line in f if line.count("\t") == 2)
    if not took:
        return None

    def pct(p):
        return took[min(len(took) - 1, int(len(took) * p))] / 1000.0

    return dict(rps=float(m.group(1)), p50=pct(0.5), p99=pct(0.99),
                requests=int(done.group(2)), non2xx=int(done.group(2)) - int(codes.group(1)),
                socket_errors=sum(int(done.group(i)) for i in (4, 5, 6)))


def run_h2load(port, row, conns, threads, duration):
    """One h2load run of `row` (its probe's request, `h2_streams` streams per connection)."""
    method, path, body = row["probe"]
    with tempfile.TemporaryDirectory(prefix="gateway-h2load-") as tmp:
        body_file, log_file = os.path.join(tmp, "body.json"), os.path.join(tmp, "log")
        argv = ["h2load", "-c", str(conns), "-m", str(row["h2_streams"]),
                "-t", str(min(threads, conns)), "-D", str(duration),
                "--log-file", log_file, "http://127.0.0.1:%d%s" % (port, path)]
        if body is not None:
            with open(body_file, "w") as f:
                json.dump(body, f)
            argv[1:1] = ["-d", body_file, "-H", "content-type: application/json"]
        meter = CpuMeter({"gateway": PIDS[port], "redis": PIDS["redis"]})
        r = subprocess.run(argv, capture_output=True, text=True)
        parsed = parse_h2load(r.stdout, log_file)
    if r.returncode != 0 or parsed is None:
        sys.exit("bench: h2load failed (%s):\n%s%s" % (" ".join(argv), r.stdout, r.stderr))
    parsed["cpu"] = meter.per_request(parsed["requests"])
    return parsed


def run_rb(port, command, keyspace, conns, requests, threads):
    argv = ["redis-benchmark", "-p", str(port), "-c", str(conns), "-n", str(int(requests)),
            "--csv", "--precision", "3"]
    if threads > 1:
        argv += ["--threads", str(threads)]
    if keyspace:
        argv += ["-r", str(keyspace)]
    argv += command
    meter = CpuMeter({"redis": PIDS["redis"]})
    r = subprocess.run(argv, capture_output=True, text=True)
    parsed = parse_rb_csv(r.stdout)
    if r.returncode != 0 or parsed is None or "Error" in r.stdout + r.stderr:
        sys.exit("bench: redis-benchmark failed (%s):\n%s%s" % (" ".join(argv), r.stdout,
                                                                 r.stderr))
    parsed["cpu"] = meter.per_request(int(requests))
    return parsed


class Raw:
    """redis-benchmark counts requests, not seconds: size each run from the rate seen so far."""

    def __init__(self, args, port, shas):
        self.args, self.port, self.shas = args, port, shas

    def command(self, row):
        out = []
        for a in row["raw"]:
            m = re.fullmatch(r"\{sha:(\w+)\}", a)
            out.append(self.shas[m.group(1)] if m else a)
        return out

    def run(self, row, conns, rate_hint, seconds):
        n = max(2 * conns, min(5_000_000, rate_hint * seconds))
        return run_rb(self.port, self.command(row), row.get("keyspace"), conns, n,
                      self.args.rb_threads)

    def calibrate(self, row, conns):
        """A rough rate from runs growing tenfold until one lasts 0.3 s (slow commands such as
        a dense GEOSEARCH manage only tens per second on this machine)."""
        n = 2 * conns
        while True:
            started = time.time()
            rps = run_rb(self.port, self.command(row), row.get("keyspace"), conns, n,
                         self.args.rb_threads)["rps"]
            if time.time() - started >= 0.3 or n >= 1_000_000:
                return rps
            n *= 10


def median_of(runs):
    out = {k: statistics.median(r[k] for r in runs) for k in ("rps", "p50", "p99")}
    out["cpu"] = {n: statistics.median(r["cpu"][n] for r in runs) for n in runs[0]["cpu"]}
    return out


# ---------------------------------------------------------------------------------------------
# Seeding


def rfc3339(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def raw_voucher(stock):
    """The fields of a voucher for bench/lua/seckill.lua: open for a century, one per user."""
    now = int(time.time() * 1000)
    return ["stock", stock, "sold", 0, "begin", now - 3_600_000,
            "end", now + 100 * 365 * 86_400_000, "limit", 1, "cap", max(stock, 1) * 2]


def seed_vouchers(gw):
    """The vouchers of the seckill rows, `bench` (stock for every run) and `bench-soldout`
    (none left); returns the status of creating `bench`."""
    now = time.time()
    voucher = {"stock": SECKILL_STOCK, "begin": rfc3339(now - 3600),
               "end": rfc3339(now + 86400), "per_user_limit": 1}
    st, _, _ = gw.call("PUT", "/v1/seckill/vouchers/bench", voucher, admin=True)
    if st in (200, 201):
        gw.call("PUT", "/v1/seckill/vouchers/bench-soldout", dict(voucher, stock=1), admin=True)
        gw.call("POST", "/v1/seckill/vouchers/bench-soldout/orders", {"user_id": 1})
    return st


def seed(gw, redis, notes):
    """Seeds every domain; returns the ids of rows whose endpoints are not there (404/405)."""
    missing = set()
    st = seed_vouchers(gw)
    if st in (404, 405):
        missing |= {"seckill", "seckill_soldout"}
    elif st not in (200, 201):
        notes.append("seeding voucher `bench` answered %s" % st)
    for key, stock in (("bench:sk", 10**12), ("bench:sk0", 0)):
        redis.cli("HSET", key, *raw_voucher(stock))

    st, _, _ = gw.call("PUT", "/v1/dedup/bench", {"capacity": 100_000, "error_rate": 0.01},
                       admin=True)
    if st in (404, 405):
        missing.add("dedup")

    rnd = random.Random(42)
    points = [("p%06d" % i, round(GEO_CENTER[0] + rnd.uniform(-0.1, 0.1), 6),
               round(GEO_CENTER[1] + rnd.uniform(-0.08, 0.08), 6)) for i in range(GEO_POINTS)]
    commands = []
    for i in range(0, GEO_POINTS, 1000):
        cmd = ["GEOADD", "bench:geo:{dense}"]
        for member, lon, lat in points[i:i + 1000]:
            cmd += [lon, lat, member]
        commands.append(cmd)
    redis.pipe(commands)
    st, _, _ = gw.call("POST", "/v1/geo/bench", {"places": [
        {"member": m, "lon": lon, "lat": lat} for m, lon, lat in points[:1]]})
    if st in (404, 405):
        missing.add("nearby")
    else:
        for i in range(0, GEO_POINTS, 1000):
            st, _, body = gw.call("POST", "/v1/geo/bench", {"places": [
                {"member": m, "lon": lon, "lat": lat} for m, lon, lat in points[i:i + 1000]]})
            if st != 200:
                notes.append("geo batch seeding answered %s: %s" % (st, body))
                break
    st, _, _ = gw.call("POST", "/v1/queues/bench/jobs", {"payload": {"probe": True}})
    if st in (404, 405):
        missing |= {"enqueue", "claim_ack"}
    else:
        seed_queue_jobs(redis, QUEUE_JOBS)
        redis.pipe([["ZADD", "bench:q:{c}:due"] +
                    [x for n in range(10_000) for x in ("0", "c%d" % n)]])
    return missing


def seed_queue_jobs(redis, jobs):
    """Due jobs for claim+ack in queue `bench-claim`, written in the gateway's own layout
    (queue_common.lua): through the API this would take minutes."""
    q = PREFIX + "q:{bench-claim}:"
    commands = []
    for i in range(0, jobs, 1000):
        ids = ["c%08d" % n for n in range(i, min(i + 1000, jobs))]
        commands.append(["ZADD", q + "due"] + [x for j in ids for x in ("0", j)])
        commands.append(["HSET", q + "meta"] + [x for j in ids for x in (j, "0 0 10 -")])
        commands.append(["HSET", q + "pay"] + [x for j in ids for x in (j, QUEUE_PAYLOAD)])
    redis.pipe(commands)


def check_nearby_answers(gw, redis, notes):
    """The gateway's nearby answer must name the same members, in the same order, as the raw
    GEOSEARCH it is compared with; returns False when they differ."""
    row = next(r for r in ROWS if r["id"] == "nearby")
    st, _, body = gw.call("GET", row["probe"][1])
    if st != 200:
        return True
    ours = [r.get("member") for r in body.get("results", [])]
    raw = redis.cli(*row["raw"]).split()
    notes.append("nearby: the gateway's %d results %s raw GEOSEARCH's" % (
        len(ours), "match" if ours == raw else "DIFFER from"))
    return ours == raw


# ---------------------------------------------------------------------------------------------
# Measuring


def log(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)


class Bench:
    def __init__(self, args, gw_port, gw_on_port, raw):
        self.args, self.gw_port, self.gw_on_port, self.raw = args, gw_port, gw_on_port, raw
        self.base = 0  # seckill user ids: disjoint ranges per wrk run
        self.results = []
        self.failures = []

    def wrk(self, port, row, conns, seconds=None):
        if row.get("h2_streams"):
            return run_h2load(port, row, conns, self.args.threads,
                              seconds or self.args.duration)
        self.base += 20_000_000
        return run_wrk(port, row["scenario"], conns, self.args.threads,
                       seconds or self.args.duration, self.base)

    def probe(self, port, row):
        if row["probe"] is None:
            return None
        method, path, body = row["probe"]
        st, headers, payload = Http(port).call(method, path, body)
        if st in (404, 405):
            return "n/a"
        if st != row["expect"]:
            return "probe answered %s (expected %s): %s" % (st, row["expect"], payload)
        return None

    def measure(self, row, port=None, conns=None, label=None, extra_gw_conns=None):
        """Alternates gateway and raw runs; returns a result dict for the table."""
        port = port or self.gw_port
        conns = conns or self.args.connections
        label = label or row["label"]
        res = dict(row=row, label=label, conns=conns, gw=None, raw=None, gw_runs=[],
                   raw_runs=[], status="ok", non2xx=0, expect=row["expect"])
        problem = row.get("missing") or self.probe(port, row)
        if problem:
            res["status"] = problem
            log("%s: %s; raw side measured once" % (label, problem))
            rate = self.raw.calibrate(row, conns)
            res["raw_runs"] = [self.raw.run(row, conns, rate, self.args.duration)]
            res["raw"] = median_of(res["raw_runs"])
            if problem != "n/a":
                self.failures.append("%s: %s" % (label, problem))
            return res
        log("%s: warming up" % label)
        self.wrk(port, row, conns, seconds=1)
        rate = self.raw.calibrate(row, conns)
        extra = []
        for i in range(self.args.runs):
            g = self.wrk(port, row, conns)
            res["gw_runs"].append(g)
            if extra_gw_conns:
                extra.append(self.wrk(port, row, extra_gw_conns))
            r = self.raw.run(row, conns, rate, self.args.duration)
            res["raw_runs"].append(r)
            rate = statistics.median(x["rps"] for x in res["raw_runs"])
            log("%s: run %d/%d gateway %.0f req/s, raw %.0f req/s" % (
                label, i + 1, self.args.runs, g["rps"], r["rps"]))
        res["gw"], res["raw"] = median_of(res["gw_runs"]), median_of(res["raw_runs"])
        if extra:
            res["base_gw"] = median_of(extra)
            res["base_conns"] = extra_gw_conns
        res["non2xx"] = sum(g["non2xx"] for g in res["gw_runs"])
        res["socket_errors"] = sum(g["socket_errors"] for g in res["gw_runs"])
        total = sum(g["requests"] for g in res["gw_runs"])
        bad = res["non2xx"] if row["expect"] < 300 else total - res["non2xx"]
        if bad or res["socket_errors"]:
            res["status"] = "%d unexpected responses, %d socket errors" % (
                bad, res["socket_errors"])
            self.failures.append("%s: %s" % (label, res["status"]))
        return res

    def run(self, only):
        rows = [r for r in ROWS if not only or r["id"] in only]
        for row in rows:
            self.results.append(self.measure(row, conns=row.get("conns")))
        cheap = [r for r in self.results if r["row"].get("cheap") and r["gw"]]
        if self.args.cheapest:
            cheap = [r for r in self.results if r["row"]["id"] == self.args.cheapest] or cheap
        if not cheap:
            if rows:
                log("no cheap endpoint measured: skipping the 200-connection row")
            return
        # The global layer is measured in bench/peers.py, alternated with it off.
        best = max(cheap, key=lambda r: r["gw"]["rps"])
        row = best["row"]
        cliff = dict(row, cliff=True, p99_ms=None)  # its own goal: no cliff
        self.results.append(self.measure(cliff, conns=self.args.cliff_connections,
                                         label=row["label"] + ", %d connections" %
                                         self.args.cliff_connections,
                                         extra_gw_conns=self.args.connections))


# ---------------------------------------------------------------------------------------------
# Report


def fmt_rps(x):
    return "%.0f" % x if x is not None else "–"


def fmt_lat(m):
    return "%.2f / %.2f" % (m["p50"], m["p99"]) if m else "–"


def verdict(res, results):
    """(ratio cell, goal cell, [(goal text, ok)]) of a main-table row. The ratio to raw Redis
    is information only: its targets are retired."""
    row, gw, raw = res["row"], res["gw"], res["raw"]
    ratio = "%.2f×" % (gw["rps"] / raw["rps"]) if gw and raw else "–"
    goals = []
    if row.get("cliff"):
        if gw:
            c = gw["rps"] / res["base_gw"]["rps"]
            goals.append(("%s: %.2f× the %d-connection req/s (goal ≥ 0.9×)" % (
                res["label"], c, res["base_conns"]), c >= 0.9))
        else:
            return ratio, "≥ 0.9× the %d-conn req/s" % res["conns"], []
    if row.get("p99_ms"):
        if not gw:
            return ratio, "p99 ≤ %g ms" % row["p99_ms"], []
        goals.append(("%s: gateway p99 %.2f ms (goal ≤ %g ms)" % (
            res["label"], gw["p99"], row["p99_ms"]), gw["p99"] <= row["p99_ms"]))
    if row.get("cpu_vs"):
        base = next((r for r in results if r["row"]["id"] == row["cpu_vs"] and r["gw"]
                     and not r["row"].get("cliff")), None)
        if not gw or not base:
            return ratio, "gateway CPU/req ≤ the `%s` row's" % row["cpu_vs"], []
        goals.append(("%s: gateway CPU per request %.0f µs against %.0f over HTTP/1.1 (goal ≤)"
                      % (res["label"], gw["cpu"]["gateway"], base["gw"]["cpu"]["gateway"]),
                      gw["cpu"]["gateway"] <= base["gw"]["cpu"]["gateway"]))
    if not goals:
        return ratio, "–", []
    cell = "; ".join(t.split(": ", 1)[1] for t, _ in goals)
    return ratio, cell + (" ✅" if all(ok for _, ok in goals) else " ❌"), goals


def main_goals(results):
    return [g for res in results for g in verdict(res, results)[2]]


def raw_text(res, shas):
    words = []
    for a in res["row"]["raw"]:
        m = re.fullmatch(r"\{sha:(\w+)\}", a)
        words.append("<%s.lua>" % m.group(1) if m else a)
    # Ten identical dedup items collapse for readability.
    text = " ".join(words).replace(" news-__rand_int__" * 10, " news-__rand_int__ ×10")
    return "`%s`" % text


def table(results, shas):
    lines = ["| endpoint | conns | gateway req/s | gateway p50 / p99 ms | goal | raw req/s | "
             "gateway ÷ raw (information) | raw p50 / p99 ms | raw Redis command |",
             "|---|---:|---:|---:|---|---:|---:|---:|---|"]
    for res in results:
        ratio, target, _ = verdict(res, results)
        status = res["status"]
        if status != "ok":
            ratio = "n/a" if status == "n/a" else "**FAILED**"
        lines.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            res["label"], res["conns"],
            fmt_rps(res["gw"]["rps"]) if res["gw"] else ("n/a" if status == "n/a" else "–"),
            fmt_lat(res["gw"]), target, fmt_rps(res["raw"]["rps"]) if res["raw"] else "–",
            ratio, fmt_lat(res["raw"]), raw_text(res, shas)))
    return "\n".join(lines)


def cpu_table(results):
    lines = ["| endpoint | conns | gateway side: gateway + Redis + wrk = total | raw side: Redis "
             "+ redis-benchmark = total |", "|---|---:|---:|---:|"]
    for res in results:
        g, r = res["gw"], res["raw"]
        gs = "%.0f + %.0f + %.0f = **%.0f**" % (
            g["cpu"]["gateway"], g["cpu"]["redis"], g["cpu"]["client"],
            sum(g["cpu"].values())) if g else "–"
        rs = "%.0f + %.0f = **%.0f**" % (r["cpu"]["redis"], r["cpu"]["client"],
                                          sum(r["cpu"].values())) if r else "–"
        lines.append("| %s | %d | %s | %s |" % (res["label"], res["conns"], gs, rs))
    return "\n".join(lines)


def run_details(results):
    out = []
    for res in results:
        g = ", ".join("%.0f" % r["rps"] for r in res["gw_runs"]) or "–"
        r = ", ".join("%.0f" % x["rps"] for x in res["raw_runs"]) or "–"
        extra = ""
        if res.get("base_gw"):
            extra = "; gateway at %d connections: %.0f (median)" % (
                res["base_conns"], res["base_gw"]["rps"])
        status = "" if res["status"] == "ok" else " — %s" % res["status"]
        out.append("- %s: gateway %s; raw %s%s%s" % (res["label"], g, r, extra, status))
    return "\n".join(out)


def sh(*argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True)
        return (r.stdout.strip() or r.stderr.strip())
    except OSError:
        return ""


def loadavg():
    try:
        return "%.2f" % os.getloadavg()[0]
    except OSError:
        return "?"


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(next(l.split()[1] for l in f if l.startswith("MemTotal")))
            mem = "%.1f GiB" % (kb / 1024 / 1024)
    except (OSError, StopIteration):
        pass
    return [
        "- CPU: %s, `nproc` = %s" % (cpu or platform.processor() or "unknown", os.cpu_count()),
        "- memory: %s" % (mem or "unknown"),
        "- OS: %s %s" % (platform.system(), platform.release()),
        "- %s; %s; %s" % (sh("redis-server", "--version").split(" sha=")[0],
                          sh("rustc", "--version"),
                          (sh("wrk", "--version") or "wrk").splitlines()[0].split(" [")[0]),
        "- gateway commit: `%s`%s" % (sh("git", "-C", ROOT, "rev-parse", "--short", "HEAD"),
                                      " (with uncommitted changes)" if sh(
                                          "git", "-C", ROOT, "status", "--porcelain",
                                          "--untracked-files=no") else ""),
    ]


# Sections other harnesses write into the same report (bench/soak.py); a regeneration of the
# main table keeps them as they are.
# docs/performance.md is one page: the prose sections (how the benchmark runs, the abuse budget,
# Redis time per request) are written by hand and kept before the generated run; the soak
# section is bench/soak.py's, kept after it.
PROSE_SECTIONS = ("## Benchmarks", "## Abuse budget", "## Redis time per request")
KEPT_SECTIONS = ("## Memory under sustained load (soak)",)


def kept_sections(path, titles=KEPT_SECTIONS):
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return []
    out = []
    for title in titles:
        start = text.find("\n" + title + "\n")
        start = start + 1 if start >= 0 else -1
        if start >= 0:
            end = text.find("\n## ", start + len(title))
            out += [text[start:end if end >= 0 else len(text)].rstrip("\n"), ""]
    return out


# bench/durable.py's section: rewritten when its rows run, else kept as it is.
DURABLE_SECTION = "## Durable writes (`GATEWAY_WRITE_REPLICAS`)"


# bench/burst.py's section: rewritten when its rows run, else kept as it is.
BURST_SECTION = "## Sale burst (stock 1,000, 200 connections)"


def write_report(args, results, notes, shas, elapsed, load, sections, goals):
    """`sections`: {"peers"|"burst"|"durable": markdown lines} of the parts that ran; `goals`:
    [(text, ok)] of every goal judged in this run."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    doc = ["# Performance", "",
           "How fast the gateway is against raw Redis and its peers, what one client can add "
           "to the store, how long any request holds Redis, and the latest benchmark run.", ""]
    doc += kept_sections(args.out, PROSE_SECTIONS)
    met = sum(1 for _, ok in goals if ok)
    doc += ["## Latest run", "",
           "Generated by `%s` on %s (took %d s). Regenerate with the same command whenever "
           "performance changes; see \"Benchmarks\" above for what it does." % (
               args.command, now, elapsed), "",
           "## Machine", ""] + machine() + [
           "- load average (1 min) at the start and end of the run: %s" % load, "",
           "Load generators, Redis and the gateway all share these cores (loopback only), and "
           "other work on the machine adds noise: compare the ratios, which come from the same "
           "run, not absolute numbers across runs.", "",
           "## Goals", "",
           "Every goal in force, judged on this run's rows (%d of %d met); each comes from "
           "the table below it is named in. A row is judged against its peer (webdis), the "
           "floor (a bare handler doing one store call), itself (the global layer on ÷ off, "
           "200 ÷ 50 connections, HTTP/2 ÷ HTTP/1.1) or an absolute bound (p99, sold "
           "counts); the ratio to raw Redis is shown for information, with no target." % (
               met, len(goals)), ""]
    doc += ["- %s %s" % (text, "✅" if ok else "❌") for text, ok in goals] or [
        "- (no goal judged: the rows run had none)"]
    doc += ["",
           "## Gateway and raw Redis", "",
           "%d connections (the 200-connection and HTTP/2 rows excepted), %d s per run, %d "
           "alternation%s of gateway (wrk, %d threads) and raw Redis (redis-benchmark, %d "
           "thread%s, no pipelining); every figure is the median over the alternations. "
           "gateway ÷ raw = gateway req/s ÷ raw req/s, information only. n/a: the endpoint is "
           "not on this build yet (404); its raw side was measured once." % (
               args.connections, args.duration, args.runs, "" if args.runs == 1 else "s",
               args.threads, args.rb_threads, "" if args.rb_threads == 1 else "s"), "",
           table(results, shas), ""]
    if notes:
        doc += ["Notes:", ""] + ["- " + n for n in notes] + [""]
    doc += list(sections.get("peers", ()))
    doc += list(sections.get("burst", ())) or kept_sections(args.out, (BURST_SECTION,))
    doc += list(sections.get("durable", ())) or kept_sections(args.out, (DURABLE_SECTION,))
    doc += ["## Where the CPU goes (µs of CPU per request, medians)", "",
            "Read from `/proc` around each run. With every process on the same two cores, "
            "throughput is roughly 2 s of CPU per second ÷ the total here, so this says which "
            "process limits a ratio.", "", cpu_table(results), "",
            "## Every run (req/s)", "", run_details(results), "",
            "## What the rows send", "",
            "- check-in: `POST /v1/checkins/{random user < 10^6}`, no body (today); raw "
            "`SETBIT` on a random key (a user's month bitmap).",
            "- UV: `{\"visitor\": random of 10^6}` to one page; raw `PFADD` of a random "
            "visitor; webdis `GET /PFADD/bench:wd/v<random>`.",
            "- UV over h2: h2load (h2c, 10 connections with 20 streams each) sends "
            "`{\"visitor\": \"probe\"}` to one page, the same body every time (h2load sends "
            "one); raw as the UV row.",
            "- rate-limit: random key of 10^4, burst 100, 50/s (all allowed); raw: "
            "`bench/lua/gcra.lua`, a minimal GCRA script by EVALSHA.",
            "- seckill: a voucher with {:,} stock, a new user id per request (201); sold out: "
            "a voucher with no stock left (409); raw: `bench/lua/seckill.lua` by EVALSHA, the "
            "gateway's Redis work for one purchase (the sale window by the server's clock, "
            "stock, the per-user limit, the order appended to a stream, the user's order ids, "
            "stock and sold); webdis the same script, `GET /EVALSHA/<sha>/4/bench:wsk/"
            "bench:wsk:buyers/bench:wsk:uo/bench:wsk:orders/u<new id>`, on a key with "
            "10^12 stock (every answer a sale: the run fails if webdis added fewer buyers than "
            "it answered); the floor the same script on its own key.".format(SECKILL_STOCK),
            "- dedup: `filter` of 10 items drawn from 50,000 with `mark_seen`; raw: "
            "`bench/lua/bloom.lua` (test-and-set of 10 items, k = 7, in one bitmap) by EVALSHA.",
            "- lock acquire: one owner, a random name of 10^6, TTL 1 s (a name still held is "
            "extended); raw `SET … NX PX 1000`; webdis "
            "`GET /SET/bench:wlk:<random>/bench/NX/PX/1000`; the floor `SET NX PX`.",
            "- nearby: {:,} points uniform in ±0.1° lon × ±0.08° lat around 116.40,39.90 "
            "(seeded through the batch endpoint; the same points GEOADDed for the raw side); "
            "5 km, count 20, ascending.".format(GEO_POINTS),
            "- enqueue: a new job (generated id, a 60-byte JSON payload) per request into "
            "one queue (`GATEWAY_QUEUE_MAX_JOBS` raised so it never fills); raw: "
            "`bench/lua/enqueue.lua` (`HSET` payload + `ZADD` by due time) by EVALSHA; webdis "
            "the same script by `GET /EVALSHA/<sha>/2/<due>/<payloads>/j<new id>/<payload, "
            "percent-encoded>`; the floor the same script with a counter for the id.",
            "- claim + ack: {:,} due jobs seeded; each connection claims one job "
            "(`max` 1) then acks it with its receipt, so half the requests are claims; raw: "
            "`bench/lua/claim_ack.lua` (oldest due job to the in-flight set and out again) by "
            "EVALSHA, both halves in one call — so the ratio is per request, not per "
            "job.".format(QUEUE_JOBS),
            "- global layer on: a second gateway with `GATEWAY_GLOBAL_LIMIT=on` and a limit "
            "too high to refuse (burst and count 1,000,000/s), so the variant prices the layer, "
            "not refusals; all requests come from one client (127.0.0.1).",
            "- the gateway runs with its defaults (`RUST_LOG=info`, `GATEWAY_REDIS_POOL_SIZE` 2, "
            "…) except `GATEWAY_GLOBAL_LIMIT=off` outside the global-layer variants.",
            "- 200 connections: the cheapest endpoint at 200 connections (and at %d, "
            "alternated in the same row) to check there is no throughput cliff." %
            args.connections, ""]
    doc += kept_sections(args.out)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(doc))
    return "\n".join(["Goals:"] + ["- %s %s" % (t, "✅" if ok else "❌") for t, ok in goals] +
                     ["", table(results, shas)])


# ---------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--cliff-connections", type=int, default=200)
    ap.add_argument("--duration", type=int, default=None, help="seconds per run (default 5)")
    ap.add_argument("--runs", type=int, default=None,
                    help="alternations per row, the median reported (default 3)")
    ap.add_argument("--quick", action="store_true",
                    help="a short check of the rows asked for: 2 s runs, one alternation, no "
                    "strace runs (ratios from one run: noisy)")
    ap.add_argument("--threads", type=int, default=2, help="wrk threads")
    ap.add_argument("--rb-threads", type=int, default=1, help="redis-benchmark threads")
    ap.add_argument("--only", default="", help="comma-separated row ids: " +
                    ",".join(r["id"] for r in ROWS) + " (here), healthz, uv, checkin, "
                    "ratelimit, seckill, lock_acquire, enqueue (against the peers, "
                    "bench/peers.py: a shared id runs both rows), peers (every peer row), "
                    "global (the global layer on ÷ off, UV add and purchase), burst (the sale "
                    "burst, bench/burst.py) and durable (bench/durable.py)")
    ap.add_argument("--no-peers", action="store_true",
                    help="skip webdis and the floor server (the global layer is still measured)")
    ap.add_argument("--cheapest", default="", help="row id for the 200-conn row "
                    "(default: the fastest cheap endpoint measured)")
    ap.add_argument("--gateway", default=GATEWAY)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs/performance.md"))
    ap.add_argument("--command", default="./scripts/bench", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.duration is None:
        args.duration = 2 if args.quick else 5
    if args.runs is None:
        args.runs = 1 if args.quick else 3
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    for tool in ("redis-server", "redis-cli", "redis-benchmark", "wrk", "h2load"):
        if not shutil.which(tool):
            sys.exit("bench: %s is missing (./scripts/bench installs it)" % tool)

    started, load_start = time.time(), loadavg()
    logdir = tempfile.mkdtemp(prefix="gateway-bench-")
    procs = Procs(logdir)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        rport = free_port()
        PIDS["redis"] = procs.start("redis", ["redis-server", "--port", str(rport), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no", "--dir", logdir]).pid
        redis = Redis(rport)
        wait_until(lambda: redis.cli("PING") == "PONG", 10, "redis-server")
        gw_port, gw_on_port = free_port(), free_port()
        base_env = dict(os.environ, REDIS_URL="redis://127.0.0.1:%d" % rport,
                        GATEWAY_ADMIN_TOKEN=ADMIN_TOKEN, GATEWAY_KEY_PREFIX=PREFIX,
                        GATEWAY_SECKILL_MAX_ORDERS=str(SECKILL_STOCK * 2),
                        GATEWAY_QUEUE_MAX_JOBS="1000000000",
                        RUST_LOG=os.environ.get("BENCH_RUST_LOG", "info"))
        PIDS[gw_port] = procs.start("gateway", [args.gateway], env=dict(
            base_env, GATEWAY_LISTEN="127.0.0.1:%d" % gw_port, GATEWAY_GLOBAL_LIMIT="off")).pid
        PIDS[gw_on_port] = procs.start("gateway-limited", [args.gateway], env=dict(
            base_env, GATEWAY_LISTEN="127.0.0.1:%d" % gw_on_port, GATEWAY_GLOBAL_LIMIT="on",
            GATEWAY_GLOBAL_BURST="1000000", GATEWAY_GLOBAL_COUNT="1000000",
            GATEWAY_GLOBAL_PERIOD="1")).pid
        for port, name in ((gw_port, "gateway"), (gw_on_port, "gateway-limited")):
            wait_until(lambda: Http(port).call("GET", "/readyz")[0] == 200, 30,
                       name + " (log: %s)" % procs.log_tail(name))
        log("redis on :%d, gateway on :%d, gateway with the global layer on :%d (logs in %s)"
            % (rport, gw_port, gw_on_port, logdir))

        shas = {name[:-4]: redis.cli("SCRIPT", "LOAD", open(os.path.join(BENCH, "lua", name)).read())
                for name in sorted(os.listdir(os.path.join(BENCH, "lua")))}
        notes = []
        gw = Http(gw_port)
        log("seeding (100k geo points, vouchers, a dedup filter)")
        missing = seed(gw, redis, notes)
        same_answers = check_nearby_answers(gw, redis, notes)
        for row in ROWS:
            if row["id"] in missing:
                row["missing"] = "n/a"

        bench = Bench(args, gw_port, gw_on_port, Raw(args, rport, shas))
        if not same_answers:
            bench.failures.append("nearby answers differ from raw GEOSEARCH")
        bench.run(only)
        goals = main_goals(bench.results)
        sections = {}
        # The other harnesses import this module as `driver`: the same one, not a second copy.
        sys.modules.setdefault("driver", sys.modules[__name__])
        import peers
        peer_rows = peers.selected(only, args.no_peers)
        if peer_rows:
            found = peers.Peers(procs, logdir, rport, args.gateway, base_env,
                                {"gateway": gw_port, "gateway-limited": gw_on_port}, shas,
                                peer_rows)
            lines, peer_goals, peer_failures = peers.report(
                peers.measure(found, peer_rows, args, redis), args)
            sections["peers"] = lines
            goals += peer_goals
            bench.failures += peer_failures
        if not only or "burst" in only:
            import burst
            # Its own stores, gateways and PostgreSQL, stopped when it is done.
            own = Procs(logdir)
            try:
                found, note = burst.measure(own, logdir, args.gateway, base_env, args)
            finally:
                own.stop_all()
                burst.cleanup()
            sections["burst"], burst_goals, burst_failures = burst.report(found, note)
            goals += burst_goals
            bench.failures += burst_failures
        if not only or "durable" in only:
            import durable
            port = durable.start(procs, logdir, rport, args.gateway, base_env)
            found = durable.measure(bench, redis, (gw_port, port), args)
            sections["durable"] = durable.report(found, args)
            goals += durable.goals(found)
        for name in ("floor", "webdis", "gateway-nolog", "gateway-durable", "redis-replica"):
            if any(p.poll() is not None for n, p in procs.procs if n == name):
                bench.failures.append("%s exited during the run:\n%s" % (name,
                                                                       procs.log_tail(name)))
        for name in ("gateway", "gateway-limited", "redis"):
            if any(p.poll() is not None for n, p in procs.procs if n == name):
                bench.failures.append("%s exited during the run:\n%s" % (name,
                                                                       procs.log_tail(name)))
        load = "%s → %s" % (load_start, loadavg())
        text = write_report(args, bench.results, notes, shas, time.time() - started, load,
                            sections, goals)
        print(text)
        for n in notes:
            print("note: " + n)
        print("\nwritten to %s" % os.path.relpath(args.out, ROOT))
        if bench.failures:
            print("\nFAILED rows:\n" + "\n".join(bench.failures), file=sys.stderr)
            return 1
        return 0
    except SystemExit as e:
        for name, p in procs.procs:
            if p.poll() is not None:
                print("bench: %s exited with %s; its log ends:\n%s" % (
                    name, p.returncode, procs.log_tail(name)), file=sys.stderr)
        raise e
    finally:
        procs.stop_all()
        shutil.rmtree(logdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
