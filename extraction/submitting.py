"""Intake in two steps: the web tier receives (stream, hash, record a pending submission); an intake worker
decides (validate in the limited PDF child, then accept or refuse). No PDF is parsed in a web process."""

import logging
import time
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from extraction import pdf
from portal.logs import job_context

from . import bundle_intake, intake, stores, worker_stop
from .submissions import MAX_TRIES, Submission

log = logging.getLogger(__name__)

RETRY = "retry"  # decide's answer when the same submission must be tried again at once
CRASHED = (
    "The file could not be checked: the PDF validator failed twice ({cause}). Nothing was kept; "
    "send the file again later."
)
WORKER_LOST = "its worker stopped (killed or timed out) while validating"
LOST = "The uploaded bytes were lost before they could be checked (its host's temp was cleared). Send it again."
STORAGE = "The input store could not take the file now ({cause}). Nothing was kept; send it again later."


def storage_errors() -> tuple[type[BaseException], ...]:
    """What a full, read-only or unreachable store raises: OSError, and S3's own errors when it is installed."""
    try:
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:
        return (OSError,)
    return (OSError, BotoCoreError, ClientError)


def receive(
    staged: intake.StagedUpload,
    *,
    filename: str,
    submitted_by: str,
    case_label: str = "",
    account=None,
    queued: bool = True,
    at=None,
) -> Submission:
    """Record the staged bytes as a pending submission and queue its decision once the transaction commits
    (unless the caller decides it itself: `queued=False`).

    An empty upload is refused here (nothing to validate), with its Rejection, like every refusal."""
    submission = Submission.objects.create(
        staged_name=staged.path.name,
        queue=settings.PAGETRAIL_INTAKE_QUEUE,
        size=staged.size,
        sha256=staged.sha256,
        original_filename=bundle_intake.display_name(filename),
        submitted_by=submitted_by[:150],
        case_label=case_label,
        account=account,
        created_at=at or timezone.now(),
        last_woken_at=at or timezone.now(),
    )
    if staged.size == 0:
        refuse(submission, "empty", "The file is empty.", at=at)
    elif queued:
        transaction.on_commit(lambda: enqueue(submission))
    return submission


def enqueue(submission: Submission) -> None:
    from django_q.tasks import async_task

    async_task(
        "extraction.tasks.decide_submission",
        submission.pk,
        cluster=submission.queue,
        task_name=f"submission-{submission.pk}-{time.time_ns()}",
    )


def decide(submission_id: int, at=None) -> str:
    """One try at deciding a pending submission; harmless when repeated. Returns its state, or RETRY when
    the PDF child failed for reasons of this machine and one more try is due (the caller re-queues it)."""
    submission = Submission.objects.get(pk=submission_id)
    if worker_stop.stopping():
        return RETRY  # taken after its worker was told to stop: queued again for another, untried
    if not submission.claim(at):
        return submission.state  # decided already, or another worker holds it
    if submission.tries > MAX_TRIES:
        return refuse(submission, "validator_crashed", CRASHED.format(cause=WORKER_LOST), retryable=True, at=at)
    if not submission.staged_path.exists():
        return refuse(submission, "staged_upload_lost", LOST, retryable=True, at=at)
    staged = intake.StagedUpload(path=submission.staged_path, size=submission.size, sha256=submission.sha256)
    with job_context(submission.sha256), worker_stop.holding(partial(hand_back, submission)):
        return _validate_and_decide(submission, staged, at)


def _validate_and_decide(submission: Submission, staged: intake.StagedUpload, at) -> str:
    try:
        accepted = intake.validate(staged)
        bundle_intake.accept(accepted, submission, at or timezone.now())
    except pdf.Refusal as refusal:
        return refuse(submission, refusal.code, refusal.message, at=at)
    except pdf.WorkerStopping:
        submission.hand_back()
        return RETRY
    except pdf.SandboxError as exc:
        log.warning(
            "could not check submission %s (try %s): %s: %s", submission.pk, submission.tries, exc.code, exc.message
        )
        if submission.tries < MAX_TRIES and submission.release():
            return RETRY
        return refuse(
            submission, "validator_crashed", CRASHED.format(cause=exc.message.rstrip(".")), retryable=True, at=at
        )
    except storage_errors() as exc:
        log.warning("could not store submission %s: %s", submission.pk, exc)
        return refuse(
            submission, "storage_unavailable", STORAGE.format(cause=type(exc).__name__), retryable=True, at=at
        )
    staged.path.unlink(missing_ok=True)
    return submission.state


def hand_back(submission: Submission) -> None:
    """A worker forced to exit mid-validation gives the submission back, untried, and queues it for another."""
    if submission.hand_back():
        enqueue(submission)


def refuse(submission: Submission, code: str, message: str, retryable: bool = False, at=None) -> str:
    """Refuse with a code and a sentence, record the Rejection, and delete the staged bytes."""
    with transaction.atomic():
        if submission.mark_refused(code, message, retryable, at):
            bundle_intake.record_rejection(
                code,
                message,
                size=submission.size,
                sha256=submission.sha256,
                filename=submission.original_filename,
                submitted_by=submission.submitted_by,
                at=at,
            )
    submission.staged_path.unlink(missing_ok=True)
    return submission.state


def decide_here(submission: Submission, at=None) -> Submission:
    """Decide in this process (`submit_bundle --here`, tests, the benchmark): the retry at once, not queued."""
    for _ in range(MAX_TRIES + 1):
        if decide(submission.pk, at) != RETRY:
            break
    submission.refresh_from_db()
    return submission


def redrive(at=None) -> int:
    """The reconciler's part: wake pending submissions whose worker died or whose task was lost."""
    quiet = timedelta(seconds=settings.PAGETRAIL_REQUEUE_AFTER_SECONDS)
    woken = 0
    for submission in Submission.objects.due(quiet, at):
        if submission.mark_woken(at):
            enqueue(submission)
            woken += 1
    return woken


def sweep_staged(now: float | None = None) -> int:
    """Remove staged uploads that no pending submission owns and nobody wrote to for the grace period
    (a request that died mid-body, or a file whose submission was decided but not deleted)."""
    cutoff = (now or time.time()) - settings.PAGETRAIL_STAGED_GRACE_SECONDS
    owned = set(Submission.objects.filter(state=Submission.State.PENDING).values_list("staged_name", flat=True))
    removed = 0
    for part in stores.uploads_dir().glob("*.part"):
        try:
            stale = part.name not in owned and part.stat().st_mtime < cutoff
        except FileNotFoundError:
            continue
        if stale:
            part.unlink(missing_ok=True)
            removed += 1
    return removed
