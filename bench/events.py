"""Live events beside the polling they replace: STREAMS event streams open on one voucher on one
release gateway (its own Redis 7, no persistence, global layer off) while one buyer buys
PURCHASES units, PAUSE_MS apart.

- delivery: the p50 / p99 / max from a purchase's `201` to every stream's first `stock` event
  that shows it (a coalesced event shows several), timed by the client bench/sse_client.rs
  (one Tokio thread; `cargo build --release --example sse_client`);
- memory: the gateway's RSS (`/proc/<pid>/status` VmRSS) with every stream open and idle, less
  its RSS before the first one, ÷ STREAMS;
- CPU: the gateway's CPU (`/proc`) over the purchases ÷ the stock events delivered, against its
  CPU per `GET /v1/seckill/vouchers/{id}` (wrk, POLL_SECONDS, the same gateway and voucher, in
  the same run): what a stream costs per change against what a poll costs per look;
- the floor: the same streams and purchases on bench/floor.rs's events route (an in-process
  `broadcast` per voucher, coalesced to one event per 100 ms as the gateway's, one wake-up and one write per stream per change: the least a design
  that writes each client's events to its own socket can pay), its CPU per event beside the
  gateway's, and against the gateway's CPU per `GET`: how much of the goal any such design
  could reach on this machine;
- the store: `SPUBLISH` and `SSUBSCRIBE` calls (INFO commandstats) over the purchases, with
  STREAMS streams and with one, so that the store's work per change is seen not to grow with
  the clients.
"""

import os
import re
import subprocess
import time

import harness
import seeds

STREAMS = 10_000
PURCHASES = 200
PAUSE_MS = 20
POLL_SECONDS = 5
SECTION = "## Live events (10,000 streams on one voucher)"
P99_GOAL_MS = 250.0
RSS_GOAL_KIB = 16.0
CPU_GOAL = 0.2


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def calls(redis, command):
    m = re.search(r"cmdstat_%s:calls=(\d+)" % command, redis.cli("INFO", "commandstats"))
    return int(m.group(1)) if m else 0


def voucher(gw, v, stock):
    body = {"stock": stock, "begin": "2020-01-01T00:00:00Z", "end": "2100-01-01T00:00:00Z"}
    st, _, reply = gw.call("PUT", "/v1/seckill/vouchers/" + v, body, admin=True)
    if st not in (200, 201):
        raise RuntimeError("voucher %s: %s %s" % (v, st, reply))


def one_round(client, port, redis, pid, v, streams):
    """Opens `streams` streams on `v`, then buys; what the client and the store said."""
    before = rss_kib(pid)
    pub, sub = calls(redis, "spublish"), calls(redis, "ssubscribe")
    p = subprocess.Popen([client, str(port), v, str(streams), str(PURCHASES), str(PAUSE_MS)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    opened = p.stdout.readline().strip()
    if not opened.startswith("open"):
        p.kill()
        raise RuntimeError("sse_client did not open its streams: %r" % opened)
    time.sleep(1)  # the gateway settles (its allocator, its idle timers) before RSS is read
    idle = rss_kib(pid)
    cpu, user = harness.proc_cpu(pid), harness.proc_cpu_user(pid)
    out, _ = p.communicate("go\n", timeout=600)
    cpu, user = harness.proc_cpu(pid) - cpu, harness.proc_cpu_user(pid) - user
    fields = dict(zip(out.split()[::2], out.split()[1::2]))
    return dict(
        rss_per_stream_kib=(idle - before) / streams,
        events=int(fields["events"]), p50=float(fields["p50_ms"]),
        p99=float(fields["p99_ms"]), max=float(fields["max_ms"]),
        missed=int(fields["missed"]), cpu_s=cpu, user_s=user,
        publishes=calls(redis, "spublish") - pub, subscribes=calls(redis, "ssubscribe") - sub)


def measure(procs, logdir, gateway, base_env):
    client = os.path.join(os.path.dirname(gateway), "examples", "sse_client")
    found = dict(when=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                 load=harness.loadavg(), error=None)
    rport = harness.free_port()
    d = os.path.join(logdir, "events-redis")
    os.makedirs(d, exist_ok=True)
    harness.PIDS["events-redis"] = procs.start("events-redis", [
        "redis-server", "--port", str(rport), "--bind", "127.0.0.1", "--save", "",
        "--appendonly", "no", "--dir", d]).pid
    redis = harness.Redis(rport)
    harness.wait_until(lambda: redis.cli("PING") == "PONG", 10, "events-redis")
    port = harness.free_port()
    pid = procs.start("events-gateway", [gateway], env=dict(
        base_env, REDIS_URL="redis://127.0.0.1:%d" % rport, GATEWAY_LISTEN="127.0.0.1:%d" % port,
        GATEWAY_GLOBAL_LIMIT="off", GATEWAY_MAX_CONNECTIONS="15000",
        GATEWAY_MAX_CONNECTIONS_PER_ADDRESS="15000",
        GATEWAY_MAX_STREAMS_PER_CLIENT="15000")).pid
    harness.PIDS[port] = pid
    harness.PIDS["redis"] = harness.PIDS["events-redis"]
    gw = harness.Http(port)
    harness.wait_until(lambda: gw.call("GET", "/readyz")[0] == 200, 30, "events-gateway")
    try:
        voucher(gw, "live-one", PURCHASES)
        found["one"] = one_round(client, port, redis, pid, "live-one", 1)
        voucher(gw, "live", PURCHASES)
        found["many"] = one_round(client, port, redis, pid, "live", STREAMS)
        harness.log("live events: %r" % found["many"])
        voucher(gw, "bench-poll", 1)
        cpu, user = harness.proc_cpu(pid), harness.proc_cpu_user(pid)
        r = subprocess.run(["wrk", "-t", "1", "-c", "16", "-d", "%ds" % POLL_SECONDS, "--latency",
                            "http://127.0.0.1:%d/v1/seckill/vouchers/bench-poll" % port],
                           capture_output=True, text=True)
        cpu, user = harness.proc_cpu(pid) - cpu, harness.proc_cpu_user(pid) - user
        parsed = harness.parse_wrk(r.stdout)
        if parsed is None:
            raise RuntimeError("wrk failed: " + r.stdout + r.stderr)
        n = max(parsed["requests"], 1)
        found["poll"] = dict(rps=parsed["rps"], cpu_us=cpu * 1e6 / n, user_us=user * 1e6 / n)
        found["floor"] = floor_round(procs, client, gateway, redis, rport)
    except (RuntimeError, subprocess.SubprocessError, OSError, KeyError, ValueError) as e:
        found["error"] = str(e)
    found["load_end"] = harness.loadavg()
    return found


def floor_round(procs, client, gateway, redis, rport):
    """The floor's events route under the same streams and purchases."""
    sha = redis.cli("SCRIPT", "LOAD", open(os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "lua", "seckill.lua")).read())
    redis.cli("HSET", "floor:sk:{live-floor}", *seeds.raw_voucher(PURCHASES))
    port = harness.free_port()
    floor_bin = os.path.join(os.path.dirname(gateway), "examples", "floor")
    pid = procs.start("events-floor", [floor_bin], env=dict(
        os.environ, FLOOR_LISTEN="127.0.0.1:%d" % port, REDIS_URL="redis://127.0.0.1:%d" % rport,
        FLOOR_SECKILL_SHA=sha)).pid
    harness.PIDS["events-floor"] = pid
    floor = harness.Http(port)
    harness.wait_until(lambda: floor.call("GET", "/healthz")[0] == 200, 30, "events-floor")
    return one_round(client, port, redis, pid, "live-floor", STREAMS)


def report(found):
    """The report's section, as lines, the goals [(text, ok)] and the failures."""
    lines = [SECTION, "",
             "Measured %s (`bench/events.py`, client `bench/sse_client.rs`); load average (1 min) "
             "at the start and end of this part: %s → %s. %s streams on one voucher (one release "
             "gateway, its own Redis 7), then one buyer buys %d units %d ms apart; the same with "
             "one stream beside it. Delivery: from each purchase's `201` to each stream's first "
             "`stock` event showing it. RSS per idle stream: the gateway's VmRSS with every "
             "stream open less before, ÷ streams. CPU per event: the gateway's CPU over the "
             "purchases ÷ stock events delivered, against its CPU per `GET` of the voucher "
             "(wrk, 16 connections, %d s, same run)." % (
                 found["when"], found["load"], found.get("load_end", "?"),
                 "{:,}".format(STREAMS), PURCHASES, PAUSE_MS, POLL_SECONDS), ""]
    if found.get("error"):
        return (lines + ["**FAILED**: " + found["error"], ""], [],
                ["live events: " + found["error"]])
    many, one, poll = found["many"], found["one"], found["poll"]
    per_event_us = many["cpu_s"] * 1e6 / max(many["events"], 1)
    ratio = per_event_us / poll["cpu_us"] if poll["cpu_us"] else float("inf")
    lines += [
        "| streams | stock events delivered | p50 / p99 / max ms (201 → event) | missed | RSS "
        "per idle stream | gateway CPU µs per event | ÷ CPU per GET | SPUBLISH per purchase | "
        "SSUBSCRIBE |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    # The one-stream row shows that the store's work does not grow with the streams; its CPU
    # and RSS per stream are the purchases' own, spread over one stream's events: not shown.
    lines.append("| 1 | %d | %.1f / %.1f / %.1f | %d | — | — | — | %.2f | %d |" % (
        one["events"], one["p50"], one["p99"], one["max"], one["missed"],
        one["publishes"] / PURCHASES, one["subscribes"]))
    lines.append("| %s | %d | %.1f / %.1f / %.1f | %d | %.1f KiB | %.2f | %.2f× | %.2f | %d |" % (
        "{:,}".format(STREAMS), many["events"], many["p50"], many["p99"], many["max"],
        many["missed"], many["rss_per_stream_kib"], per_event_us, ratio,
        many["publishes"] / PURCHASES, many["subscribes"]))
    user_event_us = many.get("user_s", 0) * 1e6 / max(many["events"], 1)
    user_ratio = user_event_us / poll["user_us"] if poll.get("user_us") else float("inf")
    floor = found.get("floor")
    if floor:
        floor_us = floor["cpu_s"] * 1e6 / max(floor["events"], 1)
        floor_user_us = floor["user_s"] * 1e6 / max(floor["events"], 1)
        lines.append("| %s, the floor | %d | %.1f / %.1f / %.1f | %d | %.1f KiB | %.2f | %.2f× "
                     "| — | — |" % (
                         "{:,}".format(STREAMS), floor["events"], floor["p50"], floor["p99"],
                         floor["max"], floor["missed"], floor["rss_per_stream_kib"], floor_us,
                         floor_us / poll["cpu_us"] if poll["cpu_us"] else float("inf")))
    lines += ["", "The polling it replaces: `GET /v1/seckill/vouchers/{id}` %.0f req/s, gateway "
              "CPU %.1f µs per request." % (poll["rps"], poll["cpu_us"]), "",
              "In user space (the gateway's own code, without the kernel's work in its system "
              "calls): %.2f µs per event against %.2f µs per `GET`, %.2f×. The rest of an "
              "event's CPU is the kernel's: one write per stream per change, and on this "
              "loopback the receiving side of TCP too, which a `GET`'s answer pays once per "
              "request as well." % (user_event_us, poll.get("user_us", 0), user_ratio), ""]
    if floor:
        lines += ["The floor (`bench/floor.rs`: axum, one `broadcast` per voucher sent at most "
                  "every 100 ms, nothing else) "
                  "spends %.2f µs per event (%.2f in user space): the gateway is %.2f× the "
                  "floor per event, and the floor alone is %.2f× the gateway's `GET` — the part "
                  "of the goal's %.1f× no design that writes each client's events to its own "
                  "socket can go under here." % (
                      floor_us, floor_user_us, per_event_us / floor_us if floor_us else 0,
                      floor_us / poll["cpu_us"] if poll["cpu_us"] else 0, CPU_GOAL), ""]
    goals = [
        ("live events: p99 from a 201 to every stream's event %.1f ms (goal ≤ %.0f ms)" % (
            many["p99"], P99_GOAL_MS), many["p99"] <= P99_GOAL_MS),
        ("live events: RSS per idle stream %.1f KiB (goal ≤ %.0f KiB)" % (
            many["rss_per_stream_kib"], RSS_GOAL_KIB), many["rss_per_stream_kib"] <= RSS_GOAL_KIB),
        ("live events: gateway CPU per delivered event %.2f× a GET's (goal ≤ %.1f×; in user "
         "space %.2f×)" % (ratio, CPU_GOAL, user_ratio), ratio <= CPU_GOAL),
    ]
    if floor and floor["events"] and floor["cpu_s"]:
        goals.append(("live events: gateway CPU per event %.2f× the floor's (an axum stream "
                      "per client fed by a broadcast; goal ≤ 1.3×, as the request rows)" % (
                          per_event_us / floor_us), per_event_us / floor_us <= 1.3))
    failures = []
    if many["missed"]:
        failures.append("live events: %d purchase/stream pairs never seen" % many["missed"])
    if many["publishes"] != PURCHASES or one["publishes"] != PURCHASES:
        failures.append("live events: publishes per purchase not 1 (%d, %d for %d)" % (
            one["publishes"], many["publishes"], PURCHASES))
    return lines, goals, failures
