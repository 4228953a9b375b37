"""The fidelity harness counts what it sees: a few generated PDFs whose outcome is known."""

import random
import shutil
import time
import zlib
from pathlib import Path

import pytest
from PIL import Image

from bench import fidelity
from bench.fidelity_pixels import compare
from tests import pdfs, pdfs_draws, pdfs_intake, pdfs_pixels, pdfs_predictors

FORMS = Path(__file__).parent / "samples" / "py-pdf" / "pdflatex-forms.pdf"  # CC-BY-SA-4.0, README there
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not shutil.which("pdfimages"), reason="poppler-utils (pdfimages) is not installed"),
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("corpus")
    pdfs.rgb_with_smask(directory)  # two outputs: the picture and its soft mask, both lossless
    pdfs.javascript_open_action(directory)
    pdfs.text_renamed(directory)  # not a PDF: refused, and poppler cannot open it either
    shutil.copy(FORMS, directory)  # py-pdf's pdfTeX form with a SubmitForm button: accepted with a flag
    return directory


@pytest.fixture(scope="module")
def summary(corpus, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("out")
    records = fidelity.run(sorted(corpus.iterdir()), corpus, jobs=2, timeout=120)
    summary = fidelity.summarise(records, 0)
    fidelity.write(out, records, summary)
    summary["out"] = out
    return summary


def test_it_counts_every_file_and_no_crash(summary):
    assert (summary["files"], summary["intake_crashes"], summary["extraction_crashes"]) == (4, 0, 0)


def test_it_counts_active_content_as_a_policy_refusal(summary):
    assert summary["refusals"]["active_content"] == {"files": 1, "poppler_opens": 1, "policy": 1}


def test_it_counts_each_intake_policy_finding_by_what_became_of_its_file(summary):
    """Under the defaults: JavaScript refuses its file, a SubmitForm button accepts its file with a flag."""
    assert summary["policy_findings"] == {
        "javascript": {"files": 1, "refused": 1, "flagged": 0, "accepted": 0},
        "submit_form": {"files": 1, "refused": 0, "flagged": 1, "accepted": 0},
    }
    assert (summary["accepted"], summary["accepted_flagged"]) == (2, 1)


def test_it_judges_findings_under_the_deployments_policy(corpus, monkeypatch):
    monkeypatch.setenv("PAGETRAIL_INTAKE_POLICY", "submit_form=refuse")
    (record,) = fidelity.run([corpus / FORMS.name], corpus, jobs=1, timeout=120)
    assert record["intake"] | {"message": ""} == {
        "outcome": "refused",
        "code": "active_content",
        "message": "",
        "policy": True,
        "found": [["submit_form", "refuse"]],
    }


def test_it_does_not_hold_against_us_a_refusal_of_what_poppler_cannot_open(summary):
    assert summary["refusals"]["not_pdf"]["poppler_opens"] == 0
    assert summary["refused_poppler_opens_not_policy"] == 0


def test_it_finds_placements_agreeing_with_pdfimages(summary):
    assert (summary["placements_agree"], summary["placements_compared"]) == (2, 2)  # the form has no image


def test_it_finds_both_outputs_pixel_equal_to_poppler(summary):
    assert (summary["outputs_checked"], summary["pixel_equal"], summary["pillow_unreadable"]) == (2, 2, 0)


def test_it_writes_one_record_per_file(summary):
    assert len((summary["out"] / "records.jsonl").read_text().splitlines()) == 4


def test_it_records_a_file_that_hangs_and_carries_on(corpus, monkeypatch):
    # The workers are forked, so they run this stand-in for the real check.
    monkeypatch.setattr(fidelity, "check", lambda path, name, scratch: time.sleep(60))
    started = time.monotonic()
    records = fidelity.run([corpus / "rgb_with_smask.pdf"], corpus, jobs=1, timeout=0.5)
    assert records[0]["intake"]["outcome"] == "hung" and time.monotonic() - started < 10


def test_it_calls_images_pdfimages_does_not_list_a_superset(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pdfs_draws.tiling_pattern(corpus)  # poppler lists the page's image, not the pattern's
    records = fidelity.run(sorted(corpus.iterdir()), corpus, jobs=1, timeout=120)
    assert [kind for kind, _ in records[0]["disagreements"]] == ["placements:more:superset"]


def test_it_tells_a_changed_sample_from_an_equal_one(tmp_path):
    picture = pdfs.rgb_picture()
    picture.save(tmp_path / "a.png")
    picture.putpixel((0, 0), (0, 0, 1) if picture.getpixel((0, 0)) != (0, 0, 1) else (0, 0, 2))
    picture.save(tmp_path / "b.png")
    assert compare(tmp_path / "a.png", tmp_path / "a.png", jpeg=False) == ""
    assert compare(tmp_path / "a.png", tmp_path / "b.png", jpeg=False) == "samples"


def test_it_allows_two_levels_for_jpegs_only(tmp_path):
    Image.new("L", (4, 4), 100).save(tmp_path / "a.png")
    Image.new("L", (4, 4), 102).save(tmp_path / "b.png")
    assert compare(tmp_path / "a.png", tmp_path / "b.png", jpeg=True) == ""
    assert compare(tmp_path / "a.png", tmp_path / "b.png", jpeg=False) == "samples"


def test_it_never_converts_cmyk_to_compare_it(tmp_path):
    Image.new("CMYK", (4, 4), (0, 0, 0, 0)).save(tmp_path / "a.tif")
    Image.new("RGB", (4, 4), (255, 255, 255)).save(tmp_path / "b.png")
    assert compare(tmp_path / "a.tif", tmp_path / "b.png", jpeg=False) == "mode"


def test_it_judges_stencils_by_what_they_paint_whatever_the_reference_writes(tmp_path):
    # pdfimages ignores a stencil's /Decode and MuPDF writes painted samples white; ours are black.
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pdfs_pixels.stencil_polarities(corpus)
    records = fidelity.run(sorted(corpus.iterdir()), corpus, jobs=1, timeout=120)
    assert [output["result"] for output in records[0]["outputs"]] == ["equal", "equal"]


def test_it_matches_an_output_to_a_row_by_its_stream_only_when_both_are_stencils_or_both_images(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pdfs_draws.one_stream_stencil_and_image(corpus)  # poppler lists the stencil alone
    records = fidelity.run(sorted(corpus.iterdir()), corpus, jobs=1, timeout=120)
    results = {output["colorspace"]: output["result"] for output in records[0]["outputs"]}
    assert results == {"DeviceGray": "unmatched", "ImageMask": "equal"}


def test_it_classes_kept_separation_tints_as_by_design_not_as_equal_or_wrong(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pdfs_pixels.separation_page(corpus)  # poppler converts the tints through the tint transform
    records = fidelity.run(sorted(corpus.iterdir()), corpus, jobs=1, timeout=120)
    summary = fidelity.summarise(records, 0)
    assert [output["result"] for output in records[0]["outputs"]] == ["by-design:Separation"]
    assert (summary["by_design"], summary["pixel_equal"]) == (1, 0)


def test_it_classes_short_data_padded_with_zeros_as_by_design_only_when_ours_holds_the_stored_bytes(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pdfs_pixels.short_data_page(corpus)  # poppler pads with ones, MuPDF drops the partial row
    records = fidelity.run(sorted(corpus.iterdir()), corpus, jobs=1, timeout=120)
    assert [output["result"] for output in records[0]["outputs"]] == ["by-design:short data padded with zeros"]


def test_it_classes_a_jpeg_at_its_own_size_as_by_design_where_poppler_writes_the_dictionarys(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pdfs_pixels.jpeg_size_unlike_its_dictionary_page(corpus)
    records = fidelity.run(sorted(corpus.iterdir()), corpus, jobs=1, timeout=120)
    assert [output["result"] for output in records[0]["outputs"]] == ["by-design:the JPEG's own size"]


def test_it_classes_16_bits_as_by_design_only_when_their_high_bytes_are_the_8_bit_samples(tmp_path):
    from extraction.pdf import containers

    samples = bytes(range(0, 96, 2))  # 4 x 2 RGB pixels of 16 bits: high bytes 0, 4, 8 ...
    rows = b"".join(b"\0" + samples[y * 24 : (y + 1) * 24] for y in range(2))
    (tmp_path / "ours.png").write_bytes(containers.png(4, 2, 16, 3, zlib.compress(rows)))
    high = Image.frombytes("RGB", (4, 2), samples[0::2])
    high.save(tmp_path / "same.png")
    high.point(lambda v: v ^ 1).save(tmp_path / "other.png")
    assert compare(tmp_path / "ours.png", tmp_path / "same.png", jpeg=False) == "by-design:16-bit"
    assert compare(tmp_path / "ours.png", tmp_path / "other.png", jpeg=False) == "bits"


@pytest.mark.parametrize("mode", ["RGB", "L"])
def test_it_classes_16_bits_as_by_design_when_the_8_bit_samples_are_ours_rounded_by_the_bit_below(mode, tmp_path):
    """poppler's JPEG 2000 reader writes a 16-bit sample v as (v >> 8) + bit 7 of v, at most 255."""
    from extraction.pdf import containers

    n, width, height = (3 if mode == "RGB" else 1), 7, 12  # 12 rows: seed 0 draws all five PNG filter types
    values = [(i * 7919 + 0x80) % 65536 for i in range(width * height * n)]
    values[-1] = 0xFFFF  # rounds to 256: written as 255
    if mode == "RGB":
        rows = [
            b"".join(v.to_bytes(2, "big") for v in values[y * width * 3 : (y + 1) * width * 3]) for y in range(height)
        ]
        (tmp_path / "ours.png").write_bytes(
            containers.png(width, height, 16, 3, zlib.compress(pdfs_predictors.png_filtered(rows, 6, random.Random(0))))
        )
    else:
        Image.frombytes("I;16B", (width, height), b"".join(v.to_bytes(2, "big") for v in values)).save(
            tmp_path / "ours.png"
        )
    rounded = bytes(min(255, (v >> 8) + ((v >> 7) & 1)) for v in values)
    Image.frombytes(mode, (width, height), rounded).save(tmp_path / "rounded.png")
    Image.frombytes(mode, (width, height), bytes(v >> 8 for v in values)).save(tmp_path / "high.png")
    Image.frombytes(mode, (width, height), bytes(min(255, (v >> 8) + 1) for v in values)).save(tmp_path / "up.png")

    assert compare(tmp_path / "ours.png", tmp_path / "rounded.png", jpeg=False) == "by-design:16-bit"
    assert compare(tmp_path / "ours.png", tmp_path / "high.png", jpeg=False) == "by-design:16-bit"
    assert compare(tmp_path / "ours.png", tmp_path / "up.png", jpeg=False) == "bits"


def test_it_checks_only_the_files_named_and_keeps_an_earlier_runs_records_for_the_rest(
    corpus, summary, tmp_path, capsys
):
    (tmp_path / "only.txt").write_text("javascript_open_action.pdf\n")
    fidelity.main(
        [
            str(corpus),
            "--jobs",
            "1",
            "--out",
            str(tmp_path / "again"),
            "--only",
            str(tmp_path / "only.txt"),
            "--merge",
            str(summary["out"] / "records.jsonl"),
        ]
    )
    again = (tmp_path / "again" / "records.jsonl").read_text().splitlines()
    assert len(again) == 4 and '"files": 4' in (tmp_path / "again" / "summary.json").read_text()
    fidelity.main([str(corpus), "--jobs", "1", "--out", str(tmp_path / "alone"), "--only", str(tmp_path / "only.txt")])
    assert len((tmp_path / "alone" / "records.jsonl").read_text().splitlines()) == 1


@pytest.mark.skipif(not shutil.which("mutool"), reason="mupdf-tools (mutool) is not installed")
def test_it_counts_a_real_password_as_policy_where_poppler_reads_the_file_as_not_encrypted(tmp_path):
    path = pdfs.encrypted_where_poppler_cannot_check(tmp_path)

    (record,) = fidelity.run([path], tmp_path, jobs=1, timeout=120)

    assert (record["poppler_opens"], record["intake"]["code"], record["intake"]["policy"]) == (True, "encrypted", True)


def test_it_counts_a_missing_header_as_a_policy_refusal_though_poppler_opens_the_file(tmp_path):
    (record,) = fidelity.run([pdfs_intake.header_missing(tmp_path)], tmp_path, jobs=1, timeout=120)

    assert (record["poppler_opens"], record["intake"]["code"], record["intake"]["policy"]) == (
        True,
        "no_pdf_header",
        True,
    )


def test_it_classes_colours_under_full_transparency_as_by_design_only_where_nothing_else_differs(tmp_path):
    """A premultiplied opacity channel (/SMaskInData 2) of 0: ours keeps the stored colour, MuPDF writes 0."""
    Image.frombytes("RGBA", (3, 1), bytes([128, 255, 128, 128, 0, 255, 0, 0, 9, 9, 9, 255])).save(tmp_path / "ours.png")
    Image.frombytes("RGBA", (3, 1), bytes([128, 255, 128, 128, 0, 0, 0, 0, 9, 9, 9, 255])).save(tmp_path / "same.png")
    Image.frombytes("RGBA", (3, 1), bytes([128, 254, 128, 128, 0, 0, 0, 0, 9, 9, 9, 255])).save(tmp_path / "seen.png")
    Image.frombytes("RGBA", (3, 1), bytes([128, 255, 128, 128, 0, 0, 0, 1, 9, 9, 9, 255])).save(tmp_path / "alpha.png")
    assert (
        compare(tmp_path / "ours.png", tmp_path / "same.png", jpeg=False) == "by-design:colour under full transparency"
    )
    assert compare(tmp_path / "ours.png", tmp_path / "seen.png", jpeg=False) == "samples"
    assert compare(tmp_path / "ours.png", tmp_path / "alpha.png", jpeg=False) == "samples"
