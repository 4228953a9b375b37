"""Workflows that span bundles, jobs, storage and the queue."""

import logging
import os
import time
from dataclasses import asdict, dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from extraction import pdf

from . import intake, stores
from .models import (
    Attempt,
    Bundle,
    BundleAccess,
    Job,
    Rejection,
    Submission,
    SubmissionSwitch,
    idempotency_key,
    input_storage_name,
)
from .providers import get_provider
from .signals import activity, alert

log = logging.getLogger(__name__)


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
    # Not refused but not checked either: this machine failed (no Rejection); the same file may pass later.
    retryable: bool = False

    def as_dict(self) -> dict:
        keys = (
            ("path", "accepted", "correlation_id", "job_id")
            if self.accepted
            else ("path", "accepted", "error_code", "message", "retryable")
        )
        return {k: v for k, v in asdict(self).items() if k in keys}


def submit_bundle(stream, *, filename: str, submitted_by: str, case_label: str = "", at=None) -> IntakeResult:
    """Stage, then decide in this process (`submit_bundle --here`, tests): the web tier never calls this."""
    try:
        staged = intake.stage(stream)
    except pdf.Refusal as refusal:
        return _reject(
            refusal, display_name(filename), submitted_by, size=getattr(refusal, "seen", 0), sha256="", at=at
        )
    return submit_staged(staged, filename=filename, submitted_by=submitted_by, case_label=case_label, at=at)


def submit_staged(
    staged: intake.StagedUpload, *, filename: str, submitted_by: str, case_label: str = "", account=None, at=None
) -> IntakeResult:
    """A submission of the staged bytes, decided in this process."""
    from . import submitting

    submission = submitting.receive(
        staged,
        filename=filename,
        submitted_by=submitted_by,
        case_label=case_label,
        account=account,
        queued=False,
        at=at,
    )
    return result_of(submitting.decide_here(submission, at))


def result_of(submission: Submission) -> IntakeResult:
    if submission.state == Submission.State.ACCEPTED:
        return IntakeResult(
            path=submission.original_filename,
            accepted=True,
            correlation_id=submission.sha256,
            job_id=submission.job_id,
            created=submission.created,
        )
    return IntakeResult(
        path=submission.original_filename,
        accepted=False,
        error_code=submission.error_code,
        message=submission.error_message,
        retryable=submission.retryable,
    )


def display_name(filename: str) -> str:
    """A client's filename for display only: never a path."""
    return os.path.basename(filename or "")[:255]


def refuse_oversized_upload(filename: str, seen: int, submitted_by: str) -> IntakeResult:
    """An HTTP upload cut off at the size limit before intake saw it."""
    refusal = intake.TooLarge(seen, settings.PAGETRAIL_MAX_UPLOAD_BYTES)
    return _reject(refusal, display_name(filename), submitted_by, size=seen, sha256="", at=None)


def _reject(refusal, display, submitted_by, *, size, sha256, at) -> IntakeResult:
    record_rejection(
        refusal.code, refusal.message, size=size, sha256=sha256, filename=display, submitted_by=submitted_by, at=at
    )
    return IntakeResult(path=display, accepted=False, error_code=refusal.code, message=refusal.message)


def record_rejection(
    code: str, message: str, *, size: int, sha256: str, filename: str, submitted_by: str, at=None
) -> Rejection:
    log.info("rejected %s: %s", filename, code)
    return Rejection.objects.create(
        code=code,
        message=message,
        size=size,
        sha256=sha256,
        original_filename=filename,
        submitted_by=submitted_by[:150],
        created_at=at or timezone.now(),
    )


def accept(accepted: intake.Accepted, submission: Submission, at) -> None:
    """Store the input and create Bundle + Job (and the account's access) with the submission's decision,
    in one transaction; the same bytes again are given the same job."""
    staged, provider = accepted.staged, get_provider(settings.PAGETRAIL_PROVIDER)
    name = input_storage_name(staged.sha256)
    stores.store_once(stores.inputs(), name, staged.path, staged.sha256)
    with transaction.atomic():
        bundle, _ = Bundle.objects.get_or_create(
            correlation_id=staged.sha256,
            defaults=dict(
                size=staged.size,
                page_count=accepted.inspection.pages,
                mime=accepted.inspection.mime,
                original_filename=submission.original_filename,
                input_name=name,
                submitted_by=submission.submitted_by,
                case_label=submission.case_label,
                created_at=at,
            ),
        )
        if submission.account_id is None:
            job, created = Job.objects.get_or_create(
                idempotency_key=idempotency_key(bundle.correlation_id, provider.extractor, provider.version),
                defaults=_job_fields(bundle, provider, at),
            )
        else:  # in the same transaction: no job an account cannot see
            job, created = _round_for_account(bundle, submission.account_id, provider, at)
        if created:
            transaction.on_commit(lambda: enqueue_job(job.pk))
        submission.mark_accepted(job, created, at)
    log.info("accepted %s as job %s (new: %s)", bundle.correlation_id, job.pk, created)


def _round_for_account(bundle: Bundle, account_id: int, provider, at) -> tuple[Job, bool]:
    """The job an account is given for these bytes: the one it was given before, else the first round if
    nobody has one yet, else a round of its own, so that its timings never show an earlier submitter."""
    access = BundleAccess.objects.filter(account_id=account_id, bundle=bundle).select_related("job").first()
    if access:
        return access.job, False
    newest = Job.objects.filter(bundle=bundle).aggregate(n=Max("generation"))["n"]
    generation = 0 if newest is None else newest + 1
    job = Job.objects.create(
        idempotency_key=idempotency_key(bundle.correlation_id, provider.extractor, provider.version, generation),
        account_id=account_id,
        **_job_fields(bundle, provider, at, generation),
    )
    BundleAccess.objects.create(account_id=account_id, bundle=bundle, job=job, created_at=at)
    return job, True


def _job_fields(bundle: Bundle, provider, at, generation: int = 0) -> dict:
    return dict(
        bundle=bundle,
        provider=provider.name,
        extractor=provider.extractor,
        extractor_version=provider.version,
        generation=generation,
        enqueued_at=at,
        last_woken_at=at,
        deadline=at + timedelta(seconds=settings.PAGETRAIL_JOB_DEADLINE_SECONDS),
    )


class InputGone(Exception):
    """The input was deleted under its retention policy: nothing left to extract from."""


def request_reextraction(bundle: Bundle, at=None) -> Job:
    """A new job for the same bundle (same correlation id, next round, its own key and outputs)."""
    if bundle.input_deleted_at:
        raise InputGone(f"The input of bundle {bundle.correlation_id[:16]} was deleted under its retention policy.")
    at, provider = at or timezone.now(), get_provider(settings.PAGETRAIL_PROVIDER)
    with transaction.atomic():
        generation = (Job.objects.filter(bundle=bundle).aggregate(n=Max("generation"))["n"] or 0) + 1
        key = idempotency_key(bundle.correlation_id, provider.extractor, provider.version, generation)
        job = Job.objects.create(idempotency_key=key, **_job_fields(bundle, provider, at, generation))
        transaction.on_commit(lambda: enqueue_job(job.pk))
    return job


def enqueue_job(job_id: int) -> None:
    from django_q.tasks import async_task

    # Named: called from the intake worker too, whose own queue would otherwise be the default.
    async_task(
        "extraction.tasks.run_job",
        job_id,
        task_name=f"job-{job_id}-{time.time_ns()}",
        cluster=settings.Q_CLUSTER["name"],
    )


def reconcile(at=None) -> dict:
    """Re-drive jobs from database state: the queue is only a wake-up call.

    Expired claims (a killed worker, a lost wake-up), queued jobs whose task was lost, and
    `unknown` jobs (re-polled with the same provider job id; never resubmitted under a new key).
    Times are the database's clock unless a test passes `at`.
    """
    quiet = timedelta(seconds=settings.PAGETRAIL_REQUEUE_AFTER_SECONDS)
    abandoned = Attempt.close_abandoned(at)
    _alert_newly_late(at)
    due = Job.objects.with_claim_expired(at) | Job.objects.unknown_and_quiet(quiet, at)
    if SubmissionSwitch.submissions_open():
        due = due | Job.objects.never_picked_up(quiet, at)
    from .submitting import redrive

    return {"woken": wake(due, at), "abandoned_attempts": abandoned, "submissions_woken": redrive(at)}


def _alert_newly_late(at=None) -> None:
    """Jobs whose deadline passed since about the last pass (so each is reported once, not every minute)."""
    now = at or timezone.now()
    window = timedelta(minutes=2 * settings.PAGETRAIL_RECONCILE_EVERY_MINUTES)
    for job in Job.objects.active().filter(deadline__lt=now, deadline__gte=now - window):
        alert.send(
            Job,
            kind="job_past_deadline",
            key=f"job-{job.pk}-late",
            link=job.admin_link(),
            message=f"Job {job.pk} is {job.status} past its deadline.",
        )


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
    if changed:
        activity.send(
            SubmissionSwitch,
            actor=by,
            action="kill_switch_changed",
            obj=SubmissionSwitch.current(),
            before={"is_open": not is_open},
            after={"is_open": is_open, "reason": reason},
        )
        state = "reopened" if is_open else "stopped"
        alert.send(
            SubmissionSwitch,
            kind="kill_switch",
            key="kill-switch",
            link="/admin/extraction/submissionswitch/",
            message=f"Submissions {state} by {by}: {reason or 'no reason given'}",
        )
    if changed and is_open:
        wake(Job.objects.filter(status=Job.Status.QUEUED, provider_job_id=""))
    log.warning("submissions %s by %s: %s", "reopened" if is_open else "stopped", by, reason)
    return changed


def replay_unknown(jobs) -> int:
    """Re-drive only `unknown` jobs, with their provider job id and idempotency key."""
    return wake(jobs.filter(status=Job.Status.UNKNOWN))


def sweep_temp() -> dict:
    """Remove temp dirs of jobs that are terminal or unknown to the database, and staged uploads no pending
    submission owns (after a grace period: a request may still be writing one)."""
    removed = 0
    root = stores.jobs_dir()
    names = [p.name for p in root.iterdir()] if root.exists() else []
    ids = {int(n) for n in names if n.isdigit()}
    live = set(Job.objects.filter(pk__in=ids).exclude(status__in=Job.TERMINAL).values_list("pk", flat=True))
    for name in names:
        if not name.isdigit() or int(name) not in live:
            stores.remove_job_work_dir(name)
            removed += 1
    from .submitting import sweep_staged

    return {"removed": removed + sweep_staged()}
