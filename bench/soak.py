#!/usr/bin/env python3
"""The soak benchmark behind ./scripts/bench --soak (standard library only).

Does the gateway's memory stay flat under sustained load? For each backend (the embedded memory
store and a private redis-server) and each scrape mode (nobody scrapes /metrics; a scrape every
second), starts a fresh release gateway and drives each cheap route with wrk for at least
--requests requests after a warm-up, reading the gateway's RSS from /proc around and during the
run. Every route touches one fixed-size piece of data (one page's HyperLogLog, one rate-limit
key, one user's check-ins), so whatever the gateway grows by is its own per-request state.
Writes the table into docs/performance.md's section "Memory under sustained load".
"""

import argparse
import datetime
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import harness
from harness import Http, Procs, Redis, free_port, log, wait_until

SECTION = "## Memory under sustained load (soak)"
GOAL_MB_PER_M = 1.0

ROUTES = [
    ("healthz", "`GET /healthz`"),
    ("uv", "UV add, one page (random visitors)"),
    ("ratelimit_one", "rate-limit check, one key"),
    ("checkin_one", "check-in, one user"),
]


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS for %d" % pid)


def wrk(port, scenario, conns, threads, seconds):
    env = dict(os.environ, BENCH_SCENARIO=scenario, BENCH_BASE="0")
    argv = ["wrk", "-t", str(threads), "-c", str(conns), "-d", "%ds" % seconds, "--timeout", "5s",
            "--latency", "-s", os.path.join(harness.BENCH, "wrk.lua"), "http://127.0.0.1:%d" % port]
    r = subprocess.run(argv, capture_output=True, text=True, env=env)
    parsed = harness.parse_wrk(r.stdout)
    if r.returncode != 0 or parsed is None:
        sys.exit("soak: wrk failed (%s):\n%s%s" % (" ".join(argv), r.stdout, r.stderr))
    if parsed["non2xx"] or parsed["socket_errors"]:
        sys.exit("soak: %s answered %d non-2xx and %d socket errors" % (
            scenario, parsed["non2xx"], parsed["socket_errors"]))
    return parsed


class Scraper(threading.Thread):
    """GET /metrics once a second, as a Prometheus would."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.stop, self.count = port, threading.Event(), 0

    def run(self):
        while not self.stop.wait(1.0):
            try:
                if Http(self.port).call("GET", "/metrics")[0] == 200:
                    self.count += 1
            except OSError:
                pass


def soak_route(args, port, pid, scenario):
    wrk(port, scenario, args.connections, args.threads, args.warmup)
    time.sleep(1)
    start = rss_mb(pid)
    done, samples, rps = 0, [start], []
    while done < args.requests:
        r = wrk(port, scenario, args.connections, args.threads, args.segment)
        done += r["requests"]
        rps.append(r["rps"])
        samples.append(rss_mb(pid))
    # Past the last upkeep (every 5 s) so samples still waiting to be folded are not counted.
    time.sleep(6)
    end = rss_mb(pid)
    return dict(requests=done, start=start, end=end, peak=max(samples + [end]),
                growth=(end - start) / (done / 1e6), rps=sorted(rps)[len(rps) // 2])


def run_gateway(args, procs, name, env):
    port = free_port()
    p = procs.start(name, [args.gateway], env=dict(env, GATEWAY_LISTEN="127.0.0.1:%d" % port))
    wait_until(lambda: Http(port).call("GET", "/readyz")[0] == 200, 30,
               name + " (log: %s)" % procs.log_tail(name))
    return port, p


def write_section(path, body):
    """Replaces (or appends) this section of the benchmark report, leaving the rest as is."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        text = "# Performance\n"
    head, sep, rest = text.partition(SECTION)
    tail = ""
    if sep:
        nxt = rest.find("\n## ")
        tail = rest[nxt + 1:] if nxt >= 0 else ""
    text = head.rstrip("\n") + "\n\n" + body.rstrip("\n") + "\n" + (("\n" + tail) if tail else "")
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--soak", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--requests", type=int, default=1_000_000, help="per route, after warm-up")
    ap.add_argument("--warmup", type=int, default=5, help="seconds of load before the first RSS")
    ap.add_argument("--segment", type=int, default=10, help="seconds per wrk run (RSS between)")
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--backends", default="memory,redis")
    ap.add_argument("--routes", default=",".join(r for r, _ in ROUTES))
    ap.add_argument("--gateway", default=harness.GATEWAY)
    ap.add_argument("--out", default=os.path.join(harness.ROOT, "docs/performance.md"))
    ap.add_argument("--command", default="./scripts/bench --soak", help=argparse.SUPPRESS)
    args = ap.parse_args()
    routes = [r for r in ROUTES if r[0] in args.routes.split(",")]
    for tool in ("redis-server", "redis-cli", "wrk"):
        if not shutil.which(tool):
            sys.exit("soak: %s is missing (./scripts/bench installs it)" % tool)

    started, load_start = time.time(), harness.loadavg()
    commit = harness.sh("git", "-C", harness.ROOT, "rev-parse", "--short", "HEAD")
    logdir = tempfile.mkdtemp(prefix="gateway-soak-")
    procs = Procs(logdir)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    rows, failures = [], []
    try:
        rport = free_port()
        procs.start("redis", ["redis-server", "--port", str(rport), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no", "--dir", logdir])
        redis = Redis(rport)
        wait_until(lambda: redis.cli("PING") == "PONG", 10, "redis-server")
        base = dict(os.environ, GATEWAY_ADMIN_TOKEN=harness.ADMIN_TOKEN, GATEWAY_GLOBAL_LIMIT="off",
                    RUST_LOG=os.environ.get("BENCH_RUST_LOG", "info"))
        base.pop("REDIS_URL", None)
        for backend in args.backends.split(","):
            env = dict(base)
            if backend == "redis":
                env["REDIS_URL"] = "redis://127.0.0.1:%d" % rport
            for scrape in (False, True):
                redis.cli("FLUSHALL")
                name = "gateway-%s-%s" % (backend, "scraped" if scrape else "unscraped")
                port, p = run_gateway(args, procs, name, env)
                scraper = Scraper(port)
                if scrape:
                    scraper.start()
                for scenario, label in routes:
                    log("%s: %s" % (name, label))
                    r = soak_route(args, port, p.pid, scenario)
                    r.update(backend=backend, scrape=scrape, label=label)
                    log("  %d requests at %.0f req/s: RSS %.1f → %.1f MB (peak %.1f), "
                        "%+.2f MB per million" % (r["requests"], r["rps"], r["start"], r["end"],
                                                  r["peak"], r["growth"]))
                    if r["growth"] > GOAL_MB_PER_M:
                        failures.append("%s, %s: %+.2f MB per million requests" % (
                            name, label, r["growth"]))
                    rows.append(r)
                scraper.stop.set()
                if p.poll() is not None:
                    failures.append("%s exited:\n%s" % (name, procs.log_tail(name)))
                p.terminate()
                p.wait(timeout=10)
        load = "%s → %s" % (load_start, harness.loadavg())
    finally:
        procs.stop_all()
        shutil.rmtree(logdir, ignore_errors=True)

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    body = [SECTION, "",
            "Generated by `%s` on %s (took %d s; load average %s; gateway commit `%s`). For "
            "each backend and scrape mode a fresh release gateway (`GATEWAY_GLOBAL_LIMIT=off`, "
            "otherwise its defaults) serves each route for at least %s requests after %d s of "
            "warm-up, wrk at %d connections; RSS from `/proc/<pid>/status`, read after the "
            "warm-up and 6 s after the last request (past the metrics upkeep). Each route "
            "touches one fixed-size piece of data, so the growth is the gateway's own. Goal: "
            "≤ %.0f MB per million requests." % (
                args.command, now, time.time() - started, load,
                commit,
                "{:,}".format(args.requests), args.warmup, args.connections, GOAL_MB_PER_M), "",
            "| backend | /metrics scraped | route | requests | req/s | RSS start → end (peak) MB "
            "| growth MB per million |",
            "|---|---|---|---:|---:|---|---:|"]
    for r in rows:
        body.append("| %s | %s | %s | %s | %.0f | %.1f → %.1f (%.1f) | %+.2f %s |" % (
            r["backend"], "every 1 s" if r["scrape"] else "never", r["label"],
            "{:,}".format(r["requests"]), r["rps"], r["start"], r["end"], r["peak"], r["growth"],
            "✅" if r["growth"] <= GOAL_MB_PER_M else "❌"))
    text = "\n".join(body) + "\n"
    write_section(args.out, text)
    print(text)
    print("written to %s" % os.path.relpath(args.out, harness.ROOT))
    if failures:
        print("\nOVER THE GOAL:\n" + "\n".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
