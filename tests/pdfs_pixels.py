"""Generated image streams whose drawn samples a standard decoder used to get wrong (issue 14).

Each factory takes a pikepdf.Pdf (or a directory) and returns an image stream (or a path) together with
the samples the PDF draws, computed from the numbers put into the stream, never by the code under test.
"""

import io
import itertools
import struct
import zlib
from pathlib import Path

import pikepdf
from pikepdf import Array, Dictionary, Name
from PIL import Image, ImageChops

from tests import pdfs


def stream(pdf, data: bytes, width: int, height: int, colorspace, bits: int = 8, **keys) -> pikepdf.Stream:
    image = pikepdf.Stream(pdf, data)
    image.Type, image.Subtype, image.Width, image.Height = Name.XObject, Name.Image, width, height
    if colorspace is not None:
        image.ColorSpace = colorspace
    image.BitsPerComponent = bits
    for key, value in keys.items():
        image[f"/{key}"] = value
    return image


def cmyk_jpeg(pdf, decode: bool = False) -> tuple[pikepdf.Stream, Image.Image]:
    """A CMYK JPEG as libjpeg writes it (Adobe APP14). The PDF draws the scan's samples as they are,
    or inverted by /Decode [1 0 1 0 1 0 1 0]; Pillow reads them inverted (Adobe's convention)."""
    data = pdfs.jpeg_bytes(pdfs.cmyk_picture(), quality=95)
    as_pillow_reads = Image.open(io.BytesIO(data))
    extra = {"Decode": Array([1, 0] * 4)} if decode else {}
    image = stream(pdf, data, 20, 12, Name.DeviceCMYK, Filter=Name.DCTDecode, **extra)
    return image, (as_pillow_reads if decode else ImageChops.invert(as_pillow_reads))


def cmyk_profile() -> bytes:
    """A small working ICC v2 printer profile: CMYK to L*a*b* by an 8-bit table through the corners of the
    ink cube (no ink white, each ink its hue, black dark), for ICCBased images with /N 4."""
    clut = bytearray()
    for c, m, y, k in itertools.product((0, 1), repeat=4):  # the first channel varies slowest
        light = max(0.0, 1 - 0.35 * c - 0.45 * m - 0.1 * y) * (1 - 0.9 * k)
        a, b = (-45 * c + 70 * m - 5 * y) * (1 - k), (-50 * c - 10 * m + 90 * y) * (1 - k)
        clut += bytes([round(light * 255), round(128 + max(-128, min(127, a))), round(128 + max(-128, min(127, b)))])
    ramp, d50 = bytes(range(256)), _s15(0.9642) + _s15(1.0) + _s15(0.8249)
    matrix = b"".join(_s15(1 if i % 4 == 0 else 0) for i in range(9))
    text = b"Pagetrail test CMYK\0"
    tags = [
        (b"A2B0", b"mft1" + bytes(4) + bytes([4, 3, 2, 0]) + matrix + ramp * 4 + bytes(clut) + ramp * 3),
        (b"wtpt", b"XYZ " + bytes(4) + d50),
        (b"desc", b"desc" + bytes(4) + struct.pack(">I", len(text)) + text + bytes(78)),
    ]
    offset, table, body = 128 + 4 + 12 * len(tags), b"", b""
    for signature, data in tags:
        data += bytes(-len(data) % 4)
        table, body = table + signature + struct.pack(">II", offset + len(body), len(data)), body + data
    header = struct.pack(">I", offset + len(body)) + b"lcms" + bytes([2, 0x10, 0, 0]) + b"prtrCMYKLab " + bytes(12)
    header = (header + b"acsp" + bytes(28) + d50).ljust(128, b"\0")
    return header + struct.pack(">I", len(tags)) + table + body


def _s15(value: float) -> bytes:
    return struct.pack(">i", round(value * 65536))


def icc_cmyk_jpeg(pdf) -> tuple[pikepdf.Stream, Image.Image]:
    """The CMYK JPEG of cmyk_jpeg() in an ICCBased space of four components (/N 4)."""
    image, expected = cmyk_jpeg(pdf)
    profile = pdf.make_stream(cmyk_profile())
    profile.N, profile.Alternate = 4, Name.DeviceCMYK
    image.ColorSpace = Array([Name.ICCBased, profile])
    return pdf.make_indirect(image), expected


def inverted_gray_jpeg(pdf) -> tuple[pikepdf.Stream, Image.Image]:
    data = pdfs.jpeg_bytes(pdfs.gray_picture())
    image = stream(pdf, data, 40, 24, Name.DeviceGray, Filter=Name.DCTDecode, Decode=Array([1, 0]))
    return image, ImageChops.invert(Image.open(io.BytesIO(data)))


def rgb16(pdf, width: int = 7, height: int = 5) -> tuple[pikepdf.Stream, bytes]:
    """16-bit RGB whose low bytes differ from their high bytes; returns the big-endian samples."""
    samples = b"".join(
        (x * 9001 + y * 37 + c * 4099 & 0xFFFF).to_bytes(2, "big")
        for y in range(height)
        for x in range(width)
        for c in range(3)
    )
    return stream(pdf, zlib.compress(samples), width, height, Name.DeviceRGB, 16, Filter=Name.FlateDecode), samples


def tints(width: int, height: int, components: int) -> bytes:
    return bytes(
        (x * 17 + y * 29 + c * 71) % 256 for y in range(height) for x in range(width) for c in range(components)
    )


def separation(pdf) -> tuple[pikepdf.Stream, bytes]:
    tint = pdf.make_stream(b"{0 exch 0 exch 0 exch}")
    tint.FunctionType, tint.Domain, tint.Range = 4, Array([0, 1]), Array([0, 1, 0, 1, 0, 1, 0, 1])
    space = Array([Name.Separation, Name("/PANTONE 485 C"), Name.DeviceCMYK, tint])
    data = tints(11, 6, 1)
    return stream(pdf, zlib.compress(data), 11, 6, space, Filter=Name.FlateDecode), data


def run_length(data: bytes) -> bytes:
    """RunLengthDecode data: literal runs of up to 128 bytes, then the end-of-data marker."""
    runs = [data[i : i + 128] for i in range(0, len(data), 128)]
    return b"".join(bytes([len(run) - 1]) + run for run in runs) + b"\x80"


def separation_run_length(pdf) -> tuple[pikepdf.Stream, bytes]:
    image, data = separation(pdf)
    image.write(run_length(data), filter=Name.RunLengthDecode)
    return image, data


def device_n(pdf, inks: int) -> tuple[pikepdf.Stream, bytes]:
    tint = pdf.make_stream({2: b"{pop pop 0 0 0 0}", 3: b"{pop pop pop 0 0 0 0}"}.get(inks, b"{}"))
    tint.FunctionType, tint.Domain, tint.Range = 4, Array([0, 1] * inks), Array([0, 1] * 4)
    names = Array([Name(f"/Ink{i}") for i in range(inks)])
    space = Array([Name.DeviceN, names, Name.DeviceCMYK, tint])
    data = tints(5, 3, inks)
    return stream(pdf, zlib.compress(data), 5, 3, space, Filter=Name.FlateDecode), data


def lab(pdf) -> tuple[pikepdf.Stream, bytes]:
    space = Array([Name.Lab, Dictionary(WhitePoint=Array([0.9505, 1, 1.089]), Range=Array([-100, 100, -100, 100]))])
    data = tints(6, 4, 3)
    return stream(pdf, zlib.compress(data), 6, 4, space, Filter=Name.FlateDecode), data


def four_bit_rgb(pdf) -> tuple[pikepdf.Stream, bytes]:
    """3 x 2 pixels of 4-bit RGB: 9 samples a row, so rows end half a byte early."""
    values = [[(x * 3 + c + y * 5) % 16 for x in range(3) for c in range(3)] for y in range(2)]
    rows = [bytes((r + [0])[i] << 4 | (r + [0])[i + 1] for i in range(0, 10, 2)) for r in values]
    expected = bytes(v * 17 for r in values for v in r)
    return stream(pdf, b"".join(rows), 3, 2, Name.DeviceRGB, 4), expected


PALETTE_INDICES = bytes([0b00011011, 0b11100100])  # 4 x 2 pixels of 2 bits: 0 1 2 3 / 3 2 1 0


def indexed(pdf, base, entries: list[bytes], **keys) -> tuple[pikepdf.Stream, bytes]:
    """4 x 2 pixels indexing a palette of `entries` over `base`; returns the looked-up samples."""
    space = Array([Name.Indexed, base, len(entries) - 1, pikepdf.String(b"".join(entries))])
    indices = [0, 1, 2, 3, 3, 2, 1, 0]
    looked_up = b"".join(entries[min(i, len(entries) - 1)] for i in indices)
    return stream(pdf, zlib.compress(PALETTE_INDICES), 4, 2, space, 2, Filter=Name.FlateDecode, **keys), looked_up


CMYK_PALETTE = [bytes([0, 0, 0, 0]), bytes([255, 0, 0, 0]), bytes([0, 128, 0, 64]), bytes([10, 20, 30, 255])]
LAB_PALETTE = [bytes([255, 128, 128]), bytes([0, 128, 128]), bytes([128, 0, 255]), bytes([60, 200, 30])]
RGB_PALETTE = [bytes([255, 0, 0]), bytes([0, 255, 0]), bytes([0, 0, 255]), bytes([9, 99, 199])]


def indexed_cmyk(pdf) -> tuple[pikepdf.Stream, bytes]:
    return indexed(pdf, Name.DeviceCMYK, CMYK_PALETTE)


def indexed_lab(pdf) -> tuple[pikepdf.Stream, bytes]:
    return indexed(pdf, lab(pdf)[0].ColorSpace, LAB_PALETTE)


def indexed_broken_profile(pdf) -> tuple[pikepdf.Stream, bytes]:
    """Over an ICCBased RGB space whose profile is no profile: the palette still says the colours."""
    profile = pdf.make_stream(b"   ")
    profile.N = 3
    return indexed(pdf, Array([Name.ICCBased, profile]), RGB_PALETTE)


def indexed_short_palette(pdf) -> tuple[pikepdf.Stream, bytes]:
    """Indices 2 and 3 are past a palette of two entries: they draw its last."""
    return indexed(pdf, Name.DeviceRGB, RGB_PALETTE[:2])


def inline_indexed(d: Path) -> Path:
    palette = b"<" + b"".join(RGB_PALETTE).hex().encode() + b">"
    return inline_page(
        d, "inline_indexed", b"BI /W 4 /H 2 /CS [/I /RGB 3 " + palette + b"] /BPC 2 ID " + PALETTE_INDICES + b"\nEI\n"
    )


# ---------- whole files, for images only a content stream can hold ----------
def inline_page(directory: Path, name: str, inline: bytes) -> Path:
    doc = pdfs.Doc()
    doc.page(content=inline)
    return doc.save(directory / f"{name}.pdf")


STENCIL_ROWS = bytes([0b10100000, 0b01010000])  # 4 x 2, 0 paints (default /Decode)


def inline_stencil(d: Path) -> Path:
    return inline_page(d, "inline_stencil", b"BI /W 4 /H 2 /IM true /D [0 1] ID " + STENCIL_ROWS + b"\nEI\n")


def inline_ccitt_stencil(d: Path, picture: Image.Image) -> Path:
    """A CCITT G4 stencil mask inline: its fax-black (0) samples paint."""
    size = b"/W %d /H %d" % picture.size
    return inline_page(
        d,
        "inline_ccitt_stencil",
        b"BI "
        + size
        + b" /IM true /F /CCF /DP << /K -1 /Columns %d >> ID " % picture.width
        + pdfs.ccitt_bytes(picture)
        + b"\nEI\n",
    )


def tiny_inline(d: Path) -> Path:
    """One RGB pixel, unfiltered: three bytes between ID and EI."""
    return inline_page(d, "tiny_inline", b"BI /W 1 /H 1 /CS /RGB /BPC 8 ID \x10\x80\xf0\nEI\n")


def inline_with_length(d: Path) -> Path:
    """One RGB pixel whose dictionary states its /L (length), as some producers write."""
    return inline_page(d, "inline_with_length", b"BI /W 1 /H 1 /CS /RGB /BPC 8 /L 3 ID \x10\x80\xf0\nEI\n")


INLINE_JPEG_PICTURE = pdfs.gray_picture(8, 8)


def inline_jpeg(d: Path) -> Path:
    """An inline JPEG whose data begins after ID and a CR LF, as some producers write it."""
    data = pdfs.jpeg_bytes(INLINE_JPEG_PICTURE)
    return inline_page(d, "inline_jpeg", b"BI /W 8 /H 8 /CS /G /BPC 8 /F /DCT ID\r\n" + data + b"\nEI\n")


def ccitt_group3(pdf, picture: Image.Image, byte_align: bool = False) -> pikepdf.Stream:
    """One-dimensional Group 3 (K=0) as libtiff writes it, with an EOL code before each row; fax
    white is a 0 bit, so the picture is inverted first (see pdfs.ccitt)."""
    buffer = io.BytesIO()
    options = {"tiffinfo": {292: 4}} if byte_align else {}  # Group3Options: fill bits before each EOL
    inverted = ImageChops.invert(picture.convert("L")).convert("1")
    inverted.save(buffer, "TIFF", compression="group3", strip_size=1 << 30, **options)
    tiff = Image.open(buffer)
    offset, length = tiff.tag_v2[273][0], tiff.tag_v2[279][0]
    parms = Dictionary(K=0, Columns=picture.width, Rows=picture.height, EndOfLine=True, EncodedByteAlign=byte_align)
    return stream(
        pdf,
        buffer.getvalue()[offset : offset + length],
        picture.width,
        picture.height,
        Name.DeviceGray,
        1,
        Filter=Name.CCITTFaxDecode,
        DecodeParms=parms,
    )


def _segment(number: int, kind: int, data: bytes) -> bytes:
    """A JBIG2 segment header (T.88 7.2) on page 1, referring to no other segment, then its data."""
    return number.to_bytes(4, "big") + bytes([kind, 0, 1]) + len(data).to_bytes(4, "big") + data


def jbig2_mmr(pdf, picture: Image.Image) -> pikepdf.Stream:
    """JBIG2 as PDF embeds it (no file header): a page, then one immediate lossless generic region
    coded with MMR, which is the same code as CCITT Group 4 (fax black is a 1 pixel, black)."""
    doc = pdfs.Doc()
    fax = pdfs.ccitt(doc, picture).read_raw_bytes()
    width, height = (v.to_bytes(4, "big") for v in picture.size)
    page = _segment(0, 48, width + height + bytes(8) + b"\x00\x00\x00")
    region = _segment(1, 39, width + height + bytes(8) + b"\x00" + b"\x01" + fax)
    return stream(pdf, page + region, picture.width, picture.height, Name.DeviceGray, 1, Filter=Name.JBIG2Decode)


def untransformed_jpeg(pdf) -> tuple[pikepdf.Stream, Image.Image]:
    """A JFIF (YCbCr) JPEG that /ColorTransform 0 tells the PDF reader not to convert to RGB; the
    expected samples are the YCbCr ones, as Pillow gives them when asked for YCbCr."""
    data = pdfs.jpeg_bytes(pdfs.rgb_picture())
    picture = Image.open(io.BytesIO(data))
    picture.draft("YCbCr", picture.size)
    expected = Image.frombytes("RGB", picture.size, picture.tobytes())
    image = stream(pdf, data, 48, 32, Name.DeviceRGB, Filter=Name.DCTDecode, DecodeParms=Dictionary(ColorTransform=0))
    return image, expected


def stencil_polarities(d: Path) -> Path:
    """The same stencil rows drawn under the default /Decode (0 paints), under [1 0] (1 paints), and as
    an XObject: readers disagree on how to write a stencil (issue 14), the PDF does not."""
    doc = pdfs.Doc()
    mask = stream(doc.pdf, STENCIL_ROWS, 4, 2, None, 1, ImageMask=True)
    del mask["/BitsPerComponent"]
    inline = b"BI /W 4 /H 2 /IM true ID " + STENCIL_ROWS + b"\nEI\n"
    flipped = b"BI /W 4 /H 2 /IM true /D [1 0] ID " + STENCIL_ROWS + b"\nEI\n"
    doc.page(content=inline + flipped + b"/M Do\n", resources=Dictionary(XObject=Dictionary(M=mask)))
    return doc.save(d / "stencil_polarities.pdf")


def separation_page(d: Path) -> Path:
    doc = pdfs.Doc()
    image, _ = separation(doc.pdf)
    doc.page(content=b"/Im0 Do\n", resources=Dictionary(XObject=Dictionary(Im0=image)))
    return doc.save(d / "separation.pdf")


def drawn_by_pdfium(image: pikepdf.Stream) -> Image.Image:
    """What PDFium paints for the image alone on a white page of its size, one pixel a sample."""
    import pypdfium2 as pdfium

    pdf = pikepdf.Pdf.new()
    copy = pdf.copy_foreign(image)  # an indirect object: see jpx()
    k = -(-3 // min(int(image.Width), int(image.Height)))  # pages are at least 3 units a side
    width, height = int(image.Width) * k, int(image.Height) * k
    page = pdf.add_blank_page(page_size=(width, height))
    page.obj.Resources = Dictionary(XObject=Dictionary(Im0=copy))
    page.obj.Contents = pdf.make_stream(b"q %d 0 0 %d 0 0 cm /Im0 Do Q" % (width, height))
    buffer = io.BytesIO()
    pdf.save(buffer)
    document = pdfium.PdfDocument(buffer.getvalue())
    try:
        return document[0].render(scale=1 / k).to_pil().convert("RGB")
    finally:
        document.close()


def short_data_page(d: Path) -> Path:
    """A 1-bit grey image whose Flate data stops part-way through a row (qpdf `unsupported-optimization.pdf`)."""
    doc = pdfs.Doc()
    picture = pdfs.bilevel_picture(20, 12)  # rows of 3 bytes, 4 bits of them padding
    image = doc.image(zlib.compress(picture.tobytes()[: 3 * 7 + 1]), picture, "/FlateDecode")
    doc.page(image)
    return doc.save(d / "short_data.pdf")


def jpeg_size_unlike_its_dictionary_page(d: Path) -> Path:
    """A JPEG of 24 x 16 pixels whose dictionary says 1 x 1 (pdf.js `issue6413.pdf`)."""
    doc = pdfs.Doc()
    picture = pdfs.rgb_picture(24, 16)
    doc.page(doc.image(pdfs.jpeg_bytes(picture), Image.new("RGB", (1, 1)), "/DCTDecode"))
    return doc.save(d / "jpeg_size_unlike_its_dictionary.pdf")
