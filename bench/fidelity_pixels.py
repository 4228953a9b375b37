"""Our output beside poppler's decode of the same image: equal samples, or a class saying how they differ.

Both files are opened with Pillow and brought to one mode only where that loses nothing: bilevel
("1") and grey ("L") widen to the other side's grey or RGB, a palette ("P") expands to RGB. CMYK is
never converted (poppler's CMYK to RGB is its own formula, so a conversion would either hide or
invent differences): a CMYK output (DeviceCMYK, or Indexed over CMYK) is compared with
`pdfimages -tiff`, which keeps CMYK samples as the PDF draws them (0 = no ink). Any other pair of
modes (alpha, CMYK against RGB) is a mismatch of class `mode`, never papered over. Samples must be
equal, except that JPEG (DCT) images may differ by 2 levels: decoders round differently. The bit
depth of both PNGs is read from their headers, since Pillow reads 16-bit RGB as 8-bit: 16 bits
against fewer is class `bits`.

Stencil masks are where polarities part: Pagetrail writes the painted samples black whatever the
/Decode (samples.py); `pdfimages -png` writes a stencil's raw bits inverted and ignores /Decode (so
its painted samples are black under /Decode [1 0] only), and `mutool extract` writes painted samples
white. The harness therefore inverts the reference (`invert_theirs`) where its polarity differs from
ours, and never ours (fidelity_file.py).
"""

import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from PIL import Image, ImageChops

JPEG_TOLERANCE = 2
WIDENING = {"1": 0, "L": 1, "RGB": 2}  # modes that convert upwards without loss
SIXTEEN_BITS = "by-design:16-bit"
TRANSPARENT_COLOUR = "by-design:colour under full transparency"


def png_bits(path: Path) -> int | None:
    """The bits per sample in a PNG's header, None for other formats and for palettes (their bits index)."""
    with open(path, "rb") as f:
        head = f.read(26)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or len(head) < 26 or head[25] == 3:
        return None
    return head[24]


def opens_in_pillow(path: Path) -> str:
    """'' when Pillow decodes the whole file, else why not."""
    try:
        with Image.open(path) as image:
            image.load()
        return ""
    except Exception as exc:  # any failure to decode is the finding
        return f"{type(exc).__name__}: {exc}"[:200]


def is_cmyk(path: Path) -> bool:
    with Image.open(path) as image:
        return image.mode == "CMYK"


def compare(ours: Path, theirs: Path, jpeg: bool, invert_theirs: bool = False) -> str:
    """'' when the samples are equal (within the JPEG tolerance), else the class of the difference.
    `invert_theirs`: the reference is a bilevel or grey image of the opposite polarity."""
    bits = png_bits(ours), png_bits(theirs)
    # 1, 2, 4 against 8 bits is a lossless widening that Pillow undoes; 16 against 8 is not: ours
    # keeps 16 bits by design, which is that class only when the 8-bit samples are ours cut to 8 bits,
    # by their high bytes (MuPDF) or rounded by the bit below them (poppler's JPEG 2000 reader).
    if None not in bits and bits[0] != bits[1] and 16 in bits:
        if bits[0] == 16 and any(not compare(_eight_bits(ours, rule), theirs, jpeg) for rule in EIGHT_BITS):
            return SIXTEEN_BITS
        return "bits"
    with Image.open(ours) as opened_ours, Image.open(theirs) as opened_theirs:
        if opened_ours.size != opened_theirs.size:
            return "size"
        b: Image.Image = opened_theirs
        if invert_theirs:
            b = b.convert("L").point(lambda v: 255 - v)
        if (common := _common_mode(opened_ours, b)) is None:
            return "mode"
        a, b = common
        if _within(a, b, JPEG_TOLERANCE if jpeg else 0):
            return ""
        return TRANSPARENT_COLOUR if a.mode == "RGBA" and _equal_where_visible(a, b) else "samples"


def _equal_where_visible(a: Image.Image, b: Image.Image) -> bool:
    """The same opacity everywhere and the same colour wherever it is not 0: a fully transparent pixel
    draws nothing, and its colour is what the stream holds (ours) or 0 (MuPDF, un-premultiplying)."""
    if a.getchannel("A").tobytes() != b.getchannel("A").tobytes():
        return False
    visible = a.getchannel("A").point(lambda v: 255 if v else 0)
    blank = Image.new("RGBA", a.size)
    return Image.composite(a, blank, visible).tobytes() == Image.composite(b, blank, visible).tobytes()


# How a reference writes a 16-bit sample v in 8 bits: its high byte, or that rounded by the bit below it.
EIGHT_BITS = {
    "high": lambda v: v >> 8,
    "rounded": lambda v: min(255, (v >> 8) + ((v >> 7) & 1)),
}


def _eight_bits(path: Path, rule: str) -> Path:
    """A 16-bit PNG's samples cut to 8 bits by `rule` (EIGHT_BITS), beside it."""
    with open(path, "rb") as f:
        colour_type = f.read(26)[25]
    with Image.open(path) as image:
        if colour_type == 0:  # grey, read as 32-bit integers
            samples: Sequence[float | tuple[int, ...]] | list[int] = image.get_flattened_data()
            size, mode = image.size, "L"
        else:  # RGB: 16-bit samples, big-endian, straight from the PNG's rows
            samples = _rgb16_samples(path)
            size, mode = image.size, "RGB"
        cut = EIGHT_BITS[rule]
        Image.frombytes(mode, size, bytes(cut(v) for v in samples)).save(
            eight := path.with_name(f"{path.stem}-{rule}.png")
        )
    return eight


def _rgb16_samples(path: Path) -> list[int]:
    """The samples of a 16-bit RGB PNG (Pillow reads only their high bytes), unfiltered."""
    data, rows = path.read_bytes(), []
    width = int.from_bytes(data[16:20], "big")
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = int.from_bytes(data[pos : pos + 4], "big"), data[pos + 4 : pos + 8]
        idat += data[pos + 8 : pos + 8 + length] if kind == b"IDAT" else b""
        pos += 12 + length
    raw, stride, previous = zlib.decompress(idat), width * 6, bytearray(width * 6)
    for start in range(0, len(raw), stride + 1):
        filter_type, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for x in range(stride):
            left, up = line[x - 6] if x >= 6 else 0, previous[x]
            corner = previous[x - 6] if x >= 6 else 0
            line[x] = (line[x] + _predicted(filter_type, left, up, corner)) & 0xFF
        rows.append(bytes(line))
        previous = line
    joined = b"".join(rows)
    return [int.from_bytes(joined[i : i + 2], "big") for i in range(0, len(joined), 2)]


def _predicted(kind: int, left: int, up: int, corner: int) -> int:
    """PNG's filter types 0-4 (the PNG specification, 9.2)."""
    if kind == 0:
        return 0
    if kind == 1:
        return left
    if kind == 2:
        return up
    if kind == 3:
        return (left + up) // 2
    guess = left + up - corner
    near = min((abs(guess - left), 0, left), (abs(guess - up), 1, up), (abs(guess - corner), 2, corner))
    return near[2]


def _common_mode(a: Image.Image, b: Image.Image) -> tuple[Image.Image, Image.Image] | None:
    a = a.convert("RGB") if a.mode == "P" else a
    b = b.convert("RGB") if b.mode == "P" else b
    if a.mode == b.mode:
        return a, b
    if a.mode in WIDENING and b.mode in WIDENING:
        wide = max(a.mode, b.mode, key=WIDENING.__getitem__)
        return a.convert(wide), b.convert(wide)
    return None


def _within(a: Image.Image, b: Image.Image, tolerance: int) -> bool:
    if tolerance == 0 or a.mode not in ("L", "RGB", "CMYK"):
        return a.tobytes() == b.tobytes()
    extrema = ImageChops.difference(a, b).getextrema()
    # One (low, high) per band; a one-band image gives its pair alone.
    bands = cast(tuple[tuple[int, int], ...], extrema if a.mode != "L" else (extrema,))
    return max(high for _, high in bands) <= tolerance
