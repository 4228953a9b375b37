"""What a django-q2 worker does as it starts: sweep temp, and start its PDF child."""

import logging

from django.conf import settings

log = logging.getLogger(__name__)


def sweep_on_worker_start(proc_name=None, **kwargs):
    from .temp_sweep import sweep_temp

    try:
        log.info("worker %s started; swept temp: %s", proc_name, sweep_temp())
    except Exception:  # a sweep failure must never stop a worker from starting
        log.exception("temp sweep at worker start failed")
    if settings.PAGETRAIL_PROVIDER == "local":
        warm_up_pdf_child()


def warm_up_pdf_child() -> None:
    """Start this worker's PDF child now, so that its first job does not wait for an interpreter."""
    from core.limits import configured_limits
    from extraction.pdf.sandbox import warm_up

    try:
        warm_up(configured_limits())
    except Exception:  # the first job will start one, or report why it cannot
        log.exception("starting the PDF child at worker start failed")
