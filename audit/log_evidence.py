"""The transparency log's part of an evidence package: a signed checkpoint and each manifest's inclusion proof.

The offline verifier recomputes each manifest's leaf from the file in the package and follows its proof to
the checkpoint's root, which only the evidence key can sign: a package's manifests are then the very records
every witness of that checkpoint holds, whatever the portal's database says later.
"""

import base64

from . import log_checkpoints, tlog
from .models import LogLeaf


def section(manifests, at) -> dict:
    """`manifests`: the scope's queryset. Signs a checkpoint now when none holds them all yet."""
    places = dict(LogLeaf.objects.filter(manifest__in=manifests).values_list("manifest__sequence", "index"))
    if not places:
        return {"checkpoint": None, "timestamp": None, "inclusion": []}
    checkpoint = log_checkpoints.covering(max(places.values()) + 1, at)
    tree = tlog.tree(checkpoint.tree_size)
    return {
        "checkpoint": checkpoint.note,
        "timestamp": base64.b64encode(bytes(checkpoint.timestamp_token)).decode() or None,
        "inclusion": [
            {"sequence": sequence, "leaf_index": index, "proof": _b64(tree.inclusion_proof(index))}
            for sequence, index in sorted(places.items())
        ],
    }


def _b64(hashes: list[bytes]) -> list[str]:
    return [base64.b64encode(h).decode() for h in hashes]
