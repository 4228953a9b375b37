"""Size arithmetic and bounded decoding for untrusted streams (runs in the child)."""

import base64
import binascii
from collections.abc import Iterable, Iterator
from typing import Any, cast

import pikepdf
from zlib_ng import zlib_ng  # the same inflate as zlib, about twice as fast

# zlib-ng's stub declares `error` as an instance; it is the exception class inflating raises.
INFLATE_ERROR = cast(type[Exception], zlib_ng.error)

CHUNK = 1 << 20
WHITESPACE = b" \t\r\n\f\x00"
# Abbreviated names are meant for inline images, but qpdf honours them in streams too.
ABBREVIATIONS = {
    "AHx": "ASCIIHexDecode",
    "A85": "ASCII85Decode",
    "LZW": "LZWDecode",
    "Fl": "FlateDecode",
    "RL": "RunLengthDecode",
    "CCF": "CCITTFaxDecode",
    "DCT": "DCTDecode",
}
COMPONENTS = {
    "/DeviceGray": 1,
    "/CalGray": 1,
    "/Indexed": 1,
    "/Separation": 1,
    "/G": 1,
    "/I": 1,
    "/DeviceRGB": 3,
    "/CalRGB": 3,
    "/Lab": 3,
    "/RGB": 3,
    "/DeviceCMYK": 4,
    "/CMYK": 4,
}
# Named colour spaces live in resources we do not resolve here: assume the widest usual one.
UNKNOWN_COMPONENTS = 4


def filter_names(stream_dict: pikepdf.Object | dict[str, Any]) -> list[str]:
    """The stream's filters as bare names, abbreviations expanded; odd values kept as text."""
    value = stream_dict.get("/Filter")
    if value is None:
        return []
    items = list(value) if isinstance(value, pikepdf.Array) else [value]
    names = []
    for item in items:
        name = str(item)[1:] if isinstance(item, pikepdf.Name) else repr(item)
        names.append(ABBREVIATIONS.get(name, name))
    return names


def components(colorspace: object) -> int:
    if isinstance(colorspace, pikepdf.Array) and len(colorspace):
        family = str(colorspace[0])
        detail = colorspace[1] if len(colorspace) > 1 else None
        if family == "/ICCBased" and isinstance(detail, pikepdf.Stream):
            return _int(detail.get("/N"), UNKNOWN_COMPONENTS)
        if family == "/DeviceN" and isinstance(detail, pikepdf.Array):
            return max(1, len(detail))
        return COMPONENTS.get(family, UNKNOWN_COMPONENTS)
    return COMPONENTS.get(str(colorspace), UNKNOWN_COMPONENTS)


def declared_image_bytes(image: pikepdf.Object | dict[str, Any], width: int, height: int) -> int:
    """Decoded size an image declares: rows of width * components * bits, byte-padded."""
    if bool(image.get("/ImageMask", False)):
        comps, bits = 1, 1
    else:
        comps = components(image.get("/ColorSpace"))
        bits = min(max(_int(image.get("/BitsPerComponent"), 8), 1), 16)
    return (width * comps * bits + 7) // 8 * height


def _int(value: object, default: int) -> int:
    return int(value) if isinstance(value, int) else default


def boundable(filters: list[str]) -> bool:
    return bool(filters) and filters[0] in STAGES


def decoded_size_exceeds(raw: bytes, filters: list[str], limit: int) -> bool:
    """Decode through the leading simple filters, keeping no output; stop past `limit`.

    Stops at the first filter that is not bounded here (image codecs, LZW); corrupt data
    counts as not exceeding: the decoder that reads it later fails the same way, and the
    child's memory limit still applies.
    """
    chunks: Iterable[bytes] = [raw]
    for name in filters:
        if name not in STAGES:
            break
        chunks = STAGES[name](chunks)
    total = 0
    try:
        for chunk in chunks:
            total += len(chunk)
            if total > limit:
                return True
    except (INFLATE_ERROR, ValueError, binascii.Error):
        return False
    return False


def _inflate(chunks: Iterable[bytes]) -> Iterator[bytes]:
    inflater = zlib_ng.decompressobj()
    for data in chunks:
        while data and not inflater.eof:
            out = inflater.decompress(data, CHUNK)
            data = inflater.unconsumed_tail
            yield out


def _ascii_hex(chunks: Iterable[bytes]) -> Iterator[bytes]:
    text = b"".join(chunks).split(b">", 1)[0]
    digits = text.translate(None, WHITESPACE)
    yield binascii.unhexlify(digits + b"0" * (len(digits) % 2))


def _ascii85(chunks: Iterable[bytes]) -> Iterator[bytes]:
    text = b"".join(chunks).split(b"~>", 1)[0]
    yield base64.a85decode(text.removeprefix(b"<~") + b"~>", adobe=True, ignorechars=WHITESPACE)


def _run_length(chunks: Iterable[bytes]) -> Iterator[bytes]:
    data, pos = b"".join(chunks), 0
    while pos < len(data) and data[pos] != 128:
        length = data[pos]
        if length < 128:
            yield data[pos + 1 : pos + 2 + length]
            pos += 2 + length
        else:
            yield data[pos + 1 : pos + 2] * (257 - length)
            pos += 2


STAGES = {
    "FlateDecode": _inflate,
    "ASCIIHexDecode": _ascii_hex,
    "ASCII85Decode": _ascii85,
    "RunLengthDecode": _run_length,
}
