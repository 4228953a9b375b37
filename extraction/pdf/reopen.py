"""Second tries at opening a file qpdf refuses but viewers open, each for one kind of damage qpdf names.

- A page tree that loops or nests too deeply: qpdf walks the tree at open to push inherited attributes
  onto the pages, and gives up on it; poppler and pdf.js still read it (see pagetree.py). Opened
  without that walk, the pages are then found as viewers find them.
- An /Encrypt entry that is not a dictionary (PDFBox's PDFBOX-4352): nothing can be decrypted with it,
  and poppler reads the file as not encrypted. The bytes are opened from memory with every /Encrypt name
  renamed to one of the same length that no reader knows, so no offset moves; the file is not changed.
- Object numbers high for the file's length (pdf.js `bug1011159`: the catalog is object 6374 of an 18 KiB
  file): qpdf 12 reads no object numbered above about a third of the file's length, so it finds no /Root
  or no trailer, where poppler and PDFium read the objects. The bytes are opened from memory with a comment
  of spaces before the last `startxref`, long enough for the highest number written in the file; every
  offset before it stays where it was, and the stored file is not changed.
"""

import io
import re
from pathlib import Path

import pikepdf

PAGE_TREE_ERROR = re.compile(r"/Pages structure|pages tree|/Kids", re.IGNORECASE)
ENCRYPT_NOT_A_DICTIONARY = re.compile(r"/Encrypt in trailer dictionary is not a dictionary")
ENCRYPT_NAME = re.compile(rb"/Encrypt(?![A-Za-z0-9#_.-])")
NO_ROOT = re.compile(r"unable to find /Root dictionary|unable to find trailer dictionary")
OBJECT_HEADER = re.compile(rb"(?<![0-9])([0-9]{1,10})[\0\t\n\f\r ]+[0-9]{1,5}[\0\t\n\f\r ]+obj(?![A-Za-z])")
BYTES_PER_OBJECT = 3  # what qpdf 12 reckons the least an object can take (measured, for its own limit)
MAX_PADDING = 16 * 1024**2  # object numbers in the millions are not a short file's, whatever qpdf does


def reopened(path: str | Path, error: pikepdf.PdfError) -> pikepdf.Pdf | None:
    """The document opened past the damage `error` names, or None when it names none this gets past."""
    try:
        if PAGE_TREE_ERROR.search(str(error)):
            return pikepdf.open(path, attempt_recovery=True, inherit_page_attributes=False)
        if ENCRYPT_NOT_A_DICTIONARY.search(str(error)):
            renamed = ENCRYPT_NAME.sub(b"/Xncrypt", Path(path).read_bytes())
            return pikepdf.open(io.BytesIO(renamed), attempt_recovery=True)
        if NO_ROOT.search(str(error)) and (padded := padded_for_its_numbers(Path(path).read_bytes())):
            return pikepdf.open(io.BytesIO(padded), attempt_recovery=True)
    except pikepdf.PdfError:
        return None
    return None


def padded_for_its_numbers(data: bytes) -> bytes | None:
    """The bytes made long enough for qpdf to read the highest object number they hold, or None when they are
    already (so the numbers are not what it refused) or would need more than MAX_PADDING."""
    highest = max((int(found[1]) for found in OBJECT_HEADER.finditer(data)), default=0)
    short = BYTES_PER_OBJECT * (highest + 1) - len(data)
    if short <= 0 or short > MAX_PADDING:
        return None
    at = data.rfind(b"startxref")
    at = len(data) if at < 0 else at
    return b"%s%%%s\n%s" % (data[:at], b" " * short, data[at:])
