"""The named resources a content stream draws with, looked up as poppler does.

A stream drawn inside another (a form, a pattern cell, a soft-mask group, a Type3 glyph, an
annotation's appearance) looks a name up in its own /Resources first, then in those of the streams
around it, out to the page's: old producers leave /Resources off forms and glyphs, and poppler,
the reference for what a viewer draws, finds their names further out.
"""

from dataclasses import dataclass
from typing import Any

import pikepdf

Name = pikepdf.Name
# The operators that use each kind of resource to draw images, besides inline images.
OPERATORS = (("/XObject", "Do"), ("/ExtGState", "gs"), ("/Pattern", "scn SCN"), ("/Font", "Tf"))


@dataclass(frozen=True)
class Resources:
    dicts: tuple[pikepdf.Dictionary, ...]  # innermost first
    key: tuple[Any, ...]  # tells two chains apart, for caching what a stream draws in each

    @classmethod
    def of_page(cls, page: pikepdf.Page) -> "Resources":
        own = page.obj.get("/Resources")
        if not isinstance(own, pikepdf.Dictionary):  # inherited from the page tree, or none
            own = page.get_resources()
        if not isinstance(own, pikepdf.Dictionary):  # a page outside any tree, with no resources at all
            own = pikepdf.Dictionary()
        return cls((own,), (_key(own, page.obj),))

    def inside(self, owner: pikepdf.Object) -> "Resources":
        """The chain for a stream (or Type3 font) drawn here: its own /Resources first, then these."""
        own = owner.get("/Resources")
        if not isinstance(own, pikepdf.Dictionary):
            return self
        return Resources((own, *self.dicts), (_key(own, owner), *self.key))

    def lookup(self, category: str, name: object) -> pikepdf.Object | None:
        if not isinstance(name, pikepdf.Name):
            return None
        for resources in self.dicts:
            entries = resources.get(category)
            found = entries.get(name) if isinstance(entries, pikepdf.Dictionary) else None
            if found is not None:
                return found
        return None

    def operators(self) -> str:
        """The operators worth parsing here: a stream cannot draw a pattern it has no name for."""
        wanted = ["BI ID EI"]
        for category, operators in OPERATORS:
            for resources in self.dicts:
                if category in resources:
                    wanted.append(operators)
                    break
        return " ".join(wanted)

    def image_or_form(self, name: object) -> pikepdf.Stream | None:
        found = self.lookup("/XObject", name)
        return found if isinstance(found, pikepdf.Stream) else None

    def soft_mask_group(self, name: object) -> pikepdf.Stream | None:
        """The group a `gs` draws as the soft mask it sets (PDF 1.7, 11.6.5.2), if any."""
        state = self.lookup("/ExtGState", name)
        smask = state.get("/SMask") if isinstance(state, pikepdf.Dictionary) else None
        group = smask.get("/G") if isinstance(smask, pikepdf.Dictionary) else None
        return group if isinstance(group, pikepdf.Stream) else None

    def tiling_pattern(self, name: object) -> pikepdf.Stream | None:
        """A pattern whose cell is a content stream; shading patterns draw no images."""
        pattern = self.lookup("/Pattern", name)
        return pattern if isinstance(pattern, pikepdf.Stream) and pattern.get("/PatternType") == 1 else None

    def type3_font(self, name: object) -> pikepdf.Dictionary | None:
        font = self.lookup("/Font", name)
        return font if isinstance(font, pikepdf.Dictionary) and font.get("/Subtype") == Name.Type3 else None


def _key(resources: pikepdf.Dictionary, owner: pikepdf.Object) -> tuple[Any, ...]:
    # A shared /Resources object (one for every page of a bundle) is one key; a direct one is its owner's.
    return resources.objgen if resources.is_indirect else ("in", owner.objgen)


def glyph_procedures(font: pikepdf.Dictionary) -> list[pikepdf.Stream]:
    procedures = font.get("/CharProcs")
    if not isinstance(procedures, pikepdf.Dictionary):
        return []
    return [procedure for procedure in procedures.values() if isinstance(procedure, pikepdf.Stream)]


def appearance(annotation: object) -> pikepdf.Stream | None:
    """The normal appearance poppler draws for an annotation: none if hidden (/F bits 2 and 6)."""
    if not isinstance(annotation, pikepdf.Dictionary) or _flags(annotation) & (2 | 32):
        return None
    streams: object = ap.get("/N") if isinstance(ap := annotation.get("/AP"), pikepdf.Dictionary) else None
    if isinstance(streams, pikepdf.Dictionary) and not isinstance(streams, pikepdf.Stream):
        state: object = annotation.get("/AS")
        if not isinstance(state, pikepdf.Name) and len(streams) == 1:
            state = next(iter(streams.keys()))  # /AS is required here; poppler takes a lone state
        streams = streams.get(state) if isinstance(state, (pikepdf.Name, str)) else None
    return streams if isinstance(streams, pikepdf.Stream) else None


def _flags(annotation: pikepdf.Dictionary) -> int:
    flags = annotation.get("/F")
    return int(flags) if isinstance(flags, int) else 0
