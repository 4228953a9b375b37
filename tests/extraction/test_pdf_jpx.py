"""encode, JPEG 2000: passed through only when Pillow reads it as the PDF draws it, else decoded (issue 14).

"What the PDF draws" is PDFium's rendering of the image alone at one pixel a sample, or, where that
rendering cannot say (16 bits, CMYK), the samples put into the codestream (all encoded losslessly).
"""

import hashlib
import io
import zlib

import pikepdf
import pytest
from pikepdf import Array, Name
from PIL import Image, ImageChops

from extraction.pdf import jpx
from extraction.pdf.encode import ImageTooLarge, encode
from tests import pdfs
from tests import pdfs_jpx as jx
from tests import pdfs_pixels as px

MAX_PIXELS = 10**8


def opened(encoded) -> Image.Image:
    return Image.open(io.BytesIO(encoded.data))


def largest_difference(a: Image.Image, b: Image.Image) -> int:
    return max(hi for _lo, hi in ImageChops.difference(a, b).getextrema())


def test_it_passes_an_rgb_jpx_through_with_the_codestreams_dimensions_not_the_dictionarys():
    data = jx.jpx_bytes(pdfs.rgb_picture())
    image = jx.jpx(_pdf := pikepdf.Pdf.new(), data, 48, 32)
    drawn = px.drawn_by_pdfium(image)
    image.Width = image.Height = 1

    encoded = encode(image, MAX_PIXELS)

    assert (encoded.method, encoded.data, encoded.stream_sha256) == ("passthrough", data, "")
    assert (encoded.width, encoded.height) == opened(encoded).size == (48, 32)
    assert opened(encoded).tobytes() == drawn.tobytes()


@pytest.mark.parametrize(
    "keys",
    [
        {"Decode": Array([1, 0] * 3)},  # ignored for JPX: PDFium and poppler draw the samples as they are
        {"ColorSpace": Name.DeviceRGB, "BitsPerComponent": 16},  # an override that agrees; BPC is ignored
    ],
    ids=["decode_array", "agreeing_colorspace"],
)
def test_it_passes_through_a_jpx_whose_dictionary_does_not_change_its_reading(keys):
    data = jx.jpx_bytes(pdfs.rgb_picture())
    image = jx.jpx(_pdf := pikepdf.Pdf.new(), data, 48, 32, **keys)

    encoded = encode(image, MAX_PIXELS)

    assert encoded.method == "passthrough" and opened(encoded).tobytes() == px.drawn_by_pdfium(image).tobytes()


def test_it_writes_the_colours_of_an_rgba_jpx_the_pdf_draws_opaque():
    image = jx.jpx(_pdf := pikepdf.Pdf.new(), data := jx.jpx_bytes(jx.rgba_picture()), 48, 32)
    assert Image.open(io.BytesIO(data)).mode == "RGBA"  # what a passed-through file would say

    encoded = encode(image, MAX_PIXELS)

    assert (encoded.method, encoded.extension, opened(encoded).mode) == ("decoded", "png", "RGB")
    assert opened(encoded).tobytes() == px.drawn_by_pdfium(image).tobytes() == pdfs.rgb_picture().tobytes()
    assert encoded.stream_sha256 == hashlib.sha256(data).hexdigest()


def test_it_keeps_the_opacity_of_an_rgba_jpx_whose_smask_is_in_its_data():
    """The opacity channel is the image's soft mask (7.4.9). Readers disagree here (PDFium applies the
    opacity twice, poppler 22 reads the four components as RGB), so the reference is the codestream."""
    image = jx.jpx(_pdf := pikepdf.Pdf.new(), jx.jpx_bytes(jx.rgba_picture()), 48, 32, SMaskInData=1)

    encoded = encode(image, MAX_PIXELS)

    assert (encoded.method, opened(encoded).mode) == ("decoded", "RGBA")
    assert opened(encoded).tobytes() == jx.rgba_picture().tobytes()


def test_it_keeps_a_16_bit_jpx_at_16_bits():
    picture = jx.gray16_picture()
    image = jx.jpx(_pdf := pikepdf.Pdf.new(), jx.jpx_bytes(picture), 10, 6)

    encoded = encode(image, MAX_PIXELS)

    assert (encoded.method, encoded.extension, encoded.bits) == ("decoded", "png", 16)
    assert opened(encoded).tobytes() == picture.tobytes()  # every bit, where PDFium draws 8 of them
    high_bytes = Image.frombytes("L", picture.size, bytes(v >> 8 for v in picture.get_flattened_data()))
    assert largest_difference(high_bytes.convert("RGB"), px.drawn_by_pdfium(image)) <= 1


def test_it_writes_four_components_the_pdf_calls_cmyk_as_cmyk_not_as_pillows_rgba():
    data = jx.cmyk_codestream()
    image = jx.jpx(_pdf := pikepdf.Pdf.new(), data, 20, 12, ColorSpace=Name.DeviceCMYK)
    assert Image.open(io.BytesIO(data)).mode == "RGBA"

    encoded = encode(image, MAX_PIXELS)

    assert (encoded.method, encoded.extension, encoded.colorspace) == ("decoded", "tif", "DeviceCMYK")
    assert (opened(encoded).mode, opened(encoded).tobytes()) == ("CMYK", pdfs.cmyk_picture().tobytes())


def test_it_refuses_a_jpx_larger_than_the_limit_by_its_codestreams_size():
    image = jx.jpx(_pdf := pikepdf.Pdf.new(), jx.jpx_bytes(pdfs.rgb_picture()), 1, 1)

    with pytest.raises(ImageTooLarge, match="48 x 32"):
        encode(image, 48 * 32 - 1)


def test_it_raises_for_jpx_data_without_a_codestream():
    image = jx.jpx(_pdf := pikepdf.Pdf.new(), b"\x00\x00\x00\x0cjP  \r\n\x87\n" + b"\x00" * 20, 4, 4)

    with pytest.raises(ValueError, match="codestream"):
        encode(image, MAX_PIXELS)


def test_it_looks_up_a_jpx_of_indices_in_the_pdfs_palette():
    """poppler's pdfimages writes these colours too; PDFium paints such an image black."""
    image, looked_up = jx.indexed_jpx(_pdf := pikepdf.Pdf.new())

    encoded = encode(image, MAX_PIXELS)

    assert (encoded.method, opened(encoded).mode, encoded.colorspace) == ("decoded", "P", "Indexed")
    assert opened(encoded).convert("RGB").tobytes() == looked_up


@pytest.mark.parametrize("codestream_only", [False, True], ids=["jp2", "codestream"])
def test_it_reads_the_header_of_every_cut_jpx_or_says_why_not(codestream_only):
    data = jx.jpx_bytes(pdfs.rgb_picture(), codestream_only)
    whole = jpx.header_of(data)

    for length in range(len(data) // 4):
        try:
            assert jpx.header_of(data[:length]) == whole  # the header was all there
        except ValueError as exc:
            assert "codestream" in str(exc)


def test_it_writes_a_cmyk_jp2_without_a_colour_space_in_the_codestreams_cmyk():
    image = jx.jpx(_pdf := pikepdf.Pdf.new(), jx.jpx_bytes(pdfs.cmyk_picture()), 20, 12)

    encoded = encode(image, MAX_PIXELS)

    assert (encoded.method, encoded.extension, opened(encoded).mode) == ("decoded", "tif", "CMYK")
    assert opened(encoded).tobytes() == pdfs.cmyk_picture().tobytes()


def test_it_looks_up_a_jp2_with_its_own_palette_in_the_pdfs_palette():
    """The PDF's Indexed space describes the stored indices: the JP2's palette is not applied first
    (pdf.js issue12213, where poppler writes the same)."""
    space = Array([Name.Indexed, Name.DeviceRGB, 3, pikepdf.String(b"".join(px.RGB_PALETTE))])
    image = jx.palette_jpx(_pdf := pikepdf.Pdf.new(), space)

    written = opened(encode(image, MAX_PIXELS)).convert("RGB").tobytes()

    assert written == b"".join(px.RGB_PALETTE[i] for i in (0, 1, 2, 3, 3, 2, 1, 0))


def test_it_writes_a_jp2_with_its_own_palette_and_no_colour_space_in_that_palettes_colours():
    image = jx.palette_jpx(_pdf := pikepdf.Pdf.new())

    encoded = encode(image, MAX_PIXELS)

    assert (encoded.method, opened(encoded).mode) == ("decoded", "RGB")
    assert opened(encoded).tobytes() == b"".join(jx.JP2_PALETTE[i] for i in (0, 1, 2, 3, 3, 2, 1, 0))


@pytest.mark.parametrize("parms", [None, Array([None, None])], ids=["no_parms", "null_parms"])
def test_it_decodes_a_jpx_wrapped_in_flate_as_the_bare_jpx_and_names_the_stored_data(parms):
    """[/FlateDecode /JPXDecode]: handed to Pillow whole, four components the PDF calls CMYK came out as
    RGBA, and a 16-bit RGB codestream as wrong 8-bit samples (pikepdf's `pike-flate-jp2`)."""
    image = jx.jpx(_pdf := pikepdf.Pdf.new(), jx.cmyk_codestream(), 20, 12, ColorSpace=Name.DeviceCMYK)
    image.write(zlib.compress(image.read_raw_bytes()), filter=Array([Name.FlateDecode, Name.JPXDecode]))
    if parms is not None:
        image.DecodeParms = parms

    encoded = encode(image, MAX_PIXELS)

    assert (encoded.method, encoded.extension, encoded.colorspace) == ("decoded", "tif", "DeviceCMYK")
    assert (opened(encoded).mode, opened(encoded).tobytes()) == ("CMYK", pdfs.cmyk_picture().tobytes())
    assert encoded.stream_sha256 == hashlib.sha256(image.read_raw_bytes()).hexdigest()
