"""The checker proves its power: each kind of violation is planted into a clean history (a
recorded one given with --history, else a small synthetic one built here) and must be
reported. Exits 1 when the clean history is not clean or a plant is missed.
"""

import argparse
import collections
import copy
import sys

import check

T0 = 1_800_000_000.0


class Builder:
    """Appends records with fresh ids, times after everything already in the history."""

    def __init__(self, records):
        self.records = records
        self.next_id = 1 + max([r.get("id", 0) for r in records] + [0])
        self.t = 1 + max([r.get("end", r.get("time", 0)) or 0 for r in records] + [T0])
        self.meta = next((r for r in records if r.get("type") == "meta"), None)
        if self.meta is None:
            self.meta = dict(type="meta", vouchers={}, request_timeout_ms=10_000)
            records.insert(0, self.meta)

    def tick(self, dt=0.01):
        self.t += dt
        return self.t

    def op(self, op, args, status, body=None, logical=None, attempt=0, error=None,
           retry_after=None, took=0.005, start=None):
        i = self.next_id
        self.next_id += 1
        s = self.tick() if start is None else start
        r = dict(type="op", id=i, client="plant", gw="g0", op=op, logical=logical or "p%d" % i,
                 attempt=attempt, args=args, start=s, end=s + took, status=status,
                 retry_after=retry_after, error=error, body=body)
        self.records.append(r)
        return r

    def fence(self, lock, owner, token, accepted, max_before=None):
        i = self.next_id
        self.next_id += 1
        r = dict(type="fence", id=i, client="plant", lock=lock, owner=owner, token=token,
                 time=self.tick(), accepted=accepted, max_before=max_before)
        self.records.append(r)
        return r

    def voucher(self, vid, stock, limit):
        self.meta["vouchers"][vid] = dict(stock=stock, per_user_limit=limit)
        f = dict(type="final", what="orders", voucher=vid, orders=[])
        self.records.append(f)
        return f

    def final(self, what, **kw):
        for r in self.records:
            if r.get("type") == "final" and r["what"] == what and all(
                    r.get(k) == v for k, v in kw.items() if k not in ("orders", "jobs", "rows")):
                return r
        r = dict(type="final", what=what, **kw)
        self.records.append(r)
        return r

    def buy(self, vid, user, logical=None, attempt=0, listed=True, pg=True):
        oid = "%s/%d-0" % (vid, self.next_id)
        o = self.op("purchase", dict(voucher=vid, user=user), 201,
                    dict(order_id=oid, voucher_id=vid, user_id=user), logical=logical,
                    attempt=attempt)
        if listed:
            self.final("orders", voucher=vid)["orders"].append(dict(order_id=oid, user_id=user))
        if pg and any(r.get("what") == "pg" for r in self.records if r.get("type") == "final"):
            self.final("pg")["rows"].append(dict(order_id=oid, voucher_id=vid, user_id=user))
        return oid


def synthetic():
    """A small clean history: every kind of operation, answered as promised."""
    b = Builder([])
    b.meta.update(ledger=True, seed=0)
    b.final("pg", rows=[])
    b.voucher("v0", 5, 2)
    b.buy("v0", 1)
    b.buy("v0", 1)
    b.op("purchase", dict(voucher="v0", user=1), 409, dict(code="already_ordered"))
    # an unknown outcome, retried with its key: the replay answers the order
    b.op("purchase", dict(voucher="v0", user=2), 503, dict(code="backend_unavailable"),
         logical="k2", retry_after="1")
    b.buy("v0", 2, logical="k2", attempt=1)
    b.buy("v0", 3)
    b.op("purchase", dict(voucher="v0", user=4), None, logical="k4", error="conn")
    b.op("purchase", dict(voucher="v0", user=4), 409, dict(code="sold_out"), logical="k4",
         attempt=1)
    a = b.op("lock_acquire", dict(lock="L0", owner="c1", ttl_ms=1000), 200,
             dict(owner="c1", token=100))
    b.fence("L0", "c1", 100, True)
    b.op("lock_release", dict(lock="L0", owner="c1", token=100), 204)
    b.op("lock_acquire", dict(lock="L0", owner="c2", ttl_ms=1000), 200,
         dict(owner="c2", token=101))
    b.fence("L0", "c2", 101, True)
    b.fence("L0", "c1", 100, False, 101)
    b.final("dead", queue="q0", jobs=["j3"])
    for j in ("j1", "j2", "j3"):
        b.op("enqueue", dict(queue="q0", id=j), 201, dict(id=j))
    c = b.op("claim", dict(queue="q0", visibility_ms=1000), 200,
             dict(jobs=[dict(id="j1", receipt="1.1"), dict(id="j2", receipt="2.1")]))
    b.op("ack", dict(queue="q0", id="j1", receipt="1.1"), 204)
    b.tick(1.5)  # j2's claim lapses, another claim takes it
    b.op("claim", dict(queue="q0", visibility_ms=1000), 200, dict(jobs=[dict(id="j2",
                                                                           receipt="2.2")]))
    b.op("ack", dict(queue="q0", id="j2", receipt="2.1"), 409, dict(code="receipt_expired"))
    b.op("ack", dict(queue="q0", id="j2", receipt="2.2"), 204)
    # a keyed ack whose answer was lost, retried: the replay answers 204 again (one ack)
    b.op("enqueue", dict(queue="q0", id="j4"), 201, dict(id="j4"))
    b.op("claim", dict(queue="q0", visibility_ms=1000), 200, dict(jobs=[dict(id="j4",
                                                                           receipt="4.1")]))
    b.op("ack", dict(queue="q0", id="j4", receipt="4.1", key="a4"), None, logical="a4",
         error="conn")
    b.op("ack", dict(queue="q0", id="j4", receipt="4.1", key="a4"), 204, logical="a4",
         attempt=1)
    b.op("ratelimit", dict(key="r0", max_burst=1, count_per_period=1, period=1), 200,
         dict(allowed=True))
    b.op("uv", dict(page="p"), 200, {})
    b.op("checkin", dict(user=1), 200, {})
    del a, c
    return b.records


def plants():
    """(kind reported, what is planted, function planting it into a Builder)."""

    def oversold(b):
        b.voucher("plant-v1", 2, 1)
        for u in range(3):
            b.buy("plant-v1", 900_000 + u)

    def over_limit(b):
        b.voucher("plant-v2", 10, 1)
        b.buy("plant-v2", 900_100)
        b.buy("plant-v2", 900_100)

    def lost(b):
        b.voucher("plant-v3", 10, 1)
        b.buy("plant-v3", 900_200, listed=False, pg=False)

    def ledger(b):
        b.voucher("plant-v4", 10, 1)
        b.final("pg", rows=[])
        b.buy("plant-v4", 900_300, pg=False)

    def doubled(b):
        b.voucher("plant-v5", 10, 2)
        b.op("purchase", dict(voucher="plant-v5", user=900_400), 503, {}, logical="pk5",
             retry_after="1")
        b.buy("plant-v5", 900_400, logical="pk5", attempt=1)
        b.buy("plant-v5", 900_400, logical="pk5", attempt=2)

    def zero(b):
        b.voucher("plant-v6", 10, 1)
        b.op("purchase", dict(voucher="plant-v6", user=900_500), None, logical="pk6",
             error="conn")
        b.op("purchase", dict(voucher="plant-v6", user=900_500), 409,
             dict(code="already_ordered"), logical="pk6", attempt=1)
        b.final("orders", voucher="plant-v6")["orders"].append(
            dict(order_id="plant-v6/1-0", user_id=900_500))

    def fence(b):
        b.fence("plant-L", "a", 10**15 + 2, True)
        b.fence("plant-L", "b", 10**15 + 1, True, 10**15 + 2)

    def token(b):
        b.op("lock_acquire", dict(lock="plant-L2", owner="a", ttl_ms=1000), 200,
             dict(owner="a", token=10**15 + 5))
        b.tick(2)
        b.op("lock_acquire", dict(lock="plant-L2", owner="b", ttl_ms=1000), 200,
             dict(owner="b", token=10**15 + 4))

    def lost_job(b):
        b.final("dead", queue="plant-q", jobs=[])
        b.op("enqueue", dict(queue="plant-q", id="pj1"), 201, dict(id="pj1"))

    def lost_keyed_ack(b):
        # a keyed ack's retry answered 409: the first did not take effect, so the job must
        # still be acked or dead by the end
        b.final("dead", queue="plant-q4", jobs=[])
        b.op("enqueue", dict(queue="plant-q4", id="pj4"), 201, dict(id="pj4"))
        b.op("ack", dict(queue="plant-q4", id="pj4", receipt="1.1", key="pa4"), 503,
             dict(code="backend_unavailable"), logical="pa4", retry_after="1")
        b.op("ack", dict(queue="plant-q4", id="pj4", receipt="1.1", key="pa4"), 409,
             dict(code="receipt_expired"), logical="pa4", attempt=1)

    def policy_overshoot(b):
        b.meta["policies"] = [dict(name="plant-p", op="uv", burst=1, count=1, period=10)]
        for i in range(4):
            b.op("uv", dict(page="plant"), 200, {})

    def overshoot(b):
        for i in range(6):
            b.op("ratelimit", dict(key="plant-r", max_burst=1, count_per_period=1, period=10),
                 200, dict(allowed=True))

    def acked_twice(b):
        b.final("dead", queue="plant-q2", jobs=[])
        b.op("enqueue", dict(queue="plant-q2", id="pj2"), 201, dict(id="pj2"))
        b.op("ack", dict(queue="plant-q2", id="pj2", receipt="1.1"), 204)
        b.op("ack", dict(queue="plant-q2", id="pj2", receipt="1.2"), 204)

    def double_claim(b):
        b.op("claim", dict(queue="plant-q3", visibility_ms=5000), 200,
             dict(jobs=[dict(id="pj3", receipt="1.1")]))
        b.op("claim", dict(queue="plant-q3", visibility_ms=5000), 200,
             dict(jobs=[dict(id="pj3", receipt="1.2")]))

    def s500(b):
        b.op("uv", dict(page="p"), 500, dict(code="internal"))

    def s503(b):
        b.op("checkin", dict(user=1), 503, dict(code="backend_unavailable"))

    def hang(b):
        b.op("uv", dict(page="p"), 200, {}, took=60.0)

    def no_answer(b):
        b.op("uv", dict(page="p"), None, error="timeout", took=30.0)

    def not_recovered(b):
        b.meta.update(t0=b.t - 100.0, minutes=2.0, quiet_s=40.0)
        b.op("uv", dict(page="quiet"), None, error="conn", start=b.meta["t0"] + 110.0)

    return [
        ("oversold", "a voucher sold beyond its stock", oversold),
        ("over_user_limit", "a user with more orders than the per-user limit", over_limit),
        ("lost_order", "a 201 purchase missing from the orders list", lost),
        ("ledger", "a 201 purchase missing from PostgreSQL", ledger),
        ("doubled_order", "a retried unknown outcome ending with two orders", doubled),
        ("unannounced_order", "a retried unknown outcome answered 'no' though it ordered",
         zero),
        ("fence", "the fenced register accepting a lower token", fence),
        ("token_order", "a later acquisition handed a lower token", token),
        ("lost_job", "a job enqueued 201 neither acked nor dead", lost_job),
        ("lost_job", "a keyed ack refused on retry, its job never acked", lost_keyed_ack),
        ("acked_twice", "a job acked twice", acked_twice),
        ("limiter_overshoot", "a rate-limit key admitting past its bound, no fault near",
         overshoot),
        ("limiter_overshoot", "a limit policy admitting past its bound, no fault near",
         policy_overshoot),
        ("double_claim", "a job handed to two claims within its visibility", double_claim),
        ("status_5xx", "a 500", s500),
        ("503_no_retry_after", "a 503 without Retry-After", s503),
        ("hang", "an answer past the request timeout", hang),
        ("hang", "no answer at all (client gave up)", no_answer),
        ("not_recovered", "a request failing after every fault healed", not_recovered),
    ]


def real_plants():
    """Plants that alter the recorded operations themselves (None when the history has nothing
    to alter): a real acknowledged order dropped from its list, a real ack repeated, a real
    success turned into a 500, a real purchase's key answered a second order."""

    def drop_listed(b):
        ok = {o["body"]["order_id"] for o in b.records if o.get("type") == "op"
              and o["op"] == "purchase" and o.get("status") == 201}
        for f in b.records:
            if f.get("type") == "final" and f["what"] == "orders":
                for i, x in enumerate(f["orders"]):
                    if x["order_id"] in ok:
                        del f["orders"][i]
                        return True
        return None

    def repeat_ack(b):
        for o in b.records:
            if o.get("type") == "op" and o["op"] == "ack" and o.get("status") == 204:
                b.op("ack", dict(o["args"], receipt="%s-again" % o["args"]["receipt"]), 204)
                return True
        return None

    def success_to_500(b):
        for o in b.records:
            if o.get("type") == "op" and o.get("status") == 200 and o["op"] == "claim":
                o["status"], o["body"] = 500, dict(code="internal")
                return True
        return None

    def second_order(b):
        for o in b.records:
            if o.get("type") == "op" and o["op"] == "purchase" and o.get("status") == 201:
                a = o["args"]
                oid = b.buy(a["voucher"], a["user"], logical=o["logical"], attempt=99)
                del oid
                return True
        return None

    def fence_back(b):
        acc = [f for f in b.records if f.get("type") == "fence" and f["accepted"]]
        if not acc:
            return None
        last = max(acc, key=lambda f: f["token"])
        b.fence(last["lock"], "late", last["token"] - 1, True, last["token"])
        return True

    return [
        ("lost_order", "a recorded 201 order dropped from its list", drop_listed),
        ("acked_twice", "a recorded ack (204) repeated with another receipt", repeat_ack),
        ("status_5xx", "a recorded claim's 200 turned into a 500", success_to_500),
        ("doubled_order", "a recorded purchase's key answered a second order", second_order),
        ("fence", "the register accepting one below its highest recorded token", fence_back),
    ]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--history", help="a recorded clean history (default: a synthetic one)")
    args = p.parse_args(argv)
    base = check.load(args.history) if args.history else synthetic()
    src = args.history or "a synthetic history"
    clean = check.check(copy.deepcopy(base))
    print("self-check on %s: %d records, clean run: %d violations" % (
        src, len(base), len(clean.violations)))
    failed = 0
    if clean.violations:
        check.report(clean)
        print("self-check: the clean history is not clean; plants are judged on what is new")
        failed += 1
    before = collections.Counter(v["kind"] for v in clean.violations)
    todo = plants() + (real_plants() if args.history else [])
    for kind, what, plant in todo:
        recs = copy.deepcopy(base)
        if plant(Builder(recs)) is None and plant in [p for _, _, p in todo[len(plants()):]]:
            print("  %-4s %-60s → nothing in this history to alter" % ("skip", what))
            continue
        c = check.check(recs)
        after = collections.Counter(v["kind"] for v in c.violations)
        new = [v for v in c.violations if after[v["kind"]] > before[v["kind"]]]
        hit = [v for v in new if v["kind"] == kind][-1:]
        print("  %-4s %-60s → %s" % ("ok" if hit else "MISS", what,
                                      ("[%s] %s" % (kind, hit[0]["msg"])) if hit else
                                      "not reported (got: %s)" % sorted({v["kind"] for v in new})))
        failed += 0 if hit else 1
    print("self-check: %s" % ("every plant reported" if not failed else "%d failure(s)" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
