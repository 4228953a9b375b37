"""Generated scanned-looking bundles with their ground truth: what is missing, repeated, blank or out of order.

Each bundle numbers one or two documents ("Page 3 of 10", "3/10" or "- 3 -"), drawn into the scan's pixels and,
when the bundle is searchable, also as invisible text the way OCR'd scans carry it. Deterministic: a
seed makes the same bytes.
"""

import io
import random
from dataclasses import dataclass, field
from pathlib import Path

import pikepdf
from pikepdf import Dictionary, Name
from PIL import Image, ImageChops, ImageDraw, ImageFont

# A4 at 50 dpi: small enough to make and read quickly, large enough that a line of text is a line of pixels.
SCAN_SIZE = (413, 585)
PAGE_POINTS = (595, 842)
STYLES = {
    "page_of": lambda n, total: f"Page {n} of {total}",
    "slash": lambda n, total: f"{n}/{total}",
    "dash": lambda n, total: f"- {n} -",
}


@dataclass
class Sheet:
    """One page as generated: the printed number (0 for none), the document's total, what the sheet looks like."""

    printed: int
    total: int
    style: str = "page_of"
    scan: str = "page"  # "page", "blank" or "" (no scan: text only)
    rescan: int = 0  # > 0: the same sheet scanned again (another speckle seed)


@dataclass
class Bundle:
    name: str
    sheets: list[Sheet]
    searchable: bool
    truth: dict[str, list[tuple[int, ...]]] = field(default_factory=dict)  # kind -> PDF page sets, from 1


def scan_picture(sheet: Sheet, seed: int) -> Image.Image:
    rng = random.Random(seed * 7919 + sheet.rescan)
    image = Image.new("L", SCAN_SIZE, 246)
    draw = ImageDraw.Draw(image)
    if sheet.scan == "page":
        body = random.Random(sheet.printed * 31 + sheet.total)  # the sheet's own words: equal for a rescan
        for row in range(60, 520, 14):
            if body.random() < 0.85:
                draw.rectangle([40, row, 40 + body.randint(120, 330), row + 5], fill=body.randint(20, 70))
        font = ImageFont.load_default(size=14)
        draw.text((SCAN_SIZE[0] // 2 - 30, 555), STYLES[sheet.style](sheet.printed, sheet.total), fill=20, font=font)
    for _ in range(40):  # the scanner's speckle, and a rescan's shift of it
        x, y = rng.randrange(SCAN_SIZE[0]), rng.randrange(SCAN_SIZE[1])
        draw.point((x, y), fill=rng.randint(120, 200))
    if sheet.rescan:  # fed again: shifted by a few pixels, a little lighter
        image = ImageChops.offset(image, 3 * sheet.rescan, 2 * sheet.rescan).point(lambda v: min(255, v + 6))
    return image


def page_text(sheet: Sheet) -> bytes:
    lines = [f"Claim form section {sheet.printed}", "Statement of the insured party"] if sheet.scan != "blank" else []
    if sheet.printed and sheet.scan != "blank":
        lines.append(STYLES[sheet.style](sheet.printed, sheet.total))
    ops = [b"BT /F1 10 Tf"]
    for index, line in enumerate(lines):
        y = 780 - 20 * index if index < len(lines) - 1 else 30
        ops.append(f"1 0 0 1 72 {y} Tm ({line}) Tj".encode())
    return b"\n".join([*ops, b"ET"])


def write_bundle(bundle: Bundle, path: Path, seed: int = 1) -> Path:
    pdf = pikepdf.Pdf.new()
    font = pdf.make_indirect(Dictionary(Type=Name.Font, Subtype=Name.Type1, BaseFont=Name.Helvetica))
    scans: dict[tuple[int, int, str, int], pikepdf.Object] = {}
    for sheet in bundle.sheets:
        content, xobjects = b"", Dictionary()
        if sheet.scan:
            key = (sheet.printed, sheet.total, sheet.scan, sheet.rescan)
            if key not in scans:  # a sheet repeated by the feeder: the same bytes, stored once
                scans[key] = image_xobject(pdf, scan_picture(sheet, seed))
            xobjects = Dictionary(Scan=scans[key])
            content = f"q {PAGE_POINTS[0]} 0 0 {PAGE_POINTS[1]} 0 0 cm /Scan Do Q\n".encode()
        if bundle.searchable or not sheet.scan:
            content += b"3 Tr\n" if sheet.scan else b""
            content += page_text(sheet)
        page = pdf.add_blank_page(page_size=PAGE_POINTS)
        page.Resources = Dictionary(XObject=xobjects, Font=Dictionary(F1=font))
        page.Contents = pdf.make_stream(content)
    pdf.save(path, deterministic_id=True)
    return path


def image_xobject(pdf: pikepdf.Pdf, picture: Image.Image) -> pikepdf.Object:
    data = io.BytesIO()
    picture.save(data, "JPEG", quality=60)
    stream = pikepdf.Stream(pdf, data.getvalue())
    stream.Type, stream.Subtype, stream.Filter = Name.XObject, Name.Image, Name.DCTDecode
    stream.Width, stream.Height = picture.size
    stream.ColorSpace, stream.BitsPerComponent = Name.DeviceGray, 8
    return pdf.make_indirect(stream)


def damaged(name: str, total: int, rng: random.Random, searchable: bool, style: str = "page_of") -> Bundle:
    """One document of `total` sheets with one of each damage (removed, repeated, blank, swapped, without scan)."""
    sheets = [Sheet(n, total, style) for n in range(1, total + 1)]
    bundle = Bundle(name, sheets, searchable)
    cut, repeat, blank, swap, bare = sorted(rng.sample(range(3, total - 2), 5))
    plan = sorted([(cut, "cut"), (repeat, "repeat"), (blank, "blank"), (swap, "swap"), (bare, "bare")], reverse=True)
    for at, damage in plan:  # from the end, so each index still means its sheet
        index = at - 1
        if damage == "cut":
            del sheets[index]
        elif damage == "repeat":
            sheets.insert(index + 1, Sheet(at, total, style, rescan=rng.choice([0, 1])))
        elif damage == "blank":
            sheets.insert(index + 1, Sheet(0, total, style, scan="blank"))
        elif damage == "swap":
            sheets[index], sheets[index + 1] = sheets[index + 1], sheets[index]
        else:
            sheets[index] = Sheet(at, total, style, scan="")
    bundle.truth = truth_of(sheets)
    return bundle


def truth_of(sheets: list[Sheet]) -> dict[str, list[tuple[int, ...]]]:
    """Ground truth read back from the sheets as placed: what a perfect reviewer would flag, by PDF page."""
    truth: dict[str, list[tuple[int, ...]]] = {kind: [] for kind in ("missing_page", "out_of_order", "repeated_page")}
    truth |= {"blank_page": [], "no_scan": []}
    numbered = [(index + 1, s) for index, s in enumerate(sheets) if s.printed]
    seen = {s.printed for _, s in numbered}
    for n in sorted(set(range(1, sheets[0].total + 1)) - seen):
        around = tuple(p for p, s in numbered if s.printed in (n - 1, n + 1))
        truth["missing_page"].append(around)
    for (p, a), (q, b) in zip(numbered, numbered[1:]):
        if b.printed < a.printed:
            truth["out_of_order"].append((p, q))
        if b.printed == a.printed:
            truth["repeated_page"].append((p, q))
    truth["blank_page"] = [(index + 1,) for index, s in enumerate(sheets) if s.scan == "blank"]
    truth["no_scan"] = [(index + 1,) for index, s in enumerate(sheets) if not s.scan]
    return truth


def corpus(directory: Path, seed: int = 35) -> list[tuple[Path, Bundle]]:
    """Fifteen damaged bundles (nine searchable, six image-only, each numbering style both ways) and two clean ones."""
    rng = random.Random(seed)
    made = []
    for index in range(12):
        style = list(STYLES)[index % 3]
        bundle = damaged(f"damaged-{index:02d}", rng.randint(14, 30), rng, searchable=index % 4 != 3, style=style)
        made.append(bundle)
    for index in range(2):
        clean = Bundle(f"clean-{index}", [Sheet(n, 20) for n in range(1, 21)], searchable=True)
        clean.truth = truth_of(clean.sheets)
        made.append(clean)
    for index in range(12, 15):  # three more image-only ones, for OCR: after the others, which stay as they were
        style = list(STYLES)[index % 3]
        made.append(damaged(f"damaged-{index:02d}", rng.randint(14, 30), rng, searchable=False, style=style))
    directory.mkdir(parents=True, exist_ok=True)
    return [(write_bundle(b, directory / f"{b.name}.pdf", seed + i), b) for i, b in enumerate(made)]


def long_bundle(path: Path, pages: int = 240) -> Path:
    """A cheap 240-page text bundle (no scans to make or extract), printed page 4 missing and printed page 6 twice,
    for the browser walk through the suggestions."""
    sheets = [Sheet(n, pages, scan="") for n in range(1, pages + 1)]
    del sheets[3]  # printed page 4 missing between PDF pages 3 and 4
    sheets.insert(5, Sheet(6, pages, scan=""))  # printed page 6 twice (PDF pages 5 and 6)
    return write_bundle(Bundle("long", sheets, searchable=True), path)
