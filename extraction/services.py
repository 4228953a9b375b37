"""Workflows that span bundles, jobs, storage and the queue."""

import logging
import os
import random
import socket
import time
from dataclasses import asdict, dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from extraction import pdf

from . import intake, stores
from .models import Attempt, Bundle, Job, Rejection, SubmissionSwitch, idempotency_key, input_storage_name
from .providers import ProviderError, get_provider
from .providers.base import load_report, save_report
from .providers.retry import backoff_delay, next_wait

log = logging.getLogger(__name__)
DAMAGED_DOWNLOAD = ("asset_mismatch", "download_failed")


@dataclass
class IntakeResult:
    """What `submit_bundle` tells the submitter, per file."""

    path: str
    accepted: bool
    correlation_id: str = ""
    job_id: int | None = None
    created: bool = False
    error_code: str = ""
    message: str = ""

    def as_dict(self) -> dict:
        keys = ("path", "accepted", "correlation_id", "job_id") if self.accepted else (
            "path", "accepted", "error_code", "message")
        return {k: v for k, v in asdict(self).items() if k in keys}


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def submit_bundle(stream, *, filename: str, submitted_by: str, case_label: str = "", at=None) -> IntakeResult:
    """Validate, store and create Bundle + Job, or record a Rejection; the same bytes give the same job."""
    display = os.path.basename(filename or "")[:255]
    try:
        staged = intake.stage(stream)
    except pdf.Refusal as refusal:
        return _reject(refusal, display, submitted_by, size=getattr(refusal, "seen", 0), sha256="", at=at)
    try:
        accepted = intake.validate(staged)
        return _accept(accepted, display, submitted_by, case_label, at or timezone.now())
    except pdf.Refusal as refusal:
        return _reject(refusal, display, submitted_by, size=staged.size, sha256=staged.sha256, at=at)
    finally:
        staged.path.unlink(missing_ok=True)


def refuse_oversized_upload(filename: str, seen: int, submitted_by: str) -> IntakeResult:
    """An HTTP upload cut off at the size limit before intake saw it."""
    refusal = intake.TooLarge(seen, settings.PAGETRAIL_MAX_UPLOAD_BYTES)
    return _reject(refusal, os.path.basename(filename or "")[:255], submitted_by, size=seen, sha256="", at=None)


def _reject(refusal, display, submitted_by, *, size, sha256, at) -> IntakeResult:
    Rejection.objects.create(code=refusal.code, message=refusal.message, size=size, sha256=sha256,
                             original_filename=display, submitted_by=submitted_by[:150],
                             created_at=at or timezone.now())
    log.info("rejected %s: %s", display, refusal.code)
    return IntakeResult(path=display, accepted=False, error_code=refusal.code, message=refusal.message)


def _accept(accepted: intake.Accepted, display, submitted_by, case_label, at) -> IntakeResult:
    staged, provider = accepted.staged, get_provider(settings.PAGETRAIL_PROVIDER)
    name = input_storage_name(staged.sha256)
    stores.store_once(stores.inputs(), name, staged.path, staged.sha256)
    with transaction.atomic():
        bundle, _ = Bundle.objects.get_or_create(correlation_id=staged.sha256, defaults=dict(
            size=staged.size, page_count=accepted.inspection.pages, mime=accepted.inspection.mime,
            original_filename=display, input_name=name, submitted_by=submitted_by[:150],
            case_label=case_label, created_at=at))
        job, created = Job.objects.get_or_create(
            idempotency_key=idempotency_key(bundle.correlation_id, provider.extractor, provider.version),
            defaults=dict(bundle=bundle, provider=provider.name, extractor=provider.extractor,
                          extractor_version=provider.version, enqueued_at=at, last_woken_at=at,
                          deadline=at + timedelta(seconds=settings.PAGETRAIL_JOB_DEADLINE_SECONDS)))
        if created:
            transaction.on_commit(lambda: enqueue_job(job.pk))
    log.info("accepted %s as job %s (new: %s)", bundle.correlation_id, job.pk, created)
    return IntakeResult(path=display, accepted=True, correlation_id=bundle.correlation_id, job_id=job.pk,
                        created=created)


def enqueue_job(job_id: int) -> None:
    from django_q.tasks import async_task

    async_task("extraction.tasks.run_job", job_id, task_name=f"job-{job_id}-{time.time_ns()}")


def run_job(job_id: int, worker: str | None = None, sleep=time.sleep, rng: random.Random | None = None) -> str:
    """Drive one job as far as it can go now; safe to call twice, concurrently, or late."""
    job = Job.objects.select_related("bundle").get(pk=job_id)
    worker = worker or worker_name()
    token = job.claim(worker)
    if token is None:
        return "not-claimed"
    provider = get_provider(job.provider)
    try:
        if not job.provider_job_id:
            if not SubmissionSwitch.submissions_open():
                job.release(token, hold_for=None)  # woken again when submissions reopen
                return "held"
            job.mark_submitted(_tried(job, Attempt.Kind.SUBMIT, worker, provider, lambda: provider.start(job)))
        return _poll(job, provider, worker, token, sleep, rng)
    except stores.OutputConflict as exc:
        return _fail(job, "output_conflict", str(exc))
    except ProviderError as exc:
        if exc.permanent:
            return _fail(job, exc.code, exc.message)
        return _retry_later(job, token, exc, rng)


def _tried(job: Job, kind: str, worker: str, provider, call, target: str = ""):
    """Run one provider call as a recorded Attempt (status, Retry-After, latency, outcome)."""
    attempt = Attempt.begin(job, kind, worker, target)
    try:
        result = call()
    except ProviderError as exc:
        outcome = Attempt.Outcome.FAILED if exc.permanent else Attempt.Outcome.RETRY
        attempt.record_outcome(outcome, http_status=exc.http_status or provider.last.http_status,
                               retry_after_s=exc.retry_after_s, error_code=exc.code, error_message=exc.message)
        raise
    attempt.record_outcome(Attempt.Outcome.OK, http_status=provider.last.http_status)
    return result


def _poll(job: Job, provider, worker: str, token, sleep, rng) -> str:
    """Check until the provider is done, within this task's budget; then hand back to the scheduler."""
    kind = Attempt.Kind.POLL if provider.remote else Attempt.Kind.EXTRACT
    work_dir, started, polls = stores.job_work_dir(job.pk), time.monotonic(), 0
    while True:
        report = load_report(work_dir) or _tried(job, kind, worker, provider, lambda: provider.check(job, work_dir))
        if report.state != "running":
            save_report(work_dir, report)  # final: a retried download need not ask again
            return _finish(job, provider, worker, report, work_dir)
        job.mark_running()
        if job.past_deadline():
            job.mark_unknown("deadline_passed", "The provider had not finished by the job's deadline.")
            job.release(token, hold_for=timedelta(seconds=settings.PAGETRAIL_REQUEUE_AFTER_SECONDS))
            return "unknown"
        delay = backoff_delay(polls, settings.PAGETRAIL_BACKOFF_BASE_SECONDS, settings.PAGETRAIL_BACKOFF_CAP_SECONDS, rng)
        polls += 1
        if time.monotonic() - started + delay > settings.PAGETRAIL_POLL_BUDGET_SECONDS:
            return _wake_later(job, token, delay, "running")
        sleep(delay)


def _finish(job: Job, provider, worker: str, report, work_dir) -> str:
    from audit.services import record_completion  # the one call from extraction into audit

    if report.state != "completed":
        return _fail(job, report.error_code or report.state,
                     report.error_message or f"The provider reports the job as {report.state}.")
    job.mark_provider_finished()
    files = {asset.key: _fetched(job, provider, worker, asset, work_dir) for asset in report.assets}
    record_completion(job, report, files, attempt_number=job.attempts.count())
    stores.remove_job_work_dir(job.pk)
    return "completed"


def _fetched(job: Job, provider, worker: str, asset, work_dir):
    if not provider.remote:
        return provider.fetch(job, asset, work_dir)
    try:
        return _tried(job, Attempt.Kind.DOWNLOAD, worker, provider, lambda: provider.fetch(job, asset, work_dir),
                      target=asset.key)
    except ProviderError as exc:
        # Only damaged downloads count against the limit; a 429 or 503 is waited out like any other.
        damaged = job.attempts.filter(target=asset.key, error_code__in=DAMAGED_DOWNLOAD).count()
        if exc.code in DAMAGED_DOWNLOAD and damaged >= settings.PAGETRAIL_DOWNLOAD_TRIES:
            raise ProviderError("download_failed", f"Asset downloads kept failing ({exc.message})",
                                permanent=True) from exc
        raise


def _retry_later(job: Job, token, exc: ProviderError, rng) -> str:
    """429, 5xx, timeouts: wait (Retry-After honoured, backoff with jitter), never in this worker."""
    tries = job.attempts.filter(outcome=Attempt.Outcome.RETRY).count()
    delay = next_wait(tries, exc.retry_after_s, base=settings.PAGETRAIL_BACKOFF_BASE_SECONDS,
                      cap=settings.PAGETRAIL_BACKOFF_CAP_SECONDS,
                      retry_after_cap=settings.PAGETRAIL_RETRY_AFTER_CAP_SECONDS, rng=rng)
    if job.past_deadline():
        job.mark_unknown(exc.code, f"Past the deadline after: {exc.message}")
    log.warning("job %s: %s, retrying in %.1fs", job.pk, exc.code, delay)
    return _wake_later(job, token, delay, "retry")


def _wake_later(job: Job, token, delay: float, outcome: str) -> str:
    from django_q.models import Schedule
    from django_q.tasks import schedule

    job.release(token, hold_for=timedelta(seconds=delay))
    # A one-off schedule: the scheduler enqueues it when due (at its next tick, so never early).
    schedule("extraction.tasks.run_job", job.pk, name=f"wake-job-{job.pk}-{time.time_ns()}",
             schedule_type=Schedule.ONCE, repeats=-1, next_run=timezone.now() + timedelta(seconds=delay))
    return outcome


def _fail(job: Job, code: str, message: str) -> str:
    job.mark_failed(code, message)
    stores.remove_job_work_dir(job.pk)
    return "failed"


def reconcile(at=None) -> dict:
    """Re-drive jobs from database state: the queue is only a wake-up call.

    Expired claims (a killed worker, a lost wake-up), queued jobs whose task was lost, and
    `unknown` jobs (re-polled with the same provider job id; never resubmitted under a new key).
    Times are the database's clock unless a test passes `at`.
    """
    quiet = timedelta(seconds=settings.PAGETRAIL_REQUEUE_AFTER_SECONDS)
    due = Job.objects.with_claim_expired(at) | Job.objects.unknown_and_quiet(quiet, at)
    if SubmissionSwitch.submissions_open():
        due = due | Job.objects.never_picked_up(quiet, at)
    return {"woken": wake(due, at)}


def wake(jobs, at=None) -> int:
    """Enqueue one wake-up call per job (guarded, so concurrent reconcilers do not double up)."""
    woken = 0
    for job in jobs.distinct():
        if job.mark_woken(at):
            enqueue_job(job.pk)
            woken += 1
    return woken


def set_submissions(is_open: bool, by: str, reason: str = "") -> bool:
    """The kill switch. Reopening wakes the jobs that waited."""
    changed = SubmissionSwitch.set(is_open, by, reason)
    if changed and is_open:
        wake(Job.objects.filter(status=Job.Status.QUEUED, provider_job_id=""))
    log.warning("submissions %s by %s: %s", "reopened" if is_open else "stopped", by, reason)
    return changed


def replay_unknown(jobs) -> int:
    """Re-drive only `unknown` jobs, with their provider job id and idempotency key."""
    return wake(jobs.filter(status=Job.Status.UNKNOWN))


def sweep_temp() -> dict:
    """Remove temp dirs of jobs that are terminal or unknown to the database, and stale uploads."""
    removed = 0
    root = stores.jobs_dir()
    names = [p.name for p in root.iterdir()] if root.exists() else []
    ids = {int(n) for n in names if n.isdigit()}
    live = set(Job.objects.filter(pk__in=ids).exclude(status__in=Job.TERMINAL).values_list("pk", flat=True))
    for name in names:
        if not name.isdigit() or int(name) not in live:
            stores.remove_job_work_dir(name)
            removed += 1
    cutoff = time.time() - 3600  # an upload still staged after an hour belongs to a dead request
    for part in stores.uploads_dir().glob("*.part"):
        if part.stat().st_mtime < cutoff:
            part.unlink(missing_ok=True)
            removed += 1
    return {"removed": removed}
