"""The ledger's rules for a package: each record it carries (a manifest, a retention event, a case map) is a leaf of
the signed checkpoint the package carries (its inclusion proof leads from the record's bytes to the checkpoint's
root), the checkpoint's RFC 3161 timestamp, its witnesses' cosignatures against the auditor's quorum, an earlier
checkpoint the auditor holds, and the completeness of a date range.

A date range's records (its manifests, and the retention events, case maps and activity signed within it) are contiguous
leaves, and both ends are proven: the leaf just before the first is a record made before the range starts, and
the leaf just after the last, when the checkpoint holds one, a record made at or after the range's end (else the
export itself was after the end). A dropped record leaves a gap, or a covered leaf nobody accounts for.
"""

from __future__ import annotations

import base64
import binascii
import zipfile
from datetime import datetime
from typing import TYPE_CHECKING, Any

from . import bounded, merkle, notes, timestamps, witnessed
from .canonical import parse_time
from .keys import ED25519, MLDSA44

if TYPE_CHECKING:
    from cryptography import x509

    from .report import Options, Report


def open_head(index: dict[str, Any], options: Options, report: Report) -> notes.Checkpoint | None:
    """The package's signed checkpoint (its timestamp checked too), or None with the reason reported."""
    log = index.get("log")
    if not isinstance(log, dict):
        if not isinstance(index.get("format_version"), int) or index["format_version"] >= 3:
            report.fail("index.json", "carries no transparency log checkpoint or inclusion proofs")
        return None
    try:
        head = notes.open_checkpoint(
            str(log.get("checkpoint") or ""),
            report.trust.publics(ED25519),
            options.origin,
            report.trust.publics(MLDSA44),
            options.require_post_quantum,
        )
    except notes.NoteError as exc:
        report.fail("index.json: log checkpoint", str(exc))
        return None
    _check_timestamp(log, options.tsa, report)
    _check_cosignatures(log, head, options, report)
    return head


def _check_cosignatures(log: dict[str, Any], head: notes.Checkpoint, options: Options, report: Report) -> None:
    """With witnesses given, the checkpoint must carry cosignatures by a quorum of them: a history no witness
    cosigned may be one its log's key holder rewrote and showed to nobody. Without, say what it carries, unchecked."""
    where = "index.json: log checkpoint"
    try:
        lines = witnessed.open_cosigned(str(log.get("cosigned_note") or head.note), notes.split(head.note)[0])
        found = witnessed.cosigned(notes.split(head.note)[0], lines, options.witnesses, options.quorum)
    except notes.NoteError as exc:
        report.fail(where, f"its witness cosignatures do not count: {exc}")
        return
    if not options.witnesses:
        carried = witnessed.claimed(lines, head.origin)
        report.witnessed = (
            f"note: the log checkpoint carries {len(carried)} witness cosignature(s) ({', '.join(carried)}), not "
            "checked: give each witness's verifier key with --witness and the number required with --quorum"
            if carried
            else "note: the log checkpoint carries no witness cosignature"
        )
        return
    report.witnessed = f"witnessed: the log checkpoint is {found.sentence()}"
    if not found.met:
        report.fail(
            where,
            f"{found.sentence()}: fewer witnesses than the quorum vouch that this history was shown to them, so it "
            "may be a history rewritten by whoever holds the log's key",
        )


def proven_events(index: dict[str, Any], head: notes.Checkpoint | None, report: Report) -> dict[Any, Any]:
    """{retention event id: leaf index} of the events whose signed body is a leaf of the checkpoint."""
    log = index.get("log")
    log = log if isinstance(log, dict) else {}
    proofs = {p.get("id"): p for p in log.get("retention_inclusion") or [] if isinstance(p, dict)}
    proven = {}
    for event in index.get("retention_events") or []:
        proof = proofs.get(event.get("id")) if isinstance(event, dict) else None
        body = event.get("body") if proof else None
        if head and proof is not None and isinstance(body, str) and proves(body.encode("utf-8"), proof, head, report):
            proven[event["id"]] = proof["leaf_index"]
    return proven


def check(
    zf: zipfile.ZipFile,
    index: dict[str, Any],
    options: Options,
    report: Report,
    head: notes.Checkpoint | None,
    proven: dict[Any, Any],
) -> None:
    if head is None:
        return
    records = _check_inclusion(zf, index, head, report)  # leaf index -> the record's own signed time
    times = {e.get("id"): e for e in index.get("retention_events") or [] if isinstance(e, dict)}
    events = {leaf: signed_at(times[pk].get("body")) for pk, leaf in proven.items()}
    events.update(report.record_leaves)  # the case maps and activity the package proved, with their signed times
    scope = index.get("scope")
    if isinstance(scope, dict) and scope.get("kind") == "date_range":
        _check_range_complete(zf, index, head, records, events, report)
    if options.earlier is not None:
        _check_earlier(head, *options.earlier, report.trust.publics(ED25519), report)


def _decode(proof: dict[str, Any]) -> list[bytes]:
    hashes = proof.get("proof")
    try:
        return [base64.b64decode(h, validate=True) for h in hashes] if isinstance(hashes, list) else []
    except (binascii.Error, TypeError, ValueError):
        return []


def proves(data: bytes, proof: dict[str, Any], head: notes.Checkpoint, report: Report) -> bool:
    index = proof.get("leaf_index")
    if isinstance(index, int) and merkle.verify_inclusion(
        merkle.leaf_hash(data), index, head.size, _decode(proof), head.root
    ):
        report.counts["log_proofs"] += 1
        return True
    return False


def _member(zf: zipfile.ZipFile, where: str, report: Report) -> bytes | None:
    try:
        return report.manifest_bytes.get(where) or bounded.read(zf, where)  # a boundary record is read here
    except (KeyError, bounded.Refused, OSError, ValueError):
        report.fail(where, "is not in the package, or cannot be read, so it cannot be checked against the log")
        return None


def signed_at(text: object) -> datetime | None:
    """The time a record gives itself: a manifest's or a case map's created_at, a retention event's or an activity
    event's signed_at (an event signed at an upgrade joined the ledger then, whatever time it gives the deed)."""
    try:
        body = bounded.parse_json(text if isinstance(text, bytes) else str(text or "").encode("utf-8"))
    except bounded.Refused:
        return None
    return parse_time(body.get("created_at") or body.get("signed_at")) if isinstance(body, dict) else None


def _check_inclusion(
    zf: zipfile.ZipFile, index: dict[str, Any], head: notes.Checkpoint, report: Report
) -> dict[Any, datetime | None]:
    """{leaf index: created_at} of the package's manifests whose proofs verify."""
    log = index["log"]
    proofs = {p.get("sequence"): p for p in log.get("inclusion") or [] if isinstance(p, dict)}
    leaves = {}
    for entry in index.get("manifests") or []:
        if not isinstance(entry, dict):
            continue
        where, proof = str(entry.get("file") or f"manifest {entry.get('sequence')}"), proofs.get(entry.get("sequence"))
        data = _member(zf, where, report) if proof is not None else None
        if proof is None:
            report.fail(where, "has no inclusion proof in the package's log checkpoint")
        elif data is not None and proves(data, proof, head, report):
            leaves[proof["leaf_index"]] = signed_at(data)
            _check_position(where, data, proof["leaf_index"], report)
        elif data is not None:
            report.fail(
                where, f"its inclusion proof does not lead to the root of the signed log checkpoint ({head.size})"
            )
    return leaves


CHAINED = 3  # manifests of schemas 1-3 counted themselves in a hash chain; since 4, sequence is the leaf index


def _check_position(where: str, data: bytes, leaf_index: int, report: Report) -> None:
    """A manifest's sequence is its leaf index (schema 4 on): one counter, which its proof fixes."""
    try:
        body = bounded.parse_json(data)
    except bounded.Refused:
        return  # reported where the manifest itself is read
    if not isinstance(body, dict) or not isinstance(body.get("schema_version"), int):
        return
    if body["schema_version"] > CHAINED and body.get("sequence") != leaf_index:
        report.fail(
            where, f"the manifest says sequence {body.get('sequence')!r}, but it is leaf {leaf_index} of the log"
        )


def _check_range_complete(
    zf: zipfile.ZipFile,
    index: dict[str, Any],
    head: notes.Checkpoint,
    manifests: dict[Any, datetime | None],
    events: dict[Any, datetime | None],
    report: Report,
) -> None:
    scope = index["scope"]
    start, end = parse_time(scope.get("from")), parse_time(scope.get("before"))
    inside = set(manifests) | {leaf for leaf, at in events.items() if _within(at, start, end)}
    if not inside:
        return
    known = {**events, **manifests, **_boundaries(zf, index, head, report)}  # leaf -> the record's signed time
    first, last = min(inside), max(inside)
    for missing in sorted(set(range(first, last + 1)) - known.keys())[:20]:
        report.fail("index.json", f"log leaf {missing} lies inside the range's records but is not in the package")
    if first > 0 and not _before(known.get(first - 1), start):
        report.fail(
            "index.json",
            f"log leaf {first - 1}, just before the package's first record, is not shown to be from before the range",
        )
    if last + 1 < head.size:
        if not _at_or_after(known.get(last + 1), end):
            report.fail(
                "index.json",
                f"the log checkpoint holds leaf {last + 1}, after the package's last record, and the package does "
                "not show it was made after the range's end: records of the range are missing",
            )
    elif end is not None and not _at_or_after(parse_time(index.get("generated_at")), end):
        report.fail("index.json", "the range ends after the export: records made later in the range cannot be in it")


def _boundaries(
    zf: zipfile.ZipFile, index: dict[str, Any], head: notes.Checkpoint, report: Report
) -> dict[Any, datetime | None]:
    """{leaf index: signed time} of the boundary records whose proofs verify."""
    found = {}
    for entry in index["log"].get("boundaries") or []:
        data = _member(zf, str(entry.get("file")), report) if isinstance(entry, dict) else None
        if data is not None and proves(data, entry, head, report):
            found[entry["leaf_index"]] = signed_at(data)
            report.counts["boundaries"] += 1
    return found


def _within(at: datetime | None, start: datetime | None, end: datetime | None) -> bool:
    return at is not None and (start is None or at >= start) and (end is None or at < end)


def _at_or_after(at: datetime | None, moment: datetime | None) -> bool:
    """False without a moment: an open range has no "after", so no record can close it."""
    return at is not None and moment is not None and at >= moment


def _before(at: datetime | None, moment: datetime | None) -> bool:
    """False without a moment: a range open at its start begins at leaf 0."""
    return at is not None and moment is not None and at < moment


def _check_timestamp(log: dict[str, Any], tsa: x509.Certificate | None, report: Report) -> None:
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


def _check_earlier(
    head: notes.Checkpoint, earlier: str, consistency: object, publics: list[bytes], report: Report
) -> None:
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
