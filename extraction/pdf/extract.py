"""Extraction inside the child: every drawn image, encoded once, stored once per content."""

import hashlib
import os
from pathlib import Path

import pikepdf

from .draws import Draw, Drawing, Image, Key
from .encode import Encoded, encode
from .errors import raise_if_out_of_memory, reason
from .limits import Limits
from .protocol import PARTIAL
from .results import Extraction, WrittenImage
from .validate import opened, page_tree, unreadable
from .versions import EXTRACTOR_VERSION, libraries

# A hostile file can draw a broken image a million times; the report stays readable.
MAX_WARNINGS = 1000


def extract(path: str | Path, out_dir: str | Path, limits: Limits) -> Extraction:
    store = AssetStore(Path(out_dir), limits.max_pixels)
    warnings: list[str] = []
    with opened(path) as source:
        try:
            pages = page_tree(source, limits)
        except pikepdf.PdfError as exc:
            raise unreadable(exc) from None
        drawing = Drawing(source.pdf, warnings)
        for number, page in enumerate(pages, 1):
            for draw in drawing.page_draws(number, page):
                store.place(draw, warnings)
        read = source.flags()  # after every page was read: qpdf may repair the file while reading objects
    if len(warnings) > MAX_WARNINGS:
        warnings[MAX_WARNINGS:] = [f"... and {len(warnings) - MAX_WARNINGS} more warnings."]
    return Extraction(
        pages=len(pages),
        assets=store.assets(),
        warnings=warnings,
        libraries=libraries(),
        extractor_version=EXTRACTOR_VERSION,
        **read,
    )


class AssetStore:
    """Encodes each image object once and writes each distinct output file once."""

    def __init__(self, out_dir: Path, max_pixels: int):
        self.out_dir = out_dir
        self.max_pixels = max_pixels
        # By Draw.key: an image object (or an inline image in a given stream) drawn again is not encoded again.
        self.sha256_of: dict[Key, str] = {}
        self.failure_of: dict[Key, Exception] = {}
        self.by_sha256: dict[str, WrittenImage] = {}

    def place(self, draw: Draw, warnings: list[str]) -> None:
        key = draw.key
        sha256 = self.sha256_of.get(key)
        if sha256 is None:
            try:
                encoded = self._encode_once(draw.image, key)
            except Exception as exc:
                raise_if_out_of_memory(exc)
                warnings.append(f"Page {draw.page}, image {draw.index}: could not be extracted ({reason(exc)}).")
                return
            # Outside the try: a full disk fails the job, it is not a broken image.
            sha256 = self._store(encoded)
            self.sha256_of[key] = sha256
        self.by_sha256[sha256].placements.append((draw.page, draw.index))

    def assets(self) -> list[WrittenImage]:
        for asset in self.by_sha256.values():
            asset.placements.sort()
        return sorted(self.by_sha256.values(), key=lambda a: (a.placements[0], a.sha256))

    def _encode_once(self, image: Image, key: Key) -> Encoded:
        if key in self.failure_of:
            raise self.failure_of[key]
        try:
            return encode(image, self.max_pixels)
        except Exception as exc:
            self.failure_of[key] = exc
            raise

    def _store(self, encoded: Encoded) -> str:
        sha256 = hashlib.sha256(encoded.data).hexdigest()
        if sha256 not in self.by_sha256:
            filename = f"{sha256}.{encoded.extension}"
            write_atomically(self.out_dir / filename, encoded.data)
            self.by_sha256[sha256] = WrittenImage(
                filename=filename,
                sha256=sha256,
                size=len(encoded.data),
                content_type=encoded.content_type,
                width=encoded.width,
                height=encoded.height,
                placements=[],
                colorspace=encoded.colorspace,
                bits=encoded.bits,
                method=encoded.method,
                stream_sha256=encoded.stream_sha256,
            )
        return sha256


def write_atomically(target: Path, data: bytes) -> None:
    """Write then rename, so a child killed mid-write never leaves a torn file under a final name.
    Unbuffered: a buffered file object costs three more system calls a file, and the data is written whole."""
    directory, name = os.path.split(target)
    partial = os.path.join(directory, f".{name}{PARTIAL}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    os.replace(partial, target)
