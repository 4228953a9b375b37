"""django-q2 entry points: thin; each takes an id, calls one service, and is harmless when repeated."""

from . import runner, services


def run_job(job_id: int) -> str:
    return runner.run_job(job_id)


def reconcile() -> dict:
    return services.reconcile()


def sweep() -> dict:
    return services.sweep_temp()
