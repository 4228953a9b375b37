"""Binding and unbinding a second factor: the enrolment codes administrators issue, device resets, enrolment.

Each is activity (the audit app records it from extraction's `activity` signal): who issued a code for whom and
until when, who removed whose devices, who enrolled. A code or a secret never enters the record.
"""

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django_otp.plugins.otp_totp.models import TOTPDevice

from core.guarded import update_if
from extraction.signals import activity

from .models import EnrolmentCode, RecoveryCodeDevice


def code_needed_to_enrol() -> bool:
    """Where a second factor is required, nobody binds one on a password alone, whatever their role: a device a
    reviewer bound that way would count the day they are made a superuser or an approver."""
    return settings.PAGETRAIL_REQUIRE_MFA


def issue_code(user, by: str) -> str:
    """A new enrolment code for `user` (valid for a day, once); the code itself, to be handed over, never stored."""
    with transaction.atomic():
        row, code = EnrolmentCode.issue(user, by)
        activity.send(
            EnrolmentCode,
            actor=by,
            action="mfa_enrolment_code_issued",
            obj=user,
            after={"enrolment_code": row.pk, "expires_at": row.expires_at.isoformat()},
        )
    return code


def reset_devices(user, by: str) -> int:
    """Remove `user`'s authenticators and recovery codes (a lost phone): they enrol again, with a new code where
    one is needed. How many devices went."""
    with transaction.atomic():
        names = sorted(TOTPDevice.objects.filter(user=user).values_list("name", flat=True))
        recovery = RecoveryCodeDevice.objects.filter(user=user).count()
        TOTPDevice.objects.filter(user=user).delete()
        RecoveryCodeDevice.objects.filter(user=user).delete()
        activity.send(
            TOTPDevice,
            actor=by,
            action="second_factor_reset",
            obj=user,
            before={"authenticators": names, "recovery_codes": bool(recovery)},
        )
    return len(names) + recovery


def enrol(user, device: TOTPDevice) -> list[str]:
    """Confirm the authenticator `user` proved they hold: their new recovery codes, to be shown once."""
    with transaction.atomic():
        TOTPDevice.objects.filter(user=user).exclude(pk=device.pk).delete()
        update_if(device, Q(confirmed=False), confirmed=True)
        codes = RecoveryCodeDevice.replace_for(user)
        activity.send(
            TOTPDevice,
            actor=user.get_username(),
            action="second_factor_enrolled",
            obj=user,
            after={"authenticator": device.name, "recovery_codes": len(codes)},
        )
    return codes
