"""Webhook events (one per event and account: its body, kept for every try and replay) and their tries."""

import uuid
from datetime import timedelta

from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.guarded import update_if


def new_webhook_id() -> str:
    return f"msg_{uuid.uuid4().hex}"


class WebhookEventQuerySet(models.QuerySet["WebhookEvent"]):
    def overdue(self, grace: timedelta, at=None):
        """Pending events whose next try should have started `grace` ago: their task was lost (Redis flushed,
        a worker killed mid-try)."""
        return self.filter(state=WebhookEvent.State.PENDING, next_attempt_at__lt=(at or timezone.now()) - grace)


class WebhookEvent(models.Model):
    """One event for one service account, delivered at least once: the receiver deduplicates by `webhook_id`."""

    class Type(models.TextChoices):
        JOB_COMPLETED = "job.completed"
        JOB_FAILED = "job.failed"
        SUBMISSION_REFUSED = "submission.refused"

    class State(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        GIVEN_UP = "given_up"

    webhook_id = models.CharField(max_length=40, unique=True, default=new_webhook_id, editable=False)
    account = models.ForeignKey("extraction.ServiceAccount", on_delete=models.CASCADE, related_name="webhook_events")
    type = models.CharField(max_length=30, choices=Type.choices, db_index=True)
    job = models.ForeignKey("extraction.Job", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    submission = models.ForeignKey(
        "extraction.Submission", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    body = models.TextField(help_text="The JSON sent, the same bytes on every try and replay")
    occurred_at = models.DateTimeField(default=timezone.now)
    state = models.CharField(max_length=20, choices=State.choices, default=State.PENDING, db_index=True)
    tries = models.PositiveSmallIntegerField(default=0, help_text="Tries since it was recorded or last replayed")
    next_attempt_at = models.DateTimeField(null=True, blank=True, help_text="When the next try is due")
    delivered_at = models.DateTimeField(null=True, blank=True)
    replays = models.PositiveSmallIntegerField(default=0)

    objects = WebhookEventQuerySet.as_manager()

    class Meta:
        ordering = ["-occurred_at"]
        indexes = [models.Index(fields=["state", "next_attempt_at"], name="webhook_event_due")]
        permissions = [("replay_webhookevent", "Can replay webhook events")]

    def __str__(self):
        return f"{self.type} {self.webhook_id} to {self.account.name}"

    def claim(self, lease: timedelta, at=None) -> bool:
        """Take a due try (one taker: the next one is pushed past the lease, so a second task finds it not due
        and the re-drive waits for a worker killed mid-try)."""
        now = at or timezone.now()
        due = Q(state=self.State.PENDING, next_attempt_at__lte=now, tries=self.tries)
        return update_if(self, due, tries=self.tries + 1, next_attempt_at=now + lease)

    def mark_delivered(self, at=None) -> bool:
        at = at or timezone.now()
        return update_if(
            self, Q(state=self.State.PENDING), state=self.State.DELIVERED, delivered_at=at, next_attempt_at=None
        )

    def mark_given_up(self) -> bool:
        return update_if(self, Q(state=self.State.PENDING), state=self.State.GIVEN_UP, next_attempt_at=None)

    def mark_due(self, when) -> bool:
        """The next try's time, after a failed one (or at once: a lost task re-driven)."""
        return update_if(self, Q(state=self.State.PENDING, tries=self.tries), next_attempt_at=when)

    def mark_redriven(self, at=None) -> bool:
        """Due at once again (its task was lost); one reconciler of several wins."""
        still = Q(state=self.State.PENDING, next_attempt_at=self.next_attempt_at)
        return update_if(self, still, next_attempt_at=at or timezone.now())

    def replay(self, at=None) -> bool:
        """Deliver the same event again (same webhook id and body, a new timestamp and signature), with a fresh
        budget of tries, whatever its state."""
        changes = dict(
            state=self.State.PENDING, tries=0, next_attempt_at=at or timezone.now(), replays=self.replays + 1
        )
        return update_if(self, Q(replays=self.replays), **changes)


class WebhookAttempt(models.Model):
    """One POST of an event: what the receiver answered, or why there was no answer."""

    event = models.ForeignKey(WebhookEvent, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveSmallIntegerField(help_text="The try's number since the event was recorded or replayed")
    url = models.CharField(max_length=500)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    retry_after_s = models.FloatField(null=True, blank=True)
    delivered = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["event_id", "at"]

    def __str__(self):
        return f"try {self.number} of {self.event.webhook_id}"
