"""django-q2's cluster, stopping within a bound on SIGTERM to its master or to its whole process group.

django-q2 (1.11) has no stop timeout and does not tell busy workers to stop; these subclasses change three things:

- The master's stop waits for its sentinel at most `PAGETRAIL_STOP_GRACE_SECONDS` plus
  `PAGETRAIL_STOP_MARGIN_SECONDS`, then kills what is left. It sets the stop event from a thread of its own:
  multiprocessing's Event.set() waits for every process sleeping on it to wake, so a sentinel that died in its
  wait (SIGTERM's default action, when a service manager or `make run` signals the whole group) hung the
  master for ever in a futex.
- The sentinel, its pusher and monitor no longer die of SIGTERM while their master lives: the master stops them
  in order (the pusher first, the monitor last, so no result is lost). With the master gone they exit, as
  cluster_watch expects.
- The sentinel's stop sends SIGTERM to each worker before queueing the STOP pills: the worker hands back its task
  and the tasks pushed ahead of the pills (worker_stop.py) instead of running them to the end.
"""

import logging
import os
import signal
import threading
from functools import partial
from typing import Any

from django.conf import settings
from django_q import cluster
from django_q.conf import Conf

from .cluster_heartbeat import Heart
from .cluster_watch import children_of

log = logging.getLogger(__name__)


class Sentinel(cluster.Sentinel):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, start=False, **kwargs)
        # Inherited by the pusher and monitor (workers install worker_stop's own handler as they start).
        signal.signal(signal.SIGTERM, partial(_exit_if_gone, os.getppid()))
        self.start()

    def stop(self):
        for worker in self.pool:
            if worker.is_alive():
                worker.terminate()
        super().stop()


class Cluster(cluster.Cluster):
    stop_event: Any  # django-q2's, which has no types: an Event from start() on, None once stopped

    def start(self) -> int:
        cluster.Sentinel = Sentinel  # Cluster.start names the class it runs in the sentinel's process
        pid = super().start()
        if self.sentinel.is_alive():
            self.heart = Heart(Conf.CLUSTER_NAME, pid)
            self.heart.start()
        return pid

    def stop(self) -> bool:
        if not self.sentinel.is_alive():
            return False
        if heart := getattr(self, "heart", None):
            heart.stop()
        log.info("Q Cluster %s stopping (within %ss)", self.name, bound())
        threading.Thread(target=self.stop_event.set, name="stop-event", daemon=True).start()
        self.sentinel.join(bound())
        if self.sentinel.is_alive():
            log.error("Q Cluster %s still stopping after %ss: killing its processes", self.name, bound())
            kill_tree(self.sentinel.pid)
            self.sentinel.join()
        log.info("Q Cluster %s has stopped.", self.name)
        self.start_event = None
        self.stop_event = None
        return True


def bound() -> float:
    return settings.PAGETRAIL_STOP_GRACE_SECONDS + settings.PAGETRAIL_STOP_MARGIN_SECONDS


def kill_tree(pid: int) -> None:
    """SIGKILL a process and its descendants, the descendants first (so the sentinel cannot replace them)."""
    for child in children_of(pid):
        kill_tree(child)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _exit_if_gone(master: int, signum, frame) -> None:
    """SIGTERM in the sentinel, pusher or monitor: the master will stop them, unless it is gone already."""
    try:
        os.kill(master, 0)
    except ProcessLookupError:
        os._exit(0)
