"""Every task extraction's intake puts on a queue: deciding a submission, and running a job it created."""

import time

from django.conf import settings
from django.db import transaction


def enqueue_decision(submission) -> None:
    """On the intake queue of the host holding the staged bytes (only that host can read them)."""
    from django_q.tasks import async_task

    async_task(
        "extraction.tasks.decide_submission",
        submission.pk,
        cluster=submission.queue,
        task_name=f"submission-{submission.pk}-{time.time_ns()}",
    )


def enqueue_job(job_id: int) -> None:
    from django_q.tasks import async_task

    # Named: called from the intake worker too, whose own queue would otherwise be the default.
    async_task(
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
