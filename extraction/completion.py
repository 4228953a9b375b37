"""The step that records a completed job's evidence, registered by the app that keeps it.

Audit depends on extraction, never the other way: the audit app registers its recorder in
`AppConfig.ready()` and the runner calls it once per completed job, after every output is fetched.
Not a signal: the step must run exactly once, inside its transaction, and the runner needs its answer
(False: another worker completed the job first) and its exceptions (a store that failed midway).
A system check (extraction.checks) refuses to start without a recorder.
"""

from collections.abc import Callable
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

# (job, report, files by asset key, attempt_number=) -> whether this call completed the job
Recorder = Callable[..., bool]

_recorder: Recorder | None = None


def register(recorder: Recorder) -> None:
    """Called once at start-up by the app that keeps the evidence (audit)."""
    global _recorder
    _recorder = recorder


def registered() -> Recorder | None:
    return _recorder


def record(job, report, files: dict[str, Path], attempt_number: int) -> bool:
    if _recorder is None:
        raise ImproperlyConfigured("No completion recorder is registered: the audit app must be installed.")
    return _recorder(job, report, files, attempt_number=attempt_number)
