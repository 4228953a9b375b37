"""Removing what jobs and uploads left in private temp once nothing owns it."""

from . import stores
from .models import Job


def sweep_temp() -> dict:
    """Remove temp dirs of jobs that are terminal or unknown to the database, and staged uploads no pending
    submission owns (after a grace period: a request may still be writing one)."""
    removed = 0
    root = stores.jobs_dir()
    names = [p.name for p in root.iterdir()] if root.exists() else []
    ids = {int(n) for n in names if n.isdigit()}
    live = set(Job.objects.filter(pk__in=ids).exclude(status__in=Job.TERMINAL).values_list("pk", flat=True))
    for name in names:
        if not name.isdigit() or int(name) not in live:
            stores.remove_job_work_dir(name)
            removed += 1
    from .submitting import sweep_staged

    return {"removed": removed + sweep_staged()}
