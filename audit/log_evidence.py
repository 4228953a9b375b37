"""The transparency log's part of an evidence package: a signed checkpoint, each manifest's inclusion proof, and
for a date range the boundary records that prove it complete.

The offline verifier recomputes each manifest's leaf from the file in the package and follows its proof to
the checkpoint's root, which only the evidence key can sign: a package's manifests are then the very records
every witness of that checkpoint holds, whatever the portal's database says later. A date range's records
are contiguous leaves; the leaf just before them and the one just after (when the checkpoint holds it) travel
as *boundaries*, whose own signed times fall outside the range, so nothing of the range can be left out.
"""

import base64

from . import log_checkpoints, tlog
from .models import LogLeaf


def section(manifests, at, span=None, put=None) -> dict:
    """`manifests`: the scope's queryset; `span`: a date range's (from, before), whose boundary records are
    written with `put(name, bytes)`. Signs a checkpoint now when none holds them all yet."""
    places = dict(LogLeaf.objects.filter(manifest__in=manifests).values_list("manifest__sequence", "index"))
    if not places:
        return {"checkpoint": None, "timestamp": None, "inclusion": [], "boundaries": []}
    checkpoint = log_checkpoints.covering(max(places.values()) + 1, at)
    tree = tlog.tree(checkpoint.tree_size)
    return {
        "checkpoint": checkpoint.note,
        "timestamp": base64.b64encode(bytes(checkpoint.timestamp_token)).decode() or None,
        "inclusion": [
            {"sequence": sequence, "leaf_index": index, "proof": _b64(tree.inclusion_proof(index))}
            for sequence, index in sorted(places.items())
        ],
        "boundaries": _boundaries(places, tree, put) if span is not None else [],
    }


def _boundaries(places: dict, tree, put) -> list[dict]:
    """The leaves just outside the range's first and last records, with their manifests' bytes."""
    first, last = min(places.values()), max(places.values())
    wanted = [i for i in (first - 1, last + 1) if 0 <= i < tree.size]
    found = []
    for leaf in LogLeaf.objects.filter(index__in=wanted).select_related("manifest").order_by("index"):
        manifest = leaf.manifest
        name = f"manifests/{manifest.sequence:06d}-{manifest.sha256}.json"
        put(name, manifest.body.encode("ascii"))
        found.append(
            {
                "sequence": manifest.sequence,
                "leaf_index": leaf.index,
                "file": name,
                "proof": _b64(tree.inclusion_proof(leaf.index)),
            }
        )
    return found


def _b64(hashes: list[bytes]) -> list[str]:
    return [base64.b64encode(h).decode() for h in hashes]
