"""JPEG 2000 streams: passed through when a standard decoder reads them as the PDF draws them, else
decoded.

How a PDF draws a JPXDecode image (ISO 32000-1, 7.4.9): a /ColorSpace in the dictionary says how the
samples are read and the codestream's own colour specification is ignored; /BitsPerComponent and /Decode
are ignored unless /ImageMask is true (PDFium and PDFBox ignore /Decode; poppler and pdf.js apply it);
an opacity channel is the image's soft mask with /SMaskInData 1 or 2 and is ignored without. Pillow and
browsers read a JPEG 2000 file by its own colour specification, take an extra component for opacity and
keep at most 8 bits a component. So the stream is passed through only when they agree with the PDF: one
(grey) or three (RGB) components of 8 unsigned bits, none subsampled, no palette box, no opacity
channel, and a /ColorSpace (if any) that is grey, RGB or ICC-based of that many components. Its
dimensions are the codestream's (the SIZ marker, read without decoding).

Anything else is decoded by OpenJPEG (openjpeg.py) and written as samples.py writes samples: the colour
components in the PDF's colour space (or the codestream's, without one), 8-bit below 9 bits (scaled as
1/2/4-bit samples are), 16-bit above (scaled to 16 bits), signed samples offset to unsigned; the opacity
channel kept as PNG alpha (over grey or RGB) with /SMaskInData 1 or 2 (premultiplied colours stay as
stored for 2) and dropped without it. Over an Indexed space each sample is an index, looked up as
indexed.py does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pikepdf

from . import colour, containers, indexed, openjpeg, samples
from .values import is_true

if TYPE_CHECKING:  # Pillow is imported where an image is decoded: it slows every child's start
    from PIL import Image

SOC_SIZ = b"\xff\x4f\xff\x51"
SIZ_EXTENT = struct.Struct(">IIII")  # Xsiz, Ysiz, XOsiz, YOsiz: the image area is offset to size
CMYK, SRGB, GREYSCALE, SYCC = 12, 16, 17, 18  # JP2 enumerated colour spaces
GREY_OR_RGB = {"DeviceGray", "CalGray", "DeviceRGB", "CalRGB", "ICCBased"}
# Colour components of a JP2 enumerated colour space; other values are left to the PDF's space.
ENUMERATED_COMPONENTS: dict[int | None, int] = {SRGB: 3, GREYSCALE: 1, SYCC: 3, CMYK: 4}
# Without a /ColorSpace, the colour components are written as these (others as inks).
CODESTREAM_SPACES = {
    1: colour.Space("DeviceGray", 1, "DeviceGray"),
    3: colour.Space("DeviceRGB", 3, "DeviceRGB"),
    4: colour.Space("DeviceCMYK", 4, "DeviceCMYK"),
}


@dataclass(frozen=True)
class Header:
    width: int
    height: int
    components: list[tuple[int, bool, bool]]  # (precision, signed, subsampled) of each
    enumerated: int | None = None  # the JP2 'colr' box's enumerated colour space
    opacity: tuple[int, ...] = ()  # channels a 'cdef' box marks as opacity
    palette: bool = False
    codestream: int = 0  # where the codestream starts in the stream's data


def header_of(data: bytes) -> Header:
    """The JP2 boxes that change a reading and the codestream's SIZ marker; ValueError without one."""
    if data.startswith(SOC_SIZ):
        return Header(*_siz(data, 0))
    boxes, found = _boxes(data, 0, len(data)), dict[bytes, Any]()
    for kind, start, end in boxes:
        if kind == b"jp2h":
            for child, first, last in _boxes(data, start, end):
                found.setdefault(child, data[first:last])  # of several colour boxes, the first applies
        elif kind == b"jp2c":
            colr, cdef = found.get(b"colr", b""), found.get(b"cdef", b"")
            enumerated = int.from_bytes(colr[3:7], "big") if colr[:1] == b"\x01" and len(colr) >= 7 else None
            return Header(*_siz(data, start), enumerated, _opacity(cdef), b"pclr" in found, start)
    raise ValueError("no JPEG 2000 codestream in the stream")


def _boxes(data: bytes, start: int, end: int) -> list[tuple[bytes, int, int]]:
    """(type, content start, content end) of the boxes between start and end."""
    found = []
    while start + 8 <= end:
        length, kind, content = int.from_bytes(data[start : start + 4], "big"), data[start + 4 : start + 8], start + 8
        if length == 1 and start + 16 <= end:
            length, content = int.from_bytes(data[start + 8 : start + 16], "big"), start + 16
        box_end = end if length == 0 else start + length
        if box_end < content or box_end > end:
            box_end = end
        found.append((kind, content, box_end))
        start = box_end
        if kind == b"jp2c":
            break
    return found


def _siz(data: bytes, start: int) -> tuple[int, int, list[tuple[int, bool, bool]]]:
    """(width, height, (precision, signed, subsampled) of each component) from the SIZ marker."""
    if data[start : start + 4] != SOC_SIZ or len(data) < start + 42:
        raise ValueError("the JPEG 2000 codestream does not start with its SIZ marker")
    right, bottom, left, top = SIZ_EXTENT.unpack_from(data, start + 8)
    count, first = int.from_bytes(data[start + 40 : start + 42], "big"), start + 42
    specs = data[first : first + 3 * count]
    if right <= left or bottom <= top or not count or len(specs) != 3 * count:
        raise ValueError("the JPEG 2000 codestream's SIZ marker is malformed")
    components = [
        ((specs[i] & 0x7F) + 1, bool(specs[i] & 0x80), specs[i + 1 : i + 3] != b"\x01\x01")
        for i in range(0, 3 * count, 3)
    ]
    return right - left, bottom - top, components


def _opacity(cdef: bytes) -> tuple[int, ...]:
    count = int.from_bytes(cdef[:2], "big")
    entries = [cdef[2 + 6 * i : 8 + 6 * i] for i in range(count) if 8 + 6 * i <= len(cdef)]
    return tuple(int.from_bytes(e[:2], "big") for e in entries if int.from_bytes(e[2:4], "big") in (1, 2))


def passes_through(image: pikepdf.Stream, header: Header, space: colour.Space) -> bool:
    n = len(header.components)
    if n not in (1, 3) or header.palette or header.opacity or is_true(image.get("/ImageMask")):
        return False
    if any(c != (8, False, False) for c in header.components):
        return False
    if not space.family:  # the codestream's colour specification applies, as Pillow reads it
        return ENUMERATED_COMPONENTS.get(header.enumerated, n) == n
    return space.family in GREY_OR_RGB and space.components == n and header.enumerated != SYCC


def decoded(image: pikepdf.Stream, data: bytes, header: Header, space: colour.Space) -> tuple[bytes, str, int]:
    """(file bytes, extension, bits) of the samples the PDF draws."""
    # A /ColorSpace describes the codestream's samples: a JP2 palette (which OpenJPEG would apply) is not used.
    planes = openjpeg.decode(data[header.codestream :] if header.palette and space.family else data)
    colours = space.components or ENUMERATED_COMPONENTS.get(header.enumerated) or min(len(planes), 4)
    opacity = [i for i in header.opacity if i < len(planes)] or list(range(colours, len(planes)))
    drawn = [p for i, p in enumerate(planes) if i not in opacity][:colours]
    if len(drawn) != colours:
        raise ValueError(f"the JPEG 2000 data has {len(drawn)} colour components, its colour space {colours}")
    if space.family == "Indexed":
        return _indexed(image.ColorSpace, drawn[0], header)
    alpha = image.get("/SMaskInData") in (1, 2) and bool(opacity) and colours in containers.PNG_COLOR_TYPES
    kept = drawn + [planes[opacity[0]]] if alpha else drawn
    bits = 16 if max(p.precision for p in kept) > 8 else 8
    width, height = header.width, header.height
    rows = _interleaved([_scaled(p, width, height, bits) for p in kept], bits // 8)
    written_space = space if space.components else CODESTREAM_SPACES.get(colours, colour.Space("", colours, "DeviceN"))
    if alpha:
        return _with_alpha(rows, width, height, colours, bits), "png", bits
    if bits == 16:
        return samples.sixteen(rows, width, height, colours, None)
    return samples.from_components(rows, width, height, colours, written_space, colour.icc_profile(image))


def _indexed(colorspace: pikepdf.Object, plane: openjpeg.Plane, header: Header) -> tuple[bytes, str, int]:
    """Each sample an index into the PDF's palette, as stored (not scaled); past its end, its last entry."""
    if not indexed.well_formed(colorspace):
        raise ValueError("the Indexed colour space of the JPEG 2000 image is malformed")
    last = max(0, min(255, int(colorspace[2])))
    picture = _full_size(plane, header.width, header.height)
    indices = picture.convert("L").tobytes().translate(bytes(min(i, last) for i in range(256)))
    return indexed.looked_up(colorspace, indices, header.width, header.height)


def _scaled(plane: openjpeg.Plane, width: int, height: int, bits: int) -> bytes:
    """The plane at full size, unsigned, on 0..255 or 0..65535 (big-endian), one sample a pixel."""
    picture = _full_size(plane, width, height)
    top, stored = (1 << bits) - 1, (1 << plane.precision) - 1
    if plane.signed:
        picture = picture.point(lambda v: v + (1 << plane.precision - 1))
    if stored != top:  # exact for whole ratios (1, 2, 4 bits to 8); rounded otherwise
        picture = picture.point(lambda v: v * (top / stored) + 0.5)
    return picture.convert("L").tobytes() if bits == 8 else picture.tobytes("raw", "I;16B")


def _full_size(plane: openjpeg.Plane, width: int, height: int) -> Image.Image:
    """The plane as a 32-bit Pillow picture, a subsampled one repeated over the pixels it covers."""
    from PIL import Image

    picture = Image.frombuffer("I", (plane.width, plane.height), plane.samples, "raw", "I", 0, 1)
    return picture if picture.size == (width, height) else picture.resize((width, height), Image.Resampling.NEAREST)


def _interleaved(planes: list[bytes], size: int) -> bytes:
    if len(planes) == 1:
        return planes[0]
    step, out = size * len(planes), bytearray(len(planes[0]) * len(planes))
    for c, plane in enumerate(planes):
        for k in range(size):
            out[c * size + k :: step] = plane[k::size]
    return bytes(out)


def _with_alpha(rows: bytes, width: int, height: int, colours: int, bits: int) -> bytes:
    import zlib

    row = width * (colours + 1) * bits // 8
    filtered = b"".join(b"\0" + rows[y * row : (y + 1) * row] for y in range(height))
    return containers.png(width, height, bits, colours, zlib.compress(filtered, samples.PNG_LEVEL), alpha=True)
