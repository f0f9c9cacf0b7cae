"""What `GATEWAY_WRITE_REPLICAS=1` costs (docs/operations.md "Durable writes"), in the
same run on the same private Redis, given one replica for this part only (so the main table
is measured without replication, as before):

- purchase (201) and enqueue, which wait for the replica, through a gateway with N=0 and one
  with N=1, alternating, `runs` times each; the figures are medians;
- the sold-out purchase (409), which does not wait, through both: requests sharing the
  pipelined connections with the waits must not pay for them;
- the `WAIT` calls Redis had during the N=1 runs, per write: one wait covers a batch;
- what each run left for the replica to do: the replication stream it had yet to acknowledge
  when the run ended, how long it then took to catch up, and its CPU per write (information:
  on two shared cores, an N=0 run leaves the replica behind, and the work it defers is done
  between runs, where no run is timed; an N=1 run cannot defer it).
"""

import re
import statistics
import time

import harness

# id, label, wrk scenario (bench/wrk.lua), whether the answer waits for the replica.
ROWS = [
    dict(id="seckill", label="seckill purchase (201)", scenario="seckill", waits=True),
    dict(id="enqueue", label="enqueue (201)", scenario="enqueue", waits=True),
    dict(id="seckill_soldout", label="seckill purchase, sold out (409): no wait",
         scenario="seckill_soldout", waits=False),
]

GOAL = 0.8  # N=1 throughput at 50 connections, as a share of N=0's


def waits(redis):
    stats = redis.cli("INFO", "commandstats")
    m = re.search(r"cmdstat_wait:calls=(\d+)", stats)
    return int(m.group(1)) if m else 0


# The replica started by `start_replica` (a harness.Redis), to read its own offset.
REPLICA = []


def replica_behind(redis):
    """Bytes of the replication stream the replica has yet to process (None: no replica). Read
    from the replica itself: the offset the master shows is the replica's last acknowledgement,
    sent once a second unless a `WAIT` asks, so it lags by up to a second."""
    info = redis.cli("INFO", "replication")
    master = re.search(r"master_repl_offset:(\d+)", info)
    if REPLICA:
        replica = re.search(r"slave_repl_offset:(\d+)", REPLICA[0].cli("INFO", "replication"))
    else:
        replica = re.search(r"slave0:.*?offset=(\d+)", info)
    if not master or not replica:
        return None
    return int(master.group(1)) - int(replica.group(1))


def caught_up(redis):
    """Waits until the replica holds the whole stream: on two shared cores a replica falls
    behind while a run writes at full speed, and the next run's waits would pay for the
    backlog (a whole N=1 run of 503s once, 2026-11-26)."""
    harness.wait_until(lambda: (replica_behind(redis) or 0) == 0, 60, "the replica catching up")


def catch_up_time(redis):
    """Seconds until the replica holds the whole stream, polled every 10 ms (what the run just
    measured left for it to do)."""
    started = time.time()
    while (replica_behind(redis) or 0) > 0 and time.time() - started < 60:
        time.sleep(0.01)
    return time.time() - started


def start_replica(procs, logdir, rport):
    """A replica of the private Redis on `rport`, in sync (its pid in `harness.PIDS`)."""
    redis = harness.Redis(rport)
    redis.cli("CONFIG", "SET", "repl-diskless-sync-delay", "0")
    replica_port = harness.free_port()
    harness.PIDS["replica"] = procs.start("redis-replica", [
        "redis-server", "--port", str(replica_port), "--bind", "127.0.0.1", "--save", "",
        "--appendonly", "no", "--dir", logdir, "--dbfilename", "replica.rdb",
        "--replicaof", "127.0.0.1", str(rport)]).pid
    harness.wait_until(lambda: "state=online" in redis.cli("INFO", "replication"), 60,
                       "the replica's sync")
    REPLICA[:] = [harness.Redis(replica_port)]


def start(procs, logdir, rport, gateway, base_env):
    """A replica of the private Redis, in sync, and a gateway with N=1; its port."""
    start_replica(procs, logdir, rport)
    port = harness.free_port()
    harness.PIDS[port] = procs.start("gateway-durable", [gateway], env=dict(
        base_env, GATEWAY_LISTEN="127.0.0.1:%d" % port, GATEWAY_GLOBAL_LIMIT="off",
        GATEWAY_WRITE_REPLICAS="1")).pid
    harness.wait_until(lambda: harness.Http(port).call("GET", "/readyz")[0] == 200, 30,
                       "gateway-durable (log: %s)" % procs.log_tail("gateway-durable"))
    return port


def measure(bench, redis, ports, args):
    """For each row, N=0 and N=1 alternating: result dicts for `report`."""
    out = []
    for row in ROWS:
        res = dict(row=row, n0=[], n1=[], wait_calls=0, writes=0)
        for port in ports:
            caught_up(redis)
            bench.wrk(port, row, args.connections, seconds=1)  # warm-up
        for i in range(args.runs):
            caught_up(redis)
            res["n0"].append(replica_run(bench, redis, ports[0], row, args))
            caught_up(redis)
            before = waits(redis)
            g = replica_run(bench, redis, ports[1], row, args)
            res["wait_calls"] += waits(redis) - before
            res["writes"] += g["requests"] - g["non2xx"] if row["waits"] else 0
            res["n1"].append(g)
            harness.log("durable %s: run %d/%d N=0 %.0f req/s, N=1 %.0f req/s" % (
                row["id"], i + 1, args.runs, res["n0"][-1]["rps"], g["rps"]))
        bad = sum(r["non2xx"] + r["socket_errors"] for r in res["n0"] + res["n1"])
        if row["waits"] and bad:
            bench.failures.append("durable %s: %d unexpected responses (non-2xx N=0 %d, N=1 %d; "
                                  "socket errors N=0 %d, N=1 %d)" % (
                                      row["id"], bad, *(sum(r[k] for r in res[n]) for k in (
                                          "non2xx", "socket_errors") for n in ("n0", "n1"))))
        out.append(res)
    return out


def replica_run(bench, redis, port, row, args):
    """One wrk run, with what it left the replica: `behind` (bytes of stream unacknowledged
    at its end), `catch_up` (seconds to apply them) and `replica_cpu` (µs per request, the
    run and the catch-up together)."""
    before = harness.proc_cpu(harness.PIDS["replica"])
    r = bench.wrk(port, row, args.connections)
    r["behind"] = replica_behind(redis) or 0
    r["catch_up"] = catch_up_time(redis)
    r["replica_cpu"] = (harness.proc_cpu(harness.PIDS["replica"]) - before) * 1e6 / max(
        r["requests"], 1)
    return r


def goals(results):
    """[(text, ok)]: the goal for each row whose answer waits for the replica."""
    out = []
    for res in results:
        if res["row"]["waits"]:
            n0 = statistics.median(r["rps"] for r in res["n0"])
            n1 = statistics.median(r["rps"] for r in res["n1"])
            r = n1 / n0 if n0 else 0
            out.append(("durable writes, %s: N=1 %.2f× the throughput of N=0 (goal ≥ %.1f×)" % (
                res["row"]["label"], r, GOAL), r >= GOAL))
    return out


def report(results, args):
    """The report's section, as lines."""
    lines = ["## Durable writes (`GATEWAY_WRITE_REPLICAS`)", "",
             "The same Redis given one replica (`replicaof`, same machine) for these rows only; "
             "two gateways on it, one with `GATEWAY_WRITE_REPLICAS=1` (N=1), one without "
             "(N=0), alternating, %d connections, %d s per run, %d runs, medians; before each run "
             "the replica is let catch up (it falls behind while a run writes at full speed on "
             "the same two cores), so no run pays for another's backlog. Goal: "
             "N=1 at least %.1f× N=0's throughput for the writes that wait. WAITs per "
             "write: Redis's `WAIT` calls during the N=1 runs ÷ the writes answered; one wait "
             "covers every write answered before it. Left for the replica (information, medians): "
             "the replication stream it had not acknowledged when the run ended, the time it "
             "then took to catch up, its CPU per request over both; *with catch-up* divides "
             "each run's requests by its length plus that time, the rate the replica could "
             "follow on these two cores." % (
                 args.connections, args.duration, args.runs, GOAL), "",
             "| row | N=0 req/s | N=1 req/s | N=1 ÷ N=0 | p99 N=0 / N=1 (ms) | p99 added | "
             "WAITs per write | left behind N=0 / N=1 (MB) | catch-up N=0 / N=1 (s) | "
             "replica CPU µs/req N=0 / N=1 | N=1 ÷ N=0 with catch-up |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for res in results:
        n0 = statistics.median(r["rps"] for r in res["n0"])
        n1 = statistics.median(r["rps"] for r in res["n1"])
        p0 = statistics.median(r["p99"] for r in res["n0"])
        p1 = statistics.median(r["p99"] for r in res["n1"])
        ratio = n1 / n0 if n0 else 0
        judged = res["row"]["waits"]
        mark = (" ✓" if ratio >= GOAL else " ✗") if judged else ""
        per = "%.3f" % (res["wait_calls"] / res["writes"]) if res["writes"] else "–"

        def med(n, key):
            return statistics.median(r[key] for r in res[n])

        def followed(n):
            return statistics.median(r["requests"] / (args.duration + r["catch_up"])
                                     for r in res[n])

        lines.append("| %s | %.0f | %.0f | %.2f%s | %.2f / %.2f | %+.2f | %s | %.1f / %.1f | "
                     "%.2f / %.2f | %.0f / %.0f | %.2f |" % (
                         res["row"]["label"], n0, n1, ratio, mark, p0, p1, p1 - p0, per,
                         med("n0", "behind") / 1e6, med("n1", "behind") / 1e6,
                         med("n0", "catch_up"), med("n1", "catch_up"),
                         med("n0", "replica_cpu"), med("n1", "replica_cpu"),
                         followed("n1") / followed("n0") if followed("n0") else 0))
    lines.append("")
    return lines
