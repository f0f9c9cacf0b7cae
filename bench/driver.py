#!/usr/bin/env python3
"""The benchmark harness behind ./scripts/bench (standard library only).

Starts a private redis-server (no persistence) and the release gateway on free loopback ports,
seeds data, then for each row alternates a wrk run against the gateway endpoint with a
redis-benchmark run of the raw Redis command(s) it maps to (same connection count, no
pipelining). Each side's throughput, p50 and p99 are the medians over the alternations; the
table shows gateway / raw. Endpoints that answer 404/405 (not merged yet) are shown as n/a,
with the raw side measured once so every reference command is still exercised.

This file owns the rows and their measuring, and runs the other parts in turn: the peers
(bench/peers.py), the sale burst (burst.py), durable writes (durable.py) and the dedup engines
side by side (engines.py). What they all use is in bench/harness.py, the seeding in seeds.py
and the written report in report.py; none of them imports this file.
"""

import argparse
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time

import burst
import durable
import engines
import events
import peers
from harness import (ADMIN_TOKEN, BENCH, GATEWAY, PIDS, PREFIX, ROOT, Http, Procs, Redis,
                     free_port, loadavg, log, median_of, run_h2load, run_rb, run_wrk,
                     wait_until)
from report import OWN_SECTIONS, main_goals, replace_sections, write_report
from seeds import QUEUE_PAYLOAD, SECKILL_STOCK, seed

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
# Measuring


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
                    "burst, bench/burst.py), durable (bench/durable.py), dedup_engines "
                    "(the dedup row on Lua, RedisBloom and valkey-bloom, each on its own "
                    "server: bench/engines.py) and events (10,000 event streams on one voucher: "
                    "bench/events.py)")
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
            port = durable.start(procs, logdir, rport, args.gateway, base_env)
            found = durable.measure(bench, redis, (gw_port, port), args)
            sections["durable"] = durable.report(found, args)
            goals += durable.goals(found)
        if not only or "dedup_engines" in only:
            # Its own servers and gateways, stopped when it is done.
            own = Procs(logdir)
            try:
                found = engines.measure(own, logdir, args.gateway, base_env, args)
                bench.failures += ["%s exited during the run:\n%s" % (n, own.log_tail(n))
                                   for n, p in own.procs if p.poll() is not None]
            finally:
                own.stop_all()
            sections["dedup_engines"], engine_failures = engines.report(found, args)
            bench.failures += engine_failures
        if not only or "events" in only:
            # Its own Redis and gateway, stopped when it is done.
            own = Procs(logdir)
            try:
                found = events.measure(own, logdir, args.gateway, base_env)
            finally:
                own.stop_all()
            sections["events"], event_goals, event_failures = events.report(found)
            goals += event_goals
            bench.failures += event_failures
        for name in ("floor", "webdis", "gateway-nolog", "gateway-durable", "redis-replica"):
            if any(p.poll() is not None for n, p in procs.procs if n == name):
                bench.failures.append("%s exited during the run:\n%s" % (name,
                                                                       procs.log_tail(name)))
        for name in ("gateway", "gateway-limited", "redis"):
            if any(p.poll() is not None for n, p in procs.procs if n == name):
                bench.failures.append("%s exited during the run:\n%s" % (name,
                                                                       procs.log_tail(name)))
        load = "%s → %s" % (load_start, loadavg())
        if only and not bench.results and sections and set(sections) <= set(OWN_SECTIONS):
            # Only parts with sections of their own ran: the rest of the report stays.
            text = replace_sections(args.out, sections)
        else:
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
