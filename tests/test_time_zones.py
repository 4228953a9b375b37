"""Each person reads times in the zone they chose (Account → Time zone); everyone else in the portal's."""

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from extraction.models import Bundle
from portal.models import TimeZonePreference

pytestmark = pytest.mark.django_db
RECEIVED = datetime(2026, 7, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def bundle():
    return Bundle.objects.create(
        correlation_id="ab" * 32, size=1, page_count=1, mime="application/pdf", submitted_by="t", created_at=RECEIVED
    )


def reader(client, name: str):
    client.force_login(User.objects.create_superuser(name, password="x"))
    return client


def bundle_page(client, bundle) -> str:
    return client.get(reverse("admin:extraction_bundle_change", args=[bundle.pk])).content.decode()


def test_a_chosen_zone_shows_every_time_in_it_and_names_it(client, bundle):
    reader(client, "zoe")
    response = client.post(reverse("time-zone"), {"time_zone": "Europe/Zurich"}, follow=True)
    assert "Times are now shown in Europe/Zurich." in response.content.decode()
    page = bundle_page(client, bundle)
    assert "2026-07-01 14:00:00 CEST" in page and "12:00:00 UTC" not in page


def test_another_reader_keeps_the_portals_zone(client, bundle):
    TimeZonePreference.objects.create(user=User.objects.create_user("zoe"), time_zone="Asia/Tokyo")
    reader(client, "uma")
    assert "2026-07-01 12:00:00 UTC" in bundle_page(client, bundle)


def test_the_choice_outlives_the_session_and_can_be_undone(client, bundle):
    reader(client, "zoe").post(reverse("time-zone"), {"time_zone": "America/New_York"})
    client.logout()
    client.force_login(User.objects.get(username="zoe"))
    assert "2026-07-01 08:00:00 EDT" in bundle_page(client, bundle)
    client.post(reverse("time-zone"), {"time_zone": ""})
    assert not TimeZonePreference.objects.exists()
    assert "2026-07-01 12:00:00 UTC" in bundle_page(client, bundle)


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../etc/passwd", "x" * 500, "Europe/Zurich\n"])
def test_a_zone_that_is_not_one_is_refused_and_nothing_saved(client, zone):
    response = reader(client, "zoe").post(reverse("time-zone"), {"time_zone": zone})
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not TimeZonePreference.objects.exists()


def test_the_page_asks_for_a_login(client):
    assert client.get(reverse("time-zone")).status_code == 302
