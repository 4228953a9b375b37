"""Service accounts of upstream systems, their tokens (stored hashed), and Idempotency-Key records."""

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ServiceAccount(models.Model):
    """An upstream service (a claims pipeline, a contracts backend). The token is shown once, then only its hash."""

    name = models.CharField(max_length=100, unique=True)
    token_sha256 = models.CharField(max_length=64, unique=True, editable=False)
    token_prefix = models.CharField(max_length=12, editable=False, help_text="To recognise a token, not to use it")
    created_by = models.CharField(max_length=150, blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return f"{self.name} ({'revoked' if self.revoked_at else self.token_prefix + '…'})"

    def issue_token(self) -> str:
        """A new random token; only its hash is kept (call before saving)."""
        token = f"pt_{secrets.token_urlsafe(32)}"
        self.token_sha256, self.token_prefix = token_hash(token), token[:10]
        return token

    def revoke(self, at=None) -> bool:
        return ServiceAccount.objects.filter(pk=self.pk, revoked_at__isnull=True).update(
            revoked_at=at or timezone.now()) == 1

    @classmethod
    def for_token(cls, token: str) -> "ServiceAccount | None":
        return cls.objects.filter(token_sha256=token_hash(token), revoked_at__isnull=True).first()


class IdempotencyRecord(models.Model):
    """The first answer to an Idempotency-Key, replayed for the same payload; 422 for another, 409 meanwhile.

    A request in progress holds its key for PAGETRAIL_IDEMPOTENCY_LEASE_SECONDS; one that never answered
    (its web server was killed) gives the key up when the lease runs out.
    """

    KEY_MAX = 200

    account = models.ForeignKey(ServiceAccount, on_delete=models.CASCADE)
    key = models.CharField(max_length=200)
    request_sha256 = models.CharField(max_length=64)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Empty while in progress")
    response_body = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "key"], name="one_record_per_key")]

    def take_over_if_abandoned(self, request_sha256: str, at=None) -> bool:
        """Claim a key whose request never answered within its lease (a guarded update: one taker wins)."""
        at = at or timezone.now()
        expired = at - timedelta(seconds=settings.PAGETRAIL_IDEMPOTENCY_LEASE_SECONDS)
        return IdempotencyRecord.objects.filter(pk=self.pk, response_status__isnull=True, created_at__lt=expired).update(
            created_at=at, request_sha256=request_sha256) == 1
