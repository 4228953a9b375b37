"""The operations dashboard (admin) and the same figures for Prometheus (token protected), with the totals."""

import hmac

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily

from audit.operations import metrics
from audit.operations.totals import TotalsCollector

WINDOWS = {"1": "last hour", "24": "last day", "168": "last week"}
BAR = 300  # px, the longest bar
ROW = 20  # px a bar's row: 14 px of bar and 6 of gap


@staff_member_required
def dashboard(request):
    if not request.user.has_perm("extraction.view_job"):
        raise PermissionDenied
    hours = request.GET.get("hours", "24") if request.GET.get("hours") in WINDOWS else "24"
    rows = metrics.figures(float(hours))
    return render(
        request,
        "audit/dashboard.html",
        {
            **admin.site.each_context(request),
            "title": "Operations",
            "rows": rows,
            "hours": hours,
            "windows": WINDOWS,
            "headline": metrics.headline(),
            "states": chart(_state_bars(rows)),
            "timings": chart(_timing_bars(rows)),
        },
    )


def chart(bars: list[dict]) -> dict:
    """Bars with the row each starts at, and an SVG height that holds every row (each is ROW px tall)."""
    for n, bar in enumerate(bars):
        bar["y"] = n * ROW
    return {"bars": bars, "height": max(1, len(bars)) * ROW}


def _state_bars(rows) -> list[dict]:
    top = max((n for row in rows for n in row.by_state.values()), default=1)
    return [
        {
            "label": f"{row.provider} {state}",
            "value": n,
            "width": round(BAR * n / top),
            "url": _jobs(row.provider, state),
        }
        for row in rows
        for state, n in sorted(row.by_state.items())
    ]


def _jobs(provider: str, state: str) -> str:
    """The jobs a bar counts, as the jobs list filtered to them: a bar that worries someone is one click away."""
    query = urlencode({"provider__exact": provider, "status__exact": state})
    return f"{reverse('admin:extraction_job_changelist')}?{query}"


def _timing_bars(rows) -> list[dict]:
    values = [
        (f"{row.provider} {name} p{p}", v)
        for row in rows
        for name, pair in (
            ("queue wait", row.queue_wait),
            ("extraction", row.extraction),
            ("manifest write", row.manifest_write),
        )
        for p, v in zip((50, 95), pair)
        if v is not None
    ]
    top = max((v for _, v in values), default=1) or 1
    return [{"label": label, "value": round(v, 3), "width": round(BAR * v / top)} for label, v in values]


class FiguresCollector:
    """prometheus_client collector: reads the figures at scrape time."""

    def collect(self):
        rows, headline = metrics.figures(24), metrics.headline()
        yield _gauge(
            "pagetrail_submissions_open",
            "1 when the kill switch lets jobs be submitted",
            [([], int(headline["submissions_open"]))],
        )
        yield _gauge("pagetrail_queue_depth", "Tasks waiting in the broker", [([], headline["queue_depth"] or 0)])
        for name, doc, value in SERIES:
            yield _gauge(f"pagetrail_{name}", doc, [([row.provider], value(row)) for row in rows], ["provider"])
        yield _gauge(
            "pagetrail_jobs",
            "Jobs enqueued in the last 24 h by state",
            [([row.provider, state], n) for row in rows for state, n in row.by_state.items()],
            ["provider", "state"],
        )


SERIES = [
    ("queue_wait_p50_seconds", "Median queue wait, last 24 h", lambda r: r.queue_wait[0] or 0),
    ("queue_wait_p95_seconds", "95th percentile queue wait, last 24 h", lambda r: r.queue_wait[1] or 0),
    ("extraction_p50_seconds", "Median extraction time, last 24 h", lambda r: r.extraction[0] or 0),
    ("extraction_p95_seconds", "95th percentile extraction time, last 24 h", lambda r: r.extraction[1] or 0),
    ("manifest_write_p95_seconds", "95th percentile manifest write latency", lambda r: r.manifest_write[1] or 0),
    ("retry_rate", "Share of provider attempts that were retried", lambda r: r.retry_rate),
    ("peak_temp_bytes", "Largest job temp dir, last 24 h", lambda r: r.peak_temp_bytes),
    ("needing_review_ratio", "Share of completed jobs with a review flag", lambda r: r.needing_review),
    ("jobs_past_deadline", "Active jobs past their deadline", lambda r: r.past_deadline),
    ("jobs_unknown", "Jobs whose outcome is unknown", lambda r: r.unknown),
]


def _gauge(name, doc, samples, labels=()):
    gauge = GaugeMetricFamily(name, doc, labels=list(labels))
    for label_values, value in samples:
        gauge.add_metric(label_values, value)
    return gauge


def prometheus(request):
    """Prometheus text format; `Authorization: Bearer <PAGETRAIL_METRICS_TOKEN>` (off when no token is set)."""
    expected = settings.PAGETRAIL_METRICS_TOKEN
    given = request.headers.get("Authorization", "").removeprefix("Bearer ")
    if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
        return HttpResponse("unauthorized\n", status=401, content_type="text/plain")
    registry = CollectorRegistry()
    registry.register(FiguresCollector())
    registry.register(TotalsCollector())
    return HttpResponse(generate_latest(registry), content_type="text/plain; version=0.0.4; charset=utf-8")
