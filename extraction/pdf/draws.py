"""Where images are drawn: each page's content in drawing order, through nested forms."""
from collections.abc import Iterator
from dataclasses import dataclass

import pikepdf

from .errors import reason

# Forms nest legitimately a few levels deep; a chain this long is a trap, not a layout.
MAX_FORM_DEPTH = 32
Image = pikepdf.Stream | pikepdf.PdfInlineImage


@dataclass(frozen=True)
class Draw:
    page: int  # from 1
    index: int  # on the page, from 0
    image: Image


@dataclass(frozen=True)
class PageScope:
    number: int
    resources: pikepdf.Dictionary | None
    warnings: list[str]

    def warn(self, text: str) -> None:
        self.warnings.append(f"Page {self.number}: {text}")


def page_draws(number: int, page: pikepdf.Page, warnings: list[str]) -> list[Draw]:
    """Every image the page draws, in order; an image's soft mask comes right after it."""
    scope = PageScope(number, page.get_resources(), warnings)
    draws: list[Draw] = []
    for image in _images(page.obj, scope.resources, (), scope):
        draws.append(Draw(number, len(draws), image))
        smask = image.get("/SMask") if isinstance(image, pikepdf.Stream) else None
        if isinstance(smask, pikepdf.Stream):
            draws.append(Draw(number, len(draws), smask))
    return draws


def _images(owner, resources, forms: tuple, scope: PageScope) -> Iterator[Image]:
    """Images drawn by one content stream; `forms` is the chain of forms being drawn."""
    try:
        instructions = pikepdf.parse_content_stream(owner, "Do BI ID EI")
    except pikepdf.PdfError as exc:
        scope.warn(f"a content stream could not be parsed ({reason(exc)}); its images are missing.")
        return
    for instruction in instructions:
        if isinstance(instruction, pikepdf.ContentStreamInlineImage):
            yield instruction.iimage
            continue
        name = instruction.operands[0] if len(instruction.operands) == 1 else None
        xobject = _xobject(resources, name)
        if xobject is None:
            scope.warn(f"the XObject {name} it draws does not exist; it was skipped.")
        elif xobject.get("/Subtype") == pikepdf.Name.Image:
            yield xobject
        elif xobject.get("/Subtype") == pikepdf.Name.Form:
            yield from _form_images(xobject, forms, scope)


def _form_images(form: pikepdf.Stream, forms: tuple, scope: PageScope) -> Iterator[Image]:
    if form.objgen in forms or len(forms) >= MAX_FORM_DEPTH:
        scope.warn("a form XObject draws itself or nests too deeply; it was skipped.")
        return
    # Old producers leave /Resources off forms, meaning the page's (PDF 1.7, 7.8.3).
    own = form.get("/Resources")
    resources = own if isinstance(own, pikepdf.Dictionary) else scope.resources
    yield from _images(form, resources, forms + (form.objgen,), scope)


def _xobject(resources, name) -> pikepdf.Stream | None:
    if not isinstance(resources, pikepdf.Dictionary) or not isinstance(name, pikepdf.Name):
        return None
    xobjects = resources.get("/XObject")
    xobject = xobjects.get(name) if isinstance(xobjects, pikepdf.Dictionary) else None
    return xobject if isinstance(xobject, pikepdf.Stream) else None
