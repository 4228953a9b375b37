"""A staff session ends when the browser closes, and on the server after SESSION_COOKIE_AGE at the latest."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.urls import reverse
from django.utils import timezone

pytestmark = pytest.mark.django_db


@pytest.fixture
def logged_in(client):
    User.objects.create_user("sam", password="right-horse-battery", is_staff=True)
    return client.post(reverse("admin:login"), {"username": "sam", "password": "right-horse-battery"})


def test_it_gives_a_cookie_that_ends_with_the_browser(logged_in):
    cookie = logged_in.cookies["sessionid"]
    assert (cookie["max-age"], cookie["expires"]) == ("", "")


def test_it_ends_the_session_on_the_server_after_eight_hours(logged_in):
    assert Session.objects.get().expire_date <= timezone.now() + timedelta(hours=8)
