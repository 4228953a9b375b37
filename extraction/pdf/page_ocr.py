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

from .errors import Refusal
from .limits import Limits

# Where printed numbers sit: the top and bottom eighth of the page (a footer 20 mm up an A4 page is inside it).
BAND = 0.125
# About 216 dpi: at 144 dpi a 50 dpi scan's "2/12" was read "W12" and "- 2 -" "ee ee"; at 288 no better, and slower.
OCR_SCALE = 3.0
# A scan's JPEG blocks and speckle, enlarged, break a digit's strokes: a blur of half a point joins them and the
# threshold makes them black again. On the evaluation corpus this took misread numbers from 8 in 36 to none (two
# left unread), where a threshold alone made it worse (24) and a blur alone left one read wrong.
BLUR_RADIUS = 1.5
INK_THRESHOLD = 170
# One block of text per band pair: the default page segmentation looks for columns in a strip and finds none.
CONFIG = "--psm 6"
GAP = 40  # paper between the head and the foot, so Tesseract reads them as two lines
UNAVAILABLE, READ = "unavailable", "read"
# Tesseract's OpenMP threads would each take a core the child's CPU limit does not see.
os.environ.setdefault("OMP_THREAD_LIMIT", "1")


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
    """What is left of the command's CPU and wall limits for Tesseract, whose CPU is its own process's (a child's)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.wall_end = time.monotonic() + limits.wall_seconds
        self.cpu_end = cpu_used() + limits.cpu_seconds

    def seconds_left(self) -> float:
        left = min(self.wall_end - time.monotonic(), self.cpu_end - cpu_used())
        if left <= 0:
            raise Refusal(
                "timeout",
                f"Reading the page numbers drawn into the scans passed the {self.limits.cpu_seconds} s CPU or "
                f"{self.limits.wall_seconds} s wall limit.",
            )
        return left


def cpu_used() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def band_text(page: Any, budget: Budget) -> str:
    """The text Tesseract reads in the page's head and foot (head first), within what is left of the budget."""
    import pytesseract

    try:
        text: str = pytesseract.image_to_string(bands(page), config=CONFIG, timeout=budget.seconds_left())
    except RuntimeError as exc:  # pytesseract's "Tesseract process timeout": it has killed the process
        if "timeout" in str(exc).lower():
            budget.seconds_left()
            raise Refusal("timeout", "Tesseract did not finish reading a page within the limits.") from None
        raise
    return text


def bands(page: Any) -> Image.Image:
    """The head and foot of the page at OCR_SCALE, one above the other with a strip of paper between."""
    width, height = page.get_size()
    band = BAND * height
    head, foot = render(page, (0, height - band, 0, 0)), render(page, (0, 0, 0, height - band))
    both = Image.new("L", (head.width, head.height + GAP + foot.height), 255)
    both.paste(head, (0, 0))
    both.paste(foot, (0, head.height + GAP))
    smooth = both.filter(ImageFilter.GaussianBlur(BLUR_RADIUS))
    return smooth.point(lambda value: 0 if value < INK_THRESHOLD else 255)


def render(page: Any, crop: tuple[float, float, float, float]) -> Image.Image:
    bitmap = page.render(
        scale=OCR_SCALE, grayscale=True, crop=crop, may_draw_forms=False, fill_color=(255, 255, 255, 255)
    )
    try:
        picture: Image.Image = bitmap.to_pil()
        return picture.convert("L")
    finally:
        bitmap.close()
