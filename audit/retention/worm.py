"""WORM storage where S3 offers it: S3 Object Lock on manifests, log checkpoints and their timestamps.

With PAGETRAIL_OBJECT_LOCK_MODE set (GOVERNANCE or COMPLIANCE) and an S3 output store whose bucket was
created with Object Lock, each manifest file is locked until its retention policy lets it go (created at +
the policy's manifest days; PAGETRAIL_OBJECT_LOCK_DAYS when the policy keeps manifests forever) and gets a
legal hold when its policy is on hold; each log checkpoint and its timestamp are locked for
PAGETRAIL_OBJECT_LOCK_DAYS. A locked object version cannot be overwritten or deleted before then, not even
by an insider with the store's credentials (COMPLIANCE mode; GOVERNANCE lets a holder of
s3:BypassGovernanceRetention through). Unset, or on the file-system store: nothing is locked.
"""

import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from storages.utils import clean_name

from audit.models import Alert, RetentionAssignment
from audit.operations.alerts import raise_alert
from audit.retention import policies as retention_policies
from core import stores

log = logging.getLogger(__name__)


def enabled(storage=None) -> bool:
    storage = storage or stores.outputs()
    return bool(settings.PAGETRAIL_OBJECT_LOCK_MODE) and hasattr(storage, "bucket_name")


def _client_and_object(storage: Any, name: str) -> tuple[Any, dict[str, str]]:
    """The S3 client of an S3Storage (django-storages has no types) and the Bucket and Key naming `name` there."""
    return storage.connection.meta.client, {
        "Bucket": storage.bucket_name,
        "Key": storage._normalize_name(clean_name(name)),
    }


def lock(name: str, until: datetime, legal_hold: bool = False) -> bool:
    """Lock the stored object `name` until `until` (and hold it); False when locking is off."""
    storage = stores.outputs()
    if not enabled(storage):
        return False
    client, where = _client_and_object(storage, name)
    retention = {"Mode": settings.PAGETRAIL_OBJECT_LOCK_MODE, "RetainUntilDate": until}
    client.put_object_retention(**where, Retention=retention)
    if legal_hold:
        set_legal_hold(name, True)
    return True


def set_legal_hold(name: str, on: bool) -> bool:
    """Put the S3 legal hold of the stored object `name` ON or OFF (the same again is harmless)."""
    storage = stores.outputs()
    if not enabled(storage):
        return False
    client, where = _client_and_object(storage, name)
    client.put_object_legal_hold(**where, LegalHold={"Status": "ON" if on else "OFF"})
    return True


def why_kept(names: list[str], now: datetime) -> str | None:
    """Why S3 would keep one of the stored objects `names` if deleted now (a legal hold, a retain-until in
    the future), or None. A delete then would only hide the locked version behind a delete marker."""
    storage = stores.outputs()
    if not enabled(storage):
        return None
    for name in names:
        client, where = _client_and_object(storage, name)
        try:
            head = client.head_object(**where)
        except stores.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey"):
                continue  # gone already: nothing is kept
            raise
        if head.get("ObjectLockLegalHoldStatus") == "ON":
            return f"{name} is under an S3 legal hold"
        until = head.get("ObjectLockRetainUntilDate")
        if until and until > now:
            return f"{name} is locked ({head.get('ObjectLockMode')}) until {until.isoformat()}"
    return None


def deletion_kind(store) -> str:
    """What deleting a file of `store` does: "delete_marker" in a versioned bucket (every Object Lock bucket),
    where the versions stay readable until a lifecycle rule or an operator removes them; else "removed"."""
    if not hasattr(store, "bucket_name"):
        return "removed"
    if enabled(store) and store is stores.outputs():
        return "delete_marker"  # an Object Lock bucket is versioned, and cannot be made otherwise
    try:
        answer = store.connection.meta.client.get_bucket_versioning(Bucket=store.bucket_name)
    except stores.ClientError:  # credentials without s3:GetBucketVersioning: say no more than is known
        return "unknown"
    return "delete_marker" if answer.get("Status") in ("Enabled", "Suspended") else "removed"


def lock_for_default_days(name: str, at: datetime) -> bool:
    return lock(name, at + timedelta(days=settings.PAGETRAIL_OBJECT_LOCK_DAYS))


def manifest_terms(manifest) -> tuple[datetime, bool]:
    """(retain until, legal hold) of a manifest's file under the policy its bundle falls under now."""
    assigned = RetentionAssignment.objects.filter(bundle__correlation_id=manifest.correlation_id).first()
    policy = assigned.policy if assigned else retention_policies.default_policy()
    days = policy.manifest_days if policy and policy.manifest_days else settings.PAGETRAIL_OBJECT_LOCK_DAYS
    return manifest.created_at + timedelta(days=days), bool(policy and retention_policies.on_hold(policy))


def lock_manifest(manifest) -> None:
    """After the manifest's commit: a rolled-back write must stay deletable."""
    if not enabled():
        return
    try:
        lock(manifest.storage_name, *manifest_terms(manifest))
    except Exception:  # the manifest stands; an unlocked file is what the store had before, but say so
        log.exception("Could not set S3 Object Lock on manifest %s (%s)", manifest.sequence, manifest.storage_name)
        _alert_unlocked(manifest)


def _alert_unlocked(manifest) -> None:
    raise_alert(
        Alert.Kind.OBJECT_LOCK_FAILED,
        f"manifest-lock-{manifest.sequence}",
        link=f"/admin/audit/manifest/{manifest.pk}/change/",
        message=f"Manifest {manifest.sequence} of {manifest.job.bundle.file_name} (stored as {manifest.storage_name}) "
        "is stored but S3 Object Lock could not be set on it: until it is locked by hand (put-object-retention), its "
        "file can be deleted or overwritten.",
    )
