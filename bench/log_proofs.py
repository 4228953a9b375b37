"""Ledger proofs at scale: an inclusion proof, a consistency proof and a checkpoint's root at 1k, 100k and 1M
leaves, made from the stored subtree hashes (audit/ledger/tlog.py) and, in the same run, from a rebuild of the tree from
every leaf (what each request did before the ledger stored them).

    python -m bench.log_proofs [--leaves 1000,100000,1000000] [--data var/bench/log] [--rounds 25]
                               [--rebuilds 3]

Loads the leaves once into a database of its own (the embedded SQLite profile under --data, or DATABASE_URL's
database when that is set) and grows it to each size in turn: synthetic activity events, each a leaf, with the
subtrees their leaves complete written as the product writes them (tlog.store_subtrees). Per size and proof it
reports the median of --rounds calls from the stored hashes and of --rebuilds rebuilds (random leaves and sizes,
seeded), the queries of one call each, and the ratio. Exits 1 when a proof from the stored hashes differs from
the rebuilt one. Never a pass/fail on time: these figures are for reading.
"""

import argparse
import hashlib
import json
import random
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from .admin_scale import configure
from .tables import table

LOAD_BATCH = 50_000  # leaves a transaction


def grow(to: int) -> None:
    """Append synthetic activity events, each a leaf, until the log holds `to` leaves."""
    from django.db import transaction

    from audit.ledger import tlog
    from audit.models import ActivityEvent, LogLeaf
    from audit.verifier import merkle

    have, at = tlog.leaf_count(), datetime(2026, 1, 1, tzinfo=UTC)
    while have < to:
        stop = min(to, have + LOAD_BATCH)
        with transaction.atomic():
            tlog.lock()
            events = ActivityEvent.objects.bulk_create([event(i, at) for i in range(have, stop)], batch_size=5000)
            hashes = [merkle.leaf_hash(e.body.encode()) for e in events]
            LogLeaf.objects.bulk_create(
                [
                    LogLeaf(index=i, kind="activity", activity=e, leaf_hash=h.hex(), created_at=at)
                    for i, e, h in zip(range(have, stop), events, hashes)
                ],
                batch_size=5000,
            )
            tlog.store_subtrees(have, hashes)
        have = stop
        print(f"  {have:,} / {to:,} leaves", file=sys.stderr)


def event(i: int, at):
    from audit.models import ActivityEvent

    body = json.dumps({"bench": "log_proofs", "event": i}, separators=(",", ":"))
    return ActivityEvent(
        actor="bench",
        action="bench_event",
        object_type="bench",
        object_id=str(i),
        at=at,
        previous_sha256=hashlib.sha256(b"previous %d" % i).hexdigest(),
        sha256=hashlib.sha256(body.encode()).hexdigest(),
        body=body,
    )


def calls(size: int, rng: random.Random) -> dict:
    """Each proof's call from stored hashes and its rebuild from every leaf, on one random leaf or size."""
    from audit.ledger import tlog
    from audit.verifier import merkle

    leaf, first = rng.randrange(size), rng.randrange(1, size + 1)
    return {
        "inclusion proof": (
            lambda: tlog.tree(size, leaves=[leaf]).inclusion_proof(leaf),
            lambda: merkle.Tree(tlog.leaf_hashes(size)).inclusion_proof(leaf),
        ),
        "consistency proof": (
            lambda: tlog.tree(size, firsts=[first]).consistency_proof(first),
            lambda: merkle.Tree(tlog.leaf_hashes(size)).consistency_proof(first),
        ),
        "checkpoint root": (lambda: tlog.root(size), lambda: merkle.root(tlog.leaf_hashes(size))),
    }


def timed(call) -> tuple[float, int, object]:
    """Milliseconds, queries, and the answer of one call."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        start = time.perf_counter()
        answer = call()
        ms = (time.perf_counter() - start) * 1000
    return ms, len(queries.captured_queries), answer


def measure(size: int, rounds: int, rebuilds: int, seed: int) -> tuple[list[dict], list[str]]:
    rng, found, failures = random.Random(seed), dict[str, dict](), list[str]()
    for r in range(rounds):
        for what, (stored, rebuilt) in calls(size, rng).items():
            row = found.setdefault(what, {"size": size, "proof": what, "stored": [], "rebuilt": []})
            ms, queries, answer = timed(stored)
            row["stored"].append(ms)
            row["stored_queries"] = max(queries, row.get("stored_queries", 0))
            if r < rebuilds:
                ms, queries, expected = timed(rebuilt)
                row["rebuilt"].append(ms)
                row["rebuilt_queries"] = queries
                if answer != expected:
                    failures.append(f"{what} at {size:,} leaves: the stored hashes give another answer")
    rows = []
    for row in found.values():
        stored, rebuilt = statistics.median(row.pop("stored")), statistics.median(row.pop("rebuilt"))
        rows.append(row | {"stored_ms": stored, "rebuilt_ms": rebuilt, "ratio": rebuilt / stored})
    return rows, failures


def print_table(rows: list[dict], rounds: int, rebuilds: int) -> None:
    print(
        f"\n### Ledger proofs: from stored subtree hashes (median of {rounds}) against a rebuild from every leaf "
        f"(median of {rebuilds}), queries of one call\n"
    )
    table(
        ["leaves", "proof", "stored", "queries", "rebuild", "queries", "rebuild / stored"],
        [
            [
                f"{r['size']:,}",
                r["proof"],
                f"{r['stored_ms']:.2f} ms",
                r["stored_queries"],
                f"{r['rebuilt_ms']:,.1f} ms",
                r["rebuilt_queries"],
                f"{r['ratio']:,.0f}×",
            ]
            for r in rows
        ],
    )


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.log_proofs", description=__doc__.split("\n")[0])
    parser.add_argument("--leaves", default="1000,100000,1000000", help="comma-separated tree sizes")
    parser.add_argument("--data", type=Path, default=Path("var/bench/log"), help="the run's data dir")
    parser.add_argument("--rounds", type=int, default=25, help="timed calls from the stored hashes per proof")
    parser.add_argument("--rebuilds", type=int, default=3, help="timed rebuilds per proof (at most --rounds)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--summary", type=Path, help="also write the headline figures here, as JSON (for `-m bench`)")
    options = parser.parse_args(argv)
    options.leaves = sorted(int(n) for n in options.leaves.split(","))
    if options.rounds < 1 or not 1 <= options.rebuilds <= options.rounds or options.leaves[0] < 1:
        parser.error("--rounds and --rebuilds must be at least 1, --rebuilds at most --rounds, --leaves positive")
    return options


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    configure(options.data)
    rows, failures = [], []
    for size in options.leaves:
        grow(size)
        measured, failed = measure(size, options.rounds, options.rebuilds, options.seed)
        rows += measured
        failures += failed
    print_table(rows, options.rounds, options.rebuilds)
    print("\nchecks: " + ("every proof the same both ways" if not failures else "FAILED\n  " + "\n  ".join(failures)))
    if options.summary:
        options.summary.write_text(json.dumps({"rows": rows, "failures": failures}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
