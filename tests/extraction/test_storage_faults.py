"""A store that fails during a job (full, read-only, a missing bucket): the job is held with a code,
retried, an operator told, and nothing half-written stays in the outputs store."""

import errno
import uuid
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage, Storage, storages
from django.urls import reverse

from audit.models import Alert
from audit.verification.verify import verify_all
from extraction.documents import job_document
from extraction.intake.staging import submit_bundle
from extraction.models import Job
from extraction.runner import run_job
from tests import pdfs
from tests.conftest import PRODUCTION, stored_names, temp_files

pytestmark = pytest.mark.django_db
file_system_only = pytest.mark.skipif(PRODUCTION, reason="the production profile's outputs are an S3 bucket")


class FillsUp(Storage):
    """A store without local paths (like S3: no hard links from temp) on a disk with room for `room`
    files: the next one is half written when the disk runs out. The edge of what cannot be run here
    for real (no small file system to fill, and chmod does not stop root)."""

    room = 2

    def __init__(self, location, **options):
        self.disk, self.saved = FileSystemStorage(location=location), 0

    def _save(self, name, content):
        if self.saved >= FillsUp.room:
            data = content.read()
            self.disk.save(name, ContentFile(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, "No space left on device")
        self.saved += 1
        return self.disk.save(name, content)

    def _open(self, name, mode="rb"):
        return self.disk.open(name, mode)

    def exists(self, name):
        return self.disk.exists(name)

    def delete(self, name):
        self.disk.delete(name)

    def listdir(self, path):
        return self.disk.listdir(path)

    def size(self, name):
        return self.disk.size(name)


def accepted_job(path) -> Job:
    with open(path, "rb") as fh:
        result = submit_bundle(fh, filename=path.name, submitted_by="tester")
    assert result.accepted, result.message
    return Job.objects.get(pk=result.job_id)


def outputs_at(settings, **backend):
    stores = dict(settings.STORAGES)
    stores["outputs"] = {**stores["outputs"], **backend}
    settings.STORAGES = stores


def due(job):
    Job.objects.filter(pk=job.pk).update(claimed_until="2000-01-01T00:00:00Z")


def assert_held(job, store: str, kind: str = "store"):
    job.refresh_from_db()
    assert job.status in Job.ACTIVE and job.error_code == "storage_unavailable"
    assert f"The {store} store could not be read or written" in job.error_message
    assert job_document(job)["error"]["code"] == "storage_unavailable"  # what an API client reads
    tries = list(job.attempts.filter(error_code="storage_unavailable").values_list("kind", "outcome"))
    assert tries and set(tries) == {(kind, "retry")}
    assert not job.attempts.filter(outcome="started").exists()  # no try left open
    alert = Alert.objects.get(kind="storage_unavailable", status="open")
    assert alert.key == f"storage-unavailable-{store}" and f"Job {job.pk}" in alert.message


@file_system_only
def test_it_holds_the_job_with_a_code_when_the_outputs_store_cannot_be_written(settings, tmp_path, admin_client):
    job = accepted_job(pdfs.mixed(tmp_path))
    good = settings.STORAGES["outputs"]["OPTIONS"]
    (tmp_path / "a-file").write_bytes(b"")  # where the store's directory should be: fails for root too
    outputs_at(settings, OPTIONS={**good, "location": tmp_path / "a-file" / "outputs"})

    assert run_job(job.pk) == "held"
    assert_held(job, "outputs")
    assert run_job(job.pk) == "not-claimed"  # held until its backoff is over
    assert "storage_unavailable" in admin_client.get(reverse("admin:extraction_job_changelist")).content.decode()

    outputs_at(settings, OPTIONS=good)  # the operator fixed the store
    due(job)
    assert run_job(job.pk) == "completed"
    job.refresh_from_db()
    assert job.error_code == "" and verify_all()[0] == [] and temp_files() == []


@file_system_only
def test_a_store_that_fills_up_midway_keeps_none_of_the_files_the_try_wrote(settings, tmp_path):
    job = accepted_job(pdfs.mixed(tmp_path))
    outputs_at(settings, BACKEND=f"{__name__}.FillsUp")

    assert run_job(job.pk) == "held"
    assert_held(job, "outputs")
    assert stored_names("outputs") == []  # two stored, a third half written: all removed

    FillsUp.room = 100  # room again
    try:
        due(job)
        assert run_job(job.pk) == "completed"
    finally:
        FillsUp.room = 2
    assert len(stored_names("outputs")) == 7 and verify_all()[0] == []  # 6 assets and the manifest


def test_it_holds_the_job_when_its_temp_area_cannot_be_written(settings, tmp_path):
    job = accepted_job(pdfs.jpeg_rgb(tmp_path))
    settings.TEMP_ROOT.mkdir(parents=True, exist_ok=True)
    (settings.TEMP_ROOT / "jobs").write_bytes(b"")  # a file where the jobs' directories go

    assert run_job(job.pk) == "held"
    assert_held(job, "temp")


@file_system_only
def test_it_holds_the_job_when_its_input_cannot_be_read_and_closes_the_extraction_try(tmp_path):
    job = accepted_job(pdfs.jpeg_rgb(tmp_path))
    stored = Path(storages["inputs"].path(job.bundle.input_name))
    stored.unlink()
    stored.mkdir()  # unreadable as a file, for root too

    assert run_job(job.pk) == "held"
    assert_held(job, "inputs", kind="extract")


@file_system_only
def test_past_its_deadline_a_job_whose_store_still_fails_fails_with_the_code(settings, tmp_path):
    job = accepted_job(pdfs.jpeg_rgb(tmp_path))
    (tmp_path / "a-file").write_bytes(b"")
    outputs_at(settings, OPTIONS={"location": tmp_path / "a-file" / "outputs"})
    Job.objects.filter(pk=job.pk).update(deadline="2000-01-01T00:00:00Z")

    assert run_job(job.pk) == "failed"
    job.refresh_from_db()
    assert job.status == "failed" and job.error_code == "storage_unavailable" and "deadline" in job.error_message
    assert temp_files() == []


@pytest.mark.skipif(not PRODUCTION, reason="the outputs store is an S3 bucket on the production profile only")
def test_a_missing_bucket_holds_the_job_and_a_restored_one_completes_it(settings, tmp_path):
    job = accepted_job(pdfs.mixed(tmp_path))
    good = settings.STORAGES["outputs"]["OPTIONS"]
    outputs_at(settings, OPTIONS={**good, "bucket_name": f"pagetrail-missing-{uuid.uuid4().hex[:12]}"})

    assert run_job(job.pk) == "held"
    assert_held(job, "outputs")
    assert "NoSuchBucket" in Job.objects.get(pk=job.pk).error_message

    outputs_at(settings, OPTIONS=good)
    due(job)
    assert run_job(job.pk) == "completed" and verify_all()[0] == []
