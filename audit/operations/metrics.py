"""Operational figures per provider over a time window: one source for the dashboard and Prometheus."""

from dataclasses import dataclass, field
from datetime import timedelta

from django.db.models import Count, Q
from django.utils import timezone

from audit.models import ReviewFlag
from core.percentiles import percentile
from extraction.models import Attempt, Job, SubmissionSwitch


@dataclass
class ProviderFigures:
    provider: str
    jobs: int = 0
    by_state: dict = field(default_factory=dict)
    queue_wait: tuple = (None, None)  # p50, p95 seconds
    extraction: tuple = (None, None)
    manifest_write: tuple = (None, None)
    retries_per_job: float = 0.0
    retry_rate: float = 0.0  # share of attempts that had to be retried
    peak_temp_bytes: int = 0
    needing_review: float = 0.0  # share of completed jobs with a review flag
    past_deadline: int = 0
    unknown: int = 0


def figures(hours: float = 24, at=None) -> list[ProviderFigures]:
    since = (at or timezone.now()) - timedelta(hours=hours)
    jobs = Job.objects.filter(enqueued_at__gte=since)
    return [
        _for(provider, jobs.filter(provider=provider))
        for provider in sorted(set(jobs.values_list("provider", flat=True)))
    ]


def _for(provider: str, jobs) -> ProviderFigures:
    rows = list(
        jobs.values_list(
            "enqueued_at",
            "picked_up_at",
            "submitted_at",
            "provider_finished_at",
            "manifest_durable_at",
            "temp_peak_bytes",
        )
    )
    waits = [(p - e).total_seconds() for e, p, *_ in rows if p]
    runs = [(f - s).total_seconds() for _, _, s, f, *_ in rows if s and f]
    writes = [(m - f).total_seconds() for *_, f, m, _ in rows if f and m]
    attempts = Attempt.objects.filter(job__in=jobs).aggregate(
        n=Count("pk"), retried=Count("pk", filter=Q(outcome="retry"))
    )
    completed = jobs.filter(status=Job.Status.COMPLETED)
    flagged = ReviewFlag.objects.filter(manifest__job__in=completed).values("manifest").distinct().count()
    return ProviderFigures(
        provider=provider,
        jobs=len(rows),
        by_state=dict(jobs.values_list("status").annotate(n=Count("pk")).order_by()),
        queue_wait=(percentile(waits, 0.5), percentile(waits, 0.95)),
        extraction=(percentile(runs, 0.5), percentile(runs, 0.95)),
        manifest_write=(percentile(writes, 0.5), percentile(writes, 0.95)),
        retries_per_job=attempts["retried"] / len(rows) if rows else 0.0,
        retry_rate=attempts["retried"] / attempts["n"] if attempts["n"] else 0.0,
        peak_temp_bytes=max((r[5] or 0 for r in rows), default=0),
        needing_review=flagged / completed.count() if completed.exists() else 0.0,
        past_deadline=jobs.filter(status__in=Job.ACTIVE, deadline__lt=timezone.now()).count(),
        unknown=jobs.filter(status=Job.Status.UNKNOWN).count(),
    )


def queue_depth() -> int | None:
    from django_q.brokers import get_broker

    try:
        return get_broker().queue_size()
    except Exception:  # the broker being down is itself what the dashboard must show
        return None


def headline() -> dict:
    return {
        "submissions_open": SubmissionSwitch.submissions_open(),
        "queue_depth": queue_depth(),
        "unknown_jobs": Job.objects.filter(status=Job.Status.UNKNOWN).count(),
    }
