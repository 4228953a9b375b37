"""Decoded samples written losslessly, one sample per PDF component, mapped by /Decode as the PDF draws them.

Nothing is converted to RGB: the file keeps the components of the PDF colour space and the manifest
records which space they are in (see colour.py).
- 1 component (DeviceGray, CalGray, Separation tint, ICCBased N=1): greyscale PNG, 8 or 16 bits.
  A Separation tint of 1 is full ink yet is written as white (the value, not its look).
- 3 components (DeviceRGB, CalRGB, ICCBased N=3): RGB PNG, 8 or 16 bits. An ICCBased image's profile
  is embedded (8-bit files), so a colour-managed viewer shows what the PDF shows. Lab: an 8-bit TIFF of mode
  "LAB" holding the PDF samples as stored (L, a, b over the ranges the colour space declares).
- 4 components (DeviceCMYK, ICCBased N=4, DeviceN of 4): CMYK TIFF. Any other count (DeviceN): a TIFF
  of that many separated inks, 8 or 16 bits.
- Stencil masks (/ImageMask): a 1-bit greyscale PNG, black where the mask paints, white where it leaves
  the page untouched (whatever its /Decode array says).
Samples of 1, 2 or 4 bits are scaled to 8 bits (v * 255 / (2^bits - 1)), which is exact and reversible;
1-bit grey and stencils stay 1-bit. 16-bit samples stay 16-bit. Data shorter than the image declares is
padded with zero samples.
"""

from __future__ import annotations

import io
import zlib
from typing import TYPE_CHECKING

import pikepdf

from . import colour, containers

if TYPE_CHECKING:  # Pillow is imported where an image is decoded: it slows every child's start
    from PIL import Image

PNG_MODES = {"1", "L", "LA", "P", "RGB", "RGBA", "I", "I;16"}
PNG_LEVEL = 6
SCALED = {2: "L;2", 4: "L;4", 8: "L"}
INVERTED = bytes(255 - b for b in range(256))  # every bit of a byte flipped


def written(image: Image.Image) -> tuple[bytes, str]:
    """Lossless and deterministic: fixed settings, no metadata but the colour profile."""
    icc = image.info.get("icc_profile")
    profile = {"icc_profile": icc} if icc else {}
    image.info = {}
    buffer = io.BytesIO()
    if image.mode in PNG_MODES:
        image.save(buffer, "PNG", compress_level=PNG_LEVEL, **profile)
        return buffer.getvalue(), "png"
    image.save(buffer, "TIFF", compression="tiff_adobe_deflate", **profile)  # CMYK, Lab: no PNG form
    return buffer.getvalue(), "tif"


def decodable(image: pikepdf.Stream, space: colour.Space) -> bool:
    bits = 1 if space.family == "ImageMask" else image.get("/BitsPerComponent")
    if space.family in ("Indexed", "Pattern", "") or not space.components or bits not in (1, 2, 4, 8, 16):
        return False
    return not (space.family == "Lab" and bits != 8)


def from_samples(image: pikepdf.Stream, space: colour.Space, width: int, height: int) -> tuple[bytes, str, int]:
    """(file bytes, extension, bits written) of the decoded samples; raises pikepdf errors on bad data."""
    n = space.components
    bits = 1 if space.family == "ImageMask" else int(image.BitsPerComponent)
    row = (width * n * bits + 7) // 8
    # "specialized" adds RunLength to the filters qpdf decodes; image codecs never get here.
    data = image.read_bytes(decode_level=pikepdf.StreamDecodeLevel.specialized)[: row * height]
    data = data.ljust(row * height, b"\0")
    pairs = None if space.family in ("Lab",) else colour.decode_pairs(image, n)
    if space.family == "ImageMask":
        return _bilevel(data, width, height, colour.is_inversion(pairs))
    if bits == 16:
        return sixteen(data, width, height, n, pairs)
    return _eight(image, data, width, height, n, bits, pairs, space)


def _bilevel(data: bytes, width: int, height: int, inverted: bool) -> tuple[bytes, str, int]:
    # Grey: 0 is black unless inverted. Stencil: Decode [0 1] paints 0 samples, [1 0] paints 1 samples;
    # painted is written black (0).
    from PIL import Image

    picture = Image.frombytes("1", (width, height), data.translate(INVERTED) if inverted else data)
    return *written(picture), 1


def _eight(
    image: pikepdf.Stream,
    data: bytes,
    width: int,
    height: int,
    n: int,
    bits: int,
    pairs: list[tuple[float, float]] | None,
    space: colour.Space,
) -> tuple[bytes, str, int]:
    from PIL import Image

    if n == 1 and bits == 1 and (colour.is_identity(pairs) or colour.is_inversion(pairs)):
        return _bilevel(data, width, height, colour.is_inversion(pairs))
    if n == 1 and bits == 1:  # an unusual /Decode: map black and white as any grey
        picture = Image.frombytes("1", (width, height), data).convert("L")
    elif n == 1:
        picture = Image.frombytes("L", (width, height), data, "raw", SCALED[bits])
    else:
        samples = data if bits == 8 else _unpacked(data, width * n, height, bits)
        inks = _picture(samples, width, height, n, space)
        if inks is None:
            return _inks(samples, width, height, n, 8), "tif", 8
        picture = inks
    if pairs is not None and not colour.is_identity(pairs):
        picture = Image.merge(picture.mode, [b.point(colour.table(p)) for b, p in zip(picture.split(), pairs)])
    if profile := colour.icc_profile(image):
        picture.info["icc_profile"] = profile
    return *written(picture), 8


def _picture(samples: bytes, width: int, height: int, n: int, space: colour.Space) -> Image.Image | None:
    from PIL import Image

    mode: str | None = None
    if space.family == "Lab":
        mode = "LAB"
    else:  # DeviceN inks are never RGB, even three of them
        mode = {3: "RGB" if space.family != "DeviceN" else None, 4: "CMYK"}.get(n)
    return Image.frombytes(mode, (width, height), samples) if mode else None


def from_components(
    data: bytes, width: int, height: int, n: int, space: colour.Space, profile: bytes | None = None
) -> tuple[bytes, str, int]:
    """8-bit samples of the `n` components of `space`, interleaved, written as `from_samples` writes them."""
    from PIL import Image

    picture = Image.frombytes("L", (width, height), data) if n == 1 else _picture(data, width, height, n, space)
    if picture is None:
        return _inks(data, width, height, n, 8), "tif", 8
    if profile:
        picture.info["icc_profile"] = profile
    return *written(picture), 8


def _unpacked(data: bytes, per_row: int, height: int, bits: int) -> bytes:
    """Samples of 2 or 4 bits (1 with several components) each as a byte, scaled to 0..255."""
    scale, mask, row = 255 // ((1 << bits) - 1), (1 << bits) - 1, (per_row * bits + 7) // 8
    out = bytearray()
    for y in range(height):
        line = int.from_bytes(data[y * row : (y + 1) * row], "big")
        shift = row * 8
        out += bytes(((line >> (shift - (i + 1) * bits)) & mask) * scale for i in range(per_row))
    return bytes(out)


def sixteen(
    data: bytes, width: int, height: int, n: int, pairs: list[tuple[float, float]] | None
) -> tuple[bytes, str, int]:
    """PNG stores 16-bit samples big-endian as PDF does; the TIFF here is little-endian."""
    if pairs is not None and not colour.is_identity(pairs):
        data = _mapped16(data, pairs)
    if n in containers.PNG_COLOR_TYPES:
        row = width * n * 2
        rows = b"".join(b"\0" + data[y * row : (y + 1) * row] for y in range(height))
        return containers.png(width, height, 16, n, zlib.compress(rows, PNG_LEVEL)), "png", 16
    swapped = bytearray(len(data))
    swapped[0::2], swapped[1::2] = data[1::2], data[0::2]
    return _inks(bytes(swapped), width, height, n, 16), "tif", 16


def _mapped16(data: bytes, pairs: list[tuple[float, float]]) -> bytes:
    if colour.is_inversion(pairs):  # 65535 - v, byte by byte
        return data.translate(INVERTED)
    n, out = len(pairs), bytearray(data)
    for i in range(0, len(data) - 1, 2):
        low, high = pairs[(i // 2) % n]
        v = int.from_bytes(data[i : i + 2], "big") / 65535
        out[i : i + 2] = min(65535, max(0, round((low + v * (high - low)) * 65535))).to_bytes(2, "big")
    return bytes(out)


def _inks(samples: bytes, width: int, height: int, n: int, bits: int) -> bytes:
    return containers.deflate_tiff(width, height, bits, n, zlib.compress(samples, PNG_LEVEL))
