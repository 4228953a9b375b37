"""Cheap checks on the head and tail of a file, done before any PDF parser sees it."""

import os
import re
import zipfile
from pathlib import Path
from typing import BinaryIO

from .errors import Refusal
from .limits import Limits
from .revisions import check_last_revision

HEAD_BYTES = 4096  # more than Limits.head_slack
PDF_HEADER = b"%PDF-"
# The final %%EOF is looked for in this many bytes before the padding at the end, so that a large
# appended payload is still reported rather than read in full.
TAIL_BYTES = 65 * 1024
PADDING_BLOCK = 64 * 1024

MAGIC = [
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "a legacy Microsoft Office document"),
    (b"\x7fELF", "an ELF executable"),
    (b"MZ", "a Windows executable"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"%!PS", "a PostScript document"),
]
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")
PADDING = b" \t\r\n\f\x00"
# A file that ends with its startxref pointer but lost the `%%EOF` after it (or kept only its `%`): poppler
# and qpdf read it, and nothing follows the pointer, so it is accepted; a cut anywhere else is `truncated`.
# What tells a PDF body without its header from other data: an object's header, `1 0 obj`.
OBJECT_HEADER = re.compile(rb"(?<![0-9])[0-9]{1,10}[\0\t\n\f\r ]+[0-9]{1,5}[\0\t\n\f\r ]+obj(?![A-Za-z])")
MARKER_MISSING = re.compile(rb"(startxref[ \t\r\n\f]*\d{0,15}[ \t\r\n\f]*)%?[ \t\r\n\f\x00]*\Z")


def describe(head: bytes) -> str:
    """Name what the first bytes of a file look like, for a refusal message."""
    if other := other_format(head):
        return other
    if PDF_HEADER in head:
        return f"a PDF preceded by {head.index(PDF_HEADER)} bytes of other data"
    return _describe_text(head)


def other_format(head: bytes) -> str | None:
    """The format the head starts as, when it is a known one: a `%PDF-` inside it is then not a header."""
    if head.startswith(ZIP_MAGIC):
        if b"[Content_Types].xml" in head:
            return "an Office document (ZIP based)"
        return "a ZIP archive"
    for magic, name in MAGIC:
        if head.startswith(magic):
            return name
    text = _describe_text(head)
    return None if text in ("plain text", "unknown binary data") else text


def _describe_text(head: bytes) -> str:
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the end of the sample is still text.
        if exc.start < len(head) - 4:
            return "unknown binary data"
        text = head[: exc.start].decode("utf-8")
    start = text.lstrip("\ufeff \t\r\n").lower()
    if start.startswith(("<!doctype html", "<html")) or "<html" in start[:1024]:
        return "an HTML document"
    if start.startswith("<?xml") or start.startswith("<svg"):
        return "an XML document"
    if all(c.isprintable() or c in "\t\r\n\f" for c in text):
        return "plain text"
    return "unknown binary data"


def precheck(path: str | Path, limits: Limits) -> str:
    """Refuse what is visibly not a single, complete PDF; reads the head, the tail and, bounded, the last
    revision's cross-reference sections (revisions.py). Data appended after an end-of-file marker is not refused
    here but returned, as the sentence that says what it is (empty when there is none): the policy decides."""
    size = os.stat(path).st_size
    if size == 0:
        raise Refusal("empty", "The file is empty.")
    if size > limits.max_bytes:
        raise Refusal("too_large", f"The file is {size} bytes; the limit is {limits.max_bytes} bytes.")
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
        end = content_end(f, size)
        tail_start = max(0, end - TAIL_BYTES)
        f.seek(tail_start)
        tail = f.read(end - tail_start)
    start = head.find(PDF_HEADER, 0, limits.head_slack + len(PDF_HEADER))
    if start < 0 or (start > 0 and other_format(head)):
        raise header_refusal(head, limits)
    end, appended = _check_tail(tail)
    try:
        check_last_revision(path, tail_start + end, header=start)
    except Refusal as refusal:
        appended = appended or refusal.message
    _check_not_zip(path)
    return appended


def header_refusal(head: bytes, limits: Limits) -> Refusal:
    """`not_pdf` for other data; `no_pdf_header` for a PDF whose `%PDF-` header is missing or late. Acrobat
    looks for the header within the first KiB and so does Pagetrail, by policy: it is what tells a PDF from
    other data that holds PDF-like text (poppler, MuPDF and pdf.js read such a file by scanning for objects)."""
    if not other_format(head):
        if PDF_HEADER in head:
            return Refusal(
                "no_pdf_header",
                f"The file's `%PDF-` header comes after {head.index(PDF_HEADER)} bytes of other data; "
                f"Pagetrail accepts at most {limits.head_slack} bytes before it.",
            )
        if OBJECT_HEADER.search(head):
            return Refusal(
                "no_pdf_header",
                f"The file holds PDF objects but has no `%PDF-` header in its first {limits.head_slack + 1} bytes; "
                "Pagetrail accepts only files that start as a PDF.",
            )
    return Refusal("not_pdf", f"The file is not a PDF; it looks like {describe(head)}.")


def leading_bytes(path: str | Path) -> int:
    """How many bytes come before `%PDF-` (precheck has refused more than the limit allows)."""
    with open(path, "rb") as f:
        return max(0, f.read(HEAD_BYTES).find(PDF_HEADER))


def content_end(f: BinaryIO, size: int) -> int:
    """Where the padding at the end of the file begins. Scanners and some writers pad a PDF with NULs or
    whitespace, of any length (pypdf's `selenium-pypdf-issue-177`: 20 KiB of NULs); padding holds nothing,
    so it is not bounded, and it is read backwards in blocks so that a long run costs no memory."""
    end = size
    while end > 0:
        start = max(0, end - PADDING_BLOCK)
        f.seek(start)
        kept = f.read(end - start).rstrip(PADDING)
        if kept:
            return start + len(kept)
        end = start
    return 0


def _check_tail(tail: bytes) -> tuple[int, str]:
    """Where the final `%%EOF` is in the tail (the file up to its padding), and what follows it that is not
    padding (a sentence, empty if nothing); refuses a missing marker."""
    end = tail.rfind(b"%%EOF")
    if end < 0 and (cut := MARKER_MISSING.search(tail)):
        return cut.end(1), ""  # where the marker would be: nothing but its remnant and padding follows the pointer
    if end < 0:
        raise Refusal(
            "truncated",
            "The file does not end with a PDF end-of-file marker; it is truncated or has other data appended.",
        )
    after = tail[end + len(b"%%EOF") :]
    # Scanners pad with whitespace or NULs (content_end has set those at the very end aside); anything
    # else is a payload riding along.
    if after.strip(PADDING):
        return end, f"The file has {len(after)} bytes after its PDF end-of-file marker that are not padding."
    return end, ""


def _check_not_zip(path: str | Path) -> None:
    """A ZIP reader finds its archive from the end of the file (an end record in the last 64 KiB, whose
    comment may run over the rest): a PDF that one opens is a ZIP archive too, a polyglot."""
    if zipfile.is_zipfile(path):
        raise Refusal("polyglot", "The file is both a PDF and a ZIP archive; Pagetrail accepts only plain PDFs.")
