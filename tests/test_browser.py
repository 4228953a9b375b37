"""End to end in headless Chromium (Debian's package) driven by Playwright, against the running portal."""

import os
import shutil

import pytest
from django.contrib.auth.models import Group, User

from tests import pdfs

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not CHROMIUM and os.environ.get("CI") != "true", reason="no chromium here (make test installs it)"
    ),
]


@pytest.fixture
def browser(monkeypatch):
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop here
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                "--disable-sync",
                "--disable-quic",
            ],
        )
        watched = WatchedBrowser(browser)
        yield watched
        browser.close()
    assert watched.violations == []  # a script the Content-Security-Policy blocked would leave a page half-working


class WatchedBrowser:
    """New pages (each with cookies of its own, as Playwright's) whose CSP violations are collected."""

    def __init__(self, browser):
        self.browser, self.violations = browser, []

    def new_page(self):
        page = self.browser.new_page()
        page.on(
            "console",
            lambda message: self.violations.append(message.text) if "Content Security Policy" in message.text else None,
        )
        return page


@pytest.fixture(autouse=True)
def tasks_run_in_the_request(monkeypatch):
    """No worker process here: django-q2 runs each enqueued task at once (its documented sync mode)."""
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", True)


def log_in(browser, live_server, username, password="pw", code=""):
    page = browser.new_page()
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.fill("#id_otp_token", code)
    page.click("input[type=submit]")
    return page


def user(username, role=None, superuser=False):
    account = User.objects.create_user(username, password="pw", is_staff=True, is_superuser=superuser)
    if role:
        account.groups.add(Group.objects.get(name=role))
    return account


@pytest.mark.parametrize(
    "role, sees, does_not_see",
    [
        ("Compliance staff", "Verification runs", "/admin/audit/retentionpolicy/add/"),
        ("Reviewer", "Review flags", "Verification runs"),
        ("Retention admin", "Retention policies", "Review flags"),
    ],
)
def test_each_role_logs_in_and_sees_its_own_menu(browser, live_server, role, sees, does_not_see):
    user("someone", role)
    page = log_in(browser, live_server, "someone")
    assert sees in page.content() and does_not_see not in page.content()
    assert "/admin/extraction/bundle/add/" not in page.content()  # uploads are for Submitters and the API


@pytest.mark.parametrize("who", ["superuser", "Submitter"])
def test_an_uploader_uploads_a_bundle_watches_it_accepted_and_sees_the_job_complete(
    browser, live_server, tmp_path, who, monkeypatch
):
    from django_q.conf import Conf
    from playwright.sync_api import expect

    from extraction.models import Job
    from extraction.runner import run_job
    from tests.conftest import run_intake_tasks

    monkeypatch.setattr(Conf, "SYNC", False)  # queued: the page shows the submission pending, then decided
    user("feeder", **({"superuser": True} if who == "superuser" else {"role": who}))
    page = log_in(browser, live_server, "feeder")
    page.goto(f"{live_server.url}/admin/extraction/bundle/add/")
    page.set_input_files("#id_file", str(pdfs.mixed(tmp_path)))
    page.click("input[name=_upload]")
    page.wait_for_url("**/admin/extraction/submission/*/status/")
    expect(page.locator("#submission-state")).to_have_text("pending")
    run_intake_tasks()  # as the intake worker would, while the page polls
    expect(page.locator("#submission-state")).to_have_text("accepted")  # without a reload: the page's script
    page.click("#submission-link a")
    page.wait_for_url("**/admin/extraction/job/*/change/")
    expect(page.locator("#job-status")).to_have_text("queued")
    run_job(Job.objects.get().pk)  # as the extraction worker would, while the job page is open
    expect(page.locator("#job-status")).to_have_text("completed")  # again without a reload
    expect(page.locator("#job-links")).to_contain_text("bundle mixed.pdf")


def test_a_reviewer_flags_a_missing_page_on_the_review_page(browser, live_server, tmp_path):
    from audit.models import Manifest, ReviewFlag
    from extraction.intake.staging import submit_bundle
    from extraction.runner import run_job

    with open(pdfs.reused_on_three_pages(tmp_path), "rb") as fh:
        run_job(submit_bundle(fh, filename="x.pdf", submitted_by="t").job_id)
    user("rita", "Reviewer")
    page = log_in(browser, live_server, "rita")
    page.goto(f"{live_server.url}/review/{Manifest.objects.get().pk}/")
    assert "3 of 3 pages" in page.inner_text("#coverage")
    page.fill("#id_pages", "2")
    page.select_option("#id_kind", "missing_image")
    page.fill("#id_note", "the stamp is missing")
    page.click("#flag-form input[type=submit]")
    page.wait_for_selector("#flags")
    assert "the stamp is missing" in page.inner_text("#flags")
    assert ReviewFlag.objects.get().raised_by == "rita"


def test_compliance_staff_start_a_verification_run_and_watch_it_finish(browser, live_server, tmp_path):
    from playwright.sync_api import expect

    from extraction.intake.staging import submit_bundle
    from extraction.runner import run_job

    with open(pdfs.mixed(tmp_path), "rb") as fh:
        run_job(submit_bundle(fh, filename="x.pdf", submitted_by="t").job_id)
    user("clara", "Compliance staff")
    page = log_in(browser, live_server, "clara")
    page.goto(f"{live_server.url}/admin/audit/verificationrun/")
    page.click("#start-verification")
    page.wait_for_url("**/admin/audit/verificationrun/*/change/")
    # Wait for what the page's script writes from the progress endpoint, not for the server-rendered text
    # (with a locator: a function to evaluate would be an eval, which the Content-Security-Policy refuses).
    expect(page.locator("#run-progress-text")).to_contain_text("(100%)")
    assert page.inner_text("#run-progress-status") == "passed"
    assert "6 of 6 assets (100%)" in page.inner_text("#run-progress-text")


def test_a_retention_admin_changes_a_policy_as_a_new_version(browser, live_server):
    from audit.models import RetentionPolicy

    user("ron", "Retention admin")
    page = log_in(browser, live_server, "ron")
    for days in ("30", "7"):
        page.goto(f"{live_server.url}/admin/audit/retentionpolicy/add/")
        page.fill("#id_name", "claims")
        page.fill("#id_input_days", days)
        page.fill("#id_contract_owner", "Claims Ltd")
        page.fill("#id_decision_note", "clause 7")
        page.click("input[name=_save]")
        page.wait_for_url("**/admin/audit/retentionpolicy/")
    assert list(RetentionPolicy.objects.order_by("version").values_list("version", "input_days", "status")) == [
        (1, 30, "draft"),
        (2, 7, "draft"),
    ]


def test_one_person_drafts_a_retention_policy_and_another_approves_it(browser, live_server, tmp_path):
    from datetime import timedelta

    from django.utils import timezone

    from audit.models import RetentionPolicy
    from extraction.intake.staging import submit_bundle
    from extraction.models import Bundle
    from extraction.runner import run_job

    with open(pdfs.mixed(tmp_path), "rb") as fh:
        run_job(submit_bundle(fh, filename="x.pdf", submitted_by="t").job_id)
    Bundle.objects.update(created_at=timezone.now() - timedelta(days=10))  # due under a 0-day window, surely
    user("ron", "Retention admin")
    page = log_in(browser, live_server, "ron")
    page.goto(f"{live_server.url}/admin/audit/retentionpolicy/add/")
    page.fill("#id_name", "claims")
    page.check("#id_is_default")
    page.fill("#id_input_days", "0")
    page.fill("#id_contract_owner", "Claims Ltd")
    page.fill("#id_decision_note", "clause 7")
    page.click("input[name=_save]")
    page.wait_for_url("**/admin/audit/retentionpolicy/")
    assert "draft" in page.inner_text("#result_list")
    draft = RetentionPolicy.objects.get()

    user("ana", "Retention approver")
    page = log_in(browser, live_server, "ana")
    page.goto(f"{live_server.url}/admin/audit/retentionpolicy/{draft.pk}/approve/")
    assert "1 file(s) of 1 bundle(s)" in " ".join(page.inner_text("#would-delete").split())
    page.check("#confirm-count")
    page.click("input[name=_approve]")
    page.wait_for_url("**/admin/audit/retentionpolicy/")
    assert "in force" in page.inner_text("#result_list")
    draft.refresh_from_db()
    assert (draft.status, draft.approved_by, draft.created_by) == ("approved", "ana", "ron")


def test_a_retention_approver_enrols_an_authenticator_before_anything_else(browser, live_server, settings):
    from base64 import b32decode

    from django_otp.oath import totp

    from portal.enrolment import issue_code

    settings.PAGETRAIL_REQUIRE_MFA = True  # the production profile
    code = issue_code(user("amy", "Retention approver"), "ada")
    page = log_in(browser, live_server, "amy")
    page.wait_for_url("**/account/two-factor/**")
    assert page.locator("#enrol-secret").count() == 0  # the password alone shows no secret
    page.fill("#id_enrolment_code", code)
    page.click("#enrolment-code-form input[type=submit]")
    secret = b32decode(page.inner_text("#enrol-secret"))
    page.fill("#id_otp_token", f"{totp(secret):06d}")
    page.click("#two-factor-form input[type=submit]")
    assert len(page.locator("#recovery-codes li").all()) == 10
    page.click("#recovery-codes-done")
    page.wait_for_url("**/admin/")
    assert "Retention policies" in page.inner_text("#content")
    assert User.objects.get(username="amy").totpdevice_set.get().confirmed


def test_a_superuser_issues_an_enrolment_code_that_another_enrols_with(browser, live_server, settings):
    from django_otp.oath import totp
    from django_otp.plugins.otp_totp.models import TOTPDevice

    settings.PAGETRAIL_REQUIRE_MFA = True  # the production profile
    device = TOTPDevice.objects.create(user=user("ada", superuser=True), name="phone", confirmed=True)
    sam = user("sam", superuser=True)
    page = log_in(browser, live_server, "ada", code=f"{totp(device.bin_key):06d}")
    page.wait_for_url(f"{live_server.url}/admin/")
    page.goto(f"{live_server.url}/admin/auth/user/")
    page.check(f"input.action-select[value='{sam.pk}']")
    page.select_option("select[name=action]", "issue_enrolment_codes")
    page.click("button[name=index]")
    code = page.inner_text("#enrolment-codes code")
    other = log_in(browser, live_server, "sam")
    other.wait_for_url("**/account/two-factor/**")
    other.fill("#id_enrolment_code", code)
    other.click("#enrolment-code-form input[type=submit]")
    assert other.locator("#enrol-secret").count() == 1


def test_a_user_with_an_authenticator_logs_in_only_with_its_current_code(browser, live_server):
    from django_otp.oath import totp
    from django_otp.plugins.otp_totp.models import TOTPDevice

    device = TOTPDevice.objects.create(user=user("sam", superuser=True), name="phone", confirmed=True)
    refused = log_in(browser, live_server, "sam", code=f"{(totp(device.bin_key) + 1) % 10**6:06d}")
    assert "Invalid token" in refused.inner_text("#content")
    # django-otp then throttles the device for a second (its own behaviour): a person types slower than this test.
    TOTPDevice.objects.filter(pk=device.pk).update(throttling_failure_count=0, throttling_failure_timestamp=None)
    page = log_in(browser, live_server, "sam", code=f"{totp(device.bin_key):06d}")
    page.wait_for_url(f"{live_server.url}/admin/")
    assert "Extraction jobs and their evidence" in page.inner_text("#content")
