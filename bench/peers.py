"""The gateway against its yardsticks, in the same run on the same private Redis (issue 19):

- webdis (Debian's package), the HTTP-to-Redis peer users would otherwise pick, doing a UV add
  its own way (`GET /PFADD/key/visitor`);
- the floor: `bench/floor.rs`, a bare axum + fred handler with the gateway's crate versions
  doing one store call per request on the gateway's own paths;
- the gateway with its access log off, and with the global layer on, beside its judged row.

Every variant of a row is measured in turn, alternating, `runs` times; the figures are medians.
Besides req/s and latency, each row gives CPU µs per request per process (server, Redis, wrk)
and, from a separate short run under `strace -c`, system calls per request of the server.
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time

import driver

# id, label, wrk scenario of the gateway and the floor, the variants measured, and the
# goal (issue 19) that the gateway's CPU per request is judged against.
ROWS = [
    dict(id="healthz", label="`GET /healthz`", scenario="healthz",
         variants=["gateway", "floor"], cpu_goal=1.3),
    dict(id="uv", label="UV add `POST /v1/uv/{page}` (1 visitor)", scenario="uv",
         variants=["gateway", "floor", "webdis", "gateway, access log off",
                   "gateway, global layer on"], cpu_goal=1.3),
    dict(id="checkin", label="check-in `POST /v1/checkins/{user}`", scenario="checkin",
         variants=["gateway", "floor"], cpu_goal=1.3),
    dict(id="ratelimit", label="rate-limit `POST /v1/ratelimit/check`", scenario="ratelimit",
         variants=["gateway", "floor"], cpu_goal=1.3),
]

# The variant → which server (a key of `Peers.ports`) and which wrk scenario it runs.
SERVERS = {
    "gateway": "gateway",
    "floor": "floor",
    "webdis": "webdis",
    "gateway, access log off": "gateway-nolog",
    "gateway, global layer on": "gateway-limited",
}


def webdis_config(logdir, port, redis_port):
    path = os.path.join(logdir, "webdis.json")
    with open(path, "w") as f:
        json.dump({"redis_host": "127.0.0.1", "redis_port": redis_port, "http_host": "127.0.0.1",
                   "http_port": port, "threads": 2, "daemonize": False, "database": 0,
                   "verbosity": 0, "logfile": os.path.join(logdir, "webdis.log")}, f)
    return path


class Peers:
    """Starts the floor, webdis and a log-less gateway beside the driver's processes."""

    def __init__(self, procs, logdir, redis_port, gateway_bin, base_env, ports, gcra_sha):
        self.ports = dict(ports)  # name → port, from the driver: gateway, gateway-limited
        self.missing = {}
        floor_bin = os.path.join(os.path.dirname(gateway_bin), "examples", "floor")
        self.ports["floor"] = driver.free_port()
        driver.PIDS[self.ports["floor"]] = procs.start("floor", [floor_bin], env=dict(
            os.environ, FLOOR_LISTEN="127.0.0.1:%d" % self.ports["floor"],
            REDIS_URL="redis://127.0.0.1:%d" % redis_port, FLOOR_GCRA_SHA=gcra_sha)).pid
        self.ports["gateway-nolog"] = driver.free_port()
        driver.PIDS[self.ports["gateway-nolog"]] = procs.start("gateway-nolog", [gateway_bin],
            env=dict(base_env, GATEWAY_LISTEN="127.0.0.1:%d" % self.ports["gateway-nolog"],
                     GATEWAY_GLOBAL_LIMIT="off", GATEWAY_ACCESS_LOG="off")).pid
        if shutil.which("webdis"):
            self.ports["webdis"] = driver.free_port()
            driver.PIDS[self.ports["webdis"]] = procs.start("webdis", [
                "webdis", webdis_config(logdir, self.ports["webdis"], redis_port)]).pid
        else:
            self.missing["webdis"] = "webdis is not installed"
        for name in ("floor", "gateway-nolog", "webdis"):
            if name in self.ports:
                port = self.ports[name]
                path = "/PING" if name == "webdis" else "/healthz"
                driver.wait_until(lambda: driver.Http(port).call("GET", path)[0] == 200, 30,
                                  name + " (log: %s)" % procs.log_tail(name))

    def scenario(self, row, variant):
        return "webdis_uv" if variant == "webdis" else row["scenario"]

    def wrk(self, row, variant, conns, threads, seconds):
        port = self.ports[SERVERS[variant]]
        return driver.run_wrk(port, self.scenario(row, variant), conns, threads, seconds)

    def syscalls(self, row, variant, conns, threads, seconds=3):
        """System calls per request of the server's process (all threads) over a short wrk
        run under `strace -c`: strace slows the server, but not what it asks the kernel per
        request. → (total per request, {call: per request} of the main ones)."""
        if not shutil.which("strace"):
            return None
        pid = driver.PIDS[self.ports[SERVERS[variant]]]
        tids = os.listdir("/proc/%d/task" % pid)
        out = tempfile.mktemp(prefix="strace-")
        argv = ["strace", "-c", "-f", "-o", out] + [x for t in tids for x in ("-p", t)]
        tracer = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # attached to every thread before the load starts
        res = self.wrk(row, variant, conns, threads, seconds)
        tracer.send_signal(2)
        tracer.wait(timeout=30)
        calls = {}
        try:
            with open(out) as f:
                for line in f:
                    m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", line)
                    if m and m.group(2) != "total":
                        calls[m.group(2)] = int(m.group(1))
            os.unlink(out)
        except OSError:
            return None
        n = max(res["requests"], 1)
        per = {k: v / n for k, v in calls.items()}
        return sum(per.values()), dict(sorted(per.items(), key=lambda kv: -kv[1])[:6])


def measure(peers, args):
    results = []
    for row in ROWS:
        variants = [v for v in row["variants"] if SERVERS[v] in peers.ports]
        runs = {v: [] for v in variants}
        driver.log("peers, %s: warming up" % row["label"])
        for v in variants:
            peers.wrk(row, v, args.connections, args.threads, 1)
        for i in range(args.runs):
            for v in variants:
                runs[v].append(peers.wrk(row, v, args.connections, args.threads,
                                         args.duration))
            driver.log("peers, %s: run %d/%d %s" % (row["label"], i + 1, args.runs, ", ".join(
                "%s %.0f" % (v, runs[v][-1]["rps"]) for v in variants)))
        med = {v: driver.median_of(r) for v, r in runs.items()}
        sys_calls = {}
        for v in variants:
            if v in ("gateway", "floor", "webdis"):
                sys_calls[v] = peers.syscalls(row, v, args.connections, args.threads)
        results.append(dict(row=row, variants=variants, runs=runs, med=med, syscalls=sys_calls))
    return results


def server_cpu(m):
    cpu = m["cpu"]
    return next(v for k, v in cpu.items() if k not in ("redis", "client"))


def report(results, args):
    """Markdown lines of the report's section, and the failures (goals missed)."""
    lines = ["## Against the peers (issue 19)", "",
             "Each row's variants run in turn, %d alternations of %d s, wrk with %d connections "
             "and %d threads; medians. **floor**: `bench/floor.rs`, a bare axum + fred handler "
             "(the gateway's crate versions, one pool of 2, no middleware, one store call). "
             "**webdis**: Debian's package, 2 threads, the UV add as `GET /PFADD/key/visitor`. "
             "The gateway rows run its defaults (access log on) with the global layer off, "
             "except the row that says otherwise. CPU is µs per request per process "
             "(server + Redis + wrk) read from `/proc`; system calls are per request of the "
             "server process, all threads, counted by `strace -c -f` over a separate 3 s run "
             "(the tracer slows the run; the count per request is what matters)." % (
                 args.runs, args.duration, args.connections, args.threads), "",
             "| row | variant | req/s | vs gateway | p50 / p99 ms | CPU µs/req: server + Redis "
             "+ wrk | gateway CPU ÷ this | syscalls/req (main ones) |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    failures = []
    for res in results:
        med, gw = res["med"], res["med"]["gateway"]
        for v in res["variants"]:
            m = med[v]
            cpu = m["cpu"]
            sc = res["syscalls"].get(v)
            sc_text = "–"
            if sc:
                sc_text = "%.2f (%s)" % (sc[0], ", ".join(
                    "%s %.2f" % kv for kv in sc[1].items() if kv[1] >= 0.05))
            lines.append("| %s | %s | %.0f | %s | %.2f / %.2f | %.0f + %.0f + %.0f | %s | %s |" % (
                res["row"]["label"], v, m["rps"],
                "–" if v == "gateway" else "%.2f×" % (gw["rps"] / m["rps"]),
                m["p50"], m["p99"], server_cpu(m), cpu["redis"], cpu["client"],
                "–" if v == "gateway" else "%.2f×" % (server_cpu(gw) / server_cpu(m)),
                sc_text))
    lines += ["", "Goals (issue 19), from the rows above:", ""]
    for res in results:
        med, gw = res["med"], res["med"]["gateway"]
        label = res["row"]["label"]
        if "floor" in med:
            r = server_cpu(gw) / server_cpu(med["floor"])
            ok = r <= res["row"]["cpu_goal"]
            lines.append("- %s: gateway CPU per request %.2f× the floor's (goal ≤ %g×) %s" % (
                label, r, res["row"]["cpu_goal"], "✅" if ok else "❌"))
        if gw["p99"] > 5.0:
            lines.append("- %s: gateway p99 %.2f ms (goal ≤ 5 ms) ❌" % (label, gw["p99"]))
        if "webdis" in med:
            r = gw["rps"] / med["webdis"]["rps"]
            lines.append("- %s: gateway throughput %.2f× webdis's (goal ≥ 1.0×) %s" % (
                label, r, "✅" if r >= 1.0 else "❌"))
        on = med.get("gateway, global layer on")
        if on:
            r = on["rps"] / gw["rps"]
            lines.append("- %s: global layer on %.2f× the throughput with it off (goal ≥ 0.8×) "
                         "%s" % (label, r, "✅" if r >= 0.8 else "❌"))
        off = med.get("gateway, access log off")
        if off:
            lines.append("- %s: the access log costs %.0f µs of gateway CPU per request "
                         "(%.0f with it, %.0f without)" % (
                             label, server_cpu(gw) - server_cpu(off), server_cpu(gw),
                             server_cpu(off)))
    lines += ["", "Every run (req/s):", ""]
    for res in results:
        lines.append("- %s: %s" % (res["row"]["label"], "; ".join(
            "%s %s" % (v, ", ".join("%.0f" % r["rps"] for r in res["runs"][v]))
            for v in res["variants"])))
    lines.append("")
    return lines, failures


def median(xs):
    return statistics.median(xs) if xs else None
