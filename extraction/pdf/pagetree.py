"""The pages of a document, found as a viewer finds them when qpdf refuses the page tree.

qpdf gives up on a tree that loops (a /Kids entry naming an ancestor), nests deeper than it allows,
or whose /Kids is a lone reference instead of an array; poppler and pdf.js still show the pages such
a tree leads to. Here the tree is walked once, each node visited at most once and no deeper than
MAX_DEPTH, a node without /Kids taken as a page (a damaged /Type key is common in fuzzed files); if
that finds no page, every dictionary of /Type /Page in the file is a page, in object order.
"""

import pikepdf

from .limits import Limits

# Real trees are a few levels deep (qpdf writes balanced trees of ~10); deeper is a trap, not a layout.
MAX_DEPTH = 64
PAGE, PAGES = pikepdf.Name.Page, pikepdf.Name.Pages


class PageTree:
    """The document's pages, and whether they had to be found past qpdf's reading of the tree."""

    def __init__(self, pdf: pikepdf.Pdf, limits: Limits):
        try:
            self.pages = list(pdf.pages)
            self.recovered = False
        except pikepdf.PdfError as exc:
            found = walked(pdf, limits.max_pages + 1) or scanned(pdf, limits.max_pages + 1)
            if not found:
                raise exc from None
            self.pages = [pikepdf.Page(obj) for obj in found]
            self.recovered = True


def walked(pdf: pikepdf.Pdf, most: int) -> list[pikepdf.Dictionary]:
    """The leaves of the tree in drawing order, loops and the over-deep left out; at most `most`."""
    found: list[pikepdf.Dictionary] = []
    seen: set[tuple[int, int]] = set()
    stack = [(pdf.Root.get("/Pages"), 0)]
    while stack and len(found) < most:
        node, depth = stack.pop()
        if not isinstance(node, pikepdf.Dictionary) or isinstance(node, pikepdf.Stream) or depth > MAX_DEPTH:
            continue
        if node.is_indirect:
            if node.objgen in seen:
                continue
            seen.add(node.objgen)
        kids = node.get("/Kids")
        if node.get("/Type") == PAGE or (kids is None and node.get("/Type") != PAGES):
            found.append(node)
            continue
        children = (
            [kids] if isinstance(kids, pikepdf.Dictionary) else list(kids) if isinstance(kids, pikepdf.Array) else []
        )
        stack.extend((kid, depth + 1) for kid in reversed(children))
    return found


def scanned(pdf: pikepdf.Pdf, most: int) -> list[pikepdf.Dictionary]:
    found = []
    for obj in pdf.objects:
        if isinstance(obj, pikepdf.Dictionary) and not isinstance(obj, pikepdf.Stream) and obj.get("/Type") == PAGE:
            found.append(obj)
            if len(found) >= most:
                break
    return found
