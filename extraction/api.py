"""Bundles, submissions and jobs in the HTTP API for upstream services (mounted in portal/api.py).

Intake is exactly the admin's: the request stages the bytes and answers 202 with a submission that an intake
worker decides; errors are JSON `{"error": {"code", "message"}}` with a stable code (core.api.error_body).
"""

import hashlib
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated

from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.utils.dateparse import parse_datetime
from ninja import File, Query, Router, Schema, Status
from ninja.files import UploadedFile
from pydantic import Field

from core import pages
from core.api import RowId, deprecated, error_body, unknown_parameters_refusal
from core.logs import carry

from . import api_declarations, job_evidence
from .accounts import IdempotencyRecord
from .documents import case_labels, job_document, submission_document
from .intake import staging
from .intake.validation import TooLarge
from .models import Job, Submission
from .uploads import too_large

REFUSAL_STATUS = {"too_large": 413}  # the refusals the web tier decides itself; the rest are the worker's
router = Router(tags=["bundles and jobs"])
# The models' states under names of their own, so that a generated client gets `JobState` and `SubmissionState`
# enums (the models' classes would both be published as a bare `Status` and `State`).
JobState = StrEnum("JobState", {s.name: s.value for s in Job.Status})  # type: ignore[misc]
SubmissionState = StrEnum("SubmissionState", {s.name: s.value for s in Submission.State})  # type: ignore[misc]
# A longer label is a 400, never a database error (PostgreSQL refuses what SQLite would have kept).
CaseLabel = Annotated[str, Query(max_length=Submission._meta.get_field("case_label").max_length)]


class ErrorBody(Schema):
    code: str
    message: str


def _absent(value) -> bool:
    return value is None


class RequestError(ErrorBody):
    """Why a request was refused; when one field is at fault, `parameter` names it (a query or path parameter, or a
    header) or `pointer` does (RFC 6901 into a JSON body, or a multipart part's name). Absent otherwise."""

    parameter: str | None = Field(default=None, exclude_if=_absent)
    pointer: str | None = Field(default=None, exclude_if=_absent)


class ErrorOut(Schema):
    error: RequestError


class AssetOut(Schema):
    id: int
    name: str
    sha256: str
    size: int
    content_type: str
    url: str


class JobOut(Schema):
    id: int
    state: JobState
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
    state: SubmissionState
    case_label: str
    case_label_ignored: bool
    status_url: str
    correlation_id: str
    size: int
    received_at: str
    decided_at: str | None
    created: bool | None
    job: JobOut | None
    error: ErrorBody | None
    retryable: bool


def errors(*codes: int) -> dict:
    """The error answers an operation declares beyond those every operation shares (portal/api_edges.py)."""
    return {code: ErrorOut for code in codes}


def error(request, status: int, code: str, message: str, *, parameter: str = "", pointer: str = "") -> Status:
    return Status(status, error_body(code, message, parameter=parameter, pointer=pointer))


@router.post(
    "/bundles",
    response={202: SubmissionOut, **errors(400, 409, 411, 413, 422, 507)},
    summary="Submit a PDF bundle",
    openapi_extra=api_declarations.SUBMIT,
)
# The schema is made from the annotation: `| None` would publish the file part as nullable, so the default says it.
def submit(request, file: File[UploadedFile] = None, case_label: CaseLabel = ""):  # type: ignore[assignment]
    """A multipart body of one `file` part (any other part is 400 naming it), or the raw PDF as the body with
    `Content-Type: application/pdf`; `case_label` is a query parameter.
    Answers 202 with a submission that an intake worker validates: poll its `status_url` until it is
    `accepted` (with its job) or `refused` (with a code). The same bytes again from this account are given its
    existing job (`created: false`); from another account they are a new submission of that account, which
    then sees the job too; each account reads its own first case label (`case_label_ignored` says when this one
    differed). With an `Idempotency-Key`, the same key and payload (bytes and case label) return the same
    submission, another payload is 422, and 409 while the first request is in progress."""
    if unknown := unknown_parameters(request, {"case_label"}) or unknown_parts(request):
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
    carry(staged.sha256)  # this request's later lines, the access line included, name the upload
    key = request.headers.get("Idempotency-Key")
    if not key:
        return _received(request, staged, file, case_label)
    if len(key) > IdempotencyRecord.KEY_MAX:
        staged.path.unlink(missing_ok=True)
        message = f"An Idempotency-Key holds at most {IdempotencyRecord.KEY_MAX} characters; it is never cut."
        return error(request, 400, "bad_idempotency_key", message, parameter="Idempotency-Key")
    fingerprint = payload_fingerprint(staged.sha256, case_label)
    return _idempotent(request, key, fingerprint, staged, lambda: _received(request, staged, file, case_label))


def payload_fingerprint(sha256: str, case_label: str) -> str:
    """What an Idempotency-Key is bound to: the bytes and the case label (the bytes' sha256 alone without a label,
    so keys recorded before labels counted still replay)."""
    return hashlib.sha256(f"{sha256}\n{case_label}".encode()).hexdigest() if case_label else sha256


def unknown_parts(request) -> Status | None:
    """A multipart body holds one part, `file`: another part (a misspelt name, `case_label`, which is a query
    parameter) or a second file is refused naming it, never silently dropped."""
    if not request.content_type.startswith("multipart/"):
        return None
    for name in sorted(set(request.POST) | set(request.FILES)):
        if name != "file":
            message = f"Unknown multipart part '{name[:100]}'; send one part named 'file'"
            hint = " (case_label is a query parameter: ?case_label=...)." if name == "case_label" else "."
            return error(request, 400, "bad_request", message + hint, pointer=name[:100])
    if "file" in request.POST or len(request.FILES.getlist("file")) > 1:
        return error(request, 400, "bad_request", "Send exactly one 'file' part, as a file.", pointer="file")
    return None


@router.get(
    "/submissions/{submission_id}",
    response={200: SubmissionOut, **errors(404)},
    summary="A submission's state: pending, accepted (with its job) or refused",
)
def get_submission(request, submission_id: RowId):
    """404 also for another account's submission, as for jobs."""
    submissions = Submission.objects.visible_to(request.auth).select_related("job__bundle")
    return submission_document(get_object_or_404(submissions, pk=submission_id))


def unknown_parameters(request, known: set[str]) -> Status | None:
    """A misspelt filter is a 400 naming it, never silently ignored (which would list everything)."""
    if refusal := unknown_parameters_refusal(request, known):
        return Status(400, refusal)
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


def _idempotent(request, key: str, fingerprint: str, staged, handle):
    try:
        with transaction.atomic():
            record = IdempotencyRecord.objects.create(account=request.auth, key=key, request_sha256=fingerprint)
    except IntegrityError:
        record = IdempotencyRecord.objects.get(account=request.auth, key=key)
        # A request that died (a killed web server) never answers: its lease runs out and this one takes over.
        if not record.take_over_if_abandoned(fingerprint):
            staged.path.unlink(missing_ok=True)
            return _answered_before(request, record, fingerprint)
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


def _answered_before(request, record, fingerprint: str):
    if record.request_sha256 != fingerprint:
        message = "This Idempotency-Key was used for another payload (other bytes, or another case_label)."
        return error(request, 422, "idempotency_conflict", message)
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
# `offset` pages shift when jobs arrive between two requests (a job repeats, or one is skipped): `cursor` replaced it.
OFFSET_DEPRECATED, OFFSET_SUNSET = datetime(2026, 12, 4, tzinfo=UTC), datetime(2027, 6, 4, tzinfo=UTC)


@router.get("/jobs", response={200: JobPage, **errors(400)}, summary="The caller's jobs, newest first")
def list_jobs(
    request,
    response: HttpResponse,
    state: JobState | None = None,
    correlation_id: str = "",
    case_label: CaseLabel = "",
    since: str = "",
    limit: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 50,
    cursor: str = "",
    offset: Annotated[int, Query(ge=0, le=2**62, deprecated=True)] = 0,  # larger: a database overflow (500)
):
    """Only jobs of bundles this service account submitted; filter by `state`, `correlation_id`, `case_label`
    (exactly as submitted) and `since` (enqueued at or after, ISO 8601); `next` is the URL of the following page
    (its opaque `cursor`), or null. `offset` is deprecated (Deprecation and Sunset headers): use `next`."""
    known = {"state", "correlation_id", "case_label", "since", "limit", "cursor", "offset"}
    if unknown := unknown_parameters(request, known):
        return unknown
    enqueued_from = parse_datetime(since) if since else None
    if since and enqueued_from is None:
        message = "`since` must be an ISO 8601 date and time, e.g. 2026-11-30T12:00Z."
        return error(request, 400, "bad_request", message, parameter="since")
    if cursor and offset:
        message = "Send `cursor` (from `next`) or the deprecated `offset`, not both."
        return error(request, 400, "bad_request", message, parameter="offset")
    jobs = Job.objects.visible_to(request.auth).select_related("bundle").order_by("-pk")
    if state:
        jobs = jobs.filter(status=state)
    if correlation_id:
        jobs = jobs.filter(bundle__correlation_id=correlation_id)
    if case_label:  # the label this account gave, never another's
        jobs = jobs.filter(bundle__accesses__account=request.auth, bundle__accesses__case_label=case_label)
    if enqueued_from:
        jobs = jobs.filter(enqueued_at__gte=enqueued_from)
    counted = jobs.annotate(
        attempt_count=Count("attempts"), retry_count=Count("attempts", filter=Q(attempts__outcome="retry"))
    )
    try:
        page, after = pages.newest_first(counted, limit, cursor=cursor, offset=offset)
    except pages.BadCursor:
        message = "The cursor is not one this list wrote: follow `next` as it was given, unchanged."
        return error(request, 400, "bad_cursor", message, parameter="cursor")
    if offset:
        deprecated(response, OFFSET_DEPRECATED, OFFSET_SUNSET)
    evidence = job_evidence.describe([job.pk for job in page])  # one batch for the page, not a query a row
    labels = case_labels(request.auth, [job.bundle_id for job in page])
    following = request.GET.copy()
    following.pop("offset", None)
    following["cursor"] = after
    return {
        "count": jobs.count(),
        "items": [job_document(job, evidence[job.pk], labels.get(job.bundle_id, "")) for job in page],
        "next": f"{request.path}?{following.urlencode()}" if after else None,
    }


@router.get("/jobs/{job_id}", response={200: JobOut, **errors(404)}, summary="A job's state and timings")
def get_job(request, job_id: RowId):
    """404 also for another account's job: whether it exists is not the caller's to know."""
    job = get_object_or_404(Job.objects.visible_to(request.auth).select_related("bundle"), pk=job_id)
    return job_document(job, case_label=case_labels(request.auth, [job.bundle_id]).get(job.bundle_id, ""))
