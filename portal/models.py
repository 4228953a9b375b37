"""What binds a second factor beyond a password: enrolment codes an administrator issues, and recovery codes.

Both are stored as SHA-256 digests only. The codes are random (100 and 80 bits), so an unsalted digest cannot be
guessed back from a database copy; a slow password hash would buy nothing but seconds at every login.
"""

import hashlib
import secrets
from base64 import b32encode
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django_otp.models import Device, ThrottlingMixin

from core.guarded import update_if

ENROLMENT_CODE_LIFETIME = timedelta(hours=24)
RECOVERY_CODES_PER_USER = 10


def new_code(characters: int) -> str:
    """A random code in groups of four base32 characters (no 0, 1, 8 or 9 to misread), e.g. ABCD-EFGH-..."""
    text = b32encode(secrets.token_bytes(characters * 5 // 8 + 1)).decode()[:characters]
    return "-".join(text[i : i + 4] for i in range(0, characters, 4))


def digest(code: str) -> str:
    """The stored form of a code: typed in any case, with or without the dashes and spaces."""
    plain = "".join(code.split()).replace("-", "").upper()
    return hashlib.sha256(plain.encode()).hexdigest()


class EnrolmentCodeQuerySet(models.QuerySet):
    def usable(self, at=None):
        return self.filter(used_at__isnull=True, expires_at__gt=at or timezone.now())


class EnrolmentCode(models.Model):
    """A one-time code another administrator issued so this user may bind an authenticator (a password is not
    enough where a second factor is required). Single use, bound to its user, expires after a day."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="enrolment_codes")
    code_sha256 = models.CharField(max_length=64, unique=True)
    issued_by = models.CharField(max_length=150)
    issued_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    objects = EnrolmentCodeQuerySet.as_manager()

    class Meta:
        ordering = ["-issued_at"]

    def __str__(self):
        return f"enrolment code for {self.user} issued by {self.issued_by}"

    @classmethod
    def issue(cls, user, by: str, at=None) -> tuple["EnrolmentCode", str]:
        """A new code for `user`: the row, and the code itself (shown once, never stored)."""
        at = at or timezone.now()
        code = new_code(20)
        row = cls.objects.create(
            user=user, code_sha256=digest(code), issued_by=by, issued_at=at, expires_at=at + ENROLMENT_CODE_LIFETIME
        )
        return row, code

    @classmethod
    def redeem(cls, user, code: str, at=None) -> bool:
        """Use up `user`'s unexpired, unused `code`; False if there is none (or another request used it first)."""
        at = at or timezone.now()
        row = cls.objects.usable(at).filter(user=user, code_sha256=digest(code)).first()
        return row is not None and row.mark_used(at)

    def mark_used(self, at=None) -> bool:
        return update_if(self, Q(used_at__isnull=True), used_at=at or timezone.now())


class RecoveryCodeDevice(ThrottlingMixin, Device):
    """A user's recovery codes, shown once at enrolment: each logs in once in place of the authenticator's code."""

    def get_throttle_factor(self) -> int:
        return 1  # as django-otp's TOTP default: 1, 2, 4... seconds after successive wrong codes

    @classmethod
    def replace_for(cls, user) -> list[str]:
        """New codes for `user` (earlier ones stop working): the codes themselves, to be shown once."""
        cls.objects.filter(user=user).delete()
        device = cls.objects.create(user=user, name="Recovery codes", confirmed=True)
        codes = [new_code(16) for _ in range(RECOVERY_CODES_PER_USER)]
        RecoveryCode.objects.bulk_create(RecoveryCode(device=device, code_sha256=digest(code)) for code in codes)
        return codes

    def verify_token(self, token) -> bool:
        code = self.codes.filter(code_sha256=digest(str(token)), used_at__isnull=True).first()
        used = code is not None and code.mark_used()
        if used:
            self.throttle_reset()
        else:
            self.throttle_increment()
        return used


class RecoveryCode(models.Model):
    device = models.ForeignKey(RecoveryCodeDevice, on_delete=models.CASCADE, related_name="codes")
    code_sha256 = models.CharField(max_length=64)
    used_at = models.DateTimeField(null=True, blank=True)

    def mark_used(self, at=None) -> bool:
        return update_if(self, Q(used_at__isnull=True), used_at=at or timezone.now())


class TimeZonePreference(models.Model):
    """The time zone a person reads times in; without one, the portal's (PAGETRAIL_TIME_ZONE)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="time_zone_preference")
    time_zone = models.CharField(max_length=64, help_text="An IANA time zone name, e.g. Europe/Zurich")

    def __str__(self):
        return f"{self.user} reads times in {self.time_zone}"
