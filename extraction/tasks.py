"""django-q2 entry points: thin; each takes an id, calls one service, and is harmless when repeated."""

from . import reconciler, runner, temp_sweep
from .intake import decision, staging
from .webhooks import delivery


def run_job(job_id: int, waking: bool = False) -> str:
    return runner.run_job(job_id, waking=waking)


def decide_submission(submission_id: int) -> str:
    """On the intake queue: validate one upload and accept or refuse it (queued again for its one retry).
    Then sweep this host's abandoned uploads and request files: a web host may run no jobs cluster, whose schedule
    sweeps too."""
    outcome = decision.decide_queued(submission_id)
    staging.sweep_staged()
    temp_sweep.sweep_request_files()
    return outcome


def deliver_webhook(event_id: int) -> str:
    return delivery.deliver(event_id)


def reconcile() -> dict:
    return reconciler.reconcile()


def sweep() -> dict:
    return temp_sweep.sweep_temp()
