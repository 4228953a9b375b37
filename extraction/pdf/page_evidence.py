"""What each page shows of its own place in a bundle, read in the child: printed numbers, labels, ink and scans.

Like render.py it opens the input with PDFium, so it runs only in the limited child. A scan without text (an
image-only page) has its number read by OCR when Tesseract is installed (page_ocr.py); without it the page says so
and still gets its ink, scan and hashes.
"""

import hashlib
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, ImageChops, ImageStat

from .errors import Refusal, raise_if_out_of_memory, reason
from .limits import Limits
from .page_ocr import OUT_OF_TIME, READ, UNAVAILABLE, Budget, available, band_text
from .render import opened

# Printed numbering as bundles carry it, in the order tried on each line of a page's head and foot.
PRINTED = (
    re.compile(r"\bpage\s+(\d{1,5})\s*(?:of|/)\s*(\d{1,5})\b", re.IGNORECASE),
    re.compile(r"^\s*(\d{1,5})\s*/\s*(\d{1,5})\s*$"),
    re.compile(r"^\s*[-\u2013\u2014]\s*(\d{1,5})\s*[-\u2013\u2014]\s*$()"),
    re.compile(r"^\s*page\s+(\d{1,5})\s*$()", re.IGNORECASE),
)
# Page numbers sit in the first or last lines; a "3/10" inside the body (a date, a ratio) is not one.
EDGE_LINES = 3
# The small rendering judged for ink and hashed: 96 px wide keeps a 240-page bundle under a second of PDFium
# while a printed line of text still darkens a few dozen pixels.
PROBE_WIDTH = 96
INK_LEVEL = 160  # a grey darker than this is ink, lighter is paper (and a scanner's speckle)
# An image covering this much of the page is a scan of the sheet, not a logo or a signature.
SCAN_COVER = 0.5
# Neighbouring pages are compared as 32 px wide thumbnails: a rescan's speckle and a shift of a few pixels average
# out, a different sheet's lines do not. (A 16 x 16 difference hash did not part them: different text pages lay 4
# bits apart, rescans up to 6; measured on the evaluation corpus.)
THUMB_WIDTH = 32


@dataclass(frozen=True)
class PageEvidence:
    """One page: its printed number (and total, 0 if none printed), the text that shows them, its label, the share
    of its probe's pixels that are ink, the sha256 of the scan covering it (if any), and how much it differs from the
    page before it (the mean difference of their thumbnails, 0 to 1; -1 for a first page or a different shape).
    `ocr` says whether an image-only page's number was looked for by OCR: "read", "unavailable" (no Tesseract
    here), "out_of_time" (OCR's share of the limits was spent), or "" (not needed: the page has text, or no scan)."""

    number: int
    printed: int = 0
    printed_total: int = 0
    printed_text: str = ""
    label: str = ""
    ink: float = 0.0
    scan_sha256: str = ""
    change: float = -1.0
    ocr: str = ""


def read_evidence(path: str | Path, limits: Limits) -> list[PageEvidence]:
    """The evidence of every page of the PDF at `path`, in order."""
    with opened(path, limits) as (document, count):
        found, previous, budget = [], None, Budget(limits)
        for number in range(1, count + 1):
            evidence, thumbnail = page_evidence(document, number, previous, budget)
            found.append(evidence)
            previous = thumbnail
        return found


def page_evidence(
    document: Any, number: int, previous: Image.Image | None, budget: Budget
) -> tuple[PageEvidence, Image.Image]:
    page = document[number - 1]
    try:
        scan = scan_sha256(page)
        printed, total, shown, ocr = numbering(page, scan, budget)
        probe = probe_of(page)
        thumbnail = probe.resize((THUMB_WIDTH, max(1, round(THUMB_WIDTH * probe.height / probe.width))))
        evidence = PageEvidence(
            number=number,
            printed=printed,
            printed_total=total,
            printed_text=shown,
            label=str(document.get_page_label(number - 1) or ""),
            ink=ink(probe),
            scan_sha256=scan,
            change=change(previous, thumbnail),
            ocr=ocr,
        )
        return evidence, thumbnail
    except Refusal:
        raise
    except Exception as exc:
        raise_if_out_of_memory(exc)
        raise Refusal("hints_failed", f"Page {number} could not be read for hints ({reason(exc)}).") from None
    finally:
        page.close()


def numbering(page: Any, scan: str, budget: Budget) -> tuple[int, int, str, str]:
    """The page's printed number, total and line (printed_number), and how OCR took part (PageEvidence.ocr)."""
    text = page_text(page)
    if not scan or text.strip():
        return (*printed_number(text), "")
    if not available():  # image-only, and nothing here reads the number its scan may show
        return 0, 0, "", UNAVAILABLE
    read = band_text(page, budget)
    return (*printed_number(read), READ) if read is not None else (0, 0, "", OUT_OF_TIME)


def page_text(page: Any) -> str:
    textpage = page.get_textpage()
    try:
        return str(textpage.get_text_range())
    finally:
        textpage.close()


def printed_number(text: str) -> tuple[int, int, str]:
    """(number, total or 0, the line showing them) from a page's head or foot; (0, 0, "") when none is printed."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    edges = lines if len(lines) <= 2 * EDGE_LINES else lines[:EDGE_LINES] + lines[-EDGE_LINES:]
    for line in reversed(edges):  # a footer's number wins over a header's date
        for pattern in PRINTED:
            match = pattern.search(line)
            if match and 0 < int(match[1]) and (not match[2] or int(match[1]) <= int(match[2])):
                return int(match[1]), int(match[2] or 0), line[:120]
    return 0, 0, ""


def probe_of(page: Any) -> Image.Image:
    width, height = page.get_size()
    if not (math.isfinite(width) and math.isfinite(height) and width > 0 and height > 0):
        raise Refusal("bad_page_size", f"A page declares an impossible size {(width, height)}.")
    scale = min(PROBE_WIDTH / width, 4 * PROBE_WIDTH / height)
    bitmap = page.render(scale=scale, grayscale=True, may_draw_forms=False, fill_color=(255, 255, 255, 255))
    try:
        picture: Image.Image = bitmap.to_pil()
        return picture.convert("L")
    finally:
        bitmap.close()


def ink(probe: Image.Image) -> float:
    histogram = probe.histogram()
    return round(sum(histogram[:INK_LEVEL]) / max(1, probe.width * probe.height), 5)


def change(previous: Image.Image | None, thumbnail: Image.Image) -> float:
    if previous is None or previous.size != thumbnail.size:
        return -1.0
    return round(ImageStat.Stat(ImageChops.difference(previous, thumbnail)).mean[0] / 255, 5)


def scan_sha256(page: Any) -> str:
    """The sha256 of the stored bytes of the largest image covering most of the page; "" for a page without one."""
    import pypdfium2.raw as pdfium_c

    width, height = page.get_size()
    best: tuple[float, Any] | None = None
    for image in page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,), max_depth=2):
        left, bottom, right, top = image.get_bounds()
        cover = max(0.0, min(right, width) - max(left, 0.0)) * max(0.0, min(top, height) - max(bottom, 0.0))
        if cover >= SCAN_COVER * width * height and (best is None or cover > best[0]):
            best = (cover, image)
    if best is None:
        return ""
    return hashlib.sha256(bytes(best[1].get_data(decode_simple=False))).hexdigest()
