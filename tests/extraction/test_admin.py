import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from audit.models import Asset, Manifest
from extraction.models import Bundle, Job, Rejection
from extraction.runner import run_job
from extraction.services import submit_bundle
from extraction.pdf.sandbox import stop_idle_children
from tests import pdfs, pdfs_intake
from tests.conftest import everything_stored

pytestmark = pytest.mark.django_db

CHANGELISTS = ["admin:extraction_bundle_changelist", "admin:extraction_job_changelist",
               "admin:extraction_rejection_changelist", "admin:audit_manifest_changelist",
               "admin:audit_asset_changelist"]


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

    found = {sha256: set(admin_client.get(reverse("admin:audit_asset_changelist"), {"q": sha256})
                         .context["cl"].result_list) for sha256 in by_hash}

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


def test_it_accepts_an_upload_and_shows_the_new_job(admin_client, tmp_path):
    with open(pdfs.mixed(tmp_path), "rb") as fh:
        response = admin_client.post(reverse("admin:extraction_bundle_add"), {"file": fh, "case_label": "c-1"})
    job = Job.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:extraction_job_change", args=[job.pk])
    assert Bundle.objects.get().submitted_by == "admin"


def test_it_refuses_an_upload_with_its_code_and_sentence(admin_client, tmp_path):
    (tmp_path / "scan.pdf").write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    with open(tmp_path / "scan.pdf", "rb") as fh:
        response = admin_client.post(reverse("admin:extraction_bundle_add"), {"file": fh})
    assert response.status_code == 200
    assert "Refused (not_pdf)" in response.content.decode()
    assert Rejection.objects.get().code == "not_pdf" and not Bundle.objects.exists()


def test_it_never_lets_anyone_change_or_delete_a_manifest(admin_client, tmp_path):
    complete_jobs(tmp_path, [1])
    manifest = Manifest.objects.get()
    change = reverse("admin:audit_manifest_change", args=[manifest.pk])
    assert admin_client.post(change, {"page_count": 1}).status_code == 403
    assert admin_client.post(reverse("admin:audit_manifest_delete", args=[manifest.pk]),
                             {"post": "yes"}).status_code == 403
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
    response = admin_client.post(reverse("admin:extraction_job_changelist"), {
        "action": "replay_unknown_jobs", "_selected_action": list(Job.objects.values_list("pk", flat=True))},
        follow=True)
    assert "Woke 1 unknown job(s)" in response.content.decode()


def test_it_says_an_upload_could_not_be_checked_when_the_pdf_child_cannot_start(admin_client, tmp_path, monkeypatch):
    with monkeypatch.context() as patch, open(pdfs.jpeg_rgb(tmp_path), "rb") as fh:
        pdfs_intake.child_cannot_start(patch)
        response = admin_client.post(reverse("admin:extraction_bundle_add"), {"file": fh})
    stop_idle_children()

    assert response.status_code == 200
    assert "Not checked (child_unavailable): The file could not be checked now" in response.content.decode()
    assert not Rejection.objects.exists() and not Bundle.objects.exists()
