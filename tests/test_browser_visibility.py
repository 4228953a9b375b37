"""Least visibility and approving with open eyes, in a real browser: a Submitter sees only their team's work,
and a Retention approver with no other permission reads, by name, every file a draft would delete.
Headless Chromium driven by Playwright; fixtures from tests/test_browser.py."""

from datetime import timedelta

import pytest

from tests import pdfs
from tests.conftest import approved_policy
from tests.test_browser import CHROMIUM, browser, log_in, tasks_run_in_the_request, user  # noqa: F401
from tests.test_browser_workflows import snap, wide

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM, reason="no chromium here (make browser installs it)"),
]


def extracted(path, by: str, case_label: str) -> int:
    from extraction.intake.staging import submit_bundle
    from extraction.runner import run_job

    with open(path, "rb") as fh:
        job_id = submit_bundle(fh, filename=path.name, submitted_by=by, case_label=case_label).job_id
    run_job(job_id)
    return job_id


def test_a_submitter_sees_only_their_own_work(browser, live_server, tmp_path):
    from playwright.sync_api import expect

    (tmp_path / "sue").mkdir(), (tmp_path / "boss").mkdir()
    extracted(pdfs.jpeg_rgb(tmp_path / "sue"), "sue", "claim-sue")
    theirs = extracted(pdfs.mixed(tmp_path / "boss"), "boss", "claim-boss")
    user("sue", "Submitter")
    page = wide(log_in(browser, live_server, "sue"))
    for changelist in ("bundle", "job"):
        page.goto(f"{live_server.url}/admin/extraction/{changelist}/")
        expect(page.locator("#result_list")).to_contain_text("claim-sue")
        expect(page.locator("#result_list")).not_to_contain_text("claim-boss")
        snap(page, f"submitter-{changelist}s")
    page.goto(f"{live_server.url}/admin/extraction/job/{theirs}/change/")
    expect(page.locator(".messagelist")).to_contain_text("doesn’t exist")  # as for a job that never was
    snap(page, "submitter-someone-elses-job")


def test_an_approver_reads_the_files_a_draft_would_delete_and_exports_them(browser, live_server, tmp_path):
    from django.utils import timezone
    from playwright.sync_api import expect

    from audit.models import Manifest
    from audit.retention import enforcement as retention
    from extraction.models import Bundle

    extracted(pdfs.mixed(tmp_path), "t", "claim-1042")
    Bundle.objects.update(created_at=timezone.now() - timedelta(days=10))
    Manifest.objects.update(created_at=timezone.now() - timedelta(days=10))
    approved_policy(is_default=True, input_days=365, output_days=365)
    draft = retention.new_version("claims", "ron", input_days=0, output_days=0)
    user("ana", "Retention approver")
    page = wide(log_in(browser, live_server, "ana"))
    page.goto(f"{live_server.url}/admin/audit/retentionpolicy/{draft.pk}/approve/")
    files = page.locator("#due-files")
    for name in ("mixed.pdf", "claim-1042", "p00001-000.jpg", "p00005-000.jp2"):
        expect(files).to_contain_text(name)
    expect(files.locator("tbody tr")).to_have_count(retention.would_delete(draft)["files"])
    snap(page, "approver-files-to-delete")
    with page.expect_download() as download:
        page.click("#due-files-csv")
    assert download.value.suggested_filename == f"would-delete-claims-v{draft.version}.csv"
    assert "p00001-000.jpg" in open(download.value.path(), encoding="utf-8").read()
