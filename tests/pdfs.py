"""Generated PDFs for the extraction tests: the good kinds and a hostile corpus.

Deterministic (but for the encrypted ones): the same call writes the same bytes. Each factory takes a directory and
returns the path it wrote. Pictures are small so that every file is quick to make and read.
"""

import base64
import io
import zipfile
import zlib
from pathlib import Path

import pikepdf
from pikepdf import Array, Dictionary, Name
from PIL import Image, ImageDraw, ImageOps


# ---------- source pictures ----------
def rgb_picture(width: int = 48, height: int = 32) -> Image.Image:
    image = Image.new("RGB", (width, height))
    image.putdata([(x * 5 % 256, y * 7 % 256, (x * y) % 256) for y in range(height) for x in range(width)])
    return image


def gray_picture(width: int = 40, height: int = 24) -> Image.Image:
    return rgb_picture(width, height).convert("L")


def bilevel_picture(width: int = 64, height: int = 40) -> Image.Image:
    image = Image.new("1", (width, height), 1)
    ImageDraw.Draw(image).ellipse([4, 4, width - 8, height - 6], outline=0, width=3)
    return image


def cmyk_picture(width: int = 20, height: int = 12) -> Image.Image:
    image = Image.new("CMYK", (width, height))
    image.putdata([(x * 12, y * 20, 255 - x * 12, (x + y) * 8) for y in range(height) for x in range(width)])
    return image


def alpha_picture(width: int = 48, height: int = 32) -> Image.Image:
    image = Image.new("L", (width, height), 0)
    ImageDraw.Draw(image).ellipse([4, 4, width - 4, height - 4], fill=200)
    return image


def pattern_picture(number: int) -> Image.Image:
    """A 16x16 gray picture whose 4x4 blocks spell `number` in binary: distinct per number."""
    image = Image.new("L", (16, 16), 255)
    for bit in range(16):
        if number >> bit & 1:
            x, y = bit % 4 * 4, bit // 4 * 4
            image.paste(0, (x, y, x + 4, y + 4))
    return image


def jpeg_bytes(image: Image.Image, quality: int = 85) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality)
    return buffer.getvalue()


# ---------- building blocks ----------
class Doc:
    """A small pikepdf builder: image XObjects, pages that draw them, a deterministic save."""

    def __init__(self):
        self.pdf = pikepdf.Pdf.new()

    def image(self, data: bytes, image: Image.Image, filter: str, parms: dict | None = None):
        """An image XObject holding `data`, described by the size and mode of `image`."""
        stream = pikepdf.Stream(self.pdf, data)
        stream.Filter = Name(filter)
        if parms:
            stream.DecodeParms = Dictionary(parms)
        stream.Type, stream.Subtype = Name.XObject, Name.Image
        stream.Width, stream.Height = image.size
        stream.ColorSpace = Name(COLORSPACES[image.mode])
        stream.BitsPerComponent = 1 if image.mode == "1" else 8
        return stream

    def page(self, *xobjects, content: bytes = b"", resources: Dictionary | None = None):
        """A page drawing each xobject in turn (as /Im0, /Im1...), then `content`."""
        names = Dictionary({f"/Im{i}": x for i, x in enumerate(xobjects)})
        ops = b"".join(b"q 10 0 0 10 0 0 cm /Im%d Do Q\n" % i for i in range(len(xobjects)))
        page = self.pdf.add_blank_page(page_size=(200, 200))
        page.obj.Resources = resources if resources is not None else Dictionary(XObject=names)
        page.obj.Contents = self.pdf.make_stream(ops + content)
        return page

    def form(self, content: bytes, resources: Dictionary | None = None):
        form = self.pdf.make_stream(content)
        form.Type, form.Subtype, form.BBox = Name.XObject, Name.Form, Array([0, 0, 100, 100])
        if resources is not None:
            form.Resources = resources
        return form

    def save(self, path: Path, **options) -> Path:
        # qpdf cannot derive a deterministic /ID for an encrypted file; those need no stable bytes.
        stable = "encryption" not in options
        self.pdf.save(path, deterministic_id=stable, object_stream_mode=pikepdf.ObjectStreamMode.disable, **options)
        return path


COLORSPACES = {"RGB": "/DeviceRGB", "L": "/DeviceGray", "1": "/DeviceGray", "CMYK": "/DeviceCMYK"}


def flate(doc: Doc, image: Image.Image, predictor: bool = False):
    if not predictor:
        return doc.image(zlib.compress(image.tobytes(), 6), image, "/FlateDecode")
    buffer = io.BytesIO()
    image.save(buffer, "PNG")  # the IDAT payload is a PDF Flate stream with /Predictor 15
    idat = b"".join(_png_chunks(buffer.getvalue(), b"IDAT"))
    parms = {"/Predictor": 15, "/Colors": len(image.getbands()), "/BitsPerComponent": 8, "/Columns": image.width}
    return doc.image(idat, image, "/FlateDecode", parms)


def _png_chunks(png: bytes, kind: bytes):
    pos = 8
    while pos < len(png):
        length, found = int.from_bytes(png[pos : pos + 4], "big"), png[pos + 4 : pos + 8]
        if found == kind:
            yield png[pos + 8 : pos + 8 + length]
        pos += 12 + length


def jpeg(doc: Doc, image: Image.Image):
    return doc.image(jpeg_bytes(image), image, "/DCTDecode")


def ccitt(doc: Doc, image: Image.Image):
    parms = {"/K": -1, "/Columns": image.width, "/Rows": image.height}
    return doc.image(ccitt_bytes(image), image, "/CCITTFaxDecode", parms)


def ccitt_bytes(image: Image.Image) -> bytes:
    """CCITT G4 from Pillow's TIFF writer, one strip. libtiff codes 0 bits as fax white, and
    PDF (no /BlackIs1) decodes fax white as white, so the picture is inverted first; via
    "L" because ImageChops.invert leaves a mode "1" image unchanged in Pillow 13."""
    buffer = io.BytesIO()
    ImageOps.invert(image.convert("L")).convert("1").save(buffer, "TIFF", compression="group4", strip_size=1 << 30)
    tiff = Image.open(buffer)
    offset, length = tiff.tag_v2[273][0], tiff.tag_v2[279][0]
    return buffer.getvalue()[offset : offset + length]


def jpx_bytes(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG2000", irreversible=False, no_jp2=False)
    return buffer.getvalue()


def one_image(path: Path, make) -> Path:
    doc = Doc()
    doc.page(make(doc))
    return doc.save(path)


# ---------- good files ----------
def jpeg_rgb(d: Path) -> Path:
    return one_image(d / "jpeg_rgb.pdf", lambda doc: jpeg(doc, rgb_picture()))


def jpeg_gray(d: Path) -> Path:
    return one_image(d / "jpeg_gray.pdf", lambda doc: jpeg(doc, gray_picture()))


def flate_rgb(d: Path) -> Path:
    return one_image(d / "flate_rgb.pdf", lambda doc: flate(doc, rgb_picture()))


def flate_gray(d: Path) -> Path:
    return one_image(d / "flate_gray.pdf", lambda doc: flate(doc, gray_picture()))


def flate_predictor(d: Path) -> Path:
    return one_image(d / "flate_predictor.pdf", lambda doc: flate(doc, rgb_picture(), predictor=True))


def rgb_with_smask(d: Path) -> Path:
    doc = Doc()
    image = flate(doc, rgb_picture())
    image.SMask = flate(doc, alpha_picture())
    doc.page(image)
    return doc.save(d / "rgb_with_smask.pdf")


def cmyk(d: Path) -> Path:
    return one_image(d / "cmyk.pdf", lambda doc: flate(doc, cmyk_picture()))


def bilevel_flate(d: Path) -> Path:
    return one_image(d / "bilevel_flate.pdf", lambda doc: flate(doc, bilevel_picture()))


def bilevel_ccitt(d: Path) -> Path:
    return one_image(d / "bilevel_ccitt.pdf", lambda doc: ccitt(doc, bilevel_picture()))


def jpx_rgb(d: Path) -> Path:
    return one_image(d / "jpx_rgb.pdf", lambda doc: doc.image(jpx_bytes(rgb_picture()), rgb_picture(), "/JPXDecode"))


def reused_on_three_pages(d: Path) -> Path:
    doc = Doc()
    logo = jpeg(doc, rgb_picture())
    for _ in range(3):
        doc.page(logo)
    return doc.save(d / "reused_on_three_pages.pdf")


def duplicate_xobjects(d: Path) -> Path:
    """Two XObjects with byte-identical content, and a third, different one."""
    doc = Doc()
    doc.page(jpeg(doc, gray_picture()), jpeg(doc, gray_picture()), jpeg(doc, rgb_picture()))
    return doc.save(d / "duplicate_xobjects.pdf")


def forms(d: Path) -> Path:
    """Draws: /Fm0 (-> /Im0 gray, then /Fm1 -> page's /Im2 rgb), then /Im1 bilevel directly."""
    doc = Doc()
    gray, bilevel, rgb = flate(doc, gray_picture()), flate(doc, bilevel_picture()), flate(doc, rgb_picture())
    inner = doc.form(b"/Im2 Do")  # no /Resources: the page's apply
    outer = doc.form(b"/Im0 Do /Fm1 Do", Dictionary(XObject=Dictionary(Im0=gray, Fm1=inner)))
    page_resources = Dictionary(XObject=Dictionary(Fm0=outer, Im1=bilevel, Im2=rgb))
    doc.page(content=b"/Fm0 Do /Im1 Do", resources=page_resources)
    return doc.save(d / "forms.pdf")


def form_drawing_itself(d: Path) -> Path:
    doc = Doc()
    form = doc.form(b"/Im0 Do /Fm0 Do")
    form.Resources = Dictionary(XObject=Dictionary(Im0=flate(doc, gray_picture()), Fm0=form))
    doc.page(content=b"/Fm0 Do", resources=Dictionary(XObject=Dictionary(Fm0=form)))
    return doc.save(d / "form_drawing_itself.pdf")


INLINE_GRAY = gray_picture(8, 6)


def inline_image(d: Path) -> Path:
    """Draws /Im0, then an 8x6 inline gray image, then /Im1."""
    doc = Doc()
    inline = b"BI /W 8 /H 6 /CS /G /BPC 8 /F /AHx ID " + INLINE_GRAY.tobytes().hex().encode() + b"> EI\n"
    xobjects = Dictionary(Im0=jpeg(doc, rgb_picture()), Im1=flate(doc, bilevel_picture()))
    doc.page(content=b"/Im0 Do\n" + inline + b"/Im1 Do\n", resources=Dictionary(XObject=xobjects))
    return doc.save(d / "inline_image.pdf")


def no_image(d: Path) -> Path:
    doc = Doc()
    doc.page(content=b"0 0 m 100 100 l S")
    return doc.save(d / "no_image.pdf")


def broken_image(d: Path) -> Path:
    """Page 1 draws a good JPEG, then a Flate image whose data is not zlib at all."""
    doc = Doc()
    broken = doc.image(b"this is not deflate data" * 4, rgb_picture(), "/FlateDecode")
    doc.page(jpeg(doc, gray_picture()), broken)
    return doc.save(d / "broken_image.pdf")


def missing_xobject(d: Path) -> Path:
    doc = Doc()
    doc.page(jpeg(doc, gray_picture()), content=b"/Nowhere Do")
    return doc.save(d / "missing_xobject.pdf")


BUNDLE_PAGES = 240


def bundle_scan(page: int) -> int:
    """The picture on a bundle page (from 0): every 60th page repeats the one 59 pages before."""
    return page - 59 if page % 60 == 59 else page


def bundle(d: Path) -> Path:
    """240 pages, each a 16x16 JPEG 'scan' (4 byte-identical duplicates) plus one reused header."""
    doc = Doc()
    header = jpeg(doc, rgb_picture(32, 8))
    for page in range(BUNDLE_PAGES):
        doc.page(jpeg(doc, pattern_picture(bundle_scan(page))), header)
    return doc.save(d / "bundle.pdf")


def long_scan(d: Path, pages: int = 254) -> Path:
    """A long bundle to review: `pages` pages, each a small JPEG scan except every 50th, which has none."""
    doc = Doc()
    for n in range(1, pages + 1):
        doc.page(*([] if n % 50 == 0 else [jpeg(doc, pattern_picture(n))]))
    return doc.save(d / f"long-{pages}.pdf")


def mixed(d: Path) -> Path:
    """One of each output kind on its own page, to compare runs: jpg, png, tif (CMYK, CCITT), jp2."""
    doc = Doc()
    image = flate(doc, rgb_picture(), predictor=True)
    image.SMask = flate(doc, alpha_picture())
    for xobject in (
        jpeg(doc, rgb_picture()),
        image,
        flate(doc, cmyk_picture()),
        ccitt(doc, bilevel_picture()),
        doc.image(jpx_bytes(gray_picture()), gray_picture(), "/JPXDecode"),
    ):
        doc.page(xobject)
    return doc.save(d / "mixed.pdf")


GOOD = {  # factory -> pages
    jpeg_rgb: 1,
    jpeg_gray: 1,
    flate_rgb: 1,
    flate_gray: 1,
    flate_predictor: 1,
    rgb_with_smask: 1,
    cmyk: 1,
    bilevel_flate: 1,
    bilevel_ccitt: 1,
    jpx_rgb: 1,
    reused_on_three_pages: 3,
    duplicate_xobjects: 1,
    forms: 1,
    inline_image: 1,
    no_image: 1,
    bundle: BUNDLE_PAGES,
    mixed: 5,
}


# ---------- hostile files ----------
def raw_pdf(objects: list[bytes], trailer: bytes = b"") -> bytes:
    """A classic-xref PDF written by hand, for structures pikepdf would refuse to save.

    Object n is objects[n - 1]; b"XREF" in `trailer` becomes the xref table's offset.
    """
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    trailer = trailer.replace(b"XREF", b"%d" % xref)
    out += b"trailer\n<< /Size %d /Root 1 0 R %s >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, trailer, xref)
    return bytes(out)


def raw_stream(data: bytes, extra: bytes = b"", length: int | None = None) -> bytes:
    declared = len(data) if length is None else length
    return b"<< /Length %d %s >>\nstream\n%s\nendstream" % (declared, extra, data)


ONE_PAGE = [
    b"<< /Type /Catalog /Pages 2 0 R >>",
    b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Resources << >> /Contents 4 0 R >>",
]


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def empty(d: Path) -> Path:
    return write(d / "empty.pdf", b"")


def truncated(d: Path) -> Path:
    data = jpeg_rgb(d).read_bytes()
    return write(d / "truncated.pdf", data[: len(data) * 2 // 3])


def png_renamed(d: Path) -> Path:
    buffer = io.BytesIO()
    rgb_picture().save(buffer, "PNG")
    return write(d / "png_renamed.pdf", buffer.getvalue())


def zip_bytes() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(zipfile.ZipInfo("payload.txt", (2020, 1, 1, 0, 0, 0)), b"not a pdf " * 200)
    return buffer.getvalue()


def zip_renamed(d: Path) -> Path:
    return write(d / "zip_renamed.pdf", zip_bytes())


def html_renamed(d: Path) -> Path:
    return write(d / "html_renamed.pdf", b"<!DOCTYPE html>\n<html><body>%PDF-1.7 invoice</body></html>\n")


def elf_renamed(d: Path) -> Path:
    return write(d / "elf_renamed.pdf", b"\x7fELF\x02\x01\x01" + bytes(200))


def text_renamed(d: Path) -> Path:
    return write(d / "text_renamed.pdf", b"Dear customer,\nplease find attached...\n")


def junk_before_header(d: Path) -> Path:
    return write(d / "junk_before_header.pdf", b"\x00\x01junk\r\n" + jpeg_rgb(d).read_bytes())


def zip_appended(d: Path) -> Path:
    """A PDF/ZIP polyglot: the ZIP rides after %%EOF."""
    return write(d / "zip_appended.pdf", jpeg_rgb(d).read_bytes() + zip_bytes())


def garbage_after_eof(d: Path) -> Path:
    return write(d / "garbage_after_eof.pdf", jpeg_rgb(d).read_bytes() + b"<script>alert(1)</script>\n")


def encrypted(d: Path) -> Path:
    doc = Doc()
    doc.page(jpeg(doc, rgb_picture()))
    return doc.save(d / "encrypted.pdf", encryption=pikepdf.Encryption(owner="owner", user="user"))


def encrypted_where_poppler_cannot_check(d: Path) -> Path:
    """A real user password ("Hello") under revision 4 with AES and /StrF /Identity (pdf.js `bug1782186`): poppler 22
    says it does not support the revision and reads the file as not encrypted; MuPDF and qpdf ask for the password."""
    doc = Doc()
    doc.page(jpeg(doc, rgb_picture()))
    encryption = pikepdf.Encryption(owner="owner", user="Hello", R=4, aes=True, metadata=False)
    path = doc.save(d / "encrypted_r4_identity_strings.pdf", encryption=encryption)
    data = path.read_bytes()
    # The same length, so no offset moves: /StrF named Identity, two spaces fewer elsewhere in the dictionary.
    spaced = b"/AuthEvent /DocOpen /CFM /AESV2"
    changed = data.replace(b"/StrF /StdCF", b"/StrF /Identity").replace(spaced, spaced.replace(b" /", b"/"))
    assert len(changed) == len(data) and changed != data
    return write(path, changed)


def encrypted_without_user_password(d: Path) -> Path:
    doc = Doc()
    doc.page(jpeg(doc, rgb_picture()))
    return doc.save(d / "encrypted_open.pdf", encryption=pikepdf.Encryption(owner="owner", user=""))


def zeros_deflated(mib: int) -> bytes:
    """`mib` MiB of zeros as one zlib stream, built without compressing them all: after a
    full flush the deflater's output for the same input repeats exactly."""
    deflater, block = zlib.compressobj(9), bytes(1 << 20)
    first = deflater.compress(block) + deflater.flush(zlib.Z_FULL_FLUSH)
    again = deflater.compress(block) + deflater.flush(zlib.Z_FULL_FLUSH)
    return first + again * (mib - 1) + deflater.flush()  # the final checksum is not worth computing


def flate_bomb(d: Path, mib: int = 64) -> Path:
    """A content stream of a few KB per MiB that inflates to `mib` MiB."""
    doc = Doc()
    page = doc.page()
    page.obj.Contents = pikepdf.Stream(doc.pdf, zeros_deflated(mib))
    page.obj.Contents.Filter = Name.FlateDecode
    return doc.save(d / f"flate_bomb_{mib}.pdf")


def flate_bomb_in_ascii85(d: Path, mib: int = 64) -> Path:
    """The same bomb dressed in ASCII85 first, as a filter chain."""
    doc = Doc()
    page = doc.page()
    page.obj.Contents = pikepdf.Stream(doc.pdf, base64.a85encode(zeros_deflated(mib), adobe=True)[2:])
    page.obj.Contents.Filter = Array([Name.ASCII85Decode, Name.FlateDecode])
    return doc.save(d / "flate_bomb_in_ascii85.pdf")


def huge_image(d: Path) -> Path:
    doc = Doc()
    image = doc.image(zlib.compress(bytes(100)), gray_picture(), "/FlateDecode")
    image.Width = image.Height = 100_000
    doc.page(image)
    return doc.save(d / "huge_image.pdf")


def negative_dimensions(d: Path) -> Path:
    doc = Doc()
    image = jpeg(doc, gray_picture())
    image.Width = -40
    doc.page(image)
    return doc.save(d / "negative_dimensions.pdf")


def xref_prev_loop(d: Path) -> Path:
    return write(d / "xref_prev_loop.pdf", raw_pdf(ONE_PAGE + [raw_stream(b"0 0 m")], b"/Prev XREF"))


def damaged_xref(d: Path) -> Path:
    """The catalog's xref entry points 7 bytes past the object, as after a careless edit."""
    data = raw_pdf(ONE_PAGE + [raw_stream(b"0 0 m")])
    offset = data.index(b"1 0 obj")
    return write(d / "damaged_xref.pdf", data.replace(b"%010d 00000 n" % offset, b"%010d 00000 n" % (offset + 7)))


def page_tree_cycle(d: Path) -> Path:
    """The root's second kid is a /Pages node whose Kids point back at the root."""
    objects = ONE_PAGE[:1] + [
        b"<< /Type /Pages /Kids [3 0 R 5 0 R] /Count 2 >>",
        ONE_PAGE[2],
        raw_stream(b"0 0 m"),
        b"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 1 >>",
    ]
    return write(d / "page_tree_cycle.pdf", raw_pdf(objects))


def absurd_page_count(d: Path) -> Path:
    objects = [ONE_PAGE[0], b"<< /Type /Pages /Kids [3 0 R] /Count 999999999 >>", ONE_PAGE[2], raw_stream(b"")]
    return write(d / "absurd_page_count.pdf", raw_pdf(objects))


def five_pages(d: Path) -> Path:
    doc = Doc()
    for _ in range(5):
        doc.page()
    return doc.save(d / "five_pages.pdf")


def no_pages(d: Path) -> Path:
    return write(d / "no_pages.pdf", raw_pdf([ONE_PAGE[0], b"<< /Type /Pages /Kids [] /Count 0 >>"]))


def huge_length(d: Path) -> Path:
    return write(d / "huge_length.pdf", raw_pdf(ONE_PAGE + [raw_stream(b"0 0 m", length=10**12)]))


def with_catalog_entry(directory: Path, name: str, **entries) -> Path:
    doc = Doc()
    doc.page(jpeg(doc, gray_picture()))
    for key, value in entries.items():
        doc.pdf.Root[f"/{key}"] = value(doc.pdf) if callable(value) else value
    return doc.save(directory / f"{name}.pdf")


def javascript_open_action(d: Path) -> Path:
    action = Dictionary(S=Name.JavaScript, JS=pikepdf.String("app.alert('hi')"))
    return with_catalog_entry(d, "javascript_open_action", OpenAction=action)


def launch_action(d: Path) -> Path:
    action = Dictionary(Type=Name.Action, S=Name.Launch, F=pikepdf.String("calc.exe"))
    return with_catalog_entry(d, "launch_action", OpenAction=action)


def embedded_file(d: Path) -> Path:
    def names(pdf):
        stream = pdf.make_stream(b"MZ payload")
        stream.Type = Name.EmbeddedFile
        spec = Dictionary(Type=Name.Filespec, F=pikepdf.String("a.exe"), EF=Dictionary(F=stream))
        return Dictionary(EmbeddedFiles=Dictionary(Names=Array([pikepdf.String("a.exe"), spec])))

    return with_catalog_entry(d, "embedded_file", Names=names)


def xfa_form(d: Path) -> Path:
    def acroform(pdf):
        return Dictionary(Fields=Array(), XFA=pdf.make_stream(b"<xdp/>"))

    return with_catalog_entry(d, "xfa_form", AcroForm=acroform)


def with_annotation(directory: Path, name: str, make) -> Path:
    doc = Doc()
    page = doc.page(jpeg(doc, gray_picture()))
    page.obj.Annots = Array([doc.pdf.make_indirect(make(doc.pdf))])
    return doc.save(directory / f"{name}.pdf")


def file_attachment(d: Path) -> Path:
    """An annotation carrying a file: no /EmbeddedFiles name tree, only the file spec."""

    def annotation(pdf):
        spec = Dictionary(Type=Name.Filespec, F=pikepdf.String("a.exe"), EF=Dictionary(F=pdf.make_stream(b"MZ")))
        return Dictionary(Type=Name.Annot, Subtype=Name.FileAttachment, Rect=Array([0, 0, 9, 9]), FS=spec)

    return with_annotation(d, "file_attachment", annotation)


def rich_media(d: Path) -> Path:
    def annotation(pdf):
        return Dictionary(Type=Name.Annot, Subtype=Name.RichMedia, Rect=Array([0, 0, 9, 9]))

    return with_annotation(d, "rich_media", annotation)


def jbig2_image(d: Path) -> Path:
    doc = Doc()
    doc.page(doc.image(b"\x00" * 64, bilevel_picture(), "/JBIG2Decode"))
    return doc.save(d / "jbig2_image.pdf")


# ---------- legit but costly: for the sandbox's limits ----------
def many_objects(d: Path, count: int = 100_000) -> Path:
    """A valid PDF with `count` small unused arrays: qpdf holds them all while it reads."""
    objects = ONE_PAGE + [raw_stream(b"0 0 m")] + [b"[%d 1 2 3 4 5 6 7 8 9]" % i for i in range(count)]
    return write(d / "many_objects.pdf", raw_pdf(objects))


def big_gray_image(d: Path, side: int = 16384) -> Path:
    """One side x side gray Flate image of zeros: a few hundred KB holding side² bytes."""
    doc = Doc()
    image = doc.image(zeros_deflated(side * side >> 20), Image.new("L", (1, 1)), "/FlateDecode")
    image.Width = image.Height = side
    doc.page(image)
    return doc.save(d / "big_gray_image.pdf")
