"""Reading a package that may have been crafted to exhaust the verifier: every size and count is checked before
the bytes are read, JSON nesting is capped, and hashes are streamed and stop at the size the evidence names."""

from __future__ import annotations

import hashlib
import json
import os
import struct
import zipfile

MAX_MEMBERS = 200_000  # a package of 50k manifests with an asset each, and room to spare
MAX_INDEX = 256 * 1024 * 1024  # index.json: about 500 bytes a manifest or asset
MAX_DOCUMENT = 16 * 1024 * 1024  # a manifest, a case map, keys.json, index.sig.json
MAX_DEPTH = 32  # index.json is 6 deep; a deeper one was not written by an exporter
MAX_RATIO = 2000  # a member inflating more than this was not deflated from real evidence
CHUNK = 1024 * 1024
EOCD, ZIP64_LOCATOR = b"PK\x05\x06", b"PK\x06\x07"


class Refused(ValueError):
    """The package is outside what an exporter writes; verification stops with this reason."""


def open_zip(path: str) -> zipfile.ZipFile:
    """The package, once its central directory says it holds at most MAX_MEMBERS entries."""
    entries = _entries(path)
    if entries > MAX_MEMBERS:
        raise Refused(f"the zip says it holds {entries} entries; an evidence package holds at most {MAX_MEMBERS}")
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise Refused(f"cannot be read as a zip ({exc})") from exc
    if len(zf.infolist()) > MAX_MEMBERS:
        zf.close()
        raise Refused(f"the zip holds more than {MAX_MEMBERS} entries")
    return zf


def _entries(path: str) -> int:
    """The entry count of the end-of-central-directory record (zip64's when the short one is full)."""
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        fh.seek(max(0, size - 65557))
        tail = fh.read()
        at = tail.rfind(EOCD)
        if at < 0 or len(tail) < at + 22:
            raise Refused("cannot be read as a zip (no end of central directory)")
        entries: int = struct.unpack("<H", tail[at + 10 : at + 12])[0]
        if entries != 0xFFFF:
            return entries
        locator = tail[at - 20 : at]
        if not locator.startswith(ZIP64_LOCATOR):
            raise Refused("cannot be read as a zip (a full entry count without zip64)")
        (offset,) = struct.unpack("<Q", locator[8:16])
        fh.seek(offset)
        record = fh.read(56)
        return struct.unpack("<Q", record[32:40])[0] if len(record) == 56 else MAX_MEMBERS + 1


def read(zf: zipfile.ZipFile, name: str, limit: int = MAX_DOCUMENT) -> bytes:
    """A member's bytes, at most `limit` of them whatever its header claims; KeyError when it is absent."""
    info = zf.getinfo(name)
    if info.file_size > limit:
        raise Refused(f"{name}: {info.file_size} bytes, more than the {limit} such a file may have")
    _check_ratio(info)
    with zf.open(info) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise Refused(f"{name}: more than the {limit} bytes such a file may have")
    return data


def _check_ratio(info: zipfile.ZipInfo) -> None:
    if info.file_size > CHUNK and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        raise Refused(f"{info.filename}: inflates {info.file_size // max(info.compress_size, 1)} times (a zip bomb)")


def hash_member(zf: zipfile.ZipFile, name: str, expected_size: int) -> tuple[str, int]:
    """(sha256 hex, size) of a member, streamed; reading stops one chunk past the size the evidence names."""
    info = zf.getinfo(name)
    _check_ratio(info)
    digest, size = hashlib.sha256(), 0
    with zf.open(info) as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            digest.update(chunk)
            size += len(chunk)
            if size > max(expected_size, 0) + CHUNK:
                break  # already the wrong size: the rest cannot make it right
    return digest.hexdigest(), size


def parse_json(data: bytes) -> object:
    """The JSON document, refused when it is not UTF-8 JSON or nests deeper than MAX_DEPTH."""
    try:
        document = json.loads(data)
    except RecursionError:
        raise Refused(f"nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise Refused(f"is not valid JSON ({exc})") from None
    _check_depth(document)
    return document


def _check_depth(document: object) -> None:
    level = [document]
    for _ in range(MAX_DEPTH + 1):
        level = [
            child
            for node in level
            if isinstance(node, (dict, list))
            for child in (node.values() if isinstance(node, dict) else node)
            if isinstance(child, (dict, list))
        ]
        if not level:
            return
    raise Refused(f"nests deeper than {MAX_DEPTH} levels")
