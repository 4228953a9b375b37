"""/metrics' counters and histograms, read as Prometheus reads them: derived from rows, so every process agrees."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from prometheus_client.parser import text_string_to_metric_families

from audit.operations.alerts import raise_alert
from extraction.intake.staging import submit_bundle
from extraction.models import Attempt, Job
from extraction.runner import run_job
from tests import pdfs

pytestmark = pytest.mark.django_db
TOKEN = "scrape-me"


@pytest.fixture
def scrape(client, settings):
    settings.PAGETRAIL_METRICS_TOKEN = TOKEN

    def read() -> dict:
        response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert response.status_code == 200
        samples: dict = {}
        for family in text_string_to_metric_families(response.content.decode()):
            for s in family.samples:
                samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
        return samples

    return read


def submitted(factory, tmp_path, run=True) -> Job:
    with open(factory(tmp_path), "rb") as fh:
        result = submit_bundle(fh, filename="x.pdf", submitted_by="t")
    if result.accepted and run:
        run_job(result.job_id)
    return Job.objects.get(pk=result.job_id) if result.accepted else None


def test_it_counts_jobs_that_reached_a_final_state_by_provider_and_state(scrape, tmp_path):
    submitted(pdfs.mixed, tmp_path)
    submitted(pdfs.jpeg_rgb, tmp_path)
    Job.objects.get(pk=submitted(pdfs.cmyk, tmp_path, run=False).pk).mark_failed("provider_error", "no")
    queued = submitted(pdfs.reused_on_three_pages, tmp_path, run=False)

    found = scrape()
    assert found[("pagetrail_jobs_finished_total", (("provider", "local"), ("state", "completed")))] == 2
    assert found[("pagetrail_jobs_finished_total", (("provider", "local"), ("state", "failed")))] == 1
    assert ("pagetrail_jobs_finished_total", (("provider", "local"), ("state", "queued"))) not in found
    assert queued.status == "queued"


def test_it_counts_refused_submissions_by_code(scrape, tmp_path):
    for name, body in (("a.pdf", b"not a pdf"), ("b.pdf", b"neither"), ("c.pdf", b"")):
        (tmp_path / name).write_bytes(body)
        with open(tmp_path / name, "rb") as fh:
            assert not submit_bundle(fh, filename=name, submitted_by="t").accepted

    found = scrape()
    assert found[("pagetrail_submissions_refused_total", (("code", "not_pdf"),))] == 2
    assert found[("pagetrail_submissions_refused_total", (("code", "empty"),))] == 1


def test_it_counts_retried_attempts_by_provider_and_code(scrape, tmp_path):
    job = submitted(pdfs.jpeg_rgb, tmp_path, run=False)
    for code in ("rate_limited", "rate_limited", "storage_unavailable"):
        Attempt.begin(job, Attempt.Kind.POLL).record_outcome(Attempt.Outcome.RETRY, error_code=code)
    Attempt.begin(job, Attempt.Kind.POLL).record_outcome(Attempt.Outcome.FAILED, error_code="rate_limited")

    found = scrape()
    assert found[("pagetrail_retries_total", (("code", "rate_limited"), ("provider", "local")))] == 2
    assert found[("pagetrail_retries_total", (("code", "storage_unavailable"), ("provider", "local")))] == 1


def test_it_counts_alerts_opened_their_occurrences_and_those_still_open_by_kind(scrape):
    raise_alert("job_unknown", "job-1-unknown", "Job 1 is unknown", "/admin/")
    raise_alert("job_unknown", "job-1-unknown", "Job 1 is unknown", "/admin/")
    acknowledged, _ = raise_alert("job_unknown", "job-2-unknown", "Job 2 is unknown", "/admin/")
    acknowledged.acknowledge(by="ops")

    found = scrape()
    kind = (("kind", "job_unknown"),)
    assert found[("pagetrail_alerts_opened_total", kind)] == 2
    assert found[("pagetrail_alert_occurrences_total", kind)] == 3
    assert found[("pagetrail_alerts_open", kind)] == 1
    assert found[("pagetrail_alerts_open", (("kind", "input_missing"),))] == 0  # every kind has its series


def test_its_histograms_put_each_jobs_spans_in_cumulative_buckets(scrape, tmp_path):
    jobs = [submitted(factory, tmp_path) for factory in (pdfs.mixed, pdfs.jpeg_rgb, pdfs.cmyk)]
    for job, wait, extraction, durable in zip(jobs, (0.3, 4, 700), (2, 20, 200), (0.05, 0.6, 7)):
        submitted_at = job.enqueued_at + timedelta(seconds=wait)
        finished_at = submitted_at + timedelta(seconds=extraction)
        Job.objects.filter(pk=job.pk).update(
            picked_up_at=submitted_at,
            submitted_at=submitted_at,
            provider_finished_at=finished_at,
            manifest_durable_at=finished_at + timedelta(seconds=durable),
        )
    Job.objects.filter(pk=jobs[2].pk).update(manifest_durable_at=None)  # not durable: its extraction is not final

    found = scrape()
    local = (("provider", "local"),)

    def buckets(name):
        return {le: found[(f"pagetrail_{name}_seconds_bucket", (("le", le), *local))] for le in ("0.5", "5", "+Inf")}

    assert buckets("queue_wait") == {"0.5": 1, "5": 2, "+Inf": 3}
    assert found[("pagetrail_queue_wait_seconds_sum", local)] == pytest.approx(704.3, abs=1e-3)
    assert found[("pagetrail_queue_wait_seconds_count", local)] == 3
    assert buckets("extraction") == {"0.5": 0, "5": 1, "+Inf": 2}
    assert found[("pagetrail_extraction_seconds_sum", local)] == pytest.approx(22, abs=1e-3)
    assert buckets("manifest_durable") == {"0.5": 1, "5": 2, "+Inf": 2}


def test_a_scrape_takes_the_same_queries_for_one_job_or_many(scrape, tmp_path):
    submitted(pdfs.jpeg_rgb, tmp_path)
    with CaptureQueriesContext(connection) as one:
        scrape()
    job = Job.objects.get()
    for n in range(40):
        Job.objects.create(
            bundle=job.bundle,
            idempotency_key=f"k{n}",
            provider="local",  # the 24-hour gauges ask a few queries per provider (audit/operations/metrics.py)
            status=("completed", "failed", "queued")[n % 3],
            deadline=job.deadline,
            picked_up_at=job.enqueued_at + timedelta(seconds=n),
        )
        Attempt.begin(job, Attempt.Kind.POLL).record_outcome(Attempt.Outcome.RETRY, error_code=f"code{n % 4}")
    with CaptureQueriesContext(connection) as many:
        scrape()
    assert len(many) == len(one)
