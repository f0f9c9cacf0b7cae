"""The checker: reads a recorded history (JSON lines, see `history` below) and reports every
violation of the gateway's promises, each with the operations that show it.

Standard library only. `python3 chaos/check.py HISTORY` checks a history and exits 1 on any
violation; `run.py` calls `check()` at the end of a run and `selfcheck.py` plants violations.

A history is one JSON object per line:

- `{"type": "meta", ...}` first: the run's settings (`vouchers`: id → stock and
  per_user_limit, `request_timeout_ms`, `ledger`: whether PostgreSQL rows were read, `seed`);
- `{"type": "op", "id", "client", "gw", "op", "logical", "attempt", "args", "start", "end",
  "status", "retry_after", "error", "body"}`: one HTTP request and its answer (`status` null
  and `error` set when none came: `conn` for a refused or cut connection, `timeout` when the
  client gave up waiting). Attempts of one logical operation (a retry of an unknown outcome
  with the same `Idempotency-Key`) share `logical`;
- `{"type": "fence", "id", "client", "lock", "owner", "token", "time", "accepted",
  "max_before"}`: a lock holder's write to the fenced register (the workload's, checker-side:
  it accepts a token at least the highest it accepted, and refuses a lower one);
- `{"type": "fault", "kind", "target", "start", "end"}`: a fault as injected;
- `{"type": "final", "what": "orders"|"dead"|"pg", ...}`: what the run read back at the end
  (every voucher's orders, every queue's dead list, the ledger's PostgreSQL rows).
"""

import bisect
import collections
import json
import sys

# Answers each operation may give besides a 503 with Retry-After (documented refusals included).
ALLOWED = {
    "voucher_put": {200, 201},
    "purchase": {201, 409},
    "lock_acquire": {200, 409},
    "lock_renew": {200, 409},
    "lock_release": {204, 409},
    "enqueue": {200, 201},
    "claim": {200},
    # 404: the job and its receipt unknown to the queue — after a failover that lost an
    # unconfirmed enqueue (never answered 201) and the claim that handed it out.
    "ack": {204, 404, 409},
    "queue_stats": {200},
    "ratelimit": {200},
    "uv": {200, 429},  # 429: the run's limit policy on UV adds
    "checkin": {200},
    "orders": {200},
    "dead": {200},
}
# Extra time a route may take beyond the request timeout (docs/configuration.md).
EXTRA_MS = {"claim": 20_000, "lock_acquire": 10_000}
# Slack on the request timeout before an answer counts as hung (scheduling on a busy machine).
HANG_SLACK_S = 2.0
UNKNOWN = "unknown"


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def unknown_outcome(op):
    """An attempt whose effect the client cannot know: no answer, or a 503."""
    return op.get("status") is None or op.get("status") == 503


class Checker:
    def __init__(self, records):
        self.meta = next((r for r in records if r.get("type") == "meta"), {})
        self.ops = [r for r in records if r.get("type") == "op"]
        self.fences = [r for r in records if r.get("type") == "fence"]
        self.faults = [r for r in records if r.get("type") == "fault"]
        self.finals = [r for r in records if r.get("type") == "final"]
        self.violations = []
        self.notes = []  # measurements that are not violations

    def bad(self, kind, msg, ops=()):
        self.violations.append(dict(kind=kind, msg=msg, ops=[o for o in ops]))

    # -----------------------------------------------------------------------------------------
    # Answers

    def answers(self):
        timeout_s = self.meta.get("request_timeout_ms", 10_000) / 1000.0
        for op in self.ops:
            st, kind = op.get("status"), op["op"]
            if op.get("error") == "timeout":
                self.bad("hang", "%s got no answer within the client's wait (%.1f s)" % (
                    kind, op["end"] - op["start"]), [op])
                continue
            if st is None:
                continue  # a refused or cut connection: a gateway down, an unknown outcome
            took = op["end"] - op["start"]
            limit = timeout_s + EXTRA_MS.get(kind, 0) / 1000.0 + HANG_SLACK_S
            if took > limit:
                self.bad("hang", "%s answered %s after %.1f s (request timeout %.1f s)" % (
                    kind, st, took, limit - HANG_SLACK_S), [op])
            if st >= 500 and st != 503:
                self.bad("status_5xx", "%s answered %s" % (kind, st), [op])
            elif st == 503:
                if not op.get("retry_after"):
                    self.bad("503_no_retry_after", "%s answered 503 without Retry-After" % kind,
                             [op])
            elif kind in ALLOWED and st not in ALLOWED[kind]:
                self.bad("undocumented_status", "%s answered %s" % (kind, st), [op])

    # -----------------------------------------------------------------------------------------
    # Flash sale

    def seckill(self):
        vouchers = self.meta.get("vouchers", {})
        final = {}
        for f in self.finals:
            if f["what"] == "orders":
                final[f["voucher"]] = f
        pg = next((f for f in self.finals if f["what"] == "pg"), None)
        purchases = [o for o in self.ops if o["op"] == "purchase"]
        ok = {}  # order_id → the 201s that returned it
        for o in purchases:
            if o.get("status") == 201 and isinstance(o.get("body"), dict):
                ok.setdefault(o["body"].get("order_id"), []).append(o)

        for vid, v in sorted(vouchers.items()):
            mine = {oid: ops for oid, ops in ok.items() if ops[0]["args"]["voucher"] == vid}
            listed = final.get(vid, {}).get("orders")
            sold = set(mine) | {x["order_id"] for x in listed or []}
            if len(sold) > v["stock"]:
                self.bad("oversold", "voucher %s: %d orders (answered 201 or listed) for a stock "
                         "of %d" % (vid, len(sold), v["stock"]),
                         [ops[0] for ops in mine.values()][:20])
            users = collections.defaultdict(set)
            for oid, ops in mine.items():
                users[ops[0]["args"]["user"]].add(oid)
            for x in listed or []:
                users[x["user_id"]].add(x["order_id"])
            for u, oids in sorted(users.items()):
                if len(oids) > v["per_user_limit"]:
                    self.bad("over_user_limit", "voucher %s: user %s holds %d orders (limit %d): "
                             "%s" % (vid, u, len(oids), v["per_user_limit"], sorted(oids)),
                             [ops[0] for oid, ops in mine.items() if oid in oids])
            if listed is None:
                self.notes.append("voucher %s: no final orders list read" % vid)
                continue
            have = {x["order_id"] for x in listed}
            for oid, ops in sorted(mine.items()):
                if oid not in have:
                    self.bad("lost_order", "voucher %s: order %s answered 201 is not in the "
                             "orders list" % (vid, oid), ops[:3])
            if pg is not None:
                rows = collections.Counter(r["order_id"] for r in pg["rows"]
                                           if r["voucher_id"] == vid)
                for oid, ops in sorted(mine.items()):
                    if rows.get(oid, 0) != 1:
                        self.bad("ledger", "voucher %s: order %s answered 201 is in PostgreSQL %d "
                                 "times" % (vid, oid, rows.get(oid, 0)), ops[:3])
                for oid in sorted(set(rows) - have):
                    self.bad("ledger", "voucher %s: PostgreSQL holds order %s, which the orders "
                             "list does not" % (vid, oid))

        # Retried unknown outcomes: one logical purchase (one Idempotency-Key) ends with exactly
        # one order when it ends with 201, with none when it ends with a standing refusal.
        by_logical = collections.defaultdict(list)
        for o in purchases:
            by_logical[o["logical"]].append(o)
        listed_all = {}
        for vid, f in final.items():
            for x in f.get("orders") or []:
                listed_all[x["order_id"]] = (vid, x["user_id"])
        # Orders no 201 announced, per (voucher, user): they can only come from logical
        # purchases that never got a definite answer.
        orphans = collections.defaultdict(set)
        for oid, (vid, u) in listed_all.items():
            if oid not in ok:
                orphans[(vid, u)].add(oid)
        gave_up = collections.defaultdict(list)
        refused_after_unknown = collections.defaultdict(list)
        for lid, atts in by_logical.items():
            atts.sort(key=lambda o: o["attempt"])
            ids = {a["body"].get("order_id") for a in atts
                   if a.get("status") == 201 and isinstance(a.get("body"), dict)}
            retried = any(unknown_outcome(a) for a in atts[:-1])
            if len(ids) > 1:
                self.bad("doubled_order", "purchase %s (one Idempotency-Key) made %d orders: %s" % (
                    lid, len(ids), sorted(ids)), atts)
            key = (atts[0]["args"]["voucher"], atts[0]["args"]["user"])
            if unknown_outcome(atts[-1]):
                gave_up[key].append(atts)
            elif retried and atts[-1].get("status") != 201:
                refused_after_unknown[key].append(atts)
        for key, extra in sorted(orphans.items(), key=str):
            if len(extra) > len(gave_up.get(key, [])):
                shown = [a for atts in refused_after_unknown.get(key, []) for a in atts]
                self.bad("unannounced_order", "voucher %s, user %s: %d orders no 201 announced "
                         "(%s), but only %d purchases ended without a definite answer%s" % (
                             key[0], key[1], len(extra), sorted(extra),
                             len(gave_up.get(key, [])),
                             "; retried purchases answered a refusal instead" if shown else ""),
                         shown)
        self.notes.append("purchases: %d logical, %d retried after an unknown outcome, %d given "
                          "up unknown" % (len(by_logical), sum(
                              1 for atts in by_logical.values()
                              if any(unknown_outcome(a) for a in atts[:-1])),
                                          sum(len(v) for v in gave_up.values())))

    # -----------------------------------------------------------------------------------------
    # Locks and the fenced register

    def locks(self):
        top = {}
        for f in sorted(self.fences, key=lambda f: (f["time"], f["id"])):
            m = top.get(f["lock"])
            if f["accepted"] and m is not None and f["token"] < m[0]:
                self.bad("fence", "lock %s: the register accepted token %d after accepting %d" % (
                    f["lock"], f["token"], m[0]), [m[1], f])
            if f["accepted"] and (m is None or f["token"] > m[0]):
                top[f["lock"]] = (f["token"], f)
        refused = sum(1 for f in self.fences if not f["accepted"])
        # Tokens from the gateway: an acquisition that began after another ended gets a higher
        # token, unless it is the same owner's re-acquisition (which keeps its token).
        acq = [o for o in self.ops if o["op"] == "lock_acquire" and o.get("status") == 200
               and isinstance(o.get("body"), dict)]
        by_lock = collections.defaultdict(list)
        for o in acq:
            by_lock[o["args"]["lock"]].append(o)
        overlaps = 0
        by_token = collections.defaultdict(list)
        for o in self.ops:
            if o["op"] in ("lock_renew", "lock_release") and "token" in o["args"]:
                by_token[(o["args"].get("lock"), o["args"]["token"])].append(o)
        for name, lst in by_lock.items():
            lst.sort(key=lambda o: o["start"])
            best = None  # the acquisition with the highest token among those ended so far
            ended = sorted(lst, key=lambda o: o["end"])
            i = 0
            for o in lst:
                while i < len(ended) and ended[i]["end"] < o["start"]:
                    e = ended[i]
                    if best is None or e["body"]["token"] > best["body"]["token"]:
                        best = e
                    i += 1
                if best is not None and o["body"]["token"] <= best["body"]["token"] and not (
                        o["body"]["owner"] == best["body"]["owner"]
                        and o["body"]["token"] == best["body"]["token"]):
                    self.bad("token_order", "lock %s: token %d acquired after token %d had "
                             "been handed out" % (name, o["body"]["token"],
                                                  best["body"]["token"]), [best, o])
            # Holders overlapping in time: another owner's acquisition answered while a lease
            # surely still ran (before its acquisition began + ttl, or its renewal began + ttl,
            # and before its release began). Allowed under a lost lease: the fence is what
            # protects the resource; counted.
            # (Renewals and releases looked up by token, acquisitions by start: a long run has
            # thousands of each, too many to compare each with all.)
            starts = [b["start"] for b in lst]
            for a in lst:
                tok, owner = a["body"]["token"], a["body"]["owner"]
                until = a["start"] + a["args"]["ttl_ms"] / 1000.0
                for o in by_token.get((name, tok), ()):
                    if o["op"] == "lock_renew" and o.get("status") == 200:
                        until = max(until, o["start"] + o["args"]["ttl_ms"] / 1000.0)
                for o in by_token.get((name, tok), ()):
                    if o["op"] == "lock_release":
                        until = min(until, o["start"])
                for b in lst[bisect.bisect_right(starts, a["end"]):]:
                    if b["start"] >= until:
                        break
                    if b["body"]["owner"] != owner and b["end"] < until:
                        overlaps += 1
        self.notes.append("locks: %d acquisitions, %d register writes (%d refused by the fence), "
                          "%d acquisitions by another owner while a lease surely ran (allowed: "
                          "a lease lost in a failover; the fence holds)" % (len(acq), len(self.fences), refused,
                                                          overlaps))

    # -----------------------------------------------------------------------------------------
    # Queues

    def queues(self):
        enq = {}
        for o in self.ops:
            if o["op"] == "enqueue" and o.get("status") == 201:
                enq.setdefault((o["args"]["queue"], o["args"]["id"]), o)
        # A job's 204s by logical ack: the attempts of one keyed ack may all be answered 204
        # (the retry replays the first), which is one ack.
        acked_by = collections.defaultdict(dict)
        attempts = collections.defaultdict(list)
        for o in self.ops:
            if o["op"] != "ack":
                continue
            job = (o["args"]["queue"], o["args"]["id"])
            logical = o.get("logical") or "op-%s" % o.get("id")
            attempts[(job, logical)].append(o)
            if o.get("status") == 204:
                acked_by[job].setdefault(logical, o)
        acks = {job: list(by.values()) for job, by in acked_by.items()}
        # Jobs whose ack may have taken effect unseen: an ack without a key with an unknown
        # outcome (its retry is answered 409 either way), or a keyed one that never got a
        # definite answer (a keyed retry tells: 204 replayed, or 409 lapsed).
        maybe_acked = set()
        for (job, _), lst in attempts.items():
            keyed = any(a["args"].get("key") for a in lst)
            if any(unknown_outcome(a) for a in lst) and (
                    not keyed or all(unknown_outcome(a) for a in lst)):
                maybe_acked.add(job)
        dead = set()
        dead_read = set()
        for f in self.finals:
            if f["what"] == "dead":
                dead_read.add(f["queue"])
                dead |= {(f["queue"], j) for j in f["jobs"]}
        for key, lst in sorted(acks.items()):
            receipts = {a["args"]["receipt"] for a in lst}
            if len(lst) > 1:
                self.bad("acked_twice", "job %s/%s acked %d times (receipts %s)" % (
                    key[0], key[1], len(lst), sorted(receipts)), lst)
        unconfirmed = 0
        for key, o in sorted(enq.items()):
            if key in maybe_acked and key not in acks and key not in dead:
                unconfirmed += 1
                continue
            if key not in acks and key not in dead and key[0] in dead_read:
                self.bad("lost_job", "job %s/%s enqueued (201) is neither acked nor dead" % key,
                         [o])
        # Claims: no job handed to a second claim within the first's visibility window.
        handed = collections.defaultdict(list)
        for o in self.ops:
            if o["op"] == "claim" and o.get("status") == 200 and isinstance(o.get("body"), dict):
                for j in o["body"].get("jobs", []):
                    handed[(o["args"]["queue"], j["id"])].append((o, j))
        acked_at = {k: min(a["start"] for a in v) for k, v in acks.items()}
        doubles = 0
        for key, lst in sorted(handed.items()):
            lst.sort(key=lambda x: x[0]["start"])
            for (a, ja), (b, jb) in zip(lst, lst[1:]):
                window_end = a["start"] + a["args"]["visibility_ms"] / 1000.0
                if b["end"] < window_end - 0.05:
                    doubles += 1
                    self.bad("double_claim", "job %s/%s handed to two claims %.2f s apart, within "
                             "the first's %d ms visibility (receipts %s, %s)" % (
                                 key[0], key[1], b["end"] - a["start"], a["args"]["visibility_ms"],
                                 ja.get("receipt"), jb.get("receipt")), [a, b])
        self.notes.append("queues: %d jobs enqueued (201), %d acked, %d dead, %d handed out "
                          "more than once, %d whose ack had no definite answer and no 204 "
                          "(counted apart: done, or lapsed?)" % (
                              len(enq), len(acks), len(dead & set(enq)), sum(
                                  1 for v in handed.values() if len(v) > 1), unconfirmed))

    # -----------------------------------------------------------------------------------------
    # Rate limits (a measurement: a failover that loses a write may admit a little more)

    def ratelimits(self):
        """GCRA admits at most burst + 1 + rate × t over any span t, whatever state it starts
        from (a key with no state is the most lenient). A fault that may promote a replica
        short of a key's last writes (a master killed, paused or failed over) can give the key
        back at most that fresh state once: burst + 1 more. Between such faults the bound
        holds exactly (a `limiter_overshoot`); across the run the excess is measured."""
        by_key = collections.defaultdict(dict)
        limits = {}
        for o in self.ops:
            if o["op"] == "ratelimit" and o.get("status") == 200 and isinstance(
                    o.get("body"), dict) and o["body"].get("allowed"):
                # One admission per logical check: a retry's replay is the same admission.
                by_key[o["args"]["key"]].setdefault(o.get("logical") or o.get("id"), o)
                limits[o["args"]["key"]] = o["args"]
        # A limit policy's bucket: every request of its operation answered 200 was admitted
        # (one refused is 429; one answered 503 may have spent a unit too, so counting only the
        # 200s never makes the bound tighter than the truth).
        for p in self.meta.get("policies", []):
            key = "policy " + p["name"]
            limits[key] = dict(max_burst=p["burst"], count_per_period=p["count"],
                               period=p["period"])
            for o in self.ops:
                if o["op"] == p["op"] and o.get("status") == 200:
                    by_key[key].setdefault(o.get("logical") or o.get("id"), o)
        # When a master's state may have been lost: a fault on a master, with the node
        # timeout and 5 s of slack after it (the promotion, and clients moving over).
        slack = self.meta.get("node_timeout_ms", 2000) / 1000.0 + 5.0
        windows = sorted((f["start"], (f.get("end") or f["start"]) + slack)
                         for f in self.faults
                         if f["kind"] in ("redis_kill", "redis_pause", "failover")
                         and not str(f.get("target", "")).startswith("replica")
                         and not (f.get("note") or "").startswith("skipped"))

        def excess(ops, a):
            """Most admissions beyond the bound over any span of `ops` (sorted by start):
            count − (burst + 1) − rate × (last end − first start), maximised in one pass."""
            rate = a["count_per_period"] / float(a["period"])
            best, low, last = None, None, None
            for j, o in enumerate(ops):
                here = j - rate * o["start"]
                low = here if low is None else min(low, here)
                # The latest end so far: never shorter than the span of any i..j (a longer
                # span only loosens the bound, so no false report).
                last = o["end"] if last is None else max(last, o["end"])
                e = (j - rate * last) - low + 1 - (a["max_burst"] + 1)
                best = e if best is None else max(best, e)
            return best if best is not None else 0

        worst, worst_calm = 0.0, 0.0
        for key, by in sorted(by_key.items()):
            ops = sorted(by.values(), key=lambda o: o["start"])
            a = limits[key]
            worst = max(worst, excess(ops, a))
            # Calm stretches: the admissions between two loss windows, none overlapping one.
            segment, w = [], 0
            for o in ops + [None]:
                while o is not None and w < len(windows) and windows[w][1] < o["start"]:
                    w += 1
                    if segment:
                        worst_calm = max(worst_calm, self.overshoot(key, segment, a, excess))
                    segment = []
                if o is None:
                    break
                if w < len(windows) and windows[w][0] <= o["end"]:
                    continue  # in a loss window
                segment.append(o)
            if segment:
                worst_calm = max(worst_calm, self.overshoot(key, segment, a, excess))
        burst = max((limits[k]["max_burst"] for k in by_key), default=0)
        self.notes.append(
            "rate limits: %d keys, %d faults that may lose a master's writes; most admitted "
            "beyond the GCRA bound over any span: %.1f (each such fault may add burst + 1 = %d), "
            "between such faults: %.1f (must be ≤ 0)" % (
                len(by_key), len(windows), max(worst, 0), burst + 1, max(worst_calm, 0)))

    def overshoot(self, key, ops, a, excess):
        e = excess(ops, a)
        if e > 0:
            self.bad("limiter_overshoot", "rate-limit key %s admitted %.1f beyond the GCRA bound "
                     "(burst %d, %d per %d s) between faults that may lose writes" % (
                         key, e, a["max_burst"], a["count_per_period"], a["period"]), ops[:6])
        return e

    def recovered(self):
        """The gateways recover without a restart: in the second half of the quiet period (every
        fault healed), every request is answered with success or a documented refusal."""
        m = self.meta
        if "t0" not in m or "quiet_s" not in m:
            return
        end = m["t0"] + m["minutes"] * 60.0
        since = end - m["quiet_s"] / 2.0
        late = [o for o in self.ops if since <= o["start"] <= end and (
            unknown_outcome(o) or (o.get("status") or 0) >= 500)]
        if late:
            self.bad("not_recovered", "%d requests failed in the second half of the quiet period "
                     "(every fault healed %.0f s before)" % (len(late), m["quiet_s"] / 2.0),
                     late[:6])

    def run(self):
        self.answers()
        self.recovered()
        self.seckill()
        self.locks()
        self.queues()
        self.ratelimits()
        return self.violations


def check(records):
    c = Checker(records)
    c.run()
    return c


def describe(op):
    if op.get("type") == "fence":
        return "fence #%d %s lock=%s owner=%s token=%d t=%.3f accepted=%s" % (
            op["id"], op["client"], op["lock"], op["owner"], op["token"], op["time"],
            op["accepted"])
    ans = op.get("status") if op.get("status") is not None else op.get("error")
    body = json.dumps(op.get("body"))
    if len(body) > 160:
        body = body[:157] + "..."
    return "op #%d %s via %s %s %s [%.3f–%.3f] → %s %s" % (
        op["id"], op["client"], op.get("gw"), op["op"], json.dumps(op["args"]), op["start"],
        op["end"], ans, body)


def report(c, out=sys.stdout, limit=50):
    by_kind = collections.Counter(v["kind"] for v in c.violations)
    print("violations: %d%s" % (len(c.violations), (" (" + ", ".join(
        "%s %d" % kv for kv in sorted(by_kind.items())) + ")") if by_kind else ""), file=out)
    for v in c.violations[:limit]:
        print("  [%s] %s" % (v["kind"], v["msg"]), file=out)
        for op in v["ops"][:6]:
            print("      " + describe(op), file=out)
    if len(c.violations) > limit:
        print("  ... %d more" % (len(c.violations) - limit), file=out)
    for n in c.notes:
        print("  note: " + n, file=out)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check.py HISTORY.jsonl")
    c = check(load(sys.argv[1]))
    report(c)
    sys.exit(1 if c.violations else 0)


if __name__ == "__main__":
    main()
