"""Everything that happened since the deployment began, for Prometheus: counters and histograms read from the
database at scrape time.

Why from the database and not prometheus_client's Counter and Histogram: jobs run in many `qcluster` processes
on many hosts, and any one of gunicorn's workers answers /metrics; a counter in a process's memory counts that
process's share and starts again at zero with it. Rows are what every process agrees on, and none of these
rows is ever deleted (jobs, rejections, attempts, alerts), so a count of them only grows: a counter. Each
family is one aggregate query (GROUP BY, conditional counts for the buckets), whatever the number of rows.
"""

from typing import Any

from django.db.models import Count, F, FloatField, Func, Q, Sum
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from audit.models import Alert
from extraction.models import Attempt, Job, Rejection

# Seconds: from a queue wait of a tenth of a second to an extraction of an hour (the job deadline's order).
BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
# name: (from, to, which jobs), each a span between two timestamps of a Job row (docs/pipeline.md, Job states).
# Extraction and manifest times are counted once the manifest is durable, when neither can change again.
DURABLE = Q(manifest_durable_at__isnull=False)
DURATIONS = {
    "queue_wait": ("enqueued_at", "picked_up_at", Q(), "Seconds from enqueue to a worker picking the job up"),
    "extraction": ("submitted_at", "provider_finished_at", DURABLE, "Seconds the provider took, completed jobs"),
    "manifest_durable": (
        "provider_finished_at",
        "manifest_durable_at",
        DURABLE,
        "Seconds from the provider's end to the manifest being durable (downloads included)",
    ),
}


class TotalsCollector:
    """prometheus_client collector: counters and histograms from four aggregate queries."""

    def collect(self):
        yield from jobs_families()
        yield _counter("pagetrail_submissions_refused", "Submissions refused, by code", ["code"], refusals())
        yield _counter(
            "pagetrail_retries", "Job attempts retried, by provider and code", ["provider", "code"], retries()
        )
        yield from alert_families()


def jobs_families():
    groups: list[dict[str, Any]] = [
        dict(g)
        for g in Job.objects.order_by().annotate(**_spans()).values("provider", "status").annotate(**_job_aggregates())
    ]
    finished = [([g["provider"], g["status"]], g["n"]) for g in groups if g["status"] in Job.TERMINAL]
    yield _counter("pagetrail_jobs_finished", "Jobs that reached a final state", ["provider", "state"], finished)
    for name, (*_, doc) in DURATIONS.items():
        histogram = HistogramMetricFamily(f"pagetrail_{name}_seconds", doc, labels=["provider"])
        for provider in sorted({g["provider"] for g in groups}):
            mine = [g for g in groups if g["provider"] == provider]
            buckets = [(str(b), sum(g[f"{name}_{i}"] for g in mine)) for i, b in enumerate(BUCKETS)]
            total = sum(float(g[f"{name}_sum"] or 0) for g in mine)
            buckets.append(("+Inf", sum(g[f"{name}_n"] for g in mine)))
            histogram.add_metric([provider], buckets, total)
        yield histogram


class Seconds(Func):
    """Seconds from one timestamp column to another, computed by the database itself: SQLite's julianday(),
    PostgreSQL's epoch of an interval. Django's own duration arithmetic calls back into Python for every row on
    SQLite (hundreds of milliseconds per thousand jobs with the buckets' comparisons)."""

    output_field = FloatField()

    def __init__(self, start: str, end: str):
        super().__init__(F(end), F(start))

    def as_sqlite(self, compiler, connection, **extra):
        extra = {"template": "((julianday(%(expressions)s)) * 86400.0)", "arg_joiner": ") - julianday(", **extra}
        return self.as_sql(compiler, connection, **extra)

    def as_postgresql(self, compiler, connection, **extra):
        extra = {"template": "date_part('epoch', %(expressions)s)", "arg_joiner": " - ", **extra}
        return self.as_sql(compiler, connection, **extra)


def _spans() -> dict:
    return {name: Seconds(start, end) for name, (start, end, *_) in DURATIONS.items()}


def _job_aggregates() -> dict:
    """Per (provider, state): the jobs, and per span their count, sum and one count per bucket (cumulative: each
    counts the spans up to its bound, as Prometheus' `le` does). A span with a missing end is NULL: in no bucket."""
    aggregates: dict = {"n": Count("pk")}
    for name, (*_, which, _) in DURATIONS.items():
        measured = which & Q(**{f"{name}__isnull": False})
        aggregates[f"{name}_n"] = Count("pk", filter=measured)
        aggregates[f"{name}_sum"] = Sum(name, filter=measured)
        for i, bound in enumerate(BUCKETS):
            aggregates[f"{name}_{i}"] = Count("pk", filter=which & Q(**{f"{name}__lte": bound}))  # NULL: false
    return aggregates


def refusals() -> list:
    rows = Rejection.objects.order_by().values_list("code").annotate(n=Count("pk"))
    return [([code], n) for code, n in rows]


def retries() -> list:
    retried = Attempt.objects.filter(outcome=Attempt.Outcome.RETRY).order_by()
    rows = retried.values_list("job__provider", "error_code").annotate(n=Count("pk"))
    return [([provider, code], n) for provider, code, n in rows]


def alert_families():
    by_kind = Alert.objects.order_by().values_list("kind")
    open_now = Count("pk", filter=Q(status=Alert.Status.OPEN))
    rows = {kind: counts for kind, *counts in by_kind.annotate(n=Count("pk"), seen=Sum("occurrences"), open=open_now)}
    kinds = sorted({*Alert.Kind.values, *rows})  # every kind, 0 until it happens: a rule needs its series
    counts = [([kind], rows.get(kind, (0, 0, 0))) for kind in kinds]
    yield _counter("pagetrail_alerts_opened", "Alerts opened, by kind", ["kind"], [(k, c[0]) for k, c in counts])
    yield _counter(
        "pagetrail_alert_occurrences",
        "Occurrences of alerts (a repeat of an open one counts here), by kind",
        ["kind"],
        [(k, c[1]) for k, c in counts],
    )
    gauge = GaugeMetricFamily("pagetrail_alerts_open", "Alerts open now (not acknowledged), by kind", labels=["kind"])
    for k, c in counts:
        gauge.add_metric(k, c[2])
    yield gauge


def _counter(name: str, doc: str, labels: list[str], samples) -> CounterMetricFamily:
    counter = CounterMetricFamily(name, doc, labels=labels)
    for label_values, value in samples:
        counter.add_metric(label_values, value)
    return counter
