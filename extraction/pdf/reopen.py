"""Second tries at opening a file qpdf refuses but viewers open, each for one kind of damage qpdf names.

- A page tree that loops or nests too deeply: qpdf walks the tree at open to push inherited attributes
  onto the pages, and gives up on it; poppler and pdf.js still read it (see pagetree.py). Opened
  without that walk, the pages are then found as viewers find them.
- An /Encrypt entry that is not a dictionary (PDFBox's PDFBOX-4352): nothing can be decrypted with it,
  and poppler reads the file as not encrypted. The bytes are opened from memory with every /Encrypt name
  renamed to one of the same length that no reader knows, so no offset moves; the file is not changed.
"""

import io
import re
from pathlib import Path

import pikepdf

PAGE_TREE_ERROR = re.compile(r"/Pages structure|pages tree|/Kids", re.IGNORECASE)
ENCRYPT_NOT_A_DICTIONARY = re.compile(r"/Encrypt in trailer dictionary is not a dictionary")
ENCRYPT_NAME = re.compile(rb"/Encrypt(?![A-Za-z0-9#_.-])")


def reopened(path: str | Path, error: pikepdf.PdfError) -> pikepdf.Pdf | None:
    """The document opened past the damage `error` names, or None when it names none this gets past."""
    try:
        if PAGE_TREE_ERROR.search(str(error)):
            return pikepdf.open(path, attempt_recovery=True, inherit_page_attributes=False)
        if ENCRYPT_NOT_A_DICTIONARY.search(str(error)):
            data = ENCRYPT_NAME.sub(b"/Xncrypt", Path(path).read_bytes())
            return pikepdf.open(io.BytesIO(data), attempt_recovery=True)
    except pikepdf.PdfError:
        return None
    return None
