"""S3 Object Lock on the production profile (the suite's S3-compatible server): manifests locked for their
retention window, held under a legal hold, log checkpoints and their timestamps locked too."""

import json
import uuid
from datetime import timedelta

import boto3
import pytest
from botocore.exceptions import ClientError

from audit.ledger import checkpoints as log_checkpoints
from audit.models import Manifest, RetentionEvent
from audit.retention import enforcement as retention
from audit.retention import worm
from tests.conftest import PRODUCTION, approved_policy

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not PRODUCTION, reason="S3 Object Lock needs the production profile's S3 store"),
]


@pytest.fixture
def locked_outputs(settings):
    """An output bucket created with Object Lock, as an operator would create it, and locking turned on."""
    options = settings.STORAGES["outputs"]["OPTIONS"]
    s3 = boto3.client("s3", endpoint_url=options["endpoint_url"], region_name=options["region_name"])
    bucket = f"pagetrail-locked-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket, ObjectLockEnabledForBucket=True)
    settings.STORAGES = {**settings.STORAGES, "outputs": {**settings.STORAGES["outputs"]}}
    settings.STORAGES["outputs"]["OPTIONS"] = {**options, "bucket_name": bucket}
    settings.PAGETRAIL_OBJECT_LOCK_MODE = "GOVERNANCE"
    return s3, bucket


def retention_of(s3, bucket, name):
    # HEAD rather than GetObjectRetention, which the test server (moto 5.2) answers with a 500
    head = s3.head_object(Bucket=bucket, Key=key(name))
    return {"Mode": head.get("ObjectLockMode"), "RetainUntilDate": head.get("ObjectLockRetainUntilDate")}


def key(name):
    return worm.stores.outputs()._normalize_name(name)


def test_it_locks_each_manifest_until_its_policy_lets_it_go(locked_outputs, request_completed_jobs, settings):
    approved_policy(is_default=True, manifest_days=400, contract_owner="Claims Ltd", decision_note="x")
    s3, bucket = locked_outputs
    request_completed_jobs()
    for manifest in Manifest.objects.all():
        retention = retention_of(s3, bucket, manifest.storage_name)
        assert retention["Mode"] == "GOVERNANCE"
        assert abs(retention["RetainUntilDate"] - (manifest.created_at + timedelta(days=400))) < timedelta(seconds=1)


def test_a_locked_manifest_version_cannot_be_deleted(locked_outputs, request_completed_jobs):
    s3, bucket = locked_outputs
    request_completed_jobs()
    name = Manifest.objects.first().storage_name
    version = s3.head_object(Bucket=bucket, Key=key(name))["VersionId"]
    with pytest.raises(ClientError, match="AccessDenied"):
        s3.delete_object(Bucket=bucket, Key=key(name), VersionId=version)


def test_a_policy_on_legal_hold_holds_the_manifest(locked_outputs, request_completed_jobs):
    approved_policy(is_default=True, legal_hold=True, contract_owner="Claims Ltd", decision_note="x")
    s3, bucket = locked_outputs
    request_completed_jobs()
    name = Manifest.objects.first().storage_name
    assert s3.get_object_legal_hold(Bucket=bucket, Key=key(name))["LegalHold"]["Status"] == "ON"


def test_it_locks_each_log_checkpoint(locked_outputs, request_completed_jobs, settings):
    s3, bucket = locked_outputs
    request_completed_jobs()
    checkpoint = log_checkpoints.write_log_checkpoint()
    until = retention_of(s3, bucket, checkpoint.storage_name)["RetainUntilDate"]
    assert until - checkpoint.created_at > timedelta(days=settings.PAGETRAIL_OBJECT_LOCK_DAYS - 1)


@pytest.fixture
def request_completed_jobs(django_capture_on_commit_callbacks):
    """Run two jobs into the locked bucket, their commits' callbacks (the locks) run as in production."""

    def run():
        with django_capture_on_commit_callbacks(execute=True):
            complete_two_jobs()

    return run


def complete_two_jobs():
    import tempfile
    from pathlib import Path

    from extraction.intake.staging import submit_bundle
    from extraction.runner import run_job
    from tests import pdfs

    with tempfile.TemporaryDirectory() as tmp:
        for factory in (pdfs.mixed, pdfs.reused_on_three_pages):
            with open(factory(Path(tmp)), "rb") as fh:
                run_job(submit_bundle(fh, filename="x.pdf", submitted_by="t").job_id)


def versions_of(s3, bucket, name):
    listing = s3.list_object_versions(Bucket=bucket, Prefix=key(name))
    return len(listing.get("Versions", [])), len(listing.get("DeleteMarkers", []))


def test_a_retention_deletion_in_a_locked_bucket_says_it_left_a_delete_marker(locked_outputs, request_completed_jobs):
    approved_policy(is_default=True, manifest_days=1, contract_owner="Claims Ltd", decision_note="x")
    s3, bucket = locked_outputs
    request_completed_jobs()
    manifest = Manifest.objects.first()
    done = [
        e
        for e in retention.apply_retention(at=manifest.created_at + timedelta(days=2))
        if e["manifest"] == manifest.sequence
    ]
    assert [(e["outcome"], e["deletion"]) for e in done] == [("deleted", "delete_marker")]
    event = manifest.retention_events.get()
    assert json.loads(event.body)["deletion"] == "delete_marker"
    assert versions_of(s3, bucket, manifest.storage_name) == (1, 1)  # the locked version is still there


def test_a_file_locked_past_its_window_is_not_deleted_and_the_reason_is_signed(locked_outputs, request_completed_jobs):
    approved_policy(is_default=True, manifest_days=400, contract_owner="Claims Ltd", decision_note="x")
    s3, bucket = locked_outputs
    request_completed_jobs()
    approved_policy(manifest_days=30, decision_note="shorter")  # the files stay locked for 400 days
    manifest = Manifest.objects.first()
    later = manifest.created_at + timedelta(days=31)
    [entry] = [e for e in retention.apply_retention(at=later) if e["manifest"] == manifest.sequence]
    assert entry["outcome"] == "postponed_by_object_lock"
    assert "locked (GOVERNANCE) until" in entry["postponed_because"]
    event = manifest.retention_events.get()
    assert event.outcome == RetentionEvent.Outcome.POSTPONED and event.files == 0
    assert "locked (GOVERNANCE) until" in json.loads(event.body)["postponed_because"]
    assert versions_of(s3, bucket, manifest.storage_name) == (1, 0)
    retention.apply_retention(at=later + timedelta(days=1))
    assert manifest.retention_events.count() == 1  # recorded once, not every run


def test_a_file_under_an_s3_legal_hold_is_not_deleted(locked_outputs, request_completed_jobs):
    approved_policy(is_default=True, manifest_days=1, contract_owner="Claims Ltd", decision_note="x")
    s3, bucket = locked_outputs
    request_completed_jobs()
    manifest = Manifest.objects.first()
    worm.set_legal_hold(manifest.storage_name, True)  # as a hold lifted whose release is still pending leaves it
    [entry] = [
        e
        for e in retention.apply_retention(at=manifest.created_at + timedelta(days=2))
        if e["manifest"] == manifest.sequence
    ]
    assert entry["postponed_because"] == f"{manifest.storage_name} is under an S3 legal hold"
    assert versions_of(s3, bucket, manifest.storage_name) == (1, 0)


def test_a_manifest_that_cannot_be_locked_raises_an_alert(locked_outputs, request_completed_jobs):
    from audit.models import Alert

    request_completed_jobs()
    manifest = Manifest.objects.first()
    manifest.storage_name = f"{manifest.storage_name}.missing"  # the store answers NoSuchKey to the lock

    worm.lock_manifest(manifest)

    [alert] = Alert.objects.filter(kind=Alert.Kind.OBJECT_LOCK_FAILED)
    assert f"Manifest {manifest.sequence}" in alert.message and "could not be set" in alert.message
