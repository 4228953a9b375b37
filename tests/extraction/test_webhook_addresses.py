"""Webhook URLs never point inside the deployment: refused at registration by their host, and at delivery by the
address actually connected to (a name resolving inside, DNS rebinding), unless PAGETRAIL_WEBHOOK_ALLOW_PRIVATE."""

import ipaddress
import socket

import pytest

from extraction.accounts import ServiceAccount
from extraction.webhooks import addresses, delivery
from extraction.webhooks.events import WebhookAttempt, WebhookEvent
from tests.extraction.test_webhooks import Receiver, receiver  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db
INTERNAL = [
    "http://127.0.0.1/h",
    "http://127.1:8080/h",
    "http://2130706433/h",
    "http://localhost/h",
    "http://api.localhost/h",
    "http://10.1.2.3/h",
    "http://172.16.0.1/h",
    "http://192.168.1.1/h",
    "http://100.64.0.1/h",
    "http://0.0.0.0/h",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::1]/h",
    "http://[fe80::1]/h",
    "http://[fd00::1]/h",
    "http://[::ffff:127.0.0.1]/h",
    "http://[::ffff:169.254.169.254]/h",
    "http://[64:ff9b::a9fe:a9fe]/h",
]


@pytest.fixture(autouse=True)
def internal_refused(settings):
    settings.PAGETRAIL_WEBHOOK_ALLOW_PRIVATE = False


@pytest.fixture
def account():
    from django.core.cache import cache

    cache.clear()
    account = ServiceAccount.objects.create(name="claims-ingest")
    account.token = account.issue_token()
    return account


def register(client, account, url):
    auth = {"HTTP_AUTHORIZATION": f"Bearer {account.token}"}
    return client.put("/api/v1/webhook-endpoint", data={"url": url}, content_type="application/json", **auth)


@pytest.mark.parametrize("url", INTERNAL)
def test_an_internal_address_is_refused_at_registration_with_a_stable_code(client, account, url):
    answer = register(client, account, url)
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert (error["code"], error["pointer"]) == ("webhook_url_internal", "/url")
    assert "must not point inside" in error["message"]
    account.refresh_from_db()
    assert (account.webhook_url, account.webhook_secret) == ("", "")


def test_a_public_address_is_registered(client, account):
    assert register(client, account, "https://93.184.216.34/hooks").status_code == 200
    assert register(client, account, "https://hooks.example.org/h").status_code == 200


def test_the_admin_refuses_an_internal_address_in_words(admin_client):
    page = admin_client.post("/admin/extraction/serviceaccount/add/", {"name": "x", "webhook_url": INTERNAL[10]})
    assert "must not point inside" in page.content.decode() and not ServiceAccount.objects.exists()


def test_the_setting_allows_internal_addresses(client, account, settings):
    settings.PAGETRAIL_WEBHOOK_ALLOW_PRIVATE = True
    assert register(client, account, "http://127.0.0.1:9/h").status_code == 200


def deliver_to(url: str) -> tuple[str, WebhookAttempt]:
    account = ServiceAccount.objects.create(name="rebound", webhook_url=url)  # registered while it looked public
    account.issue_webhook_secret()
    event = WebhookEvent.objects.create(account=account, type="job.completed", body="{}")
    event.next_attempt_at = event.occurred_at
    event.save()
    return delivery.deliver(event.pk), WebhookAttempt.objects.get(event=event)


def test_a_name_resolving_inside_at_delivery_is_refused_before_anything_is_sent(receiver):  # noqa: F811
    name = socket.gethostname()  # a name, not an address: registration cannot judge it
    resolved = {info[4][0] for info in socket.getaddrinfo(name, None)}
    if not any(addresses.is_internal(ipaddress.ip_address(a)) for a in resolved):
        pytest.skip(f"{name} resolves to no internal address here")
    assert addresses.internal_host(f"http://{name}/") == ""
    port = receiver.url.split(":")[2].split("/")[0]
    state, attempt = deliver_to(f"http://{name}:{port}/hooks")
    assert state == "given_up" and Receiver.received == []
    assert attempt.error.startswith(f"Refused: {name} resolved to ") and "internal address" in attempt.error
    assert (attempt.status_code, attempt.delivered) == (None, False)


def test_a_registered_loopback_url_is_refused_at_delivery_once_internal_addresses_are_off(receiver):  # noqa: F811
    state, attempt = deliver_to(receiver.url)
    assert state == "given_up" and Receiver.received == []
    assert attempt.error.startswith("Refused: 127.0.0.1 resolved to 127.0.0.1, an internal address")


def test_with_the_setting_the_same_delivery_goes_through(receiver, settings):  # noqa: F811
    settings.PAGETRAIL_WEBHOOK_ALLOW_PRIVATE = True
    state, attempt = deliver_to(receiver.url)
    assert (state, attempt.status_code, len(Receiver.received)) == ("delivered", 200, 1)
