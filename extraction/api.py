"""Bundles and jobs in the HTTP API for upstream services (mounted in portal/api.py).

Intake is exactly the admin's; errors are JSON `{"error": {"code", "message"}}` with a stable code.
"""

from typing import Annotated

from django.db import IntegrityError, transaction
from django.shortcuts import get_object_or_404
from ninja import File, Path, Router, Schema, Status
from ninja.files import UploadedFile

from extraction import pdf

from . import intake, services
from .accounts import IdempotencyRecord
from .models import Job

REFUSAL_STATUS = {"too_large": 413, "not_pdf": 415, "empty": 400}
router = Router(tags=["bundles and jobs"])
# An id the database can hold: a larger number is a bad request, not a database overflow (500).
RowId = Annotated[int, Path(ge=1, le=2**63 - 1)]


class ErrorBody(Schema):
    code: str
    message: str


class ErrorOut(Schema):
    error: ErrorBody


class JobOut(Schema):
    id: int
    state: str
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


class SubmitOut(Schema):
    created: bool
    correlation_id: str
    job: JobOut


# 503: the file could not be checked (this machine failed); the same request may pass later.
ERRORS = {code: ErrorOut for code in (400, 401, 404, 409, 413, 415, 422, 429, 503)}


def error(request, status: int, code: str, message: str) -> Status:
    return Status(status, {"error": {"code": code, "message": message}})


@router.post("/bundles", response={200: SubmitOut, 201: SubmitOut, **ERRORS}, summary="Submit a PDF bundle")
def submit(request, file: File[UploadedFile] = None, case_label: str = ""):
    """A multipart `file` part, or the raw PDF as the body with `Content-Type: application/pdf`.
    The same bytes again return the existing job (200). With an `Idempotency-Key`, the same key and
    payload replay the first answer, another payload is 422, and 409 while the first is in progress."""
    if too_large := getattr(request, "upload_too_large", None):
        return _refused(request, services.refuse_oversized_upload(*too_large, submitted_by=_who(request)))
    if file is None and request.content_type != "application/pdf":
        return error(request, 400, "bad_request", "Send a multipart 'file' part or an application/pdf body.")
    try:
        staged = intake.stage(file or request)
    except pdf.Refusal as refusal:
        return _refused(request, services.refuse_oversized_upload(getattr(file, "name", "body"),
                                                                  getattr(refusal, "seen", 0), _who(request)))
    key = request.headers.get("Idempotency-Key")
    if not key:
        return _submitted(request, staged, file, case_label)
    return _idempotent(request, key, staged, lambda: _submitted(request, staged, file, case_label))


def _who(request) -> str:
    return f"api:{request.auth.name}"


def _submitted(request, staged, file, case_label):
    result = services.submit_staged(staged, filename=getattr(file, "name", "") or "", submitted_by=_who(request),
                                    case_label=case_label)
    if result.retryable:
        return error(request, 503, result.error_code, result.message)
    if not result.accepted:
        return _refused(request, result)
    job = Job.objects.select_related("bundle").get(pk=result.job_id)
    body = {"created": result.created, "correlation_id": result.correlation_id, "job": job_document(job)}
    return Status(201 if result.created else 200, body)


def _refused(request, result):
    return error(request, REFUSAL_STATUS.get(result.error_code, 422), result.error_code, result.message)


def _idempotent(request, key: str, staged, handle):
    try:
        with transaction.atomic():
            record = IdempotencyRecord.objects.create(account=request.auth, key=key[:200],
                                                      request_sha256=staged.sha256)
    except IntegrityError:
        staged.path.unlink(missing_ok=True)
        record = IdempotencyRecord.objects.get(account=request.auth, key=key[:200])
        if record.request_sha256 != staged.sha256:
            return error(request, 422, "idempotency_conflict", "This Idempotency-Key was used for another payload.")
        if record.response_status is None:
            return error(request, 409, "in_progress", "The first request with this Idempotency-Key is still running.")
        return Status(record.response_status, record.response_body)
    try:
        answer = handle()
    except BaseException:
        record.delete()  # nothing was answered: the client may try again with the same key
        raise
    if answer.status_code == 503:
        record.delete()  # not checked: the same key must be able to try again, not replay the 503
        return answer
    IdempotencyRecord.objects.filter(pk=record.pk).update(response_status=answer.status_code,
                                                            response_body=answer.value)
    return answer


@router.get("/jobs/{job_id}", response={200: JobOut, **ERRORS}, summary="A job's state and timings")
def get_job(request, job_id: RowId):
    return job_document(get_object_or_404(Job.objects.select_related("bundle"), pk=job_id))


def job_document(job: Job) -> dict:
    attempts = list(job.attempts.values_list("outcome", flat=True))
    return {
        "id": job.pk, "state": job.status, "provider": job.provider, "correlation_id": job.bundle.correlation_id,
        "pages": job.bundle.page_count, "enqueued_at": job.enqueued_at.isoformat(),
        "queue_wait_s": _seconds(job.queue_wait), "extraction_s": _seconds(job.extraction_time),
        "attempts": len(attempts), "retries": attempts.count("retry"),
        "error": {"code": job.error_code, "message": job.error_message} if job.error_code else None,
        "status_url": f"/api/v1/jobs/{job.pk}",
        "manifest_url": f"/api/v1/jobs/{job.pk}/manifest" if job.status == Job.Status.COMPLETED else None,
    }


def _seconds(delta) -> float | None:
    return round(delta.total_seconds(), 3) if delta is not None else None
