"""Renderings of the input's pages, shown to reviewers beside the assets drawn on them."""

from django.db import models
from django.utils import timezone

from .evidence import Manifest, WriteOnceModel


class PagePreview(WriteOnceModel):
    """One page of a manifest's input at one size, stored in the output store with its hash.

    Not evidence (the manifest does not name it) but kept like it: written once, deleted with
    the outputs when their retention window ends (the row stays, as for assets).
    """

    manifest = models.ForeignKey(Manifest, on_delete=models.PROTECT, related_name="previews")
    page = models.PositiveIntegerField()
    max_width = models.PositiveIntegerField(help_text="The width the page was fitted into: thumbnail or large view")
    storage_name = models.CharField(max_length=300, unique=True)
    content_type = models.CharField(max_length=50)
    sha256 = models.CharField(max_length=64)
    size = models.BigIntegerField()
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["manifest_id", "page", "max_width"]
        constraints = [
            models.UniqueConstraint(fields=["manifest", "page", "max_width"], name="one_preview_per_page_and_size")
        ]

    def __str__(self):
        return self.storage_name


class QueuedRequest(models.Model):
    """Work asked of the previews queue for one manifest: when, how often, the last sign of progress and how it
    ended. The queue forgets (a flushed Redis, a task failed on a dropped connection); this row does not, so the
    reconciler asks again for work that stopped progressing (audit/review/preview_requests.py)."""

    class Outcome(models.TextChoices):
        PENDING = "", "being made"
        DONE = "done", "every page has its previews"
        FAILED = "failed", "could not be made"
        SKIPPED = "skipped", "not made: the input or outputs were deleted under retention"

    asked_at = models.DateTimeField(default=timezone.now, help_text="When the previews were last asked for")
    times_asked = models.PositiveIntegerField(default=1)
    progress_at = models.DateTimeField(default=timezone.now, help_text="Asked, or a batch of pages stored")
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.PENDING, blank=True)
    error_code = models.CharField(max_length=40, blank=True)
    error_message = models.TextField(blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    work = "previews"  # what the log calls the work asked for

    class Meta:
        abstract = True


class PreviewRequest(QueuedRequest):
    """A manifest's page previews as asked of the previews queue."""

    manifest = models.OneToOneField(
        Manifest, primary_key=True, on_delete=models.PROTECT, related_name="preview_request"
    )

    class Meta:
        # The reconciler's question every minute: pending requests, oldest progress first.
        indexes = [models.Index(fields=["outcome", "progress_at"], name="preview_request_pending")]

    def __str__(self):
        return f"previews of manifest {self.manifest_id}"
