"""The ledger's leaves: one `append` of a signed evidence record (a manifest, a retention event, a case map, an
activity event) under one lock, and the tree the leaves form (proofs: verifier/merkle.py).

Beside each leaf, the hashes of the complete subtrees it completes (LogSubtree): a proof or a checkpoint's root at
any size reads O(log n) stored hashes in one query, never every leaf."""

import functools
import itertools
import operator
from collections.abc import Iterable

from django.db import transaction
from django.db.models import Max, Q

from audit.ledger import store_witness
from audit.models import ActivityEvent, CaseMap, LogLeaf, LogSubtree, Manifest, ManifestChain, RetentionEvent
from audit.retention import worm
from audit.verifier import merkle

KINDS = {
    Manifest: LogLeaf.Kind.MANIFEST,
    RetentionEvent: LogLeaf.Kind.RETENTION_EVENT,
    CaseMap: LogLeaf.Kind.CASE_MAP,
    ActivityEvent: LogLeaf.Kind.ACTIVITY,
}
MADE_AT = {Manifest: "created_at", RetentionEvent: "at", CaseMap: "created_at", ActivityEvent: "at"}


def lock() -> ManifestChain:
    """The log's one lock, held to the end of the caller's transaction (the old hash chain's row, which manifests
    have always taken: one lock for every record, so two writers cannot take one place). Returns the row, as read
    under the lock (its keys_stamp)."""
    return ManifestChain.objects.select_for_update().get_or_create(pk=1)[0]


def append(record: Manifest | RetentionEvent | CaseMap | ActivityEvent) -> LogLeaf:
    """The next leaf, for a record being written in the caller's transaction, which holds lock().
    LedgerRollback when the output store already holds that position (store_witness.py)."""
    return _append_at(leaf_count(), record)


def _append_at(index: int, record: Manifest | RetentionEvent | CaseMap | ActivityEvent) -> LogLeaf:
    store_witness.check_position(index)
    kind, hashed = KINDS[type(record)], merkle.leaf_hash(record.body.encode("utf-8"))
    leaf = LogLeaf.objects.create(
        index=index,
        kind=kind,
        **{kind: record},
        leaf_hash=hashed.hex(),
        created_at=getattr(record, MADE_AT[type(record)]),
    )
    store_subtrees(index, [hashed])
    store_witness.witness_on_commit(leaf)
    return leaf


def store_subtrees(start: int, leaves: list[bytes]) -> None:
    """The complete subtrees that `leaves`, just written at `start`, complete: in the caller's transaction, which
    holds lock() (one query for the subtrees of the log before them that they pair with, one to write them all, the
    leaves' own rows among them)."""
    frontier = merkle.subtrees(0, start)
    found = hashes(frontier)
    closed = merkle.closed_subtrees(start, [found[part] for part in frontier], leaves)
    LogSubtree.objects.bulk_create(
        (LogSubtree(level=level, index=k, hash=h.hex()) for level, k, h in closed), batch_size=5000
    )


def append_manifest(manifest: Manifest) -> LogLeaf:
    """A manifest's leaf, in the transaction that appends it to the chain (which holds the log's lock)."""
    transaction.on_commit(lambda: worm.lock_manifest(manifest))
    # Its sequence is the leaf count its writer read under this same lock, after the signing key's own leaf (if
    # any): read again, it could only be the same. LogLeaf's unique index still refuses a place taken twice.
    return _append_at(manifest.sequence, manifest)


def leaf_hashes(size: int | None = None) -> list[bytes]:
    """The leaf hashes in log order (all, or the first `size`); a gap in the indexes raises LogGap."""
    rows = LogLeaf.objects.order_by("index").values_list("index", "leaf_hash")
    if size is not None:
        rows = rows.filter(index__lt=size)
    found: list[bytes] = []
    for index, hexed in rows.iterator(chunk_size=10000):
        if index != len(found):
            raise LogGap(f"the log has no leaf {len(found)} (the next is {index})")
        found.append(bytes.fromhex(hexed))
    if size is not None and len(found) != size:
        raise LogGap(f"the log has {len(found)} leaves, not {size}")
    return found


def leaf_count() -> int:
    """The number of leaves (one past the newest index: verification, not this, finds a gap)."""
    last = LogLeaf.objects.aggregate(last=Max("index"))["last"]
    return 0 if last is None else last + 1


def tree(size: int, leaves: Iterable[int] = (), firsts: Iterable[int] = ()) -> merkle.StoredTree:
    """The tree of the first `size` leaves, holding what its root, the inclusion proofs of the leaves at the indexes
    in `leaves` and the consistency proofs from the sizes in `firsts` need (merkle.ProofError for an index or
    size it does not have; LogGap when a stored hash is missing)."""
    return merkle.StoredTree(size, hashes(merkle.needs(size, leaves, firsts, root=True)))


def root(size: int) -> bytes:
    """The root of the tree of the first `size` leaves."""
    return tree(size).root()


CHUNK = 500  # places per query: well under SQLite's limit on a statement's parameters


def hashes(wanted: Iterable[merkle.Subtree]) -> dict[merkle.Subtree, bytes]:
    """The stored hashes of these complete subtrees (level 0: the leaves'); LogGap when one is missing."""
    wanted, found = set(wanted), {}
    for chunk in _chunks(sorted(wanted)):
        by_level = itertools.groupby(chunk, key=operator.itemgetter(0))
        places = functools.reduce(operator.or_, (Q(level=lv, index__in=[k for _, k in ks]) for lv, ks in by_level))
        for level, index, hexed in LogSubtree.objects.filter(places).values_list("level", "index", "hash"):
            found[level, index] = bytes.fromhex(hexed)
    if missing := wanted - found.keys():
        level, index = min(missing)
        raise LogGap(f"the log has no stored hash for subtree {index} of level {level} ({len(missing)} missing)")
    return found


def _chunks(items: list) -> list[list]:
    return [items[i : i + CHUNK] for i in range(0, len(items), CHUNK)]


class LogGap(RuntimeError):
    """The log's rows are not the contiguous leaves 0..n-1 and their subtrees (rows deleted or renumbered behind
    our back)."""
