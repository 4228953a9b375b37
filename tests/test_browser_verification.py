"""A failed verification seen where a compliance officer works, in a real browser: one byte of a stored asset
flipped, a real run, then the job page, the Manifests list's column and the findings answered from the action bar.
Headless Chromium driven by Playwright; the fixtures and the Content-Security-Policy watch are
tests/test_browser.py's."""

import pytest

from tests.conftest import read_stored, write_stored
from tests.test_browser import CHROMIUM, browser, log_in, user  # noqa: F401
from tests.test_browser_workflows import clipped, completed_job, snap, wide

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM, reason="no chromium here (make browser installs it)"),
]


def test_a_compliance_officer_sees_a_failed_verification_on_the_job_and_resolves_its_finding(
    browser, live_server, tmp_path
):
    from playwright.sync_api import expect

    from audit.models import Asset
    from audit.verification.verify import execute, start_run

    job_id = completed_job(tmp_path, case_label="claim 1042")
    asset = Asset.objects.order_by("pk").first()
    stored = bytearray(read_stored("outputs", asset.name))
    stored[len(stored) // 2] ^= 0x01
    write_stored("outputs", asset.name, bytes(stored))
    run = execute(start_run("clara").pk)
    user("clara", "Compliance staff")
    page = wide(log_in(browser, live_server, "clara"))

    page.goto(f"{live_server.url}/admin/extraction/job/{job_id}/change/")
    expect(page.locator("#job-reason")).to_contain_text(f"But verification run {run.pk}")
    expect(page.locator("#verification-summary")).to_contain_text(f"Failed: verification run {run.pk}")
    expect(page.locator("#verification-findings")).to_contain_text(asset.name)
    snap(page, "verification-1-job-page")
    assert clipped(page) == []

    page.goto(f"{live_server.url}/admin/audit/manifest/?findings=open")
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    expect(page.locator("#result_list .field-verified")).to_have_text("1 open finding(s)")
    snap(page, "verification-2-manifests-with-open-findings")
    page.click("#result_list .field-verified a")
    page.wait_for_url("**/admin/audit/finding/?*")
    page.check("#action-toggle")
    page.fill("input[name=note]", "Restored the file from the backup of 2 December")
    page.select_option("select[name=action]", "resolve_findings")
    page.click("button[name=index]")
    expect(page.locator(".messagelist")).to_contain_text("1 finding(s) resolved.")
    expect(page.locator("#result_list .field-answer")).to_contain_text("resolved by clara")
    snap(page, "verification-3-finding-resolved")

    page.goto(f"{live_server.url}/admin/audit/manifest/")
    expect(page.locator("#result_list .field-verified")).to_have_text("1 finding(s), all resolved")
