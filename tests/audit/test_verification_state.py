"""A failed verification shows where people work: one byte of a stored asset flipped for real, a real run, then
the job, manifest and review pages, the Manifests and Jobs lists, and the evidence export each say so; findings are
acknowledged and resolved by a person with the permission, recorded in the ledger, and refused for one without."""

import io
import json
import zipfile

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from audit.models import ActivityEvent, Asset, Finding
from audit.review import cases
from audit.verification import verify
from tests import pdfs
from tests.conftest import complete, read_stored, write_stored

pytestmark = pytest.mark.django_db


def flip_a_byte(asset: Asset) -> None:
    stored = bytearray(read_stored("outputs", asset.name))
    stored[len(stored) // 2] ^= 0x01
    write_stored("outputs", asset.name, bytes(stored))


def run_verification():
    return verify.execute(verify.start_run("compliance").pk)


@pytest.fixture
def tampered(completed):
    """The mixed bundle's manifest, one of its assets changed in the output store, and a finished run."""
    flip_a_byte(completed.assets.order_by("pk").first())
    run = run_verification()
    assert run.status == "failed" and Finding.objects.filter(manifest=completed).count() >= 1
    return completed, run


def as_role(client, role: str, name: str):
    user = User.objects.create_user(name, password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    client.force_login(user)
    return client


def text_of(response) -> str:
    assert response.status_code == 200
    return response.content.decode()


def test_the_job_page_says_its_evidence_failed_verification(admin_client, tampered):
    manifest, run = tampered
    page = text_of(admin_client.get(reverse("admin:extraction_job_change", args=[manifest.job_id])))
    assert "its manifest is written and signed. But verification run" in page
    assert f"Failed: verification run {run.pk}" in page
    assert "Hash Mismatch" in page and reverse("admin:audit_verificationrun_change", args=[run.pk]) in page


def test_the_job_pages_polled_state_carries_the_verification(admin_client, tampered):
    manifest, run = tampered
    state = admin_client.get(reverse("admin:extraction_job_state", args=[manifest.job_id])).json()
    assert "left 1 finding(s) about its evidence open" in state["text"]["reason"]
    assert f"verification run {run.pk}" in state["html"]["verification"]


def test_the_manifest_page_lists_the_findings(admin_client, tampered):
    manifest, run = tampered
    page = text_of(admin_client.get(reverse("admin:audit_manifest_change", args=[manifest.pk])))
    assert 'id="verification-findings"' in page and "Hash Mismatch" in page
    assert manifest.assets.order_by("pk").first().name in page


def test_the_review_page_shows_the_failed_verification(admin_client, tampered):
    manifest, run = tampered
    page = text_of(admin_client.get(reverse("review-manifest", args=[manifest.pk])))
    assert f"Failed: verification run {run.pk}" in page and "still open" in page


def test_a_reviewer_sees_the_failure_without_links_they_could_not_open(client, tampered):
    manifest, run = tampered
    page = text_of(as_role(client, "Reviewer", "rita").get(reverse("review-manifest", args=[manifest.pk])))
    assert f"Failed: verification run {run.pk}" in page
    assert reverse("admin:audit_verificationrun_change", args=[run.pk]) not in page


def test_the_manifests_list_has_a_verified_column_and_an_open_findings_filter(admin_client, tampered, tmp_path):
    manifest, _ = tampered
    clean = complete(pdfs.reused_on_three_pages(tmp_path), filename="three.pdf")  # made after the run
    changelist = reverse("admin:audit_manifest_changelist")
    page = text_of(admin_client.get(changelist))
    assert "1 open finding(s)" in page and "not verified yet" in page
    found = admin_client.get(changelist, {"findings": "open"}).context["cl"].result_list
    assert [m.pk for m in found] == [manifest.pk]
    cleared = admin_client.get(changelist, {"findings": "none"}).context["cl"].result_list
    assert [m.pk for m in cleared] == [clean.pk]


def test_the_jobs_list_has_the_same_column_and_filter(admin_client, tampered, tmp_path):
    manifest, _ = tampered
    complete(pdfs.reused_on_three_pages(tmp_path), filename="three.pdf")
    changelist = reverse("admin:extraction_job_changelist")
    assert "1 open finding(s)" in text_of(admin_client.get(changelist))
    found = admin_client.get(changelist, {"findings": "open"}).context["cl"].result_list
    assert [j.pk for j in found] == [manifest.job_id]


def test_a_clean_run_reads_verified_clean(admin_client, completed):
    run = run_verification()
    assert run.status == "passed"
    page = text_of(admin_client.get(reverse("admin:audit_manifest_changelist")))
    assert "verified clean" in page
    page = text_of(admin_client.get(reverse("admin:audit_manifest_change", args=[completed.pk])))
    assert f"Verified clean by verification run {run.pk}" in page


def test_a_later_clean_run_closes_what_an_earlier_one_found(admin_client, tampered):
    manifest, _ = tampered
    asset = manifest.assets.order_by("pk").first()
    flip_a_byte(asset)  # flipped back: the stored file is right again
    assert run_verification().status == "passed"
    found = admin_client.get(reverse("admin:audit_manifest_changelist"), {"findings": "open"}).context["cl"]
    assert list(found.result_list) == []


def count_queries(client, url) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_the_lists_cost_the_same_queries_for_more_rows(admin_client, tampered, tmp_path):
    lists = [
        reverse(f"admin:{name}_changelist")
        for name in ("audit_manifest", "extraction_job", "extraction_bundle", "audit_case", "audit_finding")
    ]
    cases.split(tampered[0], [("claim A", 1, 1)], "rita")
    before = [count_queries(admin_client, url) for url in lists]
    more = complete(pdfs.reused_on_three_pages(tmp_path), filename="three.pdf")
    cases.split(more, [("claim B", 1, 1), ("claim C", 2, 3)], "rita")
    flip_a_byte(more.assets.first())
    run_verification()
    assert [count_queries(admin_client, url) for url in lists] == before


def test_a_bundle_page_and_the_bundles_list_show_its_newest_manifests_verification(admin_client, tampered, tmp_path):
    manifest, run = tampered
    complete(pdfs.reused_on_three_pages(tmp_path), filename="three.pdf")  # another bundle, never verified
    page = text_of(admin_client.get(reverse("admin:extraction_bundle_change", args=[manifest.job.bundle_id])))
    assert f"Failed: verification run {run.pk}" in page and "Hash Mismatch" in page
    changelist = reverse("admin:extraction_bundle_changelist")
    assert "1 open finding(s)" in text_of(admin_client.get(changelist))
    found = admin_client.get(changelist, {"findings": "open"}).context["cl"].result_list
    assert [b.pk for b in found] == [manifest.job.bundle_id]


def test_a_case_page_and_the_cases_list_show_their_manifests_verification(admin_client, tampered):
    manifest, run = tampered
    case_map = cases.split(manifest, [("claim A", 1, manifest.page_count)], "rita")
    case = case_map.cases.get()
    page = text_of(admin_client.get(reverse("admin:audit_case_change", args=[case.pk])))
    assert f"Failed: verification run {run.pk}" in page and "Hash Mismatch" in page
    changelist = reverse("admin:audit_case_changelist")
    assert "1 open finding(s)" in text_of(admin_client.get(changelist))
    assert [c.pk for c in admin_client.get(changelist, {"findings": "open"}).context["cl"].result_list] == [case.pk]
    assert list(admin_client.get(changelist, {"findings": "none"}).context["cl"].result_list) == []


# --- the export ----------------------------------------------------------------------------------------


def export(client, selected, **extra):
    data = {"action": "export_evidence_action", "_selected_action": selected, **extra}
    return client.post(reverse("admin:audit_manifest_changelist"), data)


def test_an_export_with_open_findings_asks_first(admin_client, tampered):
    manifest, run = tampered
    response = export(admin_client, [manifest.pk])
    page = text_of(response)
    assert "left 1 finding(s) open" in page and "hash_mismatch" in page
    assert response["Content-Type"].startswith("text/html")


def test_the_confirmed_package_says_so_in_its_readme_and_index(admin_client, tampered):
    manifest, run = tampered
    response = export(admin_client, [manifest.pk], export_with_findings="yes")
    assert response["Content-Type"] == "application/zip"
    package = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    readme = package.read("README.txt").decode()
    assert "WARNING: 1 open verification finding(s) about this scope" in readme
    assert f"manifest {manifest.sequence}: hash_mismatch" in readme
    listed = json.loads(package.read("index.json"))["open_findings"]
    assert [(f["manifest"], f["run"], f["kind"], f["answer"]) for f in listed] == [
        (manifest.sequence, run.pk, "hash_mismatch", "open")
    ]


def test_a_cases_export_asks_first_too(admin_client, tampered):
    manifest, _ = tampered
    case = cases.split(manifest, [("claim A", 1, 1)], "rita").cases.get()
    data = {"action": "export_case_evidence_action", "_selected_action": [case.pk]}
    page = text_of(admin_client.post(reverse("admin:audit_case_changelist"), data))
    assert "left 1 finding(s) open" in page
    confirmed = admin_client.post(reverse("admin:audit_case_changelist"), {**data, "export_with_findings": "yes"})
    package = zipfile.ZipFile(io.BytesIO(b"".join(confirmed.streaming_content)))
    assert "WARNING: 1 open verification finding(s)" in package.read("README.txt").decode()


def test_the_export_command_warns_of_open_findings(tampered, tmp_path, capsys):
    manifest, _ = tampered
    call_command("export_evidence", "--out", str(tmp_path / "e.zip"), "--manifest", str(manifest.sequence))
    out, err = capsys.readouterr()
    assert json.loads(out)["open_findings"] == 1
    assert "Warning: 1 open verification finding(s) about this scope" in err


def test_an_export_without_findings_downloads_at_once_and_warns_of_nothing(admin_client, completed):
    run_verification()
    response = export(admin_client, [completed.pk])
    package = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert "WARNING" not in package.read("README.txt").decode()
    assert json.loads(package.read("index.json"))["open_findings"] == []


# --- answering findings --------------------------------------------------------------------------------


def answer(client, action: str, finding: Finding, note: str):
    data = {"action": action, "_selected_action": [finding.pk], "note": note}
    return client.post(reverse("admin:audit_finding_changelist"), data, follow=True)


def test_compliance_staff_acknowledge_then_resolve_a_finding_with_notes_recorded(client, tampered):
    manifest, _ = tampered
    finding = Finding.objects.get(manifest=manifest)
    officer = as_role(client, "Compliance staff", "carol")
    page = text_of(answer(officer, "acknowledge_findings", finding, "Restoring from backup"))
    assert "1 finding(s) acknowledged." in page
    assert "acknowledged by carol: Restoring from backup" in text_of(
        officer.get(reverse("admin:audit_manifest_change", args=[manifest.pk]))
    )
    assert "1 open finding(s)" in text_of(officer.get(reverse("admin:audit_manifest_changelist")))  # still open
    text_of(answer(officer, "resolve_findings", finding, "Restored the file; checksum matches"))
    assert "1 finding(s), all resolved" in text_of(officer.get(reverse("admin:audit_manifest_changelist")))
    finding_page = text_of(officer.get(reverse("admin:audit_finding_change", args=[finding.pk])))
    assert "finding_resolved" in finding_page and "Restored the file; checksum matches" in finding_page
    recorded = ActivityEvent.objects.filter(object_type="finding", object_id=str(finding.pk)).order_by("pk")
    assert [(e.actor, e.action, e.after["note"]) for e in recorded] == [
        ("carol", "finding_acknowledged", "Restoring from backup"),
        ("carol", "finding_resolved", "Restored the file; checksum matches"),
    ]


def test_an_answer_without_a_note_is_refused_with_its_code(client, tampered):
    manifest, _ = tampered
    finding = Finding.objects.get(manifest=manifest)
    page = text_of(answer(as_role(client, "Compliance staff", "carol"), "resolve_findings", finding, "  "))
    assert "Refused (note_required)" in page
    assert not ActivityEvent.objects.filter(object_type="finding").exists()


def test_a_resolved_finding_is_not_acknowledged_again(client, tampered):
    manifest, _ = tampered
    finding = Finding.objects.get(manifest=manifest)
    officer = as_role(client, "Compliance staff", "carol")
    answer(officer, "resolve_findings", finding, "Restored")
    page = text_of(answer(officer, "acknowledge_findings", finding, "late"))
    assert "0 finding(s) acknowledged; 1 were already acknowledged or past it." in page
    assert finding.response.status == "resolved"


def test_a_person_without_the_permission_cannot_answer(client, tampered):
    manifest, _ = tampered
    finding = Finding.objects.get(manifest=manifest)
    viewer = User.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(
        *Group.objects.get(name="Compliance staff").permissions.exclude(codename="respond_to_finding")
    )
    client.force_login(viewer)
    page = text_of(client.get(reverse("admin:audit_finding_changelist")))
    assert "resolve_findings" not in page  # not offered
    answer(client, "resolve_findings", finding, "Looks fine to me")
    assert not hasattr(Finding.objects.get(pk=finding.pk), "response")
    assert not ActivityEvent.objects.filter(object_type="finding").exists()
