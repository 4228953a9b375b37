"""The managed path over real HTTP: the Infrai adapter against the simulator, fault profile by profile."""

import hashlib
import logging
import random
from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import Asset, Manifest
from audit.verification.verify import verify_all
from extraction.intake.staging import submit_bundle
from extraction.kill_switch import set_submissions
from extraction.models import Attempt, Job
from extraction.providers import infrai
from extraction.providers.simulator import Simulator
from extraction.reconciler import reconcile, replay_unknown
from extraction.runner import run_job
from tests import pdfs
from tests.conftest import temp_files

pytestmark = pytest.mark.django_db
KEY = "sim-secret-key-do-not-log-4f9c2e"


@pytest.fixture
def provider(settings):
    """Start the simulator with a profile and point Pagetrail at it (a fresh session per test)."""
    started = []

    def start(profile="healthy", api_key=KEY, **knobs):
        sim = Simulator(api_key=KEY, profile=profile, **knobs)
        sim.start()
        started.append(sim)
        settings.PAGETRAIL_PROVIDER = "infrai"
        settings.INFRAI_BASE_URL, settings.INFRAI_API_KEY = sim.url, api_key
        settings.INFRAI_READ_TIMEOUT = 2
        settings.PAGETRAIL_BACKOFF_BASE_SECONDS, settings.PAGETRAIL_POLL_BUDGET_SECONDS = 0.01, 10
        infrai._session = None
        return sim

    yield start
    for sim in started:
        sim.stop()
    infrai._session = None


def submitted(path) -> Job:
    with open(path, "rb") as fh:
        result = submit_bundle(fh, filename=path.name, submitted_by="upstream")
    assert result.accepted, result.message
    return Job.objects.get(pk=result.job_id)


def drive(job: Job, rounds=40) -> str:
    """Run the job's task until it settles, playing the scheduler: a held retry is due at once."""
    outcome = ""
    for _ in range(rounds):
        outcome = run_job(job.pk, sleep=lambda s: None, rng=random.Random(0))
        if outcome not in ("retry", "running"):
            return outcome
        Job.objects.filter(pk=job.pk).update(claimed_until=None)
    return outcome


def test_it_completes_a_job_through_the_managed_api_like_a_local_one(provider, tmp_path):
    sim = provider()
    job = submitted(pdfs.mixed(tmp_path))
    assert drive(job) == "completed"
    job.refresh_from_db()
    assert job.provider == "infrai" and job.provider_job_id in sim.jobs
    assert Asset.objects.count() == 6 and verify_all()[0] == []
    kinds = list(job.attempts.values_list("kind", "http_status"))
    assert kinds[0] == ("submit", 202) and ("poll", 200) in kinds and kinds.count(("download", 200)) == 6
    assert temp_files() == []


def test_it_makes_one_provider_job_through_a_429_storm_and_honours_retry_after(provider, tmp_path):
    sim = provider("rate_limited", burst=3, retry_after=7)
    job = submitted(pdfs.jpeg_rgb(tmp_path))
    assert drive(job) == "completed"
    assert sim.submissions == 1
    throttled = Attempt.objects.filter(job=job, http_status=429)
    assert throttled.exists() and set(throttled.values_list("retry_after_s", flat=True)) == {7.0}


def test_it_waits_at_least_retry_after_before_the_next_try(provider, tmp_path, settings):
    from django_q.models import Schedule

    provider("rate_limited", burst=1, retry_after=30)
    job = submitted(pdfs.jpeg_rgb(tmp_path))
    assert run_job(job.pk, rng=random.Random(0)) == "retry"
    job.refresh_from_db()
    wake = Schedule.objects.get(name__startswith=f"wake-job-{job.pk}-")
    assert (wake.next_run - job.attempts.get().started_at).total_seconds() >= 30
    assert run_job(job.pk) == "not-claimed"  # held until the wait is over


def test_a_one_second_retry_after_is_woken_at_once_not_at_a_scheduler_tick(provider, tmp_path):
    from django_q.models import Schedule

    from tests.conftest import queued_tasks

    provider("rate_limited", burst=1, retry_after=1)
    job = submitted(pdfs.jpeg_rgb(tmp_path))
    assert run_job(job.pk, rng=random.Random(0)) == "retry"
    job.refresh_from_db()
    held_for = (job.claimed_until - job.attempts.get().started_at).total_seconds()
    assert 1 <= held_for < 2  # Retry-After 1 and a first backoff of at most the 0.01 s base
    assert not Schedule.objects.filter(name__startswith=f"wake-job-{job.pk}-").exists()
    assert queued_tasks() == 1  # its wake-up is in the queue already

    slept = []

    def sleep(seconds):  # the clock moves on: the hold is over (a moment ago; SQLite's Now() is to the ms)
        slept.append(seconds)
        Job.objects.filter(pk=job.pk).update(claimed_until=timezone.now() - timedelta(seconds=1))

    assert run_job(job.pk, sleep=sleep, rng=random.Random(0), waking=True) != "not-claimed"
    assert 0 < slept[0] <= held_for  # the task that took the wake-up waited out the rest of the hold, then claimed


def test_it_neither_fetches_nor_records_a_verified_download_again_after_a_retry(provider, tmp_path):
    sim = provider("rate_limited", burst=1, retry_after=1)
    job = submitted(pdfs.mixed(tmp_path))
    assert drive(job) == "completed"
    downloads = list(job.attempts.filter(kind="download").values_list("target", "outcome"))
    verified = [target for target, outcome in downloads if outcome == "ok"]
    assert len(verified) == len(set(verified)) == 6
    for target in verified:  # nothing asked of an asset once its download was verified
        assert downloads[::-1].index((target, "ok")) == [t for t, _ in downloads[::-1]].index(target)
    answered = [path for method, path, status in sim.requests if "/assets/" in path and status == 200]
    assert len(answered) == 6  # each asset's bytes crossed the network once


def test_it_caps_a_huge_retry_after(provider, tmp_path, settings):
    from django_q.models import Schedule

    settings.PAGETRAIL_RETRY_AFTER_CAP_SECONDS = 45
    provider("rate_limited", burst=1, retry_after=86_400)
    job = submitted(pdfs.jpeg_rgb(tmp_path))
    run_job(job.pk, rng=random.Random(0))
    wait = (Schedule.objects.get(name__startswith="wake-job-").next_run - job.attempts.get().started_at).total_seconds()
    assert 45 <= wait < 50


def test_it_makes_one_provider_job_through_5xx_bursts(provider, tmp_path):
    sim = provider("flaky_5xx", burst=3)
    job = submitted(pdfs.mixed(tmp_path))
    assert drive(job) == "completed"
    assert sim.submissions == 1
    assert Attempt.objects.filter(job=job, http_status__in=[500, 503], outcome="retry").count() >= 3


def test_it_resubmits_with_the_same_key_after_the_provider_accepted_and_dropped_the_answer(provider, tmp_path):
    sim = provider("accept_then_drop")
    job = submitted(pdfs.jpeg_rgb(tmp_path))
    assert drive(job) == "completed"
    assert sim.submissions == 1 and list(sim.job_ids_by_key) == [job.idempotency_key]
    first = job.attempts.order_by("number").first()
    assert (first.kind, first.outcome, first.error_code) == ("submit", "retry", "connection_error")


def test_a_duplicated_task_creates_no_second_provider_job(provider, tmp_path):
    sim = provider("slow", slow_seconds=0.5)
    job = submitted(pdfs.jpeg_rgb(tmp_path))
    drive(job), drive(job)
    assert run_job(job.pk) == "not-claimed"
    assert sim.submissions == 1 and Manifest.objects.count() == 1


def test_it_fails_the_job_with_the_providers_reason_on_a_bad_key(provider, tmp_path):
    provider(api_key="wrong-key")
    job = submitted(pdfs.jpeg_rgb(tmp_path))
    assert drive(job) == "failed"
    job.refresh_from_db()
    assert job.error_code == "unauthorized" and job.error_message.startswith("Provider: ")
    assert job.attempts.get().http_status == 401


def test_it_fails_the_job_when_its_key_was_used_for_other_bytes(provider, tmp_path):
    import requests

    sim = provider()
    job = submitted(pdfs.jpeg_rgb(tmp_path))
    other = pdfs.cmyk(tmp_path).read_bytes()
    requests.post(
        f"{sim.url}/v1/pdf/extract_images",
        headers={"Authorization": f"Bearer {KEY}", "Idempotency-Key": job.idempotency_key},
        timeout=10,
        data={"idempotency_key": job.idempotency_key, "sha256": hashlib.sha256(other).hexdigest()},
        files={"document": ("other.pdf", other, "application/pdf")},
    ).raise_for_status()
    assert drive(job) == "failed"
    job.refresh_from_db()
    assert job.error_code == "idempotency_conflict" and job.attempts.get().http_status == 422
    assert sim.submissions == 1


def test_a_failed_provider_job_fails_ours_with_its_reason(provider, tmp_path):
    provider("job_fails")
    job = submitted(pdfs.jpeg_rgb(tmp_path))
    assert drive(job) == "failed"
    job.refresh_from_db()
    assert job.error_code == "extraction_failed" and job.error_message
    assert not Manifest.objects.exists() and temp_files() == []


@pytest.mark.parametrize("profile", ["truncated_download", "corrupt_download"])
def test_a_damaged_download_is_retried_and_never_manifested(provider, tmp_path, profile):
    provider(profile)
    job = submitted(pdfs.mixed(tmp_path))
    assert drive(job) == "completed"
    assert verify_all()[0] == []
    assert Attempt.objects.filter(job=job, kind="download", outcome="retry").exists()


def test_it_fails_a_job_whose_downloads_keep_arriving_damaged(provider, tmp_path, settings, monkeypatch):
    settings.PAGETRAIL_DOWNLOAD_TRIES = 1
    provider("corrupt_download")
    job = submitted(pdfs.jpeg_rgb(tmp_path))
    assert drive(job) == "failed"
    job.refresh_from_db()
    assert job.error_code == "download_failed" and not Manifest.objects.exists()


def test_a_job_past_its_deadline_becomes_unknown_and_the_reconciler_completes_it(provider, tmp_path, settings):
    clock = {"now": 0.0}
    sim = provider("slow", slow_seconds=100, clock=lambda: clock["now"])
    job = submitted(pdfs.jpeg_rgb(tmp_path))
    Job.objects.filter(pk=job.pk).update(deadline="2000-01-01T00:00:00Z")
    assert drive(job) == "unknown"
    job.refresh_from_db()
    assert job.status == "unknown" and job.error_code == "deadline_passed"
    sim.wait_idle(30)
    clock["now"] = 1000.0  # the provider finishes later
    Job.objects.filter(pk=job.pk).update(claimed_until=None, last_woken_at="2000-01-01T00:00:00Z")
    assert reconcile()["woken"] == 1
    assert drive(Job.objects.get(pk=job.pk)) == "completed"
    assert sim.submissions == 1


def test_an_admin_replay_wakes_only_unknown_jobs(provider, tmp_path):
    provider()
    unknown, queued = submitted(pdfs.jpeg_rgb(tmp_path)), submitted(pdfs.cmyk(tmp_path))
    Job.objects.filter(pk=unknown.pk).update(status="unknown")
    assert replay_unknown(Job.objects.all()) == 1
    assert Job.objects.get(pk=unknown.pk).last_woken_at > Job.objects.get(pk=queued.pk).last_woken_at


def test_the_kill_switch_holds_new_submissions_and_reopening_wakes_them(provider, tmp_path):
    sim = provider()
    job = submitted(pdfs.jpeg_rgb(tmp_path))
    set_submissions(False, by="admin", reason="provider incident")
    assert run_job(job.pk) == "held" and sim.submissions == 0
    assert Job.objects.get(pk=job.pk).status == "queued"
    assert reconcile()["woken"] == 0
    set_submissions(True, by="admin")
    assert drive(job) == "completed" and sim.submissions == 1


def test_the_api_key_never_reaches_a_log_line_or_a_row(provider, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    provider("flaky_5xx", burst=2)
    drive(submitted(pdfs.jpeg_rgb(tmp_path)))
    provider(api_key="another-secret-key-9d8e7f")
    drive(submitted(pdfs.cmyk(tmp_path)))
    rows = " ".join(str(v) for a in Attempt.objects.values() for v in a.values())
    rows += " ".join(str(v) for j in Job.objects.values() for v in j.values())
    for secret in (KEY, "another-secret-key-9d8e7f"):
        assert secret not in caplog.text and secret not in rows
