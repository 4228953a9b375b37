"""The kill switch: stopping and reopening submissions, with its activity record and alert."""

import logging

from .models import Job, SubmissionSwitch
from .reconciler import wake
from .signals import activity, alert

log = logging.getLogger(__name__)


def set_submissions(is_open: bool, by: str, reason: str = "") -> bool:
    """The kill switch. Reopening wakes the jobs that waited."""
    changed = SubmissionSwitch.set(is_open, by, reason)
    if changed:
        activity.send(
            SubmissionSwitch,
            actor=by,
            action="kill_switch_changed",
            obj=SubmissionSwitch.current(),
            before={"is_open": not is_open},
            after={"is_open": is_open, "reason": reason},
        )
        state = "reopened" if is_open else "stopped"
        alert.send(
            SubmissionSwitch,
            kind="kill_switch",
            key="kill-switch",
            link="/admin/extraction/submissionswitch/",
            message=f"Submissions {state} by {by}: {reason or 'no reason given'}",
        )
    if changed and is_open:
        wake(Job.objects.filter(status=Job.Status.QUEUED, provider_job_id=""))
    log.warning("submissions %s by %s: %s", "reopened" if is_open else "stopped", by, reason)
    return changed
