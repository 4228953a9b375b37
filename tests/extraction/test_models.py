from datetime import timedelta

import pytest
from django.utils import timezone

from extraction.models import Attempt, Bundle, Job, idempotency_key

pytestmark = pytest.mark.django_db


def make_job(status=Job.Status.QUEUED, **fields) -> Job:
    sha = f"{Bundle.objects.count():064x}"
    bundle = Bundle.objects.create(
        correlation_id=sha,
        size=10,
        page_count=1,
        mime="application/pdf",
        submitted_by="test",
    )
    return Job.objects.create(
        bundle=bundle,
        idempotency_key=idempotency_key(sha, "x", "1"),
        provider="local",
        extractor="x",
        extractor_version="1",
        status=status,
        deadline=timezone.now() + timedelta(hours=1),
        **fields,
    )


def test_it_derives_the_idempotency_key_from_bytes_and_extractor_version_only():
    key = idempotency_key("ab" * 32, "pagetrail-pikepdf", "1.0")
    assert key == idempotency_key("ab" * 32, "pagetrail-pikepdf", "1.0")
    assert key != idempotency_key("ab" * 32, "pagetrail-pikepdf", "1.1")
    assert key != idempotency_key("cd" * 32, "pagetrail-pikepdf", "1.0")


def test_it_lets_only_one_worker_hold_a_claim():
    job = make_job()
    assert job.claim("w1") is not None
    assert Job.objects.get(pk=job.pk).claim("w2") is None
    assert Job.objects.get(pk=job.pk).claimed_by == "w1"


def test_it_lets_another_worker_claim_once_the_lease_ran_out():
    job = make_job()
    start = timezone.now()
    job.claim("w1", lease_seconds=10, at=start)
    assert job.claim("w2", at=start + timedelta(seconds=11)) is not None
    assert job.claimed_by == "w2"


def test_it_keeps_the_first_pick_up_time_when_a_job_is_reclaimed():
    job = make_job()
    start = timezone.now()
    job.claim("w1", lease_seconds=1, at=start)
    job.claim("w2", at=start + timedelta(seconds=5))
    assert job.picked_up_at == start


def test_it_never_claims_a_terminal_job():
    job = make_job(status=Job.Status.COMPLETED)
    assert job.claim("w1") is None


def test_it_applies_a_duplicated_transition_once():
    job = make_job()
    assert job.mark_submitted("p-1") is True
    late = Job.objects.get(pk=job.pk)
    late.status = Job.Status.QUEUED  # a stale copy, as a redelivered task would hold
    assert late.mark_submitted("p-2") is False
    assert Job.objects.get(pk=job.pk).provider_job_id == "p-1"


def test_it_does_not_fail_a_completed_job():
    job = make_job(status=Job.Status.RUNNING)
    assert job.mark_completed()
    assert job.mark_failed("late", "a late failure report") is False
    assert Job.objects.get(pk=job.pk).status == Job.Status.COMPLETED


def test_it_turns_only_active_provider_jobs_unknown():
    assert make_job(status=Job.Status.RUNNING).mark_unknown("deadline", "past deadline")
    assert not make_job(status=Job.Status.FAILED).mark_unknown("deadline", "past deadline")


def test_it_numbers_attempts_in_order():
    job = make_job()
    numbers = [Attempt.begin(job, Attempt.Kind.SUBMIT).number for _ in range(3)]
    assert numbers == [1, 2, 3]


def test_it_numbers_an_attempt_after_one_another_worker_opened_meanwhile():
    job = make_job()
    Attempt.begin(job, Attempt.Kind.EXTRACT, "worker-a")
    Attempt.begin(Job.objects.get(pk=job.pk), Attempt.Kind.EXTRACT, "worker-b")
    assert Attempt.begin(job, Attempt.Kind.EXTRACT, "worker-a").number == 3
    assert list(job.attempts.values_list("number", "worker")) == [(1, "worker-a"), (2, "worker-b"), (3, "worker-a")]


def test_a_first_claim_numbers_its_attempt_after_those_of_a_worker_that_claimed_and_let_go_meanwhile():
    job = make_job()  # read while no worker had claimed it
    other = Job.objects.get(pk=job.pk)
    token = other.claim("worker-b")
    Attempt.begin(other, Attempt.Kind.EXTRACT, "worker-b")
    other.release(token, hold_for=None)
    assert job.claim("worker-a") is not None
    assert Attempt.begin(job, Attempt.Kind.EXTRACT, "worker-a").number == 2
    assert list(job.attempts.values_list("number", "worker")) == [(1, "worker-b"), (2, "worker-a")]


def test_it_keeps_the_first_time_the_provider_was_seen_finished():
    job = make_job()
    first = timezone.now()
    job.mark_provider_finished(at=first)
    job.mark_provider_finished(temp_peak_bytes=10, at=first + timedelta(seconds=5))
    job.refresh_from_db()
    assert (job.provider_finished_at, job.temp_peak_bytes) == (first, 10)


def test_it_separates_queue_wait_from_extraction_time():
    start = timezone.now()
    job = make_job(
        enqueued_at=start,
        picked_up_at=start + timedelta(seconds=2),
        submitted_at=start + timedelta(seconds=3),
        provider_finished_at=start + timedelta(seconds=10),
    )
    assert job.queue_wait == timedelta(seconds=2)
    assert job.extraction_time == timedelta(seconds=7)


def test_it_counts_the_retries_in_a_row_since_the_last_answered_try():
    job = make_job()
    for outcome in ("retry", "retry", "ok", "retry"):
        Attempt.begin(job, Attempt.Kind.DOWNLOAD, outcome=outcome)
    assert Attempt.retries_in_a_row(job) == 1  # a success starts the backoff again


def test_it_reports_how_long_a_released_job_is_still_held():
    job = make_job()
    token = job.claim("w1")
    assert job.hold_left() is None  # claimed by a worker: not a hold to wait out
    job.release(token, hold_for=timedelta(seconds=20))
    assert 0 < job.hold_left() <= 20
    job.release(None)
    Job.objects.filter(pk=job.pk).update(claimed_until=timezone.now() - timedelta(seconds=1))
    assert job.hold_left() is None
