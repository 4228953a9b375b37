"""Retention: versioned policies and their enforcement, every deletion or block recorded.

Windows come from the policy version a bundle was assigned; a legal hold comes from the newest
version of that policy, so a hold placed today stops deletions today. Time is the database's clock.
"""

from datetime import UTC, datetime, timedelta

from django.db import connection, models, transaction
from django.utils import timezone

from extraction import stores
from extraction.models import Bundle, Job

from .alerts import raise_alert
from .models import (ActivityEvent, Asset, Manifest, PagePreview, RetentionAssignment, RetentionEvent,
                     RetentionPolicy)

POLICY_FIELDS = ("is_default", "input_days", "output_days", "manifest_days", "legal_hold", "contract_owner",
                 "approved_by", "approved_at", "decision_note")


def database_now() -> datetime:
    with connection.cursor() as cursor:
        cursor.execute("SELECT CURRENT_TIMESTAMP")
        value = cursor.fetchone()[0]
    return datetime.fromisoformat(value).replace(tzinfo=UTC) if isinstance(value, str) else value


def new_version(name: str, by: str, **fields) -> RetentionPolicy:
    """A policy change: the next version, with what changed recorded in the activity record."""
    with transaction.atomic():
        current = RetentionPolicy.objects.filter(name=name).order_by("-version").first()
        values = {**({f: getattr(current, f) for f in POLICY_FIELDS} if current else {}), **fields}
        policy = RetentionPolicy.objects.create(name=name, version=(current.version + 1 if current else 1),
                                                created_by=by[:150], **values)
        ActivityEvent.record(by, "retention_policy_changed", policy, before=_snapshot(current),
                             after=_snapshot(policy))
    return policy


def set_legal_hold(name: str, on: bool, by: str, note: str) -> RetentionPolicy:
    return new_version(name, by, legal_hold=on, decision_note=note, approved_by=by, approved_at=timezone.now())


def _snapshot(policy) -> dict | None:
    return {"version": policy.version, **{f: str(getattr(policy, f)) for f in POLICY_FIELDS}} if policy else None


def default_policy() -> RetentionPolicy | None:
    latest = RetentionPolicy.objects.filter(is_default=True).order_by("-created_at", "-version").first()
    return latest


def on_hold(policy: RetentionPolicy) -> bool:
    return RetentionPolicy.objects.filter(name=policy.name).order_by("-version").values_list(
        "legal_hold", flat=True).first()


def policy_for(bundle: Bundle) -> RetentionPolicy | None:
    """The version in force for the bundle: assigned once, the default's newest version at that moment."""
    assignment = RetentionAssignment.objects.filter(bundle=bundle).select_related("policy").first()
    if assignment:
        return assignment.policy
    policy = default_policy()
    if policy is None:
        return None
    return RetentionAssignment.objects.get_or_create(bundle=bundle, defaults={"policy": policy})[0].policy


def apply_retention(at=None, dry_run: bool = False) -> list[dict]:
    """Delete what is due for every bundle whose jobs are all terminal; returns what was (or would be) done."""
    now, report = at or database_now(), []
    for bundle in Bundle.objects.exclude(jobs__status__in=Job.ACTIVE).order_by("pk"):
        policy = policy_for(bundle)
        if policy is not None:
            report += _apply(bundle, policy, now, dry_run)
    return report


def _apply(bundle, policy, now, dry_run) -> list[dict]:
    done = []
    if _due(bundle.created_at, policy.input_days, now) and not bundle.input_deleted_at:
        done.append(_decide(bundle, None, policy, RetentionEvent.What.INPUT, now, dry_run))
    for manifest in Manifest.objects.filter(job__bundle=bundle):
        if _due(manifest.created_at, policy.output_days, now) and not _deleted(manifest, "outputs"):
            done.append(_decide(bundle, manifest, policy, RetentionEvent.What.OUTPUTS, now, dry_run))
        if _due(manifest.created_at, policy.manifest_days, now) and not _deleted(manifest, "manifest_file"):
            done.append(_decide(bundle, manifest, policy, RetentionEvent.What.MANIFEST_FILE, now, dry_run))
    return [d for d in done if d]


def _due(since, days, now) -> bool:
    return days is not None and since + timedelta(days=days) <= now


def _deleted(manifest, what) -> bool:
    return manifest.retention_events.filter(what=what, outcome=RetentionEvent.Outcome.DELETED).exists()


def _decide(bundle, manifest, policy, what, now, dry_run) -> dict | None:
    blocked = on_hold(policy)
    entry = {"bundle": bundle.correlation_id, "manifest": manifest.sequence if manifest else None, "what": what,
             "outcome": "blocked_by_legal_hold" if blocked else "deleted", "policy": str(policy)}
    if dry_run:
        return entry
    if blocked:
        _, new = RetentionEvent.objects.get_or_create(bundle=bundle, manifest=manifest, what=what, policy=policy,
                                                      outcome=RetentionEvent.Outcome.BLOCKED, defaults={"at": now})
        if new:
            raise_alert("retention_blocked", f"legal-hold-{policy.name}", link="/admin/audit/retentionevent/",
                        message=f"Retention of {what} of bundle {bundle.correlation_id[:16]} is blocked by the legal "
                                f"hold on {policy.name}.")
        return entry if new else None  # a block is recorded once per policy version, not every night
    files, freed = _delete(bundle, manifest, what, now)
    event = RetentionEvent.objects.create(bundle=bundle, manifest=manifest, policy=policy, what=what, at=now,
                                          outcome=RetentionEvent.Outcome.DELETED, files=files, bytes_freed=freed)
    ActivityEvent.record("retention", "retention_deleted", event, after=entry | {"bytes_freed": freed})
    return entry | {"files": files, "bytes_freed": freed}


def _delete(bundle, manifest, what, now) -> tuple[int, int]:
    if what == RetentionEvent.What.INPUT:
        stores.inputs().delete(bundle.input_name)
        Bundle.objects.filter(pk=bundle.pk).update(input_deleted_at=now)
        return 1, bundle.size
    if what == RetentionEvent.What.OUTPUTS:
        rows = list(Asset.objects.filter(manifest=manifest).values_list("name", "size"))
        rows += PagePreview.objects.filter(manifest=manifest).values_list("storage_name", "size")  # same window
        for name, _ in rows:
            stores.outputs().delete(name)
        return len(rows), sum(size for _, size in rows)
    stores.outputs().delete(manifest.storage_name)
    return 1, len(manifest.body)


def overdue_inputs(now=None):
    """Inputs kept past their window with no legal hold: a finding for verification runs."""
    now = now or database_now()
    for assignment in RetentionAssignment.objects.select_related("bundle", "policy").filter(
            bundle__input_deleted_at__isnull=True, policy__input_days__isnull=False):
        if _due(assignment.bundle.created_at, assignment.policy.input_days, now) and not on_hold(assignment.policy):
            yield assignment.bundle


def deleted_output_manifests() -> models.QuerySet:
    return RetentionEvent.objects.filter(what="outputs", outcome="deleted").values("manifest_id")
