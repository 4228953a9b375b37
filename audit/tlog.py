"""The transparency log's leaves: appending a manifest, and the tree they form (proofs: merkle.py)."""

from django.db import transaction
from django.db.models import Max

from . import store_witness, worm
from .models import LogLeaf, Manifest
from .verifier import merkle


def append_manifest(manifest: Manifest) -> LogLeaf:
    """The next leaf, for a manifest being appended to the chain: the caller holds the chain's row lock.
    LedgerRollback when the output store already holds that position (store_witness.py)."""
    last = LogLeaf.objects.aggregate(last=Max("index"))["last"]
    index = 0 if last is None else last + 1
    store_witness.check_position(index)
    transaction.on_commit(lambda: worm.lock_manifest(manifest))
    leaf = LogLeaf.objects.create(
        index=index,
        manifest=manifest,
        leaf_hash=merkle.leaf_hash(manifest.body.encode("ascii")).hex(),
        created_at=manifest.created_at,
    )
    store_witness.witness_on_commit(leaf)
    return leaf


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
