"""A compliance officer finds a file by the name people use for it, from the lists, in a real browser: the search
box says what it searches, a date range of one's own keeps the search, and the stored name (hashes) is one
hover away. Fixtures and the Content-Security-Policy watch are tests/test_browser.py's."""

import pytest

from tests.test_browser import CHROMIUM, browser, log_in, user  # noqa: F401
from tests.test_browser_workflows import clipped, completed_job, snap, wide

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM, reason="no chromium here (make browser installs it)"),
]


def test_a_compliance_officer_finds_a_file_by_name_and_narrows_it_to_a_date_range(browser, live_server, tmp_path):
    from django.utils import timezone
    from playwright.sync_api import expect

    from tests import pdfs

    completed_job(tmp_path, filename="tracemonkey.pdf")
    completed_job(tmp_path, make=pdfs.reused_on_three_pages, filename="scan-0007.pdf", case_label="claim-1042")
    user("cora", "Compliance staff")
    page = wide(log_in(browser, live_server, "cora"))

    page.goto(f"{live_server.url}/admin/audit/manifest/")
    expect(page.locator("#searchbar_helptext")).to_contain_text("file name, case label or submitter")
    page.fill("#searchbar", "tracemonk")
    page.press("#searchbar", "Enter")
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("tracemonkey.pdf")
    snap(page, "search-manifests-by-name")

    today = timezone.localdate().isoformat()
    form = page.locator("form.date-range")
    form.locator("input[name=created_at__from]").fill(today)
    form.locator("input[name=created_at__to]").fill(today)
    form.locator("input[type=submit]").click()
    page.wait_for_url("**created_at__from=*")
    assert "q=tracemonk" in page.url  # the range kept the search
    expect(rows).to_have_count(1)
    expect(page.locator("#searchbar")).to_have_value("tracemonk")

    page.goto(f"{live_server.url}/admin/audit/asset/?case_label=claim-1042")
    expect(page.locator("#result_list tbody tr").first).to_contain_text("scan-0007.pdf, page 1 (index 0)")
    stored = page.locator("#result_list tbody tr code.short-id").first
    assert "/" in (stored.get_attribute("title") or "")  # the stored name, made of hashes, on hover
    snap(page, "assets-by-case-label")
    assert clipped(page) == []
