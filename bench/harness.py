"""What every benchmark script shares (standard library only): the paths and the gateway's
settings, the processes a run starts and their pids, free ports, waiting for a server, the
HTTP and Redis clients, the load generators (wrk, h2load, redis-benchmark) with their parsers
and the CPU each process spends around them, and the log line.

A leaf: it imports no other bench module, so bench/driver.py, peers.py, burst.py, durable.py,
soak.py and ab.py all build on it without importing each other.
"""

import csv
import http.client
import io
import json
import os
import re
import resource
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


def log(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)


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


def proc_cpu_user(pid):
    """User-space CPU seconds (all threads) a process has used so far: its own code, without
    the kernel's work in its system calls."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) / _TICK
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


# port (or "redis", "replica") → pid of each process whose CPU a run reads. Every module fills
# this one dict (item assignment, never rebinding), so run_wrk finds the pids the driver,
# peers.py, durable.py or ab.py started.
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


def median_of(runs):
    out = {k: statistics.median(r[k] for r in runs) for k in ("rps", "p50", "p99")}
    out["cpu"] = {n: statistics.median(r["cpu"][n] for r in runs) for n in runs[0]["cpu"]}
    return out
