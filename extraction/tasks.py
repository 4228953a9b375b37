"""django-q2 entry points: thin; each takes an id, calls one service, and is harmless when repeated."""

from . import runner, services


def run_job(job_id: int, waking: bool = False) -> str:
    return runner.run_job(job_id, waking=waking)


def reconcile() -> dict:
    return services.reconcile()


def sweep() -> dict:
    return services.sweep_temp()
