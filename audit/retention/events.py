"""Signed retention events: each deletion (or block by legal hold) is a statement naming every file it covers.

A RetentionEvent row alone proves nothing: an insider could insert one to excuse a deleted input or to
hide a manifest's assets from verification. Only an event whose signed body verifies, agrees with its
row and names the file excuses that file's absence, in a verification run and in an evidence package.
"""

from datetime import datetime

from django.db import transaction

from audit.ledger import signing, tlog
from audit.ledger.manifests import canonical_bytes, timestamp
from audit.models import Finding, RetentionEvent

SCHEMA_VERSION = 1
STORE: dict[str, str] = {
    RetentionEvent.What.INPUT: "inputs",
    RetentionEvent.What.OUTPUTS: "outputs",
    RetentionEvent.What.MANIFEST_FILE: "outputs",
}


def statement(
    *,
    bundle: str,
    manifest: tuple[int, str] | None,
    what: str,
    outcome: str,
    files: list[str],
    bytes_freed: int,
    at: datetime,
    policy: tuple[str, int],
    signed_at: datetime,
    key_id: str,
    said: dict | None = None,
) -> dict:
    """What a retention event signs. `manifest`: (sequence, sha256); `policy`: (name, version).

    `said`: what the outcome did or why it waits: `deletion` ("removed", or "delete_marker" where a versioned
    bucket keeps the versions), `postponed_because` (the S3 lock that keeps a file).
    """
    return {
        **(said or {}),
        "schema_version": SCHEMA_VERSION,
        "kind": "retention_event",
        "bundle": bundle,
        "manifest_sequence": manifest[0] if manifest else None,
        "manifest_sha256": manifest[1] if manifest else None,
        "what": what,
        "outcome": outcome,
        "files": sorted(files),
        "file_count": len(files),
        "bytes_freed": bytes_freed,
        "at": timestamp(at),
        "policy": {"name": policy[0], "version": policy[1]},
        "signed_at": timestamp(signed_at),
        "key_id": key_id,
    }


def record(**fields) -> RetentionEvent:
    """Write a retention event and append its signed body to the ledger: one transaction, the log's one lock."""
    with transaction.atomic():
        tlog.lock()
        event = RetentionEvent.objects.create(**fields)
        tlog.append(event)
    return event


def signed_fields(
    bundle, manifest, policy, what: str, outcome: str, files: list[tuple[str, int]], at, said: dict | None = None
) -> dict:
    """`body`, `signature` and `key_id` for a new RetentionEvent covering `files` (name, size).

    A block or a postponement deletes nothing, so it names no file (its row counts none either)."""
    files = files if outcome == RetentionEvent.Outcome.DELETED else []
    document = statement(
        bundle=bundle.correlation_id,
        manifest=(manifest.sequence, manifest.sha256) if manifest else None,
        what=what,
        outcome=outcome,
        files=[name for name, _ in files],
        bytes_freed=sum(size for _, size in files),
        at=at,
        policy=(policy.name, policy.version),
        signed_at=at,
        key_id=signing.current_key_id(),
        said=said,
    )
    body = canonical_bytes(document)
    signature = signing.sign(body, at)
    return {"body": body.decode("ascii"), "signature": signature, "key_id": document["key_id"]} | signing.mldsa_fields(
        body, at
    )


def row_fields(event: RetentionEvent) -> dict:
    """The row's own columns as its signed body states them."""
    return {
        "bundle": event.bundle.correlation_id,
        "manifest_sequence": event.manifest.sequence if event.manifest else None,
        "manifest_sha256": event.manifest.sha256 if event.manifest else None,
        "what": event.what,
        "outcome": event.outcome,
        "file_count": event.files,
        "bytes_freed": event.bytes_freed,
        "at": timestamp(event.at),
        "policy": {"name": event.policy.name, "version": event.policy.version},
    }


def problem(event: RetentionEvent, trusted: signing.Trust) -> tuple[dict | None, str | None]:
    """(the signed body, None) for an authentic event, else (None, why not)."""
    return signing.signed_row_problem("retention event", event, row_fields(event), trusted)


def check_all(trusted: signing.Trust) -> tuple[list[Finding], dict[str, set[str]]]:
    """Findings about retention events, and the files authentic deletions excuse, by store."""
    findings: list[Finding] = []
    excused: dict[str, set[str]] = {"inputs": set(), "outputs": set()}
    rows = RetentionEvent.objects.select_related("bundle", "manifest", "policy").order_by("pk")
    for event in rows.iterator(chunk_size=500):
        body, why = problem(event, trusted)
        if why:
            findings.append(
                Finding(
                    kind=Finding.Kind.RETENTION_EVENT_INVALID,
                    manifest=event.manifest,
                    name=f"retention event {event.pk}",
                    detail=why,
                )
            )
        elif body is not None and event.outcome == RetentionEvent.Outcome.DELETED:
            excused[STORE[event.what]].update(body["files"])
    return findings, excused
