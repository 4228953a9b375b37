"""Taking a bundle in: accepted (with a round of jobs for it) or refused, and its further rounds."""

import logging
import os
from dataclasses import asdict, dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from extraction import pdf

from . import intake, stores
from .models import (
    Bundle,
    BundleAccess,
    Job,
    Rejection,
    Submission,
    idempotency_key,
    input_storage_name,
)
from .providers import get_provider
from .reconciler import enqueue_job

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
