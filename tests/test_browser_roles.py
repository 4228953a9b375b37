"""Each role's main task, walked end to end in the portal as that person would, asserting what they see.

State changes made by a worker while a page is open must show on it with no reload (the page's live.js):
the test does the worker's part in this process (the queue is not consumed here) and waits with expect().
Headless Chromium (Debian's package) driven by Playwright; the fixtures and the Content-Security-Policy
watch are tests/test_browser.py's."""

import pytest

from tests import pdfs
from tests.conftest import run_intake_tasks, write_stored
from tests.test_browser import CHROMIUM, browser, log_in, tasks_run_in_the_request, user  # noqa: F401
from tests.test_browser_workflows import clipped, completed_job, in_a_thread, snap, wide

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM, reason="no chromium here (make browser installs it)"),
]


@pytest.fixture
def queued(monkeypatch):
    """Tasks wait in their queue (nothing consumes it here) until the test does the worker's part."""
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", False)


def upload(page, live_server, path, case_label=""):
    page.goto(f"{live_server.url}/admin/extraction/bundle/add/")
    page.set_input_files("#id_file", str(path))
    page.fill("#id_case_label", case_label)
    page.click("input[name=_upload]")
    page.wait_for_url("**/admin/extraction/submission/*/status/")


def twelve_pages(directory):
    """12 pages, each with a small JPEG scan except pages 4 and 9, which have none."""
    doc = pdfs.Doc()
    for n in range(1, 13):
        doc.page(*([] if n in (4, 9) else [pdfs.jpeg(doc, pdfs.pattern_picture(n))]))
    return doc.save(directory / "twelve.pdf")


def test_an_uploader_follows_an_upload_to_its_completed_job_and_its_evidence(browser, live_server, tmp_path, queued):
    from playwright.sync_api import expect

    from audit.models import Manifest
    from extraction.models import Job
    from extraction.runner import run_job

    user("boss", superuser=True)
    page = wide(log_in(browser, live_server, "boss"))
    upload(page, live_server, pdfs.mixed(tmp_path), case_label="claim 1042")
    expect(page.locator("#submission-state")).to_have_text("pending")
    run_intake_tasks()  # the intake worker's part, while the page polls
    expect(page.locator("#submission-state")).to_have_text("accepted")
    expect(page.locator("#submission")).to_have_attribute("data-live-state", "final")
    job = Job.objects.get()
    expect(page.locator("#submission-text")).to_have_text(f"Accepted: job {job.pk}.")
    page.click("#submission-link a")
    page.wait_for_url(f"**/admin/extraction/job/{job.pk}/change/")
    expect(page.locator("#job-status")).to_have_text("queued")
    in_a_thread(run_job, job.pk).join()  # the extraction worker's part
    expect(page.locator("#job-status")).to_have_text("completed")
    expect(page.locator("#job-story")).to_have_attribute("data-live-state", "final")  # live.js stopped polling
    links, manifest = page.locator("#job-links"), f"manifest {Manifest.objects.get().sequence}"  # its leaf index
    for label in ("bundle mixed.pdf", "download the input PDF", manifest, "review page", "6 asset(s)"):
        expect(links).to_contain_text(label)

    with page.expect_download() as download:
        page.click("#job-links >> text=download the input PDF")
    assert download.value.suggested_filename.endswith(".pdf")
    for label, lands_on, shows in (
        (manifest, "**/admin/audit/manifest/*/change/", "page 1 (index 0)"),  # the stored name on hover
        ("review page", "**/review/*/", "5 of 5 pages"),
        ("6 asset(s)", "**/admin/audit/asset/?manifest__id__exact=*", "6 assets"),
    ):
        page.click(f"#job-links >> text={label}")
        page.wait_for_url(lands_on)
        expect(page.locator("#content")).to_contain_text(shows)
        assert clipped(page) == [], label  # long hashes and names wrap: nothing beyond 1280 px
        page.go_back()

    upload(page, live_server, pdfs.mixed(tmp_path))  # the same bytes again
    run_intake_tasks()
    expect(page.locator("#submission-state")).to_have_text("duplicate")
    expect(page.locator("#submission-text")).to_contain_text(f"accepted before, as job {job.pk} (no new job)")
    expect(page.locator("#submission-link a")).to_have_text(f"Open job {job.pk}")
    assert Job.objects.count() == 1


def test_a_reviewer_finds_the_pages_without_an_image_flags_one_and_sees_it_marked(browser, live_server, tmp_path):
    from playwright.sync_api import expect

    from audit.models import ReviewFlag

    completed_job(tmp_path, make=twelve_pages, filename="twelve.pdf")
    user("rita", "Reviewer")
    page = wide(log_in(browser, live_server, "rita"))
    page.goto(f"{live_server.url}/admin/audit/manifest/")
    page.click("#result_list >> text=review pages")
    page.wait_for_url("**/review/*/")
    expect(page.locator("#coverage")).to_contain_text("10 of 12 pages have an extracted image")
    expect(page.locator("#missing-pages")).to_have_text("No image on pages 4, 9.")
    assert page.locator("#page-index a.missing").all_inner_texts() == ["4", "9"]
    assert page.locator("#page-index a.covered").count() == 10
    assert page.locator("#page-index a.flagged").count() == 0

    page.fill("#id_pages", "9")
    page.select_option("#id_kind", "missing_image")
    page.fill("#id_note", "the signature page has no scan")
    page.click("#flag-form input[type=submit]")
    page.wait_for_url("**/review/*/#page-9")  # back at the page it flagged
    expect(page.locator(".messagelist")).to_contain_text("Flag raised on page(s) 9.")
    expect(page.locator("#page-9")).to_be_in_viewport()
    expect(page.locator("#page-9 .page-flags")).to_contain_text("the signature page has no scan")
    assert page.locator("#page-index a.flagged").all_inner_texts() == ["9"]
    expect(page.locator("#flagged-pages")).to_have_text("Flagged: pages 9.")
    assert ReviewFlag.objects.get().raised_by == "rita"


def test_a_compliance_officer_watches_a_run_end_and_exports_the_evidence(browser, live_server, tmp_path, queued):
    from playwright.sync_api import expect

    from audit.models import Asset, Manifest, VerificationRun
    from audit.verification.verify import execute

    completed_job(tmp_path, case_label="claim 1042")
    for asset in Asset.objects.all()[:2]:
        write_stored("outputs", asset.name, b"tampered")
    user("clara", "Compliance staff")
    page = wide(log_in(browser, live_server, "clara"))
    page.goto(f"{live_server.url}/admin/audit/verificationrun/")
    page.click("#start-verification")
    page.wait_for_url("**/admin/audit/verificationrun/*/change/")
    expect(page.locator("#run-progress-status")).to_have_text("queued")
    in_a_thread(execute, VerificationRun.objects.get().pk).join()  # the worker's part
    expect(page.locator("#run-progress-status")).to_have_text("failed")
    for says_failed in ("#content h2 >> nth=0", ".field-live_status .readonly", ".breadcrumbs [data-live=title]"):
        expect(page.locator(says_failed)).to_contain_text("failed")
    expect(page.locator("#run-progress-findings")).to_have_text("2")
    expect(page.locator(".field-findings_link .readonly")).to_have_text("2 finding(s)")
    assert "queued" not in page.inner_text("#container").lower()

    page.click(".field-findings_link a")
    page.wait_for_url("**/admin/audit/finding/?run__id__exact=*")
    expect(page.locator("#result_list tbody tr")).to_have_count(2)
    expect(page.locator("#result_list")).to_contain_text("The asset file hashes to")
    assert clipped(page) == []  # their hashes wrap in their cells
    assert words_broken(page, "#result_list td.field-kind") == []  # "Hash Mismatch" wraps between its words
    with page.expect_download() as download:  # the filtered findings, taken away as CSV
        page.click("#export-csv")
    exported = download.value.path().read_text(encoding="utf-8-sig").splitlines()
    assert len(exported) == 3 and exported[0].startswith("id,run,kind,")
    assert download.value.suggested_filename.startswith("pagetrail-finding-")
    page.go_back()

    page.click("#export-evidence")
    page.wait_for_url("**/admin/audit/manifest/")
    page.check("#action-toggle")
    page.select_option("select[name=action]", "export_evidence_action")
    with page.expect_download() as download:
        page.click("button[name=index]")
    sequence = Manifest.objects.get().sequence  # named by its case label and the manifests' sequence range
    assert download.value.suggested_filename == f"pagetrail-evidence-claim-1042-{sequence:06d}-{sequence:06d}.zip"


def words_broken(page, cells: str) -> list[str]:
    """The cells whose text breaks inside a word: a word wider than the cell's content box."""
    return page.evaluate(
        """(cells) => [...document.querySelectorAll(cells)].filter((cell) => {
            const style = getComputedStyle(cell);
            const room = cell.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
            const probe = document.createElement("span");
            probe.style.cssText = "white-space: nowrap; position: absolute; visibility: hidden";
            cell.appendChild(probe);
            const broken = cell.innerText.split(/\\s+/).some((word) => {
                probe.textContent = word;
                return probe.getBoundingClientRect().width > room + 0.5;
            });
            probe.remove();
            return broken;
        }).map((cell) => cell.innerText)""",
        cells,
    )


def draft_policy(page, live_server, input_days: str):
    page.fill("#id_name", "claims")
    page.check("#id_is_default")
    page.fill("#id_input_days", input_days)
    page.fill("#id_contract_owner", "Claims Ltd")
    page.fill("#id_decision_note", "clause 7")
    page.click("input[name=_save]")
    page.wait_for_url("**/admin/audit/retentionpolicy/")


def approve_the_draft(page, live_server):
    """As the approver: from the list to the draft, its comparison and impact, then approve."""
    from playwright.sync_api import expect

    page.goto(f"{live_server.url}/admin/audit/retentionpolicy/")
    page.click("#result_list tr:has-text('draft') th a")
    page.click("#approve-link")
    page.wait_for_url("**/admin/audit/retentionpolicy/*/approve/")
    if page.locator("#confirm-count").count():  # asked for when the draft could delete more or sooner
        page.check("#confirm-count")
    page.click("input[name=_approve]")
    page.wait_for_url("**/admin/audit/retentionpolicy/")
    expect(page.locator(".messagelist")).to_contain_text("it is in force from now")


def standings(page) -> list[str]:
    return page.locator("#result_list td.field-standing").all_inner_texts()


def test_retention_changes_as_versions_each_approved_by_a_second_person(browser, live_server):
    from django.contrib.auth.models import Group
    from playwright.sync_api import expect

    user("ron", "Retention admin").groups.add(Group.objects.get(name="Retention approver"))  # both roles
    user("ana", "Retention approver")
    drafter, approver = log_in(browser, live_server, "ron"), log_in(browser, live_server, "ana")
    drafter.goto(f"{live_server.url}/admin/audit/retentionpolicy/add/")
    draft_policy(drafter, live_server, "30")
    expect(drafter.locator(".messagelist")).to_contain_text("is a draft")
    drafter.click("#result_list tr:has-text('draft') th a")
    expect(drafter.locator("#refusal")).to_have_count(0)
    drafter.click("#approve-link")  # ron may approve drafts, but not his own
    expect(drafter.locator("#refusal")).to_be_visible()
    expect(drafter.locator("#approve-form")).to_have_count(0)

    approve_the_draft(approver, live_server)
    assert standings(approver) == ["in force"]

    drafter.goto(f"{live_server.url}/admin/audit/retentionpolicy/")
    drafter.click("#result_list tr:has-text('in force') th a")
    drafter.click("#new-version")
    expect(drafter.locator("#id_input_days")).to_have_value("30")  # filled in from the version in force
    draft_policy(drafter, live_server, "7")
    assert sorted(standings(drafter)) == ["draft", "in force"]

    approve_the_draft(approver, live_server)
    rows = approver.locator("#result_list tbody tr")
    expect(rows.filter(has_text="superseded")).to_have_count(1)
    expect(rows.filter(has_text="in force").locator("td.field-input_days")).to_have_text("7")
    expect(rows.filter(has_text="superseded").locator("td.field-input_days")).to_have_text("30")


def test_a_legal_hold_is_placed_with_its_reason_and_confirmed_by_a_second_person(browser, live_server):
    from django.contrib.auth.models import Group
    from playwright.sync_api import expect

    from tests.conftest import approved_policy

    approved_policy(is_default=True, input_days=30, contract_owner="Claims Ltd", decision_note="clause 7")
    user("ron", "Retention admin").groups.add(Group.objects.get(name="Retention approver"))  # both roles
    user("ana", "Retention approver")
    placer, confirmer = log_in(browser, live_server, "ron"), log_in(browser, live_server, "ana")
    placer.goto(f"{live_server.url}/admin/audit/retentionpolicy/")
    placer.check("#result_list tbody input[name=_selected_action]")
    placer.select_option("select[name=action]", "place_legal_hold")
    placer.click("button[name=index]")
    placer.fill("#id_reason", "Litigation 2026-17, counsel's letter of 2 December")
    placer.click("input[name=_hold]")
    expect(placer.locator(".messagelist")).to_contain_text("deletions under claims stop now")
    expect(placer.locator("td.field-people").first).to_have_text(  # the newest version first
        "hold placed by ron; awaiting confirmation by a second person"
    )
    placer.click("#result_list tr:has-text('in force') th a")
    placer.click("#confirm-hold-link")  # ron may confirm holds, but not his own
    expect(placer.locator("#refusal")).to_contain_text("another person with the approve permission must confirm it")
    expect(placer.locator("#confirm-hold-form")).to_have_count(0)

    confirmer.goto(placer.url)
    expect(confirmer.locator("#hold-reason")).to_have_text("Litigation 2026-17, counsel's letter of 2 December")
    confirmer.click("input[name=_confirm]")
    confirmer.wait_for_url("**/admin/audit/retentionpolicy/")
    expect(confirmer.locator("td.field-people").first).to_have_text("hold placed by ron, confirmed by ana")
    expect(confirmer.locator("#result_list")).not_to_contain_text("approved by ron")


def test_an_operator_reads_the_dashboard_and_follows_a_bar_to_its_jobs(browser, live_server, tmp_path):
    from playwright.sync_api import expect

    from extraction.models import Job

    job = Job.objects.get(pk=completed_job(tmp_path))
    for n, status in enumerate(("failed", "unknown", "unknown")):
        Job.objects.create(
            bundle=job.bundle,
            idempotency_key=f"k{n}",
            provider="local",
            extractor="x",
            extractor_version="1",
            status=status,
            deadline=job.deadline,
        )
    user("olga", superuser=True)
    page = wide(log_in(browser, live_server, "olga"))
    page.goto(f"{live_server.url}/admin/dashboard/")
    expect(page.locator("#states-chart rect")).to_have_count(3)
    snap(page, "dashboard-walk")
    assert clipped(page) == []
    page.click("#unknown-jobs")
    page.wait_for_url("**/admin/extraction/job/?status__exact=unknown")
    expect(page.locator("#result_list tbody tr")).to_have_count(2)
    page.go_back()
    page.click("#states-chart a[aria-label^='local failed'] rect")  # the bar itself
    page.wait_for_url("**/admin/extraction/job/?*status__exact=failed*")
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
