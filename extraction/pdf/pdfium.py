"""Bilevel codecs no standard file holds as PDF writes them (JBIG2, CCITT Group 3, byte-aligned
CCITT), decoded by PDFium.

The image is copied alone (with its /JBIG2Globals and /DecodeParms, without masks) into a one-page
PDF made in memory, and PDFium hands back its decoded bitmap, unrendered: one pixel per sample, the
/Decode array applied. pypdfium2 is imported here, on the first such image only (see render.py).
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import pikepdf

if TYPE_CHECKING:
    from PIL import Image

from .values import is_true

PAGE_IMAGE = b"q %d 0 0 %d 0 0 cm /Im0 Do Q"
DROPPED = ("/SMask", "/Mask", "/Alternates", "/OC", "/Metadata")


def decoded_bitmap(image: pikepdf.Stream, width: int, height: int) -> Image.Image:
    """The image as a Pillow picture of mode "1": black where the PDF paints black (or paints, for
    a stencil mask), white elsewhere."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    with pdfium.PdfDocument(_alone(image, width, height)) as document:
        page = document[0]
        found = next(iter(page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=1)), None)
        if found is None:
            raise ValueError("PDFium found no image to decode")
        picture: Image.Image = found.get_bitmap(render=False).to_pil()  # pypdfium2 has no types
    if picture.size != (width, height):
        raise ValueError(f"PDFium decoded {picture.size[0]} x {picture.size[1]} pixels, not {width} x {height}")
    # A stencil comes back as coverage (255 where it paints); painted is written black, see samples.py.
    painted_is_black = not is_true(image.get("/ImageMask"))
    return picture.convert("L").point(lambda v: 255 if (v >= 128) == painted_is_black else 0).convert("1")


def _alone(image: pikepdf.Stream, width: int, height: int) -> bytes:
    pdf = pikepdf.Pdf.new()
    copy = pdf.copy_foreign(image)
    for key in DROPPED:
        if key in copy:
            del copy[key]
    page = pdf.add_blank_page(page_size=(width, height))
    page.obj.Resources = pikepdf.Dictionary(XObject=pikepdf.Dictionary(Im0=copy))
    page.obj.Contents = pdf.make_stream(PAGE_IMAGE % (width, height))
    buffer = io.BytesIO()
    pdf.save(buffer)
    return buffer.getvalue()
