"""Delivering a webhook event: one signed POST per try, its answer recorded, a retry scheduled, and the re-drive of
events whose task was lost.

2xx is delivered. No answer (a timeout, a refused connection), 408, 429 and 5xx are tried again with backoff (and
Retry-After on 429 and 503, up to its cap), up to PAGETRAIL_WEBHOOK_TRIES. Any other answer (a 4xx, a redirect)
stops: the receiver said it will never take this event (410: gone; 400: it cannot read it), and asking again
would only repeat it; an operator replays it once the receiver is fixed. So does a connection that reached an
address inside the network (`addresses.py`): it is closed before a byte is sent, and the try recorded.
"""

import logging
import random
from datetime import timedelta

import requests
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.retry import next_wait, parse_retry_after

from ..intake import queue
from . import addresses, signing
from .events import WebhookAttempt, WebhookEvent

log = logging.getLogger(__name__)
RETRIED = {408, 429}
RETRY_AFTER = {429, 503}
_session: requests.Session | None = None


def session() -> requests.Session:
    global _session
    if _session is None:
        _session = requests.Session()
        # Connected directly, never through HTTP(S)_PROXY: a proxy would resolve the name where no check sees it.
        _session.trust_env = False
        for scheme in ("http://", "https://"):
            _session.mount(scheme, addresses.CheckedAdapter())
    return _session


def lease() -> timedelta:
    """Longer than one try can take (connect and read): a try outliving it is taken for a killed worker's."""
    return timedelta(seconds=2 * settings.PAGETRAIL_WEBHOOK_TIMEOUT_SECONDS + 30)


def deliver(event_pk: int, at=None, rng: random.Random | None = None) -> str:
    """One try of a due event; harmless when repeated (a duplicate task finds it not due, or delivered)."""
    event = WebhookEvent.objects.select_related("account").get(pk=event_pk)
    now = at or timezone.now()
    if not event.claim(lease(), now):
        return "not-due"
    account = event.account
    if not account.webhook_url or account.revoked_at is not None or not account.webhook_secret:
        _record(event, "", None, None, "The account has no webhook URL or secret any more, or was revoked.", now)
        event.mark_given_up()
        return WebhookEvent.State.GIVEN_UP
    status, retry_after, error = _post(event, account, now)
    _record(event, account.webhook_url, status, retry_after, error, now)
    if error.startswith(addresses.REFUSED):  # the URL points inside: asking again would only be refused again
        event.mark_given_up()
        log.warning("webhook %s to %s: given up (%s)", event.webhook_id, account.name, error)
        return WebhookEvent.State.GIVEN_UP
    if status is not None and 200 <= status < 300:
        event.mark_delivered(now)
        return WebhookEvent.State.DELIVERED
    if (status is None or status >= 500 or status in RETRIED) and event.tries < settings.PAGETRAIL_WEBHOOK_TRIES:
        return _retry(event, retry_after, now, rng)
    event.mark_given_up()
    log.warning("webhook %s to %s: given up after %s (%s)", event.webhook_id, account.name, event.tries, error)
    return WebhookEvent.State.GIVEN_UP


def _post(event: WebhookEvent, account, now) -> tuple[int | None, float | None, str]:
    body = event.body.encode()
    headers = {"Content-Type": "application/json", "User-Agent": "Pagetrail-Webhooks/1"}
    headers |= signing.headers(account.webhook_secrets(now), event.webhook_id, int(now.timestamp()), body)
    timeout = settings.PAGETRAIL_WEBHOOK_TIMEOUT_SECONDS
    try:
        # Never redirected: the signed body goes to the registered address or nowhere.
        answer = session().post(account.webhook_url, data=body, headers=headers, timeout=timeout, allow_redirects=False)
    except addresses.InternalAddress as refusal:
        return None, None, str(refusal)
    except requests.RequestException as exc:
        return None, None, f"No answer: {type(exc).__name__}."
    retry_after = parse_retry_after(answer.headers.get("Retry-After")) if answer.status_code in RETRY_AFTER else None
    error = "" if 200 <= answer.status_code < 300 else f"The receiver answered HTTP {answer.status_code}."
    return answer.status_code, retry_after, error


def _record(event: WebhookEvent, url: str, status, retry_after, error: str, at) -> None:
    WebhookAttempt.objects.create(
        event=event,
        number=event.tries,
        url=url[:500],
        status_code=status,
        retry_after_s=retry_after,
        delivered=not error,
        error=error,
        at=at,
    )


def _retry(event: WebhookEvent, retry_after: float | None, now, rng) -> str:
    delay = next_wait(
        event.tries - 1,
        retry_after,
        base=settings.PAGETRAIL_WEBHOOK_BACKOFF_BASE_SECONDS,
        cap=settings.PAGETRAIL_WEBHOOK_BACKOFF_CAP_SECONDS,
        retry_after_cap=settings.PAGETRAIL_RETRY_AFTER_CAP_SECONDS,
        rng=rng,
    )
    when = now + timedelta(seconds=delay)
    if event.mark_due(when):
        queue.retry_webhook_at(event.pk, when)
    return "retry"


def redrive(at=None) -> int:
    """The reconciler's part: queue again every pending event whose try is overdue (its task or schedule was lost:
    Redis flushed, a worker killed mid-try). Guarded per event, so concurrent reconcilers queue it once."""
    now = at or timezone.now()
    grace = timedelta(seconds=settings.PAGETRAIL_REQUEUE_AFTER_SECONDS)
    woken = 0
    for event in WebhookEvent.objects.overdue(grace, now).only("pk", "tries", "state", "next_attempt_at"):
        if event.mark_redriven(now):
            queue.enqueue_webhook(event.pk)
            woken += 1
    return woken


def replay(event: WebhookEvent, at=None) -> bool:
    """The admin's *Replay*: the same event again, queued now."""
    if not event.replay(at):
        return False
    transaction.on_commit(lambda: queue.enqueue_webhook(event.pk))
    return True
