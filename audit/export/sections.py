"""The parts of an evidence package's index.json that come from outside the manifests in scope."""

from django.db.models import Q, QuerySet

from audit.ledger.manifests import timestamp
from audit.models import Finding, RetentionEvent, VerificationRun
from audit.verification import state as verification_state
from core import stores

RECENT_RUNS = 5


def stored_copy(name: str, body: bytes, deleted_by_retention: bool = False) -> str:
    """Whether the output store's copy equals the database's: matches, differs, missing or deleted_by_retention."""
    if not name:
        return "missing"
    try:
        with stores.outputs().open(name, "rb") as fh:
            return "matches" if fh.read(len(body) + 1) == body else "differs"
    except FileNotFoundError:
        return "deleted_by_retention" if deleted_by_retention else "missing"


def mldsa(row) -> dict:
    """A record's ML-DSA-44 signature and key id, beside its Ed25519 one; none for a record signed before them."""
    return {"mldsa_signature": row.mldsa_signature, "mldsa_key_id": row.mldsa_key_id} if row.mldsa_key_id else {}


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
    by_run: dict[int, list[dict]] = {}
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


def retention_event_rows(scoped: QuerySet, span=None) -> QuerySet:
    """Deletions (or blocks) of the scoped manifests' outputs and files, and of their bundles' inputs; for a date
    range `span` (from, before), also every retention event recorded within it: they are records of the range."""
    about = Q(bundle__correlation_id__in=scoped.values("correlation_id")) & (
        Q(manifest__isnull=True) | Q(manifest__in=scoped)
    )
    if span is not None:
        start, before = span
        within = Q(at__gte=start) if start else Q()
        about |= within & (Q(at__lt=before) if before else Q())
    return RetentionEvent.objects.filter(about).select_related("bundle", "manifest", "policy").order_by("at", "pk")


def retention_events(events: QuerySet) -> list[dict]:
    """Each retention event as index.json lists it, with its signed body."""
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
            **mldsa(e),
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


def open_findings(scoped: QuerySet) -> list[dict]:
    """The findings the latest verification of each scoped manifest left open (audit/verification/state.py), so a
    package about evidence found wrong says so in its signed index and its README."""
    unclean = verification_state.with_verification(scoped.order_by("sequence")).filter(open_findings__gt=0)
    listed = []
    for manifest_id, sequence, run_id in unclean.values_list("pk", "sequence", "verified_run"):
        for f in verification_state.open_findings(run_id, manifest_id).select_related("response").order_by("pk"):
            answer = f.response.status if hasattr(f, "response") else "open"  # no answer row: no one answered
            listed.append(
                {
                    "manifest": sequence,
                    "run": run_id,
                    "kind": f.kind,
                    "name": f.name,
                    "detail": f.detail,
                    "answer": answer,
                }
            )
    return listed


def findings_warning(listed: list[dict]) -> str:
    """The README's warning, one line per open finding (empty when there is none)."""
    if not listed:
        return ""
    lines = [f"- manifest {f['manifest']}: {f['kind']} {f['name']} ({f['answer']}, run {f['run']})" for f in listed]
    return (
        f"\nWARNING: {len(listed)} open verification finding(s) about this scope (index.json open_findings):\n"
        + "\n".join(lines)
        + "\n"
    )
