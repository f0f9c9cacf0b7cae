"""The gateway against its yardsticks, in the same run on the same private Redis:

- webdis (Debian's package), the HTTP-to-Redis peer users would otherwise pick, doing the same
  Redis work its own way: a UV add as `GET /PFADD/key/visitor`, a purchase as the gateway's
  per-purchase Redis work in one script (bench/lua/seckill.lua) by `GET /EVALSHA/…`, a lock acquisition as
  `GET /SET/key/owner/NX/PX/1000`, an enqueue as bench/lua/enqueue.lua by `EVALSHA`;
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

import harness
import seeds

# id, label, wrk scenario of the gateway and the floor (`webdis`: webdis's own scenario), the
# variants measured, and the goals: `cpu_goal`, the gateway's server CPU per request at most
# this many times the floor's (the flash-sale rows too);
# `webdis_goal`, the gateway's throughput at least this many times webdis's; `global_goal`,
# the throughput with the global layer on at least this share of it off;
# `p99_ms`, the gateway's p99 (the cheap rows).
ROWS = [
    dict(id="healthz", label="`GET /healthz`", scenario="healthz",
         variants=["gateway", "floor"], cpu_goal=1.3, p99_ms=5.0),
    dict(id="uv", label="UV add `POST /v1/uv/{page}` (1 visitor)", scenario="uv",
         webdis="webdis_uv", variants=["gateway", "gateway, global layer on", "floor", "webdis",
                                       "gateway, access log off"],
         cpu_goal=1.3, webdis_goal=1.0, global_goal=0.75, p99_ms=5.0),
    dict(id="checkin", label="check-in `POST /v1/checkins/{user}`", scenario="checkin",
         variants=["gateway", "floor"], cpu_goal=1.3, p99_ms=5.0),
    dict(id="ratelimit", label="rate-limit `POST /v1/ratelimit/check`", scenario="ratelimit",
         variants=["gateway", "floor"], cpu_goal=1.3, p99_ms=5.0),
    # The flash-sale rows: every answer a sale, an acquisition, a new job.
    dict(id="seckill", label="seckill purchase (201), one hot voucher, distinct buyers",
         scenario="seckill", webdis="webdis_seckill", webdis_sha="seckill",
         variants=["gateway", "gateway, global layer on", "floor", "webdis"],
         cpu_goal=1.3, webdis_goal=1.3, global_goal=0.85),
    dict(id="lock_acquire", label="lock acquire `POST /v1/locks/{name}`",
         scenario="lock_acquire", webdis="webdis_lock", variants=["gateway", "floor", "webdis"],
         cpu_goal=1.3, webdis_goal=1.0),
    dict(id="enqueue", label="enqueue `POST /v1/queues/{q}/jobs`", scenario="enqueue",
         webdis="webdis_enqueue", webdis_sha="enqueue",
         variants=["gateway", "floor", "webdis"], cpu_goal=1.3, webdis_goal=1.0),
]

# Row ids `--only` selects here (besides `peers`, every row, and `global`, the global layer's
# two rows with only the gateway's variants).
IDS = {r["id"] for r in ROWS}
GLOBAL_ROWS = ("uv", "seckill")
GLOBAL_VARIANTS = ["gateway", "gateway, global layer on"]

# The variant → which server (a key of `Peers.ports`) and which wrk scenario it runs.
SERVERS = {
    "gateway": "gateway",
    "floor": "floor",
    "webdis": "webdis",
    "gateway, access log off": "gateway-nolog",
    "gateway, global layer on": "gateway-limited",
}

# wrk's BENCH_BASE for these rows: buyers and job ids of a run never repeat an earlier run's,
# and stay clear of the driver's own range (which starts at 0) and its probe (4,000,000,000).
BASE = 3_000_000_000
HUGE_STOCK = 10**12


def selected(only, no_peers):
    """[(row, variants)] that `--only` and `--no-peers` ask for."""
    out = []
    for row in ROWS:
        variants = list(row["variants"])
        if only and "peers" not in only and row["id"] not in only:
            if "global" not in only or row["id"] not in GLOBAL_ROWS:
                continue
            variants = list(GLOBAL_VARIANTS)
        if no_peers:
            # The global layer is the gateway against itself: it stays without the peers.
            if row["id"] not in GLOBAL_ROWS:
                continue
            variants = [v for v in variants if v in GLOBAL_VARIANTS]
        out.append((row, variants))
    return out


def webdis_config(logdir, port, redis_port):
    path = os.path.join(logdir, "webdis.json")
    with open(path, "w") as f:
        json.dump({"redis_host": "127.0.0.1", "redis_port": redis_port, "http_host": "127.0.0.1",
                   "http_port": port, "threads": 2, "daemonize": False, "database": 0,
                   "verbosity": 0, "logfile": os.path.join(logdir, "webdis.log")}, f)
    return path


class Peers:
    """Starts the floor, webdis and a log-less gateway (those `rows` need) beside the driver's
    processes, and gives the floor's and webdis's purchase keys their stock."""

    def __init__(self, procs, logdir, redis_port, gateway_bin, base_env, ports, shas, rows):
        self.ports = dict(ports)  # name → port, from the driver: gateway, gateway-limited
        self.shas = shas
        self.base = BASE
        self.missing = {}
        need = {SERVERS[v] for _, variants in rows for v in variants}
        redis = harness.Redis(redis_port)
        for key in ("floor:sk:{bench}", "bench:wsk"):
            redis.cli("HSET", key, *seeds.raw_voucher(HUGE_STOCK))
        if "floor" in need:
            floor_bin = os.path.join(os.path.dirname(gateway_bin), "examples", "floor")
            self.ports["floor"] = harness.free_port()
            harness.PIDS[self.ports["floor"]] = procs.start("floor", [floor_bin], env=dict(
                os.environ, FLOOR_LISTEN="127.0.0.1:%d" % self.ports["floor"],
                REDIS_URL="redis://127.0.0.1:%d" % redis_port,
                FLOOR_GCRA_SHA=shas.get("gcra", ""), FLOOR_SECKILL_SHA=shas.get("seckill", ""),
                FLOOR_ENQUEUE_SHA=shas.get("enqueue", ""))).pid
        if "gateway-nolog" in need:
            self.ports["gateway-nolog"] = harness.free_port()
            harness.PIDS[self.ports["gateway-nolog"]] = procs.start("gateway-nolog", [gateway_bin],
                env=dict(base_env, GATEWAY_LISTEN="127.0.0.1:%d" % self.ports["gateway-nolog"],
                         GATEWAY_GLOBAL_LIMIT="off", GATEWAY_ACCESS_LOG="off")).pid
        if "webdis" not in need:
            pass
        elif shutil.which("webdis"):
            self.ports["webdis"] = harness.free_port()
            harness.PIDS[self.ports["webdis"]] = procs.start("webdis", [
                "webdis", webdis_config(logdir, self.ports["webdis"], redis_port)]).pid
        else:
            self.missing["webdis"] = "webdis is not installed"
        for name in ("floor", "gateway-nolog", "webdis"):
            if name in self.ports:
                port = self.ports[name]
                path = "/PING" if name == "webdis" else "/healthz"
                harness.wait_until(lambda: harness.Http(port).call("GET", path)[0] == 200, 30,
                                   name + " (log: %s)" % procs.log_tail(name))

    def wrk(self, row, variant, conns, threads, seconds):
        port = self.ports[SERVERS[variant]]
        env = {}
        if variant == "webdis":
            scenario = row["webdis"]
            if row.get("webdis_sha"):
                env["BENCH_SHA"] = self.shas[row["webdis_sha"]]
        else:
            scenario = row["scenario"]
        if row["id"] in ("seckill", "enqueue"):
            # user_id stays ≤ 4,294,967,295: only the rows that number their requests move on.
            self.base += 20_000_000
        return harness.run_wrk(port, scenario, conns, threads, seconds, self.base, env)

    def syscalls(self, row, variant, conns, threads, seconds=3):
        """System calls per request of the server's process (all threads) over a short wrk
        run under `strace -c`: strace slows the server, but not what it asks the kernel per
        request. → (total per request, {call: per request} of the main ones)."""
        if not shutil.which("strace"):
            return None
        pid = harness.PIDS[self.ports[SERVERS[variant]]]
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


def measure(peers, rows, args, redis):
    results = []
    for row, variants in rows:
        variants = [v for v in variants if SERVERS[v] in peers.ports]
        runs = {v: [] for v in variants}
        harness.log("peers, %s: warming up" % row["label"])
        for v in variants:
            peers.wrk(row, v, args.connections, args.threads, 1)
        buyers = int(redis.cli("HLEN", "bench:wsk:buyers") or 0)
        for i in range(args.runs):
            for v in variants:
                runs[v].append(peers.wrk(row, v, args.connections, args.threads,
                                         args.duration))
            harness.log("peers, %s: run %d/%d %s" % (row["label"], i + 1, args.runs, ", ".join(
                "%s %.0f" % (v, runs[v][-1]["rps"]) for v in variants)))
        med = {v: harness.median_of(r) for v, r in runs.items()}
        problems, notes = [], []
        for v in variants:
            bad = sum(r["non2xx"] + r["socket_errors"] for r in runs[v])
            if bad:
                problems.append("%s: %d non-2xx answers or socket errors" % (v, bad))
        if row["id"] == "seckill" and "webdis" in runs:
            # webdis answers 200 whatever the script says: a buyer it did not add to the set
            # was a refusal (already bought), not a sale.
            sold = int(redis.cli("HLEN", "bench:wsk:buyers")) - buyers
            asked = sum(r["requests"] for r in runs["webdis"])
            stats = re.search(r"cmdstat_evalsha:(\S+)", redis.cli("INFO", "commandstats"))
            text = "webdis: %d purchases answered, %d sales (EVALSHA %s)" % (
                asked, sold, stats.group(1) if stats else "?")
            # Seen once, 12 short of 52,656 under load and not again: more than a few per
            # thousand means refusals, fewer is left to the note.
            if sold < asked * 0.999:
                problems.append(text)
            elif sold < asked:
                notes.append(text)
        sys_calls = {}
        for v in variants:
            if v in ("gateway", "floor", "webdis") and not args.quick:
                sys_calls[v] = peers.syscalls(row, v, args.connections, args.threads)
        results.append(dict(row=row, variants=variants, runs=runs, med=med, syscalls=sys_calls,
                            problems=problems, notes=notes))
    return results


def server_cpu(m):
    cpu = m["cpu"]
    return next(v for k, v in cpu.items() if k not in ("redis", "client"))


def goals(res):
    """[(text, ok)] of a row's goals, from its medians."""
    med, gw, row = res["med"], res["med"]["gateway"], res["row"]
    label, out = row["label"], []
    if "floor" in med and row.get("cpu_goal"):
        r = server_cpu(gw) / server_cpu(med["floor"])
        out.append(("%s: gateway CPU per request %.2f× the floor's (goal ≤ %g×)" % (
            label, r, row["cpu_goal"]), r <= row["cpu_goal"]))
    if "webdis" in med and row.get("webdis_goal"):
        r = gw["rps"] / med["webdis"]["rps"]
        out.append(("%s: gateway throughput %.2f× webdis's (goal ≥ %g×)" % (
            label, r, row["webdis_goal"]), r >= row["webdis_goal"]))
    on = res["runs"].get("gateway, global layer on")
    if on and row.get("global_goal"):
        # Paired: in each alternation the run with the layer on follows the one with it off,
        # and the ratio is the median of the alternations' own, so the machine's drift over
        # an alternation (half a minute, five variants) stays out of it: one run's alternations
        # gave 0.71×, 0.55× and 1.08× with the layer on after webdis and the floor (2026-11-26).
        r = statistics.median(o["rps"] / g["rps"] for o, g in zip(on, res["runs"]["gateway"]))
        out.append(("%s: global layer on %.2f× the throughput with it off, median of the "
                    "alternations' own ratios (goal ≥ %g×)" % (label, r, row["global_goal"]),
                    r >= row["global_goal"]))
    if row.get("p99_ms") and len(res["variants"]) > 2:
        out.append(("%s: gateway p99 %.2f ms (goal ≤ %g ms)" % (label, gw["p99"], row["p99_ms"]),
                    gw["p99"] <= row["p99_ms"]))
    for p in res["problems"]:
        out.append(("%s: %s" % (label, p), False))
    return out


def report(results, args):
    """Markdown lines of the report's section, the goals [(text, ok)] and the failures
    (unexpected answers: a goal missed is not a failure)."""
    lines = ["## Against the peers, the floor and the global layer", "",
             "Each row's variants run in turn, %d alternation%s of %d s, wrk with %d connections "
             "and %d threads; medians. **floor**: `bench/floor.rs`, a bare axum + fred handler "
             "(the gateway's crate versions, one pool of 2, no middleware, one store call). "
             "**webdis**: Debian's package, 2 threads, each row's Redis work in its own URL form "
             "(see \"What the rows send\"). The gateway rows run its defaults (access log on) "
             "with the global layer off, except the variants that say otherwise. CPU is µs per "
             "request per process (server + Redis + wrk) read from `/proc`; system calls are "
             "per request of the server process, all threads, counted by `strace -c -f` over a "
             "separate 3 s run (the tracer slows the run; the count per request is what "
             "matters)." % (args.runs, "" if args.runs == 1 else "s", args.duration,
                            args.connections, args.threads), "",
             "| row | variant | req/s | gateway ÷ this | p50 / p99 ms | CPU µs/req: server + "
             "Redis + wrk | gateway CPU ÷ this | syscalls/req (main ones) |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    failures, all_goals = [], []
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
        all_goals += goals(res)
        failures += ["peers, %s: %s" % (res["row"]["label"], p) for p in res["problems"]]
    lines += ["", "Goals, from the rows above:", ""]
    lines += ["- %s %s" % (text, "✅" if ok else "❌") for text, ok in all_goals]
    for res in results:
        off = res["med"].get("gateway, access log off")
        if off:
            gw = res["med"]["gateway"]
            lines.append("- %s: the access log costs %.0f µs of gateway CPU per request "
                         "(%.0f with it, %.0f without)" % (
                             res["row"]["label"], server_cpu(gw) - server_cpu(off),
                             server_cpu(gw), server_cpu(off)))
    lines += ["- %s: %s" % (res["row"]["label"], n) for res in results for n in res["notes"]]
    lines += ["", "Every run (req/s):", ""]
    for res in results:
        lines.append("- %s: %s" % (res["row"]["label"], "; ".join(
            "%s %s" % (v, ", ".join("%.0f" % r["rps"] for r in res["runs"][v]))
            for v in res["variants"])))
    lines.append("")
    return lines, all_goals, failures


def median(xs):
    return statistics.median(xs) if xs else None
