"""The second factor: TOTP devices (django-otp), enrolled from the portal, asked for at the admin login.

Whoever has a confirmed device must give its code (or one of their recovery codes) to log in. Superusers and
retention approvers must have one when PAGETRAIL_REQUIRE_MFA is on (the production profile): until their session
is verified by a code they reach only the two-factor page, which enrols a device or verifies the session with the
one they have. With it on, enrolling takes an enrolment code another administrator issued (portal/enrolment.py):
a stolen password alone cannot bind a second factor.
"""

import time
from base64 import b32encode
from urllib.parse import quote

import qrcode
import qrcode.image.svg
from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.admin.views.decorators import staff_member_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import mark_safe
from django.views.decorators.cache import never_cache
from django_otp import login as verify_session
from django_otp import user_has_device
from django_otp.admin import OTPAdminAuthenticationForm
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

from . import enrolment
from .models import EnrolmentCode, RecoveryCodeDevice

APPROVE_PERMISSION = "audit.approve_retentionpolicy"  # approving a retention policy lets files be deleted
CODE_WIDGET = forms.TextInput(attrs={"autocomplete": "one-time-code", "inputmode": "numeric", "size": 8})
ENROLLING_DEVICE = "pagetrail_enrolling_device"  # session key: the unconfirmed device this session may see
WRONG_CODE = "That code is not the current one: check the app and the device's clock."
REUSED_CODE = (
    "That code was already used (to enrol, or to log in): a code works once. Wait for the next one; "
    "the app shows it within 30 seconds."
)


def needs_second_factor(user) -> bool:
    """Whether this user may not use the portal on a password alone."""
    # By the permission, not the group: whoever may approve a deletion, however they were given the right.
    return bool(
        settings.PAGETRAIL_REQUIRE_MFA
        and user.is_authenticated
        and (user.is_superuser or user.has_perm(APPROVE_PERMISSION))
    )


class SecondFactorLoginForm(OTPAdminAuthenticationForm):
    """The admin login: a password, and the authenticator code of whoever has enrolled a device."""

    otp_token = forms.CharField(
        required=False,
        label="Authenticator code",
        help_text="Or one of your recovery codes.",
        widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "size": 20}),
    )
    otp_error_messages = dict(
        OTPAdminAuthenticationForm.otp_error_messages,
        token_required="This account has an authenticator: enter its current code (or a recovery code).",
    )

    def clean(self):
        self.cleaned_data = AdminAuthenticationForm.clean(self)
        user = self.get_user()
        if user is not None and user_has_device(user):
            self.clean_otp(user)
        return self.cleaned_data

    def _verify_token(self, user, token, device=None):
        if isinstance(device, TOTPDevice) and already_used(device, token):
            raise forms.ValidationError(REUSED_CODE, code="code_reused")
        return super()._verify_token(user, token, device)

    def _chosen_device(self, user):
        # One authenticator per user (the two-factor page enrols one) and one set of recovery codes, told apart by
        # what was typed (six digits, or letters in groups), so nobody has to pick a device from a list.
        token = (self.cleaned_data.get("otp_token") or "").strip()
        model = TOTPDevice if token.isdigit() else RecoveryCodeDevice
        return model.objects.filter(user=user, confirmed=True).first()


class CodeForm(forms.Form):
    otp_token = forms.CharField(label="Authenticator code", widget=CODE_WIDGET)


class EnrolmentCodeForm(forms.Form):
    enrolment_code = forms.CharField(
        label="Enrolment code",
        help_text="An administrator issues it (it is valid once, for a day).",
        widget=forms.TextInput(attrs={"autocomplete": "off", "size": 28}),
    )


class RequireSecondFactorMiddleware:
    """Sends a user who needs a second factor, in a session no code has verified, to the two-factor page."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        open_paths = (reverse("two-factor"), reverse("admin:logout"), reverse("admin:login"))
        if request.path not in open_paths and needs_second_factor(request.user) and not request.user.is_verified():
            return redirect(f"{reverse('two-factor')}?next={quote(request.get_full_path())}")
        return self.get_response(request)


def qr_svg(text: str) -> str:
    return qrcode.make(text, image_factory=qrcode.image.svg.SvgPathImage, box_size=8).to_string(encoding="unicode")


@never_cache
@staff_member_required
def two_factor(request):
    """Verify this session with the authenticator the user has; else enrol one: an administrator's enrolment code
    first where one is needed, then the QR code and secret (for this session only) until a code confirms it."""
    device = TOTPDevice.objects.filter(user=request.user, confirmed=True).first()
    if device is not None:
        return verify(request, device)
    device = enrolling_device(request)
    return ask_enrolment_code(request) if device is None else confirm_enrolment(request, device)


def enrolling_device(request) -> TOTPDevice | None:
    """The device this session is enrolling. Kept in the session, not found by user: whoever else logs in with the
    password sees neither its secret nor the enrolment code's effect."""
    device = TOTPDevice.objects.filter(
        pk=request.session.get(ENROLLING_DEVICE), user=request.user, confirmed=False
    ).first()
    return device or (None if enrolment.code_needed_to_enrol() else start_enrolment(request))


def start_enrolment(request) -> TOTPDevice:
    TOTPDevice.objects.filter(user=request.user, confirmed=False).delete()
    device = TOTPDevice.objects.create(user=request.user, name="Authenticator app", confirmed=False)
    request.session[ENROLLING_DEVICE] = device.pk
    return device


def ask_enrolment_code(request):
    form = EnrolmentCodeForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        if EnrolmentCode.redeem(request.user, form.cleaned_data["enrolment_code"]):
            start_enrolment(request)
            return redirect(request.get_full_path())
        form.add_error(
            "enrolment_code",
            "That code is not one for this account, or it was used or has expired: ask an administrator for a new one.",
        )
    return page(request, form, enrolment_code=True)


def confirm_enrolment(request, device: TOTPDevice):
    form = CodeForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        if device.verify_token(form.cleaned_data["otp_token"].strip()):
            codes = enrolment.enrol(request.user, device)
            request.session.pop(ENROLLING_DEVICE, None)
            verify_session(request, device)
            context = {**admin.site.each_context(request), "title": "Recovery codes", "codes": codes}
            return render(request, "portal/recovery_codes.html", {**context, "next": safe_next(request)})
        form.add_error("otp_token", WRONG_CODE)
    return page(
        request, form, device=device, qr=mark_safe(qr_svg(device.config_url)), secret=b32encode(device.bin_key).decode()
    )


def verify(request, device: TOTPDevice):
    form = CodeForm(request.POST or None)
    if request.method == "POST" and form.is_valid() and already_used(device, form.cleaned_data["otp_token"].strip()):
        form.add_error("otp_token", REUSED_CODE)
    elif request.method == "POST" and form.is_valid():
        if device.verify_token(form.cleaned_data["otp_token"].strip()):
            verify_session(request, device)
            messages.success(request, "Session verified.")
            return redirect(safe_next(request))
        form.add_error("otp_token", WRONG_CODE)
    return page(request, form, device=device, verified=request.user.is_verified())


def already_used(device: TOTPDevice, token: str) -> bool:
    """A code the device accepted already (it is of a time step no later than the last one used): django-otp refuses
    it again, rightly, and would count the try as a failure and throttle the next one. Said as what it is instead,
    and not counted, since a used code can never be accepted: the person just typed the enrolment code again."""
    if not (token.isdigit() and device.last_t >= 0):
        return False
    code = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
    code.time = time.time()
    return code.verify(int(token), device.tolerance) and code.t() <= device.last_t


def page(request, form, **context):
    context = {**admin.site.each_context(request), "title": "Two-factor authentication", "form": form, **context}
    return render(request, "portal/two_factor.html", context)


def safe_next(request) -> str:
    target = request.GET.get("next", "")
    safe = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return target if safe and target else reverse("admin:index")
