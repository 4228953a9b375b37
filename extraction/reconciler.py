"""Re-driving jobs and pending submissions from database state: the queue is only a wake-up call."""

import logging
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from core.logs import job_context

from . import cluster_heartbeat
from .intake import decision
from .intake.queue import enqueue_job
from .models import Attempt, Job, SubmissionSwitch
from .signals import alert_about
from .webhooks import delivery as webhooks

log = logging.getLogger(__name__)

# Other apps' tasks re-driven on each pass (audit's page previews), registered in their AppConfig.ready():
# extraction never imports them. name in the pass's counts -> re-drive(at) returning how many were asked again.
redrivers: dict[str, Callable[..., int]] = {}


def register(name: str, redrive: Callable[..., int]) -> None:
    redrivers[name] = redrive


def reconcile(at=None) -> dict:
    """Re-drive jobs from database state: the queue is only a wake-up call.

    Expired claims (a killed worker, a lost wake-up), queued jobs whose task was lost, and
    `unknown` jobs (re-polled with the same provider job id; never resubmitted under a new key); then what
    other apps registered (`previews_redriven`); and webhook events whose try is overdue.
    Times are the database's clock unless a test passes `at`.
    """
    quiet = timedelta(seconds=settings.PAGETRAIL_REQUEUE_AFTER_SECONDS)
    abandoned = Attempt.close_abandoned(at)
    _alert_newly_late(at)
    due = Job.objects.with_claim_expired(at) | Job.objects.unknown_and_quiet(quiet, at)
    if SubmissionSwitch.submissions_open():
        due = due | Job.objects.never_picked_up(quiet, at)
    counts = {
        "woken": wake(due, at),
        "abandoned_attempts": abandoned,
        "submissions_woken": decision.redrive(at),
        "webhooks_redriven": webhooks.redrive(at),
        "clusters_silent": cluster_heartbeat.check_silent(at),
    }
    return counts | {name: redrive(at) for name, redrive in redrivers.items()}


def _alert_newly_late(at=None) -> None:
    """Jobs whose deadline passed since about the last pass (so each is reported once, not every minute)."""
    now = at or timezone.now()
    window = timedelta(minutes=2 * settings.PAGETRAIL_RECONCILE_EVERY_MINUTES)
    for job in Job.objects.active().filter(deadline__lt=now, deadline__gte=now - window):
        alert_about(job, "job_past_deadline", f"job-{job.pk}-late", f"Job {job.pk} is {job.status} past its deadline.")


def wake(jobs, at=None) -> int:
    """Enqueue one wake-up call per job (guarded, so concurrent reconcilers do not double up)."""
    woken = 0
    for job in jobs.select_related("bundle").distinct():
        if job.mark_woken(at):
            enqueue_job(job.pk)
            woken += 1
            with job_context(job.bundle.correlation_id, job.pk):
                log.info("re-drove job %s (%s)", job.pk, job.status)
    return woken


def replay_unknown(jobs) -> int:
    """Re-drive only `unknown` jobs, with their provider job id and idempotency key."""
    return wake(jobs.filter(status=Job.Status.UNKNOWN))
