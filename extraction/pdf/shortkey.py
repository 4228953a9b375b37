"""Revision 4 files encrypted with RC4 and a key shorter than 128 bits, which qpdf cannot open (pdf.js
`issue19484_1`, `_2`: 40- and 48-bit keys).

The standard's check of the empty user password (Algorithms 2 and 5) passes with the short key, but qpdf
finds the password wrong (it appears to take every revision 4 key as 128 bits). Acrobat and pdf.js decrypt such a file
with the short key extended to 16 bytes with zeros; here qpdf is given that key directly (pikepdf's
`hex_password`), only after the empty password has been checked against the file's /U. The encryption
dictionary is read from the bytes, as qpdf cannot open the file without the key.
"""

import hashlib
import re
from pathlib import Path

import pikepdf

# Algorithm 2's padding of a password to 32 bytes (ISO 32000-1, 7.6.3.3).
PASSWORD_PAD = bytes.fromhex("28BF4E5E4E758A4164004E56FFFA01082E2E00B6D0683E802F0CA9FE6453697A")
ENCRYPT_REFERENCE = re.compile(rb"/Encrypt\s*([0-9]{1,10})\s+([0-9]{1,5})\s+R")
FIRST_ID = re.compile(rb"/ID\s*\[\s*<([0-9A-Fa-f\s]*)>")
ID_REACH = 4096  # the /ID is in the same trailer or cross-reference stream dictionary as the /Encrypt


def opened(path: str | Path) -> pikepdf.Pdf | None:
    """The file opened with its short key extended to 16 bytes, or None when it is no such file or the empty
    password is not its user password."""
    data = Path(path).read_bytes()
    key = empty_password_key(data)
    if key is None:
        return None
    try:
        return pikepdf.open(path, password=(key + bytes(16 - len(key))).hex(), hex_password=True)
    except pikepdf.PdfError:
        return None


def empty_password_key(data: bytes) -> bytes | None:
    """The short RC4 key of a revision 4 file whose user password is empty, or None."""
    found = encryption(data)
    if found is None:
        return None
    encrypt, first_id = found
    if encrypt.get("/R") != 4 or stream_method(encrypt) != "/V2":
        return None
    try:  # bytes, not qpdf's reading of them: any entry may be missing or of another type
        length = int(encrypt.get("/Length", 40)) // 8
        owner, user, permissions = bytes(encrypt.O)[:32], bytes(encrypt.U), int(encrypt.P) & 0xFFFFFFFF
    except (AttributeError, TypeError, ValueError, pikepdf.PdfError):
        return None
    if not 5 <= length < 16 or len(user) < 16:
        return None
    digest = hashlib.md5(PASSWORD_PAD + owner + permissions.to_bytes(4, "little") + first_id)
    if not encrypt.get("/EncryptMetadata", True):
        digest.update(b"\xff" * 4)
    key = digest.digest()[:length]
    for _ in range(50):
        key = hashlib.md5(key).digest()[:length]
    check = rc4(key, hashlib.md5(PASSWORD_PAD + first_id).digest())
    for i in range(1, 20):
        check = rc4(bytes(b ^ i for b in key), check)
    return key if check == user[:16] else None


def encryption(data: bytes) -> tuple[pikepdf.Dictionary, bytes] | None:
    """The last /Encrypt dictionary the bytes name and the first /ID beside it (never in an object stream)."""
    references = list(ENCRYPT_REFERENCE.finditer(data))
    if not references:
        return None
    reference = references[-1]
    near = data[max(0, reference.start() - ID_REACH) : reference.end() + ID_REACH]
    first_id = FIRST_ID.search(near)
    header = rb"(?<![0-9])%s[\0\t\n\f\r ]+%s[\0\t\n\f\r ]+obj" % (reference[1], reference[2])
    bodies = list(re.finditer(header, data))
    if first_id is None or not bodies:
        return None
    end = data.find(b"endobj", bodies[-1].end())
    try:
        encrypt = pikepdf.Object.parse(data[bodies[-1].end() : end if end >= 0 else None])
        return (encrypt, bytes.fromhex(first_id[1].decode())) if isinstance(encrypt, pikepdf.Dictionary) else None
    except (pikepdf.PdfError, ValueError):
        return None


def stream_method(encrypt: pikepdf.Dictionary) -> str | None:
    filters, name = encrypt.get("/CF"), encrypt.get("/StmF")
    if not isinstance(filters, pikepdf.Dictionary) or not isinstance(name, pikepdf.Name) or str(name) not in filters:
        return None
    method = filters[str(name)].get("/CFM") if isinstance(filters[str(name)], pikepdf.Dictionary) else None
    return str(method) if isinstance(method, pikepdf.Name) else None


def rc4(key: bytes, data: bytes) -> bytes:
    """RC4 (16 bytes at a time here): the standard library has none."""
    state = list(range(256))
    j = 0
    for i in range(256):
        j = (j + state[i] + key[i % len(key)]) & 255
        state[i], state[j] = state[j], state[i]
    out = bytearray()
    i = j = 0
    for byte in data:
        i = (i + 1) & 255
        j = (j + state[i]) & 255
        state[i], state[j] = state[j], state[i]
        out.append(byte ^ state[(state[i] + state[j]) & 255])
    return bytes(out)
