"""Verification runs: one re-verification pass each, and its progress (the findings are evidence rows)."""

from django.db import models
from django.db.models import Q
from django.db.models.functions import Now
from django.utils import timezone

from core.guarded import Wakeable, update_if


class VerificationRun(Wakeable, models.Model):
    """One re-verification pass; progress fields move while it runs, then the row is final."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        PASSED = "passed"
        FAILED = "failed"
        ERROR = "error"

    PROGRESS = ("manifests_total", "manifests_done", "assets_total", "assets_done", "bytes_done")

    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED, db_index=True)
    started_by = models.CharField(max_length=150)
    scope_bundle = models.ForeignKey("extraction.Bundle", null=True, blank=True, on_delete=models.PROTECT)
    scope_from = models.DateTimeField(null=True, blank=True, help_text="Manifests created from")
    scope_to = models.DateTimeField(null=True, blank=True, help_text="Manifests created before")
    manifests_total = models.PositiveIntegerField(default=0)
    manifests_done = models.PositiveIntegerField(default=0)
    assets_total = models.PositiveIntegerField(default=0)
    assets_done = models.PositiveIntegerField(default=0)
    bytes_done = models.PositiveBigIntegerField(default=0)
    findings_count = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    # Its last sign of life: a run's lease counts from here, so a long run that keeps progressing is never taken
    # for abandoned (audit/verification/queued_runs.py). Null on rows from before it existed: started_at stands in.
    progress_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Queued, or last asked again by the reconciler (the queue lost its task): audit/verification/queued_runs.py.
    last_woken_at = models.DateTimeField(default=timezone.now)
    tries = models.PositiveSmallIntegerField(default=0, help_text="Times a worker started it")

    MAX_TRIES = 2  # a run whose worker died is queued once more, then given up as an error

    class Meta:
        ordering = ["-created_at"]
        permissions = [("run_verification", "Can start verification runs")]

    def __str__(self):
        return f"verification run {self.pk} ({self.status})"

    @property
    def scope(self) -> str:
        if self.scope_bundle_id:
            return f"bundle {self.scope_bundle_id}"
        if self.scope_from or self.scope_to:
            return f"manifests {self.scope_from or '…'} to {self.scope_to or '…'}"
        return "everything"

    @property
    def is_whole_deployment(self) -> bool:
        return not (self.scope_bundle_id or self.scope_from or self.scope_to)

    def mark_running(self) -> bool:
        """Only a queued run: a redelivered task finds it taken. On a win this instance holds its try's number,
        which every later write of this try is guarded on (a requeued run started again belongs to its new try)."""
        changes = dict(status=self.Status.RUNNING, started_at=Now(), progress_at=Now(), tries=self.tries + 1)
        return update_if(self, Q(status=self.Status.QUEUED, tries=self.tries), **changes)

    def mark_requeued(self, at=None) -> bool:
        """A run whose worker died (running past its task's lease) goes back to the queue; only from the start this
        reader saw (its try), so two reconcilers, or one behind a run already started again, requeue it once."""
        changes = dict(status=self.Status.QUEUED, started_at=None, last_woken_at=at or timezone.now())
        return update_if(self, self._this_try(), **changes)

    def mark_abandoned(self, error: str) -> bool:
        """A run whose worker died on its last try: an error, from the try this reader saw."""
        changes = dict(status=self.Status.ERROR, error=error, finished_at=Now())
        return update_if(self, self._this_try(), **changes)

    def record_progress(self, **counts: int) -> bool:
        """Move the progress counters (`manifests_total`, `manifests_done`, `assets_total`, `assets_done`,
        `bytes_done`) while this try is running; a finished run's row stays final. Without counts, a sign of
        life between long steps. False when the run is no longer this try's."""
        if unknown := set(counts) - set(self.PROGRESS):
            raise TypeError(f"not a progress counter: {', '.join(sorted(unknown))}")
        return update_if(self, self._this_try(), progress_at=Now(), **counts)

    def mark_error(self, error: str) -> bool:
        """The run could not finish (not a finding: the checks themselves failed)."""
        return update_if(self, self._this_try(), status=self.Status.ERROR, error=error, finished_at=Now())

    def mark_finished(self, findings_count: int) -> bool:
        """Passed when nothing was found, failed otherwise."""
        status = self.Status.FAILED if findings_count else self.Status.PASSED
        changes = dict(status=status, findings_count=findings_count, finished_at=Now())
        return update_if(self, self._this_try(), **changes)

    def _this_try(self) -> Q:
        return Q(status=self.Status.RUNNING, tries=self.tries)
