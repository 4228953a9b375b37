"""Drawing: which images each page draws, in order, from every place a viewer draws them."""

import pikepdf
import pytest

from extraction.pdf import draws
from extraction.pdf.draws import Drawing
from tests import pdfs, pdfs_draws

GRAY, RGB, BILEVEL = 40, 48, 64  # the widths of the test pictures


def drawn(path) -> tuple[list[list[int]], list[str]]:
    """The width of each image drawn, page by page, and the warnings."""
    warnings: list[str] = []
    with pikepdf.open(path) as pdf:
        drawing = Drawing(pdf, warnings)
        pages = [[_width(d.image) for d in drawing.page_draws(n, page)] for n, page in enumerate(pdf.pages, 1)]
    return pages, warnings


def _width(image) -> int:
    return int(image.Width) if isinstance(image, pikepdf.Stream) else image.width


@pytest.mark.parametrize(
    "factory",
    [
        pdfs_draws.annotation_stamp,
        pdfs_draws.annotation_states,
        pdfs_draws.soft_mask_group,
        pdfs_draws.tiling_pattern,
        pdfs_draws.type3_glyph,
        pdfs_draws.type3_glyph_page_resources,
    ],
)
def test_it_finds_the_image_drawn_outside_the_page_content_after_the_page_image(tmp_path, factory):
    assert drawn(factory(tmp_path)) == ([[GRAY, RGB]], [])


def test_it_skips_a_hidden_annotation(tmp_path):
    assert drawn(pdfs_draws.annotation_hidden(tmp_path)) == ([[GRAY, RGB]], [])


def test_it_skips_an_image_in_optional_content_that_is_off_by_default(tmp_path):
    assert drawn(pdfs_draws.optional_content(tmp_path)) == ([[GRAY, RGB]], [])


def test_it_places_a_type3_glyph_image_once_a_page_however_often_the_glyph_is_shown(tmp_path):
    assert drawn(pdfs_draws.type3_glyph_twice(tmp_path)) == ([[GRAY, RGB]], [])


def test_it_stops_at_a_type3_glyph_that_shows_itself(tmp_path):
    assert drawn(pdfs_draws.type3_glyph_showing_itself(tmp_path)) == ([[GRAY, RGB]], [])


def test_it_draws_an_explicit_mask_right_after_its_image(tmp_path):
    (page,), warnings = drawn(pdfs_draws.explicit_mask(tmp_path))

    assert (page, warnings) == ([GRAY, RGB, RGB], [])


def test_it_warns_about_an_inline_image_it_cannot_read_instead_of_raising(tmp_path):
    pages, warnings = drawn(pdfs_draws.inline_duplicate_keys(tmp_path))

    assert pages == [[]]
    assert len(warnings) == 1 and warnings[0].startswith("Page 1: an inline image could not be read")


def test_it_bounds_the_work_of_forms_that_draw_each_other_many_times(tmp_path, monkeypatch):
    monkeypatch.setattr(draws, "MAX_STEPS", 10_000)

    (page,), warnings = drawn(pdfs_draws.form_bomb(tmp_path))

    assert 0 < len(page) < 10_000
    assert warnings == ["Page 1: drawing stopped after 10,000 steps in the document; the images after are missing."]


def test_it_parses_a_form_drawn_on_every_page_once(tmp_path, monkeypatch):
    parsed, parse = [], pikepdf.parse_content_stream
    monkeypatch.setattr(pikepdf, "parse_content_stream", lambda obj, ops: parsed.append(obj.objgen) or parse(obj, ops))

    pages, _ = drawn(pdfs_draws.form_on_every_page(tmp_path))

    assert pages == [[GRAY]] * 3
    assert len(parsed) == len(set(parsed)) == 4  # three pages, one form


def test_it_keeps_drawing_the_existing_kinds(tmp_path):
    assert drawn(pdfs.forms(tmp_path)) == ([[GRAY, RGB, BILEVEL]], [])
