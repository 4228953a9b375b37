"""The last revision of a PDF, found from its final `startxref`, not from the words near the end.

Whatever lies between the last two `%%EOF` markers must be that revision: objects, the
cross-reference section the pointer names, its trailer. A payload followed by a second marker (with
or without the words `xref` and `startxref` in it, however long) is not. Reads are bounded: a few
KiB at the sections, the final section itself (qpdf reads it anyway), and at most UPDATE_REACH
before it; only a file whose pointer leads nowhere is searched whole (qpdf rebuilds its
cross-reference table by reading it all anyway).
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
BLANK = re.compile(rb"[ \t\r\n\f\x00]*")
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


def _check_located(pdf, named: int, pointer_at: int, header: int) -> None:
    prev = _prev(pdf, named, pointer_at, header)
    # A linearized file's pointer names its first-page section, whose /Prev is the main one, later on.
    last = prev if prev is not None and named < prev < pointer_at and _is_section(pdf, prev, pointer_at) else named
    if pdf.find(EOF, last, pointer_at) >= 0:
        raise _refusal("its final startxref names the cross-reference section of an earlier revision, "
                       "so what follows that revision's end-of-file marker is not an update")
    before = prev if last == named else _prev(pdf, last, pointer_at, header)
    reach = max(0, last - UPDATE_REACH)
    previous = pdf.rfind(EOF, min(reach, before) if before is not None and before < last else reach, last)
    if previous >= 0 and not _is_revision(pdf, previous + len(EOF), last):
        raise _refusal("the bytes between its last two end-of-file markers are not the objects of an update")


def _check_unlocated(pdf, eof: int) -> None:
    """The pointer is missing or leads nowhere (qpdf will rebuild the table): an earlier marker then
    must at least be followed by something that starts like a revision and has its keywords."""
    previous = pdf.rfind(EOF, 0, eof)
    if previous < 0:
        return
    after = previous + len(EOF)
    if not (REVISION_START.match(pdf, after, eof) and CROSS_REFERENCE.search(pdf, after, eof)
            and pdf.find(b"startxref", after, eof) >= 0):
        raise _refusal("the bytes between its last two end-of-file markers are not an incremental update")


def _is_section(pdf, at: int, limit: int) -> bool:
    if not 0 <= at < limit:
        return False
    head = pdf[at:min(at + SECTION_BYTES, limit)]
    return head.lstrip(PADDING).startswith(b"xref") or XREF_STREAM.match(head) is not None


def _prev(pdf, at: int, limit: int, header: int) -> int | None:
    """The /Prev of the section at `at`: in its trailer (a table) or its dictionary (a stream)."""
    head = pdf[at:min(at + SECTION_BYTES, limit)]
    if head.lstrip(PADDING).startswith(b"xref"):
        trailer = pdf.find(b"trailer", at, limit)
        head = pdf[trailer:min(trailer + SECTION_BYTES, limit)] if trailer >= 0 else b""
    head = head.split(b"startxref", 1)[0].split(b"stream", 1)[0]
    found = PREV.search(head)
    return int(found[1]) + header if found else None


def _is_revision(pdf, start: int, end: int) -> bool:
    """Nothing, or objects from the first byte (after blanks and comments) to the last `endobj`."""
    if BLANK.match(pdf, start, end).end() == end:
        return True
    return bool(REVISION_START.match(pdf, start, end)) and pdf[max(start, end - 64):end].rstrip(PADDING).endswith(
        b"endobj")


def _refusal(why: str) -> Refusal:
    return Refusal("trailing_data", f"The file has data appended after a PDF end-of-file marker: {why}.")
