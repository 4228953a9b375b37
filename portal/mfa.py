"""The second factor: TOTP devices (django-otp), enrolled from the portal, asked for at the admin login.

Whoever has a confirmed device must give its code to log in. Superusers and retention approvers must have one
when PAGETRAIL_REQUIRE_MFA is on (the production profile): until their session is verified by a code they reach
only the two-factor page, which enrols a device or verifies the session with the one they have.
"""

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
from django_otp import devices_for_user, user_has_device
from django_otp import login as verify_session
from django_otp.admin import OTPAdminAuthenticationForm
from django_otp.plugins.otp_totp.models import TOTPDevice

APPROVE_PERMISSION = "audit.approve_retentionpolicy"  # approving a retention policy lets files be deleted
CODE_WIDGET = forms.TextInput(attrs={"autocomplete": "one-time-code", "inputmode": "numeric", "size": 8})


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

    otp_token = forms.CharField(required=False, label="Authenticator code", widget=CODE_WIDGET)
    otp_error_messages = dict(
        OTPAdminAuthenticationForm.otp_error_messages,
        token_required="This account has an authenticator: enter its current code.",
    )

    def clean(self):
        self.cleaned_data = AdminAuthenticationForm.clean(self)
        user = self.get_user()
        if user is not None and user_has_device(user):
            self.clean_otp(user)
        return self.cleaned_data

    def _chosen_device(self, user):
        # One TOTP device per user (the two-factor page enrols one), so nobody has to pick it from a list.
        return next(devices_for_user(user, for_verify=True), None)


class CodeForm(forms.Form):
    otp_token = forms.CharField(label="Authenticator code", widget=CODE_WIDGET)


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


def device_of(user) -> TOTPDevice:
    """The user's confirmed device, else the one being enrolled (kept until confirmed, so a reload shows the same)."""
    device = TOTPDevice.objects.filter(user=user).order_by("-confirmed", "pk").first()
    return device or TOTPDevice.objects.create(user=user, name="Authenticator app", confirmed=False)


@staff_member_required
def two_factor(request):
    """Enrol an authenticator (QR code and secret shown until a code confirms it), or verify this session."""
    device = device_of(request.user)
    form = CodeForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        if device.verify_token(form.cleaned_data["otp_token"].strip()):
            return confirmed(request, device)
        form.add_error("otp_token", "That code is not the current one: check the app and the device's clock.")
    context = {
        **admin.site.each_context(request),
        "title": "Two-factor authentication",
        "form": form,
        "device": device,
        "verified": request.user.is_verified(),
        "next": request.GET.get("next", ""),
    }
    if not device.confirmed:
        context.update(qr=mark_safe(qr_svg(device.config_url)), secret=b32encode(device.bin_key).decode())
    return render(request, "portal/two_factor.html", context)


def confirmed(request, device):
    enrolled = not device.confirmed
    if enrolled:
        device.confirmed = True
        device.save(update_fields=["confirmed"])
    verify_session(request, device)
    messages.success(
        request, "Authenticator enrolled: the login asks for its code from now on." if enrolled else "Session verified."
    )
    target = request.GET.get("next", "")
    safe = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return redirect(target if safe and target else reverse("admin:index"))
