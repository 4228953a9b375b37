"""Removing stored outputs that no manifest names, once their job is terminal."""

from audit.ledger import manifests
from audit.models import Manifest
from core import stores
from extraction.models import Job
from extraction.temp_sweep import sweep_terminal_jobs_outputs


def sweep_outputs(at=None) -> dict:
    """Delete stored outputs that no manifest names, for jobs that have reached a terminal state.

    They come from a try that stored assets and then failed, or wrote its manifest and lost
    its commit. Each terminal job is swept once: extraction picks the jobs and marks each swept.
    """
    return {"removed": sweep_terminal_jobs_outputs(_sweep_job_outputs, at)}


def _sweep_job_outputs(job: Job) -> int:
    storage, prefix = stores.outputs(), manifests.output_prefix(job)
    try:
        names = {f"{prefix}/{name}" for name in storage.listdir(prefix)[1]}
    except FileNotFoundError:
        return 0
    keep = Manifest.files_named_by(Manifest.objects.filter(job=job))
    for name in names - keep:
        storage.delete(name)
    return len(names - keep)
