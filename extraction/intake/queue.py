"""Every task extraction puts on a queue: deciding a submission, running a job intake created, waking a job
that waits (a hold, Retry-After, polling), and delivering a webhook event (now, or its retry later)."""

import time
from datetime import datetime

from django.conf import settings
from django.db import transaction

from core import one_off
from core.broker import enqueue


def enqueue_decision(submission) -> None:
    """On the intake queue of the host holding the staged bytes (only that host can read them)."""
    enqueue(
        "extraction.tasks.decide_submission",
        submission.pk,
        cluster=submission.queue,
        task_name=f"submission-{submission.pk}-{time.time_ns()}",
    )


def enqueue_job(job_id: int) -> None:
    # Named: called from the intake worker too, whose own queue would otherwise be the default.
    enqueue(
        "extraction.tasks.run_job",
        job_id,
        task_name=f"job-{job_id}-{time.time_ns()}",
        cluster=settings.Q_CLUSTER["name"],
    )


def decide_after_commit(submission) -> None:
    """Queued once the row is committed: a worker must find the submission it is asked to decide."""
    transaction.on_commit(lambda: enqueue_decision(submission))


def run_after_commit(job_id: int) -> None:
    transaction.on_commit(lambda: enqueue_job(job_id))


def wake_job_now(job_id: int) -> None:
    """Queued at once, on the cluster that runs it; the task sleeps out what is left of the job's hold."""
    enqueue("extraction.tasks.run_job", job_id, waking=True, task_name=f"wake-job-{job_id}-{time.time_ns()}")


def wake_job_at(job_id: int, when: datetime) -> None:
    """Woken by the scheduler when due, never early: a hold longer than its tick."""
    one_off.run_at("extraction.tasks.run_job", job_id, name=f"wake-job-{job_id}", when=when)


def enqueue_webhook(event_id: int) -> None:
    """On the jobs' cluster, named: the intake worker records refusals' events too."""
    enqueue(
        "extraction.tasks.deliver_webhook",
        event_id,
        task_name=f"webhook-{event_id}-{time.time_ns()}",
        cluster=settings.Q_CLUSTER["name"],
    )


def retry_webhook_at(event_id: int, when: datetime) -> None:
    """Lost with Redis, it is re-driven by the reconciler once overdue."""
    one_off.run_at("extraction.tasks.deliver_webhook", event_id, name=f"webhook-{event_id}", when=when)
