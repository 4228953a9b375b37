"""The witness's costs: cosigning and verifying one checkpoint with each key type, and add-checkpoint over HTTP.

    python -m bench.witness [--requests 200] [--size 100000]

In-process, per key type: the median time of making and of checking one cosignature, and its line's length. Then,
per key set, a witness process (`python -m audit.verifier.witness serve`, as tests start it) on loopback asked
--requests times, over one keep-alive connection, to cosign a log growing one leaf a request from --size leaves,
each with its consistency proof: the median and 95th percentile of a request's round trip, and requests a second.
The state is fsynced on every answer, so the figures include a disk flush. Never a pass/fail on time.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from audit.verifier import cosignature, merkle, notes
from tests.witnesses import Log, WitnessProcess

from .tables import table

CHECKPOINT = notes.checkpoint_text("log.example/bench", 100_000, bytes(32))


def crypto_rows(rounds: int) -> list[list]:
    rows = []
    for algorithm in ("ed25519", "ml-dsa-44"):
        witness = cosignature.generate("witness.example/bench", algorithm)
        key = witness.verifier()
        signing = median_seconds(lambda w=witness: w.cosign(CHECKPOINT, 1_700_000_000), rounds)
        line = witness.cosign(CHECKPOINT, 1_700_000_000)
        checking = median_seconds(lambda k=key, line=line: k.verifies(CHECKPOINT, line), rounds)
        rows.append([algorithm, f"{signing * 1e3:.3f} ms", f"{checking * 1e3:.3f} ms", f"{len(line.encode()):,} B"])
    return rows


class GrowingLog(Log):
    """A log of `size` leaves and then one more a request: its proofs from the stored tree of every leaf."""

    def __init__(self, size: int, extra: int):
        super().__init__(origin="log.example/bench")
        self.all = [merkle.leaf_hash(f"leaf {i}".encode()) for i in range(size + extra)]
        self.subtrees: dict[tuple[int, int], bytes] = {}  # a subtree's root is the same in every larger tree

    def tree(self, size: int) -> merkle.Tree:
        tree = merkle.Tree(self.all, size)
        tree._roots = self.subtrees
        return tree

    def leaves(self, size: int) -> list[bytes]:
        return self.all[:size]

    def root(self, size: int) -> bytes:
        return self.tree(size).root()

    def proof(self, old: int, size: int) -> list[bytes]:
        return self.tree(size).consistency_proof(old) if 0 < old < size else []


def http_rows(requests: int, size: int) -> list[list]:
    log, rows = GrowingLog(size, requests), []
    bodies = [log.request(0, size)] + [log.request(n, n + 1) for n in range(size, size + requests)]
    for algorithms in (("ed25519",), ("ml-dsa-44",), ("ed25519", "ml-dsa-44")):
        with tempfile.TemporaryDirectory() as scratch:
            here = Path(scratch)
            cosignature_keys(here / "witness.key", algorithms)
            process = WitnessProcess(here / "state", here / "witness.key", {log.origin: log.vkey})
            try:
                times = _round_trips(process, bodies)
            finally:
                process.stop()
        p95 = statistics.quantiles(times, n=20)[-1]
        rows.append(
            [
                " + ".join(algorithms),
                f"{statistics.median(times) * 1e3:.2f} ms",
                f"{p95 * 1e3:.2f} ms",
                f"{len(times) / sum(times):.0f}",
            ]
        )
    return rows


def cosignature_keys(path: Path, algorithms: tuple[str, ...]) -> None:
    path.write_text("".join(cosignature.generate("witness.example/bench", a).private_key + "\n" for a in algorithms))


def _round_trips(process: WitnessProcess, bodies: list[bytes]) -> list[float]:
    first = process.add_checkpoint(bodies[0])
    assert first.status_code == 200, first.text
    times = []
    for body in bodies[1:]:
        start = time.perf_counter()
        answer = process.add_checkpoint(body)
        times.append(time.perf_counter() - start)
        if answer.status_code != 200:
            sys.exit(f"the witness refused a consistent checkpoint: {answer.status_code} {answer.text}")
    return times


def median_seconds(call, rounds: int) -> float:
    """The median wall time of `rounds` calls (bench/record_signatures.py times signatures the same way)."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.witness", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--size", type=int, default=100_000, help="the log's size at the first request")
    parser.add_argument("--rounds", type=int, default=200, help="cosignatures made and checked in-process")
    args = parser.parse_args(argv)
    table(["key", "cosign", "check", "signature line"], crypto_rows(args.rounds))
    print()
    table(["witness keys", "median", "p95", "requests/s"], http_rows(args.requests, args.size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
