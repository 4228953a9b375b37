"""Recording a transition's webhook events: in the transition's own transaction (a committed completion always has
its events), queued once it commits. Called from one place each: `complete_job`, the runner's `_fail`, and
intake's `refuse`."""

import json
from functools import partial

from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from ..accounts import ServiceAccount
from ..documents import case_labels, job_document, submission_document
from ..intake import queue
from ..models import Job
from .events import WebhookEvent

Type = WebhookEvent.Type


def job_finished(job: Job, at=None) -> list[WebhookEvent]:
    """`job.completed` or `job.failed` for every account with a webhook that can see the job (as the API lets it)."""
    kind = Type.JOB_COMPLETED if job.status == Job.Status.COMPLETED else Type.JOB_FAILED
    receivers = receivers_of(job)  # most jobs have none: their document is never built
    if not receivers:
        return []
    document = job_document(job)
    labels = {account.pk: case_labels(account, [job.bundle_id]).get(job.bundle_id, "") for account in receivers}
    return _record(kind, receivers, document, at, labels=labels, job=job)


def submission_refused(submission, at=None) -> list[WebhookEvent]:
    """`submission.refused` for the account that made the submission (staff uploads have none)."""
    account = submission.account
    receivers = [account] if account is not None and _listening(account) else []
    return _record(Type.SUBMISSION_REFUSED, receivers, submission_document(submission), at, submission=submission)


def receivers_of(job: Job) -> list[ServiceAccount]:
    """The accounts listening that see the job; `visible_to` stays the one rule of who sees what."""
    if getattr(job, "listened", True) is False:  # read with the job's row (listened_to): nobody could be told
        return []
    near = _near(job.pk, job.bundle_id).distinct().order_by("pk")
    return [account for account in near if Job.objects.visible_to(account).filter(pk=job.pk).exists()]


def listened_to() -> Exists:
    """Whether an account listening is near a job, to annotate the job's own query with as `listened`: a completion
    whose job nobody listens for (most) then asks for no receivers."""
    return Exists(_near(OuterRef("pk"), OuterRef("bundle_id")))


def _near(job, bundle_id) -> QuerySet[ServiceAccount]:
    """Accounts with a webhook that made the job, or sent its bytes: those that may see it."""
    listening = ServiceAccount.objects.filter(revoked_at__isnull=True).exclude(webhook_url="")
    return listening.filter(Q(jobs=job) | Q(bundle_accesses__bundle_id=bundle_id))


def _listening(account: ServiceAccount) -> bool:
    return bool(account.webhook_url) and account.revoked_at is None


def _record(
    kind: str, receivers: list[ServiceAccount], document: dict, at, labels: dict | None = None, **subject
) -> list[WebhookEvent]:
    """`labels`: each receiver's own case label for a job's document (never the first sender's)."""
    occurred_at = at or timezone.now()
    events = []
    for account in receivers:
        event = WebhookEvent(
            account=account, type=kind, occurred_at=occurred_at, next_attempt_at=occurred_at, **subject
        )
        data = {**document, "case_label": labels[account.pk]} if labels is not None else document
        body = {"id": event.webhook_id, "type": kind, "occurred_at": occurred_at.isoformat(), "data": data}
        event.body = json.dumps(body, separators=(",", ":"))
        event.save()
        events.append(event)
    for event in events:
        transaction.on_commit(partial(queue.enqueue_webhook, event.pk))
    return events
