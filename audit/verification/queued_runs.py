"""Verification runs started in the admin: queued once their row commits, asked again if the queue lost the task.

A run is queued `queued` in the database before its task goes on the queue, so a flushed Redis leaves a row that
says so; the reconciler wakes every run still queued and not woken for PAGETRAIL_REQUEUE_AFTER_SECONDS. A task run
twice is harmless: `VerificationRun.mark_running` lets one of them through.
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.models import VerificationRun

log = logging.getLogger(__name__)


def enqueue(run_id: int) -> None:
    from django_q.tasks import async_task

    async_task("audit.tasks.run_verification", run_id)


def queue_after_commit(run: VerificationRun) -> None:
    transaction.on_commit(lambda: enqueue(run.pk))


def redrive(at=None) -> int:
    """The reconciler's part: wake runs still queued and not woken for PAGETRAIL_REQUEUE_AFTER_SECONDS."""
    quiet = timedelta(seconds=settings.PAGETRAIL_REQUEUE_AFTER_SECONDS)
    due = VerificationRun.objects.filter(
        status=VerificationRun.Status.QUEUED, last_woken_at__lt=(at or timezone.now()) - quiet
    )
    woken = 0
    for run in due:
        if run.mark_woken(at):  # of two reconcilers that read it, one wakes it
            log.warning("re-drove verification run %s (queued since %s)", run.pk, run.created_at.isoformat())
            enqueue(run.pk)
            woken += 1
    return woken
