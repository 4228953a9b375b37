"""Each `qcluster` reports itself alive; one silent too long opens an alert naming it, cleared when it reports again.

A cluster is its queue on its host (`pagetrail-previews@worker-2`): a thread of its master writes `last_seen`
every PAGETRAIL_CLUSTER_SILENT_SECONDS / 4 and, on the same beat, looks at the other clusters' rows, as the
reconciler does on each pass: so a host that died is noticed by any cluster still running, even when it ran the
only jobs cluster. A SIGKILLed master, a host powered off or cut from the database all go silent; a cluster
stopped on purpose (SIGTERM) records `stopped_at` and is not alerted on. Each silence opens one alert (a guarded
update of `silent_since` picks the one checker that raises it); the cluster's next beat clears it.
"""

import logging
import socket
import threading
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, OperationalError, close_old_connections, connection, models
from django.utils import timezone

from .connection_loss import Connections
from .signals import alert, alert_cleared

log = logging.getLogger(__name__)


class ClusterHeartbeat(models.Model):
    """One cluster (a queue on a host): when it last reported, and since when it has been silent."""

    host = models.CharField(max_length=255)
    queue = models.CharField(max_length=100)
    pid = models.PositiveIntegerField(help_text="The cluster's master process")
    started_at = models.DateTimeField()
    last_seen = models.DateTimeField()
    stopped_at = models.DateTimeField(null=True, blank=True, help_text="Stopped on purpose (SIGTERM)")
    silent_since = models.DateTimeField(null=True, blank=True, help_text="When its alert was opened")

    class Meta:
        app_label = "extraction"
        constraints = [models.UniqueConstraint(fields=["host", "queue"], name="one_heartbeat_per_cluster")]

    def __str__(self):
        return self.name

    @property
    def name(self) -> str:
        return f"{self.queue}@{self.host}"


def silent_after() -> timedelta:
    return timedelta(seconds=settings.PAGETRAIL_CLUSTER_SILENT_SECONDS)


def alert_key(row: ClusterHeartbeat) -> str:
    return f"cluster-silent-{row.name}"


def beat(host: str, queue: str, pid: int, started: bool = False, at=None) -> ClusterHeartbeat:
    """This cluster is alive: record it, and clear its alert if it had gone silent."""
    now = at or timezone.now()
    fields = dict(pid=pid, last_seen=now, stopped_at=None)
    if started:
        fields["started_at"] = now
    row, _ = ClusterHeartbeat.objects.update_or_create(
        host=host, queue=queue, defaults=fields, create_defaults={**fields, "started_at": now}
    )
    if row.silent_since and ClusterHeartbeat.objects.filter(pk=row.pk, silent_since=row.silent_since).update(
        silent_since=None
    ):
        log.warning("cluster %s reports again (silent since %s)", row.name, row.silent_since.isoformat())
        alert_cleared.send(ClusterHeartbeat, key=alert_key(row))
    return row


def stopped(host: str, queue: str, at=None) -> None:
    ClusterHeartbeat.objects.filter(host=host, queue=queue).update(stopped_at=at or timezone.now())


def check_silent(at=None) -> int:
    """Open an alert for each cluster silent longer than PAGETRAIL_CLUSTER_SILENT_SECONDS (once per silence)."""
    now, opened = at or timezone.now(), 0
    silent = ClusterHeartbeat.objects.filter(
        stopped_at__isnull=True, silent_since__isnull=True, last_seen__lt=now - silent_after()
    )
    for row in silent:
        if ClusterHeartbeat.objects.filter(pk=row.pk, silent_since__isnull=True, last_seen=row.last_seen).update(
            silent_since=now
        ):
            message = (
                f"The {row.queue} cluster on {row.host} (pid {row.pid}) has not reported since "
                f"{timezone.localtime(row.last_seen):%Y-%m-%d %H:%M:%S %Z}: its host or master process died, or it "
                "lost the database. Start it again, or stop it with SIGTERM if it left on purpose."
            )
            log.error("cluster %s is silent since %s", row.name, row.last_seen.isoformat())
            alert.send(ClusterHeartbeat, kind="cluster_silent", key=alert_key(row), message=message, link=LINK)
            opened += 1
    return opened


LINK = "/admin/extraction/clusterheartbeat/"


class Heart:
    """The master's beating thread: started once its cluster is up, stopped (and the stop recorded) with it."""

    def __init__(self, queue: str, pid: int) -> None:
        self.host, self.queue, self.pid = socket.gethostname(), queue, pid
        self.done = threading.Event()
        self.connections = Connections(f"{queue}@{self.host}")

    def start(self) -> None:
        self._beat(started=True)
        threading.Thread(target=self._run, name="cluster-heartbeat", daemon=True).start()

    def stop(self) -> None:
        self.done.set()
        try:
            stopped(self.host, self.queue)
        except Exception:  # a database that cannot be reached now: the silence will be alerted on
            log.exception("recording that the cluster stopped failed")

    def _run(self) -> None:
        every = max(settings.PAGETRAIL_CLUSTER_SILENT_SECONDS / 4, 0.5)
        while not self.done.wait(every):
            self._beat()

    def _beat(self, started: bool = False) -> None:
        try:
            if dropped := _dropped_connection():
                self.connections.database_failed(dropped)
            close_old_connections()  # a connection the database dropped is replaced, not reused
            beat(self.host, self.queue, self.pid, started=started)
            self.connections.database_answers()
            check_silent()
        except DatabaseError as exc:  # noted, and alerted on the first beat that reaches the database again
            self.connections.database_failed(exc)
            return
        except Exception:  # a failed beat is a missed beat: the others notice if it lasts
            log.exception("the cluster's heartbeat failed")
        try:
            self.connections.check_broker()
        except DatabaseError as exc:  # the broker's alert could not be written: the database went too
            self.connections.database_failed(exc)


def _dropped_connection() -> OperationalError | None:
    """The beat's connection was closed by the server since the last beat (a restart, a failover,
    `pg_terminate_backend`). Django's health check would replace it silently: asked first, so the drop is told."""
    if connection.connection is None or connection.is_usable():
        return None
    connection.close()  # the beat opens a new one
    return OperationalError("the database closed the connection the heartbeat held")
