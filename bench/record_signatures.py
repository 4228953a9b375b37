"""What ML-DSA-44 beside Ed25519 costs each signed record and checkpoint: time to sign and check, bytes kept.

    python -m bench.record_signatures [--rounds 200] [--body-bytes 2000]

In-process, per algorithm: the median time of signing and of checking one record of --body-bytes (a manifest of a
few images is about 2 KB), as audit/ledger/signing.py and the verifier do it, and the bytes the signature adds to
the record's row and to its entry in a package's index.json (the signature as stored, its key id, the JSON names).
Then the checkpoint note with one signature line and with both. Never a pass/fail on time.
"""

import argparse
import base64
import json
import os
import sys

from cryptography.hazmat.primitives.asymmetric import mldsa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from audit.verifier import keys, notes

from .tables import table
from .witness import median_seconds


def record_rows(rounds: int, body: bytes) -> list[list]:
    ed = Ed25519PrivateKey.generate()
    pq = mldsa.MLDSA44PrivateKey.from_seed_bytes(os.urandom(32))
    ed_public, pq_public = ed.public_key().public_bytes_raw(), pq.public_key().public_bytes_raw()
    ed_signature, pq_signature = ed.sign(body).hex(), base64.b64encode(pq.sign(body)).decode()
    trust = keys.Trust({keys.key_id_of(ed_public): ed_public, keys.key_id_of(pq_public): pq_public})
    rows = []
    for name, sign, signature, public in (
        ("ed25519", lambda: ed.sign(body), ed_signature, ed_public),
        ("ml-dsa-44", lambda: pq.sign(body), pq_signature, pq_public),
    ):
        key_id = keys.key_id_of(public)
        signing = median_seconds(sign, rounds)
        checking = median_seconds(lambda s=signature, k=key_id: trust.problem(body, s, k), rounds)
        prefix = "mldsa_" if name == "ml-dsa-44" else ""
        entry = json.dumps({f"{prefix}signature": signature, f"{prefix}key_id": key_id})
        stored = len(signature) + len(key_id)
        rows.append([name, f"{signing * 1e3:.3f} ms", f"{checking * 1e3:.3f} ms", f"{stored:,} B", f"{len(entry):,} B"])
    return rows


def note_rows() -> list[list]:
    text = notes.checkpoint_text("pagetrail.example.com/evidence-log", 100_000, bytes(32))
    ed, pq = Ed25519PrivateKey.generate(), mldsa.MLDSA44PrivateKey.from_seed_bytes(os.urandom(32))
    one, both = (
        notes.sign(text, "pagetrail.example.com/evidence-log", ed),
        notes.sign(text, "pagetrail.example.com/evidence-log", ed, pq),
    )
    return [["ed25519", f"{len(one.encode()):,} B"], ["ed25519 + ml-dsa-44", f"{len(both.encode()):,} B"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.record_signatures")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--body-bytes", type=int, default=2000)
    args = parser.parse_args(argv)
    body = json.dumps({"padding": "x" * max(args.body_bytes - 16, 0)}).encode()
    print(f"One signed record of {len(body):,} bytes, median of {args.rounds}:")
    table(["algorithm", "sign", "check", "row adds", "index entry adds"], record_rows(args.rounds, body))
    print("\nA checkpoint note (100,000 leaves):")
    table(["signature lines", "note"], note_rows())
    return 0


if __name__ == "__main__":
    sys.exit(main())
