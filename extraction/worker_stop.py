"""A worker told to stop (SIGTERM) hands back what it holds within a bound, instead of finishing it.

django-q2 lets a worker finish its task before it reads the STOP its sentinel queued: a job polling a provider
(up to the poll budget), a validation (up to the child's wall clock) or a preview batch would keep a service
manager waiting past its SIGKILL, and a killed worker's claim would then wait out its lease. Here SIGTERM sets a
flag instead: the PDF child mid-command is killed at once, the runner, intake and previews check the flag at
their wait points and hand their work back (the claim released, the task queued again for another worker), and
tasks taken after it are handed back unstarted. A worker still busy `PAGETRAIL_STOP_GRACE_SECONDS` after the
signal (a provider call that hangs up to its read timeout) runs the releases registered with `holding` and exits.
"""

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.conf import settings

from extraction.pdf.sandbox import stop_children

log = logging.getLogger(__name__)
_stopping = threading.Event()
_releases: list[Callable[[], object]] = []


def stopping() -> bool:
    """Whether this worker was told to stop: start nothing more, hand back what is held."""
    return _stopping.is_set()


class Stopping(Exception):
    """Raised at a wait point of a worker told to stop: the caller hands its work back."""


def check() -> None:
    if _stopping.is_set():
        raise Stopping()


def nap(seconds: float) -> None:
    """Sleep, but wake at once when the worker is told to stop (callers check `stopping()` after)."""
    _stopping.wait(seconds)


@contextmanager
def holding(release: Callable[[], object]) -> Iterator[None]:
    """While the block runs, `release` gives back what it holds if the worker must exit before the block ends."""
    _releases.append(release)
    try:
        yield
    finally:
        _releases.remove(release)


def install(proc_name=None, **kwargs) -> None:
    """django-q2's post_spawn hook, in each worker process: SIGTERM asks for a stop instead of killing.

    A task run in-process (django-q2's sync mode, e.g. from a web server's thread) is no worker of a cluster:
    Python lets only the main thread set a signal handler, and the process's own handler stays."""
    if threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGTERM, _on_term)


def _on_term(signum, frame) -> None:
    if _stopping.is_set():
        return  # the sentinel passes on the master's TERM that a process group's TERM already brought
    _stopping.set()
    stop_children()
    threading.Thread(target=_exit_after_grace, name="stop-grace", daemon=True).start()


def _exit_after_grace() -> None:
    time.sleep(settings.PAGETRAIL_STOP_GRACE_SECONDS)
    log.warning(
        "worker %s still busy %ss after SIGTERM: releasing and exiting",
        os.getpid(),
        settings.PAGETRAIL_STOP_GRACE_SECONDS,
    )
    release_held()
    os._exit(0)


def release_held() -> None:
    """Give back what the running task holds (registered with `holding`), before this process exits without it."""
    for release in list(_releases):
        try:
            release()
        except Exception:  # one failed release must not keep the others held
            log.exception("releasing at exit failed")
