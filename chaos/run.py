"""./scripts/chaos: the fault-injection run and its checker (docs/chaos.md).

Modes: a run (the default), `--dry-run` (print a seed's schedule), `--self-check` (plant each
kind of violation into a clean history and show the checker reports it), `--check FILE` (the
checker over a recorded history).
"""

import argparse
import os
import random
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import check  # noqa: E402
import schedule  # noqa: E402


def parse(argv):
    p = argparse.ArgumentParser(prog="./scripts/chaos", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--command", help=argparse.SUPPRESS)
    p.add_argument("--minutes", type=float, default=3.0, help="length of the run (default 3)")
    p.add_argument("--seed", type=int, help="the fault schedule's seed (default: random, "
                   "printed at the start)")
    p.add_argument("--gateway", help="a built gateway binary (default: target/release's, "
                   "which ./scripts/chaos builds)")
    p.add_argument("--clients", type=int, default=6, help="client threads (default 6)")
    p.add_argument("--node-timeout-ms", type=int, default=2000,
                   help="the Cluster's cluster-node-timeout (default 2000)")
    p.add_argument("--no-ledger", action="store_true",
                   help="run without PostgreSQL (no order ledger, no pg_stop faults)")
    p.add_argument("--no-partitions", action="store_true",
                   help="no network partitions (which need root: the run then happens in a "
                   "private network namespace, with nftables rules)")
    p.add_argument("--keep", help="directory for the history and the servers' logs (default: "
                   "a new one under the temporary directory, kept)")
    p.add_argument("--dry-run", action="store_true", help="print the seed's schedule, run nothing")
    p.add_argument("--self-check", action="store_true",
                   help="plant each kind of violation into a clean history; exit 1 if one is "
                   "not reported")
    p.add_argument("--history", help="with --self-check: a recorded clean history to plant into")
    p.add_argument("--check", metavar="HISTORY", help="run the checker over a recorded history")
    return p.parse_args(argv)


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.self_check:
        import selfcheck
        return selfcheck.main(["--history", args.history] if args.history else [])
    if args.check:
        c = check.check(check.load(args.check))
        check.report(c)
        return 1 if c.violations else 0
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 2**31)
    sched, quiet = schedule.make(args.seed, args.minutes, args.node_timeout_ms,
                                 ledger=not args.no_ledger, partitions=not args.no_partitions)
    if args.dry_run:
        print("\n".join(schedule.describe(sched, args.seed, args.minutes, quiet)))
        return 0
    import driver
    return driver.run(args, sched, quiet)


if __name__ == "__main__":
    # A run stopped with SIGTERM (or Ctrl-C) still stops every server it started: the
    # driver's `finally` runs on SystemExit, not on a default SIGTERM.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.exit(main())
