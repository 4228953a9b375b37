"""Which image streams can be written as files without decoding them, and those files.

Decoding a Flate image and compressing it again costs a hundred times more than copying it,
so a stream whose data is already valid PNG or TIFF content is wrapped as it is. Only plain
samples qualify (gray, RGB or CMYK, 1 or 8 bits, no /Decode remapping, no stencil), and a
Flate stream is inflated once, its output dropped, to prove it holds exactly the rows the
image declares: a corrupt or short stream is left to the decoder, which reports it.
"""

from decimal import Decimal
from typing import Any

import pikepdf
from zlib_ng import zlib_ng  # the same inflate as zlib, about twice as fast

from . import containers
from .streams import INFLATE_ERROR
from .values import is_int

DEVICE_COMPONENTS = {"/DeviceGray": 1, "/DeviceRGB": 3, "/DeviceCMYK": 4}
PNG_PREDICTORS = range(10, 16)  # all mean "each row names its own PNG filter"
TIFF_PREDICTOR = 2
LAST_PNG_FILTER = 4  # None, Sub, Up, Average, Paeth
INFLATE_CHUNK = 4 << 20
CCITT_DEFAULT_COLUMNS = 1728


def wrapped(image: pikepdf.Stream, filters: list[str], width: int, height: int, raw: bytes) -> tuple[bytes, str] | None:
    """(file bytes, extension) of the image around its own compressed data `raw` (the stream's, read once by the
    caller), or None when it must be decoded."""
    if filters == ["FlateDecode"]:
        return _flate(image, width, height, raw)
    if filters == ["CCITTFaxDecode"]:
        return _fax(image, width, height, raw)
    return None


def plain_samples(image: pikepdf.Stream) -> tuple[int, int] | None:
    """(components, bits) when the samples are the colours themselves; None for anything a reader must map."""
    colorspace, bits = image.get("/ColorSpace"), image.get("/BitsPerComponent")
    if image.get("/ImageMask") or not isinstance(colorspace, pikepdf.Name):
        return None
    components = DEVICE_COMPONENTS.get(str(colorspace))
    if components is None or not is_int(bits) or bits not in (1, 8) or (bits == 1 and components != 1):
        return None
    decode = image.get("/Decode")
    if decode is not None and _numbers(decode) != [0.0, 1.0] * components:
        return None
    return components, bits


def _numbers(value: object) -> list[float] | None:
    if not isinstance(value, pikepdf.Array) or not all(isinstance(v, (int, float, Decimal)) for v in value):
        return None
    return [float(v) for v in value]


def _flate(image: pikepdf.Stream, width: int, height: int, raw: bytes) -> tuple[bytes, str] | None:
    samples, parms = plain_samples(image), decode_parms(image)
    if samples is None or parms is None:
        return None
    components, bits = samples
    predictor, row = _int(parms.get("/Predictor"), 1), (width * components * bits + 7) // 8
    if predictor != 1 and not _same_layout(parms, components, bits, width):
        return None
    if predictor in PNG_PREDICTORS and components in containers.PNG_COLOR_TYPES:
        if inflates_to(raw, (row + 1) * height, png_row=row + 1):
            return containers.png(width, height, bits, components, raw), "png"
    elif predictor == 1 or (predictor == TIFF_PREDICTOR and bits == 8):
        if inflates_to(raw, row * height):
            return containers.deflate_tiff(width, height, bits, components, raw, predictor), "tif"
    return None


def _fax(image: pikepdf.Stream, width: int, height: int, raw: bytes) -> tuple[bytes, str] | None:
    """Group 4 only: Group 3 data in PDF may lack the row markers TIFF readers expect."""
    parms = decode_parms(image)
    k = parms.get("/K", 0) if parms is not None else 0
    if parms is None or plain_samples(image) != (1, 1) or not is_int(k) or k >= 0:
        return None
    if parms.get("/EncodedByteAlign") or _int(parms.get("/Columns"), CCITT_DEFAULT_COLUMNS) != width:
        return None
    if _int(parms.get("/Rows"), height) != height:
        return None
    black_is_one = bool(parms.get("/BlackIs1", False))
    return containers.fax_tiff(width, height, black_is_one, raw), "tif"


def decode_parms(image: pikepdf.Stream) -> pikepdf.Dictionary | dict[str, Any] | None:
    """The parameters of the stream's only filter ({} when it has none); None when they are malformed."""
    value: object = image.get("/DecodeParms")
    if isinstance(value, pikepdf.Array):
        value = value[0] if len(value) == 1 else False
    if value is None:
        return {}
    return value if isinstance(value, pikepdf.Dictionary) else None


def _same_layout(parms: pikepdf.Dictionary | dict[str, Any], components: int, bits: int, width: int) -> bool:
    declared = (_int(parms.get("/Colors"), 1), _int(parms.get("/BitsPerComponent"), 8), _int(parms.get("/Columns"), 1))
    return declared == (components, bits, width)


def _int(value: object, default: int) -> int:
    return value if is_int(value) else (default if value is None else -1)


def inflates_to(raw: bytes, size: int, png_row: int = 0) -> bool:
    """True when raw is one whole zlib stream of exactly `size` bytes, nothing after it, and
    (with PNG rows of `png_row` bytes) each row starts with a valid filter type.

    The output is looked at a chunk at a time and dropped, so memory stays flat.
    """
    inflater, total, pending = zlib_ng.decompressobj(), 0, raw
    try:
        while not inflater.eof:
            chunk = inflater.decompress(pending, INFLATE_CHUNK)
            pending = inflater.unconsumed_tail
            if not chunk and not pending:
                break
            if png_row and max(chunk[-total % png_row :: png_row], default=0) > LAST_PNG_FILTER:
                return False
            total += len(chunk)
            if total > size:
                return False
    except INFLATE_ERROR:
        return False
    return inflater.eof and total == size and not inflater.unused_data
