"""Service accounts of upstream systems, their tokens (stored hashed, expiring), what each submitted,
which bundles each may read, and Idempotency-Key records."""

import hashlib
import secrets
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import models, transaction
from django.utils import timezone

from core.sealed import SealedCharField

from .signals import activity
from .webhooks import addresses, signing


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def http_address(value: str) -> None:
    """A webhook is an HTTP POST: any other scheme (ftp:, file:, javascript:) is refused in words."""
    http_scheme(value)
    URLValidator(schemes=["http", "https"], message="Enter a full web address, e.g. https://example.org/hooks.")(value)


def http_scheme(value: str) -> None:
    if value.split(":", 1)[0].lower() not in ("http", "https"):
        raise ValidationError(
            "A webhook URL must start with http:// or https:// (the events are sent as HTTP POST requests).",
            code="webhook_url_scheme",
        )


def webhook_url_check(value: str) -> None:
    """Every check of a webhook URL at registration (the admin's form and the API alike); an internal host is
    refused before the URL's form is judged, so any spelling of one gets the same code."""
    if len(value) > URL_MAX:
        raise ValidationError(f"A webhook URL holds at most {URL_MAX} characters.", code="webhook_url_too_long")
    http_scheme(value)
    if reason := addresses.internal_host(value):
        raise ValidationError(
            f"A webhook URL must not point inside Pagetrail's network ({reason}); use the receiver's public address.",
            code="webhook_url_internal",
        )
    http_address(value)


URL_MAX = 500


class ServiceAccount(models.Model):
    """An upstream service (a claims pipeline, a contracts backend). It sees only what it submitted.

    Its tokens expire; a new one can be issued while the older ones stay valid for an overlap, so the
    service can roll its secret without downtime. Revoking the account refuses all its tokens at once.
    """

    name = models.CharField(max_length=100, unique=True)
    created_by = models.CharField(max_length=150, blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    webhook_url = models.CharField(
        max_length=URL_MAX,
        blank=True,
        validators=[webhook_url_check],
        help_text="Where job.completed, job.failed and submission.refused events are POSTed (empty: none)",
    )
    # Not hashed, since every delivery is signed with them: sealed in the database (core/sealed.py), so a copy of it
    # (a backup, a read replica) holds no secret a receiver trusts. Shown once, when issued.
    webhook_secret = SealedCharField(max_length=200, blank=True, editable=False)
    webhook_previous_secret = SealedCharField(max_length=200, blank=True, editable=False)
    webhook_previous_until = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return f"{self.name}{' (revoked)' if self.revoked_at else ''}"

    def issue_token(self, by: str = "", at=None) -> str:
        """A new random token, returned once (only its hash is kept); older tokens expire after the overlap."""
        at = at or timezone.now()
        token = f"pt_{secrets.token_urlsafe(32)}"
        overlap_end = at + timedelta(days=settings.PAGETRAIL_TOKEN_OVERLAP_DAYS)
        with transaction.atomic():
            self.tokens.valid(at).filter(expires_at__gt=overlap_end).update(expires_at=overlap_end)
            issued = ServiceAccountToken.objects.create(
                account=self,
                token_sha256=token_hash(token),
                prefix=token[:10],
                created_by=by[:150],
                created_at=at,
                expires_at=at + timedelta(days=settings.PAGETRAIL_TOKEN_DAYS),
            )
            _changed(by, "token_issued", issued, account=self.name, expires_at=issued.expires_at.isoformat())
        return token

    def issue_webhook_secret(self, by: str = "", at=None) -> str:
        """A new signing secret, returned once. The one it replaces still signs too (a second signature) for the
        token overlap, so the receiver can switch without refusing a delivery."""
        at = at or timezone.now()
        secret, until = signing.new_secret(), at + timedelta(days=settings.PAGETRAIL_TOKEN_OVERLAP_DAYS)
        previous = dict(webhook_previous_secret=self.webhook_secret, webhook_previous_until=until)
        changes = {"webhook_secret": secret, **(previous if self.webhook_secret else {})}
        ServiceAccount.objects.filter(pk=self.pk).update(**changes)
        for name, value in changes.items():
            setattr(self, name, value)
        _changed(by, "webhook_secret_issued", self, account=self.name)
        return secret

    def register_webhook(self, url: str, by: str = "") -> str | None:
        """Set the URL events are POSTed to (checked first: `webhook_url_check` raises ValidationError); the signing
        secret issued with the first URL is returned once, None when the account already had one."""
        webhook_url_check(url)
        ServiceAccount.objects.filter(pk=self.pk).update(webhook_url=url)
        self.webhook_url = url
        # The host only: a URL may carry a receiver's credentials (user:password@, a token in its query).
        _changed(by, "webhook_url_set", self, account=self.name, host=urlsplit(url).hostname)
        return None if self.webhook_secret else self.issue_webhook_secret(by=by)

    def remove_webhook(self, by: str = "") -> bool:
        """No more events for this account (the secret is kept: a URL registered again signs as before)."""
        done = ServiceAccount.objects.filter(pk=self.pk).exclude(webhook_url="").update(webhook_url="")
        self.webhook_url = ""
        if done:
            _changed(by, "webhook_url_removed", self, account=self.name)
        return done == 1

    def webhook_secrets(self, at=None) -> list[str]:
        """What a delivery is signed with now: the secret, and the one it replaced during the overlap."""
        overlap = self.webhook_previous_until is not None and self.webhook_previous_until > (at or timezone.now())
        return [self.webhook_secret] + ([self.webhook_previous_secret] if overlap else [])

    def revoke(self, at=None, by: str = "") -> bool:
        done = ServiceAccount.objects.filter(pk=self.pk, revoked_at__isnull=True).update(
            revoked_at=at or timezone.now()
        )
        if done:
            _changed(by, "service_account_revoked", self, account=self.name)
        return done == 1

    @classmethod
    def for_token(cls, token: str, at=None) -> "ServiceAccount | None":
        """The account whose unexpired, unrevoked token this is, or None."""
        found = (
            ServiceAccountToken.objects.valid(at)
            .filter(token_sha256=token_hash(token), account__revoked_at__isnull=True)
            .select_related("account")
            .first()
        )
        return found.account if found else None

    @classmethod
    def token_refusal(cls, token: str, at=None) -> str:
        """Why `for_token` found no account: "expired", "revoked" (the token or its account) or "unknown"."""
        found = ServiceAccountToken.objects.filter(token_sha256=token_hash(token)).select_related("account").first()
        if found is None:
            return "unknown"
        if found.revoked_at is not None or found.account.revoked_at is not None:
            return "revoked"
        return "expired" if found.expires_at <= (at or timezone.now()) else "unknown"


class TokenQuerySet(models.QuerySet):
    def valid(self, at=None):
        return self.filter(revoked_at__isnull=True, expires_at__gt=at or timezone.now())


class ServiceAccountToken(models.Model):
    """One secret of a service account, stored as its sha256; the prefix recognises it, never uses it."""

    account = models.ForeignKey(ServiceAccount, on_delete=models.CASCADE, related_name="tokens")
    token_sha256 = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=12, editable=False, help_text="To recognise a token, not to use it")
    created_by = models.CharField(max_length=150, blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    expires_at = models.DateTimeField(editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = TokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.prefix}… of {self.account.name}"

    def revoke(self, at=None, by: str = "") -> bool:
        done = ServiceAccountToken.objects.filter(pk=self.pk, revoked_at__isnull=True).update(
            revoked_at=at or timezone.now()
        )
        if done:
            _changed(by, "token_revoked", self, account=self.account.name)
        return done == 1


def _changed(by: str, action: str, obj, **after) -> None:
    """Access changes are activity (audit records them): who issued or revoked which secret."""
    activity.send(
        type(obj), actor=by or "system", action=action, obj=obj, after={"prefix": getattr(obj, "prefix", None), **after}
    )


class BundleAccess(models.Model):
    """A service account's access to a bundle it submitted: what it may read.

    The bundle and its stored input are shared when two accounts send the same bytes; the jobs are not:
    an account whose bytes were already known gets a round of its own (`intake.rounds.job_for`), so nothing it
    reads says that somebody sent them first. (Not the `Submission`, which is one upload through intake.)
    """

    account = models.ForeignKey(ServiceAccount, on_delete=models.CASCADE, related_name="bundle_accesses")
    bundle = models.ForeignKey("extraction.Bundle", on_delete=models.CASCADE, related_name="accesses")
    job = models.ForeignKey(
        "extraction.Job",
        on_delete=models.CASCADE,
        related_name="given_to",
        help_text="The job this account was given first",
    )
    # The label this account gave the bytes: the bundle's own is its first sender's, which another account must
    # never read (it would say the bytes were sent before, and a case label may name a claimant).
    case_label = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "bundle"], name="one_submission_per_account")]

    def __str__(self):
        return f"{self.bundle} by {self.account.name}"


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
    # A 202's submission, replayed as it is now (pending then, perhaps decided since).
    submission = models.ForeignKey(
        "extraction.Submission", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "key"], name="one_record_per_key")]

    def take_over_if_abandoned(self, request_sha256: str, at=None) -> bool:
        """Claim a key whose request never answered within its lease (a guarded update: one taker wins)."""
        at = at or timezone.now()
        expired = at - timedelta(seconds=settings.PAGETRAIL_IDEMPOTENCY_LEASE_SECONDS)
        return (
            IdempotencyRecord.objects.filter(pk=self.pk, response_status__isnull=True, created_at__lt=expired).update(
                created_at=at, request_sha256=request_sha256
            )
            == 1
        )
