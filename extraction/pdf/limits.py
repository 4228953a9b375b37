"""The limits an untrusted PDF is held to, and the values the package returns."""
from dataclasses import dataclass, field

ALLOWED_FILTERS = (
    "FlateDecode", "DCTDecode", "CCITTFaxDecode", "JPXDecode",
    "RunLengthDecode", "LZWDecode", "ASCIIHexDecode", "ASCII85Decode",
)


@dataclass(frozen=True)
class Limits:
    """What one PDF may cost; applied by the validator and by the child process."""

    max_bytes: int = 100 * 1024**2
    max_pages: int = 2000
    max_pixels: int = 100_000_000
    max_stream_bytes: int = 512 * 1024**2
    allowed_filters: tuple[str, ...] = ALLOWED_FILTERS
    eof_slack: int = 1024
    cpu_seconds: int = 60
    memory_bytes: int = 2 * 1024**3
    wall_seconds: int = 120
    # How many PDFs one warm child process reads before a fresh one replaces it.
    child_reuse: int = 1000


@dataclass(frozen=True)
class Inspection:
    pages: int
    pdf_version: str
    mime: str


@dataclass(frozen=True)
class ExtractedAsset:
    """One distinct output image; placements are (page from 1, index on page from 0)."""

    filename: str
    sha256: str
    size: int
    content_type: str
    width: int
    height: int
    placements: list[tuple[int, int]] = field(default_factory=list)


@dataclass(frozen=True)
class Extraction:
    pages: int
    assets: list[ExtractedAsset]
    warnings: list[str]
