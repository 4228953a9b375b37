"""A cluster that lost its database or its broker says so: noted by its heartbeat, alerted where a person sees it.

A lost database cannot hold the alert about itself: the heartbeat notes when its beats began failing and opens
`database_lost` on the first beat that reaches the database again (a connection dropped by a failover, a
restart or `pg_terminate_backend` costs the task in hand its claim lease, so somebody should know). A broker that
does not answer is alerted at once (`broker_lost`, the database still answers) and cleared when it answers again:
tasks queued meanwhile wait in it, and the reconciler re-drives whatever it lost. Each is counted by /metrics as
`pagetrail_alerts_opened{kind=...}`.
"""

import logging
from datetime import datetime

from django.db import DatabaseError
from django.utils import timezone

from .signals import alert, alert_cleared

log = logging.getLogger(__name__)
LINK = "/admin/extraction/clusterheartbeat/"


class Connections:
    """What one cluster's heartbeat saw of its database and its broker, beat after beat."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.database_lost_at: datetime | None = None
        self.failed_beats = 0
        self.broker_lost_at: datetime | None = None
        self._broker = None

    def database_failed(self, exc: DatabaseError, at=None) -> None:
        if self.database_lost_at is None:
            self.database_lost_at = at or timezone.now()
            log.error("cluster %s lost its database connection: %s: %s", self.name, type(exc).__name__, exc)
        self.failed_beats += 1

    def database_answers(self, at=None) -> bool:
        """The database answered a beat: open the alert of an outage noted before it; whether one was opened."""
        if self.database_lost_at is None:
            return False
        lost, failed = self.database_lost_at, self.failed_beats
        message = (
            f"The {self.name} cluster lost its database connection at {_when(lost)} ({failed} heartbeat(s) failed) "
            f"and reached it again at {_when(at or timezone.now())}. A task it held then waits for its claim lease "
            "and is re-driven by the reconciler; look at the database server's log for the cause."
        )
        alert.send(Connections, kind="database_lost", key=f"database-lost-{self.name}", message=message, link=LINK)
        log.warning("cluster %s reached its database again (lost at %s)", self.name, lost.isoformat())
        self.database_lost_at, self.failed_beats = None, 0
        return True

    def check_broker(self, at=None) -> bool:
        """Ask the broker to answer; alert once when it stops, clear the alert when it answers again."""
        try:
            self.broker().ping()
        except Exception as exc:  # any failure to answer is the broker lost, for this cluster
            self._broker = None  # a fresh client next beat, not a pool stuck on a dead address
            if self.broker_lost_at is None:
                since = at or timezone.now()
                log.error("cluster %s cannot reach its broker: %s: %s", self.name, type(exc).__name__, exc)
                message = self._lost(exc, since)
                alert.send(Connections, kind="broker_lost", key=self.broker_key, message=message, link=LINK)
                self.broker_lost_at = since  # only once written: a database gone too means a try on the next beat
            return False
        if self.broker_lost_at is not None:
            log.warning("cluster %s reaches its broker again", self.name)
            alert_cleared.send(Connections, key=self.broker_key)
            self.broker_lost_at = None
        return True

    @property
    def broker_key(self) -> str:
        return f"broker-lost-{self.name}"

    def broker(self):
        if self._broker is None:
            from django_q.brokers import get_broker

            self._broker = get_broker()
        return self._broker

    def _lost(self, exc: Exception, since: datetime) -> str:
        return (
            f"The {self.name} cluster cannot reach its task broker since {_when(since)} "
            f"({type(exc).__name__}): it takes no new task. Tasks queued meanwhile wait in the broker; check that "
            "Redis runs and answers at REDIS_URL from this host. The alert clears when the broker answers again."
        )


def _when(at: datetime) -> str:
    return f"{timezone.localtime(at):%Y-%m-%d %H:%M:%S %Z}"
