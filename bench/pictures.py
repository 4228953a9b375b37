"""Synthetic pictures for the benchmark corpus, and the PDF image encodings they are stored in.

Every picture comes from a seeded `random.Random`, so a seed gives the same bytes each time
(with the same Pillow). Scans are text-like and compress the way real scans do; photos are
smooth and noisy; charts are flat and Flate-friendly.
"""

import io
import random
import struct
import zlib
from dataclasses import dataclass, field, replace

from PIL import Image, ImageChops, ImageDraw, ImageFilter, ImageFont, ImageOps, TiffImagePlugin

WORDS = "patient record date signed exhibit page total name of the and for with to at no".split()
COLORSPACES = {"RGB": "/DeviceRGB", "L": "/DeviceGray", "1": "/DeviceGray"}


@dataclass(frozen=True)
class Encoded:
    """One image as a PDF stores it: data, its filter and parameters, and an optional soft mask."""

    data: bytes
    width: int
    height: int
    colorspace: str | None
    bits: int | None
    filter: str
    parms: dict = field(default_factory=dict)
    smask: "Encoded | None" = None

    @property
    def identity(self) -> tuple:
        """What decides the extracted file: equal identities give equal files."""
        return self.data, self.width, self.height, self.colorspace, self.bits, self.filter, sorted(self.parms.items())


def grain(rng: random.Random, size: tuple[int, int], low: int) -> Image.Image:
    return Image.frombytes("L", size, rng.randbytes(size[0] * size[1])).point(lambda v: low + v * (255 - low) // 255)


def scan(rng: random.Random, width: int, height: int, color: bool = False) -> Image.Image:
    """A scanned page: text lines, boxes and rules, paper grain, a slight blur."""
    page = Image.new("L", (width, height), 248)
    draw, line = ImageDraw.Draw(page), max(10, height // 60)
    font, margin, y = ImageFont.load_default(size=line), width // 12, height // 14
    while y < height - margin:
        roll = rng.random()
        if roll < 0.12:
            draw.rectangle([margin, y, width - margin, y + 3 * line], outline=40, width=2)
            y += line
        elif roll < 0.2:
            draw.line([margin, y + line // 2, width - margin, y + line // 2], fill=60, width=2)
        else:
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14)))
            draw.text((margin + rng.randint(0, line * 4), y), words, fill=rng.randint(10, 70), font=font)
        y += int(line * 1.6)
    page = ImageChops.multiply(page.filter(ImageFilter.BoxBlur(0.7)), grain(rng, page.size, 232))
    return ImageOps.colorize(page, (25, 25, 45), (250, 246, 236)) if color else page


def bilevel_scan(rng: random.Random, width: int, height: int) -> Image.Image:
    return scan(rng, width, height).point(lambda v: 255 if v > 150 else 0, "1")


def photo(rng: random.Random, width: int, height: int) -> Image.Image:
    """A smooth, noisy colour picture: a clinical photo, an exhibit."""
    ramp = Image.linear_gradient("L").rotate(rng.choice([0, 90, 180, 270])).resize((width, height))
    picture = Image.merge("RGB", (ramp, Image.radial_gradient("L").resize((width, height)), ImageOps.invert(ramp)))
    draw = ImageDraw.Draw(picture)
    for _ in range(12):
        x, y, r = rng.randrange(width), rng.randrange(height), rng.randint(width // 10, width // 3)
        draw.ellipse([x - r, y - r, x + r, y + r], fill=tuple(rng.randrange(256) for _ in range(3)))
    picture = picture.filter(ImageFilter.GaussianBlur(3))
    return ImageChops.multiply(picture, grain(rng, picture.size, 215).convert("RGB"))


def chart(rng: random.Random, width: int, height: int, mode: str = "RGB") -> Image.Image:
    """Flat graphics (a chart, an ECG strip)."""
    picture = Image.new(mode, (width, height), "white")
    draw, color = ImageDraw.Draw(picture), mode == "RGB"
    for x in range(0, width, 20):
        draw.line([x, 0, x, height], fill=(225, 200, 200) if color else 210)
    for y in range(0, height, 20):
        draw.line([0, y, width, y], fill=(225, 200, 200) if color else 210)
    trace = [(x, height // 2 + rng.randint(-height // 3, height // 3) * (x % 60 < 8)) for x in range(0, width, 4)]
    draw.line(trace, fill=(20, 20, 120) if color else 20, width=2)
    for i in range(rng.randint(3, 8)):
        x, fill = 30 + i * width // 9, tuple(rng.randrange(200) for _ in range(3)) if color else rng.randrange(150)
        draw.rectangle([x, height - rng.randint(20, height - 20), x + width // 14, height - 5], fill=fill)
    return picture


def signature(rng: random.Random, width: int, height: int) -> Image.Image:
    picture = Image.new("1", (width, height), 1)
    stroke = [(x, height // 2 + rng.randint(-height // 3, height // 3)) for x in range(10, width - 10, 15)]
    ImageDraw.Draw(picture).line(stroke, fill=0, width=3)
    return picture


def jpeg(picture: Image.Image, quality: int, progressive: bool = False) -> Encoded:
    buffer = io.BytesIO()
    picture.save(buffer, "JPEG", quality=quality, progressive=progressive, optimize=progressive)
    return Encoded(buffer.getvalue(), *picture.size, COLORSPACES[picture.mode], 8, "/DCTDecode")


def jpx(picture: Image.Image) -> Encoded:
    buffer = io.BytesIO()
    picture.save(buffer, "JPEG2000", quality_mode="rates", quality_layers=[20])
    return Encoded(buffer.getvalue(), *picture.size, None, None, "/JPXDecode")


def flate(picture: Image.Image, predictor: bool = False) -> Encoded:
    """Flate, plain or with PNG predictors (a PNG's IDAT payload is exactly that)."""
    bits = 1 if picture.mode == "1" else 8
    if not predictor:
        data, parms = zlib.compress(picture.tobytes(), 6), {}
    else:
        buffer = io.BytesIO()
        picture.save(buffer, "PNG")
        data = b"".join(_png_chunks(buffer.getvalue(), b"IDAT"))
        parms = {
            "/Predictor": 15,
            "/Colors": len(picture.getbands()),
            "/BitsPerComponent": bits,
            "/Columns": picture.width,
        }
    return Encoded(data, *picture.size, COLORSPACES[picture.mode], bits, "/FlateDecode", parms)


def _png_chunks(png: bytes, kind: bytes):
    pos = 8
    while pos < len(png):
        length, found = struct.unpack(">I4s", png[pos : pos + 8])
        if found == kind:
            yield png[pos + 8 : pos + 8 + length]
        pos += 12 + length


def ccitt(picture: Image.Image) -> Encoded:
    """CCITT Group 4 as a fax codes it (white as 0 bits), one strip from Pillow's TIFF writer."""
    buffer = io.BytesIO()
    ImageOps.invert(picture.convert("L")).convert("1").save(buffer, "TIFF", compression="group4", strip_size=1 << 30)
    tiff = Image.open(buffer)
    assert isinstance(tiff, TiffImagePlugin.TiffImageFile)  # Pillow's TIFF writer wrote it
    offset, length = tiff.tag_v2[273][0], tiff.tag_v2[279][0]
    parms = {"/K": -1, "/Columns": picture.width, "/Rows": picture.height}
    return Encoded(
        buffer.getvalue()[offset : offset + length], *picture.size, "/DeviceGray", 1, "/CCITTFaxDecode", parms
    )


def with_alpha(rng: random.Random, image: Encoded) -> Encoded:
    """The image with a soft mask: a blurred ellipse, Flate with or without predictors."""
    alpha = Image.new("L", (image.width, image.height), 0)
    ImageDraw.Draw(alpha).ellipse(
        [image.width // 10, image.height // 10, image.width * 9 // 10, image.height * 9 // 10], fill=255
    )
    blurred = alpha.filter(ImageFilter.GaussianBlur(image.width // 30))
    return replace(image, smask=flate(blurred, rng.random() < 0.5))
