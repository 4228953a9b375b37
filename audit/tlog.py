"""The ledger's leaves: one `append` of a signed evidence record (a manifest, a retention event, a case map, an
activity event) under one lock, and the tree the leaves form (proofs: verifier/merkle.py)."""

from django.db import transaction
from django.db.models import Max

from . import store_witness, worm
from .models import ActivityEvent, CaseMap, LogLeaf, Manifest, ManifestChain, RetentionEvent
from .verifier import merkle

KINDS = {
    Manifest: LogLeaf.Kind.MANIFEST,
    RetentionEvent: LogLeaf.Kind.RETENTION_EVENT,
    CaseMap: LogLeaf.Kind.CASE_MAP,
    ActivityEvent: LogLeaf.Kind.ACTIVITY,
}
MADE_AT = {Manifest: "created_at", RetentionEvent: "at", CaseMap: "created_at", ActivityEvent: "at"}


def lock() -> None:
    """The log's one lock, held to the end of the caller's transaction (the chain row's, which manifests
    have always taken: one lock for every record, so two writers cannot take one place)."""
    ManifestChain.objects.select_for_update().get_or_create(pk=1)


def append(record: Manifest | RetentionEvent | CaseMap | ActivityEvent) -> LogLeaf:
    """The next leaf, for a record being written in the caller's transaction, which holds lock().
    LedgerRollback when the output store already holds that position (store_witness.py)."""
    last = LogLeaf.objects.aggregate(last=Max("index"))["last"]
    index = 0 if last is None else last + 1
    store_witness.check_position(index)
    kind = KINDS[type(record)]
    leaf = LogLeaf.objects.create(
        index=index,
        kind=kind,
        **{kind: record},
        leaf_hash=merkle.leaf_hash(record.body.encode("utf-8")).hex(),
        created_at=getattr(record, MADE_AT[type(record)]),
    )
    store_witness.witness_on_commit(leaf)
    return leaf


def append_manifest(manifest: Manifest) -> LogLeaf:
    """A manifest's leaf, in the transaction that appends it to the chain (which holds the log's lock)."""
    transaction.on_commit(lambda: worm.lock_manifest(manifest))
    return append(manifest)


def leaf_hashes(size: int | None = None) -> list[bytes]:
    """The leaf hashes in log order (all, or the first `size`); a gap in the indexes raises LogGap."""
    rows = LogLeaf.objects.order_by("index").values_list("index", "leaf_hash")
    if size is not None:
        rows = rows.filter(index__lt=size)
    found = []
    for index, hexed in rows.iterator(chunk_size=10000):
        if index != len(found):
            raise LogGap(f"the log has no leaf {len(found)} (the next is {index})")
        found.append(bytes.fromhex(hexed))
    if size is not None and len(found) != size:
        raise LogGap(f"the log has {len(found)} leaves, not {size}")
    return found


def tree(size: int | None = None) -> merkle.Tree:
    return merkle.Tree(leaf_hashes(size))


class LogGap(RuntimeError):
    """The log's rows are not the contiguous leaves 0..n-1 (rows deleted or renumbered behind our back)."""
