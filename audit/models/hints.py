"""Pages to look at first: suggestions made from each page's evidence after the manifest, and reviewers' answers."""

from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.guarded import update_if

from .evidence import Manifest
from .previews import QueuedRequest
from .review import ReviewFlag


class HintRun(QueuedRequest):
    """A manifest's page hints as asked of the previews queue, re-driven like its previews; `numbering` keeps each
    page's printed number ("3/10", "3", or "" where none is printed) for the case maps' check."""

    manifest = models.OneToOneField(Manifest, primary_key=True, on_delete=models.PROTECT, related_name="hint_run")
    numbering = models.JSONField(default=list, blank=True)
    work = "page hints"

    class Meta:
        indexes = [models.Index(fields=["outcome", "progress_at"], name="hint_run_pending")]

    def __str__(self):
        return f"page hints of manifest {self.manifest_id}"


class PageHint(models.Model):
    """One suggestion (extraction/pdf/page_hints.py): a kind, the pages it names, its evidence; confirmed (then a
    review flag) or dismissed by a reviewer, once."""

    class Kind(models.TextChoices):
        MISSING_PAGE = "missing_page", "printed page missing"
        OUT_OF_ORDER = "out_of_order", "page out of order"
        REPEATED_PAGE = "repeated_page", "page repeated"
        BLANK_PAGE = "blank_page", "blank scan"
        NO_SCAN = "no_scan", "page without a scan"

    class Status(models.TextChoices):
        SUGGESTED = "suggested"
        CONFIRMED = "confirmed"
        DISMISSED = "dismissed"

    manifest = models.ForeignKey(Manifest, on_delete=models.PROTECT, related_name="page_hints")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    pages = models.JSONField(help_text="PDF page numbers the suggestion is about")
    evidence = models.TextField(help_text="What shows it: the printed text, the hash or the share of ink")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.SUGGESTED)
    decided_by = models.CharField(max_length=150, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    flag = models.ForeignKey(ReviewFlag, null=True, blank=True, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["manifest_id", "pk"]

    def __str__(self):
        from core.display import page_ranges

        return f"{self.get_kind_display()} on pages {page_ranges(self.pages)} ({self.status})"

    def mark_decided(self, status: str, by: str, at=None) -> bool:
        """Confirm or dismiss: only a suggestion still open (of two reviewers answering at once, one wins)."""
        return update_if(
            self, Q(status=self.Status.SUGGESTED), status=status, decided_by=by[:150], decided_at=at or timezone.now()
        )

    def attach_flag(self, flag: ReviewFlag) -> bool:
        return update_if(self, Q(status=self.Status.CONFIRMED, flag__isnull=True), flag=flag)
