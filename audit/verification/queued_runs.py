"""Verification runs started in the admin: queued once their row commits, asked again if the queue lost the task.

A run is queued `queued` in the database before its task goes on the queue, so a flushed Redis leaves a row that
says so; the reconciler wakes every run still queued and not woken for PAGETRAIL_REQUEUE_AFTER_SECONDS. A task run
twice is harmless: `VerificationRun.mark_running` lets one of them through.

A run `running` with no progress for longer than its task's timeout (plus a margin) has no worker any more:
django-q2 killed it at the timeout, or its host died. A run that keeps recording progress (a long run started by
`manage.py verify_manifests`) is never taken for abandoned; a requeued run's old try can write nothing more. It is
queued again once, then given up as an error naming why (`redrive_abandoned`).
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from audit.ledger import activity_records
from audit.models import VerificationRun
from core import broker

log = logging.getLogger(__name__)


def enqueue(run_id: int) -> None:
    broker.enqueue("audit.tasks.run_verification", run_id)


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


def lease() -> timedelta:
    """How long a started run may be running: its task's timeout, after which django-q2 has killed its worker,
    and a margin for the kill itself."""
    return timedelta(seconds=settings.Q_CLUSTER["timeout"] + settings.PAGETRAIL_STOP_MARGIN_SECONDS + 30)


ABANDONED = (
    "Its worker stopped (killed, its host gone, or the run took longer than the task timeout of {timeout} s) "
    "{tries} times without finishing; nothing of it was recorded. Start a new run, with a narrower scope if it "
    "is large."
)


def redrive_abandoned(at=None) -> int:
    """The reconciler's part: runs with no progress for their lease are queued again, or an error on their last try."""
    now = at or timezone.now()
    # From its last sign of progress: a killed task stops progressing, a long run that keeps progressing is alive.
    quiet = Q(progress_at__lt=now - lease()) | Q(progress_at=None, started_at__lt=now - lease())
    past = VerificationRun.objects.filter(quiet, status=VerificationRun.Status.RUNNING)
    handled = 0
    for run in past:
        if run.tries < VerificationRun.MAX_TRIES and run.mark_requeued(now):
            log.warning("re-drove verification run %s: its worker stopped (started %s)", run.pk, _started(run))
            enqueue(run.pk)
            handled += 1
        elif run.tries >= VerificationRun.MAX_TRIES and run.mark_abandoned(_abandoned(run)):
            log.error("verification run %s given up: its worker stopped %s times", run.pk, run.tries)
            activity_records.record("verification", "verification_errored", run, after={"error": run.error})
            handled += 1
    return handled


def _abandoned(run: VerificationRun) -> str:
    return ABANDONED.format(timeout=settings.Q_CLUSTER["timeout"], tries=run.tries)


def _started(run: VerificationRun) -> str:
    return run.started_at.isoformat() if run.started_at else "?"
