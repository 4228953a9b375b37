"""Page previews inside the child: PDFium renders each page to an image fitted to fixed widths.

PDFium is a second parser of the same hostile bytes, so it runs only here, under the child's
limits; it is imported inside `render` so that the web and worker processes never load it.
"""

import hashlib
import io
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image, ImageChops

from .errors import Refusal, raise_if_out_of_memory, reason
from .extract import write_atomically
from .limits import Limits

# A tall page (a receipt, a long form) is fitted into a box this many widths high, so a
# thumbnail stays a thumbnail and the bitmap's size is bounded whatever the page declares.
MAX_ASPECT = 4
# Keeps ceil(points * scale) from landing one pixel past the box on a float rounding error.
SHRINK = 1 - 1e-9
# Small text stays legible in the large view at this quality.
JPEG_QUALITY = 85
CONTENT_TYPES = {"png": "image/png", "jpg": "image/jpeg"}
PREVIEW_FILE = re.compile(r"p(?P<page>\d{5})-w(?P<width>\d+)\.(?:png|jpg)")


def preview_filename(number: int, max_width: int, extension: str) -> str:
    """A page preview's file name: `p00001-w200.png` (page 1 fitted to 200 px)."""
    return f"p{number:05d}-w{max_width}.{extension}"


def preview_page(filename: str) -> tuple[int, int] | None:
    """(page, width) of a preview's file name, None for any other name."""
    match = PREVIEW_FILE.fullmatch(filename)
    return (int(match["page"]), int(match["width"])) if match else None


@dataclass(frozen=True)
class RenderedPage:
    """One page at one size: `max_width` is the box it was fitted into, width x height what it got."""

    number: int
    max_width: int
    filename: str
    content_type: str
    sha256: str
    size: int
    width: int
    height: int


@dataclass(frozen=True)
class Rendering:
    pages: int
    images: list[RenderedPage] = field(default_factory=list)


@contextmanager
def opened(path: str | Path, limits: Limits) -> Iterator[tuple[Any, int]]:
    """The PDF at `path` opened by PDFium, with its page count: refused if PDFium cannot open it or it has more
    pages than the limit (previews and page evidence read pages the same way)."""
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        raise Refusal("unreadable", f"The PDF renderer cannot open the file ({reason(exc)}).") from None
    with document:
        count = len(document)
        if count > limits.max_pages:
            raise Refusal("too_many_pages", f"The PDF has {count} pages; the limit is {limits.max_pages}.")
        yield document, count


def render(
    path: str | Path, out_dir: str | Path, widths: list[int], first: int, last: int, limits: Limits
) -> Rendering:
    """Render pages first..last (from 1, clipped to the document) at every width in `widths`."""
    with opened(path, limits) as (document, count):
        images = []
        for number in range(max(first, 1), min(last, count) + 1):
            images += render_page(document, number, widths, Path(out_dir))
    return Rendering(pages=count, images=images)


def render_page(document: Any, number: int, widths: list[int], out_dir: Path) -> list[RenderedPage]:
    page = document[number - 1]
    try:
        points = page.get_size()
        if not all(math.isfinite(p) and p > 0 for p in points):
            raise Refusal("bad_page_size", f"Page {number} declares an impossible size {points}.")
        pictures = [fitted(page, points, width) for width in widths]
    except Refusal:
        raise
    except Exception as exc:
        raise_if_out_of_memory(exc)
        raise Refusal("render_failed", f"Page {number} could not be rendered ({reason(exc)}).") from None
    finally:
        page.close()
    # Outside the try: a full disk is this machine's failure (io_error), not the page's.
    return [store(picture, number, width, out_dir) for picture, width in zip(pictures, widths)]


def fitted(page: Any, points: tuple[float, float], width: int) -> Image.Image:
    scale = min(width / points[0], width * MAX_ASPECT / points[1]) * SHRINK
    # Fixed flags and an opaque white ground: the same page gives the same pixels every time.
    bitmap = page.render(
        scale=scale,
        rev_byteorder=True,
        draw_annots=True,
        may_draw_forms=False,
        limit_image_cache=True,
        fill_color=(255, 255, 255, 255),
    )
    try:
        picture: Image.Image = bitmap.to_pil()  # pypdfium2 has no types
        return picture.convert("RGB")
    finally:
        bitmap.close()


def store(image: Image.Image, number: int, max_width: int, out_dir: Path) -> RenderedPage:
    data, extension = encoded(image)
    filename = preview_filename(number, max_width, extension)
    write_atomically(out_dir / filename, data)
    return RenderedPage(
        number=number,
        max_width=max_width,
        filename=filename,
        content_type=CONTENT_TYPES[extension],
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        width=image.width,
        height=image.height,
    )


def encoded(image: Image.Image) -> tuple[bytes, str]:
    """The smaller of PNG and JPEG: a text page is several times smaller as PNG, a scanned
    page several times smaller as JPEG. Neither carries a timestamp: bytes depend on the pixels alone."""
    if not any(ImageChops.difference(image.getchannel(0), image.getchannel(c)).getbbox() for c in (1, 2)):
        image = image.convert("L")  # a colourless page: a third of the pixels to compress
    png, jpeg = io.BytesIO(), io.BytesIO()
    image.save(png, "PNG", compress_level=6)
    image.save(jpeg, "JPEG", quality=JPEG_QUALITY)
    return min((png.getvalue(), "png"), (jpeg.getvalue(), "jpg"), key=lambda choice: len(choice[0]))
