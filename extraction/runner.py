"""Running a job: claim it, submit it once, poll it, fetch its assets, complete it with its evidence.

Every step is safe to repeat: a task is delivered at least once, workers die, providers time
out after accepting. Waits are never slept through in a worker beyond the poll budget: the job
is released with a hold and woken when it is due: a wait shorter than the scheduler's tick by a
task queued at once that waits out the rest of the hold, a longer one by a one-off schedule.
"""

import logging
import os
import random
import socket
import time
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from requests import RequestException

from core import stored_inputs, stores
from core.logs import job_context
from core.retry import backoff_delay, next_wait

from . import completion, worker_stop
from .intake import queue
from .models import Attempt, Job, SubmissionSwitch, idempotency_key
from .pdf import WorkerStopping
from .providers import ProviderError, get_provider
from .providers.base import load_report, save_report
from .signals import alert_about
from .webhooks import recording as webhooks

log = logging.getLogger(__name__)
DAMAGED_DOWNLOAD = ("asset_mismatch", "download_failed")
# The self-hosted child quit on the input without an answer: once may be this machine, twice is the input.
CHILD_QUIT = "child_failed"
STORAGE_UNAVAILABLE = "storage_unavailable"
# The worker was told to stop (worker_stop.py): the job goes back to the queue, its claim released at once.
HANDED_BACK = "handed-back"
# django-q2's scheduler enqueues due schedules about every 30 s: a shorter wait must not wait for it.
SCHEDULER_TICK_SECONDS = 30.0


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def run_job(
    job_id: int,
    worker: str | None = None,
    sleep=worker_stop.nap,
    rng: random.Random | None = None,
    waking: bool = False,
) -> str:
    """Drive one job as far as it can go now; safe to call twice, concurrently, or late.

    `waking`: this task is the wake-up of a short wait, queued before the retry was due."""
    job = Job.objects.select_related("bundle").get(pk=job_id)
    with job_context(job.bundle.correlation_id, job.pk):
        if waking:
            _wait_out_short_hold(job, sleep)
        if worker_stop.stopping():  # taken after the stop (or while waiting): another worker runs it
            queue.wake_job_now(job.pk)
            outcome = HANDED_BACK
        else:
            outcome = _run(job, worker or worker_name(), sleep, rng)
        log.info("job %s: %s", job.pk, outcome)
        return outcome


def _wait_out_short_hold(job: Job, sleep) -> None:
    """Sleep until the hold ends (a wake-up queued early on purpose); any other task claims or leaves."""
    left = job.hold_left()
    if left is not None:
        sleep(min(left, SCHEDULER_TICK_SECONDS))


def _run(job: Job, worker: str, sleep, rng) -> str:
    token = job.claim(worker)
    if token is None:
        return "not-claimed"
    log.info("job %s: claimed by %s (%s)", job.pk, worker, job.status)
    with worker_stop.holding(partial(_wake_later, job, token, 0.0, HANDED_BACK)):
        return _drive(job, worker, token, sleep, rng)


def _drive(job: Job, worker: str, token, sleep, rng) -> str:
    provider = get_provider(job.provider)
    try:
        if not job.provider_job_id:
            if not SubmissionSwitch.submissions_open():
                job.release(token, hold_for=None)  # woken again when submissions reopen
                return "held"
            job.mark_submitted(_submit(job, worker, provider))
        return _poll(job, provider, worker, token, sleep, rng)
    except worker_stop.Stopping:
        return _wake_later(job, token, 0.0, HANDED_BACK)
    except stores.OutputConflict as exc:
        return _fail(job, "output_conflict", str(exc))
    except stored_inputs.InputMissing as exc:
        return _fail_input_missing(job, exc)
    except (stores.StorageUnavailable, *stores.STORAGE_ERRORS) as exc:
        if (fault := _storage_fault(exc)) is None:
            raise
        return _hold_for_storage(job, token, worker, fault, rng)
    except ProviderError as exc:
        if exc.code == WorkerStopping.code:  # its PDF child was stopped with it: nothing is known of the file
            return _wake_later(job, token, 0.0, HANDED_BACK)
        if exc.permanent:
            return _fail(job, exc.code, exc.message)
        if _quit_again(job, exc):
            return _fail(job, "extractor_crashed", f"The extractor stopped on this file twice: {exc.message}")
        return _retry_later(job, token, exc, rng)


def _submit(job: Job, worker: str, provider) -> str:
    if provider.remote:
        return _tried(job, Attempt.Kind.SUBMIT, worker, provider, lambda: provider.start(job))
    # The self-hosted start() calls nothing (it derives the id from the key): its attempt is one row.
    provider_job_id = provider.start(job)
    Attempt.begin(job, Attempt.Kind.SUBMIT, worker, outcome=Attempt.Outcome.OK)
    return provider_job_id


def _tried(job: Job, kind: str, worker: str, provider, call, target: str = ""):
    """Run one provider call as a recorded Attempt (status, Retry-After, latency, outcome)."""
    attempt = Attempt.begin(job, kind, worker, target)
    try:
        result = call()
    except ProviderError as exc:
        outcome = Attempt.Outcome.FAILED if exc.permanent else Attempt.Outcome.RETRY
        attempt.record_outcome(
            outcome,
            http_status=exc.http_status or provider.last.http_status,
            retry_after_s=exc.retry_after_s,
            error_code=exc.code,
            error_message=exc.message,
        )
        raise
    except (stores.StorageUnavailable, *stores.STORAGE_ERRORS) as exc:
        if (fault := _storage_fault(exc)) is None:
            raise
        attempt.record_outcome(Attempt.Outcome.RETRY, error_code=STORAGE_UNAVAILABLE, error_message=fault.message)
        fault.recorded = True  # this try's row says it: the hold adds none
        if fault is exc:
            raise
        raise fault from exc
    except stored_inputs.InputMissing as exc:
        attempt.record_outcome(Attempt.Outcome.FAILED, error_code=exc.code, error_message=str(exc))
        raise
    attempt.record_outcome(Attempt.Outcome.OK, http_status=provider.last.http_status)
    return result


def _poll(job: Job, provider, worker: str, token, sleep, rng) -> str:
    """Check until the provider is done, within this task's budget; then hand back to the scheduler."""
    kind = Attempt.Kind.POLL if provider.remote else Attempt.Kind.EXTRACT
    work_dir, started, polls = stores.job_work_dir(job.pk), time.monotonic(), 0
    while True:
        worker_stop.check()
        report = load_report(work_dir) or _tried(job, kind, worker, provider, lambda: provider.check(job, work_dir))
        if report.state != "running":
            save_report(work_dir, report)  # final: a retried download need not ask again
            return _finish(job, provider, worker, report, work_dir)
        job.mark_running()
        if job.past_deadline():
            _mark_unknown(job, "deadline_passed", "The provider had not finished by the job's deadline.")
            job.release(token, hold_for=timedelta(seconds=settings.PAGETRAIL_REQUEUE_AFTER_SECONDS))
            return "unknown"
        delay = backoff_delay(
            polls, settings.PAGETRAIL_BACKOFF_BASE_SECONDS, settings.PAGETRAIL_BACKOFF_CAP_SECONDS, rng
        )
        polls += 1
        if time.monotonic() - started + delay > settings.PAGETRAIL_POLL_BUDGET_SECONDS:
            return _wake_later(job, token, delay, "running")
        sleep(delay)  # worker_stop.nap: cut short when the worker is told to stop (checked at the loop's top)


def _finish(job: Job, provider, worker: str, report, work_dir) -> str:
    if report.state != "completed":
        return _fail(
            job,
            report.error_code or report.state,
            report.error_message or f"The provider reports the job as {report.state}.",
        )
    # The child that wrote the files says which extractor it was: its code may be newer than this worker's.
    if not provider.remote and (refused := _keyed_to_what_ran(job, provider, report.meta.get("extractor_version"))):
        return refused
    finished_at = timezone.now()  # the provider's work ended here: downloads come after
    if provider.remote:  # a failed download is retried later: the provider's end is kept from this try
        job.mark_provider_finished(at=finished_at)
    files = {}
    for asset in report.assets:
        worker_stop.check()  # a stop between downloads: the next try keeps the verified ones (kept_download)
        files[asset.key] = _fetched(job, provider, worker, asset, work_dir)
    job.mark_provider_finished(stores.bytes_under(work_dir), at=finished_at)  # all there, at its largest
    completion.complete_job(job, report, files, attempt_number=job.attempts_so_far())
    stores.remove_job_work_dir(job.pk)
    return "completed"


def _keyed_to_what_ran(job: Job, provider, version: str | None) -> str | None:
    """A job keyed to one extractor version whose files another wrote (a rolling upgrade, or code upgraded under a
    running worker) becomes the job of the version that wrote them, so its manifest and output names state what ran;
    never mislabelled. When that version's job of the same bytes and round exists already, this one fails and names
    it. None to go on; otherwise the outcome."""
    if not version or version == job.extractor_version:
        return None
    keyed = job.extractor_version
    key = idempotency_key(job.bundle.correlation_id, job.extractor, version, job.generation)
    try:
        moved = job.rekey(job.claim_token, version, key, provider.job_id(key) if job.provider_job_id else "")
    except IntegrityError:
        other = Job.objects.filter(idempotency_key=key).values_list("pk", flat=True).first()
        return _fail(
            job,
            "extractor_upgraded",
            f"This job was keyed to extractor {keyed}, and this worker runs {version}: job {other} is the {version} "
            "extraction of the same bytes.",
        )
    if not moved:
        return "not-claimed"  # its claim was lost: the worker holding it decides
    log.warning("job %s: keyed to extractor %s, run by %s: re-keyed to %s", job.pk, keyed, version, version)
    return None


def _fetched(job: Job, provider, worker: str, asset, work_dir):
    if not provider.remote:
        return provider.fetch(job, asset, work_dir)
    if (kept := provider.kept_download(asset, work_dir)) is not None:
        return kept  # verified by an earlier try of this job: neither fetched nor recorded again
    try:
        return _tried(
            job, Attempt.Kind.DOWNLOAD, worker, provider, lambda: provider.fetch(job, asset, work_dir), target=asset.key
        )
    except ProviderError as exc:
        # Only damaged downloads count against the limit; a 429 or 503 is waited out like any other.
        damaged = job.attempts.filter(target=asset.key, error_code__in=DAMAGED_DOWNLOAD).count()
        if exc.code in DAMAGED_DOWNLOAD and damaged >= settings.PAGETRAIL_DOWNLOAD_TRIES:
            raise ProviderError(
                "download_failed", f"Asset downloads kept failing ({exc.message})", permanent=True
            ) from exc
        raise


def _quit_again(job: Job, exc: ProviderError) -> bool:
    """After at most one retry: this attempt's failure is already recorded among the job's attempts."""
    return exc.code == CHILD_QUIT and job.attempts.filter(error_code=CHILD_QUIT).count() > 1


def _retry_later(job: Job, token, exc: ProviderError, rng) -> str:
    """429, 5xx, timeouts: wait (Retry-After honoured, backoff with jitter), never in this worker."""
    tries = Attempt.retries_in_a_row(job)
    delay = next_wait(
        tries,
        exc.retry_after_s,
        base=settings.PAGETRAIL_BACKOFF_BASE_SECONDS,
        cap=settings.PAGETRAIL_BACKOFF_CAP_SECONDS,
        retry_after_cap=settings.PAGETRAIL_RETRY_AFTER_CAP_SECONDS,
        rng=rng,
    )
    if job.past_deadline():
        _mark_unknown(job, exc.code, f"Past the deadline after: {exc.message}")
    log.warning("job %s: %s, retrying in %.1fs", job.pk, exc.code, delay)
    return _wake_later(job, token, delay, "retry")


def _storage_fault(exc: Exception) -> stores.StorageUnavailable | None:
    """The store failure `exc` is (one not raised by a store module was the temp area's), or None."""
    if isinstance(exc, stores.StorageUnavailable):
        return exc
    if isinstance(exc, RequestException):
        return None  # an HTTP failure (requests' errors are OSErrors too), never a store's
    return stores.StorageUnavailable("temp", exc)


def _hold_for_storage(job: Job, token, worker: str, exc: stores.StorageUnavailable, rng) -> str:
    """A store failed (full, read-only, unreachable): hold the job with the code, tell an operator, and
    try again after a backoff; past the deadline the job fails with the same code."""
    if not exc.recorded:
        attempt = Attempt.begin(job, Attempt.Kind.STORE, worker)
        attempt.record_outcome(Attempt.Outcome.RETRY, error_code=STORAGE_UNAVAILABLE, error_message=exc.message)
    alert_about(job, STORAGE_UNAVAILABLE, f"storage-unavailable-{exc.store}", f"Job {job.pk} is held: {exc.message}")
    if job.past_deadline():
        return _fail(job, STORAGE_UNAVAILABLE, f"{exc.message} It still failed at the job's deadline.")
    job.mark_held(STORAGE_UNAVAILABLE, f"{exc.message} The job waits and tries again.")
    tries = job.attempts.filter(error_code=STORAGE_UNAVAILABLE).count()
    delay = backoff_delay(tries, settings.PAGETRAIL_BACKOFF_BASE_SECONDS, settings.PAGETRAIL_BACKOFF_CAP_SECONDS, rng)
    log.warning("job %s: %s, retrying in %.1fs", job.pk, exc.message, delay)
    return _wake_later(job, token, delay, "held")


def _fail_input_missing(job: Job, exc: stored_inputs.InputMissing) -> str:
    """The input is gone while its store answers: no retry brings it back, so the job fails now and an operator
    is told (one open alert per bundle), rather than the job being held as for an outage until its deadline."""
    failed = _fail(job, exc.code, str(exc))
    alert_about(job, exc.code, f"input-missing-{job.bundle_id}", f"Job {job.pk} failed: {exc}")
    return failed


def _wake_later(job: Job, token, delay: float, outcome: str) -> str:
    job.release(token, hold_for=timedelta(seconds=delay))
    if delay < SCHEDULER_TICK_SECONDS:
        # Queued now: the task that takes it sleeps out the rest of the hold (run_job), so a 1 s
        # Retry-After costs about 1 s, not a scheduler tick.
        queue.wake_job_now(job.pk)
        return outcome
    queue.wake_job_at(job.pk, timezone.now() + timedelta(seconds=delay))
    return outcome


def _mark_unknown(job: Job, code: str, message: str) -> None:
    if job.mark_unknown(code, message):
        alert_about(job, "job_unknown", f"job-{job.pk}-unknown", f"Job {job.pk} ({job.provider}) is unknown: {message}")


def _fail(job: Job, code: str, message: str) -> str:
    with transaction.atomic():  # a failed job always has its events; a duplicate task's loss records none
        if job.mark_failed(code, message):
            webhooks.job_finished(job)
    stores.remove_job_work_dir(job.pk)
    return "failed"
