"""Every sensitive route checks permissions server-side, for each role (not only hidden menus)."""

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.urls import reverse

from audit.models import Asset, Manifest
from extraction.models import Bundle, Job
from extraction.runner import run_job
from extraction.services import submit_bundle
from tests import pdfs

pytestmark = pytest.mark.django_db
ROLES = ["Compliance staff", "Reviewer", "Retention admin"]


@pytest.fixture
def world(tmp_path):
    with open(pdfs.mixed(tmp_path), "rb") as fh:
        run_job(submit_bundle(fh, filename="x.pdf", submitted_by="t").job_id)
    return {"asset": Asset.objects.first().pk, "manifest": Manifest.objects.get().pk,
            "bundle": Bundle.objects.get().pk, "job": Job.objects.get().pk}


def as_role(client, role):
    user = User.objects.create_user(role.lower().replace(" ", "-"), password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    client.force_login(user)
    return client


# route, method, data, {role: expected status}
ROUTES = [
    ("download-asset", "asset", "get", None, {"Compliance staff": 200, "Reviewer": 200, "Retention admin": 403}),
    ("asset-thumbnail", "asset", "get", None, {"Compliance staff": 200, "Reviewer": 200, "Retention admin": 403}),
    ("download-manifest", "manifest", "get", None, {"Compliance staff": 200, "Reviewer": 200, "Retention admin": 200}),
    ("download-input", "bundle", "get", None, {"Compliance staff": 200, "Reviewer": 200, "Retention admin": 200}),
    ("review-manifest", "manifest", "post", {"pages": "1", "kind": "other"},
     {"Compliance staff": 403, "Reviewer": 302, "Retention admin": 403}),
    ("admin:audit_verificationrun_start", None, "post", None,
     {"Compliance staff": 302, "Reviewer": 403, "Retention admin": 403}),
    ("admin:audit_retentionpolicy_add", None, "get", None,
     {"Compliance staff": 403, "Reviewer": 403, "Retention admin": 200}),
    ("admin:extraction_bundle_add", None, "get", None, {role: 403 for role in ROLES}),
    ("admin:extraction_submissionswitch_changelist", None, "get", None,
     {"Compliance staff": 200, "Reviewer": 403, "Retention admin": 403}),
    ("admin:extraction_submissionswitch_change", "switch", "post", {"is_open": "", "reason": "x"},
     {role: 403 for role in ROLES}),
    ("admin:extraction_job_change", "job", "post", {"status": "failed"}, {role: 403 for role in ROLES}),
    ("admin:audit_manifest_change", "manifest", "post", {"page_count": 1}, {role: 403 for role in ROLES}),
    ("admin:audit_asset_changelist", None, "get", None,
     {"Compliance staff": 200, "Reviewer": 200, "Retention admin": 403}),
    ("admin:audit_asset_change", "asset", "post", {"size": 1}, {role: 403 for role in ROLES}),
    ("admin:audit_reviewflag_changelist", None, "get", None,
     {"Compliance staff": 200, "Reviewer": 200, "Retention admin": 403}),
    ("admin:audit_retentionevent_changelist", None, "get", None,
     {"Compliance staff": 200, "Reviewer": 403, "Retention admin": 200}),
]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name, arg, method, data, expected", ROUTES, ids=[r[0] for r in ROUTES])
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
    assert "Reviewer: 14 permissions" in capsys.readouterr().out
