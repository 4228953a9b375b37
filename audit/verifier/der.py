"""Reading DER (X.690): only what RFC 3161 tokens need, with lengths checked against their container."""

from __future__ import annotations

MAX_LENGTH_BYTES = 4  # a length of more than 4 bytes would describe more than 4 GiB


def tlv(data: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, start of content, end) of the DER element at `pos`."""
    tag, first = data[pos], data[pos + 1]
    if first < 0x80:
        return tag, pos + 2, pos + 2 + first
    n = first & 0x7F
    if not 0 < n <= MAX_LENGTH_BYTES:
        raise ValueError("a DER length of unsupported form")
    length = int.from_bytes(data[pos + 2 : pos + 2 + n], "big")
    return tag, pos + 2 + n, pos + 2 + n + length


def children(content: bytes) -> list[tuple[int, bytes, bytes]]:
    """(tag, content, whole element) of each element in `content`."""
    found, pos = [], 0
    while pos < len(content):
        tag, start, end = tlv(content, pos)
        if end > len(content):
            raise ValueError("a DER element runs past its container")
        found.append((tag, content[start:end], content[pos:end]))
        pos = end
    return found


def one(data: bytes, tag: int) -> bytes:
    """The content of `data`, which must be exactly one element with `tag`."""
    elements = children(data)
    if len(elements) != 1 or elements[0][0] != tag:
        raise ValueError(f"expected one DER element of tag {tag:#x}")
    return elements[0][1]
