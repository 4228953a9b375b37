"""The Submission model: one upload on its way through intake, from the web tier's receipt to a decision.

The web tier only streams the bytes into private temp (hashing them) and records a pending submission
(`staging`); an intake worker validates them on a queue of its own and decides (`decision`, the only caller of
the transitions below): `accepted` (with its job) or `refused` (code, sentence, and a Rejection row). Every
transition is a guarded update, so a duplicated or late task finds the row already moved and does nothing.
"""

from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from core import stores
from core.guarded import Wakeable, update_if

# A validation whose child (or worker) failed for reasons of this machine is tried once more, then refused.
MAX_TRIES = 2


class SubmissionQuerySet(models.QuerySet):
    def visible_to(self, account):
        return self.filter(account=account)

    def due(self, quiet_for: timedelta, at=None):
        """Pending, and either its worker's claim ran out (the worker died) or it was never picked up
        and not woken for `quiet_for` (its queue task was lost)."""
        now = at or timezone.now()
        lost = Q(claimed_until__lt=now, last_woken_at__lt=F("claimed_until"))
        never = Q(claimed_until__isnull=True, last_woken_at__lt=now - quiet_for)
        return self.filter(lost | never, state=Submission.State.PENDING)


class Submission(Wakeable, models.Model):
    """An upload received and waiting for (or given) the intake worker's decision."""

    class State(models.TextChoices):
        PENDING = "pending"
        ACCEPTED = "accepted"
        REFUSED = "refused"

    state = models.CharField(max_length=20, choices=State.choices, default=State.PENDING, db_index=True)
    staged_name = models.CharField(max_length=100, help_text="The file in this host's temp uploads while pending")
    queue = models.CharField(max_length=100, help_text="The intake queue of the host holding the staged file")
    size = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    original_filename = models.CharField(max_length=255, blank=True, help_text="As given; display only")
    submitted_by = models.CharField(max_length=150)
    case_label = models.CharField(max_length=200, blank=True)
    account = models.ForeignKey(
        "extraction.ServiceAccount", null=True, blank=True, on_delete=models.CASCADE, related_name="submissions"
    )
    job = models.ForeignKey("extraction.Job", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    # A PDF attached inside an accepted bundle, submitted as one of its own (PAGETRAIL_SUBMIT_ATTACHED_PDFS).
    parent_bundle = models.ForeignKey(
        "extraction.Bundle", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.BooleanField(default=False, help_text="Its job (or the job's access) was new to the submitter")
    error_code = models.CharField(max_length=50, blank=True)
    error_message = models.TextField(blank=True)
    retryable = models.BooleanField(default=False, help_text="Refused for a fault of this machine: send it again")
    tries = models.PositiveSmallIntegerField(default=0)
    claimed_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_woken_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)

    objects = SubmissionQuerySet.as_manager()

    class Meta:
        # Not extraction_submission: that table (renamed BundleAccess) keeps its index names, which a new table
        # of the same name would generate again.
        db_table = "extraction_intake_submission"
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["state", "claimed_until"], name="submission_state_claim"),
            models.Index(fields=["created_at"], name="submission_created"),  # the admin's order
            # A Submitter sees the bundles whose job they were given for bytes sent before (visibility.py).
            models.Index(fields=["submitted_by", "state"], name="submission_submitter"),
        ]

    def __str__(self):
        return f"submission {self.pk} ({self.state})"

    @property
    def staged_path(self) -> Path:
        return stores.uploads_dir() / self.staged_name

    @property
    def is_decided(self) -> bool:
        return self.state != self.State.PENDING

    def claim(self, at=None) -> bool:
        """Take the pending submission for one try (unless a live claim holds it); counts the try.

        Compare-and-set on the tries this copy read as well: a worker whose copy is older than another's try
        loses (that try's worker re-queues it if it is due again), and the winner knows its count unread."""
        now = at or timezone.now()
        free = Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
        until = now + timedelta(seconds=settings.PAGETRAIL_INTAKE_LEASE_SECONDS)
        return update_if(
            self, free & Q(state=self.State.PENDING, tries=self.tries), tries=self.tries + 1, claimed_until=until
        )

    def release(self) -> bool:
        """Give the claim back for an immediate next try (the child failed for reasons of this machine)."""
        return update_if(self, Q(state=self.State.PENDING), claimed_until=None)

    def hand_back(self) -> bool:
        """Give the claim back untried (its worker was told to stop mid-validation): the try it counted is undone,
        and any worker may take it at once."""
        return update_if(self, Q(state=self.State.PENDING, tries=self.tries), tries=self.tries - 1, claimed_until=None)

    def mark_accepted(self, job, created: bool, at=None) -> bool:
        return self._decide(self.State.ACCEPTED, at, job=job, created=created)

    def mark_refused(self, code: str, message: str, retryable: bool = False, at=None) -> bool:
        return self._decide(self.State.REFUSED, at, error_code=code[:50], error_message=message, retryable=retryable)

    def _decide(self, state, at, **changes) -> bool:
        changes = {"state": state, "decided_at": at or timezone.now(), "claimed_until": None, **changes}
        return update_if(self, Q(state=self.State.PENDING), **changes)
