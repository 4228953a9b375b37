"""One image object in, one deterministic image file out."""
import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pikepdf

from .streams import ABBREVIATIONS, filter_names
from .wrap import wrapped

if TYPE_CHECKING:  # Pillow is imported only when an image must be decoded: it slows every child's start.
    from PIL import Image

# Passed through byte for byte: re-encoding a JPEG would lose quality and its identity.
PASSTHROUGH = {"DCTDecode": ("jpg", "image/jpeg"), "JPXDecode": ("jp2", "image/jp2")}
CONTENT_TYPES = {"png": "image/png", "tif": "image/tiff", "jpg": "image/jpeg", "jp2": "image/jp2"}
PNG_MODES = {"1", "L", "LA", "P", "RGB", "RGBA", "I", "I;16"}
PNG_LEVEL = 6


class ImageTooLarge(Exception):
    pass


@dataclass(frozen=True)
class Encoded:
    data: bytes
    extension: str
    width: int  # of the written file, as a standard decoder reads it
    height: int
    # Recorded in the manifest (see ExtractedAsset): the PDF colour space, bits per component of the
    # written file, how it was made, and the sha256 of the stream's raw data unless passed through.
    colorspace: str = ""
    bits: int = 0
    method: str = ""
    stream_sha256: str = ""

    @property
    def content_type(self) -> str:
        return CONTENT_TYPES[self.extension]


def encode(image: pikepdf.Stream | pikepdf.PdfInlineImage, max_pixels: int) -> Encoded:
    """Raw bytes for a lone DCT/JPX stream; a PNG or TIFF around the stream's own compressed data
    when it can hold it (see wrap.py); otherwise decoded to a lossless PNG (or TIFF)."""
    if isinstance(image, pikepdf.Stream):
        filters = filter_names(image)
        width, height = int(image.Width), int(image.Height)
    else:
        filters = [ABBREVIATIONS.get(f[1:], f[1:]) for f in image.filters]
        width, height = image.width, image.height
    if width * height > max_pixels:
        raise ImageTooLarge(f"{width} x {height} pixels is over the limit of {max_pixels}")
    if len(filters) == 1 and filters[0] in PASSTHROUGH:
        return Encoded(image.read_raw_bytes(), PASSTHROUGH[filters[0]][0], width, height)
    if isinstance(image, pikepdf.Stream) and (found := wrapped(image, filters, width, height)):
        return Encoded(found[0], found[1], width, height)
    # Constructed only now: pikepdf decodes a JPX image as soon as it wraps it.
    picture = pikepdf.PdfImage(image) if isinstance(image, pikepdf.Stream) else image
    if "CCITTFaxDecode" in filters:
        return _extracted(picture, width, height)
    return from_pixels(picture.as_pil_image(apply_mask=False))


def _extracted(picture, width: int, height: int) -> Encoded:
    """pikepdf wraps CCITT data in a TIFF header without decoding it."""
    buffer = io.BytesIO()
    extension = picture.extract_to(stream=buffer, apply_mask=False).lstrip(".").replace("tiff", "tif")
    return Encoded(buffer.getvalue(), extension, width, height)


def from_pixels(image: "Image.Image") -> Encoded:
    """Lossless and deterministic: fixed settings, no metadata but the colour profile."""
    icc = image.info.get("icc_profile")
    profile = {"icc_profile": icc} if icc else {}
    image.info = {}
    buffer = io.BytesIO()
    if image.mode in PNG_MODES:
        image.save(buffer, "PNG", compress_level=PNG_LEVEL, **profile)
        extension = "png"
    else:  # CMYK, Lab and the like have no PNG form
        image.save(buffer, "TIFF", compression="tiff_adobe_deflate", **profile)
        extension = "tif"
    return Encoded(buffer.getvalue(), extension, *image.size)
