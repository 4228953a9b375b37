"""Re-importing the ledger positions a database lost and the output store kept (store_witness.py).

A restored or rolled-back database lacks the newest records the store's markers name; appends stop until an
operator recovers. Each lost record's signed bytes are in the store (a manifest's file, or a record's body in
its marker), so the ledger can take its place again with the very leaf it had: the positions witnesses saw are
filled with the same hashes, and nothing is signed twice. Each is checked first: its bytes hash to the marker's
leaf, its signature verifies with a trusted key (markers written since signatures travel in them), and every
checkpoint the store holds over those positions has the root of the ledger with them. One failed check
re-imports nothing.
"""

import json

from django.db import transaction

from audit.ledger import checkpoints as log_checkpoints
from audit.ledger import signing, store_witness, tlog
from audit.models import LogLeaf, RecoveredRecord
from audit.verifier import merkle, notes
from audit.verifier.package_log import signed_at
from core import stores


class RecoveryRefused(RuntimeError):
    """A lost record's bytes, signature or checkpoint do not check out: nothing was re-imported."""


def recover(by: str, apply: bool = False) -> list[dict]:
    """The positions the store holds past the database, each checked; re-imported when `apply`."""
    with transaction.atomic():
        tlog.lock()
        markers = store_witness.ahead_of_database()
        leaves = tlog.leaf_hashes()
        checked = [_check(marker, len(leaves) + i) for i, marker in enumerate(markers)]
        covered = _check_checkpoints(leaves + [bytes.fromhex(m["leaf_hash"]) for m in markers], len(leaves))
        report = [{**found, "checkpoints": covered.get(found["leaf_index"], [])} for found in checked]
        if apply:
            for found in report:
                _reimport(found, by)
    return [{k: v for k, v in found.items() if k != "body"} for found in report]


def _check(marker: dict, index: int) -> dict:
    where = f"log position {index}"
    if marker.get("leaf_index") != index:
        raise RecoveryRefused(f"{where}: its marker names position {marker.get('leaf_index')}.")
    kind = marker.get("kind")
    body = _bytes_of(marker, where)
    if merkle.leaf_hash(body).hex() != marker.get("leaf_hash"):
        raise RecoveryRefused(f"{where}: the {kind}'s bytes do not hash to the leaf its marker records.")
    signature, key_id = marker.get("signature") or "", marker.get("key_id") or ""
    if signature:
        why = signing.signature_problem(body, signature, key_id, signing.trust(), signed_at(body))
        if why:
            raise RecoveryRefused(f"{where}: the {kind}'s signature does not count: {why}")
    return {
        "leaf_index": index,
        "kind": kind,
        "body": body,
        "signature": signature,
        "key_id": key_id,
        "stored_name": marker.get("manifest", ""),
        "signature_checked": bool(signature),
    }


def _bytes_of(marker: dict, where: str) -> bytes:
    if marker.get("kind") == LogLeaf.Kind.MANIFEST:
        try:
            with stores.outputs().open(marker["manifest"], "rb") as fh:
                return fh.read()
        except (KeyError, FileNotFoundError) as exc:
            raise RecoveryRefused(f"{where}: the manifest file its marker names is not in the output store.") from exc
    body = marker.get(marker.get("kind") or "")
    if not isinstance(body, str):
        raise RecoveryRefused(f"{where}: its marker carries no record.")
    return body.encode("utf-8")


def _check_checkpoints(leaves: list[bytes], database_size: int) -> dict[int, list[int]]:
    """{position: sizes of the stored checkpoints that cover it}; RecoveryRefused if one's root differs."""
    heads = []
    for name in log_checkpoints.stored_names():
        if not name.endswith(log_checkpoints.NOTE):
            continue
        with stores.outputs().open(name, "rb") as fh:
            note = fh.read().decode("utf-8", "replace")
        try:
            head = log_checkpoints.open_note(note)
        except notes.NoteError:
            continue  # a verification run reports it; it vouches for nothing here
        if head.size > database_size:
            heads.append(head)
    if any(head.size > len(leaves) for head in heads):
        raise RecoveryRefused("a stored checkpoint covers more positions than the store's markers: records are missing")
    roots = merkle.prefix_roots(leaves, [head.size for head in heads])
    covered: dict[int, list[int]] = {}
    for head in heads:
        if roots[head.size] != head.root:
            raise RecoveryRefused(f"the checkpoint at {head.size} does not have the root of the ledger with them.")
        for index in range(database_size, head.size):
            covered.setdefault(index, []).append(head.size)
    return covered


def _reimport(found: dict, by: str) -> None:
    record = RecoveredRecord.objects.create(
        kind=found["kind"],
        body=found["body"].decode("utf-8"),
        signature=found["signature"],
        key_id=found["key_id"],
        stored_name=found["stored_name"],
        checked=json.dumps(
            {"signature": found["signature_checked"], "checkpoints": found["checkpoints"]}, sort_keys=True
        ),
        recovered_by=by[:150],
    )
    hashed = merkle.leaf_hash(found["body"])
    LogLeaf.objects.create(
        index=found["leaf_index"],
        kind=LogLeaf.Kind.RECOVERED,
        recovered=record,
        leaf_hash=hashed.hex(),
        created_at=record.recovered_at,
    )
    tlog.store_subtrees(found["leaf_index"], [hashed])


def stored_names() -> set[str]:
    """The files recovered manifests name (their own and their assets'): expected in the output store."""
    names: set[str] = set()
    for stored_name, body in RecoveredRecord.objects.filter(kind=LogLeaf.Kind.MANIFEST).values_list(
        "stored_name", "body"
    ):
        names.add(stored_name)
        assets = json.loads(body).get("assets") or []
        names.update(a["name"] for a in assets if isinstance(a, dict) and isinstance(a.get("name"), str))
    return names
