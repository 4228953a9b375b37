"""PNG and TIFF files around compressed data taken as it is from a PDF stream.

No pixel is decoded or re-compressed here: a Flate stream with PNG predictors is a PNG
IDAT payload, a Flate stream without predictors is a TIFF Adobe-Deflate strip, and CCITT
data is a TIFF Group 3/4 strip. Every header field is fixed, so the same stream always
gives the same bytes.
"""

import struct
from typing import Any

from zlib_ng import zlib_ng  # the same CRC-32 as zlib, about twelve times as fast (a PNG's IDAT is checksummed whole)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_COLOR_TYPES = {1: 0, 3: 2}  # components -> greyscale, truecolour
PNG_ALPHA = 4  # added to a colour type: each pixel carries its opacity last

TIFF_SHORT, TIFF_LONG, TIFF_RATIONAL = 3, 4, 5
TIFF_ADOBE_DEFLATE, TIFF_G4 = 8, 4
# Photometric interpretation by components: black is zero, RGB, separated (CMYK).
TIFF_PHOTOMETRIC = {1: 1, 3: 2, 4: 5}
TIFF_SEPARATED, TIFF_INKSET_NOT_CMYK = 5, 2
DPI_72 = struct.pack("<II", 72, 1)
TIFF_SIZES = {TIFF_SHORT: 2, TIFF_LONG: 4, TIFF_RATIONAL: 8}


def png(width: int, height: int, bits: int, components: int, idat: bytes, alpha: bool = False) -> bytes:
    """A PNG whose single IDAT chunk is `idat`: a zlib stream of PNG-filtered rows (each pixel's
    components, then its opacity with `alpha`)."""
    color_type = PNG_COLOR_TYPES[components] | (PNG_ALPHA if alpha else 0)
    header = struct.pack(">IIBBBBB", width, height, bits, color_type, 0, 0, 0)
    return b"".join((PNG_SIGNATURE, _chunk(b"IHDR", header), _chunk(b"IDAT", idat), _chunk(b"IEND", b"")))


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib_ng.crc32(data, zlib_ng.crc32(kind))
    return b"".join((struct.pack(">I", len(data)), kind, data, struct.pack(">I", crc)))


def deflate_tiff(width: int, height: int, bits: int, components: int, strip: bytes, predictor: int = 1) -> bytes:
    """A TIFF of one Adobe-Deflate strip: a zlib stream of byte-padded rows, unfiltered (predictor 1)
    or with horizontal differencing (predictor 2, the same in TIFF as in PDF). Samples of 16 bits
    are little-endian, as the file is. Components other than 1, 3 and 4 are separated inks
    (InkSet "not CMYK"), the way a DeviceN image keeps each of its colorants."""
    tags = _image_tags(width, height, components) + [(317, TIFF_SHORT, [predictor])]
    photometric = TIFF_PHOTOMETRIC.get(components, TIFF_SEPARATED)
    tags += [(262, TIFF_SHORT, [photometric]), (259, TIFF_SHORT, [TIFF_ADOBE_DEFLATE])]
    if components not in TIFF_PHOTOMETRIC:
        tags += [(332, TIFF_SHORT, [TIFF_INKSET_NOT_CMYK]), (334, TIFF_SHORT, [components])]
    tags += [(258, TIFF_SHORT, [bits] * components), (277, TIFF_SHORT, [components])]
    return _tiff(tags, strip)


def fax_tiff(width: int, height: int, black_is_zero: bool, strip: bytes) -> bytes:
    """A TIFF of one CCITT Group 4 strip; fax white is white unless `black_is_zero` (PDF's /BlackIs1)."""
    tags = _image_tags(width, height, 1)
    tags += [(262, TIFF_SHORT, [int(black_is_zero)]), (259, TIFF_SHORT, [TIFF_G4]), (258, TIFF_SHORT, [1])]
    tags += [(277, TIFF_SHORT, [1]), (266, TIFF_SHORT, [1])]  # 266: FillOrder, most significant bit first
    return _tiff(tags, strip)


def _image_tags(width: int, height: int, components: int) -> list[Any]:
    # Resolution tags are required by baseline TIFF; a PDF image has no resolution of its own.
    return [
        (256, TIFF_LONG, [width]),
        (257, TIFF_LONG, [height]),
        (278, TIFF_LONG, [height]),
        (282, TIFF_RATIONAL, DPI_72),
        (283, TIFF_RATIONAL, DPI_72),
        (296, TIFF_SHORT, [2]),
        (284, TIFF_SHORT, [1]),  # PlanarConfiguration: samples of a pixel together
    ]


def _tiff(tags: list[Any], strip: bytes) -> bytes:
    """A little-endian TIFF with one IFD; values that do not fit in an entry follow it, then the strip."""
    tags = sorted(tags + [(273, TIFF_LONG, [0]), (279, TIFF_LONG, [len(strip)])])
    packed = [_packed(kind, values) for _, kind, values in tags]  # once each: there is a TIFF for every Flate image
    extra_at = 8 + 2 + 12 * len(tags) + 4
    strip_at = extra_at + sum(len(value) for value in packed if len(value) > 4)
    entries, extra = [], b""
    for (tag, kind, _), value in zip(tags, packed):
        if tag == 273:
            value = _packed(kind, [strip_at])
        count = len(value) // TIFF_SIZES[kind]
        if len(value) <= 4:
            entries.append(struct.pack("<HHI", tag, kind, count) + value.ljust(4, b"\0"))
        else:
            entries.append(struct.pack("<HHII", tag, kind, count, extra_at + len(extra)))
            extra += value
    head = b"II*\0" + struct.pack("<IH", 8, len(tags)) + b"".join(entries) + b"\0\0\0\0"
    return b"".join((head, extra, strip))


def _packed(kind: int, values: list[int] | bytes) -> bytes:
    if isinstance(values, bytes):
        return values
    return struct.pack(f"<{len(values)}{'H' if kind == TIFF_SHORT else 'I'}", *values)
