"""The golden outputs: what this extractor writes for a small generated corpus, kept in
tests/extraction/golden_outputs.json under the EXTRACTOR_VERSION that wrote them.

    python -m tests.golden   (after bumping EXTRACTOR_VERSION: rewrites the golden file)

tests/extraction/test_golden_outputs.py extracts the corpus again and compares, so a dependency
upgrade that changes an output's bytes cannot ship under an unchanged extractor version.
"""

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

import django

GOLDEN = Path(__file__).resolve().parent / "extraction" / "golden_outputs.json"
FIX = (
    "bump EXTRACTOR_VERSION in extraction/pdf/versions.py and regenerate with "
    "`python -m tests.golden` (then commit tests/extraction/golden_outputs.json)"
)


def pixel_streams(d: Path) -> Path:
    """One page for each kind of image the extractor decodes or adjusts, rather than passing through."""
    from tests import pdfs
    from tests import pdfs_pixels as px

    doc = pdfs.Doc()
    made = [
        px.cmyk_jpeg(doc.pdf)[0],
        px.cmyk_jpeg(doc.pdf, decode=True)[0],
        px.inverted_gray_jpeg(doc.pdf)[0],
        px.rgb16(doc.pdf)[0],
        px.separation(doc.pdf)[0],
        px.separation_run_length(doc.pdf)[0],
        px.device_n(doc.pdf, 3)[0],
        px.lab(doc.pdf)[0],
        px.four_bit_rgb(doc.pdf)[0],
        px.ccitt_group3(doc.pdf, pdfs.bilevel_picture()),
        px.jbig2_mmr(doc.pdf, pdfs.bilevel_picture()),
        px.untransformed_jpeg(doc.pdf)[0],
    ]
    for stream in made:
        doc.page(stream)
    return doc.save(d / "pixel_streams.pdf")


def corpus() -> list:
    """Generators of the corpus, each (directory) -> path of a PDF; small and fast to extract."""
    from tests import pdfs
    from tests import pdfs_draws as draws
    from tests import pdfs_pixels as px

    return [
        pdfs.mixed,
        pdfs.jpeg_gray,
        pdfs.flate_gray,
        pdfs.flate_rgb,
        pdfs.rgb_with_smask,
        pdfs.bilevel_flate,
        pdfs.jpx_rgb,
        pdfs.forms,
        pdfs.inline_image,
        pixel_streams,
        px.inline_stencil,
        px.tiny_inline,
        px.inline_jpeg,
        draws.annotation_stamp,
        draws.tiling_pattern,
        draws.soft_mask_group,
        draws.type3_glyph_page_resources,
        draws.explicit_mask,
        draws.optional_content,
    ]


def outputs(directory: Path) -> dict:
    """For each PDF of the corpus: its input's sha256 and, by placement, the file written (named by sha256)."""
    from extraction.pdf import extract_images

    found = {}
    for make in corpus():
        path = make(directory)
        out_dir = directory / f"{path.stem}.out"
        out_dir.mkdir()
        extraction = extract_images(path, out_dir)
        written = {f"{page}-{index}": asset.filename for asset in extraction.assets for page, index in asset.placements}
        found[path.name] = {
            "input": hashlib.sha256(path.read_bytes()).hexdigest(),
            "outputs": dict(sorted(written.items())),
        }
    return found


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    django.setup()
    from extraction.pdf import versions
    from extraction.providers.local import EXTRACTOR_VERSION

    with tempfile.TemporaryDirectory() as directory:
        found = outputs(Path(directory))
    document = {"extractor_version": EXTRACTOR_VERSION, "written_with": versions.libraries(), "corpus": found}
    GOLDEN.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
    print(f"{GOLDEN}: {len(found)} PDFs under extractor version {EXTRACTOR_VERSION}")


if __name__ == "__main__":
    sys.exit(main())
