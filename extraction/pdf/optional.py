"""Optional content (PDF 1.7, 8.11): what a viewer hides when it opens the document.

Only the default configuration (/OCProperties /D) counts, as in poppler: an XObject or an annotation
whose /OC names a group that is off, or a membership dictionary whose policy fails, is not drawn.
"""

from collections.abc import Callable

import pikepdf

Name = pikepdf.Name
# Visibility expressions nest; a deeper one is a trap, and reads as visible.
MAX_EXPRESSION_DEPTH = 16


class OptionalContent:
    def __init__(self, pdf: pikepdf.Pdf):
        try:
            properties = pdf.Root.get("/OCProperties")
            self.off = _groups_off(properties) if isinstance(properties, pikepdf.Dictionary) else None
        except pikepdf.PdfError:  # damaged properties hide nothing, as in a viewer without layers
            self.off = None

    def hidden(self, entry: object) -> bool:
        """Whether an /OC entry hides what carries it; no /OC, or no /OCProperties, hides nothing."""
        if self.off is None or not isinstance(entry, pikepdf.Dictionary):
            return False
        return not self._visible(entry, 0)

    def _visible(self, entry: object, depth: int) -> bool:
        if not isinstance(entry, pikepdf.Dictionary) or depth > MAX_EXPRESSION_DEPTH:
            return True
        if entry.get("/Type") != Name.OCMD:
            return entry.objgen not in (self.off or set())  # set: hidden() asks only then
        expression = entry.get("/VE")
        if isinstance(expression, pikepdf.Array):
            return self._evaluate(expression, depth + 1)
        given = entry.get("/OCGs")
        groups = [given] if isinstance(given, pikepdf.Dictionary) else list(given or ())
        states = [self._visible(group, depth + 1) for group in groups if isinstance(group, pikepdf.Dictionary)]
        return not states or _POLICIES.get(str(entry.get("/P", "/AnyOn")), any)(states)

    def _evaluate(self, expression: pikepdf.Array, depth: int) -> bool:
        operator, *operands = list[object](expression) or [None]
        values = [
            self._evaluate(operand, depth + 1)
            if isinstance(operand, pikepdf.Array)
            else self._visible(operand, depth + 1)
            for operand in operands
        ]
        if operator == Name.Not:
            return not values[0] if values else True
        return (all if operator == Name.And else any)(values) if values else True


_POLICIES: dict[str, Callable[[list[bool]], bool]] = {
    "/AllOn": all,
    "/AnyOn": any,
    "/AnyOff": lambda states: not all(states),
    "/AllOff": lambda states: not any(states),
}


def _groups_off(properties: pikepdf.Dictionary) -> set[tuple[int, int]]:
    default = properties.get("/D")
    if not isinstance(default, pikepdf.Dictionary):
        return set()
    if default.get("/BaseState") == Name.OFF:
        every = _objgens(properties.get("/OCGs"))
        return every - _objgens(default.get("/ON"))
    return _objgens(default.get("/OFF"))


def _objgens(groups: object) -> set[tuple[int, int]]:
    if not isinstance(groups, pikepdf.Array):
        return set()
    return {group.objgen for group in groups if isinstance(group, pikepdf.Dictionary)}
