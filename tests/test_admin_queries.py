"""No address makes an admin list fail: every registered list, as a superuser, with lookups that once answered
HTML 500 (a malformed pattern compiled by the database, a range of one value) and others a hand might type."""

import pytest
from django.contrib import admin
from django.urls import reverse

pytestmark = pytest.mark.django_db
HOSTILE = [
    "id__regex=(",
    "id__iregex=[",
    "pk__range=1",
    "id__range=1,2,3",
    "id__in=1,a",
    "id__gt=abc",
    "id__isnull=maybe",
    "id__exact=" + "9" * 40,
    "o=99",
    "o=-x",
    "p=-1",
    "q=%00",
    "id__contains=%00",
    "case_label=a%00b",
    "created_at__from=2026-01-01%00",
]
LISTS = [f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist" for model in admin.site._registry]


@pytest.mark.parametrize("query", HOSTILE)
def test_no_list_answers_a_hostile_address_with_a_server_error(admin_client, query):
    answers = {name: admin_client.get(f"{reverse(name)}?{query}").status_code for name in LISTS}
    assert {name: status for name, status in answers.items() if status not in (200, 302, 400)} == {}


def test_a_refused_lookup_says_why_in_the_admins_style(admin_client):
    response = admin_client.get(reverse("admin:extraction_bundle_changelist") + "?correlation_id__regex=(")
    page = response.content.decode()
    assert response.status_code == 400 and 'data-code="admin_lookup_refused"' in page
    assert "use its search box" in page and 'id="site-name"' in page


def test_a_nul_in_the_address_is_refused_in_words(admin_client):
    response = admin_client.get(reverse("admin:audit_finding_changelist") + "?name__contains=a%00")
    assert response.status_code == 400 and 'data-code="admin_query_nul"' in response.content.decode()


def test_the_same_lookup_outside_the_admin_is_not_its_business(client):
    assert client.get("/review/1/?x__regex=(").status_code in (302, 404)
