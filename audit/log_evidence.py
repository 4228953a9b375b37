"""The ledger's part of an evidence package: a signed checkpoint, the inclusion proof of each manifest and each
retention event the package carries, and for a date range the boundary records that prove it complete.

The offline verifier recomputes each record's leaf from its bytes in the package and follows its proof to the
checkpoint's root, which only the evidence key can sign: a package's records are then the very records every
witness of that checkpoint holds, whatever the portal's database says later. A date range's records (its
manifests and the retention events recorded within it) are contiguous leaves; the leaf just before them and the
one just after (when the checkpoint holds it) travel as *boundaries*, whose own signed times fall outside the
range, so nothing of the range can be left out.
"""

import base64

from . import log_checkpoints, tlog
from .models import LogLeaf


def section(manifests, events, at, span=None, put=None) -> dict:
    """`manifests`, `events`: the querysets of the manifests and retention events the package carries; `span`: a
    date range's (from, before), whose boundary records are written with `put(name, bytes)`. Signs a checkpoint
    now when none holds them all yet."""
    places = dict(LogLeaf.objects.filter(manifest__in=manifests).values_list("manifest__sequence", "index"))
    events_at = dict(LogLeaf.objects.filter(retention_event__in=events).values_list("retention_event_id", "index"))
    if not places:
        return {"checkpoint": None, "timestamp": None, "inclusion": [], "retention_inclusion": [], "boundaries": []}
    checkpoint = log_checkpoints.covering(max([*places.values(), *events_at.values()]) + 1, at)
    tree = tlog.tree(checkpoint.tree_size)
    return {
        "checkpoint": checkpoint.note,
        "timestamp": base64.b64encode(bytes(checkpoint.timestamp_token)).decode() or None,
        "inclusion": [_proof(tree, index, sequence=sequence) for sequence, index in sorted(places.items())],
        "retention_inclusion": [_proof(tree, index, id=pk) for pk, index in sorted(events_at.items())],
        "boundaries": _boundaries(span, places, events_at, tree, put) if span is not None else [],
    }


def _proof(tree, index: int, **record) -> dict:
    return {**record, "leaf_index": index, "proof": [base64.b64encode(h).decode() for h in tree.inclusion_proof(index)]}


def _boundaries(span, places: dict, events_at: dict, tree, put) -> list[dict]:
    """The leaves just outside the range's first and last records, with their records' bytes."""
    start, before = span
    leaves = LogLeaf.objects.filter(index__in=[*places.values(), *events_at.values()]).select_related("retention_event")
    inside = [leaf.index for leaf in leaves if leaf.kind == LogLeaf.Kind.MANIFEST or _within(leaf, start, before)]
    first, last = min(inside), max(inside)
    wanted = [i for i in (first - 1, last + 1) if 0 <= i < tree.size]
    found = []
    for leaf in LogLeaf.objects.filter(index__in=wanted).select_related("manifest", "retention_event"):
        name = _boundary_name(leaf)
        put(name, leaf.record_bytes())
        found.append({"kind": leaf.kind, "file": name, **_proof(tree, leaf.index)})
    return sorted(found, key=lambda b: b["leaf_index"])


def _within(leaf: LogLeaf, start, before) -> bool:
    at = leaf.retention_event.at
    return (start is None or at >= start) and (before is None or at < before)


def _boundary_name(leaf: LogLeaf) -> str:
    if leaf.kind == LogLeaf.Kind.MANIFEST:
        return f"manifests/{leaf.manifest.sequence:06d}-{leaf.manifest.sha256}.json"
    return f"records/retention-event-{leaf.retention_event_id}.json"
