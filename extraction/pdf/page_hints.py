"""Pages to look at first: the evidence of every page (page_evidence.py) turned into suggestions, each with its proof.

Suggestions, not verdicts: a reviewer confirms or dismisses each. Kinds, and what shows them:
- missing_page: a gap in a document's printed numbering ("Page 3 of 10" then "Page 5 of 10");
- out_of_order: a printed number lower than the one before it in the same document;
- repeated_page: the same scan bytes, a neighbouring scan that looks the same, or one printed number twice;
- blank_page: a scan with almost no ink;
- no_scan: a page without the scan most pages of the bundle have.
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from .page_evidence import PageEvidence
from .page_ocr import OUT_OF_TIME, READ

KINDS = ("missing_page", "out_of_order", "repeated_page", "blank_page", "no_scan")
# Below this share of ink a scan is a blank sheet: a printed page number alone darkens about 0.3%, a line of text
# more than 1% (measured on the evaluation corpus, bench/review_hints.py).
BLANK_INK = 0.002
# Neighbouring scans whose thumbnails differ by less than this show the same sheet: a rescan (shifted, lighter)
# differs by under 0.03, two different text pages by 0.05 or more (the evaluation corpus: a thin margin).
NEAR_CHANGE = 0.04
# A document's numbering is trusted when at least this share of its numbers is printed on its pages: one text page
# in a bundle of unread scans says nothing of the others.
NUMBERED_SHARE = 0.5
# A bundle is "of scans" when this share of its pages are; the rest then lack the scan.
SCANNED_SHARE = 0.8


@dataclass(frozen=True)
class Hint:
    """One suggestion: its kind, the PDF pages it is about (from 1), and the evidence a reviewer reads."""

    kind: str
    pages: tuple[int, ...]
    evidence: str


def hints(pages: list[PageEvidence]) -> list[Hint]:
    """Every suggestion for the bundle whose pages these are, in the order of the pages they name."""
    found = [*numbering(pages), *repeated_scans(pages), *blank_scans(pages), *without_scan(pages)]
    return sorted(found, key=lambda hint: (hint.pages, KINDS.index(hint.kind)))


def documents(pages: list[PageEvidence]) -> Iterator[list[PageEvidence]]:
    """The runs of printed pages that number one document: a new one starts at a changed total, or at a "1"."""
    run: list[PageEvidence] = []
    for page in (p for p in pages if p.printed):
        if run and (page.printed_total != run[-1].printed_total or (page.printed == 1 and run[-1].printed != 1)):
            yield run
            run = []
        run.append(page)
    if run:
        yield run


def numbering(pages: list[PageEvidence]) -> Iterator[Hint]:
    for document in documents(pages):
        if not trusted(document):
            continue
        yield from gaps(document, pages)
        yield from disorder(document)
        yield from repeated_numbers(document)


def trusted(document: list[PageEvidence]) -> bool:
    """Two numbers at least, covering NUMBERED_SHARE of the total printed (or of the span seen without one)."""
    numbers = {page.printed for page in document}
    span = document[0].printed_total or (max(numbers) - min(numbers) + 1)
    return len(numbers) >= 2 and len(numbers) >= NUMBERED_SHARE * span


def of_total(page: PageEvidence) -> str:
    return f" of {page.printed_total}" if page.printed_total else ""


def gaps(document: list[PageEvidence], pages: list[PageEvidence]) -> Iterator[Hint]:
    """Printed numbers the document should have and does not (1..total, or the span seen when no total is printed),
    unless scans OCR could not read lie where they would be: the numbers are likely on them."""
    by_number = {page.printed: page for page in document}
    seen = sorted(by_number)
    first, last = (1, document[0].printed_total) if document[0].printed_total else (seen[0], seen[-1])
    missing = [n for n in range(first, last + 1) if n not in by_number]
    for run in runs(missing):
        before, after = by_number.get(run[0] - 1), by_number.get(run[-1] + 1)
        around = [p.number for p in (before, after) if p]
        if not around or (before and after and unread_between(pages, before, after) >= len(run)):
            continue
        numbers = f"page {run[0]}" if len(run) == 1 else f"pages {run[0]}-{run[-1]}"
        verb = "is" if len(run) == 1 else "are"
        where = place(before, after)
        shown = "; ".join(f"PDF page {p.number}: {quoted(p)}" for p in (before, after) if p)
        yield Hint(
            "missing_page", tuple(around), f"printed {numbers}{of_total(document[0])} {verb} missing {where} ({shown})"
        )


def unread_between(pages: list[PageEvidence], before: PageEvidence, after: PageEvidence) -> int:
    """Inked scans between the two whose numbers OCR did not read. On the evaluation corpus every false gap OCR made
    was one of these ("- 7 -" unread between "- 6 -" and "- 8 -"), never a number read wrong."""
    between = pages[before.number : after.number - 1]
    return sum(1 for p in between if p.ocr in (READ, OUT_OF_TIME) and not p.printed and not blank(p))


def quoted(page: PageEvidence) -> str:
    """The line that shows a page's number, and whether OCR read it from the scan (a reviewer may doubt a digit)."""
    return f"\u201c{page.printed_text}\u201d" + (" (read by OCR)" if page.ocr == READ else "")


def place(before: PageEvidence | None, after: PageEvidence | None) -> str:
    if before and after:
        return f"between PDF pages {before.number} and {after.number}"
    return f"after PDF page {before.number}" if before else f"before PDF page {after.number}" if after else ""


def runs(numbers: list[int]) -> Iterator[list[int]]:
    run: list[int] = []
    for n in numbers:
        if run and n != run[-1] + 1:
            yield run
            run = []
        run.append(n)
    if run:
        yield run


def disorder(document: list[PageEvidence]) -> Iterator[Hint]:
    for previous, page in zip(document, document[1:]):
        if page.printed < previous.printed:
            yield Hint(
                "out_of_order",
                (page.number,),
                f"printed page {page.printed}{of_total(page)} (PDF page {page.number}) comes after printed page "
                f"{previous.printed} (PDF page {previous.number}): {quoted(page)}",
            )


def repeated_numbers(document: list[PageEvidence]) -> Iterator[Hint]:
    first: dict[int, PageEvidence] = {}
    for page in document:
        earlier = first.setdefault(page.printed, page)
        if earlier is not page and not same_scan(earlier, page):  # a repeated scan says it better, below
            yield Hint(
                "repeated_page",
                (earlier.number, page.number),
                f"printed page {page.printed}{of_total(page)} appears on PDF pages {earlier.number} and "
                f"{page.number}: {quoted(page)}",
            )


def same_scan(a: PageEvidence, b: PageEvidence) -> bool:
    return bool(a.scan_sha256) and (a.scan_sha256 == b.scan_sha256 or near(a, b))


def near(before: PageEvidence, page: PageEvidence) -> bool:
    """`page` looks like the page just before it (both scans, neither blank)."""
    return (
        page.number == before.number + 1
        and bool(before.scan_sha256 and page.scan_sha256)
        and 0 <= page.change < NEAR_CHANGE
        and not blank(before)
        and not blank(page)
    )


def repeated_scans(pages: list[PageEvidence]) -> Iterator[Hint]:
    """The same scan bytes anywhere in the bundle, or a near-identical neighbour (a feeder pulling a sheet twice)."""
    first: dict[str, PageEvidence] = {}
    for index, page in enumerate(pages):
        if not page.scan_sha256 or blank(page):
            continue
        earlier = first.setdefault(page.scan_sha256, page)
        if earlier is not page:
            yield Hint(
                "repeated_page",
                (earlier.number, page.number),
                f"PDF pages {earlier.number} and {page.number} hold the same scan "
                f"(sha256 {page.scan_sha256[:16]}\u2026)",
            )
        elif index and near(pages[index - 1], page):
            before = pages[index - 1]
            if not (before.printed and page.printed and before.printed != page.printed):  # numbered apart: different
                yield Hint(
                    "repeated_page",
                    (before.number, page.number),
                    f"PDF pages {before.number} and {page.number} look the same (their thumbnails differ by "
                    f"{page.change:.2%}; under {NEAR_CHANGE:.0%} is taken for one sheet fed twice)",
                )


def blank(page: PageEvidence) -> bool:
    return bool(page.scan_sha256) and page.ink < BLANK_INK


def blank_scans(pages: Iterable[PageEvidence]) -> Iterator[Hint]:
    for page in pages:
        if blank(page):
            yield Hint(
                "blank_page", (page.number,), f"PDF page {page.number} is a scan with {page.ink:.2%} of it inked"
            )


def without_scan(pages: list[PageEvidence]) -> Iterator[Hint]:
    scanned = sum(1 for page in pages if page.scan_sha256)
    if not pages or scanned == len(pages) or scanned < SCANNED_SHARE * len(pages):
        return
    for page in pages:
        if not page.scan_sha256:
            yield Hint(
                "no_scan",
                (page.number,),
                f"PDF page {page.number} has no scan, where {scanned} of the bundle's {len(pages)} pages have one",
            )
