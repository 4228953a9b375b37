"""Wiring to django-q2: the scheduled reconciler and sweeper, and a sweep whenever a worker starts."""

import logging

from django.conf import settings
from django.dispatch import Signal

log = logging.getLogger(__name__)

# Sent for operator actions worth an entry in the activity record (kept by the audit app):
# actor, action, obj, before, after. Extraction never imports audit's models.
activity = Signal()
# Sent when people must act (a job became unknown or passed its deadline, the kill switch moved):
# kind, key (one open alert per key), message, link. The audit app turns it into an alert.
alert = Signal()

# name: (task, minutes between runs as a settings attribute)
SCHEDULES = {
    "pagetrail-reconcile": ("extraction.tasks.reconcile", "PAGETRAIL_RECONCILE_EVERY_MINUTES"),
    "pagetrail-sweep": ("extraction.tasks.sweep", "PAGETRAIL_RECONCILE_EVERY_MINUTES"),
    "pagetrail-sweep-outputs": ("audit.tasks.sweep_outputs", "PAGETRAIL_RECONCILE_EVERY_MINUTES"),
    "pagetrail-checkpoint": ("audit.tasks.write_checkpoint", "PAGETRAIL_CHECKPOINT_EVERY_MINUTES"),
    "pagetrail-verify": ("audit.tasks.scheduled_verification", "PAGETRAIL_VERIFY_EVERY_MINUTES"),
    "pagetrail-retention": ("audit.tasks.apply_retention", "PAGETRAIL_RETENTION_EVERY_MINUTES"),
}


def ensure_schedules(**kwargs):
    """Create (or correct) the periodic tasks after every migrate, so a deployment cannot miss them."""
    from django_q.models import Schedule

    for name, (func, every) in SCHEDULES.items():
        Schedule.objects.update_or_create(
            name=name,
            defaults=dict(func=func, schedule_type=Schedule.MINUTES, minutes=getattr(settings, every), repeats=-1),
        )


def sweep_on_worker_start(proc_name=None, **kwargs):
    from . import services

    try:
        log.info("worker %s started; swept temp: %s", proc_name, services.sweep_temp())
    except Exception:  # a sweep failure must never stop a worker from starting
        log.exception("temp sweep at worker start failed")
    if settings.PAGETRAIL_PROVIDER == "local":
        warm_up_pdf_child()


def warm_up_pdf_child() -> None:
    """Start this worker's PDF child now, so that its first job does not wait for an interpreter."""
    from extraction.pdf.sandbox import warm_up

    from .providers.local import configured_limits

    try:
        warm_up(configured_limits())
    except Exception:  # the first job will start one, or report why it cannot
        log.exception("starting the PDF child at worker start failed")
