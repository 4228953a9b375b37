"""The transparency log's rules for a package: each manifest is a leaf of the signed checkpoint the package carries
(its inclusion proof leads to the checkpoint's root), the checkpoint's RFC 3161 timestamp, an earlier checkpoint
the auditor holds, and the completeness of a date range.

A date-range package holds every leaf from the first record of the range to the last before its end, contiguous,
and proves both ends: the leaf just before the first is a *boundary* record created before the range starts, and
the leaf just after the last, when the checkpoint holds one, a boundary record created at or after the range's end
(else the export itself was after the end). A dropped record leaves a gap, or a covered leaf nobody accounts for.
"""

from __future__ import annotations

import base64
import binascii

from . import bounded, merkle, notes, timestamps
from .canonical import parse_time


def check(zf, index: dict, options, report) -> None:
    log = index.get("log")
    if not isinstance(log, dict):
        if not isinstance(index.get("format_version"), int) or index["format_version"] >= 3:
            report.fail("index.json", "carries no transparency log checkpoint or inclusion proofs")
        return
    publics = list(report.trust.public.values())
    try:
        head = notes.open_checkpoint(str(log.get("checkpoint") or ""), publics, options.origin)
    except notes.NoteError as exc:
        report.fail("index.json: log checkpoint", str(exc))
        return
    _check_timestamp(log, options.tsa, report)
    leaves = _check_inclusion(zf, index, log, head, report)
    scope = index.get("scope")
    if isinstance(scope, dict) and scope.get("kind") == "date_range":
        _check_range_complete(zf, index, log, head, leaves, report)
    if options.earlier is not None:
        _check_earlier(head, *options.earlier, publics, report)


def _decode(proof: dict) -> list[bytes]:
    hashes = proof.get("proof")
    try:
        return [base64.b64decode(h, validate=True) for h in hashes] if isinstance(hashes, list) else []
    except (binascii.Error, TypeError, ValueError):
        return []


def _leaf(zf, where, proof, head, report) -> bytes | None:
    """The member's bytes once its proof leads to the checkpoint's root as leaf proof["leaf_index"]."""
    try:
        data = report.manifest_bytes.get(where) or bounded.read(zf, where)  # a boundary record is read here
    except (KeyError, bounded.Refused, OSError, ValueError):
        report.fail(where, "is not in the package, or cannot be read, so it cannot be checked against the log")
        return None
    index = proof.get("leaf_index")
    if not isinstance(index, int) or not merkle.verify_inclusion(
        merkle.leaf_hash(data), index, head.size, _decode(proof), head.root
    ):
        report.fail(where, f"its inclusion proof does not lead to the root of the signed log checkpoint ({head.size})")
        return None
    report.counts["log_proofs"] += 1
    return data


def _check_inclusion(zf, index, log, head, report) -> dict[int, dict]:
    """{leaf index: manifest body} of the scope's manifests whose proofs verify."""
    proofs = {p.get("sequence"): p for p in log.get("inclusion") or [] if isinstance(p, dict)}
    leaves = {}
    for entry in index.get("manifests") or []:
        if not isinstance(entry, dict):
            continue
        where, proof = str(entry.get("file") or f"manifest {entry.get('sequence')}"), proofs.get(entry.get("sequence"))
        if proof is None:
            report.fail(where, "has no inclusion proof in the package's log checkpoint")
        elif _leaf(zf, where, proof, head, report) is not None:
            leaves[proof["leaf_index"]] = entry
    return leaves


def _check_range_complete(zf, index, log, head, leaves: dict, report) -> None:
    scope = index["scope"]
    start, end = parse_time(scope.get("from")), parse_time(scope.get("before"))
    if not leaves:
        return
    first, last = min(leaves), max(leaves)
    for missing in sorted(set(range(first, last + 1)) - leaves.keys())[:20]:
        report.fail("index.json", f"log leaf {missing} lies inside the range's records but is not in the package")
    boundaries = {b.get("leaf_index"): b for b in log.get("boundaries") or [] if isinstance(b, dict)}
    if first > 0 and not _boundary(zf, boundaries.get(first - 1), head, report, lambda at: _before(at, start)):
        report.fail(
            "index.json",
            f"log leaf {first - 1}, just before the package's first record, is not shown to be from before the range",
        )
    if last + 1 < head.size:
        if not _boundary(zf, boundaries.get(last + 1), head, report, lambda at: _at_or_after(at, end)):
            report.fail(
                "index.json",
                f"the log checkpoint holds leaf {last + 1}, after the package's last record, and the package does "
                "not show it was made after the range's end: records of the range are missing",
            )
    elif end is not None and not _at_or_after(parse_time(index.get("generated_at")), end):
        report.fail("index.json", "the range ends after the export: records made later in the range cannot be in it")


def _at_or_after(at, moment) -> bool:
    """False without a moment: an open range has no "after", so no record can close it."""
    return at is not None and moment is not None and at >= moment


def _before(at, moment) -> bool:
    """False without a moment: a range open at its start begins at leaf 0."""
    return at is not None and moment is not None and at < moment


def _boundary(zf, entry, head, report, outside) -> bool:
    """A record next to the range, proven in the log and made outside the range (its own signed time)."""
    if entry is None:
        return False
    data = _leaf(zf, str(entry.get("file")), entry, head, report)
    try:
        body = bounded.parse_json(data) if data is not None else None
    except bounded.Refused:
        body = None
    at = parse_time(body.get("created_at")) if isinstance(body, dict) else None
    if at is not None and outside(at):
        report.counts["boundaries"] += 1
        return True
    return False


def _check_timestamp(log, tsa, report) -> None:
    """With a TSA certificate, the checkpoint's RFC 3161 token must be that TSA's over the note's bytes."""
    where, token = "index.json: log checkpoint", log.get("timestamp")
    if tsa is None:
        report.timestamp_unchecked = bool(token)
        return
    if not token:
        report.fail(where, "carries no RFC 3161 timestamp, which --tsa-certificate asks for")
        return
    try:
        at = timestamps.check(base64.b64decode(str(token), validate=True), str(log["checkpoint"]).encode(), tsa)
    except (timestamps.TimestampError, binascii.Error, ValueError) as exc:
        report.fail(where, f"its RFC 3161 timestamp does not count: {exc}")
        return
    report.counts["timestamps"] += 1
    report.timestamped_at = at


def _check_earlier(head, earlier: str, consistency, publics, report) -> None:
    """An earlier checkpoint the auditor holds and the package's must be heads of one log: equal at one size,
    else the consistency proof given (the portal's /log/consistency answer) must join them."""
    where = "--earlier-checkpoint"
    try:
        old = notes.open_checkpoint(earlier, publics, head.origin)
    except notes.NoteError as exc:
        report.fail(where, str(exc))
        return
    (small, small_root), (big, big_root) = sorted([(old.size, old.root), (head.size, head.root)])
    consistency = consistency if isinstance(consistency, dict) else {}
    if consistency.get("first", small) != small or consistency.get("second", big) != big:
        report.fail(where, f"the consistency proof given is not from size {small} to size {big}")
    elif not merkle.verify_consistency(small, big, small_root, big_root, _decode(consistency)):
        report.fail(
            where,
            f"the log checkpoints of size {old.size} and {head.size} are not heads of one log: "
            "the history was rewritten (or, with different sizes, no valid consistency proof was given)",
        )
    else:
        report.counts["earlier_checkpoints"] += 1
