"""The dedup engines side by side, in one run: the same filter on each server whose Bloom
engine the gateway picks differently at start —

- Lua on Debian's Redis 7 (no module: the gateway's own Bloom scripts on bitmaps);
- RedisBloom 2.8.2 loaded into the same Redis 7 (`target/servers/redisbloom.so`, which
  ./scripts/servers fetches);
- valkey-bloom on Valkey 8.1.1 (`valkey-server` and `libvalkey_bloom.so` of the servers folder
  beside the checkout, or $GATEWAY_TEST_SERVERS, found as scripts/matrix finds it).

Each server runs privately (free loopback port, no persistence) with its own release gateway
(global layer off); a server that is not on this machine skips its row with one printed line.
Each gateway must report the engine its server should get (`/readyz` `bloom_engine`), else
the row fails. On each, two filters of seeds.DEDUP_FILTER's capacity and error rate:

- `bench`, for throughput: the dedup row's `POST /v1/dedup/bench/filter` (10 items drawn from
  50,000, `mark_seen`; bench/wrk.lua's `dedup` scenario) with wrk, the engines alternating run
  by run so that each ratio to Lua comes from the same stretch of the machine's load; Redis CPU
  per item is the server's own `used_cpu_sys + used_cpu_user` (INFO cpu) over the wrk run ÷
  (requests × 10);
- `bench-memory`, for size: FILL distinct items added (`POST …/items`, BATCH a request), then
  the `MEMORY USAGE` of every key of the filter (its parameters hash and its data) ÷ FILL, the
  gateway's own `bytes` (`GET /v1/dedup/bench-memory`) ÷ FILL beside it, and the share of
  PROBES never-added items that `POST …/check` calls seen: the false-positive rate.
"""

import os
import re
import shutil
import statistics
import time

import harness
import seeds

FILL = 100_000
PROBES = 100_000
BATCH = 1_000  # GATEWAY_MAX_BATCH's default
MEMORY_FILTER = "bench-memory"
SECTION = "## Dedup engines (Lua, RedisBloom, valkey-bloom)"


def servers_folder():
    """The servers folder beside the checkout, as scripts/matrix finds it."""
    return os.environ.get("GATEWAY_TEST_SERVERS") or os.path.join(
        os.path.dirname(harness.ROOT), "shared", "servers")


def engines():
    fetched = os.path.join(harness.ROOT, os.environ.get("CARGO_TARGET_DIR") or "target",
                           "servers")
    folder = servers_folder()
    return [
        dict(id="lua", label="Lua on Redis 7", server="redis-server", module=None,
             engine="lua", where="Debian's redis-server"),
        dict(id="redisbloom", label="RedisBloom 2.8.2 on Redis 7", server="redis-server",
             module=os.path.join(fetched, "redisbloom.so"), engine="redisbloom",
             where="target/servers/redisbloom.so (./scripts/servers fetches it)"),
        dict(id="valkey_bloom", label="valkey-bloom on Valkey 8.1.1",
             server=os.path.join(folder, "valkey-server"),
             module=os.path.join(folder, "libvalkey_bloom.so"), engine="redisbloom",
             where="valkey-server and libvalkey_bloom.so of the servers folder beside the "
             "checkout ($GATEWAY_TEST_SERVERS)"),
    ]


def absent(e):
    """The path of what `e` needs and this machine lacks, or None."""
    if not shutil.which(e["server"]):
        return e["server"]
    if e["module"] and not os.path.isfile(e["module"]):
        return e["module"]
    return None


def up(check, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if check():
                return True
        except Exception:  # not up yet: connection refused, a CLI error, a bad answer
            pass
        time.sleep(0.1)
    return False


def redis_cpu(redis):
    """The server's CPU seconds so far (user + system, INFO cpu)."""
    info = redis.cli("INFO", "cpu")
    return sum(float(re.search(r"%s:([\d.]+)" % k, info).group(1))
               for k in ("used_cpu_sys", "used_cpu_user"))


def start(procs, logdir, e, gateway, base_env):
    """Starts `e`'s server and gateway; fills e["redis"], e["port"] and e["ready"], or returns
    what went wrong."""
    port = harness.free_port()
    d = os.path.join(logdir, "engine-" + e["id"])
    os.makedirs(d, exist_ok=True)
    argv = [e["server"], "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", d]
    if e["module"]:
        argv += ["--loadmodule", os.path.abspath(e["module"])]
    name = "engine-" + e["id"]
    procs.start(name, argv)
    e["redis"] = harness.Redis(port)
    if not up(lambda: e["redis"].cli("PING") == "PONG", 10):
        return "%s did not come up: %s" % (name, procs.log_tail(name, 5).strip())
    e["port"] = gw_port = harness.free_port()
    harness.PIDS[gw_port] = procs.start(name + "-gateway", [gateway], env=dict(
        base_env, REDIS_URL="redis://127.0.0.1:%d" % port,
        GATEWAY_LISTEN="127.0.0.1:%d" % gw_port, GATEWAY_GLOBAL_LIMIT="off")).pid
    gw = harness.Http(gw_port)
    if not up(lambda: gw.call("GET", "/readyz")[0] == 200, 30):
        return "its gateway was not ready: %s" % procs.log_tail(name + "-gateway", 5).strip()
    e["ready"] = gw.call("GET", "/readyz")[2]
    got = e["ready"].get("bloom_engine")
    if got != e["engine"]:
        return "the gateway picked the %s engine, not %s" % (got, e["engine"])
    for f in ("bench", MEMORY_FILTER):
        st, _, body = gw.call("PUT", "/v1/dedup/" + f, seeds.DEDUP_FILTER, admin=True)
        if st not in (200, 201):
            return "reserving filter %s answered %s: %s" % (f, st, body)
    return None


def flagged(gw, path, fmt, total, flag):
    """Sends `total` items named `fmt % n` to `path`, BATCH a request: how many answered
    `flag` true, or a string saying what went wrong."""
    count = 0
    for i in range(0, total, BATCH):
        st, _, body = gw.call("POST", path, {
            "items": [fmt % n for n in range(i, min(i + BATCH, total))]})
        if st != 200:
            return "POST %s answered %s: %s" % (path, st, body)
        count += sum(1 for r in body["results"] if r[flag])
    return count


def size(e):
    """Fills the memory filter, reads its size and probes it: {added, keys, memory, info, fp}
    or a string saying what went wrong."""
    gw, redis = harness.Http(e["port"]), e["redis"]
    base = "/v1/dedup/" + MEMORY_FILTER
    added = flagged(gw, base + "/items", "m%08d", FILL, "added")
    if isinstance(added, str):
        return added
    st, _, info = gw.call("GET", base)
    if st != 200:
        return "GET %s answered %s: %s" % (base, st, info)
    keys = redis.cli("--scan", "--pattern", "%sbf:{%s}*" % (harness.PREFIX, MEMORY_FILTER)
                     ).split()
    memory = 0
    for key in keys:
        used = redis.cli("MEMORY", "USAGE", key, "SAMPLES", "0")
        if not used.isdigit():
            return "MEMORY USAGE %s answered %r" % (key, used)
        memory += int(used)
    seen = flagged(gw, base + "/check", "never-%08d", PROBES, "seen")
    if isinstance(seen, str):
        return seen
    return dict(added=added, keys=len(keys), memory=memory, info=info, fp=seen / PROBES)


def throughput_run(e, args, seconds):
    before = redis_cpu(e["redis"])
    r = harness.run_wrk(e["port"], "dedup", args.connections, args.threads, seconds)
    items = max(r["requests"], 1) * 10
    r["redis_cpu"] = (redis_cpu(e["redis"]) - before) * 1e6 / items
    r["gateway_cpu"] = r["cpu"]["gateway"] / 10
    return r


def measure(procs, logdir, gateway, base_env, args):
    """Every engine's figures: dicts of its own with `status` "ok", "skipped: …" or the
    problem, `runs` (wrk results), `size` and `ready`."""
    load_start = harness.loadavg()
    found = []
    for e in engines():
        e.update(status="ok", runs=[], size=None, ready=None)
        missing = absent(e)
        if missing:
            e["status"] = "skipped: not on this machine (%s)" % e["where"]
            print("bench: dedup engines: %s skipped: %s is not on this machine" % (
                e["label"], missing), flush=True)
            found.append(e)
            continue
        problem = start(procs, logdir, e, gateway, base_env)
        if not problem:
            harness.log("dedup engines: %s: filling %s with %d items" % (
                e["label"], MEMORY_FILTER, FILL))
            got = size(e)
            if isinstance(got, str):
                problem = got
            else:
                e["size"] = got
        if problem:
            e["status"] = problem
            harness.log("dedup engines: %s: %s" % (e["label"], problem))
        found.append(e)
    running = [e for e in found if e["status"] == "ok"]
    for e in running:
        throughput_run(e, args, 1)  # warm-up
    for i in range(args.runs):
        for e in running:
            r = throughput_run(e, args, args.duration)
            e["runs"].append(r)
            harness.log("dedup engines: run %d/%d %s: %.0f req/s, Redis %.2f µs/item" % (
                i + 1, args.runs, e["label"], r["rps"], r["redis_cpu"]))
    for e in running:
        bad = sum(r["non2xx"] + r["socket_errors"] for r in e["runs"])
        if bad:
            e["status"] = "%d unexpected responses or socket errors" % bad
    return dict(engines=found, load="%s → %s" % (load_start, harness.loadavg()),
                when=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))


def med(e, key):
    return statistics.median(r[key] for r in e["runs"])


def server_text(e):
    s = (e["ready"] or {}).get("server") or {}
    if not s:
        return "–"
    mods = s.get("modules") or []
    return "%s %s%s" % (s.get("name", "?"), s.get("version", "?"),
                        " (modules: %s)" % ", ".join(mods) if mods else "")


def ratio(x, base):
    return "%.2f×" % (x / base) if base else "–"


def report(found, args):
    """The report's section, as lines, and the failures (a skipped row is none)."""
    fill_filter = seeds.DEDUP_FILTER
    lines = [SECTION, "",
             "Measured %s (`bench/engines.py`); load average (1 min) at the start and end of "
             "this part: %s. The same filter (capacity {capacity:,}, error rate {error_rate:g}) "
             "on each server, whose engine the gateway picks at start; each server private (no "
             "persistence) with its own release gateway (global layer off). Throughput: the "
             "dedup row's `POST /v1/dedup/bench/filter` (10 items drawn from 50,000, "
             "`mark_seen`), wrk at %d connections, %d s a run, %d run%s per engine, the engines "
             "alternating; medians. Redis CPU per item: the server's `used_cpu_sys + "
             "used_cpu_user` (INFO cpu) over each run ÷ (requests × 10); gateway CPU per item "
             "from `/proc`, the same way. Bytes per item: a second filter of the same "
             "parameters given {fill:,} distinct items (1,000 a request), then `MEMORY USAGE` "
             "of each of its keys (the parameters hash and the data) summed ÷ {fill:,}; beside "
             "it the gateway's own `bytes` (`GET /v1/dedup/{{f}}`: the layers' bitmaps, or "
             "RedisBloom's `BF.INFO` Size) ÷ {fill:,}. False positives: {probes:,} items never "
             "added, checked (`POST …/check`) against that full filter. ÷ Lua: against the Lua "
             "row of this same run.".format(fill=FILL, probes=PROBES, **fill_filter) % (
                 found["when"], found["load"], args.connections, args.duration, args.runs,
                 "" if args.runs == 1 else "s"), "",
             "| engine | server | gateway's engine | req/s | ÷ Lua | p50 / p99 ms | Redis CPU "
             "µs/item | ÷ Lua | gateway CPU µs/item | bytes/item (MEMORY USAGE) | ÷ Lua | "
             "gateway `bytes`/item | layers | false positives |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    failures = []
    lua = next((e for e in found["engines"] if e["id"] == "lua" and e["status"] == "ok"), None)
    for e in found["engines"]:
        if e["status"] != "ok":
            skipped = e["status"].startswith("skipped")
            if not skipped:
                failures.append("dedup engines, %s: %s" % (e["label"], e["status"]))
            lines.append("| %s | %s | %s |%s" % (
                e["label"], server_text(e), e["status"] if skipped else
                "**FAILED**: " + e["status"].replace("|", "/").replace("\n", " "),
                " – |" * 11))
            continue
        s = e["size"]
        per_item = s["memory"] / FILL
        lua_item = lua["size"]["memory"] / FILL if lua else None
        lines.append("| %s | %s | %s | %.0f | %s | %.2f / %.2f | %.2f | %s | %.2f | %.2f | %s | "
                     "%.2f | %d | %.3f%% |" % (
                         e["label"], server_text(e), e["ready"]["bloom_engine"],
                         med(e, "rps"), ratio(med(e, "rps"), lua and med(lua, "rps")),
                         med(e, "p50"), med(e, "p99"), med(e, "redis_cpu"),
                         ratio(med(e, "redis_cpu"), lua and med(lua, "redis_cpu")),
                         med(e, "gateway_cpu"), per_item, ratio(per_item, lua_item),
                         s["info"]["bytes"] / FILL, s["info"]["layers"], s["fp"] * 100))
    lines.append("")
    runs = ["- %s: %s req/s" % (e["label"], ", ".join("%.0f" % r["rps"] for r in e["runs"]))
            for e in found["engines"] if e["runs"]]
    if runs:
        lines += ["Every run:", ""] + runs + [""]
    return lines, failures
