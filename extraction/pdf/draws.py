"""Where images are drawn: each page's content in drawing order, then its annotations' appearances,
through forms, soft-mask groups, tiling patterns and Type3 glyphs at any depth (docs/images.md).

Each stream is parsed once, and resolved once per chain of resources it is drawn with into the
list of what it draws (images, and other streams to draw in turn); drawing it again replays that
list. A budget of steps per document bounds the work, so forms that draw each other many times over
end with a warning instead of running on.
"""

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pikepdf

from .errors import raise_if_out_of_memory, reason
from .optional import OptionalContent
from .resources import Resources, appearance, glyph_procedures

# Forms nest legitimately a few levels deep; a chain this long is a trap, not a layout.
MAX_FORM_DEPTH = 32
# Steps per document (an image or a stream drawn, an instruction resolved); real documents stay far below.
MAX_STEPS = 1_000_000
Image = pikepdf.Stream | pikepdf.PdfInlineImage
IMAGE_SUBTYPE, FORM_SUBTYPE = pikepdf.Name.Image, pikepdf.Name.Form
Key = tuple[Any, ...]  # object numbers and generations, names: what tells two things apart


@dataclass(frozen=True)
class Draw:
    page: int  # from 1
    index: int  # on the page, from 0
    image: Image
    key: Key  # the same key, the same image: it is encoded once


@dataclass
class PageScope:
    number: int
    warnings: list[str]
    # Tiling patterns and Type3 fonts place their images once a page, where first used.
    placed_once: set[Key] = field(default_factory=set)
    warned: set[str] = field(default_factory=set)

    def warn(self, text: str) -> None:
        if text not in self.warned:
            self.warned.add(text)
            self.warnings.append(f"Page {self.number}: {text}")


class OutOfSteps(Exception):
    pass


# What a stream draws, in order: an image (with its cache key), streams to draw in turn (with
# the resources each is drawn with, and a key to place them once a page, or None), or a warning.
IMAGE, CALL, WARN = range(3)
# (IMAGE, the image, its key), (CALL, [(stream, its resources)], a key placed once a page or None), (WARN, text, None)
Event = tuple[int, Any, Any]


class Drawing:
    """Walks the pages of one document, sharing what each stream draws between pages."""

    def __init__(self, pdf: pikepdf.Pdf, warnings: list[str]):
        self.optional = OptionalContent(pdf)
        self.warnings = warnings
        self.steps = 0
        self.parsed: dict[Key, list[Any]] = {}  # instructions by stream and operators
        self.resolved: dict[Key, list[Event]] = {}  # events by stream and resources

    def page_draws(self, number: int, page: pikepdf.Page) -> list[Draw]:
        """Every image the page draws, in order; an image's soft mask (or stencil mask) comes right after it."""
        scope = PageScope(number, self.warnings)
        draws: list[Draw] = []
        try:
            self._spend(0)  # past the budget, later pages are not even parsed
            resources = Resources.of_page(page)
            for image, key in self._page_images(page, resources, scope):
                draws.append(Draw(number, len(draws), image, key))
        except OutOfSteps:
            scope.warn(f"drawing stopped after {MAX_STEPS:,} steps in the document; the images after are missing.")
        except Exception as exc:  # a damaged object on the way: what was found before it stands
            raise_if_out_of_memory(exc)
            scope.warn(
                f"the page could not be read to its end ({reason(exc)}); images after the {len(draws)} found"
                " are missing."
            )
        return draws

    def _page_images(
        self, page: pikepdf.Page, resources: Resources, scope: PageScope
    ) -> Iterator[tuple[pikepdf.Stream, Key]]:
        instructions = _parse(page.obj, resources.operators(), scope)
        yield from self._replay(_events(instructions, resources, ("page", page.obj.objgen), self.optional), (), scope)
        annotations = page.obj.Annots if "/Annots" in page.obj else None
        for annotation in annotations if isinstance(annotations, pikepdf.Array) else ():
            stream = appearance(annotation)
            if stream is not None and not self.optional.hidden(annotation.get("/OC")):
                yield from self._stream(stream, resources.inside(stream), (), scope)

    def _stream(
        self, stream: pikepdf.Stream, resources: Resources, chain: tuple[Key, ...], scope: PageScope
    ) -> Iterator[tuple[pikepdf.Stream, Key]]:
        """The images one stream draws, `chain` being the streams it is drawn inside."""
        if stream.objgen in chain or len(chain) >= MAX_FORM_DEPTH:
            scope.warn("a form, pattern or glyph draws itself or nests too deeply; it was skipped.")
            return
        key = (stream.objgen, resources.key)
        events = self.resolved.get(key)
        if events is None:
            instructions = self._parse(stream, resources.operators(), scope)
            self._spend(len(instructions))  # resolving is work too, done again for each chain of resources
            events = self.resolved[key] = _events(instructions, resources, key, self.optional)
        yield from self._replay(events, chain + (stream.objgen,), scope)

    def _parse(self, stream: pikepdf.Stream, operators: str, scope: PageScope) -> list[Any]:
        # A form drawn on every page of a bundle usually has resources per page: parsed once, resolved per page.
        key = (stream.objgen, operators)
        if key not in self.parsed:
            self.parsed[key] = _parse(stream, operators, scope)
        return self.parsed[key]

    def _spend(self, steps: int) -> None:
        self.steps += steps
        if self.steps > MAX_STEPS:
            raise OutOfSteps

    def _replay(
        self, events: list[Event], chain: tuple[Key, ...], scope: PageScope
    ) -> Iterator[tuple[pikepdf.Stream, Key]]:
        for kind, what, key in events:
            self._spend(1)
            if kind == IMAGE:
                yield what, key
            elif kind == WARN:
                scope.warn(what)
            elif key is None or key not in scope.placed_once:
                if key is not None:
                    scope.placed_once.add(key)
                for stream, resources in what:
                    yield from self._stream(stream, resources, chain, scope)


def _parse(owner: pikepdf.Object, operators: str, scope: PageScope) -> list[Any]:
    """The instructions of a content stream (or of a page's streams), or none with a warning."""
    try:
        return pikepdf.parse_content_stream(owner, operators)
    except Exception as exc:
        raise_if_out_of_memory(exc)
        scope.warn(f"a content stream could not be parsed ({reason(exc)}); its images are missing.")
        return []


def _events(instructions: list[Any], resources: Resources, key: Key, optional: OptionalContent) -> list[Event]:
    events: list[Event] = []
    for position, instruction in enumerate(instructions):
        try:
            if isinstance(instruction, pikepdf.ContentStreamInlineImage):
                events.append((IMAGE, instruction.iimage, ("BI", key, position)))
            else:
                _resolve(str(instruction.operator), instruction.operands, resources, optional, events)
        except Exception as exc:
            raise_if_out_of_memory(exc)
            what = "an inline image" if isinstance(instruction, pikepdf.ContentStreamInlineImage) else "an instruction"
            events.append((WARN, f"{what} could not be read ({reason(exc)}); it was skipped.", None))
    return events


def _resolve(
    operator: str, operands: list[Any], resources: Resources, optional: OptionalContent, events: list[Event]
) -> None:
    """The events of one instruction: what it draws, looked up once for all the times it is drawn."""
    name = operands[-1] if operands else None
    if operator == "Do":
        _draw_xobject(name, resources, optional, events)
    elif operator == "gs":
        group = resources.soft_mask_group(name)
        if group is not None:
            events.append((CALL, [(group, resources.inside(group))], None))
    elif operator in ("scn", "SCN"):
        pattern = resources.tiling_pattern(name)
        if pattern is not None:
            events.append((CALL, [(pattern, resources.inside(pattern))], ("pattern", pattern.objgen)))
    elif operator == "Tf":
        font = resources.type3_font(operands[0] if operands else None)
        if font is not None:
            inner = resources.inside(font)
            events.append((CALL, [(glyph, inner) for glyph in glyph_procedures(font)], ("font", font.objgen)))


def _draw_xobject(name: object, resources: Resources, optional: OptionalContent, events: list[Event]) -> None:
    xobject = resources.image_or_form(name)
    subtype = xobject.get("/Subtype") if xobject is not None else None
    if xobject is None:
        events.append((WARN, f"the XObject {name} it draws does not exist; it was skipped.", None))
    elif "/OC" in xobject and optional.hidden(xobject.OC):
        return
    elif subtype == IMAGE_SUBTYPE:
        events.append((IMAGE, xobject, xobject.objgen))
        mask = _mask(xobject)
        if mask is not None:
            events.append((IMAGE, mask, mask.objgen))
    elif subtype == FORM_SUBTYPE:
        events.append((CALL, [(xobject, resources.inside(xobject))], None))


def _mask(image: pikepdf.Stream) -> pikepdf.Stream | None:
    """The image that masks this one, extracted right after it as poppler lists it: a soft mask, or else
    a stencil mask stream (a /Mask array of colour ranges is no image)."""
    for entry in ("/SMask", "/Mask"):
        mask = image[entry] if entry in image else None  # `in` is ten times cheaper than a missing get
        if isinstance(mask, pikepdf.Stream):
            return mask
    return None
