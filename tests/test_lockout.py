"""Repeated failed logins lock a username out from that address (django-axes), until the cool-off or a reset."""

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff():
    return User.objects.create_user("sam", password="right-horse-battery", is_staff=True)


def log_in(client, password, address="10.0.0.1", username="sam", **headers):
    return client.post(
        reverse("admin:login"), {"username": username, "password": password}, REMOTE_ADDR=address, **headers
    )


def fail(client, times, address="10.0.0.1", **headers):
    for _ in range(times):
        log_in(client, "wrong", address, **headers)  # the form again with its error, and at the limit the lockout page


def test_it_refuses_even_the_right_password_after_five_failures(client, staff):
    fail(client, 5)
    response = log_in(client, "right-horse-battery")
    assert response.status_code == 429 and "Too many failed logins" in response.content.decode()


def test_it_lets_the_right_password_in_after_four_failures(client, staff):
    fail(client, 4)
    assert log_in(client, "right-horse-battery").status_code == 302


def test_a_lockout_holds_only_for_the_address_it_came_from(client, staff):
    fail(client, 5, address="10.0.0.66")
    assert log_in(client, "right-horse-battery", address="10.0.0.1").status_code == 302


def test_an_administrator_lifts_a_lockout_with_axes_reset_username(client, staff):
    fail(client, 5)
    call_command("axes_reset_username", "sam")
    assert log_in(client, "right-horse-battery").status_code == 302


def test_the_cool_off_ends_a_lockout(client, staff, settings):
    from datetime import timedelta

    from axes.models import AccessAttempt

    fail(client, 5)
    AccessAttempt.objects.update(attempt_time=AccessAttempt.objects.get().attempt_time - timedelta(minutes=16))
    assert log_in(client, "right-horse-battery").status_code == 302


def test_behind_a_proxy_a_lockout_holds_for_the_forwarded_address_only(client, staff, settings):
    settings.PAGETRAIL_PROXY_COUNT = 1
    fail(client, 5, address="10.9.9.9", HTTP_X_FORWARDED_FOR="203.0.113.66")
    assert log_in(client, "right-horse-battery", "10.9.9.9", HTTP_X_FORWARDED_FOR="203.0.113.7").status_code == 302


def test_behind_a_proxy_a_caller_cannot_dodge_a_lockout_by_forging_x_forwarded_for(client, staff, settings):
    settings.PAGETRAIL_PROXY_COUNT = 1
    fail(client, 5, address="10.9.9.9", HTTP_X_FORWARDED_FOR="203.0.113.66")
    forged = "198.51.100.1, 203.0.113.66"  # the proxy appends the address it saw
    assert log_in(client, "right-horse-battery", "10.9.9.9", HTTP_X_FORWARDED_FOR=forged).status_code == 429
