"""The last revision of a PDF, found from its final `startxref`, not from the words near the end.

Whatever lies between the last two `%%EOF` markers must be that revision: objects, the
cross-reference section the pointer names, its trailer. A payload followed by a second marker (with
or without the words `xref` and `startxref` in it, however long) is not. Reads are bounded: a few
KiB at the sections, the final section itself (qpdf reads it anyway), and at most UPDATE_REACH
before it; only a file whose pointer leads nowhere is searched whole (qpdf rebuilds its
cross-reference table by reading it all anyway).

What readers skip is skipped here too: a `%%EOF` that is a stream's data (an embedded PDF or
PostScript file ends with one, right before `endstream`) is no marker of this file, comments are
nothing, and a revision may hold two sections chained by `/Prev` (a hybrid file's table and the
empty one naming its `/XRefStm`, as Acrobat writes them).
"""

import mmap
import re
from pathlib import Path

from .errors import Refusal

PADDING = b" \t\r\n\f\x00"
POINTER_BYTES = 256  # `startxref`, the offset and the line ends before the final %%EOF
POINTER = re.compile(rb"startxref\s*(\d{1,15})\s*\Z")
SECTION_BYTES = 4096  # the start of a section: `xref` or an xref stream's dictionary
XREF_STREAM = re.compile(rb"\s*\d+\s+\d+\s+obj\s*<<(?:(?!stream).){0,4000}?/Type\s*/XRef\b", re.S)
PREV = re.compile(rb"/Prev\s+(\d{1,15})\b")
GAP = re.compile(rb"(?:[ \t\r\n\f\x00]+|%[^\r\n]*)*")  # blanks and comments: nothing, to a reader
STREAM_END = re.compile(rb"[ \t\r\n\f\x00]*endstream\b")
TAIL_BYTES = 4096  # how far before a section the end of the revision's last object is looked for
REVISION_START = re.compile(rb"(?:\s|%[^\r\n]*)*(?:\d+\s+\d+\s+obj\b|xref\b)")
CROSS_REFERENCE = re.compile(rb"(?<![A-Za-z])xref\b|/XRef\b")
UPDATE_REACH = 1 << 20  # how far before a section without /Prev an earlier %%EOF is looked for
EOF = b"%%EOF"


def check_last_revision(path: str | Path, eof: int, header: int = 0) -> None:
    """Refuse (`trailing_data`) a file whose bytes before its final `%%EOF` at `eof` are not its last revision.

    `header`: where `%PDF-` starts; readers count offsets from there when bytes come before it."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as pdf:
        start = max(0, eof - POINTER_BYTES)
        pointer = POINTER.search(pdf[start:eof])
        named = int(pointer[1]) + header if pointer else -1
        if pointer is None or not _is_section(pdf, named, start + pointer.start()):
            return _check_unlocated(pdf, eof)
        _check_located(pdf, named, start + pointer.start(), header)


def _check_located(pdf: mmap.mmap, named: int, pointer_at: int, header: int) -> None:
    prev = _prev(pdf, named, pointer_at, header)
    # A linearized file's pointer names its first-page section, whose /Prev is the main one, later on.
    last = prev if prev is not None and named < prev < pointer_at and _is_section(pdf, prev, pointer_at) else named
    if pdf.find(EOF, last, pointer_at) >= 0:
        raise _refusal(
            "its final startxref names the cross-reference section of an earlier revision, "
            "so what follows that revision's end-of-file marker is not an update"
        )
    before = prev if last == named else _prev(pdf, last, pointer_at, header)
    reach = max(0, last - UPDATE_REACH)
    previous = _previous_marker(pdf, min(reach, before) if before is not None and before < last else reach, last)
    first = _first_section(pdf, last, before, previous, pointer_at, header)
    if previous >= 0 and not _is_revision(pdf, previous + len(EOF), first):
        raise _refusal("the bytes between its last two end-of-file markers are not the objects of an update")


def _previous_marker(pdf: mmap.mmap, start: int, end: int) -> int:
    """The last `%%EOF` in [start, end) that ends a revision, -1 if none: one right before `endstream` is data."""
    at = pdf.rfind(EOF, start, end)
    while at >= 0 and STREAM_END.match(pdf, at + len(EOF)):
        at = pdf.rfind(EOF, start, at)
    return at


def _first_section(pdf: mmap.mmap, last: int, before: int | None, previous: int, pointer_at: int, header: int) -> int:
    """The first of the last revision's sections: `last`, or the section its `/Prev` names after the
    previous marker when nothing but that section's own table and trailer lies between the two."""
    section = last
    while (
        before is not None
        and previous < before < section
        and _is_section(pdf, before, section)
        and _ends_a_section(pdf, before, section)
    ):
        section, before = before, _prev(pdf, before, pointer_at, header)
    return section


def _ends_a_section(pdf: mmap.mmap, section: int, following: int) -> bool:
    """Whether the bytes before `following` end the section at `section`: a trailer's `>>`, or a stream's `endobj`."""
    end = max(pdf.rfind(b">>", section, following), pdf.rfind(b"endobj", section, following))
    if end < 0:
        return False
    end += 2 if pdf[end : end + 2] == b">>" else len(b"endobj")
    return _gap_end(pdf, end, following) == following


def _check_unlocated(pdf: mmap.mmap, eof: int) -> None:
    """The pointer is missing or leads nowhere (qpdf will rebuild the table): an earlier marker then
    must at least be followed by something that starts like a revision and has its keywords."""
    previous = _previous_marker(pdf, 0, eof)
    if previous < 0:
        return
    after = previous + len(EOF)
    if not (
        REVISION_START.match(pdf, after, eof)
        and CROSS_REFERENCE.search(pdf, after, eof)
        and pdf.find(b"startxref", after, eof) >= 0
    ):
        raise _refusal("the bytes between its last two end-of-file markers are not an incremental update")


def _is_section(pdf: mmap.mmap, at: int, limit: int) -> bool:
    if not 0 <= at < limit:
        return False
    head = pdf[at : min(at + SECTION_BYTES, limit)]
    return head.lstrip(PADDING).startswith(b"xref") or XREF_STREAM.match(head) is not None


def _prev(pdf: mmap.mmap, at: int, limit: int, header: int) -> int | None:
    """The /Prev of the section at `at`: in its trailer (a table) or its dictionary (a stream)."""
    head = pdf[at : min(at + SECTION_BYTES, limit)]
    if head.lstrip(PADDING).startswith(b"xref"):
        trailer = pdf.find(b"trailer", at, limit)
        head = pdf[trailer : min(trailer + SECTION_BYTES, limit)] if trailer >= 0 else b""
    head = head.split(b"startxref", 1)[0].split(b"stream", 1)[0]
    found = PREV.search(head)
    return int(found[1]) + header if found else None


def _is_revision(pdf: mmap.mmap, start: int, end: int) -> bool:
    """Nothing, or objects from the first byte to the last `endobj` (blanks and comments around them)."""
    if _gap_end(pdf, start, end) == end:
        return True
    last = pdf.rfind(b"endobj", max(start, end - TAIL_BYTES), end)
    return (
        bool(REVISION_START.match(pdf, start, end)) and last >= 0 and _gap_end(pdf, last + len(b"endobj"), end) == end
    )


def _gap_end(pdf: mmap.mmap, start: int, end: int) -> int:
    """Where the blanks and comments from `start` end (GAP matches nothing at all too, so it always matches)."""
    gap = GAP.match(pdf, start, end)
    return gap.end() if gap else start


def _refusal(why: str) -> Refusal:
    return Refusal("trailing_data", f"The file has data appended after a PDF end-of-file marker: {why}.")
