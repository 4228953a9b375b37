"""What a reviewer and a compliance officer see, live: pages that update themselves with no reload.

Headless Chromium (Debian's package) driven by Playwright, against the running portal; the fixtures and
the Content-Security-Policy watch are tests/test_browser.py's."""

import os
import re
import threading
from pathlib import Path

import pytest

from tests import pdfs
from tests.conftest import write_stored
from tests.test_browser import CHROMIUM, browser, log_in, tasks_run_in_the_request, user  # noqa: F401

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM, reason="no chromium here (make browser installs it)"),
]


def completed_job(tmp_path, make=pdfs.mixed, **fields):
    from extraction.intake.staging import submit_bundle
    from extraction.runner import run_job

    with open(make(tmp_path), "rb") as fh:
        job_id = submit_bundle(
            fh, filename=fields.pop("filename", "claims-1042.pdf"), submitted_by="t", **fields
        ).job_id
    run_job(job_id)
    return job_id


def gappy_bundle(directory: Path) -> Path:
    """240 pages, each with a small JPEG scan except pages 4 and 9-12, which have none."""
    doc = pdfs.Doc()
    for n in range(1, 241):
        doc.page(*([] if n == 4 or 9 <= n <= 12 else [pdfs.jpeg(doc, pdfs.pattern_picture(n))]))
    return doc.save(directory / "gappy.pdf")


def snap(page, name: str) -> None:
    """A 1280 px screenshot into $PAGETRAIL_SCREENSHOTS (var/screenshots/ by hand), for a person to look at."""
    if where := os.environ.get("PAGETRAIL_SCREENSHOTS"):
        Path(where).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(where) / f"{name}.png"), full_page=True)


def wide(page, width=1280):
    page.set_viewport_size({"width": width, "height": 900})
    return page


# What sticks out of a 1280 px viewport: elements whose box ends right of it (a table pushed wide, a long id),
# and SVG bars drawn outside their chart (an SVG shorter than its rows hides the last ones). Playwright runs
# this in its own isolated world, which the page's Content-Security-Policy does not govern.
CLIPPED = """() => {
  const width = document.documentElement.clientWidth, found = [];
  for (const el of document.querySelectorAll("body *")) {
    const box = el.getBoundingClientRect();
    const name = `${el.tagName.toLowerCase()}#${el.id}.${el.className}`;
    if (box.width && box.right > width + 1) found.push(`${name} ends at ${Math.round(box.right)}`);
  }
  for (const svg of document.querySelectorAll("svg")) {
    const frame = svg.getBoundingClientRect();
    for (const shape of svg.querySelectorAll("rect, text")) {
      const box = shape.getBoundingClientRect();
      const outside = box.bottom > frame.bottom + 1 || box.right > frame.right + 1;
      if (outside) found.push(`${svg.id}: a ${shape.tagName} outside`);
    }
  }
  return found;
}"""


def clipped(page) -> list[str]:
    """Everything that does not fit the page's viewport (empty when nothing is clipped)."""
    return page.evaluate(CLIPPED)


def in_a_thread(work, *args):
    """Work the server does while the page is open (the page must see it without a reload)."""
    thread = threading.Thread(target=work, args=args)
    thread.start()
    return thread


def test_a_verification_run_page_shows_one_status_everywhere_as_the_run_ends(browser, live_server, tmp_path):
    from playwright.sync_api import expect

    from audit.models import Asset
    from audit.verification.verify import execute, start_run

    completed_job(tmp_path)
    for asset in Asset.objects.all()[:2]:
        write_stored("outputs", asset.name, b"tampered")
    run = start_run("clara")
    user("clara", "Compliance staff")
    page = log_in(browser, live_server, "clara")
    page.goto(f"{live_server.url}/admin/audit/verificationrun/{run.pk}/change/")
    assert "(queued)" in page.inner_text("#content h2")
    execute(run.pk)  # while the page is open
    expect(page.locator("#run-progress-status")).to_have_text("failed")
    # The heading, the fields and the window title say the same as the widget, without a reload.
    expect(page.locator("#content h2").first).to_have_text(f"verification run {run.pk} (failed)")
    expect(page.locator(".field-live_status .readonly")).to_have_text("failed")
    expect(page.locator(".field-findings_link .readonly")).to_have_text("2 finding(s)")
    assert page.inner_text(".field-progress .readonly") == "6 of 6 assets (100%), 1 of 1 manifests"
    assert page.inner_text("#run-progress-findings") == "2"
    assert page.inner_text(".field-live_finished_at .readonly") != "–"
    assert "(failed)" in page.title()
    assert "queued" not in page.inner_text("#container").lower()  # nothing on the page still says so
    snap(wide(page), "verification-run")
    assert clipped(page) == []


@pytest.mark.parametrize("changelist", ["extraction/job", "audit/manifest", "audit/reviewflag", "extraction/bundle"])
def test_a_list_names_its_files_and_fits_1280_px(browser, live_server, tmp_path, changelist):
    from audit.models import Manifest
    from audit.review.flags import raise_flag

    completed_job(tmp_path, case_label="claim 1042")
    raise_flag(Manifest.objects.get(), [2], "missing_image", "stamp", "rita")
    user("boss", superuser=True)
    page = wide(log_in(browser, live_server, "boss"))
    page.goto(f"{live_server.url}/admin/{changelist}/")
    table = page.locator("#result_list")
    assert "claims-1042.pdf" in table.inner_text() and "claim 1042" in table.inner_text()
    snap(page, f"list-{changelist.replace('/', '-')}")
    box = table.bounding_box()
    assert box["x"] + box["width"] <= 1280


def test_the_job_page_moves_from_queued_to_completed_by_itself_and_links_its_evidence(
    browser, live_server, tmp_path, monkeypatch
):
    from django_q.conf import Conf
    from playwright.sync_api import expect

    from audit.models import Manifest
    from extraction.intake.staging import submit_bundle
    from extraction.runner import run_job

    monkeypatch.setattr(Conf, "SYNC", False)  # the job waits in the queue until this test runs it
    with open(pdfs.mixed(tmp_path), "rb") as fh:
        job_id = submit_bundle(fh, filename="claims-1042.pdf", submitted_by="t", case_label="claim 1042").job_id
    user("boss", superuser=True)
    page = log_in(browser, live_server, "boss")
    page.goto(f"{live_server.url}/admin/extraction/job/{job_id}/change/")
    assert page.inner_text("#job-status") == "queued"
    assert "Waiting in the queue" in page.inner_text("#job-reason")
    assert "manifest" not in page.inner_text("#job-links")
    in_a_thread(run_job, job_id).join()
    expect(page.locator("#job-status")).to_have_text("completed")
    expect(page.locator("#content h2").first).to_have_text(f"job {job_id} (completed)")
    assert page.inner_text(".breadcrumbs [data-live=title]") == f"job {job_id} (completed)"
    assert not re.search(r"\bqueued\b", page.inner_text("#container"), re.I)  # nothing on the page still says so
    links = page.inner_text("#job-links")
    for label in (
        "bundle claims-1042.pdf",
        "download the input PDF",
        f"manifest {Manifest.objects.get().sequence}",
        "review page",
        "6 asset(s)",
        "0 open flag(s)",
        "not split into cases",
    ):
        assert label in links
    assert "extract" in page.inner_text("#job-timeline")
    assert "Claim token" not in page.inner_text("#content")
    snap(wide(page), "job")
    assert clipped(page) == []
    page.click("#job-links >> text=6 asset(s)")
    page.wait_for_url("**/admin/audit/asset/?manifest__id__exact=*")
    assert "6 assets" in page.inner_text("#changelist")


def test_the_dashboard_draws_every_bar_of_two_providers(browser, live_server, tmp_path):
    from extraction.models import Job

    job = Job.objects.get(pk=completed_job(tmp_path))
    for n, status in enumerate(("queued", "submitted", "running", "completed", "failed", "unknown") * 2):
        Job.objects.create(
            bundle=job.bundle,
            idempotency_key=f"k{n}",
            provider=("infrai", "local")[n // 6],
            extractor="x",
            extractor_version="1",
            status=status,
            deadline=job.deadline,
        )
    user("olga", superuser=True)
    page = wide(log_in(browser, live_server, "olga"))
    page.goto(f"{live_server.url}/admin/dashboard/")
    chart = page.locator("#states-chart").bounding_box()
    bars = page.locator("#states-chart rect")
    assert bars.count() == 12
    last = bars.nth(11).bounding_box()
    assert last["y"] + last["height"] <= chart["y"] + chart["height"]
    snap(page, "dashboard")
    assert clipped(page) == []


def test_the_api_docs_render_with_no_internet(browser, live_server):
    from playwright.sync_api import expect

    page = browser.new_page()
    elsewhere = []
    page.route(
        lambda url: not url.startswith(live_server.url),
        lambda route: (elsewhere.append(route.request.url), route.abort()),
    )
    page.goto(f"{live_server.url}/api/v1/docs")
    expect(page.locator("#swagger-ui .info .title")).to_contain_text("Pagetrail API")
    expect(page.locator("#swagger-ui .opblock").first).to_be_visible()
    assert elsewhere == []


def test_favicon_ico_is_there_for_browsers_that_ask_for_it(live_server):
    import requests

    response = requests.get(f"{live_server.url}/favicon.ico", timeout=10)
    assert response.status_code == 200 and response.headers["Content-Type"] == "image/svg+xml"


def test_a_240_page_review_indexes_its_pages_and_shows_previews_as_they_are_made(browser, live_server, tmp_path):
    from playwright.sync_api import expect

    from audit import tasks
    from audit.models import Manifest
    from audit.review.flags import raise_flag

    completed_job(tmp_path, make=gappy_bundle, filename="gappy.pdf")
    manifest = Manifest.objects.get()
    raise_flag(manifest, [200, 201], "wrong_image", "the scan is upside down", "rita")
    user("rita", "Reviewer")
    page = wide(log_in(browser, live_server, "rita"))
    page.goto(f"{live_server.url}/review/{manifest.pk}/")
    assert "No image on pages 4, 9-12." in page.inner_text("#coverage")
    assert "Flagged: pages 200-201." in page.inner_text("#coverage")
    index = page.locator("#page-index a")
    assert index.count() == 240
    assert page.locator("#page-index a.missing").all_inner_texts() == ["4", "9", "10", "11", "12"]
    assert page.locator("#page-index a.flagged").all_inner_texts() == ["200", "201"]
    assert "0 of 240 pages have a preview" in page.inner_text("#preview-count")
    page.click("#page-index >> text=/^201$/")  # outside the cards on screen (1-40): its own chunk loads
    page.wait_for_url(re.compile(r"/review/\d+/\?from=201#page-201$"))
    expect(page.locator("#page-201")).to_be_focused()
    assert "the scan is upside down" in page.inner_text("#page-201 .page-flags")
    in_a_thread(tasks.generate_previews, manifest.pk).join()
    expect(page.locator("#preview-count")).to_have_text("240 of 240 pages have a preview")
    expect(page.locator(".review-page .preview-open")).to_have_count(40)  # pages 201-240, the chunk on screen
    snap(page, "review-240")
    assert clipped(page) == []
    page.click("#page-205 .preview-open")  # a preview that arrived while the page was open opens large
    expect(page.locator("#preview-title")).to_have_text("Page 205 of 240")
    page.keyboard.press("j")
    expect(page.locator("#preview-title")).to_have_text("Page 206 of 240")
    for _ in range(6):  # back past the chunk's first page: the chunk before loads, still in the large view
        page.keyboard.press("k")
    page.wait_for_url(re.compile(r"/review/\d+/\?from=161&large=1#page-200$"))
    expect(page.locator("#preview-title")).to_have_text("Page 200 of 240")
    expect(page.locator("#preview-image")).to_be_visible()
    assert "the scan is upside down" in page.inner_text("#page-200 .page-flags")


def test_a_reviewer_confirms_one_suggestion_and_dismisses_another_on_a_240_page_bundle(browser, live_server, tmp_path):
    from playwright.sync_api import expect

    from audit.models import Manifest, PageHint
    from bench.review_corpus import long_bundle

    completed_job(tmp_path, make=lambda d: long_bundle(d / "long.pdf"), filename="long.pdf")
    manifest = Manifest.objects.get()
    assert PageHint.objects.filter(manifest=manifest).count() == 2  # found by the previews queue's task, run here
    user("rita", "Reviewer")
    page = wide(log_in(browser, live_server, "rita"))
    page.goto(f"{live_server.url}/review/{manifest.pk}/")
    expect(page.locator("#suggestions .suggestion.suggested")).to_have_count(2)
    assert page.locator("#page-index a.suggested").all_inner_texts() == ["3", "4", "5", "6"]

    page.keyboard.press("s")  # to the first suggestion
    first = page.locator("#suggestions .suggestion").first
    expect(first).to_be_focused()
    expect(first).to_contain_text("printed page 4 of 240 is missing between PDF pages 3 and 4")
    page.keyboard.press("c")  # confirmed: a flag, and on to the next suggestion
    page.wait_for_url(re.compile(r"/review/\d+/#next-suggestion$"))
    expect(page.locator(".messagelist")).to_contain_text("Suggestion confirmed: flag raised on page(s) 3-4.")
    second = page.locator("#suggestions .suggestion.suggested")
    expect(second).to_be_focused()
    expect(second).to_contain_text("printed page 6 of 240 appears on PDF pages 5 and 6")
    page.keyboard.press("x")
    page.wait_for_url(re.compile(r"/review/\d+/#next-suggestion$"))
    expect(page.locator(".messagelist")).to_contain_text("Suggestion on page(s) 5-6 dismissed.")
    expect(page.locator("#suggestions .suggestion.suggested")).to_have_count(0)
    assert page.locator("#page-index a.flagged").all_inner_texts() == ["3", "4"]
    assert "(dismissed by rita, " in page.inner_text("#suggestions")
    snap(page, "review-suggestions")
    assert clipped(page) == []
    statuses = dict(PageHint.objects.values_list("kind", "status"))
    assert statuses == {"missing_page": "confirmed", "repeated_page": "dismissed"}
