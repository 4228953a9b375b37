"""The output store witnesses the database: no log position is ever signed twice.

After each append commits, a write-once marker for its position (`tlog/positions/<index>.json`: the leaf's
hash and the manifest file it names) goes to the output store, which a database restore or a lost transaction
does not roll back. Before each append, and when a worker starts, the next position must have no marker: a
store ahead of the database (a restored or rolled-back database) stops every append, opens a `ledger_rollback`
alert and closes intake with the kill switch, until an operator recovers (docs/operations.md). A crash between
a commit and its marker leaves the database ahead, which is harmless: the worker start writes the marker then.
"""

import hashlib
import json
import logging

from django.db import transaction
from django.db.models import Max

from audit.models import LogLeaf
from audit.operations.alerts import raise_alert
from audit.verifier.canonical import canonical_bytes
from core import stores
from extraction.kill_switch import set_submissions
from extraction.models import SubmissionSwitch

log = logging.getLogger(__name__)
PREFIX = "tlog/positions"
KIND = "ledger_rollback"


class LedgerRollback(stores.StorageUnavailable):
    """The output store holds a signed record at a position the database has not reached."""

    def __init__(self, index: int):
        super().__init__("outputs", RuntimeError(f"it holds log position {index}, which the database lacks"))
        self.index = index
        self.message = (
            f"The output store already holds log position {index}, which the database lacks: the database "
            "was restored or lost transactions. Appends are stopped so that no position is signed twice."
        )


def marker_name(index: int) -> str:
    return f"{PREFIX}/{index:012d}.json"


def marker(leaf: LogLeaf) -> bytes:
    """What the store keeps of a position: the leaf, where its record is (a manifest's stored file; the signed
    body itself of any other record, which has no file of its own) and the record's signature, so that a
    database that loses the record can re-import it checked (recovery.py)."""
    record = leaf.record
    about = (
        {"sequence": record.sequence, "manifest": record.storage_name}
        if leaf.kind == LogLeaf.Kind.MANIFEST
        else {leaf.kind: record.body}
    )
    signed = {"signature": record.signature, "key_id": record.key_id}
    return canonical_bytes(
        {"leaf_index": leaf.index, "leaf_hash": leaf.leaf_hash, "kind": leaf.kind, **about, **signed}
    )


def check_position(index: int) -> None:
    """Before appending at `index`: LedgerRollback if the store has it and the database does not."""
    if stores.outputs().exists(marker_name(index)) and not _in_database(index):
        raise LedgerRollback(index)


def _in_database(index: int) -> bool:
    """Asked after the store: a marker is written only once its append committed, so a leaf committed by
    another worker since this one read the newest index is found here, and only a lost one is not."""
    return LogLeaf.objects.filter(index=index).exists()


def check_next() -> None:
    """Before work that will append (a retention run deletes first, then records): LedgerRollback, with the
    alert and the kill switch, when the store holds the next position already."""
    last = LogLeaf.objects.aggregate(last=Max("index"))["last"]
    try:
        check_position(0 if last is None else last + 1)
    except LedgerRollback as exc:
        stop_appends(exc)
        raise


def witness_on_commit(leaf: LogLeaf) -> None:
    """Write the marker once the append is durable: a transaction that fails leaves none behind."""
    transaction.on_commit(lambda: write_marker(leaf))


def write_marker(leaf: LogLeaf) -> None:
    body = marker(leaf)
    try:
        stores.save_bytes_once(stores.outputs(), marker_name(leaf.index), body, hashlib.sha256(body).hexdigest())
    except stores.STORAGE_ERRORS:  # the next worker start writes it; the append itself is durable
        log.exception("could not write the store marker of log position %s", leaf.index)


def stop_appends(exc: LedgerRollback) -> None:
    """The alert and the kill switch, outside the failed append's transaction."""
    raise_alert(KIND, "ledger-rollback", exc.message, "/admin/audit/alert/")
    if SubmissionSwitch.submissions_open():
        set_submissions(False, by="ledger", reason=exc.message)


def check_at_start() -> dict:
    """At worker start: write the newest position's marker if a crash lost it, and stop appends if the store
    is ahead of the database."""
    last = LogLeaf.objects.aggregate(last=Max("index"))["last"]
    newest = LogLeaf.objects.select_related(*LogLeaf.RECORDS).filter(index=last).first()
    if newest is not None and not stores.outputs().exists(marker_name(newest.index)):
        write_marker(newest)
    try:
        check_position(0 if last is None else last + 1)
    except LedgerRollback as exc:
        stop_appends(exc)
        return {"ledger": "rolled_back", "position": exc.index}
    return {"ledger": "in_step", "size": 0 if last is None else last + 1}


def ahead_of_database() -> list[dict]:
    """The markers the store holds past the database's newest position, for an operator recovering."""
    last = LogLeaf.objects.aggregate(last=Max("index"))["last"]
    found, index = [], 0 if last is None else last + 1
    while stores.outputs().exists(marker_name(index)):
        if not _in_database(index):  # not committed by another worker meanwhile
            with stores.outputs().open(marker_name(index), "rb") as fh:
                found.append(json.loads(fh.read()))
        index += 1
    return found
