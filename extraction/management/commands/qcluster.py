"""django-q2's `qcluster`, which first refuses to start beside hosts running other extractor versions, warns when
nothing enqueues to its queue, and stops within a bound on SIGTERM (extraction/cluster_stop.py)."""

import logging
import os
import sys

from django.conf import settings
from django_q.management.commands.qcluster import Command as ClusterCommand

from core import profiling
from extraction.cluster_stop import Cluster
from extraction.worker_versions import may_start

EXIT_REFUSED = 3
log = logging.getLogger(__name__)


class Command(ClusterCommand):
    help = ClusterCommand.help + " Refuses to when other hosts run other extractor versions (see docs/versions.md)."

    def handle(self, *args, **options):
        cluster = options.get("cluster_name") or os.environ.get("Q_CLUSTER_NAME", "")
        if not may_start(cluster):
            sys.exit(EXIT_REFUSED)  # before any process: nothing was taken from the queue
        # django-q2's own handle, with the cluster that stops on time.
        settings.SECRET_KEY  # noqa: B018  (django-q2 signs tasks with it: fail before starting without one)
        if options.get("cluster_name"):
            os.environ["Q_CLUSTER_NAME"] = options["cluster_name"]
        warn_if_nobody_fills(queue_served())
        profiling.start_if_asked()  # PAGETRAIL_PROFILE_DIR: bench.per_job's profile of every cluster process
        q = Cluster()
        q.start()
        if options.get("run_once"):
            q.stop()


def queue_served() -> str:
    from django_q.conf import Conf

    return os.environ.get("Q_CLUSTER_NAME") or Conf.CLUSTER_NAME


def warn_if_nobody_fills(queue: str) -> None:
    """A cluster on a queue of another name (Q_CLUSTER_NAME=pagetrail-intake once PAGETRAIL_QUEUE_NAME=acme) starts
    and waits for ever: say so at its start, naming the queues this deployment fills and how to serve one."""
    filled = settings.PAGETRAIL_CLUSTER_QUEUES
    if queue in filled.values():
        return
    log.warning(
        "this qcluster serves the queue %r, which nothing in this deployment enqueues to: its queues are %s "
        "(from PAGETRAIL_QUEUE_NAME=%s); start it with PAGETRAIL_CLUSTER=jobs, previews or intake instead of "
        "Q_CLUSTER_NAME (docs/operations.md)",
        queue,
        ", ".join(f"{name} ({role})" for role, name in filled.items()),
        settings.Q_CLUSTER["name"],
    )
