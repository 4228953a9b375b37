"""Submissions between the web tier and the intake worker: retries of a failed child, re-drives, the sweep."""

import io
import os
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.utils import timezone

from core import stores
from extraction.intake import decision, queue, staging
from extraction.models import Bundle, Job, Rejection, Submission
from extraction.pdf.sandbox import stop_idle_children
from extraction.reconciler import reconcile
from extraction.temp_sweep import sweep_temp
from tests import pdfs, pdfs_intake
from tests.conftest import PRODUCTION, run_intake_tasks, temp_files

pytestmark = pytest.mark.django_db


@pytest.fixture
def fresh_children():
    stop_idle_children()
    yield
    stop_idle_children()


def received(path, **kwargs) -> Submission:
    """A submission as the web tier leaves it: staged and pending (its task is queued by the caller, if at all)."""
    with open(path, "rb") as fh:
        staged = staging.stage(fh, filename=path.name, submitted_by="tester")
    return staging.receive(staged, filename=path.name, submitted_by="tester", queued=False, **kwargs)


def child_that_quits(tmp_path, monkeypatch, times: int) -> None:
    """The next `times` PDF children quit without an answer while opening the file (later ones work): a
    validator that stops for no reason of the file's."""
    site, count = tmp_path / "site", tmp_path / "quits"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os, pikepdf\n"
        "_open = pikepdf.open\n"
        "def _quitting(*args, **kwargs):\n"
        f"    done = os.path.getsize({str(count)!r}) if os.path.exists({str(count)!r}) else 0\n"
        f"    if done < {times}:\n"
        f"        open({str(count)!r}, 'a').write('x')\n"
        "        os._exit(3)\n"
        "    return _open(*args, **kwargs)\n"
        "pikepdf.open = _quitting\n"
    )
    stop_idle_children()
    monkeypatch.setenv("PYTHONPATH", str(site))


def test_a_child_that_quits_once_is_retried_and_the_submission_accepted(tmp_path, monkeypatch, fresh_children):
    child_that_quits(tmp_path, monkeypatch, times=1)
    submission = received(pdfs.jpeg_rgb(tmp_path))
    queue.enqueue_decision(submission)

    assert run_intake_tasks() == 2
    submission.refresh_from_db()
    assert (submission.state, submission.tries) == ("accepted", 2) and Job.objects.get() == submission.job


def test_a_child_that_quits_twice_is_refused_as_validator_crashed_with_a_rejection(
    tmp_path, monkeypatch, fresh_children
):
    child_that_quits(tmp_path, monkeypatch, times=5)
    submission = received(pdfs.jpeg_rgb(tmp_path))
    queue.enqueue_decision(submission)

    assert run_intake_tasks() == 2  # one retry, never more
    submission.refresh_from_db()
    assert (submission.state, submission.error_code, submission.retryable) == ("refused", "validator_crashed", True)
    assert "stopped while reading" in submission.error_message
    assert Rejection.objects.get().code == "validator_crashed" and not Bundle.objects.exists()
    assert temp_files() == []


def decided_while_killing(submission: Submission, waiting, kills: int) -> list[float]:
    """Run the intake queue while its PDF children are SIGKILLed mid-validation; the CPU seconds each had used."""
    queue.enqueue_decision(submission)
    with ThreadPoolExecutor(1) as pool:
        killed = pool.submit(pdfs_intake.kill_waiting_children, waiting, kills)
        run_intake_tasks()
    submission.refresh_from_db()
    return killed.result()


def test_a_child_killed_from_outside_once_is_retried_and_the_good_file_accepted(tmp_path, monkeypatch, fresh_children):
    waiting = pdfs_intake.children_that_wait_to_be_killed(tmp_path, monkeypatch)
    submission = received(pdfs.jpeg_rgb(tmp_path))

    decided_while_killing(submission, waiting, kills=1)

    assert (submission.state, submission.tries) == ("accepted", 2) and not Rejection.objects.exists()


def test_a_child_killed_from_outside_twice_is_refused_as_validator_crashed_not_blamed_on_the_file(
    tmp_path, monkeypatch, fresh_children
):
    waiting = pdfs_intake.children_that_wait_to_be_killed(tmp_path, monkeypatch)
    submission = received(pdfs.jpeg_rgb(tmp_path))

    used = decided_while_killing(submission, waiting, kills=2)

    assert len(used) == 2 and submission.tries == 2
    assert (submission.state, submission.error_code, submission.retryable) == ("refused", "validator_crashed", True)
    assert "killed from outside (SIGKILL)" in submission.error_message
    # The refusal's own record says the validator failed; nothing records the file as over a limit.
    assert list(Rejection.objects.values_list("code", flat=True)) == ["validator_crashed"]
    assert not Bundle.objects.exists() and temp_files() == []


def test_a_file_over_its_cpu_limit_is_still_refused_as_resource_limit_at_once(tmp_path, settings, fresh_children):
    settings.PAGETRAIL_CHILD_CPU_SECONDS = 1
    settings.PAGETRAIL_MAX_STREAM_BYTES = 2**40  # 16 GiB of zeros to inflate: seconds of CPU
    submission = received(pdfs.flate_bomb(tmp_path, mib=16384))
    queue.enqueue_decision(submission)

    assert run_intake_tasks() == 1
    submission.refresh_from_db()
    assert (submission.state, submission.error_code, submission.retryable) == ("refused", "resource_limit", False)
    assert list(Rejection.objects.values_list("code", flat=True)) == ["resource_limit"]


def worker_died_holding(submission: Submission) -> None:
    """A worker claimed the submission and was killed: its claim runs out, nobody decides."""
    assert submission.claim()
    now = timezone.now()  # as it is once the lease ran out: claimed after its last wake-up, expired since
    Submission.objects.filter(pk=submission.pk).update(
        claimed_until=now - timedelta(seconds=1), last_woken_at=now - timedelta(hours=1)
    )


def test_a_worker_whose_copy_is_older_than_another_try_does_not_claim_it(tmp_path):
    submission = received(pdfs.jpeg_rgb(tmp_path))
    stale = Submission.objects.get(pk=submission.pk)  # read before the other worker's try
    assert submission.claim() and submission.release()  # a try whose child failed: re-queued by its worker

    assert not stale.claim()
    assert submission.claim() and Submission.objects.get(pk=submission.pk).tries == submission.tries == 2


def test_the_reconciler_re_drives_a_pending_submission_whose_worker_died(tmp_path):
    submission = received(pdfs.jpeg_rgb(tmp_path))
    worker_died_holding(submission)

    assert reconcile()["submissions_woken"] == 1
    assert reconcile()["submissions_woken"] == 0  # one wake-up call per expired claim
    assert run_intake_tasks() == 1
    submission.refresh_from_db()
    assert (submission.state, submission.tries) == ("accepted", 2) and temp_files() == []


def test_a_submission_whose_workers_died_twice_is_refused_not_pending_for_ever(tmp_path):
    submission = received(pdfs.jpeg_rgb(tmp_path))
    worker_died_holding(submission)
    submission.refresh_from_db()
    worker_died_holding(submission)

    reconcile()
    run_intake_tasks()
    submission.refresh_from_db()
    assert (submission.state, submission.error_code) == ("refused", "validator_crashed")
    assert "its worker stopped" in submission.error_message and Rejection.objects.get().code == "validator_crashed"
    assert temp_files() == []


def test_the_reconciler_re_queues_a_submission_whose_task_was_lost(tmp_path, settings):
    received(pdfs.jpeg_rgb(tmp_path))
    quiet = timedelta(seconds=settings.PAGETRAIL_REQUEUE_AFTER_SECONDS + 1)
    Submission.objects.update(last_woken_at=timezone.now() - quiet)

    assert reconcile()["submissions_woken"] == 1 and run_intake_tasks() == 1
    assert Submission.objects.get().state == "accepted"


def test_a_submission_whose_staged_bytes_are_gone_is_refused_with_a_code(tmp_path):
    submission = received(pdfs.jpeg_rgb(tmp_path))
    submission.staged_path.unlink()

    decision.decide(submission.pk)
    submission.refresh_from_db()
    assert (submission.state, submission.error_code, submission.retryable) == ("refused", "staged_upload_lost", True)


@pytest.mark.skipif(PRODUCTION, reason="an input store on the file system")
def test_an_input_store_that_cannot_take_the_file_refuses_it_as_storage_unavailable(tmp_path, settings):
    location = tmp_path / "inputs-broken"
    location.mkdir()
    settings.STORAGES = {
        **settings.STORAGES,
        "inputs": {**settings.STORAGES["inputs"], "OPTIONS": {"location": location / "nowhere"}},
    }
    (location / "nowhere").write_bytes(b"")  # a file where the store's directory belongs
    submission = received(pdfs.jpeg_rgb(tmp_path))

    decision.decide(submission.pk)
    submission.refresh_from_db()
    assert (submission.state, submission.error_code, submission.retryable) == ("refused", "storage_unavailable", True)
    assert not Bundle.objects.exists() and not Job.objects.exists() and temp_files() == []


def test_the_sweep_removes_abandoned_staged_uploads_within_the_grace_period(tmp_path, settings):
    settings.PAGETRAIL_STAGED_GRACE_SECONDS = 300
    pending = received(pdfs.jpeg_rgb(tmp_path))
    abandoned = stores.uploads_dir() / "0123abandoned.part"  # a request that died mid-body
    abandoned.write_bytes(b"%PDF-1.7 half a body")
    fresh = stores.uploads_dir() / "4567still-writing.part"
    fresh.write_bytes(b"%PDF-1.7 arriving")
    old = time.time() - 301
    for path in (abandoned, pending.staged_path):
        os.utime(path, (old, old))

    assert sweep_temp()["removed"] == 1
    assert not abandoned.exists() and fresh.exists() and pending.staged_path.exists()


def test_the_sweep_removes_djangos_upload_files_that_requests_left_within_the_grace_period(settings):
    settings.PAGETRAIL_STAGED_GRACE_SECONDS = 300
    settings.FILE_UPLOAD_TEMP_DIR = str(stores.temp_root() / "requests")
    left = stores.request_files_dir() / "tmpk1ll3d.upload.pdf"  # a request killed while Django spooled its file
    legacy = stores.temp_root() / "tmp0ld.upload.pdf"  # from before request files had a directory of their own
    fresh = stores.request_files_dir() / "tmpr3ading.upload.pdf"
    for path in (left, legacy, fresh):
        path.write_bytes(b"%PDF-1.7 part of a body")
    old = time.time() - 301
    for path in (left, legacy):
        os.utime(path, (old, old))

    assert sweep_temp()["removed"] == 2
    assert not left.exists() and not legacy.exists() and fresh.exists()


def test_an_empty_upload_is_refused_at_receipt_with_a_rejection():
    staged = staging.stage(io.BytesIO(b""), filename="empty.pdf", submitted_by="tester")
    submission = staging.receive(staged, filename="empty.pdf", submitted_by="tester")
    assert (submission.state, submission.error_code) == ("refused", "empty") and Rejection.objects.get().code == "empty"
    assert temp_files() == []
