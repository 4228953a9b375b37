"""Reviewers' findings on a manifest, with who and when for each step of their lifecycle."""

from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.guarded import update_if
from extraction.models import Job

from .evidence import Manifest


class ReviewFlag(models.Model):
    class Kind(models.TextChoices):
        MISSING_PAGE = "missing_page"
        MISSING_IMAGE = "missing_image"
        WRONG_IMAGE = "wrong_image"
        OTHER = "other"

    class Status(models.TextChoices):
        OPEN = "open"
        REEXTRACTION_REQUESTED = "reextraction_requested"
        RESOLVED = "resolved"
        DISMISSED = "dismissed"

    manifest = models.ForeignKey(Manifest, on_delete=models.PROTECT, related_name="review_flags")
    pages = models.JSONField(help_text="Page numbers the flag is about")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    note = models.TextField(blank=True)
    status = models.CharField(max_length=30, choices=Status.choices, default=Status.OPEN, db_index=True)
    raised_by = models.CharField(max_length=150)
    raised_at = models.DateTimeField(default=timezone.now)
    requested_by = models.CharField(max_length=150, blank=True)
    requested_at = models.DateTimeField(null=True, blank=True)
    closed_by = models.CharField(max_length=150, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    reextraction_job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["raised_at"]
        permissions = [("request_reextraction", "Can request re-extraction")]

    def __str__(self):
        from core.display import page_ranges

        return f"{self.get_kind_display()} on pages {page_ranges(self.pages)} ({self.status})"

    def mark_closed(self, status: str, by: str, at=None) -> bool:
        """Resolve or dismiss: only an open flag or one waiting for its re-extraction."""
        active = [self.Status.OPEN, self.Status.REEXTRACTION_REQUESTED]
        return update_if(self, Q(status__in=active), status=status, closed_by=by[:150], closed_at=at or timezone.now())

    def mark_reextraction_requested(self, by: str, at=None) -> bool:
        """Only an open flag: the winner alone makes the new extraction round (attach_reextraction)."""
        return update_if(
            self,
            Q(status=self.Status.OPEN),
            status=self.Status.REEXTRACTION_REQUESTED,
            requested_by=by[:150],
            requested_at=at or timezone.now(),
        )

    def attach_reextraction(self, job: Job) -> bool:
        """The round made for this request, once."""
        condition = Q(status=self.Status.REEXTRACTION_REQUESTED, reextraction_job__isnull=True)
        return update_if(self, condition, reextraction_job=job)
