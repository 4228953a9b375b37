"""Every sensitive route checks permissions server-side, for each role (not only hidden menus);
every page a role can open renders whole for it; a refusal is a page in the admin's style."""

import logging
import re
from collections import deque

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import TestCase
from django.urls import reverse

from audit.models import Asset, Manifest
from audit.retention import enforcement as retention
from extraction.accounts import BundleAccess, ServiceAccount
from extraction.intake.staging import submit_bundle
from extraction.models import Bundle, Job
from extraction.runner import run_job
from tests import pdfs
from tests.conftest import run_intake_tasks

pytestmark = pytest.mark.django_db
ROLES = ["Compliance staff", "Reviewer", "Retention admin", "Retention approver", "Submitter"]
NOBODY = {role: 403 for role in ROLES}


@pytest.fixture
def world(tmp_path):
    with open(pdfs.mixed(tmp_path), "rb") as fh:
        run_job(submit_bundle(fh, filename="x.pdf", submitted_by="t").job_id)
    account = ServiceAccount.objects.create(name="claims-ingest")
    account.issue_token()
    BundleAccess.objects.create(account=account, bundle=Bundle.objects.get(), job=Job.objects.get())
    draft = retention.new_version(
        "claims",
        "retention-admin",
        input_days=30,
        output_days=365,
        manifest_days=None,
        legal_hold=False,
        contract_owner="Claims Ltd",
        decision_note="Contract 12",
    )
    return {
        "asset": Asset.objects.first().pk,
        "manifest": Manifest.objects.get().pk,
        "bundle": Bundle.objects.get().pk,
        "job": Job.objects.get().pk,
        "draft": draft.pk,
    }


def as_role(client, role):
    user = User.objects.create_user(role.lower().replace(" ", "-"), password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    client.force_login(user)
    return client


def only(*roles, status=200):
    return {role: status if role in roles else 403 for role in ROLES}


# route, method, data, {role: expected status}
ROUTES = [
    ("download-asset", "asset", "get", None, only("Compliance staff", "Reviewer")),
    ("asset-thumbnail", "asset", "get", None, only("Compliance staff", "Reviewer")),
    ("download-manifest", "manifest", "get", None, only("Compliance staff", "Reviewer", "Retention admin")),
    ("download-input", "bundle", "get", None, only("Reviewer")),
    ("review-manifest", "manifest", "get", None, only("Compliance staff", "Reviewer")),
    ("review-manifest", "manifest", "post", {"pages": "1", "kind": "other"}, only("Reviewer", status=302)),
    ("admin:audit_verificationrun_start", None, "post", None, only("Compliance staff", status=302)),
    ("admin:audit_retentionpolicy_add", None, "get", None, only("Retention admin")),
    ("admin:extraction_bundle_add", None, "get", None, only("Submitter")),
    ("admin:extraction_rejection_changelist", None, "get", None, only("Compliance staff", "Submitter")),
    (
        "admin:extraction_job_changelist",
        None,
        "get",
        None,
        only("Compliance staff", "Reviewer", "Retention admin", "Submitter"),
    ),
    ("admin:extraction_submissionswitch_changelist", None, "get", None, only("Compliance staff")),
    ("admin:extraction_submissionswitch_change", "switch", "post", {"is_open": "", "reason": "x"}, NOBODY),
    ("admin:extraction_job_change", "job", "post", {"status": "failed"}, NOBODY),
    ("admin:audit_manifest_change", "manifest", "post", {"page_count": 1}, NOBODY),
    ("admin:audit_asset_changelist", None, "get", None, only("Compliance staff", "Reviewer")),
    ("admin:audit_asset_change", "asset", "post", {"size": 1}, NOBODY),
    ("admin:audit_reviewflag_changelist", None, "get", None, only("Compliance staff", "Reviewer")),
    (
        "admin:audit_retentionevent_changelist",
        None,
        "get",
        None,
        only("Compliance staff", "Retention admin", "Retention approver"),
    ),
    (
        "admin:audit_retentionpolicy_changelist",
        None,
        "get",
        None,
        only("Compliance staff", "Retention admin", "Retention approver"),
    ),
    ("admin:audit_retentionpolicy_approve", "draft", "get", None, only("Retention approver")),
    ("admin:audit_retentionpolicy_approve", "draft", "post", {}, only("Retention approver", status=302)),
    ("admin:audit_alert_changelist", None, "get", None, only("Compliance staff")),
    ("admin:extraction_serviceaccount_changelist", None, "get", None, only("Compliance staff")),
    ("admin:extraction_serviceaccount_add", None, "post", {"name": "x"}, NOBODY),
]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name, arg, method, data, expected", ROUTES, ids=[f"{r[0]}-{r[2]}" for r in ROUTES])
def test_each_role_gets_exactly_what_it_may(client, world, role, name, arg, method, data, expected):
    from extraction.models import SubmissionSwitch

    world["switch"] = SubmissionSwitch.current().pk
    url = reverse(name, args=[world[arg]] if arg else [])
    response = getattr(as_role(client, role), method)(url, data or {})
    assert response.status_code == expected[role], (role, name, response.status_code)


def test_the_job_list_offers_replay_only_to_those_allowed(client, world):
    page = as_role(client, "Compliance staff").get(reverse("admin:extraction_job_changelist")).content.decode()
    assert "replay_unknown_jobs" not in page


def test_setup_roles_puts_a_changed_group_back_in_shape(capsys):
    group = Group.objects.get(name="Reviewer")
    group.permissions.clear()
    call_command("setup_roles")
    assert group.permissions.filter(codename="add_reviewflag").exists()
    assert "Reviewer: 17 permissions" in capsys.readouterr().out


def test_it_lets_a_submitter_upload_a_bundle_and_follow_its_job(client, tmp_path):
    upload = SimpleUploadedFile("claim.pdf", pdfs.jpeg_rgb(tmp_path).read_bytes(), content_type="application/pdf")
    submitter = as_role(client, "Submitter")
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = submitter.post(reverse("admin:extraction_bundle_add"), {"file": upload}, follow=True)
    assert response.status_code == 200 and "pending" in response.content.decode()
    run_intake_tasks()
    page = submitter.get(response.redirect_chain[-1][0]).content.decode()
    job = Job.objects.get()
    assert reverse("admin:extraction_job_change", args=[job.pk]) in page
    assert Bundle.objects.get().submitted_by == "submitter"
    assert submitter.get(reverse("admin:extraction_job_change", args=[job.pk])).status_code == 200


def test_it_serves_inputs_to_anyone_given_the_download_permission_explicitly(client, world):
    user = as_role(client, "Compliance staff")
    User.objects.get().user_permissions.add(Permission.objects.get(codename="download_input"))
    assert user.get(reverse("download-input", args=[world["bundle"]])).status_code == 200


def test_it_offers_the_review_page_only_to_roles_that_may_see_its_images(client, world):
    page = as_role(client, "Retention admin").get(reverse("admin:audit_manifest_changelist")).content.decode()
    assert reverse("review-manifest", args=[world["manifest"]]) not in page


def test_a_refusal_is_a_page_in_the_admins_style_logged_without_a_traceback(client, world, caplog):
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = as_role(client, "Retention admin").get(reverse("download-input", args=[world["bundle"]]))
    page = response.content.decode()
    assert response.status_code == 403 and 'id="site-name"' in page and "Pagetrail" in page
    assert "You may not open this page" in page and "Traceback" not in page
    refusals = [r for r in caplog.records if getattr(r, "status_code", None) == 403]
    assert refusals and not any(r.exc_info or r.exc_text for r in refusals)


SKIPPED = re.compile(r"^/static/|logout|password_change|/delete/|/history/|/jsi18n/")
PAGES_MAX = 150  # the world has one bundle: every distinct page fits well within this


def offered(page: str) -> tuple[list[str], list[str]]:
    """The same-site links (without query strings) and images of a page."""
    links = [u for u in re.findall(r'href="(/[^"?#]*)"', page) if not SKIPPED.search(u)]
    images = [u for u in re.findall(r'<img[^>]*src="(/[^"]+)"', page) if not SKIPPED.search(u)]
    return links, images


@pytest.mark.parametrize("role", ROLES)
def test_it_renders_every_page_a_role_can_open_completely(client, world, role):
    """From the admin index, follow every link the role is offered: none is refused, no image is broken."""
    browser, seen, waiting, broken = as_role(client, role), set(), deque(["/admin/"]), []
    while waiting and len(seen) < PAGES_MAX:
        url = waiting.popleft()
        if url in seen:
            continue
        seen.add(url)
        response = browser.get(url)
        if response.status_code >= 400:  # a redirect (the site root to the admin) is not broken
            broken.append((url, response.status_code))
        elif response.status_code == 200 and "text/html" in response["Content-Type"]:
            links, images = offered(response.content.decode())
            broken += [
                (f"{url} <img {src}>", status) for src in images if (status := browser.get(src).status_code) != 200
            ]
            waiting.extend(links)
    assert not broken and len(seen) < PAGES_MAX, broken
