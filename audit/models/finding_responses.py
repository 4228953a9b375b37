"""A person's answer to a verification finding: acknowledged (seen, being looked into), then resolved, each with a
note. Findings themselves are write-once evidence, so the answer is a row of its own beside the finding."""

from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.guarded import update_if

from .evidence import Finding


class FindingResponse(models.Model):
    """One per finding, made on its first answer; its status only moves forward (open -> acknowledged -> resolved)."""

    class Status(models.TextChoices):
        OPEN = "open"
        ACKNOWLEDGED = "acknowledged"
        RESOLVED = "resolved"

    finding = models.OneToOneField(Finding, on_delete=models.PROTECT, related_name="response")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN, db_index=True)
    acknowledged_by = models.CharField(max_length=150, blank=True)
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    acknowledged_note = models.TextField(blank=True)
    resolved_by = models.CharField(max_length=150, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_note = models.TextField(blank=True)

    class Meta:
        permissions = [("respond_to_finding", "Can acknowledge and resolve verification findings")]

    def __str__(self):
        return f"{self.status} finding {self.finding_id}"

    @classmethod
    def of(cls, finding: Finding) -> "FindingResponse":
        """The finding's answer row, made open if it has none yet (two first answers at once make one row)."""
        return cls.objects.get_or_create(finding=finding)[0]

    def mark_acknowledged(self, by: str, note: str, at=None) -> bool:
        """Only an open finding: a second acknowledgement (or one after resolution) changes nothing."""
        changes = dict(acknowledged_by=by[:150], acknowledged_at=at or timezone.now(), acknowledged_note=note)
        return update_if(self, Q(status=self.Status.OPEN), status=self.Status.ACKNOWLEDGED, **changes)

    def mark_resolved(self, by: str, note: str, at=None) -> bool:
        """An open or acknowledged finding; a resolved one stays as its first resolver left it."""
        changes = dict(resolved_by=by[:150], resolved_at=at or timezone.now(), resolved_note=note)
        active = [self.Status.OPEN, self.Status.ACKNOWLEDGED]
        return update_if(self, Q(status__in=active), status=self.Status.RESOLVED, **changes)
