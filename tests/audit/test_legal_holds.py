"""A legal hold placed on a policy, or lifted, reaches the S3 objects already written under it (Object Lock)."""

import pytest

from audit import tasks
from audit.models import Alert, LegalHoldSync, Manifest
from audit.retention import enforcement as retention
from audit.retention.legal_holds import sync_pending
from tests.audit.test_worm import PRODUCTION, key, locked_outputs, request_completed_jobs  # noqa: F401
from tests.conftest import approved_policy

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not PRODUCTION, reason="S3 Object Lock needs the production profile's S3 store"),
]


def holds(s3, bucket) -> set[str]:
    return {
        s3.head_object(Bucket=bucket, Key=key(m.storage_name)).get("ObjectLockLegalHoldStatus", "OFF")
        for m in Manifest.objects.all()
    }


@pytest.fixture
def written_under_claims(locked_outputs, request_completed_jobs):  # noqa: F811
    approved_policy(is_default=True, manifest_days=400, contract_owner="Claims Ltd", decision_note="x")
    request_completed_jobs()
    return locked_outputs


def test_a_hold_placed_later_holds_the_manifests_already_written(written_under_claims):
    s3, bucket = written_under_claims
    assert holds(s3, bucket) == {"OFF"}
    retention.set_legal_hold("claims", True, by="counsel", note="litigation 2026-17")
    sync_pending()
    assert holds(s3, bucket) == {"ON"}
    assert LegalHoldSync.objects.get().status == LegalHoldSync.Status.DONE


def test_lifting_the_hold_releases_them(written_under_claims):
    s3, bucket = written_under_claims
    retention.set_legal_hold("claims", True, by="counsel", note="litigation 2026-17")
    sync_pending()
    assert holds(s3, bucket) == {"ON"}
    approved_policy(drafted_by="counsel", legal_hold=False, decision_note="settled")
    sync_pending()
    assert holds(s3, bucket) == {"OFF"}


def test_a_change_that_keeps_the_hold_sets_nothing(written_under_claims):
    approved_policy(output_days=90, decision_note="shorter outputs")
    assert not LegalHoldSync.objects.exists()


def test_a_failed_sync_alerts_and_the_retention_schedule_tries_again(written_under_claims, settings):
    s3, bucket = written_under_claims
    retention.set_legal_hold("claims", True, by="counsel", note="litigation 2026-17")
    outputs = settings.STORAGES["outputs"]
    settings.STORAGES = {**settings.STORAGES, "outputs": {**outputs, "OPTIONS": {**outputs["OPTIONS"]}}}
    settings.STORAGES["outputs"]["OPTIONS"]["bucket_name"] = "pagetrail-no-such-bucket"
    sync_pending()
    sync = LegalHoldSync.objects.get()
    assert (sync.status, sync.tries) == (LegalHoldSync.Status.PENDING, 1)
    alert = Alert.objects.get(kind=Alert.Kind.OBJECT_LOCK_FAILED)
    assert "could not be turned ON" in alert.message and "NoSuchBucket" in alert.message
    settings.STORAGES = {**settings.STORAGES, "outputs": outputs}
    tasks.apply_retention()
    assert holds(s3, bucket) == {"ON"}
    assert LegalHoldSync.objects.get().status == LegalHoldSync.Status.DONE
