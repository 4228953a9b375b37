import pytest
from django.contrib.auth.models import Group, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import TestCase
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from audit.models import Asset, Manifest
from extraction.intake.staging import submit_bundle
from extraction.models import Bundle, Job, Rejection, Submission, SubmissionSwitch
from extraction.pdf.sandbox import stop_idle_children
from extraction.runner import run_job
from tests import pdfs, pdfs_intake
from tests.conftest import everything_stored, run_intake_tasks

pytestmark = pytest.mark.django_db

CHANGELISTS = [
    "admin:extraction_bundle_changelist",
    "admin:extraction_job_changelist",
    "admin:extraction_rejection_changelist",
    "admin:audit_manifest_changelist",
    "admin:audit_asset_changelist",
]


def distinct_pdf(directory, number):
    doc = pdfs.Doc()
    doc.page(pdfs.jpeg(doc, pdfs.pattern_picture(number)), pdfs.jpeg(doc, pdfs.rgb_picture()))
    return doc.save(directory / f"distinct-{number}.pdf")


def complete_jobs(directory, numbers):
    for n in numbers:
        with open(distinct_pdf(directory, n), "rb") as fh:
            run_job(submit_bundle(fh, filename=f"{n}.pdf", submitted_by="t").job_id)
        with open(__file__, "rb") as fh:
            submit_bundle(fh, filename=f"{n}.txt", submitted_by="t")  # and a rejection each


def queries_for(client, url) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


@pytest.mark.parametrize("changelist", CHANGELISTS)
def test_it_renders_changelists_with_a_constant_number_of_queries(admin_client, tmp_path, changelist):
    url = reverse(changelist)
    complete_jobs(tmp_path, range(2))
    few = queries_for(admin_client, url)
    complete_jobs(tmp_path, range(2, 8))
    assert queries_for(admin_client, url) == few


def test_it_counts_each_manifests_assets_on_its_changelist(admin_client, tmp_path):
    complete_jobs(tmp_path, range(3))
    response = admin_client.get(reverse("admin:audit_manifest_changelist") + "?o=4")  # sorted by the count

    assert [m.n_assets for m in response.context["cl"].result_list] == [2, 2, 2]


def test_it_finds_assets_by_their_exact_sha256(admin_client, tmp_path):
    complete_jobs(tmp_path, range(3))  # each PDF: its own picture, and one picture all three share
    by_hash = {}
    for asset in Asset.objects.all():
        by_hash.setdefault(asset.sha256, set()).add(asset)

    found = {
        sha256: set(admin_client.get(reverse("admin:audit_asset_changelist"), {"q": sha256}).context["cl"].result_list)
        for sha256 in by_hash
    }

    assert found == by_hash and sorted(map(len, found.values())) == [1, 1, 1, 3]
    assert admin_client.get(reverse("admin:audit_asset_change", args=[asset.pk])).status_code == 200


def test_it_finds_assets_by_their_bundles_correlation_id_and_nothing_else(admin_client, tmp_path):
    complete_jobs(tmp_path, range(3))
    url = reverse("admin:audit_asset_changelist")

    for manifest in Manifest.objects.all():
        found = admin_client.get(url, {"q": f" {manifest.correlation_id} "}).context["cl"].result_list
        assert set(found) == set(manifest.assets.all()) and len(found) == 2
    assert list(admin_client.get(url, {"q": "0" * 64}).context["cl"].result_list) == []
    assert len(admin_client.get(url, {"q": ""}).context["cl"].result_list) == Asset.objects.count()


def test_it_finds_a_job_by_its_correlation_id_idempotency_key_or_provider_job_id(admin_client, tmp_path):
    complete_jobs(tmp_path, range(3))
    url = reverse("admin:extraction_job_changelist")

    for job in Job.objects.select_related("bundle"):
        for term in (job.bundle.correlation_id, job.idempotency_key, job.provider_job_id):
            assert list(admin_client.get(url, {"q": term}).context["cl"].result_list) == [job]
    assert list(admin_client.get(url, {"q": "local-unknown"}).context["cl"].result_list) == []


def test_it_shows_a_manifest_with_its_assets(admin_client, tmp_path):
    complete_jobs(tmp_path, [1])
    url = reverse("admin:audit_manifest_change", args=[Manifest.objects.get().pk])
    response = admin_client.get(url)
    assert response.status_code == 200 and b"p00001-000.jpg" in response.content


def test_it_shows_a_manifests_body_once_indented(admin_client, tmp_path):
    complete_jobs(tmp_path, [1])
    manifest = Manifest.objects.get()
    page = admin_client.get(reverse("admin:audit_manifest_change", args=[manifest.pk])).content.decode()
    assert 'id="manifest-body"' in page and "{&quot;assets&quot;:[{" not in page  # not also the stored one-line body


def upload(admin_client, path, **fields):
    """POST the upload form as a browser would (the request's transaction commits: its submission is queued)."""
    with open(path, "rb") as fh, TestCase.captureOnCommitCallbacks(execute=True):
        return admin_client.post(reverse("admin:extraction_bundle_add"), {"file": fh, **fields})


def test_an_upload_lands_on_its_submission_page_which_then_links_to_the_new_job(admin_client, tmp_path):
    response = upload(admin_client, pdfs.mixed(tmp_path), case_label="c-1")
    submission = Submission.objects.get()
    page = reverse("admin:extraction_submission_status", args=[submission.pk])
    assert response.status_code == 302 and response["Location"] == page and not Job.objects.exists()
    pending = admin_client.get(page).content.decode()
    assert '<strong id="submission-state" data-live="state">pending</strong>' in pending and "portal/live.js" in pending

    run_intake_tasks()
    job = Job.objects.get()
    outcome = admin_client.get(reverse("admin:extraction_submission_status_json", args=[submission.pk])).json()
    assert (outcome["final"], outcome["text"]["state"]) == (True, "accepted")
    assert reverse("admin:extraction_job_change", args=[job.pk]) in outcome["html"]["link"]
    assert f"Open job {job.pk}" in admin_client.get(page).content.decode()
    assert (Bundle.objects.get().submitted_by, Bundle.objects.get().case_label) == ("admin", "c-1")


def test_an_upload_of_known_bytes_says_it_is_the_same_job(admin_client, tmp_path):
    for _ in range(2):
        response = upload(admin_client, pdfs.mixed(tmp_path))
        run_intake_tasks()
    page = admin_client.get(response["Location"]).content.decode()
    assert '<strong id="submission-state" data-live="state">duplicate</strong>' in page
    assert f"A duplicate: these bytes had been accepted before, as job {Job.objects.get().pk} (no new job)." in page


def test_an_upload_while_submissions_are_stopped_says_its_job_waits(admin_client, tmp_path):
    SubmissionSwitch.set(False, "ops", "provider outage")
    response = upload(admin_client, pdfs.mixed(tmp_path))
    run_intake_tasks()
    page = admin_client.get(response["Location"]).content.decode()
    assert "Submissions to providers are stopped (provider outage): the job waits in the queue" in page


def test_an_empty_upload_is_refused_in_the_products_words_and_recorded(admin_client, tmp_path):
    (tmp_path / "empty.pdf").write_bytes(b"")
    response = upload(admin_client, tmp_path / "empty.pdf")
    assert "Refused (empty): The file is empty." in response.content.decode()
    assert Rejection.objects.get().code == "empty" and not Submission.objects.filter(state="pending").exists()


def test_a_refused_upload_shows_its_code_and_sentence_on_its_page(admin_client, tmp_path):
    (tmp_path / "scan.pdf").write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    response = upload(admin_client, tmp_path / "scan.pdf")
    run_intake_tasks()
    page = admin_client.get(response["Location"]).content.decode()
    assert "Refused (not_pdf)" in page and "Open job" not in page
    assert Rejection.objects.get().code == "not_pdf" and not Bundle.objects.exists()
    change = admin_client.get(reverse("admin:extraction_submission_change", args=[Submission.objects.get().pk]))
    said = change.content.decode()
    assert "No: the file itself was refused" in said and "fault of this machine: send it again" not in said
    assert "104 bytes" in said and ">104<" not in said  # its size as a person reads it, once


def test_another_users_submission_page_is_a_404(admin_client, client, tmp_path):
    response = upload(admin_client, pdfs.jpeg_rgb(tmp_path))
    other = User.objects.create_user("feeder", password="pw", is_staff=True)
    other.groups.add(Group.objects.get(name="Submitter"))
    client.force_login(other)
    assert client.get(response["Location"]).status_code == 404


def test_an_upload_into_a_temp_area_that_cannot_take_it_says_so_and_keeps_nothing(admin_client, tmp_path, settings):
    settings.TEMP_ROOT = tmp_path / "broken"
    settings.TEMP_ROOT.mkdir()
    (settings.TEMP_ROOT / "uploads").write_bytes(b"")  # a file where the uploads directory belongs
    response = upload(admin_client, pdfs.jpeg_rgb(tmp_path))
    assert response.status_code == 507 and "Not stored (storage_unavailable)" in response.content.decode()
    assert not Submission.objects.exists() and not Bundle.objects.exists()


def test_it_never_lets_anyone_change_or_delete_a_manifest(admin_client, tmp_path):
    complete_jobs(tmp_path, [1])
    manifest = Manifest.objects.get()
    change = reverse("admin:audit_manifest_change", args=[manifest.pk])
    assert admin_client.post(change, {"page_count": 1}).status_code == 403
    assert (
        admin_client.post(reverse("admin:audit_manifest_delete", args=[manifest.pk]), {"post": "yes"}).status_code
        == 403
    )
    assert Manifest.objects.get().body == manifest.body


def test_it_never_lets_anyone_edit_a_job_by_hand(admin_client, tmp_path):
    complete_jobs(tmp_path, [1])
    job = Job.objects.get()
    response = admin_client.post(reverse("admin:extraction_job_change", args=[job.pk]), {"status": "failed"})
    assert response.status_code == 403 and Job.objects.get().status == "completed"


def test_it_refuses_an_upload_over_the_limit_without_storing_it(admin_client, settings):
    """Its Content-Length is within the limit's framing allowance: the upload handler cuts the file at the limit.
    (A body declared beyond it is refused before it is read: tests/test_bodies.py.)"""
    settings.PAGETRAIL_MAX_UPLOAD_BYTES = 1024 * 1024
    big = SimpleUploadedFile("big.pdf", b"%PDF-1.7\n" + b"0" * (1024 * 1024 + 4096), content_type="application/pdf")
    response = admin_client.post(reverse("admin:extraction_bundle_add"), {"file": big})
    assert "Refused (too_large)" in response.content.decode()
    rejection = Rejection.objects.get()
    assert rejection.code == "too_large" and 1024 * 1024 < rejection.size < 1024 * 1024 + 4096 + 10
    assert not Bundle.objects.exists()
    assert everything_stored() == []


def test_an_admin_stops_and_reopens_submissions_from_the_admin(admin_client):
    from extraction.models import SubmissionSwitch

    assert admin_client.get(reverse("admin:extraction_submissionswitch_changelist")).status_code == 200
    url = reverse("admin:extraction_submissionswitch_change", args=[1])
    admin_client.post(url, {"is_open": "", "reason": "provider incident"})
    switch = SubmissionSwitch.current()
    assert (switch.is_open, switch.reason, switch.changed_by) == (False, "provider incident", "admin")
    admin_client.post(url, {"is_open": "on", "reason": "resolved"})
    assert SubmissionSwitch.submissions_open()


def test_the_replay_action_wakes_only_unknown_jobs(admin_client, tmp_path):
    complete_jobs(tmp_path, [1, 2])
    Job.objects.filter(pk=Job.objects.order_by("pk").first().pk).update(status="unknown")
    response = admin_client.post(
        reverse("admin:extraction_job_changelist"),
        {"action": "replay_unknown_jobs", "_selected_action": list(Job.objects.values_list("pk", flat=True))},
        follow=True,
    )
    assert "Woke 1 unknown job(s)" in response.content.decode()


def test_an_upload_whose_pdf_child_cannot_start_is_refused_after_one_more_try(admin_client, tmp_path, monkeypatch):
    response = upload(admin_client, pdfs.jpeg_rgb(tmp_path))
    with monkeypatch.context() as patch:
        pdfs_intake.child_cannot_start(patch)
        run_intake_tasks()
    stop_idle_children()

    page = admin_client.get(response["Location"]).content.decode()
    assert "Refused (validator_crashed): The file could not be checked: the PDF validator failed twice" in page
    assert "You may send it again later." in page
    assert Rejection.objects.get().code == "validator_crashed" and not Bundle.objects.exists()


def test_the_upload_page_leads_back_through_its_breadcrumbs(admin_client):
    page = admin_client.get(reverse("admin:extraction_bundle_add")).content.decode()
    changelist = reverse("admin:extraction_bundle_changelist")
    assert '<div class="breadcrumbs">' in page and f'<a href="{changelist}">Bundles</a>' in page
