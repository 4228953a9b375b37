"""Carrying a retention policy's legal hold to the S3 objects already written under it (S3 Object Lock).

A manifest file gets the legal hold of its policy when it is written (audit/retention/worm.py). A hold placed later,
or lifted, must reach the files written before: the version that changes the hold records a LegalHoldSync
in its own transaction, a task applies it after the commit, and the retention schedule applies whatever
is still pending. Applying one is idempotent (it sets the hold of the version in force, ON or OFF, on every
locked file under the policy), so a redelivered task or a retry after a failure is harmless. A failure
raises an alert and leaves the sync pending: an object without the hold its policy has is never silent.

Locked files are the manifest files (outputs are not locked). A manifest file deleted under retention is
left out: its locked version, if any, is behind a delete marker.
"""

import logging

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from audit.models import Alert, LegalHoldSync, Manifest, RetentionEvent, RetentionPolicy
from audit.operations.alerts import raise_alert
from audit.retention import worm
from audit.retention.policies import default_policy, in_force_of
from core import broker, stores
from extraction.models import Bundle

log = logging.getLogger(__name__)


def record_change(policy: RetentionPolicy, previous: RetentionPolicy | None) -> LegalHoldSync | None:
    """In the transaction that puts `policy` in force: if it changes the hold, schedule carrying it to S3."""
    if not worm.enabled() or bool(previous and previous.legal_hold) == policy.legal_hold:
        return None
    sync = LegalHoldSync.objects.create(policy=policy)
    transaction.on_commit(_enqueue)
    return sync


def _enqueue() -> None:
    broker.enqueue("audit.tasks.sync_legal_holds")


def sync_pending(at=None) -> int:
    """Apply every pending sync, by policy name; returns the number of objects whose hold was set."""
    names: dict[str, list[int]] = {}
    for pk, name in LegalHoldSync.objects.filter(status=LegalHoldSync.Status.PENDING).values_list("pk", "policy__name"):
        names.setdefault(name, []).append(pk)
    return sum(_sync(name, ids, at or timezone.now()) for name, ids in sorted(names.items()))


def _sync(name: str, ids: list[int], at) -> int:
    """The hold of the version in force now, on every locked file: a later change adds a sync of its own."""

    current = in_force_of(name)
    on = bool(current and current.legal_hold)
    files = list(locked_files(name))
    failed = []
    for storage_name in files:
        try:
            worm.set_legal_hold(storage_name, on)
        except stores.STORAGE_ERRORS as exc:
            failed.append(f"{storage_name}: {type(exc).__name__}: {exc}")
    pending = LegalHoldSync.objects.filter(pk__in=ids, status=LegalHoldSync.Status.PENDING)
    if failed:
        pending.update(tries=F("tries") + 1, last_error="\n".join(failed[:20]))
        _alert(name, on, len(failed), len(files), failed[0])
        return len(files) - len(failed)
    pending.update(status=LegalHoldSync.Status.DONE, done_at=at, tries=F("tries") + 1, object_count=len(files))
    return len(files)


def locked_files(name: str):
    """The manifest files under the policy `name`: its bundles', and unassigned bundles' if it is the default."""

    under = Q(retention__policy__name=name)
    default = default_policy()
    if default is not None and default.name == name:
        under |= Q(retention__isnull=True)
    deleted = RetentionEvent.objects.filter(
        what=RetentionEvent.What.MANIFEST_FILE, outcome=RetentionEvent.Outcome.DELETED
    ).values("manifest")
    return (
        Manifest.objects.filter(job__bundle__in=Bundle.objects.filter(under))
        .exclude(pk__in=deleted)
        .order_by("sequence")
        .values_list("storage_name", flat=True)
    )


def _alert(name: str, on: bool, failed: int, total: int, first: str) -> None:
    log.warning("S3 legal hold %s not set on %s of %s object(s) under %s", on, failed, total, name)
    raise_alert(
        Alert.Kind.OBJECT_LOCK_FAILED,
        f"legal-hold-sync-{name}",
        link="/admin/audit/retentionpolicy/",
        message=f"The S3 legal hold could not be turned {'ON' if on else 'OFF'} on {failed} of {total} "
        f"object(s) under {name} (first: {first}). The retention schedule tries again.",
    )
