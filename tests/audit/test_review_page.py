"""The review page of a long bundle: an index of pages, flagged pages marked, previews polled as they come."""

import pytest
from django.urls import reverse

from audit import tasks
from audit.models import Manifest
from audit.review.flags import raise_flag

pytestmark = pytest.mark.django_db


@pytest.fixture
def manifest(three_page_manifest) -> Manifest:
    return three_page_manifest


def test_a_backwards_range_is_refused_in_words_that_say_so(admin_client, manifest):
    response = admin_client.post(reverse("review-manifest", args=[manifest.pk]), {"pages": "3-2", "kind": "other"})
    assert "&#x27;3-2&#x27; runs backwards: write the first page first (2-3)." in response.content.decode()
    assert not manifest.review_flags.exists()


def test_flagged_pages_are_marked_in_the_index_and_on_their_cards(admin_client, manifest):
    raise_flag(manifest, [2, 3], "missing_image", "stamp", "rita")
    page = admin_client.get(reverse("review-manifest", args=[manifest.pk])).content.decode()
    assert '<a href="#page-2" class="flagged shown"' in page and '<a href="#page-1" class="covered shown"' in page
    assert 'class="review-page flagged" id="page-2"' in page and "Flagged: pages 2-3." in page
    assert "Missing Image on pages 2-3 (open)" in page


def test_the_preview_progress_is_polled_until_every_page_has_one(admin_client, manifest):
    url = reverse("review-previews", args=[manifest.pk])
    assert f'data-live-url="{url}"' in admin_client.get(reverse("review-manifest", args=[manifest.pk])).content.decode()
    before = admin_client.get(url).json()
    assert (before["final"], before["previews"]) == (False, [])
    assert before["text"]["previewed"] == "0 of 3 pages have a preview, more are being made"
    tasks.generate_previews(manifest.pk)
    after = admin_client.get(url).json()
    assert after["final"] and [p["page"] for p in after["previews"]] == [1, 2, 3]
    assert after["previews"][0]["large"] == reverse(
        "page-preview", args=[manifest.previews.get(page=1, max_width=1000).pk]
    )
    assert "data-live-url" not in admin_client.get(reverse("review-manifest", args=[manifest.pk])).content.decode()
