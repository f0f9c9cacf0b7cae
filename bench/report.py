"""The report bench/driver.py writes: the main table of gateway against raw Redis, the CPU
table, every run, the machine, the goals, and docs/performance.md assembled around the
sections written by hand or by the other scripts (peers, burst, durable, soak).
"""

import datetime
import os
import platform
import re

from engines import SECTION as ENGINES_SECTION
from events import SECTION as EVENTS_SECTION
from harness import ROOT, sh
from seeds import GEO_POINTS, QUEUE_JOBS, SECKILL_STOCK


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


# The parts that carry a section of their own (with its own date and load average).
OWN_SECTIONS = {"burst": BURST_SECTION, "durable": DURABLE_SECTION,
                "dedup_engines": ENGINES_SECTION, "events": EVENTS_SECTION}


def replace_sections(path, sections):
    """Writes only these parts' sections into the report at `path`, each in place of its old
    one (or before "Where the CPU goes" when it has none), leaving every other row as the last
    full run wrote it: what a run of `--only <part>` measured and nothing else."""
    with open(path) as f:
        text = f.read()
    for part, lines in sections.items():
        title = OWN_SECTIONS[part]
        body = "\n".join(lines).rstrip("\n") + "\n\n"
        start = text.find("\n" + title + "\n")
        if start >= 0:
            start += 1
            end = text.find("\n## ", start + len(title))
            end = end + 1 if end >= 0 else len(text)
        else:
            start = end = text.find("## Where the CPU goes")
            if start < 0:
                start = end = len(text)
        text = text[:start] + body + text[end:]
    with open(path, "w") as f:
        f.write(text)
    return text


def write_report(args, results, notes, shas, elapsed, load, sections, goals):
    """`sections`: {"peers"|"burst"|"durable"|"dedup_engines": markdown lines} of the parts
    that ran; `goals`: [(text, ok)] of every goal judged in this run."""
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
    # bench/engines.py's section: rewritten when it runs, else kept as it is (it carries its
    # own date and load average).
    doc += list(sections.get("dedup_engines", ())) or kept_sections(args.out,
                                                                      (ENGINES_SECTION,))
    doc += list(sections.get("events", ())) or kept_sections(args.out, (EVENTS_SECTION,))
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
