"""A worker told to stop hands back what it holds, in-process (tests/extraction/test_stopping.py: real clusters)."""

import pytest
from django.conf import settings
from django_q.brokers import get_broker

from extraction import worker_stop
from extraction.intake import decision
from extraction.models import Job, Submission
from extraction.pdf import sandbox
from extraction.runner import HANDED_BACK, run_job
from tests import pdfs
from tests.conftest import complete
from tests.extraction.test_run_job import accepted_job
from tests.extraction.test_submissions import received

pytestmark = pytest.mark.django_db


@pytest.fixture
def told_to_stop(monkeypatch):
    """As after SIGTERM: the worker's flag set, and its PDF children stopped (undone after the test)."""

    def stop():
        monkeypatch.setattr(worker_stop, "_stopping", stopped := worker_stop.threading.Event())
        stopped.set()
        monkeypatch.setattr(sandbox._pool, "stopping", True)

    return stop


@pytest.fixture
def child_stopped(monkeypatch):
    """Only the PDF child was stopped (the signal came as the worker was mid-command)."""
    return lambda: monkeypatch.setattr(sandbox._pool, "stopping", True)


def queued(queue: str | None = None) -> int:
    return get_broker(queue).queue_size()


def test_it_hands_a_job_taken_after_the_stop_back_unclaimed_and_queued(tmp_path, told_to_stop):
    job, before = accepted_job(pdfs.jpeg_rgb(tmp_path)), queued()
    told_to_stop()

    assert run_job(job.pk) == HANDED_BACK
    assert queued() == before + 1
    assert Job.objects.get(pk=job.pk).claim("another worker") is not None


def test_it_releases_a_job_whose_extraction_the_stop_cut_short_for_another_worker_at_once(tmp_path, child_stopped):
    job, before = accepted_job(pdfs.jpeg_rgb(tmp_path)), queued()
    child_stopped()

    assert run_job(job.pk) == HANDED_BACK
    job.refresh_from_db()
    assert (job.status, job.claim_token) == (Job.Status.SUBMITTED, None) and queued() == before + 1
    assert job.claim("another worker") is not None  # not after the lease


def test_it_gives_a_submission_whose_validation_the_stop_cut_short_back_untried(tmp_path, child_stopped):
    submission = received(pdfs.jpeg_rgb(tmp_path))
    child_stopped()

    assert decision.decide(submission.pk) == decision.RETRY
    submission.refresh_from_db()
    assert (submission.state, submission.tries, submission.claimed_until) == (Submission.State.PENDING, 0, None)


def test_it_leaves_a_submission_taken_after_the_stop_unclaimed(tmp_path, told_to_stop):
    submission = received(pdfs.jpeg_rgb(tmp_path))
    told_to_stop()

    assert decision.decide(submission.pk) == decision.RETRY
    submission.refresh_from_db()
    assert (submission.tries, submission.claimed_until) == (0, None)


def test_a_hand_back_loses_to_a_newer_try(tmp_path):
    submission = received(pdfs.jpeg_rgb(tmp_path))
    assert submission.claim()
    stale = Submission.objects.get(pk=submission.pk)
    Submission.objects.filter(pk=submission.pk).update(tries=2)  # another worker's try since

    assert not stale.hand_back()
    assert Submission.objects.get(pk=submission.pk).tries == 2


def test_it_queues_previews_whose_rendering_the_stop_cut_short_again(tmp_path, child_stopped):
    from audit import tasks
    from audit.models import PagePreview

    manifest = complete(pdfs.reused_on_three_pages(tmp_path))
    before = queued(settings.PAGETRAIL_PREVIEW_QUEUE)
    child_stopped()

    assert tasks.generate_previews(manifest.pk) == {"rendered": 0, "handed_back": True}
    assert (
        queued(settings.PAGETRAIL_PREVIEW_QUEUE) == before + 1
        and not PagePreview.objects.filter(manifest=manifest).exists()
    )


def test_a_task_run_in_process_from_another_thread_installs_no_handler():
    import threading

    from extraction import worker_stop

    failed = []
    thread = threading.Thread(target=lambda: _install(worker_stop, failed))
    thread.start()
    thread.join()
    assert failed == []


def _install(worker_stop, failed) -> None:
    try:
        worker_stop.install(proc_name="MainProcess")  # as django-q2's sync mode sends post_spawn
    except ValueError as exc:
        failed.append(exc)
