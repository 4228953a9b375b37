from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.models import Schedule

from core.stores import job_work_dir
from extraction.models import Attempt, Job
from extraction.reconciler import reconcile
from extraction.worker_start import sweep_on_worker_start
from tests.conftest import queued_tasks
from tests.extraction.test_models import make_job

pytestmark = pytest.mark.django_db


def test_it_schedules_the_reconciler_and_the_sweepers_after_migrate():
    assert set(Schedule.objects.values_list("func", flat=True)) == {
        "extraction.tasks.reconcile",
        "extraction.tasks.sweep",
        "audit.tasks.sweep_outputs",
        "audit.tasks.write_checkpoint",
        "audit.tasks.scheduled_verification",
        "audit.tasks.apply_retention",
    }


def test_it_sweeps_temp_when_a_worker_starts():
    (job_work_dir(12345) / "left-over.png").write_bytes(b"x")
    sweep_on_worker_start(proc_name="Process-1")
    assert not job_work_dir(12345).joinpath("left-over.png").exists()


def test_it_wakes_a_job_only_once_its_claim_expired():
    job = make_job()
    start = timezone.now()
    job.claim("dead worker", lease_seconds=5, at=start)
    assert reconcile(at=start + timedelta(seconds=1))["woken"] == 0
    assert reconcile(at=start + timedelta(seconds=6))["woken"] == 1
    assert queued_tasks() == 1


def test_it_wakes_a_queued_job_whose_task_was_lost(settings):
    job = make_job()
    later = job.last_woken_at + timedelta(seconds=settings.PAGETRAIL_REQUEUE_AFTER_SECONDS + 1)
    assert reconcile(at=later)["woken"] == 1
    assert reconcile(at=later + timedelta(seconds=1))["woken"] == 0


def test_it_wakes_an_expired_claim_once_not_on_every_pass():
    job = make_job()
    start = timezone.now()
    job.claim("dead worker", lease_seconds=5, at=start)
    assert reconcile(at=start + timedelta(seconds=6))["woken"] == 1
    assert reconcile(at=start + timedelta(seconds=66))["woken"] == 0


def test_it_measures_leases_on_the_database_clock():
    job = make_job()
    assert job.claim("w1", lease_seconds=60) is not None
    assert reconcile()["woken"] == 0
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(
        last_woken_at=now - timedelta(minutes=10), claimed_until=now - timedelta(seconds=1)
    )
    assert reconcile()["woken"] == 1


def test_it_closes_a_try_left_started_by_a_worker_that_died_as_abandoned():
    job = make_job()
    start = timezone.now()
    job.claim("worker-a", lease_seconds=5, at=start)
    attempt = Attempt.begin(job, Attempt.Kind.EXTRACT, "worker-a")
    assert reconcile(at=start + timedelta(seconds=1))["abandoned_attempts"] == 0  # its worker still holds the job
    assert reconcile(at=start + timedelta(seconds=6))["abandoned_attempts"] == 1
    attempt.refresh_from_db()
    assert (attempt.outcome, attempt.error_code) == ("abandoned", "worker_lost") and attempt.finished_at


def test_it_closes_a_dead_workers_try_once_another_worker_holds_the_job():
    job = make_job()
    start = timezone.now()
    job.claim("worker-a", lease_seconds=5, at=start)
    Attempt.begin(job, Attempt.Kind.EXTRACT, "worker-a")
    Job.objects.filter(pk=job.pk).update(claimed_until=start)  # its lease ran out
    job.claim("worker-b", lease_seconds=60, at=start + timedelta(seconds=1))
    mine = Attempt.begin(job, Attempt.Kind.EXTRACT, "worker-b")
    assert reconcile(at=start + timedelta(seconds=2))["abandoned_attempts"] == 1
    assert Attempt.objects.get(pk=mine.pk).outcome == "started"
