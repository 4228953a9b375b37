"""Validation of an untrusted PDF, run inside the child: refuse early; repair only as qpdf does, and say so."""

import mmap
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import pikepdf

from . import shortkey, streams
from .errors import Refusal, raise_if_out_of_memory, reason
from .findings import Findings
from .limits import STANDARD_FILTERS, Limits
from .pagetree import PageTree
from .reopen import reopened
from .results import Inspection
from .sniff import leading_bytes
from .values import is_int

HEAD_CHUNK = 4096  # most object dictionaries fit in one read
SCAN_OVERLAP = 64  # longer than "stream"
ENCRYPTED = (
    "The file is encrypted and does not open with an empty password; Pagetrail cannot read PDFs that need a password."
)
# An encryption dictionary's filter for embedded files (/EFF), and those for streams and strings.
ATTACHMENT_FILTER = re.compile(rb"/EFF\s*/([A-Za-z0-9_.#-]+)")
IDENTITY = {key: re.compile(rb"/%s\s*/Identity\b" % key) for key in (b"StmF", b"StrF")}
DICTIONARY_REACH = 2048  # an encryption dictionary's entries lie within this of each other
# What qpdf says when it works around damage: a rebuilt cross-reference table, a stream length found anew.
REPAIR_WARNING = re.compile(r"reconstruct|recover", re.IGNORECASE)
ATTACHMENTS_ENCRYPTED = (
    "The file's encryption is for embedded files (attachments), which have a password of their own; "
    "Pagetrail does not accept PDFs whose attachments it cannot read."
)
# Keys and actions an intake policy decides on, by the kind of finding they are (findings.KINDS).
ACTIVE_KEYS = {
    "/JS": "javascript",
    "/JavaScript": "javascript",
    "/EmbeddedFiles": "embedded_file",
    "/EF": "embedded_file",
    "/RichMediaContent": "rich_media",
    "/XFA": "xfa_form",
}
# Actions that run code, send data, open other files or a web address. Pagetrail never runs one
# (extraction and previews run no actions); whether a file carrying one is taken in is the policy's choice.
ACTIVE_ACTIONS = {
    "/Launch": "launch",
    "/JavaScript": "javascript",
    "/SubmitForm": "submit_form",
    "/ImportData": "import_data",
    "/GoToR": "remote_goto",
    "/GoToE": "remote_goto",
    "/URI": "uri",
}
CONTAINERS = (pikepdf.Dictionary, pikepdf.Array)
ACTIVE_TYPES = {("/Type", "/EmbeddedFile"): "embedded_file", ("/Subtype", "/RichMedia"): "rich_media"}
# Every name above, as a whole name token in qpdf's serialisation of an object.
ACTIVE_NAMES = re.compile(
    rb"(?:%s)(?=[\s()<>\[\]{}/%%]|$)"
    % b"|".join(re.escape(name.encode()) for name in {*ACTIVE_KEYS, *ACTIVE_ACTIONS, *(v for _, v in ACTIVE_TYPES)})
)


def open_pdf(path: str | Path) -> tuple[pikepdf.Pdf, bool]:
    """Open as a viewer would: with the empty user password, and repaired by qpdf if it must; also whether
    it was opened only past damage qpdf refuses (reopen.py) or with a short key qpdf misreads (shortkey.py),
    which counts as a repair.

    qpdf reads strictly and reconstructs the cross-reference table only when that fails (at
    open, or later when an object is not where the table says); it then leaves a warning,
    which is how `repaired` knows. A file that needs a real password is refused.
    """
    try:
        return pikepdf.open(path, attempt_recovery=True), False
    except pikepdf.PasswordError:
        if protects_only_attachments(path):
            raise Refusal("active_content", ATTACHMENTS_ENCRYPTED) from None
        if pdf := shortkey.opened(path):  # the empty password is right, qpdf refuses a short key (shortkey.py)
            return pdf, True
        raise Refusal("encrypted", ENCRYPTED) from None
    except pikepdf.PdfError as exc:
        pdf = reopened(path, exc)
        if pdf is None:
            raise unreadable(exc) from None
        return pdf, True


def protects_only_attachments(path: str | Path) -> bool:
    """Whether the encryption is for embedded files alone: streams and strings `/Identity`, `/EFF` a real
    filter. Viewers open such a file without a password (it is asked only to open an attachment);
    qpdf insists on one. The encryption dictionary is never in an object stream, so it is in the bytes."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        for found in ATTACHMENT_FILTER.finditer(data):
            if found[1] != b"Identity":
                near = data[max(0, found.start() - DICTIONARY_REACH) : found.end() + DICTIONARY_REACH]
                return all(IDENTITY[key].search(near) for key in IDENTITY)
    return False


@dataclass
class Source:
    """An open PDF and how it was read, for the result's `encrypted/repaired/leading_bytes`."""

    pdf: pikepdf.Pdf
    encrypted: bool
    leading_bytes: int
    was_repaired: bool = False

    def repaired(self) -> bool:
        """Whether qpdf has had to repair the file so far: a repair can happen while objects are
        read, and reading qpdf's warnings empties them, so what they said is remembered."""
        warnings = self.pdf.get_warnings()
        self.was_repaired = self.was_repaired or any(REPAIR_WARNING.search(w) for w in warnings)
        return self.was_repaired

    def flags(self) -> dict[str, Any]:
        """Asked once reading is done."""
        return {"encrypted": self.encrypted, "repaired": self.repaired(), "leading_bytes": self.leading_bytes}


@contextmanager
def opened(path: str | Path) -> Iterator[Source]:
    pdf, past_damage = open_pdf(path)
    with pdf:
        yield Source(pdf=pdf, encrypted=pdf.is_encrypted, leading_bytes=leading_bytes(path), was_repaired=past_damage)


def unreadable(exc: Exception) -> Refusal:
    raise_if_out_of_memory(exc)
    return Refusal("unreadable", f"The file is damaged and cannot be read as a PDF ({reason(exc)}).")


def inspect(path: str | Path, limits: Limits) -> Inspection:
    """Refuse what no policy accepts (limits, damage beyond repair); collect what a policy decides on."""
    with opened(path) as source:
        pdf = source.pdf
        found = Findings(before_reading=lambda stream, where: check_stream(stream, where, limits))
        try:
            check_declared_lengths(path, source, limits)
            pages = count_pages(source, limits)
            for obj in pdf.objects:
                check_object(obj, limits, found)
            if source.repaired():
                # The table was rebuilt while objects were read: check the lengths where they really are.
                check_declared_lengths(path, source, limits)
        except pikepdf.PdfError as exc:
            raise unreadable(exc) from None
        note_reading(source, found)
        return Inspection(
            pages=pages, pdf_version=pdf.pdf_version, mime="application/pdf", **source.flags(), **found.as_plain()
        )


def note_reading(source: Source, found: Findings) -> None:
    """How the file was read, as findings: opened with the empty user password, or past damage."""
    if source.encrypted:
        encrypt = source.pdf.trailer.get("/Encrypt")
        where = None
        if isinstance(encrypt, pikepdf.Object) and encrypt.is_indirect:
            where = "{} {}".format(*encrypt.objgen)
        found.add("owner_password", where)
    if source.repaired():
        found.add("repaired")


def check_declared_lengths(path: str | Path, source: Source, limits: Limits) -> None:
    """Refuse a stream that declares a /Length beyond the limit.

    qpdf replaces such a /Length by the length it finds (or, reading strictly, the stream by
    null), so the declared value is only visible in the raw bytes. Stream dictionaries are
    never inside object streams, so reading the head of every object the cross-reference
    table places in the file, up to its `stream` keyword, sees every direct /Length. The
    stream data, nearly all of the file, is skipped: scanning it would cost a third of the
    extraction.
    """
    pattern = re.compile(rb"/Length\s+(\d{%d,})" % len(str(limits.max_stream_bytes)))
    # qpdf counts offsets from `%PDF-`, as the table does: bytes before it shift them all.
    offsets = sorted(
        source.leading_bytes + (entry.offset or 0)  # type 1: an object at an offset
        for entry in source.pdf.get_xref_table().values()
        if entry.type == 1
    )
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        for offset, following in zip(offsets, [*offsets[1:], size]):
            f.seek(offset)
            head = object_head(f, following - offset)
            if (match := pattern.search(head)) and int(match.group(1)) > limits.max_stream_bytes:
                raise too_large_stream(f"declares a /Length of {int(match.group(1))} bytes", limits)


def object_head(f: BinaryIO, most: int) -> bytes:
    """The object's bytes up to its `stream` keyword (or all of them): its dictionary."""
    head = b""
    while len(head) < most:
        chunk = f.read(min(HEAD_CHUNK, most - len(head)))
        if not chunk:
            break
        head += chunk
        if (end := head.find(b"stream", max(0, len(head) - len(chunk) - SCAN_OVERLAP))) != -1:
            return head[:end]
    return head


def too_large_stream(what: str, limits: Limits) -> Refusal:
    return Refusal(
        "stream_too_large",
        f"A stream in the file {what}; the limit is {limits.max_stream_bytes} bytes.",
    )


def count_pages(source: Source, limits: Limits) -> int:
    # The declared count is checked first: it is free, and refuses before a huge tree is walked.
    pdf = source.pdf
    tree = pdf.Root.get("/Pages")
    declared = tree.get("/Count") if isinstance(tree, pikepdf.Dictionary) else None
    if isinstance(declared, int) and declared > limits.max_pages:
        raise too_many_pages("declares", declared, limits)
    pages = len(page_tree(source, limits))
    if pages == 0:
        raise Refusal("no_pages", "The PDF has no pages.")
    if pages > limits.max_pages:
        raise too_many_pages("has", pages, limits)
    return pages


def page_tree(source: Source, limits: Limits) -> list[pikepdf.Page]:
    """The pages; a tree qpdf refuses is read as viewers read it, and the file counts as repaired."""
    tree = PageTree(source.pdf, limits)
    source.was_repaired = source.was_repaired or tree.recovered
    return tree.pages


def too_many_pages(verb: str, pages: int, limits: Limits) -> Refusal:
    return Refusal("too_many_pages", f"The PDF {verb} {pages} pages; the limit is {limits.max_pages}.")


def check_object(obj: pikepdf.Object, limits: Limits, found: Findings) -> None:
    """Check one indirect object and the direct objects nested in it.

    Streams are always indirect, so only the object itself can be one. Its serialisation by
    qpdf (names canonical: `/J#53` is written `/JS`) is searched for the names of active
    content first, in one call; only an object that mentions one is walked key by key, which
    in Python costs a hundred times more.
    """
    if not isinstance(obj, pikepdf.Object):
        return  # an indirect number, boolean or null: pikepdf gives it as a Python value, and it holds nothing
    where = "object {} {}".format(*obj.objgen)
    if isinstance(obj, pikepdf.Stream):
        check_stream(obj, where, limits)
        text = obj.stream_dict.unparse(resolved=True)
    else:
        text = obj.unparse(resolved=True)
    if ACTIVE_NAMES.search(text):
        check_nested_active(obj, "{} {}".format(*obj.objgen), found)


def check_nested_active(obj: pikepdf.Object, where: str, found: Findings) -> None:
    """Indirect references are not followed: every indirect object is visited once by the
    caller, so reference cycles cannot make this loop."""
    pending = [obj]
    while pending:
        item = pending.pop()
        if not isinstance(item, CONTAINERS):
            continue
        if not isinstance(item, pikepdf.Array):
            check_active(item, where, found)
        values = item if isinstance(item, pikepdf.Array) else item.values()
        pending.extend(c for c in values if isinstance(c, CONTAINERS) and not c.is_indirect)


def check_active(item: pikepdf.Dictionary, where: str, found: Findings) -> None:
    # One call for the keys, and values read only when their key is there: this runs for
    # every dictionary in the file, and each call into pikepdf costs microseconds.
    keys = set(item.keys())
    for key in keys & ACTIVE_KEYS.keys():
        found.add(ACTIVE_KEYS[key], where)
    if "/EF" in keys:
        found.attach(item, where)
    if "/S" in keys and (action := str(item["/S"])) in ACTIVE_ACTIONS:
        found.add(ACTIVE_ACTIONS[action], where)
    for (key, value), kind in ACTIVE_TYPES.items():
        if key in keys and str(item[key]) == value:
            found.add(kind, where)


def check_stream(stream: pikepdf.Stream, where: str, limits: Limits) -> None:
    # The stream dictionary's entries in one call: each .get() on the stream would be another.
    entries = dict(stream.items())
    filters = streams.filter_names(entries)
    for name in filters:
        # A made-up name runs no decoder (streams.unknown_filter): only a standard one can be refused.
        if name in STANDARD_FILTERS and name not in limits.allowed_filters:
            raise Refusal(
                "filter_not_allowed",
                f"A stream ({where}) is encoded with {name}, which Pagetrail does not accept.",
            )
    length = entries.get("/Length")
    if isinstance(length, int) and length > limits.max_stream_bytes:
        raise too_large_stream(f"({where}) declares a /Length of {length} bytes", limits)
    if entries.get("/Subtype") == pikepdf.Name.Image:
        check_image(entries, where, limits)
    if not streams.boundable(filters):
        return
    # Flate images too: a lying image stream would otherwise only blow up at extraction.
    if streams.decoded_size_exceeds(stream.read_raw_bytes(), filters, limits.max_stream_bytes):
        raise too_large_stream(f"({where}) decodes to more than the limit", limits)


def check_image(image: pikepdf.Object | dict[str, Any], where: str, limits: Limits) -> None:
    width, height = image.get("/Width"), image.get("/Height")
    if not (is_int(width) and width > 0 and is_int(height) and height > 0):
        raise Refusal("image_too_large", f"An image ({where}) declares impossible dimensions.")
    if width * height > limits.max_pixels:
        raise Refusal(
            "image_too_large",
            f"An image ({where}) is {width} x {height} pixels; the limit is {limits.max_pixels} pixels.",
        )
    size = streams.declared_image_bytes(image, width, height)
    if size > limits.max_stream_bytes:
        raise too_large_stream(f"({where}) holds an image of {size} bytes", limits)
