"""Indexed images: each sample looks up a colour of the base space in the image's palette.

Over grey or RGB (DeviceGray, DeviceRGB, CalGray, CalRGB, ICCBased N=1 or 3) the file is a palette
PNG: the indices and the palette as the PDF holds them (an ICCBased base's profile embedded). Over any
other base (DeviceCMYK, ICCBased N=4, Lab, Separation, DeviceN) no standard palette holds the colours,
so every sample is looked up and written as samples.py writes that base: CMYK or Lab TIFF, a tint PNG,
a TIFF of inks. The manifest's colour space is "Indexed". An index past the palette's last entry
draws that last entry; a palette shorter than it declares is padded with zeros.
"""

import pikepdf

from . import colour, samples
from .values import is_int

PALETTE_BITS = {1: "P;1", 2: "P;2", 4: "P;4", 8: "P"}
PALETTE_BASES = {"DeviceGray", "DeviceRGB", "CalGray", "CalRGB", "ICCBased"}


def decodable(image: pikepdf.Stream) -> bool:
    return image.get("/BitsPerComponent") in PALETTE_BITS and well_formed(image.get("/ColorSpace"))


def well_formed(colorspace: object) -> bool:
    if not isinstance(colorspace, pikepdf.Array) or len(colorspace) != 4:
        return False
    base, hival = colour.described(colorspace[1]), colorspace[2]
    return base.family not in ("Indexed", "Pattern", "") and 0 < base.components and is_int(hival)


def from_palette(image: pikepdf.Stream, width: int, height: int) -> tuple[bytes, str, int]:
    """(file bytes, extension, bits written) of an Indexed image; raises pikepdf errors on bad data."""
    from PIL import Image

    bits, hival = int(image.BitsPerComponent), _hival(image.ColorSpace)
    row = (width * bits + 7) // 8
    data = image.read_bytes(decode_level=pikepdf.StreamDecodeLevel.specialized)[: row * height]
    unpacked = Image.frombytes("P", (width, height), data.ljust(row * height, b"\0"), "raw", PALETTE_BITS[bits])
    indices = unpacked.tobytes().translate(bytes(_index_table(image, bits, hival)))
    return looked_up(image.ColorSpace, indices, width, height)


def looked_up(colorspace: pikepdf.Object, indices: bytes, width: int, height: int) -> tuple[bytes, str, int]:
    """Indices (one byte each, at most the palette's last) written with the colours they look up."""
    from PIL import Image

    base, hival = colour.described(colorspace[1]), _hival(colorspace)
    n, lookup = base.components, _lookup(colorspace[3])
    lookup = lookup[: (hival + 1) * n].ljust((hival + 1) * n, b"\0")
    if base.family in PALETTE_BASES and n in (1, 3):
        paletted = Image.frombytes("P", (width, height), indices)
        paletted.putpalette(lookup if n == 3 else bytes(v for grey in lookup for v in (grey, grey, grey)), "RGB")
        if profile := colour.profile_of(colorspace[1]):
            paletted.info["icc_profile"] = profile
        return *samples.written(paletted), 8
    looked_up = bytearray(width * height * n)
    for c in range(n):  # one component at a time: index -> that component of its palette entry
        looked_up[c::n] = indices.translate(bytes(lookup[i * n + c] for i in range(hival + 1)).ljust(256, b"\0"))
    return samples.from_components(bytes(looked_up), width, height, n, base, colour.profile_of(colorspace[1]))


def _hival(colorspace: pikepdf.Object) -> int:
    return max(0, min(255, int(colorspace[2])))


def _lookup(value: pikepdf.Object) -> bytes:
    if isinstance(value, pikepdf.Stream):
        return value.read_bytes()
    return bytes(value)  # a string


def _index_table(image: pikepdf.Stream, bits: int, hival: int) -> list[int]:
    """Sample -> index (256 entries): /Decode [dmin dmax] maps 0..2^bits-1 onto dmin..dmax; past the
    palette, its last entry."""
    top = (1 << bits) - 1
    pairs = colour.decode_pairs(image, 1)
    low, high = pairs[0] if pairs else (0.0, float(top))
    mapped = [round(low + v * (high - low) / top) for v in range(top + 1)]
    return [min(hival, max(0, m)) for m in mapped] + [0] * (255 - top)
