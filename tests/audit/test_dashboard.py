import re
from datetime import timedelta

import pytest
from django.urls import reverse

from audit.operations import metrics
from core.percentiles import percentile
from extraction.intake.staging import submit_bundle
from extraction.models import Job
from extraction.runner import run_job
from tests import pdfs

pytestmark = pytest.mark.django_db


@pytest.fixture
def jobs(tmp_path):
    for factory in (pdfs.mixed, pdfs.jpeg_rgb, pdfs.cmyk):
        with open(factory(tmp_path), "rb") as fh:
            job_id = submit_bundle(fh, filename="x.pdf", submitted_by="t").job_id
        if factory is not pdfs.cmyk:
            run_job(job_id)
    return Job.objects.order_by("pk")


def test_it_computes_nearest_rank_percentiles():
    assert percentile([], 0.5) is None
    assert percentile([3, 1, 2], 0.5) == 2
    assert percentile(list(range(1, 101)), 0.95) == 95


def test_it_reports_per_provider_figures_for_the_window(jobs):
    Job.objects.filter(pk=jobs[0].pk).update(picked_up_at=jobs[0].enqueued_at + timedelta(seconds=4))
    [local] = metrics.figures(24)
    assert (local.provider, local.jobs, local.by_state) == ("local", 3, {"completed": 2, "queued": 1})
    assert local.queue_wait[1] == 4.0 and local.extraction[0] > 0 and local.peak_temp_bytes > 0
    assert local.manifest_write[0] is not None and local.retry_rate == 0.0


def test_the_dashboard_shows_the_figures_the_kill_switch_and_the_queue(admin_client, jobs):
    page = admin_client.get(reverse("dashboard")).content.decode()
    assert 'id="figures"' in page and "<td>local</td><td>3</td>" in page
    assert "Submissions:</strong>" in page and "open" in page and "Queue depth:" in page
    assert 'id="states-chart"' in page and "local completed" in page


def test_prometheus_needs_the_token(client, settings, jobs):
    settings.PAGETRAIL_METRICS_TOKEN = "scrape-me"
    assert client.get("/metrics").status_code == 401
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-me")
    text = response.content.decode()
    assert response.status_code == 200 and 'pagetrail_jobs{provider="local",state="completed"} 2.0' in text
    assert "pagetrail_submissions_open 1.0" in text and 'pagetrail_extraction_p95_seconds{provider="local"}' in text


def test_prometheus_is_closed_when_no_token_is_configured(client, settings):
    settings.PAGETRAIL_METRICS_TOKEN = ""
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401


def bars_inside(page: str, chart: str) -> tuple[int, int]:
    """(bars drawn inside the chart's viewBox, bars in the chart): a bar below the box is clipped away."""
    svg = re.search(rf'<svg id="{chart}"([^>]*)>(.*?)</svg>', page, re.S)
    attributes, body = svg.group(1), svg.group(2)
    box = re.search(r'viewBox="0 0 (\d+) (\d+)"', attributes)  # without one, the width and height are the box
    width, height = map(
        int,
        box.groups()
        if box
        else (re.search(r'width="(\d+)"', attributes).group(1), re.search(r'height="(\d+)"', attributes).group(1)),
    )
    rows = re.findall(
        r'<g transform="translate\(0,(\d+)\)">\s*<text[^>]*>[^<]*</text>\s*'
        r'<rect x="(\d+)" y="(\d+)" height="(\d+)" width="(\d+)"',
        body,
    )
    inside = [r for r in rows if int(r[0]) + int(r[2]) + int(r[3]) <= height and int(r[1]) + int(r[4]) <= width]
    return len(inside), len(rows)


def test_every_bar_of_two_providers_is_drawn_inside_the_chart(admin_client, jobs):
    bundle = jobs[0].bundle
    for n, (provider, status) in enumerate(
        (p, s)
        for p in ("infrai", "local")
        for s in ("queued", "submitted", "running", "completed", "failed", "unknown")
    ):
        Job.objects.create(
            bundle=bundle,
            idempotency_key=f"k{n}",
            provider=provider,
            extractor="x",
            extractor_version="1",
            status=status,
            deadline=jobs[0].deadline,
        )
    page = admin_client.get(reverse("dashboard")).content.decode()
    assert bars_inside(page, "states-chart") == (12, 12)
    drawn, timings = bars_inside(page, "timings-chart")
    assert drawn == timings > 0
