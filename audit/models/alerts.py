"""Alerts: one open alert per problem until someone acknowledges it, and the webhook delivery log."""

from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.guarded import update_if


class Alert(models.Model):
    class Kind(models.TextChoices):
        VERIFICATION_FINDINGS = "verification_findings"
        JOB_UNKNOWN = "job_unknown"
        JOB_PAST_DEADLINE = "job_past_deadline"
        RETENTION_BLOCKED = "retention_blocked"
        KILL_SWITCH = "kill_switch"
        INPUT_CHANGED = "input_changed"
        STORAGE_UNAVAILABLE = "storage_unavailable"
        OBJECT_LOCK_FAILED = "object_lock_failed"
        LEDGER_ROLLBACK = "ledger_rollback"
        CLUSTER_SILENT = "cluster_silent"
        INPUT_MISSING = "input_missing"
        INTAKE_FAILING = "intake_failing"
        WITNESS_QUORUM = "witness_quorum"
        WITNESS_REFUSED = "witness_refused"
        DATABASE_LOST = "database_lost"
        BROKER_LOST = "broker_lost"

    class Status(models.TextChoices):
        OPEN = "open"
        ACKNOWLEDGED = "acknowledged"
        CLEARED = "cleared"  # the problem ended by itself (a silent cluster reports again)

    kind = models.CharField(max_length=30, choices=Kind.choices, db_index=True)
    key = models.CharField(max_length=200, help_text="What makes two alerts the same problem")
    message = models.TextField()
    link = models.CharField(max_length=300, help_text="Where to act")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN, db_index=True)
    occurrences = models.PositiveIntegerField(default=1)
    first_seen = models.DateTimeField(default=timezone.now)
    last_seen = models.DateTimeField(default=timezone.now)
    acknowledged_by = models.CharField(max_length=150, blank=True)
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    # Opened, or its webhook's next try last queued by the reconciler (audit/operations/webhook_redrive.py).
    webhook_woken_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-last_seen"]
        constraints = [
            models.UniqueConstraint(
                fields=["key"], condition=models.Q(status="open"), name="one_open_alert_per_problem"
            )
        ]

    def __str__(self):
        return f"{self.get_kind_display()}: {self.message[:80]}"

    def acknowledge(self, by: str, at=None) -> bool:
        changes = dict(status=self.Status.ACKNOWLEDGED, acknowledged_by=by[:150], acknowledged_at=at or timezone.now())
        won = update_if(self, Q(status=self.Status.OPEN), **changes)
        self.refresh_from_db()  # a lost race shows who acknowledged it first
        return won


class WebhookDelivery(models.Model):
    """One try to deliver an alert to the webhook: retried with backoff, every try kept."""

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="deliveries")
    attempt = models.PositiveSmallIntegerField()
    url = models.CharField(max_length=500)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    delivered = models.BooleanField(default=False)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["alert_id", "attempt"]
        verbose_name_plural = "webhook deliveries"
