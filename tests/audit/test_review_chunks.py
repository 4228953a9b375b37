"""The review page of a long bundle draws its cards a chunk at a time, indexes every page, and takes a flag
from the card of the page it names, confirming it in that card."""

import re

import pytest
from django.urls import reverse

from audit.models import ActivityEvent, Manifest
from audit.review.chunks import CHUNK, Chunk, first_of_chunk
from tests import pdfs
from tests.conftest import complete

pytestmark = pytest.mark.django_db


@pytest.fixture
def manifest(tmp_path) -> Manifest:
    return complete(pdfs.long_scan(tmp_path, pages=90), filename="claims-1042.pdf")  # chunks 1-40, 41-80, 81-90


def cards(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<section class="review-page[^"]*" id="page-(\d+)"', html)]


def index(html: str) -> dict[int, str]:
    nav = html.split('<nav id="page-index"', 1)[1].split("</nav>", 1)[0]
    return {int(n): href for href, n in re.findall(r'<a href="([^"]+)"[^>]*>(\d+)</a>', nav)}


def review(client, manifest, query: str = "") -> str:
    response = client.get(reverse("review-manifest", args=[manifest.pk]) + query)
    assert response.status_code == 200
    return response.content.decode()


def test_it_numbers_chunks_from_page_1_in_steps_of_40():
    assert [first_of_chunk(n) for n in (1, 40, 41, 80, 81, 254)] == [1, 1, 41, 41, 81, 241]
    last = Chunk.asked("250", 254)
    assert (last.first, last.last, last.previous, last.next) == (241, 254, 201, None)
    assert CHUNK == 40


def test_it_draws_only_the_cards_of_the_chunk_holding_the_page_asked_for(admin_client, manifest):
    assert cards(review(admin_client, manifest)) == list(range(1, 41))
    assert cards(review(admin_client, manifest, "?from=60")) == list(range(41, 81))
    assert cards(review(admin_client, manifest, "?from=81")) == list(range(81, 91))


def test_the_index_names_every_page_and_links_outside_the_chunk_to_their_own(admin_client, manifest):
    html = review(admin_client, manifest, "?from=41")
    links = index(html)
    assert sorted(links) == list(range(1, 91))
    assert (links[41], links[80]) == ("#page-41", "#page-80")  # on screen: no reload
    assert (links[5], links[85]) == ("?from=1#page-5", "?from=81#page-85")
    assert re.findall(r'class="\w+ shown"[^>]*>(\d+)<', html) == [str(n) for n in range(41, 81)]


@pytest.mark.parametrize("asked", ["abc", "-5", "0", "", "99999999999999999999", "1e3", "%00"])
def test_anything_but_a_page_number_shows_the_first_chunk(admin_client, manifest, asked):
    assert cards(review(admin_client, manifest, f"?from={asked}")) == list(range(1, 41))


def test_a_page_past_the_end_shows_the_last_chunk(admin_client, manifest):
    html = review(admin_client, manifest, "?from=9999")
    assert cards(html) == list(range(81, 91)) and "Showing pages 81-90 of 90" in html
    assert 'href="?from=41#page-80" rel="prev"' in html and 'rel="next"' not in html


def test_every_card_has_its_own_flag_control(admin_client, manifest):
    html = review(admin_client, manifest, "?from=41")
    assert html.count('class="flag-here"') == 40
    assert '<input type="hidden" name="pages" value="77">' in html
    assert 'value="Raise flag on page 77"' in html


def test_a_reader_who_may_not_flag_gets_no_flag_control(client, manifest, django_user_model):
    from django.contrib.auth.models import Group

    clara = django_user_model.objects.create_user("clara", password="x", is_staff=True)
    clara.groups.add(Group.objects.get(name="Compliance staff"))  # reads every review page, flags none
    client.force_login(clara)
    html = review(client, manifest)
    assert 'class="flag-here"' not in html and 'id="preview-flag"' not in html


def test_a_flag_raised_on_a_card_lands_on_that_card_with_its_confirmation_in_it(admin_client, manifest):
    url = reverse("review-manifest", args=[manifest.pk])
    response = admin_client.post(f"{url}?from=41", {"pages": "77", "kind": "wrong_image", "note": "upside down"})
    assert response.status_code == 302 and response["Location"] == f"{url}?from=41#page-77"
    html = review(admin_client, manifest, "?from=41")
    card = html.split('id="page-77"', 1)[1].split("</section>", 1)[0]
    assert '<li class="success">Flag raised on page(s) 77.</li>' in card
    assert "Flagged: Wrong Image (Open): upside down" in card
    assert 'class="messagelist"' not in html.split('<div id="content"', 1)[0]  # not at the top, far from it
    assert "Flag raised" not in review(admin_client, manifest, "?from=41")  # shown once
    flag = manifest.review_flags.get()
    assert flag.pages == [77] and ActivityEvent.objects.filter(action="flag_raised", object_id=str(flag.pk)).exists()


def test_a_flag_from_the_form_at_the_top_lands_on_its_first_page_in_that_pages_chunk(admin_client, manifest):
    url = reverse("review-manifest", args=[manifest.pk])
    response = admin_client.post(url, {"pages": "85-86, 3", "kind": "missing_image", "note": ""})
    assert response["Location"] == f"{url}?from=1#page-3"
    card = review(admin_client, manifest, "?from=1").split('id="page-3"', 1)[1].split("</section>", 1)[0]
    assert "Flag raised on page(s) 3, 85-86." in card


def test_a_flag_naming_a_page_the_bundle_lacks_is_refused_in_words(admin_client, manifest):
    url = reverse("review-manifest", args=[manifest.pk])
    response = admin_client.post(f"{url}?from=81", {"pages": "91", "kind": "other", "note": ""})
    assert response.status_code == 200 and cards(response.content.decode()) == list(range(81, 91))
    assert "The bundle has 90 pages; there is no page 91." in response.content.decode()
    assert not manifest.review_flags.exists()
