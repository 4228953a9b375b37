"""Alert webhooks whose delivery task the queue lost are delivered by the reconciler all the same.

An alert's first try is queued as it opens, each later try is a one-off schedule that queues its task when due: a
flushed Redis loses either, and the alert would never reach the webhook. The tries are rows, so each reconciler pass
finds the open alerts of the last day whose tries stopped short (none delivered, fewer than
PAGETRAIL_ALERT_WEBHOOK_TRIES, none waiting in the schedule) and quiet for longer than a retry may wait, and queues
their next try. A try sent twice carries the same X-Pagetrail-Delivery id, for the receiver to drop.
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, Max, Q
from django.utils import timezone

from audit.models import Alert
from core import broker
from core.guarded import update_if

log = logging.getLogger(__name__)
LONGEST_RETRY_WAIT = timedelta(seconds=600)  # the backoff cap of alerts.deliver_webhook's retries
RECENT = timedelta(days=1)  # older alerts opened before a webhook was configured are not sent when it is


def stalled(at):
    """Open alerts of the last day with no delivered try, fewer tries than allowed and none for a while."""
    quiet_since = at - LONGEST_RETRY_WAIT - timedelta(seconds=settings.PAGETRAIL_REQUEUE_AFTER_SECONDS)
    return (
        Alert.objects.filter(status=Alert.Status.OPEN, first_seen__gte=at - RECENT, webhook_woken_at__lt=quiet_since)
        .annotate(
            tries=Count("deliveries"),
            delivered=Count("deliveries", filter=Q(deliveries__delivered=True)),
            last_try=Max("deliveries__at"),
        )
        .filter(delivered=0, tries__lt=settings.PAGETRAIL_ALERT_WEBHOOK_TRIES)
        .filter(Q(last_try__isnull=True) | Q(last_try__lt=quiet_since))
    )


def redrive(at=None) -> int:
    """The reconciler's part: queue the next try of each stalled alert (guarded: of two reconcilers, one queues)."""
    if not settings.PAGETRAIL_ALERT_WEBHOOK_URL:
        return 0
    from django_q.models import Schedule

    now, woken = at or timezone.now(), 0
    for alert in stalled(now):
        if Schedule.objects.filter(name__startswith=f"webhook-{alert.pk}-").exists():
            continue  # its next try is waiting for its time, not lost
        if update_if(alert, Q(webhook_woken_at=alert.webhook_woken_at), webhook_woken_at=now):
            log.warning("re-drove the webhook of alert %s (try %s)", alert.pk, alert.tries + 1)
            broker.enqueue("audit.tasks.deliver_webhook", alert.pk, alert.tries + 1)
            woken += 1
    return woken
