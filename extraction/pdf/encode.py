"""One image object in, one deterministic image file out, with the samples the PDF draws.

In order of preference (`method` in the manifest): the stream's bytes as they are ("passthrough", a
JPEG or JPEG 2000 a standard decoder reads as the PDF draws it), its compressed data in a PNG or TIFF
container ("wrapped", see wrap.py), a JPEG with its leading junk cut off ("adjusted"), or the samples
decoded and written losslessly ("decoded", see samples.py, jpeg.py and pdfium.py for what is written).
"""

import hashlib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pikepdf

from . import colour, indexed, jpx, samples
from .jpeg import jpeg
from .limits import STANDARD_FILTERS
from .streams import filter_names
from .values import is_int
from .wrap import wrapped

if TYPE_CHECKING:  # Pillow is imported only when an image must be decoded: it slows every child's start.
    from PIL import Image

CONTENT_TYPES = {"png": "image/png", "tif": "image/tiff", "jpg": "image/jpeg", "jp2": "image/jp2"}
BILEVEL_CODECS = ("JBIG2Decode", "CCITTFaxDecode")


class ImageTooLarge(Exception):
    pass


class UnknownFilter(Exception):
    """An image encoded with a name that is no PDF filter: no reader decodes it (viewers leave it out)."""

    def __init__(self, name: str):
        super().__init__(f"it is encoded with {name}, which is not a PDF filter, so no reader can decode it")


@dataclass(frozen=True)
class Encoded:
    data: bytes
    extension: str
    width: int  # of the written file, as a standard decoder reads it
    height: int
    # Recorded in the manifest (see WrittenImage): the PDF colour space, bits per component of the
    # written file, how it was made, and the sha256 of the stream's raw data unless passed through.
    colorspace: str = ""
    bits: int = 0
    method: str = ""
    stream_sha256: str = ""

    @property
    def content_type(self) -> str:
        return CONTENT_TYPES[self.extension]


def encode(image: pikepdf.Stream | pikepdf.PdfInlineImage, max_pixels: int) -> Encoded:
    """The image as a file a standard decoder reads to the samples the PDF draws."""
    if not isinstance(image, pikepdf.Stream):
        image, _owner = as_stream(image)
    filters, width, height = filter_names(image), int(image.Width), int(image.Height)
    if unknown := [name for name in filters if name not in STANDARD_FILTERS]:
        raise UnknownFilter(unknown[0])
    if width <= 0 or height <= 0 or width * height > max_pixels:
        raise ImageTooLarge(f"{width} x {height} pixels is outside the limit of {max_pixels}")
    raw, space = image.read_raw_bytes(), colour.space_of(image)
    encoded = _encoded(image, filters, raw, space, width, height, max_pixels)
    # Passed through or wrapped, the file holds the stream's bytes as they are: their hash says nothing new,
    # and hashing them again cost a tenth of an extraction.
    traced = hashlib.sha256(raw).hexdigest() if encoded.method in TRANSFORMED else ""
    return replace(encoded, colorspace=space.name, stream_sha256=traced)


TRANSFORMED = ("decoded", "adjusted")  # the methods whose files no longer hold the stream's bytes as they are


def _encoded(
    image: pikepdf.Stream,
    filters: list[str],
    raw: bytes,
    space: colour.Space,
    width: int,
    height: int,
    max_pixels: int,
) -> Encoded:
    declared = image.get("/BitsPerComponent")
    bits = declared if is_int(declared) else (1 if space.family == "ImageMask" else 0)
    if filters == ["DCTDecode"]:
        data, extension, method, size = jpeg(image, raw, space)
        return Encoded(data, extension, *size, bits=8, method=method)
    if filters == ["JPXDecode"]:
        return _jpx(image, raw, space, max_pixels)
    if filters[-1:] == ["JPXDecode"] and set(filters[:-1]) <= SIMPLE:
        return _jpx(image, _codestream(image), space, max_pixels, stored=False)
    if found := wrapped(image, filters, width, height, raw):
        return Encoded(found[0], found[1], width, height, bits=bits, method="wrapped")
    if any(name in BILEVEL_CODECS for name in filters) and set(filters) <= set(BILEVEL_CODECS) | SIMPLE:
        from .pdfium import decoded_bitmap

        return _decoded(decoded_bitmap(image, width, height), 1)
    if set(filters) <= SIMPLE and samples.decodable(image, space):
        data, extension, written_bits = samples.from_samples(image, space, width, height)
        return Encoded(data, extension, width, height, bits=written_bits, method="decoded")
    if set(filters) <= SIMPLE and indexed.decodable(image):
        data, extension, written_bits = indexed.from_palette(image, width, height)
        return Encoded(data, extension, width, height, bits=written_bits, method="decoded")
    # Filter chains ending in a codec: pikepdf decodes them (JPX as soon as it wraps it).
    picture = pikepdf.PdfImage(image).as_pil_image(apply_mask=False)
    return _decoded(picture, 16 if picture.mode.startswith("I;16") else 8 if picture.mode != "1" else 1)


def _jpx(
    image: pikepdf.Stream, codestream: bytes, space: colour.Space, max_pixels: int, stored: bool = True
) -> Encoded:
    """Passed through or decoded (see jpx.py), with the codestream's dimensions, not the dictionary's.
    `stored`: the codestream is the stream's data as stored; one that other filters wrapped is decoded
    (then the manifest's stream_sha256 names the stored data)."""
    header = jpx.header_of(codestream)
    if header.width * header.height > max_pixels:
        raise ImageTooLarge(f"{header.width} x {header.height} pixels is outside the limit of {max_pixels}")
    if stored and jpx.passes_through(image, header, space):
        return Encoded(codestream, "jp2", header.width, header.height, bits=8, method="passthrough")
    data, extension, bits = jpx.decoded(image, codestream, header, space)
    return Encoded(data, extension, header.width, header.height, bits=bits, method="decoded")


def _codestream(image: pikepdf.Stream) -> bytes:
    """A chain such as [/FlateDecode /JPXDecode]: the data the JPX decoder reads, the filters before it
    undone by qpdf on a copy. Handed to Pillow whole (pikepdf's way), a 16-bit RGB codestream came out
    with wrong 8-bit samples (pikepdf's `pike-flate-jp2`: white read as black)."""
    pdf = pikepdf.Pdf.new()
    outer = pdf.copy_foreign(image)
    outer.Filter = pikepdf.Array(list(outer.Filter)[:-1])
    parms = outer.get("/DecodeParms")
    if isinstance(parms, pikepdf.Array) and len(parms) == len(outer.Filter) + 1:
        outer.DecodeParms = pikepdf.Array(list(parms)[:-1])
    elif parms is not None:  # a dictionary, or an array of another length: the chain's parameters are unclear
        del outer["/DecodeParms"]
    return outer.read_bytes()


IMAGE_SUBTYPE = pikepdf.Name.Image
SIMPLE = {"FlateDecode", "LZWDecode", "RunLengthDecode", "ASCIIHexDecode", "ASCII85Decode"}


def _decoded(picture: "Image.Image", bits: int) -> Encoded:
    data, extension = samples.written(picture)
    return Encoded(data, extension, *picture.size, bits=bits, method="decoded")


def as_stream(inline: pikepdf.PdfInlineImage) -> tuple[pikepdf.Stream, pikepdf.Pdf]:
    """An inline image as an image XObject of its own little PDF (returned too: keep it while the
    stream is used), abbreviations expanded and a named colour space resolved from the resources."""
    pdf = pikepdf.Pdf.new()
    image = pikepdf.Stream(pdf, inline.read_raw_bytes())
    for key, value in inline.obj.items():
        if key != "/Length":  # a stated /L: the stream's own length stands
            image[key] = value
    # What makes it an image XObject: PDFium and pikepdf's decoder look for these.
    image.Type, image.Subtype = pikepdf.Name.XObject, IMAGE_SUBTYPE
    named = image.get("/ColorSpace")
    if isinstance(named, pikepdf.Name) and str(named) not in colour.DEVICE:
        resolved = getattr(inline, "_resolve_named_colorspace", lambda name: None)(named)
        if resolved is not None:
            image.ColorSpace = _copied(pdf, resolved)
    return image, pdf


def _copied(pdf: pikepdf.Pdf, value: object) -> Any:
    """A foreign object brought into `pdf`: qpdf copies indirect objects only, so walk direct containers."""
    if isinstance(value, pikepdf.Object) and value.is_indirect:
        return pdf.copy_foreign(value)
    if isinstance(value, pikepdf.Array):
        return pikepdf.Array([_copied(pdf, item) for item in value])
    if isinstance(value, pikepdf.Dictionary):
        return pikepdf.Dictionary({key: _copied(pdf, item) for key, item in value.items()})
    return value
