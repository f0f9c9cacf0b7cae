"""The fault schedule: a list of faults drawn from one seed, so rerunning a seed replays it.

Targets are named by role, not by port: "the master of shard 1" is whichever node serves that
shard's slots when the fault begins (a failover earlier in the run may have moved it), so a
replayed schedule hits the same roles; the run's history records the node each one hit.
"""

import random

# kind → weight; each fault's parameters are drawn in `draw`.
KINDS = [
    ("redis_kill", 3),      # SIGKILL a Redis master or replica, restart it after `duration`
    ("redis_pause", 3),     # SIGSTOP one, SIGCONT after up to the node timeout and beyond
    ("failover", 2),        # CLUSTER FAILOVER on a shard's replica (forced, graceful)
    ("gateway_kill", 2),    # SIGKILL a gateway instance mid-request, restart after `duration`
    ("pg_stop", 1),         # stop PostgreSQL (fast shutdown), start it after `duration`
    ("partition", 2),       # drop a gateway's packets to a shard's master (nftables), heal
]
NOT_DONE = []


def make(seed, minutes, node_timeout_ms=2000, ledger=True, warmup_s=10.0, quiet_s=None,
         mean_gap_s=4.0, partitions=True):
    """[(start_s, kind, target, duration_s)], start relative to the run's start, all within
    [warmup, total − quiet]; faults may overlap."""
    rng = random.Random(seed)
    total = minutes * 60.0
    quiet = quiet_s if quiet_s is not None else max(20.0, min(60.0, total * 0.2))
    nt = node_timeout_ms / 1000.0
    kinds = [(k, w) for k, w in KINDS if (ledger or k != "pg_stop") and (
        partitions or k != "partition")]
    out = []
    t = warmup_s
    while True:
        t += rng.uniform(0.4 * mean_gap_s, 1.6 * mean_gap_s)
        kind = rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
        if kind in ("redis_kill", "redis_pause"):
            target = "%s:%d" % (rng.choice(["master", "replica"]), rng.randrange(3))
            if kind == "redis_kill":
                duration = rng.uniform(0.5, 3.0 * nt)
            else:
                duration = rng.uniform(0.2 * nt, 2.5 * nt)
        elif kind == "failover":
            target, duration = "shard:%d" % rng.randrange(3), 0.0
        elif kind == "partition":
            target = "g%d|master:%d" % (rng.randrange(2), rng.randrange(3))
            duration = rng.uniform(0.3 * nt, 3.0 * nt)
        elif kind == "gateway_kill":
            target, duration = "g%d" % rng.randrange(2), rng.uniform(0.2, 3.0)
        else:
            target, duration = "postgres", rng.uniform(1.0, 10.0)
        if t + duration > total - quiet:
            break
        out.append((round(t, 3), kind, target, round(duration, 3)))
    return out, quiet


def describe(schedule, seed, minutes, quiet):
    lines = ["seed %d: %d faults over %s min (quiet period %.0f s at the end)" % (
        seed, len(schedule), minutes, quiet)]
    for start, kind, target, duration in schedule:
        lines.append("  t=%7.2fs  %-13s %-10s %s" % (
            start, kind, target, ("for %.2fs" % duration) if duration else "once"))
    counts = {}
    for _, kind, _, _ in schedule:
        counts[kind] = counts.get(kind, 0) + 1
    lines.append("by kind: " + ", ".join("%s %d" % kv for kv in sorted(counts.items())))
    if NOT_DONE:
        lines.append("not done: " + "; ".join(NOT_DONE))
    return lines
