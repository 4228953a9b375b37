"""Removing what jobs and uploads left in private temp once nothing owns it; each terminal job's outputs swept once."""

import time
from collections.abc import Callable

from django.conf import settings
from django.utils import timezone

from core import stores

from .intake.staging import sweep_staged
from .models import Job


def sweep_temp() -> dict:
    """Remove temp dirs of jobs that are terminal or unknown to the database, staged uploads no pending submission
    owns, and the files Django spooled request bodies into (both after a grace period: a request may still be
    writing one)."""
    removed = 0
    root = stores.jobs_dir()
    names = [p.name for p in root.iterdir()] if root.exists() else []
    ids = {int(n) for n in names if n.isdigit()}
    live = set(Job.objects.filter(pk__in=ids).exclude(status__in=Job.TERMINAL).values_list("pk", flat=True))
    for name in names:
        if not name.isdigit() or int(name) not in live:
            stores.remove_job_work_dir(name)
            removed += 1
    return {"removed": removed + sweep_staged() + sweep_request_files()}


def sweep_request_files(now: float | None = None) -> int:
    """Remove the files Django spooled uploads into that nobody wrote to for the grace period. A request deletes its
    own as it ends; one killed mid-body (or a temp area that filled up as it closed) leaves them behind. Files of
    this kind in the temp root itself are from before they had a directory of their own."""
    cutoff = (now or time.time()) - settings.PAGETRAIL_STAGED_GRACE_SECONDS
    left = [*stores.request_files_dir().iterdir(), *stores.temp_root().glob("tmp*.upload*")]
    removed = 0
    for path in left:
        try:
            stale = path.is_file() and path.stat().st_mtime < cutoff
        except FileNotFoundError:
            continue
        if stale:
            path.unlink(missing_ok=True)
            removed += 1
    return removed


def sweep_terminal_jobs_outputs(sweep_job: Callable[[Job], int], at=None) -> int:
    """Call `sweep_job` once for each job that reached a terminal state and was not swept yet, then mark it swept;
    the removed count. `sweep_job` (audit's output sweep, which knows what a manifest names) removes the stored
    outputs the job left unnamed and returns how many. A sweep that raises leaves its job for the next run."""
    at, removed = at or timezone.now(), 0
    jobs = Job.objects.filter(status__in=Job.TERMINAL, outputs_swept_at__isnull=True).select_related("bundle")
    for job in jobs.iterator(chunk_size=200):
        removed += sweep_job(job)
        job.mark_outputs_swept(at)
    return removed
