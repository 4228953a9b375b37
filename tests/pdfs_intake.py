"""Generated PDFs for intake: what viewers open that Pagetrail used to crash on or refuse.

Built like tests/pdfs.py (whose helpers these reuse): each factory takes a directory and returns the path it wrote.
"""

import hashlib
from pathlib import Path

from tests.pdfs import ONE_PAGE, jpeg_rgb, raw_pdf, raw_stream, write


def indirect_length(d: Path) -> Path:
    """A content stream whose /Length is an indirect integer, as LibreOffice, Ghostscript and pdfTeX write."""
    content = b"<< /Length 5 0 R >>\nstream\n0 0 m\nendstream"
    return write(d / "indirect_length.pdf", raw_pdf(ONE_PAGE + [content, b"5"]))


def indirect_scalars(d: Path) -> Path:
    """A page that refers to an indirect object of every kind: integer, real, boolean, null, string, name, array."""
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R /Rotate 5 0 R "
        b"/UserUnit 6 0 R /X 7 0 R /Y 8 0 R /Z 9 0 R /N 10 0 R /A 11 0 R >>"
    )
    scalars = [b"0", b"1.0", b"true", b"null", b"(note)", b"/Name", b"[1 2]"]
    return write(d / "indirect_scalars.pdf", raw_pdf(ONE_PAGE[:2] + [page, raw_stream(b"0 0 m")] + scalars))


def junk_before_header(d: Path, size: int) -> Path:
    """`size` bytes of a mail gateway's banner before `%PDF-`."""
    junk = (b"X-Gateway: scanned\r\n" * (size // 20 + 1))[:size]
    return write(d / f"junk_{size}_before_header.pdf", junk + jpeg_rgb(d).read_bytes())


def junk_before_huge_length(d: Path) -> Path:
    """Leading bytes shift every offset: a /Length over the limit must still be seen where it is."""
    data = raw_pdf(ONE_PAGE + [raw_stream(b"0 0 m", length=10**12)])
    return write(d / "junk_before_huge_length.pdf", b"%banner\n" * 8 + data)


def damaged_xref(d: Path, length: int | None = None) -> Path:
    """Every offset in the table is off by 7 bytes (a careless edit): qpdf rebuilds the table."""
    data = raw_pdf(ONE_PAGE + [raw_stream(b"0 0 m", length=length)])
    table = data.index(b"xref\n")
    head, tail = data[:table], data[table:]
    for line in tail.split(b"\n"):
        if line.endswith(b" 00000 n "):
            tail = tail.replace(line, b"%010d 00000 n " % (int(line[:10]) + 7))
    return write(d / f"damaged_xref_{length}.pdf", head + tail)


def junk_past_slack(d: Path) -> Path:
    """`%PDF-` at offset 1024: outside the first KiB, where viewers and qpdf look for it."""
    return junk_before_header(d, 1024)


def header_missing(d: Path) -> Path:
    """A PDF without its `%PDF-` line (pdf.js `bug1606566`, which starts at its binary comment): poppler reads it."""
    data = raw_pdf([*ONE_PAGE, raw_stream(b"0 0 m")])
    return write(d / "header_missing.pdf", data.removeprefix(b"%PDF-1.7\n"))


# ---------- children that fail: a machine fault, and a library that fails inside the child ----------
def child_cannot_start(monkeypatch) -> None:
    """This machine cannot start the PDF child (a missing interpreter): intake cannot check anything."""
    import sys

    from extraction.pdf.sandbox import stop_idle_children

    stop_idle_children()  # a warm child would hide the fault
    monkeypatch.setattr(sys, "executable", "/nonexistent/python3")


def child_where_pikepdf_open(tmp_path: Path, monkeypatch, does: str) -> None:
    """Children started from now on run `does` (a statement; `args` are the call's) instead of pikepdf.open:
    a failure inside the real child, of a kind no check foresaw. The product has no knob for this; the
    interpreter imports a `sitecustomize` module from the PYTHONPATH the child inherits."""
    from extraction.pdf.sandbox import stop_idle_children

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        f"import os, pikepdf\ndef _open(*args, **kwargs):\n    {does}\npikepdf.open = _open\n"
    )
    stop_idle_children()
    monkeypatch.setenv("PYTHONPATH", str(site))


def children_that_wait_to_be_killed(tmp_path: Path, monkeypatch) -> Path:
    """Children started from now on, once they open a PDF, write an empty file named for their pid into the
    returned directory and wait there, using no CPU, until something kills them: a validation stopped from
    outside. Once the directory's `wait` file is removed, they read their PDFs as usual."""
    from extraction.pdf.sandbox import stop_idle_children

    site, waiting = tmp_path / "site", tmp_path / "waiting"
    site.mkdir()
    waiting.mkdir()
    (waiting / "wait").touch()
    (site / "sitecustomize.py").write_text(
        "import os, time, pikepdf\n"
        "_open = pikepdf.open\n"
        "def _waiting(*args, **kwargs):\n"
        f"    if os.path.exists({str(waiting / 'wait')!r}):\n"
        f"        open(os.path.join({str(waiting)!r}, str(os.getpid())), 'w').close()\n"
        "        time.sleep(3600)\n"
        "    return _open(*args, **kwargs)\n"
        "pikepdf.open = _waiting\n"
    )
    stop_idle_children()
    monkeypatch.setenv("PYTHONPATH", str(site))
    return waiting


def kill_waiting_children(waiting: Path, count: int) -> list[float]:
    """SIGKILL the next `count` children that wait in `waiting`, as an operator's `kill -9` or the host's OOM
    killer would; children started after the last of them read their PDFs. Returns the CPU seconds each had
    used when it was killed."""
    import os
    import signal

    from extraction.pdf.exits import cpu_time
    from tests.waiting import wait_until

    used = []
    for n in range(count):
        pid = wait_until(lambda: [p for p in waiting.iterdir() if p.name.isdigit()], 60, "no child waits")[0]
        if n == count - 1:
            (waiting / "wait").unlink()
        used.append(cpu_time(int(pid.name)))
        os.kill(int(pid.name), signal.SIGKILL)
        pid.unlink()
    return used


def crypt_identity_stream(d: Path) -> Path:
    """A stream with the standard Crypt filter (/Identity), as encrypted files leave their metadata."""
    stream = raw_stream(b"0 0 m", b"/Filter [/Crypt] /DecodeParms [<< /Name /Identity >>]")
    return write(d / "crypt_identity_stream.pdf", raw_pdf(ONE_PAGE + [stream]))


# ---------- names that are no PDF filter: viewers draw the page without what they encode ----------
def made_up_filter_image(d: Path) -> Path:
    """An image encoded with /XORDecode (a name of qpdf's custom-filter example): no reader decodes it."""
    image = raw_stream(
        b"\x00" * 12,
        b"/Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceRGB "
        b"/BitsPerComponent 8 /Filter /XORDecode",
    )
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R "
        b"/Resources << /XObject << /Im0 5 0 R >> >> >>"
    )
    return write(d / "made_up_filter_image.pdf", raw_pdf(ONE_PAGE[:2] + [page, raw_stream(b"/Im0 Do"), image]))


def made_up_filter_content(d: Path) -> Path:
    """A page whose content stream names /PlateDecode (qpdf's `unfilterable.pdf`): poppler shows a blank page."""
    return write(d / "made_up_filter_content.pdf", raw_pdf(ONE_PAGE + [raw_stream(b"0 0 m", b"/Filter /PlateDecode")]))


def string_filter(d: Path) -> Path:
    """A stream whose /Filter is the string (FlateDecode), not a name (qpdf's `bad30.pdf`)."""
    return write(
        d / "string_filter.pdf", raw_pdf(ONE_PAGE + [raw_stream(b"0 0 m"), raw_stream(b"x", b"/Filter (FlateDecode)")])
    )


# ---------- revisions as real writers leave them (bytes between the last two %%EOF markers) ----------
def eof_inside_a_stream(d: Path) -> Path:
    """A stream whose data is a small PDF ending `%%EOF` (an embedded font program or PostScript file
    ends so): that marker is the stream's data, not the end of a revision."""
    inner = b"%PDF-1.4\n1 0 obj\n<< >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF"
    return write(d / "eof_inside_a_stream.pdf", raw_pdf(ONE_PAGE + [raw_stream(b"0 0 m"), raw_stream(inner)]))


def _base_and_size(d: Path) -> tuple[bytes, int, int]:
    import pikepdf

    base = jpeg_rgb(d).read_bytes()
    with pikepdf.open(d / "jpeg_rgb.pdf") as pdf:
        return base, int(pdf.trailer.Size), pdf.Root.objgen[0]


def _startxref(data: bytes) -> int:
    return int(data.rsplit(b"startxref", 1)[1].split()[0])


def commented_deletion_update(d: Path) -> Path:
    """An update that only frees an object, after a comment saying so (qpdf's `incremental-3.pdf`)."""
    base, size, root = _base_and_size(d)
    update = b"\n% Delete the Info object\n"
    section = (
        b"xref\n0 1\n0000000000 65535 f \ntrailer\n<< /Size %d /Root %d 0 R /Prev %d >>\nstartxref\n%d\n%%%%EOF\n"
        % (size, root, _startxref(base), len(base) + len(update))
    )
    return write(d / "commented_deletion_update.pdf", base + update + section)


def hybrid_update(d: Path) -> Path:
    """An update with two sections chained by /Prev, as Acrobat writes a hybrid file's: a table for the
    new object, then an empty one (its trailer would name an /XRefStm) that the final startxref names."""
    base, size, root = _base_and_size(d)
    update = b"%d 0 obj\n<< /Producer (an update) >>\nendobj\n" % size
    first = len(base) + len(update)
    table = b"xref\n%d 1\n%010d 00000 n \ntrailer\n<< /Size %d /Root %d 0 R /Info %d 0 R /Prev %d >>\n" % (
        size,
        len(base),
        size + 1,
        root,
        size,
        _startxref(base),
    )
    empty = b"xref\n0 0\ntrailer\n<< /Size %d /Root %d 0 R /Info %d 0 R /Prev %d >>\nstartxref\n%d\n%%%%EOF\n" % (
        size + 1,
        root,
        size,
        first,
        first + len(table),
    )
    return write(d / "hybrid_update.pdf", base + update + table + empty)


def payload_posing_as_a_stream_end(d: Path) -> Path:
    """Hostile: a payload after the end-of-file marker, then `%%EOF endstream` to pass the marker off as a
    stream's data, then a well-formed empty section: the payload is still not an object."""
    base, size, root = _base_and_size(d)
    junk = b"<script>alert(1)</script>\n" * 4 + b"%%EOF\nendstream\n"
    section = (
        b"xref\n0 1\n0000000000 65535 f \ntrailer\n<< /Size %d /Root %d 0 R /Prev %d >>\nstartxref\n%d\n%%%%EOF\n"
        % (size, root, _startxref(base), len(base) + len(junk))
    )
    return write(d / "payload_posing_as_a_stream_end.pdf", base + junk + section)


def encrypted_attachments_only(d: Path) -> Path:
    """Encryption for embedded files alone (`/EFF`, `/AuthEvent /EFOpen`; streams and strings `/Identity`), as
    Acrobat writes "encrypt file attachments only": viewers open it without a password, qpdf asks for one."""
    encrypt = (
        b"<< /Filter /Standard /V 5 /R 6 /Length 256 /P -4 /StmF /Identity /StrF /Identity /EFF /StdCF "
        b"/CF << /StdCF << /CFM /AESV3 /AuthEvent /EFOpen /Length 32 >> >> "
        b"/O <%s> /U <%s> /OE <%s> /UE <%s> /Perms <%s> >>"
        % (b"11" * 48, b"22" * 48, b"33" * 32, b"44" * 32, b"55" * 16)
    )
    trailer = b"/Encrypt 5 0 R /ID [<00112233445566778899aabbccddeeff> <00112233445566778899aabbccddeeff>]"
    return write(d / "encrypted_attachments_only.pdf", raw_pdf(ONE_PAGE + [raw_stream(b"0 0 m"), encrypt], trailer))


def end_marker_missing(d: Path, remnant: bytes = b"") -> Path:
    """A file that ends with its startxref pointer: the `%%EOF` after it is lost (pdf.js `issue6069.pdf`),
    or only its `%` is left (qpdf `issue-117.pdf`)."""
    data = raw_pdf(ONE_PAGE + [raw_stream(b"0 0 m")])
    name = f"end_marker_missing{'_remnant' if remnant else ''}.pdf"
    return write(d / name, data[: data.rindex(b"%%EOF")] + remnant)


def cut_after_startxref_keyword(d: Path) -> Path:
    """Hostile: a payload after the pointer's offset, no end marker: that is no lost marker but appended data."""
    data = raw_pdf(ONE_PAGE + [raw_stream(b"0 0 m")])
    return write(d / "cut_after_startxref_keyword.pdf", data[: data.rindex(b"%%EOF")] + b"<script>x</script>\n")


GRAY_2X2 = b"\x00\x40\x80\xff"
IMAGE_PAGE = (
    b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Resources << /XObject << /Im0 5 0 R >> >>"
    b" /Contents 4 0 R >>"
)
GRAY_IMAGE = raw_stream(
    GRAY_2X2, b"/Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray /BitsPerComponent 8"
)


def page_tree_loop(d: Path) -> Path:
    """The root's second kid is a /Pages node whose /Kids name the root again (pdf.js `Pages-tree-refs.pdf`,
    qpdf `pages-loop.pdf`): qpdf refuses the tree, viewers show the page it does lead to."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R 6 0 R] /Count 2 >>",
        IMAGE_PAGE,
        raw_stream(b"q 2 0 0 2 0 0 cm /Im0 Do Q"),
        GRAY_IMAGE,
        b"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 1 >>",
    ]
    return write(d / "page_tree_loop.pdf", raw_pdf(objects))


def page_tree_too_deep(d: Path, depth: int = 100) -> Path:
    """A page under `depth` nested /Pages nodes (qpdf `deep-pages.pdf`): qpdf refuses the tree as too deep."""
    first = 7  # the nodes between the root (2) and the page (3)
    chain = [first + i for i in range(depth)]
    nodes = [b"<< /Type /Pages /Kids [%d 0 R] /Count 1 >>" % (n + 1 if n + 1 < first + depth else 3) for n in chain]
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%d 0 R] /Count 1 >>" % first,
        IMAGE_PAGE.replace(b"/Parent 2 0 R", b"/Parent %d 0 R" % chain[-1]),
        raw_stream(b"q 2 0 0 2 0 0 cm /Im0 Do Q"),
        GRAY_IMAGE,
        b"null",
        *nodes,
    ]
    return write(d / "page_tree_too_deep.pdf", raw_pdf(objects))


def no_catalog(d: Path) -> Path:
    """The trailer's /Root names a null: there is no document to read."""
    return write(d / "no_catalog.pdf", raw_pdf([b"null", *ONE_PAGE[1:], raw_stream(b"0 0 m")]))


def encrypt_not_a_dictionary(d: Path) -> Path:
    """A trailer whose /Encrypt is a string (PDFBox `PDFBOX-4352-0.pdf`): poppler reads the file as not encrypted."""
    objects = [*ONE_PAGE[:2], IMAGE_PAGE, raw_stream(b"q 2 0 0 2 0 0 cm /Im0 Do Q"), GRAY_IMAGE]
    return write(d / "encrypt_not_a_dictionary.pdf", raw_pdf(objects, trailer=b"/Encrypt (none)"))


def catalog_numbered_high(d: Path, number: int = 4000) -> Path:
    """A sound file whose catalog is object `number`, more than a third of the file's length (pdf.js `bug1011159`:
    catalog 6374 in 18 KiB): qpdf 12 reads no object numbered that high in so short a file, and finds no /Root."""
    objects = {number: b"<< /Type /Catalog /Pages 2 0 R >>", 2: ONE_PAGE[1], 3: IMAGE_PAGE}
    objects |= {4: raw_stream(b"q 2 0 0 2 0 0 cm /Im0 Do Q"), 5: GRAY_IMAGE}
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    for n, body in sorted(objects.items()):
        offsets[n] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (n, body)
    xref = len(out)
    out += b"xref\n0 1\n0000000000 65535 f \n"
    out += b"".join(b"%d 1\n%010d 00000 n \n" % (n, offset) for n, offset in sorted(offsets.items()))
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (number + 1, number, xref)
    return write(d / "catalog_numbered_high.pdf", bytes(out))


def _rc4(key: bytes, data: bytes) -> bytes:
    state, j, out = list(range(256)), 0, bytearray()
    for i in range(256):
        j = (j + state[i] + key[i % len(key)]) & 255
        state[i], state[j] = state[j], state[i]
    i = j = 0
    for byte in data:
        i, j = (i + 1) & 255, (j + state[(i + 1) & 255]) & 255
        state[i], state[j] = state[j], state[i]
        out.append(byte ^ state[(state[i] + state[j]) & 255])
    return bytes(out)


def rc4_short_key_revision_4(d: Path, bits: int = 40) -> Path:
    """Revision 4, RC4 with a `bits`-bit key and the empty user password, encrypted as Acrobat does: with the key
    extended to 16 bytes with zeros (pdf.js `issue19484_1`, `_2`). qpdf finds the empty password wrong."""
    pad = bytes.fromhex("28BF4E5E4E758A4164004E56FFFA01082E2E00B6D0683E802F0CA9FE6453697A")
    owner, first_id, permissions, length = bytes(range(32)), bytes(range(100, 116)), -3392, bits // 8
    key = hashlib.md5(pad + owner + (permissions & 0xFFFFFFFF).to_bytes(4, "little") + first_id).digest()[:length]
    for _ in range(50):
        key = hashlib.md5(key).digest()[:length]
    user = _rc4(key, hashlib.md5(pad + first_id).digest())
    for i in range(1, 20):
        user = _rc4(bytes(b ^ i for b in key), user)
    extended = key + bytes(16 - length)

    def encrypted_stream(number: int, data: bytes, extra: bytes = b"") -> bytes:
        object_key = hashlib.md5(extended + number.to_bytes(3, "little") + b"\0\0").digest()
        return raw_stream(_rc4(object_key, data), extra)

    gray = b"/Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray /BitsPerComponent 8"
    encrypt = (
        b"<< /Filter /Standard /V 4 /R 4 /Length %d /P %d /O <%s> /U <%s> /StmF /StdCF /StrF /StdCF "
        % (
            bits,
            permissions,
            owner.hex().encode(),
            (user + bytes(16)).hex().encode(),
        )
        + b"/CF << /StdCF << /AuthEvent /DocOpen /CFM /V2 /Length %d >> >> >>" % length
    )
    objects = [*ONE_PAGE[:2], IMAGE_PAGE, encrypted_stream(4, b"q 2 0 0 2 0 0 cm /Im0 Do Q")]
    objects += [encrypted_stream(5, GRAY_2X2, gray), encrypt]
    trailer = b"/Encrypt 6 0 R /ID [<%s> <%s>]" % (first_id.hex().encode(), first_id.hex().encode())
    return write(d / f"rc4_{bits}_bit_revision_4.pdf", raw_pdf(objects, trailer=trailer))
