"""A CPU profile of every process of a `qcluster`, when PAGETRAIL_PROFILE_DIR names a directory (bench.per_job).

Each process (the cluster's master, and every process it forks: sentinel, pusher, workers, monitor) profiles
itself from its start with cProfile on its own CPU clock, and writes `<pid>.prof` into the directory as
it exits. Off unless the variable is set: a profile costs several times the CPU it measures.
"""

import atexit
import cProfile
import multiprocessing.util
import os
import time
from pathlib import Path

_profile: cProfile.Profile | None = None


def start_if_asked() -> None:
    """Profile this process and each one it forks, if PAGETRAIL_PROFILE_DIR is set."""
    directory = os.environ.get("PAGETRAIL_PROFILE_DIR")
    if not directory:
        return
    Path(directory).mkdir(parents=True, exist_ok=True)
    _begin(directory)
    atexit.register(_write, directory)
    os.register_at_fork(after_in_child=lambda: _begin(directory))
    # multiprocessing's children leave through os._exit, which skips atexit, and clear the finalizers they
    # inherit as they start; a finalizer registered after that runs as they leave.
    multiprocessing.util.register_after_fork(_AFTER_FORK, lambda _: _finalize_in_child(directory))


def _begin(directory: str) -> None:
    global _profile
    if _profile is not None:
        _profile.disable()  # the parent's, copied by fork: not this process's CPU
    _profile = cProfile.Profile(time.process_time)
    _profile.enable()


class _Registration:
    """What multiprocessing keys an after-fork callback by (held weakly: kept here for the process's life)."""


_AFTER_FORK = _Registration()


def _finalize_in_child(directory: str) -> None:
    multiprocessing.util.Finalize(None, _write, args=(directory,), exitpriority=100)


def _write(directory: str) -> None:
    if _profile is None:
        return
    _profile.disable()
    _profile.dump_stats(Path(directory) / f"{os.getpid()}.prof")
