"""The parts of an evidence package's index.json that come from outside the manifests in scope."""

import json
import re

from django.db.models import Q, QuerySet

from extraction import stores

from . import checkpoints as checkpoint_files
from .manifests import canonical_bytes, timestamp
from .models import Checkpoint, Finding, Manifest, ManifestChain, RetentionEvent, VerificationRun

RECENT_RUNS = 5
CHECKPOINT_FILE = re.compile(r"checkpoint-(\d+)\.json$")


def stored_copy(name: str, body: bytes, deleted_by_retention: bool = False) -> str:
    """Whether the output store's copy equals the database's: matches, differs, missing or deleted_by_retention."""
    if not name:
        return "missing"
    try:
        with stores.outputs().open(name, "rb") as fh:
            return "matches" if fh.read(len(body) + 1) == body else "differs"
    except FileNotFoundError:
        return "deleted_by_retention" if deleted_by_retention else "missing"


def chain_head() -> dict:
    chain = ManifestChain.objects.filter(pk=1).first()
    return {"length": chain.length, "sha256": chain.head_sha256} if chain else {"length": 0, "sha256": None}


def chain_segment(first: int, last: int, until=None, date_range: bool = False) -> list[dict]:
    """Every link from `first` to `last`, continued to the next checkpoint so it anchors the scope.

    A date range needs a checkpoint made at or after the range's end (`until`; nothing after it can be in
    the range), else the segment runs to the chain's head, which the signed index records.
    """
    covers = Checkpoint.objects.filter(chain_length__gte=last).order_by("chain_length")
    if date_range:
        covers = covers.filter(created_at__gte=until) if until else covers.none()
    cover = covers.first()
    end = max(last, cover.chain_length) if cover else (chain_head()["length"] if date_range else last)
    links = Manifest.objects.filter(sequence__range=(first, end)).order_by("sequence")
    rows = links.values_list("sequence", "sha256", "previous_sha256", "created_at").iterator(chunk_size=5000)
    return [{"sequence": s, "sha256": h, "previous_sha256": p, "created_at": timestamp(at)} for s, h, p, at in rows]


def checkpoints(first: int) -> list[dict]:
    """Checkpoints at or past `first`: database rows and output-store files, which a rewritten database
    cannot move. A row and its file must agree; a file without a row is reported too."""
    rows = {c.chain_length: c for c in Checkpoint.objects.filter(chain_length__gte=first)}
    files = dict(_stored_checkpoints(first))
    return [_checkpoint_entry(rows.get(n), files.get(n)) for n in sorted(rows.keys() | files.keys())]


def _stored_checkpoints(first: int):
    for name in sorted(checkpoint_files.stored_names()):
        number = CHECKPOINT_FILE.search(name)
        if number and int(number.group(1)) >= first:
            try:
                with stores.outputs().open(name, "rb") as fh:
                    document = json.loads(fh.read())
                yield document["checkpoint"]["chain_length"], (name, document["checkpoint"], document["signature"])
            except (ValueError, KeyError, TypeError):
                continue  # unreadable: verification runs report it (checkpoint_mismatch), it proves nothing here


def _checkpoint_entry(row: Checkpoint | None, stored: tuple | None) -> dict:
    if row is None:
        name, statement, signature = stored
        return {
            "chain_length": statement.get("chain_length"),
            "head_sha256": statement.get("head_sha256"),
            "body": canonical_bytes(statement).decode("ascii"),
            "signature": signature,
            "key_id": statement.get("key_id", ""),
            "created_at": statement.get("created_at"),
            "stored_name": name,
            "stored_copy": "no_database_row",
        }
    entry = {
        "chain_length": row.chain_length,
        "head_sha256": row.head_sha256,
        "body": row.body,
        "signature": row.signature,
        "key_id": row.key_id,
        "created_at": timestamp(row.created_at),
        "stored_name": row.storage_name,
        "stored_copy": "missing",
    }
    if stored:
        _, statement, signature = stored
        same = canonical_bytes(statement).decode("ascii") == row.body and signature == row.signature
        entry.update(stored_copy="matches" if same else "differs")
    return entry


def verification_runs(scoped: QuerySet) -> list[dict]:
    """The latest finished runs, with only their findings about what is in scope."""
    runs = list(VerificationRun.objects.filter(finished_at__isnull=False).order_by("-finished_at", "-pk")[:RECENT_RUNS])
    about_scope = Q(manifest__in=scoped) | Q(asset__manifest__in=scoped) | Q(job__manifest__in=scoped)
    findings = (
        Finding.objects.filter(about_scope, run__in=runs)
        .select_related("manifest", "asset")
        .distinct()
        .order_by("run_id", "pk")
    )
    by_run = {}
    for f in findings:
        by_run.setdefault(f.run_id, []).append(
            {
                "kind": f.kind,
                "manifest": f.manifest.sequence if f.manifest else None,
                "asset": f.asset.name if f.asset else None,
                "name": f.name,
                "detail": f.detail,
                "created_at": timestamp(f.created_at),
            }
        )
    return [
        {
            "id": r.pk,
            "status": r.status,
            "scope": r.scope,
            "started_by": r.started_by,
            "started_at": timestamp(r.started_at),
            "finished_at": timestamp(r.finished_at),
            "manifests": r.manifests_done,
            "assets": r.assets_done,
            "bytes": r.bytes_done,
            "findings_count": r.findings_count,
            "findings_in_scope": by_run.get(r.pk, []),
        }
        for r in runs
    ]


def retention_events(scoped: QuerySet) -> list[dict]:
    """Deletions (or blocks) of the scoped manifests' outputs and files, and of their bundles' inputs."""
    events = (
        RetentionEvent.objects.filter(bundle__correlation_id__in=scoped.values("correlation_id"))
        .filter(Q(manifest__isnull=True) | Q(manifest__in=scoped))
        .select_related("bundle", "manifest", "policy")
        .order_by("at", "pk")
    )
    return [
        {
            "id": e.pk,
            "bundle": e.bundle.correlation_id,
            "manifest": e.manifest.sequence if e.manifest else None,
            "what": e.what,
            "outcome": e.outcome,
            "files": e.files,
            "bytes_freed": e.bytes_freed,
            "at": timestamp(e.at),
            "policy": _policy(e.policy),
            "body": e.body,
            "signature": e.signature,
            "key_id": e.key_id,
        }
        for e in events
    ]


def _policy(policy) -> dict:
    return {
        "name": policy.name,
        "version": policy.version,
        "legal_hold": policy.legal_hold,
        "input_days": policy.input_days,
        "output_days": policy.output_days,
        "manifest_days": policy.manifest_days,
        "status": policy.status,
        "created_by": policy.created_by,
        "approved_by": policy.approved_by,
        "approved_at": timestamp(policy.approved_at),
        "decision_note": policy.decision_note,
    }


def deleted_by_retention(scoped: QuerySet, what: str) -> set[int]:
    """Sequences of the scoped manifests whose outputs (or manifest file) retention deleted."""
    events = RetentionEvent.objects.filter(manifest__in=scoped, what=what, outcome=RetentionEvent.Outcome.DELETED)
    return set(events.values_list("manifest__sequence", flat=True))
