"""The data a benchmark run seeds before it measures: the vouchers of the purchase rows (through
the gateway, and bare for the raw scripts), the dense geo layer, the dedup filter and the due
jobs of the claim + ack row, with the sizes the report quotes.
"""

import datetime
import random
import time

from harness import PREFIX

GEO_POINTS = 100_000
GEO_CENTER = (116.40, 39.90)
SECKILL_STOCK = 50_000_000
QUEUE_JOBS = 200_000  # seeded for the claim+ack row (it drains them)
QUEUE_PAYLOAD = '{"to":"user@example.com","template":"welcome","locale":"en"}'
# The dedup filter `bench` of the dedup row (and of each engine's in bench/engines.py).
DEDUP_FILTER = {"capacity": 100_000, "error_rate": 0.01}


def rfc3339(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def raw_voucher(stock):
    """The fields of a voucher for bench/lua/seckill.lua: open for a century, one per user."""
    now = int(time.time() * 1000)
    return ["stock", stock, "sold", 0, "begin", now - 3_600_000,
            "end", now + 100 * 365 * 86_400_000, "limit", 1, "cap", max(stock, 1) * 2]


def seed_vouchers(gw):
    """The vouchers of the seckill rows, `bench` (stock for every run) and `bench-soldout`
    (none left); returns the status of creating `bench`."""
    now = time.time()
    voucher = {"stock": SECKILL_STOCK, "begin": rfc3339(now - 3600),
               "end": rfc3339(now + 86400), "per_user_limit": 1}
    st, _, _ = gw.call("PUT", "/v1/seckill/vouchers/bench", voucher, admin=True)
    if st in (200, 201):
        gw.call("PUT", "/v1/seckill/vouchers/bench-soldout", dict(voucher, stock=1), admin=True)
        gw.call("POST", "/v1/seckill/vouchers/bench-soldout/orders", {"user_id": 1})
    return st


def seed(gw, redis, notes):
    """Seeds every domain; returns the ids of rows whose endpoints are not there (404/405)."""
    missing = set()
    st = seed_vouchers(gw)
    if st in (404, 405):
        missing |= {"seckill", "seckill_soldout"}
    elif st not in (200, 201):
        notes.append("seeding voucher `bench` answered %s" % st)
    for key, stock in (("bench:sk", 10**12), ("bench:sk0", 0)):
        redis.cli("HSET", key, *raw_voucher(stock))

    st, _, _ = gw.call("PUT", "/v1/dedup/bench", DEDUP_FILTER, admin=True)
    if st in (404, 405):
        missing.add("dedup")

    rnd = random.Random(42)
    points = [("p%06d" % i, round(GEO_CENTER[0] + rnd.uniform(-0.1, 0.1), 6),
               round(GEO_CENTER[1] + rnd.uniform(-0.08, 0.08), 6)) for i in range(GEO_POINTS)]
    commands = []
    for i in range(0, GEO_POINTS, 1000):
        cmd = ["GEOADD", "bench:geo:{dense}"]
        for member, lon, lat in points[i:i + 1000]:
            cmd += [lon, lat, member]
        commands.append(cmd)
    redis.pipe(commands)
    st, _, _ = gw.call("POST", "/v1/geo/bench", {"places": [
        {"member": m, "lon": lon, "lat": lat} for m, lon, lat in points[:1]]})
    if st in (404, 405):
        missing.add("nearby")
    else:
        for i in range(0, GEO_POINTS, 1000):
            st, _, body = gw.call("POST", "/v1/geo/bench", {"places": [
                {"member": m, "lon": lon, "lat": lat} for m, lon, lat in points[i:i + 1000]]})
            if st != 200:
                notes.append("geo batch seeding answered %s: %s" % (st, body))
                break
    st, _, _ = gw.call("POST", "/v1/queues/bench/jobs", {"payload": {"probe": True}})
    if st in (404, 405):
        missing |= {"enqueue", "claim_ack"}
    else:
        seed_queue_jobs(redis, QUEUE_JOBS)
        redis.pipe([["ZADD", "bench:q:{c}:due"] +
                    [x for n in range(10_000) for x in ("0", "c%d" % n)]])
    return missing


def seed_queue_jobs(redis, jobs):
    """Due jobs for claim+ack in queue `bench-claim`, written in the gateway's own layout
    (queue_common.lua): through the API this would take minutes."""
    q = PREFIX + "q:{bench-claim}:"
    commands = []
    for i in range(0, jobs, 1000):
        ids = ["c%08d" % n for n in range(i, min(i + 1000, jobs))]
        commands.append(["ZADD", q + "due"] + [x for j in ids for x in ("0", j)])
        commands.append(["HSET", q + "meta"] + [x for j in ids for x in (j, "0 0 10 -")])
        commands.append(["HSET", q + "pay"] + [x for j in ids for x in (j, QUEUE_PAYLOAD)])
    redis.pipe(commands)
