"""The intake worker's decision: claim a pending Submission, validate it, then accept it (its bundle and job) or
refuse it; every Submission transition and every Rejection of intake is made here."""

import logging
from dataclasses import asdict, dataclass
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from core import stores
from core.logs import job_context
from extraction import pdf

from .. import worker_stop
from ..models import Bundle, Job, Rejection, input_storage_name
from ..signals import alert
from ..webhooks import recording as webhooks
from . import attached, queue, rounds, validation
from .submission import MAX_TRIES, Submission

log = logging.getLogger(__name__)

RETRY = "retry"  # decide's answer when the same submission must be tried again at once
CRASHED = (
    "The file could not be checked: the PDF validator failed twice ({cause}). Nothing was kept; "
    "send the file again later."
)
WORKER_LOST = "its worker stopped (killed or timed out) while validating"
LOST = "The uploaded bytes were lost before they could be checked (its host's temp was cleared). Send it again."
STORAGE = "The input store could not take the file now ({cause}). Nothing was kept; send it again later."
INTAKE_FAILING = "intake_failing"  # the alert kind of refusals that are this machine's fault
NOT_STORED_CODE = "storage_unavailable"


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

    @classmethod
    def refused(cls, path: str, refusal: pdf.Refusal) -> "IntakeResult":
        return cls(path=path, accepted=False, error_code=refusal.code, message=refusal.message)

    def as_dict(self) -> dict:
        keys = (
            ("path", "accepted", "correlation_id", "job_id")
            if self.accepted
            else ("path", "accepted", "error_code", "message", "retryable")
        )
        return {k: v for k, v in asdict(self).items() if k in keys}


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


def decide_queued(submission_id: int) -> str:
    """The intake task's decision: one try, queued again at once when one more try is due."""
    outcome = decide(submission_id)
    if outcome == RETRY:
        queue.enqueue_decision(Submission.objects.get(pk=submission_id))
    return outcome


def decide_here(submission: Submission, at=None) -> Submission:
    """Decide in this process (`submit_bundle --here`, tests, the benchmark): the retry at once, not queued."""
    for _ in range(MAX_TRIES + 1):
        submission = Submission.objects.get(pk=submission.pk)
        if _decide(submission, at) != RETRY:
            break
    if not submission.is_decided:  # the transitions this process won are in the copy; another's are not
        submission.refresh_from_db()
    return submission


def decide(submission_id: int, at=None) -> str:
    """One try at deciding a pending submission; harmless when repeated. Returns its state, or RETRY when
    the PDF child failed for reasons of this machine and one more try is due (the caller re-queues it)."""
    return _decide(Submission.objects.get(pk=submission_id), at)


def _decide(submission: Submission, at) -> str:
    if worker_stop.stopping():
        return RETRY  # taken after its worker was told to stop: queued again for another, untried
    if not submission.claim(at):
        return submission.state  # decided already, or another worker holds it
    if submission.tries > MAX_TRIES:
        return refuse(submission, "validator_crashed", CRASHED.format(cause=WORKER_LOST), retryable=True, at=at)
    if not submission.staged_path.exists():
        return refuse(submission, "staged_upload_lost", LOST, retryable=True, at=at)
    staged = validation.StagedUpload(path=submission.staged_path, size=submission.size, sha256=submission.sha256)
    with job_context(submission.sha256), worker_stop.holding(partial(hand_back, submission)):
        return _validate_and_decide(submission, staged, at)


def _validate_and_decide(submission: Submission, staged: validation.StagedUpload, at) -> str:
    try:
        accept(validation.validate(staged, at), submission, at or timezone.now())
    except pdf.Refusal as refusal:
        return refuse(submission, refusal.code, refusal.message, at=at)
    except pdf.WorkerStopping:
        submission.hand_back()
        return RETRY
    except pdf.SandboxError as exc:
        return _after_crash(submission, exc, at)
    except stores.STORAGE_ERRORS as exc:
        log.warning("could not store submission %s: %s", submission.pk, exc)
        return refuse(
            submission, "storage_unavailable", STORAGE.format(cause=type(exc).__name__), retryable=True, at=at
        )
    staged.path.unlink(missing_ok=True)
    return submission.state


def _after_crash(submission: Submission, exc: pdf.SandboxError, at) -> str:
    """A child that failed for reasons of this machine: one more try, then refused as `validator_crashed`."""
    log.warning(
        "could not check submission %s (try %s): %s: %s", submission.pk, submission.tries, exc.code, exc.message
    )
    if submission.tries < MAX_TRIES and submission.release():
        return RETRY
    cause = exc.message.rstrip(".")
    return refuse(submission, "validator_crashed", CRASHED.format(cause=cause), retryable=True, at=at)


def accept(accepted: validation.Accepted, submission: Submission, at) -> None:
    """Store the input and create Bundle + Job (and the account's access) with the submission's decision,
    in one transaction; the same bytes again are given the same job."""
    staged = accepted.staged
    stored_now = store_input(staged)
    try:
        bundle, job, created = _record(accepted, submission, at, new_bundle=stored_now)
    except IntegrityError:
        if not stored_now:
            raise
        # Bytes stored anew whose bundle exists after all: its input was deleted under its retention policy, or
        # a worker given the same bytes committed the bundle first. Undone; looked up this time.
        bundle, job, created = _record(accepted, submission, at, new_bundle=False)
    with job_context(bundle.correlation_id, job.pk):
        log.info("submission %s accepted as job %s (new: %s)", submission.pk, job.pk, created)
        if created:
            attached.submit_attached_pdfs(bundle, staged.path, submission, at)


def store_input(staged: validation.StagedUpload) -> bool:
    """Store the checked bytes under their hash; True if this call stored them, False for a file stored before.

    Expected new: most inputs are, so on S3 one conditional PutObject and no HEAD first. A repeated file costs
    its upload once more, refused by the bucket (412), then the read that checks the stored bytes are the same.
    """
    return stores.store_once(
        stores.inputs(), input_storage_name(staged.sha256), staged.path, staged.sha256, expect_new=True
    )


def _record(accepted: validation.Accepted, submission: Submission, at, new_bundle: bool) -> tuple[Bundle, Job, bool]:
    """The bundle, its job and the submission's decision, in one transaction.

    `new_bundle` (this call stored the bytes, so no bundle has them, but for the rare cases `accept` undoes):
    the bundle and its first job are inserted without a lookup or a savepoint before each; a bundle that exists
    after all fails the transaction on its unique correlation id, never gives these bytes a second one.
    """
    fields = _bundle_fields(accepted, submission, at)
    with transaction.atomic():
        if new_bundle:
            bundle = Bundle.objects.create(correlation_id=accepted.staged.sha256, **fields)
            job, created = rounds.first_job(bundle, submission.account_id, at, submission.case_label), True
        else:
            bundle, _ = Bundle.objects.get_or_create(correlation_id=accepted.staged.sha256, defaults=fields)
            job, created = rounds.job_for(bundle, submission.account_id, at, submission.case_label)
        submission.mark_accepted(job, created, at)
    return bundle, job, created


def _bundle_fields(accepted: validation.Accepted, submission: Submission, at) -> dict:
    return dict(
        size=accepted.staged.size,
        page_count=accepted.inspection.pages,
        mime=accepted.inspection.mime,
        original_filename=submission.original_filename,
        submitted_by=submission.submitted_by,
        case_label=submission.case_label,
        created_at=at,
        intake_policy=accepted.verdict.policy,
        intake_found=accepted.verdict.found,
        attachments=accepted.verdict.attachments,
        parent_id=submission.parent_bundle_id,  # the id it holds: no read of the parent's row
    )


def hand_back(submission: Submission) -> None:
    """A worker forced to exit mid-validation gives the submission back, untried, and queues it for another."""
    if submission.hand_back():
        queue.enqueue_decision(submission)


def refuse(submission: Submission, code: str, message: str, retryable: bool = False, at=None) -> str:
    """Refuse with a code and a sentence, record the Rejection, and delete the staged bytes. A refusal for a fault
    of this machine (`retryable`: a store, the validator, the host's temp) is a warning and an alert too."""
    with transaction.atomic():
        if submission.mark_refused(code, message, retryable, at):
            _record_rejection(
                code,
                message,
                size=submission.size,
                sha256=submission.sha256,
                filename=submission.original_filename,
                submitted_by=submission.submitted_by,
                at=at,
                level=logging.WARNING if retryable else logging.INFO,
            )
            webhooks.submission_refused(submission, at)
            if retryable:
                _alert_machine_fault(submission, code, message)
    submission.staged_path.unlink(missing_ok=True)
    return submission.state


def _alert_machine_fault(submission: Submission, code: str, message: str) -> None:
    """One open alert per code: a burst of uploads refused while a store is down is one alert, each counted."""
    alert.send(
        Submission,
        kind=INTAKE_FAILING,
        key=f"intake-failing-{code}",
        link=f"{reverse('admin:extraction_submission_changelist')}?error_code={code}",
        message=f"Uploads are refused for a fault of this machine ({code}), {submission.original_filename} first: "
        f"{message}",
    )


NOT_STAGED = (
    "The web server could not take the upload: its temp area (PAGETRAIL_TEMP_DIR) is full or read-only; nothing "
    "was kept. The sender was answered 507 and may send it again later."
)


def refuse_not_staged(filename: str, size: int, submitted_by: str, at=None) -> None:
    """The web tier refused an upload for lack of space (a 507; no submission exists): recorded as a Rejection
    (counted by /metrics by its code) and alerted like intake's refusals for a fault of this machine. The 507 is
    answered even when the database cannot record it."""
    try:
        _record_rejection(
            NOT_STORED_CODE,
            NOT_STAGED,
            size=size,
            sha256="",
            filename=filename,
            submitted_by=submitted_by,
            at=at,
            level=logging.WARNING,
        )
        alert.send(
            Rejection,
            kind=INTAKE_FAILING,
            key=f"intake-failing-web-{NOT_STORED_CODE}",
            link=f"{reverse('admin:extraction_rejection_changelist')}?code={NOT_STORED_CODE}",
            message=f"Uploads are refused by the web server for lack of space (507 {NOT_STORED_CODE}), "
            f"{filename or 'an upload'} first: {NOT_STAGED}",
        )
    except DatabaseError:
        log.exception("the web tier's refusal of %s could not be recorded", filename)


def refuse_too_large(filename: str, seen: int, submitted_by: str, at=None) -> validation.TooLarge:
    """The one record of an upload over the size limit, whether cut off while staging or before (its declared
    length, the HTTP layer's cut-off); no submission exists for it."""
    refusal = validation.TooLarge(seen, settings.PAGETRAIL_MAX_UPLOAD_BYTES)
    _record_rejection(
        refusal.code, refusal.message, size=seen, sha256="", filename=filename, submitted_by=submitted_by, at=at
    )
    return refusal


def _record_rejection(
    code: str, message: str, *, size: int, sha256: str, filename: str, submitted_by: str, at=None, level=logging.INFO
) -> Rejection:
    log.log(level, "rejected %s: %s", filename, code)
    return Rejection.objects.create(
        code=code,
        message=message,
        size=size,
        sha256=sha256,
        original_filename=filename,
        submitted_by=submitted_by[:150],
        created_at=at or timezone.now(),
    )


def redrive(at=None) -> int:
    """The reconciler's part: wake pending submissions whose worker died or whose task was lost."""
    quiet = timedelta(seconds=settings.PAGETRAIL_REQUEUE_AFTER_SECONDS)
    woken = 0
    for submission in Submission.objects.due(quiet, at):
        if submission.mark_woken(at):
            queue.enqueue_decision(submission)
            woken += 1
            with job_context(submission.sha256):
                log.info("re-drove submission %s (its worker died or its task was lost)", submission.pk)
    return woken
