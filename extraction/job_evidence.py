"""What a job's API answer says of its evidence (its manifest's id, its assets), told by the audit app.

Audit depends on extraction, never the other way: audit registers a describer in its `AppConfig.ready()`, as it
registers the completion recorder (extraction/completion.py). Without one, a job names no evidence.
"""

from collections.abc import Callable

Describer = Callable[[list[int]], dict[int, dict]]
NONE: dict = {"manifest_id": None, "assets": []}
_describer: Describer | None = None


def register(describer: Describer | None) -> None:
    """Set the function that tells, for job ids, each one's `manifest_id` and `assets` (in one or two queries)."""
    global _describer
    _describer = describer


def describe(job_ids: list[int]) -> dict[int, dict]:
    """Each job's evidence as its API answer shows it; a job without a manifest (yet) has none."""
    found = _describer(job_ids) if _describer is not None and job_ids else {}
    return {pk: found.get(pk, NONE) for pk in job_ids}
