"""Telling the people who must act: email to a list per alert kind, and an optional signed webhook.

One open alert per problem (its key): a repeat only counts an occurrence, nobody is told twice
until the alert is acknowledged in the admin.
"""

import hashlib
import hmac
import json
import logging
import random
from datetime import timedelta

import requests
from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from audit.models import Alert, WebhookDelivery
from core import broker, one_off
from core.retry import backoff_delay

log = logging.getLogger(__name__)


def raise_alert(kind: str, key: str, message: str, link: str) -> tuple[Alert, bool]:
    """Open an alert, or count one more occurrence of the open one; returns (alert, newly opened)."""
    try:
        with transaction.atomic():
            alert = Alert.objects.create(kind=kind, key=key[:200], message=message, link=link[:300])
    except IntegrityError:
        Alert.objects.filter(key=key[:200], status=Alert.Status.OPEN).update(
            occurrences=F("occurrences") + 1, last_seen=timezone.now()
        )
        return Alert.objects.get(key=key[:200], status=Alert.Status.OPEN), False
    transaction.on_commit(lambda: notify(alert.pk))
    return alert, True


def clear_alert(key: str) -> bool:
    """The open alert of this problem is over by itself (nobody acknowledged it): cleared, kept in the list."""
    return bool(
        Alert.objects.filter(key=key[:200], status=Alert.Status.OPEN).update(
            status=Alert.Status.CLEARED, last_seen=timezone.now()
        )
    )


def notify(alert_id: int) -> None:
    alert = Alert.objects.get(pk=alert_id)
    recipients = recipients_for(alert.kind)
    if recipients:
        send_mail(
            f"[Pagetrail] {alert.get_kind_display()}",
            f"{alert.message}\n\n{absolute(alert.link)}\n",
            settings.DEFAULT_FROM_EMAIL,
            recipients,
        )
    if settings.PAGETRAIL_ALERT_WEBHOOK_URL:
        broker.enqueue("audit.tasks.deliver_webhook", alert.pk, 1)


def recipients_for(kind: str) -> list[str]:
    per_kind = settings.PAGETRAIL_ALERT_EMAILS.get(kind)
    return per_kind.split(";") if per_kind else list(settings.PAGETRAIL_ALERT_DEFAULT_EMAILS)


def absolute(link: str) -> str:
    return settings.PAGETRAIL_BASE_URL.rstrip("/") + link


def payload(alert: Alert) -> bytes:
    return json.dumps(
        {
            "id": alert.pk,
            "kind": alert.kind,
            "key": alert.key,
            "message": alert.message,
            "link": absolute(alert.link),
            "first_seen": alert.first_seen.isoformat(),
            "occurrences": alert.occurrences,
        },
        sort_keys=True,
    ).encode()


def signature(body: bytes) -> str:
    return "sha256=" + hmac.new(settings.PAGETRAIL_ALERT_WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()


def deliver_webhook(alert_id: int, attempt: int, rng: random.Random | None = None) -> bool:
    """POST the alert, signed; a failure is logged and retried later (a one-off schedule), up to a limit."""
    alert, url = Alert.objects.get(pk=alert_id), settings.PAGETRAIL_ALERT_WEBHOOK_URL
    body = payload(alert)
    headers = {
        "Content-Type": "application/json",
        "X-Pagetrail-Signature": signature(body),
        "X-Pagetrail-Delivery": f"{alert.pk}-{attempt}",
    }
    status, error = None, ""
    try:
        status = requests.post(url, data=body, headers=headers, timeout=(5, 10)).status_code
    except requests.RequestException as exc:
        error = type(exc).__name__
    delivered = status is not None and 200 <= status < 300
    WebhookDelivery.objects.create(
        alert=alert,
        attempt=attempt,
        url=url,
        status_code=status,
        delivered=delivered,
        error=error or ("" if delivered else f"HTTP {status}"),
    )
    if not delivered and attempt < settings.PAGETRAIL_ALERT_WEBHOOK_TRIES:
        _retry(alert.pk, attempt + 1, backoff_delay(attempt, 5, 600, rng))
    return delivered


def _retry(alert_id: int, attempt: int, delay: float) -> None:
    when = timezone.now() + timedelta(seconds=delay)
    one_off.run_at("audit.tasks.deliver_webhook", alert_id, attempt, name=f"webhook-{alert_id}-{attempt}", when=when)
    log.warning("alert %s: webhook delivery failed, try %s in %.0fs", alert_id, attempt, delay)
