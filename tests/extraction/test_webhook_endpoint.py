"""A service account registers, reads and removes its own webhook endpoint over the API."""

import pytest

from extraction.accounts import ServiceAccount

pytestmark = pytest.mark.django_db
URL = "https://hooks.example.org/pagetrail"


@pytest.fixture
def account():
    from django.core.cache import cache

    cache.clear()  # rate-limit history of earlier tests
    account = ServiceAccount.objects.create(name="claims-ingest")
    account.token = account.issue_token()
    return account


def call(client, account, method, body=None):
    auth = {"HTTP_AUTHORIZATION": f"Bearer {account.token}"}
    send = getattr(client, method)
    if body is None:
        return send("/api/v1/webhook-endpoint", **auth)
    return send("/api/v1/webhook-endpoint", data=body, content_type="application/json", **auth)


def test_registering_the_first_url_answers_the_signing_secret_once(client, account):
    first = call(client, account, "put", {"url": URL})
    assert first.status_code == 200, first.content
    secret = first.json()["secret"]
    account.refresh_from_db()
    assert secret.startswith("whsec_") and account.webhook_secret == secret and account.webhook_url == URL
    again = call(client, account, "put", {"url": URL + "/v2"})
    assert (again.status_code, again.json()["secret"]) == (200, None)
    read = call(client, account, "get").json()
    assert read == {"url": URL + "/v2", "events": ["job.completed", "job.failed", "submission.refused"], "secret": None}


def test_removing_it_stops_events_and_a_second_removal_is_404(client, account):
    call(client, account, "put", {"url": URL})
    assert call(client, account, "delete").status_code == 204
    account.refresh_from_db()
    assert account.webhook_url == ""
    assert call(client, account, "delete").status_code == 404
    assert call(client, account, "get").json()["error"]["code"] == "not_found"


def test_a_url_that_is_not_http_is_refused_naming_the_field(client, account):
    answer = call(client, account, "put", {"url": "ftp://hooks.example.org/x"})
    assert answer.status_code == 400
    assert answer.json()["error"] | {"message": ""} == {"code": "webhook_url_scheme", "message": "", "pointer": "/url"}
    account.refresh_from_db()
    assert account.webhook_url == "" and account.webhook_secret == ""


def test_a_url_over_its_column_is_refused_with_its_own_code(client, account):
    answer = call(client, account, "put", {"url": "https://hooks.example.org/" + "a" * 500})
    assert (answer.status_code, answer.json()["error"]["code"]) == (400, "webhook_url_too_long")


def test_an_unknown_field_is_refused_naming_it(client, account):
    answer = call(client, account, "put", {"url": URL, "events": ["job.completed"]})
    assert (answer.status_code, answer.json()["error"]["pointer"]) == (400, "/events")
    account.refresh_from_db()
    assert account.webhook_url == ""


def test_each_account_sees_only_its_own_endpoint(client, account):
    call(client, account, "put", {"url": URL})
    other = ServiceAccount.objects.create(name="contracts")
    other.token = other.issue_token()
    assert call(client, other, "get").status_code == 404


def test_registering_and_removing_are_activity_naming_the_host_never_the_url(client, account):
    from audit.models import ActivityEvent

    call(client, account, "put", {"url": "https://user:pw@hooks.example.org/p?token=abc"})
    call(client, account, "delete")
    recorded = {e.action: e for e in ActivityEvent.objects.filter(action__startswith="webhook_")}
    assert set(recorded) == {"webhook_url_set", "webhook_secret_issued", "webhook_url_removed"}
    assert recorded["webhook_url_set"].actor == "api:claims-ingest"
    assert recorded["webhook_url_set"].after["host"] == "hooks.example.org"
    assert "pw" not in str(recorded["webhook_url_set"].after) and "abc" not in str(recorded["webhook_url_set"].after)
