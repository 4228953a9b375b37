"""A /metrics scrape at scale: its queries stay the same in number, and how long it takes.

    python -m bench.metrics_scrape [--jobs 100000] [--data var/bench/metrics] [--scrapes 7]

Loads synthetic rows once into a database of its own (the embedded SQLite profile under --data, or DATABASE_URL's
database when that is set): jobs over two providers in every state with their timestamps, a retry attempt for
every fifth job, a rejection for every twentieth, and alerts of each kind. Then scrapes /metrics as Prometheus
does and prints the queries of one scrape and the median and max of --scrapes timed scrapes, for the totals
(audit/operations/totals.py) and for the whole answer. Never a pass/fail on time: those figures are for reading.
"""

import argparse
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

from bench.admin_scale import configure

BATCH = 5000


def load(jobs: int) -> None:
    from django.utils import timezone

    from audit.models import Alert
    from extraction.models import Attempt, Bundle, Job, Rejection

    if Job.objects.count() >= jobs:
        return
    now = timezone.now()
    bundle, _ = Bundle.objects.get_or_create(
        correlation_id="b" * 64, defaults=dict(size=1, page_count=1, mime="application/pdf", submitted_by="bench")
    )
    states = ["completed"] * 7 + ["failed", "queued", "unknown"]
    for first in range(Job.objects.count(), jobs, BATCH):
        rows = []
        for i in range(first, min(first + BATCH, jobs)):
            at = now - timedelta(minutes=i % 20000)
            done = states[i % 10] == "completed"
            rows.append(
                Job(
                    bundle=bundle,
                    idempotency_key=f"bench-{i}",
                    provider=("local", "infrai")[i % 2],
                    status=states[i % 10],
                    deadline=at + timedelta(hours=1),
                    enqueued_at=at,
                    picked_up_at=at + timedelta(seconds=i % 90),
                    submitted_at=at + timedelta(seconds=i % 90),
                    provider_finished_at=at + timedelta(seconds=i % 90 + i % 600) if done else None,
                    manifest_durable_at=at + timedelta(seconds=i % 90 + i % 600 + 1) if done else None,
                )
            )
        made = Job.objects.bulk_create(rows)
        Attempt.objects.bulk_create(
            Attempt(job=job, number=1, kind="poll", outcome="retry", error_code=f"code{job.pk % 5}")
            for job in made[::5]
        )
        Rejection.objects.bulk_create(
            Rejection(code=("not_pdf", "storage_unavailable")[n % 2], message="x", size=1, submitted_by="bench")
            for n in range(len(made) // 20)
        )
        print(f"  loaded {first + len(made):,} jobs", file=sys.stderr)
    for kind in Alert.Kind.values:
        Alert.objects.get_or_create(
            key=f"bench-{kind}", defaults=dict(kind=kind, message="bench", link="/", status="open")
        )


def measure(scrapes: int) -> list[tuple[str, int, float, float]]:
    from django.conf import settings
    from django.db import connection
    from django.test import RequestFactory
    from django.test.utils import CaptureQueriesContext
    from prometheus_client import CollectorRegistry, generate_latest

    from audit.operations.dashboard import prometheus
    from audit.operations.totals import TotalsCollector

    settings.PAGETRAIL_METRICS_TOKEN = "bench"
    request = RequestFactory().get("/metrics", HTTP_AUTHORIZATION="Bearer bench")

    def totals():
        registry = CollectorRegistry()
        registry.register(TotalsCollector())
        generate_latest(registry)

    def whole():
        assert prometheus(request).status_code == 200  # the view alone: the middleware is not the scrape's cost

    results = []
    for name, scrape in (("totals (counters, histograms)", totals), ("whole /metrics answer", whole)):
        with CaptureQueriesContext(connection) as queries:
            scrape()
        times = []
        for _ in range(scrapes):
            started = time.perf_counter()
            scrape()
            times.append((time.perf_counter() - started) * 1000)
        results.append((name, len(queries), statistics.median(times), max(times)))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--data", type=Path, default=Path("var/bench/metrics"))
    parser.add_argument("--scrapes", type=int, default=7)
    options = parser.parse_args(argv)
    configure(options.data)
    from django.db import connection

    load(options.jobs)
    print(f"{connection.vendor}, {options.jobs:,} jobs")
    print(f"{'scrape':<32}{'queries':>8}{'median ms':>11}{'max ms':>9}")
    for name, queries, median, most in measure(options.scrapes):
        print(f"{name:<32}{queries:>8}{median:>11.1f}{most:>9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
