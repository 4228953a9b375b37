"""Printed page numbers drawn into a scan, read by Tesseract (pytesseract) from a page's top and bottom bands.

Runs in the limited child beside page_evidence.py. Tesseract is a Debian package (`tesseract-ocr`), not a wheel: a
machine without it reads no scan, and says so on each page it would have read, rather than failing the hints.
"""

import os
import resource
import time
from functools import cache
from typing import Any

from PIL import Image, ImageFilter

from .limits import Limits

# Where printed numbers sit: the top and bottom eighth of the page (a footer 20 mm up an A4 page is inside it).
BAND = 0.125
# About 216 dpi: at 144 dpi a 50 dpi scan's "2/12" was read "W12" and "- 2 -" "ee ee"; at 288 no better, and slower.
OCR_SCALE = 3.0
MAX_WIDTH = 2600  # pixels: a poster-sized page is read no wider than an A3 sheet at OCR_SCALE
# A scan's JPEG blocks and speckle, enlarged, break a digit's strokes: a blur of half a point joins them and the
# threshold makes them black again. On the evaluation corpus this took misread numbers from 8 in 36 to none (two
# left unread), where a threshold alone made it worse (24) and a blur alone left one read wrong.
BLUR_RADIUS = 1.5
INK_THRESHOLD = 170
# One block of text per band pair: the default page segmentation looks for columns in a strip and finds none.
CONFIG = "--psm 6"
GAP = 40  # paper between the head and the foot, so Tesseract reads them as two lines
UNAVAILABLE, READ, OUT_OF_TIME = "unavailable", "read", "out_of_time"
# OCR may spend half of the command's CPU and wall limits: a 2000-page scanned bundle at about 0.1 s a page would
# otherwise take all of them, and its hints (blank and repeated scans need no OCR) would be lost with it.
OCR_SHARE = 0.5
MIN_SECONDS = 0.5  # less than this left is not enough for one page: stop asking


@cache
def available() -> bool:
    """Whether the `tesseract` binary answers here (asked once per child)."""
    try:
        import pytesseract

        pytesseract.get_tesseract_version()
    except (ImportError, OSError, RuntimeError, ValueError):  # TesseractNotFoundError is an OSError
        return False
    return True


class Budget:
    """OCR's share of the command's CPU and wall limits. Tesseract runs as a process of its own, so its CPU is counted
    from the child's children; past the share the remaining scans are not read, and the rest of the evidence still
    fits in the limits."""

    def __init__(self, limits: Limits) -> None:
        self.wall_end = time.monotonic() + OCR_SHARE * limits.wall_seconds
        self.cpu_end = cpu_used() + OCR_SHARE * limits.cpu_seconds

    def seconds_left(self) -> float:
        return min(self.wall_end - time.monotonic(), self.cpu_end - cpu_used())


def cpu_used() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def band_text(page: Any, budget: Budget) -> str | None:
    """The text Tesseract reads in the page's head and foot (head first); None once OCR's share of the limits is
    spent (a run cut short by it is killed by pytesseract)."""
    import pytesseract

    # Set here, in the child only, for the Tesseract it starts: OpenMP threads would each take a core of the machine.
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    left = budget.seconds_left()
    if left <= MIN_SECONDS:
        return None
    try:
        text: str = pytesseract.image_to_string(bands(page), config=CONFIG, timeout=left)
    except pytesseract.TesseractError:
        return ""  # Tesseract could not read this page's bands: no number, as for a scan without one
    except RuntimeError as exc:
        if "timeout" in str(exc).lower():  # pytesseract's "Tesseract process timeout"
            return None
        raise
    return text


def bands(page: Any) -> Image.Image:
    """The head and foot of the page at OCR_SCALE, one above the other with a strip of paper between."""
    width, height = page.get_size()
    band, scale = BAND * height, min(OCR_SCALE, MAX_WIDTH / width)
    head, foot = render(page, scale, (0, height - band, 0, 0)), render(page, scale, (0, 0, 0, height - band))
    both = Image.new("L", (head.width, head.height + GAP + foot.height), 255)
    both.paste(head, (0, 0))
    both.paste(foot, (0, head.height + GAP))
    smooth = both.filter(ImageFilter.GaussianBlur(BLUR_RADIUS))
    return smooth.point(lambda value: 0 if value < INK_THRESHOLD else 255)


def render(page: Any, scale: float, crop: tuple[float, float, float, float]) -> Image.Image:
    bitmap = page.render(scale=scale, grayscale=True, crop=crop, may_draw_forms=False, fill_color=(255, 255, 255, 255))
    try:
        picture: Image.Image = bitmap.to_pil()
        return picture.convert("L")
    finally:
        bitmap.close()
