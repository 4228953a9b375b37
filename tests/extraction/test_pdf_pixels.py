"""encode: Pillow reads every written file to the samples the PDF draws (issue 14)."""

import io
import zlib

import pikepdf
import pytest
from PIL import Image, ImageChops, ImageCms, ImageStat

from extraction.pdf.encode import encode
from tests import pdfs
from tests import pdfs_pixels as px
from tests import pdfs_predictors as pp

MAX_PIXELS = 10**8


def opened(encoded) -> Image.Image:
    return Image.open(io.BytesIO(encoded.data))


def within_rounding(image: Image.Image, expected: Image.Image, levels: int = 2) -> bool:
    """JPEG decoders may round an IDCT differently by a level or two; nothing else may differ."""
    pairs = zip(image.tobytes(), expected.tobytes())
    return image.mode == expected.mode and image.size == expected.size and all(abs(a - b) <= levels for a, b in pairs)


def inline_images(path):
    pdf = pikepdf.open(path)
    found = pikepdf.parse_content_stream(pdf.pages[0], "BI ID EI")
    return pdf, [i.iimage for i in found if isinstance(i, pikepdf.ContentStreamInlineImage)]


def png_samples16(data: bytes) -> bytes:
    """The samples of a 16-bit PNG written with filter None on every row (what encode writes)."""
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    idat, pos = b"", 8
    while pos < len(data):
        length, kind = int.from_bytes(data[pos : pos + 4], "big"), data[pos + 4 : pos + 8]
        idat += data[pos + 8 : pos + 8 + length] if kind == b"IDAT" else b""
        pos += 12 + length
    rows, row = zlib.decompress(idat), len(zlib.decompress(idat)) // height
    assert all(rows[y * row] == 0 for y in range(height)) and data[24] == 16 and width
    return b"".join(rows[y * row + 1 : (y + 1) * row] for y in range(height))


def test_it_writes_a_cmyk_jpeg_with_the_samples_the_pdf_draws_not_their_negative():
    image, expected = px.cmyk_jpeg(_pdf := pikepdf.Pdf.new())

    encoded = encode(image, MAX_PIXELS)

    assert within_rounding(opened(encoded), expected)
    assert (encoded.method, encoded.extension, encoded.colorspace) == ("decoded", "tif", "DeviceCMYK")


def as_srgb(picture: Image.Image) -> Image.Image:
    """What a colour-managed viewer shows: the file's samples through the profile it embeds."""
    profile = ImageCms.ImageCmsProfile(io.BytesIO(picture.info["icc_profile"]))
    return ImageCms.profileToProfile(picture, profile, ImageCms.createProfile("sRGB"), outputMode="RGB")


def mean_difference(a: Image.Image, b: Image.Image) -> float:
    return sum(ImageStat.Stat(ImageChops.difference(a, b)).mean) / 3


def test_it_writes_an_icc_cmyk_jpeg_as_pdfium_draws_it_not_its_negative():
    image, expected = px.icc_cmyk_jpeg(_pdf := pikepdf.Pdf.new())
    drawn = px.drawn_by_pdfium(image)  # through the image's own /N 4 profile

    encoded = encode(image, MAX_PIXELS)

    written = opened(encoded)
    assert (encoded.method, encoded.extension, encoded.colorspace) == ("decoded", "tif", "ICCBased")
    assert written.mode == "CMYK"
    assert within_rounding(written, expected) and written.info["icc_profile"] == px.cmyk_profile()
    assert max(hi for _lo, hi in ImageChops.difference(as_srgb(written), drawn).getextrema()) <= 4
    assert mean_difference(as_srgb(ImageChops.invert(written)), drawn) > 30  # what the negative would be


def test_it_passes_through_a_cmyk_jpeg_the_pdf_inverts_as_pillow_does():
    image, expected = px.cmyk_jpeg(_pdf := pikepdf.Pdf.new(), decode=True)

    encoded = encode(image, MAX_PIXELS)

    assert encoded.method == "passthrough" and encoded.data == image.read_raw_bytes()
    assert within_rounding(opened(encoded), expected, levels=0)


def test_it_applies_an_inverting_decode_array_to_a_gray_jpeg():
    image, expected = px.inverted_gray_jpeg(_pdf := pikepdf.Pdf.new())

    encoded = encode(image, MAX_PIXELS)

    assert within_rounding(opened(encoded), expected, levels=0)
    assert encoded.stream_sha256 and encoded.method == "decoded"


def test_it_keeps_16_bit_rgb_at_16_bits():
    image, samples = px.rgb16(_pdf := pikepdf.Pdf.new())

    encoded = encode(image, MAX_PIXELS)

    assert (encoded.extension, encoded.bits) == ("png", 16)
    assert png_samples16(encoded.data) == samples


def test_it_keeps_separation_tints_as_gray_and_records_the_colorant():
    image, tints = px.separation(_pdf := pikepdf.Pdf.new())

    encoded = encode(image, MAX_PIXELS)

    assert (opened(encoded).mode, opened(encoded).tobytes()) == ("L", tints)
    assert encoded.colorspace == "Separation:PANTONE 485 C"


def test_it_keeps_the_four_inks_of_a_device_n_image():
    image, tints = px.device_n(_pdf := pikepdf.Pdf.new(), 4)

    encoded = encode(image, MAX_PIXELS)

    assert (opened(encoded).mode, opened(encoded).tobytes()) == ("CMYK", tints)
    assert encoded.colorspace == "DeviceN:Ink0,Ink1,Ink2,Ink3"


def test_it_keeps_the_two_inks_of_a_device_n_image_as_a_two_sample_tiff():
    image, tints = px.device_n(_pdf := pikepdf.Pdf.new(), 2)

    encoded = encode(image, MAX_PIXELS)

    assert encoded.extension == "tif" and zlib.compress(tints, 6) in encoded.data


def test_it_keeps_lab_samples_as_stored():
    image, samples = px.lab(_pdf := pikepdf.Pdf.new())

    encoded = encode(image, MAX_PIXELS)

    assert (opened(encoded).mode, opened(encoded).tobytes(), encoded.colorspace) == ("LAB", samples, "Lab")


def test_it_scales_4_bit_samples_to_8_bits_exactly():
    image, expected = px.four_bit_rgb(_pdf := pikepdf.Pdf.new())

    assert opened(encode(image, MAX_PIXELS)).tobytes() == expected


def test_it_writes_an_inline_stencil_mask_black_where_it_paints(tmp_path):
    _pdf, [image] = inline_images(px.inline_stencil(tmp_path))

    encoded = encode(image, MAX_PIXELS)

    assert list(opened(encoded).convert("L").get_flattened_data()) == [255, 0, 255, 0, 0, 255, 0, 255]
    assert (encoded.colorspace, encoded.bits) == ("ImageMask", 1)


def test_it_writes_a_one_pixel_inline_image(tmp_path):
    _pdf, [image] = inline_images(px.tiny_inline(tmp_path))

    assert opened(encode(image, MAX_PIXELS)).getpixel((0, 0)) == (0x10, 0x80, 0xF0)


def test_it_writes_an_inline_jpeg_starting_at_its_start_of_image_marker(tmp_path):
    _pdf, [image] = inline_images(px.inline_jpeg(tmp_path))

    encoded = encode(image, MAX_PIXELS)

    assert encoded.data[:2] == b"\xff\xd8" and encoded.method == "adjusted"
    assert within_rounding(opened(encoded), px.INLINE_JPEG_PICTURE, levels=8)


def test_it_records_the_size_of_the_written_file_not_the_dictionarys():
    image, _ = px.inverted_gray_jpeg(_pdf := pikepdf.Pdf.new())
    image.Width = image.Height = 1
    del image["/Decode"]

    encoded = encode(image, MAX_PIXELS)

    assert (encoded.width, encoded.height) == opened(encoded).size == (40, 24)


BILEVEL = pdfs.bilevel_picture(61, 37)


def gray(image: Image.Image) -> bytes:
    return image.convert("L").tobytes()


@pytest.mark.parametrize("byte_align", [False, True])
def test_it_decodes_ccitt_group_3_rows_in_place(byte_align):
    image = px.ccitt_group3(_pdf := pikepdf.Pdf.new(), BILEVEL, byte_align)

    encoded = encode(image, MAX_PIXELS)

    assert gray(opened(encoded)) == gray(BILEVEL)
    assert (encoded.method, encoded.bits, encoded.width, encoded.height) == ("decoded", 1, 61, 37)


def test_it_decodes_a_jbig2_image():
    image = px.jbig2_mmr(_pdf := pikepdf.Pdf.new(), BILEVEL)

    assert gray(opened(encode(image, MAX_PIXELS))) == gray(BILEVEL)


def test_it_writes_a_jbig2_stencil_mask_black_where_it_paints():
    image = px.jbig2_mmr(_pdf := pikepdf.Pdf.new(), BILEVEL)
    image.ImageMask = True
    del image["/ColorSpace"]

    encoded = encode(image, MAX_PIXELS)

    assert gray(opened(encoded)) == gray(BILEVEL) and encoded.colorspace == "ImageMask"


def test_it_keeps_three_device_n_inks_as_inks_not_rgb():
    image, tints = px.device_n(_pdf := pikepdf.Pdf.new(), 3)

    encoded = encode(image, MAX_PIXELS)

    assert encoded.extension == "tif" and zlib.compress(tints, 6) in encoded.data


def test_it_keeps_the_samples_of_a_jpeg_the_pdf_does_not_colour_transform():
    image, expected = px.untransformed_jpeg(_pdf := pikepdf.Pdf.new())

    encoded = encode(image, MAX_PIXELS)

    assert within_rounding(opened(encoded), expected, levels=0) and encoded.method == "decoded"


def test_it_applies_an_inverting_decode_array_to_16_bit_samples():
    image, samples = px.rgb16(_pdf := pikepdf.Pdf.new())
    image.Decode = pikepdf.Array([1, 0] * 3)

    assert png_samples16(encode(image, MAX_PIXELS).data) == samples.translate(bytes(255 - b for b in range(256)))


def test_it_decodes_run_length_samples_of_a_separation():
    image, tints = px.separation_run_length(_pdf := pikepdf.Pdf.new())

    assert opened(encode(image, MAX_PIXELS)).tobytes() == tints


def test_it_looks_up_an_indexed_cmyk_image_into_cmyk_samples():
    image, expected = px.indexed_cmyk(_pdf := pikepdf.Pdf.new())

    encoded = encode(image, MAX_PIXELS)

    assert (opened(encoded).mode, opened(encoded).tobytes(), encoded.colorspace) == ("CMYK", expected, "Indexed")


def test_it_looks_up_an_indexed_lab_image_into_lab_samples():
    image, expected = px.indexed_lab(_pdf := pikepdf.Pdf.new())

    encoded = encode(image, MAX_PIXELS)

    assert (opened(encoded).mode, opened(encoded).tobytes()) == ("LAB", expected)


def test_it_writes_an_indexed_image_whose_base_profile_is_broken_from_its_palette():
    image, expected = px.indexed_broken_profile(_pdf := pikepdf.Pdf.new())

    written = opened(encode(image, MAX_PIXELS))

    assert written.convert("RGB").tobytes() == expected and "icc_profile" not in written.info


def test_it_draws_the_last_palette_entry_for_an_index_past_it():
    image, expected = px.indexed_short_palette(_pdf := pikepdf.Pdf.new())

    assert opened(encode(image, MAX_PIXELS)).convert("RGB").tobytes() == expected


def test_it_writes_an_inline_indexed_image(tmp_path):
    pdf, (inline,) = inline_images(px.inline_indexed(tmp_path))

    encoded = encode(inline, MAX_PIXELS)

    assert opened(encoded).mode == "P"
    assert opened(encoded).convert("RGB").tobytes() == b"".join(px.RGB_PALETTE[i] for i in (0, 1, 2, 3, 3, 2, 1, 0))


def test_it_decodes_an_inline_ccitt_stencil_mask_black_where_it_paints(tmp_path):
    pdf, (inline,) = inline_images(px.inline_ccitt_stencil(tmp_path, BILEVEL))

    encoded = encode(inline, MAX_PIXELS)

    assert gray(opened(encoded)) == gray(BILEVEL) and encoded.colorspace == "ImageMask"


def test_it_writes_an_inline_image_that_states_its_length(tmp_path):
    _pdf, [image] = inline_images(px.inline_with_length(tmp_path))

    assert opened(encode(image, MAX_PIXELS)).getpixel((0, 0)) == (0x10, 0x80, 0xF0)


def test_it_keeps_every_bit_of_16_bit_rgb_behind_png_predictors():
    image, samples = pp.rgb16_predicted(_pdf := pikepdf.Pdf.new())

    encoded = encode(image, MAX_PIXELS)

    assert (encoded.extension, encoded.bits) == ("png", 16) and png_samples16(encoded.data) == samples
    assert png_samples16(encoded.data)[0::2] == px.drawn_by_pdfium(image).tobytes()  # PDFium draws 8 of the bits


@pytest.mark.parametrize("parms", [{"BitsPerComponent": None}, {"Columns": 8}], ids=["default_8_bits", "columns"])
def test_it_decodes_16_bit_predictor_rows_the_parameters_contradict_as_pdfium_does(parms):
    """/DecodeParms that disagree with the image: the predictor works on the rows they describe (qpdf and
    PDFium agree; poppler 22 differs without /BitsPerComponent), and the image's rows are cut from that."""
    image, samples = pp.rgb16_predicted(_pdf := pikepdf.Pdf.new(), **parms)

    written = png_samples16(encode(image, MAX_PIXELS).data)

    assert written != samples and written[0::2] == px.drawn_by_pdfium(image).tobytes()
