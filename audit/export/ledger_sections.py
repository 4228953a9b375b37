"""The ledger's part of an evidence package: a signed checkpoint, the inclusion proof of each manifest, retention
event, case map and activity event the package carries, and for a date range the boundary records that prove it
complete.

The offline verifier recomputes each record's leaf from its bytes in the package and follows its proof to the
checkpoint's root, which only the evidence key can sign: a package's records are then the very records every
witness of that checkpoint holds, whatever the portal's database says later. A date range's records (its
manifests, and the retention events, case maps and activity recorded within it) are contiguous leaves; the leaf
just before them and the one just after (when the checkpoint holds it) travel as *boundaries*, whose own signed
times fall outside the range, so nothing of the range can be left out. The checkpoint travels with the
cosignatures its witnesses gave it (the newest checkpoint a quorum cosigned is preferred to a newer one none has).
"""

import base64

from audit.ledger import checkpoints as log_checkpoints
from audit.ledger import tlog, witnessing
from audit.models import LogLeaf


def section(manifests, events, case_maps, activity, at, span=None, put=None) -> dict:
    """`manifests`, `events`, `case_maps`, `activity`: the records the package carries; `span`: a date
    range's (from, before), whose boundary records are written with `put(name, bytes)`. Signs a checkpoint now
    when none holds them all yet."""
    places = dict(LogLeaf.objects.filter(manifest__in=manifests).values_list("manifest__sequence", "index"))
    events_at = dict(LogLeaf.objects.filter(retention_event__in=events).values_list("retention_event_id", "index"))
    maps_at = dict(LogLeaf.objects.filter(case_map__in=case_maps).values_list("case_map__sha256", "index"))
    activity_at = dict(LogLeaf.objects.filter(activity__in=activity).values_list("activity_id", "index"))
    if not places:
        return {"checkpoint": None, "timestamp": None, "cosigned_note": None, "cosignatures": [], "inclusion": [],
                "retention_inclusion": [], "case_map_inclusion": [], "activity_inclusion": [],
                "boundaries": []}  # fmt: skip
    others = [*events_at.values(), *maps_at.values(), *activity_at.values()]
    needed = max([*places.values(), *others]) + 1
    checkpoint = witnessing.cosigned_covering(needed) or log_checkpoints.covering(needed, at)
    tree = tlog.tree(checkpoint.tree_size, leaves=[*places.values(), *others])
    return {
        "checkpoint": checkpoint.note,
        "timestamp": base64.b64encode(bytes(checkpoint.timestamp_token)).decode() or None,
        "cosigned_note": witnessing.cosigned_note(checkpoint),
        "cosignatures": witnessing.package_cosignatures(checkpoint),
        "inclusion": [_proof(tree, index, sequence=sequence) for sequence, index in sorted(places.items())],
        "retention_inclusion": [_proof(tree, index, id=pk) for pk, index in sorted(events_at.items())],
        "case_map_inclusion": [_proof(tree, index, sha256=sha) for sha, index in sorted(maps_at.items())],
        "activity_inclusion": [_proof(tree, index, id=pk) for pk, index in sorted(activity_at.items())],
        "boundaries": _boundaries(span, list(places.values()), others, tree.size, put) if span is not None else [],
    }


def _proof(tree, index: int, **record) -> dict:
    return {**record, "leaf_index": index, "proof": [base64.b64encode(h).decode() for h in tree.inclusion_proof(index)]}


def _boundaries(span, manifest_leaves: list[int], other_leaves: list[int], size: int, put) -> list[dict]:
    """The leaves just outside the range's first and last records, with their records' bytes."""
    start, before = span
    inside = manifest_leaves + [
        leaf.index
        for leaf in LogLeaf.objects.filter(index__in=other_leaves).only("index", "created_at")
        if (start is None or leaf.created_at >= start) and (before is None or leaf.created_at < before)
    ]
    first, last = min(inside), max(inside)
    wanted = [i for i in (first - 1, last + 1) if 0 <= i < size]
    tree, found = tlog.tree(size, leaves=wanted), []
    for leaf in LogLeaf.objects.filter(index__in=wanted).select_related(*LogLeaf.RECORDS):
        name = _boundary_name(leaf)
        put(name, leaf.record_bytes())
        found.append({"kind": leaf.kind, "file": name, **_proof(tree, leaf.index)})
    return sorted(found, key=lambda b: b["leaf_index"])


def _boundary_name(leaf: LogLeaf) -> str:
    # A leaf holds exactly the record of its kind (the constraint log_leaf_holds_one_record_of_its_kind).
    if leaf.kind == LogLeaf.Kind.MANIFEST:
        assert leaf.manifest is not None
        return f"manifests/{leaf.manifest.sequence:06d}-{leaf.manifest.sha256}.json"
    if leaf.kind == LogLeaf.Kind.CASE_MAP:
        return case_map_file(leaf.case_map)
    if leaf.kind == LogLeaf.Kind.ACTIVITY:
        assert leaf.activity_id is not None
        return activity_file(leaf.activity_id)
    if leaf.kind == LogLeaf.Kind.RECOVERED:
        return f"records/recovered-{leaf.recovered_id}.json"
    return f"records/retention-event-{leaf.retention_event_id}.json"


def case_map_file(case_map) -> str:
    return f"cases/case-map-{case_map.sha256}.json"


def activity_file(pk: int) -> str:
    return f"records/activity-{pk}.json"
