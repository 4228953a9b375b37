"""extract_images: what comes out, how it is encoded, where it was placed."""

import hashlib

import pikepdf
import pytest
from PIL import Image

from extraction.pdf import SandboxError, extract_images
from extraction.pdf.limits import Limits
from tests import pdfs, pdfs_draws, pdfs_intake, pdfs_jpx, pdfs_predictors


@pytest.fixture
def out(tmp_path):
    directory = tmp_path / "out"
    directory.mkdir()
    return directory


def placed(result) -> dict[tuple[int, int], object]:
    """Asset by placement."""
    return {placement: asset for asset in result.assets for placement in asset.placements}


def opened(out, asset) -> Image.Image:
    return Image.open(out / asset.filename)


def same_pixels(image: Image.Image, expected: Image.Image) -> bool:
    return (image.mode, image.size, image.tobytes()) == (expected.mode, expected.size, expected.tobytes())


def test_it_passes_an_rgb_jpeg_through_byte_for_byte(tmp_path, out):
    (asset,) = extract_images(pdfs.jpeg_rgb(tmp_path), out).assets

    assert (out / asset.filename).read_bytes() == pdfs.jpeg_bytes(pdfs.rgb_picture())
    assert (asset.content_type, asset.width, asset.height, asset.placements) == ("image/jpeg", 48, 32, [(1, 0)])


def test_it_passes_a_gray_jpeg_through_byte_for_byte(tmp_path, out):
    (asset,) = extract_images(pdfs.jpeg_gray(tmp_path), out).assets

    assert (out / asset.filename).read_bytes() == pdfs.jpeg_bytes(pdfs.gray_picture())


def test_it_passes_jpeg_2000_through_byte_for_byte(tmp_path, out):
    (asset,) = extract_images(pdfs.jpx_rgb(tmp_path), out).assets

    assert (out / asset.filename).read_bytes() == pdfs.jpx_bytes(pdfs.rgb_picture())
    assert (asset.content_type, asset.filename[-4:]) == ("image/jp2", ".jp2")


@pytest.mark.parametrize(
    "factory, picture, content_type",
    [
        (pdfs.flate_rgb, pdfs.rgb_picture(), "image/tiff"),
        (pdfs.flate_gray, pdfs.gray_picture(), "image/tiff"),
        (pdfs.flate_predictor, pdfs.rgb_picture(), "image/png"),
    ],
    ids=["rgb", "gray", "png_predictor"],
)
def test_it_wraps_flate_in_a_png_or_tiff_with_the_source_pixels(tmp_path, out, factory, picture, content_type):
    (asset,) = extract_images(factory(tmp_path), out).assets

    assert asset.content_type == content_type
    assert same_pixels(opened(out, asset), picture)


def test_it_wraps_a_one_bit_flate_image_with_the_source_pixels(tmp_path, out):
    (asset,) = extract_images(pdfs.bilevel_flate(tmp_path), out).assets

    assert asset.content_type == "image/tiff"
    assert same_pixels(opened(out, asset).convert("L"), pdfs.bilevel_picture().convert("L"))


def test_it_wraps_ccitt_g4_in_a_tiff_with_the_source_pixels(tmp_path, out):
    (asset,) = extract_images(pdfs.bilevel_ccitt(tmp_path), out).assets

    assert asset.content_type == "image/tiff"
    assert same_pixels(opened(out, asset).convert("L"), pdfs.bilevel_picture().convert("L"))


def test_it_writes_cmyk_as_a_tiff_with_the_source_pixels(tmp_path, out):
    (asset,) = extract_images(pdfs.cmyk(tmp_path), out).assets

    assert asset.content_type == "image/tiff"
    assert same_pixels(opened(out, asset), pdfs.cmyk_picture())


def test_it_extracts_a_soft_mask_as_the_image_after_its_parent(tmp_path, out):
    assets = placed(extract_images(pdfs.rgb_with_smask(tmp_path), out))

    assert sorted(assets) == [(1, 0), (1, 1)]
    assert same_pixels(opened(out, assets[1, 0]), pdfs.rgb_picture())
    assert same_pixels(opened(out, assets[1, 1]), pdfs.alpha_picture())


def test_it_records_an_image_reused_on_three_pages_as_one_asset(tmp_path, out):
    (asset,) = extract_images(pdfs.reused_on_three_pages(tmp_path), out).assets

    assert asset.placements == [(1, 0), (2, 0), (3, 0)]


def test_it_dedupes_separate_xobjects_with_identical_bytes(tmp_path, out):
    result = extract_images(pdfs.duplicate_xobjects(tmp_path), out)

    assert [(a.width, a.placements) for a in result.assets] == [(40, [(1, 0), (1, 1)]), (48, [(1, 2)])]


def test_it_finds_images_in_nested_forms_in_drawing_order(tmp_path, out):
    assets = placed(extract_images(pdfs.forms(tmp_path), out))

    assert {p: (a.width, a.height) for p, a in assets.items()} == {(1, 0): (40, 24), (1, 1): (48, 32), (1, 2): (64, 40)}


def test_it_extracts_an_inline_image_in_drawing_order(tmp_path, out):
    assets = placed(extract_images(pdfs.inline_image(tmp_path), out))

    assert [assets[1, i].content_type for i in range(3)] == ["image/jpeg", "image/png", "image/tiff"]
    assert same_pixels(opened(out, assets[1, 1]), pdfs.INLINE_GRAY)


def test_it_reports_a_page_without_images_as_no_assets(tmp_path, out):
    result = extract_images(pdfs.no_image(tmp_path), out)

    assert (result.pages, result.assets, result.warnings, list(out.iterdir())) == (1, [], [], [])


def test_it_names_each_file_by_the_sha256_of_its_bytes(tmp_path, out):
    result = extract_images(pdfs.mixed(tmp_path), out)

    files = {path.name: path.read_bytes() for path in out.iterdir()}
    assert files.keys() == {a.filename for a in result.assets}
    for asset in result.assets:
        data = files[asset.filename]
        assert (hashlib.sha256(data).hexdigest(), len(data)) == (asset.sha256, asset.size)
        assert asset.filename.startswith(asset.sha256 + ".")


def test_it_gives_byte_identical_files_and_results_on_a_second_run(tmp_path):
    path = pdfs.mixed(tmp_path)
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()

    assert extract_images(path, first) == extract_images(path, second)
    assert {p.name: p.read_bytes() for p in first.iterdir()} == {p.name: p.read_bytes() for p in second.iterdir()}
    assert len(list(first.iterdir())) == 6


def test_it_counts_every_image_of_the_240_page_bundle(tmp_path, out):
    result = extract_images(pdfs.bundle(tmp_path), out)

    assets = placed(result)
    assert (result.pages, len(result.assets), len(assets)) == (240, 237, 480)
    assert assets[1, 1].placements == [(page, 1) for page in range(1, 241)]
    assert assets[1, 0].placements == [(1, 0), (60, 0)]


def test_it_warns_with_page_and_index_for_an_image_that_fails_to_decode(tmp_path, out):
    result = extract_images(pdfs.broken_image(tmp_path), out)

    assert [a.placements for a in result.assets] == [[(1, 0)]]
    assert len(result.warnings) == 1
    assert result.warnings[0].startswith("Page 1, image 1: could not be extracted")


def test_an_image_no_decoder_can_identify_warns_the_same_words_each_time(tmp_path):
    """Seen on qpdf's bad-jpeg.pdf: Pillow's message named a memory address, so the job's warnings (and the manifest
    that records them) differed from one extraction of the same file to the next."""
    pdf = pikepdf.Pdf.new()
    page = pdf.add_blank_page()
    image = pdf.make_stream(
        b"not a JPEG at all",
        Type=pikepdf.Name.XObject,
        Subtype=pikepdf.Name.Image,
        Width=8,
        Height=8,
        ColorSpace=pikepdf.Name.DeviceRGB,
        BitsPerComponent=8,
        Filter=pikepdf.Name.DCTDecode,
    )
    page.Resources = pikepdf.Dictionary(XObject=pikepdf.Dictionary(Im0=image))
    page.Contents = pdf.make_stream(b"q 8 0 0 8 0 0 cm /Im0 Do Q")
    pdf.save(tmp_path / "bad-jpeg.pdf")
    warnings = []
    for run in ("first", "second"):
        (tmp_path / run).mkdir()
        warnings.append(extract_images(tmp_path / "bad-jpeg.pdf", tmp_path / run).warnings)

    assert warnings[0] == warnings[1] and len(warnings[0]) == 1 and " at 0x" not in warnings[0][0]
    assert warnings[0][0].startswith("Page 1, image 0: could not be extracted (cannot identify image file")


def test_it_warns_for_an_image_whose_png_predictor_overflows_and_keeps_the_others(tmp_path, out):
    """In the real child: qpdf raises a RuntimeError for these parameters, which once crashed extraction."""
    result = extract_images(pdfs_predictors.predictor_overflow(tmp_path), out)

    assert sorted(placed(result)) == [(1, 1), (1, 2)]
    assert result.warnings == [
        "Page 1, image 0: could not be extracted (PNGFilter created with bits_per_sample and "
        "samples_per_pixel values that cause overflow)."
    ]
    assert opened(out, placed(result)[1, 2]).tobytes() == pdfs.gray_picture(4, 2).tobytes()
    assert "icc_profile" not in opened(out, placed(result)[1, 2]).info  # its profile stream cannot be read


def test_it_names_the_image_and_the_made_up_filter_it_cannot_decode(tmp_path, out):
    result = extract_images(pdfs_intake.made_up_filter_image(tmp_path), out)

    assert (result.assets, list(out.iterdir())) == ([], [])
    assert result.warnings == [
        "Page 1, image 0: could not be extracted (it is encoded with XORDecode, which is not "
        "a PDF filter, so no reader can decode it)."
    ]


def test_it_extracts_jpeg_2000_in_the_child_as_the_pdf_draws_it(tmp_path, out):
    assets = placed(extract_images(pdfs_jpx.jpx_page(tmp_path), out))

    lying, rgba, deep = assets[1, 0], assets[1, 1], assets[1, 2]
    assert (lying.method, lying.width, lying.height, lying.content_type) == ("passthrough", 48, 32, "image/jp2")
    assert (rgba.method, opened(out, rgba).mode, rgba.content_type) == ("decoded", "RGB", "image/png")
    assert opened(out, rgba).tobytes() == pdfs.rgb_picture().tobytes() and len(rgba.stream_sha256) == 64
    assert (deep.bits, opened(out, deep).tobytes()) == (16, pdfs_jpx.gray16_picture().tobytes())


def test_it_warns_instead_of_decoding_an_image_over_the_pixel_limit(tmp_path, out):
    result = extract_images(pdfs.flate_rgb(tmp_path), out, Limits(max_pixels=100))

    assert (result.assets, len(result.warnings)) == ([], 1)


def test_it_warns_about_a_drawn_xobject_that_does_not_exist(tmp_path, out):
    result = extract_images(pdfs.missing_xobject(tmp_path), out)

    assert len(result.assets) == 1
    assert result.warnings == ["Page 1: the XObject /Nowhere it draws does not exist; it was skipped."]


def test_it_stops_at_a_form_that_draws_itself(tmp_path, out):
    result = extract_images(pdfs.form_drawing_itself(tmp_path), out)

    assert [a.placements for a in result.assets] == [[(1, 0)]]
    assert len(result.warnings) == 1


@pytest.mark.parametrize(
    "factory",
    [
        pdfs_intake.page_tree_loop,
        pdfs_intake.page_tree_too_deep,
        pdfs_intake.encrypt_not_a_dictionary,
        pdfs_intake.catalog_numbered_high,
        pdfs_intake.rc4_short_key_revision_4,
    ],
)
def test_it_extracts_the_image_of_a_file_qpdf_opens_only_past_its_damage(tmp_path, out, factory):
    result = extract_images(factory(tmp_path), out)

    assert (result.pages, result.repaired, [a.placements for a in result.assets]) == (1, True, [[(1, 0)]])
    assert opened(out, result.assets[0]).tobytes() == pdfs_intake.GRAY_2X2


@pytest.mark.parametrize(
    "factory, code",
    [
        (pdfs.encrypted, "encrypted"),
        (pdfs.png_renamed, "unreadable"),
    ],
)
def test_it_fails_permanently_on_a_document_it_cannot_open(tmp_path, out, factory, code):
    with pytest.raises(SandboxError) as caught:
        extract_images(factory(tmp_path), out)

    assert (caught.value.code, caught.value.permanent) == (code, True)


@pytest.mark.slow  # the whole benchmark, reference tools included
def test_the_benchmark_runs_at_a_tiny_scale_and_its_checks_pass(tmp_path, capfd):
    from bench.__main__ import main

    status = main(
        [
            "--scale",
            "0.02",
            "--workers",
            "1,2",
            "--out",
            str(tmp_path),
            "--no-references",
            "--admin-jobs",
            "300",
            "--admin-assets",
            "3000",
            "--log-leaves",  # not the default million: loading it takes minutes, and twice in `make test`
            "1000,10000",
        ]
    )

    printed = capfd.readouterr().out
    assert (status, printed.splitlines()[-1]) == (0, "checks: all passed")
    assert "| Pagetrail, 2 workers (warm child process each) |" in printed
    assert "| django-q2 alone: " in printed and "A floor no pipeline of this design can beat" in printed
    for part in ("2. pipeline, 2 workers", "4. admin, 300 jobs, 3,000 assets", "5. validation of the"):
        assert f"| {part}" in printed
    # Target 2 beside the floor its own engines set, measured in the same run (bench/job_floor.py).
    assert "| reference: a task that does nothing, in the same cluster" in printed
    assert "engines' floor at the goal's counts" in printed


def test_the_benchmark_checks_catch_a_jpeg_that_was_not_passed_through():
    from bench import checks
    from bench.runners import Run

    truth = {
        "files": [
            {
                "name": "a.pdf",
                "image_xobjects": 1,
                "smask_xobjects": 0,
                "distinct_outputs": 1,
                "placements": 1,
                "jpeg_sha256": ["j" * 64],
            }
        ]
    }
    floor = Run("floor", digests={"a.pdf": ["j" * 64]})
    ours = Run("Pagetrail", digests={"a.pdf": ["x" * 64]}, placements={"a.pdf": 1})

    expected = ["Pagetrail: a.pdf changed 1 JPEG(s) instead of passing them through"]
    assert checks.failures([floor, ours], truth) == expected


def test_it_extracts_the_image_an_annotation_appearance_draws(tmp_path, out):
    assets = placed(extract_images(pdfs_draws.annotation_stamp(tmp_path), out))

    assert sorted(assets) == [(1, 0), (1, 1)]
    assert same_pixels(opened(out, assets[1, 1]), pdfs.rgb_picture())


def test_it_extracts_a_type3_glyph_image_as_one_asset_placed_once_a_page(tmp_path, out):
    result = extract_images(pdfs_draws.type3_glyph_twice(tmp_path), out)

    assert [(a.width, a.placements) for a in result.assets] == [(40, [(1, 0)]), (48, [(1, 1)])]


def test_it_extracts_an_explicit_mask_as_the_image_after_its_parent(tmp_path, out):
    result = extract_images(pdfs_draws.explicit_mask(tmp_path), out)

    assert [(a.width, a.placements) for a in result.assets] == [(40, [(1, 0)]), (48, [(1, 1)]), (48, [(1, 2)])]


def test_it_warns_about_an_inline_image_with_duplicate_keys_instead_of_failing(tmp_path, out):
    result = extract_images(pdfs_draws.inline_duplicate_keys(tmp_path), out)

    assert (result.assets, len(result.warnings)) == ([], 1)
