"""Generated PDFs whose images are drawn from outside the page's own content stream.

Each draws a gray image /Im0 (40x24) on the page first, then its special image (an RGB 48x32, or the
bilevel 64x40), so the expected placements read the same way in every test.
"""

from pathlib import Path

import pikepdf
from pikepdf import Array, Dictionary, Name

from tests.pdfs import Doc, bilevel_picture, flate, gray_picture, raw_pdf, raw_stream, rgb_picture, write


def _page_with(doc: Doc, content: bytes, **resources):
    """A page drawing the gray /Im0, then `content` with `resources` added to its own."""
    xobjects = Dictionary(Im0=flate(doc, gray_picture()))
    xobjects.update(resources.pop("XObject", Dictionary()))
    return doc.page(content=b"/Im0 Do\n" + content, resources=Dictionary(XObject=xobjects, **resources))


def _stamp(doc: Doc, image, flags: int = 4):
    """A stamp annotation whose normal appearance draws `image`."""
    appearance = doc.form(b"q 48 0 0 32 0 0 cm /Im Do Q", Dictionary(XObject=Dictionary(Im=image)))
    return doc.pdf.make_indirect(
        Dictionary(
            Type=Name.Annot, Subtype=Name.Stamp, Rect=Array([0, 0, 48, 32]), F=flags, AP=Dictionary(N=appearance)
        )
    )


def annotation_stamp(d: Path) -> Path:
    doc = Doc()
    page = _page_with(doc, b"")
    page.obj.Annots = Array([_stamp(doc, flate(doc, rgb_picture()))])
    return doc.save(d / "annotation_stamp.pdf")


def annotation_states(d: Path) -> Path:
    """A stamp whose /AS selects its /On appearance (RGB) over /Off (bilevel)."""
    doc = Doc()
    page = _page_with(doc, b"")
    on, off = (_stamp(doc, flate(doc, picture)).AP.N for picture in (rgb_picture(), bilevel_picture()))
    stamp = Dictionary(
        Type=Name.Annot,
        Subtype=Name.Stamp,
        Rect=Array([0, 0, 48, 32]),
        AS=Name.On,
        AP=Dictionary(N=Dictionary(On=on, Off=off)),
    )
    page.obj.Annots = Array([doc.pdf.make_indirect(stamp)])
    return doc.save(d / "annotation_states.pdf")


def annotation_hidden(d: Path) -> Path:
    """A hidden stamp (flag 2) before a visible one: only the visible one is drawn."""
    doc = Doc()
    page = _page_with(doc, b"")
    page.obj.Annots = Array(
        [_stamp(doc, flate(doc, bilevel_picture()), flags=2), _stamp(doc, flate(doc, rgb_picture()))]
    )
    return doc.save(d / "annotation_hidden.pdf")


def tiling_pattern(d: Path) -> Path:
    """A rectangle filled with a tiling pattern whose cell draws the RGB image."""
    doc = Doc()
    cell = doc.form(b"q 48 0 0 32 0 0 cm /Im Do Q", Dictionary(XObject=Dictionary(Im=flate(doc, rgb_picture()))))
    del cell.Type, cell.Subtype
    for key, value in dict(PatternType=1, PaintType=1, TilingType=1, XStep=48, YStep=32).items():
        cell[f"/{key}"] = value
    _page_with(doc, b"/Pattern cs /P0 scn 0 0 200 200 re f\n", Pattern=Dictionary(P0=cell))
    return doc.save(d / "tiling_pattern.pdf")


def soft_mask_group(d: Path) -> Path:
    """An ExtGState whose luminosity soft mask is a group drawing the RGB image, set before a fill."""
    doc = Doc()
    group = doc.form(b"q 48 0 0 32 0 0 cm /Im Do Q", Dictionary(XObject=Dictionary(Im=flate(doc, rgb_picture()))))
    group.Group = Dictionary(S=Name.Transparency, CS=Name.DeviceGray)
    state = Dictionary(Type=Name.ExtGState, SMask=Dictionary(Type=Name.Mask, S=Name.Luminosity, G=group))
    _page_with(doc, b"/GS0 gs 0 0 100 100 re f\n", ExtGState=Dictionary(GS0=state))
    return doc.save(d / "soft_mask_group.pdf")


def type3_font(doc: Doc, resources: Dictionary | None) -> pikepdf.Dictionary:
    """A Type3 font whose glyph /a draws /Im from `resources` (None: the page's apply)."""
    glyph = doc.pdf.make_stream(b"48 0 d0 q 48 0 0 32 0 0 cm /Im Do Q")
    font = Dictionary(
        Type=Name.Font,
        Subtype=Name.Type3,
        FontBBox=Array([0, 0, 48, 32]),
        FontMatrix=Array([0.01, 0, 0, 0.01, 0, 0]),
        CharProcs=Dictionary(a=glyph),
        Encoding=Dictionary(Type=Name.Encoding, Differences=Array([97, Name.a])),
        FirstChar=97,
        LastChar=97,
        Widths=Array([48]),
    )
    if resources is not None:
        font.Resources = resources
    return doc.pdf.make_indirect(font)


def type3_glyph(d: Path, text: bytes = b"(a) Tj") -> Path:
    doc = Doc()
    font = type3_font(doc, Dictionary(XObject=Dictionary(Im=flate(doc, rgb_picture()))))
    _page_with(doc, b"BT /F0 12 Tf " + text + b" ET\n", Font=Dictionary(F0=font))
    return doc.save(d / "type3_glyph.pdf")


def type3_glyph_page_resources(d: Path) -> Path:
    """The font has no /Resources: its glyph draws /Im from the page's."""
    doc = Doc()
    font = type3_font(doc, None)
    _page_with(
        doc, b"BT /F0 12 Tf (a) Tj ET\n", Font=Dictionary(F0=font), XObject=Dictionary(Im=flate(doc, rgb_picture()))
    )
    return doc.save(d / "type3_glyph_page_resources.pdf")


def explicit_mask(d: Path) -> Path:
    """The RGB image with a /Mask stencil stream (an explicit mask)."""
    doc = Doc()
    image = flate(doc, rgb_picture())
    mask = flate(doc, bilevel_picture(48, 32))
    mask.ImageMask = True
    del mask.ColorSpace
    image.Mask = mask
    _page_with(doc, b"/Im1 Do\n", XObject=Dictionary(Im1=image))
    return doc.save(d / "explicit_mask.pdf")


def inline_duplicate_keys(d: Path) -> Path:
    """An inline image that says /W twice: qpdf refuses it, poppler takes the last."""
    inline = b"BI /W 2 /W 2 /H 1 /CS /G /BPC 8 ID \x00\xff EI\n"
    content = b"q 10 0 0 10 0 0 cm " + inline + b"Q"
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Resources << >> /Contents 4 0 R >>"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page,
        raw_stream(content),
    ]
    return write(d / "inline_duplicate_keys.pdf", raw_pdf(objects))


def type3_glyph_twice(d: Path) -> Path:
    """Five glyphs in two runs of text with the same Type3 font: a viewer draws the image five times."""
    return type3_glyph(d, b"(aaa) Tj [(a) -100 (a)] TJ /F0 10 Tf (a) Tj")


def type3_glyph_showing_itself(d: Path) -> Path:
    """A glyph that shows text in its own font: a loop for a naive reader."""
    doc = Doc()
    font = type3_font(doc, Dictionary(XObject=Dictionary(Im=flate(doc, rgb_picture()))))
    font.CharProcs.a.write(b"48 0 d0 /Im Do BT /F0 1 Tf (a) Tj ET")
    font.Resources.Font = Dictionary(F0=font)
    _page_with(doc, b"BT /F0 12 Tf (a) Tj ET\n", Font=Dictionary(F0=font))
    return doc.save(d / "type3_glyph_showing_itself.pdf")


def form_bomb(d: Path, levels: int = 9, fanout: int = 10) -> Path:
    """Each form draws the next ten times, the last one the image: fanout**levels draws, in a few KB."""
    doc = Doc()
    inner = doc.form(b"/Im Do", Dictionary(XObject=Dictionary(Im=flate(doc, gray_picture(2, 2)))))
    for _ in range(levels - 1):
        inner = doc.form(b"/F Do " * fanout, Dictionary(XObject=Dictionary(F=inner)))
    doc.page(content=b"/F Do", resources=Dictionary(XObject=Dictionary(F=inner)))
    return doc.save(d / "form_bomb.pdf")


def form_on_every_page(d: Path) -> Path:
    """Three pages, each with resources of its own, draw one form that draws the gray image."""
    doc = Doc()
    form = doc.form(b"/Im Do", Dictionary(XObject=Dictionary(Im=flate(doc, gray_picture()))))
    for _ in range(3):
        doc.page(content=b"/Fm0 Do", resources=Dictionary(XObject=Dictionary(Fm0=form)))
    return doc.save(d / "form_on_every_page.pdf")


def optional_content(d: Path) -> Path:
    """Gray, then bilevel in a layer that is off (hidden), then RGB under a membership that is met (shown)."""
    doc = Doc()
    on, off = (doc.pdf.make_indirect(Dictionary(Type=Name.OCG, Name=pikepdf.String(n))) for n in ("on", "off"))
    hidden, shown = flate(doc, bilevel_picture()), flate(doc, rgb_picture())
    hidden.OC = off
    shown.OC = Dictionary(Type=Name.OCMD, OCGs=Array([on, off]), P=Name.AnyOff)
    _page_with(doc, b"/Hidden Do /Shown Do\n", XObject=Dictionary(Hidden=hidden, Shown=shown))
    doc.pdf.Root.OCProperties = Dictionary(OCGs=Array([on, off]), D=Dictionary(OFF=Array([off])))
    return doc.save(d / "optional_content.pdf")


def one_stream_stencil_and_image(d: Path) -> Path:
    """One bilevel stream under two dictionaries (pdf.js `bug1795263.pdf`): a grey image drawn in a tiling
    pattern, which `pdfimages -list` does not list, and a stencil painting its 1 samples on the page."""
    doc = Doc()
    picture = bilevel_picture()
    image = flate(doc, picture)
    stencil = doc.pdf.make_stream(image.read_raw_bytes())
    stencil.Type, stencil.Subtype, stencil.Filter = Name.XObject, Name.Image, Name.FlateDecode
    stencil.Width, stencil.Height = picture.size
    stencil.ImageMask, stencil.Decode = True, Array([1, 0])
    cell = doc.form(b"q 64 0 0 40 0 0 cm /Im Do Q", Dictionary(XObject=Dictionary(Im=image)))
    del cell.Type, cell.Subtype
    for key, value in dict(PatternType=1, PaintType=1, TilingType=1, XStep=64, YStep=40).items():
        cell[f"/{key}"] = value
    doc.page(
        content=b"/Pattern cs /P0 scn 0 0 200 200 re f\nq 64 0 0 40 0 0 cm /St Do Q\n",
        resources=Dictionary(XObject=Dictionary(St=stencil), Pattern=Dictionary(P0=cell)),
    )
    return doc.save(d / "one_stream_stencil_and_image.pdf")
