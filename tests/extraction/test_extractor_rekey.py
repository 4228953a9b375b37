"""A job keyed to one extractor version and run by another states what ran: re-keyed, never mislabelled."""

import json

import pytest

from audit.models import Asset, Manifest
from extraction.models import Job, idempotency_key
from extraction.pdf.versions import EXTRACTOR_VERSION
from extraction.providers.local import LocalProvider
from extraction.runner import run_job
from tests import pdfs
from tests.extraction.test_run_job import accepted_job

pytestmark = pytest.mark.django_db
OLDER = "3.1"


def keyed_to(job: Job, version: str) -> Job:
    """As an intake host of another version would have keyed it (a rolling upgrade)."""
    key = idempotency_key(job.bundle.correlation_id, job.extractor, version, job.generation)
    Job.objects.filter(pk=job.pk).update(extractor_version=version, idempotency_key=key)
    job.refresh_from_db()
    return job


def manifest_of(job: Job) -> dict:
    return json.loads(Manifest.objects.get(job=job).body)


def test_a_job_keyed_to_another_version_is_re_keyed_to_the_one_that_runs_it(tmp_path):
    job = keyed_to(accepted_job(pdfs.jpeg_rgb(tmp_path)), OLDER)

    assert run_job(job.pk) == "completed"

    job.refresh_from_db()
    assert job.extractor_version == manifest_of(job)["extractor"]["version"] == EXTRACTOR_VERSION
    assert job.idempotency_key == idempotency_key(job.bundle.correlation_id, job.extractor, EXTRACTOR_VERSION)
    assert job.provider_job_id == LocalProvider.job_id(job.idempotency_key)
    assert all(f"/{EXTRACTOR_VERSION}/" in name for name in Asset.objects.values_list("name", flat=True))


def test_the_version_the_child_reports_wins_over_the_workers_own(tmp_path, monkeypatch):
    """Code upgraded under a running worker: its PDF child runs the new code, and the manifest says so."""
    job = keyed_to(accepted_job(pdfs.jpeg_rgb(tmp_path)), OLDER)  # keyed by this worker's own, older code
    monkeypatch.setattr(LocalProvider, "version", OLDER)  # its child runs the code now installed

    assert run_job(job.pk) == "completed"

    job.refresh_from_db()
    assert job.extractor_version == manifest_of(job)["extractor"]["version"] == EXTRACTOR_VERSION


def test_a_job_whose_version_already_has_a_job_of_those_bytes_fails_and_names_it(tmp_path):
    current = accepted_job(pdfs.jpeg_rgb(tmp_path))
    older = Job.objects.create(
        bundle=current.bundle,
        idempotency_key=idempotency_key(current.bundle.correlation_id, current.extractor, OLDER),
        provider=current.provider,
        extractor=current.extractor,
        extractor_version=OLDER,
        deadline=current.deadline,
    )

    assert run_job(older.pk) == "failed"

    older.refresh_from_db()
    assert older.error_code == "extractor_upgraded" and f"job {current.pk} is the" in older.error_message
    assert not Manifest.objects.filter(job=older).exists()
