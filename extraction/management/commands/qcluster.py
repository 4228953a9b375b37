"""django-q2's `qcluster`, which first refuses to start beside hosts running other extractor versions."""

import os
import sys

from django_q.management.commands.qcluster import Command as ClusterCommand

from extraction.worker_versions import may_start

EXIT_REFUSED = 3


class Command(ClusterCommand):
    help = ClusterCommand.help + " Refuses to when other hosts run other extractor versions (see docs/versions.md)."

    def handle(self, *args, **options):
        cluster = options.get("cluster_name") or os.environ.get("Q_CLUSTER_NAME", "")
        if not may_start(cluster):
            sys.exit(EXIT_REFUSED)  # before any process: nothing was taken from the queue
        super().handle(*args, **options)
