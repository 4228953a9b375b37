"""The documents the API answers for a job and a submission, and every webhook event carries (one shape)."""

from . import job_evidence
from .accounts import BundleAccess
from .intake.submission import Submission
from .models import Job


def case_labels(account, bundle_ids) -> dict[int, str]:
    """The label `account` gave each bundle, in one query: never another account's (BundleAccess.case_label)."""
    accesses = BundleAccess.objects.filter(account=account, bundle_id__in=set(bundle_ids))
    return dict(accesses.values_list("bundle_id", "case_label"))


def job_document(job: Job, evidence: dict | None = None, case_label: str | None = None) -> dict:
    """`case_label`: the reader's own label (case_labels); None for staff, who read the bundle's."""
    if hasattr(job, "attempt_count") and hasattr(job, "retry_count"):  # counted in the list's one query
        attempts, retries = job.attempt_count, job.retry_count
    else:
        outcomes = list(job.attempts.values_list("outcome", flat=True))
        attempts, retries = len(outcomes), outcomes.count("retry")
    return {
        "id": job.pk,
        "state": job.status,
        "case_label": job.bundle.case_label if case_label is None else case_label,
        "provider": job.provider,
        "correlation_id": job.bundle.correlation_id,
        "pages": job.bundle.page_count,
        "enqueued_at": job.enqueued_at.isoformat(),
        "queue_wait_s": _seconds(job.queue_wait),
        "extraction_s": _seconds(job.extraction_time),
        "attempts": attempts,
        "retries": retries,
        "error": {"code": job.error_code, "message": job.error_message} if job.error_code else None,
        "status_url": f"/api/v1/jobs/{job.pk}",
        "manifest_url": f"/api/v1/jobs/{job.pk}/manifest" if job.status == Job.Status.COMPLETED else None,
        **(evidence if evidence is not None else job_evidence.describe([job.pk])[job.pk]),
    }


def _seconds(delta) -> float | None:
    return round(delta.total_seconds(), 3) if delta is not None else None


def submission_document(submission: Submission) -> dict:
    refused = submission.state == Submission.State.REFUSED
    job = submission.job
    label = None
    if job is not None and submission.account_id is not None:
        label = case_labels(submission.account_id, [job.bundle_id]).get(job.bundle_id, "")
    return {
        "id": submission.pk,
        "state": submission.state,
        "case_label": submission.case_label,
        # An account's label is the one it first sent the bytes with: sent again, they keep it, and the job shows it.
        "case_label_ignored": job is not None
        and (job.bundle.case_label if label is None else label) != submission.case_label,
        "status_url": f"/api/v1/submissions/{submission.pk}",
        "correlation_id": submission.sha256,
        "size": submission.size,
        "received_at": submission.created_at.isoformat(),
        "decided_at": submission.decided_at.isoformat() if submission.decided_at else None,
        "created": submission.created if submission.job_id else None,
        "job": job_document(job, case_label=label) if job is not None else None,
        "error": {"code": submission.error_code, "message": submission.error_message} if refused else None,
        "retryable": submission.retryable,
    }
