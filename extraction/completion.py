"""Completing a job: its evidence recorded and the job marked completed in one transaction, this app's.

Audit depends on extraction, never the other way: the audit app registers its recorder in
`AppConfig.ready()`, and `complete_job` calls it once per completed job, after every output is fetched.
The recorder only writes evidence; the transaction, the job's lock and its transition are extraction's.
Not a signal: the step must run exactly once, inside this transaction, and its exceptions (a store that
failed midway) must reach the runner. A system check (extraction.checks) refuses to start without a recorder.
"""

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Protocol

from django.core.exceptions import ImproperlyConfigured
from django.db import transaction

from .models import Job
from .providers import JobReport
from .webhooks import recording as webhooks


class Evidence(Protocol):
    """One completed job's evidence, its files already stored, its rows written in `complete_job`'s transaction."""

    def lock(self) -> None:
        """Take the lock the evidence's store needs (audit: the ledger's), first in the transaction."""

    def write(self, job: Job) -> None:
        """Write the evidence rows; `job` is locked, still active, and read again with its bundle."""


# (job, report, files by asset key, attempt_number=, at=) -> a context manager that stores the files on entry,
# yields their Evidence, and removes the files it stored if the block raises (the commit failed).
Recorder = Callable[..., AbstractContextManager[Evidence]]

_recorder: Recorder | None = None


def register(recorder: Recorder | None) -> None:
    """Called once at start-up by the app that keeps the evidence (audit)."""
    global _recorder
    _recorder = recorder


def registered() -> Recorder | None:
    return _recorder


def complete_job(
    job: Job, report: JobReport, files: dict[str, Path], attempt_number: int, at: datetime | None = None
) -> bool:
    """Record the job's evidence and mark it completed, in one commit.

    Returns False when another worker already completed the job (its evidence stands). `at` (default: now)
    dates the evidence; the job's manifest_durable_at is taken just before the commit, unless `at` is given.
    """
    if _recorder is None:
        raise ImproperlyConfigured("No completion recorder is registered: the audit app must be installed.")
    with _recorder(job, report, files, attempt_number=attempt_number, at=at) as evidence:
        with transaction.atomic():
            # Lock order: the evidence's lock (the ledger's) first, then the job's row. Every writer to the ledger
            # takes its lock before any row it changes; holding the job while waiting for the ledger would let
            # such a writer that waits for the job deadlock with this one.
            evidence.lock()
            job = _locked(job.pk)
            if job.is_terminal:
                return False
            evidence.write(job)
            if not job.mark_completed(at):
                raise RuntimeError(f"job {job.pk} left its active state while its evidence was written")
            webhooks.job_finished(job, at)  # in this commit: a completed job always has its events
    return True


def _locked(job_id: int) -> Job:
    """The job's row locked, with its bundle's (as always) and the intake policy version its manifest names, read in
    the same statement. The policy's row is read, not locked: a version is never changed once written (and on
    PostgreSQL the nullable side of an outer join cannot be locked). Whether anybody listens for its webhook events
    is read with them too."""
    locking = Job.objects.select_for_update(of=("self", "bundle")).annotate(listened=webhooks.listened_to())
    return locking.select_related("bundle__intake_policy").get(pk=job_id)
