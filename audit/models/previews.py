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
