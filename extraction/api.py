"""Bundles, submissions and jobs in the HTTP API for upstream services (mounted in portal/api.py).

Intake is exactly the admin's: the request stages the bytes and answers 202 with a submission that an intake
worker decides; errors are JSON `{"error": {"code", "message"}}` with a stable code.
"""

from typing import Annotated

from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.http import JsonResponse
from django.shortcuts import get_object_or_404
from django.utils.dateparse import parse_datetime
from ninja import File, Query, Router, Schema, Status
from ninja.files import UploadedFile

from core.api import RowId, unknown_parameters_message

from . import job_evidence
from .accounts import IdempotencyRecord
from .documents import job_document, submission_document
from .intake import staging
from .intake.validation import TooLarge
from .models import Job, Submission
from .uploads import too_large

REFUSAL_STATUS = {"too_large": 413}  # the refusals the web tier decides itself; the rest are the worker's
router = Router(tags=["bundles and jobs"])


class ErrorBody(Schema):
    code: str
    message: str


class ErrorOut(Schema):
    error: ErrorBody


class AssetOut(Schema):
    id: int
    name: str
    sha256: str
    size: int
    content_type: str
    url: str


class JobOut(Schema):
    id: int
    state: str
    case_label: str
    provider: str
    correlation_id: str
    pages: int
    enqueued_at: str
    queue_wait_s: float | None
    extraction_s: float | None
    attempts: int
    retries: int
    error: ErrorBody | None
    status_url: str
    manifest_url: str | None
    manifest_id: int | None
    assets: list[AssetOut]


class SubmissionOut(Schema):
    id: int
    state: str
    status_url: str
    correlation_id: str
    size: int
    received_at: str
    decided_at: str | None
    created: bool | None
    job: JobOut | None
    error: ErrorBody | None
    retryable: bool


# 507: the upload could not be stored (a full or read-only temp); nothing was kept, the same request may pass later.
ERRORS = {code: ErrorOut for code in (400, 401, 404, 409, 411, 413, 422, 429, 507)}


def error(request, status: int, code: str, message: str) -> Status:
    return Status(status, {"error": {"code": code, "message": message}})


RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before trying again.", "schema": {"type": "integer"}}}


@router.post(
    "/bundles",
    response={202: SubmissionOut, **ERRORS},
    summary="Submit a PDF bundle",
    openapi_extra={"responses": {409: {"headers": RETRY_AFTER}}},
)
# The schema is made from the annotation: `| None` would publish the file part as nullable, so the default says it.
def submit(request, file: File[UploadedFile] = None, case_label: str = ""):  # type: ignore[assignment]
    """A multipart `file` part, or the raw PDF as the body with `Content-Type: application/pdf`.
    Answers 202 with a submission that an intake worker validates: poll its `status_url` until it is
    `accepted` (with its job) or `refused` (with a code). The same bytes again from this account are given its
    existing job (`created: false`); from another account they are a new submission of that account, which
    then sees the job too. With an `Idempotency-Key`, the same key and payload return the same submission,
    another payload is 422, and 409 while the first request is in progress."""
    if unknown := unknown_parameters(request, {"case_label"}):
        return unknown
    if cut_off := too_large(request):
        refusal = staging.refuse_cut_off(*cut_off, submitted_by=_who(request))
        return _refused(request, refusal.code, refusal.message)
    empty = file is None and not int(request.META.get("CONTENT_LENGTH") or 0)  # refused as `empty`, whatever its type
    if file is None and not empty and request.content_type != "application/pdf":
        return error(request, 400, "bad_request", "Send a multipart 'file' part or an application/pdf body.")
    try:
        staged = staging.stage(file or request, filename=getattr(file, "name", "body"), submitted_by=_who(request))
    except TooLarge as refusal:  # recorded as it was cut off
        return _refused(request, refusal.code, refusal.message)
    key = request.headers.get("Idempotency-Key")
    if not key:
        return _received(request, staged, file, case_label)
    if len(key) > IdempotencyRecord.KEY_MAX:
        staged.path.unlink(missing_ok=True)
        return error(
            request,
            400,
            "bad_idempotency_key",
            f"An Idempotency-Key holds at most {IdempotencyRecord.KEY_MAX} characters; it is never cut.",
        )
    return _idempotent(request, key, staged, lambda: _received(request, staged, file, case_label))


@router.get(
    "/submissions/{submission_id}",
    response={200: SubmissionOut, **ERRORS},
    summary="A submission's state: pending, accepted (with its job) or refused",
)
def get_submission(request, submission_id: RowId):
    """404 also for another account's submission, as for jobs."""
    submissions = Submission.objects.visible_to(request.auth).select_related("job__bundle")
    return submission_document(get_object_or_404(submissions, pk=submission_id))


def unknown_parameters(request, known: set[str]) -> Status | None:
    """A misspelt filter is a 400 naming it, never silently ignored (which would list everything)."""
    if message := unknown_parameters_message(request, known):
        return error(request, 400, "bad_request", message)
    return None


def _who(request) -> str:
    return f"api:{request.auth.name}"


def _received(request, staged, file, case_label):
    submission = staging.receive(
        staged,
        filename=getattr(file, "name", "") or "",
        submitted_by=_who(request),
        case_label=case_label,
        account=request.auth,
    )
    if submission.state == Submission.State.REFUSED:  # decided here (an empty body): an error, like too_large
        return _refused(request, submission.error_code, submission.error_message)
    return Status(202, submission_document(submission))


def _refused(request, code: str, message: str):
    return error(request, REFUSAL_STATUS.get(code, 422), code, message)


def _idempotent(request, key: str, staged, handle):
    try:
        with transaction.atomic():
            record = IdempotencyRecord.objects.create(account=request.auth, key=key, request_sha256=staged.sha256)
    except IntegrityError:
        record = IdempotencyRecord.objects.get(account=request.auth, key=key)
        # A request that died (a killed web server) never answers: its lease runs out and this one takes over.
        if not record.take_over_if_abandoned(staged.sha256):
            staged.path.unlink(missing_ok=True)
            return _answered_before(request, record, staged)
    try:
        answer = handle()
    except BaseException:
        record.delete()  # nothing was answered: the client may try again with the same key
        raise
    submission_id = answer.value.get("id") if answer.status_code == 202 else None
    IdempotencyRecord.objects.filter(pk=record.pk).update(
        response_status=answer.status_code, response_body=answer.value, submission_id=submission_id
    )
    return answer


IN_PROGRESS_RETRY_SECONDS = 1  # staging a body takes about as long as sending it: most first requests end soon


def in_progress() -> JsonResponse:
    answer = JsonResponse(
        {"error": {"code": "in_progress", "message": "The first request with this Idempotency-Key is still running."}},
        status=409,
    )
    answer["Retry-After"] = str(IN_PROGRESS_RETRY_SECONDS)
    return answer


def _answered_before(request, record, staged):
    if record.request_sha256 != staged.sha256:
        return error(request, 422, "idempotency_conflict", "This Idempotency-Key was used for another payload.")
    if record.response_status is None:
        return in_progress()
    if record.submission_id:  # the same submission, as it is now
        submission = Submission.objects.select_related("job__bundle").get(pk=record.submission_id)
        return Status(record.response_status, submission_document(submission))
    return Status(record.response_status, record.response_body)


class JobPage(Schema):
    count: int
    next: str | None
    items: list[JobOut]


PAGE_MAX = 200


@router.get("/jobs", response={200: JobPage, **ERRORS}, summary="The caller's jobs, newest first")
def list_jobs(
    request,
    state: Job.Status | None = None,
    correlation_id: str = "",
    case_label: str = "",
    since: str = "",
    limit: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
):
    """Only jobs of bundles this service account submitted; filter by `state`, `correlation_id`, `case_label`
    (exactly as submitted) and `since` (enqueued at or after, ISO 8601); `next` is the URL of the following page,
    or null."""
    known = {"state", "correlation_id", "case_label", "since", "limit", "offset"}
    if unknown := unknown_parameters(request, known):
        return unknown
    enqueued_from = parse_datetime(since) if since else None
    if since and enqueued_from is None:
        return error(request, 400, "bad_request", "`since` must be an ISO 8601 date and time, e.g. 2026-11-30T12:00Z.")
    jobs = Job.objects.visible_to(request.auth).select_related("bundle").order_by("-pk")
    if state:
        jobs = jobs.filter(status=state)
    if correlation_id:
        jobs = jobs.filter(bundle__correlation_id=correlation_id)
    if case_label:
        jobs = jobs.filter(bundle__case_label=case_label)
    if enqueued_from:
        jobs = jobs.filter(enqueued_at__gte=enqueued_from)
    count = jobs.count()
    page = list(
        jobs.annotate(
            attempt_count=Count("attempts"), retry_count=Count("attempts", filter=Q(attempts__outcome="retry"))
        )[offset : offset + limit]
    )
    evidence = job_evidence.describe([job.pk for job in page])  # one batch for the page, not a query a row
    following = request.GET.copy()
    following["offset"] = offset + limit
    return {
        "count": count,
        "items": [job_document(job, evidence[job.pk]) for job in page],
        "next": f"{request.path}?{following.urlencode()}" if offset + limit < count else None,
    }


@router.get("/jobs/{job_id}", response={200: JobOut, **ERRORS}, summary="A job's state and timings")
def get_job(request, job_id: RowId):
    """404 also for another account's job: whether it exists is not the caller's to know."""
    return job_document(get_object_or_404(Job.objects.visible_to(request.auth).select_related("bundle"), pk=job_id))
