"""One deployment, one extractor: a worker refuses to start beside hosts that run other versions.

Each host records the versions it extracts with (the extractor's own, and every library that can change
an output's bytes) when its workers start. A host that brings versions new to it (a new host, or one
upgraded in place) while another host seen within RECENT recorded different ones does not start: its
`manage.py qcluster` logs an error and exits before it starts any process. A host that starts again with the
versions it already recorded is not stopped (a recycled worker, or an old host during a rolling upgrade).
PAGETRAIL_ALLOW_MIXED_EXTRACTORS=true lets a host bring new versions all the same: the rolling upgrade.
"""

import logging
import socket
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.utils import timezone

log = logging.getLogger(__name__)
# A host not seen for this long has left the deployment (or delete its row in the admin).
RECENT = timedelta(days=30)


class WorkerVersions(models.Model):
    """The versions a host's workers extract with, as recorded when they last started."""

    host = models.CharField(max_length=255, unique=True)
    versions = models.JSONField()
    seen_at = models.DateTimeField()

    class Meta:
        app_label = "extraction"
        verbose_name_plural = "worker versions"

    def __str__(self):
        return self.host

    @classmethod
    def check_in(cls, host: str, versions: dict, allow_mixed: bool = False, at=None) -> list[str]:
        """Record this host's versions unless they are new to it and differ from another recent host's.

        Returns the hosts whose versions differ when this host must not start (then nothing is recorded).
        """
        at = at or timezone.now()
        with transaction.atomic():
            mine = cls.objects.select_for_update().filter(host=host).first()
            differing = (
                []
                if allow_mixed or (mine and mine.versions == versions)
                else [
                    other.host
                    for other in cls.objects.filter(seen_at__gte=at - RECENT).exclude(host=host)
                    if other.versions != versions
                ]
            )
            if not differing:
                cls._record(host, versions, at)
        return differing

    @classmethod
    def _record(cls, host: str, versions: dict, at) -> None:
        try:
            with transaction.atomic():
                cls.objects.update_or_create(host=host, defaults={"versions": versions, "seen_at": at})
        except IntegrityError:  # another worker of this host created the row first: same versions
            cls.objects.filter(host=host).update(versions=versions, seen_at=at)


def this_host() -> dict:
    """What this worker extracts with: the configured provider's extractor and version, and the libraries
    of the self-hosted extractor (which also validates every input and renders the previews)."""
    from .pdf import versions
    from .providers import get_provider

    provider = get_provider(settings.PAGETRAIL_PROVIDER)
    return {
        "provider": provider.name,
        "extractor": provider.extractor,
        "extractor_version": provider.version,
        "libraries": versions.libraries(),
    }


def may_start(cluster: str = "") -> bool:
    """Checked by `manage.py qcluster` before it starts anything: False (with the error logged) when this
    host must not start beside the versions another host recorded."""
    host, versions = socket.gethostname(), this_host()
    differing = WorkerVersions.check_in(host, versions, settings.PAGETRAIL_ALLOW_MIXED_EXTRACTORS)
    if differing:
        log.error(
            "the %s cluster on %s refuses to start: its extractor versions %s differ from those recorded by "
            "%s; set PAGETRAIL_ALLOW_MIXED_EXTRACTORS=true for a rolling upgrade (see docs/versions.md)",
            cluster or "worker",
            host,
            versions,
            ", ".join(sorted(differing)),
        )
    return not differing


def record_at_worker_start(proc_name=None, **kwargs) -> None:
    """django-q2's post_spawn hook: each worker, recycled ones too, marks its host as seen with its versions."""
    try:
        WorkerVersions.check_in(socket.gethostname(), this_host(), allow_mixed=True)
    except Exception:  # the cluster passed may_start; a failed refresh must not stop a worker
        log.exception("recording the worker's versions at start failed")
