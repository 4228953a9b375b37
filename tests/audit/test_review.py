import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from audit.models import ActivityEvent, ReviewFlag
from audit.review import flags as review
from extraction.models import Job
from extraction.runner import run_job
from tests import pdfs
from tests.conftest import complete

pytestmark = pytest.mark.django_db


def with_blank_pages(directory):
    """Page 1 has an image, page 2 none, page 3 the same image again."""
    doc = pdfs.Doc()
    logo = pdfs.jpeg(doc, pdfs.rgb_picture())
    doc.page(logo), doc.page(content=b"0 0 m 10 10 l S"), doc.page(logo)
    return doc.save(directory / "blank_page.pdf")


def test_it_lists_every_page_with_its_assets_and_marks_pages_without_one(tmp_path):
    manifest = complete(with_blank_pages(tmp_path))
    pages = review.pages_of(manifest)
    assert [len(p.assets) for p in pages] == [1, 0, 1]
    assert pages[0].assets[0] == pages[2].assets[0]


def test_the_review_page_shows_coverage_and_the_empty_page(admin_client, tmp_path):
    manifest = complete(with_blank_pages(tmp_path))
    page = admin_client.get(reverse("review-manifest", args=[manifest.pk])).content.decode()
    assert "2 of 3 pages" in page
    assert 'id="page-2"' in page and page.count("No image extracted from this page.") == 1


def test_the_review_page_of_a_240_page_bundle_costs_a_constant_number_of_queries(admin_client, tmp_path):
    small = complete(with_blank_pages(tmp_path))
    big = complete(pdfs.bundle(tmp_path))
    counts = []
    for manifest in (small, big):
        with CaptureQueriesContext(connection) as captured:
            assert admin_client.get(reverse("review-manifest", args=[manifest.pk])).status_code == 200
        counts.append(len(captured))
    assert counts[0] == counts[1]


def test_a_thumbnail_is_a_small_png_of_the_asset(admin_client, tmp_path):
    manifest = complete(pdfs.mixed(tmp_path))
    for asset in manifest.assets.all():  # JPEG, PNG, TIFF (CMYK, CCITT) and JPEG 2000
        response = admin_client.get(reverse("asset-thumbnail", args=[asset.pk]))
        assert response["Content-Type"] == "image/png" and response.content.startswith(b"\x89PNG")


def test_a_reviewer_flags_a_missing_page_from_the_review_page(admin_client, tmp_path):
    manifest = complete(with_blank_pages(tmp_path))
    url = reverse("review-manifest", args=[manifest.pk])
    response = admin_client.post(url, {"pages": "2", "kind": "missing_page", "note": "signature page"})
    assert response.status_code == 302
    flag = ReviewFlag.objects.get()
    assert (flag.pages, flag.kind, flag.status, flag.raised_by) == ([2], "missing_page", "open", "admin")
    assert ActivityEvent.objects.get(object_type="reviewflag").action == "flag_raised"  # (the fixture's roles: theirs)


@pytest.mark.parametrize(
    "pages, error", [("4", "there is no page 4"), ("x", "is not a page number"), ("0", "there is no page 0")]
)
def test_it_refuses_a_flag_on_pages_the_bundle_does_not_have(admin_client, tmp_path, pages, error):
    manifest = complete(with_blank_pages(tmp_path))
    response = admin_client.post(reverse("review-manifest", args=[manifest.pk]), {"pages": pages, "kind": "other"})
    assert error in response.content.decode() and not ReviewFlag.objects.exists()


def test_a_flag_goes_through_its_lifecycle_with_who_and_when(tmp_path):
    flag = review.raise_flag(complete(with_blank_pages(tmp_path)), [2], "missing_page", "", "rita")
    assert review.close(flag, "resolved", "sam")
    assert (flag.status, flag.closed_by) == ("resolved", "sam") and flag.closed_at
    assert not review.close(flag, "dismissed", "sam")  # a closed flag stays closed


def test_a_duplicate_re_extraction_request_makes_only_one_extraction_round(tmp_path):
    manifest = complete(with_blank_pages(tmp_path))
    flag = review.raise_flag(manifest, [2], "missing_page", "", "rita")
    same_flag_in_another_tab = ReviewFlag.objects.get(pk=flag.pk)  # still open when its request is sent
    review.request_reextraction(flag, "rita")
    review.request_reextraction(same_flag_in_another_tab, "sam")
    assert Job.objects.filter(bundle=manifest.job.bundle).count() == 2  # the first round and one re-extraction
    flag.refresh_from_db()
    assert (flag.requested_by, flag.reextraction_job.generation) == ("rita", 1)
    assert ActivityEvent.objects.filter(action="reextraction_requested").count() == 1


def test_re_extraction_makes_a_new_job_for_the_same_bundle_and_compares_manifests(tmp_path):
    manifest = complete(with_blank_pages(tmp_path))
    flag = review.raise_flag(manifest, [2], "missing_page", "", "rita")
    review.request_reextraction(flag, "rita")
    job = flag.reextraction_job
    assert (flag.status, job.bundle, job.generation) == ("reextraction_requested", manifest.job.bundle, 1)
    assert job.idempotency_key != manifest.job.idempotency_key
    assert review.comparison(flag) is None
    run_job(job.pk)
    new = Job.objects.get(pk=job.pk).manifest
    assert new.sequence > manifest.sequence
    assert review.comparison(flag) == {"manifest": new.sequence, "added": 0, "removed": 0, "unchanged": 1}
    assert new.assets.get().name.split("/")[2] == "r1"


def test_provider_warnings_put_the_job_in_the_review_queue_by_themselves(tmp_path):
    manifest = complete(pdfs.broken_image(tmp_path))
    flag = ReviewFlag.objects.get(manifest=manifest)
    assert (flag.raised_by, flag.status, flag.pages) == ("extractor", "open", [1])


def test_the_review_queue_lists_open_flags_oldest_first(admin_client, tmp_path):
    manifest = complete(with_blank_pages(tmp_path))
    first = review.raise_flag(manifest, [2], "missing_page", "first", "rita")
    review.raise_flag(manifest, [1], "wrong_image", "second", "rita")
    review.close(review.raise_flag(manifest, [3], "other", "closed one", "rita"), "dismissed", "rita")
    page = admin_client.get(reverse("admin:audit_reviewflag_changelist")).content.decode()
    assert page.index("first") < page.index("second") and "closed one" not in page
    assert first.status == "open"
