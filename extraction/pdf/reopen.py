"""A second try at opening a file qpdf refuses but viewers open, for the one kind of damage this can get past.

qpdf walks the page tree at open to push inherited attributes onto the pages, and gives up on a tree
that loops or nests too deeply, which poppler and pdf.js still read (see pagetree.py). Opened without
that walk, the pages are then found as viewers find them.
"""

import re
from pathlib import Path

import pikepdf

PAGE_TREE_ERROR = re.compile(r"/Pages structure|pages tree|/Kids", re.IGNORECASE)


def reopened(path: str | Path, error: pikepdf.PdfError) -> pikepdf.Pdf | None:
    """The document opened past the damage `error` names, or None when it names none this gets past."""
    if not PAGE_TREE_ERROR.search(str(error)):
        return None
    try:
        return pikepdf.open(path, attempt_recovery=True, inherit_page_attributes=False)
    except pikepdf.PdfError:
        return None
