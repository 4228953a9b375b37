"""What a reviewer and a compliance officer see, live: pages that update themselves with no reload.

Headless Chromium (Debian's package) driven by Playwright, against the running portal; the fixtures and
the Content-Security-Policy watch are tests/test_browser.py's."""

import threading

import pytest

from tests import pdfs
from tests.conftest import write_stored
from tests.test_browser import CHROMIUM, browser, log_in, tasks_run_in_the_request, user  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(not CHROMIUM, reason="no chromium here (make browser installs it)")]


def completed_job(tmp_path, make=pdfs.mixed, **fields):
    from extraction.runner import run_job
    from extraction.services import submit_bundle

    with open(make(tmp_path), "rb") as fh:
        job_id = submit_bundle(fh, filename=fields.pop("filename", "claims-1042.pdf"), submitted_by="t",
                               **fields).job_id
    run_job(job_id)
    return job_id


def in_a_thread(work, *args):
    """Work the server does while the page is open (the page must see it without a reload)."""
    thread = threading.Thread(target=work, args=args)
    thread.start()
    return thread


def test_a_verification_run_page_shows_one_status_everywhere_as_the_run_ends(browser, live_server, tmp_path):
    from playwright.sync_api import expect

    from audit.models import Asset
    from audit.verify import execute, start_run

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
