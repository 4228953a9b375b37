"""Generated Flate streams behind PNG predictors: parameters qpdf refuses, and 16-bit rows (issue 14).

Like tests/pdfs_pixels.py: each factory returns a stream (or a path) and the samples put into it.
"""

import random
import zlib
from pathlib import Path

import pikepdf
from pikepdf import Array, Dictionary, Name

from tests import pdfs
from tests.pdfs_pixels import rgb16

# ---------- filter parameters qpdf refuses (issue 14: "a PNG predictor overflow" crashed extraction) ----------
# Columns x Colors x BitsPerComponent past what qpdf's PNG filter can hold: it raises a RuntimeError, not a PdfError.
OVERFLOWING_PREDICTOR = Dictionary(Predictor=15, Colors=2**31 - 1, BitsPerComponent=16, Columns=2**31 - 1)


def predictor_overflow(d: Path) -> Path:
    """Page 1 draws an RGB image whose PNG predictor parameters overflow, a good one, then a good image
    whose ICC profile stream has those parameters (its samples still say the colours)."""
    doc, picture = pdfs.Doc(), pdfs.rgb_picture(4, 2)
    rows = b"".join(b"\0" + picture.tobytes()[y * 12 : (y + 1) * 12] for y in range(2))
    broken = doc.image(zlib.compress(rows), picture, "/FlateDecode", dict(OVERFLOWING_PREDICTOR.items()))
    good = doc.image(zlib.compress(picture.tobytes()), picture, "/FlateDecode")
    profiled = doc.image(zlib.compress(pdfs.gray_picture(4, 2).tobytes()), pdfs.gray_picture(4, 2), "/FlateDecode")
    profile = doc.pdf.make_stream(b"")
    profile.write(zlib.compress(b"\0" * 200), filter=Name.FlateDecode, decode_parms=OVERFLOWING_PREDICTOR)
    profile.N = 1
    profiled.ColorSpace = Array([Name.ICCBased, profile])
    doc.page(broken, good, profiled)
    return doc.save(d / "predictor_overflow.pdf")


# ---------- 16-bit samples behind PNG predictors ----------
def png_filtered(rows: list[bytes], step: int, rng: random.Random) -> bytes:
    """Rows with a random PNG filter each (None, Sub, Up, Average, Paeth), as PDF's PNG predictors expect."""
    out, above = [], bytes(len(rows[0]))
    for row in rows:
        kind = rng.randrange(5)
        out.append(bytes([kind]) + bytes(_filtered(kind, row, above, i, step) for i in range(len(row))))
        above = row
    return b"".join(out)


def _filtered(kind: int, row: bytes, above: bytes, i: int, step: int) -> int:
    left, up = (row[i - step] if i >= step else 0), above[i]
    corner = above[i - step] if i >= step else 0
    guess = [0, left, up, (left + up) // 2, _paeth(left, up, corner)][kind]
    return (row[i] - guess) % 256


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def rgb16_predicted(pdf, **parms) -> tuple[pikepdf.Stream, bytes]:
    """rgb16()'s samples behind PNG predictors filtered six bytes a pixel (16-bit RGB), with the
    /DecodeParms given (consistent ones by default); returns the samples."""
    width, height = 7, 5
    image, samples = rgb16(pdf, width, height)
    row = width * 6
    rows = [samples[y * row : (y + 1) * row] for y in range(height)]
    parms = {"Predictor": 15, "Colors": 3, "BitsPerComponent": 16, "Columns": width, **parms}
    image.write(
        zlib.compress(png_filtered(rows, 6, random.Random(repr(parms)))),
        filter=Name.FlateDecode,
        decode_parms=Dictionary({f"/{k}": v for k, v in parms.items() if v is not None}),
    )
    return pdf.make_indirect(image), samples
