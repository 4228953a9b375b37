"""encode: images wrapped without decoding hold the pixels a full decode gives; the rest is decoded."""

import io
import random
import zlib

import pikepdf
import pytest
from pikepdf import Array, Dictionary, Name
from PIL import Image

from extraction.pdf.encode import encode
from extraction.pdf.wrap import wrapped
from tests import pdfs
from tests.pdfs_predictors import png_filtered

MAX_PIXELS = 10**8
COMPONENTS = {"/DeviceGray": 1, "/DeviceRGB": 3, "/DeviceCMYK": 4}
# (colour space, bits, predictor) of every kind that is wrapped; 0 means no /DecodeParms at all.
WRAPPED_KINDS = [
    ("/DeviceGray", 1, 0),
    ("/DeviceGray", 1, 1),
    ("/DeviceGray", 1, 15),
    ("/DeviceGray", 8, 0),
    ("/DeviceGray", 8, 2),
    ("/DeviceGray", 8, 10),
    ("/DeviceGray", 8, 15),
    ("/DeviceRGB", 8, 0),
    ("/DeviceRGB", 8, 2),
    ("/DeviceRGB", 8, 12),
    ("/DeviceRGB", 8, 15),
    ("/DeviceCMYK", 8, 0),
    ("/DeviceCMYK", 8, 2),
]


def tiff_differenced(rows: list[bytes], components: int) -> bytes:
    return b"".join(
        bytes((r[i] - (r[i - components] if i >= components else 0)) % 256 for i in range(len(r))) for r in rows
    )


def image_stream(pdf, data: bytes, width: int, height: int, colorspace, bits: int, **keys) -> pikepdf.Stream:
    stream = pikepdf.Stream(pdf, data)
    stream.Type, stream.Subtype, stream.Width, stream.Height = Name.XObject, Name.Image, width, height
    stream.ColorSpace, stream.BitsPerComponent = colorspace, bits
    for key, value in keys.items():
        stream[f"/{key}"] = value
    return stream


def generated(pdf, rng: random.Random, colorspace: str, bits: int, predictor: int) -> pikepdf.Stream:
    """Random samples (padding bits too) of a random size, Flate-compressed with the predictor."""
    width, height, components = rng.randint(1, 61), rng.randint(1, 17), COMPONENTS[colorspace]
    rows = [rng.randbytes((width * components * bits + 7) // 8) for _ in range(height)]
    step = max(1, components * bits // 8)
    data = (
        png_filtered(rows, step, rng)
        if predictor >= 10
        else (tiff_differenced(rows, components) if predictor == 2 else b"".join(rows))
    )
    parms = Dictionary(Predictor=predictor, Colors=components, BitsPerComponent=bits, Columns=width)
    extra = {"DecodeParms": parms} if predictor else {}
    return image_stream(
        pdf,
        zlib.compress(data, rng.randint(1, 9)),
        width,
        height,
        Name(colorspace),
        bits,
        Filter=Name.FlateDecode,
        **extra,
    )


def decoded_by_pikepdf(stream: pikepdf.Stream) -> Image.Image:
    return pikepdf.PdfImage(stream).as_pil_image(apply_mask=False)


def pixels(image: Image.Image) -> tuple:
    return image.mode, image.size, image.tobytes()


@pytest.mark.parametrize("colorspace, bits, predictor", WRAPPED_KINDS)
def test_it_wraps_every_variant_with_the_pixels_of_a_full_decode(colorspace, bits, predictor):
    pdf, rng = pikepdf.Pdf.new(), random.Random(f"{colorspace}/{bits}/{predictor}")
    for _ in range(25):
        stream = generated(pdf, rng, colorspace, bits, predictor)
        encoded = encode(stream, MAX_PIXELS)

        size = int(stream.Width), int(stream.Height)
        assert wrapped(stream, ["FlateDecode"], *size, stream.read_raw_bytes()) is not None
        assert encoded.extension == ("png" if predictor >= 10 else "tif")
        assert pixels(Image.open(io.BytesIO(encoded.data))) == pixels(decoded_by_pikepdf(stream))


def test_it_wraps_the_compressed_bytes_without_recompressing_them():
    pdf = pikepdf.Pdf.new()
    stream = generated(pdf, random.Random(1), "/DeviceRGB", 8, 15)

    encoded = encode(stream, MAX_PIXELS)

    assert stream.read_raw_bytes() in encoded.data
    assert len(encoded.data) - len(stream.read_raw_bytes()) < 100


def test_it_gives_the_same_bytes_for_the_same_stream():
    pdf = pikepdf.Pdf.new()
    first = generated(pdf, random.Random(7), "/DeviceCMYK", 8, 0)
    second = generated(pdf, random.Random(7), "/DeviceCMYK", 8, 0)

    assert encode(first, MAX_PIXELS).data == encode(second, MAX_PIXELS).data


@pytest.mark.parametrize("black_is_one", [False, True])
def test_it_wraps_ccitt_group_4_with_the_pixels_of_a_full_decode(black_is_one):
    doc = pdfs.Doc()
    stream = pdfs.ccitt(doc, pdfs.bilevel_picture(61, 37))
    stream.DecodeParms.BlackIs1 = black_is_one

    encoded = encode(stream, MAX_PIXELS)

    assert encoded.extension == "tif"
    assert pixels(Image.open(io.BytesIO(encoded.data))) == pixels(decoded_by_pikepdf(stream))


def test_its_ccitt_tiff_shows_the_source_picture():
    doc = pdfs.Doc()
    picture = pdfs.bilevel_picture(61, 37)

    encoded = encode(pdfs.ccitt(doc, picture), MAX_PIXELS)

    assert pixels(Image.open(io.BytesIO(encoded.data)).convert("L")) == pixels(picture.convert("L"))


def broken(pdf, rng, **change) -> pikepdf.Stream:
    """A wrappable gray image with one thing changed: what `change` sets, or its data."""
    stream = generated(pdf, rng, "/DeviceGray", 8, 15)
    data = change.pop("data", None)
    if data is not None:
        stream.write(data(stream.read_raw_bytes()), filter=Name.FlateDecode, decode_parms=stream.DecodeParms)
    for key, value in change.items():
        stream[f"/{key}"] = value
    return stream


UNWRAPPABLE = {
    "decode_array": dict(Decode=Array([1, 0])),
    "indexed": dict(ColorSpace=Array([Name.Indexed, Name.DeviceGray, 1, pikepdf.String(b"\x00\xff")])),
    "calibrated": dict(ColorSpace=Array([Name.CalGray, Dictionary(WhitePoint=Array([1, 1, 1]))])),
    "four_bits": dict(BitsPerComponent=4),
    "filter_chain": dict(Filter=Array([Name.FlateDecode, Name.FlateDecode])),
    "stencil": dict(ImageMask=True),
    "columns_mismatch": dict(DecodeParms=Dictionary(Predictor=15, Columns=3)),
    "too_short": dict(data=lambda raw: zlib.compress(zlib.decompress(raw)[:-1])),
    "too_long": dict(data=lambda raw: zlib.compress(zlib.decompress(raw) + b"\0")),
    "bad_row_filter": dict(data=lambda raw: zlib.compress(b"\x07" + zlib.decompress(raw)[1:])),
    "trailing_bytes": dict(data=lambda raw: raw + b"junk"),
    "corrupt": dict(data=lambda raw: raw[:2] + bytes(len(raw) - 2)),
}


@pytest.mark.parametrize("change", UNWRAPPABLE.values(), ids=UNWRAPPABLE.keys())
def test_it_leaves_what_it_cannot_wrap_to_the_decoder(change):
    pdf = pikepdf.Pdf.new()
    stream = broken(pdf, random.Random(3), **change)
    filters = ["FlateDecode"] * (2 if "Filter" in change else 1)

    assert wrapped(stream, filters, int(stream.Width), int(stream.Height), stream.read_raw_bytes()) is None


def test_it_decodes_an_image_with_a_decode_array_to_its_remapped_pixels():
    pdf = pikepdf.Pdf.new()
    stream = broken(pdf, random.Random(4), Decode=Array([1, 0]))

    encoded = encode(stream, MAX_PIXELS)

    assert encoded.extension == "png"
    assert pixels(Image.open(io.BytesIO(encoded.data))) == pixels(decoded_by_pikepdf(stream))


def test_a_wrapped_file_holds_the_streams_bytes_so_it_records_no_second_hash_of_them():
    pdf = pikepdf.Pdf.new()
    stream = generated(pdf, random.Random(3), "/DeviceRGB", 8, 15)
    encoded = encode(stream, MAX_PIXELS)

    assert encoded.method == "wrapped" and encoded.stream_sha256 == ""
    assert stream.read_raw_bytes() in encoded.data  # what the hash would have vouched for is in the file itself
