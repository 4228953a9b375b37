"""A record's inclusion proof in a signed checkpoint: one answer for the API and the portal's ledger page."""

import base64

from audit.ledger import tlog
from audit.models import LogCheckpoint, LogLeaf


def b64(hashes: list[bytes]) -> list[str]:
    return [base64.b64encode(h).decode() for h in hashes]


def newest_holding(leaf: LogLeaf) -> LogCheckpoint | None:
    """The newest signed checkpoint, if it holds the leaf (it holds every older leaf too)."""
    newest = LogCheckpoint.objects.order_by("-tree_size").first()
    return newest if newest is not None and leaf.index < newest.tree_size else None


def inclusion(leaf: LogLeaf, checkpoint: LogCheckpoint) -> dict | None:
    """RFC 9162 inclusion proof of the leaf in the checkpoint's tree; None when that tree does not hold it yet."""
    if leaf.index >= checkpoint.tree_size:
        return None
    proof = tlog.tree(checkpoint.tree_size, leaves=[leaf.index]).inclusion_proof(leaf.index)
    return {
        "leaf_index": leaf.index,
        "tree_size": checkpoint.tree_size,
        "leaf_hash": base64.b64encode(bytes.fromhex(leaf.leaf_hash)).decode(),
        "proof": b64(proof),
        "checkpoint": checkpoint.note,
    }
