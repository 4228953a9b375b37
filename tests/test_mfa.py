"""The second factor: asked for at login once enrolled, required of superusers and approvers in production."""

import re
from base64 import b32decode
from io import StringIO

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.management import call_command
from django.urls import reverse
from django_otp.oath import totp
from django_otp.plugins.otp_totp.models import TOTPDevice

from audit.models import ActivityEvent

pytestmark = pytest.mark.django_db


def staff(username="sam", role=None, superuser=False):
    account = User.objects.create_user(username, password="right-horse-battery", is_staff=True, is_superuser=superuser)
    if role:
        account.groups.add(Group.objects.get(name=role))
    return account


def log_in(client, username="sam", password="right-horse-battery", code=""):
    return client.post(reverse("admin:login"), {"username": username, "password": password, "otp_token": code})


def code_of(device, steps_ahead=0) -> str:
    return f"{totp(device.bin_key, drift=steps_ahead):06d}"


def test_a_user_with_an_authenticator_cannot_log_in_on_the_password_alone(client):
    TOTPDevice.objects.create(user=staff(), name="phone", confirmed=True)
    response = log_in(client)
    assert response.status_code == 200 and "enter its current code" in response.content.decode()


def test_a_user_with_an_authenticator_logs_in_with_its_code(client):
    device = TOTPDevice.objects.create(user=staff(), name="phone", confirmed=True)
    assert log_in(client, code=code_of(device)).status_code == 302
    assert client.get(reverse("admin:index")).status_code == 200


def test_a_code_is_accepted_only_once(client):
    device = TOTPDevice.objects.create(user=staff(), name="phone", confirmed=True)
    code = code_of(device)
    log_in(client, code=code)
    client.logout()
    assert log_in(client, code=code).status_code == 200


def test_a_code_used_again_is_named_as_used_and_costs_no_throttled_try(client):
    device = TOTPDevice.objects.create(user=staff(), name="phone", confirmed=True)
    code = code_of(device)
    assert log_in(client, code=code).status_code == 302
    client.logout()
    again = log_in(client, code=code).content.decode()
    assert "already used" in again and "temporarily disabled" not in again
    device.refresh_from_db()
    assert device.throttling_failure_count == 0
    assert log_in(client, code=code_of(device, steps_ahead=1)).status_code == 302  # the next code logs in at once


def test_the_two_factor_page_names_a_code_used_again_too(client, settings):
    settings.PAGETRAIL_REQUIRE_MFA = True
    device = TOTPDevice.objects.create(user=staff(superuser=True), name="phone", confirmed=True)
    code = code_of(device)
    log_in(client, code=code)
    client.logout()
    client.force_login(device.user)  # a password-only session, as a login page without the code field leaves
    page = client.post(reverse("two-factor"), {"otp_token": code}).content.decode()
    assert "already used" in page
    device.refresh_from_db()
    assert device.throttling_failure_count == 0


def test_a_wrong_code_is_still_a_failed_try(client):
    device = TOTPDevice.objects.create(user=staff(), name="phone", confirmed=True)
    wrong = f"{(int(code_of(device)) + 1) % 1_000_000:06d}"
    assert "already used" not in log_in(client, code=wrong).content.decode()
    device.refresh_from_db()
    assert device.throttling_failure_count == 1


def test_the_embedded_demo_admin_logs_in_without_a_second_factor(client, settings):
    settings.PAGETRAIL_REQUIRE_MFA = False  # the embedded profile's default (tests/test_settings.py)
    call_command("create_demo_admin")
    password = (settings.DATA_DIR / "secrets" / "demo_admin_password").read_text().strip()
    assert log_in(client, "admin", password).status_code == 302
    assert client.get(reverse("admin:index")).status_code == 200


@pytest.mark.parametrize("who", [{"superuser": True}, {"role": "Retention approver"}])
def test_production_sends_a_superuser_or_approver_without_a_verified_session_to_enrol(client, settings, who):
    settings.PAGETRAIL_REQUIRE_MFA = True
    staff(**who)
    log_in(client)
    response = client.get(reverse("admin:index"))
    assert response.status_code == 302 and response.url.startswith(reverse("two-factor"))


def test_production_asks_a_second_factor_of_anyone_given_the_approve_permission_directly(client, settings):
    settings.PAGETRAIL_REQUIRE_MFA = True
    staff().user_permissions.add(Permission.objects.get(codename="approve_retentionpolicy"))
    log_in(client)
    response = client.get(reverse("admin:index"))
    assert response.status_code == 302 and response.url.startswith(reverse("two-factor"))


def test_production_lets_other_roles_in_on_a_password(client, settings):
    settings.PAGETRAIL_REQUIRE_MFA = True
    staff(role="Reviewer")
    log_in(client)
    assert client.get(reverse("admin:index")).status_code == 200


def test_enrolment_shows_the_secret_and_a_code_from_it_confirms_the_device(client, settings):
    settings.PAGETRAIL_REQUIRE_MFA = True
    staff(superuser=True)
    code = StringIO()
    call_command("mfa_enrolment_code", "sam", stdout=code)
    log_in(client)
    client.post(reverse("two-factor"), {"enrolment_code": code.getvalue().strip()})
    page = client.get(reverse("two-factor")).content.decode()
    assert '<div id="enrol-qr"><svg' in page
    secret = b32decode(re.search(r'id="enrol-secret">([A-Z2-7]+)<', page).group(1))
    response = client.post(reverse("two-factor") + "?next=/admin/", {"otp_token": f"{totp(secret):06d}"})
    assert response.status_code == 200 and 'id="recovery-codes-done" href="/admin/"' in response.content.decode()
    assert TOTPDevice.objects.get().confirmed
    assert client.get(reverse("admin:index")).status_code == 200


def test_enrolment_refuses_a_wrong_code_and_keeps_the_device_unconfirmed(client):
    staff()
    log_in(client)
    client.get(reverse("two-factor"))
    device = TOTPDevice.objects.get()
    response = client.post(reverse("two-factor"), {"otp_token": f"{(totp(device.bin_key) + 1) % 10**6:06d}"})
    assert response.status_code == 200 and "not the current one" in response.content.decode()
    assert not TOTPDevice.objects.get().confirmed


def test_the_secret_is_not_shown_again_once_the_device_is_confirmed(client):
    device = TOTPDevice.objects.create(user=staff(), name="phone", confirmed=True)
    log_in(client, code=code_of(device))
    page = client.get(reverse("two-factor")).content.decode()
    assert 'id="enrol-secret"' not in page and 'id="enrol-qr"' not in page


def test_reset_second_factor_lets_a_user_who_lost_the_device_log_in_and_enrol_again(client):
    device = TOTPDevice.objects.create(user=staff(), name="lost phone", confirmed=True)
    call_command("reset_second_factor", "sam", stdout=StringIO())
    assert not TOTPDevice.objects.filter(pk=device.pk).exists()
    assert log_in(client).status_code == 302
    assert ActivityEvent.objects.get(action="second_factor_reset").actor == "system"
