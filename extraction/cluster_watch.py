"""Workers stop when their cluster's master dies.

A `qcluster` is three generations: the master, its sentinel, and the processes the sentinel spawns
(workers, the pusher that takes tasks from the broker, the monitor). SIGKILL of the master alone would
leave the sentinel and its processes running on (re-parented to init), taking jobs that no one can stop
with the master's signals. Each worker watches the master; once it is gone, the worker stops its sentinel
and every process of that sentinel (SIGTERM), gives back what its task holds, then leaves. The others hand
back theirs as after any SIGTERM (worker_stop.py), so another worker takes them at once; a PDF child leaves
when orphaned.
"""

import logging
import os
import signal
import threading
import time
from pathlib import Path

from . import worker_stop

log = logging.getLogger(__name__)
CHECK_SECONDS = 1.0


def parent_of(pid: int) -> int | None:
    """The parent pid from /proc (Linux); None when the process is gone or /proc cannot tell."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def watch_master(proc_name=None, **kwargs) -> None:
    """django-q2's post_spawn hook, in each worker process: start the watch in a daemon thread."""
    sentinel = os.getppid()
    master = parent_of(sentinel)
    if master is None or (master == 1 and is_qcluster(1)):
        return  # no /proc, or the master is the container's init: it cannot die alone
    # A master killed before this hook ran has left the sentinel to init already: stop at once.
    threading.Thread(target=_watch, args=(sentinel, master), name="cluster-watch", daemon=True).start()


def is_qcluster(pid: int) -> bool:
    try:
        return b"qcluster" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _watch(sentinel: int, master: int, sleep=time.sleep) -> None:
    while master != 1 and parent_of(sentinel) == master and os.getppid() == sentinel:
        sleep(CHECK_SECONDS)
    log.warning(
        "the cluster's master (pid %s) is gone; stopping its sentinel (pid %s) and its processes", master, sentinel
    )
    for pid in [*children_of(sentinel), sentinel]:
        if pid != os.getpid():
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    worker_stop.release_held()
    os._exit(0)


def children_of(parent: int) -> list[int]:
    return [
        int(stat.parent.name)
        for stat in Path("/proc").glob("[0-9]*/stat")
        if parent_of(int(stat.parent.name)) == parent
    ]
