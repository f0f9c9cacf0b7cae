#!/usr/bin/env python3
"""A/B of gateway builds or settings on one endpoint, alternating runs against one Redis.

    python3 bench/ab.py [--scenario checkin] [--runs 5] \\
        thin=target/release/redis-gateway \\
        pool1=target/release/redis-gateway:GATEWAY_REDIS_POOL_SIZE=1
    python3 bench/ab.py --replica --scenario seckill \\
        n0=target/release/redis-gateway n1=target/release/redis-gateway:GATEWAY_WRITE_REPLICAS=1

Each variant is NAME=BINARY[:VAR=VALUE,...]; all run side by side (idle while another is
measured) and are measured in turn, so machine noise hits every variant alike. Prints the
median req/s, p50/p99 and CPU µs per request of each (see harness.py for the measuring).
"""

import argparse
import http.client
import os
import shutil
import statistics
import sys
import tempfile

import harness
import seeds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("variants", nargs="+")
    ap.add_argument("--scenario", default="checkin")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--replica", action="store_true",
                    help="give the private Redis one replica (for GATEWAY_WRITE_REPLICAS)")
    ap.add_argument("--replica-nice", type=int, default=0, metavar="N",
                    help="run the replica at this nice value (negative: ahead of the others)")
    ap.add_argument("--metrics", metavar="PREFIX",
                    help="print each variant's /metrics lines starting with PREFIX at the end")
    args = ap.parse_args()

    logdir = tempfile.mkdtemp(prefix="gateway-ab-")
    procs = harness.Procs(logdir)
    try:
        rport = harness.free_port()
        harness.PIDS["redis"] = procs.start("redis", [
            "redis-server", "--port", str(rport), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", logdir]).pid
        redis = harness.Redis(rport)
        harness.wait_until(lambda: redis.cli("PING") == "PONG", 10, "redis-server")
        if args.replica:
            import durable
            durable.start_replica(procs, logdir, rport)
            if args.replica_nice:
                os.setpriority(os.PRIO_PROCESS, harness.PIDS["replica"], args.replica_nice)
        variants = []
        for spec in args.variants:
            name, rest = spec.split("=", 1)
            binary, _, envs = rest.partition(":")
            port = harness.free_port()
            env = dict(os.environ, REDIS_URL="redis://127.0.0.1:%d" % rport,
                       GATEWAY_LISTEN="127.0.0.1:%d" % port, GATEWAY_GLOBAL_LIMIT="off",
                       GATEWAY_ADMIN_TOKEN=harness.ADMIN_TOKEN, RUST_LOG="info",
                       GATEWAY_SECKILL_MAX_ORDERS=str(seeds.SECKILL_STOCK * 2),
                       # The enqueue scenario adds a job per request: the queue never fills.
                       GATEWAY_QUEUE_MAX_JOBS="1000000000")
            env.update(kv.split("=", 1) for kv in envs.split(",") if kv)
            harness.PIDS[port] = procs.start(name, [binary], env=env).pid
            harness.wait_until(lambda: harness.Http(port).call("GET", "/readyz")[0] == 200, 30,
                               name)
            variants.append((name, port))
        if args.scenario.startswith("seckill"):
            # The variants share the Redis and its keys: one seeding serves them all.
            st = seeds.seed_vouchers(harness.Http(variants[0][1]))
            if st not in (200, 201):
                sys.exit("bench: seeding the vouchers answered %s" % st)
        if args.scenario == "claim_ack":
            # Every variant drains the one queue: enough due jobs for all runs (and warm-ups)
            # of all of them at 30,000 requests/s (half of them claims), above the rates
            # measured so far; a drained queue would answer empty claims and skew the row.
            seeds.seed_queue_jobs(redis, 15_000 * args.duration * (args.runs + 1)
                                  * len(variants))
        runs = {name: [] for name, _ in variants}
        for name, port in variants:  # warm-up
            harness.run_wrk(port, args.scenario, args.connections, args.threads, 1)
        base = 0
        for i in range(args.runs):
            for name, port in variants:
                base += 20_000_000
                r = harness.run_wrk(port, args.scenario, args.connections, args.threads,
                                    args.duration, base)
                runs[name].append(r)
                print("run %d %s: %.0f req/s, %d non-2xx" % (i + 1, name, r["rps"], r["non2xx"]),
                      file=sys.stderr)
        if args.scenario == "claim_ack":
            left = redis.cli("ZCARD", harness.PREFIX + "q:{bench-claim}:due")
            print("(claim_ack: %s due jobs left: the queue never ran dry)" % left)
        print("| variant | req/s (median) | p50 / p99 ms | CPU µs/request: gateway + Redis + wrk"
              " | all runs |")
        print("|---|---:|---:|---:|---|")
        for name, _ in variants:
            m = harness.median_of(runs[name])
            print("| %s | %.0f | %.2f / %.2f | %.0f + %.0f + %.0f | %s |" % (
                name, m["rps"], m["p50"], m["p99"], m["cpu"]["gateway"], m["cpu"]["redis"],
                m["cpu"]["client"], ", ".join("%.0f" % r["rps"] for r in runs[name])))
        print("(median req/s spread across runs: %s)" % ", ".join(
            "%s ±%.0f%%" % (n, 100 * statistics.pstdev(r["rps"] for r in runs[n]) /
                           statistics.mean(r["rps"] for r in runs[n])) for n, _ in variants))
        if args.metrics:
            for name, port in variants:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                conn.request("GET", "/metrics",
                             headers={"Authorization": "Bearer " + harness.ADMIN_TOKEN})
                text = conn.getresponse().read().decode()
                conn.close()
                for line in text.splitlines():
                    if line.startswith(args.metrics) and "_bucket" not in line:
                        print("%s: %s" % (name, line))
    finally:
        procs.stop_all()
        shutil.rmtree(logdir, ignore_errors=True)


if __name__ == "__main__":
    main()
