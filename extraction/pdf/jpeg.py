"""JPEG streams: passed through when a standard decoder reads them as the PDF draws them, else decoded.

A PDF draws a DCT image's decoded samples mapped by its /Decode array. Standard decoders agree with
that for grey and RGB JPEGs, but read every four-component (CMYK) JPEG inverted: Pillow, libjpeg-based
browsers and Photoshop follow Adobe's convention (APP14) that CMYK scan data is stored inverted, while
PDF readers (poppler's DCTStream, MuPDF's filter-dct, pdf.js) use the samples as they are and invert
only when /Decode says [1 0 1 0 1 0 1 0]. So a CMYK JPEG is passed through only with that /Decode, a
grey or RGB one only without a /Decode that changes it; anything else is decoded, mapped as the PDF
maps it, and written losslessly (PNG for grey and RGB, CMYK TIFF for four components).
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import pikepdf

from . import colour
from .samples import written
from .wrap import decode_parms

if TYPE_CHECKING:  # Pillow is imported where an image is decoded: it slows every child's start
    from PIL import Image

SOI = b"\xff\xd8"
# Inline JPEG data may start after a line break the content stream put after ID.
MAX_LEADING_BYTES = 16
APP14 = 0xEE
SOF_MARKERS = set(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}  # not DHT, JPG, DAC


def jpeg(image: pikepdf.Stream, raw: bytes, space: colour.Space) -> tuple[bytes, str, str, tuple[int, int]]:
    """(file bytes, extension, method, size) for a lone DCT stream."""
    start = raw.find(SOI, 0, MAX_LEADING_BYTES + len(SOI))
    data = raw[start:] if start > 0 else raw
    frame = frame_of(data)
    raw_colours = _colour_transform_off(image, frame)
    if frame is not None and not raw_colours:
        width, height, components, _ = frame
        pairs = colour.decode_pairs(image, components)
        same = colour.is_inversion(pairs) if components == 4 else colour.is_identity(pairs)
        if same:
            return data, "jpg", ("passthrough" if data is raw else "adjusted"), (width, height)
    from PIL import Image

    picture: Image.Image = Image.open(io.BytesIO(data))
    if raw_colours:  # the PDF draws the YCbCr samples as RGB: ask libjpeg not to convert them
        picture.draft("YCbCr", picture.size)
        picture = Image.frombytes("RGB", picture.size, picture.tobytes())
    # The PDF's ICCBased profile says what the samples mean, whatever profile the JPEG carries.
    profile = colour.icc_profile(image) or picture.info.get("icc_profile")
    return drawn(picture, colour.decode_pairs(image, len(picture.getbands())), profile)


def _colour_transform_off(image: pikepdf.Stream, frame: tuple[int, int, int, bool] | None) -> bool:
    """True when /ColorTransform 0 keeps a three-component JPEG's samples as they are, where libjpeg
    would convert them from YCbCr; an Adobe APP14 marker overrides the dictionary (PDF 1.7, 7.4.8)."""
    parms = decode_parms(image)
    if frame is None or frame[2] != 3 or frame[3] or not parms:
        return False
    return parms.get("/ColorTransform") == 0


def frame_of(data: bytes) -> tuple[int, int, int, bool] | None:
    """(width, height, components, has an Adobe APP14 marker) from the JPEG's headers, read without
    decoding; None if there is no frame header."""
    pos, adobe = len(SOI), False
    while pos + 4 <= len(data) and data[pos] == 0xFF:
        marker, length = data[pos + 1], int.from_bytes(data[pos + 2 : pos + 4], "big")
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in SOF_MARKERS and pos + 10 <= len(data):
            height, width = (
                int.from_bytes(data[pos + 5 : pos + 7], "big"),
                int.from_bytes(data[pos + 7 : pos + 9], "big"),
            )
            return (width, height, data[pos + 9], adobe) if width and height else None
        adobe = adobe or (marker == APP14 and data[pos + 4 : pos + 9] == b"Adobe")
        pos += 2 + length
    return None


def drawn(
    picture: Image.Image, pairs: list[tuple[float, float]] | None, profile: bytes | None = None
) -> tuple[bytes, str, str, tuple[int, int]]:
    """The samples mapped as the PDF maps them, written losslessly."""
    picture.load()
    bands = list(picture.split())
    identity = (0.0, 1.0)
    for i, band in enumerate(bands):
        lut = colour.table(pairs[i] if pairs else identity)
        if picture.mode == "CMYK":  # undo Pillow's Adobe inversion first
            lut = lut[::-1]
        bands[i] = band.point(lut)
    from PIL import Image

    result = Image.merge(picture.mode, bands)
    result.info = {"icc_profile": profile} if profile else {}
    data, extension = written(result)
    return data, extension, "decoded", result.size
