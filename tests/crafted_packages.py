"""Evidence packages crafted to exhaust or crash a verifier: each a function writing a zip to a path.

Used by tests/audit/test_verifier_limits.py (each must end in one FAIL line) and by `python -m bench.crafted`
(the table of time and memory in docs/evidence.md)."""

import struct
import warnings
import zipfile
import zlib
from pathlib import Path

GIB = 1 << 30


def _deflated_spaces(path: Path, name: str, size: int) -> None:
    """A member of `size` spaces, deflated in a stream (a GiB of spaces is about 1 MB deflated)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        info = zipfile.ZipInfo(name)
        info.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(info, "w", force_zip64=True) as fh:
            block = b" " * (1 << 20)
            for _ in range(size // len(block)):
                fh.write(block)


def index_of_a_gib_of_spaces(path: Path) -> None:
    _deflated_spaces(path, "index.json", GIB)


def index_nested_200k_deep(path: Path) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("index.json", b"[" * 200_000 + b"]" * 200_000)


def index_nested_100_deep(path: Path) -> None:
    """Deep enough to hide data from a reader, shallow enough for Python's own parser."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("index.json", b'{"manifests":' + b"[" * 100 + b"]" * 100 + b"}")


def extra_entries_100k(path: Path) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("index.json", b'{"manifests": []}')
        for i in range(100_000):
            zf.writestr(f"x/{i}", b"")


def the_same_name_100k_times(path: Path) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("index.json", b'{"manifests": []}')
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zipfile warns of each duplicate name: that is the point
            for _ in range(100_000):
                zf.writestr(zipfile.ZipInfo("dup"), b"")


def asset_bomb(path: Path) -> None:
    """A listed asset that inflates to a GiB (its manifest says 10 bytes)."""
    _deflated_spaces(path, "assets/a.png", GIB)
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("index.json", b'{"assets": [{"name": "a.png", "file": "assets/a.png"}]}')


def central_directory_claiming_ten_million_entries(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("index.json", b"{}")
    data = bytearray(path.read_bytes())
    at = data.rfind(b"PK\x05\x06")
    data[at + 8 : at + 12] = struct.pack("<HH", 0xFFFF, 0xFFFF)
    locator = struct.pack("<4sIQI", b"PK\x06\x07", 0, at, 1)  # the zip64 record goes where the short one was
    record = struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, 10_000_000, 10_000_000, 0, 0)
    path.write_bytes(bytes(data[:at]) + record + locator + bytes(data[at:]))


def truncated(path: Path) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("index.json", b'{"manifests": []}' * 1000)
    path.write_bytes(path.read_bytes()[:-30])


def not_a_zip(path: Path) -> None:
    path.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 100)


def index_not_utf8(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("index.json", b"\xff\xfe{" + zlib.compress(b"x" * 100))


def index_of_the_wrong_shapes(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("index.json", b'{"manifests": {"a": 1}, "assets": "x", "log": [], "keys": 7, "scope": 3}')


CRAFTED = {
    "index.json inflating to 1 GiB of spaces (1 MB zip)": index_of_a_gib_of_spaces,
    "index.json of 200,000 nested arrays": index_nested_200k_deep,
    "index.json nested 100 deep": index_nested_100_deep,
    "100,000 extra entries": extra_entries_100k,
    "one name 100,000 times": the_same_name_100k_times,
    "an asset inflating to 1 GiB": asset_bomb,
    "a central directory claiming 10 million entries": central_directory_claiming_ten_million_entries,
    "a truncated zip": truncated,
    "not a zip at all": not_a_zip,
    "index.json not UTF-8": index_not_utf8,
    "index.json of the wrong shapes": index_of_the_wrong_shapes,
}
