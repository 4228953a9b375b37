"""Page previews asked for in the database, not only on the queue: a lost task is asked for again.

A manifest's previews are one task on the previews queue. A flushed Redis, or a task that failed on a dropped
database connection (django-q2 acknowledges failures and does not retry them), would leave them unmade for good
while the review page waited. So the manifest's writing transaction records a PreviewRequest beside it; the task
marks progress after each batch and the outcome at the end; and each reconciler pass asks again, once, for every
request without progress for PAGETRAIL_PREVIEWS_OVERDUE_MINUTES. A task asked twice is harmless: the second finds
the pages stored and ends. Page hints (audit/review/page_hints.py) are asked of the same queue the same way, through
the same functions with their own model (`HintRun`).
"""

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from audit.models import Manifest, PreviewRequest
from audit.models.previews import QueuedRequest
from core import display, stored_inputs
from extraction import pdf

log = logging.getLogger(__name__)
Outcome = PreviewRequest.Outcome
# What ends a request for good (previews and page hints alike): another try would fail the same way.
FINAL = (stored_inputs.InputChanged, stored_inputs.InputMissing, pdf.SandboxError)


def final_failure(exc: Exception) -> tuple[str, str]:
    """The code and sentence a request's failure (one of FINAL) is recorded with; a sandbox failure of this machine
    is raised again instead, for the queue to retry."""
    if isinstance(exc, pdf.SandboxError):
        if not exc.permanent:
            raise exc
        return exc.code, exc.message
    if isinstance(exc, stored_inputs.InputMissing):
        return exc.code, str(exc)
    return "input_changed", str(exc)


def overdue_after() -> timedelta:
    return timedelta(minutes=settings.PAGETRAIL_PREVIEWS_OVERDUE_MINUTES)


def ask(manifest: Manifest, enqueue, model: type[QueuedRequest] = PreviewRequest) -> QueuedRequest:
    """In the manifest's own transaction: the request is durable with it, the task queued once both commit."""
    request = model(manifest=manifest)  # type: ignore[misc]  # each concrete request names its manifest
    request.save(force_insert=True)
    transaction.on_commit(lambda: enqueue(manifest.pk))
    return request


def progressed(manifest_id: int, at: datetime | None = None, model: type[QueuedRequest] = PreviewRequest) -> None:
    """A worker took the task, or stored a batch: not overdue for another PAGETRAIL_PREVIEWS_OVERDUE_MINUTES."""
    model._default_manager.filter(pk=manifest_id, outcome=Outcome.PENDING).update(progress_at=at or timezone.now())


def finish(
    manifest_id: int,
    outcome: str,
    code: str = "",
    message: str = "",
    at: datetime | None = None,
    model: type[QueuedRequest] = PreviewRequest,
) -> bool:
    """The end of the request (first writer wins: a duplicate task's ending changes nothing)."""
    now = at or timezone.now()
    changes = dict(outcome=outcome, error_code=code, error_message=message, finished_at=now, progress_at=now)
    return model._default_manager.filter(pk=manifest_id, outcome=Outcome.PENDING).update(**changes) == 1


def overdue(at: datetime | None = None, model: type[QueuedRequest] = PreviewRequest):
    return model._default_manager.filter(
        outcome=Outcome.PENDING, progress_at__lt=(at or timezone.now()) - overdue_after()
    )


def redrive(enqueue, at: datetime | None = None, model: type[QueuedRequest] = PreviewRequest) -> int:
    """Ask again for every overdue request, counted and logged."""
    now, asked = at or timezone.now(), 0
    for manifest_id, last in overdue(now, model).values_list("pk", "progress_at"):
        if ask_again(manifest_id, last, now, model):
            since = display.timestamp(last)
            log.warning("re-drove %s of manifest %s (no progress since %s)", model.work, manifest_id, since)
            enqueue(manifest_id)
            asked += 1
    return asked


def ask_again(
    manifest_id: int, seen_progress: datetime, at: datetime, model: type[QueuedRequest] = PreviewRequest
) -> bool:
    """Guarded on the progress the caller saw: of two reconcilers that read the same overdue request, one asks."""
    pending = model._default_manager.filter(pk=manifest_id, outcome=Outcome.PENDING, progress_at=seen_progress)
    return pending.update(asked_at=at, progress_at=at, times_asked=F("times_asked") + 1) == 1


@dataclass(frozen=True)
class State:
    """What the review page may truthfully say about previews still missing (after "N of M pages have a preview")."""

    final: bool
    text: str
    making: bool = False  # a worker is on them (or they wait their turn): the cards may say "being made"


def state_of(manifest: Manifest, at: datetime | None = None) -> State:
    """Pending and progressing, overdue, asked for again, or ended (done, failed with its reason, skipped)."""
    request = PreviewRequest.objects.filter(pk=manifest.pk).first()
    if request is None:  # a manifest written before previews were requested in the database: none are coming
        return State(True, "; previews were not made for this manifest")
    if request.outcome == Outcome.FAILED:
        return State(True, f"; previews could not be made: {request.error_message or request.error_code}")
    if request.outcome:
        return State(True, f"; previews {request.get_outcome_display()}")
    if request.progress_at < (at or timezone.now()) - overdue_after():
        since = display.timestamp(request.progress_at)
        return State(False, f"; previews are overdue (no progress since {since}): the reconciler asks for them again")
    if request.times_asked > 1:
        return State(
            False, f"; previews were overdue and were asked for again at {display.timestamp(request.asked_at)}"
        )
    return State(False, ", more are being made", making=True)
