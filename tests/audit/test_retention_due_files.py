"""Approvers see what they approve: the approval page lists every file the version would delete, by name, a
page at a time and as CSV, for an approver with no other permission; the list is what enforcement deletes."""

import csv
import io
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse
from django.utils import timezone

from audit.models import ActivityEvent, Manifest
from audit.retention import approval as retention_approval
from audit.retention import due_files as retention_due_files
from audit.retention import enforcement as retention
from extraction.models import Bundle
from tests.conftest import approved_policy, stored_names

pytestmark = pytest.mark.django_db
WINDOWS = dict(is_default=True, input_days=365, output_days=365, manifest_days=365, legal_hold=False)


@pytest.fixture
def shorter(completed):
    """A draft that would delete the ten-day-old claim's input, outputs and manifest file."""
    Bundle.objects.update(created_at=timezone.now() - timedelta(days=10), case_label="claim-1042")
    Manifest.objects.update(created_at=timezone.now() - timedelta(days=10))
    approved_policy(**WINDOWS)
    return retention.new_version("claims", "ra", input_days=0, output_days=0, manifest_days=0)


@pytest.fixture
def approver(client):
    """A Retention approver and nothing else: no view of bundles, jobs or manifests."""
    user = User.objects.create_user("ana", password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name="Retention approver"))
    assert not user.has_perm("extraction.view_bundle") and not user.has_perm("audit.view_manifest")
    client.force_login(user)
    return client


def approval_page(client, draft, **query):
    return client.get(reverse("admin:audit_retentionpolicy_approve", args=[draft.pk]), query)


def exported(client, draft) -> list[dict]:
    response = client.get(reverse("admin:audit_retentionpolicy_would_delete_csv", args=[draft.pk]))
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_the_list_is_exactly_what_enforcement_deletes(shorter):
    listed = sorted(due.name for due in retention.files_due(shorter))
    assert len(listed) == retention.would_delete(shorter)["files"] > 2
    before = [*stored_names("inputs"), *stored_names("outputs")]
    approver = User.objects.get(username="approver")
    retention_approval.approve(shorter, approver, seen_files=len(listed))
    retention.apply_retention()
    after = [*stored_names("inputs"), *stored_names("outputs")]
    assert sorted(set(before) - set(after)) == listed


def test_a_held_policy_lists_nothing(shorter):
    held = retention.new_version("claims", "ra", input_days=0, output_days=0, manifest_days=0, legal_hold=True)
    assert list(retention.files_due(held)) == [] and retention.would_delete(held)["files"] == 0


def test_the_approval_page_names_each_file_for_a_bare_approver(approver, shorter):
    response = approval_page(approver, shorter)
    page = response.content.decode()
    assert response.status_code == 200
    assert page.count("<td>claim-1042</td>") == retention.would_delete(shorter)["files"]
    assert ">x.pdf</td>" in page and f"manifest-{Manifest.objects.get().sequence}.json" in page and "Outputs" in page
    assert Bundle.objects.get().correlation_id in page  # the hash a hover away
    assert "UTC" in page  # times with their zone


def test_the_export_lists_every_file_by_name(approver, shorter):
    rows = exported(approver, shorter)
    assert len(rows) == retention.would_delete(shorter)["files"]
    assert {r["bundle"] for r in rows} == {"x.pdf"} and {r["case label"] for r in rows} == {"claim-1042"}
    assert sum(int(r["size (bytes)"]) for r in rows) == retention.would_delete(shorter)["bytes"]
    assert all(r["received"].endswith("+00:00") for r in rows)


def test_the_export_is_in_the_activity_record(approver, shorter):
    exported(approver, shorter)
    assert ActivityEvent.objects.filter(action="retention_due_files_exported", actor="ana").count() == 1


def test_a_file_name_is_never_a_formula_in_the_export(approver, shorter):
    Bundle.objects.update(original_filename="=HYPERLINK(1).pdf")
    assert {r["bundle"] for r in exported(approver, shorter)} == {"'=HYPERLINK(1).pdf"}


def test_the_list_comes_a_page_at_a_time(approver, shorter, monkeypatch):
    monkeypatch.setattr(retention_due_files, "PER_PAGE", 2)
    total = retention.would_delete(shorter)["files"]
    last = (total + 1) // 2
    second = approval_page(approver, shorter, page=2).content.decode()
    assert f"files 3–4 of {total}" in second and f"page 2 of {last}" in second
    for wrong, shown in (("abc", 1), ("999", last), ("-1", last)):  # Django's get_page: no error page
        response = approval_page(approver, shorter, page=wrong)
        assert response.status_code == 200 and f"page {shown} of {last}" in response.content.decode()


def test_a_draft_that_deletes_nothing_says_so(approver, completed):
    approved_policy(**WINDOWS)
    longer = retention.new_version("claims", "ra", input_days=3650)
    assert "No file would be deleted." in approval_page(approver, longer).content.decode()


@pytest.mark.parametrize("role", ["Compliance staff", "Reviewer", "Retention admin", "Submitter"])
def test_only_approvers_export_the_list(client, shorter, role):
    user = User.objects.create_user("someone", password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    client.force_login(user)
    response = client.get(reverse("admin:audit_retentionpolicy_would_delete_csv", args=[shorter.pk]))
    assert response.status_code == 403
