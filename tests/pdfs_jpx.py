"""Generated JPEG 2000 streams whose drawn samples a standard decoder reads differently (issue 14).

Like tests/pdfs_pixels.py: each factory returns a stream (or a path) and, where it says, the samples the
PDF draws, computed from what was put into the codestream (Pillow's OpenJPEG, lossless).
"""

import io
from pathlib import Path

import pikepdf
from pikepdf import Array, Name
from PIL import Image

from tests import pdfs
from tests.pdfs_pixels import RGB_PALETTE, stream


# What Pillow reads against what the PDF draws: ISO 32000-1, 7.4.9.
def jpx_bytes(picture: Image.Image, codestream_only: bool = False) -> bytes:
    """Lossless JPEG 2000 from Pillow (OpenJPEG): a JP2 file, or a bare codestream without its boxes."""
    buffer = io.BytesIO()
    picture.save(buffer, "JPEG2000", irreversible=False, no_jp2=codestream_only)
    return buffer.getvalue()


def jpx(pdf, data: bytes, width: int, height: int, **keys) -> pikepdf.Stream:
    """A JPXDecode image; no /BitsPerComponent (the codestream says) and no /ColorSpace unless given."""
    image = stream(pdf, data, width, height, keys.pop("ColorSpace", None), Filter=Name.JPXDecode, **keys)
    del image["/BitsPerComponent"]
    return pdf.make_indirect(image)  # as in a file, and so drawn_by_pdfium can copy it


def rgba_picture() -> Image.Image:
    picture = pdfs.rgb_picture()
    picture.putalpha(pdfs.alpha_picture())
    return picture


def gray16_picture(width: int = 10, height: int = 6) -> Image.Image:
    """16-bit grey whose low bytes are not zero, so 8 bits cannot hold it."""
    picture = Image.new("I;16", (width, height))
    picture.putdata([(x * 6007 + y * 1777) % 65536 for y in range(height) for x in range(width)])
    return picture


def cmyk_codestream() -> bytes:
    """Four components in a bare codestream (no colour specification): Pillow takes the fourth for
    opacity, a PDF whose /ColorSpace is DeviceCMYK draws them as C, M, Y and K."""
    return jpx_bytes(Image.frombytes("RGBA", (20, 12), pdfs.cmyk_picture().tobytes()), codestream_only=True)


def indexed_jpx(pdf) -> tuple[pikepdf.Stream, bytes]:
    """4 x 2 indices (0 1 2 3 / 3 2 1 0) in a one-component JPEG 2000 the PDF looks up in an RGB palette;
    Pillow reads the indices as grey."""
    indices = Image.frombytes("L", (4, 2), bytes([0, 1, 2, 3, 3, 2, 1, 0]))
    space = Array([Name.Indexed, Name.DeviceRGB, 3, pikepdf.String(b"".join(RGB_PALETTE))])
    looked_up = b"".join(RGB_PALETTE[i] for i in indices.tobytes())
    return jpx(pdf, jpx_bytes(indices), 4, 2, ColorSpace=space), looked_up


def jpx_page(d: Path) -> Path:
    """One page drawing an RGB JPX whose dictionary says 1 x 1, an RGBA one (no /SMaskInData) and a 16-bit grey one."""
    doc = pdfs.Doc()
    lying = jpx(doc.pdf, jpx_bytes(pdfs.rgb_picture()), 1, 1)
    rgba = jpx(doc.pdf, jpx_bytes(rgba_picture()), 48, 32)
    deep = jpx(doc.pdf, jpx_bytes(gray16_picture()), 10, 6)
    doc.page(lying, rgba, deep)
    return doc.save(d / "jpx_page.pdf")


JP2_PALETTE = [bytes([200, 10, 10]), bytes([10, 200, 10]), bytes([10, 10, 200]), bytes([90, 90, 90])]


def _box(kind: bytes, content: bytes) -> bytes:
    return (8 + len(content)).to_bytes(4, "big") + kind + content


def with_jp2_palette(data: bytes) -> bytes:
    """A one-component JP2 given a palette box (pclr, JP2_PALETTE) and its component mapping (cmap), its colour
    specification made sRGB: a JP2 reader shows the palette's colours for the stored indices."""
    start = data.index(b"jp2h") - 4
    end = start + int.from_bytes(data[start : start + 4], "big")
    ihdr = data[start + 8 : start + 8 + 22]
    colr = _box(b"colr", b"\x01\x00\x00" + (16).to_bytes(4, "big"))
    pclr = _box(b"pclr", len(JP2_PALETTE).to_bytes(2, "big") + bytes([3, 7, 7, 7]) + b"".join(JP2_PALETTE))
    cmap = _box(b"cmap", b"".join(b"\x00\x00\x01" + bytes([column]) for column in range(3)))
    return data[:start] + _box(b"jp2h", ihdr + colr + pclr + cmap) + data[end:]


def palette_jpx(pdf, colorspace=None) -> pikepdf.Stream:
    """4 x 2 indices (0 1 2 3 / 3 2 1 0) in a JP2 with its own palette, under the PDF's /ColorSpace (if any)."""
    indices = Image.frombytes("L", (4, 2), bytes([0, 1, 2, 3, 3, 2, 1, 0]))
    keys = {"ColorSpace": colorspace} if colorspace is not None else {}
    return jpx(pdf, with_jp2_palette(jpx_bytes(indices)), 4, 2, **keys)
