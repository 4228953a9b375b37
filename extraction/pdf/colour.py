"""What an image's colour space is, as recorded in the manifest, and how its /Decode array maps samples.

The manifest's `colorspace` is the PDF family name ("DeviceRGB", "ICCBased", "Lab", "Indexed",
"ImageMask" ...). A Separation records its colorant and a DeviceN its colorants, because the
written file holds only tint values and the colorant names are what give them a meaning:
"Separation:PANTONE 485 C", "DeviceN:Cyan,Magenta,Spot1".
"""

from dataclasses import dataclass
from decimal import Decimal

import pikepdf

from .values import is_int, is_true

DEVICE = {"/DeviceGray": 1, "/DeviceRGB": 3, "/DeviceCMYK": 4, "/CalGray": 1, "/CalRGB": 3, "/Lab": 3}


@dataclass(frozen=True)
class Space:
    name: str  # as recorded in the manifest
    components: int  # 0 when not known (Pattern, malformed)
    family: str


def space_of(image: pikepdf.Stream) -> Space:
    if is_true(image.get("/ImageMask")):
        return Space("ImageMask", 1, "ImageMask")
    return described(image.get("/ColorSpace"))


def described(colorspace: object) -> Space:
    if isinstance(colorspace, pikepdf.Name):
        family = str(colorspace)[1:]
        return Space(family, DEVICE.get(str(colorspace), 0), family)
    if not isinstance(colorspace, pikepdf.Array) or not len(colorspace):
        return Space("", 0, "")
    family = str(colorspace[0])[1:]
    detail = colorspace[1] if len(colorspace) > 1 else None
    if family == "ICCBased" and isinstance(detail, pikepdf.Stream):
        n = detail.get("/N")
        return Space(family, n if is_int(n) and 0 < n <= 32 else 0, family)
    if family == "Separation" and isinstance(detail, pikepdf.Name):
        return Space(f"Separation:{str(detail)[1:]}", 1, family)
    if family == "DeviceN" and isinstance(detail, pikepdf.Array) and len(detail):
        names = [str(n)[1:] if isinstance(n, pikepdf.Name) else "?" for n in detail]
        return Space("DeviceN:" + ",".join(names), len(names), family)
    return Space(family, DEVICE.get(f"/{family}", 1 if family == "Indexed" else 0), family)


def decode_pairs(image: pikepdf.Stream, components: int) -> list[tuple[float, float]] | None:
    """The /Decode array as (dmin, dmax) per component; None when absent or malformed (the default applies)."""
    value = image.get("/Decode")
    if not isinstance(value, pikepdf.Array) or len(value) != 2 * components:
        return None
    if not all(isinstance(v, (int, float, Decimal)) for v in value):
        return None
    numbers = [float(v) for v in value]
    return list(zip(numbers[::2], numbers[1::2]))


def is_identity(pairs: list[tuple[float, float]] | None) -> bool:
    return pairs is None or all(pair == (0.0, 1.0) for pair in pairs)


def is_inversion(pairs: list[tuple[float, float]] | None) -> bool:
    return pairs is not None and all(pair == (1.0, 0.0) for pair in pairs)


def table(pair: tuple[float, float], top: int = 255) -> list[int]:
    """Sample value -> drawn value, both on 0..top, for one component whose range is 0..1."""
    low, high = pair
    return [min(top, max(0, round((low + v / top * (high - low)) * top))) for v in range(top + 1)]


MAX_PROFILE_BYTES = 4 << 20
# How qpdf reports a stream it cannot decode: damaged data (PdfError), filter parameters that overflow
# (a PNG predictor's /Colors x /BitsPerComponent x /Columns: RuntimeError) or are negative (ValueError).
UNREADABLE = (pikepdf.PdfError, RuntimeError, ValueError)


def icc_profile(image: pikepdf.Stream) -> bytes | None:
    """The ICC profile of an ICCBased image, to embed in the written file so viewers colour it as the
    PDF does; None for other spaces and for a profile that cannot be read."""
    return profile_of(image.get("/ColorSpace"))


def profile_of(colorspace: object) -> bytes | None:
    """The ICC profile of an ICCBased colour space (the base of an Indexed one too), None for others."""
    if not isinstance(colorspace, pikepdf.Array) or len(colorspace) < 2 or colorspace[0] != pikepdf.Name.ICCBased:
        return None
    stream = colorspace[1]
    try:
        profile = stream.read_bytes() if isinstance(stream, pikepdf.Stream) else None
    except UNREADABLE:
        return None
    # A profile starts with a 128-byte header carrying the signature "acsp"; anything else would be
    # embedded as a corrupt profile that viewers reject.
    is_profile = profile and len(profile) >= 128 and profile[36:40] == b"acsp"
    return profile if profile and is_profile and len(profile) <= MAX_PROFILE_BYTES else None
