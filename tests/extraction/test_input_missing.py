"""A job whose input is gone from a store that answers fails at once with `input_missing` and an alert; a store
that does not answer (a missing directory or bucket) still holds the job and retries it."""

import uuid

import pytest

from audit.models import Alert
from audit.review import previews
from extraction.api import job_document
from extraction.intake.rounds import request_reextraction
from extraction.models import Attempt, Job
from extraction.providers.simulator import Simulator
from extraction.runner import run_job
from tests import pdfs
from tests.conftest import PRODUCTION, complete, delete_stored, temp_files
from tests.extraction.test_storage_faults import accepted_job, assert_held, due

pytestmark = pytest.mark.django_db


def inputs_moved(settings, tmp_path) -> None:
    """The inputs store stops answering: its directory gone (an unmounted disk), or its bucket."""
    configured = dict(settings.STORAGES)
    options = configured["inputs"]["OPTIONS"]
    if PRODUCTION:
        options = {**options, "bucket_name": f"pagetrail-missing-{uuid.uuid4().hex[:12]}"}
    else:
        options = {**options, "location": tmp_path / "unmounted" / "inputs"}
    configured["inputs"] = {**configured["inputs"], "OPTIONS": options}
    settings.STORAGES = configured


def assert_failed_input_missing(job: Job) -> None:
    job.refresh_from_db()
    assert job.status == "failed" and job.error_code == "input_missing"
    assert "is not in the inputs store" in job.error_message
    assert job_document(job)["error"]["code"] == "input_missing"  # what an API client reads
    assert job.attempts.filter(error_code="input_missing", outcome=Attempt.Outcome.FAILED).count() == 1
    assert not job.attempts.filter(outcome__in=["started", "retry"]).exists()
    alert = Alert.objects.get(kind="input_missing", status="open")
    assert alert.key == f"input-missing-{job.bundle_id}" and f"Job {job.pk} failed" in alert.message
    assert alert.link == job.admin_link()
    assert not Alert.objects.filter(kind="storage_unavailable").exists()
    assert temp_files() == []


def test_it_fails_a_job_whose_input_is_gone_at_once_with_input_missing_and_an_alert(tmp_path):
    job = accepted_job(pdfs.jpeg_rgb(tmp_path))
    delete_stored("inputs", job.bundle.input_name)

    assert run_job(job.pk) == "failed"
    assert_failed_input_missing(job)
    assert run_job(job.pk) == "not-claimed"  # final: nothing wakes it again


def test_a_second_job_of_the_same_missing_input_counts_on_the_same_alert(tmp_path):
    job = accepted_job(pdfs.jpeg_rgb(tmp_path))
    delete_stored("inputs", job.bundle.input_name)
    run_job(job.pk)
    again = request_reextraction(job.bundle)

    assert run_job(again.pk) == "failed"
    alert = Alert.objects.get(kind="input_missing")
    assert alert.occurrences == 2


def test_a_store_that_does_not_answer_still_holds_the_job_and_retries_it(settings, tmp_path):
    job = accepted_job(pdfs.jpeg_rgb(tmp_path))
    good = settings.STORAGES
    inputs_moved(settings, tmp_path)

    assert run_job(job.pk) == "held"
    assert_held(job, "inputs", kind="extract")
    assert not Alert.objects.filter(kind="input_missing").exists()

    settings.STORAGES = good  # the operator mounted the disk (restored the bucket)
    due(job)
    assert run_job(job.pk) == "completed"


def test_the_managed_provider_fails_a_job_whose_input_is_gone_without_submitting_it(settings, tmp_path):
    sim = Simulator(api_key="sim-key-for-input-missing", profile="healthy")
    sim.start()
    try:
        settings.PAGETRAIL_PROVIDER = "infrai"
        settings.INFRAI_BASE_URL, settings.INFRAI_API_KEY = sim.url, "sim-key-for-input-missing"
        job = accepted_job(pdfs.jpeg_rgb(tmp_path))
        delete_stored("inputs", job.bundle.input_name)

        assert run_job(job.pk) == "failed"
    finally:
        sim.stop()
    assert_failed_input_missing(job)
    assert sim.jobs == {} and job.attempts.get().kind == "submit"


def test_the_managed_provider_holds_a_job_whose_input_store_does_not_answer(settings, tmp_path):
    settings.PAGETRAIL_PROVIDER = "infrai"
    settings.INFRAI_BASE_URL = "http://127.0.0.1:9"  # never reached: the input is read first
    job = accepted_job(pdfs.jpeg_rgb(tmp_path))
    inputs_moved(settings, tmp_path)

    assert run_job(job.pk) == "held"
    assert_held(job, "inputs", kind="submit")


def test_previews_of_a_manifest_whose_input_is_gone_say_input_missing(tmp_path):
    manifest = complete(pdfs.jpeg_rgb(tmp_path))
    delete_stored("inputs", manifest.job.bundle.input_name)

    assert previews.generate_previews(manifest.pk)["error"] == "input_missing"
    assert not manifest.previews.exists()
