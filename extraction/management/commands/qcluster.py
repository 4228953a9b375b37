"""django-q2's `qcluster`, which first refuses to start beside hosts running other extractor versions, and
stops within a bound on SIGTERM (extraction/cluster_stop.py)."""

import os
import sys

from django.conf import settings
from django_q.management.commands.qcluster import Command as ClusterCommand

from extraction.cluster_stop import Cluster
from extraction.worker_versions import may_start

EXIT_REFUSED = 3


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
        q = Cluster()
        q.start()
        if options.get("run_once"):
            q.stop()
