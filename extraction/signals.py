"""The signals extraction sends for the audit app to record: operator activity and alerts."""

from django.dispatch import Signal

# Sent for operator actions worth an entry in the activity record (kept by the audit app):
# actor, action, obj, before, after. Extraction never imports audit's models.
activity = Signal()
# Sent when people must act (a job became unknown or passed its deadline, the kill switch moved):
# kind, key (one open alert per key), message, link. The audit app turns it into an alert.
alert = Signal()
# Sent when the problem an alert named is over by itself (a silent cluster reports again): key.
alert_cleared = Signal()


def alert_about(job, kind: str, key: str, message: str) -> None:
    """An alert about one job, linked to its page (`key`: one open alert per key)."""
    alert.send(type(job), kind=kind, key=key, link=job.admin_link(), message=message)
